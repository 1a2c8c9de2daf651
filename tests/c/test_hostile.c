/*
 * test_hostile.c -- hostile input to every C function (docs/contract.md §2-§5, docs/reliability.md T14,
 * T18, T19): every call returns a status and, on failure, a well-formed error JSON; no
 * crash, no hang, no unbounded memory.
 *
 *   NULL: every combination of NULL pointer arguments of every function.
 *   Invalid UTF-8 (16 kinds) in every C string position -> invalid_argument naming it,
 *     nothing created or written; in recover_jsonl bytes -> corrupt_line / unterminated_tail.
 *   Every JSON type (null, true, 1, "s", [], {}) and "absent" in every field of every entry
 *     shape -> OK where the type is allowed, else invalid_entry with the exact JSON Pointer;
 *     the same through session_path_to / session_messages_on_path (pointer prefixed with the
 *     element index) and session_store_append.
 *   Ids with every escape, \u0000 and U+2028/U+2029 round-trip through a JSONL file; the same
 *     id spelt differently is the same id; an id is never truncated at a NUL.
 *   Numbers (-0, 1e-400, 1e400, 20-digit, 400-digit, malformed): kept exactly or rejected as
 *     invalid_json, never changed. Duplicate keys at depth (also spelt with escapes).
 *   recover_jsonl: len 0 with a non-NULL pointer, NULs, 10 MB of garbage (+/- newline),
 *     10 M blank lines, len shorter than the buffer.
 *   session_jsonl_store_open_with: every JSON type in every option, non-object, duplicate,
 *     unknown and malformed options; session_jsonl_repair: missing file, directory, interior
 *     damage (untouched), a held lock, NUL tail (cut, kept in the sidecar).
 *   In forked children (a crash or hang is reported, peak RSS measured): a 100 MiB JSON
 *     string in every function taking JSON text (and in options_json), 1,000,000 nested
 *     arrays / objects, 10 MB of garbage, a line of exactly SESSION_MAX_LINE_BYTES (and one
 *     more byte), files with a 100 MiB garbage tail / line and a sparse NUL tail (open, repair).
 *     Peak RSS growth of each child must stay below max(20 x its input, 32 MiB).
 *
 * Usage: test_hostile [--small] [--no-rss] [--streaming]
 *   --small      1 MiB strings and 1 MB of garbage (for valgrind runs)
 *   --no-rss     do not check memory bounds (valgrind's and ASan's own memory distorts RSS)
 *   --streaming  only the files with huge tails, with docs/contract.md §3 / T18(a)'s bound: memory follows
 *                what is kept (< 32 MiB growth), not the garbage; adds a 1 GiB sparse NUL tail
 */
#include <signal.h>
#include <sys/wait.h>

#include "check.h"

static size_t g_big = (size_t)100 << 20; /* the huge JSON string */
static long g_nest = 1000000;            /* nesting depth */
static size_t g_garbage = 10000000;      /* bytes of garbage */
static int g_check_rss = 1, g_alarm = 60;
static long g_cases;
static char g_dir[256];

#define HEAD "{\"id\":\"e\",\"parentId\":null,\"timestamp\":1,"
#define META(value) HEAD "\"type\":\"metadata\",\"key\":\"k\",\"value\":" value "}"
#define LINE1 "{\"id\":\"r\",\"parentId\":null,\"timestamp\":1,\"type\":\"metadata\",\"key\":\"k\",\"value\":1}"
#define LINE2 "{\"id\":\"r2\",\"parentId\":\"r\",\"timestamp\":2,\"type\":\"metadata\",\"key\":\"k\",\"value\":2}"

/* ----------------------------------------------------------------- helpers ---- */

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "out of memory (%zu bytes)\n", n);
        exit(1);
    }
    return p;
}

/* A fresh string: the concatenation of the NULL-terminated argument list. */
static char *cat(const char *first, ...)
{
    va_list ap;
    const char *s;
    size_t n = 0;
    char *r, *p;
    va_start(ap, first);
    for (s = first; s; s = va_arg(ap, const char *)) n += strlen(s);
    va_end(ap);
    p = r = (char *)xmalloc(n + 1);
    va_start(ap, first);
    for (s = first; s; s = va_arg(ap, const char *)) {
        size_t k = strlen(s);
        memcpy(p, s, k);
        p += k;
    }
    va_end(ap);
    *p = '\0';
    return r;
}

/* One case: the status, the error JSON's shape, and (when member) member == raw. Frees *outp
 * and sets it to NULL. */
static void expect(const char *what, SessionStatus got, char **outp, SessionStatus want, const char *member,
                   const char *raw)
{
    char *out = *outp; /* read here, after the call that set it (argument order is unspecified) */
    *outp = NULL;
    g_cases++;
    CHECK_STATUS(got, want, out, "%s", what);
    CHECK(out != NULL, "%s: out_json is set", what);
    if (want != SESSION_OK) CHECK_ERROR(got, want, out, "%s", what);
    if (member) CHECK_JSON(out, member, raw, "%s", what);
    session_string_free(out);
}

/* "...": the pointer as JSON text. */
static const char *quoted(const char *prefix, const char *pointer)
{
    static char buf[2048];
    snprintf(buf, sizeof buf, "\"%s%s\"", prefix, pointer);
    return buf;
}

/* error.pointer is a JSON string starting with `start` (raw JSON text, no closing quote). */
static void expect_pointer_starts(const char *what, const char *out, const char *start)
{
    jspan p = json_get(out, "error.pointer");
    CHECK(p.p && p.n >= strlen(start) && memcmp(p.p, start, strlen(start)) == 0 && p.p[p.n - 1] == '"',
          "%s: error.pointer starts with %s (got %.80s)", what, start, json_show(p));
}

static SessionStore *memory_store(void)
{
    SessionStore *s = NULL;
    CHECK_STATUS(session_memory_store_open(&s), SESSION_OK, NULL, "memory_store_open");
    return s;
}

static SessionStore *jsonl_store(const char *name, char *path_out, size_t size)
{
    SessionStore *s = NULL;
    char *out = NULL;
    SessionStatus st;
    snprintf(path_out, size, "%s/%s", g_dir, name);
    st = session_jsonl_store_open(path_out, &s, &out);
    CHECK_STATUS(st, SESSION_OK, out, "jsonl_store_open(%s)", name);
    session_string_free(out);
    return s;
}

/* ------------------------------------------------- 1. NULL in every position ---- */

enum {
    F_PARSE, F_PATH, F_MSGS, F_RECOVER, F_MEM_OPEN, F_JSONL_OPEN, F_OPEN_WITH, F_REPAIR,
    F_APPEND, F_ENTRIES, F_READ, F_SPATH, F_SMSGS
};

static const struct {
    const char *name;
    int nargs;              /* pointer arguments */
    const char *args[4];    /* their names, in order */
    unsigned optional;      /* the arguments that may be NULL (bit i: argument i) */
    int out_json;           /* index of out_json, or -1 */
    int on_store;           /* takes a store (run once per store kind) */
} FUNCS[] = {
    {"session_parse_entry", 2, {"entry_json", "out_json"}, 2, 1, 0},
    {"session_path_to", 3, {"entries_json", "leaf_id", "out_json"}, 4, 2, 0},
    {"session_messages_on_path", 3, {"entries_json", "leaf_id", "out_json"}, 4, 2, 0},
    {"session_recover_jsonl", 2, {"bytes", "out_json"}, 2, 1, 0},
    {"session_memory_store_open", 1, {"out_store"}, 0, -1, 0},
    {"session_jsonl_store_open", 3, {"path", "out_store", "out_json"}, 4, 2, 0},
    {"session_jsonl_store_open_with", 4, {"path", "options_json", "out_store", "out_json"}, 2 | 8, 3, 0},
    {"session_jsonl_repair", 2, {"path", "out_json"}, 2, 1, 0},
    {"session_store_append", 3, {"store", "entry_json", "out_json"}, 4, 2, 1},
    {"session_store_entries", 2, {"store", "out_json"}, 2, 1, 1},
    {"session_store_read", 2, {"store", "out_json"}, 2, 1, 1},
    {"session_store_path_to", 3, {"store", "leaf_id", "out_json"}, 4, 2, 1},
    {"session_store_messages_on_path", 3, {"store", "leaf_id", "out_json"}, 4, 2, 1},
};

static void null_sweep_one(int f, unsigned mask, SessionStore *store, const char *kind)
{
    static long serial;
    char entry[160], path[512], what[256];
    const char *e1 = "[" LINE1 "]";
    char *out = NULL, **po;
    SessionStore *opened = (SessionStore *)&serial; /* a non-NULL sentinel */
    SessionStatus st = SESSION_OK, want;
    unsigned required = 0;
    int i, created = 0;

#define ARG(i, v) ((mask & (1u << (i))) ? NULL : (v))
    for (i = 0; i < FUNCS[f].nargs; i++)
        if (!(FUNCS[f].optional & (1u << i))) required |= 1u << i;
    want = (mask & required) ? SESSION_ERR_INVALID_ARGUMENT : SESSION_OK;
    po = FUNCS[f].out_json >= 0 ? ARG(FUNCS[f].out_json, &out) : NULL;
    snprintf(entry, sizeof entry,
             "{\"id\":\"n%ld\",\"parentId\":null,\"timestamp\":1,\"type\":\"metadata\",\"key\":\"k\",\"value\":1}",
             ++serial);
    snprintf(path, sizeof path, "%s/null-%ld.jsonl", g_dir, serial);
    switch (f) {
    case F_PARSE: st = session_parse_entry(ARG(0, entry), po); break;
    case F_PATH: st = session_path_to(ARG(0, e1), ARG(1, "r"), po); break;
    case F_MSGS: st = session_messages_on_path(ARG(0, e1), ARG(1, "r"), po); break;
    case F_RECOVER: st = session_recover_jsonl((const uint8_t *)ARG(0, LINE1 "\n"), strlen(LINE1) + 1, po); break;
    case F_MEM_OPEN: st = session_memory_store_open(ARG(0, &opened)); break;
    case F_JSONL_OPEN:
        st = session_jsonl_store_open(ARG(0, path), ARG(1, &opened), po);
        created = file_exists(path);
        break;
    case F_OPEN_WITH:
        st = session_jsonl_store_open_with(ARG(0, path), ARG(1, "{\"lock\":true}"), ARG(2, &opened), po);
        created = file_exists(path);
        break;
    case F_REPAIR:
        snprintf(path, sizeof path, "%s/repair-%ld.jsonl", g_dir, serial);
        write_file(path, LINE1 "\nxx", strlen(LINE1) + 3);
        st = session_jsonl_repair(ARG(0, path), po);
        CHECK(file_size(path) == (long long)(st == SESSION_OK ? strlen(LINE1) + 1 : strlen(LINE1) + 3),
              "repair(mask 0x%x): the tail is cut exactly when the call succeeds", mask);
        break;
    case F_APPEND: st = session_store_append(ARG(0, store), ARG(1, entry), po); break;
    case F_ENTRIES: st = session_store_entries(ARG(0, store), po); break;
    case F_READ: st = session_store_read(ARG(0, store), po); break;
    case F_SPATH: st = session_store_path_to(ARG(0, store), ARG(1, "r"), po); break;
    case F_SMSGS: st = session_store_messages_on_path(ARG(0, store), ARG(1, "r"), po); break;
    }
    snprintf(what, sizeof what, "%s%s with NULL in mask 0x%x", FUNCS[f].name, kind, mask);
    if (po) {
        CHECK(out != NULL, "%s: out_json is always set", what);
        if (want != SESSION_OK) {
            /* `argument` names one of the NULL required arguments */
            jspan a = json_get(out, "error.argument");
            int named = 0;
            for (i = 0; i < FUNCS[f].nargs; i++)
                if ((mask & required & (1u << i)) && a.p && a.n == strlen(FUNCS[f].args[i]) + 2 &&
                    memcmp(a.p + 1, FUNCS[f].args[i], a.n - 2) == 0)
                    named = 1;
            CHECK(named, "%s: error.argument names a NULL argument (got %s)", what, json_show(a));
        }
    }
    if (po) {
        expect(what, st, &out, want, NULL, NULL);
    } else {
        g_cases++;
        CHECK_STATUS(st, want, NULL, "%s", what);
    }
    if (f == F_MEM_OPEN || f == F_JSONL_OPEN || f == F_OPEN_WITH) {
        if (!(mask & (1u << (f == F_MEM_OPEN ? 0 : f == F_JSONL_OPEN ? 1 : 2)))) {
            if (st == SESSION_OK)
                session_store_close(opened);
            else
                CHECK(opened == NULL, "%s: *out_store is NULL after a failure", what);
        }
        if (f != F_MEM_OPEN && st != SESSION_OK) CHECK(!created, "%s: no file is created", what);
    }
#undef ARG
}

static void null_sweep(void)
{
    char path[512];
    SessionStore *stores[2];
    const char *kinds[2] = {" (memory)", " (jsonl)"};
    long before = g_cases;
    int f, k;
    unsigned mask;

    SECTION("NULL: every combination of NULL pointer arguments of every function");
    stores[0] = memory_store();
    stores[1] = jsonl_store("null.jsonl", path, sizeof path);
    for (k = 0; k < 2; k++) CHECK_STATUS(session_store_append(stores[k], LINE1, NULL), SESSION_OK, NULL, "root");
    for (f = 0; f < (int)(sizeof FUNCS / sizeof FUNCS[0]); f++)
        for (k = 0; k < (FUNCS[f].on_store ? 2 : 1); k++)
            for (mask = 0; mask < (1u << FUNCS[f].nargs); mask++) null_sweep_one(f, mask, stores[k], FUNCS[f].on_store ? kinds[k] : "");
    CHECK(session_store_state(NULL) == SESSION_STATE_TAINTED, "session_store_state(NULL) is tainted");
    session_store_close(NULL);
    session_string_free(NULL);
    for (k = 0; k < 2; k++) {
        CHECK(session_store_state(stores[k]) == SESSION_STATE_READY, "the store is still ready");
        session_store_close(stores[k]);
    }
    g_cases += 3;
    printf("   %ld NULL cases\n", g_cases - before);
}

/* --------------------------------------------- 2. invalid UTF-8, everywhere ---- */

static const char *const BAD_UTF8[] = {
    "\x80",             /* lone continuation byte */
    "\xbf",             /* lone continuation byte */
    "\xc3",             /* 2-byte lead, cut */
    "\xc0\xaf",         /* overlong '/' */
    "\xc1\xbf",         /* overlong */
    "\xe0\x80\xaf",     /* overlong 3-byte */
    "\xe2\x82",         /* 3-byte, cut */
    "\xed\xa0\x80",     /* UTF-8-encoded high surrogate */
    "\xed\xbf\xbf",     /* UTF-8-encoded low surrogate */
    "\xf0\x80\x80\xaf", /* overlong 4-byte */
    "\xf0\x9f\x98",     /* 4-byte, cut */
    "\xf4\x90\x80\x80", /* above U+10FFFF */
    "\xf5\x80\x80\x80", /* invalid lead */
    "\xf8\x88\x80\x80\x80", /* 5-byte form */
    "\xfe",
    "\xff",
};

static void utf8_sweep(void)
{
    char jpath[512], path[600];
    SessionStore *mem = memory_store(), *js = jsonl_store("utf8.jsonl", jpath, sizeof jpath);
    const char *e1 = "[" LINE1 "]";
    long before = g_cases, size;
    size_t b;

    SECTION("invalid UTF-8 in every C string position, and in recover_jsonl bytes");
    CHECK_STATUS(session_store_append(js, LINE1, NULL), SESSION_OK, NULL, "root (jsonl)");
    CHECK_STATUS(session_store_append(mem, LINE1, NULL), SESSION_OK, NULL, "root (memory)");
    size = file_size(jpath);
    for (b = 0; b < sizeof BAD_UTF8 / sizeof BAD_UTF8[0]; b++) {
        const char *bad = BAD_UTF8[b];
        char *in_id = cat("{\"id\":\"x", bad, "\",\"parentId\":null,\"timestamp\":1,\"type\":\"metadata\","
                          "\"key\":\"k\",\"value\":1}", (char *)NULL);
        char *in_key = cat(HEAD "\"type\":\"metadata\",\"key\":\"k\",\"value\":{\"", bad, "\":1}}", (char *)NULL);
        char *outside = cat("{\"id\":\"x\",", bad, "\"parentId\":null,\"timestamp\":1,\"type\":\"metadata\","
                            "\"key\":\"k\",\"value\":1}", (char *)NULL);
        char *arr = cat("[", in_id, "]", (char *)NULL), *leaf = cat("r", bad, (char *)NULL);
        char *bytes_c = cat(LINE1 "\n", in_id, "\n", (char *)NULL), *bytes_t = cat(LINE1 "\n", in_id, (char *)NULL);
        SessionStore *opened = mem;
        char *out = NULL, what[64];
        snprintf(what, sizeof what, "bad UTF-8 #%zu", b);

#define ARGERR(call, name)                                                                        \
    do {                                                                                          \
        out = NULL;                                                                               \
        expect(what, (call), &out, SESSION_ERR_INVALID_ARGUMENT, "error.argument", "\"" name "\""); \
    } while (0)
        ARGERR(session_parse_entry(in_id, &out), "entry_json");
        ARGERR(session_parse_entry(in_key, &out), "entry_json");
        ARGERR(session_parse_entry(outside, &out), "entry_json");
        ARGERR(session_path_to(arr, "x", &out), "entries_json");
        ARGERR(session_path_to(e1, leaf, &out), "leaf_id");
        ARGERR(session_messages_on_path(arr, "x", &out), "entries_json");
        ARGERR(session_messages_on_path(e1, leaf, &out), "leaf_id");
        ARGERR(session_store_append(js, in_id, &out), "entry_json");
        ARGERR(session_store_append(mem, in_key, &out), "entry_json");
        ARGERR(session_store_path_to(js, leaf, &out), "leaf_id");
        ARGERR(session_store_messages_on_path(mem, leaf, &out), "leaf_id");
        snprintf(path, sizeof path, "%s/bad%s.jsonl", g_dir, bad);
        ARGERR(session_jsonl_store_open(path, &opened, &out), "path");
        CHECK(opened == NULL, "%s: *out_store is NULL after open fails", what);
        CHECK(!file_exists(path), "%s: open with a non-UTF-8 path creates nothing", what);
        opened = mem;
        ARGERR(session_jsonl_store_open_with(path, NULL, &opened, &out), "path");
        CHECK(opened == NULL && !file_exists(path), "%s: open_with: no store, no file", what);
        ARGERR(session_jsonl_repair(path, &out), "path");
        {
            char *opts = cat("{\"durability\":\"none", bad, "\"}", (char *)NULL);
            snprintf(path, sizeof path, "%s/utf8-options.jsonl", g_dir);
            ARGERR(session_jsonl_store_open_with(path, opts, &opened, &out), "options_json");
            CHECK(opened == NULL && !file_exists(path), "%s: bad options: no store, no file", what);
            free(opts);
        }
        CHECK(file_size(jpath) == size, "%s: the rejected appends did not touch the file", what);
#undef ARGERR
        out = NULL;
        expect(what, session_recover_jsonl((const uint8_t *)bytes_c, strlen(bytes_c), &out), &out,
               SESSION_ERR_CORRUPT_LINE, "error.line", "2");
        out = NULL;
        expect(what, session_recover_jsonl((const uint8_t *)bytes_t, strlen(bytes_t), &out), &out, SESSION_OK,
               "warnings", "[{\"code\":\"unterminated_tail\",\"line\":2}]");
        free(in_id), free(in_key), free(outside), free(arr), free(leaf), free(bytes_c), free(bytes_t);
    }
    CHECK(session_store_state(js) == SESSION_STATE_READY, "the JSONL store is still ready");
    session_store_close(js);
    session_store_close(mem);
    printf("   %ld invalid-UTF-8 cases (%zu byte sequences)\n", g_cases - before, sizeof BAD_UTF8 / sizeof BAD_UTF8[0]);
}

/* ------------------------------------- 3. every JSON type in every field ---- */

/*
 * An entry shape is a template whose "$c" slots are members; each member's default value may
 * hold further slots. One member at a time is replaced by each variant (or left out); the
 * rest keep their defaults.
 */
struct field {
    const char *name, *value; /* member name; default value (may hold slots) */
    const char *pointer;      /* JSON Pointer of the member */
    const char *allowed;      /* accepted variants: n t 1 s a o; x = may be absent */
    const char *obj_pointer;  /* the error's pointer when the value is {} (a missing inner member) */
};

struct shape {
    const char *name, *tmpl;
    struct field f[17];
};

/* Round 2 (docs/contract.md §6.1): any other non-empty role or block type is an extension, so a string
 * there is accepted ("s"); round 1 rejected it. */
#define HEAD_FIELDS(type)                                  \
    {"id", "\"e\"", "/id", "s", NULL}, {"parentId", "null", "/parentId", "ns", NULL}, \
    {"timestamp", "1", "/timestamp", "1", NULL}, {"type", type, "/type", "", NULL}
#define MESSAGE(slots) {"message", slots, "/message", "", "/message/role"}
#define BLOCK(i, type, member, mvalue, mallowed)                                              \
    {"type", "\"" type "\"", "/message/content/" #i "/type", "s", NULL},                      \
    {member, mvalue, "/message/content/" #i "/" member, mallowed, NULL}

static const struct shape SHAPES[] = {
    {"user (string content)", "{$0,$1,$2,$3,$4}",
     {HEAD_FIELDS("\"message\""), MESSAGE("{$5,$6}"), {"role", "\"user\"", "/message/role", "s", NULL},
      {"content", "\"hi\"", "/message/content", "sa", NULL}}},
    {"user (text and image blocks)", "{$0,$1,$2,$3,$4}",
     {HEAD_FIELDS("\"message\""), MESSAGE("{$5,$6}"), {"role", "\"user\"", "/message/role", "s", NULL},
      {"content", "[{$7,$8},{$9,$a,$b}]", "/message/content", "sa", NULL},
      BLOCK(0, "text", "text", "\"hi\"", "s"), BLOCK(1, "image", "data", "\"aGk=\"", "s"),
      {"mimeType", "\"image/png\"", "/message/content/1/mimeType", "s", NULL}}},
    {"assistant (text, thinking, toolCall)", "{$0,$1,$2,$3,$4}",
     {HEAD_FIELDS("\"message\""), MESSAGE("{$5,$6}"), {"role", "\"assistant\"", "/message/role", "s", NULL},
      {"content", "[{$7,$8},{$9,$a},{$b,$c,$d,$e}]", "/message/content", "a", NULL},
      BLOCK(0, "text", "text", "\"ok\"", "s"), BLOCK(1, "thinking", "thinking", "\"hmm\"", "s"),
      BLOCK(2, "toolCall", "id", "\"call-1\"", "s"), {"name", "\"read\"", "/message/content/2/name", "s", NULL},
      {"arguments", "{\"path\":\"README.md\"}", "/message/content/2/arguments", "o", NULL}}},
    {"toolResult (text and image, details)", "{$0,$1,$2,$3,$4}",
     {HEAD_FIELDS("\"message\""), MESSAGE("{$5,$6,$7,$8,$9,$a}"),
      {"role", "\"toolResult\"", "/message/role", "s", NULL},
      {"toolCallId", "\"call-1\"", "/message/toolCallId", "s", NULL},
      {"toolName", "\"read\"", "/message/toolName", "s", NULL},
      {"content", "[{$b,$c},{$d,$e,$f}]", "/message/content", "a", NULL},
      {"isError", "false", "/message/isError", "t", NULL},
      {"details", "{\"bytes\":33}", "/message/details", "nt1saox", NULL},
      BLOCK(0, "text", "text", "\"# tiny-pi\"", "s"), BLOCK(1, "image", "data", "\"aGk=\"", "s"),
      {"mimeType", "\"image/png\"", "/message/content/1/mimeType", "s", NULL}}},
    {"metadata", "{$0,$1,$2,$3,$4,$5}",
     {HEAD_FIELDS("\"metadata\""), {"key", "\"cwd\"", "/key", "s", NULL},
      {"value", "\"/workspace\"", "/value", "nt1sao", NULL}}},
};

static const struct {
    char code;
    const char *json;
} VARIANTS[] = {{'n', "null"}, {'t', "true"}, {'1', "1"}, {'s', "\"s\""}, {'a', "[]"}, {'o', "{}"}, {'x', NULL}};

static int slot_index(char c) { return c >= '0' && c <= '9' ? c - '0' : c - 'a' + 10; }

/* Expands tmpl into *p, replacing field `target` by `variant` (NULL: absent). */
static void expand(char **p, const char *tmpl, const struct shape *s, int target, const char *variant)
{
    for (; *tmpl; tmpl++) {
        int k;
        if (*tmpl != '$') {
            *(*p)++ = *tmpl;
            continue;
        }
        k = slot_index(*++tmpl);
        if (k == target && !variant) {
            *p += sprintf(*p, "\"zz%d\":0", k); /* an unknown member stands in (they are kept) */
            continue;
        }
        *p += sprintf(*p, "\"%s\":", s->f[k].name);
        if (k == target)
            *p += sprintf(*p, "%s", variant);
        else
            expand(p, s->f[k].value, s, target, variant);
    }
    **p = '\0';
}

static void type_sweep(void)
{
    long before = g_cases;
    size_t s, v;
    int k;

    SECTION("every JSON type, and absence, in every field of every entry shape");
    for (s = 0; s < sizeof SHAPES / sizeof SHAPES[0]; s++) {
        const struct shape *sh = &SHAPES[s];
        for (k = 0; sh->f[k].name; k++) {
            const struct field *fd = &sh->f[k];
            for (v = 0; v < sizeof VARIANTS / sizeof VARIANTS[0]; v++) {
                char entry[1024], arr[1100], what[200], *p = entry, *out = NULL;
                int ok = strchr(fd->allowed, VARIANTS[v].code) != NULL;
                int orphan = ok && strcmp(fd->name, "parentId") == 0 && VARIANTS[v].code == 's';
                int is_message = strcmp(sh->name, "metadata") != 0;
                const char *ptr = VARIANTS[v].code == 'o' && fd->obj_pointer ? fd->obj_pointer : fd->pointer;
                const char *leaf = strcmp(fd->name, "id") == 0 && k == 0 && VARIANTS[v].code == 's' ? "s" : "e";
                SessionStore *mem = memory_store();
                SessionStatus st;

                expand(&p, sh->tmpl, sh, k, VARIANTS[v].json);
                snprintf(what, sizeof what, "%s: %s = %s", sh->name, fd->pointer,
                         VARIANTS[v].json ? VARIANTS[v].json : "(absent)");
                snprintf(arr, sizeof arr, "[%s]", entry);

                /* parse_entry: OK and the same text, or invalid_entry at the pointer */
                st = session_parse_entry(entry, &out);
                if (ok) {
                    CHECK_STATUS(st, SESSION_OK, out, "%s: accepted; entry %s", what, entry);
                    CHECK(strcmp(out, entry) == 0, "%s: normalises to itself (got %s)", what, out);
                    expect(what, st, &out, SESSION_OK, NULL, NULL);
                } else {
                    expect(what, st, &out, SESSION_ERR_INVALID_ENTRY, "error.pointer", quoted("", ptr));
                }
                /* path_to / messages_on_path over [entry]: the pointer gains the index */
                out = NULL;
                st = (k + (int)v) % 2 ? session_path_to(arr, leaf, &out) : session_messages_on_path(arr, leaf, &out);
                if (!ok)
                    expect(what, st, &out, SESSION_ERR_INVALID_ENTRY, "error.pointer", quoted("/0", ptr));
                else if (orphan)
                    expect(what, st, &out, SESSION_ERR_MISSING_PARENT, "error.parentId", "\"s\"");
                else {
                    CHECK_JSON_LENGTH(out, "", (k + (int)v) % 2 ? 1 : is_message, "%s: path / messages", what);
                    expect(what, st, &out, SESSION_OK, NULL, NULL);
                }
                /* store_append: the same status and pointer; the store stays usable */
                out = NULL;
                st = session_store_append(mem, entry, &out);
                if (!ok)
                    expect(what, st, &out, SESSION_ERR_INVALID_ENTRY, "error.pointer", quoted("", ptr));
                else if (orphan)
                    expect(what, st, &out, SESSION_ERR_MISSING_PARENT, "error.childId", "\"e\"");
                else
                    expect(what, st, &out, SESSION_OK, "seq", "0");
                CHECK_STATUS(session_store_append(mem, "{\"id\":\"after\",\"parentId\":null,\"timestamp\":1,"
                                                       "\"type\":\"metadata\",\"key\":\"k\",\"value\":1}", NULL),
                             SESSION_OK, NULL, "%s: a later append still commits", what);
                session_store_close(mem);
            }
        }
    }

    /* blocks in the wrong message, unknown kinds */
    {
        static const struct {
            const char *entry, *pointer;
        } WRONG[] = {
            {HEAD "\"type\":\"message\",\"message\":{\"role\":\"user\",\"content\":[{\"type\":\"thinking\",\"thinking\":\"x\"}]}}",
             "/message/content/0/type"},
            {HEAD "\"type\":\"message\",\"message\":{\"role\":\"user\",\"content\":[{\"type\":\"toolCall\",\"id\":\"c\","
                  "\"name\":\"n\",\"arguments\":{}}]}}",
             "/message/content/0/type"},
            {HEAD "\"type\":\"message\",\"message\":{\"role\":\"assistant\",\"content\":[{\"type\":\"image\",\"data\":\"x\","
                  "\"mimeType\":\"image/png\"}]}}",
             "/message/content/0/type"},
            {HEAD "\"type\":\"message\",\"message\":{\"role\":\"toolResult\",\"toolCallId\":\"c\",\"toolName\":\"n\","
                  "\"content\":[{\"type\":\"thinking\",\"thinking\":\"x\"}],\"isError\":false}}",
             "/message/content/0/type"},
            {HEAD "\"type\":\"message\",\"message\":{\"role\":\"assistant\",\"content\":[\"text\"]}}", "/message/content/0"},
            {HEAD "\"type\":\"message\",\"message\":{\"role\":\"assistant\",\"content\":[null]}}", "/message/content/0"},
            {HEAD "\"type\":\"message\",\"message\":{\"role\":\"user\",\"content\":[[]]}}", "/message/content/0"},
            {HEAD "\"type\":\"message\",\"message\":{\"role\":\"\",\"content\":\"x\"}}", "/message/role"},
            {HEAD "\"type\":\"Message\",\"message\":{\"role\":\"user\",\"content\":\"x\"}}", "/type"},
            {"{\"id\":\"\",\"parentId\":null,\"timestamp\":1,\"type\":\"metadata\",\"key\":\"k\",\"value\":1}", "/id"},
            {"null", ""},
            {"\"entry\"", ""},
            {"1", ""},
            {"[]", ""},
        };
        size_t i;
        for (i = 0; i < sizeof WRONG / sizeof WRONG[0]; i++) {
            char *out = NULL;
            expect(WRONG[i].entry, session_parse_entry(WRONG[i].entry, &out), &out, SESSION_ERR_INVALID_ENTRY,
                   "error.pointer", quoted("", WRONG[i].pointer));
        }
    }
    printf("   %ld wrong-type cases\n", g_cases - before);
}

/* ------------------------------------------ 4. escapes in ids round-trip ---- */

static void escapes(void)
{
    /* the same id spelt two ways; its C form has no NUL, so it can be a leaf_id */
    static const char ID_ESC[] = "\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t \\u2028 \\u2029 \xe2\x80\xa8 \\u00e9 \\ud83d\\ude00 \\u0041\"";
    static const char ID_RAW[] = "\"a\\\"b\\\\c/d\\u0008\\u000C\\u000a\\u000D\\u0009 \xe2\x80\xa8 \xe2\x80\xa9 \\u2028 \xc3\xa9 \xf0\x9f\x98\x80 A\"";
    static const char ID_C[] = "a\"b\\c/d\b\f\n\r\t \xe2\x80\xa8 \xe2\x80\xa9 \xe2\x80\xa8 \xc3\xa9 \xf0\x9f\x98\x80 A";
    static const char ID_NUL[] = "\"nul\\u0000after\"";
    char path[512], e1[512], e2[512], e3[512], e4[512], *out = NULL, *bytes, *jsonl;
    SessionStore *s;
    SessionStatus st;
    size_t len;
    long before = g_cases;

    SECTION("ids with every escape, \\u0000, U+2028/U+2029: round-trip, match by value, never truncated");
    snprintf(e1, sizeof e1, "{\"id\":%s,\"parentId\":null,\"timestamp\":-0,\"type\":\"metadata\",\"key\":\"k\",\"value\":%s}",
             ID_ESC, ID_ESC);
    snprintf(e2, sizeof e2, "{\"id\":\"child\",\"parentId\":%s,\"timestamp\":1,\"type\":\"message\",\"message\":"
                            "{\"role\":\"user\",\"content\":%s}}", ID_RAW, ID_RAW);
    snprintf(e3, sizeof e3, "{\"id\":%s,\"parentId\":\"child\",\"timestamp\":2,\"type\":\"metadata\",\"key\":%s,\"value\":0}",
             ID_NUL, ID_NUL);
    snprintf(e4, sizeof e4, "{\"id\":%s,\"parentId\":null,\"timestamp\":3,\"type\":\"metadata\",\"key\":\"k\",\"value\":0}",
             ID_RAW);
    st = session_parse_entry(e1, &out);
    CHECK_STATUS(st, SESSION_OK, out, "escaped id parses");
    CHECK(strcmp(out, e1) == 0, "escaped id: normalised text is byte-identical (escapes kept): %s", out);
    expect("escaped id", st, &out, SESSION_OK, NULL, NULL);
    out = NULL;
    st = session_parse_entry(e3, &out);
    CHECK(st == SESSION_OK && strcmp(out, e3) == 0, "\\u0000 id: kept byte-identical (%s)", show(out));
    expect("\\u0000 id", st, &out, SESSION_OK, NULL, NULL);

    s = jsonl_store("escapes.jsonl", path, sizeof path);
    out = NULL;
    expect("append the escaped id", session_store_append(s, e1, &out), &out, SESSION_OK, "seq", "0");
    out = NULL;
    expect("append a child naming its parent in another spelling", session_store_append(s, e2, &out), &out,
           SESSION_OK, "seq", "1");
    out = NULL;
    expect("append the \\u0000 id", session_store_append(s, e3, &out), &out, SESSION_OK, "seq", "2");
    out = NULL;
    expect("the escaped id in another spelling is a duplicate", session_store_append(s, e4, &out), &out,
           SESSION_ERR_DUPLICATE_ID, NULL, NULL);
    out = NULL;
    expect("leaf_id = the id's C form", session_store_path_to(s, ID_C, &out), &out, SESSION_OK, "0.id", ID_ESC);
    out = NULL;
    st = session_store_path_to(s, "nul\\u0000after", &out);
    CHECK(st == SESSION_ERR_UNKNOWN_LEAF, "the escaped text is not the id (got %s)", session_status_name(st));
    expect("escaped text as leaf", st, &out, SESSION_ERR_UNKNOWN_LEAF, NULL, NULL);
    out = NULL;
    expect("an id is never truncated at its NUL: \"nul\" is unknown", session_store_path_to(s, "nul", &out), &out,
           SESSION_ERR_UNKNOWN_LEAF, NULL, NULL);
    out = NULL;
    expect("messages to the child", session_store_messages_on_path(s, "child", &out), &out, SESSION_OK,
           "0.content", ID_RAW);
    out = NULL;
    st = session_store_entries(s, &out);
    CHECK_STATUS(st, SESSION_OK, out, "entries");
    CHECK_JSON_LENGTH(out, "", 3, "three entries");
    CHECK_JSON(out, "0.id", ID_ESC, "entry 0 keeps its id's spelling");
    CHECK_JSON(out, "1.parentId", ID_RAW, "entry 1 keeps its parentId's spelling");
    CHECK_JSON(out, "2.id", ID_NUL, "entry 2 keeps its \\u0000 id");
    session_string_free(out);
    session_store_close(s);

    /* the file: exactly three lines, the normalised entries; U+2028 raw inside a line is no break */
    jsonl = cat(e1, "\n", e2, "\n", e3, "\n", (char *)NULL);
    bytes = read_file(path, &len);
    CHECK(len == strlen(jsonl) && memcmp(bytes, jsonl, len) == 0, "the file holds exactly the three lines:\n%s", bytes);
    out = NULL;
    st = session_recover_jsonl((const uint8_t *)bytes, len, &out);
    CHECK_JSON_LENGTH(out, "entries", 3, "recover_jsonl: three entries");
    expect("recover_jsonl of the file", st, &out, SESSION_OK, "warnings", "[]");
    out = NULL;
    st = session_jsonl_store_open(path, &s, &out);
    expect("reopen", st, &out, SESSION_OK, "state", "\"ready\"");
    out = NULL;
    st = session_store_path_to(s, "child", &out);
    CHECK_JSON_LENGTH(out, "", 2, "after reopen: path_to(child) = the escaped id, child");
    expect("after reopen, path_to(child)", st, &out, SESSION_OK, "0.id", ID_ESC);
    session_store_close(s);
    free(bytes);
    free(jsonl);
    printf("   %ld escape cases\n", g_cases - before);
}

/* ------------------------------------------------------------- 5. numbers ---- */

static void numbers(void)
{
    /* k: kept exactly; r: rejected (lossy), invalid_json at the number; e: either of those;
     * s: not a JSON number, invalid_json */
    static const struct {
        char mode;
        const char *text;
    } NUMS[] = {
        {'k', "0"}, {'k', "-0"}, {'k', "-0.0"}, {'k', "0e0"}, {'k', "0.0e-0"}, {'k', "1E+2"}, {'k', "1e-2"},
        {'k', "0.1"}, {'k', "5e-324"}, {'k', "1.7976931348623157e308"}, {'k', "-1.7976931348623157e308"},
        {'k', "9007199254740993"}, {'k', "-9223372036854775808"}, {'k', "9223372036854775807"},
        {'e', "18446744073709551615"}, {'e', "18446744073709551616"}, {'e', "-9223372036854775809"},
        {'e', "123456789012345678901234567890"}, {'e', "123456789012345678901234567890.5"},
        {'e', "2.5e-324"}, {'e', "1e-400"}, {'e', "-1e-400"}, {'e', "1.00000000000000000000000000000001"},
        {'r', "1e400"}, {'r', "-1e400"}, {'r', "1.7976931348623159e308"}, {'r', "1e99999999999999999999"},
        {'s', "01"}, {'s', "-01"}, {'s', "1."}, {'s', ".5"}, {'s', "+1"}, {'s', "-"}, {'s', "1e"}, {'s', "1e+"},
        {'s', "NaN"}, {'s', "Infinity"}, {'s', "-Infinity"}, {'s', "0x10"}, {'s', "1_000"}, {'s', "1.5.2"},
        {'s', "--1"}, {'s', "1e5e5"}, {'s', "\xd9\xa1"}, {'s', "- 1"}, {'s', "1 2"},
    };
    static const struct {
        const char *before, *after, *path, *pointer;
    } AT[] = {
        {"{\"id\":\"e\",\"parentId\":null,\"timestamp\":", ",\"type\":\"metadata\",\"key\":\"k\",\"value\":1}",
         "timestamp", "/timestamp"},
        {HEAD "\"type\":\"metadata\",\"key\":\"k\",\"value\":", "}", "value", "/value"},
        {HEAD "\"type\":\"metadata\",\"key\":\"k\",\"value\":[{\"a\":", "}]}", "value.0.a", "/value/0/a"},
        {HEAD "\"type\":\"message\",\"message\":{\"role\":\"toolResult\",\"toolCallId\":\"c\",\"toolName\":\"n\","
              "\"content\":[],\"isError\":false,\"details\":{\"n\":",
         "}}}", "message.details.n", "/message/details/n"},
    };
    char big_int[420], tiny[420];
    long before = g_cases, kept = 0, rejected = 0;
    size_t i, a;
    int pass;

    SECTION("numbers: kept exactly or rejected as invalid_json, never changed");
    big_int[0] = '1';
    memset(big_int + 1, '0', 400);
    big_int[401] = '\0'; /* 1e400 as an integer */
    memcpy(tiny, "0.", 2);
    memset(tiny + 2, '0', 400);
    strcpy(tiny + 402, "1"); /* 1e-401 */
    for (pass = 0; pass < 2; pass++) {
        size_t count = pass == 0 ? sizeof NUMS / sizeof NUMS[0] : 2;
        for (i = 0; i < count; i++) {
            char mode = pass == 0 ? NUMS[i].mode : 'e';
            const char *num = pass == 0 ? NUMS[i].text : (i == 0 ? big_int : tiny);
            for (a = 0; a < sizeof AT / sizeof AT[0]; a++) {
                char *entry = cat(AT[a].before, num, AT[a].after, (char *)NULL), *out = NULL, what[128];
                SessionStatus st = session_parse_entry(entry, &out);
                snprintf(what, sizeof what, "number %.40s at %s", num, AT[a].pointer);
                if (st == SESSION_OK) {
                    CHECK(mode != 'r' && mode != 's', "%s: must be rejected, was accepted: %s", what, out);
                    CHECK_JSON(out, AT[a].path, num, "%s: kept exactly", what);
                    CHECK(strcmp(out, entry) == 0, "%s: the whole entry is unchanged", what);
                    kept++;
                    expect(what, st, &out, SESSION_OK, NULL, NULL);
                } else {
                    CHECK(mode != 'k', "%s: must be kept, was rejected: %s", what, show(out));
                    rejected++;
                    if (mode == 's')
                        expect(what, st, &out, SESSION_ERR_INVALID_JSON, NULL, NULL);
                    else
                        expect(what, st, &out, SESSION_ERR_INVALID_JSON, "error.pointer", quoted("", AT[a].pointer));
                }
                free(entry);
            }
        }
    }
    printf("   %ld number cases: %ld kept exactly, %ld rejected\n", g_cases - before, kept, rejected);
}

/* ---------------------------------------------- 6. duplicate keys at depth ---- */

static void duplicate_keys(void)
{
    static const struct {
        const char *entry, *pointer; /* pointer NULL: not a duplicate, accepted */
    } DUPS[] = {
        {"{\"id\":\"e\",\"parentId\":null,\"parentId\":null,\"timestamp\":1,\"type\":\"metadata\",\"key\":\"k\",\"value\":1}",
         "/parentId"},
        {HEAD "\"type\":\"message\",\"message\":{\"role\":\"user\",\"role\":\"user\",\"content\":\"x\"}}", "/message/role"},
        {HEAD "\"type\":\"message\",\"message\":{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"a\","
              "\"text\":\"b\"}]}}",
         "/message/content/0/text"},
        {HEAD "\"type\":\"message\",\"message\":{\"role\":\"assistant\",\"content\":[{\"type\":\"toolCall\",\"id\":\"c\","
              "\"name\":\"n\",\"arguments\":{\"a\":{\"b\":[{\"c\":1,\"c\":2}]}}}]}}",
         "/message/content/0/arguments/a/b/0/c"},
        {HEAD "\"type\":\"message\",\"message\":{\"role\":\"toolResult\",\"toolCallId\":\"c\",\"toolName\":\"n\","
              "\"content\":[],\"isError\":false,\"details\":{\"x\":[0,{\"y\":1,\"z\":2,\"y\":3}]}}}",
         "/message/details/x/1/y"},
        {HEAD "\"type\":\"message\",\"message\":{\"role\":\"assistant\",\"content\":[],\"usage\":{\"input\":1,"
              "\"input\":2}}}",
         "/message/usage/input"},
        {META("{\"a\":1,\"\\u0061\":2}"), "/value/a"},
        {META("{\"\xc3\xa9\":1,\"\\u00e9\":2}"), "/value/\xc3\xa9"},
        {META("{\"~/\":1,\"~\\/\":2}"), "/value/~0~1"},
        {META("{\"\":1,\"\":2}"), "/value/"},
        {META("{\"e\\u0301\":1,\"\xc3\xa9\":2}"), NULL},
        {META("{\"a\":1,\"A\":2}"), NULL},
        {META("{\"a\":{\"k\":1},\"b\":{\"k\":1},\"c\":[{\"k\":1},{\"k\":1}]}"), NULL},
    };
    char deep[4096], *p, line2[4200], arr[4300], ptr[1024], *q;
    long before = g_cases;
    size_t i;
    int d;

    SECTION("duplicate keys at depth (also spelt with escapes) -> invalid_json at the exact pointer");
    /* 100 levels of {"a":...} with the duplicate at the bottom */
    p = deep + sprintf(deep, "%s", HEAD "\"type\":\"metadata\",\"key\":\"k\",\"value\":");
    q = ptr + sprintf(ptr, "/value");
    for (d = 0; d < 100; d++) {
        p += sprintf(p, "{\"a\":");
        q += sprintf(q, "/a");
    }
    p += sprintf(p, "{\"k\":1,\"k\":2}");
    q += sprintf(q, "/k");
    for (d = 0; d < 100; d++) *p++ = '}';
    strcpy(p, "}");
    for (i = 0; i <= sizeof DUPS / sizeof DUPS[0]; i++) {
        const char *entry = i < sizeof DUPS / sizeof DUPS[0] ? DUPS[i].entry : deep;
        const char *pointer = i < sizeof DUPS / sizeof DUPS[0] ? DUPS[i].pointer : ptr;
        char *out = NULL, what[80];
        SessionStore *mem = memory_store();
        snprintf(what, sizeof what, "duplicate keys #%zu (%.40s)", i, pointer ? pointer : "none");
        snprintf(arr, sizeof arr, "[" LINE1 ",%s]", entry);
        snprintf(line2, sizeof line2, LINE1 "\n%s\n", entry);
        if (!pointer) {
            expect(what, session_parse_entry(entry, &out), &out, SESSION_OK, NULL, NULL);
            out = NULL;
            expect(what, session_store_append(mem, entry, &out), &out, SESSION_OK, NULL, NULL);
            session_store_close(mem);
            continue;
        }
        expect(what, session_parse_entry(entry, &out), &out, SESSION_ERR_INVALID_JSON, "error.pointer", quoted("", pointer));
        out = NULL;
        expect(what, session_path_to(arr, "r", &out), &out, SESSION_ERR_INVALID_JSON, "error.pointer",
               quoted("/1", pointer));
        out = NULL;
        expect(what, session_messages_on_path(arr, "r", &out), &out, SESSION_ERR_INVALID_JSON, "error.pointer",
               quoted("/1", pointer));
        out = NULL;
        expect(what, session_store_append(mem, entry, &out), &out, SESSION_ERR_INVALID_JSON, "error.pointer",
               quoted("", pointer));
        out = NULL;
        expect(what, session_recover_jsonl((const uint8_t *)line2, strlen(line2), &out), &out,
               SESSION_ERR_CORRUPT_LINE, "error.line", "2");
        out = NULL;
        {
            SessionStatus st = session_recover_jsonl((const uint8_t *)line2, strlen(line2), &out);
            CHECK_JSON(out, "error.reason", "\"invalid_json\"", "%s: recover reason", what);
            expect(what, st, &out, SESSION_ERR_CORRUPT_LINE, "error.pointer", quoted("", pointer));
        }
        session_store_close(mem);
    }
    printf("   %ld duplicate-key cases\n", g_cases - before);
}

/* ---------------------------------------- 7. recover_jsonl: hostile bytes ---- */

static void recover_small(void)
{
    static const char NULS[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    char buf[512], *exact, *out = NULL;
    size_t n;
    long before = g_cases;

    SECTION("recover_jsonl: len 0 with a pointer, NULs, len shorter than the buffer");
    expect("len 0, non-NULL pointer to text", session_recover_jsonl((const uint8_t *)"garbage\n", 0, &out), &out,
           SESSION_OK, "", "{\"entries\":[],\"warnings\":[]}");
    out = NULL;
    expect("8 NULs, no newline", session_recover_jsonl((const uint8_t *)NULS, sizeof NULS, &out), &out, SESSION_OK,
           "warnings", "[{\"code\":\"unterminated_tail\",\"line\":1}]");
    memcpy(buf, NULS, 8);
    buf[8] = '\n';
    out = NULL;
    expect("8 NULs and a newline", session_recover_jsonl((const uint8_t *)buf, 9, &out), &out,
           SESSION_ERR_CORRUPT_LINE, "error.line", "1");
    n = (size_t)sprintf(buf, "%s\n", LINE1);
    memcpy(buf + n, NULS, 8);
    out = NULL;
    expect("a line, then NULs", session_recover_jsonl((const uint8_t *)buf, n + 8, &out), &out, SESSION_OK,
           "warnings", "[{\"code\":\"unterminated_tail\",\"line\":2}]");
    out = NULL;
    expect("a single NUL", session_recover_jsonl((const uint8_t *)NULS, 1, &out), &out, SESSION_OK, "warnings",
           "[{\"code\":\"unterminated_tail\",\"line\":1}]");
    out = NULL;
    expect("a BOM, then newline", session_recover_jsonl((const uint8_t *)"\xef\xbb\xbf\n", 4, &out), &out,
           SESSION_ERR_CORRUPT_LINE, "error.line", "1");
    out = NULL;
    expect("whitespace only, no newline", session_recover_jsonl((const uint8_t *)" \t\r \t", 5, &out), &out,
           SESSION_OK, "", "{\"entries\":[],\"warnings\":[]}");
    /* the buffer is exactly len bytes (no NUL after it): nothing past len is read */
    n = strlen(LINE1) + 1;
    exact = (char *)xmalloc(n);
    memcpy(exact, LINE1 "\n", n);
    out = NULL;

    {
        SessionStatus st = session_recover_jsonl((const uint8_t *)exact, n, &out);
        CHECK_JSON_LENGTH(out, "entries", 1, "an exactly-sized buffer");
        expect("an exactly-sized buffer", st, &out, SESSION_OK, "warnings", "[]");
    }
    out = NULL;
    expect("len stops before the newline", session_recover_jsonl((const uint8_t *)exact, n - 1, &out), &out,
           SESSION_OK, "warnings", "[{\"code\":\"unterminated_tail\",\"line\":1}]");
    free(exact);
    printf("   %ld recover cases\n", g_cases - before);
}

/* --------------------------------------- 8. hostile leaf ids and paths ---- */

static void leaves_and_paths(void)
{
    char path[512], *long_leaf, *long_path, *out = NULL;
    SessionStore *s = jsonl_store("leaves.jsonl", path, sizeof path), *o = (SessionStore *)&g_cases;
    const char *e1 = "[" LINE1 "]";
    long before = g_cases;

    SECTION("hostile leaf ids and paths");
    CHECK_STATUS(session_store_append(s, LINE1, NULL), SESSION_OK, NULL, "root");
    long_leaf = (char *)xmalloc(1 << 20);
    memset(long_leaf, 'r', (1 << 20) - 1);
    long_leaf[(1 << 20) - 1] = '\0';
    expect("store_path_to(\"\")", session_store_path_to(s, "", &out), &out, SESSION_ERR_UNKNOWN_LEAF, "error.id", "\"\"");
    out = NULL;
    expect("store_messages_on_path(1 MiB leaf)", session_store_messages_on_path(s, long_leaf, &out), &out,
           SESSION_ERR_UNKNOWN_LEAF, NULL, NULL);
    out = NULL;
    expect("path_to(entries, \"\")", session_path_to(e1, "", &out), &out, SESSION_ERR_UNKNOWN_LEAF, "error.id", "\"\"");
    out = NULL;
    expect("messages_on_path(entries, 1 MiB leaf)", session_messages_on_path(e1, long_leaf, &out), &out,
           SESSION_ERR_UNKNOWN_LEAF, NULL, NULL);
    out = NULL;
    expect("path_to(\"[]\", leaf)", session_path_to("[]", "r", &out), &out, SESSION_ERR_UNKNOWN_LEAF, NULL, NULL);
    out = NULL;
    expect("path_to(\"null\", leaf)", session_path_to("null", "r", &out), &out, SESSION_ERR_INVALID_ENTRY,
           "error.pointer", "\"\"");
    out = NULL;
    expect("path_to(\"\", leaf)", session_path_to("", "r", &out), &out, SESSION_ERR_INVALID_JSON, NULL, NULL);
    out = NULL;
    expect("path_to(entries with a leading BOM)", session_path_to("\xef\xbb\xbf[]", "r", &out), &out,
           SESSION_ERR_INVALID_JSON, NULL, NULL);
    out = NULL;
    expect("jsonl_store_open(\"\")", session_jsonl_store_open("", &o, &out), &out, SESSION_ERR_IO, NULL, NULL);
    CHECK(o == NULL, "*out_store is NULL after a failed open");
    out = NULL;
    expect("jsonl_store_open(a directory)", session_jsonl_store_open(g_dir, &o, &out), &out, SESSION_ERR_IO, NULL, NULL);
    long_path = (char *)xmalloc(8192);
    memset(long_path, 'p', 8191);
    memcpy(long_path, g_dir, strlen(g_dir));
    long_path[strlen(g_dir)] = '/';
    long_path[8191] = '\0';
    out = NULL;
    expect("jsonl_store_open(an 8 KiB path)", session_jsonl_store_open(long_path, &o, &out), &out, SESSION_ERR_IO, NULL,
           NULL);
    snprintf(long_path, 8192, "%s/missing/x.jsonl", g_dir);
    out = NULL;
    expect("jsonl_store_open(a missing folder)", session_jsonl_store_open(long_path, &o, &out), &out, SESSION_ERR_IO,
           NULL, NULL);
    snprintf(long_path, 8192, "%s/missing", g_dir);
    CHECK(!file_exists(long_path), "a missing folder is not created");
    CHECK(session_store_state(s) == SESSION_STATE_READY, "the store is still ready");
    session_store_close(s);
    free(long_leaf);
    free(long_path);
    printf("   %ld leaf and path cases\n", g_cases - before);
}

/* --------------------------------- 8b. open_with options, and repair ---- */

static void options_and_repair(void)
{
    /* every JSON type in every option; the strings each option accepts */
    static const struct {
        const char *name, *allowed; /* allowed variant codes (as VARIANTS) */
    } OPTS[] = {{"durability", ""}, {"lock", "t"}, {"readOnly", "t"}, {"salvage", "t"}, {"checkIdentity", "t"}};
    static const struct {
        const char *options;
        SessionStatus want;
    } TEXTS[] = {
        {NULL, SESSION_OK}, {"{}", SESSION_OK}, {" { } ", SESSION_OK},
        {"{\"durability\":\"none\"}", SESSION_OK}, {"{\"durability\":\"fsync\"}", SESSION_OK},
        {"{\"durability\":\"fsync_batch\"}", SESSION_OK}, {"{\"lock\":false,\"checkIdentity\":false}", SESSION_OK},
        {"{\"durability\":\"FSYNC\"}", SESSION_ERR_INVALID_ARGUMENT},
        {"{\"durability\":\"none\\u0000\"}", SESSION_ERR_INVALID_ARGUMENT},
        {"{\"Lock\":true}", SESSION_ERR_INVALID_ARGUMENT}, {"{\"x\":1}", SESSION_ERR_INVALID_ARGUMENT},
        {"{\"lock\":true,\"lock\":true}", SESSION_ERR_INVALID_ARGUMENT},
        {"{\"lock\":true,\"\\u006cock\":true}", SESSION_ERR_INVALID_ARGUMENT},
        {"{\"lock\":true} {}", SESSION_ERR_INVALID_ARGUMENT}, {"{\"lock\":true", SESSION_ERR_INVALID_ARGUMENT},
        {"", SESSION_ERR_INVALID_ARGUMENT}, {"null", SESSION_ERR_INVALID_ARGUMENT},
        {"true", SESSION_ERR_INVALID_ARGUMENT}, {"1", SESSION_ERR_INVALID_ARGUMENT},
        {"\"s\"", SESSION_ERR_INVALID_ARGUMENT}, {"[]", SESSION_ERR_INVALID_ARGUMENT},
        {"[{}]", SESSION_ERR_INVALID_ARGUMENT}, {"\xef\xbb\xbf{}", SESSION_ERR_INVALID_ARGUMENT},
    };
    char path[512], opts[256], what[300], bak[600], *out = NULL;
    SessionStore *s, *holder;
    long before = g_cases;
    size_t i, v;

    SECTION("session_jsonl_store_open_with: every JSON type in every option; session_jsonl_repair: hostile files");
    snprintf(path, sizeof path, "%s/options.jsonl", g_dir);
    write_file(path, LINE1 "\n", strlen(LINE1) + 1);
    for (i = 0; i < sizeof OPTS / sizeof OPTS[0] * (sizeof VARIANTS / sizeof VARIANTS[0]) + sizeof TEXTS / sizeof TEXTS[0];
         i++) {
        const char *o;
        SessionStatus want, st;
        size_t n_opts = sizeof OPTS / sizeof OPTS[0] * (sizeof VARIANTS / sizeof VARIANTS[0]);
        if (i < n_opts) {
            size_t k = i / (sizeof VARIANTS / sizeof VARIANTS[0]);
            v = i % (sizeof VARIANTS / sizeof VARIANTS[0]);
            if (!VARIANTS[v].json) continue; /* absence is the default: covered by "{}" */
            snprintf(opts, sizeof opts, "{\"%s\":%s}", OPTS[k].name, VARIANTS[v].json);
            o = opts;
            want = strchr(OPTS[k].allowed, VARIANTS[v].code) ? SESSION_OK : SESSION_ERR_INVALID_ARGUMENT;
        } else {
            o = TEXTS[i - n_opts].options;
            want = TEXTS[i - n_opts].want;
        }
        snprintf(what, sizeof what, "open_with(options %s)", o ? o : "NULL");
        s = (SessionStore *)&g_cases;
        st = session_jsonl_store_open_with(path, o, &s, &out);
        if (want == SESSION_ERR_INVALID_ARGUMENT) {
            CHECK(s == NULL, "%s: *out_store is NULL", what);
            expect(what, st, &out, want, "error.argument", "\"options_json\"");
        } else {
            expect(what, st, &out, want, "state", "\"ready\"");
            out = NULL;
            st = session_store_entries(s, &out);
            CHECK_JSON_LENGTH(out, "", 1, "%s: the entry reads back", what);
            expect(what, st, &out, SESSION_OK, NULL, NULL);
            session_store_close(s);
        }
        CHECK(file_size(path) == (long long)strlen(LINE1) + 1, "%s: the file is untouched", what);
    }

    /* repair: missing file, directory, "", interior damage (untouched), a held lock */
    snprintf(path, sizeof path, "%s/missing.jsonl", g_dir);
    expect("repair(missing file)", session_jsonl_repair(path, &out), &out, SESSION_ERR_IO, NULL, NULL);
    CHECK(!file_exists(path), "repair does not create a missing file");
    expect("repair(a directory)", session_jsonl_repair(g_dir, &out), &out, SESSION_ERR_IO, NULL, NULL);
    expect("repair(\"\")", session_jsonl_repair("", &out), &out, SESSION_ERR_IO, NULL, NULL);
    snprintf(path, sizeof path, "%s/damaged.jsonl", g_dir);
    write_file(path, LINE1 "\n\x00\x00\n" LINE2 "\nxx", strlen(LINE1) + strlen(LINE2) + 7);
    expect("repair(interior NUL line)", session_jsonl_repair(path, &out), &out, SESSION_ERR_CORRUPT_LINE, "error.line", "2");
    CHECK(file_size(path) == (long long)(strlen(LINE1) + strlen(LINE2) + 7), "a refused repair leaves the file untouched");
    snprintf(path, sizeof path, "%s/orphan.jsonl", g_dir);
    write_file(path, LINE2 "\nxx", strlen(LINE2) + 3);
    expect("repair(an orphan line)", session_jsonl_repair(path, &out), &out, SESSION_ERR_MISSING_PARENT, "error.line", "1");
    snprintf(path, sizeof path, "%s/held.jsonl", g_dir);
    write_file(path, LINE1 "\n", strlen(LINE1) + 1);
    CHECK_STATUS(session_jsonl_store_open(path, &holder, NULL), SESSION_OK, NULL, "a writer holds the file");
    expect("repair while a writer holds the lock", session_jsonl_repair(path, &out), &out, SESSION_ERR_LOCKED, NULL,
           NULL);
    session_store_close(holder);
    expect("repair a clean file: nothing to do", session_jsonl_repair(path, &out), &out, SESSION_OK, "backup", "null");
    snprintf(path, sizeof path, "%s/nul-tail.jsonl", g_dir);
    write_file(path, LINE1 "\n\0\0\0\0", strlen(LINE1) + 5);
    expect("repair(NUL tail)", session_jsonl_repair(path, &out), &out, SESSION_OK, "truncatedBytes", "4");
    CHECK(file_size(path) == (long long)strlen(LINE1) + 1, "the NUL tail is cut");
    snprintf(bak, sizeof bak, "%s.tail-1.bak", path);
    CHECK(file_size(bak) == 4, "the tail is kept in %s", bak);
    expect("repair again: nothing to do", session_jsonl_repair(path, &out), &out, SESSION_OK, "truncatedBytes", "0");
    printf("   %ld option and repair cases\n", g_cases - before);
}

/* ------------------------------------- 9. huge inputs, in forked children ---- */

struct report {
    long checks, cases, start_kb, peak_kb;
};

/*
 * Runs fn in a forked child: a crash or a hang (alarm) is reported as such; the child's
 * peak RSS growth must stay below max(20 x input, 32 MiB). `input` is what the case may
 * legitimately hold in memory (for a file opened by streaming: what is kept, not the file).
 */
static long g_rss_violations;
static char g_rss_report[2048];

static void isolated(const char *name, size_t input, void (*fn)(void))
{
    struct report rep;
    int fds[2], status = 0;
    double t0 = now_seconds();
    long bound_kb = (long)((input * 20 > ((size_t)32 << 20) ? input * 20 : ((size_t)32 << 20)) / 1024);
    ssize_t n;
    pid_t pid;

    fflush(stdout);
    fflush(stderr);
    CHECK(pipe(fds) == 0, "pipe");
    pid = fork();
    CHECK(pid >= 0, "fork");
    if (pid == 0) {
        close(fds[0]);
        alarm((unsigned)g_alarm);
        memset(&rep, 0, sizeof rep);
        rep.start_kb = peak_rss_kb();
        g_checks = 0;
        g_cases = 0;
        fn();
        rep.checks = g_checks;
        rep.cases = g_cases;
        rep.peak_kb = peak_rss_kb();
        if (write(fds[1], &rep, sizeof rep) != (ssize_t)sizeof rep) exit(3);
        close(fds[1]);
        fflush(stdout);
        exit(0);
    }
    close(fds[1]);
    memset(&rep, 0, sizeof rep);
    n = read(fds[0], &rep, sizeof rep);
    close(fds[0]);
    CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
    CHECK(!WIFSIGNALED(status), "%s: the child died of signal %d (%s)", name, WTERMSIG(status),
          WTERMSIG(status) == SIGALRM ? "a hang: no answer within the alarm" : "a crash");
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s: the child failed (exit status %d)", name,
          WEXITSTATUS(status));
    CHECK(n == (ssize_t)sizeof rep, "%s: the child reported", name);
    g_checks += rep.checks;
    g_cases += rep.cases;
    printf("   %-62s input %7.1f MB  peak RSS +%7.1f MB  (bound %6.0f MB)  %5.2f s\n", name, (double)input / 1e6,
           (double)(rep.peak_kb - rep.start_kb) / 1024.0, (double)bound_kb / 1024.0, now_seconds() - t0);
    fflush(stdout);
    g_checks++;
    if (g_check_rss && rep.peak_kb - rep.start_kb > bound_kb) {
        /* reported at the end, so that every case still runs and prints its figures */
        size_t used = strlen(g_rss_report);
        g_rss_violations++;
        snprintf(g_rss_report + used, sizeof g_rss_report - used, "\n     %s: peak RSS grew by %ld KiB, bound %ld KiB",
                 name, rep.peak_kb - rep.start_kb, bound_kb);
    }
}

/* A JSON string literal (with its quotes) of exactly n bytes of content: escapes, multi-byte
 * UTF-8, raw U+2028, padded with 'a'. */
static char *big_string_entry(const char *before, size_t n, const char *after, size_t *len)
{
    static const char PAT[] = "lorem \\\"ipsum\\\" \\n \xc3\xa9\xe2\x80\xa8 \\u00e9 \\ud83d\\ude00 \\\\ dolor sit amet, ";
    size_t pb = strlen(before), pa = strlen(after), pat = sizeof PAT - 1, i = 0;
    char *s = (char *)xmalloc(pb + n + pa + 3), *p = s;
    memcpy(p, before, pb);
    p += pb;
    *p++ = '"';
    for (; i + pat <= n; i += pat, p += pat) memcpy(p, PAT, pat);
    memset(p, 'a', n - i);
    p += n - i;
    *p++ = '"';
    memcpy(p, after, pa + 1);
    *len = pb + n + 2 + pa;
    return s;
}

#define USER_BEFORE HEAD "\"type\":\"message\",\"message\":{\"role\":\"user\",\"content\":"

static void big_parse(void)
{
    size_t len;
    char *entry = big_string_entry(HEAD "\"type\":\"metadata\",\"key\":\"k\",\"value\":", g_big, "}", &len), *out = NULL;
    SessionStatus st = session_parse_entry(entry, &out);
    if (st == SESSION_OK) {
        CHECK(strlen(out) == len && memcmp(out, entry, len) == 0, "the huge entry normalises to itself");
        printf("      parse_entry: accepted, round-trips (%zu bytes)\n", len);
    } else {
        printf("      parse_entry: rejected: %.200s\n", show(out));
        CHECK(st == SESSION_ERR_INVALID_ENTRY || st == SESSION_ERR_INVALID_JSON, "a clear status");
    }
    expect("parse_entry(huge string)", st, &out, st, NULL, NULL);
    free(entry);
    {
        char path[512];
        SessionStore *s = (SessionStore *)&g_cases;
        char *opts = big_string_entry("{\"durability\":", g_big, "}", &len);
        snprintf(path, sizeof path, "%s/big-options.jsonl", g_dir);
        st = session_jsonl_store_open_with(path, opts, &s, &out);
        expect("open_with(huge options string)", st, &out, SESSION_ERR_INVALID_ARGUMENT, "error.argument",
               "\"options_json\"");
        CHECK(s == NULL && !file_exists(path), "bad options: no store, no file");
        free(opts);
    }
}

static void big_slices(void)
{
    size_t len;
    char *arr = big_string_entry("[" LINE1 "," USER_BEFORE, g_big, "}}]", &len), *out = NULL;
    SessionStatus st;
    (void)len;
    st = session_path_to(arr, "e", &out);
    CHECK_JSON_LENGTH(out, "", 1, "path_to over the huge entry");
    expect("path_to(huge string)", st, &out, SESSION_OK, NULL, NULL);
    out = NULL;
    st = session_messages_on_path(arr, "e", &out);
    CHECK_JSON_LENGTH(out, "", 1, "messages_on_path over the huge entry");
    CHECK(json_get(out, "0.content").n == g_big + 2, "the huge content comes back whole");
    expect("messages_on_path(huge string)", st, &out, SESSION_OK, NULL, NULL);
    free(arr);
}

static void big_append_jsonl(void)
{
    char path[512], *out = NULL, *entry;
    size_t len;
    SessionStore *s = jsonl_store("big-append.jsonl", path, sizeof path);
    long long size;
    SessionStatus st;

    CHECK_STATUS(session_store_append(s, LINE1, NULL), SESSION_OK, NULL, "a small root first");
    size = file_size(path);
    entry = big_string_entry(USER_BEFORE, g_big, "}}", &len);
    st = session_store_append(s, entry, &out);
    if (len > SESSION_MAX_LINE_BYTES) {
        expect("append(huge line) on a JSONL store", st, &out, SESSION_ERR_INVALID_ENTRY, NULL, NULL);
        CHECK(file_size(path) == size, "the file is unchanged (%lld bytes, was %lld)", file_size(path), size);
    } else {
        expect("append(big line) on a JSONL store", st, &out, SESSION_OK, NULL, NULL);
        CHECK(file_size(path) == size + (long long)len + 1, "the line was written whole");
    }
    CHECK(session_store_state(s) == SESSION_STATE_READY, "the store is still ready");
    out = NULL;
    expect("a small append after it", session_store_append(s, LINE2, &out), &out, SESSION_OK, NULL, NULL);
    session_store_close(s);
    free(entry);
}

static void big_append_memory(void)
{
    char *out = NULL, *entry;
    size_t len;
    SessionStore *s = memory_store();
    SessionStatus st;
    entry = big_string_entry(USER_BEFORE, g_big, "}}", &len);
    st = session_store_append(s, entry, &out);
    printf("      memory store append: %s\n", session_status_name(st));
    CHECK(st == SESSION_OK || st == SESSION_ERR_INVALID_ENTRY, "a clear status (%s)", session_status_name(st));
    expect("append(huge entry) on a memory store", st, &out, st, NULL, NULL);
    free(entry);
    out = NULL;
    st = session_store_messages_on_path(s, "e", &out);
    if (st == SESSION_OK) CHECK(json_get(out, "0.content").n == g_big + 2, "the huge content comes back whole");
    expect("messages_on_path on the memory store", st, &out, st, NULL, NULL);
    session_store_close(s);
}

static void big_recover(void)
{
    size_t len;
    char *bytes = big_string_entry(LINE1 "\n" LINE2 "\n" USER_BEFORE, g_big, "}}\n", &len), *out = NULL;
    size_t line = len - 1 - strlen(LINE1 "\n" LINE2 "\n");
    SessionStatus st = session_recover_jsonl((const uint8_t *)bytes, len, &out);
    if (line > SESSION_MAX_LINE_BYTES) {
        CHECK_JSON(out, "error.reason", "\"line_too_long\"", "a committed huge line");
        expect("recover_jsonl(huge committed line)", st, &out, SESSION_ERR_CORRUPT_LINE, "error.line", "3");
    } else {
        CHECK_JSON_LENGTH(out, "entries", 3, "a committed big line");
        expect("recover_jsonl(big committed line)", st, &out, SESSION_OK, "warnings", "[]");
    }
    out = NULL;
    st = session_recover_jsonl((const uint8_t *)bytes, len - 1, &out);
    CHECK_JSON_LENGTH(out, "entries", 2, "a huge tail: the committed prefix");
    expect("recover_jsonl(huge tail)", st, &out, SESSION_OK, "warnings", "[{\"code\":\"unterminated_tail\",\"line\":3}]");
    free(bytes);
}

/* Files written by the parent in chunks (so that only the child's memory is measured). */
static char g_tail_file[600], g_tail_nl_file[600], g_sparse_file[600];

static void write_garbage_file(const char *path, size_t garbage, int newline)
{
    static char chunk[1 << 16];
    FILE *f = fopen(path, "wb");
    size_t i, done;
    CHECK(f != NULL, "fopen %s", path);
    for (i = 0; i < sizeof chunk; i++) chunk[i] = (char)('!' + (i * 7919) % 90);
    fputs(LINE1 "\n" LINE2 "\n", f);
    for (done = 0; done < garbage; done += sizeof chunk)
        CHECK(fwrite(chunk, 1, garbage - done < sizeof chunk ? garbage - done : sizeof chunk, f) > 0, "fwrite");
    if (newline) fputc('\n', f);
    CHECK(fclose(f) == 0, "fclose");
}

static void open_tail_file(void)
{
    SessionStore *s = NULL;
    char *out = NULL;
    long long size = file_size(g_tail_file);
    SessionStatus st = session_jsonl_store_open(g_tail_file, &s, &out);
    CHECK_JSON(out, "warnings", "[{\"code\":\"unterminated_tail\",\"line\":3}]", "huge garbage tail: the warning");
    expect("open(file + huge garbage tail)", st, &out, SESSION_OK, "state", "\"needs_repair\"");
    out = NULL;
    st = session_store_entries(s, &out);
    CHECK_JSON_LENGTH(out, "", 2, "the committed prefix");
    expect("entries", st, &out, SESSION_OK, NULL, NULL);
    out = NULL;
    expect("append on needs_repair", session_store_append(s, "{\"id\":\"z\",\"parentId\":null,\"timestamp\":1,"
                                                            "\"type\":\"metadata\",\"key\":\"k\",\"value\":1}", &out),
           &out, SESSION_ERR_NEEDS_REPAIR, NULL, NULL);
    session_store_close(s);
    CHECK(file_size(g_tail_file) == size, "the file is untouched");
}

static void open_tail_nl_file(void)
{
    SessionStore *s = (SessionStore *)&g_cases;
    char *out = NULL;
    SessionStatus st = session_jsonl_store_open(g_tail_nl_file, &s, &out);
    CHECK_JSON(out, "error.reason", g_big > SESSION_MAX_LINE_BYTES ? "\"line_too_long\"" : "\"invalid_json\"",
               "committed huge garbage: the reason");
    expect("open(file + huge garbage line)", st, &out, SESSION_ERR_CORRUPT_LINE, "error.line", "3");
    CHECK(s == NULL, "*out_store is NULL");
}

static void repair_tail_file(void)
{
    char *out = NULL, bak[700];
    SessionStore *s = NULL;
    long long size = file_size(g_tail_file);
    SessionStatus st = session_jsonl_repair(g_tail_file, &out);
    char want[64];
    snprintf(want, sizeof want, "%zu", g_big);
    CHECK_JSON(out, "entries", "2", "repair keeps the two committed entries");
    expect("repair(file + huge garbage tail)", st, &out, SESSION_OK, "truncatedBytes", want);
    snprintf(bak, sizeof bak, "%s.tail-1.bak", g_tail_file);
    CHECK(file_size(bak) == (long long)g_big, "the sidecar holds the whole tail (%lld bytes)", file_size(bak));
    CHECK(file_size(g_tail_file) == size - (long long)g_big, "the file is cut to its committed prefix");
    st = session_jsonl_store_open(g_tail_file, &s, &out);
    expect("open after repair", st, &out, SESSION_OK, "state", "\"ready\"");
    session_store_close(s);
    unlink(bak);
}

static void open_sparse_file(void)
{
    SessionStore *s = NULL;
    char *out = NULL;
    SessionStatus st = session_jsonl_store_open(g_sparse_file, &s, &out);
    CHECK_JSON(out, "warnings", "[{\"code\":\"unterminated_tail\",\"line\":1}]", "sparse NUL file: the warning");
    expect("open(sparse NUL file)", st, &out, SESSION_OK, "state", "\"needs_repair\"");
    session_store_close(s);
}

/* n copies of `open`, then `middle`, then n copies of `close` (close may be ""). */
static char *nest(const char *before, const char *open, long n, const char *middle, const char *close,
                  const char *after)
{
    size_t lo = strlen(open), lc = strlen(close), lb = strlen(before), lm = strlen(middle), la = strlen(after);
    char *s = (char *)xmalloc(lb + (lo + lc) * (size_t)n + lm + la + 1), *p = s;
    long i;
    memcpy(p, before, lb);
    p += lb;
    for (i = 0; i < n; i++, p += lo) memcpy(p, open, lo);
    memcpy(p, middle, lm);
    p += lm;
    for (i = 0; i < n; i++, p += lc) memcpy(p, close, lc);
    memcpy(p, after, la + 1);
    return s;
}

static void deep_everywhere(void)
{
    char path[512], *out = NULL, *deep = nest("", "[", g_nest, "", "", ""), *lines;
    SessionStore *mem = memory_store(), *js = jsonl_store("deep.jsonl", path, sizeof path);
    SessionStatus st;
    long long size = file_size(path);

    st = session_parse_entry(deep, &out);
    expect_pointer_starts("parse_entry([[[...)", out, "\"/0/0/0");
    expect("parse_entry([[[...)", st, &out, SESSION_ERR_INVALID_JSON, NULL, NULL);
    out = NULL;
    expect("path_to([[[...)", session_path_to(deep, "e", &out), &out, SESSION_ERR_INVALID_JSON, NULL, NULL);
    out = NULL;
    expect("messages_on_path([[[...)", session_messages_on_path(deep, "e", &out), &out, SESSION_ERR_INVALID_JSON, NULL,
           NULL);
    out = NULL;
    expect("store_append([[[...) memory", session_store_append(mem, deep, &out), &out, SESSION_ERR_INVALID_JSON, NULL,
           NULL);
    out = NULL;
    expect("store_append([[[...) jsonl", session_store_append(js, deep, &out), &out, SESSION_ERR_INVALID_JSON, NULL,
           NULL);
    CHECK(file_size(path) == size, "the file is unchanged");
    CHECK(session_store_state(js) == SESSION_STATE_READY, "the JSONL store is still ready");
    {
        SessionStore *o = (SessionStore *)&g_cases;
        char opath[512];
        snprintf(opath, sizeof opath, "%s/deep-options.jsonl", g_dir);
        expect("open_with(options [[[...)", session_jsonl_store_open_with(opath, deep, &o, &out), &out,
               SESSION_ERR_INVALID_ARGUMENT, "error.argument", "\"options_json\"");
        CHECK(o == NULL && !file_exists(opath), "deep options: no store, no file");
        deep[0] = '{';
        expect("open_with(options {[[...)", session_jsonl_store_open_with(opath, deep, &o, &out), &out,
               SESSION_ERR_INVALID_ARGUMENT, "error.argument", "\"options_json\"");
        deep[0] = '[';
    }
    lines = cat(LINE1 "\n", deep, "\n", (char *)NULL);
    out = NULL;
    st = session_recover_jsonl((const uint8_t *)lines, strlen(lines), &out);
    CHECK_JSON(out, "error.reason", "\"invalid_json\"", "recover: reason");
    expect("recover_jsonl(line of [[[...)", st, &out, SESSION_ERR_CORRUPT_LINE, "error.line", "2");
    out = NULL;
    st = session_recover_jsonl((const uint8_t *)lines, strlen(lines) - 1, &out);
    CHECK_JSON_LENGTH(out, "entries", 1, "recover: the committed prefix");
    expect("recover_jsonl(tail of [[[...)", st, &out, SESSION_OK, "warnings", "[{\"code\":\"unterminated_tail\",\"line\":2}]");
    session_store_close(mem);
    session_store_close(js);
    free(deep);
    free(lines);
}

static void deep_in_entry(void)
{
    static const struct {
        const char *open, *middle, *close, *pointer;
    } KINDS[] = {
        {"[", "1", "]", "\"/value/0/0/0"},
        {"{\"a\":", "1", "}", "\"/value/a/a/a"},
        {"[{\"a\":", "1", "}]", "\"/value/0/a/0/a"},
        {"[", "", "", "\"/value/0/0/0"}, /* never closed */
    };
    size_t k;
    for (k = 0; k < sizeof KINDS / sizeof KINDS[0]; k++) {
        char *entry = nest(HEAD "\"type\":\"metadata\",\"key\":\"k\",\"value\":", KINDS[k].open, g_nest,
                           KINDS[k].middle, KINDS[k].close, "}");
        char *arr = cat("[", entry, "]", (char *)NULL), *out = NULL, ptr[64], what[96];
        SessionStore *mem = memory_store();
        SessionStatus st;
        snprintf(what, sizeof what, "entry with %ld x %s", g_nest, KINDS[k].open);
        st = session_parse_entry(entry, &out);
        expect_pointer_starts(what, out, KINDS[k].pointer);
        expect(what, st, &out, SESSION_ERR_INVALID_JSON, NULL, NULL);
        out = NULL;
        st = session_path_to(arr, "e", &out);
        snprintf(ptr, sizeof ptr, "\"/0%s", KINDS[k].pointer + 1);
        expect_pointer_starts(what, out, ptr);
        expect(what, st, &out, SESSION_ERR_INVALID_JSON, NULL, NULL);
        out = NULL;
        st = session_store_append(mem, entry, &out);
        expect_pointer_starts(what, out, KINDS[k].pointer);
        expect(what, st, &out, SESSION_ERR_INVALID_JSON, NULL, NULL);
        session_store_close(mem);
        free(entry);
        free(arr);
    }
}

/* g_garbage bytes of deterministic garbage: every byte value but '\n' (and, for C strings, NUL) */
static char *garbage(size_t n, int c_string)
{
    char *g = (char *)xmalloc(n + 2);
    unsigned long x = 2463534242UL;
    size_t i;
    for (i = 0; i < n; i++) {
        unsigned char b;
        x ^= x << 13, x ^= x >> 17, x ^= x << 5, x &= 0xffffffffUL;
        b = (unsigned char)(x >> 11);
        if (b == '\n') b = '~';
        if (c_string && (b == 0 || b >= 0x80)) b = (unsigned char)('!' + b % 90);
        g[i] = (char)b;
    }
    g[n] = '\0';
    return g;
}

static void garbage_recover(void)
{
    char *g = garbage(g_garbage, 0), *out = NULL, *b;
    SessionStatus st;
    size_t n = g_garbage;

    st = session_recover_jsonl((const uint8_t *)g, n, &out);
    expect("garbage, no newline", st, &out, SESSION_OK, "", "{\"entries\":[],\"warnings\":[{\"code\":\"unterminated_tail\",\"line\":1}]}");
    g[n] = '\n';
    out = NULL;
    expect("garbage + newline", session_recover_jsonl((const uint8_t *)g, n + 1, &out), &out, SESSION_ERR_CORRUPT_LINE,
           "error.line", "1");
    memset(g, 0, n);
    out = NULL;
    expect("NULs, no newline", session_recover_jsonl((const uint8_t *)g, n, &out), &out, SESSION_OK, "warnings",
           "[{\"code\":\"unterminated_tail\",\"line\":1}]");
    out = NULL;
    expect("NULs + newline", session_recover_jsonl((const uint8_t *)g, n + 1, &out), &out, SESSION_ERR_CORRUPT_LINE,
           "error.line", "1");
    memset(g, ' ', n);
    out = NULL;
    expect("blanks, no newline", session_recover_jsonl((const uint8_t *)g, n, &out), &out, SESSION_OK, "",
           "{\"entries\":[],\"warnings\":[]}");
    free(g);

    /* n blank lines, one entry, a garbage tail: the physical line number at scale */
    b = (char *)xmalloc(n + strlen(LINE1) + 8);
    memset(b, '\n', n);
    memcpy(b + n, LINE1 "\nxx", strlen(LINE1) + 3);
    out = NULL;
    st = session_recover_jsonl((const uint8_t *)b, n + strlen(LINE1) + 3, &out);
    CHECK_JSON_LENGTH(out, "entries", 1, "blank lines: one entry");
    {
        char want[96];
        snprintf(want, sizeof want, "[{\"code\":\"unterminated_tail\",\"line\":%zu}]", n + 2);
        expect("n blank lines, an entry, a tail", st, &out, SESSION_OK, "warnings", want);
    }
    free(b);
}

static void garbage_text(void)
{
    char *g = garbage(g_garbage, 1), *out = NULL;
    SessionStore *mem = memory_store();
    expect("parse_entry(garbage)", session_parse_entry(g, &out), &out, SESSION_ERR_INVALID_JSON, NULL, NULL);
    out = NULL;
    expect("path_to(garbage)", session_path_to(g, "e", &out), &out, SESSION_ERR_INVALID_JSON, NULL, NULL);
    out = NULL;
    expect("messages_on_path(\"[\" garbage)", session_messages_on_path((g[0] = '[', g), "e", &out), &out,
           SESSION_ERR_INVALID_JSON, NULL, NULL);
    out = NULL;
    expect("store_append(garbage)", session_store_append(mem, g, &out), &out, SESSION_ERR_INVALID_JSON, NULL, NULL);
    out = NULL;
    expect("store_path_to(garbage leaf)", session_store_path_to(mem, g, &out), &out, SESSION_ERR_UNKNOWN_LEAF, NULL, NULL);
    session_store_close(mem);
    free(g);
}

/* T18(b)/(c): a line of exactly SESSION_MAX_LINE_BYTES is accepted and round-trips; one more byte is not. */
static void max_line(void)
{
    char path[512], *out = NULL, *entry, *bytes;
    size_t len, overhead = strlen(USER_BEFORE) + 2 + 2, flen;
    SessionStore *s = jsonl_store("max-line.jsonl", path, sizeof path);
    SessionStatus st;

    entry = big_string_entry(USER_BEFORE, (size_t)SESSION_MAX_LINE_BYTES - overhead + 1, "}}", &len);
    CHECK(len == (size_t)SESSION_MAX_LINE_BYTES + 1, "the test entry is one byte too long (%zu)", len);
    expect("append(MAX + 1 bytes)", session_store_append(s, entry, &out), &out, SESSION_ERR_INVALID_ENTRY, NULL, NULL);
    CHECK(file_size(path) == 0, "nothing written");
    free(entry);
    entry = big_string_entry(USER_BEFORE, (size_t)SESSION_MAX_LINE_BYTES - overhead, "}}", &len);
    CHECK(len == (size_t)SESSION_MAX_LINE_BYTES, "the test entry is exactly the maximum (%zu)", len);
    out = NULL;
    expect("append(MAX bytes)", session_store_append(s, entry, &out), &out, SESSION_OK, "seq", "0");
    session_store_close(s);
    bytes = read_file(path, &flen);
    CHECK(flen == len + 1 && memcmp(bytes, entry, len) == 0 && bytes[len] == '\n', "the line is in the file, whole");
    free(bytes);
    out = NULL;
    st = session_jsonl_store_open(path, &s, &out);
    expect("reopen with a maximal line", st, &out, SESSION_OK, "state", "\"ready\"");
    out = NULL;
    st = session_store_messages_on_path(s, "e", &out);
    CHECK(st == SESSION_OK && json_get(out, "0.content").n == len - overhead + 2, "the maximal entry reads back whole");
    expect("messages_on_path(maximal)", st, &out, SESSION_OK, NULL, NULL);
    session_store_close(s);
    free(entry);
}

/*
 * Files with a huge uncommitted or corrupt tail, opened and repaired by streaming. By
 * default the bound is 20 x the file size (no crash, no runaway). With `strict` (the
 * --streaming run) it is what docs/contract.md §3 and T18(a) ask: memory follows what is kept
 * (two short lines), not the garbage, so the growth must stay under 32 MiB; T18(a)'s
 * 1 GiB sparse NUL tail is added.
 */
static void streamed_files(int strict)
{
    size_t sizes[2];
    int i, n = strict && g_big >= ((size_t)100 << 20) ? 2 : 1;
    sizes[0] = g_big;
    sizes[1] = (size_t)1 << 30;
    SECTION(strict ? "files with huge tails, streamed: memory follows what is kept (docs/contract.md §3, T18a)"
                   : "files with huge tails, streamed (each in a forked child)");
    snprintf(g_tail_file, sizeof g_tail_file, "%s/huge-tail.jsonl", g_dir);
    snprintf(g_tail_nl_file, sizeof g_tail_nl_file, "%s/huge-line.jsonl", g_dir);
    snprintf(g_sparse_file, sizeof g_sparse_file, "%s/sparse.jsonl", g_dir);
    write_garbage_file(g_tail_file, g_big, 0);
    isolated("file with a huge garbage tail: open", strict ? 0 : g_big, open_tail_file);
    isolated("file with a huge garbage tail: repair", strict ? 0 : g_big, repair_tail_file);
    unlink(g_tail_file);
    write_garbage_file(g_tail_nl_file, g_big, 1);
    isolated("file with a huge garbage line: open", strict ? 0 : g_big, open_tail_nl_file);
    unlink(g_tail_nl_file);
    for (i = 0; i < n; i++) {
        char name[96];
        int fd = open(g_sparse_file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        CHECK(fd >= 0 && ftruncate(fd, (off_t)sizes[i]) == 0 && close(fd) == 0, "a sparse file of NULs");
        snprintf(name, sizeof name, "sparse file of %.0f MB of NULs: open", (double)sizes[i] / 1e6);
        isolated(name, strict ? 0 : sizes[i], open_sparse_file);
        unlink(g_sparse_file);
    }
}

static pid_t g_parent;

/* On any exit of the parent (a failed CHECK too), no 100 MB file is left behind. */
static void cleanup(void)
{
    if (getpid() == g_parent && g_dir[0]) remove_tmpdir(g_dir);
}

int main(int argc, char **argv)
{
    int i, small = 0, streaming_only = 0;
    double t0 = now_seconds();

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--small") == 0)
            small = 1;
        else if (strcmp(argv[i], "--no-rss") == 0)
            g_check_rss = 0;
        else if (strcmp(argv[i], "--streaming") == 0)
            streaming_only = 1;
        else
            CHECK(0, "usage: test_hostile [--small] [--no-rss] [--streaming] (got %s)", argv[i]);
    }
    if (small) {
        g_big = (size_t)1 << 20; /* nesting stays at 1,000,000: it is rejected at depth 129 */
        g_garbage = 1000000;
        g_alarm = 600;
    }
    printf("hostile input: %.1f MB strings, %ld-deep nesting, %.1f MB garbage%s\n", (double)g_big / 1e6, g_nest,
           (double)g_garbage / 1e6, g_check_rss ? "" : " (memory bounds not checked)");
    make_tmpdir(g_dir, sizeof g_dir, "hostile");
    g_parent = getpid();
    atexit(cleanup);

    if (!streaming_only) {
        null_sweep();
        utf8_sweep();
        type_sweep();
        escapes();
        numbers();
        duplicate_keys();
        recover_small();
        leaves_and_paths();
        options_and_repair();
    }

    if (!streaming_only) {
        SECTION("huge inputs, each in a forked child (crash / hang / memory)");
        isolated("huge JSON string: parse_entry, open_with options", g_big, big_parse);
        isolated("huge JSON string: path_to, messages_on_path", g_big, big_slices);
        isolated("huge JSON string: store_append (JSONL store)", g_big, big_append_jsonl);
        isolated("huge JSON string: store_append (memory store)", g_big, big_append_memory);
        isolated("huge JSON string: recover_jsonl (committed, tail)", g_big, big_recover);
        isolated("deep nesting: [[[... in every JSON-text function", (size_t)g_nest, deep_everywhere);
        isolated("deep nesting inside an entry: [ / {\"a\": / [{\"a\": / unclosed", (size_t)g_nest * 6, deep_in_entry);
        isolated("garbage bytes: recover_jsonl", g_garbage, garbage_recover);
        isolated("garbage text: every JSON-text function", g_garbage, garbage_text);
        if (!small)
            isolated("a line of exactly SESSION_MAX_LINE_BYTES, and one byte more", (size_t)SESSION_MAX_LINE_BYTES,
                     max_line);
    }
    streamed_files(streaming_only);

    CHECK(g_rss_violations == 0, "memory stays bounded: %ld case(s) over the bound%s:%s", g_rss_violations,
          streaming_only ? " (a file opened or repaired by streaming: memory must follow what is kept, not the "
                           "garbage; docs/contract.md §3, T18a)" : "", g_rss_report);
    printf("%ld hostile cases; parent peak RSS %.1f MB; %.2f s\n", g_cases, (double)peak_rss_kb() / 1024.0,
           now_seconds() - t0);
    check_done("test_hostile");
    return 0;
}

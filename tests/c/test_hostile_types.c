/*
 * test_hostile_types.c -- every JSON type (null, true, 1, "s", [], {}) and "absent" in every field of every
 * entry shape -> OK where the type is allowed, else invalid_entry with the exact JSON Pointer;
 * the same through session_path_to / session_messages_on_path (pointer prefixed with the
 * element index) and session_store_append.
 * Part of the hostile-input suite (hostile.h).
 */
#include "hostile.h"

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
    long before = g_results;
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
                    check_result(what, st, &out, SESSION_OK, NULL, NULL);
                } else {
                    check_result(what, st, &out, SESSION_ERR_INVALID_ENTRY, "error.pointer", quoted("", ptr));
                }
                /* path_to / messages_on_path over [entry]: the pointer gains the index */
                out = NULL;
                st = (k + (int)v) % 2 ? session_path_to(arr, leaf, &out) : session_messages_on_path(arr, leaf, &out);
                if (!ok)
                    check_result(what, st, &out, SESSION_ERR_INVALID_ENTRY, "error.pointer", quoted("/0", ptr));
                else if (orphan)
                    check_result(what, st, &out, SESSION_ERR_MISSING_PARENT, "error.parentId", "\"s\"");
                else {
                    CHECK_JSON_LENGTH(out, "", (k + (int)v) % 2 ? 1 : is_message, "%s: path / messages", what);
                    check_result(what, st, &out, SESSION_OK, NULL, NULL);
                }
                /* store_append: the same status and pointer; the store stays usable */
                out = NULL;
                st = session_store_append(mem, entry, &out);
                if (!ok)
                    check_result(what, st, &out, SESSION_ERR_INVALID_ENTRY, "error.pointer", quoted("", ptr));
                else if (orphan)
                    check_result(what, st, &out, SESSION_ERR_MISSING_PARENT, "error.childId", "\"e\"");
                else
                    check_result(what, st, &out, SESSION_OK, "seq", "0");
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
            check_result(WRONG[i].entry, session_parse_entry(WRONG[i].entry, &out), &out, SESSION_ERR_INVALID_ENTRY,
                   "error.pointer", quoted("", WRONG[i].pointer));
        }
    }
    printf("   %ld wrong-type cases\n", g_results - before);
}

int main(void)
{
    hostile_begin("hostile_types");
    type_sweep();
    hostile_end("test_hostile_types");
    return 0;
}

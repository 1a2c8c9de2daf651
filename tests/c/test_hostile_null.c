/*
 * test_hostile_null.c -- NULL in every combination of pointer arguments of every function
 * session.h declares (docs/contract.md §4, §5): a NULL required pointer gives
 * SESSION_ERR_INVALID_ARGUMENT with an error JSON whose `argument` names one of the NULL
 * arguments, *out_store is NULL, no file is created and the store stays ready; a NULL
 * optional pointer (out_json, options_json, ...) is never an invalid argument; nothing
 * crashes. Store functions run on a memory store and on a JSONL store.
 *
 * The function list is generated from session.h at build time (gen_functions.py), so a
 * function added to the library is swept without editing this file. A parameter name
 * this file has no value for is a compile error naming VALUE_<name>: add it below.
 * Part of the hostile-input suite (hostile.h).
 */
#include "hostile.h"
#include "session_functions.h"

static SessionStore *g_store;  /* the store the store functions run on */
static SessionStore *g_opened; /* what an open function returns through out_store */
static char *g_out;            /* what a function returns through out_json (out_html) */
static char g_entry[160], g_path[600], g_import_out[600];
static long g_serial;

/* A valid value for each parameter name. */
#define VALUE_entry_json ((const char *)g_entry)
#define VALUE_entries_json ("[" LINE1 "]")
#define VALUE_leaf_id "r"
#define VALUE_id "r"
#define VALUE_path ((const char *)g_path)
#define VALUE_dir ((const char *)g_dir)
#define VALUE_options_json "{}"
#define VALUE_query_json "{\"query\":\"x\"}"
#define VALUE_bytes ((const uint8_t *)LINE1 "\n")
#define VALUE_out_json (&g_out)
#define VALUE_out_html (&g_out)
#define VALUE_out_store (&g_opened)
#define VALUE_store g_store
#define VALUE_s ((char *)NULL)
#define VALUE_user_data ((void *)NULL)
#define VALUE_estimate ((SessionTokenEstimator)0)
#define VALUE_progress ((SessionProgress)0)
/* session_import, session_export: the source does not exist (a fresh name each call), so even the call
 * with no NULL fails on the file, never on an argument, and writes nothing. */
#define VALUE_format "pi"
#define VALUE_src_path ((const char *)g_path)
#define VALUE_out_path ((const char *)g_import_out)
#define VALUE_dst_path ((const char *)g_import_out)
/* session_pg_*: a Unix socket folder that does not exist, so the call with no NULL fails
 * at once on the connection (SESSION_ERR_IO), never on an argument, and needs no server. */
#define VALUE_conninfo "host=/nonexistent-libsession-null port=5432 user=u dbname=d"
#define VALUE_session_id "s"
#define SCALAR_len (sizeof LINE1) /* the line and its newline */
#define SCALAR_status 9999

/* 1 where the contract lets the caller pass NULL (it means "not wanted" or "defaults"). */
#define OPTIONAL_entry_json 0
#define OPTIONAL_entries_json 0
#define OPTIONAL_leaf_id 0
#define OPTIONAL_id 0
#define OPTIONAL_path 0
#define OPTIONAL_dir 0
#define OPTIONAL_bytes 0
#define OPTIONAL_out_store 0
#define OPTIONAL_store 0
#define OPTIONAL_s 1
#define OPTIONAL_options_json 1
#define OPTIONAL_query_json 0
#define OPTIONAL_out_json 1
#define OPTIONAL_out_html 1
#define OPTIONAL_user_data 1
#define OPTIONAL_estimate 1
#define OPTIONAL_progress 1
#define OPTIONAL_format 1 /* NULL: detect the format (session_import; see sweep_one) */
#define OPTIONAL_src_path 0
#define OPTIONAL_out_path 0
#define OPTIONAL_dst_path 0 /* NULL only with {"inPlace":true}, which "{}" is not */
#define OPTIONAL_conninfo 0
#define OPTIONAL_session_id 0

#define P(i, name) (((mask >> (i)) & 1u) ? NULL : VALUE_##name)
#define S(name) SCALAR_##name
#define OPT(i, name) ((unsigned)OPTIONAL_##name << (i))

/* One caller per status function: call_<name>(mask) passes NULL for the pointer
 * arguments whose bit is set in mask. */
#define DEFINE_CALL(ret, name, params, npointers, args, optional, names) \
    static SessionStatus call_##name(unsigned mask) { return name args; }
SESSION_FOR_EACH_STATUS_FUNCTION(DEFINE_CALL)
#undef DEFINE_CALL

static const struct function {
    const char *name;
    const char *pointers; /* the pointer parameters' names, comma-separated */
    int npointers;
    unsigned optional; /* bit i: pointer i may be NULL */
    SessionStatus (*call)(unsigned mask);
} FUNCTIONS[] = {
#define ROW(ret, name, params, npointers, args, optional, names) {#name, names, npointers, optional, call_##name},
    SESSION_FOR_EACH_STATUS_FUNCTION(ROW)
#undef ROW
};

/* The index of pointer parameter `param` of f, or -1. */
static int pointer_index(const struct function *f, const char *param)
{
    const char *p = f->pointers;
    size_t n = strlen(param);
    int i = 0;
    while (*p) {
        size_t len = strcspn(p, ",");
        if (len == n && memcmp(p, param, n) == 0) return i;
        p += len + (p[len] == ',');
        i++;
    }
    return -1;
}

/* The name of pointer parameter i of f, in buf. */
static const char *pointer_name(const struct function *f, int i, char *buf, size_t size)
{
    const char *p = f->pointers;
    size_t len;
    while (i-- > 0 && *p) p += strcspn(p, ",") + (p[strcspn(p, ",")] == ',');
    len = strcspn(p, ",");
    snprintf(buf, size, "%.*s", (int)(len < size ? len : size - 1), p);
    return buf;
}

static int bit(int i) { return i >= 0 ? 1 << i : 0; }

static void sweep_one(const struct function *f, unsigned mask, const char *kind)
{
    SessionStore *sentinel = (SessionStore *)&g_serial; /* non-NULL, never dereferenced */
    int out_json = pointer_index(f, "out_json"), out_store = pointer_index(f, "out_store");
    int has_path = pointer_index(f, "path") >= 0;
    if (out_json < 0) out_json = pointer_index(f, "out_html"); /* the page, or the error */
    /* format is optional for session_import (NULL: detect), required for session_export
     * (there is no format to detect when writing). */
    unsigned optional = strcmp(f->name, "session_export") == 0
                            ? f->optional & ~(unsigned)bit(pointer_index(f, "format"))
                            : f->optional;
    unsigned null_required = mask & ~optional;
    char what[256], name[64];
    SessionStatus st;
    int i;

    g_serial++;
    snprintf(g_entry, sizeof g_entry,
             "{\"id\":\"n%ld\",\"parentId\":\"r\",\"timestamp\":1,\"type\":\"metadata\",\"key\":\"k\",\"value\":1}",
             g_serial);
    snprintf(g_path, sizeof g_path, "%s/null-%ld.jsonl", g_dir, g_serial);
    snprintf(g_import_out, sizeof g_import_out, "%s/null-%ld-imported.jsonl", g_dir, g_serial);
    g_out = NULL;
    g_opened = sentinel;
    snprintf(what, sizeof what, "%s%s with NULL in mask 0x%x", f->name, kind, mask);

    st = f->call(mask);
    g_results++;
    if (null_required) {
        CHECK_STATUS(st, SESSION_ERR_INVALID_ARGUMENT, g_out, "%s", what);
        if (out_json >= 0 && !(mask & bit(out_json))) {
            jspan a;
            int named = 0;
            CHECK_ERROR(st, SESSION_ERR_INVALID_ARGUMENT, g_out, "%s", what);
            a = json_get(g_out, "error.argument");
            for (i = 0; i < f->npointers; i++) {
                pointer_name(f, i, name, sizeof name);
                if ((null_required & (1u << i)) && a.p && a.n == strlen(name) + 2 &&
                    memcmp(a.p + 1, name, a.n - 2) == 0)
                    named = 1;
            }
            CHECK(named, "%s: error.argument names a NULL argument (got %s)", what, json_show(a));
        }
        if (out_store >= 0 && !(mask & bit(out_store)))
            CHECK(g_opened == NULL, "%s: *out_store is NULL after the failure", what);
        if (has_path) CHECK(!file_exists(g_path), "%s: no file is created", what);
        CHECK(!file_exists(g_import_out), "%s: no imported file is created", what);
    } else {
        /* only optional pointers are NULL: never an invalid argument */
        CHECK(st != SESSION_ERR_INVALID_ARGUMENT, "%s: a NULL optional pointer is not an invalid argument (%s)",
              what, show(g_out));
        if (out_json >= 0 && !(mask & bit(out_json))) CHECK(g_out != NULL, "%s: out_json is always set", what);
        if (out_store >= 0 && st == SESSION_OK) session_store_close(g_opened);
    }
    session_string_free(g_out);
    g_out = NULL;
}

static void sweep(const struct function *f, const char *kind)
{
    unsigned mask;
    for (mask = 0; mask < (1u << f->npointers); mask++) sweep_one(f, mask, kind);
}

int main(void)
{
    char jpath[512];
    SessionStore *stores[2];
    const char *kinds[2] = {" (memory)", " (jsonl)"};
    size_t f;
    int k, swept = 0;

    hostile_begin("hostile-null");
    SECTION("NULL: every combination of NULL pointer arguments of every function (list generated from session.h)");
    stores[0] = memory_store();
    stores[1] = jsonl_store("null.jsonl", jpath, sizeof jpath);
    for (k = 0; k < 2; k++) CHECK_STATUS(session_store_append(stores[k], LINE1, NULL), SESSION_OK, NULL, "root");

    for (f = 0; f < sizeof FUNCTIONS / sizeof FUNCTIONS[0]; f++) {
        const struct function *fn = &FUNCTIONS[f];
        CHECK(fn->npointers > 0, "%s takes no pointer: nothing to sweep (is the generated list right?)", fn->name);
        if (pointer_index(fn, "store") >= 0) {
            for (k = 0; k < 2; k++) {
                g_store = stores[k];
                sweep(fn, kinds[k]);
                CHECK(session_store_state(stores[k]) == SESSION_STATE_READY, "%s%s: the store is still ready",
                      fn->name, kinds[k]);
            }
        } else {
            g_store = NULL;
            sweep(fn, "");
        }
        swept++;
    }

    /* The functions that return no status: NULL in every pointer must not crash. */
#define CALL_WITH_NULLS(ret, name, params, npointers, args, optional, names) \
    {                                                                      \
        unsigned mask = ~0u;                                               \
        (void)mask;                                                        \
        (void)name args;                                                   \
        g_results++;                                                       \
        swept++;                                                           \
    }
    SESSION_FOR_EACH_OTHER_FUNCTION(CALL_WITH_NULLS)
#undef CALL_WITH_NULLS
    CHECK(session_store_state(NULL) == SESSION_STATE_TAINTED, "session_store_state(NULL) is tainted");
    CHECK(strcmp(session_status_name(SCALAR_status), "unknown") == 0, "an unknown status is named \"unknown\"");

    CHECK(swept == SESSION_FUNCTION_COUNT, "%d of %d functions swept", swept, SESSION_FUNCTION_COUNT);
    for (k = 0; k < 2; k++) session_store_close(stores[k]);
    printf("   %d functions (from session.h), %ld NULL cases\n", swept, g_results);
    hostile_end("test_hostile_null");
    return 0;
}

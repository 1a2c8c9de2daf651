/*
 * test_hostile_files.c -- hostile bytes and files: recover_jsonl with len 0 and a pointer, NULs, len shorter
 * than the buffer; hostile leaf ids and paths; session_jsonl_store_open_with with every JSON
 * type in every option, non-object, duplicate, unknown and malformed options;
 * session_jsonl_repair on a missing file, a directory, interior damage (untouched), a held
 * lock, a NUL tail (cut, kept in the sidecar).
 * Part of the hostile-input suite (hostile.h).
 */
#include "hostile.h"

/* ---------------------------------------- 7. recover_jsonl: hostile bytes ---- */

static void recover_small(void)
{
    static const char NULS[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    char buf[512], *exact, *out = NULL;
    size_t n;
    long before = g_results;

    SECTION("recover_jsonl: len 0 with a pointer, NULs, len shorter than the buffer");
    check_result("len 0, non-NULL pointer to text", session_recover_jsonl((const uint8_t *)"garbage\n", 0, &out), &out,
           SESSION_OK, "", "{\"entries\":[],\"warnings\":[]}");
    out = NULL;
    check_result("8 NULs, no newline", session_recover_jsonl((const uint8_t *)NULS, sizeof NULS, &out), &out, SESSION_OK,
           "warnings", "[{\"code\":\"unterminated_tail\",\"line\":1}]");
    memcpy(buf, NULS, 8);
    buf[8] = '\n';
    out = NULL;
    check_result("8 NULs and a newline", session_recover_jsonl((const uint8_t *)buf, 9, &out), &out,
           SESSION_ERR_CORRUPT_LINE, "error.line", "1");
    n = (size_t)sprintf(buf, "%s\n", LINE1);
    memcpy(buf + n, NULS, 8);
    out = NULL;
    check_result("a line, then NULs", session_recover_jsonl((const uint8_t *)buf, n + 8, &out), &out, SESSION_OK,
           "warnings", "[{\"code\":\"unterminated_tail\",\"line\":2}]");
    out = NULL;
    check_result("a single NUL", session_recover_jsonl((const uint8_t *)NULS, 1, &out), &out, SESSION_OK, "warnings",
           "[{\"code\":\"unterminated_tail\",\"line\":1}]");
    out = NULL;
    check_result("a BOM, then newline", session_recover_jsonl((const uint8_t *)"\xef\xbb\xbf\n", 4, &out), &out,
           SESSION_ERR_CORRUPT_LINE, "error.line", "1");
    out = NULL;
    check_result("whitespace only, no newline", session_recover_jsonl((const uint8_t *)" \t\r \t", 5, &out), &out,
           SESSION_OK, "", "{\"entries\":[],\"warnings\":[]}");
    /* the buffer is exactly len bytes (no NUL after it): nothing past len is read */
    n = strlen(LINE1) + 1;
    exact = (char *)xmalloc(n);
    memcpy(exact, LINE1 "\n", n);
    out = NULL;

    {
        SessionStatus st = session_recover_jsonl((const uint8_t *)exact, n, &out);
        CHECK_JSON_LENGTH(out, "entries", 1, "an exactly-sized buffer");
        check_result("an exactly-sized buffer", st, &out, SESSION_OK, "warnings", "[]");
    }
    out = NULL;
    check_result("len stops before the newline", session_recover_jsonl((const uint8_t *)exact, n - 1, &out), &out,
           SESSION_OK, "warnings", "[{\"code\":\"unterminated_tail\",\"line\":1}]");
    free(exact);
    printf("   %ld recover cases\n", g_results - before);
}

/* --------------------------------------- 8. hostile leaf ids and paths ---- */

static void leaves_and_paths(void)
{
    char path[512], *long_leaf, *long_path, *out = NULL;
    SessionStore *s = jsonl_store("leaves.jsonl", path, sizeof path), *o = (SessionStore *)&g_results;
    const char *e1 = "[" LINE1 "]";
    long before = g_results;

    SECTION("hostile leaf ids and paths");
    CHECK_STATUS(session_store_append(s, LINE1, NULL), SESSION_OK, NULL, "root");
    long_leaf = (char *)xmalloc(1 << 20);
    memset(long_leaf, 'r', (1 << 20) - 1);
    long_leaf[(1 << 20) - 1] = '\0';
    check_result("store_path_to(\"\")", session_store_path_to(s, "", &out), &out, SESSION_ERR_UNKNOWN_LEAF, "error.id", "\"\"");
    out = NULL;
    check_result("store_messages_on_path(1 MiB leaf)", session_store_messages_on_path(s, long_leaf, &out), &out,
           SESSION_ERR_UNKNOWN_LEAF, NULL, NULL);
    out = NULL;
    check_result("path_to(entries, \"\")", session_path_to(e1, "", &out), &out, SESSION_ERR_UNKNOWN_LEAF, "error.id", "\"\"");
    out = NULL;
    check_result("messages_on_path(entries, 1 MiB leaf)", session_messages_on_path(e1, long_leaf, &out), &out,
           SESSION_ERR_UNKNOWN_LEAF, NULL, NULL);
    out = NULL;
    check_result("path_to(\"[]\", leaf)", session_path_to("[]", "r", &out), &out, SESSION_ERR_UNKNOWN_LEAF, NULL, NULL);
    out = NULL;
    check_result("path_to(\"null\", leaf)", session_path_to("null", "r", &out), &out, SESSION_ERR_INVALID_ENTRY,
           "error.pointer", "\"\"");
    out = NULL;
    check_result("path_to(\"\", leaf)", session_path_to("", "r", &out), &out, SESSION_ERR_INVALID_JSON, NULL, NULL);
    out = NULL;
    check_result("path_to(entries with a leading BOM)", session_path_to("\xef\xbb\xbf[]", "r", &out), &out,
           SESSION_ERR_INVALID_JSON, NULL, NULL);
    out = NULL;
    check_result("jsonl_store_open(\"\")", session_jsonl_store_open("", &o, &out), &out, SESSION_ERR_IO, NULL, NULL);
    CHECK(o == NULL, "*out_store is NULL after a failed open");
    out = NULL;
    check_result("jsonl_store_open(a directory)", session_jsonl_store_open(g_dir, &o, &out), &out, SESSION_ERR_IO, NULL, NULL);
    long_path = (char *)xmalloc(8192);
    memset(long_path, 'p', 8191);
    memcpy(long_path, g_dir, strlen(g_dir));
    long_path[strlen(g_dir)] = '/';
    long_path[8191] = '\0';
    out = NULL;
    check_result("jsonl_store_open(an 8 KiB path)", session_jsonl_store_open(long_path, &o, &out), &out, SESSION_ERR_IO, NULL,
           NULL);
    snprintf(long_path, 8192, "%s/missing/x.jsonl", g_dir);
    out = NULL;
    check_result("jsonl_store_open(a missing folder)", session_jsonl_store_open(long_path, &o, &out), &out, SESSION_ERR_IO,
           NULL, NULL);
    snprintf(long_path, 8192, "%s/missing", g_dir);
    CHECK(!file_exists(long_path), "a missing folder is not created");
    CHECK(session_store_state(s) == SESSION_STATE_READY, "the store is still ready");
    session_store_close(s);
    free(long_leaf);
    free(long_path);
    printf("   %ld leaf and path cases\n", g_results - before);
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
    long before = g_results;
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
        s = (SessionStore *)&g_results;
        st = session_jsonl_store_open_with(path, o, &s, &out);
        if (want == SESSION_ERR_INVALID_ARGUMENT) {
            CHECK(s == NULL, "%s: *out_store is NULL", what);
            check_result(what, st, &out, want, "error.argument", "\"options_json\"");
        } else {
            check_result(what, st, &out, want, "state", "\"ready\"");
            out = NULL;
            st = session_store_entries(s, &out);
            CHECK_JSON_LENGTH(out, "", 1, "%s: the entry reads back", what);
            check_result(what, st, &out, SESSION_OK, NULL, NULL);
            session_store_close(s);
        }
        CHECK(file_size(path) == (long long)strlen(LINE1) + 1, "%s: the file is untouched", what);
    }

    /* repair: missing file, directory, "", interior damage (untouched), a held lock */
    snprintf(path, sizeof path, "%s/missing.jsonl", g_dir);
    check_result("repair(missing file)", session_jsonl_repair(path, &out), &out, SESSION_ERR_IO, NULL, NULL);
    CHECK(!file_exists(path), "repair does not create a missing file");
    check_result("repair(a directory)", session_jsonl_repair(g_dir, &out), &out, SESSION_ERR_IO, NULL, NULL);
    check_result("repair(\"\")", session_jsonl_repair("", &out), &out, SESSION_ERR_IO, NULL, NULL);
    snprintf(path, sizeof path, "%s/damaged.jsonl", g_dir);
    write_file(path, LINE1 "\n\x00\x00\n" LINE2 "\nxx", strlen(LINE1) + strlen(LINE2) + 7);
    check_result("repair(interior NUL line)", session_jsonl_repair(path, &out), &out, SESSION_ERR_CORRUPT_LINE, "error.line", "2");
    CHECK(file_size(path) == (long long)(strlen(LINE1) + strlen(LINE2) + 7), "a refused repair leaves the file untouched");
    snprintf(path, sizeof path, "%s/orphan.jsonl", g_dir);
    write_file(path, LINE2 "\nxx", strlen(LINE2) + 3);
    check_result("repair(an orphan line)", session_jsonl_repair(path, &out), &out, SESSION_ERR_MISSING_PARENT, "error.line", "1");
    snprintf(path, sizeof path, "%s/held.jsonl", g_dir);
    write_file(path, LINE1 "\n", strlen(LINE1) + 1);
    CHECK_STATUS(session_jsonl_store_open(path, &holder, NULL), SESSION_OK, NULL, "a writer holds the file");
    check_result("repair while a writer holds the lock", session_jsonl_repair(path, &out), &out, SESSION_ERR_LOCKED, NULL,
           NULL);
    session_store_close(holder);
    check_result("repair a clean file: nothing to do", session_jsonl_repair(path, &out), &out, SESSION_OK, "backup", "null");
    snprintf(path, sizeof path, "%s/nul-tail.jsonl", g_dir);
    write_file(path, LINE1 "\n\0\0\0\0", strlen(LINE1) + 5);
    check_result("repair(NUL tail)", session_jsonl_repair(path, &out), &out, SESSION_OK, "truncatedBytes", "4");
    CHECK(file_size(path) == (long long)strlen(LINE1) + 1, "the NUL tail is cut");
    snprintf(bak, sizeof bak, "%s.tail-1.bak", path);
    CHECK(file_size(bak) == 4, "the tail is kept in %s", bak);
    check_result("repair again: nothing to do", session_jsonl_repair(path, &out), &out, SESSION_OK, "truncatedBytes", "0");
    printf("   %ld option and repair cases\n", g_results - before);
}

int main(void)
{
    hostile_begin("hostile_files");
    recover_small();
    leaves_and_paths();
    options_and_repair();
    hostile_end("test_hostile_files");
    return 0;
}

/*
 * test_null_args.c -- NULL for every pointer argument of every function in session.h
 * (docs/contract.md §4 "nothing crashes", §5 NULL, invalid UTF-8):
 *   each required NULL pointer -> SESSION_ERR_INVALID_ARGUMENT with `argument` naming it,
 *   out_json set when given and accepted as NULL everywhere, nothing created or written;
 *   session_string_free(NULL), session_store_close(NULL), session_store_state(NULL);
 *   session_recover_jsonl(NULL, 0) is empty input, (NULL, 5) is invalid;
 *   *out_store is NULL after a failed open; invalid UTF-8 in a C string argument.
 */
#include "check.h"

static const char *const ENTRY =
    "{\"id\":\"n-1\",\"parentId\":null,\"timestamp\":1,\"type\":\"message\","
    "\"message\":{\"role\":\"user\",\"content\":\"hi\"}}";
static const char *const ENTRIES =
    "[{\"id\":\"n-1\",\"parentId\":null,\"timestamp\":1,\"type\":\"message\","
    "\"message\":{\"role\":\"user\",\"content\":\"hi\"}}]";

/* A failure that must be invalid_argument naming `arg`; frees out. */
#define EXPECT_ARG(call, arg, what)                                                     \
    do {                                                                                \
        char *out = NULL;                                                               \
        SessionStatus st_ = (call);                                                     \
        CHECK_ERROR(st_, SESSION_ERR_INVALID_ARGUMENT, out, "%s", (what));              \
        CHECK_JSON(out, "error.argument", "\"" arg "\"", "%s: argument is " arg, (what)); \
        session_string_free(out);                                                       \
    } while (0)

/* Same, with out_json NULL: just the status. */
#define EXPECT_ARG_NO_OUT(call, what) CHECK_STATUS((call), SESSION_ERR_INVALID_ARGUMENT, NULL, "%s", (what))

static void pure_functions(void)
{
    char *out = NULL;
    SessionStatus st;

    SECTION("session_version, session_status_name, session_string_free(NULL)");
    CHECK(session_version() != NULL, "session_version() is not NULL");
    CHECK(session_status_name(SESSION_ERR_INVALID_ARGUMENT) != NULL, "status name not NULL");
    session_string_free(NULL);
    CHECK(1, "session_string_free(NULL) returns");

    SECTION("session_parse_entry");
    EXPECT_ARG(session_parse_entry(NULL, &out), "entry_json", "parse_entry(NULL, &out)");
    EXPECT_ARG_NO_OUT(session_parse_entry(NULL, NULL), "parse_entry(NULL, NULL)");
    CHECK_STATUS(session_parse_entry(ENTRY, NULL), SESSION_OK, NULL, "parse_entry(entry, NULL) is OK");
    CHECK_STATUS(session_parse_entry("{", NULL), SESSION_ERR_INVALID_JSON, NULL, "parse_entry(bad, NULL) reports");
    EXPECT_ARG(session_parse_entry("{\"id\":\"\xe2\x82\"}", &out), "entry_json", "parse_entry(invalid UTF-8)");
    EXPECT_ARG(session_parse_entry("{\"id\":\"\xed\xa0\x80\"}", &out), "entry_json",
               "parse_entry(UTF-8-encoded surrogate)");
    EXPECT_ARG(session_parse_entry("{\"id\":\"\xc0\xae\"}", &out), "entry_json", "parse_entry(overlong UTF-8)");

    SECTION("session_path_to / session_messages_on_path");
    EXPECT_ARG(session_path_to(NULL, "n-1", &out), "entries_json", "path_to(NULL, leaf)");
    EXPECT_ARG(session_path_to(ENTRIES, NULL, &out), "leaf_id", "path_to(entries, NULL)");
    EXPECT_ARG_NO_OUT(session_path_to(NULL, NULL, NULL), "path_to(NULL, NULL, NULL)");
    CHECK_STATUS(session_path_to(ENTRIES, "n-1", NULL), SESSION_OK, NULL, "path_to(.., NULL out) is OK");
    CHECK_STATUS(session_path_to(ENTRIES, "zz", NULL), SESSION_ERR_UNKNOWN_LEAF, NULL, "path_to error, NULL out");
    EXPECT_ARG(session_path_to("[\xff]", "n-1", &out), "entries_json", "path_to(invalid UTF-8 entries)");
    EXPECT_ARG(session_path_to(ENTRIES, "n-\xff", &out), "leaf_id", "path_to(invalid UTF-8 leaf)");
    EXPECT_ARG(session_messages_on_path(NULL, "n-1", &out), "entries_json", "messages_on_path(NULL, leaf)");
    EXPECT_ARG(session_messages_on_path(ENTRIES, NULL, &out), "leaf_id", "messages_on_path(entries, NULL)");
    EXPECT_ARG_NO_OUT(session_messages_on_path(NULL, NULL, NULL), "messages_on_path(NULL, NULL, NULL)");
    CHECK_STATUS(session_messages_on_path(ENTRIES, "n-1", NULL), SESSION_OK, NULL, "messages_on_path NULL out OK");
    EXPECT_ARG(session_messages_on_path(ENTRIES, "\xc3", &out), "leaf_id", "messages_on_path(invalid UTF-8 leaf)");

    SECTION("session_recover_jsonl");
    st = session_recover_jsonl(NULL, 0, &out);
    CHECK_STATUS(st, SESSION_OK, out, "recover_jsonl(NULL, 0) is empty input");
    CHECK(strcmp(out, "{\"entries\":[],\"warnings\":[]}") == 0, "(NULL, 0): no entries, no warnings (got %s)", out);
    session_string_free(out);
    st = session_recover_jsonl((const uint8_t *)"", 0, &out);
    CHECK_STATUS(st, SESSION_OK, out, "recover_jsonl(\"\", 0)");
    CHECK(strcmp(out, "{\"entries\":[],\"warnings\":[]}") == 0, "(\"\", 0): empty result (got %s)", out);
    session_string_free(out);
    EXPECT_ARG(session_recover_jsonl(NULL, 5, &out), "bytes", "recover_jsonl(NULL, 5)");
    EXPECT_ARG_NO_OUT(session_recover_jsonl(NULL, 5, NULL), "recover_jsonl(NULL, 5, NULL)");
    CHECK_STATUS(session_recover_jsonl((const uint8_t *)"\n", 1, NULL), SESSION_OK, NULL, "recover_jsonl NULL out OK");
}

static void store_functions(const char *dir)
{
    SessionStore *store = NULL, *sentinel = (SessionStore *)&store;
    char path[512], bad_path[512], *out = NULL;
    SessionStatus st;

    SECTION("session_memory_store_open / session_store_close(NULL) / session_store_state(NULL)");
    EXPECT_ARG_NO_OUT(session_memory_store_open(NULL), "memory_store_open(NULL)");
    session_store_close(NULL);
    CHECK(1, "session_store_close(NULL) returns");
    CHECK(session_store_state(NULL) == SESSION_STATE_TAINTED, "session_store_state(NULL) == TAINTED");

    SECTION("session_jsonl_store_open");
    snprintf(path, sizeof path, "%s/null.jsonl", dir);
    store = sentinel;
    EXPECT_ARG(session_jsonl_store_open(NULL, &store, &out), "path", "jsonl_store_open(NULL path)");
    CHECK(store == NULL, "*out_store is set to NULL when path is NULL");
    EXPECT_ARG(session_jsonl_store_open(path, NULL, &out), "out_store", "jsonl_store_open(path, NULL)");
    CHECK(!file_exists(path), "out_store NULL: nothing is created");
    EXPECT_ARG_NO_OUT(session_jsonl_store_open(NULL, NULL, NULL), "jsonl_store_open(NULL, NULL, NULL)");
    store = sentinel;
    EXPECT_ARG_NO_OUT(session_jsonl_store_open(NULL, &store, NULL), "jsonl_store_open(NULL, &store, NULL)");
    CHECK(store == NULL, "*out_store is set to NULL with out_json NULL too");
    snprintf(bad_path, sizeof bad_path, "%s/bad-\xff\xfe.jsonl", dir);
    store = sentinel;
    EXPECT_ARG(session_jsonl_store_open(bad_path, &store, &out), "path", "jsonl_store_open(non-UTF-8 path)");
    CHECK(store == NULL, "*out_store NULL after a non-UTF-8 path");
    CHECK(!file_exists(bad_path), "non-UTF-8 path: nothing is created");
    {
        char utf8_path[512];
        SessionStore *other = NULL;
        snprintf(utf8_path, sizeof utf8_path, "%s/会话-ünïcode.jsonl", dir);
        st = session_jsonl_store_open(utf8_path, &other, NULL);
        CHECK_STATUS(st, SESSION_OK, NULL, "a valid non-ASCII UTF-8 path opens");
        CHECK(file_exists(utf8_path), "the non-ASCII path is created as given");
        session_store_close(other);
    }
    store = sentinel;
    st = session_jsonl_store_open(path, &store, NULL);
    CHECK_STATUS(st, SESSION_OK, NULL, "jsonl_store_open(path, &store, NULL) is OK");
    CHECK(store != NULL && store != sentinel, "open sets *out_store");

    SECTION("session_store_append");
    EXPECT_ARG(session_store_append(NULL, ENTRY, &out), "store", "append(NULL store)");
    EXPECT_ARG(session_store_append(store, NULL, &out), "entry_json", "append(store, NULL)");
    EXPECT_ARG_NO_OUT(session_store_append(NULL, NULL, NULL), "append(NULL, NULL, NULL)");
    EXPECT_ARG(session_store_append(store, "{\"id\":\"\x80\"}", &out), "entry_json", "append(invalid UTF-8)");
    CHECK(file_size(path) == 0, "NULL / invalid arguments write nothing");
    CHECK(session_store_state(store) == SESSION_STATE_READY, "argument errors leave the store ready");
    CHECK_STATUS(session_store_append(store, ENTRY, NULL), SESSION_OK, NULL, "append(store, entry, NULL) is OK");
    CHECK_STATUS(session_store_append(store, ENTRY, NULL), SESSION_ERR_DUPLICATE_ID, NULL,
                 "append error with out_json NULL");

    SECTION("session_store_entries / session_store_read");
    EXPECT_ARG(session_store_entries(NULL, &out), "store", "entries(NULL)");
    EXPECT_ARG_NO_OUT(session_store_entries(NULL, NULL), "entries(NULL, NULL)");
    CHECK_STATUS(session_store_entries(store, NULL), SESSION_OK, NULL, "entries(store, NULL) is OK");
    EXPECT_ARG(session_store_read(NULL, &out), "store", "read(NULL)");
    EXPECT_ARG_NO_OUT(session_store_read(NULL, NULL), "read(NULL, NULL)");
    CHECK_STATUS(session_store_read(store, NULL), SESSION_OK, NULL, "read(store, NULL) is OK");

    SECTION("session_store_path_to / session_store_messages_on_path");
    EXPECT_ARG(session_store_path_to(NULL, "n-1", &out), "store", "store_path_to(NULL, leaf)");
    EXPECT_ARG(session_store_path_to(store, NULL, &out), "leaf_id", "store_path_to(store, NULL)");
    EXPECT_ARG_NO_OUT(session_store_path_to(NULL, NULL, NULL), "store_path_to(NULL, NULL, NULL)");
    EXPECT_ARG(session_store_path_to(store, "n-\xc3", &out), "leaf_id", "store_path_to(invalid UTF-8 leaf)");
    CHECK_STATUS(session_store_path_to(store, "n-1", NULL), SESSION_OK, NULL, "store_path_to NULL out OK");
    CHECK_STATUS(session_store_path_to(store, "zz", NULL), SESSION_ERR_UNKNOWN_LEAF, NULL, "unknown leaf, NULL out");
    EXPECT_ARG(session_store_messages_on_path(NULL, "n-1", &out), "store", "store_messages_on_path(NULL, leaf)");
    EXPECT_ARG(session_store_messages_on_path(store, NULL, &out), "leaf_id", "store_messages_on_path(store, NULL)");
    EXPECT_ARG_NO_OUT(session_store_messages_on_path(NULL, NULL, NULL), "store_messages_on_path(NULL, NULL, NULL)");
    EXPECT_ARG(session_store_messages_on_path(store, "\xf0\x9f", &out), "leaf_id",
               "store_messages_on_path(invalid UTF-8 leaf)");
    CHECK_STATUS(session_store_messages_on_path(store, "n-1", NULL), SESSION_OK, NULL,
                 "store_messages_on_path NULL out OK");

    SECTION("the store is intact after all that");
    st = session_store_entries(store, &out);
    CHECK_STATUS(st, SESSION_OK, out, "entries");
    CHECK_IDS(out, "n-1", "only the one valid entry was committed");
    session_string_free(out);
    CHECK(session_store_state(store) == SESSION_STATE_READY, "store is ready");
    session_store_close(store);

    SECTION("memory store: the same NULL checks hold");
    CHECK_STATUS(session_memory_store_open(&store), SESSION_OK, NULL, "memory_store_open");
    EXPECT_ARG(session_store_append(store, NULL, &out), "entry_json", "memory append(store, NULL)");
    EXPECT_ARG(session_store_path_to(store, NULL, &out), "leaf_id", "memory path_to(store, NULL)");
    session_store_close(store);
}

int main(void)
{
    char dir[256];
    make_tmpdir(dir, sizeof dir, "null");
    pure_functions();
    store_functions(dir);
    remove_tmpdir(dir);
    check_done("test_null_args");
    return 0;
}

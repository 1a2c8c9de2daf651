/*
 * test_tree.c -- the chapter's fixed tree (docs/contract.md §1) end to end:
 *   through a JSONL file (append, seq, reopen, store-level path_to / messages_on_path),
 *   through the pure slice functions over a shuffled JSON array,
 *   through a memory store,
 *   and, when SESSION_TEST_PG names a PostgreSQL database (run_pg.sh starts a throwaway
 *   cluster and sets it), through the PostgreSQL store (docs/contract.md §14): the same
 *   answers, the same refusals, a second handle and the session listing.
 * Built twice: against libsession.so and against libsession.a.
 */
#include "check.h"

static const char *const MAIN_PATH = "u-1,a-read,r-read,a-final,meta-cwd";
static const char *const ALT_PATH = "u-1,a-alt";

/* messages_on_path("meta-cwd"): user, assistant(toolCall), toolResult, assistant. */
static void check_main_messages(const char *json, const char *who)
{
    CHECK_JSON_LENGTH(json, "", 4, "%s: messages_on_path(meta-cwd) has 4 messages (metadata skipped)", who);
    CHECK_JSON(json, "0.role", "\"user\"", "%s: message 0 is the user's", who);
    CHECK_JSON(json, "0.content", "\"读取 README.md，告诉我项目名\"",
               "%s: a user's string content stays a string", who);
    CHECK_JSON(json, "1.role", "\"assistant\"", "%s: message 1 is the assistant's tool call", who);
    CHECK_JSON(json, "1.content.0.type", "\"toolCall\"", "%s: toolCall block kept", who);
    CHECK_JSON(json, "1.content.0.id", "\"call-1\"", "%s: toolCall id kept", who);
    CHECK_JSON(json, "1.content.0.name", "\"read\"", "%s: toolCall name kept", who);
    CHECK_JSON(json, "1.content.0.arguments", "{\"path\":\"README.md\"}",
               "%s: toolCall arguments kept as a structured object", who);
    CHECK_JSON(json, "1.model", "\"gpt-5\"", "%s: unknown/optional assistant fields kept", who);
    CHECK_JSON(json, "1.usage", "{\"input\":120,\"output\":18}", "%s: assistant usage kept", who);
    CHECK_JSON(json, "1.stopReason", "\"toolUse\"", "%s: stopReason kept", who);
    CHECK_JSON(json, "2.role", "\"toolResult\"", "%s: message 2 is the tool result", who);
    CHECK_JSON(json, "2.toolCallId", "\"call-1\"", "%s: toolResult toolCallId kept", who);
    CHECK_JSON(json, "2.toolName", "\"read\"", "%s: toolResult toolName kept", who);
    CHECK_JSON(json, "2.isError", "false", "%s: toolResult isError kept", who);
    CHECK_JSON(json, "2.details", "{\"path\":\"README.md\",\"bytes\":33}", "%s: toolResult details kept", who);
    CHECK_JSON(json, "2.content.0.text", "\"# tiny-pi\\n\\nA tiny coding agent.\"",
               "%s: toolResult text kept with its escapes", who);
    CHECK_JSON(json, "3.role", "\"assistant\"", "%s: message 3 is the final answer", who);
    CHECK_JSON(json, "3.content.0.text", "\"项目名是 tiny-pi\"", "%s: final answer text kept", who);
}

static void check_alt_messages(const char *json, const char *who)
{
    CHECK_JSON_LENGTH(json, "", 2, "%s: messages_on_path(a-alt) has 2 messages", who);
    CHECK_JSON(json, "0.role", "\"user\"", "%s: a-alt branch starts at the user", who);
    CHECK_JSON(json, "1.content.0.text", "\"我无法读取该文件\"", "%s: a-alt is the sibling answer", who);
}

static void check_store_reads(SessionStore *store, const char *who)
{
    char *out = NULL;
    SessionStatus st;

    st = session_store_path_to(store, "meta-cwd", &out);
    CHECK_STATUS(st, SESSION_OK, out, "%s: store_path_to(meta-cwd) succeeds", who);
    CHECK_IDS(out, "u-1,a-read,r-read,a-final,meta-cwd", "%s: path_to(meta-cwd) is root -> leaf", who);
    session_string_free(out);

    st = session_store_messages_on_path(store, "meta-cwd", &out);
    CHECK_STATUS(st, SESSION_OK, out, "%s: store_messages_on_path(meta-cwd) succeeds", who);
    check_main_messages(out, who);
    session_string_free(out);

    st = session_store_path_to(store, "a-alt", &out);
    CHECK_STATUS(st, SESSION_OK, out, "%s: store_path_to(a-alt) succeeds", who);
    CHECK_IDS(out, "u-1,a-alt", "%s: path_to(a-alt) = u-1, a-alt (siblings never mix)", who);
    session_string_free(out);

    st = session_store_messages_on_path(store, "a-alt", &out);
    CHECK_STATUS(st, SESSION_OK, out, "%s: store_messages_on_path(a-alt) succeeds", who);
    check_alt_messages(out, who);
    session_string_free(out);

    st = session_store_path_to(store, "u-1", &out);
    CHECK_STATUS(st, SESSION_OK, out, "%s: store_path_to(root) succeeds", who);
    CHECK_IDS(out, "u-1", "%s: path_to(root) is the root alone", who);
    session_string_free(out);

    st = session_store_entries(store, &out);
    CHECK_STATUS(st, SESSION_OK, out, "%s: store_entries succeeds", who);
    CHECK_IDS(out, "u-1,a-read,r-read,a-final,a-alt,meta-cwd", "%s: entries in commit order", who);
    session_string_free(out);
}

static void jsonl_round_trip(void)
{
    char dir[256], path[512], want_seq[64], *out = NULL, *bytes, *expected;
    size_t len;
    SessionStore *store = NULL;
    SessionStatus st;
    int i;

    SECTION("JSONL: open a new file, append the six entries, check seq 0..5");
    make_tmpdir(dir, sizeof dir, "tree");
    snprintf(path, sizeof path, "%s/session.jsonl", dir);
    st = session_jsonl_store_open(path, &store, &out);
    CHECK_STATUS(st, SESSION_OK, out, "open creates a missing file");
    CHECK(store != NULL, "open sets *out_store on SESSION_OK");
    CHECK(strcmp(out, "{\"state\":\"ready\",\"warnings\":[]}") == 0,
          "a new file opens ready with no warnings (got %s)", out);
    session_string_free(out);
    CHECK(file_exists(path) && file_size(path) == 0, "open created an empty file");
    CHECK(session_store_state(store) == SESSION_STATE_READY, "new store state is ready");

    for (i = 0; i < 6; i++) {
        st = session_store_append(store, tree_entry(i), &out);
        CHECK_STATUS(st, SESSION_OK, out, "append of %s succeeds", tree_id(i));
        snprintf(want_seq, sizeof want_seq, "%d", i);
        CHECK_JSON(out, "seq", want_seq, "append %s returns seq = its 0-based commit position", tree_id(i));
        snprintf(want_seq, sizeof want_seq, "\"%s\"", tree_id(i));
        CHECK_JSON(out, "id", want_seq, "append %s returns its id", tree_id(i));
        session_string_free(out);
    }
    check_store_reads(store, "jsonl (same handle)");
    session_store_close(store);
    store = NULL;

    SECTION("JSONL: the file holds one normalised line per entry, in append order");
    bytes = read_file(path, &len);
    expected = tree_jsonl(6);
    CHECK(len == strlen(expected) && memcmp(bytes, expected, len) == 0,
          "file bytes are the six compact entries, one per line, each ending with \\n");
    free(bytes);
    free(expected);

    SECTION("JSONL: reopen -> ready; store-level path_to / messages_on_path");
    st = session_jsonl_store_open(path, &store, &out);
    CHECK_STATUS(st, SESSION_OK, out, "reopen succeeds");
    CHECK_JSON(out, "state", "\"ready\"", "reopened clean file is ready");
    CHECK_JSON_LENGTH(out, "warnings", 0, "reopened clean file has no warnings");
    session_string_free(out);
    CHECK(session_store_state(store) == SESSION_STATE_READY, "reopened store state is ready");
    check_store_reads(store, "jsonl (reopened)");

    st = session_store_read(store, &out);
    CHECK_STATUS(st, SESSION_OK, out, "store_read succeeds");
    CHECK_JSON(out, "state", "\"ready\"", "store_read reports ready");
    CHECK_JSON_LENGTH(out, "entries", 6, "store_read returns the six entries");
    CHECK_JSON_LENGTH(out, "warnings", 0, "store_read: no warnings");
    session_string_free(out);

    SECTION("JSONL: seq continues after the entries already in the file");
    st = session_store_append(store,
                              "{\"id\":\"u-2\",\"parentId\":\"a-alt\",\"timestamp\":1733000006000,"
                              "\"type\":\"message\",\"message\":{\"role\":\"user\",\"content\":\"再试一次\"}}",
                              &out);
    CHECK_STATUS(st, SESSION_OK, out, "append after reopen succeeds");
    CHECK_JSON(out, "seq", "6", "seq counts the entries already in the file at open");
    session_string_free(out);
    st = session_store_path_to(store, "u-2", &out);
    CHECK_STATUS(st, SESSION_OK, out, "path_to(new leaf) succeeds");
    CHECK_IDS(out, "u-1,a-alt,u-2", "a new branch grows from a-alt");
    session_string_free(out);
    session_store_close(store);

    remove_tmpdir(dir);
}

static void slice_functions(void)
{
    /* the six entries in a shuffled order */
    static const int order[6] = {5, 4, 2, 0, 3, 1};
    size_t n = 3;
    char *arr, *out = NULL;
    SessionStatus st;
    int i;

    SECTION("slice: session_path_to / session_messages_on_path over a shuffled JSON array");
    for (i = 0; i < 6; i++) n += strlen(tree_entry(i)) + 3; /* entry + ",\n " */
    arr = (char *)malloc(n);
    CHECK(arr != NULL, "malloc");
    strcpy(arr, "[");
    for (i = 0; i < 6; i++) {
        if (i) strcat(arr, ",\n ");
        strcat(arr, tree_entry(order[i]));
    }
    strcat(arr, "]");

    st = session_path_to(arr, "meta-cwd", &out);
    CHECK_STATUS(st, SESSION_OK, out, "slice path_to(meta-cwd) succeeds");
    CHECK_IDS(out, MAIN_PATH, "slice path_to(meta-cwd) = u-1,a-read,r-read,a-final,meta-cwd");
    session_string_free(out);

    st = session_messages_on_path(arr, "meta-cwd", &out);
    CHECK_STATUS(st, SESSION_OK, out, "slice messages_on_path(meta-cwd) succeeds");
    check_main_messages(out, "slice");
    session_string_free(out);

    st = session_path_to(arr, "a-alt", &out);
    CHECK_STATUS(st, SESSION_OK, out, "slice path_to(a-alt) succeeds");
    CHECK_IDS(out, ALT_PATH, "slice path_to(a-alt) = u-1,a-alt");
    session_string_free(out);

    st = session_messages_on_path(arr, "a-alt", &out);
    CHECK_STATUS(st, SESSION_OK, out, "slice messages_on_path(a-alt) succeeds");
    check_alt_messages(out, "slice");
    session_string_free(out);
    free(arr);

    SECTION("parse_entry: a compact entry normalises to itself");
    for (i = 0; i < 6; i++) {
        st = session_parse_entry(tree_entry(i), &out);
        CHECK_STATUS(st, SESSION_OK, out, "parse_entry(%s) succeeds", tree_id(i));
        CHECK(strcmp(out, tree_entry(i)) == 0, "normalised %s keeps key order and values (got %s)",
              tree_id(i), out);
        session_string_free(out);
    }
    st = session_parse_entry("  {\"id\" : \"x\", \"parentId\" : null, \"timestamp\" : 1,\n"
                             "\"type\" : \"metadata\", \"key\" : \"k\", \"value\" : [ 1 , {\"a\" : 2} ] }\n",
                             &out);
    CHECK_STATUS(st, SESSION_OK, out, "parse_entry with whitespace succeeds");
    CHECK(strcmp(out, "{\"id\":\"x\",\"parentId\":null,\"timestamp\":1,\"type\":\"metadata\","
                      "\"key\":\"k\",\"value\":[1,{\"a\":2}]}") == 0,
          "normalisation removes insignificant whitespace only (got %s)", out);
    session_string_free(out);
}

static void memory_store(void)
{
    SessionStore *store = NULL;
    char *out = NULL, want[16];
    SessionStatus st;
    int i;

    SECTION("memory store: same tree, same answers");
    st = session_memory_store_open(&store);
    CHECK_STATUS(st, SESSION_OK, NULL, "memory_store_open succeeds");
    CHECK(store != NULL, "memory_store_open sets *out_store");
    CHECK(session_store_state(store) == SESSION_STATE_READY, "memory store is ready");
    for (i = 0; i < 6; i++) {
        st = session_store_append(store, tree_entry(i), &out);
        CHECK_STATUS(st, SESSION_OK, out, "memory append %s", tree_id(i));
        snprintf(want, sizeof want, "%d", i);
        CHECK_JSON(out, "seq", want, "memory append %s seq", tree_id(i));
        session_string_free(out);
    }
    check_store_reads(store, "memory");
    st = session_store_read(store, &out);
    CHECK_STATUS(st, SESSION_OK, out, "memory store_read succeeds");
    CHECK_JSON(out, "state", "\"ready\"", "memory store_read state");
    CHECK_JSON_LENGTH(out, "entries", 6, "memory store_read entries");
    session_string_free(out);
    session_store_close(store);
}

static void pg_store(const char *conninfo)
{
    SessionStore *store = NULL, *other = NULL;
    char *out = NULL, want[64], session[64];
    SessionStatus st;
    int i;

    SECTION("PostgreSQL store: same tree, same answers, same refusals (docs/contract.md §14)");
    snprintf(session, sizeof session, "test-tree-%ld", (long)getpid());
    st = session_pg_store_open(conninfo, session, NULL, &store, &out);
    CHECK_STATUS(st, SESSION_OK, out, "pg_store_open succeeds");
    CHECK(out != NULL && strcmp(out, "{\"state\":\"ready\",\"warnings\":[]}") == 0,
          "a new session opens ready with no warnings (got %s)", out ? out : "NULL");
    session_string_free(out);
    for (i = 0; i < 6; i++) {
        st = session_store_append(store, tree_entry(i), &out);
        CHECK_STATUS(st, SESSION_OK, out, "pg append %s", tree_id(i));
        snprintf(want, sizeof want, "%d", i);
        CHECK_JSON(out, "seq", want, "pg append %s seq = its commit position", tree_id(i));
        session_string_free(out);
    }
    check_store_reads(store, "pg (same handle)");

    st = session_store_append(store, "{\"id\":\"u-1\",\"parentId\":null,\"timestamp\":1,\"type\":\"message\","
                                     "\"message\":{\"role\":\"user\",\"content\":\"other\"}}", &out);
    CHECK_STATUS(st, SESSION_ERR_DUPLICATE_ID, out, "pg: an id taken with other bytes is a duplicate");
    session_string_free(out);
    st = session_store_append(store, "{\"id\":\"x\",\"parentId\":\"nope\",\"timestamp\":1,\"type\":\"message\","
                                     "\"message\":{\"role\":\"user\",\"content\":\"x\"}}", &out);
    CHECK_STATUS(st, SESSION_ERR_MISSING_PARENT, out, "pg: a missing parent is refused");
    session_string_free(out);
    st = session_store_append(store, tree_entry(3), &out);
    CHECK_STATUS(st, SESSION_OK, out, "pg: the identical entry again is accepted as itself");
    CHECK_JSON(out, "seq", "3", "pg: ... with its committed seq");
    session_string_free(out);

    SECTION("PostgreSQL store: a second handle reads the same session; the listing names it");
    st = session_pg_store_open(conninfo, session, "{\"durability\":\"fsync\"}", &other, &out);
    CHECK_STATUS(st, SESSION_OK, out, "a second pg handle opens");
    session_string_free(out);
    check_store_reads(other, "pg (second handle)");
    st = session_store_read(other, &out);
    CHECK_STATUS(st, SESSION_OK, out, "pg store_read succeeds");
    CHECK_JSON_LENGTH(out, "entries", 6, "pg: the refusals changed nothing");
    session_string_free(out);
    session_store_close(other);
    session_store_close(store);

    st = session_pg_list_sessions(conninfo, NULL, &out);
    CHECK_STATUS(st, SESSION_OK, out, "pg_list_sessions succeeds");
    CHECK(out != NULL && strstr(out, session) != NULL, "the listing names the session (%s)", out ? out : "NULL");
    session_string_free(out);

    st = session_pg_store_open(conninfo, "", NULL, &store, &out);
    CHECK_STATUS(st, SESSION_ERR_INVALID_ARGUMENT, out, "an empty session id is an invalid argument");
    CHECK_JSON(out, "error.argument", "\"session_id\"", "... naming session_id");
    CHECK(store == NULL, "... and *out_store is NULL");
    session_string_free(out);
}

int main(void)
{
    const char *v = session_version();
    CHECK(v != NULL && v[0] != '\0', "session_version() is a non-empty static string");
    printf("libsession %s\n", v);
    jsonl_round_trip();
    slice_functions();
    memory_store();
    if (getenv("SESSION_TEST_PG") != NULL) pg_store(getenv("SESSION_TEST_PG"));
    check_done("test_tree");
    return 0;
}

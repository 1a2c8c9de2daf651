/*
 * test_errors.c -- every status code reachable from C, with its error JSON (docs/contract.md §4, §5):
 *   the 13 status names and "unknown"; for each error the exact shape
 *   {"error":{"code":"<session_status_name(status)>","message":"…",…details}} and its
 *   detail members (argument, pointer, id, childId/parentId, line, warnings, cause,
 *   osError).
 */
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "check.h"

#define ENTRY_HEAD "{\"id\":\"e\",\"parentId\":null,\"timestamp\":1,"
#define USER_MSG(content) ENTRY_HEAD "\"type\":\"message\",\"message\":{\"role\":\"user\",\"content\":" content "}}"
#define ASSISTANT_MSG(content) \
    ENTRY_HEAD "\"type\":\"message\",\"message\":{\"role\":\"assistant\",\"content\":" content "}}"

static char g_dir[256];

static void status_names(void)
{
    static const char *const names[20] = {
        "ok", "invalid_argument", "invalid_json", "invalid_entry", "duplicate_id",
        "missing_parent", "cycle", "unknown_leaf", "corrupt_line", "needs_repair",
        "tainted", "io", "internal", "locked", "file_changed", "read_only", "wrong_process",
        "invalid_compaction", "tool_pairing", "cancelled",
    };
    static const SessionStatus codes[20] = {
        SESSION_OK, SESSION_ERR_INVALID_ARGUMENT, SESSION_ERR_INVALID_JSON,
        SESSION_ERR_INVALID_ENTRY, SESSION_ERR_DUPLICATE_ID, SESSION_ERR_MISSING_PARENT,
        SESSION_ERR_CYCLE, SESSION_ERR_UNKNOWN_LEAF, SESSION_ERR_CORRUPT_LINE,
        SESSION_ERR_NEEDS_REPAIR, SESSION_ERR_TAINTED, SESSION_ERR_IO, SESSION_ERR_INTERNAL,
        SESSION_ERR_LOCKED, SESSION_ERR_FILE_CHANGED, SESSION_ERR_READ_ONLY, SESSION_ERR_WRONG_PROCESS,
        SESSION_ERR_INVALID_COMPACTION, SESSION_ERR_TOOL_PAIRING, SESSION_ERR_CANCELLED,
    };
    int i;
    SECTION("session_status_name: the 20 stable names, then \"unknown\"");
    CHECK(sizeof(SessionStatus) == 4, "SessionStatus is 32 bits");
    for (i = 0; i < 20; i++) {
        const char *got = session_status_name(codes[i]);
        CHECK(codes[i] == i, "status code %s has the stable value %d", names[i], i);
        CHECK(got != NULL && strcmp(got, names[i]) == 0, "session_status_name(%d) == \"%s\" (got %s)", i,
              names[i], show(got));
    }
    CHECK(strcmp(session_status_name(20), "unknown") == 0, "session_status_name(20) == \"unknown\"");
    CHECK(strcmp(session_status_name(-1), "unknown") == 0, "session_status_name(-1) == \"unknown\"");
    CHECK(strcmp(session_status_name(INT32_MAX), "unknown") == 0, "session_status_name(INT32_MAX) == \"unknown\"");
    CHECK(strcmp(session_status_name(INT32_MIN), "unknown") == 0, "session_status_name(INT32_MIN) == \"unknown\"");
    CHECK(SESSION_STATE_READY == 0 && SESSION_STATE_NEEDS_REPAIR == 1 && SESSION_STATE_TAINTED == 2,
          "SessionState values are stable");
}

/* parse_entry(text) must fail with `want` and error.pointer == pointer. */
static void expect_parse_error(const char *text, SessionStatus want, const char *pointer, const char *rule)
{
    char *out = NULL;
    SessionStatus st = session_parse_entry(text, &out);
    CHECK_ERROR(st, want, out, "%s", rule);
    if (pointer)
        CHECK_JSON(out, "error.pointer", pointer, "%s: pointer", rule);
    else
        CHECK(json_get(out, "error.pointer").p && json_get(out, "error.pointer").p[0] == '"',
              "%s: pointer is present", rule);
    if (want == SESSION_ERR_INVALID_JSON) {
        jspan off = json_get(out, "error.offset");
        CHECK(off.p && json_int(off) >= 0, "%s: invalid_json carries a byte offset", rule);
    }
    session_string_free(out);
}

static char *nested(int arrays, const char *inner)
{
    size_t n = strlen(ENTRY_HEAD) + 2 * (size_t)arrays + strlen(inner) + 64;
    char *s = (char *)malloc(n), *p;
    int i;
    CHECK(s != NULL, "malloc");
    p = s + sprintf(s, ENTRY_HEAD "\"type\":\"metadata\",\"key\":\"k\",\"value\":");
    for (i = 0; i < arrays; i++) *p++ = '[';
    p += sprintf(p, "%s", inner);
    for (i = 0; i < arrays; i++) *p++ = ']';
    strcpy(p, "}");
    return s;
}

static void invalid_argument(void)
{
    char *out = NULL;
    SessionStatus st;
    SECTION("invalid_argument: `argument` names the parameter");
    st = session_parse_entry(NULL, &out);
    CHECK_ERROR(st, SESSION_ERR_INVALID_ARGUMENT, out, "parse_entry(NULL)");
    CHECK_JSON(out, "error.argument", "\"entry_json\"", "parse_entry(NULL): argument");
    session_string_free(out);
    st = session_parse_entry(USER_MSG("\"caf\xc3\""), &out);
    CHECK_ERROR(st, SESSION_ERR_INVALID_ARGUMENT, out, "parse_entry(invalid UTF-8)");
    CHECK_JSON(out, "error.argument", "\"entry_json\"", "parse_entry(invalid UTF-8): argument");
    session_string_free(out);
}

static void invalid_json(void)
{
    char *s, *out = NULL;
    SessionStatus st;
    SECTION("invalid_json: `pointer` (and `offset`)");
    expect_parse_error(ENTRY_HEAD "\"type\":\"message\",\"message\":{\"role\":\"user\",\"content\":\"a\","
                                  "\"content\":\"b\"}}",
                       SESSION_ERR_INVALID_JSON, "\"/message/content\"", "duplicate key in message");
    expect_parse_error("{\"id\":\"e\",\"id\":\"f\",\"parentId\":null,\"timestamp\":1,\"type\":\"metadata\","
                       "\"key\":\"k\",\"value\":1}",
                       SESSION_ERR_INVALID_JSON, "\"/id\"", "duplicate top-level key");
    expect_parse_error("{\"id\":\"e\",\"parentId\":null,\"timestamp\":1e400,\"type\":\"metadata\","
                       "\"key\":\"k\",\"value\":1}",
                       SESSION_ERR_INVALID_JSON, "\"/timestamp\"", "1e400 is out of range");
    expect_parse_error("{\"id\":\"e\",\"parentId\":null,\"timestamp\":1,\"type\":\"metadata\","
                       "\"key\":\"k\",\"value\":18446744073709551616}",
                       SESSION_ERR_INVALID_JSON, "\"/value\"", "integer beyond 64 bits");
    expect_parse_error(USER_MSG("\"hi\"") " {}", SESSION_ERR_INVALID_JSON, "\"\"", "trailing JSON value");
    expect_parse_error(USER_MSG("\"hi\"") "x", SESSION_ERR_INVALID_JSON, "\"\"", "trailing garbage");
    expect_parse_error("", SESSION_ERR_INVALID_JSON, "\"\"", "empty text");
    expect_parse_error("{\"id\":\"e\",", SESSION_ERR_INVALID_JSON, NULL, "truncated object");
    {
        char *out = NULL;
        SessionStatus st = session_parse_entry("{\"id\":\"e\",", &out);
        CHECK_ERROR(st, SESSION_ERR_INVALID_JSON, out, "truncated object");
        CHECK_JSON(out, "error.offset", "10", "truncated object: offset is where the text ends");
        session_string_free(out);
    }

    /* depth: the entry object is level 1; "value" holding k nested arrays reaches 1 + k */
    s = nested(127, "1");
    st = session_parse_entry(s, &out);
    CHECK_STATUS(st, SESSION_OK, out, "nesting of exactly SESSION_MAX_DEPTH (128) levels is accepted");
    session_string_free(out);
    free(s);
    s = nested(128, "1");
    st = session_parse_entry(s, &out);
    CHECK_ERROR(st, SESSION_ERR_INVALID_JSON, out, "nesting of 129 levels is rejected");
    CHECK(json_get(out, "error.pointer").p != NULL &&
              strncmp(json_get(out, "error.pointer").p, "\"/value/0/0/0", 12) == 0,
          "too deep: pointer points into /value (got %s)", json_show(json_get(out, "error.pointer")));
    session_string_free(out);
    free(s);
    s = nested(200000, "");
    st = session_parse_entry(s, &out);
    CHECK_ERROR(st, SESSION_ERR_INVALID_JSON, out, "200000 levels: rejected, no stack overflow");
    session_string_free(out);
    free(s);

    SECTION("JSON that is valid and must be kept exactly");
    st = session_parse_entry(USER_MSG("\"a\\u0000b\""), &out);
    CHECK_STATUS(st, SESSION_OK, out, "an escaped \\u0000 inside a string is valid JSON");
    CHECK_JSON(out, "message.content", "\"a\\u0000b\"", "escaped \\u0000 is kept");
    session_string_free(out);
    st = session_parse_entry("{\"id\":\"e\",\"parentId\":null,\"timestamp\":9007199254740993,"
                             "\"type\":\"metadata\",\"key\":\"k\",\"value\":-9223372036854775808}",
                             &out);
    CHECK_STATUS(st, SESSION_OK, out, "64-bit integers are accepted");
    CHECK_JSON(out, "timestamp", "9007199254740993", "2^53+1 is kept exactly (no double rounding)");
    CHECK_JSON(out, "value", "-9223372036854775808", "INT64_MIN is kept exactly");
    session_string_free(out);
    st = session_parse_entry(USER_MSG("\"\\ud83d\\ude00\""), &out);
    CHECK_STATUS(st, SESSION_OK, out, "a surrogate pair is valid");
    session_string_free(out);
    /* Round 2 (docs/contract.md §6.1): lone surrogate escapes are kept as written (round 1 rejected them). */
    st = session_parse_entry(USER_MSG("\"\\ud800\""), &out);
    CHECK_STATUS(st, SESSION_OK, out, "a lone high surrogate escape is accepted");
    CHECK_JSON(out, "message.content", "\"\\ud800\"", "a lone high surrogate escape is kept");
    session_string_free(out);
    st = session_parse_entry(USER_MSG("\"x\\udc00y\""), &out);
    CHECK_STATUS(st, SESSION_OK, out, "a lone low surrogate escape is accepted");
    CHECK_JSON(out, "message.content", "\"x\\udc00y\"", "a lone low surrogate escape is kept");
    session_string_free(out);
}

static void invalid_entry(void)
{
    char *out = NULL;
    SessionStatus st;
    SECTION("invalid_entry: `pointer` names the place");
    expect_parse_error(ASSISTANT_MSG("[{\"type\":\"toolCall\",\"id\":\"\",\"name\":\"read\",\"arguments\":{}}]"),
                       SESSION_ERR_INVALID_ENTRY, "\"/message/content/0/id\"", "toolCall with an empty id");
    expect_parse_error(ASSISTANT_MSG("[{\"type\":\"text\",\"text\":\"ok\"},"
                                     "{\"type\":\"toolCall\",\"name\":\"read\",\"arguments\":{}}]"),
                       SESSION_ERR_INVALID_ENTRY, "\"/message/content/1/id\"", "toolCall without an id");
    expect_parse_error(ASSISTANT_MSG("[{\"type\":\"toolCall\",\"id\":\"c\",\"name\":\"read\",\"arguments\":\"{}\"}]"),
                       SESSION_ERR_INVALID_ENTRY, "\"/message/content/0/arguments\"",
                       "toolCall arguments that are not an object");
    /* Round 2 (docs/contract.md §6.1): unknown roles and block types are extensions; only empty ones fail. */
    expect_parse_error(ENTRY_HEAD "\"type\":\"message\",\"message\":{\"role\":\"\",\"content\":\"x\"}}",
                       SESSION_ERR_INVALID_ENTRY, "\"/message/role\"", "empty role");
    expect_parse_error(USER_MSG("[{\"type\":\"\",\"url\":\"x\"}]"), SESSION_ERR_INVALID_ENTRY,
                       "\"/message/content/0/type\"", "empty block type");
    expect_parse_error(ENTRY_HEAD "\"type\":\"label\",\"key\":\"k\",\"value\":1}", SESSION_ERR_INVALID_ENTRY,
                       "\"/type\"", "unknown entry type");
    expect_parse_error("{\"parentId\":null,\"timestamp\":1,\"type\":\"metadata\",\"key\":\"k\",\"value\":1}",
                       SESSION_ERR_INVALID_ENTRY, "\"/id\"", "missing id");
    expect_parse_error("{\"id\":\"e\",\"parentId\":null,\"timestamp\":\"now\",\"type\":\"metadata\","
                       "\"key\":\"k\",\"value\":1}",
                       SESSION_ERR_INVALID_ENTRY, "\"/timestamp\"", "non-numeric timestamp");
    expect_parse_error("{\"id\":\"e\",\"parentId\":\"\",\"timestamp\":1,\"type\":\"metadata\","
                       "\"key\":\"k\",\"value\":1}",
                       SESSION_ERR_INVALID_ENTRY, "\"/parentId\"", "empty parentId");
    expect_parse_error(ENTRY_HEAD "\"type\":\"metadata\",\"key\":\"\",\"value\":1}", SESSION_ERR_INVALID_ENTRY,
                       "\"/key\"", "empty metadata key");
    expect_parse_error(ENTRY_HEAD "\"type\":\"message\",\"message\":{\"role\":\"toolResult\",\"toolCallId\":\"c\","
                                  "\"toolName\":\"read\",\"content\":[],\"isError\":\"no\"}}",
                       SESSION_ERR_INVALID_ENTRY, "\"/message/isError\"", "toolResult isError not boolean");
    expect_parse_error("[]", SESSION_ERR_INVALID_ENTRY, "\"\"", "an entry that is not an object");

    /* in an entries array the element index comes first */
    st = session_path_to("[" USER_MSG("\"hi\"") ","
                         "{\"id\":\"f\",\"parentId\":\"e\",\"timestamp\":2,\"type\":\"metadata\",\"key\":\"k\",\"value\":1},"
                         "{\"id\":\"g\",\"parentId\":\"f\",\"timestamp\":3,\"type\":\"metadata\",\"key\":\"k\",\"value\":1},"
                         "{\"id\":\"h\",\"parentId\":\"g\",\"timestamp\":4,\"type\":\"message\",\"message\":{"
                         "\"role\":\"assistant\",\"content\":[{\"type\":\"toolCall\",\"id\":\"\",\"name\":\"n\","
                         "\"arguments\":{}}]}}]",
                         "f", &out);
    CHECK_ERROR(st, SESSION_ERR_INVALID_ENTRY, out, "path_to over an array with a bad 4th entry");
    CHECK_JSON(out, "error.pointer", "\"/3/message/content/0/id\"", "entries_json pointer starts with the index");
    session_string_free(out);
    st = session_messages_on_path("[" USER_MSG("\"hi\"") ",{\"id\":\"x\",\"id\":\"y\"}]", "e", &out);
    CHECK_ERROR(st, SESSION_ERR_INVALID_JSON, out, "messages_on_path over an array with a duplicate key");
    CHECK_JSON(out, "error.pointer", "\"/1/id\"", "entries_json duplicate-key pointer starts with the index");
    session_string_free(out);
    st = session_path_to("{}", "e", &out);
    CHECK_ERROR(st, SESSION_ERR_INVALID_ENTRY, out, "entries_json that is not an array");
    CHECK_JSON(out, "error.pointer", "\"\"", "entries_json not an array: pointer is the root");
    session_string_free(out);
}

#define E(id, parent) \
    "{\"id\":\"" id "\",\"parentId\":" parent ",\"timestamp\":1,\"type\":\"metadata\",\"key\":\"k\",\"value\":0}"

static void tree_errors(void)
{
    SessionStore *store = NULL;
    char *out = NULL;
    SessionStatus st;

    SECTION("duplicate_id: `id`");
    st = session_path_to("[" E("a", "null") "," E("b", "\"a\"") "," E("a", "null") "]", "b", &out);
    CHECK_ERROR(st, SESSION_ERR_DUPLICATE_ID, out, "path_to: a duplicate id anywhere fails");
    CHECK_JSON(out, "error.id", "\"a\"", "duplicate_id names the id");
    CHECK(json_get(out, "error.line").p == NULL, "slice duplicate_id has no line");
    session_string_free(out);
    st = session_memory_store_open(&store);
    CHECK_STATUS(st, SESSION_OK, NULL, "memory store");
    st = session_store_append(store, E("a", "null"), NULL);
    CHECK_STATUS(st, SESSION_OK, NULL, "append a");
    st = session_store_append(store, E("a", "null"), &out);
    CHECK_ERROR(st, SESSION_ERR_DUPLICATE_ID, out, "store append of a taken id");
    CHECK_JSON(out, "error.id", "\"a\"", "store duplicate_id names the id");
    session_string_free(out);

    SECTION("missing_parent: `childId`, `parentId`");
    st = session_store_append(store, E("c", "\"ghost\""), &out);
    CHECK_ERROR(st, SESSION_ERR_MISSING_PARENT, out, "store append with an unknown parent");
    CHECK_JSON(out, "error.childId", "\"c\"", "missing_parent names the child");
    CHECK_JSON(out, "error.parentId", "\"ghost\"", "missing_parent names the parent");
    session_string_free(out);
    st = session_store_append(store, E("b", "\"a\""), &out);
    CHECK_STATUS(st, SESSION_OK, out, "a failed append fails only itself: the next valid one commits");
    CHECK_JSON(out, "seq", "1", "failed appends use no seq number");
    session_string_free(out);
    CHECK(session_store_state(store) == SESSION_STATE_READY, "validation/tree errors leave the store ready");
    st = session_path_to("[" E("a", "null") "," E("b", "\"gone\"") "]", "b", &out);
    CHECK_ERROR(st, SESSION_ERR_MISSING_PARENT, out, "path_to through a missing parent");
    CHECK_JSON(out, "error.childId", "\"b\"", "slice missing_parent childId");
    CHECK_JSON(out, "error.parentId", "\"gone\"", "slice missing_parent parentId");
    session_string_free(out);

    SECTION("unknown_leaf: `id`");
    st = session_store_path_to(store, "zzz", &out);
    CHECK_ERROR(st, SESSION_ERR_UNKNOWN_LEAF, out, "store_path_to(unknown)");
    CHECK_JSON(out, "error.id", "\"zzz\"", "unknown_leaf names the id");
    session_string_free(out);
    st = session_store_messages_on_path(store, "", &out);
    CHECK_ERROR(st, SESSION_ERR_UNKNOWN_LEAF, out, "store_messages_on_path(\"\")");
    CHECK_JSON(out, "error.id", "\"\"", "unknown_leaf names the empty id");
    session_string_free(out);
    st = session_path_to("[" E("a", "null") "]", "nope", &out);
    CHECK_ERROR(st, SESSION_ERR_UNKNOWN_LEAF, out, "slice path_to(unknown)");
    CHECK_JSON(out, "error.id", "\"nope\"", "slice unknown_leaf id");
    session_string_free(out);
    session_store_close(store);

    SECTION("cycle: `id` (a -> b -> a)");
    st = session_path_to("[" E("a", "\"b\"") "," E("b", "\"a\"") "]", "a", &out);
    CHECK_ERROR(st, SESSION_ERR_CYCLE, out, "path_to over a -> b -> a");
    CHECK_JSON(out, "error.id", "\"a\"", "cycle names the revisited id");
    session_string_free(out);
    st = session_messages_on_path("[" E("x", "\"x\"") "]", "x", &out);
    CHECK_ERROR(st, SESSION_ERR_CYCLE, out, "messages_on_path over a self-parent");
    CHECK_JSON(out, "error.id", "\"x\"", "self-cycle names the id");
    session_string_free(out);
    st = session_path_to("[" E("a", "\"b\"") "," E("b", "\"a\"") "," E("o", "\"nowhere\"") ","
                         E("r", "null") "," E("s", "\"r\"") "]",
                         "s", &out);
    CHECK_STATUS(st, SESSION_OK, out, "a broken unselected branch does not stop a healthy path");
    CHECK_IDS(out, "r,s", "the healthy path reads back");
    session_string_free(out);
}

static void corrupt_line_and_io(void)
{
    static const char bytes[] = E("a", "null") "\n\n{\"id\":\n";
    char path[512], *out = NULL;
    SessionStore *store = NULL;
    SessionStatus st;

    SECTION("corrupt_line: `line` (1-based, blank lines counted), `reason`");
    st = session_recover_jsonl((const uint8_t *)bytes, sizeof bytes - 1, &out);
    CHECK_ERROR(st, SESSION_ERR_CORRUPT_LINE, out, "recover_jsonl with a bad committed line 3");
    CHECK_JSON(out, "error.line", "3", "corrupt_line line is 3");
    CHECK_JSON(out, "error.reason", "\"invalid_json\"", "corrupt_line reason");
    session_string_free(out);
    st = session_recover_jsonl((const uint8_t *)E("a", "null") "\n" USER_MSG("1") "\n", 
                               strlen(E("a", "null") "\n" USER_MSG("1") "\n"), &out);
    CHECK_ERROR(st, SESSION_ERR_CORRUPT_LINE, out, "recover_jsonl with an invalid entry on line 2");
    CHECK_JSON(out, "error.line", "2", "corrupt_line line is 2");
    CHECK_JSON(out, "error.reason", "\"invalid_entry\"", "corrupt_line reason invalid_entry");
    CHECK_JSON(out, "error.pointer", "\"/message/content\"", "corrupt_line carries the pointer inside the line");
    session_string_free(out);

    SECTION("needs_repair: `warnings`");
    snprintf(path, sizeof path, "%s/torn.jsonl", g_dir);
    write_file(path, E("a", "null") "\n{\"id\":\"b\"", strlen(E("a", "null") "\n{\"id\":\"b\""));
    st = session_jsonl_store_open(path, &store, NULL);
    CHECK_STATUS(st, SESSION_OK, NULL, "a torn file opens");
    st = session_store_append(store, E("c", "\"a\""), &out);
    CHECK_ERROR(st, SESSION_ERR_NEEDS_REPAIR, out, "append on a needs_repair store");
    CHECK_JSON(out, "error.warnings", "[{\"code\":\"unterminated_tail\",\"line\":2}]",
               "needs_repair carries the warnings");
    session_string_free(out);
    session_store_close(store);

    SECTION("io: `op`, `osError`");
    snprintf(path, sizeof path, "%s/missing-folder/s.jsonl", g_dir);
    store = (SessionStore *)&st; /* not NULL: open must reset it */
    st = session_jsonl_store_open(path, &store, &out);
    CHECK_ERROR(st, SESSION_ERR_IO, out, "open in a missing folder");
    CHECK_JSON(out, "error.osError", "2", "osError is ENOENT (2)");
    CHECK_JSON(out, "error.op", "\"open\"", "op is open");
    CHECK(store == NULL, "*out_store is NULL after a failed open");
    CHECK(!file_exists(path), "no folder is created");
    session_string_free(out);
    st = session_jsonl_store_open(g_dir, &store, &out);
    CHECK_ERROR(st, SESSION_ERR_IO, out, "open of a directory");
    CHECK(strstr(out, "not a regular file") != NULL,
          "open of a directory: the message says it is not a regular file");
    CHECK(store == NULL, "*out_store is NULL after a failed open of a directory");
    session_string_free(out);
}

/* io on write and tainted with `cause`: in a child whose file size limit is the file size. */
static int tainted_child(const char *path)
{
    SessionStore *store = NULL;
    char *out = NULL, *cause;
    struct rlimit lim;
    SessionStatus st;

    signal(SIGXFSZ, SIG_IGN);
    st = session_jsonl_store_open(path, &store, NULL);
    CHECK_STATUS(st, SESSION_OK, NULL, "child: open");
    st = session_store_append(store, E("a", "null"), NULL);
    CHECK_STATUS(st, SESSION_OK, NULL, "child: first append");
    CHECK(getrlimit(RLIMIT_FSIZE, &lim) == 0, "child: getrlimit(RLIMIT_FSIZE)");
    lim.rlim_cur = (rlim_t)file_size(path); /* not one more byte may be written */
    CHECK(setrlimit(RLIMIT_FSIZE, &lim) == 0, "child: setrlimit(RLIMIT_FSIZE)");

    st = session_store_append(store, E("b", "\"a\""), &out);
    CHECK_ERROR(st, SESSION_ERR_IO, out, "child: a write beyond RLIMIT_FSIZE fails with io");
    CHECK_JSON(out, "error.osError", "27", "child: osError is EFBIG (27)");
    CHECK_JSON(out, "error.op", "\"write\"", "child: op is write");
    cause = json_dup(json_get(out, "error"));
    session_string_free(out);
    CHECK(session_store_state(store) == SESSION_STATE_TAINTED, "child: state is tainted");

    st = session_store_append(store, E("c", "\"a\""), &out);
    CHECK_ERROR(st, SESSION_ERR_TAINTED, out, "child: the next append is tainted");
    CHECK_JSON(out, "error.cause", cause, "child: cause is the original io error object");
    session_string_free(out);
    st = session_store_entries(store, &out);
    CHECK_ERROR(st, SESSION_ERR_TAINTED, out, "child: reads on a tainted store fail too");
    CHECK_JSON(out, "error.cause", cause, "child: read's cause is the same bytes");
    session_string_free(out);
    free(cause);
    session_store_close(store);
    return 0;
}

static void io_and_tainted(void)
{
    char path[512];
    pid_t pid;
    int status = 0;
    SECTION("io (write, osError 27) and tainted (`cause`), in a forked child");
    snprintf(path, sizeof path, "%s/limited.jsonl", g_dir);
    fflush(NULL);
    pid = fork();
    CHECK(pid >= 0, "fork");
    if (pid == 0) exit(tainted_child(path));
    CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child's checks passed (status %d)", status);
}

int main(void)
{
    make_tmpdir(g_dir, sizeof g_dir, "errors");
    status_names();
    invalid_argument();
    invalid_json();
    invalid_entry();
    tree_errors();
    corrupt_line_and_io();
    io_and_tainted();
    SECTION("internal: only by a library bug (a caught panic); its name is checked above");
    remove_tmpdir(g_dir);
    check_done("test_errors");
    return 0;
}

/*
 * test_hostile_json.c -- JSON text an agent might not expect: ids with every escape, \u0000 and U+2028/U+2029
 * round-trip through a JSONL file (the same id spelt differently is the same id; an id is
 * never truncated at a NUL); numbers (-0, 1e-400, 1e400, 20-digit, 400-digit, malformed)
 * kept exactly or rejected as invalid_json, never changed; duplicate keys at depth (also
 * spelt with escapes) -> invalid_json at the exact pointer.
 * Part of the hostile-input suite (hostile.h).
 */
#include "hostile.h"

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
    long before = g_results;

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
    check_result("escaped id", st, &out, SESSION_OK, NULL, NULL);
    out = NULL;
    st = session_parse_entry(e3, &out);
    CHECK(st == SESSION_OK && strcmp(out, e3) == 0, "\\u0000 id: kept byte-identical (%s)", show(out));
    check_result("\\u0000 id", st, &out, SESSION_OK, NULL, NULL);

    s = jsonl_store("escapes.jsonl", path, sizeof path);
    out = NULL;
    check_result("append the escaped id", session_store_append(s, e1, &out), &out, SESSION_OK, "seq", "0");
    out = NULL;
    check_result("append a child naming its parent in another spelling", session_store_append(s, e2, &out), &out,
           SESSION_OK, "seq", "1");
    out = NULL;
    check_result("append the \\u0000 id", session_store_append(s, e3, &out), &out, SESSION_OK, "seq", "2");
    out = NULL;
    check_result("the escaped id in another spelling is a duplicate", session_store_append(s, e4, &out), &out,
           SESSION_ERR_DUPLICATE_ID, NULL, NULL);
    out = NULL;
    check_result("leaf_id = the id's C form", session_store_path_to(s, ID_C, &out), &out, SESSION_OK, "0.id", ID_ESC);
    out = NULL;
    st = session_store_path_to(s, "nul\\u0000after", &out);
    CHECK(st == SESSION_ERR_UNKNOWN_LEAF, "the escaped text is not the id (got %s)", session_status_name(st));
    check_result("escaped text as leaf", st, &out, SESSION_ERR_UNKNOWN_LEAF, NULL, NULL);
    out = NULL;
    check_result("an id is never truncated at its NUL: \"nul\" is unknown", session_store_path_to(s, "nul", &out), &out,
           SESSION_ERR_UNKNOWN_LEAF, NULL, NULL);
    out = NULL;
    check_result("messages to the child", session_store_messages_on_path(s, "child", &out), &out, SESSION_OK,
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
    check_result("recover_jsonl of the file", st, &out, SESSION_OK, "warnings", "[]");
    out = NULL;
    st = session_jsonl_store_open(path, &s, &out);
    check_result("reopen", st, &out, SESSION_OK, "state", "\"ready\"");
    out = NULL;
    st = session_store_path_to(s, "child", &out);
    CHECK_JSON_LENGTH(out, "", 2, "after reopen: path_to(child) = the escaped id, child");
    check_result("after reopen, path_to(child)", st, &out, SESSION_OK, "0.id", ID_ESC);
    session_store_close(s);
    free(bytes);
    free(jsonl);
    printf("   %ld escape cases\n", g_results - before);
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
    long before = g_results, kept = 0, rejected = 0;
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
                    check_result(what, st, &out, SESSION_OK, NULL, NULL);
                } else {
                    CHECK(mode != 'k', "%s: must be kept, was rejected: %s", what, show(out));
                    rejected++;
                    if (mode == 's')
                        check_result(what, st, &out, SESSION_ERR_INVALID_JSON, NULL, NULL);
                    else
                        check_result(what, st, &out, SESSION_ERR_INVALID_JSON, "error.pointer", quoted("", AT[a].pointer));
                }
                free(entry);
            }
        }
    }
    printf("   %ld number cases: %ld kept exactly, %ld rejected\n", g_results - before, kept, rejected);
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
    long before = g_results;
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
            check_result(what, session_parse_entry(entry, &out), &out, SESSION_OK, NULL, NULL);
            out = NULL;
            check_result(what, session_store_append(mem, entry, &out), &out, SESSION_OK, NULL, NULL);
            session_store_close(mem);
            continue;
        }
        check_result(what, session_parse_entry(entry, &out), &out, SESSION_ERR_INVALID_JSON, "error.pointer", quoted("", pointer));
        out = NULL;
        check_result(what, session_path_to(arr, "r", &out), &out, SESSION_ERR_INVALID_JSON, "error.pointer",
               quoted("/1", pointer));
        out = NULL;
        check_result(what, session_messages_on_path(arr, "r", &out), &out, SESSION_ERR_INVALID_JSON, "error.pointer",
               quoted("/1", pointer));
        out = NULL;
        check_result(what, session_store_append(mem, entry, &out), &out, SESSION_ERR_INVALID_JSON, "error.pointer",
               quoted("", pointer));
        out = NULL;
        check_result(what, session_recover_jsonl((const uint8_t *)line2, strlen(line2), &out), &out,
               SESSION_ERR_CORRUPT_LINE, "error.line", "2");
        out = NULL;
        {
            SessionStatus st = session_recover_jsonl((const uint8_t *)line2, strlen(line2), &out);
            CHECK_JSON(out, "error.reason", "\"invalid_json\"", "%s: recover reason", what);
            check_result(what, st, &out, SESSION_ERR_CORRUPT_LINE, "error.pointer", quoted("", pointer));
        }
        session_store_close(mem);
    }
    printf("   %ld duplicate-key cases\n", g_results - before);
}

int main(void)
{
    hostile_begin("hostile_json");
    escapes();
    numbers();
    duplicate_keys();
    hostile_end("test_hostile_json");
    return 0;
}

/*
 * test_export.c -- session_export (issue 35): a libsession session written as a file
 * that Claude Code or Codex resumes, and as a pi file; the report's shape; the file no
 * wider in mode than the source; a format other than the three, an unknown leaf and an
 * existing output are refused with nothing written; secrets redacted unless the options
 * say "redact": false (issue 36).
 */
#include "check.h"

#include <sys/stat.h>

static char g_dir[256];

static void path_in(char *buf, size_t size, const char *name)
{
    snprintf(buf, size, "%s/%s", g_dir, name);
}

/* A user turn, a reply with a tool call, its result, a label and a pi custom message. */
static const char SESSION[] =
    "{\"id\":\"u-1\",\"parentId\":null,\"timestamp\":1735689601000,\"type\":\"message\","
    "\"message\":{\"role\":\"user\",\"content\":\"list the files\"}}\n"
    "{\"id\":\"a-1\",\"parentId\":\"u-1\",\"timestamp\":1735689602000,\"type\":\"message\","
    "\"message\":{\"role\":\"assistant\",\"content\":[{\"type\":\"toolCall\",\"id\":\"call-1\","
    "\"name\":\"ls\",\"arguments\":{\"path\":\".\"}}]}}\n"
    "{\"id\":\"r-1\",\"parentId\":\"a-1\",\"timestamp\":1735689603000,\"type\":\"message\","
    "\"message\":{\"role\":\"toolResult\",\"toolCallId\":\"call-1\",\"toolName\":\"ls\","
    "\"content\":[{\"type\":\"text\",\"text\":\"a.txt\"}],\"isError\":false}}\n"
    "{\"id\":\"l-1\",\"parentId\":\"r-1\",\"timestamp\":1735689604000,\"type\":\"metadata\","
    "\"key\":\"session.label\",\"value\":{\"targetId\":\"u-1\",\"label\":\"start\"}}\n"
    "{\"id\":\"c-1\",\"parentId\":\"l-1\",\"timestamp\":1735689605000,\"type\":\"message\","
    "\"message\":{\"role\":\"custom\",\"customType\":\"note\",\"content\":\"remember a.txt\"}}\n"
    "{\"id\":\"a-2\",\"parentId\":\"c-1\",\"timestamp\":1735689606000,\"type\":\"message\","
    "\"message\":{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"a.txt\"}]}}\n";

static void exports_to_each_agent_with_a_report(void)
{
    char src[512], out[512];
    char *json = NULL, *text;
    size_t len;
    struct stat sb;
    SessionStatus st;

    path_in(src, sizeof src, "session.jsonl");
    write_file(src, SESSION, sizeof SESSION - 1);
    CHECK(chmod(src, 0600) == 0, "chmod the source");

    SECTION("claude-code: one line per message, the label dropped, custom sent as user text");
    path_in(out, sizeof out, "claude.jsonl");
    st = session_export("claude-code", src, out, NULL, &json);
    CHECK_STATUS(st, SESSION_OK, json, "export to claude-code");
    CHECK_JSON(json, "format", "\"claude-code\"", "the format");
    CHECK_JSON(json, "entries", "5", "u-1, a-1, r-1, c-1 as user text, a-2");
    CHECK_JSON(json, "converted.0.kind", "\"role:custom\"", "the custom message is converted");
    CHECK_JSON(json, "converted.0.count", "1", "once");
    CHECK_JSON(json, "dropped.0.kind", "\"label\"", "the label has no place");
    CHECK_JSON(json, "dropped.0.count", "1", "one label");
    CHECK(json_get(json, "dropped.0.reason").n > 2, "with a reason");
    session_string_free(json);
    text = read_file(out, &len);
    CHECK(text && strstr(text, "\"type\":\"tool_use\",\"id\":\"call-1\",\"name\":\"ls\",\"input\":{\"path\":\".\"}"),
          "the call as a tool_use block");
    CHECK(text && strstr(text, "\"uuid\":\"r-1\""), "line ids are the entry ids");
    CHECK(text && strstr(text, "\"content\":\"remember a.txt\""), "the custom message as user text");
    free(text);
    CHECK(stat(out, &sb) == 0 && (sb.st_mode & 0777) == 0600, "0600 like the source (%o)",
          (unsigned)(sb.st_mode & 0777));

    SECTION("codex: session_meta first, then response items");
    path_in(out, sizeof out, "codex.jsonl");
    st = session_export("codex", src, out, "{\"leaf\":\"r-1\"}", &json);
    CHECK_STATUS(st, SESSION_OK, json, "export to codex at r-1");
    CHECK_JSON(json, "entries", "4", "session_meta, the user message, the call, the output");
    CHECK_JSON_LENGTH(json, "converted", 0, "nothing converted up to r-1");
    session_string_free(json);
    text = read_file(out, &len);
    CHECK(text && strncmp(text, "{\"timestamp\":", 13) == 0 && strstr(text, "\"type\":\"session_meta\""),
          "a rollout");
    CHECK(text && strstr(text, "{\"type\":\"function_call\",\"name\":\"ls\",\"arguments\":\"{\\\"path\\\":\\\".\\\"}\","
                               "\"call_id\":\"call-1\"}"),
          "the call with its arguments as text");
    free(text);

    SECTION("pi: the whole tree");
    path_in(out, sizeof out, "pi.jsonl");
    st = session_export("pi", src, out, "{}", &json);
    CHECK_STATUS(st, SESSION_OK, json, "export to pi");
    CHECK_JSON(json, "entries", "7", "a header and the six entries");
    session_string_free(json);
}

static void refusals_write_nothing(void)
{
    char src[512], out[512];
    char *json = NULL;
    SessionStatus st;

    path_in(src, sizeof src, "session.jsonl");
    path_in(out, sizeof out, "refused.jsonl");

    SECTION("a format other than the three is an invalid argument");
    st = session_export("auto", src, out, NULL, &json);
    CHECK_ERROR(st, SESSION_ERR_INVALID_ARGUMENT, json, "auto is no export format");
    CHECK_JSON(json, "error.argument", "\"format\"", "names format");
    session_string_free(json);
    CHECK(!file_exists(out), "nothing written");

    SECTION("an unknown option is an invalid argument");
    st = session_export("codex", src, out, "{\"leef\":\"a-1\"}", &json);
    CHECK_ERROR(st, SESSION_ERR_INVALID_ARGUMENT, json, "unknown option");
    session_string_free(json);

    SECTION("a leaf no entry has is unknown_leaf");
    st = session_export("claude-code", src, out, "{\"leaf\":\"nope\"}", &json);
    CHECK_ERROR(st, SESSION_ERR_UNKNOWN_LEAF, json, "no such leaf");
    CHECK_JSON(json, "error.id", "\"nope\"", "names it");
    session_string_free(json);
    CHECK(!file_exists(out), "nothing written");

    SECTION("an existing output is never overwritten");
    path_in(out, sizeof out, "claude.jsonl");
    st = session_export("claude-code", src, out, NULL, &json);
    CHECK_ERROR(st, SESSION_ERR_IO, json, "out_path exists");
    CHECK_JSON(json, "error.op", "\"open\"", "creating the output fails (EEXIST)");
    session_string_free(json);
    CHECK(count_dir_entries(g_dir) == 4, "the source and three exports, no temporary file (%d)",
          count_dir_entries(g_dir));
}

/* Rule (issue 36): an export replaces each secret by [REDACTED:<rule>] unless its
 * options say "redact": false, and counts them. The token is built at run time, so that
 * no source file holds one. */
static void redacts_secrets_by_default_and_keeps_them_when_asked(void)
{
    static const char ALPHABET[] = "abcdefghijklmnopqrstuvwxyz0123456789ABCDEF";
    char src[512], out[512], token[41], line[512];
    char *json = NULL, *text;
    size_t len;
    SessionStatus st;
    int i;

    memcpy(token, "ghp_", 4);
    for (i = 0; i < 36; i++)
        token[4 + i] = ALPHABET[(i * 7 + 3) % 42];
    token[40] = '\0';
    snprintf(line, sizeof line,
             "{\"id\":\"u-1\",\"parentId\":null,\"timestamp\":1735689601000,\"type\":\"message\","
             "\"message\":{\"role\":\"user\",\"content\":\"use %s\"}}\n",
             token);
    path_in(src, sizeof src, "secret.jsonl");
    write_file(src, line, strlen(line));

    SECTION("by default the token is replaced, and counted");
    path_in(out, sizeof out, "secret-redacted.jsonl");
    st = session_export("claude-code", src, out, NULL, &json);
    CHECK_STATUS(st, SESSION_OK, json, "export with the defaults");
    CHECK_JSON(json, "redactions", "1", "one secret replaced");
    session_string_free(json);
    text = read_file(out, &len);
    CHECK(text && !strstr(text, token), "the file holds no token");
    CHECK(text && strstr(text, "use [REDACTED:github-token]"), "in its place, the rule's name");
    CHECK(text && strstr(text, "\"uuid\":\"u-1\""), "the id unchanged");
    free(text);

    SECTION("\"redact\": false keeps it");
    path_in(out, sizeof out, "secret-kept.jsonl");
    st = session_export("claude-code", src, out, "{\"redact\":false}", &json);
    CHECK_STATUS(st, SESSION_OK, json, "export keeping secrets");
    CHECK_JSON(json, "redactions", "0", "nothing replaced");
    session_string_free(json);
    text = read_file(out, &len);
    CHECK(text && strstr(text, token), "the file holds the token");
    free(text);

    SECTION("rule options while nothing is redacted are refused");
    path_in(out, sizeof out, "secret-refused.jsonl");
    st = session_export("pi", src, out, "{\"redact\":false,\"allow\":[\"x\"]}", &json);
    CHECK_ERROR(st, SESSION_ERR_INVALID_ARGUMENT, json, "allow without redaction");
    session_string_free(json);
    CHECK(!file_exists(out), "nothing written");
}

int main(void)
{
    make_tmpdir(g_dir, sizeof g_dir, "export");
    exports_to_each_agent_with_a_report();
    refusals_write_nothing();
    redacts_secrets_by_default_and_keeps_them_when_asked();
    remove_tmpdir(g_dir);
    check_done("test_export");
    return 0;
}

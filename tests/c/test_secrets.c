/*
 * test_secrets.c -- session_secrets and session_redact through the C ABI (issue 36): a
 * key planted in a tool result is found (rule, entry, pointer, fingerprint, never the
 * key), redacted into a new file with every other byte unchanged, then in place; an
 * invalid rule is refused by name; NULL arguments.
 */
#include "check.h"

/* Built at run time, so that no source file holds a string that looks like a token. */
static void fake_github_token(char *out)
{
    static const char alnum[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    unsigned state = 12345u;
    int i;
    memcpy(out, "ghp_", 4);
    for (i = 0; i < 36; i++) {
        state = state * 1103515245u + 12345u;
        out[4 + i] = alnum[(state >> 16) % 62];
    }
    out[40] = '\0';
}

int main(void)
{
    char dir[256], src[512], dst[512], token[41], line[1024], want[1024], *out = NULL;
    char *text, *after;
    size_t len, after_len;
    const char *head = "{\"id\":\"u-1\",\"parentId\":null,\"timestamp\":1,\"type\":\"message\","
                       "\"message\":{\"role\":\"user\",\"content\":\"hello\"}}\n";
    fake_github_token(token);
    make_tmpdir(dir, sizeof dir, "secrets");
    snprintf(src, sizeof src, "%s/s.jsonl", dir);
    snprintf(dst, sizeof dst, "%s/redacted.jsonl", dir);
    snprintf(line, sizeof line,
             "%s{\"id\":\"r-1\",\"parentId\":\"u-1\",\"timestamp\":2,\"type\":\"message\","
             "\"message\":{\"role\":\"toolResult\",\"toolCallId\":\"c1\",\"toolName\":\"bash\","
             "\"content\":[{\"type\":\"text\",\"text\":\"GITHUB_TOKEN=%s\\n\"}],\"isError\":false}}\n",
             head, token);
    write_file(src, line, strlen(line));

    SECTION("the scan names the rule and the place, never the key");
    CHECK_STATUS(session_secrets(src, NULL, &out), SESSION_OK, out, "scan");
    CHECK_JSON(out, "sessions", "1", "one session");
    CHECK_JSON_LENGTH(out, "findings", 1, "one finding");
    CHECK_JSON(out, "findings.0.entryId", "\"r-1\"", "the entry");
    CHECK_JSON(out, "findings.0.pointer", "\"/message/content/0/text\"", "the string");
    CHECK_JSON(out, "findings.0.rule", "\"github-token\"", "the rule");
    CHECK(strlen(json_show(json_get(out, "findings.0.fingerprint"))) == 14 &&
              json_show(json_get(out, "findings.0.fingerprint"))[0] == '"',
          "a 12-digit fingerprint: %s", out);
    CHECK(strstr(out, token) == NULL, "the key is not in the result");
    session_string_free(out);
    CHECK_STATUS(session_secrets(dir, NULL, &out), SESSION_OK, out, "scan the folder");
    CHECK_JSON(out, "findings.0.path", "\"s.jsonl\"", "the name in the folder");
    session_string_free(out);

    SECTION("redact into a new file: only the key's bytes change");
    CHECK_STATUS(session_redact(src, dst, NULL, &out), SESSION_OK, out, "redact");
    CHECK_JSON(out, "redactions", "1", "one redaction");
    CHECK(strstr(out, token) == NULL, "the key is not in the report");
    session_string_free(out);
    after = read_file(dst, &after_len);
    snprintf(want, sizeof want,
             "%s{\"id\":\"r-1\",\"parentId\":\"u-1\",\"timestamp\":2,\"type\":\"message\","
             "\"message\":{\"role\":\"toolResult\",\"toolCallId\":\"c1\",\"toolName\":\"bash\","
             "\"content\":[{\"type\":\"text\",\"text\":\"GITHUB_TOKEN=[REDACTED:github-token]\\n\"}],"
             "\"isError\":false}}\n",
             head);
    CHECK(after_len == strlen(want) && memcmp(after, want, after_len) == 0, "redacted: %s", show(after));
    free(after);
    CHECK_ERROR(session_redact(src, dst, NULL, &out), SESSION_ERR_IO, out, "dst exists");
    CHECK(strstr(out, token) == NULL, "the error holds no key");
    session_string_free(out);

    SECTION("in place, under the writer's lock");
    CHECK_ERROR(session_redact(src, NULL, NULL, &out), SESSION_ERR_INVALID_ARGUMENT, out,
                "no dst without inPlace");
    CHECK_JSON(out, "error.argument", "\"dst_path\"", "names dst_path");
    session_string_free(out);
    CHECK_STATUS(session_redact(src, NULL, "{\"inPlace\":true}", &out), SESSION_OK, out, "in place");
    CHECK_JSON(out, "redactions", "1", "one redaction");
    session_string_free(out);
    text = read_file(src, &len);
    CHECK(len == strlen(want) && memcmp(text, want, len) == 0, "rewritten: %s", show(text));
    free(text);

    SECTION("rules: user rules, an allow-list, an invalid rule named without its pattern");
    CHECK_STATUS(session_secrets(src, "{\"rules\":[{\"name\":\"hello\",\"pattern\":\"hel+o\"}]}", &out),
                 SESSION_OK, out, "a user rule");
    CHECK_JSON(out, "findings.0.rule", "\"hello\"", "found by the user's rule");
    session_string_free(out);
    CHECK_ERROR(session_secrets(src, "{\"extraRules\":[{\"name\":\"mine\",\"pattern\":\"(hunter2\"}]}", &out),
                SESSION_ERR_INVALID_ARGUMENT, out, "invalid rule");
    CHECK_JSON(out, "error.argument", "\"options_json\"", "names options_json");
    CHECK(strstr(out, "mine") != NULL && strstr(out, "hunter2") == NULL, "names the rule only: %s", out);
    session_string_free(out);

    SECTION("NULL arguments");
    CHECK_ERROR(session_secrets(NULL, NULL, &out), SESSION_ERR_INVALID_ARGUMENT, out, "NULL path");
    CHECK_JSON(out, "error.argument", "\"path\"", "names path");
    session_string_free(out);
    CHECK_ERROR(session_redact(NULL, dst, NULL, &out), SESSION_ERR_INVALID_ARGUMENT, out, "NULL src");
    CHECK_JSON(out, "error.argument", "\"src_path\"", "names src_path");
    session_string_free(out);
    CHECK_STATUS(session_secrets(src, NULL, NULL), SESSION_OK, NULL, "out_json NULL");

    remove_tmpdir(dir);
    check_done("test_secrets");
    return 0;
}

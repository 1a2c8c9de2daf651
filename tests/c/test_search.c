/*
 * test_search.c -- session_search through the C ABI (issue 25): a folder with the
 * chapter's tree; CJK inside words, roles, the latest path and a side branch, an
 * appended entry found by the next search with only its bytes read, a deleted index
 * rebuilt, an invalid query, NULL arguments.
 */
#include "check.h"

#define ZEBRA                                                                              \
    "{\"id\":\"a-zebra\",\"parentId\":\"meta-cwd\",\"timestamp\":1733000009000,"          \
    "\"type\":\"message\",\"message\":{\"role\":\"assistant\",\"content\":"               \
    "[{\"type\":\"text\",\"text\":\"a zebra crossed\"}]}}\n"

int main(void)
{
    char dir[256], path[512], *out = NULL, *text = tree_jsonl(6);
    FILE *f;
    make_tmpdir(dir, sizeof dir, "search");
    snprintf(path, sizeof path, "%s/chapter.jsonl", dir);
    write_file(path, text, strlen(text));
    free(text);

    SECTION("CJK inside words, the latest path");
    CHECK_STATUS(session_search(dir, "{\"query\":\"项目名是\"}", &out), SESSION_OK, out, "search");
    CHECK_JSON_LENGTH(out, "hits", 1, "one hit");
    CHECK_JSON(out, "hits.0.path", "\"chapter.jsonl\"", "path relative to dir");
    CHECK_JSON(out, "hits.0.entryId", "\"a-final\"", "the entry");
    CHECK_JSON(out, "hits.0.seq", "3", "its seq");
    CHECK_JSON(out, "hits.0.role", "\"assistant\"", "its role");
    CHECK_JSON(out, "hits.0.onLatestPath", "true", "on the latest path");
    CHECK_JSON(out, "sessions", "1", "one session");
    CHECK_JSON(out, "entries", "6", "six entries");
    session_string_free(out);

    SECTION("a side branch, latestPathOnly, roles");
    CHECK_STATUS(session_search(dir, "{\"query\":\"无法读取\"}", &out), SESSION_OK, out, "side");
    CHECK_JSON(out, "hits.0.entryId", "\"a-alt\"", "the side branch's entry");
    CHECK_JSON(out, "hits.0.onLatestPath", "false", "not on the latest path");
    session_string_free(out);
    CHECK_STATUS(session_search(dir, "{\"query\":\"无法读取\",\"latestPathOnly\":true}", &out),
                 SESSION_OK, out, "latest only");
    CHECK_JSON_LENGTH(out, "hits", 0, "filtered out");
    session_string_free(out);
    CHECK_STATUS(session_search(dir, "{\"query\":\"tiny-pi\",\"roles\":[\"toolResult\"]}", &out),
                 SESSION_OK, out, "roles");
    CHECK_JSON_LENGTH(out, "hits", 1, "only the tool result");
    CHECK_JSON(out, "hits.0.entryId", "\"r-read\"", "r-read");
    session_string_free(out);

    SECTION("an append is found, reading only its bytes");
    f = fopen(path, "ab");
    CHECK(f && fputs(ZEBRA, f) >= 0 && fclose(f) == 0, "append");
    CHECK_STATUS(session_search(dir, "{\"query\":\"zebra\"}", &out), SESSION_OK, out, "after append");
    CHECK_JSON(out, "hits.0.entryId", "\"a-zebra\"", "found");
    {
        char want[32];
        snprintf(want, sizeof want, "%zu", strlen(ZEBRA));
        CHECK_JSON(out, "bytesRead", want, "only the appended line was read");
    }
    session_string_free(out);

    SECTION("a deleted index is rebuilt");
    snprintf(path, sizeof path, "%s/.session-search.db", dir);
    CHECK(file_exists(path), "the sidecar exists");
    CHECK(unlink(path) == 0, "delete the sidecar");
    CHECK_STATUS(session_search(dir, "{\"query\":\"zebra\"}", &out), SESSION_OK, out, "rebuilt");
    CHECK_JSON(out, "hits.0.entryId", "\"a-zebra\"", "still found");
    session_string_free(out);

    SECTION("invalid queries and arguments");
    CHECK_ERROR(session_search(dir, "{\"query\":\"x\",\"limit\":0}", &out), SESSION_ERR_INVALID_ARGUMENT,
                out, "limit 0");
    CHECK_JSON(out, "error.argument", "\"query_json\"", "names query_json");
    session_string_free(out);
    CHECK_ERROR(session_search(dir, "{\"query\":\"\"}", &out), SESSION_ERR_INVALID_ARGUMENT, out, "empty");
    session_string_free(out);
    CHECK_ERROR(session_search(NULL, "{\"query\":\"x\"}", &out), SESSION_ERR_INVALID_ARGUMENT, out, "NULL dir");
    CHECK_JSON(out, "error.argument", "\"dir\"", "names dir");
    session_string_free(out);
    CHECK_ERROR(session_search(dir, NULL, &out), SESSION_ERR_INVALID_ARGUMENT, out, "NULL query");
    session_string_free(out);
    CHECK_STATUS(session_search(dir, "{\"query\":\"x\"}", NULL), SESSION_OK, NULL, "out_json NULL");

    remove_tmpdir(dir);
    check_done("test_search");
    return 0;
}

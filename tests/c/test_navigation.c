/*
 * test_navigation.c -- docs/contract.md §8 through the C ABI: children, roots, leaves, latest
 * leaf, tree pages, labels on the chapter's tree (memory and JSONL stores), their
 * errors and NULL arguments, and session_list_sessions on a folder.
 */
#include "check.h"

#define LABEL_ALT                                                                          \
    "{\"id\":\"l-1\",\"parentId\":\"meta-cwd\",\"timestamp\":1733000006000,"              \
    "\"type\":\"metadata\",\"key\":\"session.label\","                                     \
    "\"value\":{\"targetId\":\"a-alt\",\"label\":\"other way\"}}"

static void check_queries(SessionStore *store, const char *who)
{
    char *out = NULL;

    CHECK_STATUS(session_store_children(store, "u-1", &out), SESSION_OK, out, "%s: children", who);
    CHECK_IDS(out, "a-read,a-alt", "%s: children(u-1) in commit order (§10)", who);
    CHECK_JSON(out, "0.seq", "1", "%s: a-read is seq 1", who);
    CHECK_JSON(out, "0.depth", "1", "%s: a-read is at depth 1", who);
    CHECK_JSON(out, "0.toolCalls", "1", "%s: a-read holds one tool call", who);
    CHECK_JSON(out, "0.childCount", "1", "%s: a-read has one child", who);
    CHECK_JSON(out, "1.childCount", "0", "%s: a-alt is a leaf", who);
    CHECK_JSON(out, "1.label", "\"other way\"", "%s: a-alt carries its label", who);
    CHECK(json_get(out, "0.message").p == NULL, "%s: a node never carries the message body", who);
    session_string_free(out);

    CHECK_STATUS(session_store_roots(store, &out), SESSION_OK, out, "%s: roots", who);
    CHECK_IDS(out, "u-1", "%s: one root", who);
    session_string_free(out);

    CHECK_STATUS(session_store_leaves(store, &out), SESSION_OK, out, "%s: leaves", who);
    CHECK_IDS_AT(out, "leaves", "a-alt,l-1", "%s: leaves in commit order", who);
    CHECK_JSON(out, "latestBySeq", "\"l-1\"", "%s: latest by seq", who);
    CHECK_JSON(out, "latestByTimestamp", "\"l-1\"", "%s: latest by timestamp", who);
    session_string_free(out);

    CHECK_STATUS(session_store_latest_leaf(store, &out), SESSION_OK, out, "%s: latest_leaf", who);
    CHECK_JSON(out, "id", "\"l-1\"", "%s: the last committed entry", who);
    CHECK_JSON(out, "key", "\"session.label\"", "%s: a metadata node has its key", who);
    CHECK_JSON(out, "depth", "5", "%s: its depth", who);
    session_string_free(out);

    CHECK_STATUS(session_store_tree(store, "{\"limit\":4,\"leaf\":\"a-alt\",\"previewChars\":4}", &out),
                 SESSION_OK, out, "%s: tree page 1", who);
    CHECK_IDS_AT(out, "nodes", "u-1,a-read,r-read,a-final", "%s: first page in commit order", who);
    CHECK_JSON(out, "count", "7", "%s: count is every entry", who);
    CHECK_JSON(out, "nextAfterSeq", "3", "%s: next page after seq 3", who);
    CHECK_JSON(out, "nodes.0.onPath", "true", "%s: u-1 is on a-alt's path", who);
    CHECK(json_get(out, "nodes.1.onPath").p == NULL, "%s: a-read is not on a-alt's path", who);
    CHECK_JSON(out, "nodes.0.preview", "\"读取 R\"", "%s: preview cut on characters", who);
    CHECK_JSON(out, "nodes.2.preview", "\"# ti\"", "%s: tool result preview", who);
    session_string_free(out);

    CHECK_STATUS(session_store_tree(store, "{\"afterSeq\":3,\"limit\":4,\"leaf\":\"a-alt\",\"previewChars\":20}", &out),
                 SESSION_OK, out, "%s: tree page 2", who);
    CHECK_IDS_AT(out, "nodes", "a-alt,meta-cwd,l-1", "%s: the rest", who);
    CHECK_JSON(out, "nextAfterSeq", "null", "%s: nothing remains", who);
    CHECK_JSON(out, "nodes.0.onPath", "true", "%s: the leaf itself is on its path", who);
    CHECK_JSON(out, "nodes.0.preview", "\"我无法读取该文件\"", "%s: preview shorter than the limit", who);
    session_string_free(out);

    CHECK_STATUS(session_store_tree(store, NULL, &out), SESSION_OK, out, "%s: tree with NULL options", who);
    CHECK_JSON_LENGTH(out, "nodes", 7, "%s: no limit by default", who);
    session_string_free(out);

    CHECK_STATUS(session_store_labels(store, &out), SESSION_OK, out, "%s: labels", who);
    CHECK_JSON(out, "", "[{\"targetId\":\"a-alt\",\"label\":\"other way\",\"entryId\":\"l-1\",\"seq\":6}]",
               "%s: one label", who);
    session_string_free(out);

    /* Errors. */
    CHECK_ERROR(session_store_children(store, "nope", &out), SESSION_ERR_UNKNOWN_LEAF, out, "%s: unknown id", who);
    CHECK_JSON(out, "error.id", "\"nope\"", "%s: the error names the id", who);
    session_string_free(out);
    CHECK_ERROR(session_store_tree(store, "{\"leaf\":\"nope\"}", &out), SESSION_ERR_UNKNOWN_LEAF, out,
                "%s: unknown tree leaf", who);
    session_string_free(out);
    CHECK_ERROR(session_store_tree(store, "{\"afterSeq\":-1}", &out), SESSION_ERR_INVALID_ARGUMENT, out,
                "%s: negative afterSeq", who);
    session_string_free(out);
    CHECK_ERROR(session_store_tree(store, "{\"limit\":2.5}", &out), SESSION_ERR_INVALID_ARGUMENT, out,
                "%s: non-integer limit", who);
    CHECK_JSON(out, "error.argument", "\"options_json\"", "%s: names options_json", who);
    session_string_free(out);
    CHECK_STATUS(session_store_children(store, "u-1", NULL), SESSION_OK, NULL, "%s: out_json may be NULL", who);
}

static void check_null_arguments(SessionStore *store)
{
    char *out = NULL;
    CHECK_ERROR(session_store_children(NULL, "u-1", &out), SESSION_ERR_INVALID_ARGUMENT, out, "children(NULL store)");
    session_string_free(out);
    CHECK_ERROR(session_store_children(store, NULL, &out), SESSION_ERR_INVALID_ARGUMENT, out, "children(NULL id)");
    CHECK_JSON(out, "error.argument", "\"id\"", "names id");
    session_string_free(out);
    CHECK_ERROR(session_store_children(store, "\xf0\x9f", &out), SESSION_ERR_INVALID_ARGUMENT, out, "non-UTF-8 id");
    session_string_free(out);
    CHECK_ERROR(session_store_roots(NULL, &out), SESSION_ERR_INVALID_ARGUMENT, out, "roots(NULL)");
    session_string_free(out);
    CHECK_ERROR(session_store_leaves(NULL, &out), SESSION_ERR_INVALID_ARGUMENT, out, "leaves(NULL)");
    session_string_free(out);
    CHECK_ERROR(session_store_latest_leaf(NULL, &out), SESSION_ERR_INVALID_ARGUMENT, out, "latest_leaf(NULL)");
    session_string_free(out);
    CHECK_ERROR(session_store_tree(NULL, NULL, &out), SESSION_ERR_INVALID_ARGUMENT, out, "tree(NULL)");
    session_string_free(out);
    CHECK_ERROR(session_store_labels(NULL, &out), SESSION_ERR_INVALID_ARGUMENT, out, "labels(NULL)");
    session_string_free(out);
    CHECK_ERROR(session_list_sessions(NULL, NULL, &out), SESSION_ERR_INVALID_ARGUMENT, out, "list(NULL dir)");
    CHECK_JSON(out, "error.argument", "\"dir\"", "names dir");
    session_string_free(out);
    CHECK_STATUS(session_store_roots(NULL, NULL), SESSION_ERR_INVALID_ARGUMENT, NULL, "roots(NULL, NULL)");
}

static void check_empty_store(void)
{
    SessionStore *store = NULL;
    char *out = NULL;
    CHECK_STATUS(session_memory_store_open(&store), SESSION_OK, NULL, "open empty");
    CHECK_STATUS(session_store_latest_leaf(store, &out), SESSION_OK, out, "latest_leaf of empty");
    CHECK_JSON(out, "", "null", "an empty store has no latest leaf");
    session_string_free(out);
    CHECK_STATUS(session_store_leaves(store, &out), SESSION_OK, out, "leaves of empty");
    CHECK_JSON(out, "", "{\"leaves\":[],\"latestBySeq\":null,\"latestByTimestamp\":null}", "no leaves");
    session_string_free(out);
    session_store_close(store);
}

static void check_list_sessions(void)
{
    char dir[256], path[512], *out = NULL, *text = tree_jsonl(6);
    make_tmpdir(dir, sizeof dir, "nav-list");
    snprintf(path, sizeof path, "%s/chapter.jsonl", dir);
    write_file(path, text, strlen(text));
    snprintf(path, sizeof path, "%s/notes.txt", dir);
    write_file(path, "not a session\n", 14);
    snprintf(path, sizeof path, "%s/torn.jsonl", dir);
    write_file(path, "{\"id\":\"cut", 10);

    CHECK_STATUS(session_list_sessions(dir, "{\"sort\":\"path\"}", &out), SESSION_OK, out, "list_sessions");
    CHECK_JSON_LENGTH(out, "sessions", 2, "only *.jsonl files are sessions");
    snprintf(path, sizeof path, "\"%s/chapter.jsonl\"", dir);
    CHECK_JSON(out, "sessions.0.path", path, "path is dir joined with the name");
    CHECK_JSON(out, "sessions.0.state", "\"ready\"", "a clean file is ready");
    CHECK_JSON(out, "sessions.0.entries", "6", "a small file is counted");
    CHECK_JSON(out, "sessions.0.latestLeafId", "\"meta-cwd\"", "latest leaf from the last line");
    CHECK_JSON(out, "sessions.0.latestTimestamp", "1733000005000", "its timestamp");
    CHECK_JSON(out, "sessions.0.firstUserText", "\"读取 README.md，告诉我项目名\"", "first user text");
    CHECK_JSON(out, "sessions.1.state", "\"needs_repair\"", "a torn file needs repair");
    CHECK_JSON(out, "sessions.1.latestLeafId", "null", "and has no committed entry");
    session_string_free(out);

    CHECK_ERROR(session_list_sessions(dir, "{\"sort\":\"size\"}", &out), SESSION_ERR_INVALID_ARGUMENT, out,
                "unknown sort");
    session_string_free(out);
    snprintf(path, sizeof path, "%s/missing", dir);
    CHECK_ERROR(session_list_sessions(path, NULL, &out), SESSION_ERR_IO, out, "a missing folder is io");
    session_string_free(out);

    remove_tmpdir(dir);
    free(text);
}

int main(void)
{
    SessionStore *store = NULL;
    char dir[256], path[512], *out = NULL;
    int i;

    SECTION("memory store");
    CHECK_STATUS(session_memory_store_open(&store), SESSION_OK, NULL, "open memory");
    for (i = 0; i < 6; i++) CHECK_STATUS(session_store_append(store, tree_entry(i), NULL), SESSION_OK, NULL, "append %d", i);
    CHECK_STATUS(session_store_append(store, LABEL_ALT, NULL), SESSION_OK, NULL, "append label");
    check_queries(store, "memory");
    check_null_arguments(store);
    session_store_close(store);

    SECTION("JSONL store, reopened");
    make_tmpdir(dir, sizeof dir, "nav");
    snprintf(path, sizeof path, "%s/s.jsonl", dir);
    CHECK_STATUS(session_jsonl_store_open(path, &store, &out), SESSION_OK, out, "open file");
    session_string_free(out);
    for (i = 0; i < 6; i++) CHECK_STATUS(session_store_append(store, tree_entry(i), NULL), SESSION_OK, NULL, "append %d", i);
    CHECK_STATUS(session_store_append(store, LABEL_ALT, NULL), SESSION_OK, NULL, "append label");
    session_store_close(store);
    CHECK_STATUS(session_jsonl_store_open(path, &store, NULL), SESSION_OK, NULL, "reopen");
    check_queries(store, "reopened");
    session_store_close(store);
    remove_tmpdir(dir);

    SECTION("empty store");
    check_empty_store();

    SECTION("list_sessions");
    check_list_sessions();

    check_done("test_navigation");
    return 0;
}

/*
 * test_index.c -- the `index` option of session_jsonl_store_open_with through the real
 * library (issue 15): a writer leaves `<path>.idx` at close, `{"index":false}` and
 * readers never write one, an open that may use the index answers exactly as one that
 * may not (the open's report, store_read, path_to, tree, leaves, labels), a damaged or
 * truncated index falls back to the same answers, and an `index` that is not a boolean
 * is refused as an invalid argument.
 */
#include "check.h"

static char g_dir[256];

/* `<path>.idx` (static buffer). */
static const char *idx_of(const char *path)
{
    static char idx[600];
    snprintf(idx, sizeof idx, "%s.idx", path);
    return idx;
}

static const char *path_in_dir(const char *name)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    return path;
}

/* The offsets of the index to flip and to cut at: the first 512 bytes, every 61st byte
 * after them, and the bytes around every 4 KiB (an index has pages of that size; any
 * layout must fall back wherever it is damaged, this only bounds the run time). */
static int damaged_here(size_t at)
{
    return at < 512 || at % 61 == 0 || at % 4096 == 0 || at % 4096 == 1 || at % 4096 == 4095;
}

/* Opens `path` with `options`, appends the chapter's six entries, closes. */
static void write_chapter(const char *path, const char *options)
{
    SessionStore *store = NULL;
    char *out = NULL;
    int i;
    SessionStatus st = session_jsonl_store_open_with(path, options, &store, &out);
    CHECK_STATUS(st, SESSION_OK, out, "a writer opens %s with %s", path, show(options));
    session_string_free(out);
    for (i = 0; i < 6; i++) {
        st = session_store_append(store, tree_entry(i), &out);
        CHECK_STATUS(st, SESSION_OK, out, "append %s", tree_id(i));
        session_string_free(out);
    }
    session_store_close(store);
}

/* One call's output text, or "status N" when it fails (malloc). */
static char *answer(SessionStatus st, char *out)
{
    char *text = (char *)malloc((out ? strlen(out) : 0) + 64);
    CHECK(text != NULL, "malloc");
    snprintf(text, (out ? strlen(out) : 0) + 64, "%s %s", session_status_name(st), show(out));
    session_string_free(out);
    return text;
}

/* Appends `more` and a newline to the malloc'd `*all`. */
static void add(char **all, char *more)
{
    size_t a = strlen(*all), m = strlen(more);
    *all = (char *)realloc(*all, a + m + 2);
    CHECK(*all != NULL, "realloc");
    memcpy(*all + a, more, m);
    (*all)[a + m] = '\n';
    (*all)[a + m + 1] = '\0';
    free(more);
}

/* Everything a read-only open of `path` tells, with or without the index (malloc). */
static char *everything(const char *path, int index)
{
    SessionStore *store = NULL;
    char *out = NULL, *all = (char *)calloc(1, 1);
    const char *options = index ? "{\"readOnly\":true}" : "{\"readOnly\":true,\"index\":false}";
    SessionStatus st = session_jsonl_store_open_with(path, options, &store, &out);
    CHECK(all != NULL, "calloc");
    add(&all, answer(st, out));
    if (st != SESSION_OK) return all;
    out = NULL;
    st = session_store_read(store, &out);
    add(&all, answer(st, out));
    out = NULL;
    st = session_store_path_to(store, "meta-cwd", &out);
    add(&all, answer(st, out));
    out = NULL;
    st = session_store_path_to(store, "a-alt", &out);
    add(&all, answer(st, out));
    out = NULL;
    st = session_store_tree(store, NULL, &out);
    add(&all, answer(st, out));
    out = NULL;
    st = session_store_leaves(store, &out);
    add(&all, answer(st, out));
    out = NULL;
    st = session_store_labels(store, &out);
    add(&all, answer(st, out));
    session_store_close(store);
    return all;
}

/* The open with the index answers exactly as the open without it. */
static void check_same(const char *path, const char *what)
{
    char *with = everything(path, 1), *without = everything(path, 0);
    if (strcmp(with, without) != 0) {
        fprintf(stderr, "with the index:\n%s\nwithout it:\n%s\n", with, without);
    }
    CHECK(strcmp(with, without) == 0, "%s: the same answers with and without the index", what);
    free(with);
    free(without);
}

int main(void)
{
    const char *path;
    char *out = NULL, *idx, *bad;
    size_t idx_len, i, n;
    SessionStore *store = NULL;
    SessionStatus st;

    make_tmpdir(g_dir, sizeof g_dir, "index");

    SECTION("a writer writes <path>.idx at close; its name never ends in .jsonl");
    path = path_in_dir("default.jsonl");
    write_chapter(path, NULL);
    CHECK(file_exists(idx_of(path)), "the default writer left %s", idx_of(path));
    CHECK(strcmp(idx_of(path) + strlen(idx_of(path)) - 6, ".jsonl") != 0, "the index name ends in .idx");
    check_same(path, "a writer's own index");
    {
        char *with = everything(path, 1);
        CHECK(strstr(with, "\"state\":\"ready\"") != NULL && strstr(with, "\"meta-cwd\"") != NULL,
              "the open with the index reads every entry: %s", with);
        free(with);
    }

    SECTION("{\"index\":false} writes none, and neither does a reader");
    path = path_in_dir("off.jsonl");
    write_chapter(path, "{\"index\":false}");
    CHECK(!file_exists(idx_of(path)), "index:false left %s", idx_of(path));
    st = session_jsonl_store_open_with(path, "{\"readOnly\":true}", &store, &out);
    CHECK_STATUS(st, SESSION_OK, out, "a reader opens");
    session_string_free(out);
    out = NULL;
    st = session_store_read(store, &out);
    CHECK_STATUS(st, SESSION_OK, out, "a reader reads");
    session_string_free(out);
    out = NULL;
    session_store_close(store);
    store = NULL;
    CHECK(!file_exists(idx_of(path)), "a readOnly open left %s", idx_of(path));
    check_same(path, "no index at all");

    SECTION("a damaged, truncated or extended index falls back to the same answers");
    path = path_in_dir("default.jsonl");
    idx = read_file(idx_of(path), &idx_len);
    CHECK(idx_len > 0, "the index is not empty");
    bad = (char *)malloc(idx_len + 64);
    CHECK(bad != NULL, "malloc");
    for (i = 0; i < idx_len; i++) {
        if (!damaged_here(i)) continue;
        memcpy(bad, idx, idx_len);
        bad[i] = (char)(bad[i] ^ 0x5a);
        write_file(idx_of(path), bad, idx_len);
        check_same(path, "one byte of the index flipped");
    }
    for (i = 0; i < idx_len; i++) {
        if (!damaged_here(i)) continue;
        write_file(idx_of(path), idx, i);
        check_same(path, "the index cut short");
    }
    memcpy(bad, idx, idx_len);
    memset(bad + idx_len, 0, 64);
    write_file(idx_of(path), bad, idx_len + 64);
    check_same(path, "64 zero bytes after the index");
    for (i = 0, n = 0; i < idx_len; i++) n += (size_t)damaged_here(i);
    printf("   %zu-byte index: %zu flipped bytes and %zu cuts, same answers\n", idx_len, n, n);

    SECTION("the index of another file falls back; a torn tail after the index is replayed");
    write_file(idx_of(path), idx, idx_len);
    {
        const char *other = path_in_dir("other.jsonl");
        size_t other_len;
        char *theirs;
        char copy[512];
        snprintf(copy, sizeof copy, "%s", other);
        write_chapter(copy, NULL);
        theirs = read_file(idx_of(copy), &other_len);
        path = path_in_dir("default.jsonl");
        write_file(idx_of(path), theirs, other_len);
        check_same(path, "another file's index (the same entries, another inode)");
        free(theirs);
    }
    path = path_in_dir("default.jsonl");
    write_file(idx_of(path), idx, idx_len);
    {
        size_t len;
        char *bytes = read_file(path, &len), *longer = (char *)malloc(len + 16);
        CHECK(longer != NULL, "malloc");
        memcpy(longer, bytes, len);
        memcpy(longer + len, "{\"id\":\"torn", 11);
        write_file(path, longer, len + 11);
        check_same(path, "a torn tail after the covered prefix");
        {
            char *with = everything(path, 1);
            CHECK(strstr(with, "\"needs_repair\"") != NULL, "the torn tail needs repair: %s", with);
            free(with);
        }
        free(bytes);
        free(longer);
    }
    free(bad);
    free(idx);

    SECTION("\"index\" takes a boolean only");
    path = path_in_dir("typed.jsonl");
    st = session_jsonl_store_open_with(path, "{\"index\":\"yes\"}", &store, &out);
    CHECK_ERROR(st, SESSION_ERR_INVALID_ARGUMENT, out, "index:\"yes\" is refused");
    session_string_free(out);
    out = NULL;
    CHECK(store == NULL, "no store on a refused option");
    st = session_jsonl_store_open_with(path, "{\"index\":1}", &store, &out);
    CHECK_ERROR(st, SESSION_ERR_INVALID_ARGUMENT, out, "index:1 is refused");
    session_string_free(out);
    out = NULL;
    CHECK(!file_exists(path), "a refused open creates no file");

    remove_tmpdir(g_dir);
    check_done("test_index");
    return 0;
}

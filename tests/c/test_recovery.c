/*
 * test_recovery.c -- what a file on disk may look like after a crash (docs/contract.md §3):
 *   torn tail (no final newline) -> needs_repair, committed prefix readable, appends
 *   refused without touching the file; whitespace-only tail -> ready; NUL tail ->
 *   needs_repair; a committed bad line -> corrupt_line with its line (open and
 *   recover_jsonl agree); open-time replay errors (duplicate id, missing parent) with line.
 */
#include "check.h"

static char g_dir[256];
static int g_file_no;

/* Writes `bytes` to a fresh file in the temp dir; returns its path (static buffer). */
static const char *put(const char *bytes, size_t len)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/f%02d.jsonl", g_dir, ++g_file_no);
    write_file(path, bytes, len);
    return path;
}

/* A JSONL text of the first `count` tree entries followed by `tail` (tail_len bytes). */
static char *tree_with_tail(int count, const char *tail, size_t tail_len, size_t *len)
{
    char *head = tree_jsonl(count), *s;
    size_t n = strlen(head);
    s = (char *)malloc(n + tail_len + 1);
    CHECK(s != NULL, "malloc");
    memcpy(s, head, n);
    memcpy(s + n, tail, tail_len);
    s[n + tail_len] = '\0';
    *len = n + tail_len;
    free(head);
    return s;
}

/*
 * Opens a file of 3 committed tree entries followed by `tail`, which must yield
 * needs_repair with the warning on line `line`; checks reads and refused appends.
 */
static void torn(const char *what, const char *tail, size_t tail_len, int line)
{
    size_t len, len_after;
    char *bytes = tree_with_tail(3, tail, tail_len, &len), *after, *out = NULL, want[128];
    const char *path = put(bytes, len);
    SessionStore *store = NULL;
    SessionStatus st;

    snprintf(want, sizeof want, "[{\"code\":\"unterminated_tail\",\"line\":%d}]", line);

    st = session_recover_jsonl((const uint8_t *)bytes, len, &out);
    CHECK_STATUS(st, SESSION_OK, out, "%s: recover_jsonl succeeds", what);
    CHECK_IDS_AT(out, "entries", "u-1,a-read,r-read", "%s: recover_jsonl returns the committed prefix", what);
    CHECK_JSON(out, "warnings", want, "%s: recover_jsonl warns unterminated_tail", what);
    session_string_free(out);

    st = session_jsonl_store_open(path, &store, &out);
    CHECK_STATUS(st, SESSION_OK, out, "%s: open succeeds", what);
    CHECK_JSON(out, "state", "\"needs_repair\"", "%s: open reports needs_repair", what);
    CHECK_JSON(out, "warnings", want, "%s: open warns unterminated_tail on line %d", what, line);
    session_string_free(out);
    CHECK(session_store_state(store) == SESSION_STATE_NEEDS_REPAIR, "%s: session_store_state == NEEDS_REPAIR", what);

    st = session_store_entries(store, &out);
    CHECK_STATUS(st, SESSION_OK, out, "%s: entries work on a needs_repair store", what);
    CHECK_IDS(out, "u-1,a-read,r-read", "%s: entries are the committed prefix", what);
    session_string_free(out);
    st = session_store_read(store, &out);
    CHECK_STATUS(st, SESSION_OK, out, "%s: store_read works on a needs_repair store", what);
    CHECK_JSON(out, "state", "\"needs_repair\"", "%s: store_read state", what);
    CHECK_JSON_LENGTH(out, "entries", 3, "%s: store_read entries", what);
    CHECK_JSON(out, "warnings", want, "%s: store_read warnings", what);
    session_string_free(out);
    st = session_store_path_to(store, "r-read", &out);
    CHECK_STATUS(st, SESSION_OK, out, "%s: path_to on the committed prefix", what);
    CHECK_IDS(out, "u-1,a-read,r-read", "%s: path_to(r-read)", what);
    session_string_free(out);
    st = session_store_messages_on_path(store, "r-read", &out);
    CHECK_STATUS(st, SESSION_OK, out, "%s: messages_on_path on the committed prefix", what);
    CHECK_JSON_LENGTH(out, "", 3, "%s: messages_on_path(r-read)", what);
    session_string_free(out);

    st = session_store_append(store, tree_entry(3), &out);
    CHECK_ERROR(st, SESSION_ERR_NEEDS_REPAIR, out, "%s: append is refused", what);
    CHECK_JSON(out, "error.warnings", want, "%s: needs_repair error carries the warnings", what);
    session_string_free(out);
    st = session_store_append(store, tree_entry(3), NULL);
    CHECK_STATUS(st, SESSION_ERR_NEEDS_REPAIR, NULL, "%s: append is refused again", what);
    CHECK(session_store_state(store) == SESSION_STATE_NEEDS_REPAIR, "%s: still NEEDS_REPAIR", what);
    session_store_close(store);

    after = read_file(path, &len_after);
    CHECK(len_after == len && memcmp(after, bytes, len) == 0, "%s: the file bytes are unchanged", what);
    free(after);
    free(bytes);
}

static void torn_tails(void)
{
    static const char nul_tail[] = {'\0', '\0', '\0', '\0'};
    const char *valid = tree_entry(3);

    SECTION("torn tail: last line without newline -> needs_repair");
    {
        const char *half = "{\"id\":\"a-final\",\"parentId\":\"r-r";
        torn("half a JSON line", half, strlen(half), 4);
    }
    torn("a complete JSON entry without newline", valid, strlen(valid), 4);
    torn("NUL bytes", nul_tail, sizeof nul_tail, 4);
    torn("one NUL byte", nul_tail, 1, 4);
    torn("a BOM", "\xef\xbb\xbf", 3, 4);
    torn("invalid UTF-8", "\xff\xfe", 2, 4);
    torn("text after blank lines", "\n \r\n\t\nxyz", 9, 7);
}

static void whitespace_tail(void)
{
    size_t len;
    char *bytes = tree_with_tail(3, " \t\r ", 4, &len), *out = NULL;
    const char *path = put(bytes, len);
    SessionStore *store = NULL;
    SessionStatus st;

    SECTION("whitespace-only tail -> ready, no warning");
    st = session_recover_jsonl((const uint8_t *)bytes, len, &out);
    CHECK_STATUS(st, SESSION_OK, out, "whitespace tail: recover_jsonl succeeds");
    CHECK_JSON_LENGTH(out, "entries", 3, "whitespace tail: three entries");
    CHECK_JSON(out, "warnings", "[]", "whitespace tail: no warning");
    session_string_free(out);

    st = session_jsonl_store_open(path, &store, &out);
    CHECK_STATUS(st, SESSION_OK, out, "whitespace tail: open succeeds");
    CHECK(strcmp(out, "{\"state\":\"ready\",\"warnings\":[]}") == 0, "whitespace tail: ready, no warnings (got %s)",
          out);
    session_string_free(out);
    CHECK(session_store_state(store) == SESSION_STATE_READY, "whitespace tail: state READY");
    st = session_store_append(store, tree_entry(3), &out);
    CHECK_STATUS(st, SESSION_OK, out, "whitespace tail: append works");
    CHECK_JSON(out, "seq", "3", "whitespace tail: seq 3");
    session_string_free(out);
    session_store_close(store);
    free(bytes);

    st = session_jsonl_store_open(path, &store, &out);
    CHECK_STATUS(st, SESSION_OK, out, "whitespace tail: reopen after the append");
    CHECK_JSON(out, "state", "\"ready\"", "whitespace tail: reopened ready");
    session_string_free(out);
    st = session_store_entries(store, &out);
    CHECK_STATUS(st, SESSION_OK, out, "whitespace tail: entries after reopen");
    CHECK_IDS(out, "u-1,a-read,r-read,a-final", "whitespace tail: the appended entry reads back");
    session_string_free(out);
    session_store_close(store);

    SECTION("blank committed lines are skipped but counted; empty file is ready");
    {
        const char *blank = "\n" "  \r\n";
        char *text = (char *)malloc(strlen(tree_entry(0)) + strlen(tree_entry(1)) + 16);
        strcpy(text, blank);
        strcat(text, tree_entry(0));
        strcat(text, "\n\t\n");
        strcat(text, tree_entry(1));
        strcat(text, "\r\n");
        path = put(text, strlen(text));
        st = session_jsonl_store_open(path, &store, &out);
        CHECK_STATUS(st, SESSION_OK, out, "blank lines: open succeeds");
        CHECK_JSON(out, "state", "\"ready\"", "blank lines: ready");
        session_string_free(out);
        st = session_store_append(store, tree_entry(2), &out);
        CHECK_STATUS(st, SESSION_OK, out, "blank lines: append");
        CHECK_JSON(out, "seq", "2", "blank lines: seq counts entries, not physical lines");
        session_string_free(out);
        session_store_close(store);
        free(text);
    }
    path = put("", 0);
    st = session_jsonl_store_open(path, &store, &out);
    CHECK_STATUS(st, SESSION_OK, out, "empty file opens");
    CHECK(strcmp(out, "{\"state\":\"ready\",\"warnings\":[]}") == 0, "empty file is ready");
    session_string_free(out);
    session_store_close(store);
}

/* open(path of bytes) must fail with `want` and error.line == line; file unchanged. */
static SessionStatus expect_open_error(const char *what, const char *bytes, size_t len, SessionStatus want, int line)
{
    const char *path = put(bytes, len);
    char *out = NULL, want_line[16], *after;
    size_t after_len;
    SessionStore *store = (SessionStore *)&g_file_no; /* not NULL: open must reset it */
    SessionStatus st = session_jsonl_store_open(path, &store, &out);
    snprintf(want_line, sizeof want_line, "%d", line);
    CHECK_ERROR(st, want, out, "%s: open fails", what);
    CHECK_JSON(out, "error.line", want_line, "%s: the error names line %d", what, line);
    CHECK(store == NULL, "%s: *out_store is NULL after a failed open", what);
    session_string_free(out);
    after = read_file(path, &after_len);
    CHECK(after_len == len && memcmp(after, bytes, len) == 0, "%s: the file is unchanged", what);
    free(after);
    return st;
}

static void corrupt_lines(void)
{
    char *text, *out = NULL;
    size_t n;
    SessionStatus st;

    SECTION("corrupt committed line 2 of 3 -> corrupt_line, line 2 (open and recover_jsonl agree)");
    n = strlen(tree_entry(0)) + strlen(tree_entry(1)) + 16;
    text = (char *)malloc(n);
    snprintf(text, n, "%s\n{\"id\":\n%s\n", tree_entry(0), tree_entry(1));
    expect_open_error("bad line 2", text, strlen(text), SESSION_ERR_CORRUPT_LINE, 2);
    st = session_recover_jsonl((const uint8_t *)text, strlen(text), &out);
    CHECK_ERROR(st, SESSION_ERR_CORRUPT_LINE, out, "recover_jsonl on the same bytes");
    CHECK_JSON(out, "error.line", "2", "recover_jsonl names line 2");
    CHECK_JSON(out, "error.reason", "\"invalid_json\"", "recover_jsonl reason invalid_json");
    session_string_free(out);
    free(text);

    SECTION("NUL bytes / invalid UTF-8 / BOM inside a committed line -> corrupt_line");
    {
        static const char nul_line[] = "\n\0\0\0\n";
        static const char bad_utf8[] = "\n\n{\"id\":\"\xff\"}\n";
        static const char bom[] = "\xef\xbb\xbf\n";
        expect_open_error("NUL line", nul_line, sizeof nul_line - 1, SESSION_ERR_CORRUPT_LINE, 2);
        expect_open_error("invalid UTF-8 line", bad_utf8, sizeof bad_utf8 - 1, SESSION_ERR_CORRUPT_LINE, 3);
        expect_open_error("BOM line", bom, sizeof bom - 1, SESSION_ERR_CORRUPT_LINE, 1);
    }
    n = strlen(tree_entry(0)) + 64;
    text = (char *)malloc(n);
    snprintf(text, n, "%s\n{\"id\":\"x\",\"parentId\":null,\"timestamp\":1,\"type\":\"nope\"}\n", tree_entry(0));
    expect_open_error("invalid entry on line 2", text, strlen(text), SESSION_ERR_CORRUPT_LINE, 2);
    free(text);

    SECTION("open-time replay errors carry the line");
    text = tree_with_tail(2, "", 0, &n);
    text = (char *)realloc(text, n + strlen(tree_entry(0)) + 2);
    strcat(text, tree_entry(0));
    strcat(text, "\n");
    expect_open_error("duplicate id on line 3", text, strlen(text), SESSION_ERR_DUPLICATE_ID, 3);
    {
        const char *path = put(text, strlen(text));
        SessionStore *store = NULL;
        st = session_jsonl_store_open(path, &store, &out);
        CHECK_JSON(out, "error.id", "\"u-1\"", "duplicate id on open names the id");
        session_string_free(out);
    }
    free(text);

    n = strlen(tree_entry(0)) + strlen(tree_entry(2)) + 4;
    text = (char *)malloc(n);
    snprintf(text, n, "%s\n%s\n", tree_entry(0), tree_entry(2)); /* r-read's parent a-read is missing */
    expect_open_error("missing parent on line 2", text, strlen(text), SESSION_ERR_MISSING_PARENT, 2);
    {
        const char *path = put(text, strlen(text));
        SessionStore *store = NULL;
        st = session_jsonl_store_open(path, &store, &out);
        CHECK_JSON(out, "error.childId", "\"r-read\"", "missing parent on open names the child");
        CHECK_JSON(out, "error.parentId", "\"a-read\"", "missing parent on open names the parent");
        session_string_free(out);
    }
    free(text);

    n = strlen(tree_entry(0)) + strlen(tree_entry(1)) + 4;
    text = (char *)malloc(n);
    snprintf(text, n, "%s\n%s\n", tree_entry(1), tree_entry(0)); /* child before its parent */
    expect_open_error("parent on a later line", text, strlen(text), SESSION_ERR_MISSING_PARENT, 1);
    free(text);
}

int main(void)
{
    make_tmpdir(g_dir, sizeof g_dir, "recovery");
    torn_tails();
    whitespace_tail();
    corrupt_lines();
    remove_tmpdir(g_dir);
    check_done("test_recovery");
    return 0;
}

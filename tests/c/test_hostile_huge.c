/*
 * test_hostile_huge.c -- huge inputs, each in a forked child (a crash or hang is reported,
 * peak RSS measured): a 100 MiB JSON string in every function taking JSON text (and in
 * options_json), 1,000,000 nested arrays / objects, 10 MB of garbage, a line of exactly
 * SESSION_MAX_LINE_BYTES (and one more byte), files with a 100 MiB garbage tail / line and a
 * sparse NUL tail (open, repair). Peak RSS growth of each child must stay below
 * max(20 x its input, 32 MiB). Part of the hostile-input suite (hostile.h).
 *
 * Usage: test_hostile_huge [--small] [--no-rss] [--streaming]
 *   --small      1 MiB strings and 1 MB of garbage (for valgrind runs)
 *   --no-rss     do not check memory bounds (valgrind's and ASan's own memory distorts RSS)
 *   --streaming  only the files with huge tails, with docs/contract.md §3 / T18(a)'s bound:
 *                memory follows what is kept (< 32 MiB growth), not the garbage; adds a
 *                1 GiB sparse NUL tail
 */
#include "hostile.h"

static size_t g_big = (size_t)100 << 20; /* the huge JSON string */
static long g_nest = 1000000;            /* nesting depth */
static size_t g_garbage = 10000000;      /* bytes of garbage */
static int g_check_rss = 1, g_alarm = 60;

/* ------------------------------------- 9. huge inputs, in forked children ---- */

struct report {
    long checks, cases, start_kb, peak_kb;
};

/*
 * Runs fn in a forked child: a crash or a hang (alarm) is reported as such; the child's
 * peak RSS growth must stay below max(20 x input, 32 MiB). `input` is what the case may
 * legitimately hold in memory (for a file opened by streaming: what is kept, not the file).
 */
static long g_rss_violations;
static char g_rss_report[2048];

static void isolated(const char *name, size_t input, void (*fn)(void))
{
    struct report rep;
    int fds[2], status = 0;
    double t0 = now_seconds();
    long bound_kb = (long)((input * 20 > ((size_t)32 << 20) ? input * 20 : ((size_t)32 << 20)) / 1024);
    ssize_t n;
    pid_t pid;

    fflush(stdout);
    fflush(stderr);
    CHECK(pipe(fds) == 0, "pipe");
    pid = fork();
    CHECK(pid >= 0, "fork");
    if (pid == 0) {
        close(fds[0]);
        alarm((unsigned)g_alarm);
        memset(&rep, 0, sizeof rep);
        rep.start_kb = peak_rss_kb();
        g_checks = 0;
        g_results = 0;
        fn();
        rep.checks = g_checks;
        rep.cases = g_results;
        rep.peak_kb = peak_rss_kb();
        if (write(fds[1], &rep, sizeof rep) != (ssize_t)sizeof rep) exit(3);
        close(fds[1]);
        fflush(stdout);
        exit(0);
    }
    close(fds[1]);
    memset(&rep, 0, sizeof rep);
    n = read(fds[0], &rep, sizeof rep);
    close(fds[0]);
    CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
    CHECK(!WIFSIGNALED(status), "%s: the child died of signal %d (%s)", name, WTERMSIG(status),
          WTERMSIG(status) == SIGALRM ? "a hang: no answer within the alarm" : "a crash");
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s: the child failed (exit status %d)", name,
          WEXITSTATUS(status));
    CHECK(n == (ssize_t)sizeof rep, "%s: the child reported", name);
    g_checks += rep.checks;
    g_results += rep.cases;
    printf("   %-62s input %7.1f MB  peak RSS +%7.1f MB  (bound %6.0f MB)  %5.2f s\n", name, (double)input / 1e6,
           (double)(rep.peak_kb - rep.start_kb) / 1024.0, (double)bound_kb / 1024.0, now_seconds() - t0);
    fflush(stdout);
    g_checks++;
    if (g_check_rss && rep.peak_kb - rep.start_kb > bound_kb) {
        /* reported at the end, so that every case still runs and prints its figures */
        size_t used = strlen(g_rss_report);
        g_rss_violations++;
        snprintf(g_rss_report + used, sizeof g_rss_report - used, "\n     %s: peak RSS grew by %ld KiB, bound %ld KiB",
                 name, rep.peak_kb - rep.start_kb, bound_kb);
    }
}

/* A JSON string literal (with its quotes) of exactly n bytes of content: escapes, multi-byte
 * UTF-8, raw U+2028, padded with 'a'. */
static char *big_string_entry(const char *before, size_t n, const char *after, size_t *len)
{
    static const char PAT[] = "lorem \\\"ipsum\\\" \\n \xc3\xa9\xe2\x80\xa8 \\u00e9 \\ud83d\\ude00 \\\\ dolor sit amet, ";
    size_t pb = strlen(before), pa = strlen(after), pat = sizeof PAT - 1, i = 0;
    char *s = (char *)xmalloc(pb + n + pa + 3), *p = s;
    memcpy(p, before, pb);
    p += pb;
    *p++ = '"';
    for (; i + pat <= n; i += pat, p += pat) memcpy(p, PAT, pat);
    memset(p, 'a', n - i);
    p += n - i;
    *p++ = '"';
    memcpy(p, after, pa + 1);
    *len = pb + n + 2 + pa;
    return s;
}

#define USER_BEFORE HEAD "\"type\":\"message\",\"message\":{\"role\":\"user\",\"content\":"

static void big_parse(void)
{
    size_t len;
    char *entry = big_string_entry(HEAD "\"type\":\"metadata\",\"key\":\"k\",\"value\":", g_big, "}", &len), *out = NULL;
    SessionStatus st = session_parse_entry(entry, &out);
    if (st == SESSION_OK) {
        CHECK(strlen(out) == len && memcmp(out, entry, len) == 0, "the huge entry normalises to itself");
        printf("      parse_entry: accepted, round-trips (%zu bytes)\n", len);
    } else {
        printf("      parse_entry: rejected: %.200s\n", show(out));
        CHECK(st == SESSION_ERR_INVALID_ENTRY || st == SESSION_ERR_INVALID_JSON, "a clear status");
    }
    check_result("parse_entry(huge string)", st, &out, st, NULL, NULL);
    free(entry);
    {
        char path[512];
        SessionStore *s = (SessionStore *)&g_results;
        char *opts = big_string_entry("{\"durability\":", g_big, "}", &len);
        snprintf(path, sizeof path, "%s/big-options.jsonl", g_dir);
        st = session_jsonl_store_open_with(path, opts, &s, &out);
        check_result("open_with(huge options string)", st, &out, SESSION_ERR_INVALID_ARGUMENT, "error.argument",
               "\"options_json\"");
        CHECK(s == NULL && !file_exists(path), "bad options: no store, no file");
        free(opts);
    }
}

static void big_slices(void)
{
    size_t len;
    char *arr = big_string_entry("[" LINE1 "," USER_BEFORE, g_big, "}}]", &len), *out = NULL;
    SessionStatus st;
    (void)len;
    st = session_path_to(arr, "e", &out);
    CHECK_JSON_LENGTH(out, "", 1, "path_to over the huge entry");
    check_result("path_to(huge string)", st, &out, SESSION_OK, NULL, NULL);
    out = NULL;
    st = session_messages_on_path(arr, "e", &out);
    CHECK_JSON_LENGTH(out, "", 1, "messages_on_path over the huge entry");
    CHECK(json_get(out, "0.content").n == g_big + 2, "the huge content comes back whole");
    check_result("messages_on_path(huge string)", st, &out, SESSION_OK, NULL, NULL);
    free(arr);
}

static void big_append_jsonl(void)
{
    char path[512], *out = NULL, *entry;
    size_t len;
    SessionStore *s = jsonl_store("big-append.jsonl", path, sizeof path);
    long long size;
    SessionStatus st;

    CHECK_STATUS(session_store_append(s, LINE1, NULL), SESSION_OK, NULL, "a small root first");
    size = file_size(path);
    entry = big_string_entry(USER_BEFORE, g_big, "}}", &len);
    st = session_store_append(s, entry, &out);
    if (len > SESSION_MAX_LINE_BYTES) {
        check_result("append(huge line) on a JSONL store", st, &out, SESSION_ERR_INVALID_ENTRY, NULL, NULL);
        CHECK(file_size(path) == size, "the file is unchanged (%lld bytes, was %lld)", file_size(path), size);
    } else {
        check_result("append(big line) on a JSONL store", st, &out, SESSION_OK, NULL, NULL);
        CHECK(file_size(path) == size + (long long)len + 1, "the line was written whole");
    }
    CHECK(session_store_state(s) == SESSION_STATE_READY, "the store is still ready");
    out = NULL;
    check_result("a small append after it", session_store_append(s, LINE2, &out), &out, SESSION_OK, NULL, NULL);
    session_store_close(s);
    free(entry);
}

static void big_append_memory(void)
{
    char *out = NULL, *entry;
    size_t len;
    SessionStore *s = memory_store();
    SessionStatus st;
    entry = big_string_entry(USER_BEFORE, g_big, "}}", &len);
    st = session_store_append(s, entry, &out);
    printf("      memory store append: %s\n", session_status_name(st));
    CHECK(st == SESSION_OK || st == SESSION_ERR_INVALID_ENTRY, "a clear status (%s)", session_status_name(st));
    check_result("append(huge entry) on a memory store", st, &out, st, NULL, NULL);
    free(entry);
    out = NULL;
    st = session_store_messages_on_path(s, "e", &out);
    if (st == SESSION_OK) CHECK(json_get(out, "0.content").n == g_big + 2, "the huge content comes back whole");
    check_result("messages_on_path on the memory store", st, &out, st, NULL, NULL);
    session_store_close(s);
}

static void big_recover(void)
{
    size_t len;
    char *bytes = big_string_entry(LINE1 "\n" LINE2 "\n" USER_BEFORE, g_big, "}}\n", &len), *out = NULL;
    size_t line = len - 1 - strlen(LINE1 "\n" LINE2 "\n");
    SessionStatus st = session_recover_jsonl((const uint8_t *)bytes, len, &out);
    if (line > SESSION_MAX_LINE_BYTES) {
        CHECK_JSON(out, "error.reason", "\"line_too_long\"", "a committed huge line");
        check_result("recover_jsonl(huge committed line)", st, &out, SESSION_ERR_CORRUPT_LINE, "error.line", "3");
    } else {
        CHECK_JSON_LENGTH(out, "entries", 3, "a committed big line");
        check_result("recover_jsonl(big committed line)", st, &out, SESSION_OK, "warnings", "[]");
    }
    out = NULL;
    st = session_recover_jsonl((const uint8_t *)bytes, len - 1, &out);
    CHECK_JSON_LENGTH(out, "entries", 2, "a huge tail: the committed prefix");
    check_result("recover_jsonl(huge tail)", st, &out, SESSION_OK, "warnings", "[{\"code\":\"unterminated_tail\",\"line\":3}]");
    free(bytes);
}

/* Files written by the parent in chunks (so that only the child's memory is measured). */
static char g_tail_file[600], g_tail_nl_file[600], g_sparse_file[600];

static void write_garbage_file(const char *path, size_t garbage, int newline)
{
    static char chunk[1 << 16];
    FILE *f = fopen(path, "wb");
    size_t i, done;
    CHECK(f != NULL, "fopen %s", path);
    for (i = 0; i < sizeof chunk; i++) chunk[i] = (char)('!' + (i * 7919) % 90);
    fputs(LINE1 "\n" LINE2 "\n", f);
    for (done = 0; done < garbage; done += sizeof chunk)
        CHECK(fwrite(chunk, 1, garbage - done < sizeof chunk ? garbage - done : sizeof chunk, f) > 0, "fwrite");
    if (newline) fputc('\n', f);
    CHECK(fclose(f) == 0, "fclose");
}

static void open_tail_file(void)
{
    SessionStore *s = NULL;
    char *out = NULL;
    long long size = file_size(g_tail_file);
    SessionStatus st = session_jsonl_store_open(g_tail_file, &s, &out);
    CHECK_JSON(out, "warnings", "[{\"code\":\"unterminated_tail\",\"line\":3}]", "huge garbage tail: the warning");
    check_result("open(file + huge garbage tail)", st, &out, SESSION_OK, "state", "\"needs_repair\"");
    out = NULL;
    st = session_store_entries(s, &out);
    CHECK_JSON_LENGTH(out, "", 2, "the committed prefix");
    check_result("entries", st, &out, SESSION_OK, NULL, NULL);
    out = NULL;
    check_result("append on needs_repair", session_store_append(s, "{\"id\":\"z\",\"parentId\":null,\"timestamp\":1,"
                                                            "\"type\":\"metadata\",\"key\":\"k\",\"value\":1}", &out),
           &out, SESSION_ERR_NEEDS_REPAIR, NULL, NULL);
    session_store_close(s);
    CHECK(file_size(g_tail_file) == size, "the file is untouched");
}

static void open_tail_nl_file(void)
{
    SessionStore *s = (SessionStore *)&g_results;
    char *out = NULL;
    SessionStatus st = session_jsonl_store_open(g_tail_nl_file, &s, &out);
    CHECK_JSON(out, "error.reason", g_big > SESSION_MAX_LINE_BYTES ? "\"line_too_long\"" : "\"invalid_json\"",
               "committed huge garbage: the reason");
    check_result("open(file + huge garbage line)", st, &out, SESSION_ERR_CORRUPT_LINE, "error.line", "3");
    CHECK(s == NULL, "*out_store is NULL");
}

static void repair_tail_file(void)
{
    char *out = NULL, bak[700];
    SessionStore *s = NULL;
    long long size = file_size(g_tail_file);
    SessionStatus st = session_jsonl_repair(g_tail_file, &out);
    char want[64];
    snprintf(want, sizeof want, "%zu", g_big);
    CHECK_JSON(out, "entries", "2", "repair keeps the two committed entries");
    check_result("repair(file + huge garbage tail)", st, &out, SESSION_OK, "truncatedBytes", want);
    snprintf(bak, sizeof bak, "%s.tail-1.bak", g_tail_file);
    CHECK(file_size(bak) == (long long)g_big, "the sidecar holds the whole tail (%lld bytes)", file_size(bak));
    CHECK(file_size(g_tail_file) == size - (long long)g_big, "the file is cut to its committed prefix");
    st = session_jsonl_store_open(g_tail_file, &s, &out);
    check_result("open after repair", st, &out, SESSION_OK, "state", "\"ready\"");
    session_store_close(s);
    unlink(bak);
}

static void open_sparse_file(void)
{
    SessionStore *s = NULL;
    char *out = NULL;
    SessionStatus st = session_jsonl_store_open(g_sparse_file, &s, &out);
    CHECK_JSON(out, "warnings", "[{\"code\":\"unterminated_tail\",\"line\":1}]", "sparse NUL file: the warning");
    check_result("open(sparse NUL file)", st, &out, SESSION_OK, "state", "\"needs_repair\"");
    session_store_close(s);
}

/* n copies of `open`, then `middle`, then n copies of `close` (close may be ""). */
static char *nest(const char *before, const char *open, long n, const char *middle, const char *close,
                  const char *after)
{
    size_t lo = strlen(open), lc = strlen(close), lb = strlen(before), lm = strlen(middle), la = strlen(after);
    char *s = (char *)xmalloc(lb + (lo + lc) * (size_t)n + lm + la + 1), *p = s;
    long i;
    memcpy(p, before, lb);
    p += lb;
    for (i = 0; i < n; i++, p += lo) memcpy(p, open, lo);
    memcpy(p, middle, lm);
    p += lm;
    for (i = 0; i < n; i++, p += lc) memcpy(p, close, lc);
    memcpy(p, after, la + 1);
    return s;
}

static void deep_everywhere(void)
{
    char path[512], *out = NULL, *deep = nest("", "[", g_nest, "", "", ""), *lines;
    SessionStore *mem = memory_store(), *js = jsonl_store("deep.jsonl", path, sizeof path);
    SessionStatus st;
    long long size = file_size(path);

    st = session_parse_entry(deep, &out);
    expect_pointer_starts("parse_entry([[[...)", out, "\"/0/0/0");
    check_result("parse_entry([[[...)", st, &out, SESSION_ERR_INVALID_JSON, NULL, NULL);
    out = NULL;
    check_result("path_to([[[...)", session_path_to(deep, "e", &out), &out, SESSION_ERR_INVALID_JSON, NULL, NULL);
    out = NULL;
    check_result("messages_on_path([[[...)", session_messages_on_path(deep, "e", &out), &out, SESSION_ERR_INVALID_JSON, NULL,
           NULL);
    out = NULL;
    check_result("store_append([[[...) memory", session_store_append(mem, deep, &out), &out, SESSION_ERR_INVALID_JSON, NULL,
           NULL);
    out = NULL;
    check_result("store_append([[[...) jsonl", session_store_append(js, deep, &out), &out, SESSION_ERR_INVALID_JSON, NULL,
           NULL);
    CHECK(file_size(path) == size, "the file is unchanged");
    CHECK(session_store_state(js) == SESSION_STATE_READY, "the JSONL store is still ready");
    {
        SessionStore *o = (SessionStore *)&g_results;
        char opath[512];
        snprintf(opath, sizeof opath, "%s/deep-options.jsonl", g_dir);
        check_result("open_with(options [[[...)", session_jsonl_store_open_with(opath, deep, &o, &out), &out,
               SESSION_ERR_INVALID_ARGUMENT, "error.argument", "\"options_json\"");
        CHECK(o == NULL && !file_exists(opath), "deep options: no store, no file");
        deep[0] = '{';
        check_result("open_with(options {[[...)", session_jsonl_store_open_with(opath, deep, &o, &out), &out,
               SESSION_ERR_INVALID_ARGUMENT, "error.argument", "\"options_json\"");
        deep[0] = '[';
    }
    lines = cat(LINE1 "\n", deep, "\n", (char *)NULL);
    out = NULL;
    st = session_recover_jsonl((const uint8_t *)lines, strlen(lines), &out);
    CHECK_JSON(out, "error.reason", "\"invalid_json\"", "recover: reason");
    check_result("recover_jsonl(line of [[[...)", st, &out, SESSION_ERR_CORRUPT_LINE, "error.line", "2");
    out = NULL;
    st = session_recover_jsonl((const uint8_t *)lines, strlen(lines) - 1, &out);
    CHECK_JSON_LENGTH(out, "entries", 1, "recover: the committed prefix");
    check_result("recover_jsonl(tail of [[[...)", st, &out, SESSION_OK, "warnings", "[{\"code\":\"unterminated_tail\",\"line\":2}]");
    session_store_close(mem);
    session_store_close(js);
    free(deep);
    free(lines);
}

static void deep_in_entry(void)
{
    static const struct {
        const char *open, *middle, *close, *pointer;
    } KINDS[] = {
        {"[", "1", "]", "\"/value/0/0/0"},
        {"{\"a\":", "1", "}", "\"/value/a/a/a"},
        {"[{\"a\":", "1", "}]", "\"/value/0/a/0/a"},
        {"[", "", "", "\"/value/0/0/0"}, /* never closed */
    };
    size_t k;
    for (k = 0; k < sizeof KINDS / sizeof KINDS[0]; k++) {
        char *entry = nest(HEAD "\"type\":\"metadata\",\"key\":\"k\",\"value\":", KINDS[k].open, g_nest,
                           KINDS[k].middle, KINDS[k].close, "}");
        char *arr = cat("[", entry, "]", (char *)NULL), *out = NULL, ptr[64], what[96];
        SessionStore *mem = memory_store();
        SessionStatus st;
        snprintf(what, sizeof what, "entry with %ld x %s", g_nest, KINDS[k].open);
        st = session_parse_entry(entry, &out);
        expect_pointer_starts(what, out, KINDS[k].pointer);
        check_result(what, st, &out, SESSION_ERR_INVALID_JSON, NULL, NULL);
        out = NULL;
        st = session_path_to(arr, "e", &out);
        snprintf(ptr, sizeof ptr, "\"/0%s", KINDS[k].pointer + 1);
        expect_pointer_starts(what, out, ptr);
        check_result(what, st, &out, SESSION_ERR_INVALID_JSON, NULL, NULL);
        out = NULL;
        st = session_store_append(mem, entry, &out);
        expect_pointer_starts(what, out, KINDS[k].pointer);
        check_result(what, st, &out, SESSION_ERR_INVALID_JSON, NULL, NULL);
        session_store_close(mem);
        free(entry);
        free(arr);
    }
}

/* g_garbage bytes of deterministic garbage: every byte value but '\n' (and, for C strings, NUL) */
static char *garbage(size_t n, int c_string)
{
    char *g = (char *)xmalloc(n + 2);
    unsigned long x = 2463534242UL;
    size_t i;
    for (i = 0; i < n; i++) {
        unsigned char b;
        x ^= x << 13, x ^= x >> 17, x ^= x << 5, x &= 0xffffffffUL;
        b = (unsigned char)(x >> 11);
        if (b == '\n') b = '~';
        if (c_string && (b == 0 || b >= 0x80)) b = (unsigned char)('!' + b % 90);
        g[i] = (char)b;
    }
    g[n] = '\0';
    return g;
}

static void garbage_recover(void)
{
    char *g = garbage(g_garbage, 0), *out = NULL, *b;
    SessionStatus st;
    size_t n = g_garbage;

    st = session_recover_jsonl((const uint8_t *)g, n, &out);
    check_result("garbage, no newline", st, &out, SESSION_OK, "", "{\"entries\":[],\"warnings\":[{\"code\":\"unterminated_tail\",\"line\":1}]}");
    g[n] = '\n';
    out = NULL;
    check_result("garbage + newline", session_recover_jsonl((const uint8_t *)g, n + 1, &out), &out, SESSION_ERR_CORRUPT_LINE,
           "error.line", "1");
    memset(g, 0, n);
    out = NULL;
    check_result("NULs, no newline", session_recover_jsonl((const uint8_t *)g, n, &out), &out, SESSION_OK, "warnings",
           "[{\"code\":\"unterminated_tail\",\"line\":1}]");
    out = NULL;
    check_result("NULs + newline", session_recover_jsonl((const uint8_t *)g, n + 1, &out), &out, SESSION_ERR_CORRUPT_LINE,
           "error.line", "1");
    memset(g, ' ', n);
    out = NULL;
    check_result("blanks, no newline", session_recover_jsonl((const uint8_t *)g, n, &out), &out, SESSION_OK, "",
           "{\"entries\":[],\"warnings\":[]}");
    free(g);

    /* n blank lines, one entry, a garbage tail: the physical line number at scale */
    b = (char *)xmalloc(n + strlen(LINE1) + 8);
    memset(b, '\n', n);
    memcpy(b + n, LINE1 "\nxx", strlen(LINE1) + 3);
    out = NULL;
    st = session_recover_jsonl((const uint8_t *)b, n + strlen(LINE1) + 3, &out);
    CHECK_JSON_LENGTH(out, "entries", 1, "blank lines: one entry");
    {
        char want[96];
        snprintf(want, sizeof want, "[{\"code\":\"unterminated_tail\",\"line\":%zu}]", n + 2);
        check_result("n blank lines, an entry, a tail", st, &out, SESSION_OK, "warnings", want);
    }
    free(b);
}

static void garbage_text(void)
{
    char *g = garbage(g_garbage, 1), *out = NULL;
    SessionStore *mem = memory_store();
    check_result("parse_entry(garbage)", session_parse_entry(g, &out), &out, SESSION_ERR_INVALID_JSON, NULL, NULL);
    out = NULL;
    check_result("path_to(garbage)", session_path_to(g, "e", &out), &out, SESSION_ERR_INVALID_JSON, NULL, NULL);
    out = NULL;
    check_result("messages_on_path(\"[\" garbage)", session_messages_on_path((g[0] = '[', g), "e", &out), &out,
           SESSION_ERR_INVALID_JSON, NULL, NULL);
    out = NULL;
    check_result("store_append(garbage)", session_store_append(mem, g, &out), &out, SESSION_ERR_INVALID_JSON, NULL, NULL);
    out = NULL;
    check_result("store_path_to(garbage leaf)", session_store_path_to(mem, g, &out), &out, SESSION_ERR_UNKNOWN_LEAF, NULL, NULL);
    session_store_close(mem);
    free(g);
}

/* T18(b)/(c): a line of exactly SESSION_MAX_LINE_BYTES is accepted and round-trips; one more byte is not. */
static void max_line(void)
{
    char path[512], *out = NULL, *entry, *bytes;
    size_t len, overhead = strlen(USER_BEFORE) + 2 + 2, flen;
    SessionStore *s = jsonl_store("max-line.jsonl", path, sizeof path);
    SessionStatus st;

    entry = big_string_entry(USER_BEFORE, (size_t)SESSION_MAX_LINE_BYTES - overhead + 1, "}}", &len);
    CHECK(len == (size_t)SESSION_MAX_LINE_BYTES + 1, "the test entry is one byte too long (%zu)", len);
    check_result("append(MAX + 1 bytes)", session_store_append(s, entry, &out), &out, SESSION_ERR_INVALID_ENTRY, NULL, NULL);
    CHECK(file_size(path) == 0, "nothing written");
    free(entry);
    entry = big_string_entry(USER_BEFORE, (size_t)SESSION_MAX_LINE_BYTES - overhead, "}}", &len);
    CHECK(len == (size_t)SESSION_MAX_LINE_BYTES, "the test entry is exactly the maximum (%zu)", len);
    out = NULL;
    check_result("append(MAX bytes)", session_store_append(s, entry, &out), &out, SESSION_OK, "seq", "0");
    session_store_close(s);
    bytes = read_file(path, &flen);
    CHECK(flen == len + 1 && memcmp(bytes, entry, len) == 0 && bytes[len] == '\n', "the line is in the file, whole");
    free(bytes);
    out = NULL;
    st = session_jsonl_store_open(path, &s, &out);
    check_result("reopen with a maximal line", st, &out, SESSION_OK, "state", "\"ready\"");
    out = NULL;
    st = session_store_messages_on_path(s, "e", &out);
    CHECK(st == SESSION_OK && json_get(out, "0.content").n == len - overhead + 2, "the maximal entry reads back whole");
    check_result("messages_on_path(maximal)", st, &out, SESSION_OK, NULL, NULL);
    session_store_close(s);
    free(entry);
}

/*
 * Files with a huge uncommitted or corrupt tail, opened and repaired by streaming. By
 * default the bound is 20 x the file size (no crash, no runaway). With `strict` (the
 * --streaming run) it is what docs/contract.md §3 and T18(a) ask: memory follows what is kept
 * (two short lines), not the garbage, so the growth must stay under 32 MiB; T18(a)'s
 * 1 GiB sparse NUL tail is added.
 */
static void streamed_files(int strict)
{
    size_t sizes[2];
    int i, n = strict && g_big >= ((size_t)100 << 20) ? 2 : 1;
    sizes[0] = g_big;
    sizes[1] = (size_t)1 << 30;
    SECTION(strict ? "files with huge tails, streamed: memory follows what is kept (docs/contract.md §3, T18a)"
                   : "files with huge tails, streamed (each in a forked child)");
    snprintf(g_tail_file, sizeof g_tail_file, "%s/huge-tail.jsonl", g_dir);
    snprintf(g_tail_nl_file, sizeof g_tail_nl_file, "%s/huge-line.jsonl", g_dir);
    snprintf(g_sparse_file, sizeof g_sparse_file, "%s/sparse.jsonl", g_dir);
    write_garbage_file(g_tail_file, g_big, 0);
    isolated("file with a huge garbage tail: open", strict ? 0 : g_big, open_tail_file);
    isolated("file with a huge garbage tail: repair", strict ? 0 : g_big, repair_tail_file);
    unlink(g_tail_file);
    write_garbage_file(g_tail_nl_file, g_big, 1);
    isolated("file with a huge garbage line: open", strict ? 0 : g_big, open_tail_nl_file);
    unlink(g_tail_nl_file);
    for (i = 0; i < n; i++) {
        char name[96];
        int fd = open(g_sparse_file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        CHECK(fd >= 0 && ftruncate(fd, (off_t)sizes[i]) == 0 && close(fd) == 0, "a sparse file of NULs");
        snprintf(name, sizeof name, "sparse file of %.0f MB of NULs: open", (double)sizes[i] / 1e6);
        isolated(name, strict ? 0 : sizes[i], open_sparse_file);
        unlink(g_sparse_file);
    }
}

int main(int argc, char **argv)
{
    int i, small = 0, streaming_only = 0;
    double t0 = now_seconds();

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--small") == 0)
            small = 1;
        else if (strcmp(argv[i], "--no-rss") == 0)
            g_check_rss = 0;
        else if (strcmp(argv[i], "--streaming") == 0)
            streaming_only = 1;
        else
            CHECK(0, "usage: test_hostile_huge [--small] [--no-rss] [--streaming] (got %s)", argv[i]);
    }
    if (small) {
        g_big = (size_t)1 << 20; /* nesting stays at 1,000,000: it is rejected at depth 129 */
        g_garbage = 1000000;
        g_alarm = 600;
    }
    printf("hostile input: %.1f MB strings, %ld-deep nesting, %.1f MB garbage%s\n", (double)g_big / 1e6, g_nest,
           (double)g_garbage / 1e6, g_check_rss ? "" : " (memory bounds not checked)");
    hostile_begin("hostile-huge");

    if (!streaming_only) {
        SECTION("huge inputs, each in a forked child (crash / hang / memory)");
        isolated("huge JSON string: parse_entry, open_with options", g_big, big_parse);
        isolated("huge JSON string: path_to, messages_on_path", g_big, big_slices);
        isolated("huge JSON string: store_append (JSONL store)", g_big, big_append_jsonl);
        isolated("huge JSON string: store_append (memory store)", g_big, big_append_memory);
        isolated("huge JSON string: recover_jsonl (committed, tail)", g_big, big_recover);
        isolated("deep nesting: [[[... in every JSON-text function", (size_t)g_nest, deep_everywhere);
        isolated("deep nesting inside an entry: [ / {\"a\": / [{\"a\": / unclosed", (size_t)g_nest * 6, deep_in_entry);
        isolated("garbage bytes: recover_jsonl", g_garbage, garbage_recover);
        isolated("garbage text: every JSON-text function", g_garbage, garbage_text);
        if (!small)
            isolated("a line of exactly SESSION_MAX_LINE_BYTES, and one byte more", (size_t)SESSION_MAX_LINE_BYTES,
                     max_line);
    }
    streamed_files(streaming_only);

    CHECK(g_rss_violations == 0, "memory stays bounded: %ld case(s) over the bound%s:%s", g_rss_violations,
          streaming_only ? " (a file opened or repaired by streaming: memory must follow what is kept, not the "
                           "garbage; docs/contract.md §3, T18a)" : "", g_rss_report);
    printf("%ld hostile cases; parent peak RSS %.1f MB; %.2f s\n", g_results, (double)peak_rss_kb() / 1024.0,
           now_seconds() - t0);
    check_done("test_hostile_huge");
    return 0;
}

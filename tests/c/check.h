/*
 * check.h -- the small shared kit of the libsession C tests.
 *
 *   CHECK(cond, rule...)        fail-fast assertion; the message names the rule.
 *   CHECK_STATUS(got, want, json, rule...)   a status, printing the JSON on mismatch.
 *   CHECK_ERROR(got, want, json, rule...)    a failed call: the status, and that json
 *                               is exactly {"error":{"code":"<name>","message":"…",…}}
 *                               with code == session_status_name(want).
 *   CHECK_JSON(json, path, raw, rule...)     the value at a dotted path ("error.line",
 *                               "1.content.0.id") is exactly the JSON text `raw`.
 *   check_result(what, got, &out, want, member, raw)   one call's whole outcome: the
 *                               status, out_json set, the error shape on failure, and
 *                               optionally one member; frees out (counted in g_results).
 *   SECTION("...")              prints what the next checks are about.
 *   now_seconds(), peak_rss_kb()  a monotonic clock; this process's peak RSS (ru_maxrss).
 *   open_ok(path, options, what), append_ok(store, i, what)   a JSONL store that must
 *                               open, and an append of tree_entry(i) that must succeed.
 *
 * A failing check prints "FAIL <file>:<line>: <rule>" and exits with status 1. There is
 * no JSON library in C here: the json_* helpers below walk compact or spaced JSON well
 * enough to pick out members and elements and compare their raw text.
 */
#ifndef LIBSESSION_TEST_CHECK_H
#define LIBSESSION_TEST_CHECK_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "session.h"
#include "session_example.h"

/* ------------------------------------------------------------------ checks ---- */

static long g_checks;

static inline void check_fail(const char *file, int line, const char *what, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "FAIL %s:%d: ", file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n     (failed: %s)\n", what);
    fflush(stderr);
    exit(1);
}

#define CHECK(cond, ...)                                                  \
    do {                                                                  \
        g_checks++;                                                       \
        if (!(cond)) check_fail(__FILE__, __LINE__, #cond, __VA_ARGS__);  \
    } while (0)

#define SECTION(name) (printf("-- %s\n", (name)), fflush(stdout))

static inline void check_done(const char *program)
{
    printf("PASS %s: %ld checks\n", program, g_checks);
    fflush(stdout);
}

static inline const char *show(const char *s) { return s ? s : "(null)"; }

#define CHECK_STATUS(got, want, json, ...)                                          \
    do {                                                                            \
        SessionStatus check_got_ = (got), check_want_ = (want);                     \
        g_checks++;                                                                 \
        if (check_got_ != check_want_) {                                            \
            fprintf(stderr, "status %d (%s), expected %d (%s); json: %s\n",         \
                    (int)check_got_, session_status_name(check_got_),               \
                    (int)check_want_, session_status_name(check_want_), show(json)); \
            check_fail(__FILE__, __LINE__, #got " == " #want, __VA_ARGS__);         \
        }                                                                           \
    } while (0)

/* ------------------------------------------------------------ tiny JSON ---- */

/* A slice of JSON text; p == NULL means "not there". */
typedef struct {
    const char *p;
    size_t n;
} jspan;

static inline jspan json_span(const char *s)
{
    jspan r;
    r.p = s;
    r.n = s ? strlen(s) : 0;
    return r;
}

static inline const char *json_ws(const char *p, const char *e)
{
    while (p < e && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')) p++;
    return p;
}

/* The end of the JSON value starting at p (after whitespace), or NULL if malformed. */
static inline const char *json_value_end(const char *p, const char *e)
{
    p = json_ws(p, e);
    if (p >= e) return NULL;
    if (*p == '"') {
        for (p++; p < e && *p != '"'; p++)
            if (*p == '\\') p++;
        return p < e ? p + 1 : NULL;
    }
    if (*p == '{' || *p == '[') {
        int depth = 0;
        while (p < e) {
            if (*p == '"') {
                p = json_value_end(p, e);
                if (!p) return NULL;
                continue;
            }
            if (*p == '{' || *p == '[') depth++;
            if (*p == '}' || *p == ']') {
                if (--depth == 0) return p + 1;
            }
            p++;
        }
        return NULL;
    }
    while (p < e && *p != ',' && *p != '}' && *p != ']' && *p != ' ' && *p != '\t' &&
           *p != '\r' && *p != '\n')
        p++;
    return p;
}

static inline jspan json_trim(jspan v)
{
    jspan none = {NULL, 0};
    const char *e, *p;
    if (!v.p) return none;
    e = v.p + v.n;
    p = json_ws(v.p, e);
    while (e > p && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r' || e[-1] == '\n')) e--;
    v.p = p;
    v.n = (size_t)(e - p);
    return v;
}

/* The member `key` of an object (raw key text, no escapes), or {NULL,0}. */
static inline jspan json_member(jspan obj, const char *key)
{
    jspan none = {NULL, 0};
    const char *p, *e;
    size_t key_len = strlen(key);
    obj = json_trim(obj);
    if (!obj.p || obj.n < 2 || obj.p[0] != '{') return none;
    e = obj.p + obj.n;
    p = json_ws(obj.p + 1, e);
    if (p < e && *p == '}') return none;
    for (;;) {
        const char *k_start = p, *k_end, *v_start, *v_end;
        if (p >= e || *p != '"') return none;
        k_end = json_value_end(p, e);
        if (!k_end) return none;
        p = json_ws(k_end, e);
        if (p >= e || *p != ':') return none;
        v_start = json_ws(p + 1, e);
        v_end = json_value_end(v_start, e);
        if (!v_end) return none;
        if ((size_t)(k_end - k_start) == key_len + 2 && memcmp(k_start + 1, key, key_len) == 0) {
            jspan r;
            r.p = v_start;
            r.n = (size_t)(v_end - v_start);
            return r;
        }
        p = json_ws(v_end, e);
        if (p >= e || *p != ',') return none;
        p = json_ws(p + 1, e);
    }
}

/* Element `index` of an array, or {NULL,0}. */
static inline jspan json_element(jspan arr, size_t index)
{
    jspan none = {NULL, 0};
    const char *p, *e;
    size_t i = 0;
    arr = json_trim(arr);
    if (!arr.p || arr.n < 2 || arr.p[0] != '[') return none;
    e = arr.p + arr.n;
    p = json_ws(arr.p + 1, e);
    if (p < e && *p == ']') return none;
    for (;; i++) {
        const char *v_end = json_value_end(p, e);
        if (!v_end) return none;
        if (i == index) {
            jspan r;
            r.p = p;
            r.n = (size_t)(v_end - p);
            return r;
        }
        p = json_ws(v_end, e);
        if (p >= e || *p != ',') return none;
        p = json_ws(p + 1, e);
    }
}

/* The number of elements of an array, or -1 when `arr` is not a well-formed array. */
static inline long json_length(jspan arr)
{
    const char *p, *e;
    long n = 0;
    arr = json_trim(arr);
    if (!arr.p || arr.n < 2 || arr.p[0] != '[' || json_value_end(arr.p, arr.p + arr.n) != arr.p + arr.n)
        return -1;
    e = arr.p + arr.n;
    p = json_ws(arr.p + 1, e);
    if (*p == ']') return 0;
    for (;;) {
        p = json_value_end(p, e);
        if (!p) return -1;
        n++;
        p = json_ws(p, e);
        if (*p == ']') return n;
        if (*p != ',') return -1;
        p = json_ws(p + 1, e);
    }
}

/* The value at a dotted path: "error.line", "1.content.0.id" (digits index arrays). */
static inline jspan json_at(jspan v, const char *path)
{
    char seg[128];
    while (v.p && *path) {
        size_t n = strcspn(path, ".");
        if (n >= sizeof seg) n = sizeof seg - 1;
        memcpy(seg, path, n);
        seg[n] = '\0';
        v = json_trim(v);
        if (v.p && v.n && v.p[0] == '[' && strspn(seg, "0123456789") == n && n > 0)
            v = json_element(v, (size_t)strtoul(seg, NULL, 10));
        else
            v = json_member(v, seg);
        path += n;
        if (*path == '.') path++;
    }
    return json_trim(v);
}

static inline jspan json_get(const char *json, const char *path) { return json_at(json_span(json), path); }

/* Is the span exactly the JSON text `raw`? */
static inline int json_is(jspan v, const char *raw)
{
    size_t n = strlen(raw);
    return v.p && v.n == n && memcmp(v.p, raw, n) == 0;
}

/* The span as a C integer (0 when absent). */
static inline long long json_int(jspan v)
{
    char buf[32];
    if (!v.p || v.n == 0 || v.n >= sizeof buf) return -1;
    memcpy(buf, v.p, v.n);
    buf[v.n] = '\0';
    return strtoll(buf, NULL, 10);
}

/* A NUL-terminated copy of the span (malloc; the caller frees). */
static inline char *json_dup(jspan v)
{
    char *s = (char *)malloc(v.n + 1);
    if (!s) abort();
    if (v.n) memcpy(s, v.p, v.n);
    s[v.n] = '\0';
    return s;
}

/* Prints the span for a failure message (into a static buffer, truncated). */
static inline const char *json_show(jspan v)
{
    static char buf[512];
    size_t n;
    if (!v.p) return "(absent)";
    n = v.n < sizeof buf - 1 ? v.n : sizeof buf - 1;
    memcpy(buf, v.p, n);
    buf[n] = '\0';
    return buf;
}

#define CHECK_JSON(json, path, raw, ...)                                                  \
    do {                                                                                  \
        jspan check_v_ = json_get((json), (path));                                        \
        g_checks++;                                                                       \
        if (!json_is(check_v_, (raw))) {                                                  \
            fprintf(stderr, "at %s: got %s, expected %s\n     in: %.600s\n", (path),       \
                    json_show(check_v_), (raw), show(json));                              \
            check_fail(__FILE__, __LINE__, "json " #path " == " #raw, __VA_ARGS__);       \
        }                                                                                 \
    } while (0)

#define CHECK_JSON_LENGTH(json, path, len, ...)                                           \
    do {                                                                                  \
        long check_n_ = json_length(json_get((json), (path)));                           \
        g_checks++;                                                                       \
        if (check_n_ != (long)(len)) {                                                    \
            fprintf(stderr, "length of %s: %ld, expected %ld\n     in: %.600s\n",         \
                    (path)[0] ? (path) : "(root)", check_n_, (long)(len), show(json));    \
            check_fail(__FILE__, __LINE__, "length " #path " == " #len, __VA_ARGS__);     \
        }                                                                                 \
    } while (0)

/*
 * The shape every error result must have (docs/contract.md §4, §5): the whole text is one object
 * {"error":{...}} with nothing else in it; the inner object has "code" equal to
 * session_status_name(status) and a string "message".
 */
static inline const char *error_shape_problem(SessionStatus status, const char *json)
{
    static char why[640];
    jspan root = json_span(json), err, code, msg;
    char want[64];
    if (!json) return "out_json was left NULL";
    if (json_value_end(root.p, root.p + root.n) != root.p + root.n) return "not one JSON value";
    if (root.n < 2 || root.p[0] != '{') return "not a JSON object";
    err = json_member(root, "error");
    if (!err.p) return "no \"error\" member";
    if (err.p[0] != '{') return "\"error\" is not an object";
    if (json_value_end(err.p, root.p + root.n) != root.p + root.n - 1)
        return "the root object has members besides \"error\"";
    code = json_member(err, "code");
    snprintf(want, sizeof want, "\"%s\"", session_status_name(status));
    if (!json_is(code, want)) {
        snprintf(why, sizeof why, "error.code is %s, expected %s", json_show(code), want);
        return why;
    }
    msg = json_member(err, "message");
    if (!msg.p || msg.p[0] != '"' || msg.n < 3) return "error.message is not a non-empty string";
    return NULL;
}

#define CHECK_ERROR(got, want, json, ...)                                                 \
    do {                                                                                  \
        const char *check_why_;                                                           \
        CHECK_STATUS((got), (want), (json), __VA_ARGS__);                                 \
        check_why_ = error_shape_problem((want), (json));                                 \
        g_checks++;                                                                       \
        if (check_why_) {                                                                 \
            fprintf(stderr, "bad error JSON: %s\n     in: %.600s\n", check_why_, show(json)); \
            check_fail(__FILE__, __LINE__, "error JSON shape", __VA_ARGS__);              \
        }                                                                                 \
    } while (0)

/* Results checked with check_result (a figure some tests print). */
static long g_results;

/* The outcome of one call that returned `got` and set *outp: the status is `want`, out_json
 * is set, on failure the error JSON has the contract's shape, and (when member is not NULL)
 * the JSON at `member` is exactly `raw`. Frees *outp and sets it to NULL. */
static inline void check_result(const char *what, SessionStatus got, char **outp, SessionStatus want,
                                const char *member, const char *raw)
{
    char *out = *outp; /* read here, after the call that set it (argument order is unspecified) */
    *outp = NULL;
    g_results++;
    CHECK_STATUS(got, want, out, "%s", what);
    CHECK(out != NULL, "%s: out_json is set", what);
    if (want != SESSION_OK) CHECK_ERROR(got, want, out, "%s", what);
    if (member) CHECK_JSON(out, member, raw, "%s", what);
    session_string_free(out);
}

/* NULL when the array's elements have exactly the ids in `csv` ("u-1,a-read"). */
static inline const char *ids_problem(jspan arr, const char *csv)
{
    static char why[512];
    char want[128], key[32];
    long n = 0, have = json_length(arr);
    while (*csv) {
        size_t len = strcspn(csv, ",");
        snprintf(want, sizeof want, "\"%.*s\"", (int)len, csv);
        snprintf(key, sizeof key, "%ld.id", n);
        if (!json_is(json_at(arr, key), want)) {
            snprintf(why, sizeof why, "element %ld has id %s, expected %s", n, json_show(json_at(arr, key)), want);
            return why;
        }
        n++;
        csv += len;
        if (*csv == ',') csv++;
    }
    if (have != n) {
        snprintf(why, sizeof why, "%ld elements, expected %ld", have, n);
        return why;
    }
    return NULL;
}

/* The array at `path` in `json` ("" for the root) has exactly the ids in csv. */
#define CHECK_IDS_AT(json, path, csv, ...)                                            \
    do {                                                                              \
        const char *check_why_ = ids_problem(json_get((json), (path)), (csv));        \
        g_checks++;                                                                   \
        if (check_why_) {                                                             \
            fprintf(stderr, "ids: %s\n     in: %.600s\n", check_why_, show(json));    \
            check_fail(__FILE__, __LINE__, "ids == " #csv, __VA_ARGS__);              \
        }                                                                             \
    } while (0)

#define CHECK_IDS(json, csv, ...) CHECK_IDS_AT(json, "", csv, __VA_ARGS__)

/* ---------------------------------------------------------------- files ---- */

/* Makes a fresh directory /tmp/libsession-<tag>-XXXXXX into buf. */
static inline void make_tmpdir(char *buf, size_t size, const char *tag)
{
    snprintf(buf, size, "/tmp/libsession-%s-XXXXXX", tag);
    if (!mkdtemp(buf)) {
        perror("mkdtemp");
        exit(1);
    }
}

/* Removes a flat temp directory made by make_tmpdir and the files in it. */
static inline void remove_tmpdir(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *ent;
    char path[4096];
    if (!d) return;
    while ((ent = readdir(d)) != NULL) {
        if (strcmp(ent->d_name, ".") == 0 || strcmp(ent->d_name, "..") == 0) continue;
        snprintf(path, sizeof path, "%s/%s", dir, ent->d_name);
        unlink(path);
    }
    closedir(d);
    rmdir(dir);
}

/* The number of names in dir, . and .. aside; -1 if it cannot be read. */
static inline int count_dir_entries(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *ent;
    int n = 0;
    if (!d) return -1;
    while ((ent = readdir(d)) != NULL) {
        if (strcmp(ent->d_name, ".") != 0 && strcmp(ent->d_name, "..") != 0) n++;
    }
    closedir(d);
    return n;
}

static inline void write_file(const char *path, const void *bytes, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f || (len && fwrite(bytes, 1, len, f) != len) || fclose(f) != 0) {
        perror(path);
        exit(1);
    }
}

/* The whole file (malloc, NUL-terminated too); *len gets its size. */
static inline char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t cap = 0, n = 0;
    if (!f) {
        perror(path);
        exit(1);
    }
    for (;;) {
        size_t got;
        if (cap - n < 4096) {
            cap = cap ? cap * 2 : 8192;
            buf = (char *)realloc(buf, cap + 1);
            if (!buf) abort();
        }
        got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) break;
    }
    fclose(f);
    buf[n] = '\0';
    *len = n;
    return buf;
}

static inline long long file_size(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0) return -1;
    return (long long)st.st_size;
}

static inline int file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* ------------------------------------------------------ time and memory ---- */

/* A monotonic clock, in seconds (for the wall times the tests print). */
static inline double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* This process's peak resident set size so far, in KiB (getrusage ru_maxrss). */
static inline long peak_rss_kb(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0) return -1;
    return (long)ru.ru_maxrss;
}

/* ------------------------------------------------- the chapter's fixed tree ---- */

/* docs/contract.md §1, in append order: u-1, a-read, r-read, a-final, a-alt, meta-cwd.
 * The lines of examples/tiny-pi.jsonl, generated into session_example.h at build time. */
static inline const char *tree_entry(int i)
{
    return (i >= 0 && i < SESSION_EXAMPLE_LINE_COUNT) ? session_example_lines[i] : NULL;
}

static inline const char *tree_id(int i)
{
    static const char *const ids[6] = {"u-1", "a-read", "r-read", "a-final", "a-alt", "meta-cwd"};
    return (i >= 0 && i < 6) ? ids[i] : NULL;
}

/* The six entries as one JSONL text (malloc; the caller frees). */
static inline char *tree_jsonl(int count)
{
    size_t n = 1;
    int i;
    char *s;
    for (i = 0; i < count; i++) n += strlen(tree_entry(i)) + 1;
    s = (char *)malloc(n);
    if (!s) abort();
    s[0] = '\0';
    for (i = 0; i < count; i++) {
        strcat(s, tree_entry(i));
        strcat(s, "\n");
    }
    return s;
}

/* ----------------------------------------------------------------- stores ---- */

/* Opens the JSONL file at path with options (NULL: the defaults): SESSION_OK and a
 * store, or the test fails naming `what`. The open result is freed. */
static inline SessionStore *open_ok(const char *path, const char *options, const char *what)
{
    SessionStore *store = NULL;
    char *out = NULL;
    SessionStatus st = session_jsonl_store_open_with(path, options, &store, &out);
    CHECK_STATUS(st, SESSION_OK, out, "%s: open", what);
    session_string_free(out);
    CHECK(store != NULL, "%s: a store", what);
    return store;
}

/* Appends tree_entry(entry): SESSION_OK, or the test fails naming `what` and the id. */
static inline void append_ok(SessionStore *store, int entry, const char *what)
{
    char *out = NULL;
    SessionStatus st = session_store_append(store, tree_entry(entry), &out);
    CHECK_STATUS(st, SESSION_OK, out, "%s: append %s", what, tree_id(entry));
    session_string_free(out);
}

#endif /* LIBSESSION_TEST_CHECK_H */

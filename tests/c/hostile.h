/*
 * hostile.h -- what the hostile-input tests (test_hostile_*.c) share: a temporary folder
 * removed on exit, entry fixtures, string helpers and store openers, on top of check.h.
 *
 * The suite feeds every C function input an attacker or a broken host could give it and
 * checks that every call returns a status and, on failure, a well-formed error JSON: no
 * crash, no hang, no unbounded memory (docs/contract.md §2-§5; docs/reliability.md T14,
 * T18, T19). One program per topic:
 *
 *   test_hostile_null   NULL in every pointer argument of every function (the list is
 *                       generated from session.h, so new functions are covered)
 *   test_hostile_utf8   invalid UTF-8 in every C string position and in recover_jsonl bytes
 *   test_hostile_types  every JSON type, and absence, in every field of every entry shape
 *   test_hostile_json   escapes in ids, numbers, duplicate keys at depth
 *   test_hostile_files  recover_jsonl on hostile bytes, hostile leaf ids and paths, open
 *                       options, repair of hostile files
 *   test_hostile_huge   huge strings, deep nesting, garbage and huge tails, each in a forked
 *                       child with a crash / hang / peak-RSS check
 */
#ifndef LIBSESSION_TEST_HOSTILE_H
#define LIBSESSION_TEST_HOSTILE_H

#include <signal.h>
#include <sys/wait.h>

#include "check.h"

static char g_dir[256];
static pid_t g_parent;

#define HEAD "{\"id\":\"e\",\"parentId\":null,\"timestamp\":1,"
#define META(value) HEAD "\"type\":\"metadata\",\"key\":\"k\",\"value\":" value "}"
#define LINE1 "{\"id\":\"r\",\"parentId\":null,\"timestamp\":1,\"type\":\"metadata\",\"key\":\"k\",\"value\":1}"
#define LINE2 "{\"id\":\"r2\",\"parentId\":\"r\",\"timestamp\":2,\"type\":\"metadata\",\"key\":\"k\",\"value\":2}"

/* ----------------------------------------------------------------- helpers ---- */

static inline void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "out of memory (%zu bytes)\n", n);
        exit(1);
    }
    return p;
}

/* A fresh string: the concatenation of the NULL-terminated argument list. */
static inline char *cat(const char *first, ...)
{
    va_list ap;
    const char *s;
    size_t n = 0;
    char *r, *p;
    va_start(ap, first);
    for (s = first; s; s = va_arg(ap, const char *)) n += strlen(s);
    va_end(ap);
    p = r = (char *)xmalloc(n + 1);
    va_start(ap, first);
    for (s = first; s; s = va_arg(ap, const char *)) {
        size_t k = strlen(s);
        memcpy(p, s, k);
        p += k;
    }
    va_end(ap);
    *p = '\0';
    return r;
}

/* "...": the pointer as JSON text. */
static inline const char *quoted(const char *prefix, const char *pointer)
{
    static char buf[2048];
    snprintf(buf, sizeof buf, "\"%s%s\"", prefix, pointer);
    return buf;
}

/* error.pointer is a JSON string starting with `start` (raw JSON text, no closing quote). */
static inline void expect_pointer_starts(const char *what, const char *out, const char *start)
{
    jspan p = json_get(out, "error.pointer");
    CHECK(p.p && p.n >= strlen(start) && memcmp(p.p, start, strlen(start)) == 0 && p.p[p.n - 1] == '"',
          "%s: error.pointer starts with %s (got %.80s)", what, start, json_show(p));
}

static inline SessionStore *memory_store(void)
{
    SessionStore *s = NULL;
    CHECK_STATUS(session_memory_store_open(&s), SESSION_OK, NULL, "memory_store_open");
    return s;
}

static inline SessionStore *jsonl_store(const char *name, char *path_out, size_t size)
{
    SessionStore *s = NULL;
    char *out = NULL;
    SessionStatus st;
    snprintf(path_out, size, "%s/%s", g_dir, name);
    st = session_jsonl_store_open(path_out, &s, &out);
    CHECK_STATUS(st, SESSION_OK, out, "jsonl_store_open(%s)", name);
    session_string_free(out);
    return s;
}

/* Every JSON type, by a one-letter code, and 'x' for "absent" (json NULL). */
static const struct {
    char code;
    const char *json;
} VARIANTS[] = {{'n', "null"}, {'t', "true"}, {'1', "1"}, {'s', "\"s\""}, {'a', "[]"}, {'o', "{}"}, {'x', NULL}};

/* On any exit of the parent (a failed CHECK too), no file is left behind. */
static inline void hostile_cleanup(void)
{
    if (getpid() == g_parent && g_dir[0]) remove_tmpdir(g_dir);
}

/* Creates the temporary folder g_dir, removed when the program exits. */
static inline void hostile_begin(const char *tag)
{
    make_tmpdir(g_dir, sizeof g_dir, tag);
    g_parent = getpid();
    atexit(hostile_cleanup);
}

/* Prints the number of cases and passes. */
static inline void hostile_end(const char *program)
{
    printf("%ld hostile cases\n", g_results);
    check_done(program);
}

#endif

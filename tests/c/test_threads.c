/*
 * test_threads.c -- many threads appending to ONE store handle (docs/contract.md §4 thread safety):
 * each thread appends a chain of its own entries (root, then children). Every append
 * returns OK; nothing is lost; the file has exactly THREADS * PER_THREAD lines; each
 * entry's line index equals the `seq` its append returned; each thread's entries keep
 * their order. A reader thread reads concurrently and only ever sees the store grow.
 * The same is run on a memory store (entries' index == seq).
 *
 * Usage: test_threads [THREADS [PER_THREAD]]   (default 8 x 500)
 */
#include <pthread.h>

#include "check.h"

static int g_threads = 8, g_per_thread = 500;

struct writer {
    SessionStore *store;
    int index;
    long *seqs;   /* seq returned for entry i */
    int failures; /* appends that did not return OK with a seq */
    char first_error[512];
};

static void *writer_main(void *arg)
{
    struct writer *w = (struct writer *)arg;
    char entry[256], parent[32], *out;
    int i;
    for (i = 0; i < g_per_thread; i++) {
        SessionStatus st;
        if (i == 0)
            strcpy(parent, "null");
        else
            snprintf(parent, sizeof parent, "\"t%d-%d\"", w->index, i - 1);
        snprintf(entry, sizeof entry,
                 "{\"id\":\"t%d-%d\",\"parentId\":%s,\"timestamp\":%d,\"type\":\"message\","
                 "\"message\":{\"role\":\"user\",\"content\":\"thread %d says %d\"}}",
                 w->index, i, parent, i, w->index, i);
        out = NULL;
        st = session_store_append(w->store, entry, &out);
        w->seqs[i] = st == SESSION_OK ? json_int(json_get(out, "seq")) : -1;
        if (w->seqs[i] < 0) {
            if (w->failures++ == 0)
                snprintf(w->first_error, sizeof w->first_error, "t%d-%d: %s %s", w->index, i,
                         session_status_name(st), show(out));
        }
        session_string_free(out);
        if (st == SESSION_OK && i % 97 == 0) {
            /* a read from the same thread sees its own append (reads wait for earlier appends) */
            char id[32];
            snprintf(id, sizeof id, "t%d-%d", w->index, i);
            out = NULL;
            st = session_store_path_to(w->store, id, &out);
            if (st != SESSION_OK || json_length(json_span(out)) != i + 1) {
                if (w->failures++ == 0)
                    snprintf(w->first_error, sizeof w->first_error, "path_to(%s) after its append: %s %.200s", id,
                             session_status_name(st), show(out));
            }
            session_string_free(out);
        }
    }
    return NULL;
}

struct reader {
    SessionStore *store;
    int reads;
    int problems;
    char first_error[256];
};

static void *reader_main(void *arg)
{
    struct reader *r = (struct reader *)arg;
    long last = 0;
    int i;
    for (i = 0; i < r->reads; i++) {
        char *out = NULL;
        SessionStatus st = session_store_entries(r->store, &out);
        long n = st == SESSION_OK ? json_length(json_span(out)) : -1;
        if (n < last) {
            if (r->problems++ == 0)
                snprintf(r->first_error, sizeof r->first_error, "read %d: %s, %ld entries after %ld", i,
                         session_status_name(st), n, last);
        } else {
            last = n;
        }
        session_string_free(out);
    }
    return NULL;
}

/* Runs the writers (and one reader) on `store`; returns seqs[t * per_thread + i]. */
static long *hammer(SessionStore *store, const char *what)
{
    struct writer *writers = (struct writer *)calloc((size_t)g_threads, sizeof *writers);
    pthread_t *tids = (pthread_t *)calloc((size_t)g_threads, sizeof *tids);
    long *seqs = (long *)calloc((size_t)(g_threads * g_per_thread), sizeof *seqs);
    struct reader reader;
    pthread_t reader_tid;
    int t, i;

    CHECK(writers && tids && seqs, "calloc");
    memset(&reader, 0, sizeof reader);
    reader.store = store;
    reader.reads = 10;
    for (t = 0; t < g_threads; t++) {
        writers[t].store = store;
        writers[t].index = t;
        writers[t].seqs = seqs + (size_t)t * (size_t)g_per_thread;
        CHECK(pthread_create(&tids[t], NULL, writer_main, &writers[t]) == 0, "pthread_create");
    }
    CHECK(pthread_create(&reader_tid, NULL, reader_main, &reader) == 0, "pthread_create (reader)");
    for (t = 0; t < g_threads; t++) CHECK(pthread_join(tids[t], NULL) == 0, "pthread_join");
    CHECK(pthread_join(reader_tid, NULL) == 0, "pthread_join (reader)");

    for (t = 0; t < g_threads; t++) {
        CHECK(writers[t].failures == 0, "%s: every append returns OK with a seq (%d failures; first: %s)", what,
              writers[t].failures, writers[t].first_error);
        for (i = 1; i < g_per_thread; i++)
            CHECK(writers[t].seqs[i] > writers[t].seqs[i - 1], "%s: thread %d's order is kept (seq %ld then %ld)",
                  what, t, writers[t].seqs[i - 1], writers[t].seqs[i]);
    }
    CHECK(reader.problems == 0, "%s: a concurrent reader only sees the store grow (%s)", what, reader.first_error);
    free(writers);
    free(tids);
    return seqs;
}

/* id "t<t>-<i>" -> index t * per_thread + i, or -1 */
static long id_index(jspan id)
{
    int t, i, used = 0;
    char buf[64];
    if (!id.p || id.n < 3 || id.n >= sizeof buf) return -1;
    memcpy(buf, id.p, id.n);
    buf[id.n] = '\0';
    if (sscanf(buf, "\"t%d-%d\"%n", &t, &i, &used) != 2 || (size_t)used != id.n) return -1;
    if (t < 0 || t >= g_threads || i < 0 || i >= g_per_thread) return -1;
    return (long)t * g_per_thread + i;
}

/* Checks that the entry at position `pos` is the one whose append returned seq == pos. */
static void check_position(const long *seqs, long pos, jspan entry, char *seen, const char *what)
{
    long k = id_index(json_at(entry, "id"));
    CHECK(k >= 0, "%s: position %ld holds one of the appended entries (%s)", what, pos, json_show(entry));
    CHECK(!seen[k], "%s: position %ld: entry appears once", what, pos);
    seen[k] = 1;
    CHECK(seqs[k] == pos, "%s: entry t%ld-%ld is at position %ld, its append returned seq %ld", what,
          k / g_per_thread, k % g_per_thread, pos, seqs[k]);
}

static void jsonl_store(void)
{
    char dir[256], path[512], *bytes, *line, *seen;
    size_t len;
    long total = (long)g_threads * g_per_thread, lines = 0, *seqs;
    SessionStore *store = NULL;
    SessionStatus st;

    SECTION("JSONL store: concurrent appends on one handle");
    make_tmpdir(dir, sizeof dir, "threads");
    snprintf(path, sizeof path, "%s/threads.jsonl", dir);
    st = session_jsonl_store_open(path, &store, NULL);
    CHECK_STATUS(st, SESSION_OK, NULL, "open");
    seqs = hammer(store, "jsonl");
    session_store_close(store);

    bytes = read_file(path, &len);
    seen = (char *)calloc((size_t)total, 1);
    CHECK(seen != NULL, "calloc");
    CHECK(len > 0 && bytes[len - 1] == '\n', "the file ends with a newline");
    for (line = bytes; line < bytes + len;) {
        char *nl = memchr(line, '\n', (size_t)(bytes + len - line));
        jspan entry;
        CHECK(nl != NULL, "every line is terminated");
        entry.p = line;
        entry.n = (size_t)(nl - line);
        CHECK(lines < total, "no more lines than appends");
        check_position(seqs, lines, entry, seen, "jsonl file line");
        lines++;
        line = nl + 1;
    }
    CHECK(lines == total, "the file has exactly %ld lines (got %ld): none lost", total, lines);
    free(bytes);
    free(seen);
    free(seqs);

    SECTION("JSONL store: reopen reads every entry, ready");
    {
        char *out = NULL;
        st = session_jsonl_store_open(path, &store, &out);
        CHECK_STATUS(st, SESSION_OK, out, "reopen");
        CHECK_JSON(out, "state", "\"ready\"", "reopened file is ready");
        session_string_free(out);
        st = session_store_entries(store, &out);
        CHECK_STATUS(st, SESSION_OK, out, "entries after reopen");
        CHECK(json_length(json_span(out)) == total, "reopen: %ld entries", total);
        session_string_free(out);
        session_store_close(store);
    }
    remove_tmpdir(dir);
}

static void memory_store(void)
{
    long total = (long)g_threads * g_per_thread, pos, *seqs;
    SessionStore *store = NULL;
    char *out = NULL, *seen;
    jspan entries;
    SessionStatus st;

    SECTION("memory store: concurrent appends on one handle");
    CHECK_STATUS(session_memory_store_open(&store), SESSION_OK, NULL, "memory_store_open");
    seqs = hammer(store, "memory");
    st = session_store_entries(store, &out);
    CHECK_STATUS(st, SESSION_OK, out, "entries");
    entries = json_span(out);
    CHECK(json_length(entries) == total, "memory: %ld entries, none lost", total);
    seen = (char *)calloc((size_t)total, 1);
    CHECK(seen != NULL, "calloc");
    {
        /* walk the array once (json_element from the start each time would be quadratic) */
        const char *p = json_ws(entries.p + 1, entries.p + entries.n), *e = entries.p + entries.n;
        for (pos = 0; pos < total; pos++) {
            jspan entry;
            const char *end = json_value_end(p, e);
            CHECK(end != NULL, "memory: well-formed entries array");
            entry.p = p;
            entry.n = (size_t)(end - p);
            check_position(seqs, pos, entry, seen, "memory entries index");
            p = json_ws(end, e);
            if (*p == ',') p = json_ws(p + 1, e);
        }
    }
    session_string_free(out);
    free(seen);
    free(seqs);
    session_store_close(store);
}

int main(int argc, char **argv)
{
    if (argc > 1) g_threads = atoi(argv[1]);
    if (argc > 2) g_per_thread = atoi(argv[2]);
    CHECK(g_threads > 0 && g_per_thread > 0, "usage: test_threads [THREADS [PER_THREAD]]");
    printf("%d threads x %d appends\n", g_threads, g_per_thread);
    jsonl_store();
    memory_store();
    check_done("test_threads");
    return 0;
}

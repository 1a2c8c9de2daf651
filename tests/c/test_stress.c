/*
 * test_stress.c -- T8 through the C ABI: THREADS writer threads x PER_THREAD valid appends
 * on ONE JSONL store handle, plus READERS reader threads on the growing store.
 *
 * Each writer builds its own chain t<T>-0 <- t<T>-1 <- ... (user / assistant toolCall /
 * toolResult / metadata in turn). Interleaved with its valid appends it makes appends that
 * must fail and fail only themselves:
 *   after every odd step, the id it was just acked again -> SESSION_ERR_DUPLICATE_ID
 *     (this also proves its own acked entry is visible to it at once);
 *   every 4th step, a new id whose parent is its own NEXT, not yet appended, entry
 *     -> SESSION_ERR_MISSING_PARENT;
 *   every 32nd step, session_store_path_to / session_store_messages_on_path on its own
 *     just-acked entry -> the whole chain up to it.
 * Readers loop over session_store_entries (never shrinks; every thread's entries appear as
 * a gap-free prefix of its chain, in order) and session_store_path_to /
 * session_store_messages_on_path on the newest entry seen (lengths only grow).
 *
 * Afterwards: the file has exactly THREADS*PER_THREAD lines; each line re-parses with
 * session_parse_entry to itself; line index == the seq its append returned; seq values
 * unique; per-thread order kept; 0 lost, 0 duplicated, no rejected entry in the file;
 * reopen -> ready with every entry, and the next append gets seq THREADS*PER_THREAD.
 *
 * Usage: test_stress [THREADS [PER_THREAD [READERS]]]   (default 8 x 2000, 2 readers)
 */
#include <pthread.h>

#include "check.h"

static int g_threads = 8, g_per = 2000, g_readers = 2;

static pthread_mutex_t g_done_lock = PTHREAD_MUTEX_INITIALIZER;
static int g_done;

static int writers_done(void)
{
    int d;
    pthread_mutex_lock(&g_done_lock);
    d = g_done;
    pthread_mutex_unlock(&g_done_lock);
    return d;
}

/* Messages on the path to step i of a chain: every 4th entry (i % 4 == 3) is metadata. */
static long messages_upto(long i) { return (i + 1) - (i + 1) / 4; }

/* The valid entry for step i of thread t (kind i % 4). */
static void make_entry(char *buf, size_t size, int t, int i)
{
    char parent[32];
    if (i == 0)
        strcpy(parent, "null");
    else
        snprintf(parent, sizeof parent, "\"t%d-%d\"", t, i - 1);
    switch (i % 4) {
    case 0:
        snprintf(buf, size,
                 "{\"id\":\"t%d-%d\",\"parentId\":%s,\"timestamp\":%d,\"type\":\"message\","
                 "\"message\":{\"role\":\"user\",\"content\":\"thread %d step %d \\u2028 \xc3\xa9\"}}",
                 t, i, parent, i, t, i);
        break;
    case 1:
        snprintf(buf, size,
                 "{\"id\":\"t%d-%d\",\"parentId\":%s,\"timestamp\":%d,\"type\":\"message\","
                 "\"message\":{\"role\":\"assistant\",\"content\":[{\"type\":\"toolCall\",\"id\":\"c%d-%d\","
                 "\"name\":\"read\",\"arguments\":{\"path\":\"f%d\",\"n\":%d}}],\"stopReason\":\"toolUse\"}}",
                 t, i, parent, i, t, i, i, i);
        break;
    case 2:
        snprintf(buf, size,
                 "{\"id\":\"t%d-%d\",\"parentId\":%s,\"timestamp\":%d,\"type\":\"message\","
                 "\"message\":{\"role\":\"toolResult\",\"toolCallId\":\"c%d-%d\",\"toolName\":\"read\","
                 "\"content\":[{\"type\":\"text\",\"text\":\"ok\\n%d\"}],\"isError\":false,\"details\":null}}",
                 t, i, parent, i, t, i - 1, i);
        break;
    default:
        snprintf(buf, size,
                 "{\"id\":\"t%d-%d\",\"parentId\":%s,\"timestamp\":%d.5,\"type\":\"metadata\","
                 "\"key\":\"step\",\"value\":{\"t\":%d,\"i\":%d,\"x\":[null,true,-0.0]}}",
                 t, i, parent, i, t, i);
    }
}

struct writer {
    SessionStore *store;
    int index;
    long *seqs; /* seq returned for step i */
    long dup_ok, missing_ok, reads_ok;
    int failures;
    char first_error[600];
};

#define WRITER_FAIL(w, ...)                                                        \
    do {                                                                           \
        if ((w)->failures++ == 0) snprintf((w)->first_error, sizeof (w)->first_error, __VA_ARGS__); \
    } while (0)

/* code == name and each (member, raw) pair matches; thread-safe (no static buffers). */
static int error_is(const char *out, const char *code, const char *m1, const char *v1, const char *m2, const char *v2)
{
    char want[64];
    snprintf(want, sizeof want, "\"%s\"", code);
    if (!json_is(json_get(out, "error.code"), want)) return 0;
    if (!json_get(out, "error.message").p) return 0;
    if (m1 && !json_is(json_get(out, m1), v1)) return 0;
    if (m2 && !json_is(json_get(out, m2), v2)) return 0;
    return 1;
}

static void *writer_main(void *arg)
{
    struct writer *w = (struct writer *)arg;
    char entry[512], id[32], raw[40], raw2[40];
    long last_seq = -1;
    int t = w->index, i;

    for (i = 0; i < g_per; i++) {
        char *out = NULL;
        SessionStatus st;
        long seq;

        make_entry(entry, sizeof entry, t, i);
        snprintf(id, sizeof id, "t%d-%d", t, i);
        st = session_store_append(w->store, entry, &out);
        seq = st == SESSION_OK ? json_int(json_get(out, "seq")) : -1;
        snprintf(raw, sizeof raw, "\"%s\"", id);
        if (st != SESSION_OK || seq < 0 || !json_is(json_get(out, "id"), raw))
            WRITER_FAIL(w, "append %s: %s %.400s", id, session_status_name(st), show(out));
        else if (seq <= last_seq)
            WRITER_FAIL(w, "append %s: seq %ld after this thread's seq %ld", id, seq, last_seq);
        w->seqs[i] = seq;
        if (seq >= 0) last_seq = seq;
        session_string_free(out);

        if (i % 2 == 1) {
            /* the id just acked, again (different content): visible at once, so a duplicate */
            snprintf(entry, sizeof entry,
                     "{\"id\":\"%s\",\"parentId\":null,\"timestamp\":0,\"type\":\"metadata\","
                     "\"key\":\"REJECTED\",\"value\":\"duplicate\"}",
                     id);
            out = NULL;
            st = session_store_append(w->store, entry, &out);
            if (st == SESSION_ERR_DUPLICATE_ID && error_is(out, "duplicate_id", "error.id", raw, NULL, NULL))
                w->dup_ok++;
            else
                WRITER_FAIL(w, "duplicate of %s: %s %.400s (expected duplicate_id)", id, session_status_name(st),
                            show(out));
            session_string_free(out);
        }
        if (i % 4 == 0) {
            /* a new id whose parent is this thread's next entry, not appended yet */
            snprintf(raw, sizeof raw, "\"m%d-%d\"", t, i);
            snprintf(raw2, sizeof raw2, "\"t%d-%d\"", t, i + 1);
            snprintf(entry, sizeof entry,
                     "{\"id\":%s,\"parentId\":%s,\"timestamp\":0,\"type\":\"metadata\","
                     "\"key\":\"REJECTED\",\"value\":\"missing parent\"}",
                     raw, raw2);
            out = NULL;
            st = session_store_append(w->store, entry, &out);
            if (st == SESSION_ERR_MISSING_PARENT &&
                error_is(out, "missing_parent", "error.childId", raw, "error.parentId", raw2))
                w->missing_ok++;
            else
                WRITER_FAIL(w, "child of the future %s: %s %.400s (expected missing_parent)", raw2,
                            session_status_name(st), show(out));
            session_string_free(out);
        }
        if (i % 32 == 0 || i % 32 == 16) {
            /* the thread's own acked entry is readable at once, with its whole chain */
            int path = i % 32 == 0;
            long want = path ? i + 1 : messages_upto(i);
            out = NULL;
            st = path ? session_store_path_to(w->store, id, &out) : session_store_messages_on_path(w->store, id, &out);
            if (st != SESSION_OK || json_length(json_span(out)) != want)
                WRITER_FAIL(w, "%s(%s) after its append: %s, %ld elements (expected %ld) %.200s",
                            path ? "path_to" : "messages_on_path", id, session_status_name(st),
                            st == SESSION_OK ? json_length(json_span(out)) : -1, want, show(out));
            else
                w->reads_ok++;
            session_string_free(out);
        }
    }
    return NULL;
}

struct reader {
    SessionStore *store;
    int index;
    long rounds, entries_reads, path_reads;
    long last_total;
    long *seen_max; /* per thread: the highest step seen so far (-1: none) */
    int failures;
    char first_error[600];
};

/* "t<T>-<I>" -> T and I; "m..." or anything else -> 0. */
static int parse_id(jspan id, int *t, int *i)
{
    char buf[48];
    int used = 0;
    if (!id.p || id.n < 3 || id.n >= sizeof buf) return 0;
    memcpy(buf, id.p, id.n);
    buf[id.n] = '\0';
    if (sscanf(buf, "\"t%d-%d\"%n", t, i, &used) != 2 || (size_t)used != id.n) return 0;
    return *t >= 0 && *t < g_threads && *i >= 0 && *i < g_per;
}

static void *reader_main(void *arg)
{
    struct reader *r = (struct reader *)arg;
    long *next = (long *)malloc((size_t)g_threads * sizeof *next);
    int last_round = 0;

    if (!next) abort();
    while (!last_round) {
        char *out = NULL;
        SessionStatus st;
        long total = 0;
        int t;

        last_round = writers_done(); /* one more full round after the writers finish */
        r->rounds++;
        st = session_store_entries(r->store, &out);
        r->entries_reads++;
        if (st != SESSION_OK) {
            WRITER_FAIL(r, "reader %d: entries: %s %.200s", r->index, session_status_name(st), show(out));
        } else {
            jspan all = json_span(out);
            const char *e = all.p + all.n, *p = json_ws(all.p + 1, e);
            for (t = 0; t < g_threads; t++) next[t] = 0;
            while (p < e && *p != ']') {
                const char *end = json_value_end(p, e);
                jspan entry;
                int et, ei;
                if (!end) {
                    WRITER_FAIL(r, "reader %d: malformed entries array", r->index);
                    break;
                }
                entry.p = p;
                entry.n = (size_t)(end - p);
                if (!parse_id(json_member(entry, "id"), &et, &ei))
                    WRITER_FAIL(r, "reader %d: entry %ld is not a valid chain entry: %.200s", r->index, total,
                                json_show(entry));
                else if (ei != next[et])
                    WRITER_FAIL(r, "reader %d: entry %ld is t%d-%d, expected t%d-%ld (chains are gap-free, in order)",
                                r->index, total, et, ei, et, next[et]);
                else
                    next[et]++;
                total++;
                p = json_ws(end, e);
                if (p < e && *p == ',') p = json_ws(p + 1, e);
            }
            if (total < r->last_total)
                WRITER_FAIL(r, "reader %d: entries shrank from %ld to %ld", r->index, r->last_total, total);
            r->last_total = total;
            for (t = 0; t < g_threads; t++) {
                if (next[t] - 1 < r->seen_max[t])
                    WRITER_FAIL(r, "reader %d: thread %d's chain shrank to %ld entries", r->index, t, next[t]);
                else
                    r->seen_max[t] = next[t] - 1;
            }
        }
        session_string_free(out);

        /* the newest entry seen of one thread in turn: its path and messages, complete */
        t = (int)(r->rounds % g_threads);
        if (r->seen_max[t] >= 0) {
            char id[32];
            long k = r->seen_max[t];
            snprintf(id, sizeof id, "t%d-%d", t, (int)k);
            out = NULL;
            st = session_store_path_to(r->store, id, &out);
            if (st != SESSION_OK || json_length(json_span(out)) != k + 1)
                WRITER_FAIL(r, "reader %d: path_to(%s): %s, %ld elements (expected %ld)", r->index, id,
                            session_status_name(st), st == SESSION_OK ? json_length(json_span(out)) : -1, k + 1);
            session_string_free(out);
            out = NULL;
            st = session_store_messages_on_path(r->store, id, &out);
            if (st != SESSION_OK || json_length(json_span(out)) != messages_upto(k))
                WRITER_FAIL(r, "reader %d: messages_on_path(%s): %s, %ld elements (expected %ld)", r->index, id,
                            session_status_name(st), st == SESSION_OK ? json_length(json_span(out)) : -1,
                            messages_upto(k));
            session_string_free(out);
            r->path_reads += 2;
        }
    }
    free(next);
    return NULL;
}

int main(int argc, char **argv)
{
    char dir[256], path[512], entry[512], *bytes, *line, *seen, *out = NULL;
    long total, lines = 0, lost = 0, duplicated = 0, foreign = 0, reparse_bad = 0, seq_bad = 0, order_bad = 0;
    long dup_ok = 0, missing_ok = 0, reads_ok = 0, reader_rounds = 0, reader_reads = 0, *seqs, *last_step;
    struct writer *writers;
    struct reader *readers;
    pthread_t *wt, *rt;
    SessionStore *store = NULL;
    SessionStatus st;
    double t0, wall;
    size_t len;
    int t, i;

    if (argc > 1) g_threads = atoi(argv[1]);
    if (argc > 2) g_per = atoi(argv[2]);
    if (argc > 3) g_readers = atoi(argv[3]);
    CHECK(g_threads > 0 && g_per > 0 && g_readers >= 0, "usage: test_stress [THREADS [PER_THREAD [READERS]]]");
    total = (long)g_threads * g_per;
    printf("%d writer threads x %d appends, %d reader threads, one JSONL handle\n", g_threads, g_per, g_readers);

    make_tmpdir(dir, sizeof dir, "stress");
    snprintf(path, sizeof path, "%s/stress.jsonl", dir);
    st = session_jsonl_store_open(path, &store, &out);
    CHECK_STATUS(st, SESSION_OK, out, "open a new file");
    session_string_free(out);

    writers = (struct writer *)calloc((size_t)g_threads, sizeof *writers);
    readers = (struct reader *)calloc((size_t)(g_readers ? g_readers : 1), sizeof *readers);
    wt = (pthread_t *)calloc((size_t)g_threads, sizeof *wt);
    rt = (pthread_t *)calloc((size_t)(g_readers ? g_readers : 1), sizeof *rt);
    seqs = (long *)calloc((size_t)total, sizeof *seqs);
    CHECK(writers && readers && wt && rt && seqs, "calloc");

    SECTION("concurrent appends (valid, duplicate, missing parent) and reads on one handle");
    t0 = now_seconds();
    for (t = 0; t < g_threads; t++) {
        writers[t].store = store;
        writers[t].index = t;
        writers[t].seqs = seqs + (size_t)t * (size_t)g_per;
        CHECK(pthread_create(&wt[t], NULL, writer_main, &writers[t]) == 0, "pthread_create (writer)");
    }
    for (i = 0; i < g_readers; i++) {
        readers[i].store = store;
        readers[i].index = i;
        readers[i].seen_max = (long *)malloc((size_t)g_threads * sizeof(long));
        CHECK(readers[i].seen_max != NULL, "malloc");
        for (t = 0; t < g_threads; t++) readers[i].seen_max[t] = -1;
        CHECK(pthread_create(&rt[i], NULL, reader_main, &readers[i]) == 0, "pthread_create (reader)");
    }
    for (t = 0; t < g_threads; t++) CHECK(pthread_join(wt[t], NULL) == 0, "pthread_join (writer)");
    pthread_mutex_lock(&g_done_lock);
    g_done = 1;
    pthread_mutex_unlock(&g_done_lock);
    for (i = 0; i < g_readers; i++) CHECK(pthread_join(rt[i], NULL) == 0, "pthread_join (reader)");
    wall = now_seconds() - t0;
    CHECK(session_store_state(store) == SESSION_STATE_READY, "the store is still ready after the rejected appends");
    session_store_close(store);

    for (t = 0; t < g_threads; t++) {
        CHECK(writers[t].failures == 0, "writer %d: %d failures; first: %s", t, writers[t].failures,
              writers[t].first_error);
        dup_ok += writers[t].dup_ok;
        missing_ok += writers[t].missing_ok;
        reads_ok += writers[t].reads_ok;
    }
    for (i = 0; i < g_readers; i++) {
        CHECK(readers[i].failures == 0, "reader %d: %d failures; first: %s", i, readers[i].failures,
              readers[i].first_error);
        CHECK(readers[i].last_total == total, "reader %d's last round saw all %ld entries (saw %ld)", i, total,
              readers[i].last_total);
        reader_rounds += readers[i].rounds;
        reader_reads += readers[i].entries_reads + readers[i].path_reads;
        free(readers[i].seen_max);
    }
    CHECK(dup_ok == (long)g_threads * (g_per / 2), "every duplicate append failed with duplicate_id");
    CHECK(missing_ok == (long)g_threads * ((g_per + 3) / 4), "every missing-parent append failed with missing_parent");

    SECTION("the file: one line per ack, at its seq, each re-parsing to itself");
    bytes = read_file(path, &len);
    seen = (char *)calloc((size_t)total, 1);
    last_step = (long *)malloc((size_t)g_threads * sizeof *last_step);
    CHECK(seen && last_step, "calloc");
    for (t = 0; t < g_threads; t++) last_step[t] = -1;
    CHECK(len > 0 && bytes[len - 1] == '\n', "the file ends with a newline");
    for (line = bytes; line < bytes + len;) {
        char *nl = (char *)memchr(line, '\n', (size_t)(bytes + len - line));
        jspan e;
        int et, ei;
        CHECK(nl != NULL, "every line is terminated");
        *nl = '\0';
        e.p = line;
        e.n = (size_t)(nl - line);
        out = NULL;
        st = session_parse_entry(line, &out);
        if (st != SESSION_OK || strcmp(out, line) != 0) {
            if (reparse_bad++ == 0)
                fprintf(stderr, "line %ld does not re-parse to itself: %s\n  line: %.300s\n  got:  %.300s\n",
                        lines + 1, session_status_name(st), line, show(out));
        }
        session_string_free(out);
        if (!parse_id(json_member(e, "id"), &et, &ei)) {
            if (foreign++ == 0) fprintf(stderr, "line %ld is not a valid chain entry: %.300s\n", lines + 1, line);
        } else {
            long k = (long)et * g_per + ei;
            if (seen[k]) {
                duplicated++;
            } else {
                seen[k] = 1;
                if (seqs[k] != lines && seq_bad++ == 0)
                    fprintf(stderr, "t%d-%d is on line index %ld, its append returned seq %ld\n", et, ei, lines,
                            seqs[k]);
                if (ei <= last_step[et] && order_bad++ == 0)
                    fprintf(stderr, "t%d-%d comes after t%d-%ld in the file\n", et, ei, et, last_step[et]);
                last_step[et] = ei;
            }
        }
        lines++;
        line = nl + 1;
    }
    for (i = 0; i < total; i++) lost += !seen[i];
    {
        /* seq values: each in [0,total), unique */
        char *used = (char *)calloc((size_t)total, 1);
        long bad = 0;
        CHECK(used != NULL, "calloc");
        for (i = 0; i < total; i++) {
            if (seqs[i] < 0 || seqs[i] >= total || used[seqs[i]])
                bad++;
            else
                used[seqs[i]] = 1;
        }
        CHECK(bad == 0, "seq values are unique and within 0..%ld (%ld bad)", total - 1, bad);
        free(used);
    }
    printf("threads x appends: %d x %d = %ld acked; rejected as expected: %ld duplicate_id, %ld missing_parent\n",
           g_threads, g_per, total, dup_ok, missing_ok);
    printf("reads: %ld by writers of their own acks, %ld by readers in %ld rounds\n", reads_ok, reader_reads,
           reader_rounds);
    printf("file lines: %ld; lost: %ld; duplicated: %ld; foreign: %ld; seq != line: %ld; out of order: %ld; "
           "not re-parsing: %ld\n",
           lines, lost, duplicated, foreign, seq_bad, order_bad, reparse_bad);
    printf("wall time: %.3f s (%.0f calls/s)\n", wall,
           (double)(total + dup_ok + missing_ok + reads_ok + reader_reads) / (wall > 0 ? wall : 1));
    CHECK(lines == total, "the file has exactly %ld lines (got %ld)", total, lines);
    CHECK(lost == 0, "0 lost (got %ld)", lost);
    CHECK(duplicated == 0, "0 duplicated (got %ld)", duplicated);
    CHECK(foreign == 0, "no rejected or unknown entry reached the file (got %ld)", foreign);
    CHECK(seq_bad == 0, "line index == returned seq for every ack (%ld differ)", seq_bad);
    CHECK(order_bad == 0, "per-thread order kept in the file (%ld out of order)", order_bad);
    CHECK(reparse_bad == 0, "every line parses with session_parse_entry, to itself (%ld do not)", reparse_bad);
    free(bytes);
    free(seen);
    free(last_step);

    SECTION("reopen: ready, every entry; the next append continues the seq");
    out = NULL;
    st = session_jsonl_store_open(path, &store, &out);
    CHECK_STATUS(st, SESSION_OK, out, "reopen");
    CHECK_JSON(out, "state", "\"ready\"", "reopened file is ready");
    CHECK_JSON_LENGTH(out, "warnings", 0, "no warnings on reopen");
    session_string_free(out);
    out = NULL;
    st = session_store_entries(store, &out);
    CHECK_STATUS(st, SESSION_OK, out, "entries after reopen");
    CHECK(json_length(json_span(out)) == total, "reopen: %ld entries (got %ld)", total, json_length(json_span(out)));
    session_string_free(out);
    snprintf(entry, sizeof entry,
             "{\"id\":\"after\",\"parentId\":\"t0-%d\",\"timestamp\":1,\"type\":\"metadata\",\"key\":\"k\",\"value\":1}",
             g_per - 1);
    out = NULL;
    st = session_store_append(store, entry, &out);
    CHECK_STATUS(st, SESSION_OK, out, "append after reopen");
    CHECK(json_int(json_get(out, "seq")) == total, "the next seq is %ld (got %s)", total, out);
    session_string_free(out);
    session_store_close(store);

    remove_tmpdir(dir);
    free(writers);
    free(readers);
    free(wt);
    free(rt);
    free(seqs);
    check_done("test_stress");
    return 0;
}

/* The SQLite peer of the benchmark (issue 15), on the system libsqlite3: what a user
 * would otherwise pick, a table entries(id TEXT PRIMARY KEY, parent_id TEXT, seq INTEGER,
 * body TEXT) in WAL mode, with a recursive CTE for the path.
 *
 *   cc -O2 -o target/sqlite_peer benches/sqlite_peer.c -lsqlite3 -lpthread
 *
 *   version                       the library's version: version 3.x.y
 *   load JSONL DB                 every line into entries, one transaction, then a
 *                                 checkpoint (TRUNCATE): entries, load_ms, db_bytes,
 *                                 wal_bytes
 *   path DB LEAF RUNS             open -> path to LEAF (the CTE, bodies copied into one
 *                                 JSON array as path_to_json returns them): median ms of
 *                                 RUNS (after one warm-up) from sqlite3_open_v2 to the last
 *                                 row (close is not timed), then the array's bytes and hash and the ids
 *   deepest DB LEAF RUNS          the same query on one open connection, median ms
 *   messages DB LEAF RUNS         the CTE keeping entries with type "message", their
 *                                 json_extract(body,'$.message') as one JSON array, on
 *                                 one open connection: median ms, bytes, hash, ids
 *   rss DB LEAF                   VmRSS before sqlite3_open_v2 and after open + path
 *   append-normal DB LINES        a fresh DB; every line of LINES appended as its own
 *                                 transaction (autocommit INSERT) at synchronous=NORMAL
 *   append-full DB LINES          the same at synchronous=FULL
 *   append-threads DB LINES T     T threads, each with its own connection (FULL,
 *                                 busy_timeout 60 s), thread t appending lines i with
 *                                 i % T == t in order
 *   resume DB RUNS [LINES]        resuming a session with compactions (the resume
 *                                 benchmark): sqlite3_open_v2 + the latest entry
 *                                 (greatest rowid) = open_ms; then the context's
 *                                 messages = context_ms: a CTE walks up from that leaf
 *                                 to the nearest compaction (its firstKeptEntryId and
 *                                 summary), a second from the compaction's parent up to
 *                                 that entry; the messages of both walks, root first, as
 *                                 one JSON array. resume_ms is the two on one clock
 *                                 (medians of RUNS after one warm-up, close not timed).
 *                                 With LINES: in one transaction rolled back at the
 *                                 end, each line (its parentId is replaced by the
 *                                 current leaf) is inserted, then the context's
 *                                 messages of the new leaf fetched: steady_ms. Prints
 *                                 the kept ids of the first run ("id ID").
 *   resume-rss DB                 VmHWM before open and after open + the context
 *
 * The append commands print append_us (mean wall time per append), then every row in
 * commit (rowid) order as "row ID PARENT" (PARENT "-" when NULL).
 * Output is one "key value" per line; ids as "id ID". The bench (benches/perf.rs,
 * `cargo bench --bench perf -- sqlite`) runs this program and checks its ids against
 * libsession's. A benchmark, never a test: it fails only when a step fails.
 */
#include <pthread.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static void die(sqlite3 *db, const char *what) {
    fprintf(stderr, "sqlite_peer: %s: %s\n", what, db ? sqlite3_errmsg(db) : "");
    exit(1);
}

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static long long file_size(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (long long)st.st_size : 0;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *t, int n) {
    qsort(t, (size_t)n, sizeof t[0], cmp);
    return n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
}

static void exec(sqlite3 *db, const char *sql) {
    if (sqlite3_exec(db, sql, 0, 0, 0) != SQLITE_OK) die(db, sql);
}

/* A growable byte buffer. */
typedef struct {
    char *p;
    size_t len, cap;
} Buf;

static void put(Buf *b, const void *s, size_t n) {
    if (b->len + n + 1 > b->cap) {
        while (b->len + n + 1 > b->cap) b->cap = b->cap ? b->cap * 2 : 4096;
        b->p = realloc(b->p, b->cap);
        if (!b->p) die(NULL, "out of memory");
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
}

/* FNV-1a 32, the hash perf.rs computes over libsession's output. */
static uint32_t fnv32(const char *p, size_t n) {
    uint32_t h = 0x811c9dc5u;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)p[i];
        h *= 0x01000193u;
    }
    return h;
}

/* ---- load ----------------------------------------------------------------------- */

static const char *SCHEMA =
    "PRAGMA journal_mode=WAL;"
    "CREATE TABLE entries(id TEXT PRIMARY KEY, parent_id TEXT, seq INTEGER, body TEXT);";

static const char *INSERT_SQL =
    "INSERT INTO entries VALUES(json_extract(?1,'$.id'), json_extract(?1,'$.parentId'), ?2, ?1)";

static void remove_db(const char *path) {
    char side[4096];
    remove(path);
    snprintf(side, sizeof side, "%s-wal", path);
    remove(side);
    snprintf(side, sizeof side, "%s-shm", path);
    remove(side);
}

static int load(const char *jsonl, const char *path) {
    sqlite3 *db;
    remove_db(path);
    double start = now_ms();
    if (sqlite3_open(path, &db) != SQLITE_OK) die(db, "open");
    exec(db, SCHEMA);
    exec(db, "PRAGMA synchronous=NORMAL");
    FILE *in = fopen(jsonl, "r");
    if (!in) die(NULL, jsonl);
    sqlite3_stmt *ins;
    if (sqlite3_prepare_v2(db, INSERT_SQL, -1, &ins, 0) != SQLITE_OK) die(db, "prepare insert");
    exec(db, "BEGIN");
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    long seq = 0;
    while ((n = getline(&line, &cap, in)) > 0) {
        if (line[n - 1] == '\n') n--;
        if (n == 0) continue;
        sqlite3_bind_text(ins, 1, line, (int)n, SQLITE_STATIC);
        sqlite3_bind_int64(ins, 2, seq++);
        if (sqlite3_step(ins) != SQLITE_DONE) die(db, "insert");
        sqlite3_reset(ins);
    }
    exec(db, "COMMIT");
    sqlite3_finalize(ins);
    exec(db, "PRAGMA wal_checkpoint(TRUNCATE)");
    double ms = now_ms() - start;
    char wal[4096];
    snprintf(wal, sizeof wal, "%s-wal", path);
    printf("entries %ld\nload_ms %.3f\ndb_bytes %lld\nwal_bytes %lld\n", seq, ms,
           file_size(path), file_size(wal));
    sqlite3_close(db);
    free(line);
    fclose(in);
    return 0;
}

/* ---- reads ---------------------------------------------------------------------- */

static const char *PATH_SQL =
    "WITH RECURSIVE p(id, parent_id, body, d) AS ("
    " SELECT id, parent_id, body, 0 FROM entries WHERE id = ?1"
    " UNION ALL SELECT e.id, e.parent_id, e.body, p.d + 1 FROM entries e JOIN p ON e.id = p.parent_id)"
    " SELECT id, body FROM p ORDER BY d DESC";

/* The messages on the path: the same CTE, metadata filtered out in SQL, each message
 * taken out of its entry with json_extract (which returns objects as JSON text). */
static const char *MESSAGES_SQL =
    "WITH RECURSIVE p(id, parent_id, body, d) AS ("
    " SELECT id, parent_id, body, 0 FROM entries WHERE id = ?1"
    " UNION ALL SELECT e.id, e.parent_id, e.body, p.d + 1 FROM entries e JOIN p ON e.id = p.parent_id)"
    " SELECT id, json_extract(body, '$.message') FROM p"
    " WHERE json_extract(body, '$.type') = 'message' ORDER BY d DESC";

static sqlite3 *open_ro(const char *path) {
    sqlite3 *db;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, 0) != SQLITE_OK) die(db, "open");
    return db;
}

/* Runs `sql` for `leaf` on `db`: the second column of every row copied into `out` as
 * one JSON array (what the library returns), the ids into `ids` one a line. */
static void query(sqlite3 *db, const char *sql, const char *leaf, Buf *out, Buf *ids) {
    sqlite3_stmt *q;
    if (sqlite3_prepare_v2(db, sql, -1, &q, 0) != SQLITE_OK) die(db, "prepare");
    sqlite3_bind_text(q, 1, leaf, -1, SQLITE_STATIC);
    out->len = 0;
    if (ids) ids->len = 0;
    put(out, "[", 1);
    int rc, first = 1;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        if (!first) put(out, ",", 1);
        first = 0;
        const char *body = (const char *)sqlite3_column_text(q, 1);
        put(out, body, (size_t)sqlite3_column_bytes(q, 1));
        if (ids) {
            put(ids, sqlite3_column_text(q, 0), (size_t)sqlite3_column_bytes(q, 0));
            put(ids, "\n", 1);
        }
    }
    if (rc != SQLITE_DONE) die(db, "query");
    put(out, "]", 1);
    sqlite3_finalize(q);
}

static void print_result(const char *key, double ms, Buf *out, Buf *ids) {
    printf("%s_ms %.6f\nbytes %zu\nfnv %u\n", key, ms, out->len, fnv32(out->p, out->len));
    char *line = ids->p;
    for (char *nl; line && (nl = strchr(line, '\n')); line = nl + 1) {
        *nl = 0;
        printf("id %s\n", line);
    }
}

/* open -> path, RUNS times, each from a fresh connection. */
static int path(const char *file, const char *leaf, int runs) {
    double *t = calloc((size_t)runs, sizeof *t);
    Buf out = {0}, ids = {0};
    for (int i = -1; i < runs; i++) { /* run -1 warms up (and collects the ids) */
        double start = now_ms();
        sqlite3 *db = open_ro(file);
        query(db, PATH_SQL, leaf, &out, i < 0 ? &ids : NULL);
        double ms = now_ms() - start;
        if (i >= 0) t[i] = ms;
        sqlite3_close(db);
    }
    print_result("open_path", median(t, runs), &out, &ids);
    return 0;
}

/* `sql` RUNS times on one open connection, after one warm-up run. */
static int on_open(const char *file, const char *sql, const char *key, const char *leaf,
                   int runs) {
    double *t = calloc((size_t)runs, sizeof *t);
    Buf out = {0}, ids = {0};
    sqlite3 *db = open_ro(file);
    query(db, sql, leaf, &out, &ids);
    for (int i = 0; i < runs; i++) {
        double start = now_ms();
        query(db, sql, leaf, &out, NULL);
        t[i] = now_ms() - start;
    }
    sqlite3_close(db);
    print_result(key, median(t, runs), &out, &ids);
    return 0;
}

/* A field of /proc/self/status in bytes ("VmRSS: %lld", "VmHWM: %lld"). */
static long long proc_status_bytes(const char *pattern) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long long kb = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, pattern, &kb) == 1) break;
    if (f) fclose(f);
    return kb * 1024;
}

static long long vm_rss(void) { return proc_status_bytes("VmRSS: %lld"); }

/* VmRSS before open and after open + path (the connection still open). */
static int rss(const char *file, const char *leaf) {
    Buf out = {0}, ids = {0};
    put(&out, "", 0);
    put(&ids, "", 0);
    long long before = vm_rss();
    sqlite3 *db = open_ro(file);
    query(db, PATH_SQL, leaf, &out, &ids);
    long long after = vm_rss();
    printf("rss_before %lld\nrss_after %lld\nbytes %zu\n", before, after, out.len);
    sqlite3_close(db);
    return 0;
}

/* ---- appends -------------------------------------------------------------------- */

typedef struct {
    char **line;
    size_t *len;
    long n;
} Lines;

static Lines read_lines(const char *file) {
    Lines l = {0};
    FILE *in = fopen(file, "r");
    if (!in) die(NULL, file);
    long cap = 0;
    char *line = NULL;
    size_t lcap = 0;
    ssize_t n;
    while ((n = getline(&line, &lcap, in)) > 0) {
        if (line[n - 1] == '\n') n--;
        if (n == 0) continue;
        if (l.n == cap) {
            cap = cap ? cap * 2 : 1024;
            l.line = realloc(l.line, (size_t)cap * sizeof *l.line);
            l.len = realloc(l.len, (size_t)cap * sizeof *l.len);
        }
        l.line[l.n] = malloc((size_t)n + 1);
        memcpy(l.line[l.n], line, (size_t)n);
        l.line[l.n][n] = 0;
        l.len[l.n++] = (size_t)n;
    }
    free(line);
    fclose(in);
    return l;
}

static void create_db(const char *path) {
    sqlite3 *db;
    remove_db(path);
    if (sqlite3_open(path, &db) != SQLITE_OK) die(db, "open");
    exec(db, SCHEMA);
    sqlite3_close(db);
}

static sqlite3 *open_rw(const char *path, const char *sync) {
    sqlite3 *db;
    if (sqlite3_open(path, &db) != SQLITE_OK) die(db, "open");
    exec(db, sync);
    sqlite3_busy_timeout(db, 60000);
    return db;
}

/* Appends lines[i] for i = first, first + step, ... each as one transaction. */
static void append_lines(sqlite3 *db, const Lines *l, long first, long step) {
    sqlite3_stmt *ins;
    if (sqlite3_prepare_v2(db, INSERT_SQL, -1, &ins, 0) != SQLITE_OK) die(db, "prepare insert");
    for (long i = first; i < l->n; i += step) {
        sqlite3_bind_text(ins, 1, l->line[i], (int)l->len[i], SQLITE_STATIC);
        sqlite3_bind_int64(ins, 2, i);
        if (sqlite3_step(ins) != SQLITE_DONE) die(db, "insert");
        sqlite3_reset(ins);
    }
    sqlite3_finalize(ins);
}

static void dump_rows(const char *path) {
    sqlite3 *db = open_ro(path);
    sqlite3_stmt *q;
    if (sqlite3_prepare_v2(db, "SELECT id, parent_id FROM entries ORDER BY rowid", -1, &q, 0) !=
        SQLITE_OK)
        die(db, "prepare dump");
    while (sqlite3_step(q) == SQLITE_ROW) {
        const unsigned char *parent = sqlite3_column_text(q, 1);
        printf("row %s %s\n", sqlite3_column_text(q, 0), parent ? (const char *)parent : "-");
    }
    sqlite3_finalize(q);
    sqlite3_close(db);
}

static int append_one(const char *path, const char *file, const char *sync) {
    Lines l = read_lines(file);
    create_db(path);
    sqlite3 *db = open_rw(path, sync);
    double start = now_ms();
    append_lines(db, &l, 0, 1);
    double ms = now_ms() - start;
    sqlite3_close(db);
    printf("appends %ld\nappend_us %.3f\n", l.n, ms * 1e3 / (double)(l.n ? l.n : 1));
    dump_rows(path);
    return 0;
}

typedef struct {
    const char *path;
    const Lines *lines;
    long first, step;
    pthread_barrier_t *ready;
} Job;

static void *appender(void *arg) {
    Job *j = arg;
    sqlite3 *db = open_rw(j->path, "PRAGMA synchronous=FULL");
    pthread_barrier_wait(j->ready);
    append_lines(db, j->lines, j->first, j->step);
    sqlite3_close(db);
    return NULL;
}

static int append_threads(const char *path, const char *file, int threads) {
    Lines l = read_lines(file);
    create_db(path);
    pthread_barrier_t ready;
    pthread_barrier_init(&ready, NULL, (unsigned)threads + 1);
    pthread_t *tid = calloc((size_t)threads, sizeof *tid);
    Job *jobs = calloc((size_t)threads, sizeof *jobs);
    for (int t = 0; t < threads; t++) {
        jobs[t] = (Job){path, &l, t, threads, &ready};
        pthread_create(&tid[t], NULL, appender, &jobs[t]);
    }
    pthread_barrier_wait(&ready);
    double start = now_ms();
    for (int t = 0; t < threads; t++) pthread_join(tid[t], NULL);
    double ms = now_ms() - start;
    printf("appends %ld\nappend_us %.3f\n", l.n, ms * 1e3 / (double)(l.n ? l.n : 1));
    dump_rows(path);
    return 0;
}

/* ---- resume (the resume benchmark) ---------------------------------------------- */

/* From the leaf up to the nearest compaction, that compaction included. */
static const char *UP_TO_COMPACTION_SQL =
    "WITH RECURSIVE up(id, parent_id, body, d) AS ("
    " SELECT id, parent_id, body, 0 FROM entries WHERE id = ?1"
    " UNION ALL SELECT e.id, e.parent_id, e.body, up.d + 1 FROM entries e JOIN up ON e.id = up.parent_id"
    " WHERE json_extract(up.body, '$.type') IS NOT 'compaction')"
    " SELECT id, parent_id, json_extract(body, '$.type'), json_extract(body, '$.message'),"
    " json_extract(body, '$.firstKeptEntryId'), json_extract(body, '$.summary') FROM up ORDER BY d";

/* From ?1 up to ?2 (the first kept entry), both included, root first. */
static const char *KEPT_SQL =
    "WITH RECURSIVE up(id, parent_id, body, d) AS ("
    " SELECT id, parent_id, body, 0 FROM entries WHERE id = ?1"
    " UNION ALL SELECT e.id, e.parent_id, e.body, up.d + 1 FROM entries e JOIN up ON e.id = up.parent_id"
    " WHERE up.id != ?2)"
    " SELECT id, json_extract(body, '$.type'), json_extract(body, '$.message') FROM up ORDER BY d DESC";

static void text_of(sqlite3_stmt *q, int col, Buf *b) {
    b->len = 0;
    put(b, "", 0);
    const unsigned char *t = sqlite3_column_text(q, col);
    if (t) put(b, t, (size_t)sqlite3_column_bytes(q, col));
}

/* The context's messages of `leaf` into `out` (one JSON array), their ids into `ids`
 * (when not NULL), the summary into `summary`; returns the number of messages. */
static long context(sqlite3 *db, const char *leaf, Buf *out, Buf *ids, Buf *summary) {
    sqlite3_stmt *q;
    /* The tail: leaf .. compaction, leaf first; kept in memory to emit root first. */
    Buf tail = {0}, tail_ids = {0}, parent = {0}, first_kept = {0};
    size_t *offs = NULL, *id_offs = NULL;
    long n_tail = 0, cap = 0, count = 0;
    int found = 0;
    if (sqlite3_prepare_v2(db, UP_TO_COMPACTION_SQL, -1, &q, 0) != SQLITE_OK) die(db, "prepare up");
    sqlite3_bind_text(q, 1, leaf, -1, SQLITE_STATIC);
    int rc;
    put(&tail, "", 0);
    put(&tail_ids, "", 0);
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        const char *type = (const char *)sqlite3_column_text(q, 2);
        if (type && strcmp(type, "compaction") == 0) {
            found = 1;
            text_of(q, 1, &parent);
            text_of(q, 4, &first_kept);
            text_of(q, 5, summary);
            continue;
        }
        if (!type || strcmp(type, "message") != 0) continue;
        if (n_tail == cap) {
            cap = cap ? cap * 2 : 64;
            offs = realloc(offs, (size_t)(cap + 1) * sizeof *offs);
            id_offs = realloc(id_offs, (size_t)(cap + 1) * sizeof *id_offs);
            if (!offs || !id_offs) die(NULL, "out of memory");
        }
        offs[n_tail] = tail.len;
        id_offs[n_tail] = tail_ids.len;
        n_tail++;
        put(&tail, sqlite3_column_text(q, 3), (size_t)sqlite3_column_bytes(q, 3));
        put(&tail, "", 1); /* a NUL between messages */
        put(&tail_ids, sqlite3_column_text(q, 0), (size_t)sqlite3_column_bytes(q, 0));
        put(&tail_ids, "", 1);
    }
    if (rc != SQLITE_DONE) die(db, "up");
    sqlite3_finalize(q);
    out->len = 0;
    if (ids) ids->len = 0;
    put(out, "[", 1);
    if (found && parent.len > 0 && first_kept.len > 0) {
        if (sqlite3_prepare_v2(db, KEPT_SQL, -1, &q, 0) != SQLITE_OK) die(db, "prepare kept");
        sqlite3_bind_text(q, 1, parent.p, (int)parent.len, SQLITE_STATIC);
        sqlite3_bind_text(q, 2, first_kept.p, (int)first_kept.len, SQLITE_STATIC);
        while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
            const char *type = (const char *)sqlite3_column_text(q, 1);
            if (!type || strcmp(type, "message") != 0) continue;
            if (count++) put(out, ",", 1);
            put(out, sqlite3_column_text(q, 2), (size_t)sqlite3_column_bytes(q, 2));
            if (ids) {
                put(ids, sqlite3_column_text(q, 0), (size_t)sqlite3_column_bytes(q, 0));
                put(ids, "\n", 1);
            }
        }
        if (rc != SQLITE_DONE) die(db, "kept");
        sqlite3_finalize(q);
    }
    for (long i = n_tail - 1; i >= 0; i--) {
        if (count++) put(out, ",", 1);
        put(out, tail.p + offs[i], strlen(tail.p + offs[i]));
        if (ids) {
            put(ids, tail_ids.p + id_offs[i], strlen(tail_ids.p + id_offs[i]));
            put(ids, "\n", 1);
        }
    }
    put(out, "]", 1);
    free(tail.p);
    free(tail_ids.p);
    free(parent.p);
    free(first_kept.p);
    free(offs);
    free(id_offs);
    return count;
}

static void latest(sqlite3 *db, Buf *leaf) {
    sqlite3_stmt *q;
    if (sqlite3_prepare_v2(db, "SELECT id FROM entries ORDER BY rowid DESC LIMIT 1", -1, &q, 0) !=
        SQLITE_OK)
        die(db, "prepare latest");
    if (sqlite3_step(q) != SQLITE_ROW) die(db, "no entries");
    text_of(q, 0, leaf);
    sqlite3_finalize(q);
}

static sqlite3 *open_rw_existing(const char *path) {
    sqlite3 *db;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, 0) != SQLITE_OK) die(db, "open");
    return db;
}

static int resume(const char *file, int runs, const char *lines_file) {
    double *to = calloc((size_t)runs, sizeof *to), *tc = calloc((size_t)runs, sizeof *tc),
           *tr = calloc((size_t)runs, sizeof *tr);
    Buf out = {0}, ids = {0}, summary = {0}, leaf = {0};
    long count = 0;
    put(&ids, "", 0);
    for (int i = -1; i < runs; i++) { /* run -1 warms up (and collects the ids) */
        double t0 = now_ms();
        sqlite3 *db = open_rw_existing(file);
        latest(db, &leaf);
        double t1 = now_ms();
        count = context(db, leaf.p, &out, i < 0 ? &ids : NULL, &summary);
        double t2 = now_ms();
        if (i >= 0) {
            to[i] = t1 - t0;
            tc[i] = t2 - t1;
            tr[i] = t2 - t0;
        }
        sqlite3_close(db);
    }
    printf("open_ms %.6f\ncontext_ms %.6f\nresume_ms %.6f\nmessages %ld\nbytes %zu\nsummary_bytes %zu\n",
           median(to, runs), median(tc, runs), median(tr, runs), count, out.len, summary.len);
    if (lines_file) {
        Lines l = read_lines(lines_file);
        sqlite3 *db = open_rw_existing(file);
        exec(db, "BEGIN");
        sqlite3_stmt *ins;
        const char *sql =
            "INSERT INTO entries VALUES(json_extract(?1,'$.id'), ?3,"
            " (SELECT max(seq) + 1 FROM entries), json_set(?1, '$.parentId', ?3))";
        if (sqlite3_prepare_v2(db, sql, -1, &ins, 0) != SQLITE_OK) die(db, "prepare insert");
        latest(db, &leaf);
        long n = l.n < runs + 1 ? l.n : runs + 1;
        double *ts = calloc((size_t)n, sizeof *ts);
        long steady_count = 0;
        for (long i = 0; i < n; i++) {
            sqlite3_bind_text(ins, 1, l.line[i], (int)l.len[i], SQLITE_STATIC);
            sqlite3_bind_text(ins, 3, leaf.p, (int)leaf.len, SQLITE_TRANSIENT);
            if (sqlite3_step(ins) != SQLITE_DONE) die(db, "insert");
            sqlite3_reset(ins);
            latest(db, &leaf);
            double t = now_ms();
            steady_count = context(db, leaf.p, &out, NULL, &summary);
            ts[i] = now_ms() - t;
        }
        sqlite3_finalize(ins);
        exec(db, "ROLLBACK");
        sqlite3_close(db);
        /* the first one warms up */
        printf("steady_ms %.6f\nsteady_messages %ld\n", median(ts + (n > 1), (int)(n - (n > 1))),
               steady_count);
    }
    char *line = ids.p;
    for (char *nl; line && (nl = strchr(line, '\n')); line = nl + 1) {
        *nl = 0;
        printf("id %s\n", line);
    }
    return 0;
}

static long long vm_hwm(void) { return proc_status_bytes("VmHWM: %lld"); }

/* Peak RSS before open, and after open + latest leaf + the context's messages. */
static int resume_rss(const char *file) {
    Buf out = {0}, summary = {0}, leaf = {0};
    long long before = vm_hwm();
    sqlite3 *db = open_rw_existing(file);
    latest(db, &leaf);
    long n = context(db, leaf.p, &out, NULL, &summary);
    long long after = vm_hwm();
    printf("hwm_before %lld\nhwm_after %lld\nmessages %ld\n", before, after, n);
    sqlite3_close(db);
    return 0;
}

int main(int argc, char **argv) {
    const char *cmd = argc > 1 ? argv[1] : "";
    /* RUNS and THREADS are at least 1 (resume checks its RUNS, argv[3], below) */
    if (argc == 5 && strcmp(cmd, "resume") != 0 && atoi(argv[4]) < 1) cmd = "";
    if (argc == 2 && strcmp(cmd, "version") == 0) return printf("version %s\n", sqlite3_libversion()) < 0;
    if (argc == 4 && strcmp(cmd, "load") == 0) return load(argv[2], argv[3]);
    if (argc == 5 && strcmp(cmd, "path") == 0) return path(argv[2], argv[3], atoi(argv[4]));
    if (argc == 5 && strcmp(cmd, "deepest") == 0)
        return on_open(argv[2], PATH_SQL, "path", argv[3], atoi(argv[4]));
    if (argc == 5 && strcmp(cmd, "messages") == 0)
        return on_open(argv[2], MESSAGES_SQL, "messages", argv[3], atoi(argv[4]));
    if (argc == 4 && strcmp(cmd, "rss") == 0) return rss(argv[2], argv[3]);
    if ((argc == 4 || argc == 5) && strcmp(cmd, "resume") == 0 && atoi(argv[3]) >= 1)
        return resume(argv[2], atoi(argv[3]), argc == 5 ? argv[4] : NULL);
    if (argc == 3 && strcmp(cmd, "resume-rss") == 0) return resume_rss(argv[2]);
    if (argc == 4 && strcmp(cmd, "append-normal") == 0)
        return append_one(argv[2], argv[3], "PRAGMA synchronous=NORMAL");
    if (argc == 4 && strcmp(cmd, "append-full") == 0)
        return append_one(argv[2], argv[3], "PRAGMA synchronous=FULL");
    if (argc == 5 && strcmp(cmd, "append-threads") == 0)
        return append_threads(argv[2], argv[3], atoi(argv[4]));
    fprintf(stderr,
            "usage: sqlite_peer version | load JSONL DB | path|deepest|messages DB LEAF RUNS | rss DB LEAF\n"
            "       | append-normal|append-full DB LINES | append-threads DB LINES THREADS\n"
            "       | resume DB RUNS [LINES] | resume-rss DB\n");
    return 2;
}

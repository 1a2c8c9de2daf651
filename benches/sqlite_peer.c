/* The SQLite peer of the resume figure (issue 15), on the system libsqlite3.
 *
 *   cc -O2 -o target/sqlite_peer benches/sqlite_peer.c -lsqlite3
 *   target/sqlite_peer load SESSION.jsonl DB     one transaction, WAL: every line into
 *                                                entries(id PRIMARY KEY, parent_id, seq, body)
 *   target/sqlite_peer path DB LEAF              open -> path to LEAF (recursive CTE), median
 *                                                of 9 runs; prints the figure, then the ids
 *                                                root first, one a line, to check against ours
 *
 * A benchmark, never a test: it fails only when a step fails.
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

static int load(const char *jsonl, const char *path) {
    sqlite3 *db;
    remove(path);
    if (sqlite3_open(path, &db) != SQLITE_OK) die(db, "open");
    const char *setup =
        "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
        "CREATE TABLE entries(id TEXT PRIMARY KEY, parent_id TEXT, seq INTEGER, body TEXT);";
    if (sqlite3_exec(db, setup, 0, 0, 0) != SQLITE_OK) die(db, "setup");
    FILE *in = fopen(jsonl, "r");
    if (!in) die(NULL, jsonl);
    sqlite3_stmt *ins;
    if (sqlite3_prepare_v2(db,
            "INSERT INTO entries VALUES(json_extract(?1,'$.id'),"
            " json_extract(?1,'$.parentId'), ?2, ?1)", -1, &ins, 0) != SQLITE_OK)
        die(db, "prepare insert");
    sqlite3_exec(db, "BEGIN", 0, 0, 0);
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
    if (sqlite3_exec(db, "COMMIT", 0, 0, 0) != SQLITE_OK) die(db, "commit");
    sqlite3_finalize(ins);
    sqlite3_close(db);
    free(line);
    fclose(in);
    printf("loaded %ld entries into %s\n", seq, path);
    return 0;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static const char *PATH_SQL =
    "WITH RECURSIVE p(id, parent_id, body, d) AS ("
    " SELECT id, parent_id, body, 0 FROM entries WHERE id = ?1"
    " UNION ALL SELECT e.id, e.parent_id, e.body, p.d + 1 FROM entries e JOIN p ON e.id = p.parent_id)"
    " SELECT id, body FROM p ORDER BY d DESC";

/* One open -> path: returns the ids (root first) as one malloc'd string. */
static char *path_once(const char *path, const char *leaf, size_t *bytes) {
    sqlite3 *db;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, 0) != SQLITE_OK) die(db, "open");
    sqlite3_stmt *q;
    if (sqlite3_prepare_v2(db, PATH_SQL, -1, &q, 0) != SQLITE_OK) die(db, "prepare path");
    sqlite3_bind_text(q, 1, leaf, -1, SQLITE_STATIC);
    size_t cap = 4096, len = 0;
    char *ids = malloc(cap);
    *bytes = 0;
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        const char *id = (const char *)sqlite3_column_text(q, 0);
        size_t idlen = strlen(id);
        /* The body is copied out, as a caller would. */
        int blen = sqlite3_column_bytes(q, 1);
        char *body = malloc((size_t)blen + 1);
        memcpy(body, sqlite3_column_text(q, 1), (size_t)blen);
        *bytes += (size_t)blen;
        free(body);
        while (len + idlen + 2 > cap) ids = realloc(ids, cap *= 2);
        memcpy(ids + len, id, idlen);
        len += idlen;
        ids[len++] = '\n';
    }
    if (rc != SQLITE_DONE) die(db, "path");
    ids[len] = 0;
    sqlite3_finalize(q);
    sqlite3_close(db);
    return ids;
}

static int path(const char *db, const char *leaf) {
    double t[9];
    char *ids = NULL;
    size_t bytes = 0;
    for (int i = 0; i < 9; i++) {
        free(ids);
        double start = now_ms();
        ids = path_once(db, leaf, &bytes);
        t[i] = now_ms() - start;
    }
    qsort(t, 9, sizeof t[0], cmp);
    printf("sqlite open -> path to %s: %.3f ms (median of 9), %zu body bytes\n", leaf, t[4], bytes);
    fputs(ids, stdout);
    free(ids);
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 4 && strcmp(argv[1], "load") == 0) return load(argv[2], argv[3]);
    if (argc == 4 && strcmp(argv[1], "path") == 0) return path(argv[2], argv[3]);
    fprintf(stderr, "usage: sqlite_peer load FILE.jsonl DB | path DB LEAF\n");
    return 2;
}

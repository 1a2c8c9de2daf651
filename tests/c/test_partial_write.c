/*
 * test_partial_write.c -- a REAL partial write (docs/contract.md §3 "A failed write may have left
 * half a line", §4/§5 tainted and `cause`).
 *
 * In a forked child (so the limit stays out of the test runner): SIGXFSZ ignored, two
 * appends, then RLIMIT_FSIZE set a few bytes beyond the file size, so the kernel writes
 * only part of the next line and then refuses with EFBIG. That append must return
 * SESSION_ERR_IO (osError 27); everything after it SESSION_ERR_TAINTED with `cause`
 * byte-identical to the first error object, and no I/O (the file size stays put, even
 * after the limit is lifted). In the parent, reopening finds the half line: needs_repair,
 * unterminated_tail on line 3, entries = the two acknowledged ones.
 *
 * A second child does the same with 4 threads appending at once when the limit is hit:
 * exactly one append gets the io error, every other one the tainted error with the same
 * cause.
 */
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "check.h"

#define SLACK 10 /* bytes the kernel may still write: a part of the third line */

static char g_dir[256];

static void set_fsize_limit(rlim_t cur)
{
    struct rlimit lim;
    CHECK(getrlimit(RLIMIT_FSIZE, &lim) == 0, "getrlimit(RLIMIT_FSIZE)");
    lim.rlim_cur = cur;
    CHECK(setrlimit(RLIMIT_FSIZE, &lim) == 0, "setrlimit(RLIMIT_FSIZE)");
}

/* Checks that `json` is a tainted error whose cause is exactly `cause`. */
static void expect_tainted(SessionStatus st, char *json, const char *cause, const char *what)
{
    CHECK_ERROR(st, SESSION_ERR_TAINTED, json, "%s: fails with tainted", what);
    CHECK_JSON(json, "error.cause", cause, "%s: cause is byte-identical to the first failure's error object", what);
    session_string_free(json);
}

static int single_writer_child(const char *path)
{
    SessionStore *store = NULL;
    char *out = NULL, *cause;
    long long size_before, size_after_fail;
    SessionStatus st;

    signal(SIGXFSZ, SIG_IGN);
    st = session_jsonl_store_open(path, &store, NULL);
    CHECK_STATUS(st, SESSION_OK, NULL, "child: open a new file");
    st = session_store_append(store, tree_entry(0), NULL);
    CHECK_STATUS(st, SESSION_OK, NULL, "child: append u-1");
    st = session_store_append(store, tree_entry(1), NULL);
    CHECK_STATUS(st, SESSION_OK, NULL, "child: append a-read");
    size_before = file_size(path);
    CHECK(size_before == (long long)(strlen(tree_entry(0)) + strlen(tree_entry(1)) + 2),
          "child: two lines on disk");

    set_fsize_limit((rlim_t)size_before + SLACK);
    st = session_store_append(store, tree_entry(2), &out);
    CHECK_ERROR(st, SESSION_ERR_IO, out, "child: the append cut short by RLIMIT_FSIZE returns io");
    CHECK_JSON(out, "error.osError", "27", "child: osError is EFBIG (27)");
    CHECK_JSON(out, "error.op", "\"write\"", "child: op is write");
    cause = json_dup(json_get(out, "error"));
    session_string_free(out);
    size_after_fail = file_size(path);
    CHECK(size_after_fail == size_before + SLACK,
          "child: the kernel wrote part of the line (%lld bytes on disk, expected %lld)", size_after_fail,
          size_before + SLACK);
    CHECK(session_store_state(store) == SESSION_STATE_TAINTED, "child: session_store_state == TAINTED");

    st = session_store_append(store, tree_entry(3), &out);
    expect_tainted(st, out, cause, "child: the next append");
    st = session_store_append(store, tree_entry(0), &out);
    expect_tainted(st, out, cause, "child: an append that would be a duplicate id");
    st = session_store_entries(store, &out);
    expect_tainted(st, out, cause, "child: session_store_entries");
    st = session_store_read(store, &out);
    expect_tainted(st, out, cause, "child: session_store_read");
    st = session_store_path_to(store, "a-read", &out);
    expect_tainted(st, out, cause, "child: session_store_path_to");
    st = session_store_messages_on_path(store, "a-read", &out);
    expect_tainted(st, out, cause, "child: session_store_messages_on_path");
    CHECK(file_size(path) == size_after_fail, "child: no I/O after the failure (size unchanged)");

    set_fsize_limit(RLIM_INFINITY); /* lift the limit: the store must stay tainted anyway */
    st = session_store_append(store, tree_entry(3), &out);
    expect_tainted(st, out, cause, "child: an append after the limit is lifted");
    st = session_store_append(store, tree_entry(3), NULL);
    CHECK_STATUS(st, SESSION_ERR_TAINTED, NULL, "child: tainted with out_json NULL");
    CHECK(file_size(path) == size_after_fail, "child: a tainted store never writes again");
    CHECK(session_store_state(store) == SESSION_STATE_TAINTED, "child: still TAINTED");

    free(cause);
    session_store_close(store);
    return 0;
}

/* ---- several threads hit the limit at once ---- */

#define THREADS 4
#define PER_THREAD 8

struct worker {
    SessionStore *store;
    int index;
    SessionStatus status[PER_THREAD];
    char *json[PER_THREAD];
};

static void *worker_main(void *arg)
{
    struct worker *w = (struct worker *)arg;
    char entry[256];
    int i;
    for (i = 0; i < PER_THREAD; i++) {
        snprintf(entry, sizeof entry,
                 "{\"id\":\"w%d-%d\",\"parentId\":null,\"timestamp\":%d,\"type\":\"message\","
                 "\"message\":{\"role\":\"user\",\"content\":\"a line long enough to be cut in half\"}}",
                 w->index, i, i);
        w->status[i] = session_store_append(w->store, entry, &w->json[i]);
    }
    return NULL;
}

static int many_writers_child(const char *path)
{
    SessionStore *store = NULL;
    struct worker workers[THREADS];
    pthread_t tids[THREADS];
    char *cause = NULL;
    long long size_before;
    int t, i, io = 0, tainted = 0;
    SessionStatus st;

    signal(SIGXFSZ, SIG_IGN);
    st = session_jsonl_store_open(path, &store, NULL);
    CHECK_STATUS(st, SESSION_OK, NULL, "threads child: open");
    st = session_store_append(store, tree_entry(0), NULL);
    CHECK_STATUS(st, SESSION_OK, NULL, "threads child: first append");
    size_before = file_size(path);
    set_fsize_limit((rlim_t)size_before + SLACK);

    for (t = 0; t < THREADS; t++) {
        workers[t].store = store;
        workers[t].index = t;
        CHECK(pthread_create(&tids[t], NULL, worker_main, &workers[t]) == 0, "pthread_create");
    }
    for (t = 0; t < THREADS; t++) CHECK(pthread_join(tids[t], NULL) == 0, "pthread_join");

    /* exactly one io error; its error object is the cause of every other failure */
    for (t = 0; t < THREADS; t++)
        for (i = 0; i < PER_THREAD; i++)
            if (workers[t].status[i] == SESSION_ERR_IO) {
                io++;
                CHECK_ERROR(workers[t].status[i], SESSION_ERR_IO, workers[t].json[i], "threads child: the io error");
                CHECK_JSON(workers[t].json[i], "error.osError", "27", "threads child: EFBIG");
                cause = json_dup(json_get(workers[t].json[i], "error"));
            }
    CHECK(io == 1, "threads child: exactly one append fails with io (got %d)", io);
    for (t = 0; t < THREADS; t++)
        for (i = 0; i < PER_THREAD; i++) {
            CHECK(workers[t].status[i] != SESSION_OK, "threads child: no line fits under the limit");
            if (workers[t].status[i] == SESSION_ERR_TAINTED) {
                tainted++;
                CHECK_JSON(workers[t].json[i], "error.cause", cause,
                           "threads child: every later or waiting append reports the same cause");
            }
            session_string_free(workers[t].json[i]);
        }
    CHECK(tainted == THREADS * PER_THREAD - 1, "threads child: all other appends are tainted (%d)", tainted);
    CHECK(file_size(path) == size_before + SLACK, "threads child: only the one failing write touched the file");
    free(cause);
    session_store_close(store);
    return 0;
}

static void run_child(int (*child)(const char *), const char *path, const char *what)
{
    pid_t pid;
    int status = 0;
    fflush(NULL);
    pid = fork();
    CHECK(pid >= 0, "fork");
    if (pid == 0) exit(child(path));
    CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s: the child's checks passed (wait status %d)", what,
          status);
}

static void reopen_after(const char *path, const char *ids, int committed_lines)
{
    SessionStore *store = NULL;
    char *out = NULL, want[128];
    SessionStatus st;

    snprintf(want, sizeof want, "[{\"code\":\"unterminated_tail\",\"line\":%d}]", committed_lines + 1);
    st = session_jsonl_store_open(path, &store, &out);
    CHECK_STATUS(st, SESSION_OK, out, "reopen after the partial write");
    CHECK_JSON(out, "state", "\"needs_repair\"", "reopen: the half line makes it needs_repair");
    CHECK_JSON(out, "warnings", want, "reopen: unterminated_tail on committed lines + 1");
    session_string_free(out);
    CHECK(session_store_state(store) == SESSION_STATE_NEEDS_REPAIR, "reopen: state NEEDS_REPAIR");
    st = session_store_entries(store, &out);
    CHECK_STATUS(st, SESSION_OK, out, "reopen: entries");
    CHECK_IDS(out, ids, "reopen: entries are exactly the acknowledged ones");
    session_string_free(out);
    st = session_store_append(store, tree_entry(3), &out);
    CHECK_ERROR(st, SESSION_ERR_NEEDS_REPAIR, out, "reopen: appends refused");
    session_string_free(out);
    session_store_close(store);
}

int main(void)
{
    char path[512];
    make_tmpdir(g_dir, sizeof g_dir, "partial");

    SECTION("partial write: io, then tainted with the same cause, no more I/O");
    snprintf(path, sizeof path, "%s/single.jsonl", g_dir);
    run_child(single_writer_child, path, "single writer");
    SECTION("partial write: reopen -> needs_repair, committed prefix");
    reopen_after(path, "u-1,a-read", 2);

    SECTION("partial write with 4 threads appending: one io, the rest tainted with the same cause");
    snprintf(path, sizeof path, "%s/threads.jsonl", g_dir);
    run_child(many_writers_child, path, "many writers");
    reopen_after(path, "u-1", 1);

    remove_tmpdir(g_dir);
    check_done("test_partial_write");
    return 0;
}

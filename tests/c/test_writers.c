/*
 * test_writers.c -- one writer per file, and the tools beyond the chapter, through the
 * C ABI: the advisory lock (in this and another process), read-only and salvage opens,
 * the identity check before each append (deleted, replaced, foreign append), calls
 * after fork, explicit repair, and open options.
 *
 * Also two silent drivers for the strace checks, which append N entries and print
 * nothing (strace counts every write of the process); exit 0 when all appends
 * succeeded, 3 when one failed with io and every later one with tainted, 1 otherwise:
 *   test_writers sync-driver none|fsync|fsync_batch N FILE   (run_strace_sync.sh, T22)
 *   test_writers write-driver N FILE                         (run_strace_writes.sh, T5c)
 */
#include <signal.h>
#include <sys/wait.h>

#include "check.h"

static char g_dir[256];
static char g_path[512];

static void fresh(const char *name)
{
    snprintf(g_path, sizeof g_path, "%s/%s", g_dir, name);
}

/* Runs `child` in a forked process and returns its exit status. */
static int in_child(int (*child)(void))
{
    pid_t pid;
    int status = 0;
    fflush(stdout);
    fflush(stderr);
    pid = fork();
    CHECK(pid >= 0, "fork");
    if (pid == 0) _exit(child());
    CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
    return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
}

static int child_opens_a_second_writer(void)
{
    SessionStore *store = NULL;
    char *out = NULL;
    SessionStatus st = session_jsonl_store_open(g_path, &store, &out);
    int ok = st == SESSION_ERR_LOCKED && store == NULL && json_is(json_get(out, "error.code"), "\"locked\"");
    session_string_free(out);
    session_store_close(store);
    return ok ? 0 : 1;
}

static void lock_and_read_only(void)
{
    SessionStore *writer, *second = NULL, *reader;
    char *out = NULL;
    SessionStatus st;
    SECTION("lock: a second writer fails with locked, in this and another process");
    fresh("lock.jsonl");
    writer = open_ok(g_path, NULL, "writer");
    append_ok(writer, 0, "writer");
    st = session_jsonl_store_open(g_path, &second, &out);
    CHECK_ERROR(st, SESSION_ERR_LOCKED, out, "a second writer in this process is refused");
    CHECK(json_get(out, "error.path").p != NULL, "locked names the path");
    CHECK(second == NULL, "no store for the refused writer");
    session_string_free(out);
    CHECK(in_child(child_opens_a_second_writer) == 0, "a second writer in another process is refused");

    SECTION("readOnly: beside a writer, never writes");
    reader = open_ok(g_path, "{\"readOnly\":true}", "reader");
    st = session_store_entries(reader, &out);
    CHECK_STATUS(st, SESSION_OK, out, "a reader reads beside the writer");
    CHECK_IDS(out, "u-1", "the reader sees the committed entry");
    session_string_free(out);
    st = session_store_append(reader, tree_entry(1), &out);
    CHECK_ERROR(st, SESSION_ERR_READ_ONLY, out, "append on a read-only store");
    session_string_free(out);
    session_store_close(reader);
    append_ok(writer, 1, "the writer goes on");
    session_store_close(writer);
    second = open_ok(g_path, NULL, "after close the lock is free");
    session_store_close(second);
}

static SessionStore *g_forked_store;

static int child_uses_the_parents_store(void)
{
    char *out = NULL;
    int ok = 1;
    SessionStatus st = session_store_append(g_forked_store, tree_entry(2), &out);
    ok &= st == SESSION_ERR_WRONG_PROCESS && json_get(out, "error.ownerPid").p != NULL;
    session_string_free(out);
    st = session_store_entries(g_forked_store, &out);
    ok &= st == SESSION_ERR_WRONG_PROCESS;
    session_string_free(out);
    return ok ? 0 : 1;
}

static void after_fork(void)
{
    long long size;
    SECTION("fork: the child's calls fail with wrong_process and write nothing");
    fresh("fork.jsonl");
    g_forked_store = open_ok(g_path, NULL, "parent");
    append_ok(g_forked_store, 0, "parent");
    append_ok(g_forked_store, 1, "parent");
    size = file_size(g_path);
    CHECK(in_child(child_uses_the_parents_store) == 0, "the child gets wrong_process");
    CHECK(file_size(g_path) == size, "the child wrote 0 bytes");
    append_ok(g_forked_store, 2, "the parent goes on");
    session_store_close(g_forked_store);
}

/* The next append fails with file_changed/`reason`; later calls are tainted by it. */
static void expect_changed(SessionStore *store, const char *reason, const char *what)
{
    char *out = NULL, *cause;
    char want[64];
    /* A new root: it passes the tree rules of any store, so only the file check fails. */
    SessionStatus st = session_store_append(
        store, "{\"id\":\"z\",\"parentId\":null,\"timestamp\":9,\"type\":\"metadata\",\"key\":\"k\",\"value\":0}", &out);
    CHECK_ERROR(st, SESSION_ERR_FILE_CHANGED, out, "%s: file_changed", what);
    snprintf(want, sizeof want, "\"%s\"", reason);
    CHECK_JSON(out, "error.reason", want, "%s: reason", what);
    cause = json_dup(json_get(out, "error"));
    session_string_free(out);
    CHECK(session_store_state(store) == SESSION_STATE_TAINTED, "%s: tainted", what);
    st = session_store_entries(store, &out);
    CHECK_ERROR(st, SESSION_ERR_TAINTED, out, "%s: later calls are tainted", what);
    CHECK_JSON(out, "error.cause", cause, "%s: with the file_changed error as cause", what);
    session_string_free(out);
    free(cause);
}

static void identity(void)
{
    SessionStore *store, *theirs;
    char other[600];
    char *before;
    size_t before_len;
    SECTION("identity: deleted, replaced, foreign append");
    fresh("deleted.jsonl");
    store = open_ok(g_path, NULL, "deleted");
    append_ok(store, 0, "deleted");
    append_ok(store, 1, "deleted");
    CHECK(unlink(g_path) == 0, "unlink");
    expect_changed(store, "deleted", "deleted");
    session_store_close(store);

    fresh("replaced.jsonl");
    store = open_ok(g_path, NULL, "replaced");
    append_ok(store, 0, "replaced");
    append_ok(store, 1, "replaced");
    snprintf(other, sizeof other, "%s.new", g_path);
    write_file(other, "", 0);
    CHECK(rename(other, g_path) == 0, "rename over");
    expect_changed(store, "replaced", "replaced");
    CHECK(file_size(g_path) == 0, "nothing written to the new file");
    session_store_close(store);

    fresh("foreign.jsonl");
    store = open_ok(g_path, "{\"lock\":false}", "ours");
    theirs = open_ok(g_path, "{\"lock\":false}", "theirs");
    append_ok(store, 0, "ours");
    append_ok(store, 1, "ours");
    before = read_file(g_path, &before_len);
    expect_changed(theirs, "size_changed", "foreign");
    {
        size_t after_len;
        char *after = read_file(g_path, &after_len);
        CHECK(after_len == before_len && memcmp(after, before, before_len) == 0, "the foreign writer wrote nothing");
        free(after);
    }
    free(before);
    session_store_close(theirs);
    session_store_close(store);
}

/* T20(a): with descriptors 0-2 closed, an open must not make the session file stdin,
 * stdout or stderr (a stray write(2, ...) would land in the session). */
static int child_with_low_fds_closed(void)
{
    SessionStore *store = NULL;
    int fd, low_in_use = 0;
    close(0);
    close(1);
    close(2);
    if (session_jsonl_store_open(g_path, &store, NULL) != SESSION_OK) return 1;
    for (fd = 0; fd < 3; fd++)
        if (fcntl(fd, F_GETFD) != -1) low_in_use = 1;
    if (session_store_append(store, tree_entry(0), NULL) != SESSION_OK) return 2;
    session_store_close(store);
    return low_in_use ? 3 : 0;
}

static void low_descriptors(void)
{
    SECTION("fds 0-2 closed: the session file gets a descriptor of 3 or more");
    fresh("lowfd.jsonl");
    CHECK(in_child(child_with_low_fds_closed) == 0, "no descriptor below 3 is used, and the append works");
    CHECK(file_size(g_path) == (long long)strlen(tree_entry(0)) + 1, "the line went to the file");
}

static void repair(void)
{
    SessionStore *store, *writer;
    char *out = NULL, *committed, *backup_json, backup[700], *bytes;
    size_t committed_len, len;
    const char *tail = "{\"id\":\"r-read\",\"par";
    SessionStatus st;
    SECTION("repair: tail to a backup, prefix kept, then ready; a second repair is a no-op");
    fresh("repair.jsonl");
    committed = tree_jsonl(2);
    committed_len = strlen(committed);
    {
        char *all = malloc(committed_len + strlen(tail) + 1);
        memcpy(all, committed, committed_len);
        memcpy(all + committed_len, tail, strlen(tail) + 1);
        write_file(g_path, all, strlen(all));
        free(all);
    }
    writer = open_ok(g_path, NULL, "a writer holds the file");
    st = session_jsonl_repair(g_path, &out);
    CHECK_ERROR(st, SESSION_ERR_LOCKED, out, "repair is refused while a writer holds the file");
    session_string_free(out);
    session_store_close(writer);

    st = session_jsonl_repair(g_path, &out);
    CHECK_STATUS(st, SESSION_OK, out, "repair");
    CHECK(json_int(json_get(out, "truncatedBytes")) == (long long)strlen(tail), "truncatedBytes");
    CHECK_JSON(out, "entries", "2", "entries kept");
    backup_json = json_dup(json_get(out, "backup"));
    session_string_free(out);
    snprintf(backup, sizeof backup, "%s/repair.jsonl.tail-1.bak", g_dir);
    CHECK(strstr(backup_json, "repair.jsonl.tail-1.bak") != NULL, "backup path reported: %s", backup_json);
    free(backup_json);
    bytes = read_file(backup, &len);
    CHECK(len == strlen(tail) && memcmp(bytes, tail, len) == 0, "the backup holds the uncommitted bytes");
    free(bytes);
    bytes = read_file(g_path, &len);
    CHECK(len == committed_len && memcmp(bytes, committed, len) == 0, "the committed prefix is kept exactly");
    free(bytes);
    store = open_ok(g_path, NULL, "repaired file");
    CHECK(session_store_state(store) == SESSION_STATE_READY, "opens ready");
    append_ok(store, 2, "appends work after repair");
    session_store_close(store);
    st = session_jsonl_repair(g_path, &out);
    CHECK_STATUS(st, SESSION_OK, out, "second repair");
    CHECK_JSON(out, "truncatedBytes", "0", "a second repair removes nothing");
    CHECK_JSON(out, "backup", "null", "and makes no backup");
    session_string_free(out);
    free(committed);

    fresh("corrupt.jsonl");
    write_file(g_path, "{\"id\":\n{\"x\"", 11);
    st = session_jsonl_repair(g_path, &out);
    CHECK_ERROR(st, SESSION_ERR_CORRUPT_LINE, out, "a corrupt committed line refuses the repair");
    CHECK_JSON(out, "error.line", "1", "naming the line");
    session_string_free(out);
    CHECK(file_size(g_path) == 11, "and leaves the file untouched");
    st = session_jsonl_repair(NULL, &out);
    CHECK_ERROR(st, SESSION_ERR_INVALID_ARGUMENT, out, "NULL path");
    session_string_free(out);
}

static void options_and_salvage(void)
{
    SessionStore *store = NULL;
    char *out = NULL;
    SessionStatus st;
    const char *bad[] = {"{\"durability\":\"always\"}", "{\"lok\":true}", "[]", "{", "{\"lock\":1}",
                         "{\"lock\":true,\"lock\":false}"};
    size_t i;
    SECTION("options: invalid options are invalid_argument; valid ones open");
    fresh("options.jsonl");
    for (i = 0; i < sizeof bad / sizeof *bad; i++) {
        st = session_jsonl_store_open_with(g_path, bad[i], &store, &out);
        CHECK_ERROR(st, SESSION_ERR_INVALID_ARGUMENT, out, "options %s", bad[i]);
        CHECK_JSON(out, "error.argument", "\"options_json\"", "names options_json");
        CHECK(store == NULL, "no store");
        session_string_free(out);
    }
    store = open_ok(g_path, "{\"durability\":\"fsync_batch\",\"checkIdentity\":false}", "fsync_batch");
    append_ok(store, 0, "fsync_batch");
    session_store_close(store);
    store = open_ok(g_path, "{\"durability\":\"fsync\"}", "fsync");
    append_ok(store, 1, "fsync");
    session_store_close(store);

    SECTION("salvage: every good entry, a diagnostic per bad line, orphans fail as missing_parent");
    fresh("salvage.jsonl");
    {
        char *text = tree_jsonl(2); /* u-1, a-read */
        size_t n = strlen(text);
        const char *rest = "not json\n";
        char *all = malloc(n + strlen(rest) + strlen(tree_entry(3)) + 3);
        sprintf(all, "%s%s%s\n", text, rest, tree_entry(3)); /* a-final: parent r-read is missing */
        write_file(g_path, all, strlen(all));
        free(all);
        free(text);
    }
    st = session_jsonl_store_open(g_path, &store, &out);
    CHECK_ERROR(st, SESSION_ERR_CORRUPT_LINE, out, "a strict open fails");
    session_string_free(out);
    st = session_jsonl_store_open_with(g_path, "{\"salvage\":true}", &store, &out);
    CHECK_STATUS(st, SESSION_OK, out, "salvage opens");
    CHECK_JSON(out, "complete", "false", "incomplete");
    CHECK_JSON(out, "diagnostics.0.line", "3", "the bad line");
    CHECK_JSON(out, "diagnostics.0.code", "\"corrupt_line\"", "is corrupt");
    CHECK_JSON(out, "diagnostics.1.code", "\"orphan\"", "the orphan");
    CHECK_JSON(out, "diagnostics.1.parentId", "\"r-read\"", "names its missing parent");
    session_string_free(out);
    st = session_store_entries(store, &out);
    CHECK_IDS(out, "u-1,a-read,a-final", "every good entry");
    session_string_free(out);
    st = session_store_path_to(store, "a-final", &out);
    CHECK_ERROR(st, SESSION_ERR_MISSING_PARENT, out, "a path through the orphan");
    session_string_free(out);
    st = session_store_append(store, tree_entry(2), &out);
    CHECK_ERROR(st, SESSION_ERR_READ_ONLY, out, "salvage is read-only");
    session_string_free(out);
    session_store_close(store);
}

/* The drivers below report through their exit status only: strace counts every
 * syscall of the process, so they print nothing. */

/* Appends n numbered root entries and closes the store: 0 when all were acknowledged;
 * 3 when one failed with io and every later one with tainted; 1 anything else. */
static int append_numbered(SessionStore *store, int n)
{
    char entry[256];
    SessionStatus st;
    int i, failed_io = 0;
    for (i = 0; i < n; i++) {
        snprintf(entry, sizeof entry,
                 "{\"id\":\"e%d\",\"parentId\":null,\"timestamp\":%d,\"type\":\"metadata\",\"key\":\"k\",\"value\":%d}",
                 i, i, i);
        st = session_store_append(store, entry, NULL);
        if (st == SESSION_ERR_IO && !failed_io) {
            failed_io = 1;
        } else if (st != SESSION_OK && !(failed_io && st == SESSION_ERR_TAINTED)) {
            session_store_close(store);
            return 1;
        }
    }
    session_store_close(store);
    return failed_io ? 3 : 0;
}

/* T22: appends with the given durability mode. */
static int sync_driver(const char *mode, int n, const char *path)
{
    char options[128];
    SessionStore *store = NULL;
    snprintf(options, sizeof options, "{\"durability\":\"%s\"}", mode);
    if (session_jsonl_store_open_with(path, options, &store, NULL) != SESSION_OK) return 1;
    return append_numbered(store, n);
}

/* T5(c): appends with the default options. */
static int write_driver(int n, const char *path)
{
    SessionStore *store = NULL;
    if (session_jsonl_store_open(path, &store, NULL) != SESSION_OK) return 1;
    return append_numbered(store, n);
}

int main(int argc, char **argv)
{
    if (argc == 5 && strcmp(argv[1], "sync-driver") == 0) return sync_driver(argv[2], atoi(argv[3]), argv[4]);
    if (argc == 4 && strcmp(argv[1], "write-driver") == 0) return write_driver(atoi(argv[2]), argv[3]);
    make_tmpdir(g_dir, sizeof g_dir, "writers");
    lock_and_read_only();
    after_fork();
    identity();
    low_descriptors();
    repair();
    options_and_salvage();
    remove_tmpdir(g_dir);
    check_done("test_writers");
    return 0;
}

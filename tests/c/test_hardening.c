/*
 * test_hardening.c -- issue 10's store items through the C ABI: the lock after fork
 * (both sides), non-regular files refused without blocking, a relative path after
 * chdir, an append onto a whitespace tail, and the backup's permissions.
 *
 * A watchdog (alarm) ends the program if anything blocks, so a regression fails
 * instead of hanging.
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

static void check_ids(const char *csv, const char *what)
{
    SessionStore *store = open_ok(g_path, "{\"readOnly\":true}", what);
    char *out = NULL;
    SessionStatus st = session_store_read(store, &out);
    CHECK_STATUS(st, SESSION_OK, out, "%s: read", what);
    CHECK_JSON(out, "state", "\"ready\"", "%s: the file is ready", what);
    CHECK_IDS_AT(out, "entries", csv, "%s: the entries", what);
    session_string_free(out);
    session_store_close(store);
}

static void send_byte(int fd)
{
    char c = 'x';
    CHECK(write(fd, &c, 1) == 1, "pipe write");
}

static int receive_byte(int fd)
{
    char c;
    return read(fd, &c, 1) == 1;
}

static int wait_child(pid_t pid)
{
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
    return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
}

/* The parent closes and reopens while a forked child (which never touches the
 * store) lives: the lock was the parent's, so it is free. */
static void fork_parent_reopens(void)
{
    SessionStore *store, *again = NULL;
    int to_child[2];
    pid_t pid;
    SECTION("fork: the parent closes and reopens while the child lives");
    fresh("fork-parent.jsonl");
    store = open_ok(g_path, NULL, "parent");
    append_ok(store, 0, "parent");
    CHECK(pipe(to_child) == 0, "pipe");
    fflush(stdout);
    pid = fork();
    CHECK(pid >= 0, "fork");
    if (pid == 0) {
        /* Holds the inherited descriptors until the parent is done. */
        int code;
        close(to_child[1]);
        code = receive_byte(to_child[0]) ? 0 : 1;
        session_store_close(store);
        _exit(code);
    }
    close(to_child[0]);
    session_store_close(store);
    again = open_ok(g_path, NULL, "the parent reopens while the child lives");
    append_ok(again, 1, "the reopened store");
    session_store_close(again);
    send_byte(to_child[1]);
    close(to_child[1]);
    CHECK(wait_child(pid) == 0, "the child ends cleanly");
    check_ids("u-1,a-read", "after the parent reopened");
}

/* The child's side: closing the inherited store does not release the parent's
 * lock; once the parent has closed, the child's own store opens. */
static void fork_child_opens_its_own(void)
{
    SessionStore *store;
    int to_child[2], to_parent[2];
    pid_t pid;
    SECTION("fork: the child closes the inherited store and opens its own after the parent closed");
    fresh("fork-child.jsonl");
    store = open_ok(g_path, NULL, "parent");
    append_ok(store, 0, "parent");
    CHECK(pipe(to_child) == 0 && pipe(to_parent) == 0, "pipes");
    fflush(stdout);
    pid = fork();
    CHECK(pid >= 0, "fork");
    if (pid == 0) {
        SessionStore *own = NULL;
        int code = 0;
        close(to_child[1]);
        close(to_parent[0]);
        /* Frees the handle and closes its descriptors; must not unlock. */
        session_store_close(store);
        if (session_jsonl_store_open(g_path, &own, NULL) != SESSION_ERR_LOCKED) code = 2;
        session_store_close(own);
        own = NULL;
        send_byte(to_parent[1]);
        if (!receive_byte(to_child[0])) _exit(3);
        if (session_jsonl_store_open(g_path, &own, NULL) != SESSION_OK) _exit(4);
        if (session_store_append(own, tree_entry(2), NULL) != SESSION_OK) code = 5;
        session_store_close(own);
        _exit(code);
    }
    close(to_child[0]);
    close(to_parent[1]);
    CHECK(receive_byte(to_parent[0]), "the child tried while the parent held the file");
    append_ok(store, 1, "the parent's store after the child closed its copy");
    session_store_close(store);
    send_byte(to_child[1]);
    close(to_child[1]);
    close(to_parent[0]);
    CHECK(wait_child(pid) == 0,
          "child: locked while the parent held the file, then its own store opened and appended");
    check_ids("u-1,a-read,r-read", "after the child's append");
}

/* Nothing but a regular file is opened, and nothing waits on a FIFO. */
static void check_refused(SessionStatus st, char *out, const char *what)
{
    char *message;
    CHECK_ERROR(st, SESSION_ERR_IO, out, "%s is refused with io", what);
    message = json_dup(json_get(out, "error.message"));
    CHECK(message != NULL && strstr(message, "not a regular file") != NULL,
          "%s: the message says why: %s", what, show(out));
    free(message);
    session_string_free(out);
}

static void non_regular_files(void)
{
    const char *paths[4];
    char fifo[600];
    int i;
    SECTION("non-regular files: a FIFO, /dev/zero, /dev/full and a directory are refused");
    snprintf(fifo, sizeof fifo, "%s/fifo.jsonl", g_dir);
    CHECK(mkfifo(fifo, 0600) == 0, "mkfifo");
    paths[0] = fifo;
    paths[1] = "/dev/zero";
    paths[2] = "/dev/full";
    paths[3] = g_dir;
    for (i = 0; i < 4; i++) {
        SessionStore *store = NULL;
        char *out = NULL;
        char what[700];
        SessionStatus st;
        snprintf(what, sizeof what, "a writer on %s", paths[i]);
        st = session_jsonl_store_open(paths[i], &store, &out);
        CHECK(store == NULL, "%s: no store", what);
        check_refused(st, out, what);
        snprintf(what, sizeof what, "a reader on %s", paths[i]);
        st = session_jsonl_store_open_with(paths[i], "{\"readOnly\":true}", &store, &out);
        check_refused(st, out, what);
        snprintf(what, sizeof what, "salvage of %s", paths[i]);
        st = session_jsonl_store_open_with(paths[i], "{\"salvage\":true}", &store, &out);
        check_refused(st, out, what);
        snprintf(what, sizeof what, "repair of %s", paths[i]);
        st = session_jsonl_repair(paths[i], &out);
        check_refused(st, out, what);
    }
    unlink(fifo);
}

/* A relative path names the same file after chdir. */
static void relative_path_after_chdir(void)
{
    SessionStore *store = NULL;
    char cwd[4096];
    SECTION("chdir: a store opened by a relative path keeps appending to its file");
    CHECK(getcwd(cwd, sizeof cwd) != NULL, "getcwd");
    CHECK(chdir(g_dir) == 0, "chdir into the session's folder");
    store = open_ok("relative.jsonl", NULL, "open by a relative path");
    append_ok(store, 0, "relative path");
    CHECK(chdir("/") == 0, "chdir elsewhere");
    append_ok(store, 1, "after chdir");
    CHECK(session_store_state(store) == SESSION_STATE_READY, "still ready");
    session_store_close(store);
    CHECK(chdir(cwd) == 0, "chdir back");
    fresh("relative.jsonl");
    check_ids("u-1,a-read", "after chdir");
}

/* An append onto an unterminated whitespace tail ends that tail first. */
static void whitespace_tail(void)
{
    char *text = tree_jsonl(1);
    size_t len = strlen(text);
    SessionStore *store;
    SECTION("whitespace tail: an append never welds onto it");
    fresh("ws.jsonl");
    text = (char *)realloc(text, len + 3);
    CHECK(text != NULL, "realloc");
    memcpy(text + len, " \t", 3);
    write_file(g_path, text, len + 2);
    free(text);
    store = open_ok(g_path, NULL, "writer");
    CHECK(session_store_state(store) == SESSION_STATE_READY, "a blank tail is not a warning");
    append_ok(store, 1, "onto a blank tail");
    append_ok(store, 2, "second");
    session_store_close(store);
    check_ids("u-1,a-read,r-read", "after appends onto a blank tail");
}

/* The backup is no more readable than the session file. */
static void backup_mode(void)
{
    char *text = tree_jsonl(2);
    char backup[700];
    char *out = NULL;
    struct stat st;
    SECTION("repair: the backup has the session file's mode");
    fresh("mode.jsonl");
    write_file(g_path, text, strlen(text) - 10);
    free(text);
    CHECK(chmod(g_path, 0600) == 0, "chmod");
    umask(022);
    CHECK_STATUS(session_jsonl_repair(g_path, &out), SESSION_OK, out, "repair");
    session_string_free(out);
    snprintf(backup, sizeof backup, "%s.tail-1.bak", g_path);
    CHECK(stat(backup, &st) == 0, "the backup exists");
    CHECK((st.st_mode & 0777) == 0600, "backup mode %o, want 600", (unsigned)(st.st_mode & 0777));
}

int main(void)
{
    alarm(50); /* a hang is a failure */
    make_tmpdir(g_dir, sizeof g_dir, "hardening");
    fork_parent_reopens();
    fork_child_opens_its_own();
    non_regular_files();
    relative_path_after_chdir();
    whitespace_tail();
    backup_mode();
    remove_tmpdir(g_dir);
    check_done("test_hardening");
    return 0;
}

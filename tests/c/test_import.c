/*
 * test_import.c -- session_import (issue 14): a pi session file with a corrupt line
 * imports into a new libsession file that opens; every line is accounted for in the
 * report; bad arguments fail without creating anything; a FIFO source is refused at
 * once; session_import_with_progress reports each pass and a non-zero return cancels
 * it with nothing written.
 */
#include "check.h"

static char g_dir[256];

static void path_in(char *buf, size_t size, const char *name)
{
    snprintf(buf, size, "%s/%s", g_dir, name);
}

static const char PI_SESSION[] =
    "{\"type\":\"session\",\"version\":3,\"id\":\"s-1\",\"timestamp\":\"2025-01-01T00:00:00.000Z\","
    "\"cwd\":\"/workspace/tiny-pi\"}\n"
    "{\"type\":\"message\",\"id\":\"u-1\",\"parentId\":null,\"timestamp\":\"2025-01-01T00:00:01.000Z\","
    "\"message\":{\"role\":\"user\",\"content\":\"hi\",\"timestamp\":1735689601000}}\n"
    "{\"type\":\"model_change\",\"id\":\"m-1\",\"parentId\":\"u-1\",\"timestamp\":"
    "\"2025-01-01T00:00:02.000Z\",\"provider\":\"anthropic\",\"modelId\":\"claude-sonnet-4-5\"}\n"
    "{\"type\":\"message\",\"id\":\"a-1\",\"parentId\":\"m-1\",\"timestamp\":\"2025-01-01T00:00:03.000Z\","
    "\"message\":{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"hello\"}]}}\n"
    "{\"type\":\"message\",\"id\":\"torn\n";

static void imports_pi_and_reports_every_line(void)
{
    char src[512], out[512];
    char *json = NULL;
    SessionStore *store = NULL;
    SessionStatus st;

    SECTION("a pi file imports; the torn last line is kept raw and reported");
    path_in(src, sizeof src, "pi.jsonl");
    path_in(out, sizeof out, "pi-imported.jsonl");
    write_file(src, PI_SESSION, sizeof PI_SESSION - 1);
    st = session_import("pi", src, out, NULL, &json);
    CHECK_STATUS(st, SESSION_OK, json, "import");
    CHECK_JSON(json, "linesRead", "5", "five physical lines");
    CHECK_JSON(json, "entriesWritten", "6",
               "header root, three entries, the raw line, the resume-leaf record");
    CHECK_JSON(json, "entryTypes.message", "2", "two messages");
    CHECK_JSON(json, "entryTypes.metadata", "4",
               "pi.session, pi.model_change, pi.unmapped, session.resumeLeaf");
    CHECK_JSON(json, "unmapped.0.line", "5", "the torn line is listed by number");
    CHECK_JSON(json, "unmapped.0.reason", "\"invalid_json\"", "as invalid JSON");
    CHECK_JSON(json, "unmapped.0.entryId", "\"pi-line-5\"", "with the entry that keeps it");
    session_string_free(json);

    SECTION("the output opens clean and keeps pi's ids under the header's entry");
    st = session_jsonl_store_open(out, &store, &json);
    CHECK_STATUS(st, SESSION_OK, json, "open the import");
    CHECK_JSON(json, "state", "\"ready\"", "a clean file");
    session_string_free(json);
    st = session_store_path_to(store, "a-1", &json);
    CHECK_STATUS(st, SESSION_OK, json, "path to a-1");
    CHECK_JSON_LENGTH(json, "", 4, "s-1, u-1, m-1, a-1");
    CHECK_JSON(json, "0.key", "\"pi.session\"", "the header is the root");
    CHECK_JSON(json, "1.parentId", "\"s-1\"", "pi's root hangs under it");
    CHECK_JSON(json, "1.timestamp", "1735689601000", "ISO time as Unix milliseconds");
    CHECK_JSON(json, "1.isoTimestamp", "\"2025-01-01T00:00:01.000Z\"", "the text kept");
    CHECK_JSON(json, "2.key", "\"pi.model_change\"", "model_change as pi.* metadata");
    session_string_free(json);

    SECTION("the session records the leaf pi resumes: its last entry, under that leaf");
    st = session_store_latest_leaf(store, &json);
    CHECK_STATUS(st, SESSION_OK, json, "latest leaf");
    CHECK_JSON(json, "key", "\"session.resumeLeaf\"", "the record is the last entry");
    CHECK_JSON(json, "parentId", "\"a-1\"", "under the leaf pi resumes");
    session_string_free(json);
    session_store_close(store);

    SECTION("an existing output is never overwritten");
    st = session_import("pi", src, out, NULL, &json);
    CHECK_ERROR(st, SESSION_ERR_IO, json, "out_path exists");
    CHECK_JSON(json, "error.op", "\"open\"", "creating the output fails (EEXIST)");
    session_string_free(json);
}

static void bad_arguments_fail_and_create_nothing(void)
{
    char src[512], out[512];
    char *json = NULL;
    struct stat sb;
    SessionStatus st;

    path_in(src, sizeof src, "pi.jsonl");
    path_in(out, sizeof out, "never.jsonl");

    SECTION("an unknown format names the argument");
    st = session_import("gemini", src, out, NULL, &json);
    CHECK_ERROR(st, SESSION_ERR_INVALID_ARGUMENT, json, "unknown format");
    CHECK_JSON(json, "error.argument", "\"format\"", "names format");
    session_string_free(json);

    SECTION("unknown options and NULL strings are invalid arguments");
    st = session_import("pi", src, out, "{\"overwrite\":true}", &json);
    CHECK_ERROR(st, SESSION_ERR_INVALID_ARGUMENT, json, "unknown option");
    session_string_free(json);
    st = session_import("pi", src, out, "{}", NULL);
    CHECK(st == SESSION_OK, "empty options are the defaults (and out_json may be NULL)");
    CHECK(unlink(out) == 0, "remove the output");
    st = session_import(NULL, src, out, NULL, &json);
    CHECK_STATUS(st, SESSION_OK, json, "NULL format: detected");
    CHECK_JSON(json, "format", "\"pi\"", "detected as pi");
    CHECK_JSON(json, "resumeLeafId", "\"a-1\"", "the leaf pi resumes");
    session_string_free(json);
    CHECK(unlink(out) == 0, "remove the output");
    st = session_import("auto", src, out, NULL, &json);
    CHECK_STATUS(st, SESSION_OK, json, "format auto");
    CHECK_JSON(json, "format", "\"pi\"", "detected as pi");
    session_string_free(json);
    CHECK(unlink(out) == 0, "remove the output");

    SECTION("a source of another format is refused naming the detected one");
    st = session_import("codex", src, out, NULL, &json);
    CHECK_ERROR(st, SESSION_ERR_INVALID_ARGUMENT, json, "a pi file as codex");
    CHECK_JSON(json, "error.argument", "\"src_path\"", "names src_path");
    CHECK_JSON(json, "error.detected", "\"pi\"", "and the detected format");
    session_string_free(json);
    CHECK(stat(out, &sb) != 0 && errno == ENOENT, "nothing was created");
    st = session_import("codex", NULL, out, NULL, &json);
    CHECK_ERROR(st, SESSION_ERR_INVALID_ARGUMENT, json, "NULL src_path");
    session_string_free(json);
    st = session_import("codex", src, NULL, NULL, &json);
    CHECK_ERROR(st, SESSION_ERR_INVALID_ARGUMENT, json, "NULL out_path");
    session_string_free(json);
    CHECK(stat(out, &sb) != 0 && errno == ENOENT, "nothing was created");

    SECTION("a missing source is an I/O error and creates nothing");
    path_in(src, sizeof src, "missing.jsonl");
    st = session_import("claude-code", src, out, NULL, &json);
    CHECK_ERROR(st, SESSION_ERR_IO, json, "missing source");
    session_string_free(json);
    CHECK(stat(out, &sb) != 0 && errno == ENOENT, "nothing was created");
}

static void a_fifo_source_is_refused_at_once(void)
{
    char src[512], out[512];
    char *json = NULL;
    struct stat sb;
    SessionStatus st;

    SECTION("a FIFO source is refused without blocking, and nothing is created");
    path_in(src, sizeof src, "fifo.jsonl");
    path_in(out, sizeof out, "from-fifo.jsonl");
    CHECK(mkfifo(src, 0600) == 0, "mkfifo");
    st = session_import("pi", src, out, NULL, &json);
    CHECK_ERROR(st, SESSION_ERR_IO, json, "a FIFO source (before: blocked for ever)");
    CHECK_JSON(json, "error.op", "\"open\"", "refused when opened");
    session_string_free(json);
    CHECK(stat(out, &sb) != 0 && errno == ENOENT, "nothing was created");
    CHECK(unlink(src) == 0, "remove the FIFO");
}

/* Records every report; returns non-zero (cancel) once it has seen stop_at_pass. */
struct progress_log {
    unsigned calls;
    uint32_t last_pass;
    uint64_t total;
    uint32_t stop_at_pass;
};

static int record_progress(uint32_t pass, uint64_t done, uint64_t total, void *user_data)
{
    struct progress_log *log = (struct progress_log *)user_data;
    log->calls++;
    log->last_pass = pass;
    log->total = total;
    (void)done;
    return log->stop_at_pass != 0 && pass >= log->stop_at_pass;
}

static void progress_is_reported_and_a_callback_cancels(void)
{
    char src[512], out[512];
    char *json = NULL;
    struct stat sb;
    struct progress_log log = {0, 0, 0, 0};
    SessionStatus st;

    SECTION("session_import_with_progress reports each pass with the source's size");
    path_in(src, sizeof src, "pi-progress.jsonl");
    path_in(out, sizeof out, "pi-progress-out.jsonl");
    write_file(src, PI_SESSION, sizeof PI_SESSION - 1);
    st = session_import_with_progress("pi", src, out, NULL, record_progress, &log, &json);
    CHECK_STATUS(st, SESSION_OK, json, "import with progress");
    CHECK(log.calls >= 2 && log.last_pass >= 2, "at least two passes reported (%u calls)",
          log.calls);
    CHECK(log.total == sizeof PI_SESSION - 1, "total is the source's size (%llu)",
          (unsigned long long)log.total);
    session_string_free(json);
    CHECK(unlink(out) == 0, "remove the output");

    SECTION("a callback returning non-zero cancels: SESSION_ERR_CANCELLED, nothing written");
    log.calls = 0;
    log.stop_at_pass = 2;
    st = session_import_with_progress("pi", src, out, NULL, record_progress, &log, &json);
    CHECK_ERROR(st, SESSION_ERR_CANCELLED, json, "cancelled in the second pass");
    CHECK(strcmp(session_status_name(st), "cancelled") == 0, "the status is named cancelled");
    session_string_free(json);
    CHECK(stat(out, &sb) != 0 && errno == ENOENT, "nothing was created");
    CHECK(count_dir_entries(g_dir) == 1, "only the source: no temporary file is left (%d entries)",
          count_dir_entries(g_dir));

    SECTION("a NULL callback is session_import");
    st = session_import_with_progress("pi", src, out, NULL, NULL, NULL, &json);
    CHECK_STATUS(st, SESSION_OK, json, "no callback");
    session_string_free(json);
}

int main(void)
{
    make_tmpdir(g_dir, sizeof g_dir, "import");
    imports_pi_and_reports_every_line();
    bad_arguments_fail_and_create_nothing();
    a_fifo_source_is_refused_at_once();
    remove_tmpdir(g_dir);
    make_tmpdir(g_dir, sizeof g_dir, "import-progress");
    progress_is_reported_and_a_callback_cancels();
    remove_tmpdir(g_dir);
    check_done("test_import");
    return 0;
}

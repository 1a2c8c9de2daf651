/*
 * test_hostile_utf8.c -- invalid UTF-8 (16 kinds) in every C string position -> invalid_argument naming it,
 * nothing created or written; in recover_jsonl bytes -> corrupt_line / unterminated_tail.
 * Part of the hostile-input suite (hostile.h).
 */
#include "hostile.h"

/* --------------------------------------------- 2. invalid UTF-8, everywhere ---- */

static const char *const BAD_UTF8[] = {
    "\x80",             /* lone continuation byte */
    "\xbf",             /* lone continuation byte */
    "\xc3",             /* 2-byte lead, cut */
    "\xc0\xaf",         /* overlong '/' */
    "\xc1\xbf",         /* overlong */
    "\xe0\x80\xaf",     /* overlong 3-byte */
    "\xe2\x82",         /* 3-byte, cut */
    "\xed\xa0\x80",     /* UTF-8-encoded high surrogate */
    "\xed\xbf\xbf",     /* UTF-8-encoded low surrogate */
    "\xf0\x80\x80\xaf", /* overlong 4-byte */
    "\xf0\x9f\x98",     /* 4-byte, cut */
    "\xf4\x90\x80\x80", /* above U+10FFFF */
    "\xf5\x80\x80\x80", /* invalid lead */
    "\xf8\x88\x80\x80\x80", /* 5-byte form */
    "\xfe",
    "\xff",
};

static void utf8_sweep(void)
{
    char jpath[512], path[600];
    SessionStore *mem = memory_store(), *js = jsonl_store("utf8.jsonl", jpath, sizeof jpath);
    const char *e1 = "[" LINE1 "]";
    long before = g_results, size;
    size_t b;

    SECTION("invalid UTF-8 in every C string position, and in recover_jsonl bytes");
    CHECK_STATUS(session_store_append(js, LINE1, NULL), SESSION_OK, NULL, "root (jsonl)");
    CHECK_STATUS(session_store_append(mem, LINE1, NULL), SESSION_OK, NULL, "root (memory)");
    size = file_size(jpath);
    for (b = 0; b < sizeof BAD_UTF8 / sizeof BAD_UTF8[0]; b++) {
        const char *bad = BAD_UTF8[b];
        char *in_id = cat("{\"id\":\"x", bad, "\",\"parentId\":null,\"timestamp\":1,\"type\":\"metadata\","
                          "\"key\":\"k\",\"value\":1}", (char *)NULL);
        char *in_key = cat(HEAD "\"type\":\"metadata\",\"key\":\"k\",\"value\":{\"", bad, "\":1}}", (char *)NULL);
        char *outside = cat("{\"id\":\"x\",", bad, "\"parentId\":null,\"timestamp\":1,\"type\":\"metadata\","
                            "\"key\":\"k\",\"value\":1}", (char *)NULL);
        char *arr = cat("[", in_id, "]", (char *)NULL), *leaf = cat("r", bad, (char *)NULL);
        char *bytes_c = cat(LINE1 "\n", in_id, "\n", (char *)NULL), *bytes_t = cat(LINE1 "\n", in_id, (char *)NULL);
        SessionStore *opened = mem;
        char *out = NULL, what[64];
        snprintf(what, sizeof what, "bad UTF-8 #%zu", b);

#define ARGERR(call, name)                                                                        \
    do {                                                                                          \
        out = NULL;                                                                               \
        check_result(what, (call), &out, SESSION_ERR_INVALID_ARGUMENT, "error.argument", "\"" name "\""); \
    } while (0)
        ARGERR(session_parse_entry(in_id, &out), "entry_json");
        ARGERR(session_parse_entry(in_key, &out), "entry_json");
        ARGERR(session_parse_entry(outside, &out), "entry_json");
        ARGERR(session_path_to(arr, "x", &out), "entries_json");
        ARGERR(session_path_to(e1, leaf, &out), "leaf_id");
        ARGERR(session_messages_on_path(arr, "x", &out), "entries_json");
        ARGERR(session_messages_on_path(e1, leaf, &out), "leaf_id");
        ARGERR(session_store_append(js, in_id, &out), "entry_json");
        ARGERR(session_store_append(mem, in_key, &out), "entry_json");
        ARGERR(session_store_path_to(js, leaf, &out), "leaf_id");
        ARGERR(session_store_messages_on_path(mem, leaf, &out), "leaf_id");
        snprintf(path, sizeof path, "%s/bad%s.jsonl", g_dir, bad);
        ARGERR(session_jsonl_store_open(path, &opened, &out), "path");
        CHECK(opened == NULL, "%s: *out_store is NULL after open fails", what);
        CHECK(!file_exists(path), "%s: open with a non-UTF-8 path creates nothing", what);
        opened = mem;
        ARGERR(session_jsonl_store_open_with(path, NULL, &opened, &out), "path");
        CHECK(opened == NULL && !file_exists(path), "%s: open_with: no store, no file", what);
        ARGERR(session_jsonl_repair(path, &out), "path");
        {
            char *opts = cat("{\"durability\":\"none", bad, "\"}", (char *)NULL);
            snprintf(path, sizeof path, "%s/utf8-options.jsonl", g_dir);
            ARGERR(session_jsonl_store_open_with(path, opts, &opened, &out), "options_json");
            CHECK(opened == NULL && !file_exists(path), "%s: bad options: no store, no file", what);
            free(opts);
        }
        CHECK(file_size(jpath) == size, "%s: the rejected appends did not touch the file", what);
#undef ARGERR
        out = NULL;
        check_result(what, session_recover_jsonl((const uint8_t *)bytes_c, strlen(bytes_c), &out), &out,
               SESSION_ERR_CORRUPT_LINE, "error.line", "2");
        out = NULL;
        check_result(what, session_recover_jsonl((const uint8_t *)bytes_t, strlen(bytes_t), &out), &out, SESSION_OK,
               "warnings", "[{\"code\":\"unterminated_tail\",\"line\":2}]");
        free(in_id), free(in_key), free(outside), free(arr), free(leaf), free(bytes_c), free(bytes_t);
    }
    CHECK(session_store_state(js) == SESSION_STATE_READY, "the JSONL store is still ready");
    session_store_close(js);
    session_store_close(mem);
    printf("   %ld invalid-UTF-8 cases (%zu byte sequences)\n", g_results - before, sizeof BAD_UTF8 / sizeof BAD_UTF8[0]);
}

int main(void)
{
    hostile_begin("hostile_utf8");
    utf8_sweep();
    hostile_end("test_hostile_utf8");
    return 0;
}

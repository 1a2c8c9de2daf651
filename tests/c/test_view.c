/*
 * test_view.c -- session_store_render_html through the C ABI: the chapter's tree with a
 * hostile message as one self-contained page, the chosen leaf, and its errors.
 */
#include "check.h"

#define HOSTILE                                                                            \
    "{\"id\":\"x-1\",\"parentId\":\"a-final\",\"timestamp\":1733000009000,"                 \
    "\"type\":\"message\",\"message\":{\"role\":\"user\",\"content\":"                      \
    "\"</script><script>alert(1)</script><img src=x onerror=alert(1)>\"}}"

static long count(const char *haystack, const char *needle)
{
    long n = 0;
    const char *p = haystack;
    while ((p = strstr(p, needle)) != NULL) {
        n++;
        p += strlen(needle);
    }
    return n;
}

int main(void)
{
    SessionStore *store = NULL;
    char *out = NULL;
    int i;

    SECTION("a page of the chapter's tree");
    CHECK_STATUS(session_memory_store_open(&store), SESSION_OK, NULL, "open");
    for (i = 0; i < 6; i++)
        CHECK_STATUS(session_store_append(store, tree_entry(i), NULL), SESSION_OK, NULL, "append %d", i);
    CHECK_STATUS(session_store_append(store, HOSTILE, NULL), SESSION_OK, NULL, "append the hostile message");

    CHECK_STATUS(session_store_render_html(store, NULL, &out), SESSION_OK, out, "render");
    CHECK(strncmp(out, "<!DOCTYPE html>", 15) == 0, "a whole document");
    CHECK(strstr(out, "http-equiv=\"Content-Security-Policy\" content=\"default-src 'none';") != NULL,
          "a policy that forbids every load");
    CHECK(count(out, "<script") == 2, "only the page's two script elements (got %ld)", count(out, "<script"));
    CHECK(strstr(out, "<img") == NULL, "the session's markup stays data");
    CHECK(strstr(out, "\\u003c/script\\u003e") != NULL, "the closing tag is escaped in the data");
    CHECK(strstr(out, "\"leaf\":\"x-1\"") != NULL, "opens on the latest leaf by default");
    session_string_free(out);

    CHECK_STATUS(session_store_render_html(store, "{\"leaf\":\"a-alt\",\"title\":\"Chapter\"}", &out),
                 SESSION_OK, out, "render a-alt");
    CHECK(strstr(out, "\"leaf\":\"a-alt\"") != NULL, "opens on the leaf asked for");
    CHECK(strstr(out, "<title>Chapter</title>") != NULL, "titled as asked");
    session_string_free(out);

    SECTION("errors");
    CHECK_ERROR(session_store_render_html(store, "{\"leaf\":\"nope\"}", &out), SESSION_ERR_UNKNOWN_LEAF, out,
                "unknown leaf");
    CHECK_JSON(out, "error.id", "\"nope\"", "names the leaf");
    session_string_free(out);
    CHECK_ERROR(session_store_render_html(store, "{\"leef\":1}", &out), SESSION_ERR_INVALID_ARGUMENT, out,
                "unknown option");
    CHECK_JSON(out, "error.argument", "\"options_json\"", "names the options");
    session_string_free(out);
    CHECK_ERROR(session_store_render_html(NULL, NULL, &out), SESSION_ERR_INVALID_ARGUMENT, out, "NULL store");
    session_string_free(out);
    CHECK_STATUS(session_store_render_html(store, NULL, NULL), SESSION_OK, NULL, "NULL out_html: not wanted");
    session_store_close(store);

    check_done("test_view");
    return 0;
}

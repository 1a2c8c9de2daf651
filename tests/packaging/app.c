/*
 * app.c -- the smallest real consumer of an installed libsession: it includes
 * <session.h> from the installed prefix, links the installed library (found through
 * pkg-config or CMake's find_package), opens a JSONL file given on the command line,
 * appends a two-entry branch and prints the version and the messages on it.
 *
 *   usage: app FILE.jsonl      prints "version=X.Y.Z" and "messages=[…]"; exit 0 on success
 */
#include <stdio.h>
#include <string.h>

#include <session.h>

static int fail(const char *what, SessionStatus st, char *json)
{
    fprintf(stderr, "app: %s: %s: %s\n", what, session_status_name(st), json ? json : "(null)");
    session_string_free(json);
    return 1;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s FILE.jsonl\n", argv[0]);
        return 2;
    }

    SessionStore *store = NULL;
    char *out = NULL;
    SessionStatus st = session_jsonl_store_open(argv[1], &store, &out);
    if (st != SESSION_OK) return fail("open", st, out);
    session_string_free(out);

    static const char *const entries[] = {
        "{\"id\":\"u-1\",\"parentId\":null,\"timestamp\":1,\"type\":\"message\","
        "\"message\":{\"role\":\"user\",\"content\":\"hello\"}}",
        "{\"id\":\"a-1\",\"parentId\":\"u-1\",\"timestamp\":2,\"type\":\"message\","
        "\"message\":{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"hi\"}]}}",
    };
    for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++) {
        st = session_store_append(store, entries[i], &out);
        if (st != SESSION_OK) {
            session_store_close(store);
            return fail("append", st, out);
        }
        session_string_free(out);
    }

    /* A duplicate id is refused with its stable status and name. */
    st = session_store_append(store, entries[0], &out);
    if (st != SESSION_ERR_DUPLICATE_ID || strcmp(session_status_name(st), "duplicate_id") != 0) {
        session_store_close(store);
        return fail("duplicate append was not refused", st, out);
    }
    session_string_free(out);

    st = session_store_messages_on_path(store, "a-1", &out);
    if (st != SESSION_OK) {
        session_store_close(store);
        return fail("messages_on_path", st, out);
    }
    printf("version=%s\nmessages=%s\n", session_version(), out);
    session_string_free(out);

    int state = session_store_state(store);
    session_store_close(store);
    return state == SESSION_STATE_READY ? 0 : 1;
}

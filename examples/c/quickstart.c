/* quickstart.c -- open a JSONL session file, append a user message and the assistant's
 * reply, and print the messages on that branch.
 *   cc quickstart.c -Iinclude -Ltarget/release -lsession -o quickstart
 *   ./quickstart /tmp/demo.jsonl                                                       */
#include <stdio.h>

#include "session.h"

/* Reports a failed call with its error JSON; frees the JSON either way. */
static int ok(const char *what, SessionStatus status, char *json)
{
    if (status != SESSION_OK)
        fprintf(stderr, "%s: %s %s\n", what, session_status_name(status), json ? json : "");
    session_string_free(json);
    return status == SESSION_OK;
}

int main(int argc, char **argv)
{
    const char *entries[] = {
        "{\"id\":\"u-1\",\"parentId\":null,\"timestamp\":1733000000000,\"type\":\"message\","
        "\"message\":{\"role\":\"user\",\"content\":\"What is this project called?\"}}",
        "{\"id\":\"a-1\",\"parentId\":\"u-1\",\"timestamp\":1733000001000,\"type\":\"message\","
        "\"message\":{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"tiny-pi\"}]}}",
    };
    SessionStore *store = NULL;
    SessionStatus status;
    char *json = NULL;
    int i, exit_code = 1;

    if (argc != 2) {
        fprintf(stderr, "usage: %s FILE.jsonl\n", argv[0]);
        return 2;
    }
    status = session_jsonl_store_open(argv[1], &store, &json); /* creates the file */
    if (!ok("open", status, json)) return 1;

    for (i = 0; i < 2; i++) {
        status = session_store_append(store, entries[i], &json); /* {"id":…,"seq":N} */
        if (!ok("append", status, json)) goto done;
    }
    status = session_store_messages_on_path(store, "a-1", &json); /* root -> a-1 */
    if (status == SESSION_OK) printf("%s\n", json);
    if (!ok("messages_on_path", status, json)) goto done;
    exit_code = 0;
done:
    session_store_close(store);
    return exit_code;
}

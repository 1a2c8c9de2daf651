/*
 * test_context.c -- what the model sees (docs/contract.md §6, §7, §10) through the real library:
 *   session_build_context over an entries array, session_store_build_context through a
 *   memory store (with and without a host estimator), the compaction rules at append,
 *   statuses 17/18, and session_memory_store_open_with's strictRoles.
 */
#include <float.h>
#include <string.h>
#include "check.h"

static const char *const U2 =
    "{\"id\":\"u-2\",\"parentId\":\"meta-cwd\",\"timestamp\":7,\"type\":\"message\","
    "\"message\":{\"role\":\"user\",\"content\":\"再读 package.json，告诉我版本\"}}";
static const char *const A_PKG =
    "{\"id\":\"a-pkg\",\"parentId\":\"u-2\",\"timestamp\":8,\"type\":\"message\","
    "\"message\":{\"role\":\"assistant\",\"content\":[{\"type\":\"toolCall\",\"id\":\"call-2\","
    "\"name\":\"read\",\"arguments\":{\"path\":\"package.json\"}}]}}";
static const char *const R_PKG =
    "{\"id\":\"r-pkg\",\"parentId\":\"a-pkg\",\"timestamp\":9,\"type\":\"message\","
    "\"message\":{\"role\":\"toolResult\",\"toolCallId\":\"call-2\",\"toolName\":\"read\","
    "\"content\":[{\"type\":\"text\",\"text\":\"{\\\"version\\\":\\\"0.1.0\\\"}\"}],\"isError\":false}}";
static const char *const A_VER =
    "{\"id\":\"a-ver\",\"parentId\":\"r-pkg\",\"timestamp\":10,\"type\":\"message\","
    "\"message\":{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"版本是 0.1.0\"}]}}";
static const char *const U3 =
    "{\"id\":\"u-3\",\"parentId\":\"c-1\",\"timestamp\":12,\"type\":\"message\","
    "\"message\":{\"role\":\"user\",\"content\":\"还有什么依赖？\"}}";
#define SUMMARY "User asked for the project name; it is tiny-pi."

/* c-1 under `parent`, keeping from `first` (JSON text). Static buffer. */
static const char *c1(const char *parent, const char *first)
{
    static char buf[512];
    snprintf(buf, sizeof buf,
             "{\"id\":\"c-1\",\"parentId\":\"%s\",\"timestamp\":11,\"type\":\"compaction\","
             "\"summary\":\"" SUMMARY "\",\"firstKeptEntryId\":%s,\"tokensBefore\":1200}",
             parent, first);
    return buf;
}

/* A memory store holding §1 and u-2 … a-ver (ten entries). */
static SessionStore *store_before_c1(void)
{
    SessionStore *store = NULL;
    const char *more[4];
    int i;
    CHECK_STATUS(session_memory_store_open(&store), SESSION_OK, NULL, "memory store opens");
    for (i = 0; i < 6; i++)
        CHECK_STATUS(session_store_append(store, tree_entry(i), NULL), SESSION_OK, NULL, "append §1");
    more[0] = U2, more[1] = A_PKG, more[2] = R_PKG, more[3] = A_VER;
    for (i = 0; i < 4; i++)
        CHECK_STATUS(session_store_append(store, more[i], NULL), SESSION_OK, NULL, "append §10");
    return store;
}

/* The whole of §10 as a JSON array (malloc). */
static char *extended_array(const char *first)
{
    const char *parts[12];
    size_t n = 3;
    char *s;
    int i;
    for (i = 0; i < 6; i++) parts[i] = tree_entry(i);
    parts[6] = U2, parts[7] = A_PKG, parts[8] = R_PKG, parts[9] = A_VER;
    parts[10] = c1("a-ver", first), parts[11] = U3;
    for (i = 0; i < 12; i++) n += strlen(parts[i]) + 1;
    s = (char *)malloc(n);
    if (!s) abort();
    strcpy(s, "[");
    for (i = 0; i < 12; i++) {
        if (i) strcat(s, ",");
        strcat(s, parts[i]);
    }
    strcat(s, "]");
    return s;
}

static void check_u3_context(const char *out, const char *who, const char *first)
{
    CHECK_JSON(out, "leafId", "\"u-3\"", "%s: leafId", who);
    CHECK_JSON(out, "compaction.id", "\"c-1\"", "%s: the compaction used", who);
    CHECK_JSON(out, "compaction.firstKeptEntryId", first, "%s: its firstKeptEntryId", who);
    CHECK_JSON(out, "compaction.tokensBefore", "1200", "%s: tokensBefore", who);
    CHECK_JSON_LENGTH(out, "messages", 6, "%s: summary + five kept messages", who);
    CHECK_JSON(out, "messages.0",
               "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"" SUMMARY "\"}],\"timestamp\":11}",
               "%s: the synthetic summary message", who);
    CHECK_JSON(out, "messages.2.content.0.id", "\"call-2\"", "%s: a-pkg kept whole", who);
    CHECK_JSON(out, "keptEntryIds", "[\"u-2\",\"a-pkg\",\"r-pkg\",\"a-ver\",\"u-3\"]", "%s: keptEntryIds", who);
    CHECK_JSON(out, "metadata", "{\"cwd\":\"/workspace/tiny-pi\"}", "%s: metadata replayed", who);
    CHECK_JSON(out, "interactions.0.start", "1", "%s: interactions index into messages", who);
    CHECK_JSON(out, "interactions.0.count", "4", "%s: first interaction has four messages", who);
    CHECK_JSON(out, "budget", "null", "%s: no budget", who);
}

static void section10_pure(void)
{
    char *entries = extended_array("\"u-2\"");
    char *out = NULL;
    SessionStatus st;
    SECTION("§10 through session_build_context");
    st = session_build_context(entries, "u-3", NULL, &out);
    CHECK_STATUS(st, SESSION_OK, out, "build_context(u-3)");
    check_u3_context(out, "pure", "\"u-2\"");
    session_string_free(out);

    st = session_messages_on_path(entries, "u-3", &out);
    CHECK_STATUS(st, SESSION_OK, out, "messages_on_path(u-3)");
    CHECK_JSON_LENGTH(out, "", 9, "messages_on_path(u-3) still returns all nine originals");
    session_string_free(out);

    st = session_build_context(entries, "a-alt", "{}", &out);
    CHECK_STATUS(st, SESSION_OK, out, "build_context(a-alt)");
    CHECK_JSON(out, "compaction", "null", "a-alt: no compaction");
    CHECK_JSON(out, "keptEntryIds", "[\"u-1\",\"a-alt\"]", "a-alt: u-1, a-alt");
    session_string_free(out);

    st = session_build_context(entries, "nope", NULL, &out);
    CHECK_ERROR(st, SESSION_ERR_UNKNOWN_LEAF, out, "unknown leaf");
    session_string_free(out);

    st = session_build_context(entries, "u-3", "{\"bogus\":1}", &out);
    CHECK_ERROR(st, SESSION_ERR_INVALID_ARGUMENT, out, "an unknown option member");
    CHECK_JSON(out, "error.argument", "\"options_json\"", "the bad argument is named");
    session_string_free(out);

    st = session_build_context(NULL, "u-3", NULL, &out);
    CHECK_ERROR(st, SESSION_ERR_INVALID_ARGUMENT, out, "NULL entries_json");
    session_string_free(out);
    CHECK(session_build_context(entries, NULL, NULL, NULL) == SESSION_ERR_INVALID_ARGUMENT,
          "NULL leaf_id with NULL out_json");
    free(entries);

    entries = extended_array("\"a-pkg\"");
    st = session_build_context(entries, "u-3", NULL, &out);
    CHECK_ERROR(st, SESSION_ERR_INVALID_COMPACTION, out, "a cut between a call and its result");
    CHECK_JSON(out, "error.reason", "\"not_interaction_start\"", "reason");
    CHECK_JSON(out, "error.compactionId", "\"c-1\"", "compactionId");
    CHECK_JSON(out, "error.firstKeptEntryId", "\"a-pkg\"", "firstKeptEntryId");
    session_string_free(out);
    free(entries);
}

static void section10_append(void)
{
    struct {
        const char *parent, *first, *reason;
    } cases[] = {
        {"a-ver", "\"a-pkg\"", "\"not_interaction_start\""},
        {"a-ver", "\"r-pkg\"", "\"not_interaction_start\""},
        {"a-ver", "\"a-alt\"", "\"not_on_path\""},
        {"a-ver", "\"nope\"", "\"unknown_entry\""},
        {"a-pkg", "null", "\"pending_tool_calls\""},
    };
    size_t i;
    char *out = NULL;
    SessionStatus st;
    SECTION("§10 compaction rules at append: SESSION_ERR_INVALID_COMPACTION");
    CHECK(strcmp(session_status_name(SESSION_ERR_INVALID_COMPACTION), "invalid_compaction") == 0 &&
              SESSION_ERR_INVALID_COMPACTION == 17,
          "status 17 is invalid_compaction");
    CHECK(strcmp(session_status_name(SESSION_ERR_TOOL_PAIRING), "tool_pairing") == 0 &&
              SESSION_ERR_TOOL_PAIRING == 18,
          "status 18 is tool_pairing");
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        SessionStore *store = store_before_c1();
        st = session_store_append(store, c1(cases[i].parent, cases[i].first), &out);
        CHECK_ERROR(st, SESSION_ERR_INVALID_COMPACTION, out, "c-1 keeping from %s", cases[i].first);
        CHECK_JSON(out, "error.reason", cases[i].reason, "reason for %s", cases[i].first);
        session_string_free(out);
        /* A failed append fails only itself. */
        st = session_store_append(store, c1("a-ver", "\"u-2\""), NULL);
        CHECK_STATUS(st, SESSION_OK, NULL, "a valid compaction still commits after %s", cases[i].first);
        session_store_close(store);
    }
    {
        SessionStore *store = store_before_c1();
        CHECK_STATUS(session_store_append(store, c1("a-ver", "null"), NULL), SESSION_OK, NULL,
                     "null keeps nothing");
        CHECK_STATUS(session_store_append(store, U3, NULL), SESSION_OK, NULL, "u-3 appends");
        st = session_store_build_context(store, "u-3", NULL, NULL, NULL, &out);
        CHECK_STATUS(st, SESSION_OK, out, "store build_context(u-3) with null");
        CHECK_JSON_LENGTH(out, "messages", 2, "null: [summary, u-3]");
        CHECK_JSON(out, "keptEntryIds", "[\"u-3\"]", "null: only u-3 kept");
        session_string_free(out);
        session_store_close(store);
    }
    {
        SessionStore *store = store_before_c1();
        CHECK_STATUS(session_store_append(store, c1("a-ver", "\"meta-cwd\""), NULL), SESSION_OK, NULL,
                     "firstKeptEntryId on a metadata entry is accepted");
        CHECK_STATUS(session_store_append(store, U3, NULL), SESSION_OK, NULL, "u-3 appends");
        st = session_store_build_context(store, "u-3", NULL, NULL, NULL, &out);
        CHECK_STATUS(st, SESSION_OK, out, "store build_context(u-3) kept from meta-cwd");
        check_u3_context(out, "store", "\"meta-cwd\"");
        session_string_free(out);
        session_store_close(store);
    }
}

static void pairing(void)
{
    static const char ORPHAN[] =
        "{\"id\":\"r-9\",\"parentId\":\"a-final\",\"timestamp\":7,\"type\":\"message\","
        "\"message\":{\"role\":\"toolResult\",\"toolCallId\":\"call-9\",\"toolName\":\"read\","
        "\"content\":[],\"isError\":false}}";
    SessionStore *store = NULL;
    char *out = NULL;
    SessionStatus st;
    int i;
    SECTION("§10 orphan result: SESSION_ERR_TOOL_PAIRING; onDefect skip");
    CHECK_STATUS(session_memory_store_open_with(NULL, &store), SESSION_OK, NULL, "open_with(NULL)");
    for (i = 0; i < 6; i++)
        CHECK_STATUS(session_store_append(store, tree_entry(i), NULL), SESSION_OK, NULL, "append §1");
    CHECK_STATUS(session_store_append(store, ORPHAN, NULL), SESSION_OK, NULL, "an orphan result appends");
    st = session_store_build_context(store, "r-9", NULL, NULL, NULL, &out);
    CHECK_ERROR(st, SESSION_ERR_TOOL_PAIRING, out, "orphan result");
    CHECK_JSON(out, "error.reason", "\"orphan_result\"", "reason");
    CHECK_JSON(out, "error.entryId", "\"r-9\"", "entryId");
    CHECK_JSON(out, "error.toolCallId", "\"call-9\"", "toolCallId");
    CHECK_JSON(out, "error.interactionStartId", "\"u-1\"", "interactionStartId");
    session_string_free(out);
    st = session_store_build_context(store, "r-9", "{\"onDefect\":\"skip\"}", NULL, NULL, &out);
    CHECK_STATUS(st, SESSION_OK, out, "onDefect skip");
    CHECK_JSON_LENGTH(out, "messages", 0, "the defective interaction is dropped whole");
    CHECK_JSON(out, "skipped.0.entryId", "\"r-9\"", "and listed in skipped");
    CHECK_JSON(out, "skipped.0.reason", "\"orphan_result\"", "with its reason");
    session_string_free(out);
    session_store_close(store);
}

static void synthesize(void)
{
    static const char U[] = "{\"id\":\"u-1\",\"parentId\":null,\"timestamp\":1,\"type\":\"message\","
                            "\"message\":{\"role\":\"user\",\"content\":\"run it\"}}";
    static const char A[] = "{\"id\":\"a-1\",\"parentId\":\"u-1\",\"timestamp\":2,\"type\":\"message\","
                            "\"message\":{\"role\":\"assistant\",\"content\":[{\"type\":\"toolCall\","
                            "\"id\":\"call-1\",\"name\":\"bash\",\"arguments\":{}}]}}";
    SessionStore *store = NULL;
    char *out = NULL;
    SessionStatus st;
    SECTION("onDefect synthesize: an unanswered call gets a synthetic error result");
    CHECK_STATUS(session_memory_store_open_with(NULL, &store), SESSION_OK, NULL, "open_with(NULL)");
    CHECK_STATUS(session_store_append(store, U, NULL), SESSION_OK, NULL, "append u-1");
    CHECK_STATUS(session_store_append(store, A, NULL), SESSION_OK, NULL, "append a-1");
    st = session_store_build_context(store, "a-1", NULL, NULL, NULL, &out);
    CHECK_ERROR(st, SESSION_ERR_TOOL_PAIRING, out, "the default still refuses");
    CHECK_JSON(out, "error.reason", "\"missing_result\"", "reason");
    session_string_free(out);
    st = session_store_build_context(store, "a-1", "{\"onDefect\":\"synthesize\"}", NULL, NULL, &out);
    CHECK_STATUS(st, SESSION_OK, out, "onDefect synthesize");
    CHECK_JSON_LENGTH(out, "messages", 3, "the call is answered");
    CHECK_JSON(out, "messages.2.role", "\"toolResult\"", "by a tool result");
    CHECK_JSON(out, "messages.2.toolCallId", "\"call-1\"", "for the call");
    CHECK_JSON(out, "messages.2.toolName", "\"bash\"", "named as the call");
    CHECK_JSON(out, "messages.2.content.0.text", "\"aborted\"", "saying aborted");
    CHECK_JSON(out, "messages.2.isError", "true", "an error");
    CHECK_JSON(out, "messages.2.timestamp", "2", "at the call's time");
    CHECK_JSON(out, "messages.2.synthetic", "true", "marked synthetic");
    CHECK_JSON(out, "keptEntryIds.2", "null", "with no entry");
    CHECK_JSON(out, "defects.0.action", "\"synthesized\"", "listed in defects");
    session_string_free(out);
    session_store_close(store);
}

static void profile(void)
{
    static const char U[] = "{\"id\":\"u-1\",\"parentId\":null,\"timestamp\":1,\"type\":\"message\","
                            "\"message\":{\"role\":\"user\",\"content\":\"run it\"}}";
    static const char E[] = "{\"id\":\"a-err\",\"parentId\":\"u-1\",\"timestamp\":2,\"type\":\"message\","
                            "\"message\":{\"role\":\"assistant\",\"content\":[],\"stopReason\":\"error\"}}";
    static const char A[] = "{\"id\":\"a-1\",\"parentId\":\"a-err\",\"timestamp\":3,\"type\":\"message\","
                            "\"message\":{\"role\":\"assistant\",\"content\":[{\"type\":\"toolCall\","
                            "\"id\":\"call-1\",\"name\":\"bash\",\"arguments\":{}}]}}";
    SessionStore *store = NULL;
    char *out = NULL;
    SessionStatus st;
    SECTION("profile pi: a failed reply is left out, a missing result is No result provided");
    CHECK_STATUS(session_memory_store_open_with(NULL, &store), SESSION_OK, NULL, "open_with(NULL)");
    CHECK_STATUS(session_store_append(store, U, NULL), SESSION_OK, NULL, "append u-1");
    CHECK_STATUS(session_store_append(store, E, NULL), SESSION_OK, NULL, "append a-err");
    CHECK_STATUS(session_store_append(store, A, NULL), SESSION_OK, NULL, "append a-1");
    st = session_store_build_context(store, "a-1", "{\"profile\":\"pi\"}", NULL, NULL, &out);
    CHECK_STATUS(st, SESSION_OK, out, "profile pi");
    CHECK_JSON_LENGTH(out, "messages", 3, "u-1, a-1 and the answer");
    CHECK_JSON(out, "keptEntryIds.1", "\"a-1\"", "the failed reply is left out");
    CHECK_JSON(out, "messages.2.content.0.text", "\"No result provided\"", "pi's text");
    CHECK_JSON(out, "defects.0.action", "\"synthesized\"", "listed in defects");
    session_string_free(out);
    st = session_store_build_context(store, "a-1", "{\"profile\":\"auto\"}", NULL, NULL, &out);
    CHECK_ERROR(st, SESSION_ERR_TOOL_PAIRING, out, "auto on a native session is no profile");
    session_string_free(out);
    st = session_store_build_context(store, "a-1", "{\"profile\":\"gemini\"}", NULL, NULL, &out);
    CHECK_ERROR(st, SESSION_ERR_INVALID_ARGUMENT, out, "an unknown profile");
    session_string_free(out);
    session_store_close(store);
}

static void profile_claude_code(void)
{
    /* One reply written one block per line (responseId r1): a whitespace part, a Task
     * call answered by r-k, a call m that nothing answers. */
    static const char *LINES[] = {
        "{\"id\":\"u-1\",\"parentId\":null,\"timestamp\":1,\"type\":\"message\","
        "\"message\":{\"role\":\"user\",\"content\":\"look\"}}",
        "{\"id\":\"a-ws\",\"parentId\":\"u-1\",\"timestamp\":2,\"type\":\"message\","
        "\"message\":{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"\\n\\n\"}],"
        "\"responseId\":\"r1\"}}",
        "{\"id\":\"a-k\",\"parentId\":\"a-ws\",\"timestamp\":3,\"type\":\"message\","
        "\"message\":{\"role\":\"assistant\",\"content\":[{\"type\":\"toolCall\",\"id\":\"k\","
        "\"name\":\"Task\",\"arguments\":{}}],\"responseId\":\"r1\"}}",
        "{\"id\":\"a-m\",\"parentId\":\"a-k\",\"timestamp\":4,\"type\":\"message\","
        "\"message\":{\"role\":\"assistant\",\"content\":[{\"type\":\"toolCall\",\"id\":\"m\","
        "\"name\":\"t\",\"arguments\":{}}],\"responseId\":\"r1\"}}",
        "{\"id\":\"r-k\",\"parentId\":\"a-m\",\"timestamp\":5,\"type\":\"message\","
        "\"message\":{\"role\":\"toolResult\",\"toolCallId\":\"k\",\"toolName\":\"Task\","
        "\"content\":[],\"isError\":false}}",
    };
    SessionStore *store = NULL;
    char *out = NULL;
    SessionStatus st;
    SECTION("profile claude-code: sends what Claude Code sends for a split reply");
    CHECK_STATUS(session_memory_store_open_with(NULL, &store), SESSION_OK, NULL, "open_with(NULL)");
    for (size_t i = 0; i < sizeof LINES / sizeof LINES[0]; i++) {
        CHECK_STATUS(session_store_append(store, LINES[i], NULL), SESSION_OK, NULL, "append");
    }
    st = session_store_build_context(store, "r-k", "{\"profile\":\"claude-code\"}", NULL, NULL, &out);
    CHECK_STATUS(st, SESSION_OK, out, "profile claude-code");
    CHECK_JSON_LENGTH(out, "messages", 4, "u-1, the merged reply, r-k, No response requested.");
    CHECK_JSON_LENGTH(out, "messages.1.content", 1, "the whitespace part and the unanswered part left out");
    CHECK_JSON(out, "messages.1.content.0.name", "\"Agent\"", "Task sent as Agent");
    CHECK_JSON(out, "messages.2.toolCallId", "\"k\"", "the result after the reply");
    CHECK_JSON(out, "messages.3.content.0.text", "\"No response requested.\"", "the conversation ends on a result");
    CHECK_JSON(out, "messages.3.synthetic", "true", "marked synthetic");
    CHECK_JSON(out, "defects.0.toolCallId", "\"m\"", "the unanswered call");
    CHECK_JSON(out, "defects.0.action", "\"dropped\"", "left out");
    session_string_free(out);
    session_store_close(store);
}

static void profile_codex_tool_search(void)
{
    /* A tool search call without its output, and an output without its call. */
    static const char *LINES[] = {
        "{\"id\":\"u-1\",\"parentId\":null,\"timestamp\":1,\"type\":\"message\","
        "\"message\":{\"role\":\"user\",\"content\":\"find a tool\"}}",
        "{\"id\":\"s-1\",\"parentId\":\"u-1\",\"timestamp\":2,\"type\":\"message\","
        "\"message\":{\"role\":\"assistant\",\"content\":[],"
        "\"codexItem\":{\"type\":\"tool_search_call\",\"call_id\":\"t1\"}}}",
        "{\"id\":\"o-2\",\"parentId\":\"s-1\",\"timestamp\":3,\"type\":\"message\","
        "\"message\":{\"role\":\"assistant\",\"content\":[],"
        "\"codexItem\":{\"type\":\"tool_search_output\",\"call_id\":\"t2\"}}}",
    };
    SessionStore *store = NULL;
    char *out = NULL;
    SessionStatus st;
    SECTION("profile codex: tool searches paired as Codex pairs them");
    CHECK_STATUS(session_memory_store_open_with(NULL, &store), SESSION_OK, NULL, "open_with(NULL)");
    for (size_t i = 0; i < sizeof LINES / sizeof LINES[0]; i++) {
        CHECK_STATUS(session_store_append(store, LINES[i], NULL), SESSION_OK, NULL, "append");
    }
    st = session_store_build_context(store, "o-2", "{\"profile\":\"codex\"}", NULL, NULL, &out);
    CHECK_STATUS(st, SESSION_OK, out, "profile codex");
    CHECK_JSON_LENGTH(out, "messages", 3, "u-1, the call and its empty output; the lone output left out");
    CHECK_JSON(out, "messages.2.codexItem.type", "\"tool_search_output\"", "an output");
    CHECK_JSON(out, "messages.2.codexItem.call_id", "\"t1\"", "for the call");
    CHECK_JSON_LENGTH(out, "messages.2.codexItem.tools", 0, "with no tools");
    CHECK_JSON(out, "defects.0.action", "\"synthesized\"", "the output listed");
    CHECK_JSON(out, "defects.1.toolCallId", "\"t2\"", "the lone output");
    CHECK_JSON(out, "defects.1.action", "\"dropped\"", "left out");
    session_string_free(out);
    session_store_close(store);
}

/* The host estimator: records each call, returns `value` tokens. */
struct tally {
    int calls;
    int bad_json;
    double value;
    size_t bytes;
};

static double count_tokens(const char *message_json, size_t len, void *user_data)
{
    struct tally *t = (struct tally *)user_data;
    t->calls++;
    if (strlen(message_json) != len || message_json[0] != '{' || message_json[len - 1] != '}') t->bad_json++;
    t->bytes += len;
    return t->value;
}

static void estimator(void)
{
    SessionStore *store = store_before_c1();
    struct tally t = {0, 0, 7.0, 0};
    char *out = NULL;
    SessionStatus st;
    SECTION("the host estimator: once per message, with its JSON and user_data");
    CHECK_STATUS(session_store_append(store, c1("a-ver", "\"u-2\""), NULL), SESSION_OK, NULL, "c-1");
    CHECK_STATUS(session_store_append(store, U3, NULL), SESSION_OK, NULL, "u-3");

    st = session_store_build_context(store, "u-3", NULL, count_tokens, &t, &out);
    CHECK_STATUS(st, SESSION_OK, out, "no budget");
    CHECK(t.calls == 0, "without a budget the estimator is not called (%d calls)", t.calls);
    session_string_free(out);

    st = session_store_build_context(store, "u-3", "{\"budget\":{\"maxTokens\":1000,\"reservedOutput\":100}}",
                                     count_tokens, &t, &out);
    CHECK_STATUS(st, SESSION_OK, out, "with a budget");
    CHECK(t.calls == 6, "called once per message, summary included (%d calls)", t.calls);
    CHECK(t.bad_json == 0, "each call got a NUL-terminated JSON object of the given length");
    CHECK_JSON(out, "budget.used", "42", "used = 6 x 7 tokens");
    CHECK_JSON(out, "budget.available", "900", "available = max - reserved - margin");
    CHECK_JSON(out, "budget.reason", "\"within_budget\"", "within budget");
    CHECK_JSON(out, "interactions.0.tokens", "28", "an interaction's tokens");
    session_string_free(out);

    st = session_store_build_context(store, "u-3", "{\"budget\":{\"maxTokens\":20}}", count_tokens, &t, &out);
    CHECK_STATUS(st, SESSION_OK, out, "a small budget");
    CHECK_JSON(out, "budget.reason", "\"trimmed\"", "older interactions are trimmed");
    CHECK_JSON(out, "budget.droppedInteractions", "1", "one interaction dropped");
    CHECK_JSON(out, "keptEntryIds", "[\"u-3\"]", "the newest interaction stays");
    CHECK_JSON(out, "budget.suggestedFirstKeptEntryId", "\"u-3\"", "a suggested cut");
    session_string_free(out);

    /* Estimates of DBL_MAX: the sums saturate, the output stays JSON (it held `inf`). */
    t.value = DBL_MAX;
    st = session_store_build_context(store, "u-3", "{\"budget\":{\"maxTokens\":20}}", count_tokens, &t, &out);
    CHECK_STATUS(st, SESSION_OK, out, "estimates of DBL_MAX");
    CHECK_JSON(out, "budget.used", "1.7976931348623157e308", "used saturates at DBL_MAX");
    CHECK(out && !strstr(out, "inf") && !strstr(out, "NaN"), "no inf or NaN in the JSON: %s", show(out));
    session_string_free(out);

    t.value = -1.0;
    st = session_store_build_context(store, "u-3", "{\"budget\":{\"maxTokens\":20}}", count_tokens, &t, &out);
    CHECK_ERROR(st, SESSION_ERR_INVALID_ARGUMENT, out, "a negative estimate is an error, not a crash");
    CHECK_JSON(out, "error.entryId", "\"c-1\"", "naming the entry (the summary's compaction)");
    session_string_free(out);
    t.value = 0.0 / 0.0;
    st = session_store_build_context(store, "u-3", "{\"budget\":{\"maxTokens\":20}}", count_tokens, &t, &out);
    CHECK_ERROR(st, SESSION_ERR_INVALID_ARGUMENT, out, "a NaN estimate is an error");
    session_string_free(out);
    CHECK(session_store_state(store) == SESSION_STATE_READY, "the store is still ready");

    st = session_store_build_context(store, "u-3", "{\"budget\":{\"maxTokens\":100000}}", NULL, NULL, &out);
    CHECK_STATUS(st, SESSION_OK, out, "the default estimator");
    CHECK_JSON(out, "budget.reason", "\"within_budget\"", "default estimator within budget");
    session_string_free(out);

    st = session_store_build_context(NULL, "u-3", NULL, NULL, NULL, &out);
    CHECK_ERROR(st, SESSION_ERR_INVALID_ARGUMENT, out, "NULL store");
    session_string_free(out);
    session_store_close(store);
}

static void strict_roles(void)
{
    static const char EXT[] =
        "{\"id\":\"x-1\",\"parentId\":\"u-1\",\"timestamp\":2,\"type\":\"message\","
        "\"message\":{\"role\":\"bashExecution\",\"command\":\"ls\",\"output\":\"cut \\ud83d\"}}";
    SessionStore *store = NULL;
    char *out = NULL;
    SessionStatus st;
    SECTION("open roles by default; strictRoles rejects them");
    CHECK_STATUS(session_memory_store_open_with("{}", &store), SESSION_OK, NULL, "open_with({})");
    CHECK_STATUS(session_store_append(store, tree_entry(0), NULL), SESSION_OK, NULL, "u-1");
    CHECK_STATUS(session_store_append(store, EXT, NULL), SESSION_OK, NULL, "an extension message appends");
    st = session_store_build_context(store, "x-1", NULL, NULL, NULL, &out);
    CHECK_STATUS(st, SESSION_OK, out, "context of an extension message");
    CHECK_JSON(out, "messages.1",
               "{\"role\":\"bashExecution\",\"command\":\"ls\",\"output\":\"cut \\ud83d\"}",
               "kept byte-exact, lone surrogate included");
    session_string_free(out);
    st = session_store_build_context(store, "x-1", "{\"strictRoles\":true}", NULL, NULL, &out);
    CHECK_ERROR(st, SESSION_ERR_INVALID_ENTRY, out, "strictRoles in build_context");
    session_string_free(out);
    session_store_close(store);

    CHECK_STATUS(session_memory_store_open_with("{\"strictRoles\":true}", &store), SESSION_OK, NULL,
                 "open_with strictRoles");
    CHECK_STATUS(session_store_append(store, tree_entry(0), NULL), SESSION_OK, NULL, "u-1");
    st = session_store_append(store, EXT, &out);
    CHECK_ERROR(st, SESSION_ERR_INVALID_ENTRY, out, "strict store rejects an extension role");
    CHECK_JSON(out, "error.pointer", "\"/message/role\"", "at /message/role");
    session_string_free(out);
    session_store_close(store);

    store = (SessionStore *)&st; /* must be reset to NULL on failure */
    CHECK(session_memory_store_open_with("{\"nope\":1}", &store) == SESSION_ERR_INVALID_ARGUMENT,
          "unknown option member");
    CHECK(store == NULL, "*out_store is NULL on failure");
    CHECK(session_memory_store_open_with(NULL, NULL) == SESSION_ERR_INVALID_ARGUMENT, "NULL out_store");
}

int main(void)
{
    section10_pure();
    section10_append();
    pairing();
    synthesize();
    profile();
    profile_claude_code();
    profile_codex_tool_search();
    estimator();
    strict_roles();
    check_done("test_context");
    return 0;
}

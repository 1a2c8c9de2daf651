// test_context.cpp -- build_context from C++17: the compacted example (docs/contract.md
// §10) through a JSONL store and the pure function, a std::function estimator (called
// once per message with that message's JSON; a throw is rethrown after the C call, a
// NaN is a status), compaction checks at append, tool pairing, the memory store's
// strictRoles option and the label target rule.
//
// Built and run (under valgrind) by tests/cpp/run.sh.
#include "check.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

const std::string kExample = std::string(SESSION_EXAMPLES_DIR) + "/tiny-pi-compacted.jsonl";

const char *const kSummaryMessage =
    R"({"role":"user","content":[{"type":"text","text":"User asked for the project name; it is tiny-pi."}],"timestamp":1733000010000})";

// The example's lines, in append order.
std::vector<std::string> example_lines()
{
    std::vector<std::string> lines;
    const std::string text = read_file(kExample);
    for (size_t at = 0, nl; (nl = text.find('\n', at)) != std::string::npos; at = nl + 1)
        lines.push_back(text.substr(at, nl - at));
    return lines;
}

// A memory store holding the first n lines of the example.
session::store memory_with(size_t n)
{
    session::store s;
    CHECK_RESULT(session::store::open_memory(s), SESSION_OK, "memory store");
    const std::vector<std::string> lines = example_lines();
    for (size_t i = 0; i < n; ++i) CHECK_RESULT(s.append(lines.at(i)), SESSION_OK, lines.at(i));
    return s;
}

std::string compaction(const std::string &parent, const std::string &first_kept)
{
    return R"({"id":"c-1","parentId":")" + parent +
           R"(","timestamp":1733000010000,"type":"compaction","summary":"User asked for the project name; it is tiny-pi.","firstKeptEntryId":)" +
           first_kept + R"(,"tokensBefore":1200})";
}

void test_example_u3()
{
    session::store s;
    CHECK_RESULT(session::store::open_jsonl(kExample, R"({"readOnly":true})", s), SESSION_OK,
                 "open the compacted example read-only");
    session::result r = s.build_context("u-3");
    CHECK_RESULT(r, SESSION_OK, "build_context(u-3)");
    CHECK(r.json.rfind(R"({"leafId":"u-3","compaction":{"id":"c-1","firstKeptEntryId":"u-2","tokensBefore":1200,)", 0) == 0,
          r.json);
    CHECK(contains(r.json, std::string(R"("messages":[)") + kSummaryMessage + ","), r.json);
    CHECK(contains(r.json, R"("keptEntryIds":["u-2","a-pkg","r-pkg","a-ver","u-3"])"), r.json);
    CHECK(contains(r.json, R"("metadata":{"cwd":"/workspace/tiny-pi"})"), r.json);
    CHECK(count(r.json, "{\"role\":") == 6, "summary + five kept messages: " + r.json);
    CHECK(!contains(r.json, "读取 README.md"), "u-1 is before the cut");

    session::result all = s.messages_on_path("u-3");
    CHECK(count(all.json, "{\"role\":") == 9, "messages_on_path(u-3) still has all nine");

    session::result pure = session::build_context(s.entries().json, "u-3");
    CHECK_RESULT(pure, SESSION_OK, "pure build_context");
    CHECK(pure.json == r.json, "the pure and store forms agree: " + pure.json);

    r = s.build_context("a-alt");
    CHECK(contains(r.json, R"("compaction":null)") &&
              contains(r.json, R"("keptEntryIds":["u-1","a-alt"])"),
          r.json);

    r = session::build_context(s.entries().json, "u-3", R"({"onDefect":"sometimes"})");
    CHECK_RESULT(r, SESSION_ERR_INVALID_ARGUMENT, "an unknown onDefect");
}

void test_estimator()
{
    session::store s = memory_with(12);
    std::vector<std::string> seen; // what the lambda captures is its "user data"
    const session::token_estimator ten = [&seen](std::string_view message) {
        seen.emplace_back(message);
        return 10.0;
    };
    session::result r = s.build_context("u-3", R"({"budget":{"maxTokens":1000}})", ten);
    CHECK_RESULT(r, SESSION_OK, "build_context with an estimator");
    CHECK(seen.size() == 6, "called once per message: " + std::to_string(seen.size()));
    CHECK(seen.at(0) == kSummaryMessage, "the summary message first: " + seen.at(0));
    for (const std::string &m : seen) CHECK(contains(r.json, m), "estimated message is in the output: " + m);
    CHECK(contains(r.json, R"("reason":"within_budget")") && contains(r.json, R"("used":60)"), r.json);

    // 25 available: the summary (10) and u-3 (10) fit, u-2's interaction (40) does not.
    seen.clear();
    r = s.build_context("u-3", R"({"budget":{"maxTokens":30,"reservedOutput":3,"safetyMargin":2}})", ten);
    CHECK_RESULT(r, SESSION_OK, "trimmed");
    CHECK(contains(r.json, R"("reason":"trimmed")") && contains(r.json, R"("droppedInteractions":1)") &&
              contains(r.json, R"("suggestedFirstKeptEntryId":"u-3")") &&
              contains(r.json, R"("keptEntryIds":["u-3"])"),
          r.json);

    // Without a budget the estimator is never called.
    seen.clear();
    CHECK_RESULT(s.build_context("u-3", "", ten), SESSION_OK, "no budget");
    CHECK(seen.empty(), "no budget, no estimate");

    const std::string budget = R"({"budget":{"maxTokens":1000}})";
    r = s.build_context("u-3", budget, [](std::string_view) { return std::nan(""); });
    CHECK_RESULT(r, SESSION_ERR_INVALID_ARGUMENT, "a NaN estimate");
    CHECK(contains(r.json, R"("entryId":)"), r.json);
    r = s.build_context("u-3", budget, [](std::string_view) { return -1.0; });
    CHECK_RESULT(r, SESSION_ERR_INVALID_ARGUMENT, "a negative estimate");

    int calls = 0;
    bool rethrown = false;
    try {
        s.build_context("u-3", budget, [&calls](std::string_view) -> double {
            ++calls;
            throw std::runtime_error("no tokenizer");
        });
    } catch (const std::runtime_error &e) {
        rethrown = std::strcmp(e.what(), "no tokenizer") == 0;
    }
    CHECK(rethrown, "the estimator's exception reaches the caller");
    CHECK(calls == 1, "the library stops at the first failure");
    CHECK_RESULT(s.build_context("u-3", budget), SESSION_OK, "the store is usable afterwards");
}

void test_compaction_and_pairing()
{
    const struct {
        const char *parent, *first_kept, *reason;
    } bad[] = {
        {"a-ver", R"("a-pkg")", "not_interaction_start"},
        {"a-ver", R"("a-alt")", "not_on_path"},
        {"a-ver", R"("nope")", "unknown_entry"},
        {"a-pkg", "null", "pending_tool_calls"},
    };
    for (const auto &b : bad) {
        session::store s = memory_with(10);
        session::result r = s.append(compaction(b.parent, b.first_kept));
        CHECK_RESULT(r, SESSION_ERR_INVALID_COMPACTION, b.reason);
        CHECK(std::strcmp(r.code(), "invalid_compaction") == 0, r.code());
        CHECK(contains(r.json, std::string(R"("reason":")") + b.reason + "\"") &&
                  contains(r.json, R"("compactionId":"c-1")"),
              r.json);
    }
    session::store s = memory_with(10);
    CHECK_RESULT(s.append(compaction("a-ver", R"("meta-cwd")")), SESSION_OK, "a cut on metadata");

    session::store o = memory_with(4);
    CHECK_RESULT(o.append(R"({"id":"r-orphan","parentId":"a-final","timestamp":1733000006000,"type":"message","message":{"role":"toolResult","toolCallId":"call-9","toolName":"read","content":[],"isError":false}})"),
                 SESSION_OK, "an orphan result is a valid entry");
    session::result r = o.build_context("r-orphan");
    CHECK_RESULT(r, SESSION_ERR_TOOL_PAIRING, "orphan result");
    CHECK(contains(r.json, R"("reason":"orphan_result")") && contains(r.json, R"("toolCallId":"call-9")") &&
              contains(r.json, R"("entryId":"r-orphan")"),
          r.json);
    r = o.build_context("r-orphan", R"({"onDefect":"skip"})");
    CHECK_RESULT(r, SESSION_OK, "skip");
    CHECK(contains(r.json, R"("messages":[])") && contains(r.json, R"("reason":"orphan_result")"), r.json);
    // Codex drops an output without a call, and says so.
    r = o.build_context("r-orphan", session::profile_codex);
    CHECK_RESULT(r, SESSION_OK, "profile codex");
    CHECK(contains(r.json, R"("action":"dropped")") && contains(r.json, R"("entryId":"r-orphan")"), r.json);
    // A native session has no agent: auto is no profile.
    CHECK_RESULT(o.build_context("r-orphan", session::profile_auto), SESSION_ERR_TOOL_PAIRING, "auto");
}

void test_strict_roles()
{
    const char *ext = R"({"id":"x-1","parentId":null,"timestamp":1,"type":"message","message":{"role":"bashExecution","command":"ls"}})";
    session::store strict;
    CHECK_RESULT(session::store::open_memory(R"({"strictRoles":true})", strict), SESSION_OK,
                 "memory store with options");
    CHECK_RESULT(strict.append(ext), SESSION_ERR_INVALID_ENTRY, "strictRoles rejects an extension role");
    session::store open;
    CHECK_RESULT(session::store::open_memory("", open), SESSION_OK, "default options");
    CHECK_RESULT(open.append(ext), SESSION_OK, "an extension role by default");
    session::store bad;
    CHECK_RESULT(session::store::open_memory(R"({"strictRoles":"yes"})", bad), SESSION_ERR_INVALID_ARGUMENT,
                 "a mistyped option");
    CHECK(!bad, "no store on failure");
}

// A session.label must name a committed entry (docs/contract.md §6.3).
void test_label_target()
{
    session::store s = memory_with(6);
    session::result r = s.append(
        R"({"id":"l-1","parentId":"meta-cwd","timestamp":1733000006000,"type":"metadata","key":"session.label","value":{"targetId":"ghost","label":"x"}})");
    CHECK_RESULT(r, SESSION_ERR_UNKNOWN_LEAF, "a label for an unknown target");
    CHECK(contains(r.json, R"("id":"ghost")"), r.json);
    r = s.append(
        R"({"id":"l-1","parentId":"meta-cwd","timestamp":1733000006000,"type":"metadata","key":"session.label","value":{"targetId":"a-read"}})");
    CHECK_RESULT(r, SESSION_ERR_INVALID_ENTRY, "a label without its label member");
}

} // namespace

int main()
{
    static_assert(SESSION_ERR_INVALID_COMPACTION == 17 && SESSION_ERR_TOOL_PAIRING == 18,
                  "stable status values");
    CHECK(std::strcmp(session_status_name(SESSION_ERR_TOOL_PAIRING), "tool_pairing") == 0, "name 18");
    test_example_u3();
    test_estimator();
    test_compaction_and_pairing();
    test_strict_roles();
    test_label_target();
    std::cout << "PASS test_context (C++17): " << g_checks << " checks\n";
    return 0;
}

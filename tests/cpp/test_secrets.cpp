// test_secrets.cpp -- session::secrets and session::redact from C++17 (issue 36): a key
// in a user message found and redacted, in a copy and in place; an invalid rule.
//
// Built and run (under valgrind) by tests/cpp/run.sh.
#include "check.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace {

// Built at run time, so that no source file holds a string that looks like a key.
std::string fake_stripe_key()
{
    static const char alnum[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    unsigned state = 777u;
    std::string key = "sk_live_";
    for (int i = 0; i < 24; i++) {
        state = state * 1103515245u + 12345u;
        key += alnum[(state >> 16) % 62];
    }
    return key;
}

std::string slurp(const std::string &path)
{
    std::ifstream in(path, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

std::string user_line(const std::string &text)
{
    return R"({"id":"u-1","parentId":null,"timestamp":1,"type":"message","message":{"role":"user","content":")" +
           text + "\"}}\n";
}

} // namespace

int main()
{
    char tmpl[] = "/tmp/session-cpp-secrets-XXXXXX";
    const char *made = mkdtemp(tmpl);
    CHECK(made != nullptr, "mkdtemp");
    const std::string dir = made, src = dir + "/s.jsonl", dst = dir + "/out.jsonl";
    const std::string key = fake_stripe_key();
    std::ofstream(src, std::ios::binary) << user_line("pay with " + key);

    session::result r = session::secrets(src);
    CHECK_RESULT(r, SESSION_OK, "secrets");
    CHECK(contains(r.json, R"("entryId":"u-1","pointer":"/message/content","rule":"stripe-key")"), r.json);
    CHECK(!contains(r.json, key), "the key is not in the result");

    r = session::redact(src, dst);
    CHECK_RESULT(r, SESSION_OK, "redact");
    CHECK(contains(r.json, R"("redactions":1)"), r.json);
    CHECK(slurp(dst) == user_line("pay with [REDACTED:stripe-key]"), slurp(dst));

    r = session::redact(src, "", R"({"inPlace":true})");
    CHECK_RESULT(r, SESSION_OK, "redact in place");
    CHECK(slurp(src) == slurp(dst), "in place gives the same bytes");

    r = session::secrets(src, R"({"extraRules":[{"name":"bad","pattern":"("}]})");
    CHECK_RESULT(r, SESSION_ERR_INVALID_ARGUMENT, "invalid rule");
    CHECK(contains(r.json, "bad"), r.json);

    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
    std::cout << "PASS test_secrets (C++17): " << g_checks << " checks\n";
    return 0;
}

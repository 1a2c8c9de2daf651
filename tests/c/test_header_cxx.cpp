// test_header_cxx.cpp -- session.h compiles as C++17 (-Wall -Wextra -Werror -pedantic)
// with C linkage, and the library can be driven from C++.
#include "session.h"

#include <cstdio>
#include <cstring>
#include <string>
#include <type_traits>

static_assert(sizeof(SessionStatus) == 4, "SessionStatus is 32 bits");
static_assert(std::is_same<SessionStatus, int32_t>::value, "SessionStatus is int32_t");
static_assert(std::is_same<SessionState, int32_t>::value, "SessionState is int32_t");
static_assert(SESSION_ERR_INTERNAL == 12 && SESSION_STATE_TAINTED == 2, "stable values");

namespace {

// Owns a string returned through out_json.
struct Json {
    char *s = nullptr;
    Json() = default;
    Json(const Json &) = delete;
    Json &operator=(const Json &) = delete;
    ~Json() { session_string_free(s); }
    std::string str() const { return s ? s : "(null)"; }
};

int fail(const char *rule, const Json &json)
{
    std::fprintf(stderr, "FAIL test_header_cxx: %s: %s\n", rule, json.str().c_str());
    return 1;
}

}  // namespace

int main()
{
    SessionStore *store = nullptr;
    if (session_memory_store_open(&store) != SESSION_OK || store == nullptr) {
        std::fprintf(stderr, "FAIL test_header_cxx: session_memory_store_open\n");
        return 1;
    }
    const char *entry =
        R"({"id":"u-1","parentId":null,"timestamp":1,"type":"message","message":{"role":"user","content":"hi"}})";
    {
        Json out;
        if (session_store_append(store, entry, &out.s) != SESSION_OK ||
            out.str() != R"({"id":"u-1","seq":0})")
            return fail("append from C++ returns {\"id\":\"u-1\",\"seq\":0}", out);
    }
    {
        Json out;
        if (session_store_messages_on_path(store, "u-1", &out.s) != SESSION_OK ||
            out.str() != R"([{"role":"user","content":"hi"}])")
            return fail("messages_on_path from C++", out);
    }
    {
        Json out;
        SessionStatus st = session_store_append(store, entry, &out.s);
        if (st != SESSION_ERR_DUPLICATE_ID || std::strcmp(session_status_name(st), "duplicate_id") != 0 ||
            out.str().find(R"("code":"duplicate_id")") == std::string::npos)
            return fail("duplicate append from C++ is duplicate_id", out);
    }
    if (session_store_state(store) != SESSION_STATE_READY) return fail("state is ready", Json());
    session_store_close(store);
    std::printf("PASS test_header_cxx: session.h is clean C++17; libsession %s\n", session_version());
    return 0;
}

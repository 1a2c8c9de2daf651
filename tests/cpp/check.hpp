// check.hpp -- what the C++ test programs share: a CHECK that counts and exits on the
// first failure, string helpers for the JSON the library returns, and the chapter's
// fixed tree (docs/contract.md §1). Each test program is one translation unit that
// includes it once.
#ifndef SESSION_TEST_CHECK_HPP
#define SESSION_TEST_CHECK_HPP

#include "session.hpp"

#include <cstddef>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>

inline long g_checks = 0;

#define CHECK(cond, what)                                                                   \
    do {                                                                                    \
        ++g_checks;                                                                         \
        if (!(cond)) {                                                                      \
            std::cerr << "FAIL " << __FILE__ << ":" << __LINE__ << ": " << (what)           \
                      << "\n     (failed: " #cond ")\n";                                   \
            std::exit(1);                                                                   \
        }                                                                                   \
    } while (0)

#define CHECK_RESULT(r, want_status, what)                                                  \
    CHECK((r).status == (want_status),                                                      \
          std::string(what) + ": status " + (r).code() + ", json " + (r).json)

inline bool contains(const std::string &hay, const std::string &needle)
{
    return hay.find(needle) != std::string::npos;
}

inline size_t count(const std::string &hay, const std::string &needle)
{
    size_t n = 0;
    for (size_t at = hay.find(needle); at != std::string::npos; at = hay.find(needle, at + 1)) ++n;
    return n;
}

// The ids of the entries in a JSON array of entries, joined with ','. Every entry the
// library returns starts with its "id" member (key order is kept), so `{"id":"` marks
// entries and never a toolCall block (`{"type":"toolCall","id":…`).
inline std::string ids(const std::string &entries)
{
    std::string joined;
    const std::string mark = "{\"id\":\"";
    for (size_t at = entries.find(mark); at != std::string::npos;
         at = entries.find(mark, at + 1)) {
        const size_t start = at + mark.size();
        const size_t end = entries.find('"', start);
        if (!joined.empty()) joined += ',';
        joined += entries.substr(start, end - start);
    }
    return joined;
}

inline std::string read_file(const std::string &path)
{
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The chapter's fixed tree (docs/contract.md §1), in append order.
const char *const kChapter[] = {
    R"({"id":"u-1","parentId":null,"timestamp":1733000000000,"type":"message","message":{"role":"user","content":"读取 README.md，告诉我项目名","timestamp":1733000000000}})",
    R"({"id":"a-read","parentId":"u-1","timestamp":1733000001000,"type":"message","message":{"role":"assistant","content":[{"type":"toolCall","id":"call-1","name":"read","arguments":{"path":"README.md"}}],"api":"openai-responses","provider":"openai","model":"gpt-5","usage":{"input":120,"output":18},"stopReason":"toolUse","timestamp":1733000001000}})",
    R"({"id":"r-read","parentId":"a-read","timestamp":1733000002000,"type":"message","message":{"role":"toolResult","toolCallId":"call-1","toolName":"read","content":[{"type":"text","text":"# tiny-pi\n\nA tiny coding agent."}],"isError":false,"details":{"path":"README.md","bytes":33},"timestamp":1733000002000}})",
    R"({"id":"a-final","parentId":"r-read","timestamp":1733000003000,"type":"message","message":{"role":"assistant","content":[{"type":"text","text":"项目名是 tiny-pi"}],"api":"openai-responses","provider":"openai","model":"gpt-5","usage":{"input":160,"output":9},"stopReason":"stop","timestamp":1733000003000}})",
    R"({"id":"a-alt","parentId":"u-1","timestamp":1733000004000,"type":"message","message":{"role":"assistant","content":[{"type":"text","text":"我无法读取该文件"}],"api":"openai-responses","provider":"openai","model":"gpt-5","usage":{"input":120,"output":8},"stopReason":"stop","timestamp":1733000004000}})",
    R"({"id":"meta-cwd","parentId":"a-final","timestamp":1733000005000,"type":"metadata","key":"cwd","value":"/workspace/tiny-pi"})",
};

inline std::string user_entry(const std::string &id, const char *parent)
{
    std::string p = parent ? "\"" + std::string(parent) + "\"" : "null";
    return R"({"id":")" + id + R"(","parentId":)" + p +
           R"(,"timestamp":1,"type":"message","message":{"role":"user","content":"x"}})";
}


#endif /* SESSION_TEST_CHECK_HPP */

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
#include <vector>

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

#ifndef SESSION_EXAMPLES_DIR
#error "build with -DSESSION_EXAMPLES_DIR=\"<repo>/examples\""
#endif

// The lines of examples/tiny-pi.jsonl without their newlines: the chapter's fixed tree
// (docs/contract.md §1) in append order, read once at start-up so every test appends the
// checked-in bytes rather than a copy typed here.
inline std::vector<std::string> example_lines()
{
    std::vector<std::string> lines;
    std::ifstream in(std::string(SESSION_EXAMPLES_DIR) + "/tiny-pi.jsonl", std::ios::binary);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    if (lines.size() != 6) {
        std::cerr << "FAIL examples/tiny-pi.jsonl: want 6 lines, read " << lines.size() << "\n";
        std::exit(1);
    }
    return lines;
}

inline const std::vector<std::string> kChapter = example_lines();

inline std::string user_entry(const std::string &id, const char *parent)
{
    std::string p = parent ? "\"" + std::string(parent) + "\"" : "null";
    return R"({"id":")" + id + R"(","parentId":)" + p +
           R"(,"timestamp":1,"type":"message","message":{"role":"user","content":"x"}})";
}


#endif /* SESSION_TEST_CHECK_HPP */

// test_session.cpp -- libsession from C++17: the C header compiled as C++, RAII over its
// two owned resources (SessionStore* and the out_json strings), the chapter's tree
// through a JSONL file, status codes, and concurrent appends from std::thread.
//
// Built by tests/cpp/run.sh with -std=c++17 -Wall -Wextra -Werror -pedantic against an
// installed prefix (pkg-config), and run under valgrind when it is available, so a
// leaked out string or store fails the test.
#include "check.hpp"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include <unistd.h>

#ifndef SESSION_EXPECTED_VERSION
#error "build with -DSESSION_EXPECTED_VERSION=\"X.Y.Z\" (Cargo.toml's version)"
#endif

namespace {

void test_header_types()
{
    static_assert(sizeof(SessionStatus) == 4, "SessionStatus is 32 bits");
    static_assert(sizeof(SessionState) == 4, "SessionState is 32 bits");
    static_assert(std::is_signed<SessionStatus>::value, "SessionStatus is int32_t");
    static_assert(!std::is_copy_constructible<session::store>::value, "store is not copyable");
    static_assert(std::is_nothrow_move_constructible<session::store>::value, "store moves");
    static_assert(sizeof(session::unique_string) == sizeof(char *), "empty deleter");
    CHECK(std::string(session::version()) == SESSION_EXPECTED_VERSION,
          std::string("session_version() is Cargo.toml's version, got ") + session::version());
    const char *names[] = {"ok",           "invalid_argument", "invalid_json", "invalid_entry",
                           "duplicate_id", "missing_parent",   "cycle",        "unknown_leaf",
                           "corrupt_line", "needs_repair",     "tainted",      "io",
                           "internal",     "locked",           "file_changed", "read_only",
                           "wrong_process", "invalid_compaction", "tool_pairing"};
    static_assert(SESSION_ERR_WRONG_PROCESS == 16, "stable status values");
    static_assert(SESSION_ERR_TOOL_PAIRING == 18, "stable status values");
    for (SessionStatus s = 0; s <= SESSION_ERR_TOOL_PAIRING; ++s)
        CHECK(std::strcmp(session_status_name(s), names[s]) == 0,
              std::string("stable status name of ") + std::to_string(s));
    CHECK(std::strcmp(session_status_name(99), "unknown") == 0, "unknown status name");
}

// The C API with nothing but std::unique_ptr and the two deleters.
void test_raw_unique_ptr(const std::string &dir)
{
    const std::string path = dir + "/raw.jsonl";
    SessionStore *raw = nullptr;
    char *out = nullptr;
    SessionStatus st = session_jsonl_store_open(path.c_str(), &raw, &out);
    session::unique_store store(raw);
    session::unique_string open_json(out);
    CHECK(st == SESSION_OK && store, "open with unique_store");
    CHECK(std::string(open_json.get()) == R"({"state":"ready","warnings":[]})", open_json.get());

    out = nullptr;
    st = session_store_append(store.get(), kChapter[0].c_str(), &out);
    session::unique_string receipt(out);
    CHECK(st == SESSION_OK, "append through the C API");
    CHECK(std::string(receipt.get()) == R"({"id":"u-1","seq":0})", receipt.get());

    st = session_store_append(store.get(), kChapter[0].c_str(), nullptr); // out_json may be NULL
    CHECK(st == SESSION_ERR_DUPLICATE_ID, "duplicate with out_json NULL");
    // store and strings are released here, in reverse order, on every path.
}

void test_chapter(const std::string &dir)
{
    const std::string path = dir + "/chapter.jsonl";
    {
        session::store s;
        session::result r = session::store::open_jsonl(path, s);
        CHECK_RESULT(r, SESSION_OK, "open a new file");
        CHECK(s.state() == SESSION_STATE_READY, "a new file is ready");
        for (size_t i = 0; i < kChapter.size(); ++i) {
            r = s.append(kChapter[i]);
            CHECK_RESULT(r, SESSION_OK, "append chapter entry");
            CHECK(contains(r.json, "\"seq\":" + std::to_string(i) + "}"), r.json);
        }
    } // the destructor closes the store

    const std::string file = read_file(path);
    CHECK(count(file, "\n") == 6, "six committed lines");
    CHECK(file.rfind(kChapter[5]) == file.size() - kChapter[5].size() - 1,
          "the last line is meta-cwd, byte for byte");

    session::store s;
    session::result r = session::store::open_jsonl(path, s);
    CHECK_RESULT(r, SESSION_OK, "reopen");
    CHECK(r.json == R"({"state":"ready","warnings":[]})", r.json);

    r = s.path_to("meta-cwd");
    CHECK_RESULT(r, SESSION_OK, "path_to(meta-cwd)");
    CHECK(ids(r.json) == "u-1,a-read,r-read,a-final,meta-cwd", "path_to(meta-cwd): " + ids(r.json));

    r = s.messages_on_path("meta-cwd");
    CHECK_RESULT(r, SESSION_OK, "messages_on_path(meta-cwd)");
    CHECK(count(r.json, "{\"role\":") == 4, "four messages, metadata skipped: " + r.json);
    CHECK(contains(r.json, R"({"type":"toolCall","id":"call-1","name":"read","arguments":{"path":"README.md"}})"),
          "the toolCall is intact");
    CHECK(contains(r.json, R"("toolCallId":"call-1","toolName":"read")"), "toolResult kept");
    CHECK(contains(r.json, R"("details":{"path":"README.md","bytes":33})"), "details kept");
    CHECK(!contains(r.json, "我无法读取该文件"), "the sibling a-alt never mixes in");

    r = s.path_to("a-alt");
    CHECK(ids(r.json) == "u-1,a-alt", "path_to(a-alt): " + ids(r.json));

    r = s.entries();
    CHECK(ids(r.json) == "u-1,a-read,r-read,a-final,a-alt,meta-cwd", "entries in commit order");
    r = s.read();
    CHECK(r.json.rfind(R"({"state":"ready","entries":[)", 0) == 0, r.json);

    // The pure functions over the same entries, as one JSON array.
    r = session::messages_on_path(s.entries().json, "a-alt");
    CHECK_RESULT(r, SESSION_OK, "messages_on_path over an array");
    CHECK(count(r.json, "{\"role\":") == 2 && contains(r.json, "我无法读取该文件"), r.json);
}

void test_errors(const std::string &dir)
{
    session::store s;
    CHECK_RESULT(session::store::open_memory(s), SESSION_OK, "memory store");
    CHECK_RESULT(s.append(kChapter[0]), SESSION_OK, "append u-1");

    session::result r = s.append(kChapter[0]);
    CHECK_RESULT(r, SESSION_ERR_DUPLICATE_ID, "duplicate id");
    CHECK(std::strcmp(r.code(), "duplicate_id") == 0, r.code());
    CHECK(r.json.rfind(R"({"error":{"code":"duplicate_id","message":)", 0) == 0, r.json);
    CHECK(contains(r.json, R"("id":"u-1")"), r.json);

    r = s.append(user_entry("orphan", "nope"));
    CHECK_RESULT(r, SESSION_ERR_MISSING_PARENT, "missing parent");
    CHECK(contains(r.json, R"("childId":"orphan")") && contains(r.json, R"("parentId":"nope")"),
          r.json);

    r = s.path_to("nowhere");
    CHECK_RESULT(r, SESSION_ERR_UNKNOWN_LEAF, "unknown leaf");
    CHECK(contains(r.json, R"("id":"nowhere")"), r.json);

    r = s.append(R"({"id":"x","parentId":null)");
    CHECK_RESULT(r, SESSION_ERR_INVALID_JSON, "truncated JSON");

    r = s.append(R"({"id":"x","parentId":null,"timestamp":"soon","type":"message"})");
    CHECK_RESULT(r, SESSION_ERR_INVALID_ENTRY, "a mistyped member");
    CHECK(contains(r.json, R"("pointer":"/timestamp")"), r.json);

    r = session::parse_entry(R"({"a":1,"a":2})");
    CHECK_RESULT(r, SESSION_ERR_INVALID_JSON, "a duplicate key");

    r = session::path_to(
        "[" + user_entry("p", "q") + "," + user_entry("q", "p") + "]", "p");
    CHECK_RESULT(r, SESSION_ERR_CYCLE, "a cycle");

    // A std::string with a NUL byte never reaches the library truncated.
    r = s.append(kChapter[4] + std::string(1, '\0') + "junk");
    CHECK_RESULT(r, SESSION_ERR_INVALID_ARGUMENT, "NUL inside a std::string");
    CHECK(contains(r.json, "\"code\":\"invalid_argument\""), r.json);

    // The library itself refuses invalid UTF-8 in a C string.
    r = s.path_to("\xff\xfe");
    CHECK_RESULT(r, SESSION_ERR_INVALID_ARGUMENT, "invalid UTF-8 leaf id");

    // Recovery: a committed prefix and an unterminated tail with NUL bytes.
    const std::string bytes =
        kChapter[0] + "\n\n" + std::string("{\"id\":\0\0", 8);
    r = session::recover_jsonl(bytes);
    CHECK_RESULT(r, SESSION_OK, "recover_jsonl");
    CHECK(ids(r.json) == "u-1", r.json);
    CHECK(contains(r.json, R"("warnings":[{"code":"unterminated_tail","line":3}])"), r.json);
    r = session::recover_jsonl(kChapter[0] + "\nnot json\n");
    CHECK_RESULT(r, SESSION_ERR_CORRUPT_LINE, "corrupt committed line");
    CHECK(contains(r.json, R"("line":2)"), r.json);

    // A file with a torn tail opens as needs_repair and refuses appends untouched.
    const std::string torn = dir + "/torn.jsonl";
    {
        std::ofstream f(torn, std::ios::binary);
        f << kChapter[0] << "\n" << R"({"id":"a-read","parentId":"u-)";
    }
    session::store t;
    r = session::store::open_jsonl(torn, t);
    CHECK_RESULT(r, SESSION_OK, "open a torn file");
    CHECK(contains(r.json, R"("state":"needs_repair")"), r.json);
    CHECK(t.state() == SESSION_STATE_NEEDS_REPAIR, "state needs_repair");
    const std::string before = read_file(torn);
    r = t.append(kChapter[4]);
    CHECK_RESULT(r, SESSION_ERR_NEEDS_REPAIR, "append on needs_repair");
    CHECK(contains(r.json, "unterminated_tail"), r.json);
    CHECK(read_file(torn) == before, "the torn file is untouched");
    t.close();
    r = session::repair(torn);
    CHECK_RESULT(r, SESSION_OK, "repair a torn file");
    CHECK(contains(r.json, R"("entries":1)") && contains(r.json, ".bak\""), r.json);
    CHECK_RESULT(session::store::open_jsonl(torn, t), SESSION_OK, "reopen after repair");
    CHECK(t.state() == SESSION_STATE_READY, "ready after repair");

    // One writer per file; read-only opens work beside it.
    session::store second;
    r = session::store::open_jsonl(torn, second);
    CHECK_RESULT(r, SESSION_ERR_LOCKED, "a second writer");
    CHECK(!second && contains(r.json, "\"path\":"), r.json);
    session::store reader;
    CHECK_RESULT(session::store::open_jsonl(torn, R"({"readOnly":true})", reader), SESSION_OK,
                 "read-only beside the writer");
    CHECK_RESULT(reader.append(kChapter[4]), SESSION_ERR_READ_ONLY, "append on read-only");
    r = session::store::open_jsonl(torn, R"({"durability":"maybe"})", second);
    CHECK_RESULT(r, SESSION_ERR_INVALID_ARGUMENT, "bad options");
    CHECK(contains(r.json, R"("argument":"options_json")"), r.json);

    // A missing folder is an I/O error with the errno.
    session::store m;
    r = session::store::open_jsonl(dir + "/no/such/dir/s.jsonl", m);
    CHECK_RESULT(r, SESSION_ERR_IO, "missing folder");
    CHECK(!m, "no store on failure");
    CHECK(contains(r.json, R"("osError":2)"), r.json);

    // close() is idempotent; a closed store is a NULL store to the library.
    s.close();
    s.close();
    CHECK(!s, "closed");
    CHECK(s.state() == SESSION_STATE_TAINTED, "a closed (NULL) store reports tainted");
    CHECK_RESULT(s.entries(), SESSION_ERR_INVALID_ARGUMENT, "entries on a closed store");
    CHECK_RESULT(s.append(kChapter[0]), SESSION_ERR_INVALID_ARGUMENT, "append on a closed store");

    // Moving transfers ownership exactly once.
    session::store a;
    CHECK_RESULT(session::store::open_memory(a), SESSION_OK, "memory store a");
    session::store b(std::move(a));
    CHECK(!a && b, "moved"); // NOLINT(bugprone-use-after-move)
    CHECK_RESULT(b.append(kChapter[0]), SESSION_OK, "append through the moved-to store");
    SessionStore *released = b.release();
    CHECK(released && !b, "released");
    session_store_close(released);
}

void test_threads(const std::string &dir)
{
    constexpr int kThreads = 4, kEach = 100;
    session::store s;
    CHECK_RESULT(session::store::open_jsonl(dir + "/threads.jsonl", R"({"durability":"fsync_batch"})", s),
                 SESSION_OK, "open with group commit");
    std::vector<std::vector<std::string>> receipts(kThreads);
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            std::string parent;
            for (int i = 0; i < kEach; ++i) {
                const std::string id = "t" + std::to_string(t) + "-" + std::to_string(i);
                session::result r =
                    s.append(user_entry(id, parent.empty() ? nullptr : parent.c_str()));
                if (!r) ++failures;
                receipts[t].push_back(r.json);
                parent = id;
                if (i % 25 == 0 && !s.entries()) ++failures; // reads interleave
            }
        });
    }
    for (auto &th : threads) th.join();
    CHECK(failures.load() == 0, "no append or read failed");

    std::set<long> seqs;
    for (const auto &list : receipts)
        for (const auto &json : list) {
            const size_t at = json.find("\"seq\":");
            seqs.insert(std::atol(json.c_str() + at + 6));
        }
    CHECK(seqs.size() == size_t(kThreads * kEach), "every seq is unique");
    CHECK(*seqs.begin() == 0 && *seqs.rbegin() == kThreads * kEach - 1, "seq is 0..n-1");
    CHECK(count(read_file(dir + "/threads.jsonl"), "\n") == size_t(kThreads * kEach),
          "no append lost");
}

} // namespace

int main()
{
    char tmpl[] = "/tmp/session-cpp-XXXXXX";
    const char *dir = mkdtemp(tmpl);
    CHECK(dir != nullptr, "mkdtemp");

    test_header_types();
    test_raw_unique_ptr(dir);
    test_chapter(dir);
    test_errors(dir);
    test_threads(dir);

    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
    std::cout << "PASS test_session (C++17): " << g_checks << " checks\n";
    return 0;
}

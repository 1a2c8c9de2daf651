// test_nav.cpp -- navigating the tree from C++17: children, roots, leaves, latest_leaf,
// paged tree, labels (docs/contract.md §8, §10's results on the chapter's tree) and
// list_sessions over a folder with a good, a torn, a corrupt and a non-JSONL file, and
// search over that folder; export of a session there to Codex (issue 35).
//
// Built and run (under valgrind) by tests/cpp/run.sh.
#include "check.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace {

session::store chapter_store()
{
    session::store s;
    CHECK_RESULT(session::store::open_memory(s), SESSION_OK, "memory store");
    for (const std::string &e : kChapter) CHECK_RESULT(s.append(e), SESSION_OK, e);
    return s;
}

std::string label(const std::string &id, const std::string &parent, const std::string &target,
                  const std::string &text)
{
    return R"({"id":")" + id + R"(","parentId":")" + parent +
           R"(","timestamp":1733000006000,"type":"metadata","key":"session.label","value":{"targetId":")" +
           target + R"(","label":)" + text + "}}";
}

void test_queries()
{
    session::store s = chapter_store();
    session::result r = s.children("u-1");
    CHECK_RESULT(r, SESSION_OK, "children(u-1)");
    CHECK(ids(r.json) == "a-read,a-alt", r.json);
    CHECK(contains(r.json, R"({"id":"a-read","parentId":"u-1","seq":1,"depth":1,"timestamp":1733000001000,"type":"message","role":"assistant","toolCalls":1,"childCount":1})"),
          r.json);
    CHECK(!contains(r.json, "README.md"), "a node carries no message body");

    r = s.roots();
    CHECK(ids(r.json) == "u-1", r.json);
    r = s.leaves();
    CHECK(ids(r.json) == "a-alt,meta-cwd", r.json);
    CHECK(contains(r.json, R"("latestBySeq":"meta-cwd","latestByTimestamp":"meta-cwd")"), r.json);
    r = s.latest_leaf();
    CHECK(r.json.rfind(R"({"id":"meta-cwd",)", 0) == 0, r.json);

    r = s.children("nope");
    CHECK_RESULT(r, SESSION_ERR_UNKNOWN_LEAF, "unknown id");
    CHECK(contains(r.json, R"("id":"nope")"), r.json);

    std::string all;
    std::string options = R"({"limit":4,"leaf":"a-alt"})";
    r = s.tree(options);
    CHECK_RESULT(r, SESSION_OK, "first page");
    CHECK(ids(r.json) == "u-1,a-read,r-read,a-final", r.json);
    CHECK(contains(r.json, R"("count":6,"nextAfterSeq":3})"), r.json);
    CHECK(count(r.json, R"("onPath":true)") == 1, "only u-1 of this page is on a-alt's path");
    r = s.tree(R"({"afterSeq":3,"limit":4,"leaf":"a-alt"})");
    CHECK(ids(r.json) == "a-alt,meta-cwd" && contains(r.json, R"("nextAfterSeq":null)"), r.json);
    CHECK_RESULT(s.tree(R"({"limit":-1})"), SESSION_ERR_INVALID_ARGUMENT, "a negative limit");
    CHECK(ids(s.tree().json) == "u-1,a-read,r-read,a-final,a-alt,meta-cwd", "no options: all");

    session::store empty;
    CHECK_RESULT(session::store::open_memory(empty), SESSION_OK, "empty store");
    CHECK(empty.latest_leaf().json == "null", empty.latest_leaf().json);
}

void test_labels()
{
    session::store s = chapter_store();
    CHECK_RESULT(s.append(label("l-1", "meta-cwd", "a-read", R"("first")")), SESSION_OK, "label");
    CHECK_RESULT(s.append(label("l-2", "l-1", "a-read", R"("second")")), SESSION_OK, "relabel");
    CHECK_RESULT(s.append(label("l-3", "l-2", "u-1", R"("start")")), SESSION_OK, "label u-1");
    CHECK_RESULT(s.append(label("l-4", "l-3", "u-1", "null")), SESSION_OK, "clear u-1");
    session::result r = s.labels();
    CHECK(r.json == R"([{"targetId":"a-read","label":"second","entryId":"l-2","seq":7}])", r.json);
    CHECK(contains(s.children("u-1").json, R"("label":"second")"), "the node carries its label");
}

void test_list_sessions(const std::string &dir)
{
    const auto write = [&](const std::string &name, const std::string &text) {
        std::ofstream(dir + "/" + name, std::ios::binary) << text;
    };
    std::string good;
    for (const std::string &e : kChapter) good += e + "\n";
    write("a-good.jsonl", good);
    write("b-torn.jsonl", kChapter[0] + "\n{\"id\":\"a-re");
    write("c-corrupt.jsonl", "not json\n");
    write("notes.txt", "not a session\n");

    session::result r = session::list_sessions(dir, R"({"sort":"path"})");
    CHECK_RESULT(r, SESSION_OK, "list_sessions");
    CHECK(count(r.json, R"({"path":)") == 3, "the three .jsonl files: " + r.json);
    CHECK(!contains(r.json, "notes.txt"), "not a session");
    const size_t a = r.json.find("a-good.jsonl"), b = r.json.find("b-torn.jsonl"),
                 c = r.json.find("c-corrupt.jsonl");
    CHECK(a < b && b < c, "sorted by path: " + r.json);
    CHECK(contains(r.json, R"("state":"ready","firstUserText":"读取 README.md，告诉我项目名","latestLeafId":"meta-cwd","latestTimestamp":1733000005000,"entries":6)"),
          r.json);
    CHECK(contains(r.json, R"("state":"needs_repair")"), r.json);
    CHECK(contains(r.json, R"("error":{"code":"corrupt_line")"), r.json);

    r = session::list_sessions(dir + "/missing");
    CHECK_RESULT(r, SESSION_ERR_IO, "a missing folder");
    CHECK_RESULT(session::list_sessions(dir, R"({"sort":"size"})"), SESSION_ERR_INVALID_ARGUMENT,
                 "an unknown sort");
}

void test_search(const std::string &dir)
{
    // dir holds a-good.jsonl (the chapter) from test_list_sessions, and two damaged files.
    session::result r = session::search(dir, R"({"query":"无法读取"})");
    CHECK_RESULT(r, SESSION_OK, "search");
    CHECK(contains(r.json, R"("path":"a-good.jsonl","entryId":"a-alt")"), r.json);
    CHECK(contains(r.json, R"("onLatestPath":false)"), "a side branch: " + r.json);
    CHECK(contains(r.json, R"("reason":"invalid_json")"), "the corrupt line is reported: " + r.json);
    r = session::search(dir, R"({"query":"项目名是","latestPathOnly":true})");
    CHECK(contains(r.json, R"("entryId":"a-final")") && contains(r.json, R"("onLatestPath":true)"),
          r.json);
    CHECK_RESULT(session::search(dir, R"({"query":"x","limit":0})"), SESSION_ERR_INVALID_ARGUMENT,
                 "limit 0");
}

void test_export(const std::string &dir)
{
    // a-good.jsonl is the chapter (test_list_sessions): exported to Codex at a-final.
    const std::string out = dir + "/codex-export.jsonl";
    session::result r = session::export_to("codex", dir + "/a-good.jsonl", out, R"({"leaf":"a-final"})");
    CHECK_RESULT(r, SESSION_OK, "export to codex");
    CHECK(contains(r.json, R"({"format":"codex","entries":)"), r.json);
    std::ifstream in(out);
    std::string first;
    std::getline(in, first);
    CHECK(contains(first, R"("type":"session_meta")"), first);
    CHECK_RESULT(session::export_to("codex", dir + "/a-good.jsonl", out), SESSION_ERR_IO,
                 "out exists: never overwritten");
    CHECK_RESULT(session::export_to("gemini", dir + "/a-good.jsonl", dir + "/x.jsonl"),
                 SESSION_ERR_INVALID_ARGUMENT, "an unknown format");
}

} // namespace

int main()
{
    char tmpl[] = "/tmp/session-cpp-nav-XXXXXX";
    const char *dir = mkdtemp(tmpl);
    CHECK(dir != nullptr, "mkdtemp");
    test_queries();
    test_labels();
    test_list_sessions(dir);
    test_search(dir);
    test_export(dir);
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
    std::cout << "PASS test_nav (C++17): " << g_checks << " checks\n";
    return 0;
}

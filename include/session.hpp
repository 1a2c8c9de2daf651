/*
 * session.hpp -- a header-only C++17 layer over session.h.
 *
 * It adds ownership, nothing else: every call is the C call of the same name, and the
 * JSON comes back as text for the JSON library of your choice.
 *
 *   session::unique_store   std::unique_ptr<SessionStore> that calls session_store_close
 *   session::unique_string  std::unique_ptr<char> that calls session_string_free
 *   session::result         {status, json}: the result JSON, or {"error":{...}} on failure
 *   session::store          a movable owner of a store with the store calls as methods
 *   session::token_estimator  std::function<double(std::string_view)> for build_context
 *
 *   session::store s;
 *   session::result r = session::store::open_jsonl("s.jsonl", s);
 *   if (!r) { std::cerr << r.code() << ": " << r.json << "\n"; return 1; }
 *   r = s.append(R"({"id":"u-1","parentId":null,"timestamp":1,"type":"message",
 *                   "message":{"role":"user","content":"hi"}})");
 *   r = s.messages_on_path("u-1");       // r.json == [{"role":"user","content":"hi"}]
 *
 * No exceptions are thrown by this header except std::bad_alloc from std::string and
 * what a token_estimator of yours throws (caught inside the C call, which then fails,
 * and rethrown once the library has returned). The library's C strings are freed on
 * every path, including those. A std::string that contains a NUL byte cannot be passed
 * as a C string: such a call returns SESSION_ERR_INVALID_ARGUMENT without calling the
 * library.
 *
 * Threads: one session::store may be used from many threads at once (const and
 * non-const methods alike, except close(), reset and destruction, which must come last,
 * as session_store_close does in C).
 */
#ifndef SESSION_HPP
#define SESSION_HPP

#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "session.h"

namespace session {

/** build_context options that send the messages as an agent does when it resumes the
 *  session (docs/contract.md §12): pi, Claude Code, Codex, or the agent an imported
 *  session came from (auto, the default: no agent's rules for a native session);
 *  profile_none applies no agent's rules, whatever the session's origin. */
inline constexpr const char *profile_pi = R"({"profile":"pi"})";
inline constexpr const char *profile_claude_code = R"({"profile":"claude-code"})";
inline constexpr const char *profile_codex = R"({"profile":"codex"})";
inline constexpr const char *profile_auto = R"({"profile":"auto"})";
inline constexpr const char *profile_none = R"({"profile":"none"})";

/** Frees a string returned through out_json. */
struct string_deleter {
    void operator()(char *s) const noexcept { session_string_free(s); }
};
using unique_string = std::unique_ptr<char, string_deleter>;

/** Closes a store. */
struct store_deleter {
    void operator()(SessionStore *s) const noexcept { session_store_close(s); }
};
using unique_store = std::unique_ptr<SessionStore, store_deleter>;

/** The outcome of a call: its status and the JSON it returned (result or error). */
struct result {
    SessionStatus status = SESSION_OK;
    std::string json;

    bool ok() const noexcept { return status == SESSION_OK; }
    explicit operator bool() const noexcept { return ok(); }
    /** The stable status name, e.g. "duplicate_id" (static storage). */
    const char *code() const noexcept { return session_status_name(status); }
};

/** The library version, e.g. "0.1.0" (static storage). */
inline const char *version() noexcept { return session_version(); }

namespace detail {

/** Calls f(char **out_json), takes ownership of what it returns, copies it out. */
template <class F>
result call(F &&f)
{
    char *raw = nullptr;
    const SessionStatus status = std::forward<F>(f)(&raw);
    const unique_string owned(raw); // freed even if the copy below throws
    return result{status, owned ? std::string(owned.get()) : std::string()};
}

inline bool has_nul(std::string_view s) noexcept { return s.find('\0') != std::string_view::npos; }

inline result nul_argument()
{
    return result{SESSION_ERR_INVALID_ARGUMENT,
                  R"({"error":{"code":"invalid_argument","message":)"
                  R"("a string argument contains a NUL byte, which a C string cannot carry"}})"};
}

/** What the estimator trampoline needs: the std::function and, if it threw, the
 *  exception to rethrow after the C call has returned (never through C frames). */
struct estimator_call {
    const std::function<double(std::string_view)> *estimate;
    std::exception_ptr thrown;
};

/** The SessionTokenEstimator handed to the library; user_data is an estimator_call. */
inline double estimate_trampoline(const char *message_json, size_t len, void *user_data) noexcept
{
    auto *call = static_cast<estimator_call *>(user_data);
    try {
        return (*call->estimate)(std::string_view(message_json, len));
    } catch (...) {
        call->thrown = std::current_exception();
        return std::numeric_limits<double>::quiet_NaN(); // the library fails the call
    }
}

} // namespace detail

/** Tokens of one message for build_context's budget, given the message's JSON (valid only
 *  during the call). Called on the calling thread, once per kept message and once for the
 *  summary message, never after build_context returns. It must not call the same store
 *  (the call runs inside the store's turn: it would deadlock). A negative or non-finite
 *  return fails the call with SESSION_ERR_INVALID_ARGUMENT; so does a throw, after which
 *  build_context rethrows the exception. */
using token_estimator = std::function<double(std::string_view message_json)>;

/** session_parse_entry: the normalised entry. */
inline result parse_entry(const std::string &entry_json)
{
    if (detail::has_nul(entry_json)) return detail::nul_argument();
    return detail::call([&](char **out) { return session_parse_entry(entry_json.c_str(), out); });
}

/** session_path_to over a JSON array of entries. */
inline result path_to(const std::string &entries_json, const std::string &leaf_id)
{
    if (detail::has_nul(entries_json) || detail::has_nul(leaf_id)) return detail::nul_argument();
    return detail::call(
        [&](char **out) { return session_path_to(entries_json.c_str(), leaf_id.c_str(), out); });
}

/** session_messages_on_path over a JSON array of entries. */
inline result messages_on_path(const std::string &entries_json, const std::string &leaf_id)
{
    if (detail::has_nul(entries_json) || detail::has_nul(leaf_id)) return detail::nul_argument();
    return detail::call([&](char **out) {
        return session_messages_on_path(entries_json.c_str(), leaf_id.c_str(), out);
    });
}

/** session_recover_jsonl over raw bytes (NUL bytes allowed). */
inline result recover_jsonl(std::string_view bytes)
{
    return detail::call([&](char **out) {
        return session_recover_jsonl(reinterpret_cast<const std::uint8_t *>(bytes.data()),
                                     bytes.size(), out);
    });
}

/** session_jsonl_repair: {"truncatedBytes":N,"backup":"<path>"|null,"entries":M}. */
inline result repair(const std::string &path)
{
    if (detail::has_nul(path)) return detail::nul_argument();
    return detail::call([&](char **out) { return session_jsonl_repair(path.c_str(), out); });
}

/** session_build_context over a JSON array of entries, with the default estimator
 *  (ceil(bytes / 4) of each message's JSON): what the model should see for leaf_id.
 *  options_json: e.g. R"({"onDefect":"skip","budget":{"maxTokens":8000}})", or
 *  R"({"profile":"none"})" (session::profile_none) to turn off the default, which
 *  sends an imported session as its own agent does; "" for the defaults. The result
 *  is the context object of the contract (docs/contract.md, §7.3). */
inline result build_context(const std::string &entries_json, const std::string &leaf_id,
                            const std::string &options_json = std::string())
{
    if (detail::has_nul(entries_json) || detail::has_nul(leaf_id) || detail::has_nul(options_json))
        return detail::nul_argument();
    const char *options = options_json.empty() ? nullptr : options_json.c_str();
    return detail::call([&](char **out) {
        return session_build_context(entries_json.c_str(), leaf_id.c_str(), options, out);
    });
}

/** session_list_sessions: {"sessions":[…]}, one record per *.jsonl file in dir, read
 *  from its head and last committed line. options_json e.g.
 *  R"({"recursive":true,"limit":50,"sort":"path"})" ("" for the defaults). */
inline result list_sessions(const std::string &dir, const std::string &options_json = std::string())
{
    if (detail::has_nul(dir) || detail::has_nul(options_json)) return detail::nul_argument();
    const char *options = options_json.empty() ? nullptr : options_json.c_str();
    return detail::call([&](char **out) { return session_list_sessions(dir.c_str(), options, out); });
}

/** session_search: the hits of query_json in the *.jsonl sessions of dir, best first:
 *  {"hits":[{"path","entryId","seq","role","timestamp","snippet","score",
 *  "onLatestPath"}…],"sessions","entries","errors":[…],"bytesRead","index"}. query_json
 *  e.g. R"({"query":"项目名","limit":5,"roles":["assistant"],"latestPathOnly":true})". The
 *  index is dir/.session-search.db, brought up to date first (only appended bytes read);
 *  "index":"temporary" when it could not be used and a temporary one answered. */
inline result search(const std::string &dir, const std::string &query_json)
{
    if (detail::has_nul(dir) || detail::has_nul(query_json)) return detail::nul_argument();
    return detail::call([&](char **out) { return session_search(dir.c_str(), query_json.c_str(), out); });
}

/** session_export: writes the session file src_path as a new file out_path that another
 *  agent resumes, secrets redacted ([REDACTED:<rule>]). format is "pi", "claude-code" or
 *  "codex"; options_json is "" (resume at the latest leaf, redact) or e.g.
 *  R"({"leaf":"a-2","redact":false})" (also "rules", "extraRules", "allow" as for
 *  secrets). The report: {"format","entries","converted":[{"kind","count","reason"}…],
 *  "dropped":[…],"redactions":N}. out_path must not exist; the file is no wider in mode
 *  than the source. (Named export_to: export is a C++ keyword.) */
inline result export_to(const std::string &format, const std::string &src_path, const std::string &out_path,
                        const std::string &options_json = "")
{
    if (detail::has_nul(format) || detail::has_nul(src_path) || detail::has_nul(out_path) ||
        detail::has_nul(options_json))
        return detail::nul_argument();
    const char *options = options_json.empty() ? nullptr : options_json.c_str();
    return detail::call([&](char **out) {
        return session_export(format.c_str(), src_path.c_str(), out_path.c_str(), options, out);
    });
}

/** session_secrets: the secrets in the session file path, or in the *.jsonl files of
 *  the folder path: {"findings":[{"path","entryId","pointer","rule","fingerprint"}…],
 *  "sessions":N}, never a secret itself. options_json e.g.
 *  R"({"extraRules":[{"name":"corp","pattern":"corp_[0-9a-f]{16}"}],"allow":["…"]})"
 *  ("" for the defaults). */
inline result secrets(const std::string &path, const std::string &options_json = std::string())
{
    if (detail::has_nul(path) || detail::has_nul(options_json)) return detail::nul_argument();
    const char *options = options_json.empty() ? nullptr : options_json.c_str();
    return detail::call([&](char **out) { return session_secrets(path.c_str(), options, out); });
}

/** session_redact: src with each secret replaced by [REDACTED:<rule>] written to dst, a
 *  new file; dst "" with R"({"inPlace":true})" rewrites src under the writer's lock.
 *  {"redactions":N,"findings":[…]}. */
inline result redact(const std::string &src, const std::string &dst,
                     const std::string &options_json = std::string())
{
    if (detail::has_nul(src) || detail::has_nul(dst) || detail::has_nul(options_json))
        return detail::nul_argument();
    const char *target = dst.empty() ? nullptr : dst.c_str();
    const char *options = options_json.empty() ? nullptr : options_json.c_str();
    return detail::call([&](char **out) { return session_redact(src.c_str(), target, options, out); });
}

/** An open store; closes it when destroyed. Movable, not copyable. */
class store {
public:
    store() noexcept = default;
    /** Adopts a store opened through the C API. */
    explicit store(SessionStore *adopted) noexcept : handle_(adopted) {}

    /** session_memory_store_open into `out` (replacing what it held). */
    static result open_memory(store &out)
    {
        SessionStore *raw = nullptr;
        const SessionStatus status = session_memory_store_open(&raw);
        out.handle_.reset(raw);
        if (status == SESSION_OK) return result{};
        return result{status, std::string(R"({"error":{"code":")") + session_status_name(status) +
                                  R"(","message":"session_memory_store_open failed"}})"};
    }

    /** session_memory_store_open_with into `out`: options as a JSON object, e.g.
     *  R"({"strictRoles":true})" ("" for the defaults). */
    static result open_memory(const std::string &options_json, store &out)
    {
        if (detail::has_nul(options_json)) return detail::nul_argument();
        SessionStore *raw = nullptr;
        const char *options = options_json.empty() ? nullptr : options_json.c_str();
        // session_memory_store_open_with reports failures through its status only.
        const SessionStatus status = session_memory_store_open_with(options, &raw);
        out.handle_.reset(raw);
        if (status == SESSION_OK) return result{};
        return result{status, std::string(R"({"error":{"code":")") + session_status_name(status) +
                                  R"(","message":"session_memory_store_open_with failed"}})"};
    }

    /** session_pg_store_open into `out`: session session_id of the PostgreSQL database
     *  conninfo names; options as a JSON object, e.g. R"({"durability":"fsync"})" (""
     *  for the defaults). The result is {"state":"ready","warnings":[]}. */
    static result open_postgres(const std::string &conninfo, const std::string &session_id,
                                const std::string &options_json, store &out)
    {
        if (detail::has_nul(conninfo) || detail::has_nul(session_id) || detail::has_nul(options_json))
            return detail::nul_argument();
        SessionStore *raw = nullptr;
        const char *options = options_json.empty() ? nullptr : options_json.c_str();
        result r = detail::call([&](char **json) {
            return session_pg_store_open(conninfo.c_str(), session_id.c_str(), options, &raw, json);
        });
        out.handle_.reset(raw);
        return r;
    }

    /** session_jsonl_store_open into `out`; the result is {"state":…,"warnings":[…]}. */
    static result open_jsonl(const std::string &path, store &out)
    {
        if (detail::has_nul(path)) return detail::nul_argument();
        SessionStore *raw = nullptr;
        result r = detail::call(
            [&](char **json) { return session_jsonl_store_open(path.c_str(), &raw, json); });
        out.handle_.reset(raw);
        return r;
    }

    /** session_jsonl_store_open_with: options as a JSON object, e.g.
     *  R"({"durability":"fsync"})" or R"({"readOnly":true})" ("" or "{}" for the defaults). */
    static result open_jsonl(const std::string &path, const std::string &options_json, store &out)
    {
        if (detail::has_nul(path) || detail::has_nul(options_json)) return detail::nul_argument();
        SessionStore *raw = nullptr;
        const char *options = options_json.empty() ? nullptr : options_json.c_str();
        result r = detail::call([&](char **json) {
            return session_jsonl_store_open_with(path.c_str(), options, &raw, json);
        });
        out.handle_.reset(raw);
        return r;
    }

    result append(const std::string &entry_json)
    {
        if (detail::has_nul(entry_json)) return detail::nul_argument();
        return detail::call(
            [&](char **out) { return session_store_append(get(), entry_json.c_str(), out); });
    }
    result entries() const
    {
        return detail::call([&](char **out) { return session_store_entries(get(), out); });
    }
    result read() const
    {
        return detail::call([&](char **out) { return session_store_read(get(), out); });
    }
    result path_to(const std::string &leaf_id) const
    {
        if (detail::has_nul(leaf_id)) return detail::nul_argument();
        return detail::call(
            [&](char **out) { return session_store_path_to(get(), leaf_id.c_str(), out); });
    }
    result messages_on_path(const std::string &leaf_id) const
    {
        if (detail::has_nul(leaf_id)) return detail::nul_argument();
        return detail::call([&](char **out) {
            return session_store_messages_on_path(get(), leaf_id.c_str(), out);
        });
    }
    /** session_store_build_context: what the model should see for leaf_id, through the
     *  store's index. options_json as for session::build_context. With an estimator,
     *  a budget's tokens are counted by it; without one (an empty std::function), by
     *  the default ceil(bytes / 4). */
    result build_context(const std::string &leaf_id, const std::string &options_json = std::string(),
                         const token_estimator &estimate = token_estimator()) const
    {
        if (detail::has_nul(leaf_id) || detail::has_nul(options_json)) return detail::nul_argument();
        const char *options = options_json.empty() ? nullptr : options_json.c_str();
        detail::estimator_call state{&estimate, nullptr};
        result r = detail::call([&](char **out) {
            return session_store_build_context(get(), leaf_id.c_str(), options,
                                               estimate ? detail::estimate_trampoline : nullptr,
                                               estimate ? &state : nullptr, out);
        });
        if (state.thrown) std::rethrow_exception(state.thrown);
        return r;
    }
    /** session_store_children: the direct children of id, in commit order, as an array
     *  of nodes (an entry's place in the tree, never its message body). */
    result children(const std::string &id) const
    {
        if (detail::has_nul(id)) return detail::nul_argument();
        return detail::call([&](char **out) { return session_store_children(get(), id.c_str(), out); });
    }
    /** session_store_roots: the nodes without a parent, in commit order. */
    result roots() const
    {
        return detail::call([&](char **out) { return session_store_roots(get(), out); });
    }
    /** session_store_leaves: {"leaves":[…],"latestBySeq":id|null,"latestByTimestamp":id|null}. */
    result leaves() const
    {
        return detail::call([&](char **out) { return session_store_leaves(get(), out); });
    }
    /** session_store_latest_leaf: the node of the last committed entry, or null. */
    result latest_leaf() const
    {
        return detail::call([&](char **out) { return session_store_latest_leaf(get(), out); });
    }
    /** session_store_tree: a page of nodes in commit order; options_json e.g.
     *  R"({"afterSeq":99,"limit":100,"leaf":"a-1","previewChars":40})" ("" for all). */
    result tree(const std::string &options_json = std::string()) const
    {
        if (detail::has_nul(options_json)) return detail::nul_argument();
        const char *options = options_json.empty() ? nullptr : options_json.c_str();
        return detail::call([&](char **out) { return session_store_tree(get(), options, out); });
    }
    /** session_store_labels: [{"targetId","label","entryId","seq"}, …]. */
    result labels() const
    {
        return detail::call([&](char **out) { return session_store_labels(get(), out); });
    }
    /** SESSION_STATE_*; a closed (empty) store reports SESSION_STATE_TAINTED, as NULL does. */
    SessionState state() const noexcept { return session_store_state(get()); }

    /** Closes the store now; later calls fail with SESSION_ERR_INVALID_ARGUMENT. Idempotent. */
    void close() noexcept { handle_.reset(); }

    SessionStore *get() const noexcept { return handle_.get(); }
    /** Gives up ownership: the caller must session_store_close the result. */
    SessionStore *release() noexcept { return handle_.release(); }
    explicit operator bool() const noexcept { return static_cast<bool>(handle_); }

private:
    unique_store handle_;
};

} // namespace session

#endif /* SESSION_HPP */

//! Search across the sessions of a folder: ranking, CJK, roles, the latest path, the
//! incremental sidecar (appends read alone, truncated, replaced and deleted files,
//! a deleted or damaged sidecar), corrupt lines, permissions, many sessions, and two
//! searches at once.
#![cfg(feature = "search")]

mod common;

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::Path;

use common::{CHAPTER, TempDir, jsonl, temp_dir, user, write_file};
use session::search::{IndexUse, MAX_QUERY_BYTES, MAX_TERMS};
use session::{Error, SIDECAR, SearchQuery, SearchResult, search};

fn find(dir: &Path, text: &str) -> SearchResult {
    search(dir, &SearchQuery::new(text)).expect("search")
}

fn ids(result: &SearchResult) -> Vec<&str> {
    result.hits.iter().map(|h| h.entry_id.as_str()).collect()
}

/// The ids of the hits of `text`, sorted (where the order is not the point).
fn sorted_ids(dir: &Path, text: &str) -> Vec<String> {
    let mut found: Vec<String> = find(dir, text)
        .hits
        .into_iter()
        .map(|h| h.entry_id)
        .collect();
    found.sort();
    found
}

fn chapter_dir(name: &str) -> TempDir {
    let dir = temp_dir(name);
    write_file(&dir.join("chapter.jsonl"), &jsonl(&CHAPTER));
    dir
}

fn assistant(id: &str, parent: &str, text: &str) -> String {
    serde_json::json!({"id": id, "parentId": parent, "timestamp": 9, "type": "message",
        "message": {"role": "assistant", "content": [{"type": "text", "text": text}]}})
    .to_string()
}

fn append(path: &Path, line: &str) -> u64 {
    let mut file = OpenOptions::new().append(true).open(path).expect("open");
    file.write_all(format!("{line}\n").as_bytes())
        .expect("append");
    line.len() as u64 + 1
}

#[test]
fn bm25_ranks_the_entry_that_says_it_most_first() {
    let dir = temp_dir("search-rank");
    let lines = [
        user(
            "u-1",
            None,
            "the weather is fine; we talked about many things today",
        ),
        assistant("a-1", "u-1", "parser parser parser: the parser is broken"),
        assistant(
            "a-2",
            "a-1",
            "long text about lunch, and once the parser, then more words",
        ),
    ];
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    write_file(&dir.join("s.jsonl"), &jsonl(&lines));
    let result = find(&dir, "parser");
    assert_eq!(ids(&result), ["a-1", "a-2"]);
    assert!(result.hits[0].score > result.hits[1].score);
    assert!(result.hits[0].snippet.contains("parser"));
    assert_eq!((result.sessions, result.entries), (1, 3));
}

#[test]
fn cjk_text_matches_inside_words() {
    let dir = chapter_dir("search-cjk");
    let result = find(&dir, "项目名");
    let mut found = ids(&result);
    found.sort();
    assert_eq!(found, ["a-final", "u-1"]);
    let hit = result.hits.iter().find(|h| h.entry_id == "a-final");
    assert!(hit.is_some_and(|h| h.snippet.contains("项目名是 tiny-pi")));
}

#[test]
fn a_query_shorter_than_three_characters_still_matches() {
    let dir = chapter_dir("search-short");
    assert_eq!(sorted_ids(&dir, "项目"), ["a-final", "u-1"]);
    assert_eq!(ids(&find(&dir, "无法")), ["a-alt"]);
    // Mixed: one term long enough for the index, one scanned.
    assert_eq!(ids(&find(&dir, "TINY-PI 是")), ["a-final"]);
}

#[test]
fn matching_is_case_insensitive() {
    let dir = chapter_dir("search-case");
    assert_eq!(ids(&find(&dir, "TINY-PI")).len(), 2);
    assert_eq!(ids(&find(&dir, "Pi")).len(), 2);
}

#[test]
fn tool_call_names_and_arguments_and_results_are_searched() {
    let dir = chapter_dir("search-tools");
    let found = sorted_ids(&dir, "README.md");
    // u-1 says it, a-read's arguments hold it; r-read's details are not read text.
    assert_eq!(found, ["a-read", "u-1"]);
    assert_eq!(ids(&find(&dir, "# tiny-pi")), ["r-read"]);
}

#[test]
fn metadata_is_not_searched() {
    let dir = chapter_dir("search-meta");
    assert!(ids(&find(&dir, "/workspace")).is_empty());
}

#[test]
fn roles_filter_the_hits() {
    let dir = chapter_dir("search-roles");
    let query = SearchQuery::from_json(r#"{"query":"tiny-pi","roles":["toolResult"]}"#);
    let result = search(&dir, &query.expect("query")).expect("search");
    assert_eq!(ids(&result), ["r-read"]);
    assert_eq!(result.hits[0].role, "toolResult");
}

#[test]
fn a_compaction_summary_is_searched_with_role_compaction() {
    let dir = chapter_dir("search-compaction");
    let path = dir.join("chapter.jsonl");
    append(
        &path,
        r#"{"id":"c-1","parentId":"meta-cwd","timestamp":7,"type":"compaction","summary":"User asked for the project name","firstKeptEntryId":null,"tokensBefore":1}"#,
    );
    let result = find(&dir, "project name");
    assert_eq!(ids(&result), ["c-1"]);
    assert_eq!(result.hits[0].role, "compaction");
}

#[test]
fn a_hit_on_a_side_branch_is_not_on_the_latest_path() {
    let dir = chapter_dir("search-branch");
    let side = find(&dir, "无法读取");
    assert_eq!(ids(&side), ["a-alt"]);
    assert!(!side.hits[0].on_latest_path);
    let main = find(&dir, "项目名是");
    assert!(main.hits[0].on_latest_path);
    let query = SearchQuery::from_json(r#"{"query":"读取","latestPathOnly":true}"#);
    let latest = search(&dir, &query.expect("query")).expect("search");
    assert_eq!(ids(&latest), ["u-1"]);
}

#[test]
fn latest_path_only_keeps_only_the_hits_on_the_latest_path() {
    let dir = chapter_dir("search-latest-only");
    let only = |dir: &Path| {
        let query = SearchQuery::from_json(r#"{"query":"读取","latestPathOnly":true}"#);
        search(dir, &query.expect("query")).expect("search")
    };
    // Without the flag the side branch's entry is a hit too.
    assert_eq!(sorted_ids(&dir, "读取"), ["a-alt", "u-1"]);
    let latest = only(&dir);
    assert_eq!(ids(&latest), ["u-1"]);
    assert!(latest.hits.iter().all(|h| h.on_latest_path));
    // The latest path moves to a child of a-alt (whose branch shares u-1): the flag
    // follows it, and both hits are now on it.
    append(
        &dir.join("chapter.jsonl"),
        &user("u-9", Some("a-alt"), "again"),
    );
    let moved = only(&dir);
    let mut found = ids(&moved);
    found.sort_unstable();
    assert_eq!(found, ["a-alt", "u-1"]);
    assert!(moved.hits.iter().all(|h| h.on_latest_path));
}

/// Rule: after every incremental update the entries on the latest path (root to the
/// last committed entry) are exactly those marked on it, whether the update extends the
/// latest leaf, forks from an entry far up its path, goes back to a branch left
/// earlier, or starts a second root (the update moves only the entries on one path and
/// not the other).
#[test]
fn the_latest_path_marks_follow_extensions_forks_and_new_roots_across_updates() {
    let dir = temp_dir("search-latest-moves-incrementally");
    let path = dir.join("s.jsonl");
    // (id, parent) of every entry, in commit order.
    let mut tree: Vec<(String, Option<String>)> = Vec::new();
    let add = |tree: &mut Vec<(String, Option<String>)>, id: &str, parent: Option<&str>| {
        append(&path, &user(id, parent, &format!("zqmark entry {id}")));
        tree.push((id.to_owned(), parent.map(str::to_owned)));
    };
    write_file(&path, b"");
    let check = |tree: &Vec<(String, Option<String>)>, step: &str| {
        let mut expected = Vec::new();
        let mut at = tree.last().map(|(id, _)| id.clone());
        while let Some(id) = at {
            at = tree
                .iter()
                .find(|(i, _)| *i == id)
                .and_then(|(_, p)| p.clone());
            expected.push(id);
        }
        expected.sort();
        let query = SearchQuery::from_json(r#"{"query":"zqmark","limit":1000}"#).expect("query");
        let result = search(&dir, &query).expect("search");
        assert_eq!(result.hits.len(), tree.len(), "{step}");
        let mut marked: Vec<String> = result
            .hits
            .iter()
            .filter(|h| h.on_latest_path)
            .map(|h| h.entry_id.clone())
            .collect();
        marked.sort();
        assert_eq!(marked, expected, "{step}");
    };
    add(&mut tree, "a0", None);
    for i in 1..8 {
        let parent = format!("a{}", i - 1);
        add(&mut tree, &format!("a{i}"), Some(&parent));
    }
    check(&tree, "the first index");
    add(&mut tree, "a8", Some("a7"));
    check(&tree, "the latest leaf extended");
    add(&mut tree, "b0", Some("a2"));
    add(&mut tree, "b1", Some("b0"));
    check(&tree, "a fork far up the path");
    add(&mut tree, "c0", Some("a5"));
    check(&tree, "back to the branch left before, below the fork");
    add(&mut tree, "r0", None);
    check(&tree, "a second root");
    add(&mut tree, "d0", Some("b1"));
    add(&mut tree, "d1", Some("d0"));
    check(&tree, "back onto a branch from the second root");
}

#[test]
fn the_latest_path_follows_the_last_committed_entry() {
    let dir = chapter_dir("search-latest-moves");
    // A child of a-alt becomes the latest leaf: a-alt's branch is now the latest path.
    append(
        &dir.join("chapter.jsonl"),
        &user("u-9", Some("a-alt"), "again"),
    );
    let side = find(&dir, "无法读取");
    assert!(side.hits[0].on_latest_path);
    assert!(!find(&dir, "项目名是").hits[0].on_latest_path);
}

#[test]
fn an_appended_entry_is_found_by_the_next_search_reading_only_its_bytes() {
    let dir = chapter_dir("search-append");
    let path = dir.join("chapter.jsonl");
    let first = find(&dir, "zebra");
    assert!(first.hits.is_empty());
    assert_eq!(first.bytes_read, fs::metadata(&path).expect("meta").len());
    let added = append(&path, &assistant("a-zebra", "meta-cwd", "a zebra crossed"));
    let next = find(&dir, "zebra");
    assert_eq!(ids(&next), ["a-zebra"]);
    assert_eq!(next.bytes_read, added);
    assert!(next.hits[0].on_latest_path);
    assert_eq!(next.hits[0].seq, 6);
    assert_eq!(find(&dir, "zebra").bytes_read, 0);
}

#[test]
fn an_unterminated_tail_is_left_until_it_is_committed() {
    let dir = chapter_dir("search-tail");
    let path = dir.join("chapter.jsonl");
    let line = assistant("a-tail", "meta-cwd", "half written walrus");
    let mut file = OpenOptions::new().append(true).open(&path).expect("open");
    file.write_all(line.as_bytes()).expect("write");
    assert!(find(&dir, "walrus").hits.is_empty());
    file.write_all(b"\n").expect("write");
    assert_eq!(ids(&find(&dir, "walrus")), ["a-tail"]);
}

#[test]
fn a_truncated_file_is_read_again() {
    let dir = chapter_dir("search-truncate");
    let path = dir.join("chapter.jsonl");
    assert_eq!(ids(&find(&dir, "无法读取")), ["a-alt"]);
    write_file(&path, &jsonl(&CHAPTER[..3]));
    let result = find(&dir, "无法读取");
    assert!(result.hits.is_empty());
    assert_eq!(result.entries, 3);
}

#[test]
fn a_replaced_file_is_read_again() {
    let dir = chapter_dir("search-replace");
    let path = dir.join("chapter.jsonl");
    assert_eq!(ids(&find(&dir, "无法读取")).len(), 1);
    // Another file renamed over it, longer than the first (so only the identity and
    // the head tell), with other text.
    let new = dir.join("new.tmp");
    let mut lines: Vec<String> = vec![user("x-1", None, "octopus garden")];
    for i in 0..20 {
        lines.push(assistant(
            &format!("x-{}", i + 2),
            &format!("x-{}", i + 1),
            "filler text",
        ));
    }
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    write_file(&new, &jsonl(&lines));
    fs::rename(&new, &path).expect("rename");
    assert!(find(&dir, "无法读取").hits.is_empty());
    assert_eq!(ids(&find(&dir, "octopus")), ["x-1"]);
}

#[test]
fn a_file_rewritten_in_place_with_another_head_is_read_again() {
    let dir = chapter_dir("search-rewrite");
    let path = dir.join("chapter.jsonl");
    assert_eq!(ids(&find(&dir, "无法读取")).len(), 1);
    let mut lines: Vec<String> = vec![user("y-1", None, "penguin parade")];
    lines.extend(CHAPTER[1..].iter().map(|s| s.to_string()));
    lines[4] = lines[4].replace("u-1", "y-1");
    lines[1] = lines[1].replace("u-1", "y-1");
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    // Same inode, grown: only the head's hash tells.
    let mut bytes = jsonl(&lines);
    bytes.extend_from_slice(format!("{}\n", user("y-2", Some("meta-cwd"), "more")).as_bytes());
    fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .and_then(|mut f| f.write_all(&bytes))
        .expect("rewrite");
    assert_eq!(ids(&find(&dir, "penguin")), ["y-1"]);
    assert!(find(&dir, "告诉我项目名").hits.is_empty());
}

#[test]
fn a_deleted_session_leaves_the_index() {
    let dir = chapter_dir("search-delete");
    write_file(
        &dir.join("other.jsonl"),
        &jsonl(&[&user("o-1", None, "tiny-pi too")]),
    );
    assert_eq!(find(&dir, "tiny-pi").sessions, 2);
    fs::remove_file(dir.join("chapter.jsonl")).expect("remove");
    let result = find(&dir, "tiny-pi");
    assert_eq!(ids(&result), ["o-1"]);
    assert_eq!((result.sessions, result.entries), (1, 1));
}

#[test]
fn a_deleted_sidecar_is_rebuilt() {
    let dir = chapter_dir("search-sidecar-deleted");
    let before = find(&dir, "tiny-pi");
    fs::remove_file(dir.join(SIDECAR)).expect("remove");
    let after = find(&dir, "tiny-pi");
    assert_eq!(ids(&after), ids(&before));
    assert!(after.bytes_read > 0);
}

#[test]
fn a_damaged_sidecar_is_rebuilt() {
    let dir = chapter_dir("search-sidecar-damaged");
    let before = find(&dir, "tiny-pi");
    write_file(&dir.join(SIDECAR), &vec![b'x'; 8192]);
    assert_eq!(ids(&find(&dir, "tiny-pi")), ids(&before));
}

#[test]
fn a_corrupt_line_is_reported_and_the_rest_of_the_file_still_searched() {
    let dir = temp_dir("search-corrupt");
    let good = user("u-1", None, "before the damage");
    let later = user("u-2", Some("u-1"), "after the damage");
    let text = format!("{good}\n{{not json\n{later}\n");
    write_file(&dir.join("s.jsonl"), text.as_bytes());
    let result = find(&dir, "damage");
    let mut found = ids(&result);
    found.sort();
    assert_eq!(found, ["u-1", "u-2"]);
    assert_eq!(result.errors.len(), 1);
    assert_eq!(result.errors[0].path, "s.jsonl");
    assert_eq!(result.errors[0].line, Some(2));
    assert_eq!(result.errors[0].reason, "invalid_json");
    // Still reported by the next, incremental search.
    assert_eq!(find(&dir, "damage").errors.len(), 1);
}

#[test]
fn a_symbolic_link_is_reported_not_followed() {
    let dir = chapter_dir("search-symlink");
    std::os::unix::fs::symlink(dir.join("chapter.jsonl"), dir.join("link.jsonl")).expect("symlink");
    let result = find(&dir, "无法读取");
    assert_eq!(ids(&result), ["a-alt"]);
    assert_eq!(result.errors.len(), 1);
    assert_eq!(result.errors[0].path, "link.jsonl");
}

fn mode(path: &Path) -> u32 {
    fs::metadata(path).expect("meta").permissions().mode() & 0o777
}

#[test]
fn the_sidecar_takes_the_most_restrictive_permissions_of_the_sessions() {
    let dir = chapter_dir("search-mode");
    let other = dir.join("other.jsonl");
    write_file(&other, &jsonl(&[&user("o-1", None, "x")]));
    fs::set_permissions(dir.join("chapter.jsonl"), fs::Permissions::from_mode(0o640))
        .expect("chmod");
    fs::set_permissions(&other, fs::Permissions::from_mode(0o604)).expect("chmod");
    find(&dir, "tiny-pi");
    assert_eq!(mode(&dir.join(SIDECAR)), 0o600);
    // A sidecar wider than the sessions is narrowed.
    fs::set_permissions(dir.join(SIDECAR), fs::Permissions::from_mode(0o666)).expect("chmod");
    find(&dir, "tiny-pi");
    assert_eq!(mode(&dir.join(SIDECAR)), 0o600);
}

#[test]
fn a_folder_of_a_thousand_sessions_is_searched_and_then_read_no_more() {
    let dir = temp_dir("search-thousand");
    for i in 0..1000 {
        let lines = [
            user(
                "u-1",
                None,
                &format!("session number {i} asks about topic{i}"),
            ),
            assistant("a-1", "u-1", "an answer about the weather"),
        ];
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        write_file(&dir.join(format!("s{i:04}.jsonl")), &jsonl(&lines));
    }
    let first = find(&dir, "topic777");
    assert_eq!((first.sessions, first.entries), (1000, 2000));
    assert_eq!(first.hits.len(), 1);
    assert_eq!(first.hits[0].path, "s0777.jsonl");
    let query = SearchQuery::from_json(r#"{"query":"weather","limit":1000}"#).expect("query");
    let warm = search(&dir, &query).expect("search");
    assert_eq!(warm.hits.len(), 1000);
    assert_eq!(warm.bytes_read, 0);
}

#[test]
fn two_searches_at_once_do_not_corrupt_the_sidecar() {
    let dir = chapter_dir("search-concurrent");
    let path = dir.join("chapter.jsonl");
    std::thread::scope(|scope| {
        let searchers: Vec<_> = (0..4)
            .map(|_| scope.spawn(|| (0..10).map(|_| find(&dir, "tiny-pi").hits.len()).max()))
            .collect();
        for i in 0..20 {
            let parent = if i == 0 {
                "meta-cwd".to_owned()
            } else {
                format!("n-{}", i - 1)
            };
            append(
                &path,
                &assistant(&format!("n-{i}"), &parent, "tiny-pi again"),
            );
        }
        for s in searchers {
            assert!(s.join().expect("no panic").is_some());
        }
    });
    let result = find(&dir, "tiny-pi");
    assert_eq!(result.entries, 26);
    let query = SearchQuery::from_json(r#"{"query":"tiny-pi","limit":100}"#).expect("query");
    assert_eq!(search(&dir, &query).expect("search").hits.len(), 22);
}

#[test]
fn an_invalid_query_is_refused() {
    for text in [
        r#"{"query":""}"#,
        r#"{"query":"  "}"#,
        r#"{"query":"x","limit":0}"#,
        r#"{"query":"x","limit":1001}"#,
        r#"{"query":"x","limt":3}"#,
        r#"{"limit":3}"#,
        r#"{"query":"x","roles":"user"}"#,
    ] {
        assert!(
            matches!(
                SearchQuery::from_json(text),
                Err(Error::InvalidOption { .. })
            ),
            "{text}"
        );
    }
    let q = SearchQuery::from_json(r#"{"query":"x"}"#).expect("query");
    assert_eq!(q.limit, 20);
}

#[test]
fn the_result_json_has_the_documented_members() {
    let dir = chapter_dir("search-json");
    let json: serde_json::Value =
        serde_json::from_str(&find(&dir, "项目名是").to_json()).expect("json");
    let hit = &json["hits"][0];
    assert_eq!(hit["path"], "chapter.jsonl");
    assert_eq!(hit["entryId"], "a-final");
    assert_eq!(hit["seq"], 3);
    assert_eq!(hit["role"], "assistant");
    assert_eq!(hit["timestamp"], 1_733_000_003_000_i64); // a-final in examples/tiny-pi.jsonl
    assert_eq!(hit["onLatestPath"], true);
    assert!(hit["score"].as_f64().is_some_and(|s| s > 0.0));
    assert!(
        hit["snippet"]
            .as_str()
            .is_some_and(|s| s.contains("项目名是"))
    );
    assert_eq!(json["sessions"], 1);
    assert_eq!(json["entries"], 6);
    assert!(json["errors"].as_array().is_some_and(|e| e.is_empty()));
}

fn cli(args: &[&std::ffi::OsStr]) -> (i32, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_session"))
        .args(args)
        .output()
        .expect("run session");
    let text = |b: Vec<u8>| String::from_utf8(b).expect("UTF-8");
    (
        out.status.code().unwrap_or(-1),
        text(out.stdout),
        text(out.stderr),
    )
}

#[test]
fn cli_search_prints_one_hit_per_line_with_file_text_escaped() {
    let dir = chapter_dir("search-cli");
    // A child of u-1 becomes the latest leaf: a-final is now off the latest path.
    append(
        &dir.join("chapter.jsonl"),
        &assistant("a-\u{1b}[31m", "u-1", "tiny-pi \u{1b}]0;title\u{7}"),
    );
    let (code, out, _) = cli(&[
        "search".as_ref(),
        dir.as_os_str(),
        "tiny-pi".as_ref(),
        "--role".as_ref(),
        "assistant".as_ref(),
    ]);
    assert_eq!(code, 0);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert!(!out.contains('\u{1b}') && !out.contains('\u{7}'), "{out:?}");
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("chapter.jsonl  a-final  assistant  -  ")),
        "{out}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains("a-\\x1b[31m  assistant  *")),
        "{out}"
    );
}

#[test]
fn cli_search_json_is_the_library_result_and_a_corrupt_line_exits_1() {
    let dir = chapter_dir("search-cli-json");
    let (code, out, _) = cli(&[
        "search".as_ref(),
        dir.as_os_str(),
        "项目名".as_ref(),
        "--json".as_ref(),
        "--limit".as_ref(),
        "1".as_ref(),
    ]);
    assert_eq!(code, 0);
    let json: serde_json::Value = serde_json::from_str(&out).expect("one JSON object");
    assert_eq!(json["hits"].as_array().map(Vec::len), Some(1));
    write_file(&dir.join("bad.jsonl"), b"{oops\n");
    let (code, _, err) = cli(&["search".as_ref(), dir.as_os_str(), "项目名".as_ref()]);
    assert_eq!(code, 1);
    assert!(err.contains("bad.jsonl line 1"), "{err}");
    let (code, _, _) = cli(&[
        "search".as_ref(),
        dir.as_os_str(),
        "x".as_ref(),
        "--limit=0".as_ref(),
    ]);
    assert_eq!(code, 64);
}

#[test]
fn a_sidecar_of_an_older_schema_version_is_rebuilt() {
    let dir = chapter_dir("search-sidecar-old-version");
    let before = find(&dir, "tiny-pi");
    fs::remove_file(dir.join(SIDECAR)).expect("remove");
    // Version 1: the FTS5 table with positions, no `state` table.
    let old = rusqlite::Connection::open(dir.join(SIDECAR)).expect("open");
    old.execute_batch(
        "CREATE TABLE files(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
         CREATE VIRTUAL TABLE texts USING fts5(text, tokenize = 'trigram case_sensitive 0');
         PRAGMA user_version = 1;",
    )
    .expect("old schema");
    drop(old);
    let after = find(&dir, "tiny-pi");
    assert_eq!(ids(&after), ids(&before));
    assert!(after.bytes_read > 0, "the old index was not read from");
    let rebuilt = rusqlite::Connection::open(dir.join(SIDECAR)).expect("open");
    let version: i64 = rebuilt
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .expect("version");
    assert!(version > 1, "user_version {version}");
}

#[test]
fn a_term_is_matched_whole_not_as_its_scattered_trigrams() {
    let dir = temp_dir("search-trigrams-scattered");
    let both = user("u-1", None, "the Flamingo config");
    let scattered = user("u-2", Some("u-1"), "flam ingo lamingo");
    write_file(
        &dir.join("s.jsonl"),
        format!("{both}\n{scattered}\n").as_bytes(),
    );
    assert_eq!(sorted_ids(&dir, "flamingo"), ["u-1"]);
    assert_eq!(sorted_ids(&dir, "FLAMINGO conf"), ["u-1"]);
    assert_eq!(sorted_ids(&dir, "lamingo"), ["u-1", "u-2"]);
}

#[test]
fn an_unchanged_folder_is_not_read_and_a_changed_one_is() {
    let dir = chapter_dir("search-fingerprint");
    let path = dir.join("chapter.jsonl");
    find(&dir, "tiny-pi");
    let again = find(&dir, "tiny-pi");
    assert_eq!(again.bytes_read, 0);
    // A new file beside an unchanged one, then a grown one: each is seen.
    let other = format!("{}\n", user("o-1", None, "tiny-pi too"));
    write_file(&dir.join("other.jsonl"), other.as_bytes());
    let result = find(&dir, "tiny-pi");
    assert!(ids(&result).contains(&"o-1"));
    assert_eq!(result.sessions, 2);
    let grown = append(&path, &assistant("c-new", "meta-cwd", "a penguin"));
    let result = find(&dir, "penguin");
    assert_eq!(ids(&result), ["c-new"]);
    assert_eq!(result.bytes_read, grown);
}

// Round 4 hardening (issue 33).

/// A session of `n` entries of about 300 bytes each, entry `secret_at` holding `secret`.
fn long_session(n: usize, secret_at: usize, secret: &str) -> Vec<u8> {
    let mut lines = vec![user("e-0", None, &"filler words ".repeat(20))];
    for i in 1..n {
        let text = if i == secret_at {
            format!("the key is {secret}, keep it")
        } else {
            "filler words ".repeat(20)
        };
        lines.push(assistant(&format!("e-{i}"), &format!("e-{}", i - 1), &text));
    }
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    jsonl(&lines)
}

#[test]
fn a_same_size_edit_in_the_middle_that_keeps_the_mtime_is_read_again() {
    use std::os::unix::fs::FileExt;
    let dir = temp_dir("search-edit-middle");
    let path = dir.join("s.jsonl");
    let secret = "sk-live-7f3a9c";
    let bytes = long_session(60, 30, secret);
    write_file(&path, &bytes);
    assert_eq!(ids(&find(&dir, secret)), ["e-30"]);
    let at = bytes
        .windows(secret.len())
        .position(|w| w == secret.as_bytes())
        .expect("the secret is written");
    // Past the first 4 KiB and well before the last indexed block.
    assert!(
        at > 4096 && at + 8192 < bytes.len(),
        "{at} of {}",
        bytes.len()
    );
    let before = fs::metadata(&path).expect("meta");
    let file = OpenOptions::new().write(true).open(&path).expect("open");
    let redacted = "[REDACTED-key]";
    assert_eq!(redacted.len(), secret.len());
    file.write_all_at(redacted.as_bytes(), at as u64)
        .expect("edit");
    file.set_modified(before.modified().expect("mtime"))
        .expect("keep the mtime");
    drop(file);
    let after = fs::metadata(&path).expect("meta");
    assert_eq!(after.len(), before.len());
    assert_eq!(after.modified().ok(), before.modified().ok());
    let gone = find(&dir, secret);
    assert!(gone.hits.is_empty(), "{:?}", gone.hits);
    let found = find(&dir, "REDACTED-key");
    assert_eq!(ids(&found), ["e-30"]);
    assert!(found.hits[0].snippet.contains(redacted));
    assert!(!found.hits[0].snippet.contains(secret));
}

#[test]
fn a_longer_rewrite_in_place_with_the_same_head_is_read_again() {
    let dir = temp_dir("search-edit-longer");
    let path = dir.join("s.jsonl");
    let bytes = long_session(60, 30, "sk-live-7f3a9c");
    write_file(&path, &bytes);
    assert_eq!(ids(&find(&dir, "sk-live-7f3a9c")), ["e-30"]);
    // The same inode rewritten with a longer line in the middle: the first 4 KiB are
    // the same and the file grew, as if lines had been appended.
    let longer = long_session(60, 30, "[the key was removed from this line]");
    assert!(longer.len() > bytes.len() && longer[..4096] == bytes[..4096]);
    OpenOptions::new()
        .write(true)
        .open(&path)
        .and_then(|mut f| f.write_all(&longer))
        .expect("rewrite");
    let result = find(&dir, "sk-live-7f3a9c");
    assert!(result.hits.is_empty(), "{:?}", result.hits);
    assert!(result.errors.is_empty(), "{:?}", result.errors);
    assert_eq!(ids(&find(&dir, "removed from this line")), ["e-30"]);
    assert_eq!(find(&dir, "filler").entries, 60);
}

fn mkfifo(path: &Path) {
    let made = std::process::Command::new("mkfifo").arg(path).status();
    assert!(made.is_ok_and(|s| s.success()), "mkfifo {}", path.display());
}

#[test]
fn a_fifo_at_any_sqlite_side_file_never_blocks_a_search() {
    for suffix in ["-journal", "-wal", "-shm"] {
        let dir = chapter_dir("search-side-fifo");
        // A first search builds the sidecar, so the next one opens a database with pages.
        assert_eq!(ids(&find(&dir, "无法读取")), ["a-alt"]);
        let side = dir.join(format!("{SIDECAR}{suffix}"));
        // The journal is kept between searches: the FIFO takes its place.
        let _ = fs::remove_file(&side);
        mkfifo(&side);
        let target = dir.to_path_buf();
        let result = common::within_a_minute(&format!("a search beside a FIFO at {suffix}"), {
            move || search(&target, &SearchQuery::new("无法读取"))
        });
        let result = result.unwrap_or_else(|e| panic!("{suffix}: {e}"));
        assert_eq!(ids(&result), ["a-alt"], "{suffix}");
        assert_eq!(result.index, IndexUse::Temporary, "{suffix}");
        assert!(
            fs::symlink_metadata(&side).is_ok_and(|m| m.file_type().is_fifo()),
            "{suffix}: the FIFO is left alone"
        );
    }
}

#[test]
fn a_symbolic_link_at_a_sqlite_side_file_is_never_followed() {
    for suffix in ["-journal", "-wal", "-shm"] {
        let dir = chapter_dir("search-side-link");
        assert_eq!(ids(&find(&dir, "无法读取")), ["a-alt"]);
        let target = dir.join("elsewhere");
        write_file(&target, b"untouched");
        let side = dir.join(format!("{SIDECAR}{suffix}"));
        let _ = fs::remove_file(&side);
        std::os::unix::fs::symlink(&target, &side).expect("symlink");
        let result = find(&dir, "无法读取");
        assert_eq!(ids(&result), ["a-alt"], "{suffix}");
        assert_eq!(result.index, IndexUse::Temporary, "{suffix}");
        assert_eq!(fs::read(&target).expect("read"), b"untouched", "{suffix}");
    }
}

/// Whether the tests run as root: the owner of a file they create.
fn is_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    let dir = temp_dir("search-whoami");
    write_file(&dir.join("mine"), b"");
    fs::metadata(dir.join("mine")).is_ok_and(|m| m.uid() == 0)
}

#[test]
fn the_sidecar_takes_the_sessions_group_or_drops_the_group_bits() {
    use std::os::unix::fs::MetadataExt;
    if !is_root() {
        eprintln!("skipped: giving a file another group takes root");
        return;
    }
    let dir = chapter_dir("search-group");
    let session = dir.join("chapter.jsonl");
    fs::set_permissions(&session, fs::Permissions::from_mode(0o640)).expect("chmod");
    // A group the searching process (root, group 0) is not running as.
    let group = 65534;
    std::os::unix::fs::chown(&session, None, Some(group)).expect("chown");
    find(&dir, "tiny-pi");
    let meta = fs::metadata(dir.join(SIDECAR)).expect("sidecar");
    assert_eq!((meta.gid(), meta.mode() & 0o777), (group, 0o640));
    for side in fs::read_dir(&*dir).expect("list") {
        let side = side.expect("entry");
        let name = side.file_name().to_string_lossy().into_owned();
        if name.starts_with(SIDECAR) {
            let meta = side.metadata().expect("meta");
            assert_eq!((meta.gid(), meta.mode() & 0o777), (group, 0o640), "{name}");
        }
    }
    // Sessions of two groups: no group may read the sidecar.
    let other = dir.join("other.jsonl");
    write_file(&other, &jsonl(&[&user("o-1", None, "tiny-pi too")]));
    fs::set_permissions(&other, fs::Permissions::from_mode(0o640)).expect("chmod");
    std::os::unix::fs::chown(&other, None, Some(0)).expect("chown");
    find(&dir, "tiny-pi");
    assert_eq!(mode(&dir.join(SIDECAR)), 0o600);
}

#[test]
fn a_folder_with_a_directory_at_the_sidecar_name_is_searched_without_it() {
    // Simulates a sidecar that cannot be created or written: the name is taken by a
    // directory, which SQLite cannot open as a database.
    let dir = chapter_dir("search-sidecar-dir");
    fs::create_dir(dir.join(SIDECAR)).expect("mkdir");
    let result = find(&dir, "无法读取");
    assert_eq!(ids(&result), ["a-alt"]);
    assert_eq!(result.index, IndexUse::Temporary);
    assert_eq!((result.sessions, result.entries), (1, 6));
    let json: serde_json::Value = serde_json::from_str(&result.to_json()).expect("json");
    assert_eq!(json["index"], "temporary");
    assert!(dir.join(SIDECAR).is_dir());
    assert_eq!(find(&dir, "无法读取").bytes_read, result.bytes_read);
}

#[test]
fn a_folder_the_caller_may_read_but_not_write_is_searched_without_the_sidecar() {
    use std::os::unix::process::CommandExt;
    let dir = chapter_dir("search-read-only");
    let root = is_root();
    if root {
        // Permission bits do not stop root: the searches run as `nobody`, to whom the
        // folder (root's, 0755) and its session (0644) are readable, not writable.
        fs::set_permissions(&*dir, fs::Permissions::from_mode(0o755)).expect("chmod");
        fs::set_permissions(dir.join("chapter.jsonl"), fs::Permissions::from_mode(0o644))
            .expect("chmod");
    } else {
        fs::set_permissions(&*dir, fs::Permissions::from_mode(0o555)).expect("chmod");
    }
    let run = |json: bool| {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_session"));
        command.args(["search".as_ref(), dir.as_os_str(), "无法读取".as_ref()]);
        if json {
            command.arg("--json");
        }
        if root {
            command.uid(65534).gid(65534);
        }
        command.output().expect("run session")
    };
    let (json, text) = (run(true), run(false));
    fs::set_permissions(&*dir, fs::Permissions::from_mode(0o700)).expect("chmod back");
    let stderr = String::from_utf8_lossy(&json.stderr);
    assert_eq!(json.status.code(), Some(0), "{stderr}");
    let json: serde_json::Value = serde_json::from_slice(&json.stdout).expect("one JSON object");
    assert_eq!(json["index"], "temporary", "{json}");
    assert_eq!(json["hits"][0]["entryId"], "a-alt");
    assert_eq!(json["sessions"], 1);
    assert!(!dir.join(SIDECAR).exists());
    // The text form says so on stderr, and still exits 0.
    let stderr = String::from_utf8_lossy(&text.stderr);
    assert_eq!(text.status.code(), Some(0), "{stderr}");
    assert!(String::from_utf8_lossy(&text.stdout).contains("a-alt"));
    assert!(stderr.contains("searched without the index"), "{stderr}");
    if root {
        // An index its owner keeps up to date is read by the others, not rebuilt.
        assert_eq!(find(&dir, "无法读取").index, IndexUse::Sidecar);
        fs::set_permissions(&*dir, fs::Permissions::from_mode(0o755)).expect("chmod");
        let again: serde_json::Value =
            serde_json::from_slice(&run(true).stdout).expect("one JSON object");
        assert_eq!(again["index"], "sidecar", "{again}");
        assert_eq!(again["hits"][0]["entryId"], "a-alt");
    }
}

#[test]
fn a_query_of_40000_words_answers_with_its_words_deduplicated() {
    let dir = chapter_dir("search-many-words");
    // 40,000 words, of which three differ (two only in case).
    let query = "tiny-pi TINY-PI 项目名 是 ".repeat(10_000);
    assert_eq!(query.split_whitespace().count(), 40_000);
    let terms = session::search::text::terms(&query);
    assert!(
        terms == ["tiny-pi", "项目名", "是"],
        "{} terms",
        terms.len()
    );
    let many = find(&dir, &query);
    assert_eq!(ids(&many), ids(&find(&dir, "tiny-pi 项目名 是")));
    assert_eq!(ids(&many), ["a-final"]);
}

#[test]
fn more_than_a_thousand_short_words_answer_or_are_refused_with_the_limit_never_io() {
    let dir = chapter_dir("search-short-words");
    // 1,001 repeats of one short word: one word.
    let repeated = "是 ".repeat(1001);
    assert_eq!(ids(&find(&dir, &repeated)), ids(&find(&dir, "是")));
    // 1,001 different short words: over the limit of distinct words.
    let distinct: String = (0..1001u32)
        .filter_map(|i| char::from_u32(0x4e00 + i))
        .map(|c| format!("{c} "))
        .collect();
    let refused = search(&dir, &SearchQuery::new(&distinct));
    match refused {
        Err(Error::InvalidOption { message }) => {
            assert!(message.contains(&MAX_TERMS.to_string()), "{message}")
        }
        other => panic!("{:?}", other.map(|r| r.hits.len())),
    }
    let json = serde_json::json!({ "query": distinct }).to_string();
    assert!(matches!(
        SearchQuery::from_json(&json),
        Err(Error::InvalidOption { .. })
    ));
    // The most distinct words are accepted.
    let most: String = (0..MAX_TERMS as u32)
        .filter_map(|i| char::from_u32(0x4e00 + i))
        .map(|c| format!("{c} "))
        .collect();
    assert!(search(&dir, &SearchQuery::new(&most)).is_ok_and(|r| r.hits.is_empty()));
}

#[test]
fn a_query_over_the_size_limit_is_refused_with_the_limit() {
    let dir = chapter_dir("search-huge-query");
    let huge = "x".repeat(MAX_QUERY_BYTES + 1);
    match search(&dir, &SearchQuery::new(&huge)) {
        Err(Error::InvalidOption { message }) => {
            assert!(message.contains(&MAX_QUERY_BYTES.to_string()), "{message}")
        }
        other => panic!("{:?}", other.map(|r| r.hits.len())),
    }
    // A query of the most bytes is answered.
    let most = "x".repeat(MAX_QUERY_BYTES);
    assert!(search(&dir, &SearchQuery::new(&most)).is_ok_and(|r| r.hits.is_empty()));
}

/// Run by `narrowing_the_sidecar_keeps_the_locks_another_connection_holds` in a child
/// process: tries to take the write lock of the database at `$SEARCH_LOCK_PROBE`
/// without waiting, and prints what happened.
#[test]
#[ignore = "a helper run in a child process"]
fn lock_probe() {
    let Ok(path) = std::env::var("SEARCH_LOCK_PROBE") else {
        return;
    };
    let conn = rusqlite::Connection::open(path).expect("open");
    conn.busy_timeout(std::time::Duration::ZERO)
        .expect("no wait");
    match conn.execute_batch("BEGIN IMMEDIATE; ROLLBACK;") {
        Ok(()) => println!("probe: acquired"),
        Err(e) => println!("probe: refused: {e}"),
    }
}

#[test]
fn narrowing_the_sidecar_keeps_the_locks_another_connection_holds() {
    let dir = chapter_dir("search-locks");
    fs::set_permissions(dir.join("chapter.jsonl"), fs::Permissions::from_mode(0o600))
        .expect("chmod");
    find(&dir, "tiny-pi");
    let sidecar = dir.join(SIDECAR);
    // Another connection of this process holds the write lock (a search in another
    // thread, mid-update).
    let holder = rusqlite::Connection::open(&sidecar).expect("open");
    holder.execute_batch("BEGIN IMMEDIATE").expect("lock");
    let probe = || {
        let out = std::process::Command::new(std::env::current_exe().expect("test binary"))
            .args(["--exact", "lock_probe", "--ignored", "--nocapture"])
            .env("SEARCH_LOCK_PROBE", &sidecar)
            .output()
            .expect("run the probe");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    assert!(
        probe().contains("probe: refused"),
        "the lock is held to begin with"
    );
    // A search that narrows the sidecar (made wider than the session) and only reads
    // it (the folder is unchanged, so no update waits for the lock).
    fs::set_permissions(&sidecar, fs::Permissions::from_mode(0o666)).expect("chmod");
    let result = find(&dir, "tiny-pi");
    assert_eq!(result.index, IndexUse::Sidecar);
    assert_eq!(mode(&sidecar), 0o600, "narrowed");
    // Another process still cannot write under the holder.
    assert!(
        probe().contains("probe: refused"),
        "the search dropped the lock"
    );
    holder.execute_batch("ROLLBACK").expect("unlock");
    assert!(probe().contains("probe: acquired"));
}

#[test]
fn a_searcher_in_the_sessions_group_gives_the_sidecar_and_its_journal_that_group() {
    use std::os::unix::fs::MetadataExt;
    let setpriv = std::process::Command::new("setpriv")
        .arg("--version")
        .output();
    if !is_root() || !setpriv.is_ok_and(|o| o.status.success()) {
        eprintln!("skipped: needs root and setpriv to run a search as a member of a group");
        return;
    }
    let dir = chapter_dir("search-group-member");
    let group = 4242;
    let session = dir.join("chapter.jsonl");
    std::os::unix::fs::chown(&session, Some(0), Some(group)).expect("chown");
    fs::set_permissions(&session, fs::Permissions::from_mode(0o640)).expect("chmod");
    // The folder is nobody's; nobody reads the session through the group, which is
    // not its own group but one it is a member of.
    std::os::unix::fs::chown(&*dir, Some(65534), Some(65534)).expect("chown");
    fs::set_permissions(&*dir, fs::Permissions::from_mode(0o755)).expect("chmod");
    let out = std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--groups=4242", "--"])
        .arg(env!("CARGO_BIN_EXE_session"))
        .args([
            "search".as_ref(),
            dir.as_os_str(),
            "tiny-pi".as_ref(),
            "--json".as_ref(),
        ])
        .output()
        .expect("run session");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(json["index"], "sidecar", "{json}");
    for name in [SIDECAR.to_owned(), format!("{SIDECAR}-journal")] {
        let meta = fs::symlink_metadata(dir.join(&name)).expect("made");
        assert_eq!(
            (meta.uid(), meta.gid(), meta.mode() & 0o777),
            (65534, group, 0o640),
            "{name}"
        );
    }
}

// Round 4 performance (issue 37): the word index answers exactly what a scan does.

/// A small deterministic generator (a linear congruential one) for the equivalence test.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Pieces the generated texts are made of: words in several scripts and cases, CJK runs,
/// punctuation inside words, characters whose case folding is not ASCII, and a word
/// longer than the index keeps whole.
const PIECES: &[&str] = &[
    "flamingo",
    "Flamingo",
    "FLAMINGO-config",
    "tiny-pi",
    "项目名是",
    "项目",
    "名字",
    "读取 README.md，告诉我",
    "README.md",
    "naïve",
    "NAÏVE",
    "straße",
    "STRASSE",
    "Σίσυφος",
    "σίσυφος",
    "İstanbul",
    "a",
    "ab",
    "x_y",
    "é",
    "É",
    "k8s",
    "0xDEADbeef",
    "--flag=value",
    "path/to/file.rs:42",
    "abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJ",
];
const GLUE: &[&str] = &[" ", " ", " ", "", "-", ".", "，", "\n", "_"];

fn generated_text(rng: &mut Lcg) -> String {
    let mut text = String::new();
    for _ in 0..1 + rng.below(12) {
        text.push_str(PIECES[rng.below(PIECES.len())]);
        text.push_str(GLUE[rng.below(GLUE.len())]);
    }
    text
}

/// What a plain scan of the texts finds for `query`: every whitespace-separated word
/// occurs, folded per character to its first lowercase character (ASCII case only for
/// a word under three characters). The rule of the contract, written out again here.
fn scan_matches(text: &str, query: &str) -> bool {
    let fold = |s: &str| -> String {
        s.chars()
            .map(|c| c.to_lowercase().next().unwrap_or(c))
            .collect()
    };
    query.split_whitespace().all(|word| {
        if word.chars().count() >= 3 {
            fold(text).contains(&fold(word))
        } else {
            text.to_ascii_lowercase()
                .contains(&word.to_ascii_lowercase())
        }
    })
}

/// Queries for the equivalence test: fixed ones, and pieces cut from the texts (one or
/// two words, of any length, across separators and inside CJK runs).
fn generated_queries(rng: &mut Lcg, texts: &[String]) -> Vec<String> {
    let mut queries: Vec<String> = [
        "flamingo",
        "FLAMINGO",
        "lamingo",
        "mingo-con",
        "项目名",
        "目名",
        "项",
        "名字 项目",
        "tiny-pi",
        "y-p",
        "readme.md",
        "E.MD",
        "naïve",
        "NAÏVE",
        "aïv",
        "straße",
        "STRASSE",
        "σίσυφος",
        "ΣΊΣΥΦ",
        "i̇stanbul",
        "é",
        "É",
        "a",
        "ab x_y",
        "_",
        "k8s",
        "0xdead",
        "=value",
        "to/file.rs:4",
        "mnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz0123",
        "zebra",
        "告诉我 readme",
        "...",
        "，",
    ]
    .iter()
    .map(|q| q.to_string())
    .collect();
    for _ in 0..150 {
        let chars: Vec<char> = texts[rng.below(texts.len())].chars().collect();
        let start = rng.below(chars.len());
        let len = 1 + rng.below(14);
        let piece: String = chars[start..(start + len).min(chars.len())]
            .iter()
            .collect();
        if piece.split_whitespace().next().is_some() {
            queries.push(piece);
        }
    }
    queries
}

fn check_equivalence(dir: &Path, files: &[(String, Vec<(String, String)>)], queries: &[String]) {
    for query in queries {
        let mut expected: Vec<(String, String)> = Vec::new();
        for (name, entries) in files {
            for (id, text) in entries {
                if scan_matches(text, query) {
                    expected.push((name.clone(), id.clone()));
                }
            }
        }
        assert!(
            expected.len() < 1000,
            "{query:?} matches too many to compare"
        );
        let result = search(
            dir,
            &SearchQuery {
                limit: 1000,
                ..SearchQuery::new(query)
            },
        )
        .expect("search");
        let mut found: Vec<(String, String)> = result
            .hits
            .iter()
            .map(|h| (h.path.clone(), h.entry_id.clone()))
            .collect();
        found.sort();
        expected.sort();
        assert_eq!(found, expected, "query {query:?}");
    }
}

#[test]
fn the_index_answers_every_query_exactly_as_a_scan_of_the_texts() {
    let dir = temp_dir("search-equivalence");
    let mut rng = Lcg(37);
    let mut files: Vec<(String, Vec<(String, String)>)> = Vec::new();
    let mut all_texts = Vec::new();
    for f in 0..6 {
        let name = format!("s{f}.jsonl");
        let mut lines = Vec::new();
        let mut entries = Vec::new();
        let mut parent: Option<String> = None;
        for e in 0..60 {
            let id = format!("e{f}-{e}");
            let text = generated_text(&mut rng);
            lines.push(user(&id, parent.as_deref(), &text));
            all_texts.push(text.clone());
            entries.push((id.clone(), text));
            parent = Some(id);
        }
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        write_file(&dir.join(&name), &jsonl(&refs));
        files.push((name, entries));
    }
    let queries = generated_queries(&mut rng, &all_texts);
    check_equivalence(&dir, &files, &queries);
    // Grown (read on from where the index stopped) and rewritten shorter (read again,
    // its old words deleted from the index): still the same answers.
    for (name, entries) in files.iter_mut().take(2) {
        let text = generated_text(&mut rng);
        let id = format!("{name}-grown");
        let parent = entries.last().map(|(id, _)| id.clone());
        append(
            &dir.join(name.as_str()),
            &user(&id, parent.as_deref(), &text),
        );
        entries.push((id, text));
    }
    let (name, entries) = &mut files[2];
    entries.truncate(10);
    let lines: Vec<String> = entries
        .iter()
        .enumerate()
        .map(|(i, (id, text))| user(id, i.checked_sub(1).map(|p| entries[p].0.as_str()), text))
        .collect();
    let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
    write_file(&dir.join(name.as_str()), &jsonl(&refs));
    check_equivalence(&dir, &files, &queries);
}

#[test]
fn bm25_counts_each_occurrence_so_a_longer_entry_that_says_it_more_ranks_first() {
    let dir = temp_dir("search-rank-tf");
    let lines = [
        user(
            "u-1",
            None,
            "nothing of the kind here, only ten plain words today",
        ),
        assistant(
            "a-long",
            "u-1",
            "parser parser parser parser parser parser, and ten more words after it all",
        ),
        assistant("a-short", "a-long", "the parser broke again today"),
    ];
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    write_file(&dir.join("s.jsonl"), &jsonl(&lines));
    let result = find(&dir, "parser");
    assert_eq!(ids(&result), ["a-long", "a-short"]);
    assert!(result.hits[0].score > result.hits[1].score);
}

#[test]
fn the_vocabulary_written_a_block_per_update_is_merged_and_every_word_still_found() {
    let dir = temp_dir("search-vocabulary-blocks");
    let path = dir.join("s.jsonl");
    write_file(&path, &jsonl(&[&user("u-0", None, "start")]));
    let word = |i: usize| format!("zq{i}word");
    let mut parent = "u-0".to_owned();
    for i in 0..70 {
        let id = format!("u-{}", i + 1);
        append(
            &path,
            &user(&id, Some(&parent), &format!("the {} here", word(i))),
        );
        assert_eq!(ids(&find(&dir, &word(i))), [id.as_str()]);
        parent = id;
    }
    let conn = rusqlite::Connection::open(dir.join(SIDECAR)).expect("open");
    let blocks: i64 = conn
        .query_row("SELECT count(*) FROM vocabulary", [], |r| r.get(0))
        .expect("blocks");
    assert!(blocks < 64, "{blocks} blocks");
    drop(conn);
    for i in [0, 33, 69] {
        assert_eq!(sorted_ids(&dir, &word(i)), [format!("u-{}", i + 1)]);
    }
    // A piece of every word, in another case: all 70 entries, each once.
    assert_eq!(sorted_ids(&dir, "word").len(), 20);
    assert_eq!(
        search(
            &dir,
            &SearchQuery {
                limit: 1000,
                ..SearchQuery::new("WORD")
            }
        )
        .expect("search")
        .hits
        .len(),
        70
    );
}

//! The session index `<file>.idx` (issue 15): a cache that open uses only when it matches
//! the file. Every test compares an open that may use an index with an open that may not
//! (`{"index":false}`): same entries, same state, same warnings, same error — for every
//! truncation offset, tail fill and write fault of a small fixture, and for damaged,
//! truncated, swapped and stale indexes.

use crate::common;

use std::path::Path;

use common::index::{assert_same, outcome, read_only_with_index};
use common::*;
use session::{JsonlOptions, Store, index_path};

/// A small session written by the library: messages of every role (an extension role
/// too), tool calls and a result, branches, a label and other metadata, and ids with
/// escapes (facts the index cannot hold as spans).
fn fixture(path: &Path) {
    let (store, _) = Store::open_jsonl(path).unwrap();
    let lines = [
        user("a", None, "hello"),
        r#"{"id":"b","parentId":"a","timestamp":2,"type":"message","message":{"role":"assistant","content":[{"type":"text","text":"hi"}]}}"#.to_owned(),
        user("c", Some("b"), "more \\n text"),
        r#"{"id":"\u0064","parentId":"b","timestamp":4,"type":"message","message":{"role":"user","content":"branch"}}"#.to_owned(),
        r#"{"id":"e","parentId":"c","timestamp":5,"type":"metadata","key":"session.label","value":{"targetId":"a","label":"start"}}"#.to_owned(),
        r#"{"id":"f","parentId":"\u0065","timestamp":6,"type":"message","message":{"role":"user","content":"after"}}"#.to_owned(),
        user("g", Some("d"), "end"),
    ];
    for line in &lines {
        store.append(line).unwrap();
    }
    // A second tree: tool calls and their result, metadata, an extension role.
    for line in CHAPTER {
        store.append(line).unwrap();
    }
    store
        .append(r#"{"id":"x-ext","parentId":"u-1","timestamp":7,"type":"message","message":{"role":"bashExecution","command":"ls","output":"a"}}"#)
        .unwrap();
}

#[test]
fn a_writer_leaves_an_index_and_open_answers_the_same_with_it() {
    let dir = temp_dir("index-written");
    let path = dir.join("s.jsonl");
    fixture(&path);
    let idx = index_path(&path);
    assert!(idx.exists(), "the writer wrote {}", idx.display());
    assert!(!idx.to_string_lossy().ends_with(".jsonl"));
    assert_same(&path, "clean");
    // The reader accepts what the writer wrote, every entry (not a silent fallback).
    let (file, idx_bytes) = (read_file(&path), read_file(&idx));
    assert_eq!(
        session::store::fuzz_index(&idx_bytes, &file, false),
        Some(14)
    );
    let answer = outcome(&path, true);
    assert!(answer.contains(r#""state":"ready""#), "{answer}");
    assert!(answer.contains(r#""label":"start""#), "{answer}");
    // A writer that opens with the index and appends keeps answering the same.
    let (store, _) = Store::open_jsonl(&path).unwrap();
    store.append(user("h", Some("g"), "one more")).unwrap();
    drop(store);
    assert_same(&path, "after a reopen and an append");
    assert!(outcome(&path, true).contains(r#""id":"h""#));
}

#[test]
fn every_truncation_under_a_full_index_opens_as_without_it() {
    let dir = temp_dir("index-truncation");
    let path = dir.join("s.jsonl");
    fixture(&path);
    let full = read_file(&path);
    let idx = read_file(&index_path(&path));
    for cut in 0..=full.len() {
        write_file(&path, &full[..cut]);
        write_file(&index_path(&path), &idx);
        assert_same(&path, &format!("file cut at {cut}"));
    }
}

#[test]
fn every_tail_after_the_covered_prefix_is_replayed_as_without_an_index() {
    let dir = temp_dir("index-tail");
    let path = dir.join("s.jsonl");
    fixture(&path);
    let full = read_file(&path);
    // An index that covers the first four lines only.
    let prefix_end = full
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b'\n')
        .nth(3)
        .unwrap()
        .0
        + 1;
    write_file(&path, &full[..prefix_end]);
    {
        // A writer that appends nothing still indexes what it found.
        let (_store, _) = Store::open_jsonl(&path).unwrap();
    }
    let prefix_idx = read_file(&index_path(&path));
    let rest = &full[prefix_end..];
    let mut tails: Vec<Vec<u8>> = (0..=rest.len()).map(|n| rest[..n].to_vec()).collect();
    tails.extend([
        b"\n\n  \r\n".to_vec(),
        vec![0u8; 100],
        b"{\"id\":\n".to_vec(),
        b"not json\n".to_vec(),
        format!("{}\n", user("a", None, "duplicate")).into_bytes(),
        format!("{}\n", user("z", Some("missing"), "orphan")).into_bytes(),
        format!("\n{}\n", user("z", Some("c"), "after a blank line")).into_bytes(),
        user("z", Some("c"), "torn").into_bytes(),
    ]);
    for tail in &tails {
        // The file must be the same inode as the one indexed: rewrite it in place.
        let mut bytes = full[..prefix_end].to_vec();
        bytes.extend_from_slice(tail);
        write_file(&path, &bytes);
        write_file(&index_path(&path), &prefix_idx);
        assert_same(&path, &format!("tail {:?}", String::from_utf8_lossy(tail)));
    }
}

#[test]
fn a_damaged_or_truncated_index_always_falls_back() {
    let dir = temp_dir("index-damaged");
    let path = dir.join("s.jsonl");
    fixture(&path);
    let idx = read_file(&index_path(&path));
    let expected = outcome(&path, false);
    // Every byte of the header page's fields, and a stride of the pages after it
    // (every page, at a different offset in each).
    let flips = (0..300).chain((300..idx.len()).step_by(37));
    for at in flips {
        let mut bad = idx.clone();
        bad[at] ^= 0x41;
        write_file(&index_path(&path), &bad);
        assert_eq!(outcome(&path, true), expected, "byte {at} flipped");
    }
    let cuts = (0..300).chain((300..idx.len()).step_by(41)).chain(
        (1..=idx.len() / 4096).flat_map(|page| [page * 4096 - 1, page * 4096, page * 4096 + 1]),
    );
    for len in cuts.filter(|&len| len < idx.len()) {
        write_file(&index_path(&path), &idx[..len]);
        assert_eq!(outcome(&path, true), expected, "index cut at {len}");
    }
    let mut longer = idx.clone();
    longer.extend_from_slice(&[0; 48]);
    write_file(&index_path(&path), &longer);
    assert_eq!(outcome(&path, true), expected, "index with extra bytes");
}

#[test]
fn a_swapped_stale_or_other_version_index_falls_back() {
    let dir = temp_dir("index-swapped");
    let path = dir.join("s.jsonl");
    fixture(&path);
    let own = read_file(&index_path(&path));
    // Another session's index.
    let other = dir.join("o.jsonl");
    {
        let (store, _) = Store::open_jsonl(&other).unwrap();
        store.append(user("x", None, "other")).unwrap();
    }
    write_file(&index_path(&path), &read_file(&index_path(&other)));
    assert_same(&path, "another file's index");
    // The same entries in another file (another inode): not used, same answers.
    write_file(&index_path(&path), &own);
    let copy = dir.join("copy.jsonl");
    std::fs::copy(&path, &copy).unwrap();
    std::fs::copy(index_path(&path), index_path(&copy)).unwrap();
    assert_same(&copy, "a copied file and index");
    // A stale index: the file rewritten in place with other bytes of the same size.
    let full = read_file(&path);
    let changed = String::from_utf8(full.clone())
        .unwrap()
        .replace("hello", "HELLO");
    write_file(&path, changed.as_bytes());
    write_file(&index_path(&path), &own);
    assert_same(&path, "same size, other bytes");
    assert!(outcome(&path, true).contains("HELLO"));
    // A newer format version.
    write_file(&path, &full);
    for version in [1, 3, 4] {
        let mut other = own.clone();
        other[8] = version;
        let seal = session::store::index_checksum(&other[..248]);
        other[248..256].copy_from_slice(&seal.to_le_bytes());
        write_file(&index_path(&path), &other);
        assert_same(&path, &format!("version {version}"));
    }
}

#[test]
fn a_write_fault_never_leaves_an_index_that_answers_differently() {
    for fault in [
        Fault::Errno(libc::ENOSPC),
        Fault::ShortThenEio,
        Fault::EioAfterFullWrite,
    ] {
        let dir = temp_dir("index-fault");
        let path = dir.join("s.jsonl");
        fixture(&path);
        let plan = FaultPlan::new();
        plan.fail_write(2, fault);
        let (store, _) = open_faulty(&path, &plan);
        store.append(user("h", Some("g"), "written")).unwrap();
        assert!(store.append(user("i", Some("h"), "faulty")).is_err());
        drop(store);
        assert_same(&path, &format!("{fault:?}"));
    }
}

#[test]
fn readers_and_index_false_never_write_an_index() {
    let dir = temp_dir("index-readers");
    let path = dir.join("s.jsonl");
    write_file(&path, format!("{}\n", user("a", None, "x")).as_bytes());
    let (_reader, _) = Store::open_jsonl_with(&path, &read_only_with_index(true)).unwrap();
    assert!(!index_path(&path).exists(), "a reader wrote the index");
    let off = JsonlOptions::from_json(r#"{"index":false}"#).unwrap();
    {
        let (store, _) = Store::open_jsonl_with(&path, &off).unwrap();
        store.append(user("b", Some("a"), "y")).unwrap();
    }
    assert!(!index_path(&path).exists(), "index:false wrote the index");
    {
        let (_store, _) = Store::open_jsonl(&path).unwrap();
    }
    assert!(
        index_path(&path).exists(),
        "a writer indexes what it opened"
    );
}

#[test]
fn a_file_that_is_not_exactly_its_entries_lines_gets_no_index() {
    let dir = temp_dir("index-impure");
    let path = dir.join("s.jsonl");
    let a = user("a", None, "x");
    write_file(&path, format!("{a}\n\n").as_bytes());
    {
        let (_store, _) = Store::open_jsonl(&path).unwrap();
    }
    assert!(!index_path(&path).exists(), "a blank line");
    write_file(&path, format!("{} \n", a).as_bytes());
    {
        let (_store, _) = Store::open_jsonl(&path).unwrap();
    }
    assert!(!index_path(&path).exists(), "whitespace in a line");
    assert_same(&path, "no index");
}

#[test]
fn repair_removes_the_index() {
    let dir = temp_dir("index-repair");
    let path = dir.join("s.jsonl");
    fixture(&path);
    let mut bytes = read_file(&path);
    bytes.extend_from_slice(b"{\"id\":\"torn");
    write_file(&path, &bytes);
    assert!(index_path(&path).exists());
    let report = session::repair_jsonl(&path).unwrap();
    assert_eq!(report.entries, 14);
    assert!(!index_path(&path).exists(), "repair left the index");
    assert_same(&path, "after repair");
}

#[test]
fn the_index_reader_fuzz_corpus_keeps_its_property() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    let mut seen = 0;
    for kind in ["corpus", "artifacts"] {
        let Ok(files) = std::fs::read_dir(dir.join(kind).join("index_reader")) else {
            continue;
        };
        for file in files {
            let data = std::fs::read(file.unwrap().path()).unwrap();
            let [flags, lo, hi, rest @ ..] = &data[..] else {
                continue;
            };
            let len = usize::from(u16::from_le_bytes([*lo, *hi])).min(rest.len());
            let (index, file) = rest.split_at(len);
            if let Some(entries) = session::store::fuzz_index(index, file, flags & 1 == 1) {
                assert!(entries <= file.len() / 3);
            }
            seen += 1;
        }
    }
    assert!(seen > 0, "the seed corpus is committed");
    // The seed is a real index and its file: it loads whole, sealed or resealed.
    let seed = std::fs::read(dir.join("corpus/index_reader/seed-fixture")).unwrap();
    let len = usize::from(u16::from_le_bytes([seed[1], seed[2]]));
    let (index, file) = seed[3..].split_at(len);
    assert_eq!(session::store::fuzz_index(index, file, false), Some(8));
    assert_eq!(session::store::fuzz_index(index, file, true), Some(8));
    // One byte of the file changed: the prefix checksum refuses it.
    let mut changed = file.to_vec();
    changed[10] ^= 1;
    assert_eq!(session::store::fuzz_index(index, &changed, false), None);
}

#[test]
fn a_strict_open_checks_every_line_whatever_the_index() {
    let dir = temp_dir("index-strict");
    let path = dir.join("s.jsonl");
    fixture(&path);
    assert!(index_path(&path).exists());
    let strict = |index: bool| {
        let options = JsonlOptions::from_json(&format!(
            r#"{{"readOnly":true,"strictRoles":true,"index":{index}}}"#
        ))
        .unwrap();
        match Store::open_jsonl_with(&path, &options) {
            Ok(_) => "opened".to_owned(),
            Err(e) => format!("{e:?}"),
        }
    };
    let without = strict(false);
    assert!(without.contains("CorruptLine"), "{without}");
    assert_eq!(strict(true), without);
}

/// A session of `n` entries of about a kilobyte each, in a chain with a branch every
/// tenth entry: big enough that the sampled regions miss most lines.
fn big_fixture(path: &Path, n: usize) -> Vec<String> {
    let (store, _) = Store::open_jsonl(path).unwrap();
    let mut ids = Vec::new();
    for i in 0..n {
        let id = format!("e{i:04}");
        let parent = match i {
            0 => None,
            i if i % 10 == 0 => Some(format!("e{:04}", i - 2)),
            i => Some(format!("e{:04}", i - 1)),
        };
        let text = format!("entry {i} ").repeat(100);
        store.append(user(&id, parent.as_deref(), &text)).unwrap();
        ids.push(id);
    }
    ids
}

/// Rewrites byte `at` of `path` in place and puts its modification time back, as
/// another program could; only the change time shows it.
fn rewrite_keeping_mtime(path: &Path, at: usize, byte: u8) {
    let modified = std::fs::metadata(path).unwrap().modified().unwrap();
    let mut bytes = read_file(path);
    bytes[at] = byte;
    let file = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    std::os::unix::fs::FileExt::write_all_at(&file, &bytes[at..=at], at as u64).unwrap();
    file.set_modified(modified).unwrap();
}

/// The byte offset of the line of entry `id` and the offset of `needle` in it.
fn offset_in_line(path: &Path, id: &str, needle: &str) -> usize {
    let text = String::from_utf8(read_file(path)).unwrap();
    let start = text.find(&format!(r#"{{"id":"{id}""#)).unwrap();
    start + text[start..].find(needle).unwrap()
}

#[test]
fn damage_the_index_cannot_see_is_corrupt_line_at_the_first_read_that_touches_it() {
    let dir = temp_dir("index-first-read");
    let path = dir.join("s.jsonl");
    let ids = big_fixture(&path, 200);
    // A store and a writer open through the index; then entry e0150's text gets a
    // control byte (invalid JSON, same size, same mtime) while they are open: what
    // their open checked cannot see it.
    let (store, report) = Store::open_jsonl_with(&path, &read_only_with_index(true)).unwrap();
    let (writer, _) = Store::open_jsonl(&path).unwrap();
    let at = offset_in_line(&path, "e0150", "entry 150 entry");
    rewrite_keeping_mtime(&path, at, 0x01);
    let expected_line = 151;

    // Without the index, and with {"verify":"full"}, the open fails naming the line.
    for options in [
        r#"{"readOnly":true,"index":false}"#,
        r#"{"readOnly":true,"verify":"full"}"#,
    ] {
        let options = JsonlOptions::from_json(options).unwrap();
        match Store::open_jsonl_with(&path, &options) {
            Err(session::Error::CorruptLine { line, .. }) => assert_eq!(line, expected_line),
            other => panic!("{options:?}: {:?}", other.map(|(_, r)| r)),
        }
    }

    // The open through the index succeeded; what does not touch the line answers.
    assert_eq!(report.state, session::State::Ready);
    assert_eq!(store.len().unwrap(), 200);
    assert_eq!(store.path_to("e0149").unwrap().len(), 136);
    assert_eq!(store.children("e0147").unwrap().len(), 1);
    // What reads it fails with corrupt_line and its line, every time, untainted.
    for _ in 0..2 {
        for result in [
            store.path_to("e0199").map(drop),
            store.path_to_json("e0150").map(drop),
            // e0148's children are e0149 and e0150.
            store.children("e0148").map(drop),
            store.read_json().map(drop),
            store.entries().map(drop),
        ] {
            match result {
                Err(session::Error::CorruptLine { line, fault }) => {
                    assert_eq!(line, expected_line);
                    assert_eq!(fault.reason(), "invalid_json");
                }
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(store.state(), session::State::Ready);
    }
    assert!(store.path_to(&ids[10]).is_ok());
    drop(store);

    // The writer still appends where the damage is not read.
    writer.append(user("w", Some("e0149"), "ok")).unwrap();
    assert!(matches!(
        writer.append(user("w2", Some("e0150"), "no")),
        Err(session::Error::CorruptLine { line: 151, .. })
    ));
    assert_eq!(writer.state(), session::State::Ready);
}

#[test]
fn a_line_changed_into_another_valid_entry_is_corrupt_line_too() {
    let dir = temp_dir("index-changed-valid");
    let path = dir.join("s.jsonl");
    big_fixture(&path, 100);
    // Changed while a store is open through the index.
    let (store, _) = Store::open_jsonl_with(&path, &read_only_with_index(true)).unwrap();
    let at = offset_in_line(&path, "e0070", "entry 70 entry");
    rewrite_keeping_mtime(&path, at, b'E');
    match store.path_to("e0071") {
        Err(session::Error::CorruptLine { line: 71, fault }) => {
            assert_eq!(fault.reason(), "invalid_entry");
            assert!(fault.to_string().contains("verify"), "{fault}");
        }
        other => panic!("{other:?}"),
    }
    // A later open sees the valid line as it is now: verify full, and the index too,
    // whose change time no longer matches.
    for options in [
        r#"{"readOnly":true,"verify":"full"}"#,
        r#"{"readOnly":true}"#,
    ] {
        let options = JsonlOptions::from_json(options).unwrap();
        let (store, _) = Store::open_jsonl_with(&path, &options).unwrap();
        let path70 = String::from_utf8(store.path_to_json("e0070").unwrap()).unwrap();
        assert!(path70.contains("Entry 70"), "{path70}");
    }
}

#[test]
fn a_change_the_checks_see_falls_back_to_the_file() {
    let dir = temp_dir("index-checks");
    let path = dir.join("s.jsonl");
    big_fixture(&path, 100);
    let expected = outcome(&path, false);
    assert_eq!(outcome(&path, true), expected);
    let original = read_file(&path);
    // In a sampled region (the first bytes), mtime kept; in the last line, mtime kept;
    // and anywhere with the mtime changed.
    let last_line = original.len() - 20;
    let middle = offset_in_line(&path, "e0050", "entry 50 entry");
    for (at, keep_mtime) in [(12, true), (last_line, true), (middle, false)] {
        write_file(&path, &original);
        let (store, _) = Store::open_jsonl(&path).unwrap();
        drop(store);
        if keep_mtime {
            rewrite_keeping_mtime(&path, at, 0x01);
        } else {
            let mut bytes = original.clone();
            bytes[at] = 0x01;
            std::thread::sleep(std::time::Duration::from_millis(20));
            let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
            std::os::unix::fs::FileExt::write_all_at(&file, &bytes[at..=at], at as u64).unwrap();
        }
        assert_same(
            &path,
            &format!("byte {at} changed, mtime kept {keep_mtime}"),
        );
        assert!(
            outcome(&path, true).starts_with("error: CorruptLine"),
            "byte {at}"
        );
    }
}

#[test]
fn a_damaged_index_page_found_by_a_query_falls_back_to_the_file() {
    let dir = temp_dir("index-page");
    let path = dir.join("s.jsonl");
    big_fixture(&path, 300);
    let expected = outcome(&path, false);
    let idx = read_file(&index_path(&path));
    // Page 1 holds the first 39 records: open does not read it (it reads the last
    // record, the page checksums and the roots and labels), the first query does.
    let mut bad = idx.clone();
    bad[4096 + 30] ^= 0x10;
    write_file(&index_path(&path), &bad);
    let (store, report) = Store::open_jsonl_with(&path, &read_only_with_index(true)).unwrap();
    assert_eq!(report.state, session::State::Ready);
    let via_index = String::from_utf8(store.path_to_json("e0299").unwrap()).unwrap();
    let (plain, _) = Store::open_jsonl_with(&path, &read_only_with_index(false)).unwrap();
    assert_eq!(
        via_index,
        String::from_utf8(plain.path_to_json("e0299").unwrap()).unwrap()
    );
    drop(store);
    assert_eq!(outcome(&path, true), expected);
    // A writer that falls back writes a good index again at close.
    {
        let (writer, _) = Store::open_jsonl(&path).unwrap();
        writer.path_to("e0001").unwrap();
    }
    assert_eq!(
        session::store::fuzz_index(&read_file(&index_path(&path)), &read_file(&path), false),
        Some(300)
    );
}

#[test]
fn the_verify_option_takes_index_or_full() {
    for good in [r#"{"verify":"index"}"#, r#"{"verify":"full"}"#] {
        JsonlOptions::from_json(good).unwrap();
    }
    for bad in [r#"{"verify":"all"}"#, r#"{"verify":true}"#] {
        assert!(matches!(
            JsonlOptions::from_json(bad),
            Err(session::Error::InvalidOption { .. })
        ));
    }
}

#[test]
fn a_damaged_index_found_while_replaying_the_tail_falls_back_at_open() {
    let dir = temp_dir("index-tail-fault");
    let path = dir.join("s.jsonl");
    big_fixture(&path, 100);
    // A tail the index does not cover, whose parents are covered entries.
    {
        let no_index = JsonlOptions::from_json(r#"{"index":false}"#).unwrap();
        let (writer, _) = Store::open_jsonl_with(&path, &no_index).unwrap();
        writer.append(user("t1", Some("e0005"), "tail")).unwrap();
        writer.append(user("t2", Some("t1"), "tail")).unwrap();
    }
    let expected = outcome(&path, false);
    assert_eq!(
        outcome(&path, true),
        expected,
        "intact index, replayed tail"
    );
    // Page 1 holds e0005's record: the tail's parent lookup reads it.
    let mut idx = read_file(&index_path(&path));
    idx[4096 + 5 * 104 + 3] ^= 0x20;
    write_file(&index_path(&path), &idx);
    assert_eq!(
        outcome(&path, true),
        expected,
        "damaged index, replayed tail"
    );
}

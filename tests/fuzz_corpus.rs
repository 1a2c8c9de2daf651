//! Corpus replay (docs/reliability.md T15): every file under `fuzz/corpus/<target>/`
//! and `fuzz/artifacts/<target>/` goes through the same property check as the fuzz
//! target of that name (tests/common/properties.rs), under plain `cargo test`. A crash
//! that libFuzzer saves in `fuzz/artifacts/` thus stays a regression test.
//!
//! The seed corpus is written from the test fixtures by
//! `SESSION_WRITE_FUZZ_SEEDS=1 cargo test --test suite_reliability
//! fuzz_corpus::write_seed_corpus`.

use crate::common;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::properties::{
    check_build_context, check_index_writer, check_parse_entry, check_path_to, check_recover,
};
use common::*;

/// A fuzz target's property check.
type Check = fn(&[u8]);

const TARGETS: [(&str, Check); 5] = [
    ("parse_entry", check_parse_entry),
    ("recover_jsonl", check_recover),
    ("path_to", check_path_to),
    ("build_context", check_build_context),
    ("index_writer", check_index_writer),
];

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz")
}

fn files_in(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.is_file())
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

#[test]
fn t15_every_corpus_and_artifact_file_keeps_its_properties() {
    let started = Instant::now();
    let mut replayed = Vec::new();
    let mut failures = Vec::new();
    let mut total_bytes = 0;
    for (target, check) in TARGETS {
        let mut count = 0;
        for kind in ["corpus", "artifacts"] {
            for file in files_in(&fuzz_dir().join(kind).join(target)) {
                let data = std::fs::read(&file).expect("read corpus file");
                total_bytes += data.len();
                count += 1;
                if catch_unwind(AssertUnwindSafe(|| check(&data))).is_err() {
                    failures.push(format!("{target}: {}", file.display()));
                }
            }
        }
        replayed.push(format!("{target} {count}"));
    }
    let elapsed = started.elapsed();
    println!(
        "T15: replayed {} ({total_bytes} bytes) in {elapsed:.2?}, failures {}",
        replayed.join(", "),
        failures.len()
    );
    assert!(failures.is_empty(), "{failures:#?}");
    assert!(
        total_bytes < 1 << 20,
        "keep the committed corpus under 1 MB"
    );
    assert!(elapsed < Duration::from_secs(30), "replay took {elapsed:?}");
}

/// The seed corpus, from the fixtures of the other tests.
fn seeds() -> Vec<(&'static str, String, Vec<u8>)> {
    let mut seeds: Vec<(&str, String, Vec<u8>)> = Vec::new();
    let mut add = |target: &'static str, name: &str, bytes: Vec<u8>| {
        seeds.push((target, format!("seed-{name}"), bytes));
    };
    let meta = |value: &str| {
        format!(
            r#"{{"id":"m","parentId":null,"timestamp":7,"type":"metadata","key":"k","value":{value}}}"#
        )
    };
    let small = generated_session(seed(0x7133), 20, false);

    // parse_entry: each fixture line and the encoding edge cases of T19.
    for (i, line) in CHAPTER.iter().chain([&FOREIGN]).enumerate() {
        add(
            "parse_entry",
            &format!("chapter-{i}"),
            line.as_bytes().to_vec(),
        );
    }
    for (i, line) in small.lines.iter().enumerate().step_by(3) {
        add(
            "parse_entry",
            &format!("generated-{i}"),
            small.bytes[line.start..line.newline].to_vec(),
        );
    }
    for (name, text) in [
        ("u2028", meta("\"a\u{2028}b\u{2029}c\"")),
        ("escaped-nul", meta(r#""a\u0000b""#)),
        ("lone-surrogate", meta(r#""\ud800""#)),
        ("surrogate-pair", meta(r#""\ud83e\udd80""#)),
        ("duplicate-key", U1.replacen(r#""timestamp":1"#, r#""timestamp":1,"timestamp":1"#, 1)),
        ("big-float", meta("1e400")),
        ("u64-max", meta("18446744073709551615")),
        ("u64-max-plus-1", meta("18446744073709551616")),
        ("underflow", meta("1e-400")),
        ("deep-127", meta(&format!("{}{}", "[".repeat(127), "]".repeat(127)))),
        ("deep-128", meta(&format!("{}{}", "[".repeat(128), "]".repeat(128)))),
        ("crlf", format!("{U1}\r")),
        ("bom", format!("\u{FEFF}{U1}")),
        ("two-values", format!("{U1} {U1}")),
        ("escaped-key", r#"{"i\u0064":"x","parentId":null,"timestamp":0,"type":"metadata","key":"k","value":0}"#.to_owned()),
    ] {
        add("parse_entry", name, text.into_bytes());
    }
    let mut bad_utf8 = meta("\"caf\u{e9}\"").into_bytes();
    let at = bad_utf8.len() - 3;
    bad_utf8[at] = 0xFF;
    add("parse_entry", "invalid-utf8", bad_utf8);

    // recover_jsonl: whole files (the first byte also picks the prefix split).
    let chapter = jsonl(&CHAPTER);
    add("recover_jsonl", "chapter", chapter.clone());
    add(
        "recover_jsonl",
        "chapter-torn",
        chapter[..chapter.len() - 40].to_vec(),
    );
    add(
        "recover_jsonl",
        "chapter-nul-tail",
        [chapter.clone(), vec![0; 64]].concat(),
    );
    add(
        "recover_jsonl",
        "crlf-blank-lines",
        format!("{U1}\r\n\r\n \t\n{A_READ}\r\n").into_bytes(),
    );
    add(
        "recover_jsonl",
        "corrupt-line-3",
        format!("{U1}\n\n{{\"id\":\n{A_ALT}\n").into_bytes(),
    );
    add(
        "recover_jsonl",
        "foreign-tail",
        [chapter.clone(), FOREIGN.as_bytes().to_vec()].concat(),
    );
    add("recover_jsonl", "generated-20", small.bytes.clone());
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/tiny-pi.jsonl");
    if let Ok(bytes) = std::fs::read(example) {
        add("recover_jsonl", "tiny-pi-example", bytes);
    }

    // path_to: JSON arrays (branches, a duplicate, a cycle, a broken branch) and the
    // three-bytes-per-entry encoding.
    add(
        "path_to",
        "chapter-array",
        format!("[{}]", CHAPTER.join(",")).into_bytes(),
    );
    add(
        "path_to",
        "duplicate",
        format!("[{U1},{A_ALT},{U1}]").into_bytes(),
    );
    let e = |id: &str, parent: &str| {
        format!(
            r#"{{"id":"{id}","parentId":{parent},"timestamp":0,"type":"metadata","key":"k","value":0}}"#
        )
    };
    add(
        "path_to",
        "cycle",
        format!("[{},{}]", e("a", r#""b""#), e("b", r#""a""#)).into_bytes(),
    );
    add(
        "path_to",
        "broken-branch",
        format!(
            "[{},{},{}]",
            e("a", "null"),
            e("b", r#""a""#),
            e("c", r#""gone""#)
        )
        .into_bytes(),
    );
    let mut rng = Rng::new(0x7115);
    for i in 0..4 {
        let mut bytes = rng.bytes(3 * (4 + i * 4));
        bytes[0] = b'a'; // not '[': the byte encoding
        add("path_to", &format!("encoded-{i}"), bytes);
    }

    // index_writer: a flag byte (bit 0 raw lines, bit 1 cut the last newline, bits 2-3
    // append in the first and second writer), then the lines.
    let label = r#"{"id":"l","parentId":"a-final","timestamp":8,"type":"metadata","key":"session.label","value":{"targetId":"u-1","label":"start"}}"#;
    let with_label = [CHAPTER.join("\n").as_bytes(), b"\n", label.as_bytes()].concat();
    for (name, flags) in [("chapter", 0), ("chapter-appends", 12), ("chapter-torn", 6)] {
        add(
            "index_writer",
            name,
            [&[flags][..], &with_label[..]].concat(),
        );
    }
    add(
        "index_writer",
        "chapter-raw-blank-line",
        [&[1u8][..], format!("{U1}\n\n{A_ALT} \n").as_bytes()].concat(),
    );
    add(
        "index_writer",
        "generated-20",
        [&[8u8][..], &small.bytes[..]].concat(),
    );
    seeds
}

#[test]
fn write_seed_corpus() {
    if std::env::var("SESSION_WRITE_FUZZ_SEEDS").is_err() {
        return;
    }
    for (target, name, bytes) in seeds() {
        let dir = fuzz_dir().join("corpus").join(target);
        std::fs::create_dir_all(&dir).expect("corpus dir");
        std::fs::write(dir.join(name), bytes).expect("write seed");
    }
}

//! recover_jsonl's line rules (docs/contract.md §3): newline commits, blank lines count, a bad
//! committed line fails with its physical line, a non-blank tail is a warning.

use crate::common;

use common::*;
use session::{Error, LineFault, Warning, recover_jsonl};

fn lines(items: &[&str]) -> String {
    items.iter().map(|l| format!("{l}\n")).collect()
}

fn corrupt_line(bytes: &[u8]) -> (u64, LineFault) {
    match recover_jsonl(bytes) {
        Err(Error::CorruptLine { line, fault }) => (line, fault),
        other => panic!("expected a corrupt line, got {other:?}"),
    }
}

#[test]
fn every_committed_line_is_recovered_in_file_order() {
    let r = recover_jsonl(lines(&CHAPTER).as_bytes()).unwrap();
    assert_eq!(
        ids(&r.entries),
        ["u-1", "a-read", "r-read", "a-final", "a-alt", "meta-cwd"]
    );
    assert!(r.warnings.is_empty());
}

#[test]
fn empty_input_commits_nothing() {
    let r = recover_jsonl(b"").unwrap();
    assert!(r.entries.is_empty() && r.warnings.is_empty());
}

#[test]
fn torn_tail_keeps_the_committed_prefix_and_warns_with_its_line() {
    let mut text = lines(&[U1, A_READ]);
    text.push_str(&R_READ[..40]);
    let r = recover_jsonl(text.as_bytes()).unwrap();
    assert_eq!(ids(&r.entries), ["u-1", "a-read"]);
    assert_eq!(r.warnings, [Warning::UnterminatedTail { line: 3 }]);
}

#[test]
fn valid_json_tail_without_newline_is_not_committed() {
    let text = format!("{}{}", lines(&[U1]), A_READ);
    let r = recover_jsonl(text.as_bytes()).unwrap();
    assert_eq!(ids(&r.entries), ["u-1"]);
    assert_eq!(r.warnings, [Warning::UnterminatedTail { line: 2 }]);
}

#[test]
fn whitespace_only_tail_is_ignored_without_warning() {
    for tail in [" ", "\t", "\r", "  \r\t "] {
        let text = format!("{}{tail}", lines(&[U1]));
        let r = recover_jsonl(text.as_bytes()).unwrap();
        assert_eq!(r.entries.len(), 1);
        assert!(r.warnings.is_empty(), "{tail:?}");
    }
}

#[test]
fn nul_bom_and_invalid_utf8_tails_are_not_blank() {
    for tail in [
        &b"\0"[..],
        b"\0\0\0\0",
        b"\xEF\xBB\xBF",
        b"\xFF",
        b"\xE4\xB8",
        b" \0 ",
    ] {
        let mut bytes = lines(&[U1]).into_bytes();
        bytes.extend_from_slice(tail);
        let r = recover_jsonl(&bytes).unwrap();
        assert_eq!(
            r.warnings,
            [Warning::UnterminatedTail { line: 2 }],
            "{tail:?}"
        );
    }
}

#[test]
fn committed_bad_line_fails_with_its_physical_line() {
    let text = format!(
        "{}{{\"id\":\"r-read\",\"parentId\":}}\n{}\n",
        lines(&[U1, A_READ]),
        A_FINAL
    );
    let (line, fault) = corrupt_line(text.as_bytes());
    assert_eq!(line, 3);
    assert!(matches!(fault, LineFault::Json(_)));
}

#[test]
fn committed_line_of_the_wrong_shape_is_corrupt_with_a_pointer() {
    // An empty role is never an extension role (docs/contract.md §6.1; round 1 rejected any
    // unknown role here).
    let bad = A_READ.replace(r#""role":"assistant""#, r#""role":"""#);
    let (line, fault) = corrupt_line(lines(&[U1, &bad]).as_bytes());
    assert_eq!(line, 2);
    assert_eq!(fault.pointer(), Some("/message/role"));
}

#[test]
fn blank_lines_are_skipped_but_counted() {
    let text = format!("\n{U1}\n  \n\r\n\t\n{{bad}}\n");
    let (line, _) = corrupt_line(text.as_bytes());
    assert_eq!(line, 6);
    let text = format!("\n\n{U1}\n\n{}", &A_READ[..10]);
    let r = recover_jsonl(text.as_bytes()).unwrap();
    assert_eq!(r.entries.len(), 1);
    assert_eq!(r.warnings, [Warning::UnterminatedTail { line: 5 }]);
}

#[test]
fn nul_or_bom_in_a_committed_line_is_corrupt() {
    let (line, _) = corrupt_line(format!("{U1}\n\0\0\0\n").as_bytes());
    assert_eq!(line, 2);
    let (line, _) = corrupt_line(format!("\u{FEFF}{U1}\n").as_bytes());
    assert_eq!(line, 1);
    let mut bytes = format!("{U1}\n").into_bytes();
    bytes.extend_from_slice(b"{\"id\":\"\xFF\"}\n");
    assert_eq!(corrupt_line(&bytes).0, 2);
}

#[test]
fn crlf_line_endings_are_accepted() {
    let text = format!("{U1}\r\n{A_READ}\r\n");
    let r = recover_jsonl(text.as_bytes()).unwrap();
    assert_eq!(ids(&r.entries), ["u-1", "a-read"]);
}

#[test]
fn u2028_and_escaped_newlines_stay_inside_their_line() {
    let entry = user("u", None, "a\\nb\u{2028}c\u{2029}d");
    let r = recover_jsonl(format!("{entry}\n").as_bytes()).unwrap();
    assert_eq!(r.entries[0].json(), entry);
}

#[test]
fn recover_does_not_check_tree_rules() {
    // Duplicate ids and missing parents are the store's and path_to's business.
    let a = user("a", Some("missing"), "x");
    let r = recover_jsonl(lines(&[&a, &a]).as_bytes()).unwrap();
    assert_eq!(r.entries.len(), 2);
}

#[test]
fn truncation_at_every_offset_of_the_chapter_file_is_classified_exactly() {
    let text = lines(&CHAPTER);
    let bytes = text.as_bytes();
    for cut in 0..=bytes.len() {
        let prefix = &bytes[..cut];
        let r = recover_jsonl(prefix).unwrap();
        let committed = prefix.iter().filter(|&&b| b == b'\n').count();
        assert_eq!(r.entries.len(), committed, "cut {cut}");
        let partial = cut > 0 && bytes[cut - 1] != b'\n';
        let expected: Vec<Warning> = if partial {
            vec![Warning::UnterminatedTail {
                line: committed as u64 + 1,
            }]
        } else {
            vec![]
        };
        assert_eq!(r.warnings, expected, "cut {cut}");
    }
}

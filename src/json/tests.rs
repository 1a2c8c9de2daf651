use super::*;

fn canon(input: &str) -> Result<String, JsonError> {
    let mut tape = Tape::default();
    scan(input.as_bytes(), MAX_DEPTH, &mut tape)?;
    Ok(String::from_utf8(tape.text).unwrap())
}

fn err(input: &[u8]) -> JsonError {
    let mut tape = Tape::default();
    scan(input, MAX_DEPTH, &mut tape).unwrap_err()
}

#[test]
fn canonical_form_drops_only_insignificant_whitespace() {
    assert_eq!(
        canon(" { \"a\" : [ 1 , 2.50 , \"x y\" ] ,\r\n\t\"b\":{}} ").unwrap(),
        r#"{"a":[1,2.50,"x y"],"b":{}}"#
    );
    assert_eq!(canon(r#""\u00e9\n""#).unwrap(), r#""\u00e9\n""#);
    assert_eq!(canon("[[],{},[{}]]").unwrap(), "[[],{},[{}]]");
}

#[test]
fn nodes_index_the_canonical_text() {
    let mut tape = Tape::default();
    scan(br#"{"k": [true, null], "n": -1}"#, MAX_DEPTH, &mut tape).unwrap();
    let kinds: Vec<Kind> = tape.nodes.iter().map(|n| n.kind).collect();
    use Kind::*;
    assert_eq!(kinds, [Object, String, Array, Bool, Null, String, Number]);
    assert_eq!(tape.nodes[0].next, 7);
    assert_eq!(tape.nodes[2].next, 5);
    assert_eq!(tape.raw(2), b"[true,null]");
    let members: Vec<(usize, usize)> = tape.members(0).collect();
    assert_eq!(members, [(1, 2), (5, 6)]);
    assert_eq!(tape.elements(2).collect::<Vec<_>>(), [3, 4]);
    assert_eq!(tape.get(0, "n"), Some(6));
    assert_eq!(tape.get(0, "missing"), None);
}

#[test]
fn duplicate_key_is_rejected_with_its_pointer() {
    let e = err(br#"{"a":{"x":1,"y":2,"x":3}}"#);
    assert_eq!(e.kind, JsonErrorKind::DuplicateKey("x".into()));
    assert_eq!(e.pointer, "/a/x");
}

#[test]
fn duplicate_key_written_with_an_escape_is_still_a_duplicate() {
    let e = err(br#"{"id":"a","\u0069d":"b"}"#);
    assert_eq!(e.kind, JsonErrorKind::DuplicateKey("id".into()));
}

#[test]
fn duplicate_key_in_a_large_object_is_found() {
    let mut s = String::from("{");
    for i in 0..100 {
        s.push_str(&format!("\"k{i}\":{i},"));
    }
    s.push_str("\"k42\":0}");
    assert_eq!(
        err(s.as_bytes()).kind,
        JsonErrorKind::DuplicateKey("k42".into())
    );
}

#[test]
fn same_key_in_sibling_objects_is_not_a_duplicate() {
    assert!(canon(r#"[{"a":1},{"a":2}]"#).is_ok());
    assert!(canon(r#"{"a":{"a":{"a":1}}}"#).is_ok());
}

#[test]
fn numbers_that_would_change_are_rejected() {
    for bad in [
        "1e400",
        "-1e400",
        "18446744073709551616",
        "-9223372036854775809",
        "1e-400",
    ] {
        let e = err(format!("[0,{bad}]").as_bytes());
        assert!(
            matches!(e.kind, JsonErrorKind::LossyNumber(_)),
            "{bad}: {e:?}"
        );
        assert_eq!(e.pointer, "/1", "{bad}");
    }
}

#[test]
fn numbers_that_survive_are_kept_verbatim() {
    for ok in [
        "0",
        "-0",
        "18446744073709551615",
        "-9223372036854775808",
        "1.0",
        "1e5",
        "0.1",
        "1E-5",
        "0e0",
        "-0.0e-400",
        "9007199254740993",
    ] {
        assert_eq!(canon(ok).unwrap(), ok);
    }
}

#[test]
fn malformed_numbers_are_syntax_errors() {
    for bad in ["01", "1.", ".5", "-", "1e", "+1", "0x10", "NaN", "Infinity"] {
        let e = err(bad.as_bytes());
        assert!(
            matches!(
                e.kind,
                JsonErrorKind::Syntax(_) | JsonErrorKind::TrailingData
            ),
            "{bad}: {e:?}"
        );
    }
}

#[test]
fn lone_surrogate_escapes_are_kept_as_written_and_pairs_too() {
    // docs/contract.md §6.1: a lone surrogate escape is accepted and kept as written.
    for lone in [
        r#""\ud800""#,
        r#""\udc00""#,
        r#""\ud800\u0041""#,
        r#""\ud800x""#,
        r#""\ud83d""#,
    ] {
        assert_eq!(canon(lone).unwrap(), lone);
    }
    assert_eq!(canon(r#""\ud83d\ude00""#).unwrap(), r#""\ud83d\ude00""#);
    assert_eq!(decode_string(br#""a\ud83db""#, true), "a\u{FFFD}b");
    assert_eq!(decode_string(br#""\ud800\u0041""#, true), "\u{FFFD}A");
    assert_eq!(decode_string(br#""\ud83d\ude00""#, true), "\u{1F600}");
}

#[test]
fn escaped_nul_is_valid_and_kept() {
    assert_eq!(canon(r#""a\u0000b""#).unwrap(), r#""a\u0000b""#);
}

#[test]
fn invalid_utf8_and_raw_controls_are_rejected() {
    assert_eq!(err(b"{\"a\":\"\xff\"}").kind, JsonErrorKind::InvalidUtf8);
    assert_eq!(
        err(b"{\"a\":\"\xe4\xb8\"}").kind,
        JsonErrorKind::InvalidUtf8
    );
    assert_eq!(
        err(b"{\"a\":\"x\ny\"}").kind,
        JsonErrorKind::ControlCharacter
    );
    assert_eq!(err(b"\"\x00\"").kind, JsonErrorKind::ControlCharacter);
    assert_eq!(
        err(b"{\"a\":\"\xed\xa0\x80\"}").kind,
        JsonErrorKind::InvalidUtf8
    );
}

#[test]
fn trailing_data_and_second_values_are_rejected() {
    for bad in ["{} {}", "{}x", "1 2", "[] ]", "{}\u{0}"] {
        assert_eq!(
            err(bad.as_bytes()).kind,
            JsonErrorKind::TrailingData,
            "{bad:?}"
        );
    }
    assert_eq!(err(b"").kind, JsonErrorKind::Empty);
    assert_eq!(err(b" \r\n").kind, JsonErrorKind::Empty);
}

#[test]
fn depth_limit_is_exact_and_deep_input_does_not_overflow_the_stack() {
    let ok = "[".repeat(MAX_DEPTH) + &"]".repeat(MAX_DEPTH);
    assert!(canon(&ok).is_ok());
    let deep = "[".repeat(MAX_DEPTH + 1) + &"]".repeat(MAX_DEPTH + 1);
    assert_eq!(err(deep.as_bytes()).kind, JsonErrorKind::TooDeep(MAX_DEPTH));
    let huge = "[".repeat(1_000_000);
    assert_eq!(err(huge.as_bytes()).kind, JsonErrorKind::TooDeep(MAX_DEPTH));
    let objects = "{\"a\":".repeat(1_000_000);
    assert_eq!(
        err(objects.as_bytes()).kind,
        JsonErrorKind::TooDeep(MAX_DEPTH)
    );
}

#[test]
fn syntax_errors_point_at_the_member_being_read() {
    let e = err(br#"{"message":{"content":[{"id": }]}}"#);
    assert_eq!(e.pointer, "/message/content/0/id");
    let e = err(br#"{"a":[1,2,}"#);
    assert_eq!(e.pointer, "/a/2");
    let e = err(br#"{"a":1,}"#);
    assert!(matches!(e.kind, JsonErrorKind::Syntax(_)));
}

#[test]
fn pointer_segments_escape_tilde_and_slash() {
    let e = err(br#"{"a/b~c":[1e999]}"#);
    assert_eq!(e.pointer, "/a~1b~0c/0");
}

#[test]
fn truncated_input_is_unexpected_end() {
    for bad in [r#"{"a""#, r#"{"a":"#, r#"{"a":"x"#, "[1,", r#""\"#, "{"] {
        let e = err(bad.as_bytes());
        assert!(
            matches!(
                e.kind,
                JsonErrorKind::UnexpectedEnd | JsonErrorKind::Syntax(_)
            ),
            "{bad}: {e:?}"
        );
    }
}

#[test]
fn decode_string_handles_every_escape() {
    let token = br#""a\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00z""#;
    assert_eq!(
        decode_string(token, true),
        "a\"\\/\u{8}\u{c}\n\r\t\u{e9}\u{1F600}z"
    );
    assert_eq!(decode_string(b"\"plain\"", false), "plain");
}

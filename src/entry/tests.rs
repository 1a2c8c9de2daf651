//! The rules of the entry boundary, one test each.

use super::*;
use crate::error::EntryError;

const A_READ: &str = r#"{"id":"a-read","parentId":"u-1","timestamp":2,"type":"message","message":{"role":"assistant","content":[{"type":"toolCall","id":"call-1","name":"read","arguments":{"path":"README.md"}}],"api":"x","usage":{"input":10}}}"#;

fn invalid_entry(text: &str) -> EntryError {
    match parse_entry(text) {
        Err(Error::InvalidEntry(e)) => e,
        other => panic!("expected InvalidEntry for {text}, got {other:?}"),
    }
}

fn invalid_json(text: &[u8]) -> json::JsonError {
    match parse_entry(text) {
        Err(Error::InvalidJson(e)) => e,
        other => panic!("expected InvalidJson, got {other:?}"),
    }
}

/// Replaces `from` with `to` in the a-read fixture.
fn a_read_with(from: &str, to: &str) -> String {
    assert!(A_READ.contains(from), "{from}");
    A_READ.replacen(from, to, 1)
}

#[test]
fn parse_entry_keeps_a_tool_call_intact() {
    let e = parse_entry(A_READ).unwrap();
    assert_eq!(e.id(), "a-read");
    assert_eq!(e.parent_id(), Some("u-1"));
    assert_eq!(e.timestamp(), 2.0);
    assert_eq!(e.kind(), EntryKind::Message(Role::Assistant));
    assert_eq!(e.json(), A_READ);
    let m = e.message_json().unwrap();
    assert!(m.starts_with(r#"{"role":"assistant","content":[{"type":"toolCall","id":"call-1""#));
    assert!(m.ends_with(r#""usage":{"input":10}}"#));
}

#[test]
fn parse_entry_normalises_whitespace_only() {
    let spaced = "{ \"id\" : \"m\", \"parentId\":null ,\"timestamp\":1.50,\n\"type\":\"metadata\",\"key\":\"cwd\",\"value\":{ \"z\":1,\"a\":[ ] },\"extra\":\"kept\"}";
    let e = parse_entry(spaced).unwrap();
    assert_eq!(
        e.json(),
        r#"{"id":"m","parentId":null,"timestamp":1.50,"type":"metadata","key":"cwd","value":{"z":1,"a":[]},"extra":"kept"}"#
    );
    assert_eq!(e.metadata(), Some(("cwd", r#"{"z":1,"a":[]}"#)));
    assert_eq!(e.kind(), EntryKind::Metadata);
    assert!(e.message_json().is_none());
}

#[test]
fn user_string_content_stays_a_string() {
    let e = parse_entry(r#"{"id":"u","parentId":null,"timestamp":0,"type":"message","message":{"role":"user","content":"hi"}}"#).unwrap();
    assert_eq!(e.message_json(), Some(r#"{"role":"user","content":"hi"}"#));
}

#[test]
fn tool_result_keeps_every_field() {
    let text = r##"{"id":"r","parentId":"a","timestamp":3,"type":"message","message":{"role":"toolResult","toolCallId":"call-1","toolName":"read","content":[{"type":"text","text":"# tiny-pi"},{"type":"image","data":"AA==","mimeType":"image/png"}],"isError":false,"details":{"bytes":[1,2.5,null]}}}"##;
    let e = parse_entry(text).unwrap();
    assert_eq!(e.kind(), EntryKind::Message(Role::ToolResult));
    assert!(
        e.message_json()
            .unwrap()
            .contains(r#""details":{"bytes":[1,2.5,null]}"#)
    );
}

#[test]
fn id_written_with_escapes_is_decoded() {
    let e = parse_entry(
        r#"{"id":"u\u002d1","parentId":null,"timestamp":0,"type":"metadata","key":"k","value":0}"#,
    )
    .unwrap();
    assert_eq!(e.id(), "u-1");
    assert!(e.json().contains(r#""u\u002d1""#));
}

#[test]
fn rejects_non_object_entry() {
    assert_eq!(invalid_entry("[]").pointer, "");
    assert_eq!(invalid_entry("\"x\"").pointer, "");
}

#[test]
fn rejects_missing_or_empty_id() {
    assert_eq!(
        invalid_entry(&a_read_with(r#""id":"a-read","#, "")).pointer,
        "/id"
    );
    assert_eq!(
        invalid_entry(&a_read_with(r#""a-read""#, r#""""#)).pointer,
        "/id"
    );
    assert_eq!(
        invalid_entry(&a_read_with(r#""a-read""#, "7")).pointer,
        "/id"
    );
}

#[test]
fn rejects_bad_parent_id() {
    assert_eq!(
        invalid_entry(&a_read_with(r#""parentId":"u-1","#, "")).pointer,
        "/parentId"
    );
    assert_eq!(
        invalid_entry(&a_read_with(r#""u-1""#, r#""""#)).pointer,
        "/parentId"
    );
    assert_eq!(
        invalid_entry(&a_read_with(r#""u-1""#, "false")).pointer,
        "/parentId"
    );
}

#[test]
fn rejects_non_number_timestamp() {
    assert_eq!(
        invalid_entry(&a_read_with(r#""timestamp":2"#, r#""timestamp":"2""#)).pointer,
        "/timestamp"
    );
    assert_eq!(
        invalid_entry(&a_read_with(r#""timestamp":2,"#, "")).pointer,
        "/timestamp"
    );
}

#[test]
fn rejects_unknown_entry_type() {
    let e = invalid_entry(&a_read_with(r#""type":"message""#, r#""type":"bogus""#));
    assert_eq!(e.pointer, "/type");
}

/// Roles and block types are open (docs/contract.md §6.1): an unknown one is kept. The
/// `strictRoles` option closes the set.
#[test]
fn extension_role_and_block_are_kept_unless_strict() {
    let role = a_read_with(r#""role":"assistant""#, r#""role":"system""#);
    let e = parse_entry(&role).unwrap();
    assert_eq!(e.kind(), EntryKind::Message(Role::Extension));
    assert_eq!(e.json(), role);
    let block = a_read_with(r#""type":"toolCall""#, r#""type":"audio""#);
    assert_eq!(parse_entry(&block).unwrap().json(), block);
    let strict = ParseOptions { strict_roles: true };
    let fail = |text: &str| match parse_entry_with(text, strict) {
        Err(Error::InvalidEntry(e)) => e.pointer,
        other => panic!("expected InvalidEntry, got {other:?}"),
    };
    assert_eq!(fail(&role), "/message/role");
    assert_eq!(fail(&block), "/message/content/0/type");
    // An empty role or block type is never an extension.
    assert_eq!(
        invalid_entry(&a_read_with(r#""role":"assistant""#, r#""role":"""#)).pointer,
        "/message/role"
    );
    assert_eq!(
        invalid_entry(&a_read_with(r#""type":"toolCall""#, r#""type":"""#)).pointer,
        "/message/content/0/type"
    );
}

#[test]
fn rejects_block_type_not_allowed_for_the_role() {
    let text = r#"{"id":"u","parentId":null,"timestamp":0,"type":"message","message":{"role":"user","content":[{"type":"text","text":"a"},{"type":"thinking","thinking":"b"}]}}"#;
    let e = invalid_entry(text);
    assert_eq!(e.pointer, "/message/content/1/type");
    assert!(
        e.message.contains("not allowed in user content"),
        "{}",
        e.message
    );
}

#[test]
fn rejects_incomplete_tool_call() {
    assert_eq!(
        invalid_entry(&a_read_with(r#""call-1""#, r#""""#)).pointer,
        "/message/content/0/id"
    );
    assert_eq!(
        invalid_entry(&a_read_with(r#""name":"read","#, "")).pointer,
        "/message/content/0/name"
    );
    assert_eq!(
        invalid_entry(&a_read_with(r#"{"path":"README.md"}"#, r#""{\"path\":1}""#)).pointer,
        "/message/content/0/arguments"
    );
}

#[test]
fn rejects_incomplete_tool_result() {
    let base = r#"{"id":"r","parentId":"a","timestamp":3,"type":"message","message":{"role":"toolResult","toolCallId":"c","toolName":"read","content":[],"isError":false}}"#;
    assert!(parse_entry(base).is_ok());
    for (from, to, pointer) in [
        (r#""toolCallId":"c","#, "", "/message/toolCallId"),
        (r#""c""#, r#""""#, "/message/toolCallId"),
        (
            r#""toolName":"read""#,
            r#""toolName":1"#,
            "/message/toolName",
        ),
        (
            r#""isError":false"#,
            r#""isError":"no""#,
            "/message/isError",
        ),
        (r#""content":[]"#, r#""content":"x""#, "/message/content"),
        (
            r#""content":[]"#,
            r#""content":[{"type":"toolCall","id":"x","name":"y","arguments":{}}]"#,
            "/message/content/0/type",
        ),
    ] {
        let e = invalid_entry(&base.replacen(from, to, 1));
        assert_eq!(e.pointer, pointer, "{from} -> {to}");
    }
}

#[test]
fn rejects_assistant_string_content() {
    let e = invalid_entry(&a_read_with(
        r#""content":[{"type":"toolCall","id":"call-1","name":"read","arguments":{"path":"README.md"}}]"#,
        r#""content":"text""#,
    ));
    assert_eq!(e.pointer, "/message/content");
}

#[test]
fn rejects_metadata_without_key_or_value() {
    let base =
        r#"{"id":"m","parentId":null,"timestamp":0,"type":"metadata","key":"cwd","value":"/w"}"#;
    assert!(parse_entry(base).is_ok());
    assert_eq!(
        invalid_entry(&base.replace(r#""key":"cwd","#, "")).pointer,
        "/key"
    );
    assert_eq!(
        invalid_entry(&base.replace(r#""cwd""#, r#""""#)).pointer,
        "/key"
    );
    assert_eq!(
        invalid_entry(&base.replace(r#","value":"/w""#, "")).pointer,
        "/value"
    );
}

#[test]
fn metadata_value_may_be_any_json_including_null() {
    for v in ["null", "0", "\"s\"", "[1,[2]]", "{\"a\":{}}", "true"] {
        let text = format!(
            r#"{{"id":"m","parentId":null,"timestamp":0,"type":"metadata","key":"k","value":{v}}}"#
        );
        assert_eq!(parse_entry(&text).unwrap().metadata().unwrap().1, v);
    }
}

#[test]
fn json_hygiene_classes_are_invalid_json_with_pointers() {
    assert_eq!(
        invalid_json(a_read_with(r#""api":"x""#, r#""api":"x","api":"y""#).as_bytes()).pointer,
        "/message/api"
    );
    assert_eq!(
        invalid_json(a_read_with(r#""input":10"#, r#""input":1e400"#).as_bytes()).pointer,
        "/message/usage/input"
    );
    assert_eq!(
        invalid_json(
            a_read_with(r#""input":10"#, r#""input":123456789012345678901234"#).as_bytes()
        )
        .pointer,
        "/message/usage/input"
    );
    // docs/contract.md §6.1: a lone surrogate escape is kept as written.
    let lone = a_read_with("README.md", r"\ud800");
    assert_eq!(parse_entry(&lone).unwrap().json(), lone);
    let mut bad_utf8 = A_READ.as_bytes().to_vec();
    let at = A_READ.find("README").unwrap();
    bad_utf8[at] = 0xFF;
    assert_eq!(
        invalid_json(&bad_utf8).pointer,
        "/message/content/0/arguments/path"
    );
    invalid_json(format!("{A_READ} {A_READ}").as_bytes());
    invalid_json(format!("{A_READ}x").as_bytes());
    let deep = format!(
        r#"{{"id":"m","parentId":null,"timestamp":0,"type":"metadata","key":"k","value":{}{}}}"#,
        "[".repeat(200),
        "]".repeat(200)
    );
    assert!(matches!(
        invalid_json(deep.as_bytes()).kind,
        json::JsonErrorKind::TooDeep(_)
    ));
}

#[test]
fn parse_entries_prefixes_pointers_with_the_index() {
    let list = format!("[{A_READ},{}]", a_read_with(r#""call-1""#, r#""""#));
    match parse_entries(&list) {
        Err(Error::InvalidEntry(e)) => assert_eq!(e.pointer, "/1/message/content/0/id"),
        other => panic!("{other:?}"),
    }
    match parse_entries(format!(
        "[{A_READ},{}]",
        a_read_with(r#""input":10"#, r#""input":1e999"#)
    )) {
        Err(Error::InvalidJson(e)) => assert_eq!(e.pointer, "/1/message/usage/input"),
        other => panic!("{other:?}"),
    }
    assert!(matches!(parse_entries("{}"), Err(Error::InvalidEntry(_))));
    assert_eq!(
        parse_entries(format!("[{A_READ}]")).unwrap()[0].json(),
        A_READ
    );
}

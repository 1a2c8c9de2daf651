//! Redaction changes only the secrets' bytes; what is never redacted; user rules and
//! allowed values.

use super::random::{ALNUM, URLSAFE, random};
use super::*;

#[test]
fn redaction_changes_only_the_secret_bytes() {
    let redactor = Redactor::standard().unwrap();
    let key = format!("ghp_{}", random(ALNUM, 36, 60));
    let line = format!(
        "{{\"type\":\"message\",\"id\":\"e2\",\"parentId\":\"e1\",\"message\":{{\"role\":\"user\",\"content\":\"use {key} please \\u00e9\"}},\"n\":1.50}}"
    );
    let out = redactor.redact_json_strings(&line);
    assert_eq!(
        out,
        line.replace(&key, "[REDACTED:github-token]"),
        "only the key changes"
    );
}

#[test]
fn a_secret_spelled_with_escapes_is_found_and_its_escapes_redacted_whole() {
    let redactor = Redactor::standard().unwrap();
    let tail = random(URLSAFE, 93, 61);
    // `-` written as \u002d and `/` as \/ in the middle of secrets.
    let line = format!(
        "{{\"id\":\"e3\",\"text\":\"before sk\\u002dant\\u002dapi03\\u002d{tail} and https:\\/\\/discord.com\\/api\\/webhooks\\/123456\\/{} after \\\"q\\\"\"}}",
        random(URLSAFE, 40, 62)
    );
    let findings = redactor.find_in_json(line.as_bytes());
    let rules: Vec<&str> = findings.iter().map(|f| f.rule.as_str()).collect();
    assert_eq!(rules, ["anthropic-api-key", "discord-webhook"]);
    let out = redactor.redact_json_strings(&line);
    assert_eq!(
        out,
        "{\"id\":\"e3\",\"text\":\"before [REDACTED:anthropic-api-key] and [REDACTED:discord-webhook] after \\\"q\\\"\"}"
    );
}

#[test]
fn a_line_with_whitespace_between_tokens_is_redacted_in_place() {
    let redactor = Redactor::standard().unwrap();
    let key = format!("sk_live_{}", random(ALNUM, 24, 63));
    let line = format!("  {{ \"id\" : \"e4\" ,\n \"a\" : [ 1 , \"x {key} y\" ] }} ");
    let out = redactor.redact_json_strings(&line);
    assert_eq!(out, line.replace(&key, "[REDACTED:stripe-key]"));
    let findings = redactor.find_in_json(line.as_bytes());
    assert_eq!(findings[0].pointer.as_deref(), Some("/a/1"));
    assert_eq!(findings[0].entry_id.as_deref(), Some("e4"));
}

#[test]
fn ids_and_keys_are_never_redacted() {
    let redactor = Redactor::standard().unwrap();
    let key = format!("ghp_{}", random(ALNUM, 36, 64));
    let line =
        format!("{{\"id\":\"{key}\",\"parentId\":\"{key}\",\"toolCallId\":\"{key}\",\"{key}\":1}}");
    assert!(redactor.find_in_json(line.as_bytes()).is_empty());
    assert_eq!(redactor.redact_json_strings(&line), line);
}

#[test]
fn the_agents_own_id_members_are_never_redacted() {
    // The ids an export writes into Claude Code and Codex lines: a user's rule that
    // matches them leaves them alone, and redacts the same text elsewhere.
    let options = SecretsOptions {
        extra_rules: vec![RuleSpec {
            name: "hex".into(),
            pattern: "[0-9a-f]{8}".into(),
        }],
        ..SecretsOptions::default()
    };
    let redactor = Redactor::new(&options).unwrap();
    let id = "0a1b2c3d-0000-4000-8000-0123456789ab";
    let line = format!(
        "{{\"uuid\":\"{id}\",\"parentUuid\":\"{id}\",\"leafUuid\":\"{id}\",\"sessionId\":\"{id}\",\"message\":{{\"content\":[{{\"type\":\"tool_result\",\"tool_use_id\":\"{id}\"}}]}},\"payload\":{{\"call_id\":\"{id}\"}},\"text\":\"{id}\"}}"
    );
    let out = redactor.redact_json_strings(&line);
    let expected = line.replace(
        &format!("\"text\":\"{id}\""),
        "\"text\":\"[REDACTED:hex]-0000-4000-8000-[REDACTED:hex]89ab\"",
    );
    assert_eq!(out, expected);
}

#[test]
fn a_json_text_held_in_a_string_is_judged_as_json() {
    // Codex keeps a tool call's arguments as JSON text in a string: a member named for
    // a secret inside it is judged by its value, and a rule that spells quotes finds
    // its secret, though every quote there is escaped once more.
    let redactor = Redactor::standard().unwrap();
    let password = random(ALNUM, 24, 70);
    let key_id = random(HEX, 40, 71);
    let inner = format!(
        "{{\"cmd\":\"deploy\",\"password\":\"{password}\",\"note\":\"\\\"private_key_id\\\": \\\"{key_id}\\\"\"}}"
    );
    let mut line = String::from("{\"id\":\"e6\",\"type\":\"function_call\",\"arguments\":");
    crate::json::push_string(&mut line, &inner);
    line.push('}');
    let findings = redactor.find_in_json(line.as_bytes());
    let found: Vec<(&str, Option<&str>)> = findings
        .iter()
        .map(|f| (f.rule.as_str(), f.pointer.as_deref()))
        .collect();
    assert_eq!(
        found,
        [
            (ASSIGNMENT_RULE, Some("/arguments")),
            ("gcp-service-account-key-id", Some("/arguments"))
        ]
    );
    let out = redactor.redact_json_strings(&line);
    let value: serde_json::Value = serde_json::from_str(&out).unwrap();
    let arguments: serde_json::Value =
        serde_json::from_str(value["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(arguments["cmd"], "deploy");
    assert_eq!(arguments["password"], "[REDACTED:secret-assignment]");
    assert_eq!(
        arguments["note"],
        "\"private_key_id\": \"[REDACTED:gcp-service-account-key-id]\""
    );
    // Nothing else of the line changed.
    assert_eq!(
        out,
        line.replace(&password, "[REDACTED:secret-assignment]")
            .replace(&key_id, "[REDACTED:gcp-service-account-key-id]")
    );
}

#[test]
fn a_line_that_is_not_json_is_checked_as_text() {
    let redactor = Redactor::standard().unwrap();
    let key = format!("glpat-{}", random(URLSAFE, 20, 65));
    let line = format!("{{\"id\":\"e5\",\"text\":\"{key}");
    let findings = redactor.find_in_json(line.as_bytes());
    assert_eq!(findings.len(), 1);
    assert_eq!(
        (findings[0].entry_id.clone(), findings[0].pointer.clone()),
        (None, None)
    );
    assert_eq!(
        redactor.redact_json_strings(&line),
        "{\"id\":\"e5\",\"text\":\"[REDACTED:gitlab-token]"
    );
}

#[test]
fn allowed_values_are_neither_reported_nor_redacted() {
    let key = format!("ghp_{}", random(ALNUM, 36, 66));
    let other = format!("ghp_{}", random(ALNUM, 36, 67));
    let options = SecretsOptions {
        allow: vec![key.clone()],
        ..SecretsOptions::default()
    };
    let redactor = Redactor::new(&options).unwrap();
    let line = format!("{{\"text\":\"{key} {other}\"}}");
    let findings = redactor.find_in_json(line.as_bytes());
    assert_eq!(findings.len(), 1);
    assert_eq!(findings[0].fingerprint, fingerprint(other.as_bytes()));
}

#[test]
fn user_rules_add_to_or_replace_the_defaults_and_may_name_the_secret_part() {
    let options = SecretsOptions::from_json(
        r#"{"extraRules":[{"name":"internal","pattern":"corp_(?P<secret>[0-9a-f]{16})"}]}"#,
    )
    .unwrap();
    let redactor = Redactor::new(&options).unwrap();
    let line = r#"{"text":"x corp_0123456789abcdef y"}"#;
    assert_eq!(
        redactor.redact_json_strings(line),
        r#"{"text":"x corp_[REDACTED:internal] y"}"#
    );
    assert_eq!(redactor.rule_names().count(), DEFAULT_RULES.len() + 1);
    let only = SecretsOptions::from_json(r#"{"rules":[{"name":"a","pattern":"zz+"}]}"#).unwrap();
    let redactor = Redactor::new(&only).unwrap();
    assert_eq!(redactor.rule_names().collect::<Vec<_>>(), ["a"]);
    let github = format!("{{\"t\":\"ghp_{} zzz\"}}", random(ALNUM, 36, 68));
    let rules: Vec<String> = redactor
        .find_in_json(github.as_bytes())
        .into_iter()
        .map(|f| f.rule)
        .collect();
    assert_eq!(rules, ["a"]);
}

#[test]
fn an_invalid_rule_is_refused_by_name_without_quoting_its_pattern() {
    let options =
        SecretsOptions::from_json(r#"{"extraRules":[{"name":"mine","pattern":"(hunter2"}]}"#)
            .unwrap();
    match Redactor::new(&options) {
        Err(Error::InvalidOption { message }) => {
            assert!(message.contains("\"mine\""), "{message}");
            assert!(!message.contains("hunter2"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    for bad in [
        r#"{"rules":"all"}"#,
        r#"{"extraRules":[{"name":"a b","pattern":"x"}]}"#,
        r#"{"extraRules":[{"name":"jwt","pattern":"x"}]}"#,
        r#"{"extraRules":[{"name":"a","pattern":"x","flags":"i"}]}"#,
    ] {
        let refused = SecretsOptions::from_json(bad).and_then(|o| Redactor::new(&o));
        assert!(
            matches!(refused, Err(Error::InvalidOption { .. })),
            "{bad}: {refused:?}"
        );
    }
}

#[test]
fn the_fingerprint_is_twelve_hex_digits_of_sha256() {
    // SHA-256("abc") = ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad
    assert_eq!(fingerprint(b"abc"), "ba7816bf8f01");
}

#[test]
fn redact_text_replaces_secrets_in_a_decoded_string() {
    let redactor = Redactor::standard().unwrap();
    let key = format!("hf_{}", random(ALNUM, 34, 69));
    assert_eq!(
        redactor.redact_text(&format!("token: {key}\n")),
        "token: [REDACTED:huggingface-token]\n"
    );
    assert!(matches!(
        redactor.redact_text("nothing here"),
        Cow::Borrowed(_)
    ));
}

#[test]
fn every_default_rule_has_a_test_above() {
    let source = include_str!("mod.rs");
    for rule in DEFAULT_RULES {
        let name = if rule.name == ASSIGNMENT_RULE {
            "ASSIGNMENT_RULE"
        } else {
            rule.name
        };
        assert!(
            source.contains(&format!("\"{name}\"")) || source.contains(name),
            "{}",
            rule.name
        );
    }
}

#[test]
fn a_routable_gitlab_token_is_redacted_whole_but_not_the_full_stop_after_it() {
    let redactor = Redactor::standard().unwrap();
    let token = format!(
        "glpat-{}.01.{}",
        random(URLSAFE, 37, 70),
        random(ALNUM, 9, 71)
    );
    assert_eq!(
        redactor.redact_text(&format!("use {token}. Next")),
        "use [REDACTED:gitlab-token]. Next"
    );
}

/// `redact_value` is the one redaction of a string value, whether it is redacted in
/// its line or alone (the search redacts only the values it indexes): for each value
/// and member name, it gives the value the redacted line holds.
#[test]
fn a_value_redacted_alone_is_redacted_as_its_member_in_a_line() {
    let redactor = Redactor::standard().unwrap();
    let password = random(ALNUM, 24, 90);
    let key_id = random(HEX, 40, 91);
    let anthropic = format!("sk-ant-api03-{}AA", random(URLSAFE, 93, 92));
    let cases: Vec<(&str, String)> = vec![
        // A vendor's key in text, and the same key where the member holds an id.
        ("text", format!("use {anthropic} here")),
        ("toolCallId", anthropic.clone()),
        // A member named for a secret, judged by its value alone.
        ("password", password.clone()),
        ("apiToken", password.clone()),
        ("password", "see the vault".to_owned()),
        // A JSON text held in the string, with a member named for a secret and a rule
        // that spells quotes.
        (
            "content",
            format!(
                "{{\"password\":\"{password}\",\"note\":\"\\\"private_key_id\\\": \\\"{key_id}\\\"\"}}"
            ),
        ),
        // Escapes in the line: the value is decoded, the redaction the same.
        ("text", format!("a/b \"{anthropic}\"\n\ttab")),
        ("text", "nothing to see".to_owned()),
    ];
    for (key, value) in &cases {
        let mut line = String::from("{\"id\":\"v1\",");
        crate::json::push_string(&mut line, key);
        line.push(':');
        crate::json::push_string(&mut line, value);
        line.push('}');
        let redacted = redactor.redact_json_strings(&line);
        let in_line: serde_json::Value = serde_json::from_str(&redacted).unwrap();
        let alone = redactor.redact_value(Some(key), value);
        assert_eq!(in_line[*key].as_str(), Some(&*alone), "{key}: {value}");
    }
    // The cases redact something: the first, the assignment and the held JSON.
    assert!(
        redactor
            .redact_value(Some("text"), &cases[0].1)
            .contains("[REDACTED:")
    );
    assert!(
        redactor
            .redact_value(Some("password"), &password)
            .contains("[REDACTED:")
    );
    assert_eq!(
        redactor.redact_value(Some("toolCallId"), &anthropic),
        anthropic
    );
}

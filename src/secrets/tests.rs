//! One test per rule (positives and negatives), and the redaction's byte-exactness.
//!
//! Keys are built at run time from a fixed pseudo-random sequence, so that no source
//! file holds a string that looks like a live credential.

use super::*;

#[path = "../../tests/common/random.rs"]
mod random;
use random::{ALNUM, B64, HEX, UPPER32, URLSAFE, random};

/// The rules that fire on `text` as a JSON string value, in order.
fn rules_in(text: &str) -> Vec<String> {
    let mut line = String::from("{\"id\":\"a1\",\"text\":");
    crate::json::push_string(&mut line, text);
    line.push('}');
    let redactor = Redactor::standard().unwrap();
    redactor
        .find_in_json(line.as_bytes())
        .into_iter()
        .map(|f| f.rule)
        .collect()
}

fn assert_rule(rule: &str, positives: &[String], negatives: &[String]) {
    for text in positives {
        assert_eq!(
            rules_in(text),
            vec![rule.to_owned()],
            "should find {rule}: {text}"
        );
    }
    for text in negatives {
        assert_eq!(
            rules_in(text),
            Vec::<String>::new(),
            "should find nothing: {text}"
        );
    }
}

fn s(text: &str) -> String {
    text.to_owned()
}

#[test]
fn private_key_blocks_are_found_but_placeholders_are_not() {
    let body: Vec<String> = (0..5).map(|i| random(B64, 64, 10 + i)).collect();
    let pem = format!(
        "-----BEGIN RSA PRIVATE KEY-----\n{}\n-----END RSA PRIVATE KEY-----",
        body.join("\n")
    );
    let openssh = format!(
        "cat id_ed25519\n-----BEGIN OPENSSH PRIVATE KEY-----\n{}\n-----END OPENSSH PRIVATE KEY-----\n",
        body.join("\n")
    );
    // Cut off before its END line (a truncated tool output).
    let cut = format!("-----BEGIN PRIVATE KEY-----\n{}", body[..2].join("\n"));
    assert_rule(
        "private-key",
        &[pem, openssh, cut],
        &[
            s("-----BEGIN PRIVATE KEY-----\n...\n-----END PRIVATE KEY-----"),
            s(
                "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA\n-----END PUBLIC KEY-----",
            ),
            s("-----BEGIN CERTIFICATE-----"),
            s("look for '-----BEGIN .* PRIVATE KEY-----' in the repo"),
        ],
    );
}

#[test]
fn aws_access_key_ids_are_found_by_prefix() {
    assert_rule(
        "aws-access-key-id",
        &[
            format!("export AWS_ACCESS_KEY_ID=AKIA{}", random(UPPER32, 16, 1)),
            format!("\"AccessKeyId\": \"ASIA{}\"", random(UPPER32, 16, 2)),
        ],
        &[
            format!("AKIA{}", random(UPPER32, 12, 3)),
            format!("XAKIA{}", random(UPPER32, 16, 4)),
            s("the AKIA prefix marks a long-term key"),
        ],
    );
}

#[test]
fn aws_secret_access_keys_are_found_by_their_name() {
    let key = random(B64, 40, 5);
    assert_rule(
        "aws-secret-access-key",
        &[
            format!("aws_secret_access_key = {key}"),
            format!("AWS_SECRET_ACCESS_KEY=\"{key}\""),
            format!("\"SecretAccessKey\": \"{key}\""),
        ],
        &[
            s("aws_secret_access_key = "),
            format!("{key} on its own"),
            s("set aws_secret_access_key in ~/.aws/credentials"),
        ],
    );
}

#[test]
fn gcp_service_account_key_ids_are_found() {
    let id = random(HEX, 40, 6);
    assert_rule(
        "gcp-service-account-key-id",
        &[format!(
            "{{\"type\": \"service_account\", \"private_key_id\": \"{id}\"}}"
        )],
        &[
            s("\"private_key_id\": \"\""),
            s("\"type\": \"service_account\""),
        ],
    );
}

#[test]
fn azure_connection_string_keys_are_found() {
    assert_rule(
        "azure-connection-string",
        &[
            format!(
                "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={}==;EndpointSuffix=core.windows.net",
                random(B64, 86, 7)
            ),
            format!(
                "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=Root;SharedAccessKey={}=",
                random(B64, 43, 8)
            ),
        ],
        &[
            s("AccountKey=<your key>"),
            s("SharedAccessKeyName=RootManageSharedAccessKey"),
        ],
    );
}

#[test]
fn anthropic_keys_are_found() {
    assert_rule(
        "anthropic-api-key",
        &[
            format!(
                "ANTHROPIC_API_KEY=sk-ant-api03-{}AA",
                random(URLSAFE, 93, 9)
            ),
            format!("sk-ant-admin01-{}", random(URLSAFE, 80, 10)),
        ],
        &[
            s("sk-ant-api03-..."),
            s("keys start with sk-ant-"),
            s("task-ant-api03-xyz"),
        ],
    );
}

#[test]
fn openai_keys_are_found() {
    assert_rule(
        "openai-api-key",
        &[
            format!("OPENAI_API_KEY=sk-proj-{}", random(URLSAFE, 120, 11)),
            format!(
                "sk-{}T3BlbkFJ{}",
                random(ALNUM, 20, 12),
                random(ALNUM, 20, 13)
            ),
            format!("sk-svcacct-{}", random(URLSAFE, 60, 14)),
        ],
        &[
            s("sk-proj-..."),
            s("disk-proj-layout and task-admin-panel"),
            s("sk-1234"),
        ],
    );
}

#[test]
fn google_api_keys_are_found() {
    assert_rule(
        "google-api-key",
        &[
            format!("key=AIza{}", random(URLSAFE, 35, 15)),
            format!("\"apiKey\": \"AIza{}\"", random(ALNUM, 35, 16)),
        ],
        &[s("AIzaSy..."), format!("AIza{}", random(ALNUM, 20, 17))],
    );
}

#[test]
fn hugging_face_tokens_are_found() {
    assert_rule(
        "huggingface-token",
        &[format!("HF_TOKEN=hf_{}", random(ALNUM, 34, 18))],
        &[
            s("from huggingface_hub import hf_hub_download"),
            s("hf_transfer is enabled"),
        ],
    );
}

#[test]
fn github_tokens_are_found() {
    let mut positives: Vec<String> = ["ghp", "gho", "ghu", "ghs", "ghr"]
        .iter()
        .enumerate()
        .map(|(i, p)| format!("token {p}_{}", random(ALNUM, 36, 20 + i as u64)))
        .collect();
    positives.push(format!(
        "github_pat_{}_{}",
        random(ALNUM, 22, 26),
        random(ALNUM, 59, 27)
    ));
    positives.push(format!(
        "https://x-access-token:ghs_{}@github.com/o/r.git",
        random(ALNUM, 36, 28)
    ));
    assert_rule(
        "github-token",
        &positives,
        &[
            s("ghp_xxxxxxxx"),
            format!("ghx_{}", random(ALNUM, 36, 29)),
            s("github_pat_ tokens are fine-grained"),
        ],
    );
}

#[test]
fn gitlab_tokens_are_found() {
    assert_rule(
        "gitlab-token",
        &[
            format!("PRIVATE-TOKEN: glpat-{}", random(URLSAFE, 20, 30)),
            format!(
                "token glpat-{}.01.{}. Next",
                random(URLSAFE, 37, 31),
                random(ALNUM, 9, 32)
            ),
        ],
        &[s("glpat-xxxx"), s("a glpat- token")],
    );
}

#[test]
fn slack_tokens_and_webhooks_are_found() {
    assert_rule(
        "slack-token",
        &[
            format!(
                "xoxb-{}-{}-{}",
                random(b"0123456789", 12, 31),
                random(b"0123456789", 13, 32),
                random(ALNUM, 24, 33)
            ),
            format!(
                "xoxp-{}-{}-{}-{}",
                random(b"0123456789", 10, 34),
                random(b"0123456789", 10, 35),
                random(b"0123456789", 12, 36),
                random(HEX, 32, 37)
            ),
        ],
        &[s("xoxb-your-token-here"), s("SLACK_BOT_TOKEN=xoxb-...")],
    );
    assert_rule(
        "slack-webhook",
        &[format!(
            "curl -X POST https://hooks.slack.com/services/T{}/B{}/{}",
            random(UPPER32, 8, 38),
            random(UPPER32, 10, 39),
            random(ALNUM, 24, 40)
        )],
        &[
            s("https://hooks.slack.com/services/..."),
            s("hooks.slack.com"),
        ],
    );
}

#[test]
fn discord_webhooks_are_found() {
    assert_rule(
        "discord-webhook",
        &[format!(
            "https://discord.com/api/webhooks/{}/{}",
            random(b"0123456789", 18, 41),
            random(URLSAFE, 68, 42)
        )],
        &[
            s("https://discord.com/api/webhooks/<id>/<token>"),
            s("https://discord.com/developers/docs"),
        ],
    );
}

#[test]
fn stripe_keys_are_found() {
    assert_rule(
        "stripe-key",
        &[
            format!("STRIPE_SECRET_KEY=sk_live_{}", random(ALNUM, 24, 43)),
            format!("rk_live_{}", random(ALNUM, 99, 44)),
            format!("sk_test_{}", random(ALNUM, 24, 45)),
        ],
        &[
            format!("pk_live_{}", random(ALNUM, 24, 46)),
            s("sk_live_..."),
        ],
    );
}

#[test]
fn jwts_are_found() {
    let jwt = format!(
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJ{}.{}",
        random(URLSAFE, 40, 47),
        random(URLSAFE, 43, 48)
    );
    assert_rule(
        "jwt",
        &[format!("Authorization: Bearer {jwt}"), jwt.clone()],
        &[
            s("eyJhbGciOiJIUzI1NiJ9"),
            s("a JWT looks like eyJ....eyJ....sig"),
        ],
    );
}

#[test]
fn url_passwords_are_found_but_placeholders_and_plain_urls_are_not() {
    let password = random(ALNUM, 16, 49);
    assert_rule(
        "url-password",
        &[
            format!("DATABASE_URL=postgres://app:{password}@db.internal:5432/app"),
            format!("redis://:{password}@cache:6379/0"),
            format!("mongodb+srv://admin:{password}@cluster0.example.net"),
        ],
        &[
            s("postgres://user:password@localhost/db"),
            s("postgres://app:${PGPASSWORD}@db/app"),
            s("mysql://root:<password>@127.0.0.1/x"),
            s("https://github.com/o/r.git and git@github.com:o/r.git"),
            s("http://localhost:8080/path?x=1"),
            s("ssh://git@host:22/repo"),
            s("https://user@example.com/"),
        ],
    );
}

#[test]
fn assignments_with_a_random_value_are_found() {
    assert_rule(
        ASSIGNMENT_RULE,
        &[
            format!("DB_PASSWORD={}", random(ALNUM, 20, 50)),
            format!("client_secret: \"{}\"", random(ALNUM, 32, 51)),
            format!("api_key = '{}'", random(ALNUM, 32, 52)),
            format!("{{\"password\": \"{}\"}}", random(ALNUM, 14, 53)),
        ],
        &[
            s("password = os.environ[\"DB_PASSWORD\"]"),
            s("password: Optional[str] = None"),
            s("password=changeme"),
            s("secret_key = settings.SECRET_KEY"),
            s("api_key = ${API_KEY}"),
            s("password: ********"),
            s("the password is hunter2"),
            s("token = get_token(user)"),
            s("secret: mysecretvalue"),
        ],
    );
}

#[test]
fn a_member_named_for_a_secret_is_judged_by_its_value() {
    let redactor = Redactor::standard().unwrap();
    let value = random(ALNUM, 24, 54);
    let line =
        format!("{{\"id\":\"e1\",\"metadata\":{{\"apiToken\":\"{value}\",\"token\":\"short\"}}}}");
    let findings = redactor.find_in_json(line.as_bytes());
    assert_eq!(
        findings,
        vec![Finding {
            entry_id: Some("e1".into()),
            pointer: Some("/metadata/apiToken".into()),
            rule: ASSIGNMENT_RULE.into(),
            fingerprint: fingerprint(value.as_bytes()),
        }]
    );
    let words = r#"{"id":"e1","metadata":{"password":"see the vault","secret":"none"}}"#;
    assert!(redactor.find_in_json(words.as_bytes()).is_empty());
}

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
    let source = include_str!("tests.rs");
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

/// One match of each rule whose keywords the quick test searches as written.
fn exact_case_examples() -> Vec<(&'static str, String)> {
    let body: Vec<String> = (0..3).map(|i| random(B64, 64, 80 + i)).collect();
    vec![
        (
            "private-key",
            format!(
                "-----BEGIN RSA PRIVATE KEY-----\n{}\n-----END RSA PRIVATE KEY-----",
                body.join("\n")
            ),
        ),
        (
            "aws-access-key-id",
            format!("AKIA{}", random(UPPER32, 16, 83)),
        ),
        (
            "gcp-service-account-key-id",
            format!("\"private_key_id\": \"{}\"", random(HEX, 40, 84)),
        ),
        (
            "anthropic-api-key",
            format!("sk-ant-api03-{}", random(URLSAFE, 93, 85)),
        ),
        (
            "openai-api-key",
            format!("sk-proj-{}", random(URLSAFE, 48, 86)),
        ),
        ("google-api-key", format!("AIza{}", random(URLSAFE, 35, 87))),
        ("huggingface-token", format!("hf_{}", random(ALNUM, 34, 88))),
        ("github-token", format!("ghp_{}", random(ALNUM, 36, 89))),
        ("gitlab-token", format!("glpat-{}", random(ALNUM, 20, 90))),
        (
            "slack-token",
            format!("xoxb-123456789012-{}", random(ALNUM, 24, 91)),
        ),
        (
            "slack-webhook",
            format!("https://hooks.slack.com/services/{}", random(ALNUM, 30, 92)),
        ),
        (
            "discord-webhook",
            format!(
                "https://discord.com/api/webhooks/123456789/{}",
                random(URLSAFE, 40, 93)
            ),
        ),
        ("stripe-key", format!("sk_live_{}", random(ALNUM, 24, 94))),
        (
            "jwt",
            format!(
                "eyJ{}.eyJ{}.{}",
                random(URLSAFE, 20, 95),
                random(URLSAFE, 20, 96),
                random(URLSAFE, 30, 97)
            ),
        ),
        (
            "url-password",
            format!(
                "postgres://app:{}@db.internal:5432/app",
                random(ALNUM, 16, 98)
            ),
        ),
    ]
}

/// `text` with every occurrence of `keyword` (ASCII case ignored) in the other case.
fn keyword_case_flipped(text: &str, keyword: &str) -> String {
    let (lower, keyword) = (text.to_ascii_lowercase(), keyword.to_ascii_lowercase());
    let mut out = text.as_bytes().to_vec();
    let mut from = 0;
    while let Some(at) = lower[from..].find(&keyword) {
        let at = from + at;
        for b in &mut out[at..at + keyword.len()] {
            *b = if b.is_ascii_lowercase() {
                b.to_ascii_uppercase()
            } else {
                b.to_ascii_lowercase()
            };
        }
        from = at + keyword.len();
    }
    String::from_utf8(out).unwrap()
}

#[test]
fn a_rule_whose_keywords_are_searched_as_written_matches_only_with_them_so() {
    let redactor = Redactor::standard().unwrap();
    let quick = redactor.quick.as_ref().expect("the quick test is built");
    let examples = exact_case_examples();
    for rule in DEFAULT_RULES.iter().filter(|r| r.exact_case) {
        let (_, text) = examples
            .iter()
            .find(|(name, _)| *name == rule.name)
            .unwrap_or_else(|| panic!("no example of {}", rule.name));
        assert_eq!(rules_in(text), vec![rule.name.to_owned()], "{}", rule.name);
        assert!(quick.any(text.as_bytes()), "{}", rule.name);
        // The same text with a keyword in another case is no match of the rule: the
        // quick test, which does not find it so spelled, loses nothing.
        for keyword in rule.keywords.iter().filter(|k| text.contains(*k)) {
            assert!(keyword.bytes().any(|b| b.is_ascii_alphabetic()) || *keyword == "://");
            let flipped = keyword_case_flipped(text, keyword);
            if flipped != *text {
                assert!(
                    !rules_in(&flipped).contains(&rule.name.to_owned()),
                    "{} with {keyword} in another case",
                    rule.name
                );
            }
        }
    }
}

#[test]
fn the_quick_test_finds_every_keyword_in_every_case_its_rule_can_match() {
    let redactor = Redactor::standard().unwrap();
    let quick = redactor.quick.as_ref().expect("the quick test is built");
    let filler = "a".repeat(FOLD_BLOCK + 64);
    let mut spellings_checked = 0;
    for rule in DEFAULT_RULES {
        for keyword in rule.keywords {
            let mut spellings = vec![(*keyword).to_owned()];
            if !rule.exact_case {
                spellings.push(keyword.to_ascii_uppercase());
                spellings.push(keyword_case_flipped(keyword, keyword));
            }
            for spelling in spellings {
                // Anywhere in the text, across the boundary of the lowercased blocks too.
                for at in [
                    0,
                    100,
                    FOLD_BLOCK - spelling.len() + 1,
                    FOLD_BLOCK - 1,
                    FOLD_BLOCK,
                ] {
                    let text = format!("{}{spelling}{}", &filler[..at], &filler[at..]);
                    assert!(quick.any(text.as_bytes()), "{spelling} at {at}");
                    spellings_checked += 1;
                }
            }
        }
    }
    for trigger in LINE_TRIGGERS {
        assert!(
            quick.any(format!("{filler}{trigger}").as_bytes()),
            "{trigger}"
        );
        assert!(
            quick.any(
                trigger
                    .to_ascii_uppercase()
                    .replace("\\U", "\\u")
                    .as_bytes()
            )
        );
    }
    assert!(spellings_checked > 300);
    assert!(!quick.any(filler.as_bytes()));
    assert!(!quick.any(b""));
}

#[test]
fn an_assignment_across_the_quick_tests_block_boundary_is_found() {
    let value = random(ALNUM, 24, 99);
    for at in FOLD_BLOCK - 12..FOLD_BLOCK + 2 {
        let text = format!("{} PassWord={value}", "b".repeat(at));
        assert_eq!(rules_in(&text), vec![ASSIGNMENT_RULE.to_owned()], "at {at}");
    }
}

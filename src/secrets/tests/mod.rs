//! One test per rule (positives and negatives); the redaction's byte-exactness is in
//! `redaction`, the quick keyword test's in `quick`.
//!
//! Keys are built at run time from a fixed pseudo-random sequence, so that no source
//! file holds a string that looks like a live credential.

use super::*;

mod quick;
mod redaction;
mod view;

#[path = "../../../tests/common/random.rs"]
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
            // Characters beyond ASCII in the user and the password (classed by bytes).
            format!("postgres://ünï:{password}é€😀@db.internal/app"),
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

/// Rule: a URL password with characters beyond ASCII is redacted whole, on character
/// boundaries (its rule classes the password's bytes).
#[test]
fn a_url_password_beyond_ascii_is_redacted_whole() {
    let redactor = Redactor::standard().unwrap();
    let password = format!("{}é€😀", random(ALNUM, 12, 52));
    assert_eq!(
        redactor.redact_text(&format!("see postgres://ünï:{password}@db/app now")),
        "see postgres://ünï:[REDACTED:url-password]@db/app now"
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

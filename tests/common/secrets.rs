//! Secrets planted in a session (issue 36): one of each kind the default rules know,
//! built at run time from a fixed pseudo-random sequence (so that no source file holds a
//! string that looks like a live credential), the one helper of the tests that check
//! a secret never leaves (tests/secrets.rs, tests/secrets_wire.rs).

use serde_json::Value;

const DIGITS: &[u8] = b"0123456789";

#[path = "random.rs"]
mod random;
pub use random::random;
use random::{ALNUM, B64, HEX, UPPER32, URLSAFE};

/// One planted secret: its rule, the text planted, and the part of it that is the
/// secret (what is replaced).
pub struct Plant {
    pub rule: &'static str,
    pub text: String,
    pub secret: String,
}

pub fn plant(rule: &'static str, text: String, secret: String) -> Plant {
    Plant { rule, text, secret }
}

/// One secret of each kind the default rules know.
pub fn one_of_each_kind() -> Vec<Plant> {
    let whole = |rule, secret: String| plant(rule, secret.clone(), secret);
    let pem_body: Vec<String> = (0..4).map(|i| random(B64, 64, 100 + i)).collect();
    let aws_secret = random(B64, 40, 2);
    let gcp_id = random(HEX, 40, 3);
    let azure = format!("{}==", random(B64, 86, 4));
    let db_password = random(ALNUM, 18, 5);
    let assigned = random(ALNUM, 24, 6);
    vec![
        whole(
            "private-key",
            format!(
                "-----BEGIN RSA PRIVATE KEY-----\n{}\n-----END RSA PRIVATE KEY-----",
                pem_body.join("\n")
            ),
        ),
        whole(
            "aws-access-key-id",
            format!("AKIA{}", random(UPPER32, 16, 1)),
        ),
        plant(
            "aws-secret-access-key",
            format!("aws_secret_access_key = {aws_secret}"),
            aws_secret,
        ),
        plant(
            "gcp-service-account-key-id",
            format!("\"private_key_id\": \"{gcp_id}\""),
            gcp_id,
        ),
        plant(
            "azure-connection-string",
            format!(
                "DefaultEndpointsProtocol=https;AccountName=a;AccountKey={azure};EndpointSuffix=core.windows.net"
            ),
            azure,
        ),
        whole(
            "anthropic-api-key",
            format!("sk-ant-api03-{}AA", random(URLSAFE, 93, 7)),
        ),
        whole(
            "openai-api-key",
            format!("sk-proj-{}", random(URLSAFE, 120, 8)),
        ),
        whole("google-api-key", format!("AIza{}", random(ALNUM, 35, 9))),
        whole("huggingface-token", format!("hf_{}", random(ALNUM, 34, 10))),
        whole("github-token", format!("ghp_{}", random(ALNUM, 36, 11))),
        whole("gitlab-token", format!("glpat-{}", random(URLSAFE, 20, 12))),
        whole(
            "slack-token",
            format!(
                "xoxb-{}-{}-{}",
                random(DIGITS, 12, 13),
                random(DIGITS, 13, 14),
                random(ALNUM, 24, 15)
            ),
        ),
        whole(
            "slack-webhook",
            format!(
                "https://hooks.slack.com/services/T{}/B{}/{}",
                random(UPPER32, 8, 16),
                random(UPPER32, 10, 17),
                random(ALNUM, 24, 18)
            ),
        ),
        whole(
            "discord-webhook",
            format!(
                "https://discord.com/api/webhooks/{}/{}",
                random(DIGITS, 18, 19),
                random(URLSAFE, 68, 20)
            ),
        ),
        whole("stripe-key", format!("sk_live_{}", random(ALNUM, 24, 21))),
        whole(
            "jwt",
            format!(
                "eyJhbGciOiJIUzI1NiJ9.eyJ{}.{}",
                random(URLSAFE, 40, 22),
                random(URLSAFE, 43, 23)
            ),
        ),
        plant(
            "url-password",
            format!("postgres://app:{db_password}@db.internal:5432/app"),
            db_password,
        ),
        plant("secret-assignment", format!("API_KEY={assigned}"), assigned),
    ]
}

/// The text of all plants, one after another.
pub fn planted_text(plants: &[Plant]) -> String {
    let texts: Vec<&str> = plants.iter().map(|p| p.text.as_str()).collect();
    format!(" | {} |", texts.join(" ; "))
}

/// The example session with every kind of secret planted in five places: a user
/// message, a tool call's arguments, a tool result, a compaction summary and a
/// metadata value. Returns its lines and the planted strings' (entry id, pointer).
pub fn planted_session(plants: &[Plant]) -> (Vec<String>, Vec<(String, String)>) {
    let example = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/tiny-pi-compacted.jsonl"
    ))
    .unwrap();
    let places: Vec<(String, String)> = [
        ("u-1", "/message/content"),
        ("a-read", "/message/content/0/arguments/path"),
        ("r-read", "/message/content/0/text"),
        ("c-1", "/summary"),
        ("meta-cwd", "/value"),
    ]
    .iter()
    .map(|(id, pointer)| ((*id).to_owned(), (*pointer).to_owned()))
    .collect();
    let lines: Vec<String> = example.lines().map(str::to_owned).collect();
    (plant_at(&lines, &places, &planted_text(plants)), places)
}

/// `lines` (entries) with `text` appended to the string at each (entry id, JSON
/// Pointer) of `places`; the other lines as they are.
pub fn plant_at(lines: &[String], places: &[(String, String)], text: &str) -> Vec<String> {
    lines
        .iter()
        .map(|line| {
            let Ok(mut entry) = serde_json::from_str::<Value>(line) else {
                return line.clone();
            };
            let id = entry["id"].as_str().unwrap_or_default().to_owned();
            let mut planted = false;
            for (_, pointer) in places.iter().filter(|(at, _)| *at == id) {
                let value = entry.pointer_mut(pointer).unwrap();
                let old = value.as_str().unwrap().to_owned();
                *value = Value::String(old + text);
                planted = true;
            }
            match planted {
                true => serde_json::to_string(&entry).unwrap(),
                false => line.clone(),
            }
        })
        .collect()
}

/// A real session of the corpus (pi's `pimono-before-compaction`: 1,000 lines, two
/// compactions, tool calls), imported, with every kind of secret planted in five places on the
/// path of its resume leaf: the compaction's summary and, after it (so that the
/// Claude Code and Codex exports carry them too), a user message, a tool call's
/// arguments and a tool result; and a metadata value (the import's root, its working
/// folder, which only pi carries). Returns its lines, the resume leaf and the (entry id, pointer) of
/// the five places.
pub fn planted_corpus_session(plants: &[Plant]) -> (Vec<String>, String, Vec<(String, String)>) {
    let file = super::corpus_dir().join("pi/pimono-before-compaction.jsonl");
    let (_, entries, leaf) = super::import_corpus_file(&file);
    let values: Vec<Value> = entries
        .iter()
        .map(|e| serde_json::from_str(e.json()).unwrap())
        .collect();
    let by_id: std::collections::HashMap<&str, &Value> = values
        .iter()
        .map(|v| (v["id"].as_str().unwrap(), v))
        .collect();
    let mut path = Vec::new();
    let mut at = Some(leaf.as_str());
    while let Some(id) = at {
        let entry = by_id[id];
        path.push(entry);
        at = entry["parentId"].as_str();
    }
    path.reverse();
    let compaction = path
        .iter()
        .rposition(|e| e["type"] == "compaction" && e["summary"].is_string())
        .expect("a compaction on the resume path");
    let after = &path[compaction + 1..];
    let role = |e: &Value, role: &str| e["type"] == "message" && e["message"]["role"] == role;
    let text_block = |e: &Value| -> Option<String> {
        match &e["message"]["content"] {
            Value::String(_) => Some("/message/content".to_owned()),
            Value::Array(blocks) => blocks
                .iter()
                .position(|b| b["type"] == "text" && b["text"].is_string())
                .map(|i| format!("/message/content/{i}/text")),
            _ => None,
        }
    };
    let id_of = |e: &Value| e["id"].as_str().unwrap().to_owned();
    let first = |what: &str, find: &dyn Fn(&Value) -> Option<String>| -> (String, String) {
        after
            .iter()
            .find_map(|e| find(e).map(|pointer| (id_of(e), pointer)))
            .unwrap_or_else(|| panic!("no {what} after the compaction"))
    };
    // Not an id, nor what pi's header line spells anew (its type, version, time).
    let not_an_id = |key: &str| {
        key != "id" && !key.ends_with("Id") && !["type", "version", "timestamp"].contains(&key)
    };
    let places = vec![
        first("user message", &|e| {
            role(e, "user").then(|| text_block(e)).flatten()
        }),
        first("tool call", &|e| {
            if !role(e, "assistant") {
                return None;
            }
            let blocks = e["message"]["content"].as_array()?;
            blocks.iter().enumerate().find_map(|(i, b)| {
                let arguments = b["arguments"]
                    .as_object()
                    .filter(|_| b["type"] == "toolCall")?;
                let (key, _) = arguments
                    .iter()
                    .find(|(k, v)| v.is_string() && !k.contains(['/', '~']))?;
                Some(format!("/message/content/{i}/arguments/{key}"))
            })
        }),
        first("tool result", &|e| {
            role(e, "toolResult").then(|| text_block(e)).flatten()
        }),
        (id_of(path[compaction]), "/summary".to_owned()),
        path.iter()
            .find_map(|e| {
                if e["type"] != "metadata" {
                    return None;
                }
                let value = e["value"].as_object()?;
                let (key, _) = value
                    .iter()
                    .find(|(k, v)| v.is_string() && not_an_id(k) && !k.contains(['/', '~']))?;
                Some((id_of(e), format!("/value/{key}")))
            })
            .expect("a metadata entry on the resume path"),
    ];
    let lines: Vec<String> = entries.iter().map(|e| e.json().to_owned()).collect();
    (
        plant_at(&lines, &places, &planted_text(plants)),
        leaf,
        places,
    )
}

/// `s` as it appears inside a JSON string.
pub fn json_escaped(s: &str) -> String {
    let quoted = serde_json::to_string(s).unwrap();
    quoted[1..quoted.len() - 1].to_owned()
}

/// No secret in `text`: whole, JSON-escaped, or escaped twice (a JSON text held in a
/// string, as Codex holds a tool call's arguments).
pub fn assert_holds_no_secret(plants: &[Plant], text: &str, what: &str) {
    for p in plants {
        assert!(
            !text.contains(&p.secret)
                && !text.contains(&json_escaped(&p.secret))
                && !text.contains(&json_escaped(&json_escaped(&p.secret))),
            "{what} holds the {} secret",
            p.rule
        );
    }
}

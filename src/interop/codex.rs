//! Codex rollout files (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`): lines of
//! `{timestamp, type, payload}`, written in order, with no ids of their own. The
//! import is a linear chain: each line's entry is the child of the previous one, its
//! id `codex-N` (N its line number).
//!
//! | rollout line | libsession entry |
//! |---|---|
//! | first `session_meta` | root `metadata` `codex.session_meta` (its `id` the entry's id) |
//! | `response_item` `message` user / assistant | `message` user / assistant; `input_text`/`output_text` → `text`, a `data:` `input_image` → `image` |
//! | `response_item` `message` developer / system | extension-role `message`, content as written |
//! | `function_call`, `custom_tool_call`, `local_shell_call` | assistant `message` with one `toolCall` (string `arguments` parsed, the text kept as `rawArguments`) |
//! | `function_call_output`, `custom_tool_call_output` | `toolResult`, `toolName` looked up from the call |
//! | `reasoning` | assistant `message` with one `thinking` block per summary item (`encrypted_content` kept) |
//! | `web_search_call`, `tool_search_call`, `tool_search_output`, `image_generation_call`, `agent_message`, `compaction` (Codex sends them back, and no block holds them) | assistant `message` with empty `content`, the item kept as `codexItem` (a `compaction_summary`, Codex's older name, kept as a `compaction`) |
//! | `compacted` | `compaction` (summary = `message`, or the line's other members when `message` is empty; `firstKeptEntryId` null; `details` `{"replacementHistory":N}` when it has one), then each `replacement_history` item as an entry (as a `response_item` of its type) |
//! | `event_msg`, `turn_context`, later `session_meta`, other `response_item`s (`ghost_snapshot`, which Codex does not send, a kind not known here) | `metadata` `codex.<type>`, value = the payload |
//! | older rollouts: first line `{id, timestamp, instructions}` | root `metadata` `codex.session_header` |
//! | older rollouts: a response item on its own line (`message`, `function_call`, `function_call_output`, `reasoning`, …) | as the `response_item` of that type; one that is not a message is kept raw (`unknown_kind`) |
//! | older rollouts: `{"record_type":…}` | `metadata` `codex.record`, value = the line |

use std::collections::HashMap;

use serde_json::{Map, Value, json};

use super::{Builder, Source, entry_head, number, timestamp_of};
use crate::error::Error;

const METADATA_KINDS: [&str; 3] = ["event_msg", "turn_context", "session_meta"];

/// Response item kinds that Codex sends in its history when it resumes a rollout but
/// that are none of a message, a call, an output or reasoning. Codex leaves the others
/// out (`ghost_snapshot`, and kinds it does not know), so they stay metadata.
const SENT_AS_IS: [&str; 7] = [
    "web_search_call",
    "tool_search_call",
    "tool_search_output",
    "image_generation_call",
    "agent_message",
    "compaction",
    "compaction_summary",
];

pub(crate) fn import(source: &mut Source<'_>, out: &mut Builder<'_>) -> Result<(), Error> {
    let mut tool_names: HashMap<String, String> = HashMap::new();
    let mut previous: Option<String> = None;
    source.rewind()?;
    while let Some(line) = source.next_line()? {
        out.begin(line.number);
        let Some(Value::Object(object)) = out.parse(&line) else {
            out.count_kind("invalid_json");
            out.raw(line.number, line.text, "invalid_json", previous.clone())?;
            previous = out.last_id();
            continue;
        };
        let kind = object.get("type").and_then(Value::as_str).unwrap_or("");
        let payload = object.get("payload").cloned().unwrap_or(Value::Null);
        let payload_kind = payload.get("type").and_then(Value::as_str);
        // An older rollout (before session_meta): a header line, then the response
        // items themselves, with `{"record_type":"state"}` lines between them.
        let legacy_header = previous.is_none()
            && kind.is_empty()
            && object.contains_key("id")
            && object.contains_key("instructions");
        let legacy_item = !object.contains_key("payload")
            && !kind.is_empty()
            && !matches!(kind, "response_item" | "compacted")
            && !METADATA_KINDS.contains(&kind);
        let record = object.get("record_type").and_then(Value::as_str);
        match (kind, payload_kind, record) {
            ("response_item", Some(p), _) => out.count_kind(&format!("response_item/{p}")),
            ("", _, Some(r)) => out.count_kind(&format!("record_type/{r}")),
            ("", _, _) if legacy_header => out.count_kind("(header)"),
            ("", _, _) => out.count_kind("(none)"),
            _ => out.count_kind(kind),
        }
        let (millis, iso) = timestamp_of(object.get("timestamp"));
        let mark = |mut entry: Map<String, Value>| {
            if let Some(iso) = &iso {
                entry.insert("isoTimestamp".into(), Value::String(iso.clone()));
            }
            entry
        };
        // The session's header becomes the root: `session_meta`, or the first line of
        // a rollout older than it.
        let header = if kind == "session_meta" && previous.is_none() {
            Some(("session_meta", payload.clone()))
        } else if legacy_header {
            Some(("session_header", Value::Object(object.clone())))
        } else {
            None
        };
        if let Some((key, header)) = header {
            let id = header
                .get("id")
                .and_then(Value::as_str)
                .unwrap_or("codex-session")
                .to_owned();
            let mut extra = Map::new();
            if let Some(iso) = &iso {
                extra.insert("isoTimestamp".into(), Value::String(iso.clone()));
            }
            previous = Some(out.set_root(&id, key, header, millis, extra)?);
            continue;
        }
        let parent = match &previous {
            Some(p) => p.clone(),
            None => out.root(millis)?,
        };
        let id = out.fresh_id(&format!("codex-{}", line.number));
        let mapped: Result<Vec<Map<String, Value>>, &'static str> = match kind {
            "response_item" => response_item(&payload, &mut tool_names)
                .map(|m| vec![message_entry(&id, &parent, millis, m)])
                .or_else(|_| {
                    Ok(vec![metadata(
                        &id,
                        &parent,
                        millis,
                        "codex.response_item",
                        payload.clone(),
                    )])
                }),
            "compacted" => Ok(compacted(
                &id,
                &parent,
                millis,
                &payload,
                &mut tool_names,
                out,
            )),
            k if METADATA_KINDS.contains(&k) => Ok(vec![metadata(
                &id,
                &parent,
                millis,
                &format!("codex.{k}"),
                payload.clone(),
            )]),
            _ if legacy_item => response_item(&Value::Object(object.clone()), &mut tool_names)
                .map(|m| vec![message_entry(&id, &parent, millis, m)])
                .map_err(|()| "unknown_kind"),
            "" if record.is_some() => Ok(vec![metadata(
                &id,
                &parent,
                millis,
                "codex.record",
                Value::Object(object.clone()),
            )]),
            _ => Err("unknown_kind"),
        };
        match mapped {
            Ok(entries) => {
                for entry in entries {
                    out.push(&line, mark(entry))?;
                }
            }
            Err(reason) => out.raw(line.number, line.text, reason, Some(parent))?,
        }
        previous = out.last_id();
    }
    Ok(())
}

fn message_entry(
    id: &str,
    parent: &str,
    millis: f64,
    message: Map<String, Value>,
) -> Map<String, Value> {
    let mut entry = entry_head(id, Some(parent), millis, "message");
    entry.insert("message".into(), Value::Object(message));
    entry
}

fn metadata(id: &str, parent: &str, millis: f64, key: &str, value: Value) -> Map<String, Value> {
    let mut entry = entry_head(id, Some(parent), millis, "metadata");
    entry.insert("key".into(), Value::String(key.into()));
    entry.insert("value".into(), value);
    entry
}

/// A `compacted` line: the compaction, then the replacement history Codex resumes
/// from, each item an entry in the chain (`codex-N/1`, `codex-N/2`, …). Built with
/// `{"summaryMessage":false}`, the context of a later leaf is that history and what
/// follows, as Codex sends it.
fn compacted(
    id: &str,
    parent: &str,
    millis: f64,
    payload: &Value,
    tool_names: &mut HashMap<String, String>,
    out: &Builder<'_>,
) -> Vec<Map<String, Value>> {
    let mut details = payload.as_object().cloned().unwrap_or_default();
    let history = details.remove("replacement_history");
    let summary = match payload.get("message") {
        Some(Value::String(text)) if !text.is_empty() => Value::String(text.clone()),
        _ => Value::Object(details.clone()),
    };
    let mut entry = entry_head(id, Some(parent), millis, "compaction");
    entry.insert("summary".into(), summary);
    entry.insert("firstKeptEntryId".into(), Value::Null);
    entry.insert("tokensBefore".into(), number(0.0));
    // Codex resumes from the replacement history alone (its `message` is not sent):
    // the codex profile reads this mark and leaves the summary message out.
    if let Some(Value::Array(items)) = &history {
        entry.insert(
            "details".into(),
            json!({"replacementHistory": number(items.len() as f64)}),
        );
    }
    let mut entries = vec![entry];
    let mut parent = id.to_owned();
    for (index, item) in history
        .iter()
        .flat_map(|h| h.as_array())
        .flatten()
        .enumerate()
    {
        let item_id = out.fresh_id(&format!("{id}/{}", index + 1));
        let entry = match response_item(item, tool_names) {
            Ok(message) => message_entry(&item_id, &parent, millis, message),
            Err(()) => metadata(
                &item_id,
                &parent,
                millis,
                "codex.response_item",
                item.clone(),
            ),
        };
        entries.push(entry);
        parent = item_id;
    }
    entries
}

/// A response item as a message, or `Err` for an item kind that is not one.
fn response_item(
    item: &Value,
    tool_names: &mut HashMap<String, String>,
) -> Result<Map<String, Value>, ()> {
    let kind = item.get("type").and_then(Value::as_str).ok_or(())?;
    let get = |k: &str| item.get(k).cloned().unwrap_or(Value::Null);
    let mut message = Map::new();
    match kind {
        "message" => {
            let role = item.get("role").and_then(Value::as_str).ok_or(())?;
            let content = item.get("content").and_then(Value::as_array).ok_or(())?;
            match role {
                "user" | "assistant" => {
                    message.insert("role".into(), Value::String(role.into()));
                    let blocks = content.iter().map(content_block).collect();
                    message.insert("content".into(), Value::Array(blocks));
                    if role == "assistant" {
                        assistant_marks(&mut message);
                    }
                }
                _ => {
                    message.insert("role".into(), Value::String(role.into()));
                    message.insert("content".into(), Value::Array(content.clone()));
                }
            }
            for (k, v) in item.as_object().into_iter().flatten() {
                if !["type", "role", "content"].contains(&k.as_str()) {
                    message.insert(k.clone(), v.clone());
                }
            }
        }
        "function_call" | "custom_tool_call" | "local_shell_call" => {
            let call = get("call_id");
            let name = match kind {
                "local_shell_call" => Value::String("local_shell".into()),
                _ => get("name"),
            };
            if let (Some(c), Some(n)) = (call.as_str(), name.as_str()) {
                tool_names.insert(c.to_owned(), n.to_owned());
            }
            let mut block = json!({"type": "toolCall", "id": call, "name": name});
            match kind {
                "function_call" => {
                    let raw = get("arguments");
                    let parsed = raw
                        .as_str()
                        .and_then(|text| serde_json::from_str::<Value>(text).ok())
                        .filter(Value::is_object);
                    block["arguments"] = parsed.unwrap_or_else(|| json!({}));
                    block["rawArguments"] = raw;
                }
                "custom_tool_call" => block["arguments"] = json!({"input": get("input")}),
                _ => {
                    block["arguments"] = item
                        .get("action")
                        .filter(|a| a.is_object())
                        .cloned()
                        .unwrap_or_else(|| json!({}))
                }
            }
            message.insert("role".into(), Value::String("assistant".into()));
            message.insert("content".into(), json!([block]));
            assistant_marks(&mut message);
            message.insert("codexItem".into(), item.clone());
        }
        "function_call_output" | "custom_tool_call_output" => {
            let call = get("call_id");
            let name = call
                .as_str()
                .and_then(|c| tool_names.get(c))
                .cloned()
                .unwrap_or_default();
            let (content, is_error) = tool_output(item.get("output"));
            message.insert("role".into(), Value::String("toolResult".into()));
            message.insert("toolCallId".into(), call);
            message.insert("toolName".into(), Value::String(name));
            message.insert("content".into(), Value::Array(content));
            message.insert("isError".into(), Value::Bool(is_error));
            message.insert("details".into(), item.clone());
        }
        "reasoning" => {
            let texts: Vec<Value> = item
                .get("summary")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|s| s.get("text"))
                .map(|text| json!({"type": "thinking", "thinking": text}))
                .collect();
            message.insert("role".into(), Value::String("assistant".into()));
            message.insert("content".into(), Value::Array(texts));
            assistant_marks(&mut message);
            message.insert("codexItem".into(), item.clone());
        }
        // Items Codex sends back as they are that no block of ours holds: an assistant
        // message with no content, the item kept whole (`compaction_summary`, an older
        // name Codex reads as `compaction` and sends as one, under that name).
        kind if SENT_AS_IS.contains(&kind) => {
            let mut item = item.clone();
            if kind == "compaction_summary" {
                item["type"] = Value::String("compaction".into());
            }
            message.insert("role".into(), Value::String("assistant".into()));
            message.insert("content".into(), Value::Array(Vec::new()));
            assistant_marks(&mut message);
            message.insert("codexItem".into(), item);
        }
        _ => return Err(()),
    }
    Ok(message)
}

fn assistant_marks(message: &mut Map<String, Value>) {
    message.insert("api".into(), Value::String("openai-responses".into()));
    message.insert("provider".into(), Value::String("openai".into()));
}

/// A tool output: a string, `{content, success}`, or an array of content items.
fn tool_output(output: Option<&Value>) -> (Vec<Value>, bool) {
    match output {
        Some(Value::String(text)) => (vec![json!({"type": "text", "text": text})], false),
        Some(Value::Array(items)) => (items.iter().map(content_block).collect(), false),
        Some(Value::Object(o)) => {
            let failed = o.get("success") == Some(&Value::Bool(false));
            let (content, _) = tool_output(o.get("content"));
            (content, failed)
        }
        _ => (Vec::new(), false),
    }
}

/// `input_text`/`output_text` → `text`; an `input_image` whose URL is a base64
/// `data:` URL → `image`; anything else kept as an extension block.
fn content_block(block: &Value) -> Value {
    match block.get("type").and_then(Value::as_str) {
        Some("input_text" | "output_text") => {
            json!({"type": "text", "text": block.get("text").cloned().unwrap_or(Value::Null)})
        }
        Some("input_image") => {
            let url = block.get("image_url").and_then(Value::as_str).unwrap_or("");
            match url
                .strip_prefix("data:")
                .and_then(|r| r.split_once(";base64,"))
            {
                Some((mime, data)) => json!({"type": "image", "data": data, "mimeType": mime}),
                None => block.clone(),
            }
        }
        _ => block.clone(),
    }
}

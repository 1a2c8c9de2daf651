//! Detecting a foreign session file's format ([`Format`], defined in
//! `crate::agent`) from its first lines.

use serde_json::Value;

pub use crate::agent::Format;

impl Format {
    /// The format of a session file, from its first lines (at most
    /// 64 non-blank ones are read): pi when the first line is pi's
    /// `{"type":"session",…}` header (or a line is a pi entry: `id`, `parentId` and a
    /// pi entry type); Claude Code when a line has `parentUuid` or `sessionId`, or a
    /// `type` Claude Code writes (`user`, `assistant`, `summary`, `system`,
    /// `progress`, `file-history-snapshot`, `queue-operation`); Codex when a line's
    /// `type` is `session_meta`, `response_item`, `event_msg`, `turn_context` or
    /// `compacted`, a line has `record_type` (an older rollout), or the first line
    /// has `id`, `timestamp` and `instructions` (an older rollout's header). The
    /// first line that says decides; `None` when none does.
    pub fn detect(source: &[u8]) -> Option<Format> {
        let mut detector = Detector::default();
        for line in source.split(|&b| b == b'\n') {
            if detector.done() {
                break;
            }
            detector.feed(line);
        }
        detector.found
    }
}

/// How many non-blank lines format detection reads at most.
const DETECT_LINES: usize = 64;

/// Format detection over the first lines of a source.
#[derive(Default)]
pub(super) struct Detector {
    lines: usize,
    pub(super) found: Option<Format>,
}

impl Detector {
    fn done(&self) -> bool {
        self.found.is_some() || self.lines >= DETECT_LINES
    }

    pub(super) fn feed(&mut self, line: &[u8]) {
        if self.done() || line.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        self.lines += 1;
        let Ok(Value::Object(object)) = serde_json::from_slice::<Value>(line) else {
            return;
        };
        let kind = object.get("type").and_then(Value::as_str).unwrap_or("");
        let has = |key: &str| object.contains_key(key);
        self.found = if self.lines == 1 && kind == "session" {
            Some(Format::Pi)
        } else if matches!(
            kind,
            "session_meta" | "response_item" | "event_msg" | "turn_context" | "compacted"
        ) || has("record_type")
            || (self.lines == 1 && has("id") && has("timestamp") && has("instructions"))
        {
            Some(Format::Codex)
        } else if has("parentUuid")
            || has("sessionId")
            || matches!(
                kind,
                "user"
                    | "assistant"
                    | "summary"
                    | "system"
                    | "progress"
                    | "file-history-snapshot"
                    | "queue-operation"
            )
        {
            Some(Format::ClaudeCode)
        } else if has("id")
            && has("parentId")
            && matches!(
                kind,
                "message"
                    | "model_change"
                    | "thinking_level_change"
                    | "compaction"
                    | "branch_summary"
                    | "custom"
                    | "custom_message"
                    | "label"
                    | "session_info"
            )
        {
            Some(Format::Pi)
        } else {
            None
        };
    }
}

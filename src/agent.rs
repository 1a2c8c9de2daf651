//! The agents whose session files libsession imports and exports, and the one list of
//! their names ([`Format::ALL`]): the command line, the C ABI, the importers, the
//! exporters and the errors all read it here. A leaf: it imports nothing of the
//! crate, so every floor above can name an agent.

/// A foreign session format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Format {
    /// pi's session file (`@mariozechner/pi-coding-agent`), versions 1–3.
    Pi,
    /// A Claude Code transcript (`~/.claude/projects/*/SESSION.jsonl`).
    ClaudeCode,
    /// A Codex rollout file (`~/.codex/sessions/**/rollout-*.jsonl`).
    Codex,
}

impl Format {
    /// Every agent, in the order the documentation lists them.
    pub const ALL: [Format; 3] = [Format::Pi, Format::ClaudeCode, Format::Codex];

    /// The format's name on the command line and in the C ABI: `pi`, `claude-code`
    /// or `codex`.
    pub fn name(self) -> &'static str {
        match self {
            Format::Pi => "pi",
            Format::ClaudeCode => "claude-code",
            Format::Codex => "codex",
        }
    }

    /// The format named `name`, if there is one.
    pub fn from_name(name: &str) -> Option<Format> {
        Format::ALL.into_iter().find(|f| f.name() == name)
    }

    /// What a file of this format is called in messages: `pi session file`,
    /// `Claude Code transcript`, `Codex rollout`.
    pub fn description(self) -> &'static str {
        match self {
            Format::Pi => "pi session file",
            Format::ClaudeCode => "Claude Code transcript",
            Format::Codex => "Codex rollout",
        }
    }

    /// The prefix of the metadata keys this format's importer writes (`pi.`,
    /// `claude.`, `codex.`).
    pub(crate) fn key_prefix(self) -> &'static str {
        match self {
            Format::Pi => "pi",
            Format::ClaudeCode => "claude",
            Format::Codex => "codex",
        }
    }
}

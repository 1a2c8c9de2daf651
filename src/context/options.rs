//! What a caller asks of `build_context`: the options JSON, the estimator and the
//! agents' profiles it may name (docs/contract.md §7, §12).

use serde::Deserialize;

use crate::agent::Format;
use crate::error::Error;
/// A host's token estimator: given a message's normalised JSON, its cost in tokens,
/// or a message saying why it cannot tell. A negative or non-finite cost, an `Err` or
/// a panic fails the build with [`Error::Estimator`].
pub type Estimator<'e> = dyn FnMut(&str) -> Result<f64, String> + 'e;

/// What to do with a pairing defect (docs/contract.md §7.2).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OnDefect {
    /// Fail with [`Error::ToolPairing`] (the default).
    #[default]
    Error,
    /// Drop each defective interaction whole and list it in `skipped`.
    Skip,
    /// Keep them and list the defects in `defects`.
    Keep,
    /// Answer each unanswered call with a synthetic error result, listed in `defects`
    /// with the action `synthesized`; any other defect fails as with `Error`.
    Synthesize,
}

/// An agent's own send-time rules (the option `profile`, docs/contract.md §12).
/// The default is [`Profile::Auto`]: an imported session is sent as its agent sends
/// it, a native one under the contract's own rules.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Profile {
    /// No agent's rules: the contract's own (§7), whatever the session's origin.
    None,
    /// pi: assistant messages stopped by an error or an abort are left out; a call
    /// without a result gets "No result provided" before the next turn.
    Pi,
    /// Claude Code: the parts of a reply written one block per line (one
    /// `responseId`) are one assistant message, its results after it.
    ClaudeCode,
    /// Codex: a call without an output gets "aborted" right after it; an output
    /// without a call is dropped; a replacement history replaces the summary, and
    /// without one the summary follows the user messages before the compaction, as
    /// Codex rebuilds the history there.
    Codex,
    /// The agent the session was imported from (its root's `importedFormat`); none
    /// for a session that was not imported. The default.
    #[default]
    Auto,
}

impl Profile {
    /// The profile of an import format's agent.
    pub(super) fn of_format(format: Format) -> Profile {
        match format {
            Format::Pi => Profile::Pi,
            Format::ClaudeCode => Profile::ClaudeCode,
            Format::Codex => Profile::Codex,
        }
    }
}

/// The budget option: `{"maxTokens":N,"reservedOutput":N,"safetyMargin":N}`.
#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Budget {
    pub max_tokens: f64,
    #[serde(default)]
    pub reserved_output: f64,
    #[serde(default)]
    pub safety_margin: f64,
}

/// Options of `build_context` (docs/contract.md §7), as JSON: `onDefect`, `budget`,
/// `summaryMessage` (default true), `summaryPrefix`, `summarySuffix` (default empty),
/// `strictRoles` (default false), `synthesizedText` (default `"aborted"`: the text of
/// a result `onDefect: "synthesize"` writes), `profile` (default `"auto"`: the rules
/// of the agent an imported session came from; `"none"`: the contract's own). Unknown
/// members are an error.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct ContextOptions {
    pub on_defect: OnDefect,
    pub budget: Option<Budget>,
    pub summary_message: bool,
    pub summary_prefix: String,
    pub summary_suffix: String,
    pub strict_roles: bool,
    pub synthesized_text: String,
    pub profile: Profile,
}

/// The text of a synthesized result when the options name none: what Codex sends for a
/// call whose output never came.
pub const SYNTHESIZED_TEXT: &str = "aborted";

impl Default for ContextOptions {
    fn default() -> ContextOptions {
        ContextOptions {
            on_defect: OnDefect::Error,
            budget: None,
            summary_message: true,
            summary_prefix: String::new(),
            summary_suffix: String::new(),
            strict_roles: false,
            synthesized_text: SYNTHESIZED_TEXT.to_owned(),
            profile: Profile::Auto,
        }
    }
}

impl ContextOptions {
    /// Options from a JSON object; absent members keep their defaults, unknown members
    /// and budget numbers that are negative or not finite are [`Error::InvalidOption`].
    pub fn from_json(text: &str) -> Result<ContextOptions, Error> {
        let options: ContextOptions = crate::options::from_json(text)?;
        if let Some(budget) = options.budget {
            for (name, value) in [
                ("maxTokens", budget.max_tokens),
                ("reservedOutput", budget.reserved_output),
                ("safetyMargin", budget.safety_margin),
            ] {
                if !value.is_finite() || value < 0.0 {
                    return Err(crate::options::invalid(&format!(
                        "budget.{name} must be a finite number >= 0"
                    )));
                }
            }
        }
        Ok(options)
    }
}

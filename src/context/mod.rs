//! What the model sees for a leaf: compactions, interactions, tool pairing and the
//! token budget (docs/contract.md §6.2, §7).
//!
//! One implementation serves the pure function over an entries array
//! ([`build_context`]) and the store ([`crate::Store::build_context`]), which walks
//! its own index: both hand [`build`] the path, root first, and a way to ask whether
//! an id exists at all. The rule for a compaction's cut ([`check_compaction`]) is also
//! the one the store runs when a compaction is appended, walking up from its parent:
//! its cost is the distance walked, never the size of the store.
//!
//! The module's files, one concept each: `options` (what a caller asks for), `build`
//! (the one build over a path), `pairing` (interactions and tool-call defects),
//! `summary` (the summary message) and `profile` (pi's, Claude Code's and Codex's own
//! send-time rules). The tree rules it runs (a compaction's cut) live in
//! [`crate::tree::checks`].

mod build;
mod options;
mod pairing;
mod profile;
mod summary;
#[cfg(test)]
mod tests;

use std::convert::Infallible;

use crate::entry::{Body, Entry};
use crate::error::{Error, PairingDefect};
use crate::json::{ArrayWriter, Object};
use crate::tree::{IdIndex, PathEntry};

pub(crate) use build::build_explained;
pub use options::{Budget, ContextOptions, Estimator, OnDefect, Profile, SYNTHESIZED_TEXT};
/// The compaction a context was built through.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompactionUsed {
    pub id: String,
    pub first_kept_entry_id: Option<String>,
    /// The JSON of `tokensBefore`, `summary` and `details`, as written.
    pub tokens_before: String,
    pub summary: String,
    pub details: Option<String>,
}

/// One interaction of the context (docs/contract.md §7.1, §7.3).
#[derive(Clone, Debug, PartialEq)]
pub struct Interaction {
    /// Index of its first message in [`Context::messages`], and how many it has.
    pub start: usize,
    pub count: usize,
    pub first_entry_id: String,
    /// Whether its first entry is a valid `firstKeptEntryId` for a next compaction.
    pub cut_point: bool,
    /// Its cost, only when a budget was given.
    pub tokens: Option<f64>,
}

/// A pairing defect, kept (`onDefect: "keep"`), skipped (`"skip"`) or answered
/// (`"synthesize"`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Defect {
    pub interaction_start_id: String,
    pub entry_id: String,
    pub tool_call_id: String,
    pub reason: PairingDefect,
    /// What was done about it: nothing (`None`), or `Some("synthesized")` (a synthetic
    /// result answers it) or `Some("dropped")` (a profile left the result out); the
    /// JSON's `action`.
    pub action: Option<&'static str>,
}

impl Defect {
    /// Whether a synthetic result answers it.
    pub fn synthesized(&self) -> bool {
        self.action == Some(SYNTHESIZED)
    }
}

/// The `action` of a defect a synthetic result answers.
const SYNTHESIZED: &str = "synthesized";
/// The `action` of a result a profile left out.
const DROPPED: &str = "dropped";

/// Why the budget kept what it kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BudgetReason {
    WithinBudget,
    Trimmed,
    SingleInteractionOverflow,
}

impl BudgetReason {
    /// `within_budget`, `trimmed`, `single_interaction_overflow`.
    pub fn as_str(self) -> &'static str {
        match self {
            BudgetReason::WithinBudget => "within_budget",
            BudgetReason::Trimmed => "trimmed",
            BudgetReason::SingleInteractionOverflow => "single_interaction_overflow",
        }
    }
}

/// The budget's account (docs/contract.md §7.3).
#[derive(Clone, Debug, PartialEq)]
pub struct BudgetReport {
    pub budget: Budget,
    /// `maxTokens - reservedOutput - safetyMargin`.
    pub available: f64,
    /// The summary plus the kept interactions.
    pub used: f64,
    pub reason: BudgetReason,
    pub dropped_interactions: usize,
    pub suggested_first_kept_entry_id: Option<String>,
}

/// What the model should see for a leaf (docs/contract.md §7.3).
#[derive(Clone, Debug, PartialEq)]
pub struct Context {
    pub leaf_id: String,
    pub compaction: Option<CompactionUsed>,
    /// The messages' JSON: the synthetic summary message first when there is one,
    /// then the kept messages, byte-identical to `messages_on_path`, with the results
    /// `onDefect: "synthesize"` wrote among them.
    pub messages: Vec<String>,
    /// The entry of each message after the summary, aligned 1:1 with them: `None` for
    /// a synthesized result, which has no entry.
    pub kept_entry_ids: Vec<Option<String>>,
    pub interactions: Vec<Interaction>,
    /// The last value (JSON) of each non-`session.` metadata key over the whole path,
    /// in first-set order.
    pub metadata: Vec<(String, String)>,
    pub budget: Option<BudgetReport>,
    /// `onDefect: "skip"`: the defects of the interactions dropped.
    pub skipped: Vec<Defect>,
    /// `onDefect: "keep"`: the defects of the interactions kept.
    pub defects: Vec<Defect>,
}

impl Context {
    /// Whether the first message is the synthetic summary.
    pub fn has_summary_message(&self) -> bool {
        self.messages.len() > self.kept_entry_ids.len()
    }

    /// The §7.3 JSON object, members in the order of the contract: `leafId`,
    /// `compaction`, `messages`, `keptEntryIds`, `interactions`, `metadata`, `budget`
    /// (null without a budget), `skipped`, `defects`.
    pub fn to_json(&self) -> String {
        String::from_utf8(self.to_json_bytes())
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
    }

    /// [`Context::to_json`] as UTF-8 bytes, the messages written once, in place, into a
    /// buffer sized for them (the C functions hand these bytes out as they are): on a
    /// long path the messages are nearly all of the output, and copying them through
    /// an array text, then into the object, then checking the whole as UTF-8 again cost
    /// more than reading the path.
    pub(crate) fn to_json_bytes(&self) -> Vec<u8> {
        let compaction = match &self.compaction {
            None => "null".to_owned(),
            Some(c) => {
                let object = Object::new()
                    .string("id", &c.id)
                    .string_or_null("firstKeptEntryId", c.first_kept_entry_id.as_deref())
                    .raw("tokensBefore", &c.tokens_before)
                    .raw("summary", &c.summary);
                match &c.details {
                    Some(details) => object.raw("details", details),
                    None => object,
                }
                .finish()
            }
        };
        let interactions = crate::json::array(self.interactions.iter().map(|i| {
            let object = Object::new()
                .number("start", i.start)
                .number("count", i.count)
                .string("firstEntryId", &i.first_entry_id)
                .boolean("cutPoint", i.cut_point);
            match i.tokens {
                Some(tokens) => object.finite("tokens", tokens),
                None => object,
            }
            .finish()
        }));
        let metadata = self
            .metadata
            .iter()
            .fold(Object::new(), |object, (key, value)| object.raw(key, value))
            .finish();
        let budget = match &self.budget {
            None => "null".to_owned(),
            Some(b) => Object::new()
                .finite("maxTokens", b.budget.max_tokens)
                .finite("reservedOutput", b.budget.reserved_output)
                .finite("safetyMargin", b.budget.safety_margin)
                .finite("available", b.available)
                .finite("used", b.used)
                .string("reason", b.reason.as_str())
                .number("droppedInteractions", b.dropped_interactions)
                .string_or_null(
                    "suggestedFirstKeptEntryId",
                    b.suggested_first_kept_entry_id.as_deref(),
                )
                .finish(),
        };
        let kept_entry_ids =
            crate::json::string_or_null_array(self.kept_entry_ids.iter().map(Option::as_deref));
        let (skipped, defects) = (defects(&self.skipped), defects(&self.defects));
        // Every member but the messages is written by now: the buffer is sized once.
        let rest = [
            &compaction,
            &kept_entry_ids,
            &interactions,
            &metadata,
            &budget,
            &skipped,
            &defects,
        ];
        let object = Object::new()
            .string("leafId", &self.leaf_id)
            .raw("compaction", &compaction)
            .raw_with("messages", |out| {
                let messages: usize = self.messages.iter().map(|m| m.len() + 1).sum();
                let others: usize = rest.iter().map(|m| m.len()).sum();
                out.reserve(messages + others + MEMBER_NAMES_BYTES);
                let mut array = ArrayWriter::open(out);
                self.messages.iter().for_each(|m| array.push(m.as_bytes()));
                array.close();
                Ok::<(), Infallible>(())
            });
        let Ok(object) = object;
        object
            .raw("keptEntryIds", &kept_entry_ids)
            .raw("interactions", &interactions)
            .raw("metadata", &metadata)
            .raw("budget", &budget)
            .raw("skipped", &skipped)
            .raw("defects", &defects)
            .finish_bytes()
    }
}

/// Room for the member names and punctuation of [`Context::to_json`] after the
/// messages (about 90 bytes), rounded up.
const MEMBER_NAMES_BYTES: usize = 128;

fn defects(list: &[Defect]) -> String {
    crate::json::array(list.iter().map(|d| {
        let object = Object::new()
            .string("interactionStartId", &d.interaction_start_id)
            .string("entryId", &d.entry_id)
            .string("toolCallId", &d.tool_call_id)
            .string("reason", d.reason.as_str());
        match d.action {
            Some(action) => object.string("action", action),
            None => object,
        }
        .finish()
    }))
}

/// The sum of two token counts (each finite and >= 0), saturating at `f64::MAX`: costs
/// near `DBL_MAX` would otherwise add up to infinity, which JSON cannot spell.
fn add_tokens(a: f64, b: f64) -> f64 {
    (a + b).min(f64::MAX)
}

/// The default estimator: a quarter of the message's normalised JSON bytes, rounded up.
pub fn default_estimate(message_json: &str) -> f64 {
    message_json.len().div_ceil(4) as f64
}

/// `build_context` over an entries array (docs/contract.md §7), with the default estimator. Fails
/// as `path_to` does, then with [`Error::InvalidEntry`] for an extension entry on the
/// path under `strictRoles`, [`Error::InvalidCompaction`] and [`Error::ToolPairing`].
pub fn build_context(
    entries: &[Entry],
    leaf_id: &str,
    options: &ContextOptions,
) -> Result<Context, Error> {
    build_context_with(entries, leaf_id, options, &mut |m: &str| {
        Ok(default_estimate(m))
    })
}

/// [`build_context`] with the host's estimator, called (only with a budget) once per
/// message that remains after skips and once for the summary message, on the calling
/// thread.
pub fn build_context_with(
    entries: &[Entry],
    leaf_id: &str,
    options: &ContextOptions,
    estimate: &mut Estimator<'_>,
) -> Result<Context, Error> {
    build_context_indexed(&IdIndex::new(entries)?, leaf_id, options, estimate)
}

/// [`build_context_with`] over an id index built once, for callers that build many
/// contexts over the same entries (the id index is the cost that grows with the
/// entries, not with the path).
pub(crate) fn build_context_indexed(
    index: &IdIndex<'_>,
    leaf_id: &str,
    options: &ContextOptions,
    estimate: &mut Estimator<'_>,
) -> Result<Context, Error> {
    let path = index.path(leaf_id)?;
    let mut ancestors = path.iter().rev().copied();
    let tail = take_tail(&mut ancestors, options.strict_roles);
    let path = PathTail {
        metadata: path
            .iter()
            .copied()
            .filter(PathEntry::is_replayed_metadata)
            .collect(),
        root: path.first().copied(),
        tail,
        above: ancestors,
    };
    build_explained(
        path,
        leaf_id,
        options,
        &|id| index.position(id),
        &|id| Ok(index.children(id)),
        estimate,
    )
}

/// The path as [`build`] reads it: the end of it that the context is made of, and
/// what it needs of the rest, so that the cost follows what is kept, not the path.
pub(crate) struct PathTail<'a, I> {
    /// From the latest compaction's first kept entry (or the compaction itself when
    /// it keeps nothing; or the root when there is no compaction, or under
    /// `strictRoles`) to the leaf, root-most first: what [`take_tail`] took.
    pub(crate) tail: Vec<PathEntry<'a>>,
    /// The entries above the tail, nearest first, walked lazily and only as far as a
    /// rule needs (the cut's check, whether a message comes before the tail).
    pub(crate) above: I,
    /// The path's first entry (its `importedFormat` chooses the `auto` profile).
    pub(crate) root: Option<PathEntry<'a>>,
    /// The metadata entries on the whole path that the context replays, root first
    /// ([`PathEntry::is_replayed_metadata`]).
    pub(crate) metadata: Vec<PathEntry<'a>>,
}

/// Takes from `ancestors` (the leaf first, then up) the entries [`PathTail::tail`]
/// holds, root-most first, leaving `ancestors` at the entry above them. `whole`
/// takes the whole path.
pub(crate) fn take_tail<'a>(
    ancestors: &mut impl Iterator<Item = PathEntry<'a>>,
    whole: bool,
) -> Vec<PathEntry<'a>> {
    let mut tail = Vec::new();
    // Once the nearest compaction is met: the id of its first kept entry.
    let mut first_kept: Option<&str> = None;
    for entry in ancestors.by_ref() {
        tail.push(entry);
        if whole {
            continue;
        }
        match (first_kept, &entry.facts.body) {
            (Some(first), _) if entry.id() == first => break,
            (Some(_), _) => {}
            (None, Body::Compaction { first_kept: f, .. }) => match f {
                Some(f) => first_kept = Some(f.of(entry.json)),
                None => break,
            },
            (None, _) => {}
        }
    }
    tail.reverse();
    tail
}

/// The entries hanging directly under an entry, in commit order: the pure function
/// reads them from its id index, the store from its own.
pub(crate) type ChildrenOf<'a, 'f> = &'f dyn Fn(&str) -> Result<Vec<PathEntry<'a>>, Error>;

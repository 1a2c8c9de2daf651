//! What the model sees for a leaf: compactions, interactions, tool pairing and the
//! token budget (docs/contract.md §6.2, §7).
//!
//! One implementation serves the pure function over an entries array
//! ([`build_context`]) and the store ([`crate::Store::build_context`]), which walks
//! its own index: both hand [`build`] the path, root first, and a way to ask whether
//! an id exists at all. The rule for a compaction's cut ([`check_compaction`]) is also
//! the one the store runs when a compaction is appended, walking up from its parent:
//! its cost is the distance walked, never the size of the store.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::panic::{AssertUnwindSafe, catch_unwind};

use serde::Deserialize;

use crate::entry::{Body, Entry, EntryParser, ParseOptions, Role, Tools};
use crate::error::{CompactionFault, Error, Hint, PairingDefect};
use crate::interop::Format;
use crate::json::Object;
use crate::json::{self, MAX_DEPTH, Tape};
use crate::tree::{IdIndex, PathEntry, project_messages};

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
    fn of_format(format: Format) -> Profile {
        match format {
            Format::Pi => Profile::Pi,
            Format::ClaudeCode => Profile::ClaudeCode,
            Format::Codex => Profile::Codex,
        }
    }
}

/// pi's text for a call whose result never came.
const PI_NO_RESULT: &str = "No result provided";

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
        Object::new()
            .string("leafId", &self.leaf_id)
            .raw("compaction", &compaction)
            .raw("messages", &crate::json::array(self.messages.iter()))
            .raw(
                "keptEntryIds",
                &crate::json::string_or_null_array(
                    self.kept_entry_ids.iter().map(Option::as_deref),
                ),
            )
            .raw("interactions", &interactions)
            .raw("metadata", &metadata)
            .raw("budget", &budget)
            .raw("skipped", &defects(&self.skipped))
            .raw("defects", &defects(&self.defects))
            .finish()
    }
}

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

/// Reads the tool facts of messages, reusing one scan buffer.
#[derive(Default)]
pub(crate) struct ToolReader {
    tape: Tape,
}

/// What a message says about tool calls: the ids it calls, or the id it answers.
#[derive(Default)]
pub(crate) struct ToolFacts {
    pub(crate) calls: Vec<String>,
    pub(crate) result_for: Option<String>,
}

impl ToolReader {
    /// The tool facts of a message entry. A result's id and whether an assistant
    /// message calls tools were recorded when it was parsed; only a message that calls
    /// tools is read again, for its call ids.
    pub(crate) fn read(
        &mut self,
        entry: &PathEntry<'_>,
        message: &[u8],
    ) -> Result<ToolFacts, Error> {
        let mut facts = ToolFacts::default();
        match &entry.facts.body {
            Body::Message {
                tools: Tools::Result(call),
                ..
            } => facts.result_for = Some(call.of(entry.json).to_owned()),
            Body::Message {
                tools: Tools::Calls,
                ..
            } => {
                json::scan(message, MAX_DEPTH, &mut self.tape)
                    .map_err(|_| Error::internal("a committed message does not scan"))?;
                let tape = &self.tape;
                if let Some(content) = tape.get(0, "content") {
                    for block in tape.elements(content) {
                        let is_call = tape.get(block, "type").map(|t| tape.string(t)).as_deref()
                            == Some("toolCall");
                        if is_call && let Some(id) = tape.get(block, "id") {
                            facts.calls.push(tape.string(id).into_owned());
                        }
                    }
                }
            }
            _ => {}
        }
        Ok(facts)
    }
}

/// What the rule of a compaction's cut reads of an ancestor: its id, its role when it
/// is a message, and a message's tool facts. A store's path entry is one; the
/// importer's compact record of an entry it wrote is another, so that the rule has
/// one implementation.
pub(crate) trait Ancestor {
    fn id(&self) -> &str;
    /// `None` for an entry that is not a message.
    fn role(&self) -> Option<Role>;
    /// The tool facts of a message (empty for any other entry).
    fn tool_facts(&self, reader: &mut ToolReader) -> Result<ToolFacts, Error>;
}

impl Ancestor for PathEntry<'_> {
    fn id(&self) -> &str {
        PathEntry::id(self)
    }

    fn role(&self) -> Option<Role> {
        self.facts.role()
    }

    fn tool_facts(&self, reader: &mut ToolReader) -> Result<ToolFacts, Error> {
        match self.message() {
            Some(message) => reader.read(self, message),
            None => Ok(ToolFacts::default()),
        }
    }
}

/// The rule of a compaction's cut (docs/contract.md §6.2), over its ancestors from its parent up
/// to the root, walked lazily: the walk stops as soon as the answer is known.
/// `exists` says whether an id names any entry at all.
pub(crate) fn check_compaction<A: Ancestor>(
    compaction_id: &str,
    first_kept: Option<&str>,
    mut ancestors: impl Iterator<Item = A>,
    exists: &dyn Fn(&str) -> bool,
) -> Result<(), Error> {
    let fail = |reason| {
        Err(Error::InvalidCompaction {
            compaction_id: compaction_id.to_owned(),
            first_kept_entry_id: first_kept.map(str::to_owned),
            reason,
            hint: Hint::None,
        })
    };
    let mut reader = ToolReader::default();
    let Some(first) = first_kept else {
        return check_nothing_pending(ancestors, &mut reader, fail);
    };
    if !exists(first) {
        return fail(CompactionFault::UnknownEntry);
    }
    // Walk up to F, remembering the earliest message seen at or after it: the first
    // message the compaction keeps.
    let mut walked = Vec::new();
    let mut first_kept_role = None;
    let mut found = false;
    for entry in ancestors.by_ref() {
        if let Some(role) = entry.role() {
            first_kept_role = Some(role);
        }
        let is_first = entry.id() == first;
        walked.push(entry);
        if is_first {
            found = true;
            break;
        }
    }
    if !found {
        return fail(CompactionFault::NotOnPath);
    }
    match first_kept_role {
        // Nothing lies between F and the compaction: it keeps nothing from before it,
        // and the rule for null applies.
        None => check_nothing_pending(walked.into_iter().chain(ancestors), &mut reader, fail),
        Some(Role::User) => Ok(()),
        // Any other first kept message is a cut point only as the first message of
        // the whole path.
        Some(_) => match ancestors.any(|e| e.role().is_some()) {
            true => fail(CompactionFault::NotInteractionStart),
            false => Ok(()),
        },
    }
}

/// The rule for keeping nothing: the last interaction before the compaction (from its
/// last `user` message, or the path's first message, to the parent) has no unanswered
/// tool call. Walks up from the parent only to the start of that interaction.
fn check_nothing_pending<A: Ancestor>(
    ancestors: impl Iterator<Item = A>,
    reader: &mut ToolReader,
    fail: impl Fn(CompactionFault) -> Result<(), Error>,
) -> Result<(), Error> {
    // Walking backwards, a result is seen before its call.
    let mut answered: HashSet<String> = HashSet::new();
    for entry in ancestors {
        let Some(role) = entry.role() else {
            continue;
        };
        let facts = entry.tool_facts(reader)?;
        if let Some(id) = facts.result_for {
            answered.insert(id);
        }
        if facts.calls.iter().any(|call| !answered.contains(call)) {
            return fail(CompactionFault::PendingToolCalls);
        }
        if role == Role::User {
            break;
        }
    }
    Ok(())
}

/// Under `strictRoles`, an extension message or block on the path is `invalid_entry`
/// (the parser's rule, re-run on the path's entries).
fn check_strict(path: &[PathEntry<'_>]) -> Result<(), Error> {
    let mut parser = EntryParser::new(ParseOptions { strict_roles: true });
    for entry in path {
        parser
            .parse(entry.json)
            .map_err(crate::entry::ParseFault::into_error)?;
    }
    Ok(())
}

/// One kept message: its place on the path and what it says about tools.
struct Kept<'a> {
    entry: PathEntry<'a>,
    message: &'a [u8],
    role: Role,
    tools: ToolFacts,
}

/// A run of kept messages, `[start, end)` in the kept list.
struct Run {
    start: usize,
    end: usize,
    cut_point: bool,
    defects: Vec<(usize, Defect)>,
    /// Each synthetic result, the kept index it follows and the kept index of the
    /// message holding its call, in kept order.
    synthesized: Vec<(usize, String, usize)>,
    /// The kept indices of messages a profile leaves out.
    dropped: HashSet<usize>,
    tokens: f64,
}

/// One message of a run: its JSON, its entry (`None` for a synthetic result) and the
/// entry an estimator failure names.
struct Item<'r> {
    text: Cow<'r, str>,
    entry: Option<&'r str>,
    names: &'r str,
}

impl Run {
    /// The run's messages in order.
    fn items<'k>(&self, kept: &'k [(usize, Kept<'_>)]) -> Result<Vec<Item<'k>>, Error> {
        let mut items = Vec::with_capacity(self.end - self.start + self.synthesized.len());
        let mut synthesized = self.synthesized.iter().peekable();
        for (k, (_, m)) in kept.iter().enumerate().take(self.end).skip(self.start) {
            let id = m.entry.id();
            if !self.dropped.contains(&k) {
                items.push(Item {
                    text: Cow::Borrowed(crate::entry::utf8(m.message)?),
                    entry: Some(id),
                    names: id,
                });
            }
            while let Some((_, text, holder)) = synthesized.next_if(|(after, ..)| *after == k) {
                items.push(Item {
                    text: Cow::Owned(text.clone()),
                    entry: None,
                    names: kept[*holder].1.entry.id(),
                });
            }
        }
        Ok(items)
    }
}

/// Where a synthetic result goes.
#[derive(Clone, Copy)]
enum Placement {
    /// Right after the message holding the call (Codex).
    AfterCall,
    /// After the last message of the reply holding the call: the run of assistant
    /// messages it belongs to (`onDefect: "synthesize"`).
    AfterReply,
    /// After the results that follow the reply, before the next assistant or user
    /// message (pi).
    BeforeNextTurn,
}

impl Placement {
    /// Whether a synthetic result placed after one message moves past the next, of
    /// role `next`.
    fn passes(self, next: Role) -> bool {
        match self {
            Placement::AfterCall => false,
            Placement::AfterReply => next == Role::Assistant,
            Placement::BeforeNextTurn => next != Role::Assistant && next != Role::User,
        }
    }

    /// For each message of a run (its roles in order), the index of the message its
    /// synthetic results follow: itself, or the last of the messages after it that
    /// [`Placement::passes`] lets it move past. Computed from the end in one pass, so
    /// that a run with many unanswered calls is read once, not once per call.
    fn targets(self, roles: &[Role]) -> Vec<usize> {
        let mut targets: Vec<usize> = (0..roles.len()).collect();
        for at in (0..roles.len().saturating_sub(1)).rev() {
            if self.passes(roles[at + 1]) {
                targets[at] = targets[at + 1];
            }
        }
        targets
    }
}

/// What is done about one pairing defect.
enum Act<'o> {
    Fail,
    Skip,
    Keep,
    Drop,
    /// Leave out the message holding the call when none of its calls has a result
    /// (Claude Code); keep it otherwise.
    DropCaller,
    Synthesize(Placement, &'o str),
}

/// The rule for each defect: `onDefect`, or, when it is left at `"error"` and a profile
/// is given, that agent's.
fn act<'o>(
    options: &'o ContextOptions,
    profile: Option<Profile>,
    reason: PairingDefect,
) -> Act<'o> {
    let missing = reason == PairingDefect::MissingResult;
    match (options.on_defect, profile) {
        (OnDefect::Error, Some(Profile::Pi)) if missing => {
            Act::Synthesize(Placement::BeforeNextTurn, PI_NO_RESULT)
        }
        (OnDefect::Error, Some(Profile::Codex)) if missing => {
            Act::Synthesize(Placement::AfterCall, SYNTHESIZED_TEXT)
        }
        (OnDefect::Error, Some(Profile::Codex)) if reason != PairingDefect::DuplicateToolCall => {
            Act::Drop
        }
        (OnDefect::Error, Some(Profile::ClaudeCode)) if missing => Act::DropCaller,
        (OnDefect::Error, Some(_)) => Act::Keep,
        (OnDefect::Error, None) => Act::Fail,
        (OnDefect::Skip, _) => Act::Skip,
        (OnDefect::Keep, _) => Act::Keep,
        (OnDefect::Synthesize, _) if missing => {
            Act::Synthesize(Placement::AfterReply, &options.synthesized_text)
        }
        (OnDefect::Synthesize, _) => Act::Fail,
    }
}

/// The profile in force: the one given, or for `auto` the root's `importedFormat`;
/// `None` for `none`.
fn resolve_profile(root: Option<&PathEntry<'_>>, profile: Profile) -> Option<Profile> {
    match profile {
        Profile::Auto => imported_format(root).map(Profile::of_format),
        Profile::None => None,
        given => Some(given),
    }
}

/// The agent a session was imported from: its root's `importedFormat` (an importer's
/// root is a metadata entry: the root of a native session is not scanned).
fn imported_format(root: Option<&PathEntry<'_>>) -> Option<Format> {
    let root = root.filter(|r| matches!(r.facts.body, Body::Metadata { .. }))?;
    let mut tape = Tape::default();
    json::scan(root.json, MAX_DEPTH, &mut tape).ok()?;
    let format = tape.get(0, "importedFormat")?;
    Format::from_name(&tape.string(format))
}

/// A string member of a message's top-level object.
fn member(tape: &mut Tape, message: &[u8], name: &str) -> Option<String> {
    json::scan(message, MAX_DEPTH, tape).ok()?;
    let value = tape.get(0, name)?;
    Some(tape.string(value).into_owned())
}

/// Claude Code's reading of a reply written one content block per line: consecutive
/// assistant messages with one `responseId` (results between them allowed) are one
/// assistant message at the place of the first, its content the parts' blocks in
/// order and its other members the last part's; the results follow it. An assistant
/// message of whitespace-only text is left out.
fn merge_split_replies(items: Vec<Item<'_>>) -> Result<Vec<Item<'_>>, Error> {
    let mut tape = Tape::default();
    let mut out: Vec<Item<'_>> = Vec::with_capacity(items.len());
    // The reply being read.
    let mut reply: Option<SplitReply<'_>> = None;
    for item in items {
        let role = member(&mut tape, item.text.as_bytes(), "role");
        match role.as_deref() {
            Some("assistant") if whitespace_only(&tape) => {}
            Some("assistant") => {
                let id = tape
                    .get(0, "responseId")
                    .map(|v| tape.string(v).into_owned());
                match (&mut reply, id) {
                    (Some(current), Some(id)) if current.response_id == id => {
                        current.add(&out[current.at].text, &tape, item.text)?;
                    }
                    (_, id) => {
                        if let Some(done) = reply.take() {
                            done.finish(&mut out)?;
                        }
                        reply = id.map(|response_id| SplitReply::new(out.len(), response_id));
                        out.push(item);
                    }
                }
            }
            Some("toolResult") => out.push(item),
            _ => {
                if let Some(done) = reply.take() {
                    done.finish(&mut out)?;
                }
                out.push(item);
            }
        }
    }
    if let Some(done) = reply.take() {
        done.finish(&mut out)?;
    }
    for item in &mut out {
        if let Some(renamed) = renamed_calls(&item.text)? {
            item.text = Cow::Owned(renamed);
        }
    }
    Ok(out)
}

/// A reply written one block per line, while its parts are read: the blocks gathered so
/// far and the last part, so that the merged message is written once, when the reply
/// ends (writing it at each part would copy the reply once per part).
struct SplitReply<'r> {
    /// Where its first part is in the output.
    at: usize,
    response_id: String,
    /// The content blocks (JSON texts) of the reply as merged so far; `None` until a
    /// second part comes.
    blocks: Option<Vec<String>>,
    /// The last part after the first, whose other members the merged message takes.
    last: Option<Cow<'r, str>>,
}

impl<'r> SplitReply<'r> {
    fn new(at: usize, response_id: String) -> SplitReply<'r> {
        SplitReply {
            at,
            response_id,
            blocks: None,
            last: None,
        }
    }

    /// Adds a later part, `part`, scanned into `tape`; `first` is the first part.
    fn add(&mut self, first: &str, tape: &Tape, part: Cow<'r, str>) -> Result<(), Error> {
        let blocks = match &mut self.blocks {
            Some(blocks) => blocks,
            None => {
                let mut first_tape = Tape::default();
                json::scan(first.as_bytes(), MAX_DEPTH, &mut first_tape)
                    .map_err(|_| Error::internal("a committed message does not scan"))?;
                self.blocks.insert(content_blocks(&first_tape)?)
            }
        };
        // A part without `content` leaves the merged message without one: what came
        // before it is not sent.
        if tape.get(0, "content").is_none() {
            blocks.clear();
        }
        blocks.extend(content_blocks(tape)?);
        self.last = Some(part);
        Ok(())
    }

    /// Writes the merged message in the place of the first part.
    fn finish(self, out: &mut [Item<'r>]) -> Result<(), Error> {
        let (Some(blocks), Some(last)) = (self.blocks, self.last) else {
            return Ok(());
        };
        let mut tape = Tape::default();
        json::scan(last.as_bytes(), MAX_DEPTH, &mut tape)
            .map_err(|_| Error::internal("a committed message does not scan"))?;
        if let Some(item) = out.get_mut(self.at) {
            item.text = Cow::Owned(with_content(&tape, &blocks));
        }
        Ok(())
    }
}

/// The content blocks (JSON texts) of the message scanned into `t`: none when its
/// `content` is absent or not an array.
fn content_blocks(t: &Tape) -> Result<Vec<String>, Error> {
    let mut blocks = Vec::new();
    if let Some(content) = t.get(0, "content") {
        for block in t.elements(content) {
            blocks.push(crate::entry::utf8(t.raw(block))?.to_owned());
        }
    }
    Ok(blocks)
}

/// Codex's tool searches, kept whole as `codexItem` on assistant messages with no
/// content, paired as Codex pairs them when it resumes: a `tool_search_call` without a
/// `tool_search_output` gets an empty one right after it, and an output without a call
/// is left out. Each is listed as a defect (`missing_result` synthesized,
/// `orphan_result` dropped).
fn pair_tool_searches(runs: &mut [Vec<Item<'_>>], tape: &mut Tape) -> Vec<Defect> {
    // (run, index, kind, call id) of every tool search item.
    let mut found: Vec<(usize, usize, bool, String)> = Vec::new();
    for (r, items) in runs.iter().enumerate() {
        for (i, item) in items.iter().enumerate() {
            if !item.text.contains("\"tool_search_") {
                continue;
            }
            if json::scan(item.text.as_bytes(), MAX_DEPTH, tape).is_err() {
                continue;
            }
            let Some(codex) = tape.get(0, "codexItem") else {
                continue;
            };
            let kind = tape.get(codex, "type").map(|v| tape.string(v).into_owned());
            let call = tape
                .get(codex, "call_id")
                .map(|v| tape.string(v).into_owned());
            if let (Some(kind), Some(call)) = (kind, call) {
                match kind.as_str() {
                    "tool_search_call" => found.push((r, i, true, call)),
                    "tool_search_output" => found.push((r, i, false, call)),
                    _ => {}
                }
            }
        }
    }
    let calls: HashSet<&str> = found.iter().filter(|f| f.2).map(|f| f.3.as_str()).collect();
    let outputs: HashSet<&str> = found
        .iter()
        .filter(|f| !f.2)
        .map(|f| f.3.as_str())
        .collect();
    let mut defects = Vec::new();
    let mut found = found.iter().peekable();
    // Each run with a tool search is written anew, in one pass: inserting or removing
    // in place would move the rest of the run once per item.
    for (r, items) in runs.iter_mut().enumerate() {
        if found.peek().is_none_or(|f| f.0 != r) {
            continue;
        }
        let start = items
            .first()
            .and_then(|item| item.entry)
            .unwrap_or_default()
            .to_owned();
        let mut paired = Vec::with_capacity(items.len());
        for (i, item) in std::mem::take(items).into_iter().enumerate() {
            let Some((_, _, is_call, call)) = found.next_if(|f| (f.0, f.1) == (r, i)) else {
                paired.push(item);
                continue;
            };
            let defect = |reason, action| Defect {
                interaction_start_id: start.clone(),
                entry_id: item.entry.unwrap_or_default().to_owned(),
                tool_call_id: call.clone(),
                reason,
                action: Some(action),
            };
            if *is_call && !outputs.contains(call.as_str()) {
                defects.push(defect(PairingDefect::MissingResult, SYNTHESIZED));
                let output = Object::new()
                    .string("type", "tool_search_output")
                    .string("call_id", call)
                    .string("status", "completed")
                    .string("execution", "client")
                    .raw("tools", "[]")
                    .finish();
                let message = Object::new()
                    .string("role", "assistant")
                    .raw("content", "[]")
                    .raw("codexItem", &output)
                    .raw("synthetic", "true")
                    .finish();
                let names = item.names;
                paired.push(item);
                paired.push(Item {
                    text: Cow::Owned(message),
                    entry: None,
                    names,
                });
            } else if !*is_call && !calls.contains(call.as_str()) {
                defects.push(defect(PairingDefect::OrphanResult, DROPPED));
            } else {
                paired.push(item);
            }
        }
        *items = paired;
    }
    defects
}

/// Whether a compaction's `details` (JSON) carry the Codex importer's mark of a
/// replacement history, which Codex sends in place of the summary.
fn marks_replacement_history(details: &[u8]) -> bool {
    memchr::memmem::find(details, b"\"replacementHistory\"").is_some()
}

/// Codex's budget for the user messages it keeps when it rebuilds the history at a
/// compaction without a replacement history, in its tokens of 4 bytes.
const CODEX_KEPT_USER_TOKENS: usize = 20_000;

/// The history Codex rebuilds at a compaction without a replacement history (an older
/// `compacted` line), before the summary it puts last: the user messages before the
/// compaction (`before`: its ancestors, nearest first), newest first while they fit in
/// [`CODEX_KEPT_USER_TOKENS`] (a message's text bytes / 4, rounded up), then in their
/// order, each with its text blocks only. Codex's own context messages (AGENTS.md
/// instructions, the environment context, …: [`codex_context_message`]) are not user
/// messages to it; an earlier
/// compaction's summary is one (it is part of the history Codex rebuilt there), and an
/// earlier compaction with a replacement history ends the walk (nothing before it is in
/// that history). The message that does not fit is kept shortened to the tokens left
/// ([`codex_shortened`]) and ends the walk.
fn codex_rebuilt_history<'a>(
    before: impl Iterator<Item = PathEntry<'a>>,
    options: &ContextOptions,
    tape: &mut Tape,
) -> Result<Vec<Item<'a>>, Error> {
    let bad = |_| Error::internal("a committed message does not scan");
    let mut kept: Vec<Item<'a>> = Vec::new();
    let mut room = CODEX_KEPT_USER_TOKENS;
    for entry in before {
        let (text, parts) = match (&entry.facts.body, entry.message()) {
            (Body::Compaction { details, .. }, _)
                if details
                    .as_ref()
                    .is_some_and(|d| marks_replacement_history(d.bytes(entry.json))) =>
            {
                break;
            }
            (Body::Compaction { summary, .. }, _) => {
                let text = summary_message(&entry, summary, options)?;
                json::scan(text.as_bytes(), MAX_DEPTH, tape).map_err(bad)?;
                let parts = text_parts(tape);
                (text, parts)
            }
            (_, Some(message)) if entry.facts.role() == Some(Role::User) => {
                json::scan(message, MAX_DEPTH, tape).map_err(bad)?;
                if codex_context_message(tape) {
                    continue;
                }
                let text = text_only(tape, message)?;
                (text, text_parts(tape))
            }
            _ => continue,
        };
        if room == 0 {
            break;
        }
        let tokens = parts.iter().map(String::len).sum::<usize>().div_ceil(4);
        if tokens > room {
            // Codex keeps a shortened copy of the message that overflows, and stops.
            kept.push(Item {
                text: Cow::Owned(with_content(tape, &codex_shortened(&parts, room * 4))),
                entry: Some(entry.id()),
                names: entry.id(),
            });
            break;
        }
        room -= tokens;
        kept.push(Item {
            text: Cow::Owned(text),
            entry: Some(entry.id()),
            names: entry.id(),
        });
    }
    kept.reverse();
    Ok(kept)
}

/// The texts of the message scanned into `tape`: its string content, or its text
/// blocks' texts in order.
fn text_parts(tape: &Tape) -> Vec<String> {
    let Some(content) = tape.get(0, "content") else {
        return Vec::new();
    };
    if tape.raw(content).first() == Some(&b'"') {
        return vec![tape.string(content).into_owned()];
    }
    tape.elements(content)
        .filter(|&b| {
            tape.get(b, "type")
                .is_some_and(|t| tape.string(t) == "text")
        })
        .filter_map(|b| tape.get(b, "text"))
        .map(|t| tape.string(t).into_owned())
        .collect()
}

/// Codex's shortened copy of a message's texts `parts` that do not fit in `budget`
/// bytes, as text blocks (JSON): the first half of the budget and the last half, each
/// cut at a character boundary (the first end moved back, the second start forward)
/// across the parts joined, the parts' own bounds kept, and between them a block
/// `…N tokens truncated…`, N the bytes over the budget / 4 rounded up (checked against
/// Codex 0.171.0 by tests/interop_agents.rs).
fn codex_shortened(parts: &[String], budget: usize) -> Vec<String> {
    let joined: String = parts.concat();
    let mut head_end = budget / 2;
    let mut tail_start = joined.len().saturating_sub(budget - head_end);
    while head_end > 0 && !joined.is_char_boundary(head_end) {
        head_end -= 1;
    }
    while tail_start < joined.len() && !joined.is_char_boundary(tail_start) {
        tail_start += 1;
    }
    let block = |text: &str| {
        Object::new()
            .string("type", "text")
            .string("text", text)
            .finish()
    };
    let mut head = Vec::new();
    let mut tail = Vec::new();
    let mut start = 0;
    for part in parts {
        let end = start + part.len();
        if start < head_end {
            head.push(&part[..head_end.min(end) - start]);
        }
        if end > tail_start {
            tail.push(&part[tail_start.max(start) - start..]);
        }
        start = end;
    }
    let removed = joined.len().saturating_sub(budget).div_ceil(4);
    let marker = format!("…{removed} tokens truncated…");
    head.into_iter()
        .filter(|t| !t.is_empty())
        .map(block)
        .chain([block(&marker)])
        .chain(tail.into_iter().filter(|t| !t.is_empty()).map(block))
        .collect()
}

/// The message scanned into `tape` (its JSON `message`) with its text blocks only, as
/// Codex sends a kept user message (an image is left out); unchanged when its content
/// is a string or only text.
fn text_only(tape: &Tape, message: &[u8]) -> Result<String, Error> {
    let Some(content) = tape.get(0, "content") else {
        return Ok(crate::entry::utf8(message)?.to_owned());
    };
    let mut blocks = Vec::new();
    let mut all_text = true;
    for block in tape.elements(content) {
        if tape
            .get(block, "type")
            .is_some_and(|t| tape.string(t) == "text")
        {
            blocks.push(crate::entry::utf8(tape.raw(block))?.to_owned());
        } else {
            all_text = false;
        }
    }
    if all_text {
        return Ok(crate::entry::utf8(message)?.to_owned());
    }
    Ok(with_content(tape, &blocks))
}

/// Whether the user message scanned into `tape` is one Codex writes itself for the
/// model, which it does not count as the user's: a text block whose text, trimmed,
/// opens and closes with the markers of one of its kinds (ASCII case ignored), as Codex
/// 0.171.0 reads them (checked against the CLI by tests/interop_agents.rs:
/// `<user_instructions>` is not one of them, an opening marker alone is not enough).
fn codex_context_message(tape: &Tape) -> bool {
    const MARKERS: [(&str, &str); 6] = [
        ("# AGENTS.md instructions", "</INSTRUCTIONS>"),
        ("<environment_context>", "</environment_context>"),
        ("<user_shell_command>", "</user_shell_command>"),
        ("<turn_aborted>", "</turn_aborted>"),
        ("<skill>", "</skill>"),
        ("<subagent_notification>", "</subagent_notification>"),
    ];
    let Some(content) = tape.get(0, "content") else {
        return false;
    };
    let texts: Vec<String> = match tape.elements(content).next() {
        None if tape.raw(content).first() == Some(&b'"') => {
            vec![tape.string(content).into_owned()]
        }
        _ => tape
            .elements(content)
            .filter_map(|b| tape.get(b, "text"))
            .map(|t| tape.string(t).into_owned())
            .collect(),
    };
    texts.iter().any(|text| {
        let text = text.trim();
        MARKERS.iter().any(|(open, close)| {
            text.get(..open.len())
                .is_some_and(|head| head.eq_ignore_ascii_case(open))
                && text
                    .get(text.len().saturating_sub(close.len())..)
                    .is_some_and(|tail| tail.eq_ignore_ascii_case(close))
        })
    })
}

/// What Claude Code puts after a conversation that ends on the user's side.
const NO_RESPONSE_REQUESTED: &str = r#"{"role":"assistant","content":[{"type":"text","text":"No response requested."}],"synthetic":true}"#;

/// Claude Code resuming a conversation whose last message (local commands' output
/// aside) is the user's — an interrupted turn, a prompt never answered — puts an
/// assistant "No response requested." right after it, so that what it sends next is
/// a new turn.
fn no_response_requested(runs: &mut [Vec<Item<'_>>], tape: &mut Tape) {
    for items in runs.iter_mut().rev() {
        let last = items.iter().rposition(|item| {
            json::scan(item.text.as_bytes(), MAX_DEPTH, tape).is_ok()
                && tape.get(0, "localCommand").is_none()
        });
        let Some(last) = last else {
            continue;
        };
        let role = member(tape, items[last].text.as_bytes(), "role");
        if matches!(role.as_deref(), Some("user" | "toolResult")) {
            let names = items[last].names;
            items.insert(
                last + 1,
                Item {
                    text: Cow::Borrowed(NO_RESPONSE_REQUESTED),
                    entry: None,
                    names,
                },
            );
        }
        return;
    }
}

/// Claude Code's tool renamed since older transcripts were written: it sends an old
/// call under the new name, so that the history matches its tool list (seen with
/// Claude Code 2.1: `Task`, its sub-agent tool, is sent as `Agent`).
const RENAMED_TOOLS: [(&str, &str); 1] = [("Task", "Agent")];

/// `message` with its `toolCall` blocks under their new names, `None` when none is
/// renamed.
fn renamed_calls(message: &str) -> Result<Option<String>, Error> {
    if !RENAMED_TOOLS
        .iter()
        .any(|(old, _)| message.contains(&format!("\"name\":\"{old}\"")))
    {
        return Ok(None);
    }
    let bad = |_| Error::internal("a committed message does not scan");
    let mut t = Tape::default();
    json::scan(message.as_bytes(), MAX_DEPTH, &mut t).map_err(bad)?;
    let Some(content) = t.get(0, "content") else {
        return Ok(None);
    };
    let mut changed = false;
    let mut blocks = Vec::new();
    for block in t.elements(content) {
        let raw = crate::entry::utf8(t.raw(block))?;
        let call = t
            .get(block, "type")
            .is_some_and(|v| t.string(v) == "toolCall");
        let new_name = t.get(block, "name").and_then(|v| {
            let name = t.string(v);
            RENAMED_TOOLS
                .iter()
                .find(|(old, _)| *old == name)
                .map(|(_, new)| *new)
        });
        match new_name.filter(|_| call) {
            Some(new_name) => {
                changed = true;
                blocks.push(with_member(&t, block, "name", |o| {
                    o.string("name", new_name)
                }));
            }
            None => blocks.push(raw.to_owned()),
        }
    }
    Ok(changed.then(|| with_content(&t, &blocks)))
}

/// An assistant message (scanned into `tape`) whose content is text blocks holding only
/// whitespace: Claude Code leaves such a message (a reply's `"\n\n"` part) out of what it
/// sends, as the API refuses a whitespace-only text block.
fn whitespace_only(tape: &Tape) -> bool {
    let Some(content) = tape.get(0, "content") else {
        return false;
    };
    let mut blocks = tape.elements(content).peekable();
    if blocks.peek().is_none() {
        return false;
    }
    blocks.all(|block| {
        tape.get(block, "type")
            .is_some_and(|t| tape.string(t) == "text")
            && tape
                .get(block, "text")
                .is_some_and(|t| tape.string(t).trim().is_empty())
    })
}

/// The message scanned into `t`, its `content` replaced by `blocks` (JSON texts).
fn with_content(t: &Tape, blocks: &[String]) -> String {
    with_member(t, 0, "content", |o| {
        o.raw("content", &json::array(blocks.iter()))
    })
}

/// The object at `node` of `t`, its members copied as written but `key`, which `set`
/// writes in its place.
fn with_member(t: &Tape, node: usize, key: &str, set: impl Fn(Object) -> Object) -> String {
    let mut object = Object::new();
    for (name, value) in t.members(node) {
        let name = t.string(name);
        object = if name == key {
            set(object)
        } else {
            object.raw_bytes(&name, t.raw(value))
        };
    }
    object.finish()
}

/// The entries hanging directly under an entry, in commit order: the pure function
/// reads them from its id index, the store from its own.
pub(crate) type ChildrenOf<'a, 'f> = &'f dyn Fn(&str) -> Result<Vec<PathEntry<'a>>, Error>;

/// How many levels of non-message lines (`progress`) the walk for a side result goes
/// through, and how many entries it visits for one reply at most.
const SIDE_DEPTH: usize = 4;
const SIDE_VISITS: usize = 4096;

/// Claude Code's reading of a reply written in parallel: it writes one reply as one line
/// per content block (one `responseId`), and while the calls run it may hang later
/// parts and each result on the block line it answers (or on a `progress` line under
/// it), so the path to the leaf misses them. For each reply on the kept path, the
/// parts and results found among the children of its lines that are off the path
/// (walking through non-message lines, bounded) are taken back, as Claude Code's own
/// reader takes them back: the reply's parts in the order they were written (commit
/// order), so that the merged reply holds every block, then its results, on the path
/// and off it, in the order they were written.
fn recover_side_results<'a>(
    kept: &mut Vec<(usize, Kept<'a>)>,
    path: &[PathEntry<'a>],
    children: ChildrenOf<'a, '_>,
    position: &dyn Fn(&str) -> Option<u64>,
    reader: &mut ToolReader,
    tape: &mut Tape,
) -> Result<(), Error> {
    let answered: HashSet<String> = kept
        .iter()
        .filter_map(|(_, m)| m.tools.result_for.clone())
        .collect();
    let response_id = |tape: &mut Tape, role: Role, message: &[u8]| -> Option<String> {
        if role != Role::Assistant {
            return None;
        }
        member(tape, message, "responseId")
    };
    // First what is found for each group, then the kept list rebuilt once: splicing
    // each group back in place would move the rest of the list once per group.
    let mut recovered: Vec<Recovered<'a>> = Vec::new();
    let mut k = 0;
    while k < kept.len() {
        let Some(group) = response_id(tape, kept[k].1.role, kept[k].1.message) else {
            k += 1;
            continue;
        };
        // The group: its parts, results allowed between them; `last` its last part.
        let mut last = k;
        let mut j = k + 1;
        while j < kept.len() {
            match kept[j].1.role {
                Role::ToolResult => {}
                Role::Assistant
                    if response_id(tape, Role::Assistant, kept[j].1.message).as_deref()
                        == Some(&group) =>
                {
                    last = j;
                }
                _ => break,
            }
            j += 1;
        }
        // The results that follow the group on the path.
        let mut end = last + 1;
        while end < kept.len() && kept[end].1.role == Role::ToolResult {
            end += 1;
        }
        // How many times each call of the group is still unanswered.
        let mut missing: HashMap<String, usize> = HashMap::new();
        for call in kept[k..=last]
            .iter()
            .flat_map(|(_, m)| m.tools.calls.iter())
            .filter(|call| !answered.contains(*call))
        {
            *missing.entry(call.clone()).or_default() += 1;
        }
        // The parts found off the path, with the path index of the line they hang under.
        let mut parts: Vec<(usize, Kept<'a>)> = Vec::new();
        let mut found: Vec<Kept<'a>> = Vec::new();
        let (from, to) = (kept[k].0, kept[end - 1].0);
        let mut queue: Vec<(PathEntry<'a>, usize, usize)> = Vec::new();
        for p in from..=to {
            let next = path.get(p + 1).map(|e| e.id());
            for child in children(path[p].id())? {
                if Some(child.id()) != next {
                    queue.push((child, 0, p));
                }
            }
        }
        let mut at = 0;
        while at < queue.len() && at < SIDE_VISITS {
            let (entry, depth, under) = queue[at];
            at += 1;
            match (entry.facts.role(), entry.message()) {
                (Some(Role::ToolResult), Some(message)) => {
                    let tools = reader.read(&entry, message)?;
                    let Some(call) = tools.result_for.as_deref() else {
                        continue;
                    };
                    if let Some(unanswered) = missing.get_mut(call).filter(|n| **n > 0) {
                        *unanswered -= 1;
                        // Later parts of the reply may hang under a result.
                        for child in children(entry.id())? {
                            queue.push((child, 0, under));
                        }
                        found.push(Kept {
                            entry,
                            message,
                            role: Role::ToolResult,
                            tools,
                        });
                    }
                }
                (Some(Role::Assistant), Some(message))
                    if response_id(tape, Role::Assistant, message).as_deref() == Some(&group) =>
                {
                    let tools = reader.read(&entry, message)?;
                    for call in tools.calls.iter().filter(|call| !answered.contains(*call)) {
                        *missing.entry(call.clone()).or_default() += 1;
                    }
                    parts.push((
                        under,
                        Kept {
                            entry,
                            message,
                            role: Role::Assistant,
                            tools,
                        },
                    ));
                    for child in children(entry.id())? {
                        queue.push((child, 0, under));
                    }
                }
                _ if depth < SIDE_DEPTH && matches!(entry.facts.body, Body::Metadata { .. }) => {
                    for child in children(entry.id())? {
                        queue.push((child, depth + 1, under));
                    }
                }
                _ => {}
            }
        }
        if !(parts.is_empty() && found.is_empty()) {
            recovered.push(Recovered {
                start: k,
                end,
                to,
                parts,
                found,
            });
        }
        k = end;
    }
    if recovered.is_empty() {
        return Ok(());
    }
    // Each group rebuilt in commit order, as Claude Code reads its file: every part (the
    // merged reply's blocks in the order they were written), then every result of its
    // calls, on the path or off it.
    let written = |m: &Kept<'_>| position(m.entry.id()).unwrap_or(u64::MAX);
    let mut old = std::mem::take(kept).into_iter().enumerate().peekable();
    for group in recovered {
        while let Some((_, m)) = old.next_if(|(i, _)| *i < group.start) {
            kept.push(m);
        }
        let mut members = Vec::with_capacity(group.end - group.start + group.parts.len());
        while let Some((_, m)) = old.next_if(|(i, _)| *i < group.end) {
            members.push(m);
        }
        let (mut results, mut segment): (Vec<_>, Vec<_>) = members
            .into_iter()
            .chain(group.parts)
            .partition(|(_, m)| m.role == Role::ToolResult);
        results.extend(group.found.into_iter().map(|m| (group.to, m)));
        segment.sort_by_cached_key(|(_, m)| written(m));
        results.sort_by_cached_key(|(_, m)| written(m));
        kept.extend(segment);
        kept.extend(results);
    }
    kept.extend(old.map(|(_, m)| m));
    Ok(())
}

/// What [`recover_side_results`] found for one split reply: the group `[start, end)` of
/// the kept list (its parts and the results after them), the path index of its last
/// entry, and the parts and results found off the path.
struct Recovered<'a> {
    start: usize,
    end: usize,
    to: usize,
    parts: Vec<(usize, Kept<'a>)>,
    found: Vec<Kept<'a>>,
}

/// `build_context` over a checked path, root first, for the pure function and the
/// store alike: [`build`], a defect error naming in its message the option that
/// answers it ([`Hint`]).
pub(crate) fn build_explained<'a, I: Iterator<Item = PathEntry<'a>> + Clone>(
    whole: PathTail<'a, I>,
    leaf_id: &str,
    options: &ContextOptions,
    position: &dyn Fn(&str) -> Option<u64>,
    children: ChildrenOf<'a, '_>,
    estimate: &mut Estimator<'_>,
) -> Result<Context, Error> {
    let root = whole.root;
    build(whole, leaf_id, options, position, children, estimate)
        .map_err(|e| with_hint(e, root.as_ref(), options))
}

/// `e` with its [`Hint`]: for a session imported from an agent and built without
/// that agent's rules, the agent's profile when it answers the error (any pairing
/// defect; a cut the agent takes); for any other pairing defect, `onDefect`.
fn with_hint(mut e: Error, root: Option<&PathEntry<'_>>, options: &ContextOptions) -> Error {
    // Under its agent's rules (a profile, onDefect "error") a session builds as that
    // agent sends it: only without them does the agent's profile answer a defect.
    let agents_rules =
        resolve_profile(root, options.profile).is_some() && options.on_defect == OnDefect::Error;
    let imported = imported_format(root).filter(|_| !agents_rules);
    match &mut e {
        Error::ToolPairing { hint, .. } => {
            *hint = imported.map_or(Hint::OnDefect, Hint::Imported);
        }
        Error::InvalidCompaction { hint, reason, .. } => {
            let agent_takes = matches!(
                reason,
                CompactionFault::NotInteractionStart | CompactionFault::PendingToolCalls
            );
            *hint = imported
                .filter(|_| agent_takes)
                .map_or(Hint::None, Hint::Imported);
        }
        _ => {}
    }
    e
}

/// `build_context` over a checked path, root first: see [`build_explained`].
pub(crate) fn build<'a, I: Iterator<Item = PathEntry<'a>> + Clone>(
    whole: PathTail<'a, I>,
    leaf_id: &str,
    options: &ContextOptions,
    position: &dyn Fn(&str) -> Option<u64>,
    children: ChildrenOf<'a, '_>,
    estimate: &mut Estimator<'_>,
) -> Result<Context, Error> {
    let path = &whole.tail[..];
    if options.strict_roles {
        check_strict(path)?;
    }
    // C: the compaction nearest the leaf; earlier ones are ignored.
    let compaction = path
        .iter()
        .enumerate()
        .rev()
        .find_map(|(i, e)| match &e.facts.body {
            Body::Compaction {
                first_kept,
                summary,
                tokens_before,
                details,
            } => Some((i, e, first_kept, summary, tokens_before, details)),
            _ => None,
        });
    let mut used = None;
    // K starts at this index of the path.
    let mut kept_from = 0;
    let profile = resolve_profile(whole.root.as_ref(), options.profile);
    // An agent sends what follows its own cut, even one this library would not write
    // (pi version 1 cuts at an assistant message; Claude Code compacts with a call
    // pending): under a profile such a cut is taken as it is, and what it keeps
    // follows the profile's pairing rules.
    let agents_cut = profile.is_some() && options.on_defect == OnDefect::Error;
    if let Some((at, entry, first_kept, summary, tokens_before, details)) = compaction {
        let first = first_kept.as_ref().map(|t| t.of(entry.json));
        let ancestors = path[..at].iter().rev().copied().chain(whole.above.clone());
        match check_compaction(entry.id(), first, ancestors, &|id| position(id).is_some()) {
            Err(Error::InvalidCompaction {
                reason: CompactionFault::NotInteractionStart | CompactionFault::PendingToolCalls,
                ..
            }) if agents_cut => {}
            checked => checked?,
        }
        kept_from = match first {
            // Validated: F is on the path before C.
            Some(first) => path[..at]
                .iter()
                .position(|e| e.id() == first)
                .unwrap_or(at),
            None => at + 1,
        };
        let text = |span: &crate::entry::Span| {
            crate::entry::utf8(span.bytes(entry.json)).map(str::to_owned)
        };
        used = Some((
            at,
            entry,
            summary,
            CompactionUsed {
                id: entry.id().to_owned(),
                first_kept_entry_id: first.map(str::to_owned),
                tokens_before: text(tokens_before)?,
                summary: text(summary)?,
                details: details.as_ref().map(text).transpose()?,
            },
        ));
    }
    // The first message of the whole path: the tail's first, unless one comes before
    // it (asked only when the first kept message is not a user message).
    let first_message_of_path = || {
        project_messages(path)
            .next()
            .map(|(i, _)| i)
            .filter(|_| !whole.above.clone().any(|e| e.message().is_some()))
    };

    // K: the kept messages, in path order.
    let mut reader = ToolReader::default();
    let mut tape = Tape::default();
    let mut kept = Vec::new();
    // Only the entries from the cut on are visited: before it, nothing is kept.
    for (k, message) in project_messages(&path[kept_from..]) {
        let i = kept_from + k;
        let entry = path[i];
        let role = entry.facts.role().unwrap_or(Role::Extension);
        // pi never sends a reply that stopped with an error or was aborted.
        if profile == Some(Profile::Pi)
            && role == Role::Assistant
            && matches!(
                member(&mut tape, message, "stopReason").as_deref(),
                Some("error" | "aborted")
            )
        {
            continue;
        }
        let tools = reader.read(&entry, message)?;
        kept.push((
            i,
            Kept {
                entry,
                message,
                role,
                tools,
            },
        ));
    }

    if profile == Some(Profile::ClaudeCode) && options.on_defect == OnDefect::Error {
        recover_side_results(&mut kept, path, children, position, &mut reader, &mut tape)?;
    }

    // Interactions: a start at K[0] and at every user message.
    let mut runs: Vec<Run> = Vec::new();
    for (k, (i, m)) in kept.iter().enumerate() {
        if k == 0 || m.role == Role::User {
            if let Some(last) = runs.last_mut() {
                last.end = k;
            }
            runs.push(Run {
                start: k,
                end: kept.len(),
                cut_point: m.role == Role::User || (k == 0 && Some(*i) == first_message_of_path()),
                defects: Vec::new(),
                synthesized: Vec::new(),
                dropped: HashSet::new(),
                tokens: 0.0,
            });
        }
    }
    for run in &mut runs {
        run.defects = pairing_defects(&kept[run.start..run.end], run.start);
    }

    // Pairing defects follow onDefect.
    let mut skipped = Vec::new();
    let mut defects = Vec::new();
    let first_defect = |runs: &[Run], only: &dyn Fn(&Defect) -> bool| -> Result<(), Error> {
        match runs
            .iter()
            .flat_map(|r| r.defects.iter())
            .filter(|(_, d)| only(d))
            .min_by_key(|(k, _)| *k)
        {
            Some((_, d)) => Err(Error::ToolPairing {
                entry_id: d.entry_id.clone(),
                tool_call_id: d.tool_call_id.clone(),
                reason: d.reason,
                interaction_start_id: d.interaction_start_id.clone(),
                hint: Hint::None,
            }),
            None => Ok(()),
        }
    };
    first_defect(&runs, &|d| {
        matches!(act(options, profile, d.reason), Act::Fail)
    })?;
    if options.on_defect == OnDefect::Skip {
        runs.retain_mut(|r| {
            let clean = r.defects.is_empty();
            skipped.extend(r.defects.drain(..).map(|(_, d)| d));
            clean
        });
    }
    for r in &mut runs {
        // Where synthetic results go in this run, and the message last read for them.
        let mut targets: Option<Vec<usize>> = None;
        let mut caller: Option<CallerFacts> = None;
        // How many calls of each message have no result.
        let mut missing_at: HashMap<usize, usize> = HashMap::new();
        for (k, d) in &r.defects {
            if d.reason == PairingDefect::MissingResult {
                *missing_at.entry(*k).or_default() += 1;
            }
        }
        for (k, mut d) in r.defects.drain(..) {
            match act(options, profile, d.reason) {
                Act::Fail | Act::Skip => {}
                Act::Keep => defects.push(d),
                Act::DropCaller => {
                    if missing_at.get(&k) == Some(&kept[k].1.tools.calls.len()) {
                        r.dropped.insert(k);
                        d.action = Some(DROPPED);
                    }
                    defects.push(d);
                }
                Act::Drop => {
                    r.dropped.insert(k);
                    d.action = Some(DROPPED);
                    defects.push(d);
                }
                Act::Synthesize(placement, text) => {
                    // One placement per build: the targets are computed once per run.
                    let targets = targets.get_or_insert_with(|| {
                        let roles: Vec<Role> =
                            kept[r.start..r.end].iter().map(|(_, m)| m.role).collect();
                        placement.targets(&roles)
                    });
                    let after = r.start + targets[k - r.start];
                    // The defects come in kept order: each caller is read once.
                    let facts = match caller {
                        Some(ref facts) if facts.at == k => facts,
                        _ => caller.insert(CallerFacts::read(&mut tape, k, &kept[k].1)?),
                    };
                    let message = facts.synthetic_result(&d.tool_call_id, text);
                    r.synthesized.push((after, message, k));
                    d.action = Some(SYNTHESIZED);
                    defects.push(d);
                }
            }
        }
        r.synthesized.sort_by_key(|(after, ..)| *after);
    }
    let mut runs_items = runs
        .iter()
        .map(|r| match profile {
            Some(Profile::ClaudeCode) => merge_split_replies(r.items(&kept)?),
            _ => r.items(&kept),
        })
        .collect::<Result<Vec<_>, Error>>()?;
    if profile == Some(Profile::ClaudeCode) {
        no_response_requested(&mut runs_items, &mut tape);
    }
    if profile == Some(Profile::Codex) {
        defects.extend(pair_tool_searches(&mut runs_items, &mut tape));
    }
    // A run a profile emptied (an output without a call, dropped) is no interaction.
    let (mut runs, mut runs_items): (Vec<Run>, Vec<Vec<Item<'_>>>) = runs
        .into_iter()
        .zip(runs_items)
        .filter(|(_, items)| !items.is_empty())
        .unzip();

    // The summary message.
    // Codex sends a compaction's replacement history, not its summary; without one, the
    // history it rebuilds: the user messages before the compaction, then the summary.
    let replaced = profile == Some(Profile::Codex)
        && used.as_ref().is_some_and(|(.., c)| {
            c.details
                .as_deref()
                .is_some_and(|d| marks_replacement_history(d.as_bytes()))
        });
    let rebuilt = profile == Some(Profile::Codex) && !replaced && options.summary_message;
    if let (true, Some((at, entry, summary, _))) = (rebuilt, &used) {
        let before = path[..*at].iter().rev().copied().chain(whole.above.clone());
        let mut items = codex_rebuilt_history(before, options, &mut tape)?;
        items.push(Item {
            text: Cow::Owned(summary_message(entry, summary, options)?),
            entry: Some(entry.id()),
            names: entry.id(),
        });
        // One interaction, before the kept ones; no cut point (its messages come from
        // before the compaction).
        runs.insert(
            0,
            Run {
                start: 0,
                end: 0,
                cut_point: false,
                defects: Vec::new(),
                synthesized: Vec::new(),
                dropped: HashSet::new(),
                tokens: 0.0,
            },
        );
        runs_items.insert(0, items);
    }
    let summary_message = match &used {
        Some((_, entry, summary, _)) if options.summary_message && !replaced && !rebuilt => {
            Some(summary_message(entry, summary, options)?)
        }
        _ => None,
    };

    // The budget: estimate, then keep interactions from the newest backwards.
    let mut report = None;
    let mut first_run = 0;
    if let Some(budget) = options.budget {
        let summary_tokens = match (&summary_message, &used) {
            (Some(text), Some((_, entry, ..))) => call_estimator(estimate, text, entry.id())?,
            _ => 0.0,
        };
        for (run, items) in runs.iter_mut().zip(&runs_items) {
            let mut tokens = 0.0;
            for item in items {
                tokens = add_tokens(tokens, call_estimator(estimate, &item.text, item.names)?);
            }
            run.tokens = tokens;
        }
        // Each term is finite and >= 0, so only the lower end can overflow: saturate it.
        let available =
            (budget.max_tokens - budget.reserved_output - budget.safety_margin).max(f64::MIN);
        let room = (available - summary_tokens).max(f64::MIN);
        let mut spent = 0.0;
        first_run = runs.len();
        for (r, run) in runs.iter().enumerate().rev() {
            let newest = r + 1 == runs.len();
            if !newest && add_tokens(spent, run.tokens) > room {
                break;
            }
            spent = add_tokens(spent, run.tokens);
            first_run = r;
        }
        let dropped = first_run;
        // Only what must stay (the summary and the newest interaction) can overflow.
        let overflow = spent > room;
        let reason = if overflow {
            BudgetReason::SingleInteractionOverflow
        } else if dropped > 0 {
            BudgetReason::Trimmed
        } else {
            BudgetReason::WithinBudget
        };
        let suggested = match runs.get(first_run) {
            Some(run) if dropped > 0 && run.cut_point => {
                Some(kept[run.start].1.entry.id().to_owned())
            }
            _ => None,
        };
        report = Some(BudgetReport {
            budget,
            available,
            used: add_tokens(summary_tokens, spent),
            reason,
            dropped_interactions: dropped,
            suggested_first_kept_entry_id: suggested,
        });
    }

    // Assemble.
    let mut messages = Vec::new();
    let mut kept_entry_ids = Vec::new();
    let mut interactions = Vec::new();
    if let Some(text) = summary_message {
        messages.push(text);
    }
    for (run, items) in runs.iter().zip(runs_items).skip(first_run) {
        interactions.push(Interaction {
            start: messages.len(),
            count: items.len(),
            first_entry_id: items
                .iter()
                .find_map(|i| i.entry)
                .unwrap_or_else(|| kept[run.start].1.entry.id())
                .to_owned(),
            cut_point: run.cut_point,
            tokens: options.budget.map(|_| run.tokens),
        });
        for item in items {
            messages.push(item.text.into_owned());
            kept_entry_ids.push(item.entry.map(str::to_owned));
        }
    }
    Ok(Context {
        leaf_id: leaf_id.to_owned(),
        compaction: used.map(|(.., c)| c),
        messages,
        kept_entry_ids,
        interactions,
        metadata: metadata(&whole.metadata)?,
        budget: report,
        skipped,
        defects,
    })
}

/// The pairing defects of one interaction, each with its index in the kept list (for
/// "the defect whose entry comes first in path order").
fn pairing_defects(run: &[(usize, Kept<'_>)], offset: usize) -> Vec<(usize, Defect)> {
    let start_id = run.first().map(|(_, m)| m.entry.id()).unwrap_or_default();
    let defect = |k: usize, m: &Kept<'_>, call: &str, reason| {
        (
            offset + k,
            Defect {
                interaction_start_id: start_id.to_owned(),
                entry_id: m.entry.id().to_owned(),
                tool_call_id: call.to_owned(),
                reason,
                action: None,
            },
        )
    };
    // Each call: the index of the message holding it, and whether it is answered.
    let mut calls: HashMap<&str, (usize, bool)> = HashMap::new();
    let mut order: Vec<&str> = Vec::new();
    let mut found = Vec::new();
    for (k, (_, m)) in run.iter().enumerate() {
        if m.role == Role::Assistant {
            for call in &m.tools.calls {
                if calls.contains_key(call.as_str()) {
                    found.push(defect(k, m, call, PairingDefect::DuplicateToolCall));
                } else {
                    calls.insert(call, (k, false));
                    order.push(call);
                }
            }
        }
        if let Some(id) = &m.tools.result_for {
            match calls.get_mut(id.as_str()) {
                None => found.push(defect(k, m, id, PairingDefect::OrphanResult)),
                Some((_, true)) => found.push(defect(k, m, id, PairingDefect::DuplicateToolResult)),
                Some((_, answered)) => *answered = true,
            }
        }
    }
    for call in order {
        if let Some(&(k, false)) = calls.get(call) {
            found.push(defect(k, &run[k].1, call, PairingDefect::MissingResult));
        }
    }
    found.sort_by_key(|(k, _)| *k);
    found
}

/// What a synthetic result needs of the message holding its call, read once for all
/// of that message's unanswered calls: each call's name (of the first `toolCall` block
/// with its id) and the message's timestamp (its own member, or its entry's when it
/// has none).
struct CallerFacts {
    /// The caller's index in the kept list.
    at: usize,
    names: HashMap<String, String>,
    timestamp: String,
}

impl CallerFacts {
    fn read(tape: &mut Tape, at: usize, m: &Kept<'_>) -> Result<CallerFacts, Error> {
        json::scan(m.message, MAX_DEPTH, tape)
            .map_err(|_| Error::internal("a committed message does not scan"))?;
        let tape = &*tape;
        let mut names = HashMap::new();
        for block in tape
            .get(0, "content")
            .into_iter()
            .flat_map(|content| tape.elements(content))
        {
            if tape.get(block, "type").map(|t| tape.string(t)).as_deref() != Some("toolCall") {
                continue;
            }
            let Some(id) = tape.get(block, "id") else {
                continue;
            };
            names
                .entry(tape.string(id).into_owned())
                .or_insert_with(|| {
                    tape.get(block, "name")
                        .map(|name| tape.string(name).into_owned())
                        .unwrap_or_default()
                });
        }
        let timestamp = match tape.get(0, "timestamp") {
            Some(t) => tape.raw(t),
            None => m.entry.facts.timestamp.bytes(m.entry.json),
        };
        Ok(CallerFacts {
            at,
            names,
            timestamp: crate::entry::utf8(timestamp)?.to_owned(),
        })
    }

    /// The result `onDefect: "synthesize"` writes for the unanswered call `call_id`:
    /// `{"role":"toolResult","toolCallId","toolName","content":[text],"isError":true,
    /// "timestamp","synthetic":true}`.
    fn synthetic_result(&self, call_id: &str, text: &str) -> String {
        let name = self.names.get(call_id).map_or("", String::as_str);
        let content = Object::new()
            .string("type", "text")
            .string("text", text)
            .finish();
        Object::new()
            .string("role", "toolResult")
            .string("toolCallId", call_id)
            .string("toolName", name)
            .raw("content", &format!("[{content}]"))
            .boolean("isError", true)
            .raw("timestamp", &self.timestamp)
            .boolean("synthetic", true)
            .finish()
    }
}

/// `{"role":"user","content":[{"type":"text","text":PREFIX+S+SUFFIX}],"timestamp":T}`:
/// S is the summary string exactly as written, or the normalised JSON of an object.
fn summary_message(
    entry: &PathEntry<'_>,
    summary: &crate::entry::Span,
    options: &ContextOptions,
) -> Result<String, Error> {
    let raw = crate::entry::utf8(summary.bytes(entry.json))?;
    let mut text = String::with_capacity(raw.len() + 96);
    text.push_str("{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"");
    push_string_inner(&mut text, &options.summary_prefix);
    if raw.starts_with('"') {
        // The token's inside is already a valid JSON string body, escapes as written.
        text.push_str(&raw[1..raw.len() - 1]);
    } else {
        push_string_inner(&mut text, raw);
    }
    push_string_inner(&mut text, &options.summary_suffix);
    text.push_str("\"}],\"timestamp\":");
    text.push_str(crate::entry::utf8(entry.facts.timestamp.bytes(entry.json))?);
    text.push('}');
    Ok(text)
}

/// Appends `s` escaped as the inside of a JSON string.
fn push_string_inner(out: &mut String, s: &str) {
    let mut quoted = String::with_capacity(s.len() + 2);
    json::push_string(&mut quoted, s);
    out.push_str(&quoted[1..quoted.len() - 1]);
}

/// Calls the estimator; a failure, a panic or a negative or non-finite cost names the
/// entry.
fn call_estimator(
    estimate: &mut Estimator<'_>,
    message: &str,
    entry_id: &str,
) -> Result<f64, Error> {
    let fail = |message: String| Error::Estimator {
        entry_id: entry_id.to_owned(),
        message,
    };
    match catch_unwind(AssertUnwindSafe(|| estimate(message))) {
        Ok(Ok(tokens)) if tokens.is_finite() && tokens >= 0.0 => Ok(tokens),
        Ok(Ok(tokens)) => Err(fail(format!(
            "it returned {tokens}; a cost must be a finite number >= 0"
        ))),
        Ok(Err(message)) => Err(fail(message)),
        Err(_) => Err(fail("it panicked".to_owned())),
    }
}

/// The last value of each replayed key over the whole path, in first-set order:
/// state from before a cut is never lost. `entries` are the path's metadata entries
/// the context replays ([`PathEntry::is_replayed_metadata`], chosen by the caller),
/// root first.
fn metadata(entries: &[PathEntry<'_>]) -> Result<Vec<(String, String)>, Error> {
    let mut values: Vec<(String, String)> = Vec::new();
    let mut at: HashMap<String, usize> = HashMap::new();
    for entry in entries {
        if let Body::Metadata { key, value, .. } = &entry.facts.body {
            let key = key.of(entry.json);
            let value = crate::entry::utf8(value.bytes(entry.json))?.to_owned();
            match at.get(key) {
                Some(&i) => values[i].1 = value,
                None => {
                    at.insert(key.to_owned(), values.len());
                    values.push((key.to_owned(), value));
                }
            }
        }
    }
    Ok(values)
}

/// The linear forms of the pairing rules and profiles against the straightforward forms
/// they replaced (each a walk or a rescan per call, per part or per item), on random
/// inputs: the same output, so that only the cost changed.
#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Where a synthetic result goes, walking forward from the caller.
    fn target_by_walk(roles: &[Role], placement: Placement, at: usize) -> usize {
        let mut after = at;
        while after + 1 < roles.len() && placement.passes(roles[after + 1]) {
            after += 1;
        }
        after
    }

    /// The synthetic result written by scanning the caller again for each call.
    fn synthetic_result_by_scan(m: &Kept<'_>, call_id: &str, text: &str) -> String {
        let mut tape = Tape::default();
        json::scan(m.message, MAX_DEPTH, &mut tape).unwrap();
        let name = tape
            .get(0, "content")
            .into_iter()
            .flat_map(|content| tape.elements(content))
            .find(|&block| {
                tape.get(block, "type").map(|t| tape.string(t)).as_deref() == Some("toolCall")
                    && tape.get(block, "id").map(|t| tape.string(t)).as_deref() == Some(call_id)
            })
            .and_then(|block| tape.get(block, "name"))
            .map(|name| tape.string(name).into_owned())
            .unwrap_or_default();
        let timestamp = match tape.get(0, "timestamp") {
            Some(t) => tape.raw(t),
            None => m.entry.facts.timestamp.bytes(m.entry.json),
        };
        let content = Object::new()
            .string("type", "text")
            .string("text", text)
            .finish();
        Object::new()
            .string("role", "toolResult")
            .string("toolCallId", call_id)
            .string("toolName", &name)
            .raw("content", &format!("[{content}]"))
            .boolean("isError", true)
            .raw_bytes("timestamp", timestamp)
            .boolean("synthetic", true)
            .finish()
    }

    /// The split replies merged part by part: the merged message written anew at
    /// every part.
    fn merge_part_by_part(items: Vec<Item<'_>>) -> Vec<Item<'_>> {
        let mut tape = Tape::default();
        let mut out: Vec<Item<'_>> = Vec::new();
        let mut reply: Option<(usize, String)> = None;
        for item in items {
            let role = member(&mut tape, item.text.as_bytes(), "role");
            match role.as_deref() {
                Some("assistant") if whitespace_only(&tape) => {}
                Some("assistant") => {
                    let id = tape
                        .get(0, "responseId")
                        .map(|v| tape.string(v).into_owned());
                    match (&reply, id) {
                        (Some((at, current)), Some(id)) if *current == id => {
                            let mut a = Tape::default();
                            json::scan(out[*at].text.as_bytes(), MAX_DEPTH, &mut a).unwrap();
                            let mut b = Tape::default();
                            json::scan(item.text.as_bytes(), MAX_DEPTH, &mut b).unwrap();
                            let mut content = content_blocks(&a).unwrap();
                            content.extend(content_blocks(&b).unwrap());
                            out[*at].text = Cow::Owned(with_content(&b, &content));
                        }
                        (_, id) => {
                            reply = id.map(|id| (out.len(), id));
                            out.push(item);
                        }
                    }
                }
                Some("toolResult") => out.push(item),
                _ => {
                    reply = None;
                    out.push(item);
                }
            }
        }
        for item in &mut out {
            if let Some(renamed) = renamed_calls(&item.text).unwrap() {
                item.text = Cow::Owned(renamed);
            }
        }
        out
    }

    /// Codex's tool search pairing by inserting and removing in place, back to front.
    fn pair_in_place(runs: &mut [Vec<Item<'_>>]) -> Vec<Defect> {
        let mut tape = Tape::default();
        let mut found: Vec<(usize, usize, bool, String)> = Vec::new();
        for (r, items) in runs.iter().enumerate() {
            for (i, item) in items.iter().enumerate() {
                json::scan(item.text.as_bytes(), MAX_DEPTH, &mut tape).unwrap();
                let Some(codex) = tape.get(0, "codexItem") else {
                    continue;
                };
                let kind = tape.get(codex, "type").map(|v| tape.string(v).into_owned());
                let call = tape
                    .get(codex, "call_id")
                    .map(|v| tape.string(v).into_owned());
                if let (Some(kind), Some(call)) = (kind, call) {
                    match kind.as_str() {
                        "tool_search_call" => found.push((r, i, true, call)),
                        "tool_search_output" => found.push((r, i, false, call)),
                        _ => {}
                    }
                }
            }
        }
        let calls: HashSet<String> = found.iter().filter(|f| f.2).map(|f| f.3.clone()).collect();
        let outputs: HashSet<String> = found.iter().filter(|f| !f.2).map(|f| f.3.clone()).collect();
        let mut defects = Vec::new();
        for (r, i, is_call, call) in found.iter().rev() {
            let (r, i) = (*r, *i);
            let start = runs[r]
                .first()
                .and_then(|item| item.entry)
                .unwrap_or_default();
            let defect = |reason, action| Defect {
                interaction_start_id: start.to_owned(),
                entry_id: runs[r][i].entry.unwrap_or_default().to_owned(),
                tool_call_id: call.clone(),
                reason,
                action: Some(action),
            };
            if *is_call && !outputs.contains(call) {
                let d = defect(PairingDefect::MissingResult, SYNTHESIZED);
                let output = Object::new()
                    .string("type", "tool_search_output")
                    .string("call_id", call)
                    .string("status", "completed")
                    .string("execution", "client")
                    .raw("tools", "[]")
                    .finish();
                let message = Object::new()
                    .string("role", "assistant")
                    .raw("content", "[]")
                    .raw("codexItem", &output)
                    .raw("synthetic", "true")
                    .finish();
                let names = runs[r][i].names;
                let item = Item {
                    text: Cow::Owned(message),
                    entry: None,
                    names,
                };
                runs[r].insert(i + 1, item);
                defects.push(d);
            } else if !*is_call && !calls.contains(call) {
                defects.push(defect(PairingDefect::OrphanResult, DROPPED));
                runs[r].remove(i);
            }
        }
        defects.reverse();
        defects
    }

    fn role() -> impl Strategy<Value = Role> {
        prop_oneof![
            Just(Role::User),
            Just(Role::Assistant),
            Just(Role::ToolResult),
            Just(Role::Extension)
        ]
    }

    /// A content block: a call (id and name from small pools, so that ids repeat), a
    /// text (sometimes whitespace only) or a `Task` call.
    fn block() -> impl Strategy<Value = String> {
        prop_oneof![
            (0u8..4, 0u8..3).prop_map(|(id, n)| format!(
                r#"{{"type":"toolCall","id":"c{id}","name":"n{n}","arguments":{{}}}}"#
            )),
            (0u8..4).prop_map(|id| format!(
                r#"{{"type":"toolCall","id":"c{id}","name":"Task","arguments":{{}}}}"#
            )),
            Just(r#"{"type":"text","text":"hi"}"#.to_owned()),
            Just(r#"{"type":"text","text":" \n"}"#.to_owned()),
        ]
    }

    /// A message's `content`: absent, a string, or an array of blocks.
    fn content() -> impl Strategy<Value = Option<String>> {
        prop_oneof![
            1 => Just(None),
            1 => Just(Some(r#""text""#.to_owned())),
            6 => prop::collection::vec(block(), 0..4).prop_map(|b| Some(format!("[{}]", b.join(",")))),
        ]
    }

    /// A message: a role, a `content`, maybe a `responseId` (of two), maybe a
    /// timestamp, and a member after `content` that the merged reply takes from the
    /// last part.
    fn message() -> impl Strategy<Value = String> {
        (
            prop_oneof![
                Just("assistant"),
                Just("assistant"),
                Just("toolResult"),
                Just("user")
            ],
            content(),
            prop::option::of(0u8..2),
            prop::option::of(0u16..100),
            0u8..3,
        )
            .prop_map(|(role, content, response, timestamp, tail)| {
                let mut object = Object::new().string("role", role);
                if let Some(content) = content {
                    object = object.raw("content", &content);
                }
                if let Some(r) = response {
                    object = object.string("responseId", &format!("msg_{r}"));
                }
                if let Some(t) = timestamp {
                    object = object.number("timestamp", usize::from(t));
                }
                object.number("tail", usize::from(tail)).finish()
            })
    }

    fn items<'a>(texts: &'a [String], ids: &'a [String]) -> Vec<Item<'a>> {
        texts
            .iter()
            .zip(ids)
            .map(|(text, id)| Item {
                text: Cow::Borrowed(text),
                entry: Some(id),
                names: id,
            })
            .collect()
    }

    fn texts(items: &[Item<'_>]) -> Vec<(String, Option<String>, String)> {
        items
            .iter()
            .map(|i| {
                (
                    i.text.clone().into_owned(),
                    i.entry.map(str::to_owned),
                    i.names.to_owned(),
                )
            })
            .collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: 256,
            failure_persistence: None,
            ..ProptestConfig::default()
        })]

        #[test]
        fn placement_targets_equal_the_walk_from_each_message(
            roles in prop::collection::vec(role(), 0..40),
        ) {
            for placement in [Placement::AfterCall, Placement::AfterReply, Placement::BeforeNextTurn] {
                let targets = placement.targets(&roles);
                let walked: Vec<usize> =
                    (0..roles.len()).map(|at| target_by_walk(&roles, placement, at)).collect();
                prop_assert_eq!(targets, walked);
            }
        }

        #[test]
        fn a_caller_read_once_writes_the_results_a_scan_per_call_writes(
            blocks in prop::collection::vec(block(), 0..6),
            timestamp in prop::option::of(0u16..100),
        ) {
            let mut message = Object::new()
                .string("role", "assistant")
                .raw("content", &format!("[{}]", blocks.join(",")));
            if let Some(t) = timestamp {
                message = message.number("timestamp", usize::from(t));
            }
            let message = message.finish();
            let line = format!(r#"{{"id":"a","parentId":null,"timestamp":1733234567890,"type":"message","message":{message}}}"#);
            let entry = crate::parse_entry(&line).unwrap();
            let entry = PathEntry::of(&entry);
            let kept = Kept {
                entry,
                message: entry.message().unwrap(),
                role: Role::Assistant,
                tools: ToolFacts::default(),
            };
            let facts = CallerFacts::read(&mut Tape::default(), 0, &kept).unwrap();
            for call in ["c0", "c1", "c2", "c3", "c9"] {
                prop_assert_eq!(
                    facts.synthetic_result(call, "aborted"),
                    synthetic_result_by_scan(&kept, call, "aborted")
                );
            }
        }

        #[test]
        fn split_replies_merged_once_equal_merging_part_by_part(
            texts_in in prop::collection::vec(message(), 0..24),
        ) {
            let ids: Vec<String> = (0..texts_in.len()).map(|i| format!("e{i}")).collect();
            let merged = merge_split_replies(items(&texts_in, &ids)).unwrap();
            let reference = merge_part_by_part(items(&texts_in, &ids));
            prop_assert_eq!(texts(&merged), texts(&reference));
        }

        #[test]
        fn tool_searches_paired_in_one_pass_equal_pairing_in_place(
            runs_in in prop::collection::vec(
                prop::collection::vec((0u8..4, 0u8..4), 0..12), 0..5),
        ) {
            // Each item: a tool search call, an output, another Codex item or a plain
            // message, with a call id from a small pool.
            let texts_in: Vec<Vec<String>> = runs_in
                .iter()
                .map(|run| {
                    run.iter()
                        .map(|&(kind, call)| match kind {
                            0 => format!(r#"{{"role":"assistant","content":[],"codexItem":{{"type":"tool_search_call","call_id":"t{call}"}}}}"#),
                            1 => format!(r#"{{"role":"assistant","content":[],"codexItem":{{"type":"tool_search_output","call_id":"t{call}"}}}}"#),
                            2 => format!(r#"{{"role":"assistant","content":[],"codexItem":{{"type":"web_search_call","call_id":"t{call}"}}}}"#),
                            _ => r#"{"role":"user","content":"x"}"#.to_owned(),
                        })
                        .collect()
                })
                .collect();
            let ids: Vec<Vec<String>> = texts_in
                .iter()
                .enumerate()
                .map(|(r, run)| (0..run.len()).map(|i| format!("e{r}-{i}")).collect())
                .collect();
            let mut paired: Vec<Vec<Item<'_>>> =
                texts_in.iter().zip(&ids).map(|(t, i)| items(t, i)).collect();
            let mut reference: Vec<Vec<Item<'_>>> =
                texts_in.iter().zip(&ids).map(|(t, i)| items(t, i)).collect();
            let defects = pair_tool_searches(&mut paired, &mut Tape::default());
            let reference_defects = pair_in_place(&mut reference);
            prop_assert_eq!(defects, reference_defects);
            let paired: Vec<_> = paired.iter().map(|run| texts(run)).collect();
            let reference: Vec<_> = reference.iter().map(|run| texts(run)).collect();
            prop_assert_eq!(paired, reference);
        }
    }
}

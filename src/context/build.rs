//! The one build of a context over a path (docs/contract.md §7): the compaction in
//! force, the kept messages, their interactions and defects, the summary message and
//! the budget.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::panic::{AssertUnwindSafe, catch_unwind};

use super::pairing::{Act, CallerFacts, Item, Kept, Run, act, pairing_defects};
use super::profile::claude::{merge_split_replies, no_response_requested, recover_side_results};
use super::profile::codex::{codex_rebuilt_history, marks_replacement_history, pair_tool_searches};
use super::profile::{imported_format, member, resolve_profile};
use super::summary::summary_message;
use super::{
    BudgetReason, BudgetReport, ChildrenOf, CompactionUsed, Context, ContextOptions, DROPPED,
    Defect, Estimator, Interaction, OnDefect, PathTail, Profile, SYNTHESIZED, add_tokens,
};
use crate::entry::{Body, EntryParser, ParseOptions, Role};
use crate::error::{CompactionFault, Error, Hint, PairingDefect};
use crate::json::Tape;
use crate::tree::checks::{ToolReader, check_compaction};
use crate::tree::{PathEntry, project_messages};
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

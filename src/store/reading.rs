//! The store's reads: each takes one turn of the FIFO, after every append that arrived
//! before it, catches up (a PostgreSQL store reads what other handles committed) and
//! answers from the committed log through its index.

use crate::context::{self, Context, ContextOptions, Estimator};
use crate::entry::{Entry, Message};
use crate::error::Error;
use crate::json::Object;
use crate::nav::{Label, Leaves, Node, TreeOptions, TreePage, labels_json, nodes_json};

use super::{Backend, MapEntry, Snapshot, Store, ViewSnapshot, salvage_members, warnings_json};

impl Store {
    /// Copies of every committed entry, in commit order.
    pub fn entries(&self) -> Result<Vec<Entry>, Error> {
        self.read_with(|inner| inner.log.entries())
    }

    /// State, committed entries and warnings (and a salvage store's diagnostics), read
    /// in one turn.
    pub fn read(&self) -> Result<Snapshot, Error> {
        self.read_with(|inner| {
            Ok(Snapshot {
                state: inner.state(),
                entries: inner.log.entries()?,
                warnings: inner.warnings.clone(),
                diagnostics: inner.diagnostics.clone(),
            })
        })
    }

    /// The entries from the root to `leaf_id`, through the store's index: the cost
    /// grows with the path's length, not with the number of entries. Fails with
    /// [`Error::UnknownLeaf`] (or [`Error::Tainted`]).
    pub fn path_to(&self, leaf_id: &str) -> Result<Vec<Entry>, Error> {
        self.read_with(|inner| inner.log.path_entries(leaf_id))
    }

    /// The messages on the path to `leaf_id`, complete; metadata is skipped.
    pub fn messages_on_path(&self, leaf_id: &str) -> Result<Vec<Message>, Error> {
        self.read_with(|inner| inner.log.path_message_values(leaf_id))
    }

    /// [`Store::entries`] as a JSON array (UTF-8 bytes).
    pub fn entries_json(&self) -> Result<Vec<u8>, Error> {
        self.read_with(|inner| {
            let mut out = Vec::new();
            inner.log.push_entries_json(&mut out)?;
            Ok(out)
        })
    }

    /// [`Store::read`] as `{"state":…,"entries":[…],"warnings":[…]}` (a salvage store
    /// adds `"complete"` and `"diagnostics"`), UTF-8 bytes.
    pub fn read_json(&self) -> Result<Vec<u8>, Error> {
        self.read_with(|inner| {
            let object = Object::new()
                .string("state", inner.state().as_str())
                .raw_with("entries", |out| inner.log.push_entries_json(out))?
                .raw("warnings", &warnings_json(&inner.warnings));
            let object = if matches!(inner.backend, Backend::ReadOnly { salvage: true }) {
                salvage_members(object, &inner.diagnostics)
            } else {
                object
            };
            Ok(object.finish_bytes())
        })
    }

    /// [`Store::path_to`] as a JSON array of entries (UTF-8 bytes).
    pub fn path_to_json(&self, leaf_id: &str) -> Result<Vec<u8>, Error> {
        self.read_with(|inner| inner.log.path_json(leaf_id))
    }

    /// [`Store::messages_on_path`] as a JSON array of messages (UTF-8 bytes).
    pub fn messages_on_path_json(&self, leaf_id: &str) -> Result<Vec<u8>, Error> {
        self.read_with(|inner| inner.log.path_messages_json(leaf_id))
    }

    /// What the model should see for `leaf_id` (docs/contract.md §7), through the store's index:
    /// the cost grows with what is kept (the path from the leaf back to the latest
    /// compaction's first kept entry, plus the path's replayed metadata entries), not
    /// with the path before the cut or the store. The same rules and result as
    /// [`crate::build_context`] over the store's entries. `estimate` (used only with a
    /// budget) runs on the calling thread inside the store's FIFO turn: it must not
    /// call this store.
    pub fn build_context(
        &self,
        leaf_id: &str,
        options: &ContextOptions,
        estimate: Option<&mut Estimator<'_>>,
    ) -> Result<Context, Error> {
        let mut default = |m: &str| Ok(context::default_estimate(m));
        let estimate: &mut Estimator<'_> = match estimate {
            Some(estimate) => estimate,
            None => &mut default,
        };
        self.read_with(|inner| {
            let path = inner.log.path_tail(leaf_id, options.strict_roles)?;
            context::build_explained(
                path,
                leaf_id,
                options,
                &|id| inner.log.find(id).map(u64::from),
                &|id| inner.log.child_entries(id),
                estimate,
            )
        })
    }

    /// The direct children of `id`, in commit order (docs/contract.md §8), through the index:
    /// the cost grows with the number of children. Fails with
    /// [`Error::UnknownLeaf`] for an unknown id.
    pub fn children(&self, id: &str) -> Result<Vec<Node>, Error> {
        self.read_with(|inner| inner.log.children(id))
    }

    /// The entries without a parent in the store, in commit order: the roots, and in
    /// a salvage store the orphans whose parent is missing.
    pub fn roots(&self) -> Result<Vec<Node>, Error> {
        self.read_with(|inner| Ok(inner.log.roots()))
    }

    /// The entries without children, in commit order, with the latest by seq and by
    /// timestamp (a tie goes to the higher seq).
    pub fn leaves(&self) -> Result<Leaves, Error> {
        self.read_with(|inner| Ok(inner.log.leaves()))
    }

    /// The node of the last committed entry ("resume the latest"), `None` when the
    /// store is empty. O(1).
    pub fn latest_leaf(&self) -> Result<Option<Node>, Error> {
        self.read_with(|inner| Ok(inner.log.latest_leaf()))
    }

    /// The leaf the agent of an imported session resumes: the `leafId` of its
    /// `session.resumeLeaf` entry while that entry is in force (docs/contract.md §6.3:
    /// the last committed entry, or under it only `session.*` metadata such as
    /// labels); `None` otherwise, and for a native session. The command line's
    /// default leaf: this, else the latest leaf.
    pub fn resume_leaf(&self) -> Result<Option<String>, Error> {
        self.read_with(|inner| Ok(inner.log.resume_leaf()))
    }

    /// A page of nodes in commit order: those after `after_seq`, at most `limit`,
    /// flagged `on_path` on the path to `leaf`, with previews of `preview_chars`.
    /// Cost: the page plus O(log depth) for the leaf's path. Fails with [`Error::UnknownLeaf`] for
    /// an unknown `leaf`.
    pub fn tree(&self, options: &TreeOptions) -> Result<TreePage, Error> {
        self.read_with(|inner| inner.log.tree(options))
    }

    /// Each labelled entry once, ordered by its seq, with its current label and the
    /// label entry that set it (docs/contract.md §6.3).
    pub fn labels(&self) -> Result<Vec<Label>, Error> {
        self.read_with(|inner| Ok(inner.log.labels()))
    }

    /// What the HTML view draws, read in one turn (one snapshot): every entry as a
    /// JSON array (each passed through `map`, when given: the view's redaction), the
    /// labels, and the id of the last committed entry. Fails with
    /// [`Error::UnknownLeaf`] when `leaf` is given and no entry has it.
    pub(crate) fn view_snapshot(
        &self,
        leaf: Option<&str>,
        map: Option<&MapEntry<'_>>,
    ) -> Result<ViewSnapshot, Error> {
        self.read_with(|inner| {
            if let Some(leaf) = leaf {
                inner.log.find(leaf).ok_or_else(|| Error::UnknownLeaf {
                    id: leaf.to_owned(),
                })?;
            }
            let mut entries_json = Vec::new();
            match map {
                Some(map) => inner.log.push_entries_json_mapped(&mut entries_json, map)?,
                None => inner.log.push_entries_json(&mut entries_json)?,
            }
            Ok(ViewSnapshot {
                entries_json,
                labels: inner.log.labels(),
                latest: inner.log.latest_leaf().map(|node| node.id),
            })
        })
    }

    /// [`Store::children`] as a JSON array of nodes.
    pub fn children_json(&self, id: &str) -> Result<String, Error> {
        Ok(nodes_json(&self.children(id)?))
    }

    /// [`Store::roots`] as a JSON array of nodes.
    pub fn roots_json(&self) -> Result<String, Error> {
        Ok(nodes_json(&self.roots()?))
    }

    /// [`Store::leaves`] as `{"leaves":[…],"latestBySeq":…,"latestByTimestamp":…}`.
    pub fn leaves_json(&self) -> Result<String, Error> {
        Ok(self.leaves()?.to_json())
    }

    /// [`Store::latest_leaf`] as a node or `null`.
    pub fn latest_leaf_json(&self) -> Result<String, Error> {
        Ok(self
            .latest_leaf()?
            .map_or_else(|| "null".to_owned(), |node| node.to_json()))
    }

    /// [`Store::tree`] as `{"nodes":[…],"count":N,"nextAfterSeq":N|null}`.
    pub fn tree_json(&self, options: &TreeOptions) -> Result<String, Error> {
        Ok(self.tree(options)?.to_json())
    }

    /// [`Store::labels`] as a JSON array of `{targetId,label,entryId,seq}`.
    pub fn labels_json(&self) -> Result<String, Error> {
        Ok(labels_json(&self.labels()?))
    }

    /// How many index records the navigation queries of this store have visited:
    /// the measure of their cost in tests, independent of the machine's speed.
    #[doc(hidden)]
    pub fn nav_steps(&self) -> Result<u64, Error> {
        self.read_with(|inner| Ok(inner.log.nav().steps()))
    }

    /// Number of committed entries.
    pub fn len(&self) -> Result<usize, Error> {
        self.read_with(|inner| Ok(inner.log.len()))
    }

    /// Whether the store has no committed entries.
    pub fn is_empty(&self) -> Result<bool, Error> {
        Ok(self.len()? == 0)
    }
}

//! What an import keeps of the entries it has written: their ids, their tree links and
//! the few facts the rule of a compaction's cut reads (a message's role and tool
//! call ids), never their lines. The compactions are checked once the import is
//! written, each by the one implementation of the rule ([`check_compaction`]) over a
//! sparse walk of its ancestors.

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};

use crate::context::{Ancestor, ToolFacts, ToolReader, check_compaction};
use crate::entry::Role;
use crate::error::Error;

use super::{grown_to, out_of_memory, reserve_one};

/// No entry: the parent of a root, the end of a walk.
pub(crate) const NONE: u32 = u32::MAX;

/// One written entry's place in the tree.
struct Node {
    parent: u32,
    depth: u32,
    /// A skew-binary jump pointer: with `parent`, finds the ancestor at a given depth
    /// in a logarithmic number of steps.
    jump: u32,
    /// The nearest strict ancestor that is a message.
    message_above: u32,
    /// Index in `tools`, or [`NONE`].
    tools: u32,
    role: Option<Role>,
}

/// The tool facts of a message that calls tools or answers one.
struct ToolIds {
    calls: Box<[Box<str>]>,
    result_for: Option<Box<str>>,
}

/// The written entries, in the order written.
pub(crate) struct Written {
    /// The ids back to back; entry `i`'s is `arena[ends[i - 1]..ends[i]]`.
    arena: String,
    ends: Vec<usize>,
    /// Id hash → the last entry with that hash; `same_hash` chains to the one before.
    by_hash: HashMap<u64, u32>,
    same_hash: Vec<u32>,
    hasher: RandomState,
    nodes: Vec<Node>,
    tools: Vec<ToolIds>,
}

impl Written {
    pub(crate) fn new() -> Written {
        Written {
            arena: String::new(),
            ends: Vec::new(),
            by_hash: HashMap::new(),
            same_hash: Vec::new(),
            hasher: RandomState::new(),
            nodes: Vec::new(),
            tools: Vec::new(),
        }
    }

    pub(crate) fn id(&self, node: u32) -> &str {
        let i = node as usize;
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.arena[start..self.ends[i]]
    }

    pub(crate) fn find(&self, id: &str) -> Option<u32> {
        let mut at = *self.by_hash.get(&self.hasher.hash_one(id))?;
        while at != NONE {
            if self.id(at) == id {
                return Some(at);
            }
            at = self.same_hash[at as usize];
        }
        None
    }

    /// Records an entry written under `parent` (which must be recorded); its id must
    /// be new. Every table grows by fallible reservation: running out of memory is an
    /// error, never an abort.
    pub(crate) fn add(
        &mut self,
        id: &str,
        parent: Option<u32>,
        role: Option<Role>,
        tools: ToolFacts,
    ) -> Result<u32, Error> {
        const WHAT: &str = "the ids of the imported entries";
        let node = u32::try_from(self.nodes.len())
            .ok()
            .filter(|&n| n != NONE)
            .ok_or_else(|| out_of_memory("more than 4,294,967,294 entries"))?;
        if self.arena.capacity() - self.arena.len() < id.len() {
            self.arena
                .try_reserve(id.len())
                .map_err(|_| out_of_memory(WHAT))?;
            grown_to(self.arena.capacity(), WHAT)?;
        }
        reserve_one(&mut self.ends, WHAT)?;
        reserve_one(&mut self.same_hash, WHAT)?;
        reserve_one(&mut self.nodes, WHAT)?;
        let capacity = self.by_hash.capacity();
        self.by_hash
            .try_reserve(1)
            .map_err(|_| out_of_memory(WHAT))?;
        if self.by_hash.capacity() != capacity {
            // A bucket holds a key, a value and a control byte.
            grown_to(self.by_hash.capacity().saturating_mul(13), WHAT)?;
        }
        let tools = if tools.calls.is_empty() && tools.result_for.is_none() {
            NONE
        } else {
            reserve_one(&mut self.tools, WHAT)?;
            self.tools.push(ToolIds {
                calls: tools
                    .calls
                    .into_iter()
                    .map(String::into_boxed_str)
                    .collect(),
                result_for: tools.result_for.map(String::into_boxed_str),
            });
            u32::try_from(self.tools.len() - 1).unwrap_or(NONE)
        };
        let (depth, jump, message_above) = match parent {
            None => (0, node, NONE),
            Some(p) => {
                let up = &self.nodes[p as usize];
                let up_jump = &self.nodes[up.jump as usize];
                let jump = if up.depth - up_jump.depth
                    == up_jump.depth - self.nodes[up_jump.jump as usize].depth
                {
                    up_jump.jump
                } else {
                    p
                };
                let message_above = if up.role.is_some() {
                    p
                } else {
                    up.message_above
                };
                (up.depth + 1, jump, message_above)
            }
        };
        self.arena.push_str(id);
        self.ends.push(self.arena.len());
        let hash = self.hasher.hash_one(id);
        self.same_hash
            .push(self.by_hash.insert(hash, node).unwrap_or(NONE));
        self.nodes.push(Node {
            parent: parent.unwrap_or(NONE),
            depth,
            jump,
            message_above,
            tools,
            role,
        });
        Ok(node)
    }

    /// The ancestor of `node` at `depth` (at most its own).
    fn ancestor_at(&self, mut node: u32, depth: u32) -> u32 {
        loop {
            let n = &self.nodes[node as usize];
            if n.depth <= depth {
                return node;
            }
            node = if self.nodes[n.jump as usize].depth >= depth {
                n.jump
            } else {
                n.parent
            };
        }
    }

    /// The §6.2 rule for compaction `node`, whose `firstKeptEntryId` is `first_kept`:
    /// `Err(Error::InvalidCompaction)` when it refuses the cut.
    pub(crate) fn check_compaction(
        &self,
        node: u32,
        first_kept: Option<&str>,
    ) -> Result<(), Error> {
        let first = first_kept.and_then(|id| self.find(id)).unwrap_or(NONE);
        let walk = Walk {
            written: self,
            at: self.nodes[node as usize].parent,
            first,
            found: false,
        };
        check_compaction(self.id(node), first_kept, walk, &|id| {
            self.find(id).is_some()
        })
    }
}

/// A written entry, as the rule reads it.
#[derive(Clone, Copy)]
pub(crate) struct WrittenEntry<'w> {
    written: &'w Written,
    node: u32,
}

impl Ancestor for WrittenEntry<'_> {
    fn id(&self) -> &str {
        self.written.id(self.node)
    }

    fn role(&self) -> Option<Role> {
        self.written.nodes[self.node as usize].role
    }

    fn tool_facts(&self, _: &mut ToolReader) -> Result<ToolFacts, Error> {
        let at = self.written.nodes[self.node as usize].tools;
        Ok(match self.written.tools.get(at as usize) {
            Some(tools) => ToolFacts {
                calls: tools.calls.iter().map(|c| c.to_string()).collect(),
                result_for: tools.result_for.as_deref().map(str::to_owned),
            },
            None => ToolFacts::default(),
        })
    }
}

/// The ancestors of a compaction, from its parent up, that the rule can read: the
/// messages, and the entry `first` (its `firstKeptEntryId`) when that is not one.
///
/// The rule reads of an ancestor only its id (to find `first`), its role and a
/// message's tool facts; an entry that is neither a message nor `first` changes
/// nothing it concludes, so it is skipped (through `message_above`, or a jump to
/// `first`'s depth). Before `first` is met, the walk also ends once it is at `first`'s
/// depth without having met it: `first` is not on the path, and the rule, finding the
/// walk over without it, refuses the cut as `not_on_path` as it would after walking
/// to the root. Its cost is the messages it passes, not the entries.
struct Walk<'w> {
    written: &'w Written,
    at: u32,
    first: u32,
    found: bool,
}

impl<'w> Iterator for Walk<'w> {
    type Item = WrittenEntry<'w>;

    fn next(&mut self) -> Option<WrittenEntry<'w>> {
        let written = self.written;
        loop {
            if self.at == NONE {
                return None;
            }
            let current = self.at;
            let node = &written.nodes[current as usize];
            if self.first != NONE && !self.found {
                let first = &written.nodes[self.first as usize];
                if current == self.first {
                    self.found = true;
                    self.at = node.message_above;
                    return Some(WrittenEntry {
                        written,
                        node: current,
                    });
                }
                if node.depth <= first.depth {
                    self.at = NONE;
                    return None;
                }
                let above = node.message_above;
                let above_depth = (above != NONE).then(|| written.nodes[above as usize].depth);
                // `first`, when it is not a message, may lie between here and the
                // next message up: go to the ancestor at its depth instead.
                self.at = if first.role.is_none() && above_depth.is_none_or(|d| d < first.depth) {
                    written.ancestor_at(node.parent, first.depth)
                } else {
                    above
                };
            } else {
                self.at = node.message_above;
            }
            if node.role.is_some() {
                return Some(WrittenEntry {
                    written,
                    node: current,
                });
            }
        }
    }
}

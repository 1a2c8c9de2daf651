//! What an import keeps of the entries it has written: their ids, their parents and
//! the few facts the rule of a compaction's cut reads (a message's role and tool
//! call ids), never their lines. The compactions are checked once the import is
//! written, each by the one implementation of the rule ([`check_compaction`]) over a
//! sparse walk of its ancestors.
//!
//! Memory is what an import of a multi-gigabyte transcript holds, so an entry costs
//! about 27 bytes while the import runs: its id packed into 16 bytes (a lowercase
//! UUID as its 16 bytes, an id of up to 15 bytes inline, a longer one in a side table),
//! its parent (4), its role and id form (1), and its slot in the id table (a
//! `hashbrown` table of entry numbers, about 6). The tree links the compaction rule
//! walks (depth, a jump pointer, the nearest message above: 12 bytes) are built only
//! when there is a compaction to check, after the id table is dropped.

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};

use hashbrown::HashTable;

use crate::entry::Role;
use crate::error::Error;
use crate::tree::checks::{Ancestor, ToolFacts, ToolReader, check_compaction};

use super::{grown_to, out_of_memory, reserve_one};

/// No entry: the parent of a root, the end of a walk.
pub(crate) const NONE: u32 = u32::MAX;

const WHAT: &str = "the ids of the imported entries";

/// How an entry's 16 id bytes hold its id (the low two bits of its `meta` byte).
const FORM_UUID: u8 = 0;
const FORM_SHORT: u8 = 1;
const FORM_LONG: u8 = 2;

/// An id as the table compares and hashes it: the same id always packs the same way.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Key<'a> {
    /// A UUID in lowercase canonical form, as its 16 bytes.
    Uuid([u8; 16]),
    /// An id of at most 15 bytes: the bytes, then zeros, its length last.
    Short([u8; 16]),
    Long(&'a str),
}

impl Key<'_> {
    fn of(id: &str) -> Key<'_> {
        if let Some(uuid) = pack_uuid(id.as_bytes()) {
            return Key::Uuid(uuid);
        }
        if id.len() <= 15 {
            let mut bytes = [0u8; 16];
            bytes[..id.len()].copy_from_slice(id.as_bytes());
            bytes[15] = id.len() as u8;
            return Key::Short(bytes);
        }
        Key::Long(id)
    }
}

fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        _ => None,
    }
}

/// `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` in lowercase hex as its 16 bytes; `None`
/// for any other text (an uppercase UUID is kept as text: it must read back as given).
fn pack_uuid(text: &[u8]) -> Option<[u8; 16]> {
    if text.len() != 36 || [8, 13, 18, 23].iter().any(|&i| text[i] != b'-') {
        return None;
    }
    let mut out = [0u8; 16];
    let mut digits = text.iter().filter(|&&b| b != b'-');
    for byte in &mut out {
        let high = hex_value(*digits.next()?)?;
        let low = hex_value(*digits.next()?)?;
        *byte = high << 4 | low;
    }
    Some(out)
}

/// A written entry's id as text, made from its packed form.
#[derive(Clone, Copy)]
pub(crate) struct IdText<'w> {
    buf: [u8; 36],
    len: u8,
    long: Option<&'w str>,
}

impl<'w> IdText<'w> {
    pub(crate) fn as_str(&self) -> &str {
        match self.long {
            Some(text) => text,
            // The bytes are a UUID's ASCII or a whole `str` copied: always UTF-8.
            None => std::str::from_utf8(&self.buf[..self.len as usize]).unwrap_or_default(),
        }
    }
}

fn role_code(role: Option<Role>) -> u8 {
    match role {
        None => 0,
        Some(Role::User) => 1,
        Some(Role::Assistant) => 2,
        Some(Role::ToolResult) => 3,
        Some(Role::Extension) => 4,
    }
}

fn role_of(meta: u8) -> Option<Role> {
    match meta >> 2 {
        1 => Some(Role::User),
        2 => Some(Role::Assistant),
        3 => Some(Role::ToolResult),
        4 => Some(Role::Extension),
        _ => None,
    }
}

/// The tool facts of a message that calls tools or answers one.
struct ToolIds {
    calls: Box<[Box<str>]>,
    result_for: Option<Box<str>>,
}

/// The packed ids, as the id table reads them.
struct Ids {
    /// Entry `i`'s id, packed as its form says.
    packed: Vec<[u8; 16]>,
    /// Entry `i`'s id form (low two bits) and role code (the bits above).
    meta: Vec<u8>,
    /// The ids longer than 15 bytes that are not lowercase UUIDs; a long id's packed
    /// bytes start with its index here.
    long: Vec<Box<str>>,
    hasher: RandomState,
}

impl Ids {
    fn key(&self, node: u32) -> Key<'_> {
        let i = node as usize;
        let packed = self.packed[i];
        match self.meta[i] & 3 {
            FORM_UUID => Key::Uuid(packed),
            FORM_SHORT => Key::Short(packed),
            _ => {
                let mut index = [0u8; 8];
                index.copy_from_slice(&packed[..8]);
                let at = usize::try_from(u64::from_le_bytes(index)).unwrap_or(usize::MAX);
                Key::Long(self.long.get(at).map(|s| &**s).unwrap_or_default())
            }
        }
    }

    fn hash(&self, key: &Key<'_>) -> u64 {
        self.hasher.hash_one(key)
    }

    fn text(&self, node: u32) -> IdText<'_> {
        let mut out = IdText {
            buf: [0; 36],
            len: 0,
            long: None,
        };
        match self.key(node) {
            Key::Uuid(bytes) => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                let mut at = 0;
                for (i, b) in bytes.iter().enumerate() {
                    if matches!(i, 4 | 6 | 8 | 10) {
                        out.buf[at] = b'-';
                        at += 1;
                    }
                    out.buf[at] = HEX[usize::from(b >> 4)];
                    out.buf[at + 1] = HEX[usize::from(b & 15)];
                    at += 2;
                }
                out.len = 36;
            }
            Key::Short(bytes) => {
                let len = usize::from(bytes[15]).min(15);
                out.buf[..len].copy_from_slice(&bytes[..len]);
                out.len = len as u8;
            }
            Key::Long(text) => out.long = Some(text),
        }
        out
    }
}

/// The written entries, in the order written.
pub(crate) struct Written {
    ids: Ids,
    /// Id → entry number (hash of the packed id).
    table: HashTable<u32>,
    /// Entry `i`'s parent, or [`NONE`].
    parents: Vec<u32>,
    /// The tool facts of the messages that call tools or answer one, by entry.
    tools: HashMap<u32, ToolIds>,
}

impl Written {
    pub(crate) fn new() -> Written {
        Written {
            ids: Ids {
                packed: Vec::new(),
                meta: Vec::new(),
                long: Vec::new(),
                hasher: RandomState::new(),
            },
            table: HashTable::new(),
            parents: Vec::new(),
            tools: HashMap::new(),
        }
    }

    pub(crate) fn id(&self, node: u32) -> IdText<'_> {
        self.ids.text(node)
    }

    pub(crate) fn find(&self, id: &str) -> Option<u32> {
        let key = Key::of(id);
        let hash = self.ids.hash(&key);
        self.table.find(hash, |&n| self.ids.key(n) == key).copied()
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
        let node = u32::try_from(self.parents.len())
            .ok()
            .filter(|&n| n != NONE)
            .ok_or_else(|| out_of_memory("more than 4,294,967,294 entries"))?;
        reserve_one(&mut self.ids.packed, WHAT)?;
        reserve_one(&mut self.ids.meta, WHAT)?;
        reserve_one(&mut self.parents, WHAT)?;
        let ids = &self.ids;
        let capacity = self.table.capacity();
        self.table
            .try_reserve(1, |&n| ids.hash(&ids.key(n)))
            .map_err(|_| out_of_memory(WHAT))?;
        if self.table.capacity() != capacity {
            // A bucket holds an entry number and a control byte.
            grown_to(self.table.capacity().saturating_mul(5), WHAT)?;
        }
        let (form, packed) = match Key::of(id) {
            Key::Uuid(bytes) => (FORM_UUID, bytes),
            Key::Short(bytes) => (FORM_SHORT, bytes),
            Key::Long(text) => {
                reserve_one(&mut self.ids.long, WHAT)?;
                let mut bytes = [0u8; 16];
                bytes[..8].copy_from_slice(&(self.ids.long.len() as u64).to_le_bytes());
                self.ids.long.push(Box::from(text));
                (FORM_LONG, bytes)
            }
        };
        if !tools.calls.is_empty() || tools.result_for.is_some() {
            self.tools.try_reserve(1).map_err(|_| out_of_memory(WHAT))?;
            self.tools.insert(
                node,
                ToolIds {
                    calls: tools
                        .calls
                        .into_iter()
                        .map(String::into_boxed_str)
                        .collect(),
                    result_for: tools.result_for.map(String::into_boxed_str),
                },
            );
        }
        self.ids.packed.push(packed);
        self.ids.meta.push(form | role_code(role) << 2);
        self.parents.push(parent.unwrap_or(NONE));
        let ids = &self.ids;
        let hash = ids.hash(&ids.key(node));
        self.table
            .insert_unique(hash, node, |&n| ids.hash(&ids.key(n)));
        Ok(node)
    }

    /// The §6.2 rule for each compaction `(node, firstKeptEntryId)`, in order:
    /// `Err(Error::InvalidCompaction)` when it refuses the cut. Consumes the record:
    /// the id table is dropped before the tree links the walks need are built (12
    /// bytes an entry, and only when there is a compaction).
    pub(crate) fn check_compactions(
        self,
        compactions: &[(u32, Option<&str>)],
    ) -> Result<Vec<Result<(), Error>>, Error> {
        let mut results = Vec::new();
        if compactions.is_empty() {
            return Ok(results);
        }
        results
            .try_reserve_exact(compactions.len())
            .map_err(|_| out_of_memory("the imported compactions"))?;
        let firsts: Vec<u32> = compactions
            .iter()
            .map(|(_, first)| first.and_then(|id| self.find(id)).unwrap_or(NONE))
            .collect();
        let Written {
            ids,
            table,
            parents,
            tools,
        } = self;
        drop(table);
        let tree = Tree::build(&ids, &parents)?;
        let tree = Checked {
            ids,
            parents,
            tree,
            tools,
        };
        for (&(node, first_kept), &first) in compactions.iter().zip(&firsts) {
            let walk = Walk {
                written: &tree,
                at: tree.parents[node as usize],
                first,
                found: false,
            };
            let id = tree.ids.text(node);
            results.push(check_compaction(id.as_str(), first_kept, walk, &|_| {
                first != NONE
            }));
        }
        Ok(results)
    }
}

/// One written entry's place in the tree, beside its parent.
struct Node {
    depth: u32,
    /// A skew-binary jump pointer: with `parent`, finds the ancestor at a given depth
    /// in a logarithmic number of steps.
    jump: u32,
    /// The nearest strict ancestor that is a message.
    message_above: u32,
}

struct Tree;

impl Tree {
    /// The tree links of every entry, parents before children (the order written).
    fn build(ids: &Ids, parents: &[u32]) -> Result<Vec<Node>, Error> {
        let mut nodes: Vec<Node> = Vec::new();
        nodes
            .try_reserve_exact(parents.len())
            .map_err(|_| out_of_memory(WHAT))?;
        grown_to(nodes.capacity().saturating_mul(size_of::<Node>()), WHAT)?;
        for (i, &parent) in parents.iter().enumerate() {
            let node = i as u32;
            let (depth, jump, message_above) = match nodes.get(parent as usize) {
                None => (0, node, NONE),
                Some(up) => {
                    let up_jump = &nodes[up.jump as usize];
                    let jump = if up.depth - up_jump.depth
                        == up_jump.depth - nodes[up_jump.jump as usize].depth
                    {
                        up_jump.jump
                    } else {
                        parent
                    };
                    let message_above = if role_of(ids.meta[parent as usize]).is_some() {
                        parent
                    } else {
                        up.message_above
                    };
                    (up.depth + 1, jump, message_above)
                }
            };
            nodes.push(Node {
                depth,
                jump,
                message_above,
            });
        }
        Ok(nodes)
    }
}

/// What the compaction walks read: the ids, the tree links, the tool facts.
struct Checked {
    ids: Ids,
    parents: Vec<u32>,
    tree: Vec<Node>,
    tools: HashMap<u32, ToolIds>,
}

impl Checked {
    fn role(&self, node: u32) -> Option<Role> {
        role_of(self.ids.meta[node as usize])
    }

    /// The ancestor of `node` at `depth` (at most its own).
    fn ancestor_at(&self, mut node: u32, depth: u32) -> u32 {
        loop {
            let n = &self.tree[node as usize];
            if n.depth <= depth {
                return node;
            }
            node = if self.tree[n.jump as usize].depth >= depth {
                n.jump
            } else {
                self.parents[node as usize]
            };
        }
    }
}

/// A written entry, as the rule reads it.
#[derive(Clone, Copy)]
pub(crate) struct WrittenEntry<'w> {
    written: &'w Checked,
    node: u32,
    id: IdText<'w>,
}

impl<'w> WrittenEntry<'w> {
    fn new(written: &'w Checked, node: u32) -> WrittenEntry<'w> {
        WrittenEntry {
            written,
            node,
            id: written.ids.text(node),
        }
    }
}

impl Ancestor for WrittenEntry<'_> {
    fn id(&self) -> &str {
        self.id.as_str()
    }

    fn role(&self) -> Option<Role> {
        self.written.role(self.node)
    }

    fn tool_facts(&self, _: &mut ToolReader) -> Result<ToolFacts, Error> {
        Ok(match self.written.tools.get(&self.node) {
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
    written: &'w Checked,
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
            let node = &written.tree[current as usize];
            if self.first != NONE && !self.found {
                let first = &written.tree[self.first as usize];
                if current == self.first {
                    self.found = true;
                    self.at = node.message_above;
                    return Some(WrittenEntry::new(written, current));
                }
                if node.depth <= first.depth {
                    self.at = NONE;
                    return None;
                }
                let above = node.message_above;
                let above_depth = (above != NONE).then(|| written.tree[above as usize].depth);
                // `first`, when it is not a message, may lie between here and the
                // next message up: go to the ancestor at its depth instead.
                self.at = if written.role(self.first).is_none()
                    && above_depth.is_none_or(|d| d < first.depth)
                {
                    written.ancestor_at(written.parents[current as usize], first.depth)
                } else {
                    above
                };
            } else {
                self.at = node.message_above;
            }
            if written.role(current).is_some() {
                return Some(WrittenEntry::new(written, current));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every id form reads back as written and is found again, and ids that differ
    /// only in case or form are different entries.
    #[test]
    fn packed_ids_read_back_and_are_found() {
        let ids = [
            "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d",
            "0A1B2C3D-4E5F-4A6B-8C7D-9E0F1A2B3C4D",
            "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4",
            "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4g",
            "0a1b2c3d04e5f-4a6b-8c7d-9e0f1a2b3c4d",
            "1b2c3d4e",
            "",
            "fifteen bytes!!",
            "sixteen bytes!!!",
            "import-root~2",
            "é-ü-ø",
            "claude-line-12345678901234567890",
        ];
        let mut written = Written::new();
        for (i, id) in ids.iter().enumerate() {
            let parent = i.checked_sub(1).map(|p| p as u32);
            assert_eq!(written.find(id), None, "{id} before it is added");
            let node = written.add(id, parent, None, ToolFacts::default()).unwrap();
            assert_eq!(node, i as u32);
        }
        for (i, id) in ids.iter().enumerate() {
            assert_eq!(written.id(i as u32).as_str(), *id);
            assert_eq!(written.find(id), Some(i as u32), "{id}");
        }
        assert_eq!(written.find("0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4e"), None);
        assert_eq!(written.find("fifteen bytes!?"), None);
    }
}

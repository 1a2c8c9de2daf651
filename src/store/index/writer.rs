//! Writing an index: encoding a log's records and writing the file beside the session.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::format::*;
use super::index_path;
use crate::entry::Facts;

/// Appends after which a writer rewrites its index, so that a crash costs at most a
/// bounded tail replay at the next open.
pub(crate) const REWRITE_EVERY_APPENDS: u64 = 65_536;
/// Bytes appended after which a writer rewrites its index.
pub(crate) const REWRITE_EVERY_BYTES: u64 = 64 << 20;

/// What the writer knows of an entry to record it (see [`Raw`]); `json` is given for
/// an entry whose checksum and id hash must be computed, `None` when `raw` already has
/// them (an entry read from the previous index).
pub(crate) struct Item<'a> {
    pub(crate) raw: Raw,
    pub(crate) json: Option<(&'a [u8], &'a Facts)>,
}

/// Everything [`encode`] writes besides the records.
pub(crate) struct Tree<'a> {
    pub(crate) roots: &'a [u32],
    /// (target, label entry, label text), ordered by target.
    pub(crate) labels: Vec<(u32, u32, &'a str)>,
    pub(crate) leaf_first: u32,
    pub(crate) leaf_last: u32,
}

/// The index of `items` (every committed entry, in commit order), for the session file
/// `file` in the state `stamp`, whose committed prefix is exactly the entries' lines
/// (`stamp.size` bytes). Reads the sampled regions and the last line from `file`.
/// `None` when there is nothing to index or the file does not hold what the items say.
pub(crate) fn encode<'a>(
    items: impl Iterator<Item = Option<Item<'a>>>,
    count: usize,
    tree: &Tree<'_>,
    seed: u64,
    file: &dyn Source,
    stamp: Stamp,
) -> Option<Vec<u8>> {
    let entries = u64::try_from(count).ok().filter(|&n| n > 0)?;
    let slots = entries.checked_mul(2)?.next_power_of_two().max(8);
    let mut extra = Vec::new();
    for &root in tree.roots {
        extra.extend_from_slice(&root.to_le_bytes());
    }
    for &(target, entry, text) in &tree.labels {
        extra.extend_from_slice(&target.to_le_bytes());
        extra.extend_from_slice(&entry.to_le_bytes());
        extra.extend_from_slice(&u32::try_from(text.len()).ok()?.to_le_bytes());
        extra.extend_from_slice(text.as_bytes());
    }
    let (record_pages, _, _, pages, sum_pages) = layout(entries, slots, extra.len() as u64);
    let total = usize::try_from((1 + pages + sum_pages).checked_mul(PAGE as u64)?).ok()?;
    let mut out = Vec::with_capacity(total);
    out.resize(PAGE, 0);
    let mut table = vec![(NONE, 0u32); usize::try_from(slots).ok()?];
    let mask = slots - 1;
    let mut offset = 0u64;
    let mut last = None;
    let mut written = 0u64;
    for (position, item) in items.enumerate() {
        let Item { mut raw, json } = item?;
        written += 1;
        if let Some((json, facts)) = json {
            raw.len = u32::try_from(json.len()).ok()?;
            raw.sum = line_sum(json);
            raw.id_hash = id_hash(seed, facts.id(json));
            raw.facts = encode_facts(facts);
        }
        if raw.offset != offset {
            return None;
        }
        offset = offset.checked_add(u64::from(raw.len) + 1)?;
        let mut slot = raw.id_hash & mask;
        while table[slot as usize].0 != NONE {
            slot = (slot + 1) & mask;
        }
        table[slot as usize] = (u32::try_from(position).ok()?, (raw.id_hash >> 32) as u32);
        if position % PER_PAGE == 0 && position > 0 {
            pad_to_page(&mut out);
        }
        raw.write(&mut out);
        last = Some(raw);
    }
    let last = last?;
    if written != entries || offset != stamp.size || out.len() > PAGE * (1 + record_pages as usize)
    {
        return None;
    }
    pad_to_page(&mut out);
    for (position, tag) in &table {
        out.extend_from_slice(&position.to_le_bytes());
        out.extend_from_slice(&tag.to_le_bytes());
    }
    pad_to_page(&mut out);
    out.extend_from_slice(&extra);
    pad_to_page(&mut out);
    if out.len() as u64 != (1 + pages) * PAGE as u64 {
        return None;
    }
    let sums: Vec<u8> = out[PAGE..]
        .chunks_exact(PAGE)
        .flat_map(|page| Hash64::of(page).to_le_bytes())
        .collect();
    let sums_hash = Hash64::of(&sums);
    out.extend_from_slice(&sums);
    pad_to_page(&mut out);
    // The file must hold, now, what the records say: its samples and its last line.
    let sample = sample_hash(file, stamp.size).ok()??;
    let mut line = vec![0u8; last.len as usize + 1];
    if !read_exact_at(file, &mut line, last.offset).ok()?
        || line_sum(&line[..line.len() - 1]) != last.sum
    {
        return None;
    }
    let header = Header {
        stamp,
        entries,
        seed,
        slots,
        extra_bytes: extra.len() as u64,
        roots: tree.roots.len() as u64,
        labels: tree.labels.len() as u64,
        pages,
        sums_hash,
        leaf_first: tree.leaf_first,
        leaf_last: tree.leaf_last,
        sample_hash: sample,
        last_hash: Hash64::of(&line),
    };
    out[..HEADER].copy_from_slice(&header.encode());
    Some(out)
}

/// Writes `bytes` as the index of the session at `path`, atomically: a new temporary
/// file beside it, synced when `durable`, renamed over the index (and the directory
/// synced when `durable`). `like` is the session file's metadata: the index gets its
/// permission bits and owner (see [`crate::store::file::create_sidecar`]).
///
/// The temporary is created exclusively, never through a symbolic link, under the
/// first free name among `<file>.idx.tmp`, `<file>.idx.tmp-2`, … (shortened to fit
/// `NAME_MAX`): whatever already exists at a name (a link, a FIFO, another writer's
/// file) is never opened. A writer holding the lock (`locked`) removes a regular file
/// left at a name by a writer that was killed. The rename replaces whatever is at
/// `<file>.idx` (a symbolic link is replaced, not written through). A session whose
/// index name would exceed `NAME_MAX` gets no index (`InvalidInput`).
pub(crate) fn write(
    path: &Path,
    bytes: &[u8],
    durable: bool,
    like: &fs::Metadata,
    locked: bool,
) -> io::Result<()> {
    let target = index_path(path);
    let name = target.file_name().unwrap_or_default().to_owned();
    if name.len() > crate::store::file::NAME_MAX {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "the index name would be longer than NAME_MAX",
        ));
    }
    let (temp, mut file) = create_temp(&target, &name, like, locked)?;
    let result = (|| {
        file.write_all(bytes)?;
        if durable {
            file.sync_all()?;
        }
        drop(file);
        fs::rename(&temp, &target)?;
        if durable {
            crate::store::file::sync_dir(&target)?;
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = fs::remove_file(&temp);
    }
    result
}

/// A new temporary file for the index `target` (named `name`): see [`write`].
pub(super) fn create_temp(
    target: &Path,
    name: &std::ffi::OsStr,
    like: &fs::Metadata,
    locked: bool,
) -> io::Result<(PathBuf, File)> {
    for k in 1..=100u32 {
        let suffix = if k == 1 {
            ".tmp".to_owned()
        } else {
            format!(".tmp-{k}")
        };
        let temp = target.with_file_name(crate::store::file::sidecar_name(name, "", &suffix));
        for attempt in 0..2 {
            match crate::store::file::create_sidecar(&temp, like) {
                Ok(file) => return Ok((temp, file)),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                    let stale = fs::symlink_metadata(&temp).is_ok_and(|m| m.file_type().is_file());
                    if locked && attempt == 0 && stale && fs::remove_file(&temp).is_ok() {
                        continue;
                    }
                    break;
                }
                Err(e) => return Err(e),
            }
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        "no free name for the index's temporary file",
    ))
}

/// Removes the index of the session at `path`, if any (after a repair).
pub fn remove_index(path: &Path) -> io::Result<()> {
    match fs::remove_file(index_path(path)) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

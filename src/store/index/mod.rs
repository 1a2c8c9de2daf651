//! The session index: a disposable cache beside a JSONL file, `<file>.idx`, that lets
//! open skip reading the lines it covers.
//!
//! The JSONL file stays the only source of truth. Open uses an index only when it
//! matches the file: same device and inode, the change time (`ctime`) it recorded, a
//! size at least the covered size, the modification time it recorded (equal when the
//! file has exactly the covered size, not older when it grew), a checksum of 16 regions
//! of 256 bytes spread over the covered prefix, and a checksum of the last covered
//! line. Anything else — another file, a shorter one, a changed time or byte in those
//! places, a torn, truncated, foreign or other-version index — and the store is rebuilt
//! from the file exactly as without an index. The change time is what makes the index
//! never stale at open: every write moves it and no program can set it back, so an
//! edit in place that keeps the size and puts the modification time back is seen too
//! (what the index derives from lines a query does not return — which entries are an
//! entry's children, the leaves and roots, depth and child count, whether an id exists
//! — could not be checked otherwise without reading every line). Its price: a file
//! that grew since its index was written (a writer killed before its close, or still
//! appending) is replayed whole until a writer's close writes a new index. Bytes after
//! the covered prefix (possible only within one tick of a coarse clock) are recovered
//! and replayed as always (tail rules, `needs_repair`, line numbers).
//!
//! Nothing is read at open beyond the header, the page checksums, the samples, the
//! last line, and the roots and labels. Queries read index pages and lines on demand:
//! an index page is checked against its checksum when read (a mismatch means the
//! store replays the file and answers from it), and a line against its record's
//! checksum, id hash and parent every time it is read from the file — the first time
//! and every later one, cached or streamed, so a file changed since is seen (a mismatch
//! is `corrupt_line` with its line number, and the store is not tainted); a label, also
//! against the line of the entry that set it. Pages and lines read stay cached up to
//! 16 MiB between operations; what is answered from the cache was checked when read.
//!
//! An index is written only for a file that is exactly its entries' canonical lines
//! (`json + "\n"` each, no blank lines, no extra whitespace): every file the library
//! writes itself. Other files open as before, without one. A writer never writes one
//! after the file's change time moved other than by its own appends (the records it
//! holds may then describe bytes that are gone): it removes the index instead (see
//! `FileSink::write_index`). How the file is created: [`write`].
//!
//! Format (version 5, little-endian, in 4 KiB pages). Page 0 holds the 256-byte
//! header: magic `LSIDX\r\n\x1a`, version `u32`, page size `u32`, record size `u32`,
//! reserved `u32`; then `u64`s: device, inode, covered size, mtime seconds, mtime
//! nanoseconds, ctime seconds, ctime nanoseconds, entries, id-hash seed, hash-table slots, roots-and-labels bytes, roots,
//! labels, checksummed pages, checksum of the page checksums, checksum of the samples,
//! checksum of the last line; then the first and last leaf (`u32`); the header's own
//! checksum is its last 8 bytes. Then, each section starting on a page: one 108-byte
//! record per entry, 37 to a page (line offset `u64`, id hash `u64`, line length `u32`,
//! line checksum `u32`, parent `u32`, facts 44 bytes: flags, kind, role, tool pairing
//! and the spans of id, parent, timestamp and body; tree links 9 × `u32`: first
//! child, last child, next sibling, child count, depth, jump, previous and next
//! leaf, and `meta`: for an entry other than a metadata entry that `build_context`
//! replays, the nearest such entry above it; for one, the nearest above it of another
//! key); the id hash table (open addressing, a power of two of 8-byte slots:
//! position `u32`, high half of the id hash `u32`); the roots (`u32` each) and labels
//! (target `u32`, label entry `u32`, length `u32`, UTF-8 text); and last, one
//! checksum `u64` per page from page 1 to the end of the labels. Checksums are
//! xxHash64 (seed 0): they detect change, they do not resist an adversary.

mod base;
mod cells;
pub(super) mod format;
mod lines;
mod readahead;
mod streamer;
mod writer;

use std::path::{Path, PathBuf};

pub(crate) use base::{Base, Fault};
pub(crate) use format::{LINKS, NONE, ORPHAN, Raw, Stamp};
pub use writer::remove_index;
pub(crate) use writer::{Item, REWRITE_EVERY_APPENDS, REWRITE_EVERY_BYTES, Tree, encode, write};

/// The index file of the session at `path`: `<path>.idx` (it never ends in `.jsonl`).
pub fn index_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".idx");
    PathBuf::from(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_index_name_never_ends_in_jsonl() {
        let name = index_path(Path::new("dir/s.jsonl"));
        assert_eq!(name, Path::new("dir/s.jsonl.idx"));
    }
}

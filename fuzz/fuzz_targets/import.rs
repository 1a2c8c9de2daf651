//! Fuzz target: every import path (pi, Claude Code, Codex) over arbitrary bytes: never a
//! panic, a report that accounts for every line, output that opens, and an export of
//! the result (see tests/interop/import_property.rs). Then the import's memory: a
//! counting allocator measures each import's peak, which must stay within a fixed
//! working room (the import keeps 8 MiB free beside its tables) plus a bounded
//! multiple of the input and output sizes: never a quadratic or runaway allocation.
#![no_main]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use libfuzzer_sys::fuzz_target;

#[allow(dead_code)]
#[path = "../../tests/interop/import_property.rs"]
mod import_property;

/// The system allocator, counting the bytes allocated now and the peak.
struct Counting;

static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is forwarded unchanged to the system allocator, which upholds
// the contract; the counters only observe the sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's layout is passed on as it came.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            let now = CURRENT.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by `alloc` above with this layout.
        unsafe { System.dealloc(ptr, layout) };
        CURRENT.fetch_sub(layout.size(), Ordering::Relaxed);
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The working room the import probes for (8 MiB) and some slack.
const FIXED: usize = 16 << 20;
/// Bytes of memory per byte of input and output at most: values, ids, report.
const PER_BYTE: usize = 256;

fuzz_target!(|data: &[u8]| {
    import_property::check_import(data);
    for format in import_property::FORMATS {
        let base = CURRENT.load(Ordering::Relaxed);
        PEAK.store(base, Ordering::Relaxed);
        let imported = match session::interop::import(format, data) {
            Ok(imported) => imported,
            // No conversation, or another format: refused (check_import checks that the
            // refusal agrees with the detection); the bound is on what an import keeps.
            Err(session::Error::NotImportable { .. }) => continue,
            Err(e) => panic!("{format:?}: a small input imports or is refused: {e:?}"),
        };
        let peak = PEAK.load(Ordering::Relaxed) - base;
        let output: usize = imported.lines.iter().map(|l| l.len() + 1).sum();
        let bound = FIXED + PER_BYTE * (data.len() + output);
        assert!(
            peak <= bound,
            "{format:?}: peak {peak} bytes for {} in, {output} out",
            data.len()
        );
    }
});

//! T7's power-loss model (docs/reliability.md): a layer that records what the store
//! writes and where it syncs, and the crash states a recording can leave.

use std::io;
use std::sync::{Arc, Mutex};

use session::SessionFile;

/// What the recording layer saw: the bytes written in order, and the length of the
/// file at each sync.
#[derive(Default)]
pub struct Recording {
    pub bytes: Vec<u8>,
    pub synced: usize,
}

/// The store's file behind a recording of its writes and syncs.
pub struct Recorder {
    pub file: std::fs::File,
    pub rec: Arc<Mutex<Recording>>,
}

impl SessionFile for Recorder {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = io::Write::write(&mut self.file, buf)?;
        self.rec.lock().unwrap().bytes.extend_from_slice(&buf[..n]);
        Ok(n)
    }

    fn sync(&mut self) -> io::Result<()> {
        self.file.sync_data()?;
        let mut rec = self.rec.lock().unwrap();
        rec.synced = rec.bytes.len();
        Ok(())
    }
}

/// What a damaged unsynced chunk holds after power loss (undamaged chunks hold data).
#[derive(Clone, Copy, Debug)]
enum Fill {
    Zeros,
    Garbage,
}

/// Every crash state of a recording: synced bytes kept, the unsynced suffix cut at each
/// 4 KiB boundary and at three-way splits between them, and the kept unsynced chunks
/// filled as data, zeros or garbage (the last chunk, or one earlier chunk).
pub fn crash_states(rec: &Recording) -> Vec<(Vec<u8>, bool)> {
    const CHUNK: usize = 4096;
    let base = rec.synced;
    let suffix = &rec.bytes[base..];
    let mut cuts: Vec<usize> = (0..=suffix.len()).step_by(CHUNK).collect();
    for w in (0..suffix.len()).step_by(CHUNK) {
        cuts.extend(
            [w + CHUNK / 3, w + 2 * CHUNK / 3]
                .into_iter()
                .filter(|&c| c < suffix.len()),
        );
    }
    cuts.push(suffix.len());
    cuts.sort_unstable();
    cuts.dedup();
    let mut states = Vec::new();
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    for &cut in &cuts {
        let kept = &suffix[..cut];
        let chunks = kept.len().div_ceil(CHUNK);
        // (which chunk is damaged, how): none; the last; the first of several.
        let mut plans: Vec<Option<(usize, Fill)>> = vec![None];
        if chunks > 0 {
            for fill in [Fill::Zeros, Fill::Garbage] {
                plans.push(Some((chunks - 1, fill)));
                if chunks > 1 {
                    plans.push(Some((0, fill)));
                }
            }
        }
        for plan in plans {
            let mut bytes = rec.bytes[..base].to_vec();
            let mut tail = kept.to_vec();
            let mut damage_before_data = false;
            if let Some((chunk, fill)) = plan {
                let range = chunk * CHUNK..((chunk + 1) * CHUNK).min(tail.len());
                damage_before_data = range.end < tail.len();
                for b in &mut tail[range] {
                    *b = match fill {
                        Fill::Zeros => 0,
                        Fill::Garbage => {
                            seed ^= seed << 13;
                            seed ^= seed >> 7;
                            seed ^= seed << 17;
                            (seed >> 24) as u8
                        }
                    };
                }
            }
            bytes.extend_from_slice(&tail);
            states.push((bytes, damage_before_data));
        }
    }
    states
}

//! A state machine test against a reference model (docs/reliability.md T11).
//!
//! proptest generates sequences of operations on one JSONL store: valid appends,
//! duplicate ids, missing parents, an injected fault at the k-th next write (every
//! fault kind of T4), dropping the store without anything else (a process crash: the
//! store keeps no buffer, so nothing more reaches the disk), reopen, the caller's repair
//! (cut to the committed prefix) and reads. The model is what the disk holds (committed
//! entries and a torn tail), what the open instance has committed, and its state; every
//! result and the write-call count are compared after each step. Failures shrink to a
//! minimal sequence and are kept in `tests/reliability_model.proptest-regressions`.
//! PR: 512 cases; `SOAK=1`: 100,000 (or `PROPTEST_CASES=N`).

use crate::common;

use std::sync::Arc;

use common::*;
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{FileFailurePersistence, TestCaseError, TestRunner};
use session::{Entry, Error, IoFailure, State, Store, Warning, parse_entry};

#[derive(Clone, Debug)]
enum Op {
    /// A new id whose parent is a committed entry (or none).
    AppendValid {
        parent: Option<Index>,
        long: bool,
    },
    /// The id of a committed entry again.
    AppendDuplicate(Index),
    /// A parent that was never written.
    AppendMissingParent,
    /// Fail the `after + 1`-th next write call.
    InjectFail {
        after: u8,
        fault: Fault,
    },
    /// The process dies: the store is dropped with nothing else.
    Crash,
    Reopen,
    /// The caller cuts the file to its committed prefix and reopens.
    Repair,
    ReadAll,
}

fn op() -> impl Strategy<Value = Op> {
    let fault = prop_oneof![
        Just(Fault::Errno(libc::EIO)),
        Just(Fault::Errno(libc::ENOSPC)),
        Just(Fault::Errno(libc::EINTR)),
        Just(Fault::ShortThenEio),
        Just(Fault::EioAfterFullWrite),
    ];
    prop_oneof![
        8 => (proptest::option::weighted(0.9, any::<Index>()), proptest::bool::weighted(0.05))
            .prop_map(|(parent, long)| Op::AppendValid { parent, long }),
        1 => any::<Index>().prop_map(Op::AppendDuplicate),
        1 => Just(Op::AppendMissingParent),
        2 => (0u8..3, fault).prop_map(|(after, fault)| Op::InjectFail { after, fault }),
        1 => Just(Op::Crash),
        1 => Just(Op::Reopen),
        1 => Just(Op::Repair),
        2 => Just(Op::ReadAll),
    ]
}

/// The reference model.
#[derive(Default)]
struct Model {
    /// Entries on committed lines of the file.
    disk: Vec<Entry>,
    /// Bytes after the last committed line (a torn append).
    torn: Vec<u8>,
    /// What the open instance has committed.
    view: Vec<Entry>,
    state: Option<State>,
    /// Write calls the open instance has made.
    writes: u64,
    /// The armed fault: (1-based call number of this instance, kind).
    armed: Option<(u64, Fault)>,
    next_id: u64,
}

impl Model {
    fn reopened(&mut self) {
        self.view = self.disk.clone();
        self.writes = 0;
        self.armed = None;
        self.state = Some(if self.torn.is_empty() {
            State::Ready
        } else {
            State::NeedsRepair
        });
    }

    fn warnings(&self) -> Vec<Warning> {
        (!self.torn.is_empty())
            .then_some(Warning::UnterminatedTail {
                line: self.disk.len() as u64 + 1,
            })
            .into_iter()
            .collect()
    }
}

struct Harness {
    dir: TempDir,
    store: Option<Store>,
    script: Arc<FaultPlan>,
    cause: Option<Arc<IoFailure>>,
    model: Model,
}

impl Harness {
    fn new() -> Harness {
        let mut h = Harness {
            dir: temp_dir("t11"),
            store: None,
            script: Arc::default(),
            cause: None,
            model: Model::default(),
        };
        h.reopen().expect("first open");
        h
    }

    fn path(&self) -> std::path::PathBuf {
        self.dir.join("s.jsonl")
    }

    fn store(&self) -> &Store {
        self.store.as_ref().expect("open store")
    }

    fn reopen(&mut self) -> Result<(), String> {
        self.store = None;
        self.cause = None;
        self.script = Arc::default();
        let (store, report) =
            Store::open_jsonl_with_io(self.path(), FaultyFile::wrap(&self.script))
                .map_err(|e| format!("reopen: hard error {e}"))?;
        self.model.reopened();
        if Some(report.state) != self.model.state || report.warnings != self.model.warnings() {
            return Err(format!("reopen: {report:?}, model {:?}", self.model.state));
        }
        if store.entries().map_err(|e| e.to_string())? != self.model.view {
            return Err("reopen: entries differ from the disk model".into());
        }
        self.store = Some(store);
        Ok(())
    }

    /// The model's answer to an append of `entry`, given how the tree rules judge it.
    fn expect_append(&mut self, entry: &Entry, rule: Result<(), &str>) -> Expected {
        match self.model.state {
            Some(State::NeedsRepair) => return Expected::NeedsRepair,
            Some(State::Tainted) => return Expected::Tainted,
            _ => {}
        }
        if let Err(rule) = rule {
            return Expected::Rule(rule.to_owned());
        }
        let line = [entry.json().as_bytes(), b"\n"].concat();
        let call = self.model.writes + 1;
        match self.model.armed {
            Some((at, fault)) if at == call => {
                self.model.armed = None;
                match fault {
                    Fault::Errno(libc::EINTR) => {
                        self.model.writes += 2;
                        self.commit(entry)
                    }
                    Fault::Errno(errno) => {
                        self.model.writes += 1;
                        self.model.state = Some(State::Tainted);
                        Expected::Io(errno)
                    }
                    Fault::ShortThenEio => {
                        self.model.writes += 2;
                        self.model.torn = line[..line.len() / 2].to_vec();
                        self.model.state = Some(State::Tainted);
                        Expected::Io(libc::EIO)
                    }
                    Fault::EioAfterFullWrite => {
                        self.model.writes += 1;
                        self.model.disk.push(entry.clone());
                        self.model.state = Some(State::Tainted);
                        Expected::Io(libc::EIO)
                    }
                }
            }
            _ => {
                self.model.writes += 1;
                self.commit(entry)
            }
        }
    }

    fn commit(&mut self, entry: &Entry) -> Expected {
        self.model.disk.push(entry.clone());
        self.model.view.push(entry.clone());
        Expected::Ok(self.model.view.len() as u64 - 1)
    }

    fn append(&mut self, entry: Entry, rule: Result<(), &str>) -> Result<(), String> {
        let expected = self.expect_append(&entry, rule);
        let got = self.store().append_entry(entry);
        match (&expected, got) {
            (Expected::Ok(seq), Ok(r)) if r.seq == *seq => Ok(()),
            (Expected::NeedsRepair, Err(Error::NeedsRepair { warnings }))
                if warnings == self.model.warnings() =>
            {
                Ok(())
            }
            (Expected::Tainted, result) => self.check_tainted(result),
            (Expected::Rule(r), Err(Error::DuplicateId { line: None, .. })) if r == "duplicate" => {
                Ok(())
            }
            (Expected::Rule(r), Err(Error::MissingParent { line: None, .. })) if r == "missing" => {
                Ok(())
            }
            (Expected::Io(errno), Err(Error::Io(f))) if f.os_error == Some(*errno) => {
                self.cause = Some(f);
                Ok(())
            }
            (expected, got) => Err(format!("append: {got:?}, model {expected:?}")),
        }
    }

    fn check_tainted<T: std::fmt::Debug>(&self, result: Result<T, Error>) -> Result<(), String> {
        match (result, &self.cause) {
            (Err(Error::Tainted { cause }), Some(first)) if Arc::ptr_eq(&cause, first) => Ok(()),
            (other, _) => Err(format!(
                "expected tainted by the first failure, got {other:?}"
            )),
        }
    }

    fn step(&mut self, op: &Op) -> Result<(), String> {
        match op {
            Op::AppendValid { parent, long } => {
                let id = format!("m-{}", self.model.next_id);
                self.model.next_id += 1;
                let parent = parent
                    .filter(|_| !self.model.view.is_empty())
                    .map(|i| i.get(&self.model.view).id().to_owned());
                let text = if *long {
                    "長".repeat(100_000)
                } else {
                    format!("n{}", self.model.next_id)
                };
                let entry = parse_entry(user(&id, parent.as_deref(), &text)).expect("valid");
                self.append(entry, Ok(()))?;
            }
            Op::AppendDuplicate(i) => {
                if self.model.view.is_empty() {
                    return Ok(());
                }
                let id = i.get(&self.model.view).id().to_owned();
                let entry = parse_entry(user(&id, None, "again")).expect("valid");
                self.append(entry, Err("duplicate"))?;
            }
            Op::AppendMissingParent => {
                let id = format!("m-{}", self.model.next_id);
                self.model.next_id += 1;
                let entry = parse_entry(user(&id, Some("never-written"), "x")).expect("valid");
                self.append(entry, Err("missing"))?;
            }
            Op::InjectFail { after, fault } => {
                let at = self.model.writes + 1 + u64::from(*after);
                self.model.armed = Some((at, *fault));
                self.script.script().fault = Some((at, *fault, FaultMode::TransientOnce));
            }
            Op::Crash | Op::Reopen => self.reopen()?,
            Op::Repair => {
                self.store = None;
                truncate_to_committed(&self.path());
                self.model.torn.clear();
                self.reopen()?;
            }
            Op::ReadAll => {
                let read = self.store().read();
                if self.model.state == Some(State::Tainted) {
                    self.check_tainted(read)?;
                } else {
                    let snapshot = read.map_err(|e| format!("read: {e}"))?;
                    if snapshot.entries != self.model.view
                        || Some(snapshot.state) != self.model.state
                        || snapshot.warnings != self.model.warnings()
                    {
                        return Err(format!(
                            "read: {:?} with {} entries",
                            snapshot.state,
                            snapshot.entries.len()
                        ));
                    }
                }
            }
        }
        if self.script.script().writes != self.model.writes {
            return Err(format!(
                "{} write calls, the model expects {}",
                self.script.script().writes,
                self.model.writes
            ));
        }
        if Some(self.store().state()) != self.model.state {
            return Err(format!(
                "state {:?}, model {:?}",
                self.store().state(),
                self.model.state
            ));
        }
        Ok(())
    }
}

#[derive(Debug)]
enum Expected {
    Ok(u64),
    NeedsRepair,
    Tainted,
    Rule(String),
    Io(i32),
}

fn cases() -> u32 {
    let default = if soak() { 100_000 } else { 512 };
    env_count("PROPTEST_CASES", default) as u32
}

/// Where shrunk failures are kept and replayed first (proptest's regression file).
const REGRESSIONS: &str = "tests/reliability_model.proptest-regressions";

#[test]
fn t11_store_matches_the_reference_model() {
    let config = ProptestConfig {
        cases: cases(),
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(REGRESSIONS))),
        ..ProptestConfig::default()
    };
    let mut runner = TestRunner::new(config);
    let steps = std::sync::atomic::AtomicU64::new(0);
    let started = std::time::Instant::now();
    let result = runner.run(&proptest::collection::vec(op(), 1..48), |ops| {
        let mut h = Harness::new();
        for (i, op) in ops.iter().enumerate() {
            steps.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            h.step(op)
                .map_err(|e| TestCaseError::fail(format!("step {i} {op:?}: {e}")))?;
        }
        // Finally the disk, read by a fresh instance, is the model's disk.
        h.reopen().map_err(TestCaseError::fail)?;
        Ok(())
    });
    println!(
        "T11: proptest state machine, {} cases, {} operations, failures {} ({:.1?})",
        cases(),
        steps.into_inner(),
        u8::from(result.is_err()),
        started.elapsed()
    );
    if let Err(e) = result {
        panic!("{e}");
    }
}

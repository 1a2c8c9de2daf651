//! The reliability harness's bounded tests (docs/reliability.md), as
//! `scripts/reliability.sh` and the reliability slice of `scripts/test.sh` run them. T17
//! (`reliability_resources`) counts this process's descriptors and memory, so it is a
//! test binary of its own.
//!
//! One test binary whose modules are the files of the same names in tests/ (fewer
//! binaries to link than one a file); a test's name is `file::test`, e.g.
//! `cargo test --test suite_reliability fuzz_corpus::`.

mod common;

mod fuzz_corpus;
mod index_reliability;
mod reliability_concurrency;
mod reliability_crash;
mod reliability_faults;
mod reliability_limits;
mod reliability_model;
mod reliability_recovery;

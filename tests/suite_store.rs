//! The store's tests: the chapter's tree, the JSONL and memory stores, durability and
//! writers, recovery and repair, the session index, the session listing and the hardening
//! against hostile files.
//!
//! One test binary whose modules are the files of the same names in tests/ (fewer
//! binaries to link than one a file); a test's name is `file::test`, e.g.
//! `cargo test --test suite_store chapter::`.

mod common;

mod chapter;
mod durability;
mod hardening;
mod index;
mod index_reads;
mod index_writer;
mod jsonl_store;
mod list_sessions;
mod memory_store;
mod navigation;
mod powerloss;
mod recover;
mod repair;
mod repair_sweep;
mod tree_rules;
mod writers;

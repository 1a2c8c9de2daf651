//! The tests of what is built from a session: the context and its profiles, import and
//! export (without the agents themselves: see `suite_agents`), resume leaves and the
//! secret scanner.
//!
//! One test binary whose modules are the files of the same names in tests/ (fewer
//! binaries to link than one a file); a test's name is `file::test`, e.g.
//! `cargo test --test suite_context context::`.

mod common;

mod context;
mod default_profile;
mod import_detect;
mod import_hardening;
mod import_progress;
mod interop_cli;
mod interop_fuzz;
mod interop_golden;
mod interop_numbers;
mod interop_resume;
mod resume_leaf;
mod secrets;
mod secrets_wire;

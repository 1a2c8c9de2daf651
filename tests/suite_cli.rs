//! The command line's tests: the `session` binary, also against PostgreSQL when the
//! machine has it (`cli_pg`, `pg_copy`).
//!
//! One test binary whose modules are the files of the same names in tests/ (fewer
//! binaries to link than one a file); a test's name is `file::test`, e.g.
//! `cargo test --test suite_cli cli::`.

mod common;

mod cli;
mod cli_context;
mod cli_navigation;
mod cli_output;
mod cli_output_modes;
mod cli_pg;
mod pg_copy;

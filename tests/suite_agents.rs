//! The interop tests that run pi, Claude Code and Codex themselves (the agents slice of
//! `scripts/test.sh`, after `npm ci` in tests/interop and tests/interop/agents); each
//! passes with a notice where node is missing.
//!
//! One test binary whose modules are the files of the same names in tests/ (fewer
//! binaries to link than one a file); a test's name is `file::test`, e.g.
//! `cargo test --test suite_agents interop_agents::`.

mod common;

mod interop_agents;
mod interop_export;
mod interop_pi;

//! The checks of the words and the house: the README's commands and claims (`readme`),
//! the docs' links (`docs`), the checked-in header (`header`), and that every file in
//! tests/ is built (`test_crates`). They use no library code, so this binary is small
//! and quick to build: `cargo test --test suite_docs`.
//!
//! One test binary whose modules are the files of the same names in tests/; a test's
//! name is `file::test`, e.g. `cargo test --test suite_docs header::`.

mod docs;
mod header;
mod readme;
mod test_crates;

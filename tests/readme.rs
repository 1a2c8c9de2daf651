//! The README shows the C example that ctest builds and runs: it must be that file,
//! verbatim, so that the example in the README cannot rot. Likewise its compaction
//! example must be what `session context` prints for the shipped compacted file.

#[test]
fn readme_c_example_is_the_tested_quickstart() {
    let root = env!("CARGO_MANIFEST_DIR");
    let readme = std::fs::read_to_string(format!("{root}/README.md")).unwrap();
    let quickstart = std::fs::read_to_string(format!("{root}/examples/c/quickstart.c")).unwrap();
    assert!(
        readme.contains(&format!("```c\n{quickstart}```")),
        "README.md's C example differs from examples/c/quickstart.c; copy the file into it"
    );
}

#[test]
fn readme_starts_with_the_run_and_test_commands() {
    let root = env!("CARGO_MANIFEST_DIR");
    let readme = std::fs::read_to_string(format!("{root}/README.md")).unwrap();
    let run =
        readme.find("cargo run --release --bin session -- show examples/tiny-pi.jsonl meta-cwd");
    let test = readme.find("./scripts/test.sh");
    assert!(
        matches!((run, test), (Some(r), Some(t)) if r < t && t < 1000),
        "{run:?} {test:?}"
    );
}

/// The README's block that follows `marker`, fenced as `fence` (e.g. "```json\n").
fn block_after<'r>(readme: &'r str, marker: &str, fence: &str) -> &'r str {
    let at = readme
        .find(marker)
        .unwrap_or_else(|| panic!("README lacks {marker:?}"));
    let start = at + readme[at..].find(fence).expect("a fenced block") + fence.len();
    let len = readme[start..].find("```").expect("the block's end");
    &readme[start..start + len]
}

#[test]
fn readme_compaction_example_is_what_session_context_prints() {
    let root = env!("CARGO_MANIFEST_DIR");
    let readme = std::fs::read_to_string(format!("{root}/README.md")).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_session"))
        .args([
            "context",
            "examples/tiny-pi-compacted.jsonl",
            "u-3",
            "--json",
        ])
        .current_dir(root)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let printed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let shown = block_after(&readme, "prints one line of JSON on stdout", "```json\n");
    let shown: serde_json::Value = serde_json::from_str(shown).unwrap();
    assert_eq!(shown, printed, "README.md's context output is stale");
    let said = block_after(&readme, "and on stderr what it used", "```text\n");
    assert_eq!(said, String::from_utf8(out.stderr).unwrap());
}

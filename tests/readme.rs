//! The README shows the C example that ctest builds and runs: it must be that file,
//! verbatim, so that the example in the README cannot rot.

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

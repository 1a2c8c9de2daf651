//! Cargo builds only the test crates that Cargo.toml declares (`autotests = false`), so a
//! file in tests/ that no crate root names as a module would never run: every tests/*.rs
//! is a root or a module of exactly one root.

use std::collections::BTreeMap;
use std::path::Path;

/// The `path` of each `[[test]]` entry of Cargo.toml.
fn test_roots(manifest: &str) -> Vec<String> {
    let mut roots = Vec::new();
    let mut in_test = false;
    for line in manifest.lines() {
        if line.starts_with('[') {
            in_test = line == "[[test]]";
        } else if in_test && let Some(path) = line.strip_prefix("path = ") {
            roots.push(path.trim_matches('"').to_owned());
        }
    }
    roots
}

/// The files of tests/ that the root `root` declares as modules (`mod name;`).
fn modules_of(root: &str) -> Vec<String> {
    root.lines()
        .filter_map(|l| l.strip_prefix("mod ")?.strip_suffix(';'))
        .filter(|name| *name != "common")
        .map(|name| format!("tests/{name}.rs"))
        .collect()
}

#[test]
fn every_test_file_is_a_crate_root_or_a_module_of_exactly_one() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let manifest = std::fs::read_to_string(repo.join("Cargo.toml")).unwrap();
    let roots = test_roots(&manifest);
    assert!(roots.len() >= 2, "[[test]] entries: {roots:?}");
    let mut owners: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for root in &roots {
        owners
            .entry(root.clone())
            .or_default()
            .push("Cargo.toml".into());
        let text = std::fs::read_to_string(repo.join(root)).unwrap();
        for module in modules_of(&text) {
            assert!(repo.join(&module).is_file(), "{root} names {module}");
            owners.entry(module).or_default().push(root.clone());
        }
    }
    let mut files: Vec<String> = std::fs::read_dir(repo.join("tests"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".rs"))
        .map(|name| format!("tests/{name}"))
        .collect();
    files.sort();
    let unowned: Vec<&String> = files.iter().filter(|f| !owners.contains_key(*f)).collect();
    assert!(
        unowned.is_empty(),
        "never built: add each to a tests/suite_*.rs root as `mod name;`: {unowned:?}"
    );
    let twice: Vec<_> = owners.iter().filter(|(_, o)| o.len() > 1).collect();
    assert!(twice.is_empty(), "built in more than one crate: {twice:?}");
}

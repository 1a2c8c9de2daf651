//! The repository documents itself: no tracked file cites a path outside the repository
//! (a design document on a developer's machine, a sibling checkout), and every reference
//! to `docs/` resolves, down to the contract's section numbers.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The files of the repository: git's tracked files, or (outside a git checkout, e.g. a
/// packaged crate) every file under the root except build output and VCS data. The
/// interop corpus's session files are left out: they are other agents' data, kept byte
/// for byte, and cite what their authors' machines held, not our documents.
fn repository_files() -> Vec<PathBuf> {
    let corpus = root().join("tests/interop/corpus");
    let ours =
        |p: &PathBuf| !(p.starts_with(&corpus) && p.extension().is_some_and(|e| e == "jsonl"));
    let mut files = all_files();
    files.retain(ours);
    files
}

fn all_files() -> Vec<PathBuf> {
    let root = root();
    let listed = Command::new("git")
        .args(["ls-files", "-z"])
        .current_dir(&root)
        .output();
    if let Ok(out) = listed
        && out.status.success()
        && !out.stdout.is_empty()
    {
        return out
            .stdout
            .split(|&b| b == 0)
            .filter(|p| !p.is_empty())
            .map(|p| root.join(String::from_utf8_lossy(p).as_ref()))
            .filter(|p| p.is_file())
            .collect();
    }
    let mut files = Vec::new();
    walk(&root, &mut files);
    files
}

fn walk(dir: &Path, files: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        if matches!(name.to_str(), Some("target" | ".git" | "node_modules")) {
            continue;
        }
        if path.is_dir() {
            walk(&path, files);
        } else {
            files.push(path);
        }
    }
}

fn relative(path: &Path) -> String {
    path.strip_prefix(root())
        .unwrap_or(path)
        .display()
        .to_string()
}

/// Paths that only exist on some machine, never in a clone. Spelled in pieces so that
/// this file does not cite them itself.
fn outside_paths() -> [String; 3] {
    [
        ["..", "/shared"].concat(),
        ["/wo", "rk/"].concat(),
        ["/ro", "ot/"].concat(),
    ]
}

#[test]
fn no_tracked_file_cites_a_path_outside_the_repository() {
    let needles = outside_paths();
    let mut offenders = Vec::new();
    for file in repository_files() {
        let Ok(bytes) = fs::read(&file) else {
            continue;
        };
        for needle in &needles {
            if bytes.windows(needle.len()).any(|w| w == needle.as_bytes()) {
                offenders.push(format!("{}: cites {needle}", relative(&file)));
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "cite docs/ instead:\n{}",
        offenders.join("\n")
    );
}

/// Markdown link targets `[text](target)` that point inside the repository.
fn local_links(text: &str) -> Vec<String> {
    let mut links = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("](") {
        rest = &rest[at + 2..];
        let Some(end) = rest.find(')') else { break };
        let target = &rest[..end];
        let local = !target.contains("://") && !target.starts_with('#') && !target.is_empty();
        if local && !target.contains(' ') {
            links.push(target.split('#').next().unwrap_or(target).to_owned());
        }
    }
    links
}

#[test]
fn every_link_in_the_readme_and_docs_resolves() {
    let root = root();
    let mut pages = vec![root.join("README.md")];
    let docs = fs::read_dir(root.join("docs")).expect("docs/ exists");
    pages.extend(docs.flatten().map(|e| e.path()));
    let mut broken = Vec::new();
    let mut checked = 0;
    for page in pages
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
    {
        let text = fs::read_to_string(page).expect("a page is UTF-8");
        let base = page.parent().unwrap_or(&root);
        for link in local_links(&text) {
            checked += 1;
            if !base.join(&link).exists() {
                broken.push(format!("{}: {link}", relative(page)));
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
    assert!(
        checked >= 6,
        "only {checked} links found: is the scanner broken?"
    );
}

/// Every `docs/<name>.md` named anywhere in the repository exists, and every section
/// number cited after the contract's name is a section the contract has.
#[test]
fn every_reference_to_docs_names_a_file_and_section_that_exist() {
    let root = root();
    let contract = fs::read_to_string(root.join("docs/contract.md")).expect("the contract");
    let sections: BTreeSet<String> = contract
        .lines()
        .filter_map(|l| l.strip_prefix("## "))
        .filter_map(|l| l.split('.').next())
        .map(str::to_owned)
        .collect();
    assert!(
        sections.contains("1") && sections.contains("10"),
        "{sections:?}"
    );
    let mut broken = Vec::new();
    let mut references = 0;
    for file in repository_files() {
        let Ok(text) = fs::read_to_string(&file) else {
            continue;
        };
        for (at, _) in text.match_indices("docs/") {
            let name: String = text[at..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '/' | '.' | '-' | '_'))
                .collect();
            let name = name.trim_end_matches('.');
            if !name.ends_with(".md") {
                continue;
            }
            references += 1;
            if !root.join(name).is_file() {
                broken.push(format!("{}: {name}", relative(&file)));
                continue;
            }
            let after = &text[at + name.len()..];
            if name == "docs/contract.md"
                && let Some(numbers) = after.strip_prefix(" §")
            {
                let section: String = numbers.chars().take_while(char::is_ascii_digit).collect();
                if !sections.contains(&section) {
                    broken.push(format!("{}: {name} §{section}", relative(&file)));
                }
            }
        }
    }
    assert!(
        broken.is_empty(),
        "references to missing docs:\n{}",
        broken.join("\n")
    );
    assert!(references >= 20, "only {references} references found");
}

/// Every repository path that docs/architecture.md names (`src/…`, `tests/…`,
/// `bindings/…`, …) exists, so the map of where each rule lives cannot go stale. A
/// module folder `src/x/` also counts as present when the module is still one file
/// `src/x.rs`: Rust resolves the module either way.
#[test]
fn every_path_named_in_the_architecture_page_exists() {
    let root = root();
    let text = fs::read_to_string(root.join("docs/architecture.md")).expect("the page");
    let prefixes = [
        "src/",
        "tests/",
        "bindings/",
        "include/",
        "fuzz/",
        "scripts/",
        "benches/",
        "bench/",
    ];
    let is_path_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '/' | '.' | '-' | '_');
    let mut missing = Vec::new();
    let mut named = 0;
    for prefix in prefixes {
        for (at, _) in text.match_indices(prefix) {
            if text[..at].chars().next_back().is_some_and(is_path_char) {
                continue;
            }
            let path: String = text[at..]
                .chars()
                .take_while(|&c| is_path_char(c))
                .collect();
            let path = path.trim_end_matches('.');
            named += 1;
            let present = root.join(path).exists()
                || path
                    .strip_suffix('/')
                    .is_some_and(|module| root.join(format!("{module}.rs")).is_file());
            if !present {
                missing.push(path.to_owned());
            }
        }
    }
    assert!(
        missing.is_empty(),
        "docs/architecture.md names paths that do not exist:\n{}",
        missing.join("\n")
    );
    assert!(
        named >= 40,
        "only {named} paths found: is the scanner broken?"
    );
}

/// The names of the modules that `src/lib.rs` declares (`mod x;` or `pub mod x;`,
/// whatever attributes stand before them).
fn declared_modules(lib: &str) -> Vec<String> {
    lib.lines()
        .map(str::trim)
        .filter(|l| !l.starts_with("//"))
        .filter_map(|l| {
            let rest = l.strip_prefix("pub ").unwrap_or(l);
            let name = rest.strip_prefix("mod ")?.strip_suffix(';')?;
            Some(name.trim().to_owned())
        })
        .collect()
}

/// `src/lib.rs`'s module map names every module the crate declares, each on a line
/// that says its floor, so a module added without a word in the map fails here.
#[test]
fn the_module_map_in_lib_rs_names_every_module_with_its_floor() {
    let lib = fs::read_to_string(root().join("src/lib.rs")).expect("src/lib.rs");
    let map: Vec<&str> = lib.lines().filter_map(|l| l.strip_prefix("//!")).collect();
    let modules = declared_modules(&lib);
    assert!(
        modules.len() >= 16,
        "only {} modules found in src/lib.rs: is the scanner broken? {modules:?}",
        modules.len()
    );
    let missing: Vec<&String> = modules
        .iter()
        .filter(|module| {
            let link = format!("[`{module}`]");
            !map.iter()
                .any(|l| l.contains(&link) && l.contains("floor "))
        })
        .collect();
    assert!(
        missing.is_empty(),
        "src/lib.rs's module map lacks these modules (add a line \
         \"//! - floor N: [`name`], what it holds\"): {missing:?}"
    );
}

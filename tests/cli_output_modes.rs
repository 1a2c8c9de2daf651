//! The permission bits of the files the command line makes from a session: an output
//! holds the session's text, so it is never wider than its source (nor than the umask
//! allows). `session copy` out of a database, whose source has no mode, is checked in
//! tests/pg_copy.rs.

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};

use common::*;

/// `session ARGS` under `umask`.
fn session_with_umask(umask: &str, args: &[&str]) -> Output {
    Command::new("sh")
        .arg("-c")
        .arg(format!("umask {umask}; exec \"$0\" \"$@\""))
        .arg(env!("CARGO_BIN_EXE_session"))
        .args(args)
        .output()
        .unwrap()
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

fn set_mode(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[test]
fn every_output_verb_makes_its_file_no_wider_than_its_source() {
    // Rule: `view -o`, `copy` to a file, `import` and `export` create their output with
    // the bits the umask allows and the source has: a 0600 session gives 0600 outputs
    // under umask 022, a 0640 one 0640, a 0644 one 0644; under umask 077, 0600.
    for (source_mode, umask, expected) in [
        (0o600, "022", 0o600),
        (0o640, "022", 0o640),
        (0o644, "022", 0o644),
        (0o644, "077", 0o600),
    ] {
        let dir = temp_dir("output-modes");
        let source = dir.join("session.jsonl");
        write_file(&source, EXAMPLE_FILE.as_bytes());
        set_mode(&source, source_mode);
        let (html, copy, pi, imported) = (
            dir.join("view.html"),
            dir.join("copy.jsonl"),
            dir.join("pi.jsonl"),
            dir.join("imported.jsonl"),
        );
        let path = |p: &Path| p.to_str().unwrap().to_owned();
        let runs: [(&str, Vec<String>, &Path); 3] = [
            (
                "view",
                vec!["view".into(), path(&source), "-o".into(), path(&html)],
                &html,
            ),
            (
                "copy",
                vec!["copy".into(), path(&source), path(&copy)],
                &copy,
            ),
            (
                "export",
                vec![
                    "export".into(),
                    "--to".into(),
                    "pi".into(),
                    path(&source),
                    path(&pi),
                ],
                &pi,
            ),
        ];
        for (verb, args, out) in runs {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let run = session_with_umask(umask, &args);
            assert!(run.status.success(), "{verb}: {run:?}");
            assert_eq!(
                mode(out),
                expected,
                "{verb} of a {source_mode:o} source under umask {umask}"
            );
        }
        // The pi file as another agent's session of the same mode, imported.
        set_mode(&pi, source_mode);
        let run = session_with_umask(
            umask,
            &["import", "--from", "pi", &path(&pi), &path(&imported)],
        );
        assert!(run.status.success(), "import: {run:?}");
        assert_eq!(
            mode(&imported),
            expected,
            "import of a {source_mode:o} source under umask {umask}"
        );
    }
}

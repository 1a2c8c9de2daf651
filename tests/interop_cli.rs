//! The CLI verbs of issue 14: `session import --from FORMAT SRC OUT` writes a new file
//! and its report on stderr, never overwrites; `session export --to pi FILE LEAF OUT`
//! writes a pi file that resumes at LEAF; issue 35: `--to claude-code` and `--to codex`
//! too, the report on stderr, the file no wider in mode than its source.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{interop_fixture, temp_dir};

fn session(args: &[&Path]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_session"))
        .args(args)
        .output()
        .expect("the CLI runs")
}

#[test]
fn import_writes_a_new_file_reports_on_stderr_and_never_overwrites() {
    let dir = temp_dir("import");
    let out = dir.join("codex.jsonl");
    let import = |out: &Path| {
        session(&[
            Path::new("import"),
            Path::new("--from"),
            Path::new("codex"),
            &interop_fixture("codex-rollout.jsonl"),
            out,
        ])
    };
    let first = import(&out);
    assert_eq!(first.status.code(), Some(0));
    assert!(first.stdout.is_empty());
    let report: serde_json::Value = serde_json::from_slice(&first.stderr).unwrap();
    assert_eq!(report["linesRead"], 23);
    // 24 entries from the rollout, then the record of the leaf Codex resumes.
    assert_eq!(report["entriesWritten"], 26);
    assert_eq!(std::fs::read_to_string(&out).unwrap().lines().count(), 26);

    let before = std::fs::read(&out).unwrap();
    let again = import(&out);
    assert_eq!(
        again.status.code(),
        Some(3),
        "an existing OUT is an I/O error"
    );
    assert_eq!(
        std::fs::read(&out).unwrap(),
        before,
        "and is left as it was"
    );

    let export = dir.join("pi.jsonl");
    let exported = session(&[
        Path::new("export"),
        Path::new("--to"),
        Path::new("pi"),
        &out,
        Path::new("codex-22"),
        &export,
    ]);
    assert_eq!(
        exported.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&exported.stderr)
    );
    let text = std::fs::read_to_string(&export).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with(r#"{"type":"session","version":3,"#));
    assert!(
        lines.last().unwrap().contains(r#""id":"codex-22""#),
        "pi resumes at the leaf"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Rule: `session export --to claude-code|codex` writes a file of that agent (a
/// Claude Code transcript whose last line is the leaf's; a Codex rollout opening with
/// its session_meta), reports on stderr what it converted and dropped, creates the
/// file no wider in mode than the source (0600 from 0600) and never overwrites.
#[test]
fn export_to_claude_code_and_codex_reports_and_keeps_the_source_mode() {
    use std::os::unix::fs::PermissionsExt;
    let dir = temp_dir("export-agents");
    let file = dir.join("codex.jsonl");
    let import = session(&[
        Path::new("import"),
        &interop_fixture("codex-rollout.jsonl"),
        &file,
    ]);
    assert_eq!(import.status.code(), Some(0));
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let export = |to: &str, out: &Path| {
        session(&[
            Path::new("export"),
            Path::new("--to"),
            Path::new(to),
            &file,
            out,
        ])
    };
    let claude = dir.join("claude.jsonl");
    let done = export("claude-code", &claude);
    assert_eq!(
        done.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&done.stderr).unwrap();
    assert_eq!(report["format"], "claude-code");
    let text = std::fs::read_to_string(&claude).unwrap();
    assert_eq!(report["entries"], text.lines().count());
    assert!(text.lines().all(|l| l.contains(r#""sessionId":"#)));
    let dropped = report["dropped"].as_array().unwrap();
    assert!(
        dropped
            .iter()
            .any(|d| d["kind"] == "metadata" && d["count"].as_u64() > Some(0)),
        "{report}"
    );
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&claude), 0o600);

    let codex = dir.join("rollout.jsonl");
    assert_eq!(export("codex", &codex).status.code(), Some(0));
    let first = std::fs::read_to_string(&codex).unwrap();
    assert!(
        first.starts_with(r#"{"timestamp":"#)
            && first
                .lines()
                .next()
                .unwrap()
                .contains(r#""type":"session_meta""#)
    );
    assert_eq!(mode(&codex), 0o600);
    let before = std::fs::read(&codex).unwrap();
    assert_eq!(export("codex", &codex).status.code(), Some(3), "OUT exists");
    assert_eq!(std::fs::read(&codex).unwrap(), before);

    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let wider = dir.join("wider.jsonl");
    assert_eq!(export("claude-code", &wider).status.code(), Some(0));
    assert_eq!(mode(&wider) & 0o600, 0o600);
    assert_eq!(mode(&wider) & !0o644, 0, "never wider than the source");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn unknown_format_and_unknown_leaf_are_refused() {
    let dir = temp_dir("refused");
    let out = dir.join("out.jsonl");
    let unknown = session(&[
        Path::new("import"),
        Path::new("--from"),
        Path::new("gemini"),
        &interop_fixture("codex-rollout.jsonl"),
        &out,
    ]);
    assert_eq!(unknown.status.code(), Some(64));
    assert!(!out.exists());

    let file = dir.join("claude.jsonl");
    let import = session(&[
        Path::new("import"),
        Path::new("--from"),
        Path::new("claude-code"),
        &interop_fixture("claude-code-session.jsonl"),
        &file,
    ]);
    assert_eq!(import.status.code(), Some(0));
    let export = session(&[
        Path::new("export"),
        Path::new("--to"),
        Path::new("pi"),
        &file,
        Path::new("nope"),
        &out,
    ]);
    assert_eq!(export.status.code(), Some(2), "no such leaf");
    assert!(!out.exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// Runs `session ARGS` on a pseudo-terminal (util-linux `script`) and returns what the
/// terminal showed.
fn on_a_terminal(args: &[&Path]) -> String {
    let mut line = String::from(env!("CARGO_BIN_EXE_session"));
    for arg in args {
        line.push(' ');
        line.push_str(arg.to_str().expect("a UTF-8 path"));
    }
    let shown = Command::new("script")
        .args(["-qec", &line, "/dev/null"])
        .output()
        .expect("this test needs `script` (util-linux) for a pseudo-terminal");
    assert_eq!(shown.status.code(), Some(0), "{shown:?}");
    String::from_utf8_lossy(&shown.stdout).into_owned()
}

#[test]
fn import_shows_a_progress_line_only_when_stderr_is_a_terminal() {
    let dir = temp_dir("import-progress-cli");
    let source = interop_fixture("codex-rollout.jsonl");
    let args = |out: &Path| {
        [
            Path::new("import"),
            Path::new("--from"),
            Path::new("codex"),
            &source,
            out,
        ]
        .map(Path::to_owned)
    };
    let to_terminal = dir.join("a.jsonl");
    let shown = on_a_terminal(
        &args(&to_terminal)
            .iter()
            .map(PathBuf::as_path)
            .collect::<Vec<_>>(),
    );
    assert!(shown.contains("importing pass 1"), "{shown:?}");
    assert!(
        shown.contains(r#""linesRead""#),
        "the report follows: {shown:?}"
    );
    // To a pipe: the report alone, one JSON line.
    let to_pipe = session(
        &args(&dir.join("b.jsonl"))
            .iter()
            .map(PathBuf::as_path)
            .collect::<Vec<_>>(),
    );
    assert_eq!(to_pipe.status.code(), Some(0));
    let stderr = String::from_utf8(to_pipe.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr:?}");
    assert!(!stderr.contains("importing"), "{stderr:?}");
    assert_eq!(
        std::fs::read(&to_terminal).unwrap(),
        std::fs::read(dir.join("b.jsonl")).unwrap()
    );
}

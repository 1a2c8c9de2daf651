//! Issue 35 (first part), docs/contract.md §7.2 and §12: `build_context`'s profile
//! defaults to `"auto"`, the rules of the agent an imported session came from, in the
//! library, the C ABI and the command line; `"profile":"none"` is the contract's own
//! rules; and a defect error names the option that answers it.

use crate::common;

use std::ffi::{CStr, CString};
use std::path::Path;
use std::process::{Command, Output};

use common::temp_dir;
use session::interop::Format;
use session::{
    CompactionFault, ContextOptions, Error, Hint, PairingDefect, Profile, build_context,
    parse_entries,
};

fn session_cli(args: &[&std::ffi::OsStr]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_session"))
        .args(args)
        .output()
        .expect("the CLI runs")
}

fn options(json: &str) -> ContextOptions {
    ContextOptions::from_json(json).unwrap()
}

/// The root an importer writes, recording the agent in `importedFormat`.
fn imported_root(format: &str) -> String {
    format!(
        r#"{{"id":"root","parentId":null,"timestamp":0,"type":"metadata","key":"x.session","value":null,"importedFormat":"{format}"}}"#
    )
}

fn user(id: &str, parent: &str) -> String {
    format!(
        r#"{{"id":"{id}","parentId":"{parent}","timestamp":1,"type":"message","message":{{"role":"user","content":"go"}}}}"#
    )
}

fn call(id: &str, parent: &str, call: &str) -> String {
    format!(
        r#"{{"id":"{id}","parentId":"{parent}","timestamp":2,"type":"message","message":{{"role":"assistant","content":[{{"type":"toolCall","id":"{call}","name":"bash","arguments":{{}}}}]}}}}"#
    )
}

fn result(id: &str, parent: &str, call: &str) -> String {
    format!(
        r#"{{"id":"{id}","parentId":"{parent}","timestamp":3,"type":"message","message":{{"role":"toolResult","toolCallId":"{call}","toolName":"bash","content":[],"isError":false}}}}"#
    )
}

fn text(id: &str, parent: &str) -> String {
    format!(
        r#"{{"id":"{id}","parentId":"{parent}","timestamp":4,"type":"message","message":{{"role":"assistant","content":[{{"type":"text","text":"done"}}]}}}}"#
    )
}

/// A session imported from `format` whose last reply holds a call without a result.
fn unanswered(format: &str) -> Vec<String> {
    vec![
        imported_root(format),
        user("u-1", "root"),
        call("a-1", "u-1", "call-1"),
    ]
}

fn entries(lines: &[String]) -> Vec<session::Entry> {
    parse_entries(format!("[{}]", lines.join(","))).unwrap()
}

#[test]
fn the_default_profile_is_the_imported_agents_and_none_is_the_contracts_own() {
    for (format, expect_messages) in [("pi", 3), ("codex", 3), ("claude-code", 2)] {
        let all = entries(&unanswered(format));
        let default = build_context(&all, "a-1", &ContextOptions::default()).unwrap();
        let auto = build_context(&all, "a-1", &options(r#"{"profile":"auto"}"#)).unwrap();
        assert_eq!(default, auto, "{format}: the default is auto");
        // pi and Codex answer the call; Claude Code leaves the reply out and answers
        // the user's turn with "No response requested.".
        assert_eq!(default.messages.len(), expect_messages, "{format}");
        assert!(matches!(
            build_context(&all, "a-1", &options(r#"{"profile":"none"}"#)),
            Err(Error::ToolPairing {
                reason: PairingDefect::MissingResult,
                ..
            })
        ));
    }
    // A native session has no agent: the default is the contract's rules.
    let native = entries(&[
        r#"{"id":"root","parentId":null,"timestamp":0,"type":"metadata","key":"cwd","value":"/w"}"#
            .to_owned(),
        user("u-1", "root"),
        call("a-1", "u-1", "call-1"),
    ]);
    assert!(matches!(
        build_context(&native, "a-1", &ContextOptions::default()),
        Err(Error::ToolPairing { .. })
    ));
}

#[test]
fn profile_takes_the_five_names_and_nothing_else() {
    for (name, profile) in [
        ("auto", Profile::Auto),
        ("none", Profile::None),
        ("pi", Profile::Pi),
        ("claude-code", Profile::ClaudeCode),
        ("codex", Profile::Codex),
    ] {
        assert_eq!(
            options(&format!(r#"{{"profile":"{name}"}}"#)).profile,
            profile
        );
    }
    assert_eq!(ContextOptions::default().profile, Profile::Auto);
    assert_eq!(options("{}").profile, Profile::Auto);
    // null meant "no profile" while that was the default: it is refused rather than
    // read as either.
    for bad in [
        r#"{"profile":null}"#,
        r#"{"profile":"gemini"}"#,
        r#"{"profile":""}"#,
    ] {
        assert!(
            matches!(
                ContextOptions::from_json(bad),
                Err(Error::InvalidOption { .. })
            ),
            "{bad}"
        );
    }
}

#[test]
fn a_pairing_error_on_an_imported_session_names_the_profile_that_answers_it() {
    let all = entries(&unanswered("claude-code"));
    let Err(e) = build_context(&all, "a-1", &options(r#"{"profile":"none"}"#)) else {
        panic!("no profile: the call has no result");
    };
    assert!(matches!(
        e,
        Error::ToolPairing {
            hint: Hint::Imported(Format::ClaudeCode),
            ..
        }
    ));
    assert_eq!(
        e.to_string(),
        "entry \"a-1\": a tool call without a result (tool call \"call-1\", interaction \
         starting at \"u-1\") (this session was imported from claude-code; build it with \
         \"profile\":\"auto\" and \"onDefect\":\"error\" \u{2014} CLI --profile auto \u{2014} \
         to send what claude-code sends, or choose another \"onDefect\")"
    );
    // Under auto but with an onDefect that turns the agent's rules off, the profile
    // (with onDefect "error") is still what answers an orphan result.
    let mut orphan = unanswered("codex");
    orphan.push(result("r-9", "a-1", "call-9"));
    let Err(e) = build_context(
        &entries(&orphan),
        "r-9",
        &options(r#"{"onDefect":"synthesize"}"#),
    ) else {
        panic!("synthesize fails on an orphan result");
    };
    assert!(matches!(
        e,
        Error::ToolPairing {
            reason: PairingDefect::OrphanResult,
            hint: Hint::Imported(Format::Codex),
            ..
        }
    ));
    assert!(e.to_string().contains("imported from codex"), "{e}");
}

#[test]
fn a_pairing_error_on_a_native_session_names_on_defect() {
    let all = entries(&[
        user("u-1", "u-0").replace(r#""u-0""#, "null"),
        call("a-1", "u-1", "c"),
    ]);
    let Err(e) = build_context(&all, "a-1", &ContextOptions::default()) else {
        panic!("the call has no result");
    };
    assert!(matches!(
        e,
        Error::ToolPairing {
            hint: Hint::OnDefect,
            ..
        }
    ));
    assert!(
        e.to_string().ends_with(
            " (choose \"onDefect\": \"skip\", \"keep\" or \"synthesize\" \u{2014} CLI \
             --on-defect \u{2014} to build it anyway)"
        ),
        "{e}"
    );
    assert!(!e.to_string().contains("profile"), "{e}");
}

/// An imported session whose compaction keeps from an assistant message (pi version
/// 1 cuts there): the contract refuses the cut, the agent takes it.
fn cut_at_an_assistant(format: &str) -> Vec<String> {
    vec![
        imported_root(format),
        user("u-1", "root"),
        text("a-1", "u-1"),
        user("u-2", "a-1"),
        text("a-2", "u-2"),
        r#"{"id":"c-1","parentId":"a-2","timestamp":5,"type":"compaction","summary":"s","firstKeptEntryId":"a-2","tokensBefore":1}"#.to_owned(),
        user("u-3", "c-1"),
    ]
}

#[test]
fn an_invalid_compaction_the_agent_takes_names_the_profile_only_when_imported() {
    let all = entries(&cut_at_an_assistant("pi"));
    assert!(build_context(&all, "u-3", &ContextOptions::default()).is_ok());
    let Err(e) = build_context(&all, "u-3", &options(r#"{"profile":"none"}"#)) else {
        panic!("the contract refuses the cut");
    };
    assert!(matches!(
        e,
        Error::InvalidCompaction {
            reason: CompactionFault::NotInteractionStart,
            hint: Hint::Imported(Format::Pi),
            ..
        }
    ));
    assert!(
        e.to_string().ends_with(
            "(this session was imported from pi, which takes this cut; build it with \
             \"profile\":\"auto\" and \"onDefect\":\"error\" \u{2014} CLI --profile auto \
             \u{2014} to send what pi sends)"
        ),
        "{e}"
    );
    // The same tree, native: no option makes the cut valid, so none is named.
    let mut native = cut_at_an_assistant("pi");
    native[0] =
        r#"{"id":"root","parentId":null,"timestamp":0,"type":"metadata","key":"cwd","value":"/w"}"#
            .to_owned();
    let Err(e) = build_context(&entries(&native), "u-3", &ContextOptions::default()) else {
        panic!("the contract refuses the cut");
    };
    assert!(matches!(
        e,
        Error::InvalidCompaction {
            hint: Hint::None,
            ..
        }
    ));
    assert!(e.to_string().ends_with("from its result"), "{e}");
}

/// `session_build_context` through the C ABI: its JSON result or error.
fn c_build_context(entries: &str, leaf: &str, options: Option<&str>) -> (i32, String) {
    let entries = CString::new(entries).unwrap();
    let leaf = CString::new(leaf).unwrap();
    let options = options.map(|o| CString::new(o).unwrap());
    let mut out: *mut std::os::raw::c_char = std::ptr::null_mut();
    // SAFETY: NUL-terminated strings that outlive the call, a writable out pointer;
    // the result is copied, then freed with the library's own free.
    unsafe {
        let status = session::ffi::session_build_context(
            entries.as_ptr(),
            leaf.as_ptr(),
            options.as_ref().map_or(std::ptr::null(), |o| o.as_ptr()),
            &mut out,
        );
        let text = CStr::from_ptr(out).to_str().unwrap().to_owned();
        session::ffi::session_string_free(out);
        (status as i32, text)
    }
}

#[test]
fn the_c_abi_defaults_to_the_imported_agents_rules_and_keeps_error_members_stable() {
    let all = format!("[{}]", unanswered("codex").join(","));
    let (status, default) = c_build_context(&all, "a-1", None);
    assert_eq!(status, 0, "{default}");
    let (_, empty) = c_build_context(&all, "a-1", Some("{}"));
    let (_, auto) = c_build_context(&all, "a-1", Some(r#"{"profile":"auto"}"#));
    assert_eq!(default, auto);
    assert_eq!(empty, auto);
    let value: serde_json::Value = serde_json::from_str(&default).unwrap();
    assert_eq!(value["messages"][2]["content"][0]["text"], "aborted");

    let (status, error) = c_build_context(&all, "a-1", Some(r#"{"profile":"none"}"#));
    assert_eq!(status, 18, "tool_pairing: {error}");
    let error: serde_json::Value = serde_json::from_str(&error).unwrap();
    let members: Vec<&str> = error["error"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        members,
        [
            "code",
            "message",
            "entryId",
            "toolCallId",
            "reason",
            "interactionStartId"
        ]
    );
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains(r#"imported from codex; build it with "profile":"auto""#),
        "{error}"
    );
}

/// Every corpus file, imported with `session import`, builds with `session context`
/// and no option, at the resume leaf, exactly as with `--profile auto`.
#[test]
fn every_corpus_file_builds_its_agents_context_by_default_through_the_cli() {
    let dir = temp_dir("default-profile");
    let files = common::corpus_files("");
    assert!(files.len() >= 40, "{} corpus files", files.len());
    let mut failures = Vec::new();
    for (n, file) in files.iter().enumerate() {
        let out = dir.join(format!("{n}.jsonl"));
        let import = session_cli(&["import".as_ref(), file.as_os_str(), out.as_os_str()]);
        assert_eq!(import.status.code(), Some(0), "{}", file.display());
        let report: serde_json::Value = serde_json::from_slice(&import.stderr).unwrap();
        let context = |extra: &[&str]| {
            let mut args: Vec<&std::ffi::OsStr> =
                vec!["context".as_ref(), "--json".as_ref(), out.as_os_str()];
            args.extend(extra.iter().map(|a| std::ffi::OsStr::new(*a)));
            session_cli(&args)
        };
        let default = context(&[]);
        let auto = context(&["--profile", "auto"]);
        let name = file.strip_prefix(common::corpus_dir()).unwrap_or(file);
        if default.status.code() != Some(0) {
            failures.push(format!(
                "{}: {}",
                name.display(),
                String::from_utf8_lossy(&default.stderr)
            ));
            continue;
        }
        assert_eq!(auto.status.code(), Some(0), "{}", name.display());
        assert_eq!(default.stdout, auto.stdout, "{}", name.display());
        let built: serde_json::Value = serde_json::from_slice(&default.stdout).unwrap();
        assert_eq!(
            built["leafId"],
            report["resumeLeafId"],
            "{}: the default leaf is the resume leaf",
            name.display()
        );
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn session_context_accepts_profile_none_and_its_error_names_the_flag() {
    let dir = temp_dir("profile-none");
    let file = dir.join("s.jsonl");
    std::fs::write(&file, unanswered("pi").join("\n") + "\n").unwrap();
    let none = session_cli(&[
        "context".as_ref(),
        file.as_os_str(),
        "--profile".as_ref(),
        "none".as_ref(),
    ]);
    assert_eq!(none.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&none.stderr);
    assert!(stderr.contains("CLI --profile auto"), "{stderr}");
    let default = session_cli(&["context".as_ref(), file.as_os_str()]);
    assert_eq!(default.status.code(), Some(0));
    assert!(Path::new(&file).exists());
}

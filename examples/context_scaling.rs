//! How `build_context`'s pairing rules and profiles scale with the size of one message or
//! one reply: prints the time of one build for a generated path, so that a quadratic
//! rule shows as a time that grows fourfold when N doubles.
//!
//! ```text
//! cargo run --release --no-default-features --example context_scaling -- SHAPE N [OPTIONS]
//! ```
//!
//! SHAPE is one of
//! - `calls`: a user message, then one assistant message with N tool calls, none answered;
//! - `replies`: a user message, then N assistant messages of one call each, none answered;
//! - `results`: a user message, one assistant message with N calls, results for the first
//!   half of them, the second half unanswered (pi's "No result provided" goes after
//!   every result);
//! - `split`: a user message, then one reply Claude Code wrote one block per line: N
//!   parts of one `responseId`, each a call followed by its result.
//!
//! OPTIONS is `build_context`'s options JSON (default `{"onDefect":"synthesize"}`).

use std::time::Instant;

use session::{ContextOptions, Entry, build_context, parse_entry};

fn line(id: &str, parent: &str, message: &str) -> String {
    format!(
        r#"{{"id":"{id}","parentId":"{parent}","timestamp":1,"type":"message","message":{message}}}"#
    )
}

fn call(id: usize) -> String {
    format!(r#"{{"type":"toolCall","id":"c{id}","name":"t","arguments":{{}}}}"#)
}

fn result(id: &str, parent: &str, call: usize) -> String {
    line(
        id,
        parent,
        &format!(
            r#"{{"role":"toolResult","toolCallId":"c{call}","toolName":"t","content":[],"isError":false}}"#
        ),
    )
}

/// The lines of a shape, root first; the leaf is the last.
fn shape(name: &str, n: usize) -> Vec<String> {
    let mut lines =
        vec![r#"{"id":"u","parentId":null,"timestamp":1,"type":"message","message":{"role":"user","content":"go"}}"#.to_owned()];
    let all_calls = || (0..n).map(call).collect::<Vec<_>>().join(",");
    match name {
        "calls" => lines.push(line(
            "a",
            "u",
            &format!(r#"{{"role":"assistant","content":[{}]}}"#, all_calls()),
        )),
        "replies" => {
            for i in 0..n {
                let parent = if i == 0 {
                    "u".to_owned()
                } else {
                    format!("a{}", i - 1)
                };
                lines.push(line(
                    &format!("a{i}"),
                    &parent,
                    &format!(r#"{{"role":"assistant","content":[{}]}}"#, call(i)),
                ));
            }
        }
        "results" => {
            lines.push(line(
                "a",
                "u",
                &format!(r#"{{"role":"assistant","content":[{}]}}"#, all_calls()),
            ));
            for i in 0..n / 2 {
                let parent = if i == 0 {
                    "a".to_owned()
                } else {
                    format!("r{}", i - 1)
                };
                lines.push(result(&format!("r{i}"), &parent, i));
            }
        }
        "split" => {
            let mut parent = "u".to_owned();
            for i in 0..n {
                lines.push(line(
                    &format!("a{i}"),
                    &parent,
                    &format!(
                        r#"{{"role":"assistant","content":[{}],"responseId":"msg_1"}}"#,
                        call(i)
                    ),
                ));
                lines.push(result(&format!("r{i}"), &format!("a{i}"), i));
                parent = format!("r{i}");
            }
        }
        _ => {
            eprintln!("SHAPE is calls, replies, results or split");
            std::process::exit(64);
        }
    }
    lines
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(name), Some(n)) = (args.first(), args.get(1).and_then(|n| n.parse().ok())) else {
        eprintln!("usage: context_scaling SHAPE N [OPTIONS]");
        std::process::exit(64);
    };
    let options = args
        .get(2)
        .map_or(r#"{"onDefect":"synthesize"}"#, String::as_str);
    let options = ContextOptions::from_json(options).unwrap_or_else(|e| {
        eprintln!("options: {e}");
        std::process::exit(64);
    });
    let lines = shape(name, n);
    let entries: Vec<Entry> = lines
        .iter()
        .map(|l| parse_entry(l).expect("a generated line parses"))
        .collect();
    let leaf = entries.last().expect("a shape has lines").id().to_owned();
    let started = Instant::now();
    let context = build_context(&entries, &leaf, &options);
    let took = started.elapsed();
    match context {
        Ok(c) => println!(
            "{name} N={n}: {:.3} s, {} messages, {} defects",
            took.as_secs_f64(),
            c.messages.len(),
            c.defects.len()
        ),
        Err(e) => println!("{name} N={n}: {:.3} s, error {e}", took.as_secs_f64()),
    }
}

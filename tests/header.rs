//! The checked-in `include/session.h` must be exactly what the build generates.

#[test]
fn checked_in_header_matches_the_generated_one() {
    let generated = include_str!(concat!(env!("OUT_DIR"), "/session.h"));
    let checked_in =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/include/session.h"))
            .unwrap_or_default();
    assert!(
        generated == checked_in,
        "include/session.h is out of date; regenerate it with:\n\n    SESSION_UPDATE_HEADER=1 cargo build\n"
    );
}

/// Every name the header defines (macros, types, enum constants, functions) carries
/// the library's prefix, so it cannot clash with a host's names.
#[test]
fn every_name_in_the_header_carries_the_session_prefix() {
    let header = include_str!("../include/session.h");
    let mut unprefixed = Vec::new();
    for line in header.lines() {
        let trimmed = line.trim();
        let name = if let Some(rest) = line.strip_prefix("#define ") {
            rest.split_whitespace().next()
        } else if line.starts_with("  ")
            && trimmed
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_uppercase())
            && trimmed
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || " _=,-".contains(c))
        {
            // An enum constant: `  NAME = 3,`.
            trimmed.split([' ', '=', ',']).next()
        } else if line.starts_with("typedef ") {
            line.trim_end_matches(';')
                .split([' ', '*', '(', ')'])
                .rfind(|w| w.chars().next().is_some_and(|c| c.is_ascii_uppercase()))
        } else if line.chars().next().is_some_and(|c| c.is_ascii_alphabetic()) && line.contains('(')
        {
            // A function declaration: the word before the first parenthesis.
            line.split('(')
                .next()
                .and_then(|l| l.split([' ', '*']).next_back())
        } else {
            None
        };
        let Some(name) = name.filter(|n| !n.is_empty()) else {
            continue;
        };
        let ok = ["session_", "SESSION_", "Session", "LIBSESSION_"]
            .iter()
            .any(|p| name.starts_with(p));
        if !ok {
            unprefixed.push(name.to_owned());
        }
    }
    assert!(unprefixed.is_empty(), "unprefixed names: {unprefixed:?}");
}

/// The header is C prose, as sqlite3.h is: no Markdown backticks and no rustdoc
/// headings (`# Safety`) leak into it from the Rust doc comments it is generated from.
#[test]
fn the_header_reads_as_c_prose_without_markdown() {
    let header = include_str!("../include/session.h");
    let markdown: Vec<(usize, &str)> = header
        .lines()
        .enumerate()
        .filter(|(_, l)| l.contains('`') || l.trim_start().starts_with("* #"))
        .map(|(i, l)| (i + 1, l))
        .collect();
    assert!(markdown.is_empty(), "Markdown in session.h: {markdown:?}");
}

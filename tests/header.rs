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

const HEADER: &str = include_str!("../include/session.h");

/// The widest line the header may have, in characters.
const MAX_COLUMNS: usize = 90;

/// Every line of the header fits in 90 columns, so it reads in a terminal and a
/// side-by-side diff. The failure lists each long line with its number, to be
/// rewrapped in the doc comment (src/ffi/) or cbindgen.toml it comes from.
#[test]
fn every_line_of_the_header_fits_in_90_columns() {
    let long: Vec<String> = HEADER
        .lines()
        .enumerate()
        .filter(|(_, l)| l.chars().count() > MAX_COLUMNS)
        .map(|(i, l)| format!("{:>5} ({} columns): {l}", i + 1, l.chars().count()))
        .collect();
    assert!(
        long.is_empty(),
        "{} lines of include/session.h are wider than {MAX_COLUMNS} columns:\n{}",
        long.len(),
        long.join("\n")
    );
}

/// One titled section of the header's functions.
#[derive(Debug)]
struct Section {
    number: usize,
    title: String,
    functions: Vec<String>,
}

/// The text before the include guard: the header's overview, written in cbindgen.toml.
fn overview() -> &'static str {
    HEADER.split("#ifndef SESSION_H").next().unwrap_or_default()
}

/// The declarations after `extern "C" {`, each joined onto one line, in order, with
/// the section titles (" * Section N. Title") between them as they stand.
fn declarations_and_titles() -> Vec<String> {
    let body = HEADER.split("extern \"C\" {").nth(1).unwrap_or_default();
    let mut items = Vec::new();
    let mut declaration = String::new();
    for line in body.lines() {
        if let Some(title) = line.strip_prefix(" * Section ") {
            items.push(format!("Section {title}"));
        } else if !declaration.is_empty()
            || (line.starts_with(|c: char| c.is_ascii_alphabetic()) && line.contains('('))
        {
            declaration.push_str(line.trim());
            declaration.push(' ');
            if line.trim_end().ends_with(';') {
                items.push(std::mem::take(&mut declaration));
            }
        }
    }
    items
}

/// A declaration's function name: the word before its first parenthesis.
fn function_name(declaration: &str) -> String {
    declaration
        .split('(')
        .next()
        .and_then(|l| l.split([' ', '*']).next_back())
        .unwrap_or_default()
        .to_owned()
}

/// The header's sections as its own declarations group them; functions declared
/// before the first title land in a section numbered 0.
fn sections() -> Vec<Section> {
    let mut sections = vec![Section {
        number: 0,
        title: String::new(),
        functions: Vec::new(),
    }];
    for item in declarations_and_titles() {
        if let Some(rest) = item.strip_prefix("Section ") {
            let (number, title) = rest.split_once(". ").unwrap_or((rest, ""));
            sections.push(Section {
                number: number.parse().unwrap_or(usize::MAX),
                title: title.to_owned(),
                functions: Vec::new(),
            });
        } else if let Some(last) = sections.last_mut() {
            last.functions.push(function_name(&item));
        }
    }
    sections
}

/// The words of text that start with `session_`, as the header's function names.
fn session_names(text: &str) -> Vec<&str> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| w.starts_with("session_"))
        .collect()
}

/// The header is a manual grouped into titled sections, numbered in order, each with
/// at least one function, and the overview's contents list every section with its
/// title and every function under its own section, and nothing else. So a function
/// added without a word in the overview, a section renamed in one place only, or a
/// function moved to another section fails here.
#[test]
fn the_overview_lists_every_section_and_every_function_of_the_header() {
    let sections = sections();
    let mut problems = Vec::new();
    let untitled = &sections[0].functions;
    if !untitled.is_empty() {
        problems.push(format!(
            "functions before the first section title: {untitled:?}"
        ));
    }
    let titled = &sections[1..];
    if titled.len() < 10 {
        problems.push(format!("only {} section titles found", titled.len()));
    }
    let overview = overview();
    let contents = overview
        .split("Contents.")
        .nth(1)
        .and_then(|c| c.split("Conventions").next())
        .unwrap_or_default();
    for (at, section) in titled.iter().enumerate() {
        if section.number != at + 1 {
            problems.push(format!(
                "section \"{}\" is numbered {}, not {}",
                section.title,
                section.number,
                at + 1
            ));
        }
        if section.functions.is_empty() {
            problems.push(format!("section {} has no function", section.number));
        }
        let entry = format!("{}. {}", section.number, section.title);
        let Some(start) = contents.find(&entry) else {
            problems.push(format!("the overview's contents lack \"{entry}\""));
            continue;
        };
        let rest = &contents[start + entry.len()..];
        let next = format!("{}. ", section.number + 1);
        let listed = &rest[..rest.find(&next).unwrap_or(rest.len())];
        let listed = session_names(listed);
        for function in &section.functions {
            if !listed.contains(&function.as_str()) {
                problems.push(format!(
                    "the overview's section {} does not name {function}",
                    section.number
                ));
            }
        }
        for name in listed {
            if !section.functions.iter().any(|f| f == name) {
                problems.push(format!(
                    "the overview's section {} names {name}, not declared in it",
                    section.number
                ));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "include/session.h's sections and its overview (cbindgen.toml's header) \
         disagree:\n{}",
        problems.join("\n")
    );
}

/// Every function that opens a store (it has a `SessionStore **out_store`) is named
/// in the overview's paragraph on stores, so a new kind of store cannot go unsaid.
#[test]
fn the_overview_of_stores_names_every_store_opener() {
    let overview = overview();
    let stores = overview
        .split("Stores.")
        .nth(1)
        .and_then(|p| p.split("\n *\n").next())
        .unwrap_or_default();
    let openers: Vec<String> = declarations_and_titles()
        .iter()
        .filter(|d| d.contains("SessionStore **out_store"))
        .map(|d| function_name(d))
        .collect();
    assert!(
        openers.len() >= 5,
        "only these store openers found: {openers:?}"
    );
    let named = session_names(stores);
    let missing: Vec<&String> = openers
        .iter()
        .filter(|o| !named.contains(&o.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "the overview's \"Stores.\" paragraph (cbindgen.toml) does not name: {missing:?}"
    );
}

//! What every verb shares: opening a file read-only and printing JSON lines.

use session::{Error, JsonlOptions, OpenReport, Store};

/// Opens a file read-only (never creating or locking it), reporting its warnings.
pub fn open(file: &str, salvage: bool) -> Result<(Store, OpenReport), Error> {
    let options = JsonlOptions {
        read_only: true,
        salvage,
        ..JsonlOptions::default()
    };
    let opened = Store::open_jsonl_with(file, &options)?;
    for warning in &opened.1.warnings {
        eprintln!("session: warning: {warning}");
    }
    Ok(opened)
}

/// A JSON array, one item per line.
pub fn print_lines<'a>(items: impl ExactSizeIterator<Item = &'a str>) {
    println!("[");
    let count = items.len();
    for (i, item) in items.enumerate() {
        let comma = if i + 1 < count { "," } else { "" };
        println!("  {item}{comma}");
    }
    println!("]");
}

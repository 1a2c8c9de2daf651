//! The peer without tantivy, for its binary's size: the same extraction (serde_json),
//! then a substring scan of the text for the words of the query.
//!
//! ```text
//! scan DIR QUERY        prints the entries whose text holds every word of QUERY
//! ```

#[path = "../text.rs"]
#[allow(dead_code)]
mod text;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let dir = std::path::PathBuf::from(args.next().ok_or("scan DIR QUERY")?);
    let terms = text::terms(&args.next().ok_or("scan DIR QUERY")?);
    let mut hits = 0u64;
    for path in text::session_files(&dir)? {
        let data = std::fs::read(&path)?;
        for (_, line) in text::lines(&data) {
            if let Some(Some(t)) = text::readable(line) {
                let t = text::folded(&t);
                hits += u64::from(terms.iter().all(|w| t.contains(w.as_str())));
            }
        }
    }
    println!("{hits}");
    Ok(())
}

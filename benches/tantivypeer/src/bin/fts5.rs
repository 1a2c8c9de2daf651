//! The peer's extraction with SQLite's FTS5 in place of tantivy (rusqlite with SQLite
//! compiled in, as libsession links it), for its binary's size beside the peer's: the
//! folder's text indexed in an in-memory FTS5 table, then one query's count.
//!
//! ```text
//! fts5 DIR WORD         prints the entries whose text holds the word WORD
//! ```

#[path = "../text.rs"]
#[allow(dead_code)]
mod text;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let dir = std::path::PathBuf::from(args.next().ok_or("fts5 DIR WORD")?);
    let word = text::folded(&args.next().ok_or("fts5 DIR WORD")?);
    let conn = rusqlite::Connection::open_in_memory()?;
    conn.execute_batch("CREATE VIRTUAL TABLE texts USING fts5(words, detail = none)")?;
    let mut insert = conn.prepare("INSERT INTO texts(words) VALUES(?1)")?;
    for path in text::session_files(&dir)? {
        let data = std::fs::read(&path)?;
        for (_, line) in text::lines(&data) {
            if let Some(Some(t)) = text::readable(line) {
                insert.execute([t])?;
            }
        }
    }
    let quoted = format!("\"{}\"", word.replace('"', "\"\""));
    let hits: i64 = conn.query_row(
        "SELECT count(*) FROM texts WHERE texts MATCH ?1",
        [quoted],
        |r| r.get(0),
    )?;
    println!("{hits}");
    Ok(())
}

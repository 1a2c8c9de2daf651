//! `ls`: the sessions in a folder as a table, from the head and tail of each file.

use std::io::Write;
use std::path::Path;

use session::{ListOptions, SortBy, list_sessions};

use crate::args::LsArgs;
use crate::exit;
use crate::output::{Out, Outcome};
use crate::term;

/// How much of the first user text a row shows.
const TEXT_CHARS: usize = 60;

pub fn ls(out: &mut Out, dir: &Path, args: &LsArgs) -> Outcome {
    let options = ListOptions {
        recursive: args.recursive,
        limit: args.limit,
        sort: if args.by_path {
            SortBy::Path
        } else {
            SortBy::ModifiedMs
        },
    };
    let sessions = list_sessions(dir, &options)?;
    writeln!(
        out,
        "{:<20} {:>8} {:<12} {:<40} FIRST USER TEXT",
        "MODIFIED (UTC)", "ENTRIES", "STATE", "PATH"
    )?;
    let mut damaged = false;
    for s in &sessions {
        let modified = s.modified_ms.map_or_else(|| "-".to_owned(), utc);
        let entries = s.entries.map_or_else(|| "-".to_owned(), |n| n.to_string());
        let (state, text) = match &s.error {
            Some(error) => {
                damaged = true;
                (error.code.to_owned(), error.message.clone())
            }
            None => {
                let state = s.state.map_or("-", |st| st.as_str()).to_owned();
                (state, s.first_user_text.clone().unwrap_or_default())
            }
        };
        let text: String = term::flatten(&text).chars().take(TEXT_CHARS).collect();
        writeln!(
            out,
            "{modified:<20} {entries:>8} {state:<12} {:<40} {text}",
            term::escape(&s.path)
        )?;
    }
    Ok(if damaged {
        exit::damage()
    } else {
        exit::for_state(session::State::Ready)
    })
}

/// `YYYY-MM-DD HH:MM:SS` in UTC from milliseconds since the Unix epoch.
fn utc(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let (days, rest) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (year, month, day) = session::interop::civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

#[cfg(test)]
mod tests {
    use super::utc;

    #[test]
    fn utc_dates_are_civil_dates() {
        assert_eq!(utc(0), "1970-01-01 00:00:00");
        assert_eq!(utc(951_782_400_000), "2000-02-29 00:00:00");
        assert_eq!(utc(1_764_720_000_123), "2025-12-03 00:00:00");
    }
}

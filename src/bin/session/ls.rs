//! `ls`: the sessions in a folder as a table, from the head and tail of each file.

use session::json::Object;
use session::{ListOptions, PgListOptions, SortBy, list_pg_sessions, list_sessions};
use std::io::Write;

use crate::exit;
use crate::location::LsPlace;
use crate::output::{Doc, Out, Outcome};
use crate::term;

/// How much of the first user text a row shows.
const TEXT_CHARS: usize = 60;

pub fn ls(out: &mut Out, place: &LsPlace, args: &LsArgs) -> Outcome {
    let dir = match place {
        LsPlace::Dir(dir) => dir,
        LsPlace::Postgres(conninfo) => return ls_pg(out, conninfo, args),
    };
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
    let damaged = sessions.iter().any(|s| s.error.is_some());
    let code = if damaged {
        exit::damage()
    } else {
        exit::for_state(session::State::Ready)
    };
    if !out.readable() {
        out.emit_each(sessions.iter().map(|s| s.to_json()))?;
        return Ok(code);
    }
    writeln!(
        out,
        "{:<20} {:>8} {:<12} {:<40} FIRST USER TEXT",
        "MODIFIED (UTC)", "ENTRIES", "STATE", "PATH"
    )?;
    for s in &sessions {
        let modified = s.modified_ms.map_or_else(|| "-".to_owned(), utc);
        let entries = s.entries.map_or_else(|| "-".to_owned(), |n| n.to_string());
        let (state, text) = match &s.error {
            Some(error) => (error.code.to_owned(), error.message.clone()),
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
    Ok(code)
}

/// `ls postgres://…` / `ls --pg CONNINFO`: the database's sessions, newest first.
fn ls_pg(out: &mut Out, conninfo: &str, args: &LsArgs) -> Outcome {
    let options = PgListOptions {
        limit: args.limit.map(|n| u32::try_from(n).unwrap_or(u32::MAX)),
    };
    let sessions = list_pg_sessions(conninfo, &options)?;
    if !out.readable() {
        let values = sessions.iter().map(|s| {
            Object::new()
                .string("sessionId", &s.session_id)
                .number("entries", s.entries)
                .string_or_null("latestLeafId", s.latest_leaf_id.as_deref())
                .number("modifiedMs", s.modified_ms)
                .finish()
        });
        out.emit(&Doc::Many(values.collect()))?;
        return Ok(exit::for_state(session::State::Ready));
    }
    writeln!(
        out,
        "{:<20} {:>8} {:<40} LATEST LEAF",
        "MODIFIED (UTC)", "ENTRIES", "SESSION ID"
    )?;
    for s in &sessions {
        let modified = utc(i64::try_from(s.modified_ms).unwrap_or(i64::MAX));
        writeln!(
            out,
            "{modified:<20} {:>8} {:<40} {}",
            s.entries,
            term::escape(&s.session_id),
            term::escape(s.latest_leaf_id.as_deref().unwrap_or("-"))
        )?;
    }
    Ok(exit::for_state(session::State::Ready))
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

/// The options of `ls`.
#[derive(Default)]
pub struct LsArgs {
    pub recursive: bool,
    pub limit: Option<u64>,
    /// Sort by path instead of newest first.
    pub by_path: bool,
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

//! The progress line of long work (import, verify, repair, copy): on stderr, and only when
//! stderr is a terminal, so a pipe, a file or a test never sees it. The library prints
//! nothing; it reports figures through `import_file_with_progress`.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use session::CopyProgress;
use session::ImportProgress;

/// A progress line that clears itself when dropped; nothing when stderr is not a
/// terminal.
pub struct Progress(Option<ProgressBar>);

impl Progress {
    /// A byte bar for reading a source, pass by pass.
    pub fn bytes(what: &str) -> Progress {
        Progress(on_terminal(|| {
            let style = ProgressStyle::with_template(
                "{prefix} {msg} [{bar:30}] {binary_bytes}/{binary_total_bytes} {elapsed}",
            )
            .map(|s| s.progress_chars("=> "))
            .unwrap_or_else(|_| ProgressStyle::default_bar());
            ProgressBar::no_length()
                .with_style(style)
                .with_prefix(what.to_owned())
        }))
    }

    /// A bar of entries written, for a copy.
    pub fn entries(what: &str) -> Progress {
        Progress(on_terminal(|| {
            let style = ProgressStyle::with_template(
                "{prefix} [{bar:30}] {human_pos}/{human_len} entries {elapsed}",
            )
            .map(|s| s.progress_chars("=> "))
            .unwrap_or_else(|_| ProgressStyle::default_bar());
            ProgressBar::no_length()
                .with_style(style)
                .with_prefix(what.to_owned())
        }))
    }

    /// Shows a copy's report.
    pub fn copied(&self, p: CopyProgress) {
        if let Some(bar) = &self.0 {
            if bar.length() != Some(p.total) {
                bar.set_length(p.total);
            }
            bar.set_position(p.done);
        }
    }

    /// A spinner with elapsed time, for work the library reports no figures for.
    pub fn spinner(what: &str) -> Progress {
        Progress(on_terminal(|| {
            let bar = ProgressBar::new_spinner();
            bar.set_message(what.to_owned());
            bar.enable_steady_tick(Duration::from_millis(120));
            bar
        }))
    }

    /// Shows an import's report; always lets it go on (the command line has no cancel
    /// of its own: Ctrl-C ends the process).
    pub fn import(&self, p: ImportProgress) -> bool {
        if let Some(bar) = &self.0 {
            if bar.length() != Some(p.total) {
                bar.set_length(p.total);
            }
            if p.done == 0 {
                bar.set_message(format!("pass {}", p.pass));
            }
            bar.set_position(p.done);
        }
        true
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Some(bar) = &self.0 {
            bar.finish_and_clear();
        }
    }
}

fn on_terminal(make: impl FnOnce() -> ProgressBar) -> Option<ProgressBar> {
    std::io::stderr().is_terminal().then(make)
}

//! What an export wrote and what it changed, counted while the writers write.

use super::super::Format;
use crate::json::Object;

/// One kind of change an export made, how many times, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExportChange {
    /// What was changed: `metadata`, `label`, `message`, `role:<role>`,
    /// `block:<type>`, `thinking`, `toolResult.isError`, `branch`, ….
    pub kind: String,
    pub count: u64,
    /// Why, in a sentence.
    pub reason: &'static str,
}

/// What an export wrote and what it could not carry as it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExportReport {
    pub format: Format,
    /// Lines of the output file (a header line included).
    pub entries: u64,
    /// What was written in another form than libsession holds it.
    pub converted: Vec<ExportChange>,
    /// What was left out.
    pub dropped: Vec<ExportChange>,
    /// Secrets replaced by `[REDACTED:<rule>]` in the lines written.
    pub redactions: u64,
}

impl ExportReport {
    /// The report as JSON: `{"format":NAME,"entries":N,"converted":[{"kind","count",
    /// "reason"}…],"dropped":[…],"redactions":N}`, written by the library's one JSON
    /// writer.
    pub fn to_json(&self) -> String {
        let changes = |list: &[ExportChange]| {
            crate::json::array(list.iter().map(|c| {
                Object::new()
                    .string("kind", &c.kind)
                    .number("count", c.count)
                    .string("reason", c.reason)
                    .finish()
            }))
        };
        Object::new()
            .string("format", self.format.name())
            .number("entries", self.entries)
            .raw("converted", &changes(&self.converted))
            .raw("dropped", &changes(&self.dropped))
            .number("redactions", self.redactions)
            .finish()
    }
}

/// An export in memory: the file's text (JSON lines, each ending in `\n`) and the
/// report.
#[derive(Clone, Debug)]
pub struct Exported {
    pub text: String,
    pub report: ExportReport,
}

/// The changes counted while writing, in the order first met.
#[derive(Default)]
pub(super) struct Tally {
    converted: Vec<ExportChange>,
    pub(super) dropped: Vec<ExportChange>,
    pub(super) redactions: u64,
}

impl Tally {
    pub(super) fn converted(&mut self, kind: &str, reason: &'static str) {
        Self::count(&mut self.converted, kind, reason, 1);
    }

    pub(super) fn dropped(&mut self, kind: &str, reason: &'static str) {
        Self::count(&mut self.dropped, kind, reason, 1);
    }

    pub(super) fn count(list: &mut Vec<ExportChange>, kind: &str, reason: &'static str, n: u64) {
        if n == 0 {
            return;
        }
        match list
            .iter_mut()
            .find(|c| c.kind == kind && c.reason == reason)
        {
            Some(change) => change.count += n,
            None => list.push(ExportChange {
                kind: kind.to_owned(),
                count: n,
                reason,
            }),
        }
    }

    pub(super) fn report(self, format: Format, entries: u64) -> ExportReport {
        ExportReport {
            format,
            entries,
            converted: self.converted,
            dropped: self.dropped,
            redactions: self.redactions,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_counts_each_kind_and_reason_once_in_the_order_first_met() {
        let mut tally = Tally::default();
        tally.dropped("metadata", "no place");
        tally.converted("role:custom", "as user text");
        tally.dropped("metadata", "no place");
        tally.dropped("label", "no labels");
        let report = tally.report(Format::Codex, 3);
        assert_eq!(
            report.to_json(),
            r#"{"format":"codex","entries":3,"converted":[{"kind":"role:custom","count":1,"reason":"as user text"}],"dropped":[{"kind":"metadata","count":2,"reason":"no place"},{"kind":"label","count":1,"reason":"no labels"}],"redactions":0}"#
        );
    }
}

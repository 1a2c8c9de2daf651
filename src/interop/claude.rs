//! placeholder
use super::{Builder, SourceLine};
pub(crate) fn import(lines: &[SourceLine<'_>], out: &mut Builder) {
    for line in lines {
        out.raw(line.number, line.text, "unknown_kind", None);
    }
}

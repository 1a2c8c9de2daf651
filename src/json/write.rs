//! Writers of normalised JSON assembled from already-canonical pieces.

/// `[a,b,…]` from the JSON texts `items`, in a buffer sized exactly (plus one byte,
/// so that a C caller's terminating NUL fits without a copy).
pub(crate) fn array<'a>(items: impl Iterator<Item = &'a [u8]> + Clone) -> Vec<u8> {
    let len: usize = items.clone().map(|item| item.len() + 1).sum();
    let mut out = Vec::with_capacity(len + 2);
    push_array(&mut out, items);
    out
}

/// Appends `[a,b,…]` from the JSON texts `items` to `out`.
pub(crate) fn push_array<'a>(out: &mut Vec<u8>, items: impl Iterator<Item = &'a [u8]>) {
    out.push(b'[');
    for (i, item) in items.enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(item);
    }
    out.push(b']');
}

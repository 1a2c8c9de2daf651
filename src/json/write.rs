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
    let mut array = ArrayWriter::open(out);
    items.for_each(|item| array.push(item));
    array.close();
}

/// `[a,b,…]` written one JSON text at a time (for items that are not all at hand at
/// once).
pub(crate) struct ArrayWriter<'o> {
    out: &'o mut Vec<u8>,
    first: bool,
}

impl<'o> ArrayWriter<'o> {
    pub(crate) fn open(out: &'o mut Vec<u8>) -> ArrayWriter<'o> {
        out.push(b'[');
        ArrayWriter { out, first: true }
    }

    pub(crate) fn push(&mut self, item: &[u8]) {
        if !self.first {
            self.out.push(b',');
        }
        self.first = false;
        self.out.extend_from_slice(item);
    }

    pub(crate) fn close(self) {
        self.out.push(b']');
    }
}

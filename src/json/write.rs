//! The one way the library writes JSON: result, report and error objects ([`Object`]),
//! arrays of JSON texts, arrays assembled from already-canonical pieces, and the values
//! the importers build ([`push_value`]). Members come
//! out in the order they are added, keys and string values are escaped by one function
//! ([`super::push_string`]), integers are written exactly and other numbers only as
//! finite JSON numbers, so casing, order, escaping and number spelling are the same in
//! every object by construction. `format!` never builds JSON in this crate.

/// `text` as a JSON string, escaped, appended to `out`.
fn push_escaped(out: &mut Vec<u8>, text: &str) {
    let mut quoted = String::with_capacity(text.len() + 2);
    super::push_string(&mut quoted, text);
    out.extend_from_slice(quoted.as_bytes());
}

/// An integer type: written in decimal, exactly.
pub trait Integer: std::fmt::Display {}
impl Integer for u64 {}
impl Integer for i64 {}
impl Integer for u32 {}
impl Integer for usize {}
impl Integer for u128 {}

/// A JSON object being written, member by member.
pub struct Object {
    out: Vec<u8>,
    empty: bool,
}

impl Default for Object {
    fn default() -> Object {
        Object::new()
    }
}

impl Object {
    /// An empty object, members to follow.
    pub fn new() -> Object {
        Object {
            out: vec![b'{'],
            empty: true,
        }
    }

    /// `"key":"value"`, the value escaped.
    pub fn string(mut self, key: &str, value: &str) -> Object {
        self.key(key);
        push_escaped(&mut self.out, value);
        self
    }

    /// `"key":"value"`, or `"key":null` for `None`.
    pub fn string_or_null(self, key: &str, value: Option<&str>) -> Object {
        match value {
            Some(value) => self.string(key, value),
            None => self.raw(key, "null"),
        }
    }

    /// `"key":N`.
    pub fn number(mut self, key: &str, value: impl Integer) -> Object {
        self.key(key);
        self.out.extend_from_slice(value.to_string().as_bytes());
        self
    }

    /// `"key":N`, or `"key":null` for `None`.
    pub fn number_or_null(self, key: &str, value: Option<impl Integer>) -> Object {
        match value {
            Some(value) => self.number(key, value),
            None => self.raw(key, "null"),
        }
    }

    /// `"key":true` or `"key":false`.
    pub fn boolean(self, key: &str, value: bool) -> Object {
        self.raw(key, if value { "true" } else { "false" })
    }

    /// A member whose value is already JSON text (an array or object this module
    /// wrote, an entry's canonical text, a number token kept from the input).
    pub fn raw(mut self, key: &str, json: &str) -> Object {
        self.key(key);
        self.out.extend_from_slice(json.as_bytes());
        self
    }

    /// `"key":N` for a number that need not be an integer (token counts): integers
    /// without a fraction, others in Rust's shortest round-trip form, with an exponent
    /// from 1e21 up (as JavaScript spells them: `1.7976931348623157e308`, not 309 digits
    /// that some parsers refuse as out of range). JSON has no infinity or NaN: a value
    /// that is not finite is written as the nearest finite one (NaN as 0), so the
    /// output is JSON whatever the caller computed.
    pub fn finite(self, key: &str, value: f64) -> Object {
        let value = if value.is_nan() {
            0.0
        } else {
            value.clamp(f64::MIN, f64::MAX)
        };
        let text = if value.fract() == 0.0 && value.abs() < 9_007_199_254_740_992.0 {
            format!("{}", value as i64)
        } else if value.abs() >= 1e21 {
            format!("{value:e}")
        } else {
            format!("{value}")
        };
        self.raw(key, &text)
    }

    /// A member whose value is JSON already held as UTF-8 bytes (entries' lines).
    pub fn raw_bytes(mut self, key: &str, json: &[u8]) -> Object {
        self.key(key);
        self.out.extend_from_slice(json);
        self
    }

    /// A member whose value `write` appends to the buffer as JSON (a large array
    /// streamed in place rather than copied through a `String`).
    pub fn raw_with<E>(
        mut self,
        key: &str,
        write: impl FnOnce(&mut Vec<u8>) -> Result<(), E>,
    ) -> Result<Object, E> {
        self.key(key);
        write(&mut self.out)?;
        Ok(self)
    }

    fn key(&mut self, key: &str) {
        if !self.empty {
            self.out.push(b',');
        }
        self.empty = false;
        push_escaped(&mut self.out, key);
        self.out.push(b':');
    }

    /// The object's text.
    pub fn finish(self) -> String {
        let bytes = self.finish_bytes();
        // Every piece is UTF-8 text (keys, escaped strings, JSON this crate holds as
        // text); a member written by `raw_with` is an entry's UTF-8 line.
        String::from_utf8(bytes)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
    }

    /// The object's UTF-8 bytes.
    pub fn finish_bytes(mut self) -> Vec<u8> {
        self.out.push(b'}');
        self.out
    }
}

/// A JSON value (a `serde_json::Value` the importers build) appended to `out`: members
/// in the value's order, strings escaped by [`super::push_string`] as everywhere else,
/// numbers as `serde_json` spells them (its shortest round-trip form). The depth is the
/// value's, bounded by the parser that built it (128).
pub(crate) fn push_value(out: &mut String, value: &serde_json::Value) {
    use serde_json::Value;
    use std::fmt::Write;
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        // `Display` of a number is `serde_json`'s own spelling of it (the test below
        // holds it to the serialiser's), so imported files keep the numbers they have
        // always had. Writing into a `String` cannot fail.
        Value::Number(number) => {
            let _ = write!(out, "{number}");
        }
        Value::String(text) => super::push_string(out, text),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                push_value(out, item);
            }
            out.push(']');
        }
        Value::Object(members) => {
            out.push('{');
            for (i, (key, item)) in members.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                super::push_string(out, key);
                out.push(':');
                push_value(out, item);
            }
            out.push('}');
        }
    }
}

/// `[a,b,…]` from JSON texts (written by this module, or an entry's canonical text).
pub(crate) fn array<S: AsRef<str>>(items: impl Iterator<Item = S>) -> String {
    let mut out = String::from("[");
    for (i, item) in items.enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(item.as_ref());
    }
    out.push(']');
    out
}

/// `["a",null,…]`: each string escaped, `None` as `null`.
pub(crate) fn string_or_null_array<'a>(items: impl Iterator<Item = Option<&'a str>>) -> String {
    let mut out = String::from("[");
    for (i, item) in items.enumerate() {
        if i > 0 {
            out.push(',');
        }
        match item {
            Some(item) => super::push_string(&mut out, item),
            None => out.push_str("null"),
        }
    }
    out.push(']');
    out
}

/// `[a,b,…]` from the JSON texts `items`, in a buffer sized exactly (plus one byte,
/// so that a C caller's terminating NUL fits without a copy).
pub(crate) fn bytes_array<'a>(items: impl Iterator<Item = &'a [u8]> + Clone) -> Vec<u8> {
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

#[cfg(test)]
mod tests {
    use super::{Object, array, push_value};

    /// Rule: a value is written with the escapes of every other output (`push_string`:
    /// backspace and form feed as `\u0008`, `\u000c`), members in the value's order,
    /// numbers spelled as `serde_json` spells them; what it writes parses back equal.
    #[test]
    fn a_value_is_written_with_the_one_writers_escapes_and_reads_back_equal() {
        let text = r#"{"z":[1,-0.5,1e300,12345678901234567890,null,true,false],"a":"\b\f\u0001\"\\/é😀","":{}}"#;
        let value: serde_json::Value = serde_json::from_str(text).unwrap();
        let mut out = String::new();
        push_value(&mut out, &value);
        assert_eq!(
            out,
            r#"{"z":[1,-0.5,1e+300,12345678901234567890,null,true,false],"a":"\u0008\u000c\u0001\"\\/é😀","":{}}"#
        );
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&out).unwrap(),
            value
        );
    }

    /// Rule: numbers come out exactly as `serde_json`'s serialiser writes them.
    #[test]
    fn numbers_are_spelled_as_serde_json_serialises_them() {
        let numbers = "[0,-0,-0.0,1.0,0.1,1e5,1E-7,123456789012345678,18446744073709551615,\
            -9223372036854775808,1.7976931348623157e308,5e-324,0.30000000000000004,1735689600000.5]";
        let value: serde_json::Value = serde_json::from_str(numbers).unwrap();
        let mut out = String::new();
        push_value(&mut out, &value);
        assert_eq!(out, serde_json::to_string(&value).unwrap());
    }

    #[test]
    fn members_come_out_in_the_order_added() {
        let json = Object::new()
            .number("z", 1u64)
            .string("a", "x")
            .boolean("m", true)
            .string_or_null("n", None)
            .number_or_null("o", Some(7u64))
            .raw("p", "[1]")
            .finish();
        assert_eq!(json, r#"{"z":1,"a":"x","m":true,"n":null,"o":7,"p":[1]}"#);
    }

    #[test]
    fn keys_and_strings_are_escaped_one_way() {
        let json = Object::new().string("k\"\n", "a\\b\u{1}\"").finish();
        assert_eq!(json, r#"{"k\"\n":"a\\b\u0001\""}"#);
        let value: serde_json::Value = serde_json::from_str(&json).expect("valid JSON");
        assert_eq!(value["k\"\n"], "a\\b\u{1}\"");
    }

    #[test]
    fn numbers_that_need_not_be_integers_are_always_json() {
        let json = Object::new()
            .finite("a", 3.0)
            .finite("b", 0.5)
            .finite("c", f64::MAX)
            .finite("d", f64::INFINITY)
            .finite("e", f64::NAN)
            .finish();
        assert_eq!(
            json,
            r#"{"a":3,"b":0.5,"c":1.7976931348623157e308,"d":1.7976931348623157e308,"e":0}"#
        );
        let value: serde_json::Value = serde_json::from_str(&json).expect("valid JSON");
        assert_eq!(value["c"].as_f64(), Some(f64::MAX));
    }

    #[test]
    fn an_empty_object_and_an_empty_array() {
        assert_eq!(Object::new().finish(), "{}");
        assert_eq!(array(std::iter::empty::<String>()), "[]");
        assert_eq!(
            array(["1".to_owned(), "{}".to_owned()].into_iter()),
            "[1,{}]"
        );
    }
}

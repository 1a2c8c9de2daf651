//! The one way the library writes a JSON object: results, errors, reports. Members come
//! out in the order they are added, keys and string values are escaped by one function
//! ([`json::push_string`]), and numbers are written as integers, so casing, order and
//! escaping are the same in every object by construction.

use crate::json;

/// An integer type: written in decimal, exactly.
pub(crate) trait Integer: std::fmt::Display {}
impl Integer for u64 {}
impl Integer for i64 {}
impl Integer for u32 {}
impl Integer for usize {}

/// A JSON object being written, member by member.
pub(crate) struct Object {
    out: String,
    empty: bool,
}

impl Object {
    pub(crate) fn new() -> Object {
        Object {
            out: String::from("{"),
            empty: true,
        }
    }

    /// `"key":"value"`, the value escaped.
    pub(crate) fn string(mut self, key: &str, value: &str) -> Object {
        self.key(key);
        json::push_string(&mut self.out, value);
        self
    }

    /// `"key":"value"`, or `"key":null` for `None`.
    pub(crate) fn string_or_null(self, key: &str, value: Option<&str>) -> Object {
        match value {
            Some(value) => self.string(key, value),
            None => self.raw(key, "null"),
        }
    }

    /// `"key":N`.
    pub(crate) fn number(mut self, key: &str, value: impl Integer) -> Object {
        self.key(key);
        self.out.push_str(&value.to_string());
        self
    }

    /// `"key":N`, or `"key":null` for `None`.
    pub(crate) fn number_or_null(self, key: &str, value: Option<impl Integer>) -> Object {
        match value {
            Some(value) => self.number(key, value),
            None => self.raw(key, "null"),
        }
    }

    /// `"key":true` or `"key":false`.
    pub(crate) fn boolean(self, key: &str, value: bool) -> Object {
        self.raw(key, if value { "true" } else { "false" })
    }

    /// A member whose value is already JSON text (an array or object this module
    /// wrote, an entry's canonical text, a number token kept from the input).
    pub(crate) fn raw(mut self, key: &str, json: &str) -> Object {
        self.key(key);
        self.out.push_str(json);
        self
    }

    fn key(&mut self, key: &str) {
        if !self.empty {
            self.out.push(',');
        }
        self.empty = false;
        json::push_string(&mut self.out, key);
        self.out.push(':');
    }

    pub(crate) fn finish(mut self) -> String {
        self.out.push('}');
        self.out
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

/// `["a","b",…]`: each string escaped.
pub(crate) fn string_array<S: AsRef<str>>(items: impl Iterator<Item = S>) -> String {
    let mut out = String::from("[");
    for (i, item) in items.enumerate() {
        if i > 0 {
            out.push(',');
        }
        json::push_string(&mut out, item.as_ref());
    }
    out.push(']');
    out
}

#[cfg(test)]
mod tests {
    use super::{Object, array};

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
    fn an_empty_object_and_an_empty_array() {
        assert_eq!(Object::new().finish(), "{}");
        assert_eq!(array(std::iter::empty::<String>()), "[]");
        assert_eq!(
            array(["1".to_owned(), "{}".to_owned()].into_iter()),
            "[1,{}]"
        );
    }
}

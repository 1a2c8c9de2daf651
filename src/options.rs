//! Options objects: the one parser of every `options_json` the library takes (store
//! opens, `build_context`, the tree page, the session listing, import).
//!
//! One rule for all of them: the text is a JSON object (anything else is refused), each
//! member is one the options type knows (an unknown member is refused, named), of its
//! documented type, and given once (serde's derived `Deserialize` refuses a repeated
//! member). Every refusal is [`Error::InvalidOption`], whose message quotes at most
//! [`MESSAGE_CHARS`] characters with control characters escaped, whatever the input.
//! The text is parsed once, by serde_json, whose nesting limit bounds the recursion.

use serde::de::DeserializeOwned;

use crate::error::Error;

/// The longest message an invalid option gives, in characters: serde's message can
/// quote the offending value, which may be as long as the input.
const MESSAGE_CHARS: u64 = 200;

/// Options of type `T` from `text`: see the module documentation. `T` must derive
/// `Deserialize` with `deny_unknown_fields`.
pub(crate) fn from_json<T: DeserializeOwned>(text: &str) -> Result<T, Error> {
    // serde reads a struct from an array too (by position): only an object is options.
    if !text.trim_start().starts_with('{') {
        return Err(invalid("options must be a JSON object"));
    }
    serde_json::from_str(text).map_err(|e| invalid(&e.to_string()))
}

/// [`Error::InvalidOption`] with `message` cut and escaped.
pub(crate) fn invalid(message: &str) -> Error {
    Error::InvalidOption {
        message: crate::preview::preview(message, MESSAGE_CHARS),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    struct Sample {
        #[serde(default)]
        limit: Option<u64>,
    }

    fn message(text: &str) -> String {
        match from_json::<Sample>(text) {
            Err(Error::InvalidOption { message }) => message,
            other => panic!("{text}: {other:?}"),
        }
    }

    #[test]
    fn only_an_object_is_options() {
        for text in ["[1]", "1", "null", "\"x\"", ""] {
            assert!(message(text).contains("object"), "{text}");
        }
        assert_eq!(from_json::<Sample>(" {}").map(|s| s.limit).ok(), Some(None));
    }

    #[test]
    fn an_unknown_member_is_refused_by_name() {
        assert!(message(r#"{"limt":1}"#).contains("limt"));
    }

    #[test]
    fn a_member_given_twice_is_refused() {
        assert!(message(r#"{"limit":1,"limit":2}"#).contains("duplicate"));
    }

    #[test]
    fn a_wrong_type_is_refused() {
        assert!(message(r#"{"limit":"ten"}"#).contains("invalid type"));
    }

    #[test]
    fn the_message_is_short_and_escaped_whatever_the_input() {
        let long = format!("{{\"{}\n\":1}}", "x".repeat(100_000));
        let m = message(&long);
        assert!(
            m.chars().count() <= MESSAGE_CHARS as usize + 8,
            "{}",
            m.len()
        );
        assert!(!m.contains('\n'));
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let deep = format!(
            "{{\"limit\":{}{}}}",
            "[".repeat(100_000),
            "]".repeat(100_000)
        );
        assert!(!message(&deep).is_empty());
    }
}

//! JSON text that users write (pool lines, replay recordings, label files), parsed with the
//! failing field named: `items[2].text: expected a string, found 3`. The one import of
//! serde_path_to_error.

use serde::de::DeserializeOwned;

/// A JSON text that does not parse into the expected shape: the dotted path of the field
/// (`items[2].text`, empty at the top), what was expected and found, and the 1-based column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonError {
    /// Path of the failing field (`items[2].text`); empty when the text itself is not JSON or
    /// the top level has the wrong shape.
    pub path: String,
    /// What was expected and what was found, in words (`expected a string, found 3`).
    pub msg: String,
    /// 1-based column in the text (serde_json's count).
    pub column: usize,
}

impl std::fmt::Display for JsonError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.path.is_empty() {
            write!(f, "{} at column {}", self.msg, self.column)
        } else {
            write!(f, "at `{}`: {} (column {})", self.path, self.msg, self.column)
        }
    }
}

impl std::error::Error for JsonError {}

/// serde_json's error on one line of a JSON Lines file, with its column and without its own
/// line number (always 1 there: the file's line is said beside it): "expected `,` or `}` at
/// column 11".
pub fn on_one_line(e: &serde_json::Error) -> String {
    format!("{} at column {}", without_position(e), e.column())
}

/// serde_json's words for `e` without its " at line L column C".
fn without_position(e: &serde_json::Error) -> String {
    let raw = e.to_string();
    raw.rfind(" at line ").map_or(raw.as_str(), |i| &raw[..i]).to_string()
}

/// Parse one JSON text into `T`.
///
/// # Errors
/// [`JsonError`] naming the field, with serde's words put as "expected …, found …".
pub fn from_str<T: DeserializeOwned>(text: &str) -> Result<T, JsonError> {
    let mut de = serde_json::Deserializer::from_str(text);
    let error = |path: String, inner: serde_json::Error| {
        let column = inner.column();
        let raw = without_position(&inner);
        if matches!(inner.classify(), serde_json::error::Category::Syntax | serde_json::error::Category::Eof) {
            return JsonError { path: String::new(), msg: format!("not valid JSON: {raw}"), column };
        }
        let mut path = if path == "." { String::new() } else { path };
        if raw.starts_with("unknown field") {
            // The path ends with the unknown key itself: name the object that holds it.
            let cut = path.rfind(['.', '[']).unwrap_or(0);
            path.truncate(cut);
        }
        JsonError { path, msg: words(&raw), column }
    };
    let v = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        error(path, e.into_inner())
    })?;
    de.end().map_err(|e| error(String::new(), e))?;
    Ok(v)
}

/// Check that no JSON object in `text` names a key twice. serde_json keeps the last value of a
/// repeated key without a word (`{"y": 1, "y": 0}` reads as y = 0); a file that says two things
/// is refused instead.
///
/// # Errors
/// [`JsonError`] naming the object (`items[2]`, empty at the top), `duplicate key "y"` and the
/// column; also when `text` is not JSON.
pub fn unique_keys(text: &str) -> Result<(), JsonError> {
    from_str::<UniqueKeys>(text).map(|_| ())
}

/// Any JSON value, read only to find a key repeated within an object ([`unique_keys`]).
struct UniqueKeys;

impl<'de> serde::Deserialize<'de> for UniqueKeys {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(UniqueKeysVisitor)
    }
}

struct UniqueKeysVisitor;

impl<'de> serde::de::Visitor<'de> for UniqueKeysVisitor {
    type Value = UniqueKeys;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys)
    }
    fn visit_i64<E>(self, _: i64) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys)
    }
    fn visit_u64<E>(self, _: u64) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys)
    }
    fn visit_f64<E>(self, _: f64) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys)
    }
    fn visit_str<E>(self, _: &str) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys)
    }
    fn visit_unit<E>(self) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<UniqueKeys, A::Error> {
        while seq.next_element::<UniqueKeys>()?.is_some() {}
        Ok(UniqueKeys)
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<UniqueKeys, A::Error> {
        let mut seen = std::collections::HashSet::new();
        while let Some(k) = map.next_key::<String>()? {
            if !seen.insert(k.clone()) {
                return Err(serde::de::Error::custom(format!(
                    "duplicate key {k:?}: the object gives it twice (which value is meant?); expected each key once"
                )));
            }
            map.next_value::<UniqueKeys>()?;
        }
        Ok(UniqueKeys)
    }
}

/// serde's "invalid type: integer `3`, expected a string" as "expected a string, found 3", with
/// Rust's type names in words (`f64` is a number).
fn words(raw: &str) -> String {
    let named = |t: &str| -> String {
        match t {
            "f64" | "f32" => "a number".into(),
            "u64" | "u32" | "u16" | "u8" | "usize" => "a whole number ≥ 0".into(),
            "i64" | "i32" | "i16" | "i8" | "isize" => "a whole number".into(),
            "a sequence" => "an array [...]".into(),
            "a map" | "struct" => "an object {...}".into(),
            t if t.starts_with("struct ") => "an object {...}".into(),
            t => t.into(),
        }
    };
    match crate::domain::serde_words::invalid_type(raw, &crate::domain::serde_words::JSON) {
        Some(t) if t.before.is_empty() => format!("expected {}, found {}", named(t.expected), t.found),
        // serde's word for one of a field's named values.
        _ => raw.replace("unknown variant `", "unknown value `"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_given_twice_is_named_with_its_object() {
        assert_eq!(unique_keys(r#"{"a": "x", "b": [1, {"c": null}], "y": 1}"#), Ok(()));
        let e = unique_keys(r#"{"a": "x", "y": 1, "y": 0}"#).unwrap_err();
        assert!(e.msg.starts_with("duplicate key \"y\""), "{e}");
        assert_eq!((e.path.as_str(), e.column), ("", 22));
        let e = unique_keys(r#"{"items": [{"id": "a"}, {"id": "b", "id": "c"}]}"#).unwrap_err();
        assert_eq!(e.path, "items[1]", "{e}");
        // The same key in two objects is not a repeat.
        assert_eq!(unique_keys(r#"[{"id": 1}, {"id": 2}]"#), Ok(()));
    }

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Item {
        id: String,
        quality: Option<f64>,
        n: Option<u64>,
    }

    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)]
    struct Pool {
        pool_id: String,
        items: Vec<Item>,
    }

    fn e(t: &str) -> String {
        from_str::<Pool>(t).unwrap_err().to_string()
    }

    #[test]
    fn a_wrong_field_is_named_by_its_path_with_what_was_expected_and_found() {
        assert_eq!(
            e(r#"{"pool_id": "p", "items": [{"id": "a"}, {"id": 3}]}"#),
            "at `items[1].id`: expected a string, found 3 (column 48)"
        );
        assert_eq!(
            e(r#"{"pool_id": "p", "items": [{"id": "a", "quality": "high"}]}"#),
            "at `items[0].quality`: expected a number, found \"high\" (column 56)"
        );
        assert_eq!(
            e(r#"{"pool_id": "p", "items": [{"id": "a", "n": -2}]}"#),
            "at `items[0].n`: expected a whole number ≥ 0, found -2 (column 46)"
        );
        assert_eq!(
            e(r#"{"pool_id": "p", "items": {"a": 1}}"#),
            "at `items`: expected an array [...], found an object (column 26)"
        );
        assert_eq!(e(r#"{"pool_id": null, "items": []}"#), "at `pool_id`: expected a string, found null (column 16)");
        assert_eq!(e(r#"{"items": []}"#), "missing field `pool_id` at column 13");
        assert!(
            e(r#"{"pool_id": "p", "items": [{"id": "a", "qualty": 3}]}"#)
                .starts_with("at `items[0]`: unknown field `qualty`, expected one of `id`, `quality`, `n`"),
            "{}",
            e(r#"{"pool_id": "p", "items": [{"id": "a", "qualty": 3}]}"#)
        );
    }

    #[test]
    fn text_that_is_not_json_or_has_trailing_text_says_so_with_its_column() {
        assert_eq!(e(r#"{"pool_id": "p", "items": []} x"#), "not valid JSON: trailing characters at column 31");
        assert_eq!(e(r#"{"pool_id": "p", "items": [}"#), "not valid JSON: expected value at column 28");
    }
}

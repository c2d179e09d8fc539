//! serde's "invalid type: integer `3`, expected a string" in the order and words of the tool's
//! other input errors, "expected a string, found 3", for each text format users write (YAML
//! configs, JSON lines): one reading of serde's message, the format's words for its shapes.

/// What a text format calls serde's shapes, and how it shows a value found.
#[derive(Debug, Clone, Copy)]
pub struct Vocabulary {
    /// serde's "sequence" (`a list`, `an array`).
    pub list: &'static str,
    /// serde's "map" (`a mapping`, `an object`).
    pub map: &'static str,
    /// serde's "null" or "unit value".
    pub null: &'static str,
    /// Whether a value found that is not a quoted text is shown in quotes (`found "7"`): YAML
    /// writes numbers and words alike, JSON does not.
    pub quote_values: bool,
}

/// YAML's words (configs).
pub const YAML: Vocabulary =
    Vocabulary { list: "a list", map: "a mapping", null: "an empty value (null)", quote_values: true };

/// JSON's words (pool lines, replay recordings, label files).
pub const JSON: Vocabulary = Vocabulary { list: "an array", map: "an object", null: "null", quote_values: false };

/// serde's "invalid type: F, expected E" (or "invalid value: …") found in `msg`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidType<'a> {
    /// The text of `msg` before serde's words (a location, a key).
    pub before: &'a str,
    /// What was found, in the vocabulary's words (`a list`, `"7"`, `3`).
    pub found: String,
    /// What was expected, as serde words it (to the end of its line).
    pub expected: &'a str,
    /// The lines of `msg` after serde's (a parser's excerpt); empty when none.
    pub after: &'a str,
}

/// Read serde's "invalid type/value: F, expected E" in `msg`, with F in `words`; `None` when
/// `msg` holds no such words.
pub fn invalid_type<'a>(msg: &'a str, words: &Vocabulary) -> Option<InvalidType<'a>> {
    let (start, prefix) = ["invalid type: ", "invalid value: "].iter().find_map(|p| msg.find(p).map(|at| (at, *p)))?;
    let (found, tail) = msg[start + prefix.len()..].split_once(", expected ")?;
    let (expected, after) = tail.split_once('\n').unwrap_or((tail, ""));
    let found = match found {
        "sequence" => words.list.to_string(),
        "map" => words.map.to_string(),
        "unit value" | "null" => words.null.to_string(),
        f => {
            // `integer `7``, `floating point `1.5``, `boolean `true``, `string "x"`: the value
            // (between the backticks, or after the kind's one word).
            let v = match (f.find('`'), f.rfind('`')) {
                (Some(a), Some(b)) if b > a => &f[a + 1..b],
                _ => f.split_once(' ').map_or(f, |(_, v)| v),
            };
            if !words.quote_values || v.starts_with('"') { v.to_string() } else { format!("{v:?}") }
        }
    };
    Some(InvalidType { before: &msg[..start], found, expected, after })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serde_words_read_in_each_format_s_terms() {
        let m = "invalid type: sequence, expected a string";
        assert_eq!(invalid_type(m, &YAML).unwrap().found, "a list");
        assert_eq!(invalid_type(m, &JSON).unwrap().found, "an array");
        let m = "line 3 column 4: invalid type: integer `7`, expected a string\n  3 | k: 7";
        let y = invalid_type(m, &YAML).unwrap();
        assert_eq!(
            y,
            InvalidType {
                before: "line 3 column 4: ",
                found: "\"7\"".into(),
                expected: "a string",
                after: "  3 | k: 7"
            }
        );
        assert_eq!(invalid_type(m, &JSON).unwrap().found, "7");
        let m = "invalid type: string \"high\", expected f64";
        assert_eq!(invalid_type(m, &YAML).unwrap().found, "\"high\"");
        assert_eq!(invalid_type(m, &JSON).unwrap().found, "\"high\"");
        assert_eq!(invalid_type("invalid value: map, expected u64", &JSON).unwrap().found, "an object");
        assert_eq!(
            invalid_type("invalid type: null, expected a string", &YAML).unwrap().found,
            "an empty value (null)"
        );
        assert_eq!(invalid_type("missing field `k`", &YAML), None);
        // A kind of two words.
        let m = "invalid type: floating point `2.5`, expected a positive number";
        assert_eq!(invalid_type(m, &YAML).unwrap().found, "\"2.5\"");
        assert_eq!(invalid_type(m, &JSON).unwrap().found, "2.5");
    }
}

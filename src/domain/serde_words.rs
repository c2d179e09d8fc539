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

/// Deserialize a count whose rule is ≥ 1 (k, anchors, queries in flight, draws, …): a value
/// that is not a whole number ≥ 0 is refused in the rule's own words ("expected a whole number
/// ≥ 1, found \"-1\""), not in the words of the integer type. 0 passes here and is refused by the
/// setting's check, which names its full rule (for k, `1 ≤ k < number of bases`). Use with
/// `#[serde(deserialize_with = …)]`.
///
/// # Errors
/// A negative, fractional, text or too large value.
pub fn at_least_one<'de, D: serde::Deserializer<'de>, T: Count>(d: D) -> Result<T, D::Error> {
    d.deserialize_any(WholeNumber { rule: 1, _type: std::marker::PhantomData })
}

/// Deserialize a count or a seed that may be 0 (a number of retries, a seed, `max_comparisons`):
/// written as every other number of a config may be (`120.0`, `1e3`, `"120"`), and refused in
/// the tool's words ("expected a whole number ≥ 0, found \"-1\""). Use with
/// `#[serde(deserialize_with = …)]`.
///
/// # Errors
/// A negative, fractional, text or too large value.
pub fn whole<'de, D: serde::Deserializer<'de>, T: Count>(d: D) -> Result<T, D::Error> {
    d.deserialize_any(WholeNumber { rule: 0, _type: std::marker::PhantomData })
}

/// [`whole`] for a setting that may be left out or null (`Option<u64>`, with
/// `#[serde(default)]`).
///
/// # Errors
/// As [`whole`].
pub fn opt_whole<'de, D: serde::Deserializer<'de>, T: Count>(d: D) -> Result<Option<T>, D::Error> {
    Ok(<Option<One<T, 0>> as serde::Deserialize>::deserialize(d)?.map(|o| o.0))
}

/// One count of an optional setting, read by [`WholeNumber`] under the rule `RULE` (0 or 1).
struct One<T, const RULE: u64>(T);

impl<'de, T: Count, const RULE: u64> serde::Deserialize<'de> for One<T, RULE> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(WholeNumber { rule: RULE, _type: std::marker::PhantomData }).map(One)
    }
}

/// [`at_least_one`] for a setting that may be left out (`Option<usize>`, with
/// `#[serde(default)]`).
///
/// # Errors
/// As [`at_least_one`].
pub fn opt_at_least_one<'de, D: serde::Deserializer<'de>, T: Count>(d: D) -> Result<Option<T>, D::Error> {
    // A null (`concurrency: null`, as a resolved config.yaml writes a setting left out) is none.
    Ok(<Option<One<T, 1>> as serde::Deserialize>::deserialize(d)?.map(|o| o.0))
}

/// [`at_least_one`] for each value of a list (a pipeline sweep's `budgets`): an entry that is not
/// a whole number is refused in the list's own rule ("expected a whole number ≥ 1, found
/// \"all\""); 0 passes here and is refused by the setting's check.
///
/// # Errors
/// As [`at_least_one`], for the first entry that fails.
pub fn each_at_least_one<'de, D: serde::Deserializer<'de>, T: Count>(d: D) -> Result<Vec<T>, D::Error> {
    Ok(<Vec<One<T, 1>> as serde::Deserialize>::deserialize(d)?.into_iter().map(|o| o.0).collect())
}

/// A float that is a whole number ≥ 0 read exactly (at most 2^53): `200.0`, `1e6`; `None` for a
/// fraction, a negative, a non-finite value or one past 2^53.
pub fn whole_float(v: f64) -> Option<u64> {
    (v >= 0.0 && v.fract() == 0.0 && v <= 2f64.powi(53)).then_some(v as u64)
}

/// The unsigned integer types a count setting is held in.
pub trait Count: TryFrom<u64> {
    /// The largest value of the type.
    const MAX: u64;
}
impl Count for usize {
    const MAX: u64 = usize::MAX as u64;
}
impl Count for u32 {
    const MAX: u64 = u32::MAX as u64;
}
impl Count for u64 {
    const MAX: u64 = u64::MAX;
}
impl Count for u8 {
    const MAX: u64 = u8::MAX as u64;
}

/// Reads a whole number ≥ 0 of type `T`; `rule` is the least value the setting takes (0 or 1),
/// said in the message of a value refused (a 0 under a rule of 1 is left to the setting's check).
struct WholeNumber<T> {
    rule: u64,
    _type: std::marker::PhantomData<T>,
}

impl<T> WholeNumber<T> {
    fn refuse<E: serde::de::Error>(&self, found: &dyn std::fmt::Display) -> E {
        E::custom(format!("expected a whole number ≥ {}, found \"{found}\"", self.rule))
    }
}

impl<T: Count> serde::de::Visitor<'_> for WholeNumber<T> {
    type Value = T;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "a whole number ≥ {}", self.rule)
    }
    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<T, E> {
        T::try_from(v).map_err(|_| E::custom(format!("{v} is too large (at most {})", T::MAX)))
    }
    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<T, E> {
        u64::try_from(v).map_err(|_| self.refuse(&v)).and_then(|v| self.visit_u64(v))
    }
    /// A whole number written as a float (`1e6`, `200.0`) is that number.
    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<T, E> {
        if let Some(n) = whole_float(v) {
            self.visit_u64(n)
        } else if v.is_finite() && v.fract() == 0.0 && v > 0.0 && T::MAX > 1 << 53 {
            // Past 2^53 a float is no longer every whole number; digits past the type's largest
            // value arrive as a float too.
            Err(E::custom(format!(
                "{v:e} is too large (at most {} written in digits, {} with a point or an exponent)",
                T::MAX,
                1u64 << 53
            )))
        } else if v.is_finite() && v.fract() == 0.0 && v > 0.0 {
            Err(E::custom(format!("{v:e} is too large (at most {})", T::MAX)))
        } else {
            Err(self.refuse(&v))
        }
    }
    /// A number in quotes (`k: "3"`) is that number, as the parser takes it for every other
    /// number of a config (`max_usd: "0.2"`).
    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<T, E> {
        match (v.trim().parse::<u64>(), v.trim().parse::<f64>()) {
            (Ok(n), _) => self.visit_u64(n),
            (_, Ok(x)) if x.is_finite() => self.visit_f64(x),
            _ => Err(self.refuse(&v)),
        }
    }
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

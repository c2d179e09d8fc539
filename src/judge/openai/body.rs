//! Broken text in a reply body, repaired before JSON parsing: invalid UTF-8 sequences and lone
//! UTF-16 surrogate escapes (`"\ud83d"` without its pair, which serde_json — and therefore
//! async-openai — rejects) become U+FFFD, the replacement character, so the verdict around
//! them is still read. Each repair is counted (judge stats `broken_text_repairs`).

use std::borrow::Cow;

/// A body with its broken sequences replaced, and how many were replaced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repaired<'a> {
    /// The body, valid UTF-8 with no lone surrogate escape.
    pub body: Cow<'a, [u8]>,
    /// Invalid UTF-8 sequences replaced.
    pub invalid_utf8: u64,
    /// Lone surrogate escapes replaced.
    pub lone_surrogates: u64,
}

impl Repaired<'_> {
    /// Whether anything was replaced.
    pub fn changed(&self) -> bool {
        self.invalid_utf8 + self.lone_surrogates > 0
    }
}

fn hex4(b: &[u8]) -> Option<u16> {
    let s = std::str::from_utf8(b.get(..4)?).ok()?;
    u16::from_str_radix(s, 16).ok()
}

/// Replace invalid UTF-8 and lone surrogate escapes in a JSON body with U+FFFD (module docs).
/// A well-formed body is returned borrowed and unchanged.
pub fn repair(bytes: &[u8]) -> Repaired<'_> {
    let (text, invalid_utf8): (Cow<'_, str>, u64) = match std::str::from_utf8(bytes) {
        Ok(s) => (Cow::Borrowed(s), 0),
        Err(_) => {
            let lossy = String::from_utf8_lossy(bytes).into_owned();
            // Count the maximal invalid sequences that became U+FFFD.
            let mut n = 0u64;
            let mut rest = bytes;
            while !rest.is_empty() {
                match std::str::from_utf8(rest) {
                    Ok(_) => break,
                    Err(e) => {
                        n += 1;
                        let skip = e.valid_up_to() + e.error_len().unwrap_or(rest.len() - e.valid_up_to());
                        rest = &rest[skip..];
                    }
                }
            }
            (Cow::Owned(lossy), n)
        }
    };
    let b = text.as_bytes();
    let mut out: Option<Vec<u8>> = None;
    let mut lone = 0u64;
    let mut i = 0;
    let mut copied = 0;
    while i + 1 < b.len() {
        if b[i] != b'\\' {
            i += 1;
            continue;
        }
        if b[i + 1] != b'u' {
            i += 2; // an escape pair such as \\ or \"
            continue;
        }
        let Some(u) = hex4(&b[i + 2..]) else {
            i += 2;
            continue;
        };
        let is_high = (0xD800..=0xDBFF).contains(&u);
        let is_low = (0xDC00..=0xDFFF).contains(&u);
        if is_high
            && b.get(i + 6) == Some(&b'\\')
            && b.get(i + 7) == Some(&b'u')
            && let Some(u2) = hex4(&b[i + 8..])
            && (0xDC00..=0xDFFF).contains(&u2)
        {
            i += 12; // a proper pair
            continue;
        }
        if is_high || is_low {
            let o = out.get_or_insert_with(|| Vec::with_capacity(b.len()));
            o.extend_from_slice(&b[copied..i]);
            o.extend_from_slice(b"\\ufffd");
            lone += 1;
            i += 6;
            copied = i;
            continue;
        }
        i += 6;
    }
    let body: Cow<'_, [u8]> = match out {
        Some(mut o) => {
            o.extend_from_slice(&b[copied..]);
            Cow::Owned(o)
        }
        None => match text {
            Cow::Borrowed(s) => Cow::Borrowed(s.as_bytes()),
            Cow::Owned(s) => Cow::Owned(s.into_bytes()),
        },
    };
    Repaired { body, invalid_utf8, lone_surrogates: lone }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn content(b: &[u8]) -> String {
        let v: Value = serde_json::from_slice(b).unwrap();
        v["c"].as_str().unwrap().to_owned()
    }

    #[test]
    fn lone_surrogates_become_replacement_characters() {
        // The issue's reply: a lone high surrogate before the verdict.
        let body = br#"{"c": "Nice \ud83d answer.\n[[A]]"}"#;
        assert!(serde_json::from_slice::<Value>(body).is_err(), "serde_json rejects it as is");
        let r = repair(body);
        assert_eq!((r.lone_surrogates, r.invalid_utf8), (1, 0));
        assert_eq!(content(&r.body), "Nice \u{FFFD} answer.\n[[A]]");
        // A proper pair, an escaped backslash before `u`, a lone low surrogate at the end.
        let body = br#"{"c": "\ud83d\ude00 \\ud83d \udc00"}"#;
        let r = repair(body);
        assert_eq!(r.lone_surrogates, 1);
        assert_eq!(content(&r.body), "\u{1F600} \\ud83d \u{FFFD}");
        // High then high: the first is lone, the second too (no low follows).
        let r = repair(br#"{"c": "\ud83d\ud83d!"}"#);
        assert_eq!(r.lone_surrogates, 2);
        assert_eq!(content(&r.body), "\u{FFFD}\u{FFFD}!");
        // Nothing to repair: borrowed, unchanged.
        let ok = br#"{"c": "fine \u00e9"}"#;
        let r = repair(ok);
        assert!(!r.changed() && matches!(r.body, Cow::Borrowed(_)));
    }

    #[test]
    fn invalid_utf8_becomes_replacement_characters() {
        let mut body = br#"{"c": "caf"#.to_vec();
        body.extend_from_slice(&[0xC3, 0x28]);
        body.extend_from_slice(br#" [[B]]"}"#);
        let r = repair(&body);
        assert_eq!((r.invalid_utf8, r.lone_surrogates), (1, 0));
        assert_eq!(content(&r.body), "caf\u{FFFD}( [[B]]");
    }
}

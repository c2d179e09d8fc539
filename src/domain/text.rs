//! Bytes as text, as other tools and platforms write it: a UTF-8 byte-order mark is dropped,
//! text in another encoding (UTF-16, UTF-32, Latin-1) is named as such with its line, and what
//! cannot be read as JSON Lines (a JSON array, a pretty-printed object, CSV) is named as such.
//! Pure functions: the readers of each file call them.

/// An answer's words: each run of whitespace (spaces, tabs, line breaks, no-break spaces) read
/// as one space, none at either end. Two answers with the same words are one text to a reader,
/// so a judge shown both can only show its position bias ("a  b\n" and "a b" are one text; "ab"
/// and "a b" are not).
pub fn words_of(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The bytes without a leading UTF-8 byte-order mark.
///
/// # Errors
/// A message for UTF-16 or UTF-32 text (a byte-order mark of those encodings).
pub fn strip_bom(bytes: &[u8]) -> Result<&[u8], crate::domain::invalid::InvalidInput> {
    if let Some(rest) = bytes.strip_prefix(&[0xEF, 0xBB, 0xBF]) {
        return Ok(rest);
    }
    if bytes.starts_with(&[0xFF, 0xFE]) || bytes.starts_with(&[0xFE, 0xFF]) {
        return Err("the file is UTF-16 text (it starts with a UTF-16 byte-order mark); save it as UTF-8".into());
    }
    if bytes.starts_with(&[0x00, 0x00, 0xFE, 0xFF]) {
        return Err("the file is UTF-32 text; save it as UTF-8".into());
    }
    Ok(bytes)
}

/// `bytes` as UTF-8 text without a byte-order mark.
///
/// # Errors
/// The 1-based line and a message: UTF-16 or UTF-32 text ([`strip_bom`]), or the first byte that
/// is not UTF-8 (its line and byte in the line).
pub fn utf8_text(bytes: &[u8]) -> Result<&str, (usize, String)> {
    let bytes = strip_bom(bytes).map_err(|m| (1, m.to_string()))?;
    std::str::from_utf8(bytes).map_err(|e| {
        let before = &bytes[..e.valid_up_to()];
        let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
        let start = before.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        (line, not_utf8(&bytes[start..], e.valid_up_to() - start))
    })
}

/// The message for a line whose byte at 0-based `at` is not UTF-8: its 1-based place in the
/// line and its value, and what the file is likely to be (gzip-compressed, or another encoding).
/// One wording for every reader of text files.
pub fn not_utf8(line: &[u8], at: usize) -> String {
    if line.starts_with(&[0x1F, 0x8B]) {
        return "the file is gzip-compressed (it starts with the gzip magic bytes 1F 8B); decompress it first (gunzip)"
            .into();
    }
    format!(
        "invalid UTF-8 at byte {} of the line (byte 0x{:02X}); the file is in another encoding (Latin-1, Windows-1252?): save it as UTF-8",
        at + 1,
        line.get(at).copied().unwrap_or(0)
    )
}

/// [`strip_bom`] for text already read as a string.
pub fn strip_bom_str(text: &str) -> &str {
    text.strip_prefix('\u{feff}').unwrap_or(text)
}

/// When a JSON Lines line is clearly not one JSON object, what it is instead: the start of a
/// JSON array (`[`), a pretty-printed object (`{` alone, or a line starting with a key), or a
/// CSV/TSV header.
pub fn not_json_lines(line: &str) -> Option<String> {
    let t = line.trim();
    if t.starts_with('[') {
        return Some(
            "the file looks like one JSON array; expected JSON Lines: one JSON object per line, no enclosing [ ]"
                .into(),
        );
    }
    if t == "{" || (t.starts_with('"') && t.contains("\":") && !t.starts_with('{')) {
        return Some(
            "the file looks like pretty-printed JSON; expected JSON Lines: each object on one line (e.g. `jq -c .`)"
                .into(),
        );
    }
    if !t.starts_with('{') && (t.contains(',') || t.contains('\t')) && !t.contains('{') {
        return Some("the line is not JSON (a CSV or TSV file?); expected JSON Lines: one JSON object per line".into());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boms_and_encodings() {
        assert_eq!(strip_bom(b"\xEF\xBB\xBF{}").unwrap(), b"{}");
        assert_eq!(strip_bom(b"{}").unwrap(), b"{}");
        assert!(strip_bom(b"\xFF\xFE{\0").unwrap_err().0.contains("UTF-16"));
        assert_eq!(strip_bom_str("\u{feff}name: x"), "name: x");
        assert_eq!(utf8_text(b"\xEF\xBB\xBFa\nb").unwrap(), "a\nb");
        let (line, msg) = utf8_text(b"ok\nna\xEFve").unwrap_err();
        assert_eq!(line, 2);
        assert!(msg.starts_with("invalid UTF-8 at byte 3 of the line (byte 0xEF)"), "{msg}");
        let (line, msg) = utf8_text(b"\x1F\x8B\x08\x00\xFF").unwrap_err();
        assert_eq!((line, msg.contains("gzip-compressed")), (1, true), "{msg}");
    }

    #[test]
    fn shapes_that_are_not_json_lines() {
        assert!(not_json_lines("[{\"a\": 1},").unwrap().contains("JSON array"));
        assert!(not_json_lines("{").unwrap().contains("pretty-printed"));
        assert!(not_json_lines("  \"pool_id\": \"p1\",").unwrap().contains("pretty-printed"));
        assert!(not_json_lines("a,b,y").unwrap().contains("CSV"));
        assert!(not_json_lines("{\"a\": \"x\", \"b\": \"y\", \"y\": 1}").is_none());
    }
}

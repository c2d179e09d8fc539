//! The append-only JSON Lines books (verdicts, intents, batch rounds) read alike: one record
//! per line, a blank line skipped, and a torn last line (a crash mid-write) dropped and cut off
//! when the file is next opened for appending, while a whole last record without its newline is
//! kept and its line ended. Each book parses its own records ([`scan`]) and words its own
//! warnings.

use std::fs::File;
use std::io::Write;

/// Why a line did not read as a record.
#[derive(Debug)]
pub enum LineError {
    /// Not JSON, not UTF-8, or JSON of another shape: at the end of the file, a torn write.
    Unreadable(String),
    /// Read JSON that ends early (`serde_json`'s EOF class): torn also when only whitespace
    /// follows its newline.
    Ended(String),
    /// A whole record that is wrong (a value out of range, a kind not known): never torn.
    Bad(String),
}

impl From<serde_json::Error> for LineError {
    fn from(e: serde_json::Error) -> Self {
        // Each line is parsed alone: serde_json's "at line 1 column N" would read as a second
        // line number beside the file's; its column is kept.
        let text = e.to_string();
        let text = match text.rfind(" at line ") {
            Some(i) if e.line() > 0 => format!("{} at column {}", &text[..i], e.column()),
            _ => text,
        };
        if e.is_eof() { Self::Ended(text) } else { Self::Unreadable(text) }
    }
}

/// The torn last line [`scan`] dropped.
#[derive(Debug, Clone, PartialEq)]
pub struct Torn {
    /// Its 1-based line number.
    pub line: usize,
    /// Its length in bytes (without a newline).
    pub bytes: usize,
    /// Why it did not read.
    pub error: String,
    /// Whether it had its newline (then only whitespace followed it, and its JSON ended early).
    pub terminated: bool,
}

/// What [`scan`] read.
#[derive(Debug)]
pub struct Scan<T> {
    /// The records, each with its 1-based line number.
    pub records: Vec<(usize, T)>,
    /// The length in bytes of the lines read (all of `bytes` but a torn last line).
    pub good_len: u64,
    /// The torn last line dropped, if any.
    pub torn: Option<Torn>,
}

/// Read `bytes` line by line with `parse` (each line without its newline; blank lines are
/// skipped). A line that does not read is torn, and ends the scan, when it is the last one and
/// has no newline ([`LineError::Unreadable`] or [`LineError::Ended`]), or when only whitespace
/// follows it and its JSON ended early ([`LineError::Ended`]).
///
/// # Errors
/// Any other line that does not read: its 1-based number and why.
pub fn scan<T>(bytes: &[u8], mut parse: impl FnMut(&[u8]) -> Result<T, LineError>) -> Result<Scan<T>, (usize, String)> {
    let mut records = Vec::new();
    let (mut start, mut line_no) = (0usize, 0usize);
    while start < bytes.len() {
        line_no += 1;
        let end = bytes[start..].iter().position(|b| *b == b'\n').map(|p| start + p);
        let next = end.map_or(bytes.len(), |e| e + 1);
        let line = &bytes[start..end.unwrap_or(bytes.len())];
        if !line.iter().all(u8::is_ascii_whitespace) {
            match parse(line) {
                Ok(r) => records.push((line_no, r)),
                Err(e) => {
                    let rest_blank = bytes[next..].iter().all(u8::is_ascii_whitespace);
                    let torn = |error: String, terminated: bool| Scan {
                        records: Vec::new(),
                        good_len: start as u64,
                        torn: Some(Torn { line: line_no, bytes: line.len(), error, terminated }),
                    };
                    return match e {
                        LineError::Unreadable(m) | LineError::Ended(m) if end.is_none() => {
                            Ok(Scan { records, ..torn(m, false) })
                        }
                        LineError::Ended(m) if rest_blank => Ok(Scan { records, ..torn(m, true) }),
                        LineError::Unreadable(m) | LineError::Ended(m) | LineError::Bad(m) => Err((line_no, m)),
                    };
                }
            }
        }
        start = next;
    }
    Ok(Scan { records, good_len: bytes.len() as u64, torn: None })
}

/// Make `file` (open for appending; its first `good_len` bytes were read whole) ready for the
/// next record: a torn tail is cut off (`torn`), and a whole last record without its newline
/// (`last_byte` is not `\n`) gets one, both synced.
///
/// # Errors
/// The file's I/O error.
pub fn end_or_cut(file: &mut File, good_len: u64, torn: bool, last_byte: Option<u8>) -> std::io::Result<()> {
    if torn {
        file.set_len(good_len)?;
        file.sync_all()
    } else if last_byte.is_some_and(|b| b != b'\n') {
        file.write_all(b"\n")?;
        file.sync_data()
    } else {
        Ok(())
    }
}

/// Now, in whole seconds since the Unix epoch (0 if the clock is before it): a book line's `ts`.
pub fn now_s() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn num(l: &[u8]) -> Result<u64, LineError> {
        let v: serde_json::Value = serde_json::from_slice(l)?;
        v["n"].as_u64().ok_or_else(|| LineError::Bad("no n".into()))
    }

    #[test]
    fn whole_lines_read_and_a_torn_tail_is_dropped() {
        let s = scan(b"{\"n\":1}\n\n{\"n\":2}\n{\"n\":", num).unwrap();
        assert_eq!(s.records, vec![(1, 1), (3, 2)]);
        assert_eq!(s.good_len, 17);
        let t = s.torn.unwrap();
        assert_eq!((t.line, t.bytes, t.terminated), (4, 5, false));
        // A whole record without its newline is kept.
        let s = scan(b"{\"n\":1}\n{\"n\":2}", num).unwrap();
        assert_eq!((s.records.len(), s.good_len, s.torn.is_none()), (2, 15, true));
        // A torn line whose newline was written, then only whitespace: torn.
        let s = scan(b"{\"n\":1}\n{\"n\":\n  \n", num).unwrap();
        assert_eq!((s.records.len(), s.good_len, s.torn.map(|t| t.terminated)), (1, 8, Some(true)));
        // Bytes that are not UTF-8 at the end, without a newline: torn; in the middle: an error.
        assert!(scan(b"{\"n\":1}\n{\"n\":\xff", num).unwrap().torn.is_some());
        assert_eq!(scan(b"{\"n\":\xff}\n{\"n\":1}\n", num).unwrap_err().0, 1);
        // A message names the line once, by the file's count, and the column within it (it read
        // "intents.jsonl:5: … at line 1 column 91": hunt 40 F4).
        let (line, msg) = scan(b"{\"n\":1}\n\n{\"n\": \"\xff\"}\n", num).unwrap_err();
        assert_eq!((line, msg.as_str()), (3, "invalid unicode code point at column 8"));
    }

    #[test]
    fn a_bad_record_is_an_error_even_at_the_end() {
        assert_eq!(scan(b"{\"n\":1}\n{\"m\":2}", num).unwrap_err(), (2, "no n".to_string()));
        // Broken JSON followed by more lines is damage, not a torn write.
        assert_eq!(scan(b"{\"n\":1\n{\"n\":2}\n", num).unwrap_err().0, 1);
    }

    #[test]
    fn a_torn_tail_is_cut_and_a_whole_one_ended() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("b.jsonl");
        for (content, torn, want) in [
            (&b"{\"n\":1}\n{\"n\""[..], true, &b"{\"n\":1}\n"[..]),
            (b"{\"n\":1}\n{\"n\":2}", false, b"{\"n\":1}\n{\"n\":2}\n"),
            (b"{\"n\":1}\n", false, b"{\"n\":1}\n"),
        ] {
            std::fs::write(&path, content).unwrap();
            let s = scan(content, num).unwrap();
            assert_eq!(s.torn.is_some(), torn);
            let mut f = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
            end_or_cut(&mut f, s.good_len, torn, content.last().copied()).unwrap();
            assert_eq!(std::fs::read(&path).unwrap(), want);
        }
    }
}

//! The one number format of messages and terminal output, shared by every layer.

/// `n` and its noun, singular for 1 (`1 verdict`, `0 verdicts`, `2 verdicts`); `noun` is the
/// singular and takes an `s`.
pub fn count(n: usize, noun: &str) -> String {
    if n == 1 { format!("1 {noun}") } else { format!("{n} {noun}s") }
}

/// The columns `s` takes on a terminal: a CJK character two, a combining mark none (Rust's
/// `{:<w$}` counts characters).
pub fn display_width(s: &str) -> usize {
    unicode_width::UnicodeWidthStr::width(s)
}

/// A text in a fixed-width terminal column: `{:<w$}` / `{:>w$}` pad it to `w` display columns
/// ([`display_width`]), so ids in CJK or with combining marks keep a table aligned.
pub struct Col<'a>(pub &'a str);

impl std::fmt::Display for Col<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let pad = " ".repeat(f.width().unwrap_or(0).saturating_sub(display_width(self.0)));
        match f.align() {
            Some(std::fmt::Alignment::Right) => write!(f, "{pad}{}", self.0),
            _ => write!(f, "{}{pad}", self.0),
        }
    }
}

/// `s` safe to print on a terminal: control characters other than newline and tab (an escape
/// sequence, a NUL, a carriage return from a judge's reply or an error body) are written as
/// `\u{1b}`, so text from a server cannot move the cursor or recolour the terminal; so are
/// the invisible characters [`invisible`] names (a zero-width space in an item id would
/// otherwise print as nothing, and a direction override reorders the line).
pub fn printable(s: &str) -> std::borrow::Cow<'_, str> {
    let escaped = |c: char| (c.is_control() && c != '\n' && c != '\t') || invisible(c);
    if !s.chars().any(escaped) {
        return std::borrow::Cow::Borrowed(s);
    }
    std::borrow::Cow::Owned(
        s.chars().map(|c| if escaped(c) { c.escape_unicode().to_string() } else { c.to_string() }).collect(),
    )
}

/// Characters that print as nothing or reorder what follows: zero-width space, left-to-right and
/// right-to-left marks, the bidirectional embeddings, overrides and isolates, word joiner and
/// invisible operators, and a byte-order mark inside a text. The zero-width (non-)joiners stay:
/// emoji sequences and some scripts need them.
pub fn invisible(c: char) -> bool {
    matches!(c, '\u{200b}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{2064}' | '\u{2066}'..='\u{2069}' | '\u{feff}')
}

/// Characters that print as nothing or break a line in a name: Unicode's default-ignorable code
/// points (the soft hyphen, combining grapheme joiner, Arabic letter mark, zero-width space and
/// (non-)joiners, direction marks and controls, word joiner and invisible operators, variation
/// selectors, byte-order mark, Hangul fillers, tag characters) and the line and paragraph
/// separators U+2028, U+2029. An id holding one prints like another id (`ab` and `a` + ZWJ +
/// `b`), so ids may not ([`crate::domain::pool::listed_id_problem`]).
pub fn ignorable(c: char) -> bool {
    matches!(
        c,
        '\u{ad}'
            | '\u{34f}'
            | '\u{61c}'
            | '\u{115f}'..='\u{1160}'
            | '\u{17b4}'..='\u{17b5}'
            | '\u{180b}'..='\u{180f}'
            | '\u{200b}'..='\u{200f}'
            | '\u{2028}'..='\u{202e}'
            | '\u{2060}'..='\u{206f}'
            | '\u{3164}'
            | '\u{fe00}'..='\u{fe0f}'
            | '\u{feff}'
            | '\u{ffa0}'
            | '\u{fff0}'..='\u{fff8}'
            | '\u{1bca0}'..='\u{1bca3}'
            | '\u{1d173}'..='\u{1d17a}'
            | '\u{e0000}'..='\u{e0fff}'
    )
}

/// `s` without the operating system's error numbers that follow its words (`No such file or
/// directory (os error 2)` reads `No such file or directory`): the words say it to a user.
pub fn without_os_error_numbers(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(at) = rest.find(" (os error ") {
        let tail = &rest[at + " (os error ".len()..];
        let digits = tail.chars().take_while(char::is_ascii_digit).count();
        out.push_str(&rest[..at]);
        if digits > 0 && tail[digits..].starts_with(')') {
            rest = &tail[digits + 1..];
        } else {
            out.push_str(" (os error ");
            rest = tail;
        }
    }
    out.push_str(rest);
    out
}

/// A value echoed in a message as the user wrote it: exact (the shortest form that reads back
/// as the same number), in exponent form beyond 1e16 or below 1e-5 (`1e300`, not 301 digits).
pub fn value(x: f64) -> String {
    let a = x.abs();
    if x.is_finite() && a != 0.0 && !(1e-5..1e16).contains(&a) { format!("{x:e}") } else { x.to_string() }
}

/// The one number format of terminal output for quantities that span many orders of magnitude
/// (nats, p-values, differences of log-likelihoods): 0 as `0`; magnitudes in [1e-3, 1e5) with 4
/// significant digits and no trailing zeros (`13.1`, `0.004812`, `272.9`); others in scientific
/// notation with 2 significant digits (`6.1e-6`, `1.2e7`).
pub fn num(x: f64) -> String {
    if x == 0.0 {
        return "0".into();
    }
    if !x.is_finite() {
        return x.to_string();
    }
    let a = x.abs();
    if !(1e-3..1e5).contains(&a) {
        return format!("{x:.1e}");
    }
    let digits = (3 - a.log10().floor() as i32).max(0) as usize;
    let s = format!("{x:.digits$}");
    if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.').to_string() } else { s }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn os_error_numbers_are_left_out_and_other_text_kept() {
        assert_eq!(
            without_os_error_numbers(
                "cannot read pool file a: No such file or directory (os error 2); b: Is a directory (os error 21)"
            ),
            "cannot read pool file a: No such file or directory; b: Is a directory"
        );
        assert_eq!(without_os_error_numbers("x (os error two) (os error 7"), "x (os error two) (os error 7");
    }

    #[test]
    fn control_characters_are_escaped_for_the_terminal() {
        assert_eq!(printable("plain\ttext\nline"), "plain\ttext\nline");
        assert_eq!(printable("\u{1b}[31mred\u{0}\r"), "\\u{1b}[31mred\\u{0}\\u{d}");
        assert!(matches!(printable("ok"), std::borrow::Cow::Borrowed(_)));
        // Invisible characters are shown (hunt 48: an id "z\u{200b}" printed as "z"); a
        // combining accent and an emoji sequence's joiner print as they are.
        assert_eq!(printable("z\u{200b} and \u{202e}abc"), "z\\u{200b} and \\u{202e}abc");
        assert_eq!(printable("e\u{301} 👩\u{200d}🔬"), "e\u{301} 👩\u{200d}🔬");
    }

    /// Values echoed as written: exact, and in exponent form at the extremes.
    #[test]
    fn echoed_values_are_exact_and_short() {
        assert_eq!(value(1e300), "1e300");
        assert_eq!(value(-1e300), "-1e300");
        assert_eq!(value(1e-300), "1e-300");
        assert_eq!(value(0.25), "0.25");
        assert_eq!(value(86400.5), "86400.5");
        assert_eq!(value(0.0), "0");
        assert_eq!(value(f64::NAN), "NaN");
        assert_eq!(value(123456789012345.0), "123456789012345");
    }

    #[test]
    fn a_count_of_one_is_singular() {
        assert_eq!(count(1, "verdict"), "1 verdict");
        assert_eq!(count(0, "verdict"), "0 verdicts");
        assert_eq!(count(204, "verdict"), "204 verdicts");
    }
}

#[cfg(test)]
mod width_tests {
    use super::{Col, display_width};

    /// Ids in CJK or with a combining mark keep a table's columns: padded by display columns.
    #[test]
    fn a_column_pads_by_display_width() {
        assert_eq!((display_width("abc"), display_width("模型"), display_width("e\u{301}")), (3, 4, 1));
        assert_eq!(format!("[{:<6}]", Col("模型")), "[模型  ]");
        assert_eq!(format!("[{:>6}]", Col("模型")), "[  模型]");
        assert_eq!(format!("[{:<4}]", Col("e\u{301}")), "[e\u{301}   ]");
        assert_eq!(format!("[{:<2}]", Col("long")), "[long]");
        assert_eq!(format!("[{}]", Col("x")), "[x]");
    }
}

//! Markdown text from data: ids, names, texts and paths that come from pools, configs, imports or
//! judges are escaped before they reach a `.md` file, so that a viewer shows them as written and
//! runs nothing (`<script>`, `[link](…)`, `|` breaking a table, `*`, `_`, a heading at a line
//! start). The `.html` reports escape for HTML on their own ([`super::page::escape`]).

/// `s` as literal Markdown inline text (also inside a table cell): every character CommonMark
/// or GFM could read as markup is backslash-escaped, and line breaks become spaces (a line break
/// would end a table row or a list item).
pub fn text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let chars: Vec<char> = s.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        // `_` between letters or digits (`pos_bias`) is no emphasis in CommonMark: left as is.
        let intraword =
            |i: usize| i > 0 && chars[i - 1].is_alphanumeric() && chars.get(i + 1).is_some_and(|n| n.is_alphanumeric());
        match c {
            '_' if intraword(i) => out.push(c),
            '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '|' | '~' | '&' | '#' | '!' | '$' => {
                out.push('\\');
                out.push(c);
            }
            '\n' | '\r' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// `s` as one inline code span: fenced by more backticks than any run of backticks in it (padded
/// with a space when it starts or ends with one), line breaks as spaces; a `|` is written `\|`
/// when `in_table` (GFM splits cells on it even inside code).
pub fn code(s: &str, in_table: bool) -> String {
    let flat: String = s.chars().map(|c| if c == '\n' || c == '\r' { ' ' } else { c }).collect();
    let flat = if in_table { flat.replace('|', "\\|") } else { flat };
    let longest = flat.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    let pad = if flat.starts_with('`') || flat.ends_with('`') { " " } else { "" };
    format!("{fence}{pad}{flat}{pad}{fence}")
}

/// A line of our own prose with data in it, written with `` ` `` around code (as the reports'
/// facts and notes are): the parts between backticks become code spans, the rest is escaped
/// with [`text`]. An odd backtick (from the data) leaves the rest as text.
pub fn prose(s: &str) -> String {
    let parts: Vec<&str> = s.split('`').collect();
    let mut out = String::new();
    let closed = parts.len() % 2 == 1;
    for (i, part) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        if i % 2 == 1 && (closed || !last) {
            out.push_str(&code(part, false));
        } else {
            if i % 2 == 1 {
                out.push_str("\\`");
            }
            out.push_str(&text(part));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_in_data_is_shown_not_run() {
        assert_eq!(text("<script>alert(1)</script>"), "\\<script\\>alert(1)\\</script\\>");
        assert_eq!(text("a|b *c* _d_ [e](f) ![g](h)"), "a\\|b \\*c\\* \\_d\\_ \\[e\\](f) \\!\\[g\\](h)");
        assert_eq!(text("# x\nline"), "\\# x line");
        assert_eq!(text("pos_bias 0.3, verb_per_word"), "pos_bias 0.3, verb_per_word", "intraword _ stays");
        assert_eq!(text("plain-id 0.52 -1"), "plain-id 0.52 -1", "nothing to escape");
        assert_eq!(code("a`b", false), "``a`b``");
        assert_eq!(code("`x", false), "`` `x ``");
        assert_eq!(code("a|b", true), "`a\\|b`");
        assert_eq!(prose("item `<b>` won"), "item `<b>` won", "inside code: literal");
        assert_eq!(prose("id <i> and `k`"), "id \\<i\\> and `k`");
        assert_eq!(prose("odd ` <x>"), "odd \\` \\<x\\>");
    }
}

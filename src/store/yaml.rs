//! The only YAML import (serde-saphyr, the maintained successor of serde_yaml).

use serde::Serialize;
use serde::de::DeserializeOwned;

/// A YAML text that does not parse into the expected shape, or a value that does not serialise:
/// the parser's message, with line, column and the dotted key (`model.lambda_theta`) where known.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct YamlError(pub String);

/// Parse YAML text; the error message carries line and column, and the key at that line as a
/// dotted path (`model.lambda_theta`) when the line is a block-mapping entry.
///
/// # Errors
/// The parser's message.
pub fn from_str<T: DeserializeOwned>(text: &str) -> Result<T, YamlError> {
    // `max_usd: !!null 0.05` reads as no value: the cap the line shows would be gone (hunt 56),
    // also with the value on the next line, or the tag spelled through a `%TAG` directive
    // (hunt 57). A null tag and a directive are refused wherever they stand.
    for (i, line) in text.lines().enumerate() {
        let bare = line.split(" #").next().unwrap_or(line);
        if bare.starts_with("%TAG") {
            return Err(YamlError(format!(
                "line {}: a `%TAG` directive renames YAML's tags; this file takes no tags: remove it",
                i + 1
            )));
        }
        if let Some(at) = bare.find("!!null").or_else(|| bare.find("!<tag:yaml.org,2002:null>")) {
            let rest = bare[at..].split_once(|c: char| c.is_whitespace()).map_or("", |(_, r)| r).trim();
            let said = if rest.is_empty() { String::new() } else { format!(" ({rest})") };
            return Err(YamlError(name_the_key(
                text,
                format!(
                    "line {} column {}: a `!!null` tag makes the value after it{said} empty; write the value without the tag, or `~` alone for none",
                    i + 1,
                    at + 1
                ),
            )));
        }
    }
    parse(text).map_err(|e| {
        // A type error at a `[` or `{` comes before the parser reaches the end of that flow
        // value: `k: [3` with no `]` reads as "found a list". The text is read once more for
        // syntax alone, and a syntax fault there is the one reported.
        let syntax = parse::<serde::de::IgnoredAny>(text).err();
        let e = match syntax {
            Some(syntax) if opens_flow(text, &e.to_string()) && !syntax.to_string().contains("non-finite") => syntax,
            _ => e,
        };
        let m = e.to_string();
        let m = m.strip_prefix("error: ").map(str::to_owned).unwrap_or(m);
        let m = within_text(text, m);
        // A syntax fault on a line after a `[` or `{` never closed is that bracket's: the parser
        // reads the lines below as part of the flow value and stops at the first that is not.
        if let Some((line, col)) = location(&m)
            && let Some((open, at_line, at_col)) = unclosed_bracket(text)
            && at_line < line
            && !m.contains("invalid type")
        {
            let stopped = m.lines().next().unwrap_or(&m).split_once(": ").map_or("", |(_, r)| r).to_string();
            let close = if open == '{' { '}' } else { ']' };
            return YamlError(name_the_key(
                text,
                format!(
                    "line {at_line} column {at_col}: the `{open}` opened here is never closed (close it with `{close}`; the parser read on to line {line} column {col}: {stopped})"
                ),
            ));
        }
        // Advice addressed to programmers using the parser, not to users of the file.
        let m = m
            .replace(", set DuplicateKeyPolicy in Options if acceptable", "")
            .replace(
                "multiple YAML documents detected; use from_str_multiple or from_str_multiple_with_options",
                "a second YAML document starts here (a `---` line): this file holds one document; remove the `---` and merge what follows into the first",
            )
            // serde's word for one of a setting's named values; `~` is YAML's own spelling of
            // the empty value.
            .replace("unknown variant `~`", "an empty value")
            // A tag such as `!env` is how other tools read the environment; this file's way is
            // `${VAR}` in paths and URLs and `api_key_env` for a key.
            .replace(
                "unsupported tag `",
                "this file takes no YAML tags (paths and URLs read the environment as `${VAR}`, a judge's key as `api_key_env: VAR`); found the tag `",
            )
            .replace("unknown variant `", "unknown value `");
        if let Some(tab) = tab_indent_message(text, &m) {
            return YamlError(tab);
        }
        let m = plain_number_message(text, m);
        // A missing field is reported where the parser gave up (another key of the mapping that
        // lacks it): name that mapping instead of pointing at an unrelated line.
        YamlError(if m.contains("missing field") { all_missing::<T>(text, &m) } else { name_the_key(text, m) })
    })
}

/// The parser as every file is read: a tag it does not know (`!env FOO`, `!secret`) is refused,
/// not dropped (a dropped `!env` tag would leave the text `FOO` where a value was meant), and a
/// tag on a key is refused (it would be ignored).
fn parse<T: DeserializeOwned>(text: &str) -> Result<T, serde_saphyr::Error> {
    let options = serde_saphyr::options! { reject_unsupported_tags: true, reject_tagged_field_names: true };
    serde_saphyr::from_str_with_options(text, options)
}

/// [`missing_field`] naming every field the mapping lacks: the parser names the first only, so
/// the text is read again with a stand-in value written for each field named (`field: 0`, or
/// `{}` or `[]` where the field holds a mapping or a list), until the mapping lacks no more or
/// a stand-in does not fit. A user who writes a new block learns its required fields in one
/// run, not one per run. Block mappings and an empty flow mapping (`{}`); inside another flow
/// mapping the first field is named.
fn all_missing<T: DeserializeOwned>(text: &str, msg: &str) -> String {
    let said = missing_field(text, msg);
    let field = |m: &str| Some(m.split("missing field `").nth(1)?.split('`').next()?.to_string());
    let (Some(first), Some((path, line))) = (field(&said), missing_mapping(text, msg)) else { return said };
    if path.is_some() && line.is_none() {
        return said;
    }
    // Where the parser points: at the `{` of an empty flow mapping, which each stand-in is
    // written just inside of.
    let (mut fields, mut patched, at) = (vec![first.clone()], text.to_string(), location(msg));
    'fields: while fields.len() < 64 {
        let last = fields.last().cloned().unwrap_or_default();
        for value in ["0", "{}", "[]"] {
            let Some(next) = with_field(&patched, line, at, &last, value) else { break 'fields };
            let again = match parse::<T>(&next) {
                Ok(_) => {
                    break 'fields;
                }
                Err(e) => e.to_string(),
            };
            let again = again.strip_prefix("error: ").unwrap_or(&again);
            // The same mapping (same message with one field name swapped) lacks another field.
            let named = again.contains("missing field").then(|| missing_field(&next, again));
            if let Some(named) = named
                && let Some(other) = field(&named)
                && !fields.contains(&other)
                && named.replace(&format!("`{other}`"), &format!("`{first}`")) == said
            {
                fields.push(other);
                patched = next;
                continue 'fields;
            }
        }
        break;
    }
    if fields.len() == 1 {
        return said;
    }
    let list = fields.iter().map(|f| format!("`{f}`")).collect::<Vec<_>>().join(", ");
    said.replacen(&format!("missing field `{first}`"), &format!("missing fields {list}"), 1)
}

/// `text` with `field: value` written into the mapping a "missing field" message names: at the
/// top (`line` `None`), below a `key:` line, after the `- key: …` line that opens a list item,
/// or inside the `{` the message points at (`at`, as line and column); `None` for another
/// flow mapping.
fn with_field(text: &str, line: Option<usize>, at: Option<(usize, usize)>, field: &str, value: &str) -> Option<String> {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    if let Some((l, c)) = at
        && let Some(open) = lines.get_mut(l.wrapping_sub(1))
        && open.chars().nth(c.wrapping_sub(1)) == Some('{')
    {
        let (head, tail): (String, String) = (open.chars().take(c).collect(), open.chars().skip(c).collect());
        let sep = if tail.trim_start().starts_with('}') { "" } else { ", " };
        *open = format!("{head}{field}: {value}{sep}{tail}");
        return Some(lines.join("\n") + "\n");
    }
    let Some(line) = line else { return Some(format!("{field}: {value}\n{text}")) };
    let lines: Vec<&str> = text.lines().collect();
    let l = lines.get(line.checked_sub(1)?)?;
    let indent = |s: &str| s.len() - s.trim_start().len();
    let bare = l.split(" #").next().unwrap_or(l).trim_end();
    let at = if bare.trim_start().starts_with("- ") && !bare.contains(['{', '[']) {
        indent(l) + 2
    } else if bare.ends_with(':') {
        let next = lines[line..].iter().find(|n| !n.trim().is_empty() && !n.trim_start().starts_with('#'));
        next.map(|n| indent(n)).filter(|i| *i > indent(l)).unwrap_or(indent(l) + 2)
    } else {
        return None;
    };
    let mut out: Vec<String> = lines.iter().map(|s| (*s).to_string()).collect();
    out.insert(line, format!("{}{field}: {value}", " ".repeat(at)));
    Some(out.join("\n") + "\n")
}

/// The parser's "found a tab" points where its scan stopped (the end of the line before, with
/// that line's key); the fault is a line indented with a tab: name that line and what to do.
fn tab_indent_message(text: &str, msg: &str) -> Option<String> {
    if !msg.contains("found a tab") {
        return None;
    }
    let from = location(msg).map_or(1, |(line, _)| line.max(1));
    let lines: Vec<&str> = text.lines().collect();
    let tabbed = |i: &usize| lines[*i].chars().take_while(|c| c.is_whitespace()).any(|c| c == '\t');
    let i = (from - 1..lines.len()).find(tabbed).or_else(|| (0..lines.len()).find(tabbed))?;
    Some(format!(
        "line {}: a tab indents this line ({:?}); YAML indents with spaces only: replace the tab with spaces",
        i + 1,
        lines[i]
    ))
}

/// The parser says "invalid u64" (or i64, f64, …) for a value that is not a number of that
/// kind: say what was expected and what was found, in words.
fn plain_number_message(text: &str, msg: String) -> String {
    // `.nan`, `.inf` (YAML's words for them) are refused wherever a setting is read.
    const NON_FINITE: &str = " rejected by the configured policy";
    if let Some(at) = msg.find("non-finite float `")
        && msg[at..].contains(NON_FINITE)
    {
        let v = msg[at + "non-finite float `".len()..].split('`').next().unwrap_or("").to_string();
        let raw = format!("non-finite float `{v}`{NON_FINITE}");
        let words = if v.parse::<f64>().is_ok_and(f64::is_infinite) && !v.contains(['i', 'I']) {
            format!("{v} is too large (a finite number, at most 1.7e308)")
        } else {
            format!("expected a finite number, found {v} (not a number or infinite)")
        };
        return msg.replace(&raw, &words);
    }
    // (the parser's words, ours, the largest value of the type when it is a whole number)
    const KINDS: [(&str, &str, Option<u64>); 9] = [
        ("invalid floating point", "a number", None),
        ("invalid u64", "a whole number ≥ 0", Some(u64::MAX)),
        ("invalid u32", "a whole number ≥ 0", Some(u32::MAX as u64)),
        ("invalid u16", "a whole number ≥ 0", Some(u16::MAX as u64)),
        ("invalid u8", "a whole number ≥ 0", Some(u8::MAX as u64)),
        ("invalid usize", "a whole number ≥ 0", Some(usize::MAX as u64)),
        ("invalid i64", "a whole number", Some(i64::MAX as u64)),
        ("invalid i32", "a whole number", Some(i32::MAX as u64)),
        ("invalid f64", "a number", None),
    ];
    let Some((raw, expected, max)) = KINDS.iter().find(|(k, _, _)| msg.contains(k)) else {
        return shape_message(text, msg);
    };
    let words = match (value_at(text, &msg), max) {
        // A whole number too large for the setting: say so, with the largest it takes.
        (Some(v), Some(max))
            if !v.is_empty()
                && v.chars().all(|c| c.is_ascii_digit())
                && v.parse::<u128>().map_or(true, |n| n > u128::from(*max)) =>
        {
            format!("{v} is too large (at most {max})")
        }
        // Digits the parser read as text (a `!!str` tag): say that it is text.
        (Some(v), Some(_)) if !v.is_empty() && v.chars().all(|c| c.is_ascii_digit()) => {
            format!(
                "expected {expected}, found the text {v:?} (a tag such as `!!str` makes it text; write the number alone)"
            )
        }
        // A number too large for a 64-bit float (`1e400`): say so, with the largest.
        (Some(v), None) if v.parse::<f64>().is_ok_and(f64::is_infinite) => {
            format!("{v} is too large (a finite number, at most 1.7e308)")
        }
        (Some(v), _) => format!("expected {expected}, found {v:?}"),
        (None, _) => format!("expected {expected}"),
    };
    msg.replace(raw, &words)
}

/// The parser's words for a value of the wrong shape ("expected mapping start", "expected
/// sequence start", "invalid boolean") in the user's terms, with the value found.
fn shape_message(text: &str, msg: String) -> String {
    const SHAPES: [(&str, &str); 7] = [
        ("expected mapping start", "a mapping of keys (`{key: value, …}`, or keys indented below)"),
        ("expected sequence start", "a list (`- item` lines, or `[a, b]`)"),
        // The parser's message for the strict booleans ("invalid boolean (strict mode expects
        // true/false)") starts with these words too.
        ("invalid boolean (strict mode expects true/false)", "true or false"),
        ("invalid boolean", "true or false"),
        ("expected string scalar", "a single value (a number, a word or a quoted text)"),
        ("externally tagged enum expected scalar or mapping", "a name (or `name: {…}`)"),
        ("expected string key for externally tagged enum", "one kind named as its key (`name: {…}`)"),
    ];
    if msg.contains("cannot deserialize null into string") {
        return msg.replace(
            "cannot deserialize null into string; use Option<String>",
            "expected a text, found an empty value (null)",
        );
    }
    if let Some(m) = serde_type_message(&msg) {
        return m;
    }
    let Some((raw, expected)) = SHAPES.iter().find(|(k, _)| msg.contains(k)) else { return msg };
    // These two messages are given for a value that is not a single one: one that reads as a
    // single value is the first item of a list on the lines below (where the parser points).
    let not_single = raw.starts_with("expected string") || raw.starts_with("externally");
    let words = match found_at(text, &msg) {
        Some(found) if not_single && found.starts_with('"') => format!("expected {expected}, found a list"),
        Some(found) => format!("expected {expected}, found {found}"),
        None => format!("expected {expected}"),
    };
    msg.replace(raw, &words)
}

/// Serde's "invalid type: sequence, expected …" (from a hand-written visitor) in the order and
/// words of the other messages: "expected …, found a list".
fn serde_type_message(msg: &str) -> Option<String> {
    let t = crate::domain::serde_words::invalid_type(msg, &crate::domain::serde_words::YAML)?;
    let sep = if t.after.is_empty() { "" } else { "\n" };
    Some(format!("{}expected {}, found {}{sep}{}", t.before, t.expected, t.found, t.after))
}

/// What is written at the parser's location, in words: "a list", "a mapping", or the value in
/// quotes; a value on the lines below its key is a list when they start with `- `.
fn found_at(text: &str, msg: &str) -> Option<String> {
    // `key:` alone on its line, with the lines below not indented further: its value is empty
    // (the keys meant for it are its siblings), not the mapping those lines look like.
    if let Some((line, _)) = location(msg)
        && let Some(l) = text.lines().nth(line.saturating_sub(1))
    {
        let indent = |s: &str| s.len() - s.trim_start().len();
        let bare = l.split(" #").next().unwrap_or(l).trim_end();
        let next = text.lines().skip(line).find(|n| !n.trim().is_empty() && !n.trim_start().starts_with('#'));
        if bare.ends_with(':') && !bare.trim_start().starts_with("- ") && next.is_none_or(|n| indent(n) <= indent(l)) {
            return Some(format!(
                "nothing: `{}` has no value (the lines below it are not indented further than it)",
                bare.trim()
            ));
        }
    }
    match value_at(text, msg) {
        // The parser stops at the `:` or closing brace after a key of a flow mapping without a
        // value (`{mock: }`).
        Some(v) if v.starts_with([':', '}', ',']) => Some("nothing: the key before it has no value".into()),
        Some(v) if v.starts_with('[') || v.starts_with("- ") || v == "-" => Some("a list".into()),
        Some(v) if v.starts_with('{') || v.ends_with(':') || v.contains(": ") => Some("a mapping".into()),
        Some(v) => Some(format!("{v:?}")),
        None => {
            let (line, _) = location(msg)?;
            let next = text.lines().skip(line).find(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))?;
            let next = next.trim_start();
            Some(if next.starts_with("- ") || next == "-" { "a list".into() } else { "a mapping".into() })
        }
    }
}

/// The value written at the parser's "line N column M", as written inside its quotes (a `--set`
/// value is written back quoted).
fn value_at(text: &str, msg: &str) -> Option<String> {
    let (line, col) = location(msg)?;
    let l = text.lines().nth(line.checked_sub(1)?)?;
    let rest: String = l.chars().skip(col.checked_sub(1)?).collect();
    // A quoted value runs to its closing quote (a `#` or `,` inside it is text).
    if let Some(q) = rest.chars().next().filter(|c| *c == '"' || *c == '\'')
        && let Some(end) = rest[1..].find(q)
    {
        let v = rest[1..=end].to_string();
        return (!v.is_empty()).then_some(v);
    }
    // In a flow collection (`{a: 1, b: x}`) a `,`, `}` or `]` ends the value; in block style a
    // plain value runs to a ` #` comment (hunt 52: `max_usd: 0,5` was said as found "0").
    let before: String = l.chars().take(col - 1).collect();
    let v = if before.contains(['{', '[']) {
        rest.split(['#', ',', '}', ']']).next()?.trim()
    } else {
        rest.split(" #").next()?.trim()
    };
    let v = v.strip_prefix('"').and_then(|x| x.strip_suffix('"')).unwrap_or(v);
    let mut v = v.strip_prefix('\'').and_then(|x| x.strip_suffix('\'')).unwrap_or(v).to_string();
    // A plain value goes on over the lines indented further than its own (YAML folds them into
    // it with spaces): `k: 3` above a mis-indented `  pool: 1` is the value "3 pool: 1".
    if !v.is_empty() && !rest.starts_with(['"', '\'', '{', '[']) {
        let indent = |s: &str| s.len() - s.trim_start().len();
        let own = indent(l);
        for next in text.lines().skip(line) {
            let t = next.trim();
            if t.is_empty() || t.starts_with('#') || indent(next) <= own {
                break;
            }
            v.push(' ');
            v.push_str(t.split(" #").next().unwrap_or(t).trim());
        }
    }
    (!v.is_empty()).then_some(v)
}

/// "missing field `k` at the top level" / "… in `judge.openai`", without the parser's excerpt
/// (its caret marks where parsing stopped, not where the key belongs).
fn missing_field(text: &str, msg: &str) -> String {
    let first = msg.lines().next().unwrap_or(msg);
    let Some(at) = first.find("missing field") else { return msg.to_string() };
    let what = first[at..].trim_end();
    match missing_mapping(text, msg) {
        Some((Some(m), Some(line))) => format!("line {line}: {what} in `{m}`"),
        Some((Some(m), None)) => format!("{what} in `{m}`"),
        Some((None, _)) => format!("{what} at the top level of the document"),
        None => what.to_string(),
    }
}

/// The mapping a "missing field" message is about (`None`: the top level) and the line it starts
/// on, where known.
fn missing_mapping(text: &str, msg: &str) -> Option<(Option<String>, Option<usize>)> {
    location(msg).and_then(|(line, col)| {
        let path = key_path_at(text, line)?;
        // Inside a flow mapping (`prior: {kappa: {sd: 0.4}}`) the parser points at a key of the
        // mapping that lacks the field: the innermost mapping open at that column, on this line.
        // An empty one (`price: {}`) is pointed at by its `{`.
        let l = text.lines().nth(line - 1).unwrap_or("");
        let col = if l.chars().nth(col.saturating_sub(1)) == Some('{') { col + 1 } else { col };
        if let Some(keys) = open_flow_keys(l, col) {
            return Some((Some(below(&path, &keys)), Some(line)));
        }
        Some(match path.rsplit_once('.') {
            Some((parent, _)) => (Some(parent.to_string()), line_of_key(text, parent)),
            None => (None, None),
        })
    })
}

/// The message's "line N column M" moved to the value it is about: past the end of the text
/// (where the parser stopped, after the last line) or of its line, the location of its excerpt
/// (`--> <input>:L:C`) or the value of the line's key; for a value of the wrong shape written on
/// its key's line, that value rather than the next key, where the parser read on to.
fn within_text(text: &str, msg: String) -> String {
    let Some((line, col)) = location(&msg) else { return msg };
    let excerpt = msg.split("--> ").nth(1).and_then(|r| {
        let mut parts = r.lines().next()?.rsplitn(3, ':');
        let c: usize = parts.next()?.trim().parse().ok()?;
        let l: usize = parts.next()?.trim().parse().ok()?;
        Some((l, c))
    });
    // The excerpt marks the end of the value where the header gives the start of what follows.
    let ends_a_line =
        |(l, c): (usize, usize)| text.lines().nth(l.wrapping_sub(1)).is_some_and(|t| c > t.chars().count());
    let (mut l, mut c) = match excerpt {
        Some(at) if line > text.lines().count() || (at != (line, col) && ends_a_line(at)) => at,
        _ => (line, col),
    };
    // A value of the wrong shape written on its key's line (`judge: mock`) is pointed at where
    // the parser read on to: the start of the next key, at the same indent or less.
    let lines: Vec<&str> = text.lines().collect();
    let indent = |s: &str| s.len() - s.trim_start().len();
    let meaningful = |s: &&str| !s.trim().is_empty() && !s.trim_start().starts_with('#');
    if (msg.contains("expected mapping start") || msg.contains("expected sequence start"))
        && let Some(here) = lines.get(l.wrapping_sub(1))
        && c == indent(here) + 1
        && let Some(p) = (0..l - 1).rev().find(|&i| meaningful(&lines[i]))
        && indent(lines[p]) >= indent(here)
        && let bare = lines[p].split(" #").next().unwrap_or("")
        && let Some((key, value)) = bare.split_once(": ")
        && !value.trim().is_empty()
    {
        let start = key.len() + 2 + value.len() - value.trim_start().len();
        (l, c) = (p + 1, bare[..start].chars().count() + 1);
    }
    let Some(text_line) = text.lines().nth(l.saturating_sub(1)) else { return msg };
    // Past the end of its line (`judge: mock`, column 13 of 11): the value of the line's key.
    let chars = text_line.chars().count();
    let value = text_line.find(": ").map(|at| {
        text_line[..at + 2].chars().count() + text_line[at + 2..].chars().take_while(|c| *c == ' ').count() + 1
    });
    let c = match value {
        Some(v) if c > chars && v <= chars => v,
        _ => c,
    };
    msg.replacen(&format!("line {line} column {col}"), &format!("line {l} column {c}"), 1)
}

/// The first flow bracket (`[` or `{`) of `text` that is never closed, with its 1-based line and
/// column. A bracket opens a flow value where a value starts (after `key: `, `- `, or at the
/// start of a line) or inside another flow value; quoted text and comments are skipped.
fn unclosed_bracket(text: &str) -> Option<(char, usize, usize)> {
    let indent = |s: &str| s.len() - s.trim_start().len();
    let mut open: Vec<(char, usize, usize)> = Vec::new();
    let mut quote: Option<char> = None;
    // The indentation of a `key: |` (or `>`) line while its block scalar's lines are read.
    let mut block_scalar: Option<usize> = None;
    for (i, line) in text.lines().enumerate() {
        if let Some(at) = block_scalar {
            if line.trim().is_empty() || indent(line) > at {
                continue;
            }
            block_scalar = None;
        }
        let chars: Vec<char> = line.chars().collect();
        // Whether a value may start here: at the line's start, after `- `, `: `, or inside a
        // flow value after `[`, `{` or `,`.
        let mut value_start = true;
        for (j, &c) in chars.iter().enumerate() {
            if let Some(q) = quote {
                let escaped = q == '"' && j > 0 && chars[j - 1] == '\\';
                if c == q && !escaped {
                    quote = None;
                }
                continue;
            }
            let in_flow = !open.is_empty();
            match c {
                '#' if j == 0 || chars[j - 1].is_whitespace() => break,
                ' ' | '\t' => {}
                '"' | '\'' if value_start => {
                    quote = Some(c);
                    value_start = false;
                }
                '[' | '{' if in_flow || value_start => {
                    open.push((c, i + 1, j + 1));
                    value_start = true;
                }
                ']' | '}' if in_flow => {
                    open.pop();
                    value_start = false;
                }
                ',' if in_flow => value_start = true,
                // `- ` starts an item only where a value may start; `: ` and `? ` anywhere.
                '-' if value_start && chars.get(j + 1).is_none_or(|n| n.is_whitespace()) => {}
                ':' | '?' if chars.get(j + 1).is_none_or(|n| n.is_whitespace()) => value_start = true,
                _ => value_start = false,
            }
        }
        let bare = line.split(" #").next().unwrap_or(line).trim_end();
        let bare = bare.trim_end_matches(['-', '+', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9']);
        if open.is_empty()
            && quote.is_none()
            && (bare.ends_with(" |") || bare.ends_with(" >") || bare == "|" || bare == ">")
        {
            block_scalar = Some(indent(line));
        }
    }
    open.first().copied()
}

/// Whether the value at a parser message's location opens a flow list or mapping (`[` or `{`,
/// as the value itself or after the key the location names).
fn opens_flow(text: &str, msg: &str) -> bool {
    let m = msg.strip_prefix("error: ").unwrap_or(msg);
    let Some((line, col)) = location(m) else { return false };
    let Some(l) = text.lines().nth(line.saturating_sub(1)) else { return false };
    let rest: String = l.chars().skip(col.saturating_sub(1)).collect();
    let value = match rest.split_once(": ") {
        Some((key, v)) if !rest.starts_with(['[', '{']) && !key.contains(['[', '{']) => v,
        _ => &rest,
    };
    value.trim_start().trim_start_matches("- ").starts_with(['[', '{'])
}

/// "line N column M" at the start of a parser message.
fn location(msg: &str) -> Option<(usize, usize)> {
    let rest = msg.strip_prefix("line ")?;
    let mut words = rest.split_whitespace();
    let line = words.next()?.parse().ok()?;
    (words.next()? == "column").then_some(())?;
    let col = words.next()?.trim_end_matches(':').parse().ok()?;
    Some((line, col))
}

/// [`from_str`] for the text of `path`: the excerpt names the file instead of `<input>`.
///
/// # Errors
/// The parser's message.
pub fn from_file_text<T: DeserializeOwned>(text: &str, path: &std::path::Path) -> Result<T, YamlError> {
    from_str(text).map_err(|e| YamlError(e.0.replace("--> <input>:", &format!("--> {}:", path.display()))))
}

/// Insert "(key `a.b`)" after the message's leading "line N column M".
fn name_the_key(text: &str, msg: String) -> String {
    let Some(rest) = msg.strip_prefix("line ") else { return msg };
    let Some(line) = rest.split_whitespace().next().and_then(|n| n.parse::<usize>().ok()) else { return msg };
    let Some(mut path) = key_path_at(text, line) else { return msg };
    // Inside a flow mapping (`budget: {max_usd: 1e400}`) the key is the last `name:` before
    // the column the parser points at.
    // An unknown or repeated key is named in the mapping that holds it (the parser points at
    // the key itself): `certify: {eps: 0.1}` → `certify.eps`.
    let own_key = ["unknown field `", "duplicate mapping key: "]
        .iter()
        .find_map(|p| msg.find(p).map(|at| &msg[at + p.len()..]))
        .map(|r| r.split(['`', '\n', ' ', ',']).next().unwrap_or("").to_string())
        .filter(|k| !k.is_empty());
    if let Some((_, col)) = location(&msg) {
        let l = text.lines().nth(line - 1).unwrap_or("");
        let col = if own_key.is_none() { flow_value_of_key_at(l, col).unwrap_or(col) } else { col };
        match &own_key {
            // In block style the line's own key is the one named.
            Some(k) if flow_scan(l, col).is_some() => {
                let mut keys = open_flow_keys(l, col).unwrap_or_default();
                keys.push(k.clone());
                path = below(&path, &keys);
            }
            Some(_) => {}
            None => match flow_key_before(l, col) {
                Some(inner) => path = below(&path, &inner),
                // A block mapping or sequence where one value is expected: the parser points
                // at its first entry, whose key (or index) is not the one at fault.
                None if flow_scan(l, col).is_none()
                    && !matches!(l.chars().nth(col.saturating_sub(1)), Some('{' | '['))
                    && !key_of_block_list(text, line, &msg)
                    && msg
                        .lines()
                        .next()
                        .is_some_and(|f| f.ends_with("found a mapping") || f.ends_with("found a list")) =>
                {
                    if let Some(cut) = path.rfind(['.', '[']) {
                        path.truncate(cut);
                    }
                }
                None => {}
            },
        }
    }
    match msg.find(':') {
        Some(colon) if !path.is_empty() => format!("{} (key `{path}`){}", &msg[..colon], &msg[colon..]),
        _ => msg,
    }
}

/// Whether 1-based line `line` of `text` is a key alone on its line with a block list below
/// (`refit_every:` then `- 1`) and `msg` says a list was found: a parser reading the value with
/// its own visitor points at that key, which is the one at fault (its own reader points at the
/// list's first entry).
fn key_of_block_list(text: &str, line: usize, msg: &str) -> bool {
    let Some(l) = text.lines().nth(line.saturating_sub(1)) else { return false };
    let bare = l.split(" #").next().unwrap_or(l).trim();
    let bare = bare.strip_prefix("- ").unwrap_or(bare);
    let next = text.lines().skip(line).find(|n| !n.trim().is_empty() && !n.trim_start().starts_with('#'));
    msg.lines().next().is_some_and(|f| f.ends_with("found a list"))
        && bare.ends_with(':')
        && !bare.contains(": ")
        && next.is_some_and(|n| n.trim_start().starts_with("- ") || n.trim() == "-")
}

/// When 1-based column `col` of `line` starts a key whose value is a flow list or mapping on the
/// same line (`seed: [1]`, `{refit_every: [1]}`), the column of that value: a parser reading the
/// value with its own visitor points at the key, and the value is what is at fault.
fn flow_value_of_key_at(line: &str, col: usize) -> Option<usize> {
    let chars: Vec<char> = line.chars().collect();
    let start = col.checked_sub(1)?;
    let mut i = start;
    while i < chars.len() && !matches!(chars[i], ':' | ' ' | '{' | '[' | ',' | '}' | ']') {
        i += 1;
    }
    if i == start || chars.get(i) != Some(&':') {
        return None;
    }
    let value = (i + 1..chars.len()).find(|&j| chars[j] != ' ')?;
    matches!(chars[value], '[' | '{').then_some(value + 1)
}

/// The keys of the flow mappings (`{a: {b: …}}`) that enclose 1-based column `col` of `line`,
/// outermost first, ending with the key whose value is at `col`.
fn flow_key_before(line: &str, col: usize) -> Option<Vec<String>> {
    let (stack, last_key) = flow_scan(line, col)?;
    // A value in a flow sequence is named by its index (`list[2]`).
    let in_seq = matches!(stack.last(), Some(Flow::Seq(..)));
    let mut keys = segments(stack);
    match last_key {
        Some(k) => keys.push(k),
        None if in_seq => {}
        None => return None,
    }
    keys.retain(|k| !k.is_empty());
    (!keys.is_empty()).then_some(keys)
}

/// The keys of the flow mappings still open at 1-based column `col` of `line`, outermost first
/// (`prior: {kappa: {sd: 0.4}}` at `sd` gives `["kappa"]`: the first `{` is the value of the
/// line's block key); `None` when no flow mapping is open there.
fn open_flow_keys(line: &str, col: usize) -> Option<Vec<String>> {
    let (stack, _) = flow_scan(line, col)?;
    (!stack.is_empty()).then(|| segments(stack))
}

/// A flow collection open at a column: a mapping (the key it is the value of, `None` when it is
/// not a key's value) or a sequence (its key, and the index of the entry the column is in).
enum Flow {
    Map(Option<String>),
    Seq(Option<String>, usize),
}

/// The key path the open flow collections spell, outermost first: `{covariates: [{…`, at the
/// second entry, gives `["covariates[1]"]`.
fn segments(stack: Vec<Flow>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for f in stack {
        let (k, i) = match f {
            Flow::Map(k) => (k, None),
            Flow::Seq(k, i) => (k, Some(i)),
        };
        match (k.filter(|k| !k.is_empty()), i) {
            (Some(k), None) => out.push(k),
            (None, None) => {}
            (Some(k), Some(i)) => out.push(format!("{k}[{i}]")),
            (None, Some(i)) => match out.last_mut() {
                Some(last) => last.push_str(&format!("[{i}]")),
                None => out.push(format!("[{i}]")),
            },
        }
    }
    out
}

/// `base` with the flow keys `inner` below it: `model` and `["[0]", "transform"]` give
/// `model[0].transform`.
fn below(base: &str, inner: &[String]) -> String {
    inner.iter().fold(base.to_string(), |acc, k| if k.starts_with('[') { acc + k } else { format!("{acc}.{k}") })
}

/// Scan `line` from its first `{` or `[` up to 1-based column `col`: the flow collections still
/// open there, and the key whose value is at `col`.
fn flow_scan(line: &str, col: usize) -> Option<(Vec<Flow>, Option<String>)> {
    let chars: Vec<char> = line.chars().collect();
    let end = col.checked_sub(1)?.min(chars.len());
    let open = chars[..end].iter().position(|&c| c == '{' || c == '[')?;
    let mut stack: Vec<Flow> = Vec::new();
    let mut word = String::new();
    let mut last_key: Option<String> = None;
    for &c in &chars[open..end] {
        match c {
            '{' => {
                stack.push(Flow::Map(last_key.take()));
                word.clear();
            }
            '[' => {
                stack.push(Flow::Seq(last_key.take(), 0));
                word.clear();
            }
            '}' | ']' => {
                stack.pop();
                last_key = None;
                word.clear();
            }
            ':' => {
                last_key = Some(word.trim().trim_matches(['"', '\'']).to_string());
                word.clear();
            }
            ',' => {
                if let Some(Flow::Seq(_, i)) = stack.last_mut() {
                    *i += 1;
                }
                last_key = None;
                word.clear();
            }
            c => word.push(c),
        }
    }
    Some((stack, last_key))
}

/// The dotted key path of the block-mapping entry on 1-based line `line`, from indentation; an
/// entry of a block sequence is named by its index from 0 (`judges[1].weight`).
fn key_path_at(text: &str, line: usize) -> Option<String> {
    let lines: Vec<&str> = text.lines().collect();
    // (column of the key, the key, the column of the entry's "- " if the line starts one)
    let key_of = |l: &str| -> Option<(usize, String, Option<usize>)> {
        let indent = l.len() - l.trim_start().len();
        let rest = l.trim_start();
        let (col, body, dash) = match rest.strip_prefix("- ") {
            Some(b) => (indent + 2 + (b.len() - b.trim_start().len()), b.trim_start(), Some(indent)),
            None => (indent, rest, None),
        };
        if body.starts_with('#') || body.starts_with('{') {
            return None;
        }
        let colon = body.find(':')?;
        let key = body[..colon].trim().trim_matches('"').trim_matches('\'');
        let plain = !key.is_empty() && key.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '-');
        plain.then(|| (col, key.to_owned(), dash))
    };
    let blank = |l: &str| l.trim().is_empty() || l.trim_start().starts_with('#');
    let dash_of = |l: &str| -> Option<usize> {
        let indent = l.len() - l.trim_start().len();
        (l.trim_start().starts_with("- ") || l.trim() == "-").then_some(indent)
    };
    let first = lines.get(line.checked_sub(1)?)?;
    let (mut indent, key, mut dash) = match key_of(first) {
        Some(k) => k,
        // An item of a block sequence that is no `key:` line (`- {name: words}`, `- 1`): the
        // item.
        None => (dash_of(first)? + 2, String::new(), dash_of(first)),
    };
    // From the entry up to the top: keys, and "[i]" for an item of a sequence.
    let mut up = if key.is_empty() { Vec::new() } else { vec![key] };
    let mut at = line - 1;
    loop {
        let parent = if let Some(d) = dash {
            // The entry is item i of a sequence: count the items before it at the same column,
            // up to the key that holds the sequence.
            let mut i = 0;
            let mut holder = None;
            for (n, l) in lines[..at].iter().enumerate().rev() {
                if blank(l) {
                    continue;
                }
                let ind = l.len() - l.trim_start().len();
                if dash_of(l) == Some(d) {
                    i += 1;
                } else if ind < d || (ind == d && dash_of(l).is_none()) {
                    holder = Some(n);
                    break;
                }
            }
            up.push(format!("[{i}]"));
            holder
        } else if indent == 0 {
            None
        } else {
            // The key above that holds this one, or the "- " that starts the item this key is
            // an entry of (a key at the same column).
            let above = lines[..at].iter().enumerate().rev().find_map(|(n, l)| {
                let (c, _, dd) = key_of(l).filter(|_| !blank(l))?;
                (c < indent || (c == indent && dd.is_some())).then_some((n, c == indent))
            });
            match above {
                Some((n, true)) => {
                    (dash, at) = (key_of(lines[n]).and_then(|(_, _, dd)| dd), n);
                    continue;
                }
                other => other.map(|(n, _)| n),
            }
        };
        let Some(n) = parent else { break };
        let Some((c, k, dd)) = key_of(lines[n]) else { break };
        up.push(k);
        (indent, dash, at) = (c, dd, n);
    }
    up.reverse();
    let mut path = String::new();
    for seg in up {
        if !path.is_empty() && !seg.starts_with('[') {
            path.push('.');
        }
        path.push_str(&seg);
    }
    Some(path)
}

/// The 1-based line where dotted key path `key` (`judges[0].prior.kappa.mean`) is written in
/// `text`: the line of its block key, or of the nearest enclosing block key when the rest is in
/// a flow mapping (`prior: {kappa: {mean: 30, sd: 1}}`); `None` when no part of it is written.
pub fn line_of_key(text: &str, key: &str) -> Option<usize> {
    let n = text.lines().count();
    // The key itself is best, then the first key of the entry it names (`judges[1]` is where
    // `judges[1].name` starts), then the longest key that holds it.
    let mut best: Option<(usize, usize)> = None; // (score, line); the first line of a score wins
    // A list entry has no line of its own: a key missing from it is placed at its first key.
    let entry = key.rsplit_once('.').map(|(parent, _)| parent).filter(|parent| parent.ends_with(']'));
    for line in 1..=n {
        let Some(path) = key_path_at(text, line) else { continue };
        let score = if key == path {
            2 * key.len() + 2
        } else if path.strip_prefix(key).is_some_and(|rest| rest.starts_with('.')) {
            2 * key.len() + 1
        } else if let Some(e) = entry.filter(|e| path.strip_prefix(e).is_some_and(|rest| rest.starts_with('.'))) {
            2 * e.len()
        } else if key.strip_prefix(path.as_str()).is_some_and(|rest| rest.starts_with(['.', '['])) {
            2 * path.len()
        } else {
            continue;
        };
        if best.is_none_or(|(b, _)| score > b) {
            best = Some((score, line));
        }
    }
    best.map(|(_, line)| line)
}

/// The first line where dotted key path `key` itself is written in `text` (no enclosing block).
pub fn exact_line_of_key(text: &str, key: &str) -> Option<usize> {
    (1..=text.lines().count()).find(|&line| key_path_at(text, line).is_some_and(|p| p == key))
}

/// Serialise to YAML.
///
/// # Errors
/// The serialiser's message.
pub fn to_string<T: Serialize>(v: &T) -> Result<String, YamlError> {
    serde_saphyr::to_string(v).map_err(|e| YamlError(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tag the parser does not know was dropped: `api_key: !env KEY` read as the text `KEY`,
    /// `name: !env RUN` named the run `RUN`. Now refused where it stands, with this file's way
    /// to read the environment; the standard tags (`!!str`) still read as before.
    #[test]
    fn an_unknown_tag_is_refused_not_dropped() {
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct T {
            name: String,
            k: Option<u32>,
        }
        for (text, at) in [
            ("name: !env RUN\n", "line 1 column 12 (key `name`)"),
            ("name: a\nk: !secret 3\n", "line 2 column 12 (key `k`)"),
        ] {
            let e = from_str::<T>(text).unwrap_err().0;
            assert!(e.starts_with(at), "{e}");
            assert!(
                e.contains("this file takes no YAML tags") && e.contains("`${VAR}`") && e.contains("api_key_env"),
                "{e}"
            );
        }
        let e = from_str::<T>("!x name: a\n").unwrap_err().0;
        assert!(e.contains("line 1"), "{e}");
        // A `!!null` tag on a value empties it (`max_usd: !!null 0.05` ran without a cap).
        let e = from_str::<T>("name: a\nk: !!null 3\n").unwrap_err().0;
        assert!(e.starts_with("line 2 column 4 (key `k`): a `!!null` tag makes the value after it (3) empty"), "{e}");
        for text in
            ["name: a\nk: !!null\n  3\n", "name: a\nk: !<tag:yaml.org,2002:null>\n  3\n", "name: a\nk: !!null\n"]
        {
            let e = from_str::<T>(text).unwrap_err().0;
            assert!(e.starts_with("line 2 column 4 (key `k`): a `!!null` tag makes the value after it"), "{e}");
        }
        let e = from_str::<T>("%TAG !x! tag:yaml.org,2002:\n---\nname: a\nk: !x!null 3\n").unwrap_err().0;
        assert!(e.starts_with("line 1: a `%TAG` directive renames YAML's tags"), "{e}");
        let t = from_str::<T>("name: !!str 5\nk: !!int 3\n").unwrap();
        assert_eq!((t.name.as_str(), t.k), ("5", Some(3)));
    }

    /// A key written twice or unknown inside a flow mapping is named by its own path, list
    /// entries by their index (it named the block key only: `judges[0].mock`).
    #[test]
    fn a_repeated_or_unknown_key_in_flow_style_is_named_by_its_path() {
        let e = from_str::<serde_json::Value>("judges:\n  - name: a\n    mock: {seed: 1, seed: 2}\n").unwrap_err().0;
        assert!(e.starts_with("line 3 column 21 (key `judges[0].mock.seed`): duplicate mapping key: seed"), "{e}");
        let e = from_str::<serde_json::Value>("m: {c: [{n: a}, {n: b, n: c}]}\n").unwrap_err().0;
        assert!(e.starts_with("line 1 column 24 (key `m.c[1].n`): duplicate mapping key: n"), "{e}");
        #[derive(Debug, serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        #[allow(dead_code)]
        struct C {
            epsilon: Option<f64>,
        }
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct T {
            certify: C,
            list: Option<Vec<u32>>,
        }
        let e = from_str::<T>("certify: {eps: 0.1}\n").unwrap_err().0;
        assert!(e.starts_with("line 1 column 11 (key `certify.eps`): unknown field `eps`"), "{e}");
        // In block style the line's own key is the one named, once.
        let e = from_str::<T>("certify:\n  eps: 0.1\n").unwrap_err().0;
        assert!(e.starts_with("line 2 column 3 (key `certify.eps`): unknown field `eps`"), "{e}");
        let e = from_str::<T>("certify: {}\nlist: [1, 2, x]\n").unwrap_err().0;
        assert!(e.contains("(key `list[2]`)"), "{e}");
        // A block mapping or list where one value is expected is named by its key (it named
        // the first key inside: `seed.a`), and a block item by its index.
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct S {
            mock: Seed,
            list: Option<Vec<u32>>,
        }
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct Seed {
            seed: Option<u32>,
        }
        let e = from_str::<S>("mock:\n  seed:\n    a: 1\n").unwrap_err().0;
        assert!(e.contains("(key `mock.seed`)") && e.contains("found a mapping"), "{e}");
        let e = from_str::<S>("mock:\n  seed:\n    - 1\n").unwrap_err().0;
        assert!(e.contains("(key `mock.seed`)") && e.contains("found a list"), "{e}");
        let e = from_str::<S>("mock: {}\nlist:\n  - 1\n  - x\n").unwrap_err().0;
        assert!(e.contains("(key `list[1]`)"), "{e}");
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct M {
            model: Cov,
        }
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct Cov {
            covariates: Vec<C>,
        }
        // A flow mapping that is an item of a block sequence (how configs/mock.yaml writes its
        // covariates) is named by its index (it lost the whole path).
        let e = from_str::<M>("model:\n  covariates:\n    - {}\n    - {epsilon: 1, eps: 2}\n").unwrap_err().0;
        assert!(e.starts_with("line 4 column 20 (key `model.covariates[1].eps`): unknown field `eps`"), "{e}");
        let e = from_str::<M>("model:\n  covariates:\n    - {epsilon: x}\n").unwrap_err().0;
        assert!(e.contains("(key `model.covariates[0].epsilon`)"), "{e}");
    }

    #[test]
    fn a_value_that_is_not_a_number_is_named_with_what_was_expected() {
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct T {
            k: u64,
            x: Option<f64>,
        }
        let e = from_str::<T>("k: three\n").unwrap_err().0;
        assert!(e.starts_with("line 1 column 4 (key `k`): expected a whole number ≥ 0, found \"three\""), "{e}");
        let e = from_str::<T>("k: 3\nx: abc # note\n").unwrap_err().0;
        assert!(e.contains("expected a number, found \"abc\""), "{e}");
        let e = from_str::<T>("k: 3\nx: 1e400\n").unwrap_err().0;
        assert!(e.contains("(key `x`): 1e400 is too large (a finite number, at most 1.7e308)"), "{e}");
        // YAML's words for a value that is not a finite number, where a count is expected.
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct C {
            #[serde(deserialize_with = "crate::domain::serde_words::at_least_one")]
            k: usize,
        }
        for (yaml, want) in [
            ("k: .nan\n", "(key `k`): expected a finite number, found .nan (not a number or infinite)"),
            ("k: -.inf\n", "(key `k`): expected a finite number, found -.inf (not a number or infinite)"),
            ("k: .NaN\n", "(key `k`): expected a finite number, found .NaN"),
        ] {
            let e = from_str::<C>(yaml).unwrap_err().0;
            assert!(e.contains(want) && !e.contains("policy"), "{yaml:?} -> {e}");
        }
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct B {
            budget: Inner,
        }
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct Inner {
            max_comparisons: Option<u64>,
            max_usd: Option<f64>,
        }
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct Top {
            k: u64,
            budget: Inner,
            name: String,
        }
        let e = from_str::<Top>("name: x\nbudget:\n  max_usd: 1\n").unwrap_err().0;
        assert_eq!(e, "missing field `k` at the top level of the document");
        let e = from_str::<B>("budget: {max_comparisons: 4, max_usd: abc}\n").unwrap_err().0;
        assert!(e.contains("(key `budget.max_usd`): expected a number, found \"abc\""), "{e}");
        let e = from_str::<Outer>("k: \"three\"\n").unwrap_err().0;
        assert!(e.contains("found \"three\""), "{e}");
    }

    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)]
    struct Inner {
        lambda_theta: f64,
    }

    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)]
    struct Outer {
        k: u64,
        model: Inner,
    }

    #[test]
    fn every_field_a_block_mapping_lacks_is_named_at_once() {
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct Price {
            input: f64,
            #[serde(default)]
            output: f64,
        }
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct Api {
            base_url: String,
            model: String,
            api_key_env: String,
            prompt: std::path::PathBuf,
            #[serde(default)]
            seed: u64,
            tags: Vec<String>,
            price: Price,
            rate: u64,
        }
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct J {
            name: String,
            api: Api,
        }
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct T {
            k: u64,
            judges: Vec<J>,
            name: String,
        }
        let e = |t: &str| from_str::<T>(t).unwrap_err().0;
        // An empty flow mapping lacks its own fields (the parser points at its `{`).
        let empty = "k: 3\nname: x\njudges:\n  - name: a\n    api:\n      model: m\n      price: {}\n";
        assert!(e(empty).starts_with("line 7: missing field `input` in `judges[0].api.price`"), "{}", e(empty));
        // A hand-written block with one of its fields: the others, in the struct's order, with
        // the line of the block; a list among them is named too. A mapping with required fields
        // of its own ends the list (no stand-in fits it).
        let block = "k: 3\nname: x\njudges:\n  - name: a\n    api:   # the judge\n      model: m\n";
        assert_eq!(
            e(block),
            "line 5: missing fields `base_url`, `api_key_env`, `prompt`, `tags`, `price` in `judges[0].api`"
        );
        let priced = block.replace("model: m", "model: m\n      price: {input: 1}");
        assert_eq!(
            e(&priced),
            "line 5: missing fields `base_url`, `api_key_env`, `prompt`, `tags`, `rate` in `judges[0].api`"
        );
        // A list item lacking fields of its own; the top level lacking two.
        let item = "k: 3\nname: x\njudges:\n  - api: {base_url: u, model: m, api_key_env: K, prompt: p, price: {input: 1}, tags: [], rate: 1}\n";
        assert_eq!(e(item), "line 4: missing field `name` in `judges[0]`");
        let item = "k: 3\nname: x\njudges:\n  - seed: 1\n";
        assert_eq!(e(item), "line 4: missing fields `name`, `api` in `judges[0]`");
        assert_eq!(e("judges: []\n"), "missing fields `k`, `name` at the top level of the document");
        // An empty flow mapping is filled the same way; inside another flow mapping the first
        // field is named.
        let empty = "k: 3\nname: x\njudges:\n  - name: a\n    api: {}\n";
        assert_eq!(
            e(empty),
            "line 5: missing fields `base_url`, `model`, `api_key_env`, `prompt`, `tags`, `price` in `judges[0].api`"
        );
        let flow = "k: 3\nname: x\njudges:\n  - name: a\n    api: {model: m}\n";
        assert_eq!(e(flow), "line 5: missing field `base_url` in `judges[0].api`");
    }

    #[test]
    fn a_missing_field_in_a_flow_mapping_names_that_mapping() {
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct N {
            mean: f64,
            sd: f64,
        }
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct J {
            name: String,
            prior: std::collections::BTreeMap<String, N>,
        }
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct T {
            judges: Vec<J>,
            k: u64,
        }
        let e = |t: &str| from_str::<T>(t).unwrap_err().0;
        // The example: the `{sd: 0.4}` of kappa lacks its mean.
        let flow = "judges:\n  - name: a\n    prior: {kappa: {sd: 0.4}}\nk: 3\n";
        assert_eq!(e(flow), "line 3: missing field `mean` in `judges[0].prior.kappa`");
        let second = "judges:\n  - name: a\n    prior: {kappa: {mean: 1, sd: 2}, words: {sd: 0.4}}\nk: 3\n";
        assert_eq!(e(second), "line 3: missing field `mean` in `judges[0].prior.words`");
        let mixed = "judges:\n  - name: a\n    prior:\n      kappa: {sd: 0.4}\nk: 3\n";
        assert_eq!(e(mixed), "line 4: missing field `mean` in `judges[0].prior.kappa`");
        let block = "judges:\n  - name: a\n    prior:\n      kappa:\n        sd: 0.4\nk: 3\n";
        assert_eq!(e(block), "line 4: missing field `mean` in `judges[0].prior.kappa`");
        let item = "judges:\n  - prior: {kappa: {sd: 0.4, mean: 2}}\nk: 3\n";
        assert_eq!(e(item), "line 2: missing field `name` in `judges[0]`");
    }

    #[test]
    fn a_value_of_the_wrong_shape_says_what_shape_was_expected() {
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct N {
            mean: f64,
        }
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct T {
            prior: Option<std::collections::BTreeMap<String, N>>,
            judges: Option<Vec<String>>,
            trusted: Option<bool>,
        }
        let e = |t: &str| from_str::<T>(t).unwrap_err().0;
        let m = e("prior: {kappa: 1.1}\n");
        assert!(m.starts_with("line 1 column 16 (key `prior.kappa`): expected a mapping of keys (`{key: value, …}`, or keys indented below), found \"1.1\""), "{m}");
        let m = e("judges:\n  cheap: x\n");
        assert!(m.contains("(key `judges`): expected a list (`- item` lines, or `[a, b]`), found a mapping"), "{m}");
        let m = e("trusted: 0\n");
        assert!(m.starts_with("line 1 column 10 (key `trusted`): expected true or false, found \"0\""), "{m}");
        assert!(!m.contains("invalid boolean"), "{m}");
    }

    /// A key whose lines below are not indented under it has no value: said so, not "found a
    /// mapping".
    #[test]
    fn a_key_without_its_indented_block_is_said_to_be_empty() {
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct O {
            base_url: String,
        }
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct J {
            openai: O,
        }
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct C {
            judge: J,
        }
        let e = from_str::<C>("judge:\n    openai:\n    base_url: http://x\n").unwrap_err().0;
        assert!(
            e.contains("found nothing: `openai:` has no value (the lines below it are not indented further than it)"),
            "{e}"
        );
        // A word where a mapping is expected, on the last line: the parser stops past the end
        // of the text; the line and the value are the last line's.
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct D {
            judge: J,
            k: Option<u64>,
        }
        for yaml in ["judge: mock\nk: 3\n", "judge:  mock  # é\n\n# c\nk: 3\n"] {
            let e = from_str::<D>(yaml).unwrap_err().0;
            let col = yaml.find("mock").unwrap_or(0) + 1;
            let want = format!(
                "line 1 column {col} (key `judge`): expected a mapping of keys (`{{key: value, …}}`, or keys indented below), found \"mock\""
            );
            assert!(e.starts_with(&want), "{yaml:?} -> {e}");
        }
        for yaml in ["judge: mock", "judge: mock\n", "# c\njudge: mock\n"] {
            let e = from_str::<C>(yaml).unwrap_err().0;
            let line = yaml.lines().count();
            let want = format!(
                "line {line} column 8 (key `judge`): expected a mapping of keys (`{{key: value, …}}`, or keys indented below), found \"mock\""
            );
            assert!(e.starts_with(&want), "{yaml:?} -> {e}");
        }
        // A document that is a list: no key is named (there is none).
        let e = from_str::<C>("- a\n- b\n").unwrap_err().0;
        assert!(e.starts_with("line 1 column 1: expected a mapping of keys"), "{e}");
    }

    #[test]
    fn a_line_indented_with_a_tab_is_named() {
        let text = "acquisition:\n  strategy: topk\n  concurrency: 8\n\tseed: 42\nbudget: {}\n";
        let e = from_str::<serde_json::Value>(text).unwrap_err().0;
        assert_eq!(
            e,
            "line 4: a tab indents this line (\"\\tseed: 42\"); YAML indents with spaces only: replace the tab with spaces"
        );
    }

    #[test]
    fn a_key_path_is_found_on_its_line() {
        let t = "name: x\njudges:\n  - name: a\n    prior: {kappa: {mean: 30, sd: 1}}\n    mock: {}\n  - name: b\n    trusted: true\nbudget:\n  max_usd: -1\n";
        assert_eq!(line_of_key(t, "budget.max_usd"), Some(9));
        assert_eq!(line_of_key(t, "judges[0].prior.kappa.mean"), Some(4));
        assert_eq!(line_of_key(t, "judges[1].trusted"), Some(7));
        assert_eq!(line_of_key(t, "judges[1].name"), Some(6));
        assert_eq!(line_of_key(t, "judges"), Some(2));
        assert_eq!(line_of_key(t, "judges[1]"), Some(6));
        assert_eq!(line_of_key(t, "judge"), None);
        assert_eq!(line_of_key(t, "model.lambda_b"), None);
        // A key an entry lacks is placed at the entry's first key, not at its list's key
        // (hunt 47: `judges[1].name: missing` named the `judges:` line); a mapping's missing
        // key stays at the mapping's own line.
        assert_eq!(line_of_key(t, "judges[1].mock"), Some(6));
        assert_eq!(line_of_key(t, "judges[0].weight"), Some(3));
        assert_eq!(line_of_key(t, "budget.max_comparisons"), Some(8));
        let flow = "judges:\n  - {name: a, mock: {}}\n  - {trusted: true, mock: {}}\n";
        assert_eq!(line_of_key(flow, "judges[1].name"), Some(3));
    }

    #[test]
    fn an_entry_of_a_sequence_is_named_by_its_index() {
        let t = "name: x\njudges:\n  - name: a\n    mock: {}\n\n  # b\n  - name: b\n    weight: 2\nk: 3\n";
        assert_eq!(key_path_at(t, 8).as_deref(), Some("judges[1].weight"));
        assert_eq!(key_path_at(t, 7).as_deref(), Some("judges[1].name"));
        assert_eq!(key_path_at(t, 4).as_deref(), Some("judges[0].mock"));
        assert_eq!(key_path_at(t, 9).as_deref(), Some("k"));
        // Items at the column of the key that holds them, and nested sequences.
        let t = "judges:\n- name: a\n- name: b\n  trusted: yes\nmodel:\n  covariates:\n    - {name: words}\n    - name: x\n      transform: y\n";
        assert_eq!(key_path_at(t, 4).as_deref(), Some("judges[1].trusted"));
        assert_eq!(key_path_at(t, 9).as_deref(), Some("model.covariates[1].transform"));
        assert_eq!(key_path_at(t, 6).as_deref(), Some("model.covariates"));
    }

    #[test]
    fn type_errors_name_the_key_path() {
        let e = from_str::<Outer>("k: 3\nmodel:\n  # the prior\n  lambda_theta: big\n").unwrap_err().0;
        assert!(e.starts_with("line 4 column 17 (key `model.lambda_theta`):"), "{e}");
        let e = from_str::<Outer>("k: three\nmodel:\n  lambda_theta: 1\n").unwrap_err().0;
        assert!(e.starts_with("line 1 column 4 (key `k`):"), "{e}");
        // A missing key is not pinned on whichever key the parser stopped at.
        let e = from_str::<Outer>("model:\n  lambda_theta: 1\n").unwrap_err().0;
        assert!(e.contains("missing field `k`") && !e.contains("(key `"), "{e}");
        // No parser-API advice in a user's error.
        let e = from_str::<Outer>("k: 1\nk: 2\nmodel:\n  lambda_theta: 1\n").unwrap_err().0;
        assert!(e.contains("duplicate") && !e.contains("DuplicateKeyPolicy"), "{e}");
        let e = from_file_text::<Outer>("k: x\n", std::path::Path::new("configs/a.yaml")).unwrap_err().0;
        assert!(e.contains("--> configs/a.yaml:1:4") && !e.contains("<input>"), "{e}");
    }
}

#[cfg(test)]
mod shape_words {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)]
    struct J {
        name: String,
        mode: Option<Mode>,
    }

    #[derive(Debug, serde::Deserialize)]
    #[serde(rename_all = "snake_case")]
    #[allow(dead_code)]
    enum Mode {
        Fast,
        Slow,
    }

    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)]
    struct T {
        judges: Vec<J>,
        k: Option<u64>,
    }

    fn e(t: &str) -> String {
        from_str::<T>(t).unwrap_err().0
    }

    #[test]
    fn an_unclosed_bracket_is_named_where_a_type_error_would_stop_first() {
        // An opened `[` or `{` never closed: the parser meets the wrong type first ("found a
        // list"), which is a consequence; the syntax fault is what the file must fix.
        for (yaml, want) in [
            ("judges: []\nk: [3\n", "unclosed bracket '['"),
            ("judges: []\nk: {3\n", "unclosed bracket '{'"),
            ("judges: [{name: a}\nk: 3\n", "illegal placement of ':' indicator"),
            ("judges: [{name: a, mode: fast\n", "unclosed bracket '{'"),
        ] {
            let m = e(yaml);
            assert!(m.contains(want), "{yaml:?} -> {m}");
            assert!(!m.contains("found a"), "{yaml:?} -> {m}");
        }
        // A bracket never closed, with lines below it: the parser stops on a later line (at the
        // next key, or at a `:` it cannot place); the bracket's line and key are named.
        for (yaml, want) in [
            (
                "judges: [{name: a}\nk: 3\n",
                "line 1 column 9 (key `judges`): the `[` opened here is never closed (close it with `]`; the parser read on to line 2",
            ),
            (
                "k: 3\njudges: {a: 1\nx: 2\n",
                "line 2 column 9 (key `judges`): the `{` opened here is never closed (close it with `}`;",
            ),
            (
                "k: 3\njudges:\n  - name: a\n    mode: [fast\nq: 1\n",
                "line 4 column 11 (key `judges[0].mode`): the `[` opened here is never closed",
            ),
        ] {
            assert!(e(yaml).starts_with(want), "{yaml:?} -> {}", e(yaml));
        }
        // On its own line the parser's words say it already.
        assert!(e("k: 3\njudges:\n  - {name: [a, b}\n").contains("mismatched bracket '[' closed by '}'"));
        // Brackets that are text, or closed on a later line, are not blamed for another fault:
        // a plain value, a quoted one, a comment, a block scalar, a flow value over two lines.
        for yaml in [
            "k: 3\njudges:\n  - name: a - [b {c\n    mode: x: y\n",
            "k: 3\njudges:\n  - name: \"[b\"  # [c\n    mode: |\n      [x {y\n  - name: 'it''s [' \n    mode: fast\n  - x: : y\n",
            "k: 3\njudges: [{name: a,\n  mode: fast}]\nk: 4\n",
        ] {
            assert!(!e(yaml).contains("never closed"), "{yaml:?} -> {}", e(yaml));
        }
        // A type error in a text that parses is still the type error, also for a list of
        // numbers the parser refuses.
        assert!(
            e("judges: []\nk: [3]\n")
                .contains("expected a single value (a number, a word or a quoted text), found a list")
        );
        assert!(e("judges: []\nk: [1e400]\n").contains("found a list"));
    }

    /// A count that may be 0 reads as every count of a config does: `120.0`, `1.2e2` and `"120"`
    /// are 120 (`max_comparisons: 120.0` was refused while `k: 3.0` was taken), and a list in
    /// its place names its own key (the key above it was named).
    #[test]
    fn a_count_that_may_be_zero_is_read_as_every_count_is() {
        #[derive(Debug, serde::Deserialize)]
        struct Budget {
            #[serde(default, deserialize_with = "crate::domain::serde_words::opt_whole")]
            max_comparisons: Option<u64>,
        }
        #[derive(Debug, serde::Deserialize)]
        struct Doc {
            #[serde(deserialize_with = "crate::domain::serde_words::whole")]
            seed: u64,
            budget: Budget,
        }
        for v in ["120", "120.0", "1.2e2", "\"120\"", "'120'"] {
            let d: Doc = from_str(&format!("seed: 0.0\nbudget:\n  max_comparisons: {v}\n")).unwrap();
            assert_eq!((d.seed, d.budget.max_comparisons), (0, Some(120)), "{v}");
        }
        let d: Doc = from_str("seed: 7\nbudget:\n  max_comparisons: null\n").unwrap();
        assert_eq!(d.budget.max_comparisons, None);
        let e = |t: &str| from_str::<Doc>(t).unwrap_err().to_string();
        // (The parser points at a scalar, and at the key of a list.)
        for (v, col, found) in
            [("-1", 20, "\"-1\""), ("12.5", 20, "\"12.5\""), ("abc", 20, "\"abc\""), ("[1]", 3, "a list")]
        {
            let m = e(&format!("seed: 1\nbudget:\n  max_comparisons: {v}\n"));
            let want = format!(
                "line 3 column {col} (key `budget.max_comparisons`): expected a whole number ≥ 0, found {found}"
            );
            assert!(m.starts_with(&want), "{v}: {m}");
        }
        // A list in block style, under its key: that key is named, not the one above it.
        let m = e("seed: 1\nbudget:\n  max_comparisons:\n    - 1\n");
        assert!(
            m.starts_with("line 3 column 3 (key `budget.max_comparisons`): expected a whole number ≥ 0, found a list"),
            "{m}"
        );
        let m = e("seed: 1\nbudget:\n  max_comparisons:\n    a: 1\n");
        assert!(
            m.starts_with(
                "line 4 column 5 (key `budget.max_comparisons`): expected a whole number ≥ 0, found a mapping"
            ),
            "{m}"
        );
        let m = e("seed: [1]\nbudget: {}\n");
        assert!(m.contains("(key `seed`): expected a whole number ≥ 0, found a list"), "{m}");
        let m = e("seed: 1\nbudget:\n  max_comparisons: 1e30\n");
        assert!(
            m.contains("1e30 is too large (at most 18446744073709551615 written in digits, 9007199254740992 with a point or an exponent)"),
            "{m}"
        );
    }

    #[test]
    fn a_whole_number_too_large_says_so_and_a_quoted_value_is_shown_whole() {
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct K {
            k: u64,
            n: Option<u32>,
        }
        let e = |t: &str| from_str::<K>(t).unwrap_err().0;
        // (YAML, what its message starts with); the location is named first.
        for (yaml, starts) in [
            (
                "k: 99999999999999999999\n",
                "line 1 column 4 (key `k`): 99999999999999999999 is too large (at most 18446744073709551615)",
            ),
            // A mis-indented line below continues the value: named whole, not "3 is too large".
            ("k: 3\n  n: 1\n", "line 1 column 4 (key `k`): expected a whole number ≥ 0, found \"3 n: 1\""),
        ] {
            assert!(e(yaml).starts_with(starts), "{yaml:?}: {}", e(yaml));
        }
        // (YAML, what its message contains).
        for (yaml, says) in [
            ("k: 1\nn: 99999999999\n", "99999999999 is too large (at most 4294967295)"),
            // Digits tagged as text are not "too large".
            ("k: !!str 3\n", "expected a whole number ≥ 0, found the text \"3\" (a tag such as `!!str`"),
            ("k: \"3 # c\"\n", "expected a whole number ≥ 0, found \"3 # c\""),
            ("k: 1\n---\nk: 2\n", "a second YAML document starts here (a `---` line)"),
        ] {
            assert!(e(yaml).contains(says), "{yaml:?}: {}", e(yaml));
        }
    }

    #[test]
    fn parser_words_for_a_wrong_shape_are_said_in_the_files_terms() {
        let m = e("judges:\n  - name: [1]\n");
        assert!(m.starts_with("line 2 column 11 (key `judges[0].name`): expected a single value (a number, a word or a quoted text), found a list"), "{m}");
        let m = e("judges:\n  - name: {a: 1}\n");
        assert!(m.contains("found a mapping"), "{m}");
        let m = e("judges:\n  - name:\n      - a\n");
        assert!(m.contains("found a list"), "{m}");
        // A list as the serialiser writes it (after a `--set judges.0.name=[1]`).
        let m = e("judges:\n- name:\n  - 1\n");
        assert!(m.contains("expected a single value (a number, a word or a quoted text), found a list"), "{m}");
        let m = e("judges:\n  - name: null\n");
        assert!(
            m.starts_with("line 2 column 11 (key `judges[0].name`): expected a text, found an empty value (null)"),
            "{m}"
        );
        let m = e("judges:\n  - name: a\n    mode: [fast]\n");
        assert!(m.contains("(key `judges[0].mode`): expected a name (or `name: {…}`), found a list"), "{m}");
        let m = e("judges:\n  - name: a\nk: [3]\n");
        assert!(m.contains("(key `k`): expected a single value"), "{m}");
        for m in [m, e("judges:\n  - name: null\n"), e("judges:\n  - name: a\n    mode: [fast]\n")] {
            for leak in ["scalar", "Option<", "enum", "deserialize"] {
                assert!(!m.contains(leak), "{leak} in {m}");
            }
        }
    }

    #[test]
    fn a_hand_written_visitors_type_error_reads_expected_then_found() {
        assert_eq!(
            serde_type_message("line 1 column 9: invalid type: sequence, expected a budget").as_deref(),
            Some("line 1 column 9: expected a budget, found a list")
        );
        assert_eq!(
            serde_type_message("invalid type: integer `7`, expected a budget\n --> x").as_deref(),
            Some("expected a budget, found \"7\"\n --> x")
        );
        assert_eq!(
            serde_type_message("invalid value: string \"x\", expected y").as_deref(),
            Some("expected y, found \"x\"")
        );
        assert_eq!(serde_type_message("invalid type: map, expected y").as_deref(), Some("expected y, found a mapping"));
        assert_eq!(serde_type_message("missing field `k`"), None);
    }
}

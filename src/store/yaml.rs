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
    serde_saphyr::from_str(text).map_err(|e| {
        let m = e.to_string();
        let m = m.strip_prefix("error: ").map(str::to_owned).unwrap_or(m);
        // Advice addressed to programmers using the parser, not to users of the file.
        let m = m.replace(", set DuplicateKeyPolicy in Options if acceptable", "").replace(
            "multiple YAML documents detected; use from_str_multiple or from_str_multiple_with_options",
            "a second YAML document starts here (a `---` line): this file holds one document; remove the `---` and merge what follows into the first",
        );
        if let Some(tab) = tab_indent_message(text, &m) {
            return YamlError(tab);
        }
        let m = plain_number_message(text, m);
        // A missing field is reported where the parser gave up (another key of the mapping that
        // lacks it): name that mapping instead of pointing at an unrelated line.
        YamlError(if m.contains("missing field") { missing_field(text, &m) } else { name_the_key(text, m) })
    })
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
    const SHAPES: [(&str, &str); 6] = [
        ("expected mapping start", "a mapping of keys (`{key: value, …}`, or keys indented below)"),
        ("expected sequence start", "a list (`- item` lines, or `[a, b]`)"),
        // The parser's message for the strict booleans ("invalid boolean (strict mode expects
        // true/false)") starts with these words too.
        ("invalid boolean (strict mode expects true/false)", "true or false"),
        ("invalid boolean", "true or false"),
        ("expected string scalar", "a single value (a number, a word or a quoted text)"),
        ("externally tagged enum expected scalar or mapping", "a name (or `name: {…}`)"),
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
    let v = rest.split(['#', ',', '}', ']']).next()?.trim();
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
    // The mapping that lacks the field (`None`: the top level) and the line it starts on.
    let mapping = location(msg).and_then(|(line, col)| {
        let path = key_path_at(text, line)?;
        // Inside a flow mapping (`prior: {kappa: {sd: 0.4}}`) the parser points at a key of the
        // mapping that lacks the field: the innermost mapping open at that column, on this line.
        if let Some(keys) = text.lines().nth(line - 1).and_then(|l| open_flow_keys(l, col)) {
            return Some((Some(below(&path, &keys)), Some(line)));
        }
        Some(match path.rsplit_once('.') {
            Some((parent, _)) => (Some(parent.to_string()), line_of_key(text, parent)),
            None => (None, None),
        })
    });
    match mapping {
        Some((Some(m), Some(line))) => format!("line {line}: {what} in `{m}`"),
        Some((Some(m), None)) => format!("{what} in `{m}`"),
        Some((None, _)) => format!("{what} at the top level of the document"),
        None => what.to_string(),
    }
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
        Some(colon) => format!("{} (key `{path}`){}", &msg[..colon], &msg[colon..]),
        None => msg,
    }
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
    for line in 1..=n {
        let Some(path) = key_path_at(text, line) else { continue };
        let score = if key == path {
            2 * key.len() + 2
        } else if path.strip_prefix(key).is_some_and(|rest| rest.starts_with('.')) {
            2 * key.len() + 1
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

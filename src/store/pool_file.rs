//! The pool file reader: JSON Lines, one pool per line (docs/model.md §1), as other tools write it.

use crate::domain::pool::{Item, Pool, PoolError};
use serde::Deserialize;
use std::path::Path;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPool {
    pool_id: String,
    #[serde(default, alias = "source")]
    task: Option<String>,
    /// The turns of a multi-turn task (`import` writes them; `task` is them joined).
    #[serde(default)]
    task_turns: Vec<String>,
    items: Vec<Item>,
}

/// The pool ids of a pool file (each line's `pool_id`; lines that do not parse are skipped: a
/// quick look, not a check).
///
/// # Errors
/// The file cannot be read.
pub fn pool_ids(path: &Path) -> std::io::Result<std::collections::HashSet<String>> {
    #[derive(Deserialize)]
    struct Id {
        pool_id: String,
    }
    let text = std::fs::read_to_string(path)?;
    Ok(text
        .lines()
        .filter_map(|l| serde_json::from_str::<Id>(l.trim_start_matches('\u{feff}')).ok())
        .map(|i| i.pool_id)
        .collect())
}

/// A pool line whose items carry `"turns"` (a multi-turn answer, `import` writes them): the
/// line without them, for [`Item`]'s strict parse, and each item's turns. `None` when no item
/// has a list of strings under `"turns"` (the line is parsed as written).
fn split_item_turns(text: &str) -> Option<(String, Vec<Vec<String>>)> {
    if !text.contains("\"turns\"") {
        return None;
    }
    let mut v: serde_json::Value = serde_json::from_str(text).ok()?;
    let items = v.get_mut("items")?.as_array_mut()?;
    let mut turns = Vec::with_capacity(items.len());
    for it in items.iter_mut() {
        let t = it.as_object_mut().and_then(|o| {
            let list: Option<Vec<String>> =
                o.get("turns")?.as_array()?.iter().map(|x| x.as_str().map(str::to_owned)).collect();
            let list = list?;
            o.remove("turns");
            Some(list)
        });
        turns.push(t.unwrap_or_default());
    }
    if turns.iter().all(Vec::is_empty) {
        return None;
    }
    Some((v.to_string(), turns))
}

/// Parse every pool in a JSON Lines file.
///
/// # Errors
/// [`PoolError::Io`] if unreadable; [`PoolError::Parse`] naming the line (also for a pool id
/// that appears on two lines, naming both); [`PoolError::Invalid`].
pub fn read_pools(path: &Path) -> Result<Vec<Pool>, PoolError> {
    Ok(read_pool_lines(path)?.into_iter().map(|(p, _, _)| p).collect())
}

/// [`read_pools`] with each pool's 1-based line number and its line as written.
///
/// Reads files as other tools write them: a UTF-8 byte-order mark, CRLF line ends and blank
/// lines are accepted; UTF-16, a JSON array or a pretty-printed object fail with a message
/// saying so.
///
/// # Errors
/// As [`read_pools`].
pub fn read_pool_lines(path: &Path) -> Result<Vec<(Pool, usize, String)>, PoolError> {
    let bytes = std::fs::read(path).map_err(|source| PoolError::Io { path: path.to_owned(), source })?;
    parse_pool_lines(path, &bytes)
}

/// [`read_pool_lines`] of `bytes` read from (or to be written to) `path`, which messages name.
///
/// # Errors
/// As [`read_pools`], I/O aside.
pub fn parse_pool_lines(path: &Path, bytes: &[u8]) -> Result<Vec<(Pool, usize, String)>, PoolError> {
    let parse_err = |line: usize, msg: String| PoolError::Parse { path: path.to_owned(), line, msg };
    let bytes = crate::domain::text::strip_bom(bytes).map_err(|m| parse_err(1, m.to_string()))?;
    let mut pools: Vec<(Pool, usize, String)> = Vec::new();
    for (ln, line) in bytes.split(|b| *b == b'\n').enumerate() {
        let line_no = ln + 1;
        let text = std::str::from_utf8(line).map_err(|e| {
            let prefix = std::str::from_utf8(&line[..e.valid_up_to()]).unwrap_or_default();
            parse_err(line_no, format!("{}{}", crate::domain::text::not_utf8(line, e.valid_up_to()), item_near(prefix)))
        })?;
        let text = text.strip_suffix('\r').unwrap_or(text);
        if text.trim().is_empty() {
            continue;
        }
        if let Some(m) = crate::domain::text::not_json_lines(text) {
            return Err(parse_err(line_no, super::text::run_output_instead(path).unwrap_or(m)));
        }
        let (parsed, item_turns) = match split_item_turns(text) {
            Some((t, turns)) => (std::borrow::Cow::Owned(t), turns),
            None => (std::borrow::Cow::Borrowed(text), Vec::new()),
        };
        let raw: RawPool = crate::domain::json::from_str(&parsed).map_err(|e| {
            let mut end = e.column.min(parsed.len());
            while !parsed.is_char_boundary(end) {
                end -= 1;
            }
            // "(column 12, in item "M2")": one parenthesis for both. A missing field is found at
            // the end of the object that lacks it, past the last id written (another item's, or
            // none): the error's path names that object, or it is the line's top level.
            let e = e.to_string();
            let near = if !e.contains("missing field") {
                item_near(&parsed[..end])
            } else if e.starts_with("at `") {
                String::new()
            } else {
                " (in the pool's top-level object)".to_string()
            };
            let msg = match (near.strip_prefix(" ("), e.strip_suffix(')')) {
                (Some(item), Some(head)) => format!("{head}, {item}"),
                _ => format!("{e}{near}"),
            };
            parse_err(line_no, msg)
        })?;
        if let Some((_, first, _)) = pools.iter().find(|(p, _, _)| p.pool_id == raw.pool_id) {
            return Err(parse_err(
                line_no,
                format!(
                    "pool_id {:?} is also on line {first}; every pool in a file needs its own pool_id",
                    raw.pool_id
                ),
            ));
        }
        // One pool id in two Unicode forms prints as one (hunt 56: two pools `café`).
        if let Some((p, first, _)) = pools.iter().find(|(p, _, _)| {
            crate::domain::names::same_text_in_two_forms([p.pool_id.as_str(), raw.pool_id.as_str()]).is_some()
        }) {
            return Err(parse_err(
                line_no,
                format!(
                    "pool_id {:?} is pool_id {:?} of line {first} in another Unicode form (composed and decomposed accents); they would print alike: give them one form, or two names",
                    raw.pool_id, p.pool_id
                ),
            ));
        }
        let task = raw.task.unwrap_or_default();
        let pool = Pool::new(raw.pool_id, task, raw.items)
            .and_then(|p| p.with_turns(raw.task_turns, item_turns))
            .map_err(|e| e.in_file(path, |_| Some(line_no)))?;
        pools.push((pool, line_no, text.to_owned()));
    }
    if pools.is_empty() {
        // No line to name: the file as a whole.
        return Err(PoolError::InvalidIn(format!(
            "{}: the file holds no pool (it is empty, or only blank lines); expected one pool per line: {{\"pool_id\", \"task\", \"items\": [{{\"id\", \"text\", ...}}]}}",
            path.display()
        )));
    }
    Ok(pools)
}

/// ` (in item "ID")` for the last item id that starts before the end of `prefix` (the part of
/// a pool line before an error), so errors inside long texts name the item.
fn item_near(prefix: &str) -> String {
    let Some(pos) = prefix.rfind("\"id\"") else { return String::new() };
    let rest = prefix[pos + 4..].trim_start().strip_prefix(':').map(str::trim_start);
    let id = rest.and_then(|r| r.strip_prefix('"')).and_then(|r| r.find('"').map(|e| &r[..e]));
    id.map(|id| format!(" (in item {id:?})")).unwrap_or_default()
}

/// Read one pool by id (or the only/first pool when `id` is `None`).
///
/// # Errors
/// As [`read_pools`], plus [`PoolError::NotFound`].
pub fn read_pool(path: &Path, id: Option<&str>) -> Result<Pool, PoolError> {
    read_pool_line(path, id).map(|(p, _)| p)
}

/// [`read_pool`] with the pool's line as written in the file (for a run folder's copy).
///
/// # Errors
/// As [`read_pool`].
pub fn read_pool_line(path: &Path, id: Option<&str>) -> Result<(Pool, String), PoolError> {
    let pools = read_pool_lines(path)?;
    match id {
        None => Ok(pools.into_iter().next().map(|(p, _, l)| (p, l)).expect("non-empty")),
        Some(id) => {
            let available = pools.iter().take(5).map(|p| p.0.pool_id.as_str()).collect::<Vec<_>>().join(", ");
            let n = pools.len();
            pools.into_iter().find(|p| p.0.pool_id == id).map(|(p, _, l)| (p, l)).ok_or_else(|| PoolError::NotFound {
                path: path.to_owned(),
                id: id.to_owned(),
                available: if n > 5 { format!("{n} pools: {available}, ...") } else { available },
            })
        }
    }
}

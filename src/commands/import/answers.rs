//! The answer readers of `import --format`: AlpacaEval outputs, Arena-Hard (both layouts),
//! FastChat / MT-Bench, CSV and TSV (the module docs of `import` describe each layout).

use super::{ImportError, ImportFormat, SystemFrom, io, row};
use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// One answer read from an input.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Answer {
    pub prompt_id: String,
    /// The prompt text (a multi-turn question's turns joined by a blank line).
    pub prompt: String,
    /// A multi-turn question's turns (empty for one turn).
    pub prompt_turns: Vec<String>,
    pub system: String,
    /// The answer text (a multi-turn answer's turns joined by a blank line).
    pub text: String,
    /// A multi-turn answer's turns (empty when the question has one turn).
    pub turns: Vec<String>,
    /// Where it was read (file, line), for errors.
    pub at: (PathBuf, usize),
    /// Turns joined into `text` to a question of one turn (0 when nothing was joined).
    pub joined: usize,
    /// The choices (samples) the answer's line holds; the first is imported (1 for a layout
    /// without choices).
    pub choices: usize,
}

/// A question of Arena-Hard or MT-Bench: its turns and where it was read.
#[derive(Debug, Clone)]
pub(super) struct Question {
    turns: Vec<String>,
}

/// The prompt id of an instruction without one: `i-` + 12 hex digits of its SHA-256.
pub fn instruction_id(text: &str) -> String {
    format!("i-{}", &crate::domain::rng::sha256_hex(text)[..12])
}

/// A required string field of a JSON object.
pub(super) fn field<'a>(
    v: &'a Value,
    key: &str,
    path: &Path,
    line: usize,
    expected: &str,
) -> Result<&'a str, ImportError> {
    match v.get(key) {
        Some(Value::String(s)) => Ok(s),
        Some(other) => Err(row(path, line, format!("field {key:?} is {other}, expected a string; {expected}"))),
        None => Err(row(path, line, format!("missing field {key:?}; {expected}"))),
    }
}

/// The system of an answer: its field, or the file's stem (`--system-from file`).
fn system_of(
    v: &Value,
    keys: &[&str],
    from: SystemFrom,
    path: &Path,
    line: usize,
    expected: &str,
) -> Result<String, ImportError> {
    if from == SystemFrom::File {
        return Ok(file_stem(path));
    }
    for k in keys {
        match v.get(*k) {
            Some(Value::String(s)) => {
                if s.trim().is_empty() {
                    return Err(row(path, line, format!("empty {k:?}; expected the name of the system that answered")));
                }
                // A name is an id: "gpt-4 " and "gpt-4" are one system.
                return Ok(s.trim().to_owned());
            }
            // Present but not a name (`"generator": 7`): said as what it is, not as missing.
            Some(other) if !other.is_null() => {
                return Err(row(
                    path,
                    line,
                    format!(
                        "field {k:?} is {other}, expected a string (the name of the system that answered); {expected}"
                    ),
                ));
            }
            _ => {}
        }
    }
    let names = keys.iter().map(|k| format!("{k:?}")).collect::<Vec<_>>().join(" or ");
    Err(row(path, line, format!("missing field {names} (or give --system-from file); {expected}")))
}

/// The file name without its extension (`outputs/NullModel.json` → `NullModel`).
pub(super) fn file_stem(path: &Path) -> String {
    path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default()
}

/// The answer to one prompt as the pool stores it: multi-turn questions keep the answer's turns
/// (the same number as the question's); to a question of one turn, an answer's turns are joined
/// (and counted: [`Answer::joined`]).
fn answer(
    prompt_id: String,
    question: &[String],
    system: String,
    answer_turns: Vec<String>,
    path: &Path,
    line: usize,
) -> Result<Answer, ImportError> {
    let text = answer_turns.join("\n\n");
    let joined = if question.len() < 2 && answer_turns.len() > 1 { answer_turns.len() } else { 0 };
    if text.trim().is_empty() {
        return Err(row(
            path,
            line,
            format!("empty answer of system {system:?} to prompt {prompt_id:?}; expected a non-empty answer"),
        ));
    }
    // An answer of several turns to a question of one (published so in arena-bench-v1) is
    // joined into one text and counted in a note; otherwise one answer per turn.
    if question.len() >= 2 && answer_turns.len() != question.len() {
        return Err(row(
            path,
            line,
            format!(
                "system {system:?} answers {} of prompt {prompt_id:?}, which has {}; expected one answer per turn",
                crate::domain::fmt::count(answer_turns.len(), "turn"),
                crate::domain::fmt::count(question.len(), "turn")
            ),
        ));
    }
    let (prompt_turns, turns) = if question.len() >= 2 {
        if let Some(k) = answer_turns.iter().position(|t| t.trim().is_empty()) {
            return Err(row(
                path,
                line,
                format!(
                    "empty answer of system {system:?} to turn {} of prompt {prompt_id:?}; expected a non-empty answer",
                    k + 1
                ),
            ));
        }
        (question.to_vec(), answer_turns)
    } else {
        (Vec::new(), Vec::new())
    };
    Ok(Answer {
        prompt_id,
        prompt: question.join("\n\n"),
        prompt_turns,
        system,
        text,
        turns,
        at: (path.to_owned(), line),
        joined,
        choices: 1,
    })
}

/// AlpacaEval outputs: a JSON array of objects; each element's line is where it starts.
pub(super) fn read_alpaca(path: &Path, from: SystemFrom) -> Result<Vec<Answer>, ImportError> {
    const EXPECTED: &str = "expected AlpacaEval model outputs {\"instruction\", \"output\", \"generator\"}";
    let records = json_array(path, EXPECTED)?;
    records
        .iter()
        .enumerate()
        .map(|(i, (line, v))| {
            let line = *line;
            let one = || {
                let instruction = field(v, "instruction", path, line, EXPECTED)?;
                let id = instruction_id(instruction);
                if instruction.trim().is_empty() {
                    return Err(blank_prompt(path, line, &id));
                }
                let system = system_of(v, &["generator"], from, path, line, EXPECTED)?;
                let output = field(v, "output", path, line, EXPECTED)?;
                answer(id, &[instruction.to_owned()], system, vec![output.to_owned()], path, line)
            };
            one().map_err(|e| in_record(&records, i, e))
        })
        .collect()
}

/// An error about element `i` of a JSON array (`records`, from [`json_array`]) that shares its
/// line with another element (an array written on one line, as `json.dump` does): the element
/// named by its place too (`record 5 of the array: …`), since the line alone does not tell it.
pub(super) fn in_record(records: &[(usize, Value)], i: usize, e: ImportError) -> ImportError {
    let line = records[i].0;
    let shared = (i > 0 && records[i - 1].0 == line) || records.get(i + 1).is_some_and(|r| r.0 == line);
    match e {
        ImportError::Row { path, line, msg } if shared => {
            ImportError::Row { path, line, msg: format!("record {} of the array: {msg}", i + 1) }
        }
        e => e,
    }
}

fn blank_prompt(path: &Path, line: usize, id: &str) -> ImportError {
    row(path, line, format!("blank prompt {id:?}; expected a non-empty prompt text"))
}

/// The elements of a file holding one JSON array, each with the 1-based line where it starts;
/// a file that is not one, or an empty array, is an error naming the line, with what was
/// `expected`.
pub(super) fn json_array(path: &Path, expected: &str) -> Result<Vec<(usize, Value)>, ImportError> {
    let bytes = std::fs::read(path).map_err(io(path))?;
    let text = crate::domain::text::utf8_text(&bytes).map_err(|(line, m)| row(path, line, m))?;
    let all: Value = serde_json::from_str(text).map_err(|e| {
        // One object per line: JSON Lines where one array is expected, named as such (serde said
        // "trailing characters at line 2").
        let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
        if matches!(serde_json::from_str::<Value>(first), Ok(Value::Object(_))) && e.line() > 1 {
            return row(
                path,
                e.line(),
                format!("the file looks like JSON Lines (one object per line); {expected} in one JSON array [ … ]"),
            );
        }
        row(path, e.line(), format!("not valid JSON ({e}); {expected} in a JSON array"))
    })?;
    let Value::Array(elems) = all else {
        return Err(row(path, 1, format!("the file is not a JSON array; {expected} in a JSON array")));
    };
    let lines = element_lines(text);
    if let Err(e) = crate::domain::json::unique_keys(text) {
        // `[3].generator` → the element's line.
        let at = e.path.strip_prefix('[').and_then(|p| p.split(']').next()).and_then(|i| i.parse::<usize>().ok());
        return Err(row(path, at.and_then(|i| lines.get(i).copied()).unwrap_or(1), e.to_string()));
    }
    if elems.is_empty() {
        return Err(row(
            path,
            1,
            format!("an empty JSON array (the file holds no record); {expected} in a JSON array"),
        ));
    }
    Ok(elems.into_iter().enumerate().map(|(i, v)| (lines.get(i).copied().unwrap_or(1), v)).collect())
}

/// The 1-based line on which each top-level element of a JSON array starts.
fn element_lines(text: &str) -> Vec<usize> {
    let (mut depth, mut in_str, mut esc, mut line) = (0i32, false, false, 1usize);
    let mut out = Vec::new();
    let mut expect_elem = false;
    for c in text.chars() {
        if c == '\n' {
            line += 1;
        }
        if in_str {
            match (esc, c) {
                (true, _) => esc = false,
                (false, '\\') => esc = true,
                (false, '"') => in_str = false,
                _ => {}
            }
            continue;
        }
        if expect_elem && !c.is_whitespace() && c != ']' {
            out.push(line);
            expect_elem = false;
        }
        match c {
            '"' => in_str = true,
            '[' | '{' => {
                depth += 1;
                if depth == 1 && c == '[' {
                    expect_elem = true;
                }
            }
            ']' | '}' => depth -= 1,
            ',' if depth == 1 => expect_elem = true,
            _ => {}
        }
    }
    out
}

/// The JSON values of a JSON Lines file with their 1-based line numbers (blank lines skipped);
/// a line that is not JSON, or a file without a line of JSON, is an error naming it, with what
/// was `expected`.
pub(super) fn json_lines(path: &Path, expected: &str) -> Result<Vec<(usize, Value)>, ImportError> {
    let bytes = std::fs::read(path).map_err(io(path))?;
    let text = crate::domain::text::utf8_text(&bytes).map_err(|(line, m)| row(path, line, m))?;
    let mut out = Vec::new();
    for (i, l) in text.lines().enumerate() {
        if l.trim().is_empty() {
            continue;
        }
        let v: Value = serde_json::from_str(l).map_err(|e| {
            // A pretty-printed array or object, or a CSV, is named as such.
            let what = crate::domain::text::not_json_lines(l).unwrap_or_else(|| format!("not valid JSON ({e})"));
            row(path, i + 1, format!("{what}; {expected}"))
        })?;
        if v.is_array() {
            // A whole file written as one array (pandas `to_json` without `lines=True`).
            return Err(row(
                path,
                i + 1,
                format!(
                    "a JSON array where JSON Lines (one object per line) is expected; write one record per line (pandas: to_json(orient=\"records\", lines=True)); {expected}"
                ),
            ));
        }
        crate::domain::json::unique_keys(l).map_err(|e| row(path, i + 1, e.to_string()))?;
        out.push((i + 1, v));
    }
    if out.is_empty() {
        return Err(row(path, 1, format!("the file holds no record (no line of JSON); {expected}")));
    }
    Ok(out)
}

/// A question id: the first of `keys` present, a string or a number written as text. Two of
/// `keys` present with different ids are refused: which question the line is about is unclear.
pub(super) fn question_id(
    v: &Value,
    keys: &[&str],
    path: &Path,
    line: usize,
    expected: &str,
) -> Result<String, ImportError> {
    let mut found: Vec<(&str, String)> = Vec::new();
    for k in keys {
        match v.get(*k) {
            Some(Value::String(s)) if !s.trim().is_empty() => found.push((k, s.clone())),
            // An integer id as its digits; one JSON can only give as a float (1e2, 7.0) as
            // its integer when exact, else refused: two large ids could read as one.
            Some(Value::Number(n)) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
                (Some(i), _, _) => found.push((k, i.to_string())),
                (_, Some(u), _) => found.push((k, u.to_string())),
                (_, _, Some(f)) if f.fract() == 0.0 && f.abs() < 9_007_199_254_740_992.0 => {
                    found.push((k, format!("{f:.0}")))
                }
                _ => {
                    return Err(row(
                        path,
                        line,
                        format!(
                            "field {k:?} is {n}, a number that is not an integer id this reader can hold exactly (fractional, or above 2^53); write the id as a string; {expected}"
                        ),
                    ));
                }
            },
            Some(other) => {
                return Err(row(path, line, format!("field {k:?} is {other}, expected a non-empty id; {expected}")));
            }
            None => {}
        }
    }
    if let Some((k2, id2)) = found.iter().skip(1).find(|(_, id)| *id != found[0].1) {
        let (k1, id1) = &found[0];
        return Err(row(
            path,
            line,
            format!(
                "fields {k1:?} ({id1:?}) and {k2:?} ({id2:?}) name two questions; expected one id (or both the same)"
            ),
        ));
    }
    if let Some((_, id)) = found.into_iter().next() {
        return Ok(id);
    }
    let names = keys.iter().map(|k| format!("{k:?}")).collect::<Vec<_>>().join(" or ");
    Err(row(path, line, format!("missing field {names}; {expected}")))
}

const AH_QUESTION: &str = "expected an Arena-Hard question {\"uid\", \"prompt\"} (2025) or {\"question_id\", \"turns\": [{\"content\"}]} (2024)";
const FC_QUESTION: &str = "expected an MT-Bench (FastChat) question {\"question_id\", \"turns\": [<text>, …]}";
const AH_ANSWER: &str = "expected an Arena-Hard answer {\"uid\", \"model\", \"messages\": [{\"role\": \"user\", …}, {\"role\": \"assistant\", \"content\": {\"answer\"}}]} (2025) or {\"question_id\", \"model_id\", \"choices\": [{\"turns\": [{\"content\"}]}]} (2024)";
const FC_ANSWER: &str =
    "expected an MT-Bench (FastChat) answer {\"question_id\", \"model_id\", \"choices\": [{\"turns\": [<text>, …]}]}";

/// The turns of a question or answer: `turns` of strings (FastChat, `fastchat` = true) or of
/// `{"content"}` objects (Arena-Hard 2024). The other layout is an error naming the format.
fn turn_texts(
    turns: &[Value],
    fastchat: bool,
    path: &Path,
    line: usize,
    expected: &str,
) -> Result<Vec<String>, ImportError> {
    turns
        .iter()
        .enumerate()
        .map(|(k, t)| match (fastchat, t) {
            (true, Value::String(s)) => Ok(s.clone()),
            (false, t) if t.get("content").is_some_and(Value::is_string) => {
                Ok(t["content"].as_str().unwrap_or_default().to_owned())
            }
            (false, Value::String(_)) => Err(row(
                path,
                line,
                format!(
                    "turn {} is a string, as in the MT-Bench (FastChat) layout: read this file with --format mt_bench; {expected}",
                    k + 1
                ),
            )),
            (true, t) if t.get("content").is_some() => Err(row(
                path,
                line,
                format!(
                    "turn {} is an object with \"content\", as in the Arena-Hard 2024 layout: read this file with --format arena_hard; {expected}",
                    k + 1
                ),
            )),
            (_, other) => Err(row(path, line, format!("turn {} is {other}; {expected}", k + 1))),
        })
        .collect()
}

/// Questions of Arena-Hard (`fastchat` = false) or MT-Bench: id → turns. A blank question or
/// turn is an error naming its line.
pub(super) fn read_questions(path: &Path, fastchat: bool) -> Result<HashMap<String, Question>, ImportError> {
    let expected = if fastchat { FC_QUESTION } else { AH_QUESTION };
    let mut out: HashMap<String, Question> = HashMap::new();
    let mut first_line: HashMap<String, usize> = HashMap::new();
    for (line, v) in json_lines(path, expected)? {
        let qid = question_id(&v, &["uid", "question_id"], path, line, expected)?;
        let turns = match (v.get("prompt"), v.get("turns")) {
            (Some(Value::String(p)), _) if !fastchat => vec![p.clone()],
            (_, Some(Value::Array(t))) => turn_texts(t, fastchat, path, line, expected)?,
            _ => return Err(row(path, line, format!("no question text; {expected}"))),
        };
        if turns.is_empty() || turns.iter().all(|t| t.trim().is_empty()) {
            return Err(blank_prompt(path, line, &qid));
        }
        if let Some(k) = turns.iter().position(|t| t.trim().is_empty()) {
            return Err(row(
                path,
                line,
                format!("turn {} of prompt {qid:?} is blank; expected a non-empty turn", k + 1),
            ));
        }
        if let Some(first) = first_line.insert(qid.clone(), line) {
            return Err(row(
                path,
                line,
                format!("question {qid:?} is also on line {first}; expected one line per question"),
            ));
        }
        out.insert(qid, Question { turns });
    }
    Ok(out)
}

/// Arena-Hard answers (JSON Lines, either layout per line) or MT-Bench answers (`fastchat`),
/// with the question texts from `questions`.
pub(super) fn read_answers_jsonl(
    path: &Path,
    questions: &HashMap<String, Question>,
    fastchat: bool,
    from: SystemFrom,
) -> Result<Vec<Answer>, ImportError> {
    let expected = if fastchat { FC_ANSWER } else { AH_ANSWER };
    let mut out = Vec::new();
    for (line, v) in json_lines(path, expected)? {
        // The 2025 layout carries the question too (its user messages): enough without --questions.
        let mut asked: Vec<String> = Vec::new();
        let choices = v.get("choices").and_then(Value::as_array).map_or(1, Vec::len);
        let (qid, system, turns) = match v.get("messages") {
            Some(Value::Array(msgs)) if !fastchat => {
                asked = msgs
                    .iter()
                    .filter(|m| m.get("role").and_then(Value::as_str) == Some("user"))
                    .filter_map(|m| m.get("content").and_then(Value::as_str).map(str::to_owned))
                    .collect();
                let qid = question_id(&v, &["uid", "question_id"], path, line, expected)?;
                let system = system_of(&v, &["model", "model_id"], from, path, line, expected)?;
                let mut turns = Vec::new();
                for (k, m) in msgs.iter().enumerate() {
                    if m.get("role").and_then(Value::as_str) != Some("assistant") {
                        continue;
                    }
                    match m.get("content") {
                        Some(Value::String(s)) => turns.push(s.clone()),
                        Some(c) if c.get("answer").is_some_and(Value::is_string) => {
                            turns.push(c["answer"].as_str().unwrap_or_default().to_owned());
                        }
                        _ => {
                            return Err(row(
                                path,
                                line,
                                format!("message {} (assistant) has no \"content\": {{\"answer\"}}; {expected}", k + 1),
                            ));
                        }
                    }
                }
                if turns.is_empty() {
                    return Err(row(path, line, format!("no assistant message; {expected}")));
                }
                (qid, system, turns)
            }
            _ => {
                let qid = question_id(&v, &["question_id", "uid"], path, line, expected)?;
                let system = system_of(&v, &["model_id", "model"], from, path, line, expected)?;
                let raw = v
                    .get("choices")
                    .and_then(|c| c.get(0))
                    .and_then(|c| c.get("turns"))
                    .and_then(Value::as_array)
                    .ok_or_else(|| row(path, line, format!("missing \"choices\"[0].\"turns\"; {expected}")))?;
                if raw.is_empty() {
                    return Err(row(path, line, format!("\"choices\"[0].\"turns\" is empty; {expected}")));
                }
                (qid, system, turn_texts(raw, fastchat, path, line, expected)?)
            }
        };
        let q_turns: &[String] = match questions.get(&qid) {
            // The answer's own question and the questions file's must be one text (up to white
            // space and Unicode form): else the pool would pair answers with a prompt not asked.
            Some(q) if !asked.is_empty() && fold(&asked) != fold(&q.turns) => {
                return Err(row(
                    path,
                    line,
                    format!(
                        "its question (the user message{}) differs from question {qid:?} of the questions file (--questions); expected the questions the models answered: give the matching questions file, or none (the answers hold their questions)",
                        if asked.len() > 1 { "s" } else { "" }
                    ),
                ));
            }
            Some(q) => &q.turns,
            None if questions.is_empty() && !asked.is_empty() => &asked,
            None if questions.is_empty() => {
                return Err(row(
                    path,
                    line,
                    "this answer holds no question text (the 2024 Arena-Hard and the FastChat layouts keep it in a separate file): give the questions file with --questions",
                ));
            }
            None => {
                return Err(row(path, line, format!("question id {qid:?} is not in the questions file (--questions)")));
            }
        };
        out.push(Answer { choices, ..answer(qid, q_turns, system, turns, path, line)? });
    }
    Ok(out)
}

/// Turns as one text, compared up to white space, invisible characters and Unicode form.
fn fold(turns: &[String]) -> Vec<String> {
    turns.iter().map(|t| crate::domain::names::fold_text(t)).collect()
}

/// The columns of an answers CSV, in the order [`read_csv`] keeps them.
pub(super) const CSV_COLUMNS: [&str; 4] = ["prompt_id", "prompt", "system", "text"];

/// CSV or TSV (`tab`) answers: a header naming the columns prompt_id, prompt, system and text
/// in any order; other columns are ignored and returned (their names, for the summary).
pub(super) fn read_csv(path: &Path, tab: bool) -> Result<(Vec<Answer>, Vec<String>), ImportError> {
    let (kind, delim) = if tab { ("TSV", b'\t') } else { ("CSV", b',') };
    let bytes = std::fs::read(path).map_err(io(path))?;
    let bytes = crate::domain::text::utf8_text(&bytes).map_err(|(line, m)| row(path, line, m))?.as_bytes();
    let wanted = CSV_COLUMNS.join(", ");
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(row(
            path,
            1,
            format!("the file is empty; expected a {kind} header naming the columns {wanted}, then one answer per row"),
        ));
    }
    super::check_quotes(path, bytes, delim)?;
    let mut rd = csv::ReaderBuilder::new().has_headers(true).flexible(false).delimiter(delim).from_reader(bytes);
    let header: Vec<String> = rd
        .headers()
        .map_err(|e| row(path, 1, format!("{e}; expected a {kind} header naming the columns {wanted}")))?
        .iter()
        // Column names in any case (`Prompt_ID`), as spreadsheets write them.
        .map(|h| h.trim().to_ascii_lowercase())
        .collect();
    if let Some(h) = super::repeated_column(&header, &CSV_COLUMNS) {
        return Err(row(path, 1, format!("the header names the column {h:?} twice; expected each of {wanted} once")));
    }
    let mut cols = [usize::MAX; 4];
    let mut ignored = Vec::new();
    for (i, h) in header.iter().enumerate() {
        match CSV_COLUMNS.iter().position(|c| c == h) {
            Some(k) => cols[k] = i,
            None => ignored.push(h.clone()),
        }
    }
    let missing: Vec<&str> = CSV_COLUMNS.iter().zip(cols).filter(|(_, i)| *i == usize::MAX).map(|(c, _)| *c).collect();
    if !missing.is_empty() {
        let hint = match (tab, header.len() == 1 && header[0].contains(if tab { ',' } else { '\t' })) {
            (false, true) => " (the header has tabs: for a tab-separated file give --format tsv)",
            (true, true) => " (the header has commas: for a comma-separated file give --format csv)",
            _ => "",
        };
        return Err(row(
            path,
            1,
            format!(
                "the header {:?} lacks the column{} {}; expected the columns {wanted} in any order (other columns are ignored){hint}",
                header.join(if tab { "\t" } else { "," }),
                if missing.len() == 1 { "" } else { "s" },
                missing.join(", ")
            ),
        ));
    }
    let mut out = Vec::new();
    for rec in rd.records() {
        let rec = rec.map_err(|e| super::csv_row_error(path, bytes, &e, header.len()))?;
        let line = super::line_at(bytes, rec.position());
        let get = |k: usize| rec.get(cols[k]).unwrap_or_default();
        // The ids trimmed, as the header is: "a " and "a" are one system (or prompt).
        let (pid, prompt, system, text) = (get(0).trim(), get(1), get(2).trim(), get(3));
        for (k, v) in [(0, pid), (2, system)] {
            if v.is_empty() {
                let name = CSV_COLUMNS[k];
                return Err(row(path, line, format!("empty {name}; expected a non-empty {name}")));
            }
        }
        if prompt.trim().is_empty() {
            return Err(blank_prompt(path, line, pid));
        }
        out.push(answer(pid.to_owned(), &[prompt.to_owned()], system.to_owned(), vec![text.to_owned()], path, line)?);
    }
    if out.is_empty() {
        return Err(row(path, 1, format!("a header and no row (the file holds no answer); expected rows of {wanted}")));
    }
    Ok((out, ignored))
}

/// Read one answers file of `format` (see [`super::import_with`]).
pub(super) fn read(
    format: ImportFormat,
    path: &Path,
    questions: &HashMap<String, Question>,
    from: SystemFrom,
) -> Result<(Vec<Answer>, Vec<String>), ImportError> {
    Ok(match format {
        ImportFormat::AlpacaEval => (read_alpaca(path, from)?, Vec::new()),
        ImportFormat::ArenaHard => (read_answers_jsonl(path, questions, false, from)?, Vec::new()),
        ImportFormat::MtBench => (read_answers_jsonl(path, questions, true, from)?, Vec::new()),
        ImportFormat::Csv => read_csv(path, false)?,
        ImportFormat::Tsv => read_csv(path, true)?,
    })
}

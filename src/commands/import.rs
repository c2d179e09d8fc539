//! `topk-judge import`: build a pool file for a run over many prompts (docs/systems.md) from
//! model outputs as other benchmarks store them.
//!
//! - `alpaca_eval`: AlpacaEval model-output JSON, one array per file of
//!   `{"instruction", "output", "generator", ...}`; the prompt is the instruction (prompt id
//!   `i-` + the first 12 hex digits of its SHA-256, so the same instruction in several files is
//!   one prompt).
//! - `arena_hard`: Arena-Hard answer JSON Lines, one line per answer
//!   `{"question_id", "model_id" | "model", "choices": [{"turns": [{"content"}]}]}` (the turns'
//!   contents joined by a blank line); the question text comes from `--questions`
//!   (`{"question_id", "turns": [{"content"}]}` or `{"question_id", "prompt"}` per line).
//! - `csv`: a CSV file with the header `prompt_id,prompt,system,text` (RFC 4180 quoting).
//!
//! Each prompt becomes one pool line `{"pool_id", "task", "items": [{"id": system, "system",
//! "text"}]}`, prompts in order of first appearance, systems in order of first appearance.
//! A prompt answered by fewer than two systems cannot be compared and is left out (counted in
//! the summary). A bad row is an error naming the file, the line and what was expected.

use crate::report::import::ImportSummary;
use serde::Serialize;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

/// Input formats of `import`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
#[value(rename_all = "snake_case")]
pub enum ImportFormat {
    /// AlpacaEval model outputs: a JSON array of {instruction, output, generator}.
    AlpacaEval,
    /// Arena-Hard model answers: JSON Lines of {question_id, model_id, `choices[0].turns`}.
    ArenaHard,
    /// CSV with the header prompt_id,prompt,system,text.
    Csv,
}

/// Errors of `import`.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// A row (line, array element or CSV record) is not what the format expects.
    #[error("{path}:{line}: {msg}")]
    Row {
        /// The input file.
        path: PathBuf,
        /// 1-based line of the row (for JSON arrays: the line where the element starts).
        line: usize,
        /// What is wrong and what was expected.
        msg: String,
    },
    /// `--format arena_hard` without `--questions`.
    #[error("arena_hard answers hold no question text: give the questions file with --questions")]
    MissingQuestions,
    /// Nothing to compare: no prompt has answers of two systems.
    #[error("no prompt has answers of two or more systems; nothing to rank ({0})")]
    Empty(String),
}

/// One answer read from an input.
#[derive(Debug, Clone, PartialEq)]
struct Answer {
    prompt_id: String,
    prompt: String,
    system: String,
    text: String,
    /// Where it was read (file, line), for errors.
    at: (PathBuf, usize),
}

#[derive(Serialize)]
struct OutItem<'a> {
    id: &'a str,
    system: &'a str,
    text: &'a str,
}

#[derive(Serialize)]
struct OutPool<'a> {
    pool_id: &'a str,
    task: &'a str,
    items: Vec<OutItem<'a>>,
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> ImportError + '_ {
    move |source| ImportError::Io { path: path.to_owned(), source }
}

fn row(path: &Path, line: usize, msg: impl Into<String>) -> ImportError {
    ImportError::Row { path: path.to_owned(), line, msg: msg.into() }
}

/// The prompt id of an instruction without one: `i-` + 12 hex digits of its SHA-256.
pub fn instruction_id(text: &str) -> String {
    format!("i-{}", &crate::domain::rng::sha256_hex(text)[..12])
}

/// A required string field of a JSON object.
fn field<'a>(v: &'a Value, key: &str, path: &Path, line: usize, expected: &str) -> Result<&'a str, ImportError> {
    match v.get(key) {
        Some(Value::String(s)) => Ok(s),
        Some(other) => Err(row(path, line, format!("field {key:?} is {other}, expected a string; {expected}"))),
        None => Err(row(path, line, format!("missing field {key:?}; {expected}"))),
    }
}

/// AlpacaEval outputs: a JSON array of objects; each element's line is where it starts.
fn read_alpaca(path: &Path) -> Result<Vec<Answer>, ImportError> {
    const EXPECTED: &str = "expected AlpacaEval model outputs {\"instruction\", \"output\", \"generator\"}";
    let text = std::fs::read_to_string(path).map_err(io(path))?;
    let text = crate::store::text::strip_bom_str(&text);
    let all: Value = serde_json::from_str(text)
        .map_err(|e| row(path, e.line(), format!("not valid JSON ({e}); {EXPECTED} in a JSON array")))?;
    let Value::Array(elems) = all else {
        return Err(row(path, 1, format!("the file is not a JSON array; {EXPECTED} in a JSON array")));
    };
    let lines = element_lines(text);
    elems
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let line = lines.get(i).copied().unwrap_or(1);
            let instruction = field(v, "instruction", path, line, EXPECTED)?;
            Ok(Answer {
                prompt_id: instruction_id(instruction),
                prompt: instruction.to_owned(),
                system: field(v, "generator", path, line, EXPECTED)?.to_owned(),
                text: field(v, "output", path, line, EXPECTED)?.to_owned(),
                at: (path.to_owned(), line),
            })
        })
        .collect()
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
/// a line that is not JSON is an error naming it, with what was `expected`.
fn json_lines(path: &Path, expected: &str) -> Result<Vec<(usize, Value)>, ImportError> {
    let text = std::fs::read_to_string(path).map_err(io(path))?;
    let mut out = Vec::new();
    for (i, l) in crate::store::text::strip_bom_str(&text).lines().enumerate() {
        if l.trim().is_empty() {
            continue;
        }
        let v = serde_json::from_str(l).map_err(|e| row(path, i + 1, format!("not valid JSON ({e}); {expected}")))?;
        out.push((i + 1, v));
    }
    Ok(out)
}

/// An Arena-Hard `question_id` (a string, or a number written as text).
fn question_id(v: &Value, path: &Path, line: usize, expected: &str) -> Result<String, ImportError> {
    match v.get("question_id") {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(Value::Number(n)) => Ok(n.to_string()),
        _ => Err(row(path, line, format!("missing field \"question_id\"; {expected}"))),
    }
}

/// Arena-Hard answers (JSON Lines), with question texts from `questions`.
fn read_arena(path: &Path, questions: &HashMap<String, String>) -> Result<Vec<Answer>, ImportError> {
    const EXPECTED: &str =
        "expected an Arena-Hard answer {\"question_id\", \"model_id\", \"choices\": [{\"turns\": [{\"content\"}]}]}";
    let mut out = Vec::new();
    for (line, v) in json_lines(path, EXPECTED)? {
        let qid = question_id(&v, path, line, EXPECTED)?;
        let system = match (v.get("model_id"), v.get("model")) {
            (Some(Value::String(s)), _) | (None, Some(Value::String(s))) => s.clone(),
            _ => return Err(row(path, line, format!("missing field \"model_id\" (or \"model\"); {EXPECTED}"))),
        };
        let turns = v
            .get("choices")
            .and_then(|c| c.get(0))
            .and_then(|c| c.get("turns"))
            .and_then(Value::as_array)
            .ok_or_else(|| row(path, line, format!("missing \"choices\"[0].\"turns\"; {EXPECTED}")))?;
        let parts: Vec<&str> = turns.iter().filter_map(|t| t.get("content").and_then(Value::as_str)).collect();
        if parts.is_empty() || parts.len() != turns.len() {
            return Err(row(path, line, format!("a turn without a string \"content\"; {EXPECTED}")));
        }
        let prompt = questions.get(&qid).cloned().ok_or_else(|| {
            row(path, line, format!("question_id {qid:?} is not in the questions file (--questions)"))
        })?;
        out.push(Answer { prompt_id: qid, prompt, system, text: parts.join("\n\n"), at: (path.to_owned(), line) });
    }
    Ok(out)
}

/// Arena-Hard questions: `question_id` → the question text (`turns[*].content` joined, or
/// `prompt`).
fn read_questions(path: &Path) -> Result<HashMap<String, String>, ImportError> {
    const EXPECTED: &str = "expected an Arena-Hard question {\"question_id\", \"turns\": [{\"content\"}]} or {\"question_id\", \"prompt\"}";
    let mut out = HashMap::new();
    for (line, v) in json_lines(path, EXPECTED)? {
        let qid = question_id(&v, path, line, EXPECTED)?;
        let text = match (v.get("prompt").and_then(Value::as_str), v.get("turns").and_then(Value::as_array)) {
            (Some(p), _) => p.to_owned(),
            (None, Some(t)) => {
                t.iter().filter_map(|t| t.get("content").and_then(Value::as_str)).collect::<Vec<_>>().join("\n\n")
            }
            _ => return Err(row(path, line, format!("no question text; {EXPECTED}"))),
        };
        out.insert(qid, text);
    }
    Ok(out)
}

/// CSV with the header `prompt_id,prompt,system,text` (other columns are errors).
fn read_csv(path: &Path) -> Result<Vec<Answer>, ImportError> {
    const HEADER: [&str; 4] = ["prompt_id", "prompt", "system", "text"];
    let bytes = std::fs::read(path).map_err(io(path))?;
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF".as_slice()).unwrap_or(&bytes);
    let mut rd = csv::ReaderBuilder::new().has_headers(true).flexible(false).from_reader(bytes);
    let header: Vec<String> = rd
        .headers()
        .map_err(|e| row(path, 1, format!("{e}; expected the header prompt_id,prompt,system,text")))?
        .iter()
        .map(|h| h.trim().to_owned())
        .collect();
    if header != HEADER {
        return Err(row(path, 1, format!("header {:?}; expected prompt_id,prompt,system,text", header.join(","))));
    }
    let mut out = Vec::new();
    for rec in rd.records() {
        let rec = rec.map_err(|e| {
            let line = e.position().map_or(0, |p| p.line() as usize);
            row(path, line, format!("{e}; expected 4 fields prompt_id,prompt,system,text"))
        })?;
        let line = rec.position().map_or(0, |p| p.line() as usize);
        // A quote opened and never closed makes the parser read the following rows into one
        // field: legal CSV, but never meant. A quoted field holding a line shaped like a row of
        // this file (4 fields, the first three non-empty, an id without spaces first) is reported.
        for (k, name) in HEADER.iter().enumerate() {
            if let Some(inner) = swallowed_row(&rec[k]) {
                return Err(row(
                    path,
                    line,
                    format!(
                        "the quoted {name} runs over a line that looks like a row ({inner:?}): a quote opened and not closed? \
                         Close the quote, or double the quotes inside a quoted field (\"\")"
                    ),
                ));
            }
        }
        for (k, name) in HEADER.iter().enumerate() {
            if k != 1 && rec[k].trim().is_empty() {
                return Err(row(path, line, format!("empty {name}; expected a non-empty {name}")));
            }
        }
        out.push(Answer {
            prompt_id: rec[0].to_owned(),
            prompt: rec[1].to_owned(),
            system: rec[2].to_owned(),
            text: rec[3].to_owned(),
            at: (path.to_owned(), line),
        });
    }
    Ok(out)
}

/// The first line after the first of a multi-line field that parses as a CSV row of 4 fields,
/// each line but the last non-empty (a row swallowed by an unclosed quote).
fn swallowed_row(field: &str) -> Option<String> {
    field.lines().skip(1).find_map(|l| {
        let mut rd = csv::ReaderBuilder::new().has_headers(false).flexible(true).from_reader(l.as_bytes());
        let rec = rd.records().next()?.ok()?;
        let row_shaped = rec.len() == 4 && rec.iter().take(3).all(|f| !f.trim().is_empty()) && !rec[0].contains(' ');
        row_shaped.then(|| l.chars().take(60).collect())
    })
}

/// Read `inputs` in `format` (Arena-Hard needs `questions`) and write the pool file `out`.
///
/// # Errors
/// [`ImportError`]: a file that cannot be read or written; a bad row named by file and line; a
/// system answering one prompt twice; one prompt id with two different prompt texts; nothing
/// to compare.
pub fn import(
    format: ImportFormat,
    inputs: &[PathBuf],
    questions: Option<&Path>,
    out: &Path,
) -> Result<ImportSummary, ImportError> {
    let questions = match (format, questions) {
        (ImportFormat::ArenaHard, Some(q)) => read_questions(q)?,
        (ImportFormat::ArenaHard, None) => return Err(ImportError::MissingQuestions),
        _ => HashMap::new(),
    };
    let mut answers = Vec::new();
    for p in inputs {
        answers.extend(match format {
            ImportFormat::AlpacaEval => read_alpaca(p)?,
            ImportFormat::ArenaHard => read_arena(p, &questions)?,
            ImportFormat::Csv => read_csv(p)?,
        });
    }
    // Group by prompt (first appearance), check one text per prompt id and one answer per system.
    let mut order: Vec<String> = Vec::new();
    // Per prompt id: its text, where it was first seen (file, line), its answers.
    type PromptAnswers = (String, (PathBuf, usize), Vec<usize>);
    let mut by_prompt: HashMap<String, PromptAnswers> = HashMap::new();
    let mut systems: Vec<String> = Vec::new();
    for (i, a) in answers.iter().enumerate() {
        if !systems.contains(&a.system) {
            systems.push(a.system.clone());
        }
        let entry = by_prompt.entry(a.prompt_id.clone()).or_insert_with(|| {
            order.push(a.prompt_id.clone());
            (a.prompt.clone(), a.at.clone(), Vec::new())
        });
        if entry.0 != a.prompt {
            return Err(row(
                &a.at.0,
                a.at.1,
                format!(
                    "prompt {:?} has another text than at {}:{}; expected one prompt text per prompt id",
                    a.prompt_id,
                    entry.1.0.display(),
                    entry.1.1
                ),
            ));
        }
        if let Some(&j) = entry.2.iter().find(|&&j| answers[j].system == a.system) {
            let b = &answers[j];
            return Err(row(
                &a.at.0,
                a.at.1,
                format!(
                    "system {:?} answers prompt {:?} twice (also at {}:{}); expected one answer per system and prompt",
                    a.system,
                    a.prompt_id,
                    b.at.0.display(),
                    b.at.1
                ),
            ));
        }
        entry.2.push(i);
    }
    let rank: BTreeMap<&str, usize> = systems.iter().enumerate().map(|(i, s)| (s.as_str(), i)).collect();
    let mut text = String::new();
    let (mut prompts, mut skipped) = (0, 0);
    for pid in &order {
        let (task, _, idx) = &by_prompt[pid];
        if idx.len() < 2 {
            skipped += 1;
            continue;
        }
        let mut idx = idx.clone();
        idx.sort_by_key(|&i| rank[answers[i].system.as_str()]);
        let items = idx
            .iter()
            .map(|&i| OutItem { id: &answers[i].system, system: &answers[i].system, text: &answers[i].text })
            .collect();
        text.push_str(&serde_json::to_string(&OutPool { pool_id: pid, task, items }).expect("serialisable"));
        text.push('\n');
        prompts += 1;
    }
    if prompts == 0 {
        return Err(ImportError::Empty(format!("{} answers read", answers.len())));
    }
    if let Some(parent) = out.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(io(parent))?;
    }
    std::fs::write(out, text).map_err(io(out))?;
    Ok(ImportSummary { answers: answers.len(), prompts, skipped_prompts: skipped, systems })
}

/// `topk-judge import --format F FILE… --out POOLS`.
#[derive(Debug, clap::Args)]
pub struct ImportArgs {
    /// Input format.
    #[arg(long, value_enum)]
    pub format: ImportFormat,
    /// Input files (one per model for AlpacaEval and Arena-Hard; any number of CSV files).
    #[arg(required = true)]
    pub inputs: Vec<PathBuf>,
    /// Arena-Hard questions (JSON Lines with question_id and turns or prompt).
    #[arg(long)]
    pub questions: Option<PathBuf>,
    /// The pool file to write (JSON Lines, one prompt per line).
    #[arg(long)]
    pub out: PathBuf,
}

/// `topk-judge import`: write the pool file and print what it holds.
///
/// # Errors
/// [`ImportError`].
pub fn run(args: &ImportArgs) -> Result<std::process::ExitCode, ImportError> {
    let s = import(args.format, &args.inputs, args.questions.as_deref(), &args.out)?;
    super::print_out(&s.text(&args.out));
    Ok(std::process::ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/import").join(name)
    }

    fn read_out(p: &Path) -> Vec<Value> {
        std::fs::read_to_string(p).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
    }

    #[test]
    fn alpaca_eval_outputs_become_one_pool_per_instruction() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("pools.jsonl");
        let inputs = [
            fixture("alpaca_eval/model_a.json"),
            fixture("alpaca_eval/model_b.json"),
            fixture("alpaca_eval/model_c.json"),
        ];
        let s = import(ImportFormat::AlpacaEval, &inputs, None, &out).unwrap();
        assert_eq!((s.answers, s.prompts, s.skipped_prompts), (9, 3, 0));
        assert_eq!(s.systems, ["model_a", "model_b", "model_c"]);
        let pools = read_out(&out);
        assert_eq!(pools.len(), 3);
        assert_eq!(pools[0]["pool_id"], instruction_id("Name three primary colours."));
        assert_eq!(pools[0]["task"], "Name three primary colours.");
        assert_eq!(
            pools[0]["items"][1],
            serde_json::json!({"id": "model_b", "system": "model_b", "text": "Red, yellow and blue."})
        );
        // The pool file loads as a run over many pools.
        let pool = crate::config::run::load_systems_pool(&out, &crate::config::run::PoolIds::All).unwrap();
        assert_eq!((pool.n_prompts(), pool.n_bases(), pool.n_items()), (3, 3, 9));
    }

    #[test]
    fn arena_hard_answers_with_questions() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("pools.jsonl");
        let inputs = [fixture("arena_hard/model_answer/alpha.jsonl"), fixture("arena_hard/model_answer/beta.jsonl")];
        let q = fixture("arena_hard/question.jsonl");
        let s = import(ImportFormat::ArenaHard, &inputs, Some(&q), &out).unwrap();
        // q3 is answered by alpha only: left out.
        assert_eq!((s.answers, s.prompts, s.skipped_prompts), (5, 2, 1));
        let pools = read_out(&out);
        assert_eq!(pools[0]["pool_id"], "q1");
        assert_eq!(pools[0]["task"], "Write a haiku about rust.");
        assert_eq!(pools[1]["items"][0]["text"], "First part.\n\nSecond part.");
        let e = import(ImportFormat::ArenaHard, &inputs, None, &out).unwrap_err();
        assert!(e.to_string().contains("--questions"), "{e}");
    }

    #[test]
    fn csv_rows_and_bad_rows_named_by_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("pools.jsonl");
        let s = import(ImportFormat::Csv, &[fixture("answers.csv")], None, &out).unwrap();
        assert_eq!((s.answers, s.prompts), (6, 2));
        let pools = read_out(&out);
        // A quoted field with a comma and a line break.
        assert_eq!(pools[1]["items"][2]["text"], "Paris, the capital,\nof France.");
        let bad = |name: &str, content: &str, format: ImportFormat| {
            let p = dir.path().join(name);
            std::fs::write(&p, content).unwrap();
            import(format, std::slice::from_ref(&p), None, &out)
                .unwrap_err()
                .to_string()
                .replace(&p.display().to_string(), name)
        };
        assert_eq!(
            bad("a.csv", "prompt_id,prompt,system,text\np1,Q,s1,x\np1,Q,s1,y\n", ImportFormat::Csv),
            "a.csv:3: system \"s1\" answers prompt \"p1\" twice (also at a.csv:2); expected one answer per system and prompt"
        );
        assert_eq!(
            bad("b.csv", "prompt_id,prompt,system,text\np1,Q,s1,x\np1,Q,,y\n", ImportFormat::Csv),
            "b.csv:3: empty system; expected a non-empty system"
        );
        assert_eq!(
            bad("c.csv", "prompt_id,prompt,model,text\n", ImportFormat::Csv),
            "c.csv:1: header \"prompt_id,prompt,model,text\"; expected prompt_id,prompt,system,text"
        );
        assert!(bad("d.csv", "prompt_id,prompt,system,text\np1,Q,s1\n", ImportFormat::Csv).starts_with("d.csv:2: "));
        // A stray quote (new-user check): the rows after it are reported, not read into the text.
        assert_eq!(
            bad(
                "s.csv",
                "prompt_id,prompt,system,text\np1,Q,s1,a\np1,Q,s2,\"oops\np2,R,s1,c\np2,R,s2,d\np3,S,s1,x\"\n",
                ImportFormat::Csv
            ),
            "s.csv:3: the quoted text runs over a line that looks like a row (\"p2,R,s1,c\"): a quote opened and not closed? Close the quote, or double the quotes inside a quoted field (\"\")"
        );
        // A text that spans lines legitimately is kept.
        let ok = dir.path().join("ok.csv");
        std::fs::write(&ok, "prompt_id,prompt,system,text\np1,Q,s1,\"line one\nline two, with a comma\"\np1,Q,s2,b\n")
            .unwrap();
        assert!(import(ImportFormat::Csv, std::slice::from_ref(&ok), None, &out).is_ok());
        assert_eq!(
            bad("e.csv", "prompt_id,prompt,system,text\np1,Q,s1,x\np1,R,s2,y\n", ImportFormat::Csv),
            "e.csv:3: prompt \"p1\" has another text than at e.csv:2; expected one prompt text per prompt id"
        );
        assert_eq!(
            bad(
                "f.json",
                "[\n  {\"instruction\": \"x\", \"output\": \"o\", \"generator\": \"g\"},\n  {\"instruction\": \"x\", \"output\": \"o\"}\n]",
                ImportFormat::AlpacaEval
            ),
            "f.json:3: missing field \"generator\"; expected AlpacaEval model outputs {\"instruction\", \"output\", \"generator\"}"
        );
        let q = dir.path().join("q.jsonl");
        std::fs::write(&q, "{\"question_id\": \"q1\", \"prompt\": \"Q\"}\n").unwrap();
        let g = dir.path().join("g.jsonl");
        std::fs::write(&g, "{\"question_id\": \"q1\", \"model_id\": \"m\", \"choices\": [{\"turns\": [{\"content\": \"x\"}]}]}\n{\"question_id\": \"q1\", \"model_id\": \"n\", \"choices\": []}\n").unwrap();
        let e = import(ImportFormat::ArenaHard, std::slice::from_ref(&g), Some(&q), &out).unwrap_err().to_string();
        assert_eq!(
            e.replace(&g.display().to_string(), "g.jsonl"),
            "g.jsonl:2: missing \"choices\"[0].\"turns\"; expected an Arena-Hard answer {\"question_id\", \"model_id\", \"choices\": [{\"turns\": [{\"content\"}]}]}"
        );
    }
}

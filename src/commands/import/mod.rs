//! `topk-judge import`: build a pool file for a run over many prompts (docs/systems.md) from model
//! outputs as other benchmarks store them (`--format`), or a replay recording (docs/replay.md)
//! from the verdicts they published (`--judgments`). Exactly one of the two is given.
//!
//! Answers (`--format`):
//! - `alpaca_eval`: AlpacaEval model-output JSON, one array per file of
//!   `{"instruction", "output", "generator", ...}`; the prompt is the instruction (prompt id
//!   `i-` + the first 12 hex digits of its SHA-256, so the same instruction in several files is
//!   one prompt).
//! - `arena_hard`: Arena-Hard answer JSON Lines, one line per answer, in either layout (told
//!   apart per line): since April 2025 `{"uid", "model", "messages": [{"role": "user", …},
//!   {"role": "assistant", "content": {"answer"}}]}`, before `{"question_id", "model_id" |
//!   "model", "choices": [{"turns": [{"content"}]}]}`. The question text comes from `--questions`:
//!   `{"uid", "prompt"}` (2025) or `{"question_id", "turns": [{"content"}]}` (2024) per line.
//! - `mt_bench`: FastChat's layout (MT-Bench, arena-bench-v1): questions `{"question_id",
//!   "turns": [<text>, …]}` from `--questions`, answers `{"question_id", "model_id", "choices":
//!   [{"turns": [<text>, …]}]}` (the turns are strings; a file of the other layout is an error
//!   naming the format to use).
//! - `csv` / `tsv`: RFC 4180 (the `csv` crate; quoted commas, line breaks and doubled quotes;
//!   CRLF or LF row ends), comma- or tab-separated. The header names the columns `prompt_id`,
//!   `prompt`, `system` and `text` in any order; other columns (a pandas index column `""` or
//!   `Unnamed: 0`, anything else) are ignored and named in the summary. The delimiter is never
//!   guessed: a `.tsv` file given with `--format csv` is an error suggesting `--format tsv`.
//!
//! Each prompt becomes one pool line `{"pool_id", "task", "items": [{"id": system, "system",
//! "text"}]}`, prompts in order of first appearance, systems in order of first appearance.
//! A question of two or more turns (MT-Bench) keeps them: the pool line gets
//! `"task_turns": [t1, t2, …]` and each item `"turns": [a1, a2, …]`, while `task` and `text`
//! stay the turns joined by a blank line (so every reader of `task`/`text` still works). An
//! answer to a single-turn question that comes in several turns is joined the same way.
//! `--system-from file` names the system by the file's stem (`outputs/NullModel.json` →
//! `NullModel`) instead of the answer's field (for AlpacaEval outputs whose `generator` says
//! "example").
//!
//! A prompt answered by fewer than two systems cannot be compared and is left out (counted in
//! the summary). A bad row is an error naming the file, the line and what was expected — among
//! them a blank prompt, a blank answer ("empty answer of system X to prompt Y"), one system
//! answering a prompt twice, and the same file given twice on the command line.
//!
//! Judgments (`--judgments`): see [`judgments`].

mod answers;
pub mod judgments;
pub mod pyrandom;

use crate::report::import::ImportSummary;
pub use answers::instruction_id;
use answers::{Answer, Question};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

/// Input formats of `import --format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
#[value(rename_all = "snake_case")]
pub enum ImportFormat {
    /// AlpacaEval model outputs: a JSON array of {instruction, output, generator}.
    AlpacaEval,
    /// Arena-Hard model answers, 2025 {uid, model, messages} or 2024 {question_id, model_id, choices}.
    ArenaHard,
    /// FastChat / MT-Bench / arena-bench-v1 answers: `{question_id, model_id, choices[0].turns: [text]}`.
    MtBench,
    /// CSV with a header naming prompt_id, prompt, system, text (any order, other columns ignored).
    Csv,
    /// The same, tab-separated.
    Tsv,
}

/// Where the system name of an answer comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
#[value(rename_all = "snake_case")]
pub enum SystemFrom {
    /// The answer's own field (generator, model, model_id, the CSV's system column).
    #[default]
    Field,
    /// The file name without its extension (outputs/NullModel.json → NullModel).
    File,
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
    /// `--format mt_bench` without `--questions` (a 2024 Arena-Hard answer without it is a row error).
    #[error("{0} answers hold no question text: give the questions file with --questions")]
    MissingQuestions(&'static str),
    /// One file given twice on the command line.
    #[error("{0} is given twice")]
    Twice(PathBuf),
    /// Options that do not go together.
    #[error("{0}")]
    Usage(String),
    /// Nothing to compare: no prompt has answers of two systems.
    #[error("no prompt has answers of two or more systems; nothing to rank ({0})")]
    Empty(String),
    /// The pool file built would not load (a rule of the pool loader the rows did not meet);
    /// nothing is written.
    #[error("the pool file built from the inputs would not load, so {out} was not written: {msg}")]
    Unloadable {
        /// The file that was to be written.
        out: PathBuf,
        /// The loader's error.
        msg: String,
    },
    /// Judgments of which no verdict between two systems is left to write.
    #[error("no verdict to write: {0}")]
    NoVerdict(String),
}

#[derive(Serialize)]
struct OutItem<'a> {
    id: &'a str,
    system: &'a str,
    text: &'a str,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    turns: &'a [String],
}

#[derive(Serialize)]
struct OutPool<'a> {
    pool_id: &'a str,
    task: &'a str,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    task_turns: &'a [String],
    items: Vec<OutItem<'a>>,
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> ImportError + '_ {
    move |source| ImportError::Io { path: path.to_owned(), source }
}

fn row(path: &Path, line: usize, msg: impl Into<String>) -> ImportError {
    ImportError::Row { path: path.to_owned(), line, msg: msg.into() }
}

/// The physical line (1-based) of `bytes` at which a CSV record read from them begins (0 when
/// the reader gives no position). The reader's own line count misses a line for each CRLF end
/// before the record and each blank line it skips, and its byte offset can point at the line
/// ends before the record (the `\n` of a CRLF, blank lines): those are stepped over.
fn line_at(bytes: &[u8], pos: Option<&csv::Position>) -> usize {
    pos.map_or(0, |p| {
        let mut at = usize::try_from(p.byte()).unwrap_or(usize::MAX).min(bytes.len());
        while at < bytes.len() && matches!(bytes[at], b'\r' | b'\n') {
            at += 1;
        }
        bytes[..at].iter().filter(|b| **b == b'\n').count() + 1
    })
}

/// A CSV row the reader refused (`e`), as the file's other faults are said: at its line, a row
/// of another length than the header's `header_len` fields by its count, anything else in the
/// reader's words.
fn csv_row_error(path: &Path, bytes: &[u8], e: &csv::Error, header_len: usize) -> ImportError {
    let line = line_at(bytes, e.position());
    match e.kind() {
        csv::ErrorKind::UnequalLengths { len, .. } => {
            row(path, line, format!("{len} fields; expected {header_len}, as in the header"))
        }
        _ => row(path, line, format!("{e}; expected {header_len} fields, as in the header")),
    }
}

/// RFC 4180 quoting of a CSV/TSV file (`delim` between fields): a quoted field must end with
/// its closing quote, followed by the delimiter, a line end or the end of the file, and a quote
/// inside it must be doubled. A quote left open would make a reader take every following row
/// into one field, silently (rows lost); this check names where the quote opened. Files
/// written by a CSV library (Python's `csv`, pandas, spreadsheets) always pass. A quote inside
/// an unquoted field (`5'10"`) is left to the reader, which keeps it as text.
///
/// # Errors
/// [`ImportError::Row`] naming the line of the opening quote, or of a stray quote in a quoted
/// field.
fn check_quotes(path: &Path, bytes: &[u8], delim: u8) -> Result<(), ImportError> {
    let (mut line, mut opened_at) = (1usize, 0usize);
    let mut in_quotes = false;
    let mut field_start = true;
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if in_quotes {
            if c == b'"' {
                match bytes.get(i + 1) {
                    Some(b'"') => i += 1,
                    None | Some(b'\r') | Some(b'\n') => in_quotes = false,
                    Some(&d) if d == delim => in_quotes = false,
                    Some(_) => {
                        return Err(row(
                            path,
                            line,
                            format!(
                                "a quote inside the quoted field opened on line {opened_at} is neither doubled (\"\") nor followed by the delimiter or a line end; expected RFC 4180 quoting (a quote opened and not closed?)"
                            ),
                        ));
                    }
                }
            } else if c == b'\n' {
                line += 1;
            }
        } else if c == b'"' && field_start {
            in_quotes = true;
            opened_at = line;
        } else if c == b'\n' {
            line += 1;
        }
        field_start = !in_quotes && (c == delim || c == b'\n');
        i += 1;
    }
    if in_quotes {
        return Err(row(
            path,
            opened_at,
            "the quoted field opened on this line is never closed (the file ends inside it); close the quote, or double the quotes inside a quoted field (\"\")",
        ));
    }
    Ok(())
}

/// The same file named twice (compared as canonical paths) is an error naming it.
fn check_distinct(inputs: &[PathBuf]) -> Result<(), ImportError> {
    let mut seen = std::collections::HashSet::new();
    for p in inputs {
        let c = std::fs::canonicalize(p).map_err(io(p))?;
        if !seen.insert(c) {
            return Err(ImportError::Twice(p.clone()));
        }
    }
    Ok(())
}

/// A CSV header's first column among `known` that it names twice (names compared as given:
/// the readers lower-case them first, so `winner` and `Winner` are one column).
fn repeated_column<'h>(header: &'h [String], known: &[&str]) -> Option<&'h str> {
    header
        .iter()
        .enumerate()
        .find(|(i, h)| known.contains(&h.as_str()) && header[..*i].contains(h))
        .map(|(_, h)| h.as_str())
}

/// Write `text` to `out`, creating its folder.
fn write_out(out: &Path, text: &str) -> Result<(), ImportError> {
    if let Some(parent) = out.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(io(parent))?;
        // A run folder's own files (its pool, its verdicts) are that run's books.
        let name = out.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        if crate::store::files::is_run_folder(parent) && crate::store::files::is_run_folder_file(name) {
            return Err(ImportError::Usage(format!(
                "--out {}: it is the {name} of the run folder {}: writing would overwrite that run's own file; give another file",
                out.display(),
                parent.display()
            )));
        }
    }
    std::fs::write(out, text).map_err(io(out))
}

/// [`import_with`] naming systems by their field.
///
/// # Errors
/// As [`import_with`].
pub fn import(
    format: ImportFormat,
    inputs: &[PathBuf],
    questions: Option<&Path>,
    out: &Path,
) -> Result<ImportSummary, ImportError> {
    import_with(format, inputs, questions, SystemFrom::Field, out)
}

/// Read `inputs` in `format` (MT-Bench and 2024 Arena-Hard answers need `questions`) and write the pool
/// file `out`.
///
/// # Errors
/// [`ImportError`]: a file that cannot be read or written, or given twice; a bad row named by
/// file and line (a blank prompt or answer among them); a system answering one prompt twice;
/// one prompt id with two different prompt texts; nothing to compare.
pub fn import_with(
    format: ImportFormat,
    inputs: &[PathBuf],
    questions: Option<&Path>,
    system_from: SystemFrom,
    out: &Path,
) -> Result<ImportSummary, ImportError> {
    check_distinct(inputs)?;
    let questions: HashMap<String, Question> = match (format, questions) {
        (ImportFormat::ArenaHard, Some(q)) => answers::read_questions(q, false)?,
        (ImportFormat::MtBench, Some(q)) => answers::read_questions(q, true)?,
        // The 2025 layout holds the question in each answer; the 2024 one needs the file.
        (ImportFormat::ArenaHard, None) => HashMap::new(),
        (ImportFormat::MtBench, None) => return Err(ImportError::MissingQuestions("mt_bench")),
        (_, Some(_)) => {
            return Err(ImportError::Usage(
                "--questions is for --format arena_hard and mt_bench; the other formats hold the prompt text".into(),
            ));
        }
        _ => HashMap::new(),
    };
    if system_from == SystemFrom::File && matches!(format, ImportFormat::Csv | ImportFormat::Tsv) {
        return Err(ImportError::Usage(
            "--system-from file names one system per file; a CSV or TSV file names the system of each row in its system column".into(),
        ));
    }
    let mut answers: Vec<Answer> = Vec::new();
    let mut notes = Vec::new();
    for p in inputs {
        if format == ImportFormat::Csv && p.extension().is_some_and(|e| e.eq_ignore_ascii_case("tsv")) {
            return Err(ImportError::Usage(format!(
                "{} is a .tsv file: give --format tsv for tab-separated values",
                p.display()
            )));
        }
        let (read, ignored) = answers::read(format, p, &questions, system_from)?;
        if !ignored.is_empty() {
            let names: Vec<String> = ignored.iter().map(|c| format!("{c:?}")).collect();
            notes.push(format!("ignored columns: {} (in {})", names.join(", "), p.display()));
        }
        answers.extend(read);
    }
    // Group by prompt (first appearance), check one text per prompt id and one answer per system.
    let mut order: Vec<String> = Vec::new();
    // Per prompt id: its text, where it was first seen (file, line), its answers.
    type PromptAnswers = (String, (PathBuf, usize), Vec<usize>);
    let mut by_prompt: HashMap<String, PromptAnswers> = HashMap::new();
    let mut systems: Vec<String> = Vec::new();
    // Prompt id and system make an answer's id `PROMPT/SYSTEM` where the prompts are ranked
    // together (docs/systems.md): each must be an id the pool loader takes, and no two answers
    // may get one id through a `/` in a name.
    let mut full_ids: HashMap<String, usize> = HashMap::new();
    for (i, a) in answers.iter().enumerate() {
        for (what, id) in [("prompt id", &a.prompt_id), ("system", &a.system)] {
            if let Some(problem) = crate::domain::pool::listed_id_problem(id) {
                return Err(row(&a.at.0, a.at.1, format!("its {what} {problem}")));
            }
        }
        let full = format!("{}/{}", a.prompt_id, a.system);
        if let Some(&j) = full_ids.get(&full)
            && (answers[j].prompt_id != a.prompt_id)
        {
            let b = &answers[j];
            return Err(row(
                &a.at.0,
                a.at.1,
                format!(
                    "system {:?} on prompt {:?} and system {:?} on prompt {:?} (at {}:{}) both make the answer id {full:?} (prompt id/system); rename one so that a `/` does not make them equal",
                    a.system,
                    a.prompt_id,
                    b.system,
                    b.prompt_id,
                    b.at.0.display(),
                    b.at.1
                ),
            ));
        }
        full_ids.insert(full, i);
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
            // A one-line JSON array (AlpacaEval outputs) holds both on one line.
            let also = if b.at == a.at {
                "also on this line: two elements of its JSON array".to_owned()
            } else {
                format!("also at {}:{}", b.at.0.display(), b.at.1)
            };
            return Err(row(
                &a.at.0,
                a.at.1,
                format!(
                    "system {:?} answers prompt {:?} twice ({also}); expected one answer per system and prompt",
                    a.system, a.prompt_id,
                ),
            ));
        }
        entry.2.push(i);
    }
    let rank: BTreeMap<&str, usize> = systems.iter().enumerate().map(|(i, s)| (s.as_str(), i)).collect();
    let mut text = String::new();
    let (mut prompts, mut multi_turn, mut written) = (0, 0, 0);
    let mut skipped = Vec::new();
    for pid in &order {
        let (task, _, idx) = &by_prompt[pid];
        if idx.len() < 2 {
            skipped.push(pid.clone());
            continue;
        }
        let mut idx = idx.clone();
        written += idx.len();
        idx.sort_by_key(|&i| rank[answers[i].system.as_str()]);
        let items = idx
            .iter()
            .map(|&i| {
                let a = &answers[i];
                OutItem { id: &a.system, system: &a.system, text: &a.text, turns: &a.turns }
            })
            .collect();
        let task_turns = &answers[idx[0]].prompt_turns;
        multi_turn += usize::from(!task_turns.is_empty());
        let line = OutPool { pool_id: pid, task, task_turns, items };
        text.push_str(&serde_json::to_string(&line).expect("serialisable"));
        text.push('\n');
        prompts += 1;
    }
    if prompts == 0 {
        return Err(ImportError::Empty(format!("{} read", crate::domain::fmt::count(answers.len(), "answer"))));
    }
    // By construction: what is written is what `run`, `fit` and `check` load.
    crate::store::pool_file::parse_pool_lines(out, text.as_bytes())
        .and_then(|lines| {
            crate::domain::pool::Pool::systems("import".into(), lines.into_iter().map(|(p, _, _)| p).collect())
        })
        .map_err(|e| ImportError::Unloadable { out: out.to_owned(), msg: e.to_string() })?;
    write_out(out, &text)?;
    if multi_turn > 0 {
        notes.push(format!(
            "{} {} turns (task_turns on the pool line, turns on each answer)",
            crate::domain::fmt::count(multi_turn, "prompt"),
            if multi_turn == 1 { "keeps its" } else { "keep their" }
        ));
    }
    // The answers with more than one of `what` (their count by `of`), counted, with the first
    // named: "(first: system "a", prompt "1", 2 turns, file:line)".
    let several = |of: fn(&Answer) -> usize, what: &str| -> Option<(usize, String)> {
        let first = answers.iter().find(|a| of(a) > 1)?;
        let n = answers.iter().filter(|a| of(a) > 1).count();
        let (file, line) = &first.at;
        Some((
            n,
            format!(
                "(first: system {:?}, prompt {:?}, {} {what}, {}:{line})",
                first.system,
                first.prompt_id,
                of(first),
                file.display()
            ),
        ))
    };
    if let Some((n, first)) = several(|a| a.joined, "turns") {
        notes.push(format!(
            "{} to a prompt of one turn {} several turns, joined into one text with a blank line between them {first}; the judge reads them as one answer",
            crate::domain::fmt::count(n, "answer"),
            if n == 1 { "has" } else { "have" },
        ));
    }
    // FastChat writes one choice per sample (`--num-choices`); one answer per system is imported.
    if let Some((n, first)) = several(|a| a.choices, "choices") {
        notes.push(format!(
            "{} {} several choices (samples); the first, \"choices\"[0], is imported and the others are left out {first}",
            crate::domain::fmt::count(n, "answer"),
            if n == 1 { "holds" } else { "hold" },
        ));
    }
    // Names one letter case, Unicode form or space apart (`llama`, `Llama`) are two systems:
    // said, as they are more likely one system spelled twice.
    notes.extend(crate::domain::names::near_duplicates(systems.iter().map(String::as_str), "systems"));
    // Prompt texts that differ only in surrounding white space, invisible characters or Unicode
    // form (`"Q2"`, `"Q2 "`, `"\u{feff}Q2"`) get two ids, so their answers are never compared and
    // a prompt answered once each way is left out: said.
    let mut by_trimmed: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for pid in &order {
        by_trimmed.entry(crate::domain::names::fold_text(&by_prompt[pid].0)).or_default().push(pid);
    }
    for ids in by_trimmed.values().filter(|ids| ids.len() > 1) {
        let texts: std::collections::BTreeSet<&str> = ids.iter().map(|p| by_prompt[*p].0.as_str()).collect();
        if texts.len() > 1 {
            notes.push(format!(
                "warning: prompts {} have texts that differ only in surrounding white space, invisible characters or Unicode form: they are kept as {} prompts, whose answers are not compared with each other; if they are one prompt, give them one text",
                ids.join(" and "),
                ids.len()
            ));
        }
    }
    Ok(ImportSummary { answers: written, prompts, skipped_prompts: skipped, systems, notes })
}

/// `topk-judge import (--format F | --judgments F) FILE… --out OUT`.
#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("mode").required(true).args(["format", "judgments"])))]
pub struct ImportArgs {
    /// Answers format: write a pool file of the answers.
    #[arg(long, value_enum)]
    pub format: Option<ImportFormat>,
    /// Judgments format: write a replay recording (docs/replay.md) of the verdicts.
    #[arg(long, value_enum)]
    pub judgments: Option<judgments::JudgmentFormat>,
    /// Input files (one per model for AlpacaEval, Arena-Hard and MT-Bench; any number of CSV files).
    #[arg(required = true)]
    pub inputs: Vec<PathBuf>,
    /// Arena-Hard or MT-Bench questions (JSON Lines), for --format arena_hard (optional for its
    /// 2025 layout, whose answers hold the question) and mt_bench.
    #[arg(long, conflicts_with = "judgments")]
    pub questions: Option<PathBuf>,
    /// Where an answer's system name comes from: its field, or the file name without extension.
    #[arg(long, value_enum, default_value_t = SystemFrom::Field, conflicts_with = "judgments")]
    pub system_from: SystemFrom,
    /// The baseline of Arena-Hard judgments (--judgments arena_hard), unless a line names its own.
    #[arg(long, default_value = "gpt-4-0314", conflicts_with = "format")]
    pub baseline: String,
    /// The file to write: a pool file (--format) or a recording (--judgments), JSON Lines.
    #[arg(long)]
    pub out: PathBuf,
}

/// `topk-judge import`: write the pool file or recording and print what it holds.
///
/// # Errors
/// [`ImportError`].
pub fn run(args: &ImportArgs) -> Result<std::process::ExitCode, ImportError> {
    let inputs: Vec<&Path> = args.inputs.iter().map(PathBuf::as_path).chain(args.questions.as_deref()).collect();
    if let Some(input) = inputs.iter().find(|i| crate::store::files::same_file(&args.out, i)) {
        return Err(ImportError::Io {
            path: args.out.clone(),
            source: std::io::Error::other(format!(
                "--out is the input file {}: writing would overwrite it; give another file",
                input.display()
            )),
        });
    }
    let text = match (args.format, args.judgments) {
        (Some(f), _) => {
            import_with(f, &args.inputs, args.questions.as_deref(), args.system_from, &args.out)?.text(&args.out)
        }
        (None, Some(j)) => judgments::import_judgments(j, &args.inputs, &args.baseline, &args.out)?.text(&args.out),
        (None, None) => unreachable!("clap requires --format or --judgments"),
    };
    super::print_out(&text);
    Ok(std::process::ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

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
        assert_eq!((s.answers, s.prompts, s.skipped_prompts.len()), (9, 3, 0));
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
        // q3 is answered by alpha only: left out (its answer is not written).
        assert_eq!((s.answers, s.prompts, s.skipped_prompts.clone()), (4, 2, vec!["q3".to_string()]));
        assert!(
            s.text(&out).contains("left out 1 prompt answered by fewer than 2 systems (nothing to compare): q3\n"),
            "{}",
            s.text(&out)
        );
        let pools = read_out(&out);
        assert_eq!(pools[0]["pool_id"], "q1");
        assert_eq!(pools[0]["task"], "Write a haiku about rust.");
        assert_eq!(pools[1]["items"][0]["text"], "First part.\n\nSecond part.");
        let e = import(ImportFormat::ArenaHard, &inputs, None, &out).unwrap_err();
        assert!(e.to_string().contains("--questions"), "{e}");
        // The 2025 layout holds its questions: a questions file that agrees (up to white space)
        // is fine, one that says another text for a uid is refused at the answer's line.
        let (m1, m2, q) = (dir.path().join("m1.jsonl"), dir.path().join("m2.jsonl"), dir.path().join("q.jsonl"));
        let answer = |model: &str, prompt: &str| {
            format!(
                "{{\"uid\":\"q1\",\"model\":\"{model}\",\"messages\":[{{\"role\":\"user\",\"content\":\"{prompt}\"}},{{\"role\":\"assistant\",\"content\":{{\"answer\":\"x\"}}}}]}}\n"
            )
        };
        std::fs::write(&m1, answer("m1", "Prompt A")).unwrap();
        std::fs::write(&m2, answer("m2", "Prompt A")).unwrap();
        std::fs::write(&q, "{\"uid\":\"q1\",\"prompt\":\"Prompt A \"}\n").unwrap();
        let two = [m1.clone(), m2.clone()];
        assert!(import(ImportFormat::ArenaHard, &two, Some(&q), &out).is_ok());
        std::fs::write(&q, "{\"uid\":\"q1\",\"prompt\":\"Prompt C\"}\n").unwrap();
        let e = import(ImportFormat::ArenaHard, &two, Some(&q), &out).unwrap_err().to_string();
        assert_eq!(
            e.replace(&m1.display().to_string(), "m1.jsonl"),
            "m1.jsonl:1: its question (the user message) differs from question \"q1\" of the questions file (--questions); expected the questions the models answered: give the matching questions file, or none (the answers hold their questions)"
        );
    }

    /// Text in another encoding is named with its line and byte, in every reader: JSON, JSON
    /// Lines, CSV, and UTF-16 by its byte-order mark.
    #[test]
    fn other_encodings_are_named_with_line_and_byte() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("pools.jsonl");
        let bad = |name: &str, bytes: &[u8], format: ImportFormat| {
            let p = dir.path().join(name);
            std::fs::write(&p, bytes).unwrap();
            import(format, std::slice::from_ref(&p), None, &out)
                .unwrap_err()
                .to_string()
                .replace(&p.display().to_string(), name)
        };
        let latin1 = "the file is in another encoding (Latin-1, Windows-1252?): save it as UTF-8";
        assert_eq!(
            bad(
                "a.json",
                b"[{\"instruction\":\"Q\",\"output\":\"ok\",\"generator\":\"b\"},\n{\"output\":\"caf\xe9\"}]",
                ImportFormat::AlpacaEval
            ),
            format!("a.json:2: invalid UTF-8 at byte 15 of the line (byte 0xE9); {latin1}")
        );
        assert_eq!(
            bad("b.csv", b"prompt_id,prompt,system,text\np1,Q1,a,caf\xe9\n", ImportFormat::Csv),
            format!("b.csv:2: invalid UTF-8 at byte 12 of the line (byte 0xE9); {latin1}")
        );
        assert_eq!(
            bad("c.jsonl", b"\xff\xfe{\x00", ImportFormat::ArenaHard),
            "c.jsonl:1: the file is UTF-16 text (it starts with a UTF-16 byte-order mark); save it as UTF-8"
        );
    }

    /// Systems one letter case apart are two systems, and the import says so.
    #[test]
    fn systems_one_letter_case_apart_are_said() {
        let dir = tempfile::tempdir().unwrap();
        let (p, out) = (dir.path().join("a.csv"), dir.path().join("pools.jsonl"));
        std::fs::write(&p, "prompt_id,prompt,system,text\np1,Q,llama,x\np1,Q,Llama,y\np1,Q,gpt,z\n").unwrap();
        let s = import(ImportFormat::Csv, std::slice::from_ref(&p), None, &out).unwrap();
        assert_eq!(s.systems, ["llama", "Llama", "gpt"]);
        assert_eq!(
            s.notes,
            [
                "warning: systems \"llama\" and \"Llama\" differ only in letter case: they are kept as 2 systems; if they are one, give them one name"
            ]
        );
    }

    /// AlpacaEval instructions `"Q2"` and `"Q2 "` get two prompt ids (their answers are never
    /// compared, and each, answered once, is left out): said, with the ids.
    #[test]
    fn prompts_one_white_space_apart_are_said() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b, out) = (dir.path().join("a.json"), dir.path().join("b.json"), dir.path().join("pools.jsonl"));
        let answers = |model: &str, q2: &str| {
            serde_json::json!([
                {"instruction": "Q1", "output": format!("{model} one"), "generator": model},
                {"instruction": q2, "output": format!("{model} two"), "generator": model}
            ])
            .to_string()
        };
        std::fs::write(&a, answers("A", "Q2")).unwrap();
        std::fs::write(&b, answers("B", "Q2 \r\n")).unwrap();
        let s = import(ImportFormat::AlpacaEval, &[a.clone(), b.clone()], None, &out).unwrap();
        let (q2, q2_spaced) = (instruction_id("Q2"), instruction_id("Q2 \r\n"));
        assert_eq!(s.skipped_prompts, [q2.clone(), q2_spaced.clone()]);
        // A byte-order mark, a zero-width space, NFD against NFC: the same.
        for other in ["\u{feff}Q2", "Q2\u{200b}", "Q2 caf\u{e9}"] {
            let mine = if other.contains("caf") { "Q2 cafe\u{301}" } else { "Q2" };
            std::fs::write(&a, answers("A", mine)).unwrap();
            std::fs::write(&b, answers("B", other)).unwrap();
            let s = import(ImportFormat::AlpacaEval, &[a.clone(), b.clone()], None, &out).unwrap();
            assert!(
                s.notes.iter().any(|n| n.contains("differ only in surrounding white space, invisible characters or Unicode form")),
                "{other:?}: {:?}",
                s.notes
            );
        }
        std::fs::write(&a, answers("A", "Q2")).unwrap();
        std::fs::write(&b, answers("B", "Q2 \r\n")).unwrap();
        let s = import(ImportFormat::AlpacaEval, &[a, b], None, &out).unwrap();
        assert_eq!(
            s.notes,
            [format!(
                "warning: prompts {q2} and {q2_spaced} have texts that differ only in surrounding white space, invisible characters or Unicode form: they are kept as 2 prompts, whose answers are not compared with each other; if they are one prompt, give them one text"
            )]
        );
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
        let one_line = r#"[{"instruction": "Q", "output": "x", "generator": "s1"}, {"instruction": "Q", "output": "y", "generator": "s1"}]"#;
        assert_eq!(
            bad("a.json", one_line, ImportFormat::AlpacaEval),
            format!(
                "a.json:1: system \"s1\" answers prompt {:?} twice (also on this line: two elements of its JSON array); expected one answer per system and prompt",
                instruction_id("Q")
            )
        );
        assert_eq!(
            bad("b.csv", "prompt_id,prompt,system,text\np1,Q,s1,x\np1,Q,,y\n", ImportFormat::Csv),
            "b.csv:3: empty system; expected a non-empty system"
        );
        assert_eq!(
            bad("c.csv", "prompt_id,prompt,model,text\n", ImportFormat::Csv),
            "c.csv:1: the header \"prompt_id,prompt,model,text\" lacks the column system; expected the columns prompt_id, prompt, system, text in any order (other columns are ignored)"
        );
        assert!(bad("d.csv", "prompt_id,prompt,system,text\np1,Q,s1\n", ImportFormat::Csv).starts_with("d.csv:2: "));
        // Names the pool loader refuses are refused here, with their row, and nothing is
        // written: a line break (a quoted field), a text-direction override, and two answers
        // that a `/` gives one id.
        std::fs::remove_file(&out).unwrap();
        assert_eq!(
            bad("nl.csv", "prompt_id,prompt,system,text\np1,Q,good,x\np1,Q,\"evil\nname\",y\n", ImportFormat::Csv),
            "nl.csv:3: its system \"evil\\nname\" holds the character U+000A (a control or text-direction character); ids are shown in terminals, plots and reports, so they may not hold such characters"
        );
        let rlo = bad("rlo.csv", "prompt_id,prompt,system,text\np\u{202e}1,Q,good,x\n", ImportFormat::Csv);
        assert!(rlo.starts_with("rlo.csv:2: its prompt id \"p\\u{202e}1\" holds the character U+202E"), "{rlo}");
        assert_eq!(
            bad(
                "slash.csv",
                "prompt_id,prompt,system,text\na/b,Q1,c,x\na/b,Q1,d,y\na,Q2,b/c,x2\na,Q2,d,y2\n",
                ImportFormat::Csv
            ),
            "slash.csv:4: system \"b/c\" on prompt \"a\" and system \"c\" on prompt \"a/b\" (at slash.csv:2) both make the answer id \"a/b/c\" (prompt id/system); rename one so that a `/` does not make them equal"
        );
        assert!(!out.exists(), "nothing written");
        // RFC 4180: a quoted field may hold lines shaped like rows; they are the field's text.
        let q = dir.path().join("q.csv");
        std::fs::write(&q, "prompt_id,prompt,system,text\np1,Q,s1,a\np1,Q,s2,\"quoted\np2,R,s1,c\"\n").unwrap();
        import(ImportFormat::Csv, std::slice::from_ref(&q), None, &out).unwrap();
        assert_eq!(read_out(&out)[0]["items"][1]["text"], "quoted\np2,R,s1,c");
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
            "f.json:3: missing field \"generator\" (or give --system-from file); expected AlpacaEval model outputs {\"instruction\", \"output\", \"generator\"}"
        );
        // Present with another type: said so (it read "missing field").
        assert_eq!(
            bad("f.json", "[{\"instruction\": \"x\", \"output\": \"o\", \"generator\": 7}]", ImportFormat::AlpacaEval),
            "f.json:1: field \"generator\" is 7, expected a string (the name of the system that answered); expected AlpacaEval model outputs {\"instruction\", \"output\", \"generator\"}"
        );
        let q = dir.path().join("q.jsonl");
        std::fs::write(&q, "{\"question_id\": \"q1\", \"prompt\": \"Q\"}\n").unwrap();
        let g = dir.path().join("g.jsonl");
        std::fs::write(&g, "{\"question_id\": \"q1\", \"model_id\": \"m\", \"choices\": [{\"turns\": [{\"content\": \"x\"}]}]}\n{\"question_id\": \"q1\", \"model_id\": \"n\", \"choices\": []}\n").unwrap();
        let e = import(ImportFormat::ArenaHard, std::slice::from_ref(&g), Some(&q), &out).unwrap_err().to_string();
        assert_eq!(
            e.replace(&g.display().to_string(), "g.jsonl"),
            "g.jsonl:2: missing \"choices\"[0].\"turns\"; expected an Arena-Hard answer {\"uid\", \"model\", \"messages\": [{\"role\": \"user\", …}, {\"role\": \"assistant\", \"content\": {\"answer\"}}]} (2025) or {\"question_id\", \"model_id\", \"choices\": [{\"turns\": [{\"content\"}]}]} (2024)"
        );
    }
}

//! `topk-judge import --judgments FORMAT FILE… --out RECORDING.jsonl`: published verdicts as a
//! replay recording (docs/replay.md), JSON Lines, one ordered verdict per line:
//! `{"pool_id": <prompt id>, "a": <system shown first>, "b": <system shown second>, "y":
//! P(first-shown wins) in [0, 1] or null, "judge", "cost_usd"?}`. `pool_id` is the id the
//! answers import gives the prompt and `a`, `b` are system names (the item ids it writes), so
//! a recording replays against the pool file of the same benchmark.
//!
//! - `alpaca_eval`: AlpacaEval annotations (a JSON array per file of `{"instruction",
//!   "generator_1", "generator_2", "preference", "annotator"?, "price_per_example"?}`),
//!   `preference` = 1 + P(output_2 better) in [1, 2]. The order shown to the judge is not
//!   stored: alpaca_eval swapped the outputs when
//!   `random.Random("is_switched_outputs" + instruction + "0").choices([False, True])[0]`
//!   ([`super::pyrandom`]). Not swapped: a = generator_1, b = generator_2, y = 2 − preference;
//!   swapped: a = generator_2, b = generator_1, y = preference − 1 (rounded to 12 decimals). A record comparing a
//!   generator with itself is skipped (counted). judge = `annotator` (default
//!   `weighted_alpaca_eval_gpt4_turbo`), `cost_usd` = `price_per_example`.
//! - `arena_hard`: Arena-Hard judgments, JSON Lines `{"question_id" | "uid", "model", "judge",
//!   "baseline"?, "games": [g1, g2]}` with `score` "A>>B" | "A>B" | "A=B" | "B>A" | "B>>A" | null
//!   per game; game 1 shows the baseline (`baseline`, else `--baseline`) as A, game 2 the model.
//!   y = 1, 1, ½, 0, 0 or null; the `>>` verdicts get `strong_preference: true`.
//! - `arena_bench`: arena-bench-v1 single-answer grades, JSON Lines `{"question_id", "model",
//!   "score": 1–10 | null}` (the model is the `model` field, not the file name). Per question,
//!   every pair of graded models gives both ordered verdicts, y = 1 / ½ / 0 as the first-shown's
//!   grade is higher / equal / lower; judge "gpt-4 (grades)". Derived from grades, these carry
//!   no position information (the summary says so).
//! - `mt_bench`: FastChat pairwise judgments, JSON Lines `{"question_id", "model_1", "model_2",
//!   "g1_winner", "g2_winner", "judge": [name, template], "turn"}`; game 1 shows model_1 first,
//!   game 2 model_2; winners "model_1" | "model_2" | "tie" | "error" (null). judge =
//!   `"<name> turn <turn>"`.
//! - `csv`: a header naming `prompt_id`, `system_a`, `system_b`, `shown_first` (a | b),
//!   `winner` (a | b | tie; empty = invalid) and optionally `judge`, `cost_usd`, any order;
//!   other columns are ignored (named in the summary).
//!
//! Two records of one judge, prompt and ordered pair with the same y are one verdict; with
//! different y they are an error naming both lines.

use super::answers::{field, instruction_id, json_array, json_lines, question_id};
use super::{ImportError, check_distinct, io, row, write_out};
use crate::report::import::JudgmentSummary;
use serde::Serialize;
use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Formats of `import --judgments`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
#[value(rename_all = "snake_case")]
pub enum JudgmentFormat {
    /// AlpacaEval annotations (JSON arrays of {instruction, generator_1, generator_2, preference}).
    AlpacaEval,
    /// Arena-Hard pairwise judgments (JSON Lines with two games against a baseline).
    ArenaHard,
    /// arena-bench-v1 single-answer grades (JSON Lines {question_id, model, score}).
    ArenaBench,
    /// FastChat / MT-Bench pairwise judgments (JSON Lines {model_1, model_2, g1_winner, g2_winner}).
    MtBench,
    /// CSV: prompt_id, system_a, system_b, shown_first, winner [, judge, cost_usd].
    Csv,
}

/// The judge of AlpacaEval 2 annotations without an `annotator` field.
pub const ALPACA_EVAL_JUDGE: &str = "weighted_alpaca_eval_gpt4_turbo";
/// The judge named for verdicts derived from arena-bench-v1 grades.
pub const ARENA_BENCH_JUDGE: &str = "gpt-4 (grades)";

/// One ordered verdict and where it was read.
#[derive(Debug, Clone)]
struct Verdict {
    pool_id: String,
    a: String,
    b: String,
    y: Option<f64>,
    judge: String,
    cost_usd: Option<f64>,
    strong: bool,
    invalid_reason: Option<&'static str>,
    at: (PathBuf, usize),
    /// Its place in a JSON array, when it shares its line with another record (an array written
    /// on one line names no record by its line).
    record: Option<usize>,
    /// AlpacaEval: shown with generator_2 first (alpaca_eval's seeded switch).
    swapped: bool,
}

#[derive(Serialize)]
struct OutLine<'a> {
    pool_id: &'a str,
    a: &'a str,
    b: &'a str,
    y: Option<f64>,
    #[serde(skip_serializing_if = "str::is_empty")]
    judge: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    cost_usd: Option<f64>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    strong_preference: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    invalid_reason: Option<&'static str>,
}

/// What the readers collect.
#[derive(Default)]
struct Collected {
    verdicts: Vec<Verdict>,
    skipped: Vec<(usize, String)>,
    notes: Vec<String>,
    /// AlpacaEval annotations: the note on the seeded switch is due.
    alpaca: bool,
}

impl Collected {
    fn skip(&mut self, what: &str) {
        match self.skipped.iter_mut().find(|(_, w)| w == what) {
            Some((n, _)) => *n += 1,
            None => self.skipped.push((1, what.to_owned())),
        }
    }
}

/// Read `inputs` as `format` judgments and write the recording `out`.
///
/// # Errors
/// [`ImportError`]: a file that cannot be read or written, or given twice; a bad record named by
/// file and line with what was expected; two records of one judge, prompt and ordered pair
/// with different verdicts; nothing to write.
pub fn import_judgments(
    format: JudgmentFormat,
    inputs: &[PathBuf],
    baseline: &str,
    out: &Path,
) -> Result<JudgmentSummary, ImportError> {
    check_distinct(inputs)?;
    let mut c = Collected::default();
    match format {
        JudgmentFormat::AlpacaEval => {
            for p in inputs {
                read_alpaca(p, &mut c)?;
            }
            // Said of the verdicts written (after repeats are skipped), by write_verdicts.
            c.alpaca = true;
        }
        JudgmentFormat::ArenaHard => {
            for p in inputs {
                read_arena_hard(p, baseline, &mut c)?;
            }
        }
        JudgmentFormat::ArenaBench => {
            read_arena_bench(inputs, &mut c)?;
            c.notes.push(
                "derived from single-answer grades (1–10): both orders of a pair get the same outcome, so these verdicts carry no position information".into(),
            );
        }
        JudgmentFormat::MtBench => {
            for p in inputs {
                read_mt_bench(p, &mut c)?;
            }
        }
        JudgmentFormat::Csv => {
            for p in inputs {
                read_csv(p, &mut c)?;
            }
        }
    }
    // Names the pool loader and the reports refuse (a line break, ESC, a text-direction
    // override) are refused here, at their record, rather than written into the recording.
    for v in &c.verdicts {
        for (what, id) in [("prompt id", &v.pool_id), ("system", &v.a), ("system", &v.b), ("judge", &v.judge)] {
            let problem = if what == "judge" {
                crate::domain::pool::id_problem(id)
            } else {
                crate::domain::pool::listed_id_problem(id)
            };
            if let Some(problem) = problem {
                return Err(row(&v.at.0, v.at.1, format!("its {what} {problem}")));
            }
        }
    }
    write_verdicts(c, out)
}

/// A number field in [lo, hi], or null (None); absent is an error.
fn number_or_null(
    v: &Value,
    key: &str,
    range: (f64, f64),
    path: &Path,
    line: usize,
    expected: &str,
) -> Result<Option<f64>, ImportError> {
    match v.get(key) {
        Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => {
            let x = n.as_f64().unwrap_or(f64::NAN);
            if (range.0..=range.1).contains(&x) {
                Ok(Some(x))
            } else {
                Err(row(path, line, format!("{key} = {x} is outside [{}, {}]; {expected}", range.0, range.1)))
            }
        }
        Some(other) => Err(row(path, line, format!("field {key:?} is {other}, expected a number or null; {expected}"))),
        None => Err(row(path, line, format!("missing field {key:?}; {expected}"))),
    }
}

/// What an AlpacaEval annotations file holds, for its messages.
const ALPACA_EXPECTED: &str = "expected AlpacaEval annotations {\"instruction\", \"generator_1\", \"generator_2\", \"preference\": 1 + P(output_2 better) in [1, 2]}";

/// AlpacaEval annotations: one JSON array per file.
fn read_alpaca(path: &Path, c: &mut Collected) -> Result<(), ImportError> {
    let records = json_array(path, ALPACA_EXPECTED)?;
    for (i, (line, v)) in records.iter().enumerate() {
        if let Some(mut verdict) =
            alpaca_record(path, *line, v, c).map_err(|e| super::answers::in_record(&records, i, e))?
        {
            let shared = (i > 0 && records[i - 1].0 == *line) || records.get(i + 1).is_some_and(|r| r.0 == *line);
            verdict.record = shared.then_some(i + 1);
            c.verdicts.push(verdict);
        }
    }
    Ok(())
}

/// One AlpacaEval annotation (`v`, starting on `line`) as an ordered verdict; none for a
/// self-comparison (counted as skipped in `c`).
fn alpaca_record(path: &Path, line: usize, v: &Value, c: &mut Collected) -> Result<Option<Verdict>, ImportError> {
    const EXPECTED: &str = ALPACA_EXPECTED;
    let instruction = field(v, "instruction", path, line, EXPECTED)?;
    // A system name is an id, trimmed as `import --format` trims it: "m1 " is "m1".
    let g1 = field(v, "generator_1", path, line, EXPECTED)?.trim();
    let g2 = field(v, "generator_2", path, line, EXPECTED)?.trim();
    if g1 == g2 {
        c.skip("self-comparison");
        return Ok(None);
    }
    // alpaca_eval's older files wrote a draw as 0, which its own win-rate code still reads as
    // 1.5 ("for backward compatibility"): read so, and said once.
    let old_draw = v.get("preference").and_then(Value::as_f64) == Some(0.0);
    if old_draw && !c.notes.iter().any(|n| n.starts_with("preference 0")) {
        c.notes.push(format!(
            "preference 0 (in {}) is alpaca_eval's older spelling of a draw: read as 1.5, as alpaca_eval reads it",
            path.display()
        ));
    }
    let pref = if old_draw { Some(1.5) } else { number_or_null(v, "preference", (1.0, 2.0), path, line, EXPECTED)? };
    let judge = match v.get("annotator") {
        Some(Value::String(s)) => s.clone(),
        _ => ALPACA_EVAL_JUDGE.to_owned(),
    };
    let cost_usd = match v.get("price_per_example") {
        None | Some(Value::Null) => None,
        Some(p) => match p.as_f64().map(crate::domain::verdict::check_query_usd) {
            Some(Ok(x)) => Some(x),
            Some(Err(m)) => return Err(row(path, line, format!("price_per_example is {m}, or null; {EXPECTED}"))),
            None => {
                return Err(row(
                    path,
                    line,
                    format!("price_per_example is {p}: expected a number (USD) or null; {EXPECTED}"),
                ));
            }
        },
    };
    let swapped = super::pyrandom::alpaca_eval_switched(instruction);
    // Rounded to 12 decimals: the preferences have 10, the rest is floating-point noise.
    let round = |y: f64| (y * 1e12).round() / 1e12;
    let (a, b, y) =
        if swapped { (g2, g1, pref.map(|p| round(p - 1.0))) } else { (g1, g2, pref.map(|p| round(2.0 - p))) };
    Ok(Some(Verdict {
        pool_id: instruction_id(instruction),
        a: a.to_owned(),
        b: b.to_owned(),
        y,
        judge,
        cost_usd,
        strong: false,
        invalid_reason: y.is_none().then_some("no preference"),
        at: (path.to_owned(), line),
        record: None,
        swapped,
    }))
}

/// The outcome of an Arena-Hard score for the side shown as A: (y, strong).
fn arena_score(s: &str) -> Option<(f64, bool)> {
    Some(match s {
        "A>>B" => (1.0, true),
        "A>B" => (1.0, false),
        "A=B" => (0.5, false),
        "B>A" => (0.0, false),
        "B>>A" => (0.0, true),
        _ => return None,
    })
}

/// Arena-Hard judgments: JSON Lines, two games per line.
fn read_arena_hard(path: &Path, baseline: &str, c: &mut Collected) -> Result<(), ImportError> {
    const EXPECTED: &str = "expected an Arena-Hard judgment {\"question_id\" | \"uid\", \"model\", \"judge\", \"games\": [{\"score\": \"A>>B\" | \"A>B\" | \"A=B\" | \"B>A\" | \"B>>A\" | null}, {…}]}";
    for (line, v) in json_lines(path, EXPECTED)? {
        let qid = question_id(&v, &["question_id", "uid"], path, line, EXPECTED)?;
        let model = field(&v, "model", path, line, EXPECTED)?.trim();
        let judge = field(&v, "judge", path, line, EXPECTED)?;
        let base = match v.get("baseline") {
            Some(Value::String(b)) => b.trim(),
            _ => baseline.trim(),
        };
        if model == base {
            c.skip("self-comparison");
            continue;
        }
        let games = v
            .get("games")
            .and_then(Value::as_array)
            .filter(|g| (1..=2).contains(&g.len()))
            .ok_or_else(|| row(path, line, format!("\"games\" is not a list of 1 or 2 games; {EXPECTED}")))?;
        for (g, game) in games.iter().enumerate() {
            // Game 1 shows the baseline as A, game 2 the model.
            let (a, b) = if g == 0 { (base, model) } else { (model, base) };
            if !game.is_object() {
                return Err(row(path, line, format!("game {} is {game}, not an object; {EXPECTED}", g + 1)));
            }
            let (y, strong) = match game.get("score") {
                // The judge gave no verdict: an invalid one, kept as such.
                Some(Value::Null) => (None, false),
                None => {
                    return Err(row(
                        path,
                        line,
                        format!("game {} has no \"score\" (null when the judge gave none); {EXPECTED}", g + 1),
                    ));
                }
                Some(Value::String(s)) => match arena_score(s) {
                    Some((y, strong)) => (Some(y), strong),
                    None => {
                        return Err(row(path, line, format!("game {} has score {s:?}; {EXPECTED}", g + 1)));
                    }
                },
                Some(other) => return Err(row(path, line, format!("game {} has score {other}; {EXPECTED}", g + 1))),
            };
            c.verdicts.push(Verdict {
                pool_id: qid.clone(),
                a: a.to_owned(),
                b: b.to_owned(),
                y,
                judge: judge.to_owned(),
                cost_usd: None,
                strong,
                invalid_reason: y.is_none().then_some("unparsed"),
                at: (path.to_owned(), line),
                record: None,
                swapped: false,
            });
        }
    }
    Ok(())
}

/// arena-bench-v1 grades of all files: both ordered verdicts of every pair of graded answers to
/// a question.
fn read_arena_bench(inputs: &[PathBuf], c: &mut Collected) -> Result<(), ImportError> {
    const EXPECTED: &str = "expected an arena-bench-v1 grade {\"question_id\", \"model\", \"score\": 1–10 or null}";
    // Per question (first appearance): (model, grade, file, line).
    let mut order: Vec<String> = Vec::new();
    let mut grades: HashMap<String, Vec<(String, f64, PathBuf, usize)>> = HashMap::new();
    for path in inputs {
        for (line, v) in json_lines(path, EXPECTED)? {
            let qid = question_id(&v, &["question_id", "uid"], path, line, EXPECTED)?;
            let model = field(&v, "model", path, line, EXPECTED)?.trim();
            let Some(score) = number_or_null(&v, "score", (1.0, 10.0), path, line, EXPECTED)? else {
                c.skip("ungraded answer");
                continue;
            };
            let g = grades.entry(qid.clone()).or_insert_with(|| {
                order.push(qid.clone());
                Vec::new()
            });
            if let Some((_, first, p, l)) = g.iter().find(|x| x.0 == model) {
                // The same grade again is a repeated line, counted once as the other formats'
                // repeated verdicts are; another grade is a conflict.
                if *first == score {
                    c.skip("repeated grade");
                    continue;
                }
                return Err(row(
                    path,
                    line,
                    format!(
                        "model {model:?} is graded {score} here but {first} at {}:{l} on question {qid:?}; expected one grade per model and question",
                        p.display()
                    ),
                ));
            }
            g.push((model.to_owned(), score, path.clone(), line));
        }
    }
    for qid in &order {
        let g = &grades[qid];
        for (ma, sa, pa, la) in g {
            for (mb, sb, _, _) in g {
                if ma == mb {
                    continue;
                }
                let y = if sa > sb {
                    1.0
                } else if sa < sb {
                    0.0
                } else {
                    0.5
                };
                c.verdicts.push(Verdict {
                    pool_id: qid.clone(),
                    a: ma.clone(),
                    b: mb.clone(),
                    y: Some(y),
                    judge: ARENA_BENCH_JUDGE.to_owned(),
                    cost_usd: None,
                    strong: false,
                    invalid_reason: None,
                    at: (pa.clone(), *la),
                    record: None,
                    swapped: false,
                });
            }
        }
    }
    Ok(())
}

/// FastChat pairwise judgments (MT-Bench): JSON Lines, two games per line.
fn read_mt_bench(path: &Path, c: &mut Collected) -> Result<(), ImportError> {
    const EXPECTED: &str = "expected a FastChat pairwise judgment {\"question_id\", \"model_1\", \"model_2\", \"g1_winner\", \"g2_winner\": \"model_1\" | \"model_2\" | \"tie\" | \"error\", \"judge\": [name, template], \"turn\"}";
    // Lines without "turn" beside lines with it: their judge is the bare name, apart from the
    // per-turn ones (said below).
    let (mut with_turn, mut without) = (0usize, Vec::new());
    for (line, v) in json_lines(path, EXPECTED)? {
        let qid = question_id(&v, &["question_id"], path, line, EXPECTED)?;
        let m1 = field(&v, "model_1", path, line, EXPECTED)?.trim();
        let m2 = field(&v, "model_2", path, line, EXPECTED)?.trim();
        let name = match v.get("judge") {
            Some(Value::Array(j)) if j.first().is_some_and(Value::is_string) => j[0].as_str().unwrap_or_default(),
            Some(Value::String(s)) => s.as_str(),
            _ => return Err(row(path, line, format!("missing \"judge\": [name, template]; {EXPECTED}"))),
        };
        let judge = match v.get("turn") {
            Some(Value::Number(t)) => {
                with_turn += 1;
                format!("{name} turn {t}")
            }
            None => {
                without.push(line);
                name.to_owned()
            }
            Some(other) => {
                return Err(row(path, line, format!("field \"turn\" is {other}, expected 1 or 2; {EXPECTED}")));
            }
        };
        if m1 == m2 {
            c.skip("self-comparison");
            continue;
        }
        for (g, key, first, second) in [(1, "g1_winner", m1, m2), (2, "g2_winner", m2, m1)] {
            let w = field(&v, key, path, line, EXPECTED)?;
            // Winners are in model terms: model_1 won → y = 1 when model_1 is shown first.
            let y = match w {
                "model_1" => Some(if g == 1 { 1.0 } else { 0.0 }),
                "model_2" => Some(if g == 1 { 0.0 } else { 1.0 }),
                "tie" => Some(0.5),
                "error" => None,
                other => return Err(row(path, line, format!("{key} is {other:?}; {EXPECTED}"))),
            };
            c.verdicts.push(Verdict {
                pool_id: qid.clone(),
                a: first.to_owned(),
                b: second.to_owned(),
                y,
                judge: judge.clone(),
                cost_usd: None,
                strong: false,
                invalid_reason: y.is_none().then_some("error"),
                at: (path.to_owned(), line),
                record: None,
                swapped: false,
            });
        }
    }
    if let (true, Some(first)) = (with_turn > 0, without.first()) {
        c.notes.push(format!(
            "{}: {} {} no \"turn\" beside {with_turn} that do (first: line {first}): their judge is named without a turn, apart from the judge's \"… turn N\" verdicts",
            path.display(),
            crate::domain::fmt::count(without.len(), "judgment"),
            if without.len() == 1 { "carries" } else { "carry" },
        ));
    }
    Ok(())
}

/// Judgments as CSV: one ordered verdict per row.
fn read_csv(path: &Path, c: &mut Collected) -> Result<(), ImportError> {
    const REQUIRED: [&str; 5] = ["prompt_id", "system_a", "system_b", "shown_first", "winner"];
    const OPTIONAL: [&str; 2] = ["judge", "cost_usd"];
    let bytes = std::fs::read(path).map_err(io(path))?;
    let bytes = crate::domain::text::utf8_text(&bytes).map_err(|(line, m)| row(path, line, m))?.as_bytes();
    let wanted = format!("{} (and optionally {})", REQUIRED.join(", "), OPTIONAL.join(", "));
    // As an answers file is read (`import --format csv`).
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(row(
            path,
            1,
            format!("the file is empty; expected a CSV header naming the columns {wanted}, then one verdict per row"),
        ));
    }
    super::check_quotes(path, bytes, b',')?;
    let mut rd = csv::ReaderBuilder::new().has_headers(true).flexible(false).from_reader(bytes);
    let header: Vec<String> = rd
        .headers()
        .map_err(|e| row(path, 1, format!("{e}; expected a CSV header naming the columns {wanted}")))?
        .iter()
        // Column names in any case (`Prompt_ID`), as spreadsheets write them.
        .map(|h| h.trim().to_ascii_lowercase())
        .collect();
    let known: Vec<&str> = REQUIRED.iter().chain(&OPTIONAL).copied().collect();
    if let Some(h) = super::repeated_column(&header, &known) {
        // Two verdict columns (a judge's and a human's, say): which one is meant is not ours to guess.
        return Err(row(path, 1, format!("the header names the column {h:?} twice; expected each of {wanted} once")));
    }
    let col = |name: &str| header.iter().position(|h| h == name);
    let missing: Vec<&str> = REQUIRED.iter().copied().filter(|n| col(n).is_none()).collect();
    if !missing.is_empty() {
        return Err(row(
            path,
            1,
            format!(
                "the header {:?} lacks the column{} {}; expected the columns {wanted} in any order",
                header.join(","),
                if missing.len() == 1 { "" } else { "s" },
                missing.join(", ")
            ),
        ));
    }
    let ignored: Vec<String> =
        header.iter().filter(|h| !REQUIRED.contains(&h.as_str()) && !OPTIONAL.contains(&h.as_str())).cloned().collect();
    if !ignored.is_empty() {
        let names: Vec<String> = ignored.iter().map(|h| format!("{h:?}")).collect();
        c.notes.push(format!("ignored columns: {} (in {})", names.join(", "), path.display()));
    }
    let idx: Vec<usize> = REQUIRED.iter().map(|n| col(n).unwrap_or_default()).collect();
    let (judge_col, cost_col) = (col("judge"), col("cost_usd"));
    let mut rows = 0;
    for rec in rd.records() {
        let rec = rec.map_err(|e| super::csv_row_error(path, bytes, &e, header.len()))?;
        rows += 1;
        let line = super::line_at(bytes, rec.position());
        let get = |k: usize| rec.get(idx[k]).unwrap_or_default().trim();
        let (pid, sa, sb, first, winner) = (get(0), get(1), get(2), get(3), get(4));
        for (k, v) in [(0, pid), (1, sa), (2, sb)] {
            if v.is_empty() {
                return Err(row(path, line, format!("empty {}; expected a non-empty {}", REQUIRED[k], REQUIRED[k])));
            }
        }
        if sa == sb {
            c.skip("self-comparison");
            continue;
        }
        // A side letter that is also the name of the other side's system reads both ways
        // (`system_b` named "A", winner "A"): which one was meant cannot be told.
        for (col, v) in [("shown_first", first), ("winner", winner)] {
            let side_a = v.eq_ignore_ascii_case("a");
            let other = if side_a { sb } else { sa };
            if (side_a || v.eq_ignore_ascii_case("b")) && v == other {
                return Err(row(
                    path,
                    line,
                    format!(
                        "{col} is {v:?}: side {} by the format's letters, but {} is also named {v:?}; the letters a and b name the columns system_a and system_b, so rename that system",
                        if side_a { "a" } else { "b" },
                        if side_a { "system_b" } else { "system_a" }
                    ),
                ));
            }
        }
        let a_first = match first {
            "a" | "A" => true,
            "b" | "B" => false,
            o => return Err(row(path, line, format!("shown_first is {o:?}; expected a or b"))),
        };
        let y_a = match winner {
            "a" | "A" => Some(1.0),
            "b" | "B" => Some(0.0),
            "tie" | "TIE" | "Tie" => Some(0.5),
            "" => None,
            o => return Err(row(path, line, format!("winner is {o:?}; expected a, b, tie or empty (invalid)"))),
        };
        let cost_usd = match cost_col.map(|k| rec.get(k).unwrap_or_default().trim()) {
            None | Some("") => None,
            Some(s) => match s.parse::<f64>().ok().map(crate::domain::verdict::check_query_usd) {
                Some(Ok(x)) => Some(x),
                // The value as written (1e400 reads as inf).
                Some(Err(m)) => {
                    let m = m.split_once(':').map_or(m.clone(), |(_, why)| format!("{s}:{why}"));
                    return Err(row(path, line, format!("cost_usd is {m}, or empty")));
                }
                None => {
                    return Err(row(path, line, format!("cost_usd is {s:?}; expected a number ≥ 0 (USD) or empty")));
                }
            },
        };
        let (a, b, y) = if a_first { (sa, sb, y_a) } else { (sb, sa, y_a.map(|y| 1.0 - y)) };
        c.verdicts.push(Verdict {
            pool_id: pid.to_owned(),
            a: a.to_owned(),
            b: b.to_owned(),
            y,
            judge: judge_col.map(|k| rec.get(k).unwrap_or_default().trim().to_owned()).unwrap_or_default(),
            cost_usd,
            strong: false,
            invalid_reason: y.is_none().then_some("no winner"),
            at: (path.to_owned(), line),
            record: None,
            swapped: false,
        });
    }
    if rows == 0 {
        return Err(row(
            path,
            1,
            format!("a header and no row (the file holds no verdict); expected rows of {wanted}"),
        ));
    }
    Ok(())
}

/// Check one verdict per judge, prompt and ordered pair, then write the recording.
fn write_verdicts(c: Collected, out: &Path) -> Result<JudgmentSummary, ImportError> {
    let Collected { verdicts, mut skipped, mut notes, alpaca, .. } = c;
    let mut seen: HashMap<(&str, &str, &str, &str), usize> = HashMap::new();
    let mut kept: Vec<&Verdict> = Vec::new();
    let mut duplicates = 0;
    for v in &verdicts {
        let key = (v.judge.as_str(), v.pool_id.as_str(), v.a.as_str(), v.b.as_str());
        match seen.get(&key) {
            None => {
                seen.insert(key, kept.len());
                kept.push(v);
            }
            Some(&k) if kept[k].y == v.y && kept[k].cost_usd == v.cost_usd => duplicates += 1,
            Some(&k) => {
                let first = kept[k];
                let show = |y: Option<f64>| y.map_or("null".to_owned(), |y| y.to_string());
                let record = |r: Option<usize>| r.map(|r| format!("record {r} of the array")).unwrap_or_default();
                let there = match first.record {
                    Some(r) => format!("{}:{} ({})", first.at.0.display(), first.at.1, record(Some(r))),
                    None => format!("{}:{}", first.at.0.display(), first.at.1),
                };
                let here = if v.record.is_some() { format!("{}: ", record(v.record)) } else { String::new() };
                return Err(row(
                    &v.at.0,
                    v.at.1,
                    format!(
                        "{here}judge {:?}, prompt {:?}, {:?} shown first vs {:?}: y = {} here but {} at {there}; expected one verdict per judge, prompt and ordered pair",
                        v.judge,
                        v.pool_id,
                        v.a,
                        v.b,
                        show(v.y),
                        show(first.y),
                    ),
                ));
            }
        }
    }
    if duplicates > 0 {
        skipped.push((duplicates, "repeated verdict".into()));
    }
    if alpaca {
        let swapped = kept.iter().filter(|v| v.swapped).count();
        notes.insert(
            0,
            format!(
                "{swapped} of the {} were shown with generator_2 (the model) first: alpaca_eval's seeded switch, recomputed per instruction",
                kept.len()
            ),
        );
    }
    if kept.is_empty() {
        let skipped: Vec<String> = skipped.iter().map(|(n, what)| crate::domain::fmt::count(*n, what)).collect();
        return Err(ImportError::NoVerdict(format!(
            "the files hold no verdict between two different systems{}",
            if skipped.is_empty() { String::new() } else { format!(" (skipped {})", skipped.join(", ")) }
        )));
    }
    let mut text = String::new();
    let (mut judges, mut systems, mut prompts): (Vec<String>, Vec<String>, Vec<&str>) = Default::default();
    let mut prompt_set = std::collections::HashSet::new();
    for v in &kept {
        let line = OutLine {
            pool_id: &v.pool_id,
            a: &v.a,
            b: &v.b,
            y: v.y,
            judge: &v.judge,
            cost_usd: v.cost_usd,
            strong_preference: v.strong && v.y.is_some(),
            invalid_reason: if v.y.is_none() { v.invalid_reason } else { None },
        };
        text.push_str(&serde_json::to_string(&line).expect("serialisable"));
        text.push('\n');
        if !judges.contains(&v.judge) {
            judges.push(v.judge.clone());
        }
        for s in [&v.a, &v.b] {
            if !systems.contains(s) {
                systems.push(s.clone());
            }
        }
        if prompt_set.insert(v.pool_id.as_str()) {
            prompts.push(&v.pool_id);
        }
    }
    write_out(out, &text)?;
    notes.extend(crate::domain::names::near_duplicates(systems.iter().map(String::as_str), "systems"));
    Ok(JudgmentSummary {
        verdicts: kept.len(),
        invalid: kept.iter().filter(|v| v.y.is_none()).count(),
        judges,
        prompts: prompts.len(),
        systems,
        skipped,
        notes,
    })
}

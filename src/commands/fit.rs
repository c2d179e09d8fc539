//! `topk-judge fit`: fit the model to verdicts collected elsewhere, or to a run folder's
//! (docs/model.md §2), with the same reporting as `run`: which ranking is reported and why, both
//! rankings, the comparison graph, identifiability and the notes.
//!
//! The verdicts file is JSON Lines, one object per line with `"a"` (the item shown first),
//! `"b"` (shown second) and `"y"` (1 = a won, 0 = b won, ½ a tie, a soft P(a), or `null` for an
//! invalid verdict); `"pool_id"` and `"judge"` are optional. A line without a usable `y` is an
//! error naming the line; records of another pool are counted and reported; records of several
//! judges are reported, and `--judge` selects one.

use super::run_folder::{judge_description, load_run};
use crate::analysis::panel_fit::JudgeVerdicts;
use crate::analysis::ranking::ReportRanking;
use crate::domain::pool::{self, CovariateSpec, Pool};
use crate::domain::verdict::ItemVerdict;
use crate::model::Prior;
use crate::model::summary::{ModelKind, build_design, fit_and_summarise};
use crate::report;
use crate::report::fit::{FitOutput, PanelFitOutput, fit_text, panel_text};
use crate::report::schema::FittedRanking;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Errors of `fit`.
#[derive(Debug, thiserror::Error)]
pub enum FitCommandError {
    /// The pool file could not be read, has no pool with the id, or breaks a rule.
    #[error(transparent)]
    Pool(#[from] pool::PoolError),
    /// Reading a run folder (boxed: the error names files and config fields).
    #[error(transparent)]
    Run(Box<super::run_folder::RunFolderError>),
    /// Bad verdicts or arguments (the message names file and line, or the flag).
    #[error("{0}")]
    Invalid(String),
    /// The Bradley–Terry MAP fit failed (Newton did not converge, or the Hessian is not positive definite).
    #[error(transparent)]
    Fit(#[from] crate::model::FitError),
    /// `--covariates` names a transform that does not exist.
    #[error("--covariates")]
    Covariates(#[source] crate::domain::invalid::InvalidInput),
    /// `--out` could not be written.
    #[error("writing {}", path.display())]
    WriteOut {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

impl From<super::run_folder::RunFolderError> for FitCommandError {
    fn from(e: super::run_folder::RunFolderError) -> Self {
        FitCommandError::Run(Box::new(e))
    }
}

/// Arguments of `fit` (`None` = the run's setting with a run folder, else the default).
pub struct FitRequest<'a> {
    /// The command as a user types it with its two files (`fit POOL VERDICTS`, `check POOL
    /// JUDGMENTS`), for the hint when they look swapped.
    pub usage: &'static str,
    /// Pool file, or a run folder.
    pub pool_file: &'a Path,
    /// Verdicts file (default with a run folder: its verdicts.jsonl).
    pub verdicts_file: Option<&'a Path>,
    /// Pool id.
    pub pool_id: Option<&'a str>,
    /// Judge to select.
    pub judge: Option<&'a str>,
    /// `--model`: `naive` (θ and κ) or `bias_aware` (θ, bias coefficients c, κ).
    pub model: Option<ModelKind>,
    /// `--k`: the top-k size (1 ≤ k < M bases).
    pub k: Option<usize>,
    /// Which ranking to report.
    pub report_ranking: Option<ReportRanking>,
    /// Covariates (`None` = the run's, or the pool defaults).
    pub covariates: Option<Vec<CovariateSpec>>,
    /// λ_θ, λ_b, λ_κ.
    pub lambda: [Option<f64>; 3],
    /// Monte-Carlo draws.
    pub draws: Option<usize>,
    /// Weight of a strong-preference verdict's likelihood term (1 = like any verdict).
    pub strong_preference_weight: Option<f64>,
    /// `--seed`: seed of the Monte-Carlo draws from the Laplace posterior (top-k membership π).
    pub seed: Option<u64>,
    /// `--systems`: rank systems over every pool of the file as prompts (docs/systems.md);
    /// without it, chosen when the records name two or more pools of the file and no
    /// `--pool-id` is given.
    pub systems: bool,
    /// `--panel`: fit the judges of the file as one panel (docs/model.md §8) instead of as one
    /// judge.
    pub panel: bool,
    /// The verdicts file is a recording (docs/replay.md, `check`'s JUDGMENTS): every record
    /// names its `pool_id`, a line repeating the verdict of an earlier one (same judge, settings,
    /// prompt and ordered pair) is counted once, and one with another verdict is an error
    /// naming both lines.
    pub recording: bool,
    /// `--trusted`: with `--panel`, the judge whose verdicts are taken as free of item-level
    /// bias (exact name or a unique prefix).
    pub trusted: Option<&'a str>,
    /// `--family JUDGE=FAMILY`: with `--panel` over systems, each judge's model family (the
    /// self-preference covariate, docs/model.md §8).
    pub families: &'a [String],
    /// `--system-family SYSTEM=FAMILY`: a system's family, where its id does not name it.
    pub system_families: &'a [String],
}

/// One verdict line of a verdicts file.
#[derive(Debug, Clone, PartialEq)]
pub struct VerdictLine {
    /// 1-based line number.
    pub line: usize,
    /// Item shown first.
    pub a: String,
    /// Item shown second.
    pub b: String,
    /// Outcome (`None` = invalid verdict).
    pub y: Option<f64>,
    /// Pool id, when given.
    pub pool_id: Option<String>,
    /// Judge, when given.
    pub judge: Option<String>,
    /// The judge's settings id, when given (`"judge_settings"`, a run folder's records).
    pub judge_settings: Option<String>,
    /// Cache key, when given (a run folder's records).
    pub key: Option<String>,
    /// The judge stated a strong preference (`"strong_preference": true`, docs/live.md).
    pub strong_preference: bool,
    /// The prompting strategy, when given (`"prompting"`, a recording's: docs/replay.md).
    pub prompting: Option<String>,
    /// The recorded cost in USD, when given and a number.
    pub cost_usd: Option<f64>,
}

const EXPECTED: &str = "expected one JSON object per line: {\"a\": item shown first, \"b\": item shown second, \"y\": 1 if a won, 0 if b won, 0.5 for a tie, or null for an invalid verdict}";

/// Read a verdicts file line by line (UTF-8 byte-order mark, CRLF line ends and blank lines
/// accepted; a torn last line without a newline is dropped with a warning, and lines that repeat
/// an earlier line exactly are fitted each and counted in a warning).
///
/// # Errors
/// [`FitCommandError::Invalid`] naming the file, the first bad line and the expected fields.
pub fn read_verdict_lines(path: &Path) -> Result<(Vec<VerdictLine>, Vec<String>), FitCommandError> {
    read_verdict_lines_but(path, &std::collections::HashSet::new(), true)
}

/// [`read_verdict_lines`] without the lines numbered in `skip` (1-based): a run folder's log
/// read as the run reads it, without the records whose key an earlier line holds.
/// `repeats_fitted`: whether lines repeating an earlier line exactly are fitted each (and said
/// in a warning); a recording counts them once and says so itself ([`one_per_ordered_pair`]).
fn read_verdict_lines_but(
    path: &Path,
    skip: &std::collections::HashSet<usize>,
    repeats_fitted: bool,
) -> Result<(Vec<VerdictLine>, Vec<String>), FitCommandError> {
    let raw = std::fs::read(path)
        .map_err(|e| FitCommandError::Invalid(format!("cannot read verdicts file {}: {e}", path.display())))?;
    let bad = |line: usize, msg: String| FitCommandError::Invalid(format!("{}:{line}: {msg}", path.display()));
    let bytes = crate::domain::text::strip_bom(&raw).map_err(|m| bad(1, m.to_string()))?;
    let mut out = Vec::new();
    let mut warnings = Vec::new();
    // Each line's text → the first line that had it; repeats (a file written twice?).
    let mut seen: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    let mut repeats: Vec<(usize, usize)> = Vec::new();
    // Each cache key → its first line and verdict; later records of the key with another verdict.
    let mut keyed: std::collections::HashMap<String, (usize, Option<u64>)> = std::collections::HashMap::new();
    let mut conflicts: Vec<(usize, usize, Option<String>)> = Vec::new();
    // The same for a recording's lines, by the query they answer.
    let mut recorded: std::collections::HashMap<[String; 6], (usize, Option<u64>)> = std::collections::HashMap::new();
    let mut recorded_conflicts: Vec<(usize, usize)> = Vec::new();
    // Keys spelled like a field the reader uses (`poolid`, `jugde`), or another tool's word for
    // it (`model`, `annotator`): key, the field, first line.
    let mut misspelled: Vec<(String, &'static str, usize)> = Vec::new();
    let parts: Vec<&[u8]> = bytes.split(|b| *b == b'\n').collect();
    // The last line that holds anything: torn there (a crash while writing), with or without its
    // newline, it is dropped with a warning, as `profile` and the run read the log (hunt 55).
    let last = parts.iter().rposition(|p| !p.iter().all(u8::is_ascii_whitespace)).unwrap_or(0);
    for (ln, part) in parts.iter().enumerate() {
        let line_no = ln + 1;
        let complete = ln < last;
        let text = std::str::from_utf8(part)
            .map_err(|e| bad(line_no, crate::domain::text::not_utf8(part, e.valid_up_to())))?;
        let text = text.strip_suffix('\r').unwrap_or(text);
        if text.trim().is_empty() || skip.contains(&line_no) {
            continue;
        }
        if let Some(m) = crate::domain::text::not_json_lines(text) {
            return Err(bad(line_no, crate::store::text::run_output_instead(path).unwrap_or(m)));
        }
        let v: serde_json::Value = match serde_json::from_str(text) {
            Ok(v) => v,
            Err(e) if !complete && e.is_eof() => {
                warnings.push(format!(
                    "{}:{line_no}: dropped a torn last line ({} bytes, {}; a crash while writing?)",
                    path.display(),
                    part.len(),
                    if ln + 1 == parts.len() { "no newline" } else { "cut short" }
                ));
                break;
            }
            Err(e) => {
                return Err(bad(line_no, format!("not JSON ({}); {EXPECTED}", crate::domain::json::on_one_line(&e))));
            }
        };
        crate::domain::json::unique_keys(text).map_err(|e| bad(line_no, e.to_string()))?;
        if let Some(obj) = v.as_object() {
            for k in obj.keys() {
                if let Some(meant) = misspelled_field(k)
                    && !misspelled.iter().any(|(kk, _, _)| kk == k)
                {
                    misspelled.push((k.clone(), meant, line_no));
                }
            }
        }
        let first = *seen.entry(text.trim()).or_insert(line_no);
        if first != line_no {
            repeats.push((line_no, first));
        }
        let Some(obj) = v.as_object() else {
            return Err(bad(line_no, format!("not a JSON object; {EXPECTED}")));
        };
        let id = |k: &str, what: &str| -> Result<String, FitCommandError> {
            match obj.get(k) {
                Some(serde_json::Value::String(s)) => Ok(s.clone()),
                Some(other) => Err(bad(line_no, format!("\"{k}\" = {other} is not an item id (a string); {EXPECTED}"))),
                None => Err(bad(line_no, format!("no \"{k}\" ({what}); {EXPECTED}"))),
            }
        };
        let a = id("a", "the item shown first")?;
        let b = id("b", "the item shown second")?;
        let y = match obj.get("y") {
            None => {
                let hint = match obj.get("winner").or_else(|| obj.get("preferred")) {
                    Some(w) => format!(
                        " (found {w}: write it as \"y\": 1 when a, the item shown first, won, 0 when b won, 0.5 for a tie)"
                    ),
                    None => String::new(),
                };
                return Err(bad(line_no, format!("no \"y\"{hint}; {EXPECTED}")));
            }
            Some(serde_json::Value::Null) => None,
            Some(serde_json::Value::Number(n)) => match n.as_f64() {
                Some(y) if (0.0..=1.0).contains(&y) => Some(y),
                _ => return Err(bad(line_no, format!("y = {n} is outside [0, 1]; {EXPECTED}"))),
            },
            Some(other) => return Err(bad(line_no, format!("y = {other} is not a number; {EXPECTED}"))),
        };
        // Optional names: a string, or absent / null / "" for none.
        let opt = |k: &str| -> Result<Option<String>, FitCommandError> {
            match obj.get(k) {
                None | Some(serde_json::Value::Null) => Ok(None),
                Some(serde_json::Value::String(s)) => Ok(Some(s.clone()).filter(|s| !s.trim().is_empty())),
                Some(other) => Err(bad(line_no, format!("\"{k}\" = {other} is not a name (a string); {EXPECTED}"))),
            }
        };
        let strong_preference = match obj.get("strong_preference") {
            None | Some(serde_json::Value::Null) => false,
            Some(serde_json::Value::Bool(s)) => y.is_some() && *s,
            Some(other) => {
                return Err(bad(
                    line_no,
                    format!("\"strong_preference\" = {other} is not true or false (a JSON boolean); {EXPECTED}"),
                ));
            }
        };
        let key = obj.get("key").and_then(|k| k.as_str()).filter(|k| !k.is_empty());
        if let Some(k) = key {
            let (first, y0) = *keyed.entry(k.to_owned()).or_insert((line_no, y.map(f64::to_bits)));
            if first != line_no && y0 != y.map(f64::to_bits) {
                let judge = obj.get("judge").and_then(|j| j.as_str()).map(str::to_owned);
                conflicts.push((line_no, first, judge));
            }
        } else {
            // A recording's line (keyed per prompt, no cache key): its query is the judge, its
            // settings and prompting, the prompt and the ordered pair, as `check` reads it; a
            // line without pool_id is of the fitted pool, its prompt "" (hunt 51: a second
            // verdict for one ordered pair was said only when the lines named their pool).
            let prompt = obj.get("pool_id").and_then(|p| p.as_str()).unwrap_or("");
            // A field written null, empty or blank is the field not written, as `check` reads it.
            let field = |k: &str| match obj.get(k) {
                None | Some(serde_json::Value::Null) => String::new(),
                Some(serde_json::Value::String(s)) if s.trim().is_empty() => String::new(),
                Some(serde_json::Value::String(s)) => s.clone(),
                Some(v) => v.to_string(),
            };
            let query =
                [field("judge"), field("judge_settings"), field("prompting"), prompt.to_owned(), a.clone(), b.clone()];
            let (first, y0) = *recorded.entry(query).or_insert((line_no, y.map(f64::to_bits)));
            if first != line_no && y0 != y.map(f64::to_bits) {
                recorded_conflicts.push((line_no, first));
            }
        }
        out.push(VerdictLine {
            line: line_no,
            a,
            b,
            y,
            pool_id: opt("pool_id")?,
            judge: match opt("judge")? {
                // A judge's name is a column of the tables, as an id is.
                Some(j) if let Some(p) = crate::domain::pool::id_problem(&j) => {
                    return Err(bad(line_no, format!("\"judge\": the name {p}")));
                }
                // Two judges that would print as one (`gpt-4` and `gpt-4 `; hunt 57).
                Some(j) if j.trim() != j || j.chars().any(crate::domain::fmt::ignorable) => {
                    return Err(bad(
                        line_no,
                        format!(
                            "\"judge\": the name {j:?} begins or ends with white space, or holds a character that prints as nothing; judges are rows of the tables: write it without"
                        ),
                    ));
                }
                j => j,
            },
            judge_settings: opt("judge_settings")?,
            key: obj.get("key").and_then(|k| k.as_str()).map(str::to_owned),
            strong_preference,
            prompting: opt("prompting")?,
            cost_usd: obj.get("cost_usd").and_then(serde_json::Value::as_f64),
        });
    }
    for (k, meant, line) in &misspelled {
        warnings.push(format!(
            "{}:{line}: the key {k:?} is not read (a record's optional fields are pool_id, judge, strong_preference, prompting, cost_usd); {meant:?} is spelled alike or means the same: write it so, or its lines are fitted without it",
            path.display()
        ));
    }
    if let Some((line, first)) = repeats.first().filter(|_| repeats_fitted) {
        warnings.push(format!(
            "{}: {} an earlier line exactly (line {line} repeats line {first}); each is fitted as a verdict of its own: if the file holds some verdicts twice (written or concatenated twice), remove the repeats; repeated samples of one query are fine",
            path.display(),
            lines_repeat(repeats.len())
        ));
    }
    // A cache key is one query, of which a run stores one verdict (and `fit RUN` fits the first
    // record of each key): other verdicts under one key are said, not fitted silently.
    if let Some((line, first, judge)) = conflicts.first().filter(|_| repeats_fitted) {
        // Named by judge: with --judge, another judge's records are not fitted at all.
        let of = judge.as_deref().map(|j| format!(" of judge {j:?}")).unwrap_or_default();
        warnings.push(format!(
            "{}: {}{of} {} the cache key of an earlier line with another verdict (line {line}, key of line {first}): one query answered twice (samples of merged runs?); where that judge is fitted, each is fitted as a verdict of its own, where a run folder fits the first record of each key",
            path.display(),
            crate::domain::fmt::count(conflicts.len(), "record"),
            if conflicts.len() == 1 { "repeats" } else { "repeat" }
        ));
    }
    if let Some((line, first)) = recorded_conflicts.first().filter(|_| repeats_fitted) {
        warnings.push(format!(
            "{}: {} {} another verdict for the judge, prompt and ordered pair of an earlier line (line {line}, first on line {first}); each is fitted as a verdict of its own here, while `check` and the replay judge refuse such a recording (one verdict per ordered pair, docs/replay.md)",
            path.display(),
            crate::domain::fmt::count(recorded_conflicts.len(), "line"),
            if recorded_conflicts.len() == 1 { "gives" } else { "give" }
        ));
    }
    Ok((out, warnings))
}

/// The field a verdict record's key `k` is a misspelling of (hunt 55: `poolid`, `jugde`,
/// `strong_preferense` were read as absent without a word): one of the optional fields that
/// change a record's meaning, spelled alike once case, `_`, `-` and spaces are set aside, or
/// within two edits; `None` for a field the reader knows and any other key (a run folder's
/// records carry more).
fn misspelled_field(k: &str) -> Option<&'static str> {
    const MEANT: [&str; 6] = ["pool_id", "judge", "strong_preference", "prompting", "cost_usd", "judge_settings"];
    const KNOWN: [&str; 16] = [
        "a",
        "b",
        "y",
        "pool_id",
        "judge",
        "judge_settings",
        "key",
        "strong_preference",
        "prompting",
        "cost_usd",
        "attempts",
        "intent",
        "latency_ms",
        "raw",
        "ts",
        "usage",
    ];
    if KNOWN.contains(&k) {
        return None;
    }
    let bare = |s: &str| s.chars().filter(|c| c.is_alphanumeric()).flat_map(char::to_lowercase).collect::<String>();
    // Other tools' words for the same fields (hunt 57: `model` or `annotator` for the judge
    // merged two judges silently; `prompt_id` was taken for `prompting`).
    const OTHER_WORDS: [(&str, &str); 11] = [
        ("model", "judge"),
        ("annotator", "judge"),
        ("grader", "judge"),
        ("evaluator", "judge"),
        ("judgemodel", "judge"),
        ("promptid", "pool_id"),
        ("prompt", "pool_id"),
        ("questionid", "pool_id"),
        ("pool", "pool_id"),
        ("cost", "cost_usd"),
        ("price", "cost_usd"),
    ];
    if let Some((_, meant)) = OTHER_WORDS.iter().find(|(w, _)| bare(k) == *w) {
        return Some(meant);
    }
    // A field cut short (`strong`, `strong_pref`).
    if k.chars().count() >= 5
        && let Some(m) = MEANT.iter().find(|m| bare(m).starts_with(&bare(k)))
    {
        return Some(m);
    }
    let edits = |a: &str, b: &str| {
        let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
        let mut row: Vec<usize> = (0..=b.len()).collect();
        for (i, ca) in a.iter().enumerate() {
            let mut prev = row[0];
            row[0] = i + 1;
            for (j, cb) in b.iter().enumerate() {
                let cur = row[j + 1];
                row[j + 1] = (prev + usize::from(ca != cb)).min(row[j] + 1).min(cur + 1);
                prev = cur;
            }
        }
        row[b.len()]
    };
    MEANT.into_iter().find(|m| bare(k) == bare(m) || (k.chars().count() >= 4 && edits(&bare(k), &bare(m)) <= 2))
}

/// Fit a pool to a verdicts file (or a run folder).
///
/// # Errors
/// [`FitCommandError`] naming the file, line and item.
pub fn fit_file(args: &FitRequest<'_>) -> Result<(Pool, FitOutput), FitCommandError> {
    let Prepared { run, pool, set, mut sel, vpath } = prepare(args)?;
    let cfg = run.as_ref().map(|r| &r.cfg);
    // A run folder of one judge: the verdicts of its judge as configured now, as the run fits
    // them (a judge edited under the run's name leaves its older verdicts, another judge's).
    if let Some(r) = run.as_ref().filter(|r| !r.cfg.is_panel() && args.verdicts_file.is_none() && args.judge.is_none())
        && let Ok(judge) = crate::config::judge::judge_info(r.cfg.raw.judge())
    {
        let queries = crate::run::queries::RunQueries::new(&r.cfg, judge.as_ref());
        queries.learn_folder(&r.dir);
        let before = sel.mine.len();
        sel.mine.retain(|l| l.key.as_deref().is_some_and(|k| queries.contains_key(k)));
        // Records, none of them the judge's as its config.yaml builds it now: a folder whose
        // config was edited after the run. "No ranking" with success would read as an empty run.
        if sel.mine.is_empty() && before > 0 {
            return Err(FitCommandError::Invalid(format!(
                "{}: none of the {before} records of {vpath} is of the judge its config.yaml configures now (its settings changed since the run: seed, model, prompt, …?), so nothing would be fitted; restore config.yaml, or fit the records as a file: `topk-judge fit {} {vpath}`",
                r.dir.display(),
                r.dir.join("pool.jsonl").display()
            )));
        }
        // One record per ordered pair, as the run fits them (a pair stored under a panel
        // member's name and under another, or its own key).
        let mut seen = std::collections::HashSet::new();
        let judged = sel.mine.len();
        sel.mine.retain(|l| l.key.as_deref().and_then(|k| queries.pair_of(k)).is_some_and(|p| seen.insert(p)));
        if sel.mine.len() < judged {
            sel.notes.push(format!(
                "{} of the records of {vpath} repeat an ordered pair another record of this judge holds (stored under two panel members' names, or one and its own key): the first is fitted, as the run fits it",
                judged - sel.mine.len()
            ));
        }
        if judged < before {
            sel.notes.push(format!(
                "{} of the {before} records of {vpath} are of another judge or judge configuration (another judge, or one edited under this run's name: seed, prompt, …): not fitted, as the run does not fit them",
                before - judged
            ));
        }
    }
    let (verdicts, invalid) = item_verdicts(&sel.mine, &pool, set.strong_preference_weight, &vpath)?;
    let fit = fit_output(&pool, args, cfg, &set, sel, verdicts, invalid)?;
    Ok((pool, fit))
}

/// Fit the judges of a verdicts file (or a run folder) as one panel (docs/model.md §8): shared
/// θ, per judge κ_j, c_j and scale s_j; `--trusted` marks the judge without c.
///
/// # Errors
/// [`FitCommandError`]: as [`fit_file`]; a record without `"judge"`; `--trusted` naming no
/// judge of the records, or one without a valid verdict; a panel too large for the dense fit.
pub fn fit_panel_file(args: &FitRequest<'_>) -> Result<PanelFitOutput, FitCommandError> {
    let Prepared { run, pool, set, sel, vpath } = prepare(args)?;
    let cfg = run.as_ref().map(|r| &r.cfg);
    let Selection { mut mine, judges: mut counts, other_pools, mut warnings, mut notes, .. } = sel;
    // A judge panel's run folder: each judge's verdicts of its configuration now (a judge edited
    // under the same name keeps its name on its older verdicts, which are another judge's).
    if let Some(r) = run.as_ref().filter(|_| args.verdicts_file.is_none()) {
        let of: Vec<_> = mine
            .iter()
            .map(|l| (l.judge.as_deref(), l.key.as_deref().unwrap_or_default(), l.a.as_str(), l.b.as_str()))
            .collect();
        let keep = super::run_folder::of_current_judges(&r.cfg, &of)
            .map_err(|e| FitCommandError::Invalid(format!("{}: {e}", r.dir.display())))?;
        let before = mine.len();
        let mut keep = keep.into_iter();
        mine.retain(|_| keep.next().unwrap_or(false));
        if mine.len() < before {
            notes.push(format!(
                "{} records of {} are of judges' earlier configurations (or of judges no longer in the panel): not fitted",
                before - mine.len(),
                vpath
            ));
            counts = mine.iter().fold(std::collections::BTreeMap::new(), |mut m, l| {
                *m.entry(l.judge.clone().unwrap_or_default()).or_default() += 1;
                m
            });
        }
    }
    if let Some(n) = counts.get("") {
        let first = mine.iter().find(|l| l.judge.is_none()).map_or(0, |l| l.line);
        return Err(FitCommandError::Invalid(format!(
            "{vpath}:{first}: this record{} of pool {:?} ha{} no \"judge\" (or an empty one); --panel fits each judge's verdicts as that judge's, so every record needs a judge name (or fit without --panel)",
            if *n == 1 { String::new() } else { format!(" and {} more", n - 1) },
            pool.pool_id,
            if *n == 1 { "s" } else { "ve" }
        )));
    }
    if counts.is_empty() {
        return Err(FitCommandError::Invalid(format!("{vpath}: no record of pool {:?} to fit", pool.pool_id)));
    }
    // A panel run's folder: its trusted judge and families are the defaults, so the fit is the
    // run's (result.json) unless a flag says otherwise.
    let run_panel = run.as_ref().filter(|r| r.cfg.is_panel() && args.verdicts_file.is_none());
    let marked = run_panel.and_then(|r| r.cfg.raw.judges.iter().find(|m| m.trusted)).map(|m| m.name.clone());
    // The run's trusted judge without a record here (a run stopped before it was asked) cannot
    // anchor the others: said, so "no judge is trusted" below is not read as the config's.
    if let Some(t) = marked.as_ref().filter(|t| args.trusted.is_none() && !counts.contains_key(*t)) {
        notes.push(format!(
            "judge {t:?} is marked trusted in the run's config but has no verdict here yet, so it cannot anchor the other judges' c: the fit reads the panel as one without a trusted judge until {t} has verdicts"
        ));
    }
    let run_trusted = marked.filter(|name| counts.contains_key(name));
    let trusted = match args.trusted {
        Some(t) => Some(match_judge(&counts, t, "--trusted", &pool, &vpath)?),
        None => {
            if let Some(t) = &run_trusted {
                notes.push(format!("trusted judge {t:?}: the run's (`trusted: true`); --trusted names another"));
            }
            run_trusted
        }
    };
    let mut groups = Vec::with_capacity(counts.len());
    let mut invalid = 0;
    for name in counts.keys() {
        let lines: Vec<VerdictLine> =
            mine.iter().filter(|l| l.judge.as_deref() == Some(name.as_str())).cloned().collect();
        let (verdicts, inv) = item_verdicts(&lines, &pool, set.strong_preference_weight, &vpath)?;
        invalid += inv;
        let is_trusted = trusted.as_deref() == Some(name.as_str());
        if verdicts.is_empty() {
            if is_trusted {
                return Err(FitCommandError::Invalid(format!(
                    "--trusted {name:?}: none of its {} records in {vpath} is a valid verdict",
                    lines.len()
                )));
            }
            notes.push(format!("judge {name:?}: no valid verdict ({inv} invalid); left out of the panel"));
            continue;
        }
        groups.push(JudgeVerdicts {
            name: name.clone(),
            trusted: is_trusted,
            verdicts,
            prior: crate::model::panel::JudgePrior::default(),
        });
    }
    if groups.is_empty() {
        // Every judge's records are invalid (the panel model needs one judge with verdicts).
        return Err(FitCommandError::Invalid(format!(
            "{vpath}: no valid verdict of pool {:?} ({invalid} invalid, {} of other pools): there is no ranking to fit",
            pool.pool_id,
            other_pools.values().sum::<usize>()
        )));
    }
    if groups.len() == 1 {
        notes.push(
            "a panel of one judge is the model of docs/model.md §2: fit without --panel reports it with both rankings and which one the data support".into(),
        );
    }
    let cov = covariates(&pool, args, cfg, &set, &mut warnings)?;
    // Without --family, a panel run's families of the judges fitted here, by name. A judge made
    // --trusted here has no c, so no self-preference: its family is left out.
    let run_judges: Option<Vec<Option<String>>> = run_panel
        .and_then(|r| r.cfg.families.as_ref().map(|f| (r, f)))
        .filter(|_| args.families.is_empty())
        .map(|(r, f)| {
            groups
                .iter()
                .map(|g| {
                    let family =
                        r.cfg.raw.judges.iter().position(|m| m.name == g.name).and_then(|j| f.judge[j].clone());
                    if g.trusted && family.is_some() {
                        notes.push(format!("judge {:?} is trusted here: its family (the run's) is left out", g.name));
                        return None;
                    }
                    family
                })
                .collect()
        });
    let families = match (args.families.is_empty(), run_panel.and_then(|r| r.cfg.families.as_ref().map(|f| (r, f)))) {
        // The run's families, by judge and system name.
        (true, Some((r, f))) if args.system_families.is_empty() => {
            let judge = run_judges.unwrap_or_default();
            let base = pool
                .bases
                .iter()
                .map(|b| r.cfg.pool.bases.iter().position(|x| x == b).and_then(|i| f.base[i].clone()))
                .collect();
            notes.push("families: the run's (judges[i].family, pool.families); --family gives others".into());
            let f = crate::analysis::panel_fit::Families { judge, base };
            let names: Vec<&str> = groups.iter().map(|g| g.name.as_str()).collect();
            notes.extend(f.lines(&names, &pool.bases));
            Some(f)
        }
        _ => {
            let none = BTreeMap::new();
            let run = RunFamilies {
                judges: run_judges.filter(|j| j.iter().any(Option::is_some)),
                systems: run_panel.map_or(&none, |r| &r.cfg.raw.pool.families),
            };
            families(args, &pool, &groups, &counts, &vpath, &run, (&mut notes, &mut warnings))?
        }
    };
    // A panel run's folder: each judge's carried prior (judges[i].prior), as the run fitted it,
    // term by term where this fit has the parameter in the run's units.
    if let Some(r) = run_panel {
        let run_cov = &r.cfg.covariates;
        for g in &mut groups {
            let Some(m) = r.cfg.raw.judges.iter().find(|m| m.name == g.name && !m.prior.is_empty()) else { continue };
            let mut applied = BTreeMap::new();
            for (k, n) in &m.prior {
                let why_not = if k == "kappa" {
                    None
                } else if g.trusted {
                    Some(format!("judge {:?} is trusted here (no c)", g.name))
                } else if k == crate::analysis::panel_fit::SAME_FAMILY_KEY {
                    families.is_none().then(|| "this fit has no families".to_owned())
                } else {
                    let here = cov.names.iter().position(|x| x == k).map(|t| cov.transforms[t]);
                    let there = run_cov.names.iter().position(|x| x == k).map(|t| run_cov.transforms[t]);
                    match (here, there) {
                        (None, _) => Some(format!("{k} is not a covariate of this fit")),
                        (Some(h), Some(t)) if h != t => Some(format!(
                            "this fit's {k} is {}, the run's {}: the prior is in the run's unit",
                            format!("{h:?}").to_lowercase(),
                            format!("{t:?}").to_lowercase()
                        )),
                        _ => None,
                    }
                };
                match why_not {
                    None => {
                        applied.insert(k.clone(), *n);
                    }
                    Some(w) => {
                        notes.push(format!("judge {:?}: the run's carried prior on {k} is not applied: {w}", g.name))
                    }
                }
            }
            if applied.is_empty() {
                continue;
            }
            g.prior = crate::analysis::panel_fit::carried_prior(&applied, &cov.names, families.is_some()).0;
            notes.push(crate::analysis::panel_fit::carried_note(&g.name, &applied, "the run's judges[i].prior"));
        }
    }
    let comparisons = groups.iter().map(|g| g.verdicts.len()).sum::<usize>();
    let mut rng = crate::domain::rng::stream(set.seed, "membership", comparisons as u64);
    let crate::analysis::panel_fit::PanelReport { panel, notes: more, not_certified, weak_anchor } =
        crate::analysis::panel_fit::report(
            &pool,
            &cov,
            &groups,
            families.as_ref(),
            &set.prior,
            (set.k, set.draws, set.epsilon),
            &mut rng,
        )?;
    notes.extend(more);
    Ok(PanelFitOutput {
        pool_id: pool.pool_id.clone(),
        k: set.k,
        epsilon: set.epsilon,
        comparisons,
        invalid,
        other_pools,
        bases: pool.bases.clone(),
        not_certified,
        weak_anchor,
        draws: set.draws,
        seed: set.seed,
        panel,
        notes,
        warnings,
    })
}

/// `NAME=FAMILY` of `flag`.
fn name_family<'s>(flag: &str, s: &'s str, what: &str) -> Result<(&'s str, &'s str), FitCommandError> {
    match s.split_once('=') {
        Some((a, b)) if !a.trim().is_empty() && !b.trim().is_empty() => Ok((a.trim(), b.trim())),
        _ => Err(FitCommandError::Invalid(format!("{flag} {s:?}: expected {what}=FAMILY"))),
    }
}

/// What a panel run's folder says of families: its judges' (per judge fitted here, `None`
/// when none has one) and its systems' (`pool.families`).
struct RunFamilies<'a> {
    judges: Option<Vec<Option<String>>>,
    systems: &'a BTreeMap<String, String>,
}

/// The model families of `--family` and `--system-family` (none without either): each judge's
/// (`--family`, else a panel run's), and each system's, given or matched by name (a system whose
/// id contains a judge's family, ignoring case; the longest family wins).
fn families(
    args: &FitRequest<'_>,
    pool: &Pool,
    groups: &[JudgeVerdicts],
    counts: &BTreeMap<String, usize>,
    vpath: &str,
    run: &RunFamilies<'_>,
    (notes, warnings): (&mut Vec<String>, &mut Vec<String>),
) -> Result<Option<crate::analysis::panel_fit::Families>, FitCommandError> {
    let run_families = run.systems;
    let mut judge: Vec<Option<String>> = vec![None; groups.len()];
    if args.families.is_empty() {
        if args.system_families.is_empty() {
            return Ok(None);
        }
        // --system-family alone on a panel run whose judges have families: the run's judges.
        let Some(of_run) = &run.judges else {
            return Err(FitCommandError::Invalid(
                "--system-family needs the judges' families: --family JUDGE=FAMILY, or a panel run folder whose judges have a `family`; the self-preference covariate is each judge's".into(),
            ));
        };
        judge.clone_from(of_run);
        notes.push("judges' families: the run's (judges[i].family); --family gives others".into());
    }
    if !pool.is_systems() {
        return Err(FitCommandError::Invalid(format!(
            "--family: self-preference is a covariate of systems (a pool file of many prompts whose items carry `system`, docs/systems.md); {} gives pool {:?}, one prompt",
            args.pool_file.display(),
            pool.pool_id
        )));
    }
    for f in args.families {
        let (name, family) = name_family("--family", f, "JUDGE")?;
        let name = match_judge(counts, name, "--family", pool, vpath)?;
        let Some(j) = groups.iter().position(|g| g.name == name) else {
            return Err(FitCommandError::Invalid(format!("--family {f:?}: judge {name:?} has no valid verdict")));
        };
        if groups[j].trusted {
            return Err(FitCommandError::Invalid(format!(
                "--family {f:?}: {name:?} is the --trusted judge, taken as free of item-level bias, so it has no self-preference coefficient; give the family of an untrusted judge, or do not mark {name:?} trusted"
            )));
        }
        match &judge[j] {
            Some(prev) if prev != family => {
                return Err(FitCommandError::Invalid(format!(
                    "--family gives judge {name:?} two families, {prev:?} and {family:?}; give one"
                )));
            }
            _ => judge[j] = Some(family.to_owned()),
        }
    }
    let mut base: Vec<Option<String>> = vec![None; pool.n_bases()];
    for f in args.system_families {
        let (system, family) = name_family("--system-family", f, "SYSTEM")?;
        let Some(b) = pool.bases.iter().position(|s| s == system) else {
            return Err(FitCommandError::Invalid(format!(
                "--system-family {f:?}: no system {system:?} in {}; its systems: {}",
                args.pool_file.display(),
                pool.bases.join(", ")
            )));
        };
        match &base[b] {
            Some(prev) if prev != family => {
                return Err(FitCommandError::Invalid(format!(
                    "--system-family gives system {system:?} two families, {prev:?} and {family:?}; give one"
                )));
            }
            _ => base[b] = Some(family.to_owned()),
        }
        if !judge.iter().flatten().any(|j| j == family) {
            warnings.push(format!(
                "--system-family {f:?}: no judge is of family {family:?} (--family), so this system's family changes nothing"
            ));
        }
    }
    // A run folder's pool.families hold where --system-family says nothing.
    let mut from_run = Vec::new();
    for (system, family) in run_families {
        if let Some(b) = pool.bases.iter().position(|s| s == system)
            && base[b].is_none()
        {
            base[b] = Some(family.clone());
            from_run.push(format!("{system}: {family}"));
        }
    }
    if !from_run.is_empty() {
        notes.push(format!("systems' families of the run (pool.families): {}", from_run.join(", ")));
    }
    let families = crate::analysis::panel_fit::Families::resolve(&pool.bases, judge, base);
    for r in families.reach() {
        let fam = &r.family;
        let members: Vec<&str> = r.bases.iter().map(|&b| pool.bases[b].as_str()).collect();
        let of: Vec<&str> = r.judges.iter().map(|&j| groups[j].name.as_str()).collect();
        if members.is_empty() {
            warnings.push(format!(
                "--family: no system is of family {fam:?} (judge {}); its same-family coefficient is prior-selected",
                of.join(", ")
            ));
        } else if members.len() == pool.n_bases() {
            warnings.push(format!(
                "--family: every system is of family {fam:?} (judge {}; a system is of a family when its id contains the name), so no verdict compares an answer of the family with one outside it and its same-family coefficient is prior-selected; name the family's systems with --system-family SYSTEM=FAMILY",
                of.join(", ")
            ));
        }
    }
    let names: Vec<&str> = groups.iter().map(|g| g.name.as_str()).collect();
    notes.extend(families.lines(&names, &pool.bases));
    Ok(Some(families))
}

/// What both fits start from: the run folder (if one is given), the pool, the settings and the
/// selected records.
struct Prepared {
    run: Option<super::run_folder::LoadedRun>,
    pool: Pool,
    set: FitSettings,
    sel: Selection,
    vpath: String,
}

/// Read the verdicts and the pool, resolve the settings, select the records.
fn prepare(args: &FitRequest<'_>) -> Result<Prepared, FitCommandError> {
    // A run's config file alone stands for its run folder, as in `report`.
    let config_alone = args.verdicts_file.is_none()
        && args.pool_file.is_file()
        && args.pool_file.extension().is_some_and(|e| e == "yaml" || e == "yml");
    let run = if args.pool_file.is_dir() || config_alone { Some(load_run(args.pool_file)?) } else { None };
    let cfg = run.as_ref().map(|r| &r.cfg);
    let mut replaced = None;
    let verdicts_path: PathBuf = match (args.verdicts_file, &run) {
        (Some(v), Some(r)) => {
            replaced = Some(format!(
                "fitting the verdicts of {}, not the run folder's own {}",
                v.display(),
                r.dir.join("verdicts.jsonl").display()
            ));
            v.to_path_buf()
        }
        (Some(v), _) => v.to_path_buf(),
        (None, Some(r)) => r.dir.join("verdicts.jsonl"),
        (None, None) if !args.pool_file.exists() => {
            return Err(FitCommandError::Invalid(format!(
                "{}: no such file or folder; give a run folder (`topk-judge fit runs/NAME`) or `topk-judge fit POOL_FILE VERDICTS_FILE`",
                args.pool_file.display()
            )));
        }
        (None, None) => {
            return Err(FitCommandError::Invalid(format!(
                "no verdicts file: give `topk-judge fit POOL_FILE VERDICTS_FILE`, or a run folder instead of {}",
                args.pool_file.display()
            )));
        }
    };
    // A run folder's own log is read as the run reads it (store::ledger): the first record of
    // each key, the later ones said and not fitted.
    let own_log = run.is_some() && args.verdicts_file.is_none();
    let log = own_log.then(|| crate::store::ledger::read_log(&verdicts_path).ok()).flatten();
    let skip = log.iter().flat_map(|l| l.duplicates.iter().map(|d| d.line)).collect();
    let (lines, mut torn) =
        read_verdict_lines_but(&verdicts_path, &skip, !args.recording).map_err(|e| {
            match swapped(args, &verdicts_path) {
                Some(hint) if run.is_none() => FitCommandError::Invalid(format!("{e}\n  hint: {hint}")),
                _ => e,
            }
        })?;
    let lines = if args.recording { one_per_ordered_pair(lines, &verdicts_path, &mut torn)? } else { lines };
    torn.extend(log.and_then(|l| l.duplicates_warning(&verdicts_path)));
    let vpath = verdicts_path.display().to_string();
    // A run folder's own verdicts are kept by its judges' cache keys below; other files are told
    // apart by each record's settings id.
    let mut lines = lines;
    let split =
        if run.is_some() && args.verdicts_file.is_none() { Vec::new() } else { split_by_settings(&mut lines, &vpath) };
    let systems = cfg.is_none() && (args.systems || (args.pool_id.is_none() && names_several_pools(&lines, args)));
    let pool = if systems {
        crate::config::run::load_systems_pool(args.pool_file, &crate::config::run::PoolIds::All)?
    } else {
        fitted_pool(args, cfg)?
    };
    let set = FitSettings::resolve(args, cfg, &pool)?;
    let mut sel = Selection::of(lines, &pool, args, cfg, &vpath)?;
    sel.warnings.splice(
        0..0,
        torn.into_iter().chain(crate::config::sections::blank_text_warnings(&pool)).chain(split.iter().cloned()),
    );
    sel.notes.splice(0..0, split);
    sel.notes.splice(0..0, replaced);
    Ok(Prepared { run, pool, set, sel, vpath })
}

/// Tell apart judges kept under one name through a change of settings: the records of one
/// `"judge"` with two or more `"judge_settings"` ids (`judge::settings_id`) are renamed
/// `NAME [settings ID]`, one judge per id, so they are counted, selected (`--judge`, which also
/// takes a prefix) and fitted (`--panel`) as the judges they are; records without an id keep
/// NAME. Returns one warning per such name, with the records of each id, and one per name whose
/// records are partly without an id (written by a version that did not record it): those cannot
/// be told apart from the others and are fitted under NAME.
pub fn split_by_settings(lines: &mut [VerdictLine], vpath: &str) -> Vec<String> {
    let mut ids: BTreeMap<String, BTreeMap<String, usize>> = BTreeMap::new();
    let mut without: BTreeMap<String, usize> = BTreeMap::new();
    for l in lines.iter() {
        let name = l.judge.clone().unwrap_or_default();
        match &l.judge_settings {
            Some(s) => *ids.entry(name).or_default().entry(s.clone()).or_default() += 1,
            None => *without.entry(name).or_default() += 1,
        }
    }
    let unknown: Vec<String> = without
        .iter()
        .filter_map(|(name, &n)| {
            let with: usize = ids.get(name)?.values().sum();
            Some(format!(
                "{vpath}: the judge {name:?} has {} without a settings id (written by an older topk-judge) beside {} with one: whether its settings changed between them cannot be told, and they are fitted as {name:?}",
                crate::domain::fmt::count(n, "record"),
                with
            ))
        })
        .collect();
    ids.retain(|_, per_id| per_id.len() > 1);
    for l in lines.iter_mut() {
        let name = l.judge.clone().unwrap_or_default();
        if let Some(s) = l.judge_settings.as_ref().filter(|_| ids.contains_key(&name)) {
            l.judge = Some(format!("{name} [settings {s}]"));
        }
    }
    ids.iter()
        .map(|(name, per_id)| {
            format!(
                "{vpath}: the judge {name:?} has records of {} settings ({}): its seed, model, template or temperature was changed under one name; each settings is a judge of its own here, named \"{name} [settings ID]\"",
                per_id.len(),
                per_id.iter().map(|(id, c)| format!("{id}: {}", crate::domain::fmt::count(*c, "record"))).collect::<Vec<_>>().join(", ")
            )
        })
        .chain(unknown)
        .collect()
}

/// Whether the records name two or more pools of the pool file (then they rank systems over
/// those prompts, docs/systems.md): by their `pool_id` (a recording keyed per prompt), or by
/// their answers' ids `<prompt>/<system>` (a systems run's own verdicts.jsonl, whose `pool_id`
/// is the merged pool's, e.g. "45 prompts").
fn names_several_pools(lines: &[VerdictLine], args: &FitRequest<'_>) -> bool {
    let Ok(ids) = crate::store::pool_file::pool_ids(args.pool_file) else { return false };
    let mut named: std::collections::BTreeSet<&str> = std::collections::BTreeSet::new();
    for l in lines {
        match l.pool_id.as_deref() {
            Some(p) if ids.contains(p) => {
                named.insert(p);
            }
            // A systems run's own record (its merged pool's name, e.g. "1 prompt", is no pool of
            // the file): systems, also over one prompt (hunt 53).
            Some(_) if ids.iter().any(|p| l.a.starts_with(&format!("{p}/")) && l.b.starts_with(&format!("{p}/"))) => {
                return true;
            }
            _ => {
                // `<prompt>/<system>`: a prefix up to a `/` that is a pool of the file.
                let prompt = |id: &'_ str| -> Option<String> {
                    id.match_indices('/').map(|(i, _)| &id[..i]).find(|p| ids.contains(*p)).map(str::to_owned)
                };
                if let (Some(pa), Some(pb)) = (prompt(&l.a), prompt(&l.b))
                    && pa == pb
                    && let Some(p) = ids.get(pa.as_str())
                {
                    named.insert(p.as_str());
                }
            }
        }
        if named.len() >= 2 {
            return true;
        }
    }
    false
}

/// The pool to fit: the run folder's, or read from the pool file (`--pool-id` must agree with
/// a run folder's pool).
fn fitted_pool(args: &FitRequest<'_>, cfg: Option<&crate::config::run::Config>) -> Result<Pool, FitCommandError> {
    match cfg {
        Some(c) => {
            if let Some(id) = args.pool_id
                && id != c.pool.pool_id
            {
                return Err(FitCommandError::Invalid(format!(
                    "--pool-id {id}: the run folder {} holds pool {:?}",
                    args.pool_file.display(),
                    c.pool.pool_id
                )));
            }
            Ok(c.pool.clone())
        }
        None => crate::store::pool_file::read_pool(args.pool_file, args.pool_id).map_err(|e| {
            match args.verdicts_file.and_then(|v| swapped(args, v)) {
                Some(hint) => FitCommandError::Invalid(format!("{e}\n  hint: {hint}")),
                None => FitCommandError::Pool(e),
            }
        }),
    }
}

/// `fit VERDICTS POOL` (or `check JUDGMENTS POOL`): the hint when the two files look swapped.
pub(crate) fn swapped(args: &FitRequest<'_>, verdicts: &Path) -> Option<String> {
    (looks_like_verdicts(args.pool_file) && !looks_like_verdicts(verdicts)).then(|| {
        format!(
            "{} looks like a verdicts file and {} does not: the order is `topk-judge {}`",
            args.pool_file.display(),
            verdicts.display(),
            args.usage
        )
    })
}

/// Whether the first line of `path` is a JSON object with verdict fields (`winner` or
/// `a`/`b`), as a verdicts file has and a pool file has not.
fn looks_like_verdicts(path: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string(path) else { return false };
    let Some(first) = text.lines().find(|l| !l.trim().is_empty()) else { return false };
    serde_json::from_str::<serde_json::Value>(first).ok().and_then(|v| v.as_object().cloned()).is_some_and(|o| {
        o.contains_key("winner") || (o.contains_key("a") && o.contains_key("b") && !o.contains_key("items"))
    })
}

/// The settings of one fit: each flag, else the run's value (with a run folder), else the
/// default, checked as a run config's `model` and `acquisition` sections are.
struct FitSettings {
    k: usize,
    model: ModelKind,
    prior: Prior,
    draws: usize,
    strong_preference_weight: f64,
    seed: u64,
    report_ranking: ReportRanking,
    epsilon: f64,
}

impl FitSettings {
    fn resolve(
        args: &FitRequest<'_>,
        cfg: Option<&crate::config::run::Config>,
        pool: &Pool,
    ) -> Result<Self, FitCommandError> {
        let k = args.k.or(cfg.map(|c| c.raw.k)).unwrap_or(3);
        if k == 0 || k >= pool.n_bases() {
            // Name where k came from: the flag, the run's config, or the default.
            let what = match (args.k, cfg) {
                (Some(_), _) => format!("--k {k}"),
                (None, Some(_)) => format!("k = {k} (the run's; --k sets another)"),
                (None, None) => format!("k = {k} (the default; --k sets another)"),
            };
            return Err(FitCommandError::Invalid(format!(
                "{what} must satisfy 1 ≤ k < number of {} ({})",
                if pool.is_systems() { "systems" } else { "bases" },
                pool.n_bases()
            )));
        }
        let base_prior = cfg.map(|c| c.raw.model.prior()).unwrap_or_default();
        let prior = Prior {
            lambda_theta: args.lambda[0].unwrap_or(base_prior.lambda_theta),
            lambda_b: args.lambda[1].unwrap_or(base_prior.lambda_b),
            lambda_kappa: args.lambda[2].unwrap_or(base_prior.lambda_kappa),
        };
        let draws =
            args.draws.or(cfg.map(|c| c.raw.acquisition.mc_draws)).unwrap_or(crate::model::params::DEFAULT_MC_DRAWS);
        // The same checks as a run config's `model` and `acquisition` sections, named by flag.
        let flag = |e: crate::model::params::ParamError| {
            FitCommandError::Invalid(format!(
                "--{} {e}",
                if e.name == "mc_draws" { "draws".into() } else { e.name.replace('_', "-") }
            ))
        };
        prior.check().map_err(flag)?;
        let sw = args.strong_preference_weight.or(cfg.map(|c| c.raw.model.strong_preference_weight)).unwrap_or(1.0);
        crate::model::params::check_strong_preference_weight(sw).map_err(flag)?;
        crate::model::params::check_mc_draws(draws).map_err(flag)?;
        Ok(Self {
            k,
            model: args.model.or(cfg.map(|c| c.raw.model.kind)).unwrap_or(ModelKind::BiasAware),
            prior,
            draws,
            strong_preference_weight: sw,
            seed: args.seed.or(cfg.map(|c| c.raw.acquisition.seed)).unwrap_or(0),
            epsilon: cfg.map_or(crate::analysis::certify::DEFAULT_EPSILON, |c| c.raw.certify.epsilon),
            report_ranking: args.report_ranking.or(cfg.map(|c| c.raw.report_ranking)).unwrap_or_default(),
        })
    }
}

/// The records of the fitted pool and judge, with what was left out and why.
struct Selection {
    /// Records of the pool (and of the selected judge, if one is).
    mine: Vec<VerdictLine>,
    /// Records of the pool per judge (`""` = no judge field).
    judges: BTreeMap<String, usize>,
    /// Records of other pools, per pool id.
    other_pools: BTreeMap<String, usize>,
    /// The selected judge.
    judge: Option<String>,
    warnings: Vec<String>,
    notes: Vec<String>,
}

impl Selection {
    /// Keep the records of `pool`, then of one judge when several are there and one is asked
    /// for (`--judge`, or a run folder's own judge).
    fn of(
        lines: Vec<VerdictLine>,
        pool: &Pool,
        args: &FitRequest<'_>,
        cfg: Option<&crate::config::run::Config>,
        vpath: &str,
    ) -> Result<Self, FitCommandError> {
        let (mut warnings, mut notes) = (Vec::new(), Vec::new());
        // Ids that print alike are warned of as `run` warns of them (hunt 56).
        warnings.extend(
            crate::domain::names::near_duplicates(pool.items.iter().map(|i| i.id.as_str()), "items")
                .into_iter()
                .map(|w| format!("pool {:?}: {}", pool.pool_id, w.trim_start_matches("warning: "))),
        );
        // Records of other pools: counted and reported.
        let mut other_pools: BTreeMap<String, usize> = BTreeMap::new();
        let mut judges: BTreeMap<String, usize> = BTreeMap::new();
        let mut mine = Vec::new();
        // A run over many prompts: records keyed per prompt (pool_id = the prompt, a and b its
        // item ids) name the merged pool's items `<prompt>/<id>`.
        let prompts: std::collections::HashSet<&str> = pool.prompts.iter().map(|p| p.pool_id.as_str()).collect();
        // A systems run's own verdicts.jsonl names the merged pool ("45 prompts", perhaps of
        // fewer prompts than the file's) and its items `<prompt>/<system>`: kept as they are.
        let merged: std::collections::HashSet<&str> =
            if pool.is_systems() { pool.items.iter().map(|i| i.id.as_str()).collect() } else { Default::default() };
        let unnamed = lines.iter().filter(|l| l.pool_id.is_none()).count();
        let named = lines.len() - unnamed;
        for mut l in lines {
            match &l.pool_id {
                Some(p) if *p != pool.pool_id && prompts.contains(p.as_str()) => {
                    l.a = format!("{p}/{}", l.a);
                    l.b = format!("{p}/{}", l.b);
                    *judges.entry(l.judge.clone().unwrap_or_default()).or_default() += 1;
                    mine.push(l);
                }
                Some(p) if *p != pool.pool_id && merged.contains(l.a.as_str()) && merged.contains(l.b.as_str()) => {
                    *judges.entry(l.judge.clone().unwrap_or_default()).or_default() += 1;
                    mine.push(l);
                }
                Some(p) if *p != pool.pool_id => *other_pools.entry(p.clone()).or_default() += 1,
                _ => {
                    *judges.entry(l.judge.clone().unwrap_or_default()).or_default() += 1;
                    mine.push(l);
                }
            }
        }
        // Every record is of another pool, and the pool was picked by default (the file's first):
        // the user meant another pool, so say which instead of fitting nothing.
        if mine.is_empty() && !other_pools.is_empty() && pool.is_systems() {
            return Err(FitCommandError::Invalid(format!(
                "{vpath}: none of its records is for one of the {} prompts of {}; its records name {}: a recording of systems names each verdict's prompt by the pool id the pool file gives it",
                pool.prompts.len(),
                args.pool_file.display(),
                other_pools.keys().take(5).map(|p| format!("{p:?}")).collect::<Vec<_>>().join(", ")
                    + if other_pools.len() > 5 { ", …" } else { "" }
            )));
        }
        if mine.is_empty() && !other_pools.is_empty() && cfg.is_none() && args.pool_id.is_none() {
            return Err(FitCommandError::Invalid(format!(
                "{vpath}: none of its records is for pool {:?} (the first pool of {}, used without --pool-id); its records are for {}: choose one with --pool-id",
                pool.pool_id,
                args.pool_file.display(),
                other_pools.iter().map(|(p, c)| format!("{p:?} ({c})")).collect::<Vec<_>>().join(", ")
            )));
        }
        // Records without a pool_id fitted to the file's first pool by default: said, when the
        // file holds other pools the records may have meant.
        if unnamed > 0 && cfg.is_none() && args.pool_id.is_none() && !pool.is_systems() {
            let n_pools = crate::store::pool_file::pool_ids(args.pool_file).map_or(0, |ids| ids.len());
            if n_pools > 1 {
                warnings.push(format!(
                    "{vpath}: {} name no pool (no \"pool_id\"): fitted as pool {:?}, the first of the {n_pools} pools of {}; give --pool-id to choose another, or --systems with each record's prompt as its pool_id to rank systems over the prompts",
                    crate::domain::fmt::count(unnamed, "record"),
                    pool.pool_id,
                    args.pool_file.display()
                ));
            }
        }
        // Records without a pool_id beside records that name theirs, fitted to the pool named by
        // --pool-id: said, as the others show the file mixes pools.
        if unnamed > 0 && named > 0 && cfg.is_none() && args.pool_id.is_some() && !pool.is_systems() {
            warnings.push(format!(
                "{vpath}: {} {} no pool (no \"pool_id\") while {named} {}: fitted as pool {:?} (--pool-id), which {} may not be of; give each record its pool_id",
                crate::domain::fmt::count(unnamed, "record"),
                if unnamed == 1 { "names" } else { "name" },
                if named == 1 { "names its" } else { "name theirs" },
                pool.pool_id,
                if unnamed == 1 { "it" } else { "they" },
            ));
        }
        if !other_pools.is_empty() {
            let n: usize = other_pools.values().sum();
            let mut listed: Vec<String> = other_pools.iter().take(5).map(|(p, c)| format!("{p}: {c}")).collect();
            if other_pools.len() > 5 {
                listed.push(format!("… {} pools in all (fit --out lists them)", other_pools.len()));
            }
            notes.push(format!(
                "{vpath}: {n} record{} of other pools skipped ({})",
                if n == 1 { "" } else { "s" },
                listed.join(", ")
            ));
            // Records naming a pool the pool file does not have are a misspelling more often than
            // not (`"p4 "`, `P2` for `p2`; hunt 55): said on the terminal, with the spelling alike.
            let in_file = crate::store::pool_file::pool_ids(args.pool_file).unwrap_or_default();
            let known: Vec<&str> =
                in_file.iter().map(String::as_str).chain(pool.prompts.iter().map(|p| p.pool_id.as_str())).collect();
            let unknown: Vec<(&String, &usize)> =
                other_pools.iter().filter(|(p, _)| !known.contains(&p.as_str())).collect();
            if !unknown.is_empty() {
                let n: usize = unknown.iter().map(|(_, c)| **c).sum();
                let each: Vec<String> = unknown
                    .iter()
                    .take(5)
                    .map(|(p, c)| {
                        let hint = crate::domain::names::spelled_alike_hint(p, known.iter().copied(), "the pool file");
                        format!("{p:?} ({c}){hint}")
                    })
                    .collect();
                warnings.push(format!(
                    "{vpath}: {} of pools that {} does not have {} left out: {}{}",
                    crate::domain::fmt::count(n, "record"),
                    args.pool_file.display(),
                    if n == 1 { "is" } else { "are" },
                    each.join("; "),
                    if unknown.len() > 5 { format!("; … {} pools in all", unknown.len()) } else { String::new() }
                ));
            }
        }
        // Judges named alike (letter case, Unicode form) are two judges, said.
        warnings.extend(
            crate::domain::names::near_duplicates(
                judges.keys().map(String::as_str).filter(|j| !j.is_empty()),
                "judges",
            )
            .into_iter()
            .map(|w| format!("{vpath}: {}", w.trim_start_matches("warning: "))),
        );
        // A single judge's run folder: its records are picked by the judge's cache keys as the
        // run picks them (fit_file), whatever judge name they carry (a panel member's record of
        // the same judge carries the member's name).
        let by_keys = cfg.is_some_and(|c| !c.is_panel()) && args.verdicts_file.is_none() && args.judge.is_none();
        let judge = if args.panel || by_keys { None } else { select_judge(&judges, pool, args, cfg, vpath)? };
        if judge.is_none() && judges.len() > 1 && !args.panel && !by_keys {
            // `fit` offers a panel of them; `check` does not.
            let panel = if args.usage.starts_with("fit") {
                ", or --panel to fit them as a panel (shared θ, each judge its own κ, c and scale; docs/model.md §8)"
            } else {
                ""
            };
            let m = format!(
                "{vpath} holds verdicts of {} judges for pool {:?} ({}); they are fitted together as one judge — pass --judge to fit one{panel}",
                judges.len(),
                pool.pool_id,
                judge_list(&judges)
            );
            warnings.push(m.clone());
            notes.push(m);
        }
        if let Some(j) = &judge {
            mine.retain(|l| l.judge.clone().unwrap_or_default() == *j);
        }
        Ok(Self { mine, judges, other_pools, judge, warnings, notes })
    }
}

/// `"judge": count` for each judge, for messages.
fn judge_list(judges: &BTreeMap<String, usize>) -> String {
    judges
        .iter()
        .map(|(j, c)| if j.is_empty() { format!("(no \"judge\" field): {c}") } else { format!("{j:?}: {c}") })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The judge asked for (`--judge`, exact or a unique prefix; with a run folder and several
/// judges, the run's own), or `None` to fit all together.
fn select_judge(
    judges: &BTreeMap<String, usize>,
    pool: &Pool,
    args: &FitRequest<'_>,
    cfg: Option<&crate::config::run::Config>,
    vpath: &str,
) -> Result<Option<String>, FitCommandError> {
    let wanted = args.judge.map(str::to_owned).or_else(|| {
        let d = cfg.map(judge_description)?;
        (judges.len() > 1 && judges.contains_key(&d)).then_some(d)
    });
    let Some(w) = wanted else { return Ok(None) };
    match_judge(judges, &w, "--judge", pool, vpath).map(Some)
}

/// The judge of the records named `w` exactly, else the one whose name starts with it; `flag`
/// names the option in the error.
fn match_judge(
    judges: &BTreeMap<String, usize>,
    w: &str,
    flag: &str,
    pool: &Pool,
    vpath: &str,
) -> Result<String, FitCommandError> {
    let hits = crate::domain::names::exact_or_prefix(judges.keys().map(String::as_str), w);
    if w.trim().is_empty() {
        return Err(FitCommandError::Invalid(format!(
            "{flag} \"\": an empty judge name; the judges in {vpath}: {}",
            judge_list(judges)
        )));
    }
    match hits.as_slice() {
        [one] => Ok((*one).to_owned()),
        [] => Err(FitCommandError::Invalid(format!(
            "{flag} {w:?}: no verdict of pool {:?} in {vpath} comes from that judge; the judges there: {}",
            pool.pool_id,
            judge_list(judges)
        ))),
        several => Err(FitCommandError::Invalid(format!(
            "{flag} {w:?} matches {} judges in {vpath}: {}; give more of the name",
            several.len(),
            several.iter().take(10).map(|j| format!("{j:?}")).collect::<Vec<_>>().join(", ")
                + if several.len() > 10 { ", …" } else { "" }
        ))),
    }
}

/// The valid records as verdicts between item indices (a strong preference weighted by
/// `strong_preference_weight`), and the number of invalid ones.
fn item_verdicts(
    mine: &[VerdictLine],
    pool: &Pool,
    strong_preference_weight: f64,
    vpath: &str,
) -> Result<(Vec<ItemVerdict>, usize), FitCommandError> {
    let mut verdicts = Vec::new();
    let mut invalid = 0;
    for l in mine {
        let find = |id: &str| {
            pool.item_index(id).ok_or_else(|| {
                // Over many prompts an item is `PROMPT/SYSTEM`: the system the prompt lacks is named.
                let prompt = pool
                    .prompts
                    .iter()
                    .enumerate()
                    .filter(|(_, p)| id.strip_prefix(p.pool_id.as_str()).is_some_and(|r| r.starts_with('/')))
                    .max_by_key(|(_, p)| p.pool_id.len());
                if let Some((pi, p)) = prompt {
                    let item = &id[p.pool_id.len() + 1..];
                    let answers: Vec<&str> = (0..pool.n_items())
                        .filter(|&i| pool.item_prompt.get(i) == Some(&pi))
                        .map(|i| pool.origin(i).1)
                        .collect();
                    return FitCommandError::Invalid(format!(
                        "{vpath}:{}: item {item:?} is not among the answers to prompt {:?} in the pool file (its answers: {}){}",
                        l.line,
                        p.pool_id,
                        answers.join(", "),
                        crate::domain::names::spelled_alike_hint(item, answers.iter().copied(), "the prompt")
                    ));
                }
                FitCommandError::Invalid(format!(
                    "{vpath}:{}: item {id:?} is not in pool {:?} (its items: {}){}",
                    l.line,
                    pool.pool_id,
                    some_ids(pool),
                    crate::domain::names::spelled_alike_hint(id, pool.items.iter().map(|i| i.id.as_str()), "the pool")
                ))
            })
        };
        let (a, b) = (find(&l.a)?, find(&l.b)?);
        if a == b {
            return Err(FitCommandError::Invalid(format!(
                "{vpath}:{}: item {:?} is compared with itself; a verdict needs two different items",
                l.line, l.a
            )));
        }
        match l.y {
            Some(y) => verdicts.push(ItemVerdict {
                a,
                b,
                y,
                w: if l.strong_preference { strong_preference_weight } else { 1.0 },
            }),
            None => invalid += 1,
        }
    }
    Ok((verdicts, invalid))
}

/// The covariates of a fit: none for the naive model, else `--covariates`, the run's, or the
/// pool's defaults; a scale warning for each that makes the prior λ_b meaningless.
fn covariates(
    pool: &Pool,
    args: &FitRequest<'_>,
    cfg: Option<&crate::config::run::Config>,
    set: &FitSettings,
    warnings: &mut Vec<String>,
) -> Result<pool::Covariates, FitCommandError> {
    if set.model == ModelKind::Naive {
        // Flags the naive model has no use for: said, not dropped silently.
        if args.covariates.is_some() {
            warnings.push(
                "--covariates is ignored: the naive model fits no bias coefficients (--model bias_aware fits them)"
                    .into(),
            );
        }
        if args.lambda[1].is_some() {
            warnings.push(
                "--lambda-b is ignored: the naive model fits no bias coefficients to put the prior on (--model bias_aware fits them)"
                    .into(),
            );
        }
        if args.report_ranking == Some(ReportRanking::Corrected) {
            warnings.push("--report-ranking corrected is not applied: the naive model fits no bias-corrected ranking, so the apparent one is reported (--model bias_aware fits it)".into());
        }
    }
    let specs = match set.model {
        ModelKind::Naive => Vec::new(),
        ModelKind::BiasAware => args
            .covariates
            .clone()
            .or_else(|| cfg.map(|c| c.covariate_specs.clone()).filter(|s| !s.is_empty()))
            .unwrap_or_else(|| pool::default_covariates(pool)),
    };
    let from_flag = set.model == ModelKind::BiasAware && args.covariates.is_some();
    let cov = pool::build_covariates(pool, &specs).map_err(|e| {
        // Named with the pool file and the pool's line (a run folder's: its pool.jsonl); when
        // `--covariates` chose the covariate, the flag is what to fix, so it leads.
        let file = if args.pool_file.is_dir() { args.pool_file.join("pool.jsonl") } else { args.pool_file.to_owned() };
        let lines = crate::store::pool_file::read_pool_lines(&file).unwrap_or_default();
        let e = e.in_file(&file, |id| lines.iter().find(|(p, _, _)| p.pool_id == id).map(|(_, l, _)| *l));
        if from_flag {
            let names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
            let e = e.to_string();
            // Said only of a covariate an item lacks, not of a value a transform cannot take.
            let why = if e.contains("has no covariate") {
                " (each covariate the flag names must be on every item of the pool)"
            } else {
                ""
            };
            FitCommandError::Invalid(format!("--covariates {}: {e}{why}", names.join(",")))
        } else {
            FitCommandError::Pool(e)
        }
    })?;
    warnings.extend(crate::config::sections::scale_warnings(&cov, set.prior.lambda_b, "--covariates"));
    Ok(cov)
}

/// Fit the model and report as `run` does.
fn fit_output(
    pool: &Pool,
    args: &FitRequest<'_>,
    cfg: Option<&crate::config::run::Config>,
    set: &FitSettings,
    sel: Selection,
    verdicts: Vec<ItemVerdict>,
    invalid: usize,
) -> Result<FitOutput, FitCommandError> {
    let Selection { judges, other_pools, judge, mut warnings, mut notes, .. } = sel;
    let (k, prior) = (set.k, set.prior);
    let cov = covariates(pool, args, cfg, set, &mut warnings)?;
    let design = build_design(pool, &cov, &verdicts);
    let mut rng = crate::domain::rng::stream(set.seed, "membership", verdicts.len() as u64);
    let (s, _, _) = fit_and_summarise(pool, &cov, &design, &prior, k, set.draws, None, &mut rng)?;
    let (identifiability, apparent) =
        report::outcome::identify_and_apparent(pool, &cov, &prior, k, (set.draws, set.seed), &verdicts, &s);
    let mut out = report::outcome::outcome(&report::outcome::Inputs {
        pool,
        cov: &cov,
        k,
        model: set.model,
        summary: &s,
        apparent: &apparent,
        verdicts: &verdicts,
        identifiability: &identifiability,
        setting: set.report_ranking,
        gate: None,
        one_query: None,
        epsilon: set.epsilon,
        mc_draws: set.draws,
    });
    notes.append(&mut out.notes);
    out.notes = notes;
    Ok(FitOutput {
        pool_id: pool.pool_id.clone(),
        model: set.model,
        k,
        comparisons: verdicts.len(),
        invalid,
        judge,
        judges,
        other_pools,
        judged_prompts: verdicts
            .iter()
            .flat_map(|v| [v.a, v.b])
            .filter_map(|i| pool.item_prompt.get(i))
            .collect::<std::collections::BTreeSet<_>>()
            .len()
            .max(usize::from(!verdicts.is_empty())),
        fit: FittedRanking::new(pool, &cov, &s, out, identifiability),
        warnings,
    })
}

/// The first few item ids of a pool, for error messages.
fn some_ids(pool: &Pool) -> String {
    let ids: Vec<&str> = pool.items.iter().take(5).map(|i| i.id.as_str()).collect();
    if pool.n_items() > 5 { format!("{}, … ({} in all)", ids.join(", "), pool.n_items()) } else { ids.join(", ") }
}

/// `topk-judge fit POOL VERDICTS`, `topk-judge fit RUN`.
#[derive(Debug, clap::Args)]
pub struct FitArgs {
    /// Pool file (JSON Lines), or a run folder (its pool, verdicts and settings), or a run's
    /// config file (its run folder).
    pub pool_file: std::path::PathBuf,
    /// Verdicts file (JSON Lines with "a", "b", "y"); not needed with a run folder or config.
    pub verdicts_file: Option<std::path::PathBuf>,
    /// Pool id (default: the first pool in the file).
    #[arg(long)]
    pub pool_id: Option<String>,
    /// Use only the verdicts of this judge (the records' "judge" field, or a unique prefix of
    /// it), when the file holds several.
    #[arg(long)]
    pub judge: Option<String>,
    /// Model [default: bias_aware, or the run's].
    #[arg(long, value_parser = super::values::model_kind())]
    pub model: Option<ModelKind>,
    /// k of top-k [default: 3, or the run's].
    #[arg(long, allow_negative_numbers = true)]
    pub k: Option<usize>,
    /// Which ranking to report: auto (the bias-corrected one only when the design
    /// identifies the correction), corrected or apparent [default: auto, or the run's].
    #[arg(long, value_parser = super::values::report_ranking())]
    pub report_ranking: Option<ReportRanking>,
    /// Covariates as NAME or NAME:TRANSFORM, comma-separated (default: words:zscore when items have text, plus every
    /// key of the items' covariates map, raw).
    #[arg(long, value_delimiter = ',')]
    pub covariates: Option<Vec<String>>,
    /// λ_θ, prior precision of each item quality θ (> 0) [default: 1, or the run's].
    #[arg(long, allow_negative_numbers = true)]
    pub lambda_theta: Option<f64>,
    /// λ_b, prior precision of each bias coefficient c (> 0) [default: 0.1, or the run's].
    #[arg(long, allow_negative_numbers = true)]
    pub lambda_b: Option<f64>,
    /// λ_κ, prior precision of the position effect κ (> 0) [default: 0.01, or the run's].
    #[arg(long, allow_negative_numbers = true)]
    pub lambda_kappa: Option<f64>,
    /// Weight of the likelihood term of a verdict stored with `strong_preference` (`[[A>>B]]`),
    /// > 0 [default: 1, or the run's].
    #[arg(long, allow_negative_numbers = true)]
    pub strong_preference_weight: Option<f64>,
    /// Monte-Carlo draws for top-k membership [default: 1000, or the run's mc_draws].
    #[arg(long, allow_negative_numbers = true)]
    pub draws: Option<usize>,
    /// Seed [default: 0, or the run's acquisition seed].
    #[arg(long, allow_negative_numbers = true)]
    pub seed: Option<u64>,
    /// Write the fit as JSON here.
    #[arg(long)]
    pub out: Option<std::path::PathBuf>,
    /// Rank systems over every pool of the file as prompts (docs/systems.md): records keyed
    /// per prompt (pool_id = prompt, a and b = system ids). Chosen without the flag when the
    /// records name two or more pools of the file and no --pool-id is given.
    #[arg(long, conflicts_with = "pool_id")]
    pub systems: bool,
    /// Fit every judge of the verdicts file as one panel (docs/model.md §8): shared item
    /// quality θ and, per judge, its position effect κ, bias coefficients c and scale s; every
    /// record needs its "judge".
    #[arg(long, conflicts_with_all = ["judge", "report_ranking"])]
    pub panel: bool,
    /// With --panel: the judge whose verdicts are taken as free of item-level bias (no c; exact
    /// name or a unique prefix); the other judges' c are then identified relative to it.
    #[arg(long, requires = "panel", conflicts_with = "judge")]
    pub trusted: Option<String>,
    /// With --panel over systems: a judge's model family as JUDGE=FAMILY (comma-separated or
    /// repeated), for the self-preference covariate "same family" (docs/model.md §8); a system
    /// whose id contains the family's name (any case) is of that family. With --model naive it
    /// is the only coefficient of each judge.
    #[arg(long, requires = "panel", conflicts_with = "judge", value_delimiter = ',')]
    pub family: Vec<String>,
    /// A system's family as SYSTEM=FAMILY, where its id does not contain it (with --family, or on
    /// a panel run folder whose judges have a family).
    #[arg(long, requires = "panel", value_delimiter = ',')]
    pub system_family: Vec<String>,
}

/// `1 line repeats`, `3 lines repeat`.
fn lines_repeat(n: usize) -> String {
    format!("{} repeat{}", crate::domain::fmt::count(n, "line"), if n == 1 { "s" } else { "" })
}

/// A recording's lines as the replay judge reads them (docs/replay.md): each names its prompt
/// (`pool_id`); of the lines of one judge, settings id, prompting strategy, prompt and ordered
/// pair the first is kept and a repeat of its verdict and cost is counted once (said in a
/// warning, pushed to `warnings`).
///
/// # Errors
/// [`FitCommandError::Invalid`] naming the line without a `pool_id`, or the two lines that give
/// one ordered pair two verdicts.
fn one_per_ordered_pair(
    lines: Vec<VerdictLine>,
    path: &Path,
    warnings: &mut Vec<String>,
) -> Result<Vec<VerdictLine>, FitCommandError> {
    // A recorded judge is its name, settings id and prompting strategy (as the replay judge
    // tells them apart).
    type Query = (Option<String>, Option<String>, Option<String>, String, String, String);
    type Recorded = (usize, Option<f64>, Option<f64>);
    let mut first: std::collections::HashMap<Query, Recorded> = std::collections::HashMap::new();
    let mut repeats: Vec<(usize, usize)> = Vec::new();
    let mut kept = Vec::with_capacity(lines.len());
    for l in lines {
        let Some(pool_id) = l.pool_id.clone() else {
            return Err(FitCommandError::Invalid(format!(
                "{}:{}: no \"pool_id\": the judgments of a leaderboard are keyed per prompt: {{\"pool_id\": the prompt's id, \"a\": system shown first, \"b\": system shown second, \"y\": …}} (as `topk-judge import --judgments` writes them, docs/replay.md)",
                path.display(),
                l.line
            )));
        };
        let q: Query =
            (l.judge.clone(), l.judge_settings.clone(), l.prompting.clone(), pool_id, l.a.clone(), l.b.clone());
        let bits = |x: Option<f64>| x.map(f64::to_bits);
        match first.get(&q) {
            None => {
                first.insert(q, (l.line, l.y, l.cost_usd));
                kept.push(l);
            }
            Some(&(line, y, cost)) if bits(y) == bits(l.y) && bits(cost) == bits(l.cost_usd) => {
                repeats.push((l.line, line));
            }
            Some(&(line, y, _)) => {
                return Err(FitCommandError::Invalid(format!(
                    "{}:{}: {}{}pool {:?}, {:?} shown first vs {:?}: recorded again with another {} (first on line {line}); a recording holds one verdict per judge, prompt and ordered pair",
                    path.display(),
                    l.line,
                    l.judge.as_deref().map(|j| format!("judge {j:?}, ")).unwrap_or_default(),
                    l.prompting.as_deref().map(|p| format!("prompting {p:?}, ")).unwrap_or_default(),
                    q.3,
                    q.4,
                    q.5,
                    if bits(y) == bits(l.y) { "cost_usd (the same verdict)" } else { "verdict" }
                )));
            }
        }
    }
    if let Some((line, of)) = repeats.first() {
        warnings.push(format!(
            "{}: {} the verdict of an earlier line for the same judge, prompt and ordered pair (line {line} repeats line {of}); each is counted once, as a recording holds one verdict per ordered pair",
            path.display(),
            lines_repeat(repeats.len())
        ));
    }
    Ok(kept)
}

/// A verdicts file given without one valid verdict of the pool fitted is an error, as in `check`
/// (a run folder without verdicts yet prints its prior and says there is no ranking).
fn nothing_to_fit(
    args: &FitArgs,
    pool_id: &str,
    comparisons: usize,
    invalid: usize,
    other_pools: &std::collections::BTreeMap<String, usize>,
) -> Result<(), FitCommandError> {
    match &args.verdicts_file {
        Some(v) if comparisons == 0 => Err(FitCommandError::Invalid(format!(
            "{}: no valid verdict of pool {pool_id:?} ({invalid} invalid, {} of other pools): there is no ranking to fit; give the verdicts of this pool (one JSON object per line: {{\"a\": ID, \"b\": ID, \"y\": 1 | 0 | 0.5}}, docs/config.md, \"File formats\")",
            v.display(),
            other_pools.values().sum::<usize>()
        ))),
        _ => Ok(()),
    }
}

/// `--covariates NAME[:TRANSFORM],…` as covariate specs (`None` when the flag is not given).
///
/// # Errors
/// [`FitCommandError::Covariates`] for a transform that does not exist.
pub fn parse_covariates(flag: Option<&[String]>) -> Result<Option<Vec<CovariateSpec>>, FitCommandError> {
    flag.map(|v| v.iter().map(|s| CovariateSpec::parse(s)).collect::<Result<Vec<_>, _>>())
        .transpose()
        .map_err(FitCommandError::Covariates)
}

/// `topk-judge fit`: fit, print the warnings (stderr) and the ranking, write `--out`.
///
/// # Errors
/// [`FitCommandError`].
pub fn run(args: &FitArgs) -> Result<std::process::ExitCode, FitCommandError> {
    let covariates = parse_covariates(args.covariates.as_deref())?;
    let req = FitRequest {
        usage: "fit POOL VERDICTS",
        pool_file: &args.pool_file,
        verdicts_file: args.verdicts_file.as_deref(),
        pool_id: args.pool_id.as_deref(),
        judge: args.judge.as_deref(),
        model: args.model,
        k: args.k,
        report_ranking: args.report_ranking,
        covariates,
        lambda: [args.lambda_theta, args.lambda_b, args.lambda_kappa],
        strong_preference_weight: args.strong_preference_weight,
        draws: args.draws,
        seed: args.seed,
        systems: args.systems,
        panel: args.panel,
        recording: false,
        trusted: args.trusted.as_deref(),
        families: &args.family,
        system_families: &args.system_family,
    };
    if let Some(out) = &args.out {
        let inputs: Vec<&Path> =
            [Some(args.pool_file.as_path()), args.verdicts_file.as_deref()].into_iter().flatten().collect();
        crate::store::files::check_output_file(out, &inputs).map_err(|why| FitCommandError::WriteOut {
            path: out.clone(),
            source: std::io::Error::other(format!("--out: {why}")),
        })?;
    }
    // A panel run (its folder or its config) is refitted as the panel it ran (pooling its judges
    // as one would mix their biases); --judge fits one of them alone.
    let panel_folder = !args.panel
        && args.judge.is_none()
        && args.report_ranking.is_none()
        && args.verdicts_file.is_none()
        && super::run_folder::load_run(&args.pool_file).is_ok_and(|r| r.cfg.is_panel());
    if args.panel || panel_folder {
        let req = FitRequest { panel: true, ..req };
        let mut out = fit_panel_file(&req)?;
        nothing_to_fit(args, &out.pool_id, out.comparisons, out.invalid, &out.other_pools)?;
        if panel_folder {
            out.notes.insert(
                0,
                format!(
                    "{} {} a judge panel's run: fitted as that panel (as --panel); --judge NAME fits one judge alone",
                    args.pool_file.display(),
                    if args.pool_file.is_dir() { "holds" } else { "configures" }
                ),
            );
        }
        for w in &out.warnings {
            super::warn_line(w);
        }
        super::print_out(&panel_text(&out));
        if let Some(path) = &args.out {
            super::write_json_out(path, &out)
                .map_err(|source| FitCommandError::WriteOut { path: path.clone(), source })?;
        }
        return Ok(std::process::ExitCode::SUCCESS);
    }
    let (_pool, fit) = fit_file(&req)?;
    nothing_to_fit(args, &fit.pool_id, fit.comparisons, fit.invalid, &fit.other_pools)?;
    for w in &fit.warnings {
        super::warn_line(w);
    }
    super::print_out(&fit_text(&fit));
    if let Some(out) = &args.out {
        super::write_json_out(out, &fit).map_err(|source| FitCommandError::WriteOut { path: out.clone(), source })?;
    }
    Ok(std::process::ExitCode::SUCCESS)
}

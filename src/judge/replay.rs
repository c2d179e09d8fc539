//! The replay judge: answers each ordered query from a recording of verdicts already collected
//! (the frozen-judge protocol of the paper "When Can You Debias an LLM Judge?": one verdict per
//! ordered pair, collected once, then replayed to any strategy).
//!
//! A **recording** is JSON Lines, one ordered verdict per line:
//!
//! ```json
//! {"pool_id": "p1", "a": "M3", "b": "M7", "y": 1, "cost_usd": 0.0004, "judge": "gpt-4o", "prompting": "CoT"}
//! ```
//!
//! `pool_id`, `a` (the item shown first), `b` (shown second) and `y` (1 first wins, 0 second
//! wins, ½ tie, a soft P(A) in [0, 1], or `null` for an invalid verdict) are required; `cost_usd`
//! (USD) and `usage` (tokens) are optional, and so are `judge` and `prompting` (the prompting
//! strategy), which tell several recorded judges apart in one file. A run's own `verdicts.jsonl`
//! is a recording as it stands (its extra fields are ignored). At most one verdict per judge,
//! pool and ordered pair: a second line with another verdict is an error naming both lines.
//!
//! The judge costs nothing unless the recording gives `cost_usd`; then each replayed verdict
//! costs what it cost when it was recorded, and that is also its worst case (`max_usd` stops a
//! replay where it stopped the recorded run). A query the recording lacks is, by the setting
//! `missing`: `fail` (default) — the run stops ([`JudgeError::Fatal`], `stop_reason:
//! judge_failing`) with an error naming the query; or `unavailable`
//! — not a verdict, not a comparison, not a failure: the run sets the pair aside and acquisition
//! moves on to the next best pair ([`JudgeError::Unavailable`]).

use super::{BoxFuture, Judge, JudgeError, JudgeInfo};
use crate::domain::pool::Pool;
use crate::domain::rng;
use crate::domain::verdict::{InvalidNote, InvalidReason, JudgeReply, Usage, VerdictDetail};
use serde::{Deserialize, Deserializer, Serialize};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// What the replay judge does with a query the recording lacks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MissingPolicy {
    /// Stop the run with an error naming the query (default).
    #[default]
    Fail,
    /// Treat the query as unavailable: no verdict, no comparison, no failure; acquisition moves on.
    Unavailable,
}

/// `judge: {replay: {...}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplayConfig {
    /// The recording (JSON Lines; relative to the config's folder).
    pub file: PathBuf,
    /// Replay only the lines whose `judge` is this (needed when the file holds several judges).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge: Option<String>,
    /// Replay only the lines whose `prompting` (prompting strategy) is this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompting: Option<String>,
    /// A query the recording lacks: `fail` (default) or `unavailable`.
    #[serde(default)]
    pub missing: MissingPolicy,
}

/// Errors reading a recording.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReplayError {
    /// The file could not be read.
    #[error("cannot read recording {path}: {msg}")]
    Io {
        /// The recording (a verdicts JSONL file, docs/replay.md) that could not be read.
        path: PathBuf,
        /// The operating system's I/O error, as text.
        msg: String,
    },
    /// A line that is not a recorded verdict.
    #[error(
        "{path}:{line}: {msg}; expected {{\"pool_id\", \"a\": item shown first, \"b\": item shown second, \"y\": 0..1 or null}} with optional \"cost_usd\", \"usage\", \"judge\", \"prompting\""
    )]
    Line {
        /// The recording holding the bad line.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// What is wrong.
        msg: String,
    },
    /// Two lines record different verdicts for one ordered pair of one judge.
    #[error(
        "{path}:{line}: {query}: recorded again with another {what} (first on line {first_line}); a recording holds one verdict per ordered pair"
    )]
    Duplicate {
        /// The recording that holds the ordered pair twice.
        path: PathBuf,
        /// 1-based line of the second record.
        line: usize,
        /// 1-based line of the first.
        first_line: usize,
        /// The judge, pool and ordered pair.
        query: String,
        /// What differs: `verdict`, or `cost_usd` when only the cost does.
        what: &'static str,
    },
    /// No recorded judge matches the configured `judge:` / `prompting:`.
    #[error("{path}: no recorded judge matches{selection}; the file holds {listed}")]
    NoJudge {
        /// The recording.
        path: PathBuf,
        /// The selection, as ` judge "x" prompting "y"` (empty when none is given).
        selection: String,
        /// The recorded judges (at most eight, then a count).
        listed: String,
    },
    /// Several recorded judges match the selection.
    #[error(
        "{path}: holds {n} recorded judges matching the selection ({listed}); choose one with `judge:` and `prompting:`"
    )]
    SeveralJudges {
        /// The recording.
        path: PathBuf,
        /// How many match.
        n: usize,
        /// The recorded judges (at most eight, then a count).
        listed: String,
    },
    /// The recorded judge has no verdict for the run's pool.
    #[error("{path}: {judge} has no verdict for pool {pool_id:?}; it has {}: {shown}", crate::domain::fmt::count(*n_pools, "pool"))]
    NoPool {
        /// The recording.
        path: PathBuf,
        /// The recorded judge's label.
        judge: String,
        /// The run's pool id.
        pool_id: String,
        /// How many pools the judge has verdicts for.
        n_pools: usize,
        /// The first five of them.
        shown: String,
    },
    /// A recorded verdict names an item the pool does not have.
    #[error("{path}:{line}: item {item:?} is not in pool {pool_id:?}{hint}")]
    ForeignItem {
        /// The recording.
        path: PathBuf,
        /// 1-based line of the verdict.
        line: usize,
        /// The item id it names.
        item: String,
        /// The run's pool id.
        pool_id: String,
        /// The pool's item of the same name spelled alike, if one is
        /// ([`crate::domain::names::spelled_alike_hint`]); else empty.
        hint: String,
    },
}

/// One recorded judge: a `judge` name and, optionally, a prompting strategy.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct RecordedJudge {
    /// The `judge` field of its lines (empty when the lines have none).
    pub judge: String,
    /// The `prompting` field of its lines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompting: Option<String>,
}

impl RecordedJudge {
    /// `judge / prompting`, or `judge`, or `(unnamed judge)`.
    pub fn label(&self) -> String {
        let j = if self.judge.is_empty() { "(unnamed judge)" } else { self.judge.as_str() };
        match &self.prompting {
            Some(p) => format!("{j} / {p}"),
            None => j.to_owned(),
        }
    }
}

/// One recorded ordered verdict.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Entry {
    /// Outcome y ∈ [0, 1]; `None` for an invalid verdict.
    pub y: Option<f64>,
    /// Why the verdict is invalid, when recorded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub invalid_reason: Option<String>,
    /// Recorded cost (USD), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// Recorded token usage.
    pub usage: Usage,
    /// The recorded verdict stated a strong preference (`[[A>>B]]`): replayed with the same
    /// weight rule as a live verdict.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub strong_preference: bool,
    /// 1-based line in the file.
    #[serde(skip)]
    pub line: usize,
}

/// Verdicts of one recorded judge: pool id → (first-shown id, second-shown id) → entry.
pub type PoolVerdicts = HashMap<String, HashMap<(String, String), Entry>>;

/// A recording read from a file: every recorded judge and its verdicts.
#[derive(Debug, Clone)]
pub struct Recording {
    path: PathBuf,
    judges: Vec<RecordedJudge>,
    verdicts: Vec<PoolVerdicts>,
    /// Per recorded judge, its settings id when every one of its records carries the same one
    /// (a run folder's records, docs/outputs.md).
    settings: Vec<Option<String>>,
}

/// One line as written (a run's verdicts.jsonl line parses too: unknown fields are ignored).
#[derive(Deserialize)]
struct Line {
    pool_id: String,
    a: String,
    b: String,
    #[serde(default, deserialize_with = "present")]
    y: Option<Option<f64>>,
    #[serde(default)]
    invalid_reason: Option<String>,
    #[serde(default)]
    cost_usd: Option<f64>,
    #[serde(default)]
    usage: Option<Usage>,
    #[serde(default)]
    judge: Option<String>,
    /// A run folder's settings id of the judge (docs/outputs.md).
    #[serde(default)]
    judge_settings: Option<String>,
    #[serde(default)]
    prompting: Option<String>,
    #[serde(default)]
    strong_preference: bool,
}

/// `y` given (a number or null) vs absent.
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Option<f64>>, D::Error> {
    Option::<f64>::deserialize(d).map(Some)
}

impl Recording {
    /// Read and check a recording (module docs for the format).
    ///
    /// # Errors
    /// [`ReplayError`] naming the file, the line and what was expected.
    pub fn read(path: &Path) -> Result<Self, ReplayError> {
        let bytes = std::fs::read(path).map_err(|e| ReplayError::Io { path: path.to_owned(), msg: e.to_string() })?;
        // A UTF-8 byte-order mark is skipped, as every other reader of verdicts does; another
        // encoding is named at its line.
        let text = crate::domain::text::utf8_text(&bytes).map_err(|(line, msg)| ReplayError::Line {
            path: path.to_owned(),
            line,
            msg,
        })?;
        Self::parse(text, path)
    }

    /// Parse the text of a recording; `path` names it in errors.
    ///
    /// # Errors
    /// As [`Recording::read`].
    pub fn parse(text: &str, path: &Path) -> Result<Self, ReplayError> {
        let bad = |line: usize, msg: String| ReplayError::Line { path: path.to_owned(), line, msg };
        let mut judges: Vec<RecordedJudge> = Vec::new();
        let mut index: HashMap<RecordedJudge, usize> = HashMap::new();
        let mut verdicts: Vec<PoolVerdicts> = Vec::new();
        // Per recorded judge: the settings ids of its records (`None` for a record without).
        let mut settings: Vec<std::collections::BTreeSet<Option<String>>> = Vec::new();
        let mut lines = Vec::new();
        let n_lines = text.lines().count();
        for (i, raw) in text.lines().enumerate() {
            if !raw.trim().is_empty() {
                if let Some(m) = crate::domain::text::not_json_lines(raw) {
                    return Err(bad(i + 1, m));
                }
                let l: Line = match crate::domain::json::from_str(raw) {
                    Ok(l) => l,
                    // A last line without its newline that does not parse is one a run was
                    // writing when it stopped: dropped with a warning, as the run and `fit` do.
                    Err(e) if i + 1 == n_lines && !text.ends_with('\n') => {
                        // Once per file and process (a recording is read when the config is
                        // checked and again when its judge is made).
                        static SAID: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());
                        let mut said = SAID.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                        if !said.iter().any(|p| p == path) {
                            said.push(path.to_owned());
                            tracing::warn!(
                                "{}:{}: dropped a torn last line (a run stopped while writing it: {e}); the recording is read without it",
                                path.display(),
                                i + 1
                            );
                        }
                        continue;
                    }
                    Err(e) => return Err(bad(i + 1, e.to_string())),
                };
                lines.push((i + 1, l));
            }
        }
        // One name's records of two settings ids (a run folder's judge edited under its name)
        // are two recorded judges, `NAME [settings ID]`, as `fit` names them.
        let mut ids: HashMap<Option<String>, std::collections::BTreeSet<String>> = HashMap::new();
        for (_, l) in &lines {
            ids.entry(l.judge.clone()).or_default().extend(l.judge_settings.clone());
        }
        for (_, l) in &mut lines {
            if let Some(s) = l.judge_settings.as_ref().filter(|_| ids[&l.judge].len() > 1) {
                l.judge = Some(format!("{} [settings {s}]", l.judge.as_deref().unwrap_or_default()));
            }
        }
        for (ln, l) in lines {
            let y = l.y.ok_or_else(|| bad(ln, "missing field `y`".into()))?;
            if let Some(v) = y
                && !(0.0..=1.0).contains(&v)
            {
                return Err(bad(ln, format!("y = {v} is outside [0, 1]")));
            }
            if l.a == l.b {
                return Err(bad(ln, format!("a and b are the same item {:?}", l.a)));
            }
            if l.pool_id.is_empty() || l.a.is_empty() || l.b.is_empty() {
                return Err(bad(ln, "pool_id, a and b must be non-empty".into()));
            }
            if let Some(c) = l.cost_usd
                && let Err(m) = crate::domain::verdict::check_query_usd(c)
            {
                return Err(bad(ln, format!("cost_usd is {m}")));
            }
            let who = RecordedJudge { judge: l.judge.unwrap_or_default(), prompting: l.prompting };
            let j = *index.entry(who.clone()).or_insert_with(|| {
                judges.push(who);
                verdicts.push(HashMap::new());
                settings.push(Default::default());
                judges.len() - 1
            });
            settings[j].insert(l.judge_settings.clone());
            let entry = Entry {
                y,
                invalid_reason: l.invalid_reason,
                cost_usd: l.cost_usd,
                usage: l.usage.unwrap_or_default(),
                strong_preference: l.strong_preference && y.is_some(),
                line: ln,
            };
            let pool = verdicts[j].entry(l.pool_id.clone()).or_default();
            match pool.get(&(l.a.clone(), l.b.clone())) {
                None => {
                    pool.insert((l.a, l.b), entry);
                }
                Some(first) if first.y == entry.y && first.cost_usd == entry.cost_usd => {}
                Some(first) => {
                    return Err(ReplayError::Duplicate {
                        path: path.to_owned(),
                        line: ln,
                        first_line: first.line,
                        what: if first.y == entry.y { "cost_usd (the same verdict)" } else { "verdict" },
                        query: format!(
                            "{}, pool {:?}, {:?} shown first vs {:?}",
                            judges[j].label(),
                            l.pool_id,
                            l.a,
                            l.b
                        ),
                    });
                }
            }
        }
        if judges.is_empty() {
            return Err(bad(1, "the file holds no verdict".into()));
        }
        let settings = settings
            .into_iter()
            .map(|s| match s.into_iter().collect::<Vec<_>>().as_slice() {
                [Some(one)] => Some(one.clone()),
                _ => None,
            })
            .collect();
        Ok(Self { path: path.to_owned(), judges, verdicts, settings })
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The recorded judges, in order of first appearance.
    pub fn judges(&self) -> &[RecordedJudge] {
        &self.judges
    }

    /// The verdicts of recorded judge `j` (index into [`Recording::judges`]).
    pub fn verdicts(&self, j: usize) -> &PoolVerdicts {
        &self.verdicts[j]
    }

    /// The entry of judge `j` for (pool, a first, b second).
    pub fn get(&self, j: usize, pool_id: &str, a: &str, b: &str) -> Option<&Entry> {
        self.verdicts[j].get(pool_id)?.get(&(a.to_owned(), b.to_owned()))
    }

    /// Indices of the recorded judges matching `judge` (its exact name, else a prefix of it, as
    /// `fit --judge` takes it) and `prompting` (exact); `None` matches any.
    pub fn matching(&self, judge: Option<&str>, prompting: Option<&str>) -> Vec<usize> {
        let by_prompting: Vec<usize> = (0..self.judges.len())
            .filter(|&j| prompting.is_none_or(|p| self.judges[j].prompting.as_deref() == Some(p)))
            .collect();
        let Some(w) = judge else { return by_prompting };
        let names =
            crate::domain::names::exact_or_prefix(by_prompting.iter().map(|&j| self.judges[j].judge.as_str()), w);
        by_prompting.into_iter().filter(|&j| names.contains(&self.judges[j].judge.as_str())).collect()
    }

    /// The one recorded judge the selection names.
    ///
    /// # Errors
    /// A message listing the recorded judges when none or several match.
    pub fn select_one(&self, judge: Option<&str>, prompting: Option<&str>) -> Result<usize, ReplayError> {
        let m = self.matching(judge, prompting);
        let listed = || {
            let mut v: Vec<String> = self.judges.iter().take(8).map(|j| format!("{:?}", j.label())).collect();
            if self.judges.len() > 8 {
                v.push(format!("… ({} in all)", self.judges.len()));
            }
            v.join(", ")
        };
        match m.len() {
            1 => Ok(m[0]),
            0 => Err(ReplayError::NoJudge {
                path: self.path.clone(),
                selection: format!(
                    "{}{}",
                    judge.map(|j| format!(" judge {j:?}")).unwrap_or_default(),
                    prompting.map(|p| format!(" prompting {p:?}")).unwrap_or_default()
                ),
                listed: listed(),
            }),
            n => Err(ReplayError::SeveralJudges { path: self.path.clone(), n, listed: listed() }),
        }
    }

    /// The pools of judge `j` (sorted).
    pub fn pools(&self, j: usize) -> Vec<&str> {
        let mut v: Vec<&str> = self.verdicts[j].keys().map(String::as_str).collect();
        v.sort_unstable();
        v
    }

    /// Check that judge `j`'s verdicts on `pool` name its items, and that there is at least one;
    /// returns how many there are.
    ///
    /// # Errors
    /// A message naming the file and line, or the pools the recording has.
    pub fn check_pool(&self, j: usize, pool: &Pool) -> Result<usize, ReplayError> {
        check_pool_in(&self.path, &self.judges[j], &self.verdicts[j], pool)
    }
}

fn check_pool_in(path: &Path, who: &RecordedJudge, verdicts: &PoolVerdicts, pool: &Pool) -> Result<usize, ReplayError> {
    // A run over many prompts (docs/systems.md) reads a recording keyed per prompt: pool_id =
    // the prompt's pool id, a and b its item ids (the systems). A recording keyed by the merged
    // pool (a systems run's own verdicts.jsonl) is read as a single pool's.
    let prompts: Vec<(&str, Option<usize>)> = if !pool.prompts.is_empty() && !verdicts.contains_key(&pool.pool_id) {
        pool.prompts.iter().enumerate().map(|(p, pr)| (pr.pool_id.as_str(), Some(p))).collect()
    } else {
        vec![(pool.pool_id.as_str(), None)]
    };
    let mut total = 0;
    for (pid, prompt) in &prompts {
        let Some(v) = verdicts.get(*pid) else { continue };
        let mut lines: Vec<(&(String, String), &Entry)> = v.iter().collect();
        lines.sort_by_key(|(_, e)| e.line);
        for ((a, b), e) in lines {
            for id in [a, b] {
                let found = match prompt {
                    None => pool.item_index(id).is_some(),
                    Some(_) => pool.item_index(&format!("{pid}/{id}")).is_some(),
                };
                if !found {
                    let ids = pool.items.iter().map(|i| i.id.as_str());
                    let hint = match prompt {
                        None => crate::domain::names::spelled_alike_hint(id, ids, "the pool"),
                        Some(_) => crate::domain::names::spelled_alike_hint(&format!("{pid}/{id}"), ids, "the pool"),
                    };
                    return Err(ReplayError::ForeignItem {
                        path: path.to_owned(),
                        line: e.line,
                        item: id.clone(),
                        pool_id: (*pid).to_owned(),
                        hint,
                    });
                }
            }
        }
        total += v.len();
    }
    if total == 0 {
        let mut pools: Vec<&str> = verdicts.keys().map(String::as_str).collect();
        pools.sort_unstable();
        let shown: Vec<&str> = pools.iter().take(5).copied().collect();
        let of_prompts = if prompts.len() > 1 {
            format!(" (none of them is one of the run's {} prompts)", prompts.len())
        } else {
            String::new()
        };
        return Err(ReplayError::NoPool {
            path: path.to_owned(),
            judge: who.label(),
            pool_id: pool.pool_id.clone(),
            n_pools: pools.len(),
            shown: format!("{}{}{of_prompts}", shown.join(", "), if pools.len() > 5 { ", …" } else { "" }),
        });
    }
    Ok(total)
}

/// The recording's key of item `i` of `pool`: (pool id, item id), where in a run over many
/// prompts the pool is the item's prompt and the id its id in that prompt (docs/replay.md,
/// "Recordings of systems"), unless the recording is keyed by the merged pool.
fn recording_key<'p>(verdicts: &PoolVerdicts, pool: &'p Pool, i: usize) -> (&'p str, &'p str) {
    let id = pool.items[i].id.as_str();
    if pool.prompts.is_empty() || verdicts.contains_key(&pool.pool_id) {
        return (pool.pool_id.as_str(), id);
    }
    let pid = pool.prompts[pool.item_prompt[i]].pool_id.as_str();
    (pid, id.strip_prefix(pid).and_then(|r| r.strip_prefix('/')).unwrap_or(id))
}

/// What a replayed run reports about its recording (result.json `replay`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplayInfo {
    /// The recording, as configured.
    pub recording: PathBuf,
    /// The recorded judge's `judge` field.
    pub judge: String,
    /// Its prompting strategy, when recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompting: Option<String>,
    /// Whether the recording gives costs (spend is then the recorded cost of the replayed verdicts).
    pub recorded_cost: bool,
    /// The recorded judge's settings id, when its records (a run folder's) carry one
    /// (docs/outputs.md): judges of other settings under one name are told apart by it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settings: Option<String>,
    /// With `recorded_cost`: the recorded judge's verdicts that record no cost (counted $0), of
    /// `recorded` in all; the spend is then partial.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unpriced: Option<[usize; 2]>,
    /// The `missing` setting.
    pub missing: MissingPolicy,
    /// Queries of this invocation the recording lacked (set aside under `missing: unavailable`).
    #[serde(default)]
    pub unavailable: usize,
    /// With `missing: unavailable`: the recorded ordered pairs of the run's pool (its prompts,
    /// in a run over many prompts), which were the acquisition's only candidates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub candidates: Option<usize>,
}

/// The replay judge (one recorded judge of a recording).
pub struct ReplayJudge {
    cfg: ReplayConfig,
    who: RecordedJudge,
    verdicts: PoolVerdicts,
    recorded_cost: bool,
    settings: Option<String>,
}

impl ReplayJudge {
    /// Read the recording and select its one judge.
    ///
    /// # Errors
    /// A message naming the file (and line) or listing the recorded judges to choose from.
    pub fn new(cfg: ReplayConfig) -> Result<Self, ReplayError> {
        let rec = Recording::read(&cfg.file)?;
        Self::from_recording(rec, cfg)
    }

    /// Select the configured judge of an already read recording.
    ///
    /// # Errors
    /// As [`ReplayJudge::new`].
    pub fn from_recording(mut rec: Recording, cfg: ReplayConfig) -> Result<Self, ReplayError> {
        let j = rec.select_one(cfg.judge.as_deref(), cfg.prompting.as_deref())?;
        let verdicts = std::mem::take(&mut rec.verdicts[j]);
        let recorded_cost = verdicts.values().flat_map(|m| m.values()).any(|e| e.cost_usd.is_some_and(|c| c > 0.0));
        Ok(Self { who: rec.judges[j].clone(), verdicts, recorded_cost, settings: rec.settings[j].clone(), cfg })
    }

    /// With a recorded cost: how many of the judge's verdicts record none, of how many, when
    /// some do not (their queries count $0, so the spend is partial).
    fn unpriced(&self) -> Option<[usize; 2]> {
        let entries = || self.verdicts.values().flat_map(|m| m.values());
        let none = entries().filter(|e| e.cost_usd.is_none()).count();
        (self.recorded_cost && none > 0).then(|| [none, entries().count()])
    }

    /// Check the recording against a pool: at least one verdict for it, and only its items.
    ///
    /// # Errors
    /// A message naming the file and line, or the pools the recording has.
    pub fn check_pool(&self, pool: &Pool) -> Result<(), ReplayError> {
        check_pool_in(&self.cfg.file, &self.who, &self.verdicts, pool).map(|_| ())
    }

    fn entry(&self, pool: &Pool, a: usize, b: usize) -> Option<&Entry> {
        let (pid, ia) = recording_key(&self.verdicts, pool, a);
        let (_, ib) = recording_key(&self.verdicts, pool, b);
        self.verdicts.get(pid)?.get(&(ia.to_owned(), ib.to_owned()))
    }

    fn not_recorded(&self, pool: &Pool, a: usize, b: usize) -> String {
        let (pid, ia) = recording_key(&self.verdicts, pool, a);
        let (_, ib) = recording_key(&self.verdicts, pool, b);
        format!(
            "the recording {} has no verdict of {} for pool {:?} with {:?} shown first and {:?} second",
            self.cfg.file.display(),
            self.who.label(),
            pid,
            ia,
            ib
        )
    }
}

impl JudgeInfo for ReplayJudge {
    fn describe(&self) -> String {
        let file = self.cfg.file.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
        format!("replay of {} ({file})", self.who.label())
    }

    fn cache_key(&self, pool: &Pool, a: usize, b: usize) -> String {
        let payload = serde_json::json!({
            "judge": "replay", "recorded": self.who, "pool": pool.pool_id,
            "a": pool.items[a].id, "b": pool.items[b].id, "entry": self.entry(pool, a, b),
        });
        rng::sha256_hex(&payload.to_string())
    }

    fn worst_case_usd(&self, pool: &Pool, a: usize, b: usize) -> f64 {
        self.entry(pool, a, b).and_then(|e| e.cost_usd).unwrap_or(0.0)
    }

    fn has_price(&self) -> bool {
        self.recorded_cost
    }

    fn answerable(&self, pool: &Pool) -> Option<Vec<(usize, usize)>> {
        if self.cfg.missing != MissingPolicy::Unavailable {
            return None;
        }
        let mut out = Vec::new();
        let mut resolve = |pid: &str, a: &str, b: &str, prefixed: bool| {
            let idx = |id: &str| if prefixed { pool.item_index(&format!("{pid}/{id}")) } else { pool.item_index(id) };
            if let (Some(i), Some(j)) = (idx(a), idx(b)) {
                out.push((i, j));
            }
        };
        if pool.prompts.is_empty() || self.verdicts.contains_key(&pool.pool_id) {
            for (a, b) in self.verdicts.get(&pool.pool_id).into_iter().flat_map(HashMap::keys) {
                resolve(&pool.pool_id, a, b, false);
            }
        } else {
            for pr in &pool.prompts {
                for (a, b) in self.verdicts.get(&pr.pool_id).into_iter().flat_map(HashMap::keys) {
                    resolve(&pr.pool_id, a, b, true);
                }
            }
        }
        out.sort_unstable();
        Some(out)
    }

    fn replay(&self) -> Option<ReplayInfo> {
        Some(ReplayInfo {
            recording: self.cfg.file.clone(),
            judge: self.who.judge.clone(),
            prompting: self.who.prompting.clone(),
            recorded_cost: self.recorded_cost,
            settings: self.settings.clone(),
            unpriced: self.unpriced(),
            missing: self.cfg.missing,
            unavailable: 0,
            candidates: None,
        })
    }
}

impl Judge for ReplayJudge {
    fn judge<'a>(&'a self, pool: &'a Pool, a: usize, b: usize) -> BoxFuture<'a, Result<JudgeReply, JudgeError>> {
        let out = match self.entry(pool, a, b) {
            Some(e) => Ok(JudgeReply {
                y: e.y,
                invalid_reason: match e.y {
                    Some(_) => None,
                    None => Some(e.invalid_reason.as_deref().map_or_else(
                        || InvalidReason::Recorded("invalid in the recording".into()).into(),
                        InvalidNote::parse,
                    )),
                },
                raw: None,
                usage: e.usage,
                cost_usd: e.cost_usd.unwrap_or(0.0),
                attempts: 1,
                latency_ms: 0,
                detail: VerdictDetail { strong_preference: e.strong_preference, ..VerdictDetail::default() },
            }),
            None => {
                let what = self.not_recorded(pool, a, b);
                Err(match self.cfg.missing {
                    MissingPolicy::Unavailable => JudgeError::Unavailable { message: what },
                    MissingPolicy::Fail => JudgeError::Fatal {
                        message: format!(
                            "judge.replay: {what} (missing: fail); record that query, or set `missing: unavailable` to let acquisition move on"
                        ),
                    },
                })
            }
        };
        Box::pin(async move { out })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::pool::Item;

    fn pool() -> Pool {
        let it = |id: &str| Item { id: id.into(), ..Default::default() };
        Pool::new("p".into(), String::new(), vec![it("x"), it("y"), it("z")]).unwrap()
    }

    fn cfg(missing: MissingPolicy) -> ReplayConfig {
        ReplayConfig { file: "rec.jsonl".into(), judge: None, prompting: None, missing }
    }

    /// A run folder whose judge was edited under its one name (two settings ids): two recorded
    /// judges, `NAME [settings ID]`, each replayed with its own verdicts; one settings id keeps
    /// the plain name.
    #[test]
    fn one_names_records_of_two_settings_are_two_recorded_judges() {
        let line = |y: u8, s: &str| {
            format!(
                "{{\"pool_id\":\"p\",\"a\":\"x\",\"b\":\"y\",\"y\":{y},\"judge\":\"mock\",\"judge_settings\":\"{s}\"}}\n"
            )
        };
        let path = Path::new("rec.jsonl");
        let one = Recording::parse(&(line(1, "aaa") + &line(1, "aaa")), path).unwrap();
        assert_eq!(one.judges().iter().map(RecordedJudge::label).collect::<Vec<_>>(), ["mock"]);
        let two = Recording::parse(&(line(1, "aaa") + &line(0, "bbb")), path).unwrap();
        let labels: Vec<String> = two.judges().iter().map(RecordedJudge::label).collect();
        assert_eq!(labels, ["mock [settings aaa]", "mock [settings bbb]"]);
        // The plain name is a prefix of both: which one is asked.
        let e = two.select_one(Some("mock"), None).unwrap_err().to_string();
        assert!(e.contains("holds 2 recorded judges matching") && e.contains("mock [settings bbb]"), "{e}");
        assert_eq!(two.select_one(Some("mock [settings b"), None), Ok(1));
        let p = pool();
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        for (name, y) in [("mock [settings aaa]", 1.0), ("mock [settings bbb]", 0.0)] {
            let c = ReplayConfig { judge: Some(name.into()), ..cfg(MissingPolicy::Fail) };
            let j = ReplayJudge::from_recording(two.clone(), c).unwrap();
            assert_eq!(rt.block_on(j.judge(&p, 0, 1)).unwrap().y, Some(y), "{name}");
        }
    }

    /// The verdicts.jsonl of a run stopped while writing (its last line cut, no newline) is a
    /// recording without that line, as the run and `fit` read it (it was refused); a bad line
    /// with its newline, or before others, is still an error naming it.
    #[test]
    fn a_torn_last_line_is_dropped_and_other_bad_lines_are_refused() {
        let path = Path::new("rec.jsonl");
        let good = "{\"pool_id\":\"p\",\"a\":\"x\",\"b\":\"y\",\"y\":1}\n";
        let torn = "{\"pool_id\":\"p\",\"a\":\"y\",\"b\":\"x\",\"y";
        let rec = Recording::parse(&format!("{good}{torn}"), path).unwrap();
        assert_eq!(rec.verdicts[0]["p"].len(), 1);
        let e = Recording::parse(&format!("{good}{torn}\n"), path).unwrap_err().to_string();
        assert!(e.starts_with("rec.jsonl:2: "), "{e}");
        let e = Recording::parse(&format!("{torn}\n{good}"), path).unwrap_err().to_string();
        assert!(e.starts_with("rec.jsonl:1: "), "{e}");
    }

    #[test]
    fn a_recorded_strong_preference_is_replayed_as_one() {
        let text = "{\"pool_id\":\"p\",\"a\":\"x\",\"b\":\"y\",\"y\":1,\"strong_preference\":true}\n\
                    {\"pool_id\":\"p\",\"a\":\"y\",\"b\":\"x\",\"y\":0}\n";
        let j = ReplayJudge::from_recording(
            Recording::parse(text, Path::new("rec.jsonl")).unwrap(),
            cfg(MissingPolicy::Fail),
        )
        .unwrap();
        let p = pool();
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let strong = |a, b| rt.block_on(j.judge(&p, a, b)).unwrap().detail.strong_preference;
        assert!(strong(0, 1));
        assert!(!strong(1, 0));
    }

    #[test]
    fn replays_recorded_verdicts_costs_and_invalid_ones() {
        let text = "{\"pool_id\":\"p\",\"a\":\"x\",\"b\":\"y\",\"y\":1,\"cost_usd\":0.25,\"usage\":{\"prompt_tokens\":7}}\n\
                    {\"pool_id\":\"p\",\"a\":\"y\",\"b\":\"x\",\"y\":null,\"invalid_reason\":\"refused\"}\n\
                    \n{\"pool_id\":\"p\",\"a\":\"x\",\"b\":\"z\",\"y\":0.5}\n";
        let rec = Recording::parse(text, Path::new("rec.jsonl")).unwrap();
        assert_eq!(rec.judges(), &[RecordedJudge { judge: String::new(), prompting: None }]);
        let j = ReplayJudge::from_recording(rec, cfg(MissingPolicy::Fail)).unwrap();
        let p = pool();
        j.check_pool(&p).unwrap();
        assert!(j.has_price());
        assert_eq!(j.worst_case_usd(&p, 0, 1), 0.25);
        assert_eq!(j.worst_case_usd(&p, 0, 2), 0.0);
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let r = rt.block_on(j.judge(&p, 0, 1)).unwrap();
        assert_eq!((r.y, r.cost_usd, r.usage.prompt_tokens), (Some(1.0), 0.25, 7));
        let r = rt.block_on(j.judge(&p, 1, 0)).unwrap();
        assert_eq!((r.y, r.invalid_reason.as_ref().map(ToString::to_string).as_deref()), (None, Some("refused")));
        assert_eq!(rt.block_on(j.judge(&p, 0, 2)).unwrap().y, Some(0.5));
        // Missing under `fail`: a fatal error naming the query and the setting.
        let e = rt.block_on(j.judge(&p, 2, 0)).unwrap_err().to_string();
        assert!(e.contains("\"z\" shown first and \"x\" second") && e.contains("missing: unavailable"), "{e}");
        // The cache key changes with the recorded verdict.
        let other = Recording::parse(&text.replace("\"y\":1,", "\"y\":0,"), Path::new("rec.jsonl")).unwrap();
        let j2 = ReplayJudge::from_recording(other, cfg(MissingPolicy::Fail)).unwrap();
        assert_ne!(j.cache_key(&p, 0, 1), j2.cache_key(&p, 0, 1));
        assert_eq!(j.cache_key(&p, 0, 2), j2.cache_key(&p, 0, 2));
        // A recorded cost no query has (1e308 USD: three of them summed to inf, and result.json
        // then held null) or a negative one is refused by line.
        for (cost, said) in [("1e308", "1e308"), ("-0.5", "-0.5")] {
            let e = Recording::parse(&text.replace("0.25", cost), Path::new("rec.jsonl")).unwrap_err().to_string();
            assert!(
                e.starts_with(&format!("rec.jsonl:1: cost_usd is {said}: expected a number of USD from 0 to 1000000, the most one query may cost")),
                "{e}"
            );
        }
    }

    #[test]
    fn a_run_over_many_prompts_reads_a_recording_keyed_per_prompt() {
        let it = |id: &str| Item { id: id.into(), system: Some(id.into()), ..Default::default() };
        let prompt = |p: &str| Pool::new(p.into(), format!("task {p}"), vec![it("A"), it("B"), it("C")]).unwrap();
        let pool = Pool::systems("2 prompts".into(), vec![prompt("p1"), prompt("p2")]).unwrap();
        // Items: p1/A p1/B p1/C p2/A p2/B p2/C (indices 0..6).
        let text = "{\"pool_id\":\"p2\",\"a\":\"C\",\"b\":\"A\",\"y\":1}\n{\"pool_id\":\"p1\",\"a\":\"A\",\"b\":\"B\",\"y\":0.25}\n{\"pool_id\":\"elsewhere\",\"a\":\"A\",\"b\":\"Z\",\"y\":1}\n";
        let rec = Recording::parse(text, Path::new("rec.jsonl")).unwrap();
        let j = ReplayJudge::from_recording(rec.clone(), cfg(MissingPolicy::Unavailable)).unwrap();
        j.check_pool(&pool).unwrap();
        assert_eq!(j.answerable(&pool), Some(vec![(0, 1), (5, 3)]));
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        assert_eq!(rt.block_on(j.judge(&pool, 0, 1)).unwrap().y, Some(0.25));
        assert_eq!(rt.block_on(j.judge(&pool, 5, 3)).unwrap().y, Some(1.0));
        let e = rt.block_on(j.judge(&pool, 3, 5)).unwrap_err().to_string();
        assert!(e.contains("for pool \"p2\" with \"A\" shown first and \"C\" second"), "{e}");
        // Under `missing: fail` every pair stays a candidate (an unrecorded one stops the run).
        let strict = ReplayJudge::from_recording(rec, cfg(MissingPolicy::Fail)).unwrap();
        assert_eq!(strict.answerable(&pool), None);
        // A system the prompt does not have is named with its line.
        let bad = Recording::parse("{\"pool_id\":\"p1\",\"a\":\"A\",\"b\":\"Z\",\"y\":1}\n", Path::new("r")).unwrap();
        let e = ReplayJudge::from_recording(bad, cfg(MissingPolicy::Fail)).unwrap().check_pool(&pool).unwrap_err();
        assert_eq!(e.to_string(), "rec.jsonl:1: item \"Z\" is not in pool \"p1\"");
    }

    #[test]
    fn missing_queries_are_unavailable_when_asked_to() {
        let rec = Recording::parse("{\"pool_id\":\"p\",\"a\":\"x\",\"b\":\"y\",\"y\":1}\n", Path::new("r")).unwrap();
        let j = ReplayJudge::from_recording(rec, cfg(MissingPolicy::Unavailable)).unwrap();
        assert!(!j.has_price());
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let e = rt.block_on(j.judge(&pool(), 1, 2)).unwrap_err();
        assert!(matches!(e, JudgeError::Unavailable { .. }), "{e:?}");
        assert!(e.to_string().contains("\"y\" shown first and \"z\" second"), "{e}");
    }

    #[test]
    fn bad_lines_name_the_line_and_the_expected_form() {
        let p = Path::new("rec.jsonl");
        let e = Recording::parse(
            "{\"pool_id\":\"p\",\"a\":\"x\",\"b\":\"y\",\"y\":1}\n{\"a\":\"x\",\"b\":\"y\",\"y\":1}\n",
            p,
        )
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("rec.jsonl:2: missing field `pool_id`") && e.contains("expected {\"pool_id\""), "{e}");
        let e = Recording::parse("{\"pool_id\":\"p\",\"a\":\"x\",\"b\":\"y\"}\n", p).unwrap_err().to_string();
        assert!(e.contains(":1: missing field `y`"), "{e}");
        let e = Recording::parse("{\"pool_id\":\"p\",\"a\":\"x\",\"b\":\"y\",\"y\":2}\n", p).unwrap_err().to_string();
        assert!(e.contains("y = 2 is outside [0, 1]"), "{e}");
        let e =
            Recording::parse("{\"pool_id\":\"p\",\"a\":\"x\",\"b\":\"y\",\"y\":\"x\"}\n", p).unwrap_err().to_string();
        assert!(e.contains(":1: at `y`: expected a number, found \"x\""), "{e}");
        // The same verdict twice is one verdict; another verdict is an error naming both lines.
        let one = "{\"pool_id\":\"p\",\"a\":\"x\",\"b\":\"y\",\"y\":1}\n";
        assert!(Recording::parse(&one.repeat(2), p).is_ok());
        let e = Recording::parse(&format!("{one}{}", one.replace(":1}", ":0}")), p).unwrap_err().to_string();
        assert!(e.contains("rec.jsonl:2:") && e.contains("first on line 1"), "{e}");
        // Items must be in the pool.
        let rec = Recording::parse("{\"pool_id\":\"p\",\"a\":\"x\",\"b\":\"w\",\"y\":1}\n", p).unwrap();
        let e = rec.check_pool(0, &pool()).unwrap_err().to_string();
        assert_eq!(e, "rec.jsonl:1: item \"w\" is not in pool \"p\"");
        let rec = Recording::parse("{\"pool_id\":\"q\",\"a\":\"x\",\"b\":\"y\",\"y\":1}\n", p).unwrap();
        assert!(
            rec.check_pool(0, &pool()).unwrap_err().to_string().contains("no verdict for pool \"p\"; it has 1 pool: q")
        );
    }

    /// A recording saved with a UTF-8 byte-order mark reads as without one (as `fit` and pool
    /// files read it); Latin-1 text is named at its line.
    #[test]
    fn a_recording_with_a_byte_order_mark_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let line = "{\"pool_id\":\"p\",\"a\":\"x\",\"b\":\"y\",\"y\":1}\n";
        let bom = dir.path().join("bom.jsonl");
        std::fs::write(&bom, [&[0xEF, 0xBB, 0xBF][..], line.as_bytes()].concat()).unwrap();
        let rec = Recording::read(&bom).unwrap();
        assert_eq!(rec.get(0, "p", "x", "y").unwrap().y, Some(1.0));
        let latin = dir.path().join("latin.jsonl");
        std::fs::write(&latin, [line.as_bytes(), b"{\"pool_id\":\"caf\xe9\"}\n"].concat()).unwrap();
        let e = Recording::read(&latin).unwrap_err().to_string();
        assert!(e.contains("latin.jsonl:2: invalid UTF-8 at byte 16 of the line (byte 0xE9)"), "{e}");
    }

    /// A second record of one ordered pair names what differs; a JSON array is named as one.
    #[test]
    fn a_pair_recorded_twice_and_an_array_are_named() {
        let p = Path::new("r.jsonl");
        let line =
            |y: u8, cost: f64| format!("{{\"pool_id\":\"p\",\"a\":\"x\",\"b\":\"y\",\"y\":{y},\"cost_usd\":{cost}}}\n");
        assert!(Recording::parse(&(line(1, 0.5) + &line(1, 0.5)), p).is_ok(), "the same line twice is one verdict");
        let e = Recording::parse(&(line(1, 0.5) + &line(0, 0.5)), p).unwrap_err().to_string();
        assert!(
            e.contains("r.jsonl:2: ") && e.contains("recorded again with another verdict (first on line 1)"),
            "{e}"
        );
        let e = Recording::parse(&(line(1, 0.5) + &line(1, 0.25)), p).unwrap_err().to_string();
        assert!(e.contains("recorded again with another cost_usd (the same verdict) (first on line 1)"), "{e}");
        let e = Recording::parse("[1, 2]\n", p).unwrap_err().to_string();
        assert!(e.starts_with("r.jsonl:1: the file looks like one JSON array"), "{e}");
    }

    #[test]
    fn several_recorded_judges_need_a_selection() {
        let text = "{\"pool_id\":\"p\",\"a\":\"x\",\"b\":\"y\",\"y\":1,\"judge\":\"J\",\"prompting\":\"CoT\"}\n\
                    {\"pool_id\":\"p\",\"a\":\"x\",\"b\":\"y\",\"y\":0,\"judge\":\"J\",\"prompting\":\"Vanilla\"}\n\
                    {\"pool_id\":\"p\",\"a\":\"x\",\"b\":\"y\",\"y\":0,\"judge\":\"K\"}\n";
        let rec = Recording::parse(text, Path::new("r")).unwrap();
        assert_eq!(rec.judges().len(), 3);
        assert_eq!(rec.judges()[0].label(), "J / CoT");
        assert_eq!(rec.matching(Some("J"), None), vec![0, 1]);
        let e = rec.select_one(Some("J"), None).unwrap_err().to_string();
        assert!(e.contains("holds 2 recorded judges") && e.contains("\"J / Vanilla\""), "{e}");
        assert_eq!(rec.select_one(Some("J"), Some("Vanilla")), Ok(1));
        assert_eq!(rec.select_one(Some("K"), None), Ok(2));
        assert!(
            rec.select_one(Some("L"), None).unwrap_err().to_string().contains("no recorded judge matches judge \"L\"")
        );
        // A prefix only one judge's name starts with picks it, as `fit --judge`; an exact name
        // wins over longer names it begins.
        let text2 = "{\"pool_id\":\"p\",\"a\":\"x\",\"b\":\"y\",\"y\":1,\"judge\":\"gpt-4o\"}\n\
                     {\"pool_id\":\"p\",\"a\":\"x\",\"b\":\"y\",\"y\":0,\"judge\":\"gpt-4o-mini\"}\n\
                     {\"pool_id\":\"p\",\"a\":\"x\",\"b\":\"y\",\"y\":0,\"judge\":\"claude-3\"}\n";
        let rec2 = Recording::parse(text2, Path::new("r")).unwrap();
        let name = |j: usize| rec2.judges()[j].judge.clone();
        assert_eq!(name(rec2.select_one(Some("cl"), None).unwrap()), "claude-3");
        assert_eq!(name(rec2.select_one(Some("gpt-4o"), None).unwrap()), "gpt-4o");
        assert_eq!(name(rec2.select_one(Some("gpt-4o-m"), None).unwrap()), "gpt-4o-mini");
        let e = rec2.select_one(Some("gpt"), None).unwrap_err().to_string();
        assert!(e.contains("holds 2 recorded judges matching"), "{e}");
        assert_eq!(rec.get(1, "p", "x", "y").unwrap().y, Some(0.0));
    }
}

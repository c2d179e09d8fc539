//! `topk-judge compare RUN_A RUN_B …`: runs of the same pool (e.g. a cheap and a frontier judge)
//! side by side.
//!
//! For each run: spend (USD), comparisons, recall@k against the gold top-k (or against the top-k
//! of a `--reference` run), the position-flip rate, and the curve of recall against cumulative
//! spend (one point per refit in fits.jsonl). Between runs: top-k agreement |S_a ∩ S_b| / k.
//!
//! **Flip** (tutorial): an unordered pair judged in both orders whose winner changes with the order,
//! i.e. the same slot wins both times: (y_ab − ½)(y_ba − ½) > 0. A tie (y = ½) in either order is
//! not a flip. Flip rate = flips / pairs with a valid verdict in both orders.
//!
//! **Spend at a refit**: the fit after n valid verdicts is placed at the cumulative cost of the
//! verdict log up to the n-th valid verdict (invalid verdicts in between cost too).

use super::FitLine;
use super::RecallTarget;
use super::md;
use super::plots::{self, LineChart, Series};
use crate::report::schema::RunResult;
use crate::store::ledger::{LedgerError, VerdictRecord, read_records};
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write;
use std::path::{Path, PathBuf};

/// Errors of `compare` and `report`.
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    /// A run file could not be read.
    #[error("{path}: {msg}")]
    Read {
        /// The run file (result.json or another file of the run folder) that could not be read.
        path: PathBuf,
        /// Why it could not be read: the I/O or JSON error, as text.
        msg: String,
    },
    /// Reading a run's verdict log (verdicts.jsonl) failed: I/O error or a line that is not a record.
    #[error(transparent)]
    Cache(#[from] LedgerError),
    /// Runs that cannot be compared.
    #[error("{0}")]
    Mismatch(String),
    /// Drawing an SVG plot failed (plotters' error).
    #[error(transparent)]
    Plot(#[from] plots::PlotError),
}

/// A run folder as written by `topk-judge run`.
#[derive(Debug, Clone)]
pub struct RunDir {
    /// The run folder (`<out_dir>/<name>`) holding result.json and verdicts.jsonl.
    pub dir: PathBuf,
    /// The run's result.json, as read.
    pub result: RunResult,
    /// verdicts.jsonl records of the run's judge (in log order).
    pub verdicts: Vec<VerdictRecord>,
    /// fits.jsonl lines of the run's final configuration (in order).
    pub fits: Vec<FitLine>,
    /// Why no curve over the refits can be drawn (fits.jsonl missing, or without a refit of the
    /// run's configuration), when the run has comparisons; warned at load.
    pub refits_note: Option<String>,
    /// Whether spend and verdict costs were re-priced from a price table
    /// ([`crate::report::judges::PriceTable::apply`]).
    pub priced: bool,
}

/// What a run folder whose `fits` file (fits.jsonl, panel_fits.jsonl) holds no refit of its
/// configuration (`have` = 0; `other` lines are refits of another configuration) while
/// result.json counts `comparisons` cannot show: its curves over the refits (recall against
/// spend in `compare`, π of the boundary items in `report`). `None` when it has refits, or no
/// comparison to refit on.
fn no_refits_note(fits: &Path, have: usize, other: usize, comparisons: usize) -> Option<String> {
    (have == 0 && comparisons > 0).then(|| {
        let state = match other {
            _ if !fits.exists() => "is missing".to_owned(),
            0 => "holds no refit".to_owned(),
            n => format!(
                "holds no refit of this run's configuration ({} of another configuration than run.json names)",
                crate::domain::fmt::count(n, "line")
            ),
        };
        format!(
            "{} {state} while result.json counts {} (one line is written at each refit): no curve over the refits is drawn for this run",
            fits.display(),
            crate::domain::fmt::count(comparisons, "comparison")
        )
    })
}

/// A run folder's verdicts.jsonl must hold at least the `comparisons` its result.json counts
/// (`found` records of the run's judge and pool): a missing, emptied, cut or foreign file would
/// make the flips and spend read from it wrong (`no pair in both orders` for a run that has
/// them).
///
/// `named` is the count before the records were picked by the judge as configured now: when
/// those suffice, the file is whole and what changed is the judge's configuration (an edited
/// judge, or a replay judge's recording, whose verdicts are part of its keys), and that is said.
fn short_verdicts(
    vp: &Path,
    (found, named): (usize, usize),
    torn: Option<&str>,
    comparisons: usize,
) -> Result<(), CompareError> {
    if found >= comparisons {
        return Ok(());
    }
    // A crash while writing the last verdict: the file is there, cut short by one line.
    if let Some(torn) = torn {
        return Err(CompareError::Read {
            path: vp.to_owned(),
            msg: format!(
                "holds {found} verdicts of this run's judge and pool, while result.json counts {comparisons} comparisons: {torn}; run the run's config again to repair the folder (the torn line is cut, its pair asked again and result.json written anew)"
            ),
        });
    }
    if named >= comparisons {
        return Err(CompareError::Read {
            path: vp.to_owned(),
            msg: format!(
                "holds {named} records of this run's judge, but only {found} have the cache keys of that judge as its config.yaml builds it now, while result.json counts {comparisons} comparisons: the judge's configuration changed since the run (an edited template or setting, or a replay judge's recording whose verdicts were edited: its verdicts are part of its keys); restore it, or run the config again"
            ),
        });
    }
    let what = if vp.exists() {
        format!("holds {found} verdicts of this run's judge and pool")
    } else {
        "not found".to_owned()
    };
    Err(CompareError::Read {
        path: vp.to_owned(),
        msg: format!(
            "{what}, while result.json counts {comparisons} comparisons; put the run's verdicts.jsonl back (the flips and spend are read from it)"
        ),
    })
}

impl RunDir {
    /// The text of run folder `dir`'s result.json.
    ///
    /// # Errors
    /// [`CompareError::Read`] naming the file: missing, not a file, or unreadable; a missing or
    /// misplaced one asks for a run folder (`or_else`: what else the command takes, e.g. `" or
    /// the run's config file"`).
    pub fn read_result_json(dir: &Path, or_else: &str) -> Result<String, CompareError> {
        let rp = dir.join("result.json");
        let msg = match std::fs::metadata(&rp) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && dir.join("audit.json").is_file() => {
                format!(
                    "not found: {} is the folder of an audit (it holds its audit.json, where its findings are), not of a run; give a run folder{or_else}",
                    dir.display()
                )
            }
            // A run's books without its result: a run that has not stopped (killed, or running).
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && dir.join("verdicts.jsonl").is_file() => {
                format!(
                    "not found: the run in {} has not finished (it was stopped before writing it, or is still running); run its config again to resume it, and it writes result.json when it stops",
                    dir.display()
                )
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                format!("not found: give a run folder (a run writes result.json there when it stops){or_else}")
            }
            Ok(m) if !m.is_file() => {
                format!(
                    "not a file (a run writes its result there as a file when it stops): give a run folder{or_else}"
                )
            }
            // A byte-order mark (an editor's save) is not part of the JSON.
            _ => match std::fs::read_to_string(&rp) {
                Ok(text) => return Ok(crate::domain::text::strip_bom_str(&text).to_owned()),
                Err(e) => e.to_string(),
            },
        };
        Err(CompareError::Read { path: rp, msg })
    }

    /// Read result.json, verdicts.jsonl and fits.jsonl (the last two may be missing).
    ///
    /// Verdict records of another judge description than result.json's are skipped; fit lines
    /// with another config hash than the last line's are skipped.
    ///
    /// # Errors
    /// [`CompareError::Read`] naming the file.
    pub fn load(dir: &Path) -> Result<Self, CompareError> {
        Self::load_picking(dir, &|_| None)
    }

    /// [`RunDir::load`], the verdicts further picked by `pick` (one flag per record of the
    /// judge's description, `None`: all of them): a command that can build the run's judge keeps
    /// only the records of its cache keys, so verdicts of an earlier judge configuration under the
    /// same description (another mock seed, an edited template) are left out.
    ///
    /// # Errors
    /// As [`RunDir::load`].
    pub fn load_picking(
        dir: &Path,
        pick: &dyn Fn(&[VerdictRecord]) -> Option<Vec<bool>>,
    ) -> Result<Self, CompareError> {
        let rp = dir.join("result.json");
        let text = Self::read_result_json(dir, "")?;
        // A judge panel's result (docs/model.md §8) is another document.
        if serde_json::from_str::<serde_json::Value>(&text)
            .is_ok_and(|v| v["judges"].is_array() && v["fit"]["judges"].is_array())
        {
            return Err(CompareError::Read {
                path: rp.clone(),
                msg: "the result of a judge panel run (`judges:`), where a single-judge run is expected: `report` and `compare` take a panel run as such, and `topk-judge fit RUN --panel` prints its fit".into(),
            });
        }
        let result: RunResult = serde_json::from_str(&text)
            .map_err(|e| CompareError::Read { path: rp.clone(), msg: format!("not a topk-judge result ({e})") })?;
        if let Some(msg) = result.inconsistency() {
            return Err(CompareError::Read { path: rp.clone(), msg });
        }
        let vp = dir.join("verdicts.jsonl");
        let mut named = 0;
        let mut torn = None;
        let verdicts: Vec<VerdictRecord> = if vp.exists() {
            let (recs, _, warning) = read_records(&vp)?;
            torn = warning.filter(|w| w.contains("torn last line"));
            // A run over one pool keys its records by that pool; over many prompts, by prompt.
            let one_pool = result.fit.reporting.systems.is_none();
            let recs: Vec<VerdictRecord> =
                recs.into_iter().filter(|r| !one_pool || r.pool_id.is_empty() || r.pool_id == result.pool_id).collect();
            let of_judge = |r: &VerdictRecord| r.judge.is_empty() || r.judge.eq_ignore_ascii_case(&result.judge);
            named = recs.iter().filter(|r| of_judge(r)).count();
            // The judge as configured now picks its records by their keys, whatever judge name
            // they carry (a panel member's record of the same judge is the member's name); without
            // it, the records are those under the run's judge description.
            match pick(&recs) {
                Some(keep) => recs.into_iter().zip(keep).filter_map(|(r, k)| k.then_some(r)).collect(),
                None => recs.into_iter().filter(|r| of_judge(r)).collect(),
            }
        } else {
            Vec::new()
        };
        short_verdicts(&vp, (verdicts.len(), named), torn.as_deref(), result.comparisons)?;
        let fp = dir.join("fits.jsonl");
        // The refits of the configuration that made the run (run.json's `fit` hash; without
        // it, the last line's): a folder reused by another configuration keeps older ones, of
        // whatever shape they had then, and they are set aside unread.
        let own: Option<String> = std::fs::read_to_string(dir.join("run.json"))
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .and_then(|v| v["fit"].as_str().map(str::to_owned));
        let mut fits = Vec::new();
        let mut foreign = 0;
        // Missing: no refit to draw (said below); there but unreadable (a folder): an error.
        let read = match std::fs::read_to_string(&fp) {
            Err(e) if fp.exists() => {
                return Err(CompareError::Read { path: fp.clone(), msg: format!("cannot read: {e}") });
            }
            r => r,
        };
        if let Ok(text) = read {
            let text = crate::domain::text::strip_bom_str(&text);
            let lines: Vec<&str> = text.lines().collect();
            for (i, line) in lines.iter().enumerate() {
                if line.trim().is_empty() {
                    continue;
                }
                let hash = serde_json::from_str::<serde_json::Value>(line)
                    .ok()
                    .and_then(|v| v["config_hash"].as_str().map(str::to_owned));
                if let (Some(own), Some(hash)) = (&own, &hash)
                    && own != hash
                {
                    foreign += 1;
                    continue;
                }
                match serde_json::from_str::<FitLine>(line) {
                    Ok(f) => fits.push(f),
                    // A torn last line (a crash while writing it) is a fit that was not kept;
                    // the next run of the folder cuts it.
                    Err(_) if i + 1 == lines.len() && !text.ends_with('\n') => {
                        tracing::warn!("{}:{}: ignored a torn last line", fp.display(), i + 1)
                    }
                    Err(e) => {
                        let cut = if e.is_eof() {
                            "; a line cut short before the end of the file (a hand edit or a copy?): remove it to read the rest"
                        } else {
                            ""
                        };
                        return Err(CompareError::Read {
                            path: fp.clone(),
                            msg: format!("line {}: not a fit line ({e}){cut}", i + 1),
                        });
                    }
                }
            }
        }
        let all = fits.len();
        if let Some(own) = own.or_else(|| fits.last().map(|f| f.config_hash.clone())) {
            fits.retain(|f| f.config_hash == own);
        }
        let refits_note = no_refits_note(&fp, fits.len(), foreign + all - fits.len(), result.comparisons);
        if let Some(note) = &refits_note {
            tracing::warn!("{note}");
        }
        Ok(Self { dir: dir.to_owned(), result, verdicts, fits, priced: false, refits_note })
    }

    /// Whether `dir` holds a judge panel's run (its result.json names `judges` and a panel fit).
    pub fn is_panel(dir: &Path) -> bool {
        std::fs::read_to_string(dir.join("result.json"))
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .is_some_and(|v| v["judges"].is_array() && v["fit"]["judges"].is_array())
    }

    /// The judge as `compare` names it: a replayed judge's recorded name (`judge / prompting`),
    /// else the run's judge description.
    pub fn judge_label(&self) -> String {
        match &self.result.replay {
            Some(r) => {
                crate::judge::replay::RecordedJudge { judge: r.judge.clone(), prompting: r.prompting.clone() }.label()
            }
            None => self.result.judge.clone(),
        }
    }

    /// The settings id of the run's judge: a replayed judge's recorded one (when its recording
    /// carries it), else `judge_settings` of the run's verdict records (the last one; `None` for
    /// records of a version that did not write it).
    pub fn judge_settings(&self) -> Option<&str> {
        match self.result.replay.as_ref().and_then(|r| r.settings.as_deref()) {
            Some(s) => Some(s),
            None => self.verdicts.iter().rev().find_map(|v| v.judge_settings.as_deref()),
        }
    }

    /// Where the run's spend comes from.
    pub fn cost_source(&self) -> CostSource {
        if self.priced {
            CostSource::PriceTable
        } else if self.result.spend_usd > 0.0 {
            CostSource::Recorded
        } else {
            CostSource::None
        }
    }

    /// A short name: the run's name, or the folder name.
    pub fn label(&self) -> String {
        if self.result.name.is_empty() {
            self.dir.file_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default()
        } else {
            self.result.name.clone()
        }
    }
}

/// Where a run's spend comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CostSource {
    /// The verdict log's `cost_usd` (paid, or recorded and replayed).
    Recorded,
    /// A price table given to `compare --prices`.
    PriceTable,
    /// No cost: neither recorded nor priced.
    None,
}

impl CostSource {
    /// `recorded`, `price table` or `none`.
    pub fn name(self) -> &'static str {
        match self {
            CostSource::Recorded => "recorded",
            CostSource::PriceTable => "price table",
            CostSource::None => "none",
        }
    }
}

/// A judge panel's run folder as `compare` reads it (`judges:`, docs/model.md §8): what its
/// result.json reports, its refits (panel_fits.jsonl) and its verdicts.
#[derive(Debug, Clone)]
pub struct PanelRunDir {
    /// The run folder.
    pub dir: PathBuf,
    /// The run's name.
    pub name: String,
    /// The pool.
    pub pool_id: String,
    /// k.
    pub k: usize,
    /// `panel (NAME, NAME, …)`.
    pub judges: String,
    /// What the panel's judges spent, USD (their books in the folder; another configuration's
    /// spend in the same folder is not counted).
    pub spend_usd: f64,
    /// Stored verdicts, all judges.
    pub comparisons: usize,
    /// Valid verdicts fitted.
    pub valid: usize,
    /// Top-k by θ̂.
    pub topk: Vec<String>,
    /// The gold top-k (and a gold tie at its boundary), when the pool has gold quality.
    pub gold: Option<RecallTarget>,
    /// The certified top-k.
    pub certified: crate::report::schema::CertifiedTopk,
    /// Every verdict record (both orders of a pair go to one judge, so flips are a judge's).
    pub verdicts: Vec<VerdictRecord>,
    /// Refits: (spend USD, valid verdicts, top-k).
    pub fits: Vec<(f64, usize, Vec<String>)>,
    /// The run folder's books against `budget.max_usd`, when the books passed it.
    pub budget_passed: Option<crate::report::summary::BudgetPassed>,
}

/// Why a judge panel run's result.json (its text) cannot be a run's, if it cannot: lengths that
/// disagree, k outside 1 ≤ k ≤ the bases, a probability, recall or rate outside [0, 1], a
/// negative or non-finite sd or spend, a top-k or certified set naming a base the fit lacks, or
/// a certified set its own π contradicts (as [`crate::report::schema::RunResult::inconsistency`]
/// for a single judge; hunt 60: π 1.5, a negative spend and an unknown base were printed). A text
/// that is not JSON is left to the reader that parses it.
pub fn panel_result_problem(text: &str) -> Option<String> {
    use serde_json::Value;
    const AGAIN: &str = "the result was edited or damaged; run the config again to write it anew";
    let r: Value = serde_json::from_str(crate::domain::text::strip_bom_str(text)).ok()?;
    let f = &r["fit"];
    let nums = |v: &Value| -> Vec<f64> {
        v.as_array().map(|a| a.iter().map(|x| x.as_f64().unwrap_or(f64::NAN)).collect()).unwrap_or_default()
    };
    let ids = |v: &Value| -> Vec<String> {
        v.as_array().map(|a| a.iter().filter_map(|x| x.as_str().map(str::to_owned)).collect()).unwrap_or_default()
    };
    let bases = ids(&f["bases"]);
    let (theta, sd, membership) = (nums(&f["theta"]), nums(&f["sd"]), nums(&f["membership"]));
    let n = bases.len();
    if theta.len() != n || sd.len() != n || membership.len() != n {
        return Some(format!("fit: bases, theta, sd and membership should have one entry per base ({n})"));
    }
    let k = f["k"].as_u64().unwrap_or(0) as usize;
    if n == 0 || k == 0 || k > n {
        return Some(format!(
            "fit: `k` is {k} but `bases` holds {n}: k must satisfy 1 ≤ k ≤ the bases ranked ({AGAIN})"
        ));
    }
    let show = crate::domain::fmt::value;
    let mut rates: Vec<(String, f64)> =
        membership.iter().enumerate().map(|(i, p)| (format!("fit.membership[{i}]"), *p)).collect();
    rates.extend(r["recall_at_k"].as_f64().map(|x| ("recall_at_k".to_owned(), x)));
    let mut nonneg: Vec<(String, f64)> = sd.iter().enumerate().map(|(i, s)| (format!("fit.sd[{i}]"), *s)).collect();
    nonneg.extend(r["spend_usd"].as_f64().map(|x| ("spend_usd".to_owned(), x)));
    for (i, j) in r["judges"].as_array().into_iter().flatten().enumerate() {
        nonneg.extend(j["spend_usd"].as_f64().map(|x| (format!("judges[{i}].spend_usd"), x)));
    }
    for (i, j) in f["judges"].as_array().into_iter().flatten().enumerate() {
        rates.extend(j["flip_rate"].as_f64().map(|x| (format!("fit.judges[{i}].flip_rate"), x)));
        rates.extend(
            j["agreement_with_trusted"].as_f64().map(|x| (format!("fit.judges[{i}].agreement_with_trusted"), x)),
        );
        nonneg.extend(j["kappa"]["sd"].as_f64().map(|x| (format!("fit.judges[{i}].kappa.sd"), x)));
        nonneg.extend(j["scale"]["sd"].as_f64().map(|x| (format!("fit.judges[{i}].scale.sd"), x)));
        for (m, c) in j["c"].as_array().into_iter().flatten().enumerate() {
            nonneg.extend(c["sd"].as_f64().map(|x| (format!("fit.judges[{i}].c[{m}].sd"), x)));
        }
    }
    if let Some((name, x)) = rates.iter().find(|(_, x)| !(0.0..=1.0).contains(x)) {
        return Some(format!("`{name}` is {}: a probability, recall or rate lies in [0, 1] ({AGAIN})", show(*x)));
    }
    if let Some((name, x)) = nonneg.iter().find(|(_, x)| !(*x >= 0.0 && x.is_finite())) {
        return Some(format!("`{name}` is {}: an sd or a spend is finite and ≥ 0 ({AGAIN})", show(*x)));
    }
    let c = &r["certified"];
    for name in ["topk", "topk_tied", "gold_topk", "certified.in", "certified.undecided", "certified.out"] {
        let v = match name.split_once('.') {
            Some((a, b)) => &r[a][b],
            None => &r[name],
        };
        if let Some(id) = ids(v).iter().find(|id| !bases.contains(id)) {
            return Some(format!("`{name}` names {id:?}, which `fit.bases` does not hold ({AGAIN})"));
        }
    }
    let eps = c["epsilon"].as_f64().unwrap_or(f64::NAN);
    if !(eps > 0.0 && eps < 0.5) {
        return Some(format!("`certified.epsilon` is {}: ε lies in (0, 0.5) ({AGAIN})", show(eps)));
    }
    let (inside, outside) = (ids(&c["in"]), ids(&c["out"]));
    if c["claimed"].as_bool() == Some(true) && inside.len() != k {
        return Some(format!(
            "`certified.claimed` is true with {} bases in `certified.in`: a certified top-{k} has {k} ({AGAIN})",
            inside.len()
        ));
    }
    let pi = |id: &str| bases.iter().position(|b| b == id).map_or(0.0, |i| membership[i]);
    if let Some(id) = inside.iter().find(|id| pi(id) < 1.0 - eps - 1e-9) {
        return Some(format!("`certified.in` names {id:?}, whose top-{k} membership π is below 1 − ε ({AGAIN})"));
    }
    if let Some(id) = outside.iter().find(|id| pi(id) > eps + 1e-9) {
        return Some(format!("`certified.out` names {id:?}, whose top-{k} membership π is above ε ({AGAIN})"));
    }
    None
}

impl PanelRunDir {
    /// Read result.json, verdicts.jsonl and panel_fits.jsonl of a panel run.
    ///
    /// # Errors
    /// [`CompareError::Read`] naming the file and the field.
    pub fn load(dir: &Path) -> Result<Self, CompareError> {
        Self::load_picking(dir, &|_| None)
    }

    /// [`PanelRunDir::load`], the panel's verdicts further picked by `pick` (as
    /// [`RunDir::load_picking`]): a command that can build the panel's judges keeps only the
    /// records of their cache keys as configured now, so verdicts of a judge edited under its
    /// name (another temperature, an edited template) are left out.
    ///
    /// # Errors
    /// As [`PanelRunDir::load`].
    pub fn load_picking(
        dir: &Path,
        pick: &dyn Fn(&[VerdictRecord]) -> Option<Vec<bool>>,
    ) -> Result<Self, CompareError> {
        let rp = dir.join("result.json");
        let bad = |msg: String| CompareError::Read { path: rp.clone(), msg };
        let text = std::fs::read_to_string(&rp).map_err(|e| bad(e.to_string()))?;
        let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| bad(format!("not JSON ({e})")))?;
        if let Some(msg) = panel_result_problem(&text) {
            return Err(bad(msg));
        }
        let field = |ptr: &str| v.pointer(ptr).ok_or_else(|| bad(format!("no {ptr} in a panel result")));
        let strs = |x: &serde_json::Value| -> Vec<String> {
            x.as_array().map(|a| a.iter().filter_map(|s| s.as_str().map(str::to_owned)).collect()).unwrap_or_default()
        };
        let names: Vec<String> = field("/judges")?
            .as_array()
            .map(|a| a.iter().filter_map(|j| j["name"].as_str().map(str::to_owned)).collect())
            .unwrap_or_default();
        let certified =
            serde_json::from_value(field("/certified")?.clone()).map_err(|e| bad(format!("/certified: {e}")))?;
        let vp = dir.join("verdicts.jsonl");
        let (verdicts, torn) = if vp.exists() {
            let (recs, _, warning) = read_records(&vp)?;
            (recs, warning.filter(|w| w.contains("torn last line")))
        } else {
            (Vec::new(), None)
        };
        let comparisons = v["comparisons"].as_u64().unwrap_or(0) as usize;
        short_verdicts(&vp, (verdicts.len(), verdicts.len()), torn.as_deref(), comparisons)?;
        let mut lines = Vec::new();
        let fp = dir.join(crate::report::PANEL_FITS);
        if let Ok(t) = std::fs::read_to_string(&fp) {
            for (i, line) in t.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
                match serde_json::from_str::<crate::report::PanelFitLine>(line) {
                    Ok(f) => lines.push(f),
                    Err(_) if i + 1 == t.lines().count() && !t.ends_with('\n') => {
                        tracing::warn!("{}:{}: ignored a torn last line", fp.display(), i + 1)
                    }
                    Err(e) => {
                        return Err(CompareError::Read { path: fp.clone(), msg: format!("line {}: {e}", i + 1) });
                    }
                }
            }
        }
        // The refits of the run's own configuration (run.json; without it, the last line's): a
        // folder reused by another panel keeps the older ones.
        let own = std::fs::read_to_string(dir.join("run.json"))
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .and_then(|v| Some(crate::report::panel_fits_id(v["fit"].as_str()?, v["judge"].as_str()?)))
            .or_else(|| lines.last().map(|l| l.config.clone()));
        let all = lines.len();
        let fits: Vec<_> = lines
            .into_iter()
            .filter(|l| Some(&l.config) == own.as_ref())
            .map(|l| (l.spend_usd, l.comparisons, l.topk))
            .collect();
        if let Some(note) = no_refits_note(&fp, fits.len(), all - fits.len(), comparisons) {
            tracing::warn!("{note}");
        }
        // The panel's own verdicts: each judge's records carry its name and key prefix (a
        // single-judge run in the same folder has neither).
        let verdicts: Vec<VerdictRecord> = verdicts
            .into_iter()
            .filter(|r| names.contains(&r.judge) && r.key.starts_with(&format!("{}:", r.judge)))
            .collect();
        let verdicts = match pick(&verdicts) {
            Some(keep) => verdicts.into_iter().zip(keep).filter_map(|(r, k)| k.then_some(r)).collect(),
            None => verdicts,
        };
        let own_usd: f64 =
            field("/judges")?.as_array().map(|a| a.iter().filter_map(|j| j["spend_usd"].as_f64()).sum()).unwrap_or(0.0);
        let num = |ptr: &str| field(ptr).map(|x| x.as_f64().unwrap_or(0.0));
        Ok(Self {
            dir: dir.to_owned(),
            name: v["name"].as_str().unwrap_or_default().to_owned(),
            pool_id: field("/fit/pool_id")?.as_str().unwrap_or_default().to_owned(),
            k: num("/fit/k")? as usize,
            judges: format!("panel ({})", names.join(", ")),
            spend_usd: own_usd,
            comparisons: num("/comparisons")? as usize,
            budget_passed: {
                let books = v.pointer("/folder_spend/spend_usd").and_then(serde_json::Value::as_f64).unwrap_or(own_usd);
                let overrun = v.get("overrun").is_some_and(|o| !o.is_null());
                crate::report::summary::BudgetPassed::of(books, v["max_usd"].as_f64(), overrun)
            },
            valid: num("/fit/comparisons")? as usize,
            topk: strs(field("/topk")?),
            gold: v.get("gold_topk").filter(|g| g.is_array()).map(|g| RecallTarget {
                topk: strs(g),
                tied: v.get("gold_tied").filter(|t| t.is_array()).map(strs).unwrap_or_default(),
            }),
            certified,
            verdicts,
            fits,
        })
    }

    /// A short name: the run's name, or the folder name.
    pub fn label(&self) -> String {
        if self.name.is_empty() {
            self.dir.file_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default()
        } else {
            self.name.clone()
        }
    }
}

/// Position flips of a verdict log: (flips, pairs with both orders valid).
pub fn flips(verdicts: &[VerdictRecord]) -> (usize, usize) {
    let mut y: HashMap<(&str, &str), f64> = HashMap::new();
    for r in verdicts {
        if let Some(v) = r.reply.y {
            y.entry((r.a.as_str(), r.b.as_str())).or_insert(v);
        }
    }
    let (mut f, mut n) = (0, 0);
    for (&(a, b), &yab) in &y {
        if a < b
            && let Some(&yba) = y.get(&(b, a))
        {
            n += 1;
            if (yab - 0.5) * (yba - 0.5) > 0.0 {
                f += 1;
            }
        }
    }
    (f, n)
}

/// |S ∩ T| / k with k = |T| (recall of S against target T; agreement when |S| = |T|).
pub fn overlap(s: &[String], t: &[String]) -> f64 {
    if t.is_empty() {
        return f64::NAN;
    }
    s.iter().filter(|x| t.contains(x)).count() as f64 / t.len() as f64
}

/// Recall of a run's point top-k S against T (or the agreement of two runs), |S ∩ T| / k, when
/// both name k bases; `None` when either names fewer (a tie shares its last places, or nothing
/// was compared): that run claims no top-k, as its summary says, so none is measured.
pub fn claimed_overlap(s: &[String], t: &[String], k: usize) -> Option<f64> {
    (k > 0 && s.len() == k && t.len() == k).then(|| overlap(s, t))
}

/// Recall against `target` at every refit of a run, placed at its cumulative spend (USD) and
/// comparisons: (spend, comparisons, recall).
pub fn recall_curve(run: &RunDir, target: &RecallTarget) -> RecallCurve {
    // Cumulative cost at the n-th valid verdict.
    let mut at_valid = vec![0.0];
    let mut cost = 0.0;
    for r in &run.verdicts {
        cost += r.reply.cost_usd;
        if r.reply.y.is_some() {
            at_valid.push(cost);
        }
    }
    // The reported ranking's point top-k at each refit, as the table's recall uses it (older
    // fits.jsonl files without the apparent top-k give the θ̂ one).
    let apparent = run.result.fit.reporting.reported == crate::analysis::ranking::RankingKind::Apparent;
    run.fits
        .iter()
        .filter_map(|f| {
            let spend = at_valid.get(f.comparisons).copied().unwrap_or(cost);
            let topk = if apparent { f.topk_apparent.as_ref().unwrap_or(&f.topk) } else { &f.topk };
            target.recall(topk, target.topk.len()).map(|r| (spend, f.comparisons, r))
        })
        .collect()
}

/// One run's line of the comparison.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct CompareRow {
    /// The run's `name`, or its folder name when the result has none; the folder as given
    /// when another compared run has the same name.
    pub run: String,
    /// The judge's `describe()` text as stored in the run's result.json.
    pub judge: String,
    /// Spend (USD).
    pub spend_usd: f64,
    /// Verdicts stored.
    pub comparisons: usize,
    /// Valid verdicts.
    pub valid: usize,
    /// Recall@k against the target top-k (gold or reference), if there is one.
    pub recall: Option<f64>,
    /// Point top-k (base ids).
    pub topk: Vec<String>,
    /// Of `topk`, the bases never compared: their places are the prior's, not the verdicts'.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub never_compared: Vec<String>,
    /// The certified top-k of the run's result (its ε, in / undecided / out sets).
    pub certified: crate::report::schema::CertifiedTopk,
    /// Position flips: pairs with both orders valid whose two verdicts favour the same slot, so the
    /// winner follows the position, not the item.
    pub flips: usize,
    /// Pairs with both orders valid.
    pub both_order_pairs: usize,
    /// flips / both_order_pairs (None when no pair has both orders).
    pub flip_rate: Option<f64>,
    /// Where `spend_usd` comes from.
    pub cost: CostSource,
    /// The run folder's books against `budget.max_usd`, when the books passed it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget_passed: Option<crate::report::summary::BudgetPassed>,
    /// What a gate's trusted judge cost in the run's folder (USD, beside `spend_usd`: a gated
    /// run's cost is both).
    #[serde(skip_serializing_if = "crate::report::schema::is_zero_usd")]
    pub gate_usd: f64,
}

/// The whole comparison.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Comparison {
    /// The `pool_id` all compared runs share.
    pub pool_id: String,
    /// k: the size of the top set that recall and membership refer to.
    pub k: usize,
    /// What recall is measured against: "gold" or `"reference <label>"` (None: no target).
    pub target: Option<String>,
    /// The base ids of the target top-k (gold or the reference run's), best first.
    pub target_topk: Option<Vec<String>>,
    /// The bases of a gold tie at the target's k-th place, which share the places the rest of
    /// `target_topk` leaves (recall counts any of them).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub target_tied: Vec<String>,
    /// One row per run.
    pub rows: Vec<CompareRow>,
    /// `agreement[i][j]` = |S_i ∩ S_j| / k; `None` when run i or j names fewer than k bases
    /// (no top-k claimed).
    pub agreement: Vec<Vec<Option<f64>>>,
}

/// Compare loaded runs (same pool and k), recall against `reference`'s top-k or the gold top-k.
///
/// # Errors
/// [`CompareError::Mismatch`] when pools or k differ.
pub fn compare(runs: &[RunDir], reference: Option<&RunDir>) -> Result<Comparison, CompareError> {
    compare_with_panels(runs, &[], reference)
}

/// [`compare`] with judge panels' runs beside the single-judge ones (their rows after them).
///
/// # Errors
/// [`CompareError::Mismatch`] when pools or k differ.
pub fn compare_with_panels(
    runs: &[RunDir],
    panels: &[PanelRunDir],
    reference: Option<&RunDir>,
) -> Result<Comparison, CompareError> {
    let mut all: Vec<(&Path, &str, usize)> =
        runs.iter().chain(reference).map(|r| (r.dir.as_path(), r.result.pool_id.as_str(), r.result.k)).collect();
    all.extend(panels.iter().map(|p| (p.dir.as_path(), p.pool_id.as_str(), p.k)));
    let &(first_dir, first_pool, first_k) =
        all.first().ok_or_else(|| CompareError::Mismatch("no runs to compare".into()))?;
    for &(dir, pool, k) in &all {
        if pool != first_pool || k != first_k {
            return Err(CompareError::Mismatch(format!(
                "run {} is pool {pool:?} with k = {k}, but run {} is pool {first_pool:?} with k = {first_k}; compare runs of the same pool and k",
                dir.display(),
                first_dir.display(),
            )));
        }
    }
    let (target, target_topk) = match reference {
        // A reference that reports no top-k (no verdict, or a withheld ranking) has nothing to
        // measure recall against.
        Some(r) if r.result.fit.topk.len() != r.result.k => {
            return Err(CompareError::Mismatch(format!(
                "--reference {}: that run reports no top-{} ({} of its bases named), so there is nothing to measure recall against; give a run with a ranking (its summary's point top-{})",
                r.dir.display(),
                r.result.k,
                r.result.fit.topk.len(),
                r.result.k
            )));
        }
        Some(r) => (Some(format!("reference {}", r.label())), Some(RecallTarget::exact(r.result.fit.topk.clone()))),
        None => match runs
            .iter()
            .find_map(|r| RecallTarget::gold(&r.result.fit))
            .or_else(|| panels.iter().find_map(|p| p.gold.clone()))
        {
            Some(g) => (Some("gold".to_string()), Some(g)),
            None => (None, None),
        },
    };
    let mut rows: Vec<CompareRow> = runs
        .iter()
        .map(|r| {
            let (f, n) = flips(&r.verdicts);
            CompareRow {
                run: r.label(),
                judge: r.result.judge.clone(),
                spend_usd: r.result.spend_usd,
                comparisons: r.result.comparisons,
                valid: r.result.valid,
                recall: target_topk.as_ref().and_then(|t| t.recall(&r.result.fit.topk, first_k)),
                topk: r.result.fit.topk.clone(),
                never_compared: (r.result.fit.topk.iter())
                    .filter(|b| r.result.fit.reporting.graph.never_compared.contains(b))
                    .cloned()
                    .collect(),
                certified: r.result.fit.reporting.certified.clone(),
                flips: f,
                both_order_pairs: n,
                flip_rate: (n > 0).then(|| f as f64 / n as f64),
                cost: r.cost_source(),
                budget_passed: crate::report::summary::BudgetPassed::of(
                    r.result.folder_spend.spend_usd,
                    r.result.folder_spend.max_usd,
                    r.result.overrun.is_some(),
                ),
                gate_usd: r.result.folder_spend.gate_trusted_usd,
            }
        })
        .collect();
    rows.extend(panels.iter().map(|p| {
        // Each judge's flips: two judges may each have asked one pair in both orders.
        let mut by_judge: BTreeMap<&str, Vec<VerdictRecord>> = BTreeMap::new();
        for r in &p.verdicts {
            by_judge.entry(r.judge.as_str()).or_default().push(r.clone());
        }
        let (f, n) = by_judge.values().map(|v| flips(v)).fold((0, 0), |(f, n), (a, b)| (f + a, n + b));
        CompareRow {
            run: p.label(),
            judge: p.judges.clone(),
            spend_usd: p.spend_usd,
            comparisons: p.comparisons,
            valid: p.valid,
            recall: target_topk.as_ref().and_then(|t| t.recall(&p.topk, first_k)),
            topk: p.topk.clone(),
            never_compared: Vec::new(),
            certified: p.certified.clone(),
            flips: f,
            both_order_pairs: n,
            flip_rate: (n > 0).then(|| f as f64 / n as f64),
            cost: if p.spend_usd > 0.0 { CostSource::Recorded } else { CostSource::None },
            budget_passed: p.budget_passed,
            gate_usd: 0.0,
        }
    }));
    let agreement =
        rows.iter().map(|a| rows.iter().map(|b| claimed_overlap(&a.topk, &b.topk, first_k)).collect()).collect();
    let (target_topk, target_tied) = target_topk.map_or((None, Vec::new()), |t| (Some(t.topk), t.tied));
    Ok(Comparison { pool_id: first_pool.to_owned(), k: first_k, target, target_topk, target_tied, rows, agreement })
}

impl Comparison {
    /// What recall is measured against, when anything.
    pub fn recall_target(&self) -> Option<RecallTarget> {
        self.target_topk.clone().map(|topk| RecallTarget { topk, tied: self.target_tied.clone() })
    }
}

/// compare.md text.
pub fn markdown(c: &Comparison) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# Comparison on pool {} (k = {})\n", md::code(&c.pool_id, false), c.k);
    match (&c.target, c.recall_target()) {
        (Some(t), Some(tk)) => {
            let _ = writeln!(
                s,
                "Recall@{} is measured against the {} top-{}: {}{}.\n",
                c.k,
                md::text(t),
                c.k,
                md::text(&tk.describe()),
                if tk.tied.is_empty() { "" } else { " (a tie in gold quality: any of them counts)" }
            );
        }
        _ => s.push_str("No gold quality and no reference run: recall is not available.\n\n"),
    }
    let _ = writeln!(
        s,
        "| run | judge | certified (ε) | spend (USD) | comparisons | valid | recall@{} | position flips | point top-{} |\n|---|---|---|---|---|---|---|---|---|",
        c.k, c.k
    );
    for r in &c.rows {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {:.4} | {} | {} | {} | {} | {} |",
            md::text(&r.run),
            md::text(&r.judge),
            certified_cell(&r.certified, c.k),
            r.spend_usd,
            r.comparisons,
            r.valid,
            r.recall
                .map(|v| format!("{v:.2}{}", if r.never_compared.is_empty() { "" } else { " †" }))
                .unwrap_or_else(|| "–".into()),
            r.flip_rate
                .map(|v| format!("{}/{} = {v:.2}", r.flips, r.both_order_pairs))
                .unwrap_or_else(|| "no pair in both orders".into()),
            topk_cell(&crate::report::summary::never_compared_marked(&r.topk, &r.never_compared), c.k)
        );
    }
    // A recall of bases never compared measures the prior's guess (the run's summary says so).
    for r in c.rows.iter().filter(|r| r.recall.is_some() && !r.never_compared.is_empty()) {
        let _ = writeln!(
            s,
            "\n† {}: {} of its top-{} never compared ({}): its recall is {}the prior's guess, not a result.",
            md::text(&r.run),
            r.never_compared.len(),
            c.k,
            r.never_compared.iter().map(|x| md::text(x)).collect::<Vec<_>>().join(", "),
            if r.never_compared.len() < r.topk.len() { "partly " } else { "" }
        );
    }
    if c.rows.iter().any(|r| r.topk.len() < c.k) {
        let _ = writeln!(
            s,
            "\n– : the run names fewer than {} bases (a tie shares its last places, or nothing was compared), so it claims no top-{} to measure.",
            c.k, c.k
        );
    }
    for r in &c.rows {
        if let Some(b) = r.budget_passed {
            let _ = writeln!(s, "\n{}: {}.", md::text(&r.run), b.line());
        }
    }
    // A gated run's cost is its judge's and its gate's (the paper's amortised anchors).
    for r in c.rows.iter().filter(|r| r.gate_usd > 0.0) {
        let _ = writeln!(
            s,
            "\n{}: its gate's trusted judge cost {:.4} more (in the run folder's books, not in the spend column): {:.4} in all.",
            md::text(&r.run),
            r.gate_usd,
            r.spend_usd + r.gate_usd
        );
    }
    let priced: Vec<String> =
        c.rows.iter().filter(|r| r.cost == CostSource::PriceTable).map(|r| md::text(&r.run)).collect();
    if !priced.is_empty() {
        let _ = writeln!(s, "\nSpend from the price table (not the verdict log) for: {}.", priced.join(", "));
    }
    let _ = writeln!(s, "\n## Top-{} agreement |S_a ∩ S_b| / k\n", c.k);
    s.push_str("| |");
    for r in &c.rows {
        let _ = write!(s, " {} |", md::text(&r.run));
    }
    s.push_str("\n|---|");
    s.push_str(&"---|".repeat(c.rows.len()));
    s.push('\n');
    for (r, row) in c.rows.iter().zip(&c.agreement) {
        let _ = write!(s, "| {} |", md::text(&r.run));
        for v in row {
            let _ = write!(s, " {} |", v.map_or_else(|| "–".into(), |v| format!("{v:.2}")));
        }
        s.push('\n');
    }
    s.push_str(
        "\nA position flip is a pair judged in both orders whose winner changes with the order \
         (the same slot wins twice); ties are not flips.\n",
    );
    s
}

/// The certified column: `top-3 (0.05): A, B, C`, `2 of 3 (0.05): A, B`, or `none (0.05)`.
/// A run's point top-k, with the places a tie leaves open, or "none claimed".
fn topk_cell(topk: &[String], k: usize) -> String {
    let ids: Vec<String> = topk.iter().map(|x| md::text(x)).collect();
    match k.saturating_sub(topk.len()) {
        0 => ids.join(", "),
        _ if topk.is_empty() => "none claimed".into(),
        1 => format!("{} + 1 place tied", ids.join(", ")),
        open => format!("{} + {open} places tied", ids.join(", ")),
    }
}

fn certified_cell(c: &crate::report::schema::CertifiedTopk, k: usize) -> String {
    let eps = crate::domain::fmt::num(c.epsilon);
    let ids = c.inside.iter().map(|x| md::text(x)).collect::<Vec<_>>().join(", ");
    if c.withheld.is_some() || c.inside.is_empty() {
        format!("none ({eps})")
    } else if c.claimed {
        format!("top-{k} ({eps}): {ids}")
    } else {
        format!("{} of {k} ({eps}): {ids}", c.inside.len())
    }
}

/// A run's recall curve: (spend USD, comparisons, recall@k) at each refit.
pub type RecallCurve = Vec<(f64, usize, f64)>;

/// The recall-against-spend plot (against comparisons when no run has a cost). A gated run's
/// line ends at its judge's spend plus its gate's trusted judge's (USD), at its reported recall.
///
/// # Errors
/// [`CompareError::Plot`].
pub fn plot(runs: &[RunDir], c: &Comparison) -> Result<Option<String>, CompareError> {
    plot_with_panels(runs, &[], c)
}

/// [`plot`] with judge panels' runs (their curves from panel_fits.jsonl).
///
/// # Errors
/// [`CompareError`] from the plot backend.
pub fn plot_with_panels(
    runs: &[RunDir],
    panels: &[PanelRunDir],
    c: &Comparison,
) -> Result<Option<String>, CompareError> {
    let Some(target) = &c.recall_target() else { return Ok(None) };
    // A gated run cost its judge's spend and its gate's: its curve ends at both, with the recall
    // its summary reports (the gate's choice of ranking), so it is not drawn cheaper than it was.
    let mut curves: Vec<(String, RecallCurve)> = runs
        .iter()
        .zip(&c.rows)
        .map(|(r, row)| {
            let mut curve = recall_curve(r, target);
            match row.recall {
                Some(recall) if row.gate_usd > 0.0 => {
                    curve.push((row.spend_usd + row.gate_usd, row.comparisons, recall));
                    (format!("{} (last point: with its gate)", r.label()), curve)
                }
                _ => (r.label(), curve),
            }
        })
        .collect();
    curves.extend(panels.iter().map(|p| {
        let curve =
            p.fits.iter().filter_map(|(usd, n, topk)| target.recall(topk, target.topk.len()).map(|r| (*usd, *n, r)));
        (p.label(), curve.collect::<RecallCurve>())
    }));
    let priced = curves.iter().any(|(_, v)| v.iter().any(|p| p.0 > 0.0));
    let series = curves
        .into_iter()
        .map(|(name, v)| Series {
            name,
            points: v.iter().map(|p| (if priced { p.0 } else { p.1 as f64 }, p.2)).collect(),
            err: None,
        })
        .collect();
    let chart = LineChart {
        title: format!("recall@{} against {}", c.k, if priced { "spend" } else { "comparisons (no run has a cost)" }),
        x_label: if priced { "cumulative spend (USD)".into() } else { "comparisons".into() },
        y_label: format!("recall@{} of the reported top-{} vs {}", c.k, c.k, c.target.clone().unwrap_or_default()),
        series,
        hlines: vec![],
        vlines: vec![],
        y_range: Some((0.0, 1.0)),
        legend_upper: false,
    };
    Ok(Some(plots::line_chart(&chart)?))
}

/// Per-base π over refits (for the report): base id → (comparisons, π) in refit order.
pub fn membership_paths(run: &RunDir) -> BTreeMap<String, Vec<(usize, f64)>> {
    let mut out: BTreeMap<String, Vec<(usize, f64)>> = BTreeMap::new();
    for f in &run.fits {
        for (id, p) in &f.membership {
            out.entry(id.clone()).or_default().push((f.comparisons, *p));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::verdict::JudgeReply;

    fn rec(a: &str, b: &str, y: Option<f64>) -> VerdictRecord {
        VerdictRecord {
            key: String::new(),
            pool_id: "p".into(),
            a: a.into(),
            b: b.into(),
            judge: String::new(),
            judge_settings: None,
            ts: 0,
            intent: None,
            reused_from: None,
            reply: JudgeReply { cost_usd: 0.0, ..JudgeReply::outcome(y) },
        }
    }

    #[test]
    fn flips_count_pairs_whose_winner_follows_the_slot() {
        let v = vec![
            rec("x", "y", Some(1.0)),
            rec("y", "x", Some(1.0)), // first wins twice: flip
            rec("x", "z", Some(1.0)),
            rec("z", "x", Some(0.0)), // x wins both: no flip
            rec("y", "z", Some(0.5)),
            rec("z", "y", Some(1.0)), // tie: no flip
            rec("w", "x", Some(0.0)), // one order only: not counted
            rec("w", "z", None),
            rec("z", "w", Some(1.0)), // invalid order: not counted
        ];
        assert_eq!(flips(&v), (1, 3));
    }
}

//! The frozen-protocol document (`topk-judge simulate FILE` with a `recorded:` section;
//! docs/replay.md): strategies replayed on a recorded judge's full verdict matrix. The pools and
//! the recording are read and checked here; the replays run in `sweep::frozen`.
//!
//! ```yaml
//! name: frozen-summeval        # outputs in <out_dir>/<name>/
//! out_dir: ../runs/sweeps      # relative to this file (default: runs/sweeps in the cwd)
//! k: 3
//! recorded:
//!   pools: ../data/pools.jsonl       # every pool in the file, or those listed in `ids`
//!   # ids: [p1, p2]
//!   verdicts: ../runs/full/verdicts.jsonl   # a recording (docs/replay.md), every ordered pair
//!   # judge: gpt-4o                  # which recorded judge, when the file holds several
//!   # prompting: CoT
//! strategies: [topk, round_robin, random]
//! models: [bias_aware]
//! budgets: [24, 48, all]
//! seeds: [0, 1, 2, 3, 4]             # acquisition seeds (Monte Carlo, tie-breaks, shuffles)
//! acquisition: {orders: both, refit_every: 8, mc_draws: 1000}
//! prior: {lambda_theta: 1.0, lambda_b: 0.1, lambda_kappa: 0.01}
//! # covariates: [{name: words, transform: zscore}]   # default as in `run`
//! # design: single                  # or paired (within-base pairs first)
//! threads: 0                         # 0 = all cores
//! ```

use super::sweep::{SweepAcquisition, SweepBudget};
use super::{ConfigError, sections};
use crate::acquire::StrategyKind;
use crate::analysis::design::{self, DesignKind};
use crate::domain::invalid::InvalidSetting;
use crate::domain::pool::{self, CovariateSpec, Covariates, Pool};
use crate::domain::verdict::Answer;
use crate::judge::replay::Recording;
use crate::model::Prior;
use crate::model::membership::point_topk;
use crate::model::summary::ModelKind;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// `recorded:` — the pools and their recording.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordedSource {
    /// Pool file (JSON Lines; relative to the protocol file).
    pub pools: PathBuf,
    /// Pool ids to use (default: every pool in the file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ids: Option<Vec<String>>,
    /// The recording (JSON Lines, docs/replay.md).
    pub verdicts: PathBuf,
    /// The recorded judge (`judge` field), when the file holds several.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge: Option<String>,
    /// Its prompting strategy (`prompting` field).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompting: Option<String>,
    /// Rank systems over the selected pools as prompts (docs/systems.md): the pools are merged
    /// into one run over many prompts, the recording is keyed per prompt (pool id = prompt, a and
    /// b = the systems' item ids), and only the recorded ordered pairs are candidates (a
    /// published benchmark's judgments need not cover every pair).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub systems: bool,
}

fn d_strategies() -> Vec<StrategyKind> {
    vec![StrategyKind::Topk, StrategyKind::RoundRobin]
}
fn d_models() -> Vec<ModelKind> {
    vec![ModelKind::BiasAware]
}
fn d_seeds() -> Vec<u64> {
    vec![0]
}

/// A frozen-protocol file as written (module docs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawFrozen {
    /// Name: outputs go to `<out_dir>/<name>/`.
    pub name: String,
    /// Output folder, relative to the file (default `runs/sweeps` in the working directory).
    #[serde(default)]
    pub out_dir: Option<PathBuf>,
    /// k of top-k (1 ≤ k < the bases of every pool).
    #[serde(deserialize_with = "crate::domain::serde_words::at_least_one")]
    pub k: usize,
    /// The pools and their recording.
    pub recorded: RecordedSource,
    /// Strategies (default `[topk, round_robin]`).
    #[serde(default = "d_strategies")]
    pub strategies: Vec<StrategyKind>,
    /// Models (default `[bias_aware]`).
    #[serde(default = "d_models")]
    pub models: Vec<ModelKind>,
    /// Budgets: comparisons or `all`.
    pub budgets: Vec<SweepBudget>,
    /// Acquisition seeds (default `[0]`).
    #[serde(default = "d_seeds")]
    pub seeds: Vec<u64>,
    /// Acquisition settings.
    #[serde(default)]
    pub acquisition: SweepAcquisition,
    /// Prior precisions; missing keys take the defaults (docs/model.md §2).
    #[serde(default)]
    pub prior: Prior,
    /// Covariates of the bias-aware model (default: `words` (zscore) when items have text, plus
    /// every key of the items' covariates, raw).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub covariates: Option<Vec<CovariateSpec>>,
    /// `single` (default) or `paired` (within-base pairs first).
    #[serde(default)]
    pub design: DesignKind,
    /// Worker threads (0 = all cores).
    #[serde(default, deserialize_with = "crate::domain::serde_words::whole")]
    pub threads: usize,
}

/// Recorded answers by ordered pair (item indices), and those pairs as the candidates.
pub type SparseAnswers = (std::collections::HashMap<(usize, usize), Answer>, crate::acquire::AllowedPairs);

/// One pool with its recorded answers, covariates and reference top-k sets.
#[derive(Debug, Clone)]
pub struct RecordedPool {
    /// The pool.
    pub pool: Pool,
    /// `answers[a * n + b]`: the recorded answer to (a first, b second) (empty for systems).
    pub answers: Vec<Answer>,
    /// Systems mode: the recorded answers by ordered pair, and those pairs as the only
    /// candidates.
    pub sparse: Option<SparseAnswers>,
    /// The bias-aware model's covariates.
    pub covariates: Covariates,
    /// Gold top-k (base indices), when every item has `quality`.
    pub gold: Option<Vec<usize>>,
}

/// A validated frozen protocol with its pools and recording loaded.
#[derive(Debug, Clone)]
pub struct Frozen {
    /// As written (budgets and seeds sorted).
    pub raw: RawFrozen,
    /// The file.
    pub path: PathBuf,
    /// Output folder, `<out_dir>/<name>`.
    pub out_dir: PathBuf,
    /// The recorded judge (label).
    pub judge: String,
    /// The pools.
    pub pools: Vec<RecordedPool>,
}

/// Whether a protocol file (YAML text) is a frozen-protocol file (it has `recorded:`).
pub fn is_frozen(text: &str) -> bool {
    #[derive(Deserialize)]
    struct Probe {
        #[serde(default)]
        recorded: Option<serde::de::IgnoredAny>,
    }
    crate::store::yaml::from_str::<Probe>(text).is_ok_and(|p| p.recorded.is_some())
}

impl Frozen {
    /// Read, parse and validate a frozen-protocol file, its pools and its recording.
    ///
    /// # Errors
    /// [`ConfigError`] naming the file, key or line and what was expected.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        Self::from_raw(super::read_document(path)?, path)
    }

    /// Validate a parsed file; paths resolve against `path`'s folder. The sections: name and
    /// lists, the cadence and prior, the pools and their recording, then per pool k, the
    /// covariates, the design and the recorded answers.
    ///
    /// # Errors
    /// As [`Frozen::load`].
    pub fn from_raw(mut raw: RawFrozen, path: &Path) -> Result<Self, ConfigError> {
        let inv = |e: InvalidSetting| ConfigError::invalid(path, e);
        sections::check_name(&raw.name, "").map_err(inv)?;
        sections::check_nonempty(&[
            ("strategies", raw.strategies.is_empty()),
            ("models", raw.models.is_empty()),
            ("budgets", raw.budgets.is_empty()),
            ("seeds", raw.seeds.is_empty()),
        ])
        .map_err(inv)?;
        sections::check_cadence(raw.acquisition.refit_every, raw.acquisition.mc_draws, "acquisition").map_err(inv)?;
        sections::check_prior(&raw.prior, "prior").map_err(inv)?;
        sections::check_distinct("strategies", &raw.strategies, sections::as_written).map_err(inv)?;
        sections::check_distinct("models", &raw.models, sections::as_written).map_err(inv)?;
        sections::check_distinct("budgets", &raw.budgets, ToString::to_string).map_err(inv)?;
        sections::check_distinct("seeds", &raw.seeds, ToString::to_string).map_err(inv)?;
        raw.budgets.sort();
        raw.seeds.sort_unstable();
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let src = &mut raw.recorded;
        src.pools = sections::resolve(&dir, &src.pools, "recorded.pools").map_err(inv)?;
        src.verdicts = sections::resolve(&dir, &src.verdicts, "recorded.verdicts").map_err(inv)?;
        let pools = selected_pools(src, path)?;
        let rec =
            Recording::read(&src.verdicts).map_err(|e| inv(InvalidSetting::new("recorded.verdicts", e.to_string())))?;
        let j = rec
            .select_one(src.judge.as_deref(), src.prompting.as_deref())
            .map_err(|m| inv(InvalidSetting::new("recorded.verdicts", m.to_string())))?;
        let mut out = Vec::with_capacity(pools.len());
        if src.systems {
            let pool = Pool::systems(crate::domain::fmt::count(pools.len(), "prompt"), pools)
                .map_err(|source| sections::pool_error_at(path, "recorded.pools", &raw.recorded.pools, source))?;
            out.push(recorded_systems(&raw, &rec, j, pool, path)?);
        } else {
            for pool in pools {
                out.push(recorded_pool(&raw, &rec, j, pool, path)?);
            }
        }
        let judge = rec.judges()[j].label();
        let out_dir = sections::out_folder(&dir, raw.out_dir.as_deref(), &raw.name, "runs/sweeps").map_err(inv)?;
        Ok(Self { raw, path: path.to_owned(), out_dir, judge, pools: out })
    }
}

/// The pools of `recorded.pools` that `recorded.ids` selects (every pool without it).
fn selected_pools(src: &RecordedSource, path: &Path) -> Result<Vec<Pool>, ConfigError> {
    let inv = |m: String| ConfigError::invalid(path, InvalidSetting::new("recorded.ids", m));
    let pools = crate::store::pool_file::read_pools(&src.pools)
        .map_err(|source| sections::pool_error_at(path, "recorded.pools", &src.pools, source))?;
    let Some(ids) = &src.ids else { return Ok(pools) };
    if ids.is_empty() {
        return Err(inv("the list is empty; expected pool ids".into()));
    }
    ids.iter()
        .map(|id| {
            pools
                .iter()
                .find(|p| &p.pool_id == id)
                .cloned()
                .ok_or_else(|| inv(format!("no pool {id:?} in {}", src.pools.display())))
        })
        .collect()
}

/// The bias-aware model's covariates of `pool` (the document's, or the pool's defaults), after
/// checking k against its bases.
fn checked_covariates(raw: &RawFrozen, pool: &Pool, path: &Path) -> Result<Covariates, ConfigError> {
    sections::check_k_in_pool(raw.k, pool).map_err(|e| ConfigError::invalid(path, e))?;
    let specs = raw.covariates.clone().unwrap_or_else(|| pool::default_covariates(pool));
    pool::build_covariates(pool, &specs)
        .map_err(|source| sections::pool_error_at(path, "recorded.pools", &raw.recorded.pools, source))
}

/// One pool checked against the document (k, covariates, design) with its recorded answers.
fn recorded_pool(
    raw: &RawFrozen,
    rec: &Recording,
    j: usize,
    pool: Pool,
    path: &Path,
) -> Result<RecordedPool, ConfigError> {
    let inv = |e: InvalidSetting| ConfigError::invalid(path, e);
    rec.check_pool(j, &pool).map_err(|m| inv(InvalidSetting::new("recorded.verdicts", m.to_string())))?;
    let covariates = checked_covariates(raw, &pool, path)?;
    design::validate(raw.design, &pool, &covariates).map_err(|m| inv(InvalidSetting::new("design", m.to_string())))?;
    let answers = answers(rec, j, &pool, raw.design).map_err(|m| inv(InvalidSetting::new("recorded.verdicts", m)))?;
    let gold = pool.base_quality().map(|g| point_topk(&g, raw.k));
    Ok(RecordedPool { pool, answers, sparse: None, covariates, gold })
}

/// The merged systems pool with its recorded answers (per prompt) and their pairs as the
/// candidates.
fn recorded_systems(
    raw: &RawFrozen,
    rec: &Recording,
    j: usize,
    pool: Pool,
    path: &Path,
) -> Result<RecordedPool, ConfigError> {
    let inv = |e: InvalidSetting| ConfigError::invalid(path, e);
    let covariates = checked_covariates(raw, &pool, path)?;
    let mut answers = std::collections::HashMap::new();
    for (p, prompt) in pool.prompts.iter().enumerate() {
        let Some(v) = rec.verdicts(j).get(&prompt.pool_id) else { continue };
        for ((a, b), e) in v {
            let idx = |id: &str| pool.item_index(&format!("{}/{id}", prompt.pool_id));
            let (Some(ia), Some(ib)) = (idx(a), idx(b)) else {
                return Err(inv(InvalidSetting::new(
                    "recorded.verdicts",
                    format!(
                        "{}:{}: prompt {:?} has no system {:?} or {:?}",
                        rec.path().display(),
                        e.line,
                        prompt.pool_id,
                        a,
                        b
                    ),
                )));
            };
            debug_assert_eq!(pool.item_prompt[ia], p);
            if pool.item_base[ia] != pool.item_base[ib] {
                answers.insert((ia, ib), e.y.map_or(Answer::Invalid, Answer::Verdict));
            }
        }
    }
    if answers.is_empty() {
        return Err(inv(InvalidSetting::new(
            "recorded.verdicts",
            format!(
                "{}: {} has no verdict on any of the {} prompts (pool_id = a prompt's pool id, a and b = system ids)",
                rec.path().display(),
                rec.judges()[j].label(),
                pool.prompts.len()
            ),
        )));
    }
    let allowed = crate::acquire::AllowedPairs::new(answers.keys().copied());
    let gold = pool.base_quality().map(|g| point_topk(&g, raw.k));
    Ok(RecordedPool { pool, answers: Vec::new(), sparse: Some((answers, allowed)), covariates, gold })
}

/// The recorded answer to every ordered pair the protocol may ask (between-base pairs, and
/// within-base pairs under `design: paired`), as an n × n table.
///
/// # Errors
/// A message with the number of missing pairs and the first one.
fn answers(rec: &Recording, j: usize, pool: &Pool, design: DesignKind) -> Result<Vec<Answer>, String> {
    let n = pool.n_items();
    let mut out = vec![Answer::Unavailable; n * n];
    let (mut needed, mut missing, mut first) = (0usize, 0usize, None);
    for a in 0..n {
        for b in 0..n {
            let cross = pool.item_base[a] != pool.item_base[b];
            if a == b || !(cross || design == DesignKind::Paired) {
                continue;
            }
            needed += 1;
            match rec.get(j, &pool.pool_id, &pool.items[a].id, &pool.items[b].id) {
                Some(e) => out[a * n + b] = e.y.map_or(Answer::Invalid, Answer::Verdict),
                None => {
                    missing += 1;
                    first.get_or_insert((a, b));
                }
            }
        }
    }
    if let Some((a, b)) = first {
        return Err(format!(
            "{}: {} lacks {missing} of the {needed} ordered pairs of pool {:?} (the first: {:?} shown first, {:?} second); the frozen protocol replays fully recorded pools: record every ordered pair once (e.g. `topk-judge run` with a budget of every pair)",
            rec.path().display(),
            rec.judges()[j].label(),
            pool.pool_id,
            pool.items[a].id,
            pool.items[b].id
        ));
    }
    Ok(out)
}

//! The frozen protocol on recorded verdicts (`topk-judge simulate FILE` with a `recorded:`
//! section): the paper's acquisition comparison ("When Can You Debias an LLM Judge?", App. A and
//! the acquisition tables) replayed on a real judge's verdicts instead of a synthetic one.
//!
//! Every ordered pair of every pool is judged once and recorded; each strategy is then run
//! ([`crate::run::sim::follow`], the runner's loop) at a list of budgets with several seeds, its
//! queries answered from the recording. Reported per strategy × model × budget, as mean ± se over
//! pools × seeds:
//! - **recall vs full data**: |Ŝ ∩ S_full| / k, where S_full is the point top-k of the same model
//!   fitted to every recorded verdict of the pool — what this judge would say with unlimited
//!   budget, so the recall measures the acquisition alone;
//! - **recall vs gold**, when the pool's items have `quality`;
//! - **paired differences** of the first strategy listed against each other one: per pool and
//!   seed, recall(first) − recall(other), then mean ± se of the differences (the same recording
//!   answers both, so the comparison is paired). Not at budget `all`, where every strategy
//!   returns the full-data fit and the difference is 0 by construction.
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
//!
//! A run of seed s on a pool is the run `topk-judge run` makes on that pool with the replay judge
//! and `acquisition.seed: s` (budget = `max_comparisons`); on a synthetic pool recorded with its
//! own seed it is the run `simulate` makes (tested).

use super::summary::MeanSe;
use super::{Budget, SweepAcquisition, SweepError};
use crate::acquire::StrategyKind;
use crate::analysis::design::{self, DesignKind};
use crate::domain::pool::{self, CovariateSpec, Covariates, Pool};
use crate::judge::replay::Recording;
use crate::model::Prior;
use crate::model::membership::{point_topk, recall_at_k};
use crate::model::summary::ModelKind;
use crate::report::plots::{self, LineChart, Series};
use crate::report::table::name;
use crate::run::sim::{self, Answer, PathInput, SimSettings};
use crate::store::config::{ConfigError, normalize};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write;
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
    pub budgets: Vec<Budget>,
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
    #[serde(default)]
    pub threads: usize,
}

/// One pool with its recorded answers, covariates and reference top-k sets.
#[derive(Debug, Clone)]
pub struct RecordedPool {
    /// The pool.
    pub pool: Pool,
    /// `answers[a * n + b]`: the recorded answer to (a first, b second).
    pub answers: Vec<Answer>,
    /// The bias-aware model's covariates.
    pub covariates: Covariates,
    /// Gold top-k (base indices), when every item has `quality`.
    pub gold: Option<Vec<usize>>,
}

/// A validated frozen protocol with its pools and recording loaded.
#[derive(Debug, Clone)]
pub struct Frozen {
    /// As written (budgets sorted and deduplicated).
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
    /// [`SweepError::Config`] naming the file, key or line and what was expected.
    pub fn load(path: &Path) -> Result<Self, SweepError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Io { path: path.to_owned(), source })?;
        let raw: RawFrozen = crate::store::yaml::from_file_text(&text, path)
            .map_err(|msg| ConfigError::Yaml { path: path.to_owned(), msg: msg.to_string() })?;
        Self::from_raw(raw, path)
    }

    /// Validate a parsed file; paths resolve against `path`'s folder.
    ///
    /// # Errors
    /// As [`Frozen::load`].
    pub fn from_raw(mut raw: RawFrozen, path: &Path) -> Result<Self, SweepError> {
        let inv = |key: &str, msg: String| {
            SweepError::from(ConfigError::Invalid { path: path.to_owned(), key: key.to_owned(), msg })
        };
        if raw.name.trim().is_empty() || raw.name.contains(['/', '\\']) || raw.name.starts_with('.') {
            return Err(inv("name", format!("{:?} is not a valid name (expected a plain folder name)", raw.name)));
        }
        for (key, empty) in [
            ("strategies", raw.strategies.is_empty()),
            ("models", raw.models.is_empty()),
            ("budgets", raw.budgets.is_empty()),
            ("seeds", raw.seeds.is_empty()),
        ] {
            if empty {
                return Err(inv(key, "the list is empty; expected at least one value".into()));
            }
        }
        let param =
            |section: &str, e: crate::model::params::ParamError| inv(&format!("{section}.{}", e.name), e.to_string());
        crate::model::params::check_refit_every(raw.acquisition.refit_every).map_err(|e| param("acquisition", e))?;
        crate::model::params::check_mc_draws(raw.acquisition.mc_draws).map_err(|e| param("acquisition", e))?;
        raw.prior.check().map_err(|e| param("prior", e))?;
        raw.budgets.sort();
        raw.budgets.dedup();
        raw.seeds.sort_unstable();
        raw.seeds.dedup();
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let src = &mut raw.recorded;
        src.pools = normalize(&dir.join(&src.pools));
        src.verdicts = normalize(&dir.join(&src.verdicts));
        let mut pools = crate::store::pool_file::read_pools(&src.pools).map_err(|source| ConfigError::Pool {
            path: path.to_owned(),
            pool_file: src.pools.clone(),
            source,
        })?;
        if let Some(ids) = &src.ids {
            if ids.is_empty() {
                return Err(inv("recorded.ids", "the list is empty; expected pool ids".into()));
            }
            let mut chosen = Vec::with_capacity(ids.len());
            for id in ids {
                let i = pools
                    .iter()
                    .position(|p| &p.pool_id == id)
                    .ok_or_else(|| inv("recorded.ids", format!("no pool {id:?} in {}", src.pools.display())))?;
                chosen.push(pools[i].clone());
            }
            pools = chosen;
        }
        let rec = Recording::read(&src.verdicts).map_err(|e| inv("recorded.verdicts", e.to_string()))?;
        let j = rec
            .select_one(src.judge.as_deref(), src.prompting.as_deref())
            .map_err(|m| inv("recorded.verdicts", m.to_string()))?;
        let mut out = Vec::with_capacity(pools.len());
        for pool in pools {
            if raw.k == 0 || raw.k >= pool.n_bases() {
                return Err(inv(
                    "k",
                    format!(
                        "{} must satisfy 1 ≤ k < number of bases ({}) in pool {:?}",
                        raw.k,
                        pool.n_bases(),
                        pool.pool_id
                    ),
                ));
            }
            rec.check_pool(j, &pool).map_err(|m| inv("recorded.verdicts", m.to_string()))?;
            let specs = raw.covariates.clone().unwrap_or_else(|| pool::default_covariates(&pool));
            let covariates = pool::build_covariates(&pool, &specs).map_err(|source| ConfigError::Pool {
                path: path.to_owned(),
                pool_file: src.pools.clone(),
                source,
            })?;
            design::validate(raw.design, &pool, &covariates).map_err(|m| inv("design", m.to_string()))?;
            let answers = answers(&rec, j, &pool, raw.design).map_err(|m| inv("recorded.verdicts", m))?;
            let gold = pool.base_quality().map(|g| point_topk(&g, raw.k));
            out.push(RecordedPool { pool, answers, covariates, gold });
        }
        let judge = rec.judges()[j].label();
        let out_dir = match &raw.out_dir {
            Some(o) => normalize(&dir.join(o).join(&raw.name)),
            None => PathBuf::from("runs/sweeps").join(&raw.name),
        };
        Ok(Self { raw, path: path.to_owned(), out_dir, judge, pools: out })
    }

    /// The simulation settings (profile off).
    pub fn settings(&self) -> SimSettings {
        let r = &self.raw;
        SimSettings {
            k: r.k,
            prior: r.prior,
            refit_every: r.acquisition.refit_every,
            orders: r.acquisition.orders,
            mc_draws: r.acquisition.mc_draws,
            profile: false,
        }
    }

    /// Budgets grouped into chains one path serves exactly (as [`super::Sweep::chains`]).
    pub fn chains(&self) -> Vec<Vec<usize>> {
        super::budget_chains(self.raw.budgets.iter().map(|b| b.as_usize()), self.raw.acquisition.refit_every)
    }
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

/// One row of rows.csv: one pool × seed × strategy × model × budget.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FrozenRow {
    /// Pool id.
    pub pool: String,
    /// Acquisition seed.
    pub seed: u64,
    /// The acquisition strategy that chose the comparisons of this row.
    pub strategy: StrategyKind,
    /// The model fitted to rank: `naive` (θ and κ) or `bias_aware` (θ, bias coefficients c, κ).
    pub model: ModelKind,
    /// Budget asked for.
    pub budget: Budget,
    /// Comparisons made.
    pub comparisons: usize,
    /// Recall@k against the full-data top-k of the same judge and model.
    pub recall_full: f64,
    /// Recall@k against the gold top-k (pools with `quality`).
    pub recall_gold: Option<f64>,
    /// The point top-k (base ids, best first, space-separated).
    pub topk: String,
}

/// The full-data top-k of every pool × model (index = pool, then model in file order).
///
/// # Errors
/// [`SweepError::RecordedFit`] when a fit fails.
pub fn full_data_topk(f: &Frozen) -> Result<Vec<Vec<Vec<usize>>>, SweepError> {
    let settings = f.settings();
    f.pools
        .iter()
        .map(|rp| {
            f.raw
                .models
                .iter()
                .map(|&model| {
                    let path = path_of(f, rp, StrategyKind::RoundRobin, model, 0, &[usize::MAX], &settings)?;
                    Ok(path.points[0].topk.clone())
                })
                .collect()
        })
        .collect()
}

fn path_of(
    f: &Frozen,
    rp: &RecordedPool,
    strategy: StrategyKind,
    model: ModelKind,
    seed: u64,
    budgets: &[usize],
    settings: &SimSettings,
) -> Result<sim::Path, SweepError> {
    let n = rp.pool.n_items();
    let none = Covariates::none(n);
    let cov = match model {
        ModelKind::Naive => &none,
        ModelKind::BiasAware => &rp.covariates,
    };
    let judge = |a: usize, b: usize| rp.answers[a * n + b];
    let input = PathInput { pool: &rp.pool, covariates: cov, design: f.raw.design, seed, judge: &judge };
    sim::follow(&input, strategy, budgets, settings).map_err(|(comparisons, source)| SweepError::RecordedFit {
        pool: rp.pool.pool_id.clone(),
        seed,
        strategy: name(&strategy),
        model: name(&model),
        comparisons,
        source,
    })
}

/// Run every pool × seed on `threads` workers (0 = all cores); `on_job` gets the jobs done.
///
/// # Errors
/// The first failing fit.
pub fn run(f: &Frozen, threads: usize, on_job: &(dyn Fn(usize) + Sync)) -> Result<Vec<FrozenRow>, SweepError> {
    let full = full_data_topk(f)?;
    let settings = f.settings();
    let chains = f.chains();
    let jobs: Vec<(usize, u64)> = (0..f.pools.len()).flat_map(|p| f.raw.seeds.iter().map(move |&s| (p, s))).collect();
    let results =
        super::parallel_jobs(&jobs, threads, on_job, |&(p, seed)| job(f, p, seed, &full[p], &settings, &chains))?;
    Ok(results.into_iter().flatten().collect())
}

/// All runs of one pool and seed, rows ordered by strategy, model, budget.
fn job(
    f: &Frozen,
    p: usize,
    seed: u64,
    full: &[Vec<usize>],
    settings: &SimSettings,
    chains: &[Vec<usize>],
) -> Result<Vec<FrozenRow>, SweepError> {
    let rp = &f.pools[p];
    let mut out = Vec::new();
    for &strategy in &f.raw.strategies {
        for (mi, &model) in f.raw.models.iter().enumerate() {
            for chain in chains {
                let path = path_of(f, rp, strategy, model, seed, chain, settings)?;
                for pt in path.points {
                    out.push(FrozenRow {
                        pool: rp.pool.pool_id.clone(),
                        seed,
                        strategy,
                        model,
                        budget: Budget::from_usize(pt.budget),
                        comparisons: pt.comparisons,
                        recall_full: recall_at_k(&pt.topk, &full[mi]),
                        recall_gold: rp.gold.as_ref().map(|g| recall_at_k(&pt.topk, g)),
                        topk: pt.topk.iter().map(|b| rp.pool.bases[*b].as_str()).collect::<Vec<_>>().join(" "),
                    });
                }
            }
        }
    }
    Ok(out)
}

/// Mean ± se of one strategy × model × budget over pools × seeds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FrozenCell {
    /// The acquisition strategy the cell averages.
    pub strategy: StrategyKind,
    /// The model fitted: `naive` or `bias_aware`.
    pub model: ModelKind,
    /// The budget asked for: a number of comparisons, or `all` ordered pairs of the pool.
    pub budget: Budget,
    /// Comparisons made.
    pub comparisons: MeanSe,
    /// Recall@k against the full-data top-k.
    pub recall_full: MeanSe,
    /// Recall@k against gold (pools with gold only).
    pub recall_gold: Option<MeanSe>,
}

/// Paired difference recall(a) − recall(b) over the same pools and seeds (a = the first strategy).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairedDiff {
    /// The model both strategies were fitted with: `naive` or `bias_aware`.
    pub model: ModelKind,
    /// The budget both strategies had: a number of comparisons, or `all` ordered pairs.
    pub budget: Budget,
    /// First strategy.
    pub a: StrategyKind,
    /// Second strategy.
    pub b: StrategyKind,
    /// recall_full(a) − recall_full(b).
    pub full: MeanSe,
    /// Pool × seed runs where a's recall vs full data is higher.
    pub a_better: usize,
    /// … where b's is higher.
    pub b_better: usize,
    /// recall_gold(a) − recall_gold(b) (pools with gold).
    pub gold: Option<MeanSe>,
}

/// summary.json of a frozen protocol.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FrozenSummary {
    /// The protocol's `name` from its YAML file; the outputs are in `<out_dir>/<name>/`.
    pub name: String,
    /// The recorded judge.
    pub judge: String,
    /// Number of recorded pools the protocol replayed.
    pub pools: usize,
    /// The acquisition seeds each pool was replayed with.
    pub seeds: Vec<u64>,
    /// k: the top-k size recall@k is measured at.
    pub k: usize,
    /// One per strategy × model × budget.
    pub cells: Vec<FrozenCell>,
    /// The first strategy against each other one, per model and budget (not `all`).
    pub diffs: Vec<PairedDiff>,
}

/// Means, standard errors and paired differences of the rows.
pub fn summarise(f: &Frozen, rows: &[FrozenRow]) -> FrozenSummary {
    let mut cells = Vec::new();
    let mut diffs = Vec::new();
    let get = |s: StrategyKind, m: ModelKind, b: Budget| -> Vec<&FrozenRow> {
        rows.iter().filter(|r| r.strategy == s && r.model == m && r.budget == b).collect()
    };
    for &strategy in &f.raw.strategies {
        for &model in &f.raw.models {
            for &budget in &f.raw.budgets {
                let rs = get(strategy, model, budget);
                if rs.is_empty() {
                    continue;
                }
                let gold: Vec<f64> = rs.iter().filter_map(|r| r.recall_gold).collect();
                cells.push(FrozenCell {
                    strategy,
                    model,
                    budget,
                    comparisons: MeanSe::of(&rs.iter().map(|r| r.comparisons as f64).collect::<Vec<_>>()),
                    recall_full: MeanSe::of(&rs.iter().map(|r| r.recall_full).collect::<Vec<_>>()),
                    recall_gold: (!gold.is_empty()).then(|| MeanSe::of(&gold)),
                });
            }
        }
    }
    let (a, others) = f.raw.strategies.split_first().expect("validated: at least one strategy");
    let a = *a;
    let key = |r: &FrozenRow| (r.pool.clone(), r.seed);
    for &model in &f.raw.models {
        for &budget in f.raw.budgets.iter().filter(|b| **b != Budget::All) {
            for &b in others {
                let rb: BTreeMap<(String, u64), &FrozenRow> =
                    get(b, model, budget).into_iter().map(|r| (key(r), r)).collect();
                let pairs: Vec<(&FrozenRow, &FrozenRow)> =
                    get(a, model, budget).into_iter().filter_map(|r| rb.get(&key(r)).map(|o| (r, *o))).collect();
                if pairs.is_empty() {
                    continue;
                }
                let d: Vec<f64> = pairs.iter().map(|(x, y)| x.recall_full - y.recall_full).collect();
                let g: Vec<f64> = pairs.iter().filter_map(|(x, y)| Some(x.recall_gold? - y.recall_gold?)).collect();
                diffs.push(PairedDiff {
                    model,
                    budget,
                    a,
                    b,
                    full: MeanSe::of(&d),
                    a_better: d.iter().filter(|v| **v > 0.0).count(),
                    b_better: d.iter().filter(|v| **v < 0.0).count(),
                    gold: (!g.is_empty()).then(|| MeanSe::of(&g)),
                });
            }
        }
    }
    FrozenSummary {
        name: f.raw.name.clone(),
        judge: f.judge.clone(),
        pools: f.pools.len(),
        seeds: f.raw.seeds.clone(),
        k: f.raw.k,
        cells,
        diffs,
    }
}

fn ms(m: &MeanSe) -> String {
    format!("{:.3} ± {:.3}", m.mean, m.se)
}

fn signed(m: &MeanSe) -> String {
    format!("{:+.3} ± {:.3}", m.mean + 0.0, m.se)
}

/// The frozen-protocol summary as Markdown (summary.md): one table row per strategy × budget.
pub fn markdown(s: &FrozenSummary) -> String {
    let mut t = String::new();
    let _ = writeln!(
        t,
        "# Frozen protocol \"{}\": {} on {} recorded pool(s), k = {}, seeds {:?}\n",
        s.name, s.judge, s.pools, s.k, s.seeds
    );
    t.push_str(
        "Recall@k against the **full-data top-k** (the same model fitted to every recorded verdict of the pool: \
         what this judge says with unlimited budget) and against the gold top-k when the pool has one; \
         mean ± se over pools × seeds.\n\n",
    );
    let gold = s.cells.iter().any(|c| c.recall_gold.is_some());
    t.push_str("| strategy | model | budget | comparisons | recall vs full data |");
    t.push_str(if gold { " recall vs gold |\n|---|---|---|---|---|---|\n" } else { "\n|---|---|---|---|---|\n" });
    for c in &s.cells {
        let _ = write!(
            t,
            "| {} | {} | {} | {:.1} | {} |",
            name(&c.strategy),
            name(&c.model),
            c.budget,
            c.comparisons.mean,
            ms(&c.recall_full)
        );
        if gold {
            let _ = write!(t, " {} |", c.recall_gold.as_ref().map(ms).unwrap_or_else(|| "–".into()));
        }
        t.push('\n');
    }
    if !s.diffs.is_empty() {
        t.push_str(
            "\n## Paired differences between strategies\n\nThe first strategy listed (a) against each other one (b): per pool and seed, recall(a) − recall(b) on the same recording; mean ± se of the differences, and the runs where each side is higher. (With every pair asked, all strategies return the full-data fit.)\n\n",
        );
        t.push_str("| model | budget | a − b | Δ recall vs full data | a higher / b higher |");
        t.push_str(if gold {
            " Δ recall vs gold |\n|---|---|---|---|---|---|\n"
        } else {
            "\n|---|---|---|---|---|\n"
        });
        for d in &s.diffs {
            let _ = write!(
                t,
                "| {} | {} | {} − {} | {} | {} / {} |",
                name(&d.model),
                d.budget,
                name(&d.a),
                name(&d.b),
                signed(&d.full),
                d.a_better,
                d.b_better
            );
            if gold {
                let _ = write!(t, " {} |", d.gold.as_ref().map(signed).unwrap_or_else(|| "–".into()));
            }
            t.push('\n');
        }
    }
    t
}

/// Recall against comparisons, one line per strategy, for each model (and target).
///
/// # Errors
/// [`plots::PlotError`].
pub fn plots(s: &FrozenSummary) -> Result<Vec<(String, String)>, plots::PlotError> {
    let mut out = Vec::new();
    let models: Vec<ModelKind> = s.cells.iter().fold(Vec::new(), |mut v, c| {
        if !v.contains(&c.model) {
            v.push(c.model);
        }
        v
    });
    let strategies: Vec<StrategyKind> = s.cells.iter().fold(Vec::new(), |mut v, c| {
        if !v.contains(&c.strategy) {
            v.push(c.strategy);
        }
        v
    });
    for model in models {
        for gold in [false, true] {
            let series: Vec<Series> = strategies
                .iter()
                .filter_map(|&st| {
                    let cs: Vec<&FrozenCell> =
                        s.cells.iter().filter(|c| c.model == model && c.strategy == st).collect();
                    let pts: Vec<(f64, MeanSe)> = cs
                        .iter()
                        .filter_map(|c| {
                            let m = if gold { c.recall_gold? } else { c.recall_full };
                            Some((c.comparisons.mean, m))
                        })
                        .collect();
                    (!pts.is_empty()).then(|| Series {
                        name: name(&st),
                        points: pts.iter().map(|(x, m)| (*x, m.mean)).collect(),
                        err: Some(pts.iter().map(|(_, m)| m.se).collect()),
                    })
                })
                .collect();
            if series.is_empty() {
                continue;
            }
            let target = if gold { "gold" } else { "full data" };
            let chart = LineChart {
                title: format!("{}: recall@{} vs {target} ({} model)", s.judge, s.k, name(&model)),
                x_label: "comparisons".into(),
                y_label: format!("recall@{} vs {target} (mean ± se)", s.k),
                series,
                hlines: vec![],
                vlines: vec![],
                y_range: Some((0.0, 1.0)),
                legend_upper: false,
            };
            let file = format!("recall_vs_budget_{}_{}.svg", name(&model), if gold { "gold" } else { "full" });
            out.push((file, plots::line_chart(&chart)?));
        }
    }
    Ok(out)
}

/// Write rows.csv, summary.json, summary.md and the plots into `dir`; returns the summary.
///
/// # Errors
/// [`SweepError::Write`] naming the file.
pub fn write_outputs(f: &Frozen, rows: &[FrozenRow], dir: &Path) -> Result<FrozenSummary, SweepError> {
    let werr = |path: &Path, msg: String| SweepError::Write { path: path.to_owned(), msg };
    std::fs::create_dir_all(dir).map_err(|e| werr(dir, e.to_string()))?;
    let rows_path = dir.join("rows.csv");
    let mut w = csv::Writer::from_path(&rows_path).map_err(|e| werr(&rows_path, e.to_string()))?;
    for r in rows {
        w.serialize(r).map_err(|e| werr(&rows_path, e.to_string()))?;
    }
    w.flush().map_err(|e| werr(&rows_path, e.to_string()))?;
    let s = summarise(f, rows);
    let write = |p: PathBuf, text: &str| std::fs::write(&p, text).map_err(|e| werr(&p, e.to_string()));
    write(dir.join("summary.json"), &(serde_json::to_string_pretty(&s).expect("serialisable") + "\n"))?;
    write(dir.join("summary.md"), &markdown(&s))?;
    for (file, svg) in plots(&s).map_err(|e| werr(dir, e.to_string()))? {
        write(dir.join(file), &svg)?;
    }
    Ok(s)
}

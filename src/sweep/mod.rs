//! `topk-judge simulate SWEEP.yaml`: synthetic pools (docs/model.md §7) × strategies × models × budgets ×
//! seeds, each run being Algorithm 1 itself ([`crate::run::sim::run_path`]), on all cores.
//!
//! A sweep file ([`RawSweep`], unknown keys are errors):
//!
//! ```yaml
//! name: sweep-rho            # outputs go to <out_dir>/<name>/
//! out_dir: ../runs/sweeps    # relative to the sweep file (default: runs/sweeps in the cwd)
//! k: 5
//! pools:                     # the grid: every combination of the lists below
//!   n: 30                    # bases per pool
//!   count: 200               # pools per grid cell (replicates)
//!   seed: 1                  # replicate i uses pool seed `seed + i` in every cell
//!   rho: [0.0, 0.2, 0.4]     # corr(θ, x)
//!   c_star: [1.0]            # true bias coefficient (logits per sd of x)
//!   kappa_star: [0.5]        # true position effect (logits)
//!   temperature: [1.0]
//!   paired: [false]          # two renderings (x = 0/1) per base
//! strategies: [topk, round_robin]
//! models: [naive, bias_aware]
//! budgets: [40, 120, all]    # comparisons, or `all` ordered pairs
//! acquisition: {orders: both, refit_every: 8, mc_draws: 1000}
//! prior: {lambda_theta: 1.0, lambda_b: 0.1, lambda_kappa: 0.01}
//! profile: false             # profile-likelihood range over c at every checkpoint
//! threads: 0                 # 0 = all cores
//! ```
//!
//! Replicate i has the same pool seed in every grid cell (common random numbers: the same θ, ε
//! and verdict uniforms), so differences between cells, models and strategies are paired by pool.
//!
//! Outputs ([`write_outputs`]): `rows.csv` (one row per pool × strategy × model × budget),
//! `by_rank.csv` (mean queries per base by gold rank), `summary.json` and `summary.md` (means and
//! standard errors, correction benefit and its crossing in ρ, strategy differences, boundary
//! shares relative to round_robin) and SVG plots.

pub mod frozen;
pub mod pipeline;
pub mod summary;
pub mod systems;

use crate::acquire::{Orders, StrategyKind};
use crate::analysis::synth::{SynthSpec, generate};
use crate::model::Prior;
use crate::model::summary::ModelKind;
use crate::run::sim::{self, Checkpoint, SimError, SimSettings};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Errors of a sweep.
#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    /// The sweep file is unreadable, not valid YAML, has an unknown key, or breaks a rule (the
    /// same messages as a run config: file, line/column or key, found vs expected).
    #[error(transparent)]
    Config(#[from] crate::store::config::ConfigError),
    /// A simulated run failed.
    #[error(transparent)]
    Sim(#[from] SimError),
    /// A fit of the frozen protocol failed on a recorded pool.
    #[error("pool {pool:?}, seed {seed}, {strategy}, {model} model, after {comparisons} valid verdicts: {source}")]
    RecordedFit {
        /// Pool id.
        pool: String,
        /// Acquisition seed.
        seed: u64,
        /// The acquisition strategy of the failing replay (`topk`, `d_optimal`, `random`, …).
        strategy: String,
        /// The model being fitted: `naive` (θ and κ) or `bias_aware` (θ, c and κ).
        model: String,
        /// Valid verdicts at the failing fit.
        comparisons: usize,
        /// Why the Bradley–Terry MAP fit failed (e.g. the Newton iteration did not converge).
        source: crate::model::FitError,
    },
    /// Writing an output.
    #[error("{path}: {msg}")]
    Write {
        /// The output file (rows.csv, summary.json, a plot, …) that could not be written.
        path: PathBuf,
        /// The I/O or serialisation error, as text.
        msg: String,
    },
}

/// A budget: a number of comparisons, or every ordered pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Budget {
    /// At most this many comparisons.
    Comparisons(usize),
    /// Every ordered pair of the pool.
    All,
}

impl Budget {
    /// As a number of comparisons (`usize::MAX` for all pairs).
    pub fn as_usize(self) -> usize {
        match self {
            Budget::Comparisons(n) => n,
            Budget::All => usize::MAX,
        }
    }

    /// From a number of comparisons (`usize::MAX` = all pairs).
    pub fn from_usize(n: usize) -> Self {
        if n == usize::MAX { Budget::All } else { Budget::Comparisons(n) }
    }
}

impl fmt::Display for Budget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Budget::Comparisons(n) => write!(f, "{n}"),
            Budget::All => f.write_str("all"),
        }
    }
}

impl Serialize for Budget {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Budget::Comparisons(n) => s.serialize_u64(*n as u64),
            Budget::All => s.serialize_str("all"),
        }
    }
}

impl<'de> Deserialize<'de> for Budget {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Budget;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a positive number of comparisons or \"all\"")
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Budget, E> {
                if v == 0 {
                    return Err(E::custom("budget 0: expected a positive number of comparisons or \"all\""));
                }
                Ok(Budget::Comparisons(v as usize))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Budget, E> {
                if v <= 0 {
                    return Err(E::custom(format!("budget {v}: expected a positive number of comparisons or \"all\"")));
                }
                self.visit_u64(v as u64)
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Budget, E> {
                if v == "all" {
                    Ok(Budget::All)
                } else if let Ok(n) = v.parse::<u64>() {
                    self.visit_u64(n)
                } else {
                    Err(E::custom(format!("budget {v:?}: expected a positive number of comparisons or \"all\"")))
                }
            }
        }
        d.deserialize_any(V)
    }
}

/// The grid of synthetic pools (docs/model.md §7).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PoolGrid {
    /// Bases per pool, N (default 30).
    #[serde(default = "d_n")]
    pub n: usize,
    /// Pools per grid cell (default 200).
    #[serde(default = "d_count")]
    pub count: usize,
    /// Replicate i uses pool seed `seed + i` (default 0).
    #[serde(default)]
    pub seed: u64,
    /// corr(θ, x) values (default `[0]`).
    #[serde(default = "d_rho")]
    pub rho: Vec<f64>,
    /// True bias coefficients c* (default `[1]`).
    #[serde(default = "d_one")]
    pub c_star: Vec<f64>,
    /// True position effects κ* (default `[0.5]`).
    #[serde(default = "d_kappa")]
    pub kappa_star: Vec<f64>,
    /// Temperatures (default `[1]`).
    #[serde(default = "d_one")]
    pub temperature: Vec<f64>,
    /// Paired design or not (default `[false]`).
    #[serde(default = "d_paired")]
    pub paired: Vec<bool>,
}

fn d_n() -> usize {
    30
}
fn d_count() -> usize {
    200
}
fn d_rho() -> Vec<f64> {
    vec![0.0]
}
fn d_one() -> Vec<f64> {
    vec![1.0]
}
fn d_kappa() -> Vec<f64> {
    vec![0.5]
}
fn d_paired() -> Vec<bool> {
    vec![false]
}

impl Default for PoolGrid {
    fn default() -> Self {
        Self {
            n: d_n(),
            count: d_count(),
            seed: 0,
            rho: d_rho(),
            c_star: d_one(),
            kappa_star: d_kappa(),
            temperature: d_one(),
            paired: d_paired(),
        }
    }
}

/// Acquisition settings of a sweep (docs/model.md §3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepAcquisition {
    /// `both` (default) or `single`.
    #[serde(default)]
    pub orders: Orders,
    /// Queries per refit, R (default 8).
    #[serde(default = "crate::model::params::default_refit_every")]
    pub refit_every: usize,
    /// Monte-Carlo draws for top-k membership (default 1000).
    #[serde(default = "crate::model::params::default_mc_draws")]
    pub mc_draws: usize,
}

impl Default for SweepAcquisition {
    fn default() -> Self {
        Self {
            orders: Orders::Both,
            refit_every: crate::model::params::DEFAULT_REFIT_EVERY,
            mc_draws: crate::model::params::DEFAULT_MC_DRAWS,
        }
    }
}

fn d_k() -> usize {
    5
}
fn d_strategies() -> Vec<StrategyKind> {
    vec![StrategyKind::Topk]
}
fn d_models() -> Vec<ModelKind> {
    vec![ModelKind::BiasAware]
}

/// A sweep file as written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSweep {
    /// Sweep name: outputs go to `<out_dir>/<name>/`.
    pub name: String,
    /// Output folder, relative to the sweep file (default `runs/sweeps` in the working directory).
    #[serde(default)]
    pub out_dir: Option<PathBuf>,
    /// k of top-k (default 5).
    #[serde(default = "d_k")]
    pub k: usize,
    /// The pool grid.
    #[serde(default)]
    pub pools: PoolGrid,
    /// Strategies (default `[topk]`).
    #[serde(default = "d_strategies")]
    pub strategies: Vec<StrategyKind>,
    /// Models (default `[bias_aware]`).
    #[serde(default = "d_models")]
    pub models: Vec<ModelKind>,
    /// Budgets: comparisons or `all`.
    pub budgets: Vec<Budget>,
    /// Acquisition settings.
    #[serde(default)]
    pub acquisition: SweepAcquisition,
    /// Prior precisions (docs/model.md §2); missing keys take the defaults.
    #[serde(default)]
    pub prior: Prior,
    /// Compute the profile-likelihood range over c at every checkpoint (bias-aware model).
    #[serde(default)]
    pub profile: bool,
    /// Worker threads (0 = all cores).
    #[serde(default)]
    pub threads: usize,
}

/// A validated sweep.
#[derive(Debug, Clone)]
pub struct Sweep {
    /// As written (deduplicated, sorted budgets).
    pub raw: RawSweep,
    /// The sweep's YAML file; relative paths in it are resolved against its folder.
    pub path: PathBuf,
    /// Output folder, `<out_dir>/<name>`.
    pub out_dir: PathBuf,
}

impl Sweep {
    /// Read, parse and validate a sweep file.
    ///
    /// # Errors
    /// [`SweepError`] naming the file, key or line and what was expected.
    pub fn load(path: &Path) -> Result<Self, SweepError> {
        let text = std::fs::read_to_string(path)
            .map_err(|source| crate::store::config::ConfigError::Io { path: path.to_owned(), source })?;
        let raw: RawSweep = crate::store::yaml::from_file_text(&text, path)
            .map_err(|msg| crate::store::config::ConfigError::Yaml { path: path.to_owned(), msg: msg.to_string() })?;
        Self::from_raw(raw, path)
    }

    /// Validate a parsed sweep; `out_dir` resolves against `path`'s folder.
    ///
    /// # Errors
    /// [`SweepError::Config`] (a `ConfigError::Invalid` naming the key).
    pub fn from_raw(mut raw: RawSweep, path: &Path) -> Result<Self, SweepError> {
        let inv = |key: &str, msg: String| {
            SweepError::from(crate::store::config::ConfigError::Invalid {
                path: path.to_owned(),
                key: key.to_owned(),
                msg,
            })
        };
        if raw.name.trim().is_empty() || raw.name.contains(['/', '\\']) || raw.name.starts_with('.') {
            return Err(inv(
                "name",
                format!("{:?} is not a valid sweep name (expected a plain folder name)", raw.name),
            ));
        }
        let g = &raw.pools;
        if !(2..=crate::analysis::synth::MAX_SYNTH_N).contains(&g.n) {
            return Err(inv(
                "pools.n",
                format!("{} must be in 2..={} (the largest synthetic pool)", g.n, crate::analysis::synth::MAX_SYNTH_N),
            ));
        }
        if raw.k == 0 || raw.k >= g.n {
            return Err(inv("k", format!("{} must satisfy 1 ≤ k < pools.n ({})", raw.k, g.n)));
        }
        if g.count == 0 {
            return Err(inv("pools.count", "0 must be ≥ 1".into()));
        }
        for (key, empty) in [
            ("pools.rho", g.rho.is_empty()),
            ("pools.c_star", g.c_star.is_empty()),
            ("pools.kappa_star", g.kappa_star.is_empty()),
            ("pools.temperature", g.temperature.is_empty()),
            ("pools.paired", g.paired.is_empty()),
            ("strategies", raw.strategies.is_empty()),
            ("models", raw.models.is_empty()),
            ("budgets", raw.budgets.is_empty()),
        ] {
            if empty {
                return Err(inv(key, "the list is empty; expected at least one value".into()));
            }
        }
        if let Some(r) = g.rho.iter().find(|r| r.is_nan() || r.abs() > 1.0) {
            return Err(inv("pools.rho", format!("{r} must be in [-1, 1]")));
        }
        if let Some(t) = g.temperature.iter().find(|t| !(**t > 0.0 && t.is_finite())) {
            return Err(inv("pools.temperature", format!("{t} must be > 0")));
        }
        for (key, v) in [("pools.c_star", &g.c_star), ("pools.kappa_star", &g.kappa_star)] {
            if let Some(x) = v.iter().find(|x| !x.is_finite()) {
                return Err(inv(key, format!("{x} must be finite")));
            }
        }
        let param =
            |section: &str, e: crate::model::params::ParamError| inv(&format!("{section}.{}", e.name), e.to_string());
        crate::model::params::check_refit_every(raw.acquisition.refit_every).map_err(|e| param("acquisition", e))?;
        crate::model::params::check_mc_draws(raw.acquisition.mc_draws).map_err(|e| param("acquisition", e))?;
        raw.prior.check().map_err(|e| param("prior", e))?;
        raw.budgets.sort();
        raw.budgets.dedup();
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let out_dir = match &raw.out_dir {
            Some(o) => dir.join(o).join(&raw.name),
            None => PathBuf::from("runs/sweeps").join(&raw.name),
        };
        Ok(Self { raw, path: path.to_owned(), out_dir })
    }

    /// The simulation settings.
    pub fn settings(&self) -> SimSettings {
        let r = &self.raw;
        SimSettings {
            k: r.k,
            prior: r.prior,
            refit_every: r.acquisition.refit_every,
            orders: r.acquisition.orders,
            mc_draws: r.acquisition.mc_draws,
            profile: r.profile,
        }
    }

    /// The grid cells in a fixed order (ρ slowest … paired fastest).
    pub fn cells(&self) -> Vec<Cell> {
        let g = &self.raw.pools;
        let mut v = Vec::new();
        for &rho in &g.rho {
            for &c_star in &g.c_star {
                for &kappa_star in &g.kappa_star {
                    for &temperature in &g.temperature {
                        for &paired in &g.paired {
                            v.push(Cell { n: g.n, rho, c_star, kappa_star, temperature, paired });
                        }
                    }
                }
            }
        }
        v
    }

    /// Budgets grouped into chains that one simulated path can serve exactly: every budget of a
    /// chain but the last is a multiple of `refit_every` (see [`crate::run::sim`]).
    pub fn chains(&self) -> Vec<Vec<usize>> {
        budget_chains(self.raw.budgets.iter().map(|b| b.as_usize()), self.raw.acquisition.refit_every)
    }
}

/// One cell of the pool grid.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Cell {
    /// Number of bases M per synthetic pool.
    pub n: usize,
    /// corr(θ, x).
    pub rho: f64,
    /// True c*.
    pub c_star: f64,
    /// True κ*.
    pub kappa_star: f64,
    /// Temperature of the true judge: η is divided by it (logit scale).
    pub temperature: f64,
    /// Whether each base has two renderings sharing θ, asked within-base first (docs/model.md §6).
    pub paired: bool,
}

impl Cell {
    /// The synthetic pool spec of replicate seed `seed`.
    pub fn spec(&self, seed: u64) -> SynthSpec {
        SynthSpec {
            n: self.n,
            rho: self.rho,
            c_star: self.c_star,
            kappa_star: self.kappa_star,
            temperature: self.temperature,
            paired: self.paired,
            seed,
        }
    }
}

/// One row of rows.csv: one pool × strategy × model × budget.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// Index of the grid cell (order of [`Sweep::cells`]).
    pub cell: usize,
    /// Replicate index within the cell.
    pub pool: usize,
    /// Seed of the synthetic pool (replicate) this row was run on.
    pub seed: u64,
    /// Number of bases M in the pool.
    pub n: usize,
    /// corr(θ, x).
    pub rho: f64,
    /// True c*.
    pub c_star: f64,
    /// True κ*.
    pub kappa_star: f64,
    /// Temperature of the true judge: η is divided by it (logit scale).
    pub temperature: f64,
    /// Whether the pool uses the paired rendering design (docs/model.md §6).
    pub paired: bool,
    /// Acquisition strategy (`topk`, `round_robin`, …).
    pub strategy: StrategyKind,
    /// Model kind (`naive` or `bias_aware`).
    pub model: ModelKind,
    /// Budget asked for.
    pub budget: Budget,
    /// Comparisons made.
    pub comparisons: usize,
    /// Recall@k against the gold top-k.
    pub recall: f64,
    /// Share of queries touching the base of gold rank k or k + 1 ([`crate::run::sim`]).
    pub boundary_share: f64,
    /// Share of queries with exactly one base in the gold top-k.
    pub straddle_share: f64,
    /// Share of queries with both bases in gold ranks k − 2 … k + 3.
    pub window_share: f64,
    /// ĉ (bias-aware model).
    pub c_hat: Option<f64>,
    /// Estimated position effect κ̂ at the end of the run (logits).
    pub kappa_hat: f64,
    /// Profile-likelihood range over c (nats), when computed.
    pub profile_range_nats: Option<f64>,
}

/// The results of a sweep: rows in a fixed order, and queries by gold rank.
#[derive(Debug, Clone)]
pub struct SweepResult {
    /// Rows ordered by cell, replicate, strategy, model, budget.
    pub rows: Vec<Row>,
    /// Per row (same order): queries involving the base of each gold rank.
    pub queries_by_rank: Vec<Vec<usize>>,
}

/// Run every pool of the sweep on `threads` worker threads (0 = all cores). `on_pool` is called
/// after each pool with the number of pools done.
///
/// # Errors
/// The first [`SimError`] (the other workers stop early).
pub fn run(sweep: &Sweep, threads: usize, on_pool: &(dyn Fn(usize) + Sync)) -> Result<SweepResult, SweepError> {
    let cells = sweep.cells();
    let count = sweep.raw.pools.count;
    let jobs: Vec<(usize, usize)> = (0..cells.len()).flat_map(|c| (0..count).map(move |i| (c, i))).collect();
    let settings = sweep.settings();
    let chains = sweep.chains();
    let results =
        parallel_jobs(&jobs, threads, on_pool, |&(c, i)| run_pool(sweep, &cells[c], c, i, &settings, &chains))?;
    let (rows, queries_by_rank) = results.into_iter().flatten().unzip();
    Ok(SweepResult { rows, queries_by_rank })
}

/// Budgets (in the order given) grouped into chains that one simulated path serves exactly:
/// every budget of a chain but the last is a multiple of `refit_every` (see [`crate::run::sim`]).
pub fn budget_chains(budgets: impl Iterator<Item = usize>, refit_every: usize) -> Vec<Vec<usize>> {
    let mut chains: Vec<Vec<usize>> = Vec::new();
    for b in budgets {
        match chains.last_mut() {
            Some(c) if c.last().is_some_and(|l| l % refit_every == 0) => c.push(b),
            _ => chains.push(vec![b]),
        }
    }
    chains
}

/// Run `job` on every element of `jobs` on `threads` worker threads (0 = all cores) and return
/// the results in the order of `jobs`. `on_done` is called after each job with the number done.
/// Used by the synthetic sweep and the frozen protocol.
///
/// # Errors
/// The first error a job returns (the other workers stop before their next job).
pub fn parallel_jobs<J: Sync, R: Send, E: Send>(
    jobs: &[J],
    threads: usize,
    on_done: &(dyn Fn(usize) + Sync),
    job: impl Fn(&J) -> Result<R, E> + Sync,
) -> Result<Vec<R>, E> {
    let threads =
        if threads == 0 { std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1) } else { threads }
            .min(jobs.len().max(1));
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let results: Mutex<Vec<(usize, R)>> = Mutex::new(Vec::with_capacity(jobs.len()));
    let first_error: Mutex<Option<E>> = Mutex::new(None);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                loop {
                    if failed.load(Ordering::Relaxed) {
                        return;
                    }
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(j) = jobs.get(i) else { return };
                    match job(j) {
                        Ok(r) => results.lock().expect("no worker panics").push((i, r)),
                        Err(e) => {
                            failed.store(true, Ordering::Relaxed);
                            first_error.lock().expect("no worker panics").get_or_insert(e);
                            return;
                        }
                    }
                    on_done(done.fetch_add(1, Ordering::Relaxed) + 1);
                }
            });
        }
    });
    if let Some(e) = first_error.into_inner().expect("no worker panics") {
        return Err(e);
    }
    let mut results = results.into_inner().expect("no worker panics");
    results.sort_by_key(|(i, _)| *i);
    Ok(results.into_iter().map(|(_, r)| r).collect())
}

/// All runs of one pool, rows ordered by strategy, model, budget.
fn run_pool(
    sweep: &Sweep,
    cell: &Cell,
    c: usize,
    i: usize,
    settings: &SimSettings,
    chains: &[Vec<usize>],
) -> Result<Vec<(Row, Vec<usize>)>, SimError> {
    let seed = sweep.raw.pools.seed + i as u64;
    let sp = generate(&cell.spec(seed));
    let mut out = Vec::new();
    for &strategy in &sweep.raw.strategies {
        for &model in &sweep.raw.models {
            let mut cps: Vec<Checkpoint> = Vec::new();
            for chain in chains {
                cps.extend(sim::run_path(&sp, strategy, model, chain, settings)?);
            }
            for cp in cps {
                let row = Row {
                    cell: c,
                    pool: i,
                    seed,
                    n: cell.n,
                    rho: cell.rho,
                    c_star: cell.c_star,
                    kappa_star: cell.kappa_star,
                    temperature: cell.temperature,
                    paired: cell.paired,
                    strategy,
                    model,
                    budget: Budget::from_usize(cp.budget),
                    comparisons: cp.comparisons,
                    recall: cp.recall,
                    boundary_share: cp.shares.boundary,
                    straddle_share: cp.shares.straddle,
                    window_share: cp.shares.window,
                    c_hat: cp.c_hat,
                    kappa_hat: cp.kappa_hat,
                    profile_range_nats: cp.profile_range_nats,
                };
                out.push((row, cp.queries_by_rank));
            }
        }
    }
    Ok(out)
}

/// Write rows.csv, by_rank.csv, summary.json, summary.md and the SVG plots into `dir`; returns
/// the summary.
///
/// # Errors
/// [`SweepError::Write`] naming the file.
pub fn write_outputs(sweep: &Sweep, result: &SweepResult, dir: &Path) -> Result<summary::Summary, SweepError> {
    let werr = |path: &Path, msg: String| SweepError::Write { path: path.to_owned(), msg };
    std::fs::create_dir_all(dir).map_err(|e| werr(dir, e.to_string()))?;
    let rows_path = dir.join("rows.csv");
    let mut w = csv::Writer::from_path(&rows_path).map_err(|e| werr(&rows_path, e.to_string()))?;
    for r in &result.rows {
        w.serialize(r).map_err(|e| werr(&rows_path, e.to_string()))?;
    }
    w.flush().map_err(|e| werr(&rows_path, e.to_string()))?;
    let s = summary::summarise(sweep, result);
    let rank_path = dir.join("by_rank.csv");
    let mut text =
        String::from("strategy,model,budget,rho,c_star,kappa_star,temperature,paired,rank,queries_per_pool\n");
    for g in &s.by_rank {
        for (r, q) in g.mean_queries.iter().enumerate() {
            text.push_str(&format!(
                "{},{},{},{},{},{},{},{},{},{:.4}\n",
                summary::name(&g.strategy),
                summary::name(&g.model),
                g.budget,
                g.cell.rho,
                g.cell.c_star,
                g.cell.kappa_star,
                g.cell.temperature,
                g.cell.paired,
                r + 1,
                q
            ));
        }
    }
    write_file(&rank_path, &text)?;
    let json_path = dir.join("summary.json");
    write_file(&json_path, &(serde_json::to_string_pretty(&s).expect("serialisable") + "\n"))?;
    let md_path = dir.join("summary.md");
    write_file(&md_path, &summary::markdown(sweep, &s))?;
    for (name, svg) in summary::plots(sweep, &s).map_err(|e| werr(dir, e.to_string()))? {
        let p = dir.join(name);
        write_file(&p, &svg)?;
    }
    Ok(s)
}

fn write_file(path: &Path, text: &str) -> Result<(), SweepError> {
    std::fs::write(path, text).map_err(|e| SweepError::Write { path: path.to_owned(), msg: e.to_string() })
}

#[cfg(test)]
mod tests {
    use super::{budget_chains, parallel_jobs};

    #[test]
    fn a_chain_continues_only_after_a_budget_that_ends_on_a_refit() {
        // refit_every 40: 40 and 80 end on a refit, 100 does not, so 120 starts a new path.
        assert_eq!(budget_chains([40, 80, 100, 120].into_iter(), 40), vec![vec![40, 80, 100], vec![120]]);
        assert_eq!(budget_chains([30, 60].into_iter(), 8), vec![vec![30], vec![60]]);
    }
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn parallel_jobs_keep_the_order_of_the_jobs_and_stop_on_an_error() {
        let jobs: Vec<u64> = (0..50).collect();
        let calls = AtomicUsize::new(0);
        for threads in [1, 3, 0] {
            let got = parallel_jobs(&jobs, threads, &|_| {}, |&j| Ok::<_, String>(j * j)).unwrap();
            assert_eq!(got, jobs.iter().map(|j| j * j).collect::<Vec<_>>(), "threads {threads}");
        }
        // One worker: jobs run in order, the error of job 7 is returned and nothing after it runs.
        let r = parallel_jobs(&jobs, 1, &|n| assert!(n <= 7), |&j| {
            calls.fetch_add(1, Ordering::Relaxed);
            if j == 7 { Err(format!("job {j} failed")) } else { Ok(j) }
        });
        assert_eq!(r, Err("job 7 failed".to_string()));
        assert_eq!(calls.load(Ordering::Relaxed), 8);
    }
}

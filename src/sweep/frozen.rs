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

use super::SweepError;
use super::summary::MeanSe;
use crate::acquire::StrategyKind;
use crate::config::frozen::{Frozen, RecordedPool};
use crate::config::sweep::SweepBudget;
use crate::domain::pool::Covariates;
use crate::model::membership::recall_at_k;
use crate::model::summary::ModelKind;
use crate::report::plots::{self, LineChart, Series};
use crate::report::table::name;
use crate::run::sim::{self, PathInput, SimSettings};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::{Path, PathBuf};

impl Frozen {
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
    /// SweepBudget asked for.
    pub budget: SweepBudget,
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
                        budget: SweepBudget::from_usize(pt.budget),
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
    pub budget: SweepBudget,
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
    pub budget: SweepBudget,
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
    let get = |s: StrategyKind, m: ModelKind, b: SweepBudget| -> Vec<&FrozenRow> {
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
        for &budget in f.raw.budgets.iter().filter(|b| **b != SweepBudget::All) {
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

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
use crate::acquire::StrategyKind;
use crate::config::frozen::{Frozen, RecordedPool};
use crate::config::sweep::SweepBudget;
use crate::domain::pool::Covariates;
use crate::model::membership::recall_at_k;
use crate::model::summary::ModelKind;
use crate::report::frozen::{FrozenRow, FrozenSummary, markdown, plots, summarise};
use crate::report::table::name;
use crate::run::sim::{self, PathInput, SimSettings};

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

/// The full-data point top-k of one pool × model: by θ̂, and by the ranking a run reports
/// (docs/model.md): the apparent φ̂ for the bias-aware model on a pool with one rendering per
/// base, θ̂ otherwise.
#[derive(Debug, Clone)]
pub struct FullTopk {
    /// By θ̂ (what `recall_full` compares with).
    pub theta: Vec<usize>,
    /// By the reported ranking (what the certified coverage compares with).
    pub reported: Vec<usize>,
}

/// Whether a run of `model` on `pool` reports the apparent ranking φ̂ beside θ̂ (the bias-aware
/// model without renderings of a shared base; docs/model.md, "Which ranking is reported").
fn reports_apparent(pool: &crate::domain::pool::Pool, model: ModelKind) -> bool {
    model == ModelKind::BiasAware && (pool.n_items() == pool.n_bases() || pool.is_systems())
}

/// The full-data top-k of every pool × model (index = pool, then model in file order).
///
/// # Errors
/// [`SweepError::RecordedFit`] when a fit fails.
pub fn full_data_topk(f: &Frozen) -> Result<Vec<Vec<FullTopk>>, SweepError> {
    let settings = f.settings();
    f.pools
        .iter()
        .map(|rp| {
            f.raw
                .models
                .iter()
                .map(|&model| {
                    let path = path_of(f, rp, StrategyKind::RoundRobin, model, 0, &[usize::MAX], &settings)?;
                    let pt = &path.points[0];
                    let reported =
                        if reports_apparent(&rp.pool, model) { pt.topk_apparent.clone() } else { pt.topk.clone() };
                    Ok(FullTopk { theta: pt.topk.clone(), reported })
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
    let judge = |a: usize, b: usize| match &rp.sparse {
        Some((answers, _)) => answers.get(&(a, b)).copied().unwrap_or(crate::domain::verdict::Answer::Unavailable),
        None => rp.answers[a * n + b],
    };
    let input = PathInput {
        pool: &rp.pool,
        covariates: cov,
        design: f.raw.design,
        seed,
        judge: &judge,
        allowed: rp.sparse.as_ref().map(|(_, al)| al),
    };
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
    full: &[FullTopk],
    settings: &SimSettings,
    chains: &[Vec<usize>],
) -> Result<Vec<FrozenRow>, SweepError> {
    let rp = &f.pools[p];
    let mut out = Vec::new();
    for &strategy in &f.raw.strategies {
        for (mi, &model) in f.raw.models.iter().enumerate() {
            for chain in chains {
                let path = path_of(f, rp, strategy, model, seed, chain, settings)?;
                let apparent = reports_apparent(&rp.pool, model);
                for pt in path.points {
                    let pi = if apparent { &pt.membership_apparent } else { &pt.membership };
                    // A run over many prompts reports the apparent ranking (docs/systems.md):
                    // its top-k is scored against the full recording's reported top-k.
                    let (est, reference) = if rp.pool.is_systems() {
                        (&pt.topk_apparent, &full[mi].reported)
                    } else {
                        (&pt.topk, &full[mi].theta)
                    };
                    let [(in05, f05), (in10, f10)] = crate::analysis::certify::COVERAGE_EPSILONS
                        .map(|e| crate::analysis::certify::false_in(pi, &pt.graph, &full[mi].reported, e));
                    out.push(FrozenRow {
                        certified_in_05: in05,
                        false_in_05: f05,
                        certified_in_10: in10,
                        false_in_10: f10,
                        pool: rp.pool.pool_id.clone(),
                        seed,
                        strategy,
                        model,
                        budget: SweepBudget::from_usize(pt.budget),
                        comparisons: pt.comparisons,
                        recall_full: recall_at_k(est, reference),
                        recall_gold: rp.gold.as_ref().map(|g| recall_at_k(est, g)),
                        topk: est.iter().map(|b| rp.pool.bases[*b].as_str()).collect::<Vec<_>>().join(" "),
                    });
                }
            }
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
    crate::store::files::create_folder(dir).map_err(|e| werr(dir, e))?;
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

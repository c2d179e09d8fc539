//! `topk-judge simulate SWEEP.yaml`: synthetic pools (docs/model.md §7) × strategies × models × budgets ×
//! seeds, each run being Algorithm 1 itself ([`crate::run::sim::run_path`]), on all cores.
//!
//! The sweep document and its grid are checked in [`crate::config::sweep`].
//!
//! Replicate i has the same pool seed in every grid cell (common random numbers: the same θ, ε
//! and verdict uniforms), so differences between cells, models and strategies are paired by pool.
//!
//! Outputs ([`write_outputs`]): `rows.csv` (one row per pool × strategy × model × budget),
//! `by_rank.csv` (mean queries per base by gold rank), `summary.json` and `summary.md` (means and
//! standard errors, correction benefit and its crossing in ρ, strategy differences, boundary
//! shares relative to round_robin) and SVG plots.

pub mod frozen;
pub mod panel;
pub mod pipeline;
pub mod systems;

use crate::analysis::synth::generate;
use crate::config::sweep::{Cell, Sweep, SweepBudget};
use crate::model::summary::ModelKind;
use crate::report::sweep::{self as summary, Row, SweepResult};
use crate::run::sim::{self, Checkpoint, SimError, SimSettings};

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Errors of a sweep.
#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    /// The sweep file is unreadable, not valid YAML, has an unknown key, or breaks a rule (the
    /// same messages as a run config: file, line/column or key, found vs expected).
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
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

impl Sweep {
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

    /// Budgets grouped into chains that one simulated path can serve exactly: every budget of a
    /// chain but the last is a multiple of `refit_every` (see [`crate::run::sim`]).
    pub fn chains(&self) -> Vec<Vec<usize>> {
        budget_chains(self.raw.budgets.iter().map(|b| b.as_usize()), self.raw.acquisition.refit_every)
    }
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
    // The reported ranking's π and what it is about (docs/experiments.md, "Certified top-k
    // coverage"): the bias-aware model reports θ̂ when the paired design identifies the
    // correction (truth θ*) and the apparent φ̂ otherwise; the naive model's θ̂ is an apparent
    // quality. Apparent truth: φ* = θ* + c*·x̄.
    let apparent_truth = {
        let xbar = crate::model::summary::base_means(&sp.pool, &crate::run::sim::covariates(&sp, ModelKind::BiasAware));
        let phi: Vec<f64> = sp.theta.iter().zip(&xbar).map(|(t, x)| t + cell.c_star * x[0]).collect();
        crate::model::membership::point_topk(&phi, sweep.raw.k)
    };
    let corrected_truth = crate::model::membership::point_topk(&sp.theta, sweep.raw.k);
    let mut out = Vec::new();
    for &strategy in &sweep.raw.strategies {
        for &model in &sweep.raw.models {
            let mut cps: Vec<Checkpoint> = Vec::new();
            for chain in chains {
                cps.extend(sim::run_path(&sp, strategy, model, chain, settings)?);
            }
            let corrected = model == ModelKind::BiasAware && cell.paired;
            let truth = if corrected { &corrected_truth } else { &apparent_truth };
            for cp in cps {
                let pi = if model == ModelKind::BiasAware && !cell.paired {
                    &cp.membership_apparent
                } else {
                    &cp.membership
                };
                let [(in05, f05), (in10, f10)] = crate::analysis::certify::COVERAGE_EPSILONS
                    .map(|e| crate::analysis::certify::false_in(pi, &cp.graph, truth, e));
                let row = Row {
                    certified_in_05: in05,
                    false_in_05: f05,
                    certified_in_10: in10,
                    false_in_10: f10,
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
                    budget: SweepBudget::from_usize(cp.budget),
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
    crate::store::files::create_folder(dir).map_err(|e| werr(dir, e))?;
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

/// Draw a line chart and write it as SVG to `path`.
fn write_chart(chart: &crate::report::plots::LineChart, path: &Path) -> Result<(), SweepError> {
    let svg = crate::report::plots::line_chart(chart)
        .map_err(|e| SweepError::Write { path: path.to_owned(), msg: e.to_string() })?;
    write_file(path, &svg)
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

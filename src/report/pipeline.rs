//! The pipelined-dispatch sweep's outputs (docs/experiments.md, "Pipelined acquisition"): its
//! rows, recall and wall time per setting with paired differences to the reference, and
//! summary.md.

use super::sweep::MeanSe;
use crate::config::pipeline::{PipelineSweep, Variant};
use crate::config::run::Dispatch;
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;

/// One simulated run: pool seed, budget, setting index, recall@k, virtual wall time (s).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// Pool seed.
    pub pool_seed: u64,
    /// Budget B.
    pub budget: usize,
    /// Index into `pipeline.runs`.
    pub run: usize,
    /// Comparisons made.
    pub comparisons: usize,
    /// What they cost, in live queries (a batch query at 1 − `pipeline.batch_discount`).
    #[serde(default)]
    pub spend: f64,
    /// Recall@k of the run's reported top-k against the pool's true top-k (0–1).
    pub recall: f64,
    /// Virtual wall time, seconds.
    pub wall_s: f64,
}

/// Statistics of one (budget, setting) over the pools.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellStats {
    /// Budget B.
    pub budget: usize,
    /// The setting.
    pub variant: Variant,
    /// Recall@k, mean ± se.
    pub recall: MeanSe,
    /// Recall@k minus the reference setting's on the same pool, mean ± se.
    pub diff: MeanSe,
    /// Virtual wall time, seconds, mean ± se.
    pub wall_s: MeanSe,
    /// Spend in live queries, mean.
    #[serde(default)]
    pub spend: f64,
}

/// Per (budget, setting) statistics, budgets in file order, settings in file order.
pub fn summarise(s: &PipelineSweep, rows: &[Row]) -> Vec<CellStats> {
    let mut out = Vec::new();
    for &b in &s.budgets {
        let of = |r: usize| -> Vec<&Row> {
            let mut v: Vec<&Row> = rows.iter().filter(|x| x.budget == b && x.run == r).collect();
            v.sort_by_key(|x| x.pool_seed);
            v
        };
        let reference = of(0);
        for (r, variant) in s.pipeline.runs.iter().enumerate() {
            let these = of(r);
            let recall: Vec<f64> = these.iter().map(|x| x.recall).collect();
            let diff: Vec<f64> = these.iter().zip(&reference).map(|(x, y)| x.recall - y.recall).collect();
            let wall: Vec<f64> = these.iter().map(|x| x.wall_s).collect();
            let spend: Vec<f64> = these.iter().map(|x| x.spend).collect();
            out.push(CellStats {
                spend: MeanSe::of(&spend).mean,
                budget: b,
                variant: *variant,
                recall: MeanSe::of(&recall),
                diff: MeanSe::of(&diff),
                wall_s: MeanSe::of(&wall),
            });
        }
    }
    out
}

/// The name of a dispatch setting in tables and plots.
pub fn label(v: &Variant) -> String {
    match (v.dispatch, v.write_ahead) {
        (Dispatch::Batch, _) => format!("batch, rounds of {}", v.round_size.unwrap_or(0)),
        (Dispatch::WaitForBatch, _) => format!("wait-for-batch, C = {}", v.concurrency),
        (Dispatch::Pipelined, None) => format!("pipelined, C = {}", v.concurrency),
        (Dispatch::Pipelined, Some(w)) => format!("pipelined, C = {}, W = {w}", v.concurrency),
    }
}

/// The summary table (markdown): one row per (budget, setting).
pub fn markdown(s: &PipelineSweep, cells: &[CellStats]) -> String {
    let batch = s.pipeline.runs.iter().any(|v| v.dispatch == Dispatch::Batch);
    let mut t = format!(
        "{} pools, N = {}, k = {}, ρ = {}, c* = {}, κ* = {}; R = {}; latency {} ± {} s\n\n| B | dispatch | recall@{} | Δ vs {} | virtual wall time (s) |{}\n| --- | --- | --- | --- | --- |{}\n",
        s.pools.count,
        s.pools.n,
        s.k,
        s.pools.rho,
        s.pools.c_star,
        s.pools.kappa_star,
        s.refit_every,
        s.pipeline.latency.mean_s,
        s.pipeline.latency.sd_s,
        s.k,
        label(&s.pipeline.runs[0]),
        if batch { " spend (live queries) |" } else { "" },
        if batch { " --- |" } else { "" },
    );
    for c in cells {
        let _ = write!(
            t,
            "| {} | {} | {:.3} ± {:.3} | {:+.3} ± {:.3} | {:.1} |",
            c.budget,
            label(&c.variant),
            c.recall.mean,
            c.recall.se,
            c.diff.mean,
            c.diff.se,
            c.wall_s.mean
        );
        if batch {
            let _ = write!(t, " {:.0} |", c.spend);
        }
        t.push('\n');
    }
    t
}

//! Operating characteristics of the gate on synthetic pools (docs/model.md §5 and §7, paper §5).
//!
//! Pools of N bases (default 30) with every ordered pair judged once by the true judge
//! η = θ_a − θ_b + c*(x_a − x_b) + κ* (docs/model.md §7). Two kinds:
//! - **legit**: c* = 0, ρ = corr(θ, x) = 0.7: the covariate tracks real quality, the judge is
//!   unbiased, and correction hurts (the prior wrongly removes real quality);
//! - **spurious**: c* = 1, ρ = 0: the judge rewards the covariate, quality is unrelated to it,
//!   and correction helps.
//!
//! Each pool is fitted with the naive and the bias-aware model (default prior), anchors are
//! selected for the largest K and the first K of them used for each smaller K (the order does
//! not depend on K). Labels are either the **true order** (the base with larger true θ) or a
//! **noisy trusted judge**: one Bradley–Terry draw per anchor, P(i better) = σ(θ_i − θ_j),
//! repeated `label_draws` times per pool. An enable on a legit pool is a false enable.

use crate::analysis::gate::{decide, select_anchors};
use crate::analysis::synth::{SynthSpec, generate};
use crate::domain::pool::Covariates;
use crate::domain::rng;
use crate::model::FitError;
use crate::model::bt::{self, FitOptions, Prior, sigmoid};
use crate::model::summary::build_design;
use rand::RngExt;
use serde::Serialize;

/// The simulation's settings (defaults: the acceptance setting).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GateSimSpec {
    /// Bases per pool N.
    pub n: usize,
    /// k of top-k.
    pub k: usize,
    /// True position effect κ* (logits).
    pub kappa_star: f64,
    /// Pools per kind.
    pub pools: usize,
    /// Noisy label draws per pool.
    pub label_draws: usize,
    /// The K values, ascending.
    pub anchors: Vec<usize>,
    /// α of the sign test.
    pub alpha: f64,
    /// Pool p uses synthetic seed `seed + p`.
    pub seed: u64,
}

impl Default for GateSimSpec {
    fn default() -> Self {
        Self {
            n: 30,
            k: 5,
            kappa_star: 0.5,
            pools: 50,
            label_draws: 100,
            anchors: vec![5, 10, 20, 40],
            alpha: 0.05,
            seed: 0,
        }
    }
}

/// Pool kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PoolKind {
    /// c* = 0, ρ = 0.7 (correction hurts; every enable is a false enable).
    Legit,
    /// c* = 1, ρ = 0 (correction helps).
    Spurious,
}

impl PoolKind {
    /// (c*, ρ).
    pub fn params(self) -> (f64, f64) {
        match self {
            Self::Legit => (0.0, 0.7),
            Self::Spurious => (1.0, 0.0),
        }
    }
}

/// Enable counts for one (kind, K).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GateSimRow {
    /// Pool kind.
    pub kind: PoolKind,
    /// Requested K.
    pub anchors: usize,
    /// Mean number of anchors available (< K when a pool has fewer disagreements).
    pub mean_anchors: f64,
    /// Enables with true-order labels.
    pub true_enables: usize,
    /// Decisions with true-order labels (= pools).
    pub true_decisions: usize,
    /// Enables with noisy labels.
    pub noisy_enables: usize,
    /// Decisions with noisy labels (= pools × label draws).
    pub noisy_decisions: usize,
    /// Mean fraction of anchors on which the corrected ranking is right (true order).
    pub corrected_right: f64,
}

impl GateSimRow {
    /// Enable rate with true-order labels.
    pub fn true_rate(&self) -> f64 {
        self.true_enables as f64 / self.true_decisions.max(1) as f64
    }
    /// Enable rate with noisy labels.
    pub fn noisy_rate(&self) -> f64 {
        self.noisy_enables as f64 / self.noisy_decisions.max(1) as f64
    }
}

/// Naive and corrected θ̂ (per base) of one pool, plus the true θ.
///
/// # Errors
/// [`FitError`] from either fit.
pub fn fit_pool(spec: &GateSimSpec, kind: PoolKind, pool_index: usize) -> Result<[Vec<f64>; 3], FitError> {
    let (c_star, rho) = kind.params();
    let s = generate(&SynthSpec {
        n: spec.n,
        rho,
        c_star,
        kappa_star: spec.kappa_star,
        temperature: 1.0,
        paired: false,
        seed: spec.seed + pool_index as u64,
    });
    let verdicts = s.full_verdicts(1);
    let m = s.pool.n_bases();
    let prior = Prior::default();
    let naive_d = build_design(&s.pool, &Covariates::none(m), &verdicts);
    let naive = bt::fit(&naive_d, &prior.diagonal(m, 0), None, &FitOptions::default())?;
    let corr_d = build_design(&s.pool, &s.covariates(), &verdicts);
    let corr = bt::fit(&corr_d, &prior.diagonal(m, 1), None, &FitOptions::default())?;
    Ok([naive.beta[..m].to_vec(), corr.beta[..m].to_vec(), s.theta])
}

/// Run the simulation for one pool kind: one row per K in `spec.anchors`.
///
/// # Errors
/// [`FitError`] from a pool's fit.
pub fn simulate(spec: &GateSimSpec, kind: PoolKind) -> Result<Vec<GateSimRow>, FitError> {
    let kmax = spec.anchors.iter().copied().max().unwrap_or(0);
    let mut rows: Vec<GateSimRow> = spec
        .anchors
        .iter()
        .map(|&a| GateSimRow {
            kind,
            anchors: a,
            mean_anchors: 0.0,
            true_enables: 0,
            true_decisions: 0,
            noisy_enables: 0,
            noisy_decisions: 0,
            corrected_right: 0.0,
        })
        .collect();
    for p in 0..spec.pools {
        let [naive, corr, theta] = fit_pool(spec, kind, p)?;
        let all = select_anchors(&naive, &corr, spec.k, kmax);
        let truth: Vec<Option<usize>> = all
            .iter()
            .map(|a| {
                Some(if theta[a.corrected_prefers] > theta[a.naive_prefers] {
                    a.corrected_prefers
                } else {
                    a.naive_prefers
                })
            })
            .collect();
        let draws: Vec<Vec<Option<usize>>> = (0..spec.label_draws)
            .map(|d| {
                let mut r = rng::stream(spec.seed, "gate-sim-labels", (p * spec.label_draws + d) as u64);
                all.iter()
                    .map(|a| {
                        let pc = sigmoid(theta[a.corrected_prefers] - theta[a.naive_prefers]);
                        Some(if r.random::<f64>() < pc { a.corrected_prefers } else { a.naive_prefers })
                    })
                    .collect()
            })
            .collect();
        for row in &mut rows {
            let kk = row.anchors.min(all.len());
            let anchors = &all[..kk];
            let d = decide(anchors, &truth[..kk], spec.alpha);
            row.true_decisions += 1;
            row.true_enables += usize::from(d.enable);
            row.mean_anchors += kk as f64 / spec.pools as f64;
            if kk > 0 {
                row.corrected_right += d.n10 as f64 / kk as f64 / spec.pools as f64;
            }
            for labels in &draws {
                let d = decide(anchors, &labels[..kk], spec.alpha);
                row.noisy_decisions += 1;
                row.noisy_enables += usize::from(d.enable);
            }
        }
    }
    Ok(rows)
}

//! Outputs: result.json, fits.jsonl lines and the terminal ranking table.

pub mod compare;
pub mod judges;
pub mod page;
pub mod plots;
pub mod profile_plot;
pub mod progress;
pub mod schema;
pub mod table;

use crate::model::summary::FitSummary;
use crate::store::pool::{Covariates, Pool};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One line of fits.jsonl (one per refit).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FitLine {
    /// Hash of the model-relevant configuration; a resume warm-starts only from a matching line.
    pub config_hash: String,
    /// Valid verdicts fitted.
    pub comparisons: usize,
    /// θ̂ per base id (logits).
    pub theta: BTreeMap<String, f64>,
    /// sd per base id.
    pub sd: BTreeMap<String, f64>,
    /// π per base id.
    pub membership: BTreeMap<String, f64>,
    /// ĉ per covariate.
    pub c: BTreeMap<String, f64>,
    /// κ̂.
    pub kappa: f64,
    /// Point top-k (base ids).
    pub topk: Vec<String>,
    /// β̂ in full (θ, c, κ) for exact warm starts.
    pub beta: Vec<f64>,
}

/// Maps from base id / covariate name to numbers, for JSON outputs.
pub fn by_base(pool: &Pool, v: &[f64]) -> BTreeMap<String, f64> {
    pool.bases.iter().cloned().zip(v.iter().copied()).collect()
}

/// Map covariate name → value.
pub fn by_cov(cov: &Covariates, v: &[f64]) -> BTreeMap<String, f64> {
    cov.names.iter().cloned().zip(v.iter().copied()).collect()
}

/// One row of the ranking.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RankRow {
    /// 1-based rank by θ̂.
    pub rank: usize,
    /// Base id.
    pub id: String,
    /// θ̂ (logits).
    pub theta: f64,
    /// Posterior sd (logits).
    pub sd: f64,
    /// Top-k membership π.
    pub membership: f64,
    /// Apparent quality φ̂.
    pub phi: f64,
    /// In the point top-k.
    pub in_topk: bool,
    /// Gold quality, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gold: Option<f64>,
    /// In the gold top-k, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gold_topk: Option<bool>,
}

/// The ranking rows of a summary, best first.
pub fn ranking(pool: &Pool, s: &FitSummary, k: usize) -> Vec<RankRow> {
    let gold = pool.base_quality();
    let gold_top = gold.as_ref().map(|g| crate::model::membership::point_topk(g, k));
    let order = crate::model::membership::point_topk(&s.theta, s.theta.len());
    order
        .iter()
        .enumerate()
        .map(|(r, &b)| RankRow {
            rank: r + 1,
            id: pool.bases[b].clone(),
            theta: s.theta[b],
            sd: s.sd[b],
            membership: s.membership[b],
            phi: s.phi[b],
            in_topk: s.topk.contains(&b),
            gold: gold.as_ref().map(|g| g[b]),
            gold_topk: gold_top.as_ref().map(|t| t.contains(&b)),
        })
        .collect()
}

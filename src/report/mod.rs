//! Outputs: result.json, fits.jsonl lines and the terminal ranking table.

pub mod audit;
pub mod check;
pub mod compare;
pub mod dry_run;
pub mod fit;
pub mod frozen;
pub mod gate;
pub mod import;
pub mod judges;
pub mod md;
pub mod outcome;
pub mod page;
pub mod panel_page;
pub mod pipeline;
pub mod plots;
pub mod profile;
pub mod profile_plot;
pub mod progress;
pub mod result;
pub mod schema;
pub mod summary;
pub mod sweep;
pub mod systems;
pub mod table;

use crate::domain::pool::{Covariates, Pool};
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
    /// MAP position effect κ̂ at this refit (logits).
    pub kappa: f64,
    /// Point top-k by θ̂ (base ids).
    pub topk: Vec<String>,
    /// Point top-k by the apparent quality φ̂ = θ̂ + ĉ·x̄ (base ids; absent in older files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topk_apparent: Option<Vec<String>>,
    /// β̂ in full (θ, c, κ) for exact warm starts (empty on a light line).
    pub beta: Vec<f64>,
    /// A light line (pools of more than 2,000 bases, between checkpoints; docs/outputs.md):
    /// `theta`, `sd` and `membership` hold only the 2,000 bases of highest π (ties by θ̂), and
    /// `beta` is empty. Absent (false) on a full line.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub light: bool,
}

/// One line of panel_fits.jsonl: a refit of the panel, what had been spent and its top-k by θ̂
/// (`compare` draws recall against spend from it).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PanelFitLine {
    /// The panel configuration that made the line (judges, fit and acquisition settings,
    /// hashed): a folder reused by another configuration keeps its older lines, which readers
    /// skip (only the last line's configuration is read).
    #[serde(default)]
    pub config: String,
    /// Valid verdicts fitted (all judges).
    pub comparisons: usize,
    /// What the panel's judges had spent at the refit, USD (the folder's books for this
    /// configuration; other configurations' spend in the folder is not counted here).
    pub spend_usd: f64,
    /// Point top-k by θ̂ (base names).
    pub topk: Vec<String>,
}

/// The file of [`PanelFitLine`]s in a panel's run folder.
pub const PANEL_FITS: &str = "panel_fits.jsonl";

/// Maps from base id / covariate name to numbers, for JSON outputs.
pub fn by_base(pool: &Pool, v: &[f64]) -> BTreeMap<String, f64> {
    pool.bases.iter().cloned().zip(v.iter().copied()).collect()
}

/// Map covariate name → value.
pub fn by_cov(cov: &Covariates, v: &[f64]) -> BTreeMap<String, f64> {
    cov.names.iter().cloned().zip(v.iter().copied()).collect()
}

/// A gold tie at the top-k boundary, read from the ranking rows' `gold_tied` marks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GoldTie<'a> {
    /// The gold top-k members outside the tie, in row order.
    pub sure: Vec<&'a str>,
    /// The tied bases, in row order.
    pub tied: Vec<&'a str>,
    /// The places of the top-k the tied bases share: k − |sure|.
    pub places: usize,
}

impl<'a> GoldTie<'a> {
    /// The tie of `rows` at the top-`k` boundary, or `None` without one.
    pub fn of(rows: &'a [RankRow], k: usize) -> Option<Self> {
        let tied: Vec<&str> = rows.iter().filter(|r| r.gold_tied).map(|r| r.id.as_str()).collect();
        if tied.is_empty() {
            return None;
        }
        let sure: Vec<&str> =
            rows.iter().filter(|r| r.gold_topk == Some(true) && !r.gold_tied).map(|r| r.id.as_str()).collect();
        Some(Self { places: k.saturating_sub(sure.len()), sure, tied })
    }
}

/// One row of the ranking.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct RankRow {
    /// 1-based rank in the reported ranking (tied bases share the rank of the first of them).
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
    /// In the reported top-k (certainly: a base tied at the boundary is not).
    pub in_topk: bool,
    /// Tied with another base in the reported ranking.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub tied: bool,
    /// Posterior sd of φ (logits).
    #[serde(default)]
    pub phi_sd: f64,
    /// Top-k membership of the apparent ranking, P(φ among the k largest).
    #[serde(default)]
    pub membership_apparent: f64,
    /// Rank by θ̂ (bias-corrected).
    #[serde(default)]
    pub rank_corrected: usize,
    /// Rank by φ̂ (apparent).
    #[serde(default)]
    pub rank_apparent: usize,
    /// Tied with another base by θ̂ (shares its bias-corrected rank).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub tied_corrected: bool,
    /// Tied with another base by φ̂ (shares its apparent rank).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub tied_apparent: bool,
    /// In the bias-corrected top-k.
    #[serde(default)]
    pub in_corrected_topk: bool,
    /// In the apparent top-k.
    #[serde(default)]
    pub in_apparent_topk: bool,
    /// Gold quality, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gold: Option<f64>,
    /// In the gold top-k, when known (of a gold tie at the k-th place, the members the point
    /// top-k takes: `gold_tied` marks the whole tie).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gold_topk: Option<bool>,
    /// A member of a gold tie at the top-k boundary: the tied bases share its remaining places,
    /// and recall@k counts any of them (docs/outputs.md).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub gold_tied: bool,
    /// The central 90 % interval of the reported rank under the Laplace posterior, [lower,
    /// upper] (1 = best; absent when not drawn).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rank_interval: Option<(usize, usize)>,
    /// Its tier: bases whose rank intervals overlap share one (1 = best).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tier: Option<usize>,
    /// The 90 % rank interval by θ (bias-corrected).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rank_interval_corrected: Option<(usize, usize)>,
    /// The 90 % rank interval by φ (apparent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rank_interval_apparent: Option<(usize, usize)>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: &str, gold_topk: bool, gold_tied: bool) -> RankRow {
        RankRow { id: id.into(), gold_topk: Some(gold_topk), gold_tied, ..RankRow::default() }
    }

    #[test]
    fn a_gold_tie_shares_the_places_its_sure_members_leave() {
        // Top-3 with gold a > b = c = d: a is sure, b, c, d share 2 places (the point top-k
        // takes b and c, but the tie marks all three).
        let rows = [row("a", true, false), row("b", true, true), row("c", true, true), row("d", false, true)];
        let t = GoldTie::of(&rows, 3).expect("a tie");
        assert_eq!(t, GoldTie { sure: vec!["a"], tied: vec!["b", "c", "d"], places: 2 });
        assert_eq!(GoldTie::of(&rows[..1], 3), None);
    }
}

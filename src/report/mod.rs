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
    /// hashed, [`panel_fits_id`]): a folder reused by another configuration keeps its older
    /// lines, which readers skip (only the run's own configuration is read).
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

/// The `config` of a panel's [`PanelFitLine`]s: 16 hex digits of the SHA-256 of the run's fit
/// settings hash and its judges' identity (run.json's `fit` and `judge`), `fit|judge`.
pub fn panel_fits_id(fit: &str, judge: &str) -> String {
    crate::domain::rng::sha256_hex(&format!("{fit}|{judge}"))[..16].to_string()
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

/// What recall@k is measured against: a top-k (the gold one, or a reference run's), and the
/// bases of a gold tie at its boundary, which share the places its sure members leave
/// (docs/outputs.md: recall@k counts any of them).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecallTarget {
    /// The point top-k, best first (of a tie, the members the point top-k takes).
    pub topk: Vec<String>,
    /// The bases of a tie at the k-th place (empty without one), in row order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tied: Vec<String>,
}

impl RecallTarget {
    /// A top-k with no tie.
    pub fn exact(topk: Vec<String>) -> Self {
        Self { topk, tied: Vec::new() }
    }

    /// The gold top-k of ranking rows, in row order: the members `gold_topk` marks, and those
    /// `gold_tied` marks.
    pub fn of_rows(rows: &[RankRow]) -> Option<Self> {
        rows.iter().any(|r| r.gold_topk.is_some()).then(|| Self {
            topk: rows.iter().filter(|r| r.gold_topk == Some(true)).map(|r| r.id.clone()).collect(),
            tied: Self::tied_of(rows),
        })
    }

    /// The gold top-k of a fit (best first by gold), with the tie its ranking rows mark.
    pub fn gold(fit: &schema::FittedRanking) -> Option<Self> {
        fit.gold_topk.clone().map(|topk| Self { topk, tied: Self::tied_of(&fit.ranking) })
    }

    fn tied_of(rows: &[RankRow]) -> Vec<String> {
        rows.iter().filter(|r| r.gold_tied).map(|r| r.id.clone()).collect()
    }

    /// The members outside the tie.
    pub fn sure(&self) -> Vec<&str> {
        self.topk.iter().filter(|x| !self.tied.contains(x)).map(String::as_str).collect()
    }

    /// The places the tied bases share: k − |sure|.
    pub fn shared_places(&self) -> usize {
        self.topk.len().saturating_sub(self.sure().len())
    }

    /// Recall@k of a claimed top-k `s`: (|s ∩ sure| + min(|s ∩ tied|, shared places)) / k, when
    /// `s` and the target both name k bases (`None` otherwise: a run that claims no top-k is
    /// measured against nothing).
    pub fn recall(&self, s: &[String], k: usize) -> Option<f64> {
        (k > 0 && s.len() == k && self.topk.len() == k).then(|| self.overlap(s))
    }

    /// (|s ∩ sure| + min(|s ∩ tied|, shared places)) / |topk| for any `s` (NaN for an empty
    /// target).
    pub fn overlap(&self, s: &[String]) -> f64 {
        let sure = self.sure();
        let hit = s.iter().filter(|x| sure.contains(&x.as_str())).count();
        let shared = s.iter().filter(|x| self.tied.contains(x)).count().min(self.shared_places());
        (hit + shared) as f64 / self.topk.len() as f64
    }

    /// `a, b` without a tie; `a, then b = c = d sharing 2 places` with one.
    pub fn describe(&self) -> String {
        if self.tied.is_empty() {
            return self.topk.join(", ");
        }
        let shared =
            format!("{} sharing {}", self.tied.join(" = "), crate::domain::fmt::count(self.shared_places(), "place"));
        let sure = self.sure();
        if sure.is_empty() { shared } else { format!("{}, then {shared}", sure.join(", ")) }
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
        let t = RecallTarget::of_rows(&rows).expect("gold");
        assert_eq!(
            (t.sure(), t.tied.clone(), t.shared_places()),
            (vec!["a"], vec!["b".into(), "c".into(), "d".into()], 2)
        );
        assert_eq!(t.describe(), "a, then b = c = d sharing 2 places");
        let ids = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        // Any two of the tie fill its places; a third adds nothing.
        assert_eq!(t.recall(&ids(&["a", "d", "c"]), 3), Some(1.0));
        assert_eq!(t.recall(&ids(&["d", "c", "b"]), 3), Some(2.0 / 3.0));
        assert_eq!(t.recall(&ids(&["a", "d"]), 3), None);
        // Without a tie, the plain overlap.
        let exact = RecallTarget::exact(ids(&["a", "b", "c"]));
        assert_eq!(exact.recall(&ids(&["a", "d", "c"]), 3), Some(2.0 / 3.0));
        assert_eq!(exact.describe(), "a, b, c");
        assert_eq!(RecallTarget::of_rows(&[]), None);
    }
}

//! The trusted-anchor gate as written and shown (docs/identifiability.md): `gate.json`
//! ([`GateReport`], its anchors and the decision), its printed text, and the table of the gate's
//! simulated enable rates (the statistics are [`crate::analysis::gate`] and
//! [`crate::analysis::gate_sim`]).

use crate::analysis::gate::GateDecision;
use crate::analysis::gate_sim::GateSimRow;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// One anchor in gate.json (base ids).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AnchorRow {
    /// The base the corrected ranking puts higher.
    pub corrected_prefers: String,
    /// The base the naive ranking puts higher.
    pub naive_prefers: String,
    /// Naive ranks (1-based) of (corrected_prefers, naive_prefers).
    pub naive_ranks: [usize; 2],
    /// Corrected ranks of (corrected_prefers, naive_prefers).
    pub corrected_ranks: [usize; 2],
    /// Distance to the top-k boundary (ranks, see `gate` docs).
    pub distance: f64,
    /// Trusted P(corrected_prefers is better), order-averaged; `None` without a label.
    pub trusted_p: Option<f64>,
    /// Which model's order the trusted judge confirms.
    pub label: AnchorLabel,
}

/// Which model's order a trusted judge confirms on one anchor pair (`corrected` = n10,
/// `naive` = n01, `tie`; docs/identifiability.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AnchorLabel {
    /// The trusted judge prefers the base the corrected ranking puts higher.
    Corrected,
    /// The trusted judge prefers the base the naive ranking puts higher.
    Naive,
    /// No preference (no label, or P = 0.5).
    Tie,
}

impl AnchorLabel {
    /// `corrected`, `naive` or `tie`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Corrected => "corrected",
            Self::Naive => "naive",
            Self::Tie => "tie",
        }
    }
}

/// The trusted-anchor gate's report, written as `gate.json` (docs/identifiability.md).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GateReport {
    /// Run name.
    pub run: String,
    /// Pool id.
    pub pool_id: String,
    /// The judge whose verdicts were fitted.
    pub judge: String,
    /// The covariates the corrected model removes.
    pub covariates: Vec<String>,
    /// How each covariate was transformed (docs/model.md §1); absent in gate.json files of
    /// older versions.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub transforms: std::collections::BTreeMap<String, crate::domain::pool::Transform>,
    /// k of top-k.
    pub k: usize,
    /// Valid verdicts fitted.
    pub comparisons: usize,
    /// K requested.
    pub anchors_requested: usize,
    /// Where the labels came from.
    pub label_source: String,
    /// USD spent on the trusted judge (all its stored verdicts for these anchors).
    pub trusted_spend_usd: f64,
    /// The anchors, nearest the boundary first.
    pub anchors: Vec<AnchorRow>,
    /// K, n10, n01, p, decision.
    pub decision: GateDecision,
    /// The decision in words.
    pub decision_text: String,
    /// Naive point top-k (base ids): the bases the naive fit places there (fewer than k when a
    /// tie straddles the boundary: `naive_tied`).
    pub naive_topk: Vec<String>,
    /// Bases tied at the naive top-k's boundary, sharing its remaining places.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub naive_tied: Vec<String>,
    /// Corrected point top-k (base ids), as `naive_topk`.
    pub corrected_topk: Vec<String>,
    /// Bases tied at the corrected top-k's boundary, sharing its remaining places.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub corrected_tied: Vec<String>,
}

/// The printable gate report.
pub fn gate_text(r: &GateReport, path: &Path) -> String {
    let d = &r.decision;
    let mut s = format!(
        "trusted-anchor gate for run {:?}: pool {}, judge {}, covariates [{}], k = {}, {} verdicts\n",
        r.run,
        r.pool_id,
        r.judge,
        r.covariates.join(", "),
        r.k,
        r.comparisons
    );
    s.push_str(&format!("labels: {}\n", r.label_source));
    if d.n_anchors == 0 {
        s.push_str("note: no pair on which the rankings disagree\n");
    } else if d.n_anchors < r.anchors_requested {
        s.push_str(&format!(
            "note: only {} pairs on which the rankings disagree (K = {} requested)\n",
            d.n_anchors, r.anchors_requested
        ));
    }
    let width = crate::domain::fmt::display_width;
    let w =
        r.anchors.iter().map(|a| width(&a.corrected_prefers).max(width(&a.naive_prefers))).max().unwrap_or(4).max(9);
    s.push_str(&format!(
        "\n{:>3}  {:<w$}  {:<w$}  {:>11}  {:>11}  {:>6}  label\n",
        "#", "corrected", "naive", "naive ranks", "corr. ranks", "P(c)"
    ));
    for (i, a) in r.anchors.iter().enumerate() {
        s.push_str(&format!(
            "{:>3}  {:<w$}  {:<w$}  {:>5},{:<5}  {:>5},{:<5}  {:>6}  {}\n",
            i + 1,
            crate::domain::fmt::Col(&a.corrected_prefers),
            crate::domain::fmt::Col(&a.naive_prefers),
            a.naive_ranks[0],
            a.naive_ranks[1],
            a.corrected_ranks[0],
            a.corrected_ranks[1],
            a.trusted_p.map_or("-".into(), |p| format!("{p:.2}")),
            a.label.name()
        ));
    }
    s.push_str(&format!(
        "\nK = {}, n10 = {} (corrected right, naive wrong), n01 = {} (naive right), ties = {}\n",
        d.n_anchors, d.n10, d.n01, d.n_ties
    ));
    s.push_str(&format!("decision: {}\n", d.text()));
    let members = |topk: &[String], tied: &[String]| crate::report::summary::topk_members(r.k, topk, tied);
    s.push_str(&format!("naive top-{}: {}\n", r.k, members(&r.naive_topk, &r.naive_tied)));
    s.push_str(&format!("corrected top-{}: {}\n", r.k, members(&r.corrected_topk, &r.corrected_tied)));
    if r.trusted_spend_usd > 0.0 {
        s.push_str(&format!("trusted judge spend: ${:.4}\n", r.trusted_spend_usd));
    }
    s.push_str(&format!("saved: {}\n", path.display()));
    s
}

/// The markdown table of enable rates: one row per K, columns legit/spurious × true/noisy.
pub fn gate_sim_table(legit: &[GateSimRow], spurious: &[GateSimRow]) -> String {
    let mut s = String::from(
        "| K | legit, true order | legit, noisy judge | spurious, true order | spurious, noisy judge | anchors available (legit / spurious) |\n|---|---|---|---|---|---|\n",
    );
    for (l, sp) in legit.iter().zip(spurious) {
        s.push_str(&format!(
            "| {} | {}/{} = {:.1}% | {}/{} = {:.2}% | {}/{} = {:.1}% | {}/{} = {:.1}% | {:.1} / {:.1} |\n",
            l.anchors,
            l.true_enables,
            l.true_decisions,
            100.0 * l.true_rate(),
            l.noisy_enables,
            l.noisy_decisions,
            100.0 * l.noisy_rate(),
            sp.true_enables,
            sp.true_decisions,
            100.0 * sp.true_rate(),
            sp.noisy_enables,
            sp.noisy_decisions,
            100.0 * sp.noisy_rate(),
            l.mean_anchors,
            sp.mean_anchors,
        ));
    }
    s
}

//! The output of `topk-judge fit` (docs/outputs.md): `fit --out` ([`FitOutput`], the fitted
//! ranking flattened in, as in result.json) and the printed text.

use super::schema::FittedRanking;
use crate::model::summary::ModelKind;
use serde::Serialize;
use std::collections::BTreeMap;

/// Output of `fit --out`.
#[derive(Debug, Serialize)]
pub struct FitOutput {
    /// The `pool_id` of the fitted pool.
    pub pool_id: String,
    /// The model fitted: `naive` (θ and κ) or `bias_aware` (θ, bias coefficients c, κ).
    pub model: ModelKind,
    /// k: the top-k size of the reported membership π and top-k set.
    pub k: usize,
    /// Valid verdicts fitted.
    pub comparisons: usize,
    /// Invalid verdicts (`"y": null`) of the fitted judge and pool, not fitted.
    pub invalid: usize,
    /// The judge whose verdicts were fitted (`--judge`, or the run's), if one was selected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub judge: Option<String>,
    /// Records of this pool per judge (`""` = no judge field).
    pub judges: BTreeMap<String, usize>,
    /// Records of other pools, per pool id (skipped).
    pub other_pools: BTreeMap<String, usize>,
    /// The fitted ranking (as in result.json).
    #[serde(flatten)]
    pub fit: FittedRanking,
    /// Warnings printed to stderr (torn last line, several judges fitted together, …).
    #[serde(skip)]
    pub warnings: Vec<String>,
}

/// The printable result of `fit`: as a run's summary (model, κ̂, ĉ with units and
/// identifiability, which ranking is reported and why, both rankings, notes).
pub fn fit_text(fit: &FitOutput) -> String {
    let mut text = format!(
        "pool {}: {} model, {} valid verdicts{}{}\n",
        fit.pool_id,
        super::table::name(&fit.model),
        fit.comparisons,
        if fit.invalid > 0 { format!(" ({} invalid, not fitted)", fit.invalid) } else { String::new() },
        fit.judge.as_ref().map(|j| format!(", judge {j}")).unwrap_or_default()
    );
    text.push_str(&super::summary::certified_lines(fit.k, &fit.fit.reporting));
    text.push_str(&super::summary::coefficient_lines(
        fit.fit.kappa,
        fit.fit.kappa_sd,
        &fit.fit.c,
        &fit.fit.c_sd,
        &fit.fit.identifiability,
        &fit.fit.reporting,
    ));
    text.push_str(&super::summary::ranking_block(
        fit.k,
        fit.model == ModelKind::BiasAware && !fit.fit.c.is_empty(),
        &fit.fit.reporting,
        &fit.fit.ranking,
        &fit.fit.topk,
        fit.fit.recall_at_k,
        fit.comparisons,
        (fit.comparisons == 0).then_some("no valid verdict to fit"),
    ));
    for n in &fit.fit.notes {
        text.push_str(&format!("note: {n}\n"));
    }
    text
}

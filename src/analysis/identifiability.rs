//! Identifiability in every run's result (paper §4–§5; docs/identifiability.md): the profile
//! likelihood of each bias coefficient around ĉ at the final fit (`report::outcome` words what
//! a prior-selected or rendering-identified coefficient means). Pure: data in, values out.

use crate::domain::pool::{Covariates, Pool};
use crate::domain::verdict::ItemVerdict;
use crate::model::profile::{self, Identifiability};
use crate::model::summary::{FitSummary, build_design};
use std::collections::BTreeMap;

/// The identifiability entries of a run's final fit: the profile of every covariate around ĉ
/// (docs/model.md §5). Empty for the naive model.
pub fn for_summary(
    pool: &Pool,
    cov: &Covariates,
    verdicts: &[ItemVerdict],
    s: &FitSummary,
) -> BTreeMap<String, Identifiability> {
    if cov.p() == 0 {
        return BTreeMap::new();
    }
    let design = build_design(pool, cov, verdicts);
    let beta = s.beta();
    // In the solver's parametrisation (covariates far from unit scale rescaled), so that the
    // grid ĉ ± 1 spans a meaningful range of each coefficient.
    let scales = crate::model::summary::solver_scales(cov);
    let lambda = vec![1.0; design.n_params()];
    let (design, _, beta) = crate::model::summary::to_solver(&design, &lambda, Some(&beta), &scales);
    profile::identifiability(&design, &cov.names, &beta.unwrap_or_default())
}

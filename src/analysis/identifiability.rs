//! Identifiability in every run's result (paper §4–§5; docs/identifiability.md): the profile
//! likelihood of each bias coefficient around ĉ at the final fit, and the notes that tell the
//! reader what a prior-selected or rendering-identified coefficient means. Pure: data in, values out.

use crate::domain::pool::{Covariates, Pool};
use crate::domain::verdict::ItemVerdict;
use crate::model::profile::{self, Identifiability};
use crate::model::summary::{FitSummary, build_design};
use std::collections::BTreeMap;

// Identifiability in every run's result.

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

/// Notes for the reader: what a prior-selected coefficient means, and the shared-quality caveat
/// of an identified coefficient when the pool has several renderings per base.
pub fn notes(ident: &BTreeMap<String, Identifiability>, pool: &Pool) -> Vec<String> {
    let renderings = pool.n_items() > pool.n_bases();
    let mut v = Vec::new();
    for (name, e) in ident {
        match e.range_nats {
            Some(r) if !e.identified() => v.push(format!(
                "c[{name}] is prior-selected (profile range {} nats < 0.001): the comparisons do not inform it, so ĉ and the bias-corrected ranking rest on the prior's assumption that quality is uncorrelated with {name} (docs/model.md §2); test that with a `gate:` in the config (or `topk-judge gate`), or use paired renderings (design: paired)",
                crate::domain::fmt::num(r)
            )),
            Some(r) if pool.is_systems() => v.push(format!(
                "c[{name}] is identified by each system's answers to several prompts (profile range {} nats); this holds only if a system's quality does not change with {name} from prompt to prompt",
                crate::domain::fmt::num(r)
            )),
            Some(r) if renderings => v.push(format!(
                "c[{name}] is identified by the renderings (profile range {} nats); this holds only if the renderings of a base really share quality",
                crate::domain::fmt::num(r)
            )),
            _ => {}
        }
    }
    v
}

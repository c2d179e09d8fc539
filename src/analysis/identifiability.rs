//! Identifiability in every run's result (paper §4–§5; docs/identifiability.md): the profile
//! likelihood of each bias coefficient around ĉ at the final fit, and the notes that tell the
//! reader what a prior-selected or rendering-identified coefficient means. Pure: data in, values out.

use crate::model::profile::{self, Identifiability};
use crate::model::summary::{FitSummary, ItemVerdict, build_design};
use crate::store::pool::{Covariates, Pool};
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
    let mut beta = s.theta.clone();
    beta.extend_from_slice(&s.c);
    beta.push(s.kappa);
    profile::identifiability(&design, &cov.names, &beta)
}

/// Notes for the reader: what a prior-selected coefficient means, and the shared-quality caveat
/// of an identified coefficient when the pool has several renderings per base.
pub fn notes(ident: &BTreeMap<String, Identifiability>, pool: &Pool) -> Vec<String> {
    let renderings = pool.n_items() > pool.n_bases();
    let mut v = Vec::new();
    for (name, e) in ident {
        match e.range_nats {
            Some(r) if !e.identified => v.push(format!(
                "c[{name}] is prior-selected (profile range {r:.1e} nats < 1e-3): the comparisons do not inform it, so ĉ and the bias-corrected ranking rest on the prior's assumption that quality is uncorrelated with {name} (docs/model.md §2); test that with `topk-judge gate`, or use paired renderings (design: paired)"
            )),
            Some(r) if renderings => v.push(format!(
                "c[{name}] is identified by the renderings (profile range {r:.1} nats); this holds only if the renderings of a base really share quality"
            )),
            _ => {}
        }
    }
    v
}

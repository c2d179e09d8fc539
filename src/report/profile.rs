//! The profile-likelihood diagnostic as written and shown (docs/identifiability.md):
//! `profile.json` ([`ProfileReport`]) and its printed table (the plot is [`super::profile_plot`],
//! the statistics [`crate::model::profile`]).

use super::table::fmt_nats;
use crate::model::Prior;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// One covariate's profile in profile.json.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CovariateProfile {
    /// Covariate name.
    pub name: String,
    /// MAP ĉ under the run's prior (the grid centre), logits per covariate unit.
    pub c_hat: f64,
    /// Range of the profile over the grid (nats).
    pub range_nats: f64,
    /// Whether the range is ≥ 1e-3 nats.
    pub identified: bool,
    /// The verdict sentence.
    pub verdict: String,
    /// Grid values of c (21).
    pub c: Vec<f64>,
    /// Profile log-likelihood at each grid value (nats).
    pub log_lik: Vec<f64>,
    /// Newton iterations of each inner fit.
    pub iterations: Vec<usize>,
}

/// The profile-likelihood diagnostic of a run, written as `profile.json` (docs/identifiability.md).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ProfileReport {
    /// Run name.
    pub run: String,
    /// Pool id.
    pub pool_id: String,
    /// Design of the run.
    pub design: crate::analysis::design::DesignKind,
    /// Valid verdicts fitted.
    pub comparisons: usize,
    /// Prior of the MAP that gives ĉ.
    pub prior: Prior,
    /// Ridge of the inner fits.
    pub ridge: f64,
    /// One profile per covariate.
    pub covariates: Vec<CovariateProfile>,
}

/// The printable profile: per covariate ĉ, range, verdict and the curve (ℓ − max per grid point).
pub fn profile_text(r: &ProfileReport, json: &Path, svg: &Path) -> String {
    let mut s = format!(
        "profile likelihood of run {:?}: pool {}, {} valid verdicts, {} design\n",
        r.run,
        r.pool_id,
        r.comparisons,
        format!("{:?}", r.design).to_lowercase()
    );
    for c in &r.covariates {
        s.push_str(&format!(
            "\nc[{}]: MAP ĉ = {:.4} (λ_b = {}, λ_θ = {}); profile over ĉ ± {}, {} points, everything else re-optimised (ridge {:.0e}):\n",
            c.name,
            c.c_hat,
            r.prior.lambda_b,
            r.prior.lambda_theta,
            crate::report::table::num(match (c.c.first(), c.c.last()) {
                (Some(a), Some(b)) => (b - a) / 2.0,
                _ => 1.0,
            }),
            c.c.len(),
            r.ridge
        ));
        s.push_str(&format!("range = {} → {}\n", fmt_nats(c.range_nats), c.verdict));
        let max = c.log_lik.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        s.push_str(&format!("{:>10}  {:>16}\n", "c", "ℓ − max (nats)"));
        for (x, l) in c.c.iter().zip(&c.log_lik) {
            s.push_str(&format!("{x:>10.4}  {:>16}\n", crate::report::table::num(l - max)));
        }
    }
    s.push_str(&format!("\nsaved: {}, {}\n", json.display(), svg.display()));
    s
}

/// profile.svg: each covariate's profile log-likelihood against c − ĉ, relative to its maximum
/// (nats).
///
/// # Errors
/// [`super::plots::PlotError`] from the plotting library.
pub fn profile_plot(report: &ProfileReport) -> Result<String, super::plots::PlotError> {
    let curves: Vec<(String, Vec<(f64, f64)>)> = report
        .covariates
        .iter()
        .map(|c| {
            let max = c.log_lik.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let label = format!("{} (ĉ = {:.3}, range {})", c.name, c.c_hat, fmt_nats(c.range_nats));
            (label, c.c.iter().zip(&c.log_lik).map(|(x, l)| (x - c.c_hat, l - max)).collect())
        })
        .collect();
    let title = format!("profile log-likelihood, run {}", report.run);
    super::profile_plot::profile_svg(&title, &curves)
}

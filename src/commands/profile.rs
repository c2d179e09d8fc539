//! `topk-judge profile RUN_OR_CONFIG`: the profile likelihood (nats) of every bias coefficient of
//! a run (docs/identifiability.md), written as `profile.json` and `profile.svg` into the run
//! folder, with a printable table. The statistics live in [`crate::model::profile`].

use super::run_folder::{IdentError, bias_covariates, io_err, load_run};
use crate::model::Prior;
use crate::model::bt::{self, FitOptions};
use crate::model::profile::{self, PROFILE_RIDGE};
use crate::model::summary::{build_design, solver_scales, to_solver};
use crate::report::table::fmt_nats;
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

/// Compute the profile of every covariate of a run (the bias-aware covariates also when the
/// run was naive), write `profile.json` and `profile.svg` into the run folder, and return the
/// report with its printable text.
///
/// # Errors
/// [`IdentError`].
pub fn profile_command(arg: &Path) -> Result<(ProfileReport, String), IdentError> {
    let run = load_run(arg)?;
    if let Some(w) = &run.torn_line {
        tracing::warn!("{w}");
    }
    let cfg = &run.cfg;
    if run.verdicts.is_empty() {
        return Err(IdentError::Invalid(format!("{}: the run has no valid verdicts to profile", run.dir.display())));
    }
    let cov = bias_covariates(cfg)?;
    if cov.p() == 0 {
        return Err(IdentError::Invalid(format!(
            "pool {:?} has no covariate to profile (no text for `words` and no `covariates` on the items)",
            cfg.pool.pool_id
        )));
    }
    let design = build_design(&cfg.pool, &cov, &run.verdicts);
    let prior = cfg.raw.model.prior();
    let m = cfg.pool.n_bases();
    // Solved and profiled in the solver's parametrisation (covariates far from unit scale
    // rescaled by s_j); reported in user units (c = c′ / s_j).
    let scales = solver_scales(&cov);
    let (design, lambda, _) = to_solver(&design, &prior.diagonal(m, cov.p()), None, &scales);
    let map = bt::fit(&design, &lambda, None, &FitOptions::default())?;
    let mut covariates = Vec::new();
    for (j, name) in cov.names.iter().enumerate() {
        let p = profile::profile(&design, j, map.beta[m + j], Some(&map.beta))?;
        let s = scales[j];
        covariates.push(CovariateProfile {
            name: name.clone(),
            c_hat: p.center / s,
            range_nats: p.range_nats,
            identified: p.verdict == profile::IdentVerdict::Identified,
            verdict: p.verdict.text().to_string(),
            c: p.points.iter().map(|q| q.c / s).collect(),
            log_lik: p.points.iter().map(|q| q.log_lik).collect(),
            iterations: p.points.iter().map(|q| q.iterations).collect(),
        });
    }
    let report = ProfileReport {
        run: cfg.raw.name.clone(),
        pool_id: cfg.pool.pool_id.clone(),
        design: cfg.raw.design,
        comparisons: run.verdicts.len(),
        prior,
        ridge: PROFILE_RIDGE,
        covariates,
    };
    let json_path = run.dir.join("profile.json");
    let text = serde_json::to_string_pretty(&report).expect("serialisable");
    std::fs::write(&json_path, text + "\n").map_err(io_err(&json_path))?;
    let svg_path = run.dir.join("profile.svg");
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
    let svg = crate::report::profile_plot::profile_svg(&title, &curves)
        .map_err(|e| IdentError::Invalid(format!("drawing {}: {e}", svg_path.display())))?;
    std::fs::write(&svg_path, svg).map_err(io_err(&svg_path))?;
    let text = profile_text(&report, &json_path, &svg_path);
    Ok((report, text))
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

/// `topk-judge profile RUN_OR_CONFIG`.
#[derive(Debug, clap::Args)]
pub struct ProfileArgs {
    /// A run folder (with config.yaml and verdicts.jsonl) or a config whose run exists.
    pub run_or_config: std::path::PathBuf,
}

/// `topk-judge profile`: write profile.json and profile.svg and print the table.
///
/// # Errors
/// [`IdentError`].
pub fn run(args: &ProfileArgs) -> Result<std::process::ExitCode, IdentError> {
    let (_, text) = profile_command(&args.run_or_config)?;
    super::print_out(&text);
    Ok(std::process::ExitCode::SUCCESS)
}

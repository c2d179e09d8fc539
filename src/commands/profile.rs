//! `topk-judge profile RUN_OR_CONFIG`: the profile likelihood (nats) of every bias coefficient of
//! a run (docs/identifiability.md), written as `profile.json` and `profile.svg` into the run
//! folder, with a printable table. The statistics live in [`crate::model::profile`].

use super::run_folder::{RunFolderError, bias_covariates, load_run};
use crate::model::bt::{self, FitOptions};
use crate::model::profile::{self, PROFILE_RIDGE};
use crate::model::summary::{build_design, solver_scales, to_solver};
use crate::report::profile::{CovariateProfile, ProfileReport, profile_text};
use std::path::Path;

/// Compute the profile of every covariate of a run (the bias-aware covariates also when the
/// run was naive), write `profile.json` and `profile.svg` into the run folder, and return the
/// report with its printable text.
///
/// # Errors
/// [`RunFolderError`].
pub fn profile_command(arg: &Path, out: Option<&Path>) -> Result<(ProfileReport, String), RunFolderError> {
    let run = load_run(arg)?;
    // `--out`: another folder than the run's (a read-only copy of a run); never another run's.
    let out = out.unwrap_or(&run.dir);
    if !crate::store::files::same_file(out, &run.dir) && crate::store::files::is_run_folder(out) {
        return Err(RunFolderError::Invalid(format!(
            "--out {}: the folder of another run, whose profile.json this would overwrite; give a folder of its own",
            out.display()
        )));
    }
    run.cfg.single_judge("profile").map_err(RunFolderError::Panel)?;
    // profile.json in the run's folder describes that run: a config of other settings (another
    // prior, other covariates) naming the folder does not write over it.
    super::run_folder::made_by(&run.cfg, &run.dir)
        .map_err(|msg| RunFolderError::Invalid(format!("{}: {msg}", run.dir.display())))?;
    if let Some(w) = &run.torn_line {
        tracing::warn!("{w}");
    }
    let cfg = &run.cfg;
    if run.verdicts.is_empty() {
        return Err(RunFolderError::Invalid(format!(
            "{}: the run has no valid verdicts to profile",
            run.dir.display()
        )));
    }
    let cov = bias_covariates(cfg)?;
    if cov.p() == 0 {
        return Err(RunFolderError::Invalid(if cfg.raw.model.covariates.as_ref().is_some_and(Vec::is_empty) {
            "the run's config sets `model.covariates: []`, so the model has no bias coefficient to profile; list the covariates to profile there (e.g. `[{name: words}]`) and run `profile` on that config".to_owned()
        } else {
            format!(
                "pool {:?} has no covariate to profile (no text for `words` and no `covariates` on the items)",
                cfg.pool.pool_id
            )
        }));
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
    crate::store::files::create_folder(out)
        .map_err(|m| RunFolderError::Invalid(format!("--out {}: {m}", out.display())))?;
    // A run folder that cannot be written (read-only, a copy on a read-only disk): said with
    // the way out (hunt 52: the profile was computed, then lost).
    fn cannot(path: &Path) -> impl Fn(std::io::Error) -> RunFolderError + '_ {
        move |source| {
            RunFolderError::Invalid(format!(
                "{}: cannot write: {source}; give --out DIR to write profile.json and profile.svg elsewhere",
                path.display()
            ))
        }
    }
    let json_path = out.join("profile.json");
    let text = serde_json::to_string_pretty(&report).expect("serialisable");
    std::fs::write(&json_path, text + "\n").map_err(cannot(&json_path))?;
    let svg_path = out.join("profile.svg");
    let svg = crate::report::profile::profile_plot(&report)
        .map_err(|e| RunFolderError::Invalid(format!("drawing {}: {e}", svg_path.display())))?;
    std::fs::write(&svg_path, svg).map_err(cannot(&svg_path))?;
    let text = profile_text(&report, &json_path, &svg_path);
    Ok((report, text))
}

/// `topk-judge profile RUN_OR_CONFIG`.
#[derive(Debug, clap::Args)]
pub struct ProfileArgs {
    /// A run folder (with config.yaml and verdicts.jsonl) or a config whose run exists.
    pub run_or_config: std::path::PathBuf,
    /// Folder to write profile.json and profile.svg into (default: the run folder), e.g. for a
    /// run folder that cannot be written.
    #[arg(long, value_name = "DIR")]
    pub out: Option<std::path::PathBuf>,
}

/// `topk-judge profile`: write profile.json and profile.svg and print the table.
///
/// # Errors
/// [`RunFolderError`].
pub fn run(args: &ProfileArgs) -> Result<std::process::ExitCode, RunFolderError> {
    let (_, text) = profile_command(&args.run_or_config, args.out.as_deref())?;
    super::print_out(&text);
    Ok(std::process::ExitCode::SUCCESS)
}

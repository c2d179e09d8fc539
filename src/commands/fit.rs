//! `topk-judge fit`: fit the model to verdicts collected elsewhere (docs/model.md §2).

use crate::model::summary::{ItemVerdict, ModelKind, build_design, fit_and_summarise};
use crate::report;
use crate::store::ledger::read_records;
use crate::store::pool::{self, CovariateSpec, Pool};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;

/// Output of `fit --out`.
#[derive(Debug, Serialize)]
pub struct FitOutput {
    /// Pool id.
    pub pool_id: String,
    /// Model kind.
    pub model: ModelKind,
    /// k.
    pub k: usize,
    /// Valid verdicts fitted.
    pub comparisons: usize,
    /// θ̂ per base (logits).
    pub theta: BTreeMap<String, f64>,
    /// Posterior sd per base.
    pub sd: BTreeMap<String, f64>,
    /// Top-k membership per base.
    pub membership: BTreeMap<String, f64>,
    /// Apparent quality φ̂ per base.
    pub phi: BTreeMap<String, f64>,
    /// ĉ per covariate.
    pub c: BTreeMap<String, f64>,
    /// κ̂.
    pub kappa: f64,
    /// Point top-k, best first.
    pub topk: Vec<String>,
    /// Ranking rows.
    pub ranking: Vec<report::RankRow>,
}

/// Errors of `fit`.
#[derive(Debug, thiserror::Error)]
pub enum FitCmdError {
    /// Pool problems.
    #[error(transparent)]
    Pool(#[from] pool::PoolError),
    /// Verdict file problems.
    #[error(transparent)]
    Cache(#[from] crate::store::ledger::CacheError),
    /// Bad verdicts or arguments.
    #[error("{0}")]
    Invalid(String),
    /// Fit failure.
    #[error(transparent)]
    Fit(#[from] crate::model::FitError),
}

/// Arguments of `fit`.
pub struct FitArgs<'a> {
    /// Pool file.
    pub pool_file: &'a Path,
    /// Verdicts file.
    pub verdicts_file: &'a Path,
    /// Pool id.
    pub pool_id: Option<&'a str>,
    /// Model.
    pub model: ModelKind,
    /// k.
    pub k: usize,
    /// Covariates (`None` = defaults).
    pub covariates: Option<Vec<CovariateSpec>>,
    /// Prior.
    pub prior: crate::model::Prior,
    /// Monte-Carlo draws and seed.
    pub draws: usize,
    /// Seed.
    pub seed: u64,
}

/// Fit a pool to a verdicts file.
///
/// # Errors
/// [`FitCmdError`] naming the file, line and item.
pub fn fit_file(args: &FitArgs<'_>) -> Result<(Pool, FitOutput), FitCmdError> {
    let pool = pool::read_pool(args.pool_file, args.pool_id)?;
    if args.k == 0 || args.k >= pool.n_bases() {
        return Err(FitCmdError::Invalid(format!(
            "--k {} must satisfy 1 ≤ k < number of bases ({})",
            args.k,
            pool.n_bases()
        )));
    }
    // The same checks as a run config's `model` and `acquisition` sections, named by flag.
    let flag = |e: crate::model::params::ParamError| {
        FitCmdError::Invalid(format!(
            "--{} {e}",
            if e.name == "mc_draws" { "draws".into() } else { e.name.replace('_', "-") }
        ))
    };
    args.prior.check().map_err(flag)?;
    crate::model::params::check_mc_draws(args.draws).map_err(flag)?;
    let (records, _, warning) = read_records(args.verdicts_file)?;
    if let Some(w) = warning {
        eprintln!("warning: {w}");
    }
    let mut verdicts = Vec::new();
    for (ln, r) in records.iter().enumerate() {
        if !r.pool_id.is_empty() && r.pool_id != pool.pool_id {
            continue;
        }
        let Some(y) = r.y else { continue };
        let find = |id: &str| {
            pool.item_index(id).ok_or_else(|| {
                FitCmdError::Invalid(format!(
                    "{}: record {}: item {id:?} is not in pool {:?}",
                    args.verdicts_file.display(),
                    ln + 1,
                    pool.pool_id
                ))
            })
        };
        let (a, b) = (find(&r.a)?, find(&r.b)?);
        if a == b {
            return Err(FitCmdError::Invalid(format!(
                "{}: record {}: item {:?} is compared with itself; a verdict needs two different items",
                args.verdicts_file.display(),
                ln + 1,
                r.a
            )));
        }
        verdicts.push(ItemVerdict { a, b, y, w: 1.0 });
    }
    if verdicts.is_empty() {
        eprintln!(
            "warning: {} holds no valid verdict for pool {:?}: the ranking below is the prior alone",
            args.verdicts_file.display(),
            pool.pool_id
        );
    }
    let specs = match args.model {
        ModelKind::Naive => Vec::new(),
        ModelKind::BiasAware => args.covariates.clone().unwrap_or_else(|| pool::default_covariates(&pool)),
    };
    let cov = pool::build_covariates(&pool, &specs)?;
    let design = build_design(&pool, &cov, &verdicts);
    let mut rng = crate::rng::stream(args.seed, "membership", verdicts.len() as u64);
    let (s, _, _) = fit_and_summarise(&pool, &cov, &design, &args.prior, args.k, args.draws, None, &mut rng)?;
    let out = FitOutput {
        pool_id: pool.pool_id.clone(),
        model: args.model,
        k: args.k,
        comparisons: verdicts.len(),
        theta: report::by_base(&pool, &s.theta),
        sd: report::by_base(&pool, &s.sd),
        membership: report::by_base(&pool, &s.membership),
        phi: report::by_base(&pool, &s.phi),
        c: report::by_cov(&cov, &s.c),
        kappa: s.kappa,
        topk: s.topk.iter().map(|b| pool.bases[*b].clone()).collect(),
        ranking: report::ranking(&pool, &s, args.k),
    };
    Ok((pool, out))
}

/// The printable result of `fit`: model, κ̂, ĉ per covariate, the ranking table and the top-k.
pub fn fit_text(fit: &FitOutput) -> String {
    let mut text =
        format!("pool {}: {:?} model, {} verdicts, κ = {:.3}\n", fit.pool_id, fit.model, fit.comparisons, fit.kappa);
    for (n, c) in &fit.c {
        text.push_str(&format!("c[{n}] = {c:.3}\n"));
    }
    text.push_str(&report::table::ranking_table(&fit.ranking));
    text.push_str(&format!("\ntop-{}: {}\n", fit.k, fit.topk.join(", ")));
    text
}

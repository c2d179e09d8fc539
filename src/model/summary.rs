//! From a pool and its verdicts to a fitted, summarised model: the design (docs/model.md §1–§2), the MAP,
//! the Laplace posterior sds, the top-k membership π and the point top-k.

use super::bt::{self, Design, Fit, FitError, FitOptions, Prior};
use super::laplace::Posterior;
use super::membership::{
    Normals, point_topk, topk_membership, topk_membership_apparent, topk_membership_beside,
    topk_membership_drawn_beside,
};
use crate::domain::pool::{Covariates, Pool};
use crate::domain::rng::ChaCha8Rng;
use crate::domain::verdict::ItemVerdict;
use serde::{Deserialize, Serialize};

/// Which Bradley–Terry model to fit (docs/model.md §2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ModelKind {
    /// θ and κ only; ranks by apparent quality φ.
    Naive,
    /// θ, bias coefficients c and κ.
    BiasAware,
}

/// Build the design for a pool: verdicts are sorted by (a, b, y) first so that the fit does not
/// depend on arrival order (bit-for-bit determinism).
pub fn build_design(pool: &Pool, cov: &Covariates, verdicts: &[ItemVerdict]) -> Design {
    let p = cov.p();
    let mut d = Design::new(pool.n_bases(), p);
    let mut vs = verdicts.to_vec();
    vs.sort_by(|u, v| (u.a, u.b).cmp(&(v.a, v.b)).then(u.y.total_cmp(&v.y)));
    let mut dx = vec![0.0; p];
    for v in &vs {
        for (k, slot) in dx.iter_mut().enumerate() {
            *slot = cov.x[v.a][k] - cov.x[v.b][k];
        }
        d.push(pool.item_base[v.a], pool.item_base[v.b], &dx, v.y, v.w);
    }
    d
}

/// The fitted model of one pool, in base order (length M) unless stated.
#[derive(Debug, Clone, Serialize)]
pub struct FitSummary {
    /// θ̂ per base (logits).
    pub theta: Vec<f64>,
    /// Posterior sd of θ per base (logits).
    pub sd: Vec<f64>,
    /// Top-k membership π per base.
    pub membership: Vec<f64>,
    /// Apparent quality φ̂_m = θ̂_m + ĉᵀx̄_m per base (logits; x̄_m = mean covariates of the
    /// base's items).
    pub phi: Vec<f64>,
    /// ĉ per covariate (logits per covariate unit; empty for the naive model).
    pub c: Vec<f64>,
    /// Posterior sd of c (logits per covariate unit).
    pub c_sd: Vec<f64>,
    /// κ̂, the position effect (logits; > 0 favours the first-shown answer).
    pub kappa: f64,
    /// Posterior sd of κ (logits).
    pub kappa_sd: f64,
    /// Point top-k: base indices of the k largest θ̂, best first.
    pub topk: Vec<usize>,
    /// Newton iterations of the last fit.
    pub iterations: usize,
    /// Number of observations fitted.
    pub n_obs: usize,
}

impl FitSummary {
    /// The prior alone (no fit): θ̂ = ĉ = κ̂ = 0 with the prior sds, and π = k/M for every base
    /// (all tied). What a result reports when the fit failed.
    pub fn prior(m: usize, p: usize, prior: &Prior, k: usize) -> Self {
        let sd = |l: f64| 1.0 / l.sqrt();
        Self {
            theta: vec![0.0; m],
            sd: vec![sd(prior.lambda_theta); m],
            membership: vec![k as f64 / m as f64; m],
            phi: vec![0.0; m],
            c: vec![0.0; p],
            c_sd: vec![sd(prior.lambda_b); p],
            kappa: 0.0,
            kappa_sd: sd(prior.lambda_kappa),
            topk: point_topk(&vec![0.0; m], k),
            iterations: 0,
            n_obs: 0,
        }
    }

    /// β̂ = (θ̂, ĉ, κ̂) in the design's order (length M + p + 1): the warm start of the next fit
    /// and the point of the profile likelihood.
    pub fn beta(&self) -> Vec<f64> {
        let mut beta = Vec::with_capacity(self.theta.len() + self.c.len() + 1);
        beta.extend_from_slice(&self.theta);
        beta.extend_from_slice(&self.c);
        beta.push(self.kappa);
        beta
    }
}

/// From this many parameters on, Σ and the membership draws are computed on two threads.
const PARALLEL_MIN_PARAMS: usize = 200;

/// Up to this many parameters the membership draws' normals (n × S values, 32 MB at the limit
/// with S = 1000) are drawn while the fit runs; above it they are drawn block by block.
const PREDRAW_MAX_PARAMS: usize = 4096;

/// Covariate columns whose root mean square over the items lies inside this range are solved
/// as they are; others are rescaled for the solver (see [`solver_scales`]).
pub const UNIT_SCALE_RANGE: (f64, f64) = (1e-2, 1e2);

/// The solver's scale s_j of each covariate column: the root mean square of its values over
/// the pool's items when that lies outside [`UNIT_SCALE_RANGE`], else 1.
///
/// The MAP is solved in the parametrisation x′_j = x_j / s_j, c′_j = s_j c_j with prior
/// precision λ_b / s_j² on c′_j — the same model and the same MAP, but a Hessian whose entries
/// are of one order, so that Newton converges whatever the covariate's unit (a raw covariate
/// around 1e7 otherwise leaves entries 1e14 apart). Results are reported in the user's units.
pub fn solver_scales(cov: &Covariates) -> Vec<f64> {
    (0..cov.p())
        .map(|j| {
            let n = cov.x.len().max(1) as f64;
            let rms = (cov.x.iter().map(|r| r[j] * r[j]).sum::<f64>() / n).sqrt();
            if rms > 0.0 && rms.is_finite() && !(UNIT_SCALE_RANGE.0..=UNIT_SCALE_RANGE.1).contains(&rms) {
                rms
            } else {
                1.0
            }
        })
        .collect()
}

/// `design`, the prior diagonal `lambda` and a start β (user units) in the solver's
/// parametrisation for the column scales `s` ([`solver_scales`]).
pub fn to_solver(
    design: &Design,
    lambda: &[f64],
    start: Option<&[f64]>,
    s: &[f64],
) -> (Design, Vec<f64>, Option<Vec<f64>>) {
    let (m, p) = (design.m, design.p);
    let mut d = design.clone();
    for row in d.dx.chunks_mut(p.max(1)) {
        for (v, sj) in row.iter_mut().zip(s) {
            *v /= sj;
        }
    }
    let mut lam = lambda.to_vec();
    for (j, sj) in s.iter().enumerate() {
        lam[m + j] /= sj * sj;
    }
    let start = start.map(|b| {
        let mut b = b.to_vec();
        for (j, sj) in s.iter().enumerate() {
            if let Some(v) = b.get_mut(m + j) {
                *v *= sj;
            }
        }
        b
    });
    (d, lam, start)
}

/// The MAP fit of `design` with prior diagonal `lambda`, solved in the parametrisation of the
/// column scales `s` ([`solver_scales`]; all 1 = as is). The returned β̂ is in user units; its
/// Cholesky factor is the solver's (the θ and κ blocks, which membership draws use, are the
/// same in both).
///
/// # Errors
/// [`FitError`] from the Newton fit.
pub fn fit_scaled(
    design: &Design,
    lambda: &[f64],
    start: Option<&[f64]>,
    s: &[f64],
    opts: &FitOptions,
) -> Result<Fit, FitError> {
    fit_scaled_beside(design, lambda, start, s, opts, || ()).0
}

/// [`fit_scaled`] with an independent job `side` on a second thread ([`bt::fit_beside`]).
///
/// # Errors
/// [`FitError`] from the Newton fit (the job runs to its end either way).
pub fn fit_scaled_beside<T: Send>(
    design: &Design,
    lambda: &[f64],
    start: Option<&[f64]>,
    s: &[f64],
    opts: &FitOptions,
    side: impl FnOnce() -> T + Send,
) -> (Result<Fit, FitError>, T) {
    if s.iter().all(|v| *v == 1.0) {
        return bt::fit_beside(design, lambda, start, opts, side);
    }
    let (d, lam, start) = to_solver(design, lambda, start, s);
    let (fit, out) = bt::fit_beside(&d, &lam, start.as_deref(), opts, side);
    let fit = fit.map(|mut fit| {
        for (j, sj) in s.iter().enumerate() {
            fit.beta[design.m + j] /= sj;
        }
        fit
    });
    (fit, out)
}

/// Mean covariates x̄_m of each base's items (M rows of p).
pub fn base_means(pool: &Pool, cov: &Covariates) -> Vec<Vec<f64>> {
    let (m, p) = (pool.n_bases(), cov.p());
    let mut xbar = vec![vec![0.0; p]; m];
    let mut cnt = vec![0usize; m];
    for (i, &b) in pool.item_base.iter().enumerate() {
        cnt[b] += 1;
        for k2 in 0..p {
            xbar[b][k2] += cov.x[i][k2];
        }
    }
    for (row, c) in xbar.iter_mut().zip(&cnt) {
        row.iter_mut().for_each(|v| *v /= (*c).max(1) as f64);
    }
    xbar
}

/// Fit the model and summarise it; also returns the fit (for acquisition) and the posterior.
///
/// Solved in the parametrisation of [`solver_scales`]; everything returned is in user units
/// apart from the fit's Cholesky factor (see [`fit_scaled`]).
///
/// # Errors
/// [`FitError`] from the Newton fit.
#[allow(clippy::too_many_arguments)]
pub fn fit_and_summarise(
    pool: &Pool,
    cov: &Covariates,
    design: &Design,
    prior: &Prior,
    k: usize,
    draws: usize,
    warm: Option<&[f64]>,
    rng: &mut ChaCha8Rng,
) -> Result<(FitSummary, Fit, Posterior), FitError> {
    fit_and_summarise_with(pool, cov, design, prior, k, draws, warm, rng, &FitOptions::default())
}

/// [`fit_and_summarise`] with explicit fit options (e.g. to force the dense or the large-pool
/// path, [`FitOptions::sparse_min_params`]).
///
/// # Errors
/// [`FitError`] from the Newton fit.
#[allow(clippy::too_many_arguments)]
pub fn fit_and_summarise_with(
    pool: &Pool,
    cov: &Covariates,
    design: &Design,
    prior: &Prior,
    k: usize,
    draws: usize,
    warm: Option<&[f64]>,
    rng: &mut ChaCha8Rng,
    opts: &FitOptions,
) -> Result<(FitSummary, Fit, Posterior), FitError> {
    let m = pool.n_bases();
    let p = cov.p();
    let lambda = prior.diagonal(m, p);
    let scales = solver_scales(cov);
    let n = design.n_params();
    // Σ = H⁻¹ and the membership draws both start from the Cholesky factor and are independent:
    // on large problems Σ runs on a second thread, which then helps with the draws left
    // (deterministic: the same blocks and seeds whichever thread draws them). The draws' normals
    // do not depend on the fit: they are drawn on a second thread while the fit runs (after H's
    // symbolic analysis, on the thread that does it, on the large-pool path).
    let (mut post, membership, fit) = if (PARALLEL_MIN_PARAMS..=PREDRAW_MAX_PARAMS).contains(&n) {
        let seeds = Normals::seeds(draws, rng);
        let (fit, normals) = fit_scaled_beside(design, &lambda, warm, &scales, opts, || Normals::draw(n, &seeds));
        let fit = fit?;
        let (membership, post) = topk_membership_drawn_beside(&fit, m, k, normals, || Posterior::from_fit(&fit));
        (post, membership, fit)
    } else if n >= PARALLEL_MIN_PARAMS {
        // Drawn block by block (one n × 250 work matrix per thread).
        let fit = fit_scaled(design, &lambda, warm, &scales, opts)?;
        let (membership, post) = topk_membership_beside(&fit, m, k, draws, rng, || Posterior::from_fit(&fit));
        (post, membership, fit)
    } else {
        let fit = fit_scaled(design, &lambda, warm, &scales, opts)?;
        (Posterior::from_fit(&fit), topk_membership(&fit, m, k, draws, rng), fit)
    };
    // Σ in user units: the c rows and columns divided by their scales.
    post.rescale(m, &scales);
    let sd_all = post.sd();
    let theta = fit.beta[..m].to_vec();
    let c = fit.beta[m..m + p].to_vec();
    let xbar = base_means(pool, cov);
    let phi = (0..m).map(|b| theta[b] + (0..p).map(|k2| c[k2] * xbar[b][k2]).sum::<f64>()).collect();
    let topk = point_topk(&theta, k);
    Ok((
        FitSummary {
            sd: sd_all[..m].to_vec(),
            c_sd: sd_all[m..m + p].to_vec(),
            kappa: fit.beta[m + p],
            kappa_sd: sd_all[m + p],
            theta,
            membership,
            phi,
            c,
            topk,
            iterations: fit.iterations,
            n_obs: design.obs.len(),
        },
        fit,
        post,
    ))
}

/// The apparent quality of a fit: φ̂_m = θ̂_m + ĉᵀx̄_m per base, its posterior sd and its
/// top-k membership π (length M each).
#[derive(Debug, Clone, PartialEq)]
pub struct Apparent {
    /// φ̂ per base (logits).
    pub phi: Vec<f64>,
    /// Posterior sd of φ per base: √(wᵀΣw) with w = (e_m, x̄_m) on the (θ, c) blocks.
    pub phi_sd: Vec<f64>,
    /// P(base m is among the k largest φ) under the Laplace posterior.
    pub membership: Vec<f64>,
    /// 90 % rank intervals of θ and of φ per base ([`crate::model::membership::rank_intervals`];
    /// `None` when not drawn, e.g. above 1,000 bases).
    pub ranks: Option<RankIntervals>,
}

/// The central 90 % interval of each base's rank (1 = best), under the corrected (θ) and the
/// apparent (φ) ranking.
#[derive(Debug, Clone, PartialEq)]
pub struct RankIntervals {
    /// By θ.
    pub theta: Vec<(usize, usize)>,
    /// By φ.
    pub phi: Vec<(usize, usize)>,
}

/// The level of [`RankIntervals`].
pub const RANK_LEVEL: f64 = 0.9;

impl Apparent {
    /// The apparent quality of a summary whose θ̂ already is the apparent quality (the naive
    /// model, or the prior alone): φ̂ = θ̂ with its sd and π (no rank intervals).
    pub fn of_summary(s: &FitSummary) -> Self {
        Self { phi: s.theta.clone(), phi_sd: s.sd.clone(), membership: s.membership.clone(), ranks: None }
    }
}

/// The apparent quality of the MAP at `beta` (user units, e.g. a run's final fit): one Newton
/// fit warm-started there (no step when it is the MAP), the posterior of φ = θ + cᵀx̄ and its
/// top-k membership from `draws` Monte-Carlo draws.
///
/// # Errors
/// [`FitError`] from the Newton fit.
#[allow(clippy::too_many_arguments)]
pub fn apparent_quality(
    pool: &Pool,
    cov: &Covariates,
    design: &Design,
    prior: &Prior,
    k: usize,
    draws: usize,
    beta: &[f64],
    rng: &mut ChaCha8Rng,
) -> Result<Apparent, FitError> {
    let (m, p) = (pool.n_bases(), cov.p());
    let scales = solver_scales(cov);
    let (d, lam, start) = to_solver(design, &prior.diagonal(m, p), Some(beta), &scales);
    let fit = bt::fit(&d, &lam, start.as_deref(), &FitOptions::default())?;
    let xbar: Vec<Vec<f64>> =
        base_means(pool, cov).into_iter().map(|r| r.iter().zip(&scales).map(|(v, s)| v / s).collect()).collect();
    let post = Posterior::from_fit(&fit);
    let phi: Vec<f64> =
        (0..m).map(|b| fit.beta[b] + (0..p).map(|j| fit.beta[m + j] * xbar[b][j]).sum::<f64>()).collect();
    // Var(φ_b) = wᵀΣw with w = (e_b, x̄_b, 0): Σ_bb + 2 Σ_j x̄_bj Σ_b,c_j + Σ_jk x̄_bj x̄_bk Σ_c_j,c_k,
    // from diag Σ and the p columns of c (no n×n Σ needed; large pools solve them).
    let c_cols = post.columns(&(m..m + p).collect::<Vec<_>>());
    let phi_sd = (0..m)
        .map(|b| {
            let x = &xbar[b];
            let mut v = post.var(b);
            for (j, xj) in x.iter().enumerate() {
                v += 2.0 * xj * c_cols[(b, j)];
                for (k2, xk) in x.iter().enumerate() {
                    v += xj * xk * c_cols[(m + k2, j)];
                }
            }
            v.max(0.0).sqrt()
        })
        .collect();
    let membership = topk_membership_apparent(&fit, m, &xbar, k, draws, rng);
    let ranks = crate::model::membership::rank_intervals(&fit, m, None, draws, RANK_LEVEL, rng)
        .zip(crate::model::membership::rank_intervals(&fit, m, Some(&xbar), draws, RANK_LEVEL, rng))
        .map(|(theta, phi)| RankIntervals { theta, phi });
    Ok(Apparent { phi, phi_sd, membership, ranks })
}

//! From a pool and its verdicts to a fitted, summarised model: the design (docs/model.md §1–§2), the MAP,
//! the Laplace posterior sds, the top-k membership π and the point top-k.

use super::bt::{self, Design, Fit, FitError, FitOptions, Prior};
use super::laplace::Posterior;
use super::membership::{point_topk, topk_membership};
use crate::rng::ChaCha8Rng;
use crate::store::pool::{Covariates, Pool};
use serde::{Deserialize, Serialize};

/// Which Bradley–Terry model to fit (docs/model.md §2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
#[value(rename_all = "snake_case")]
pub enum ModelKind {
    /// θ and κ only; ranks by apparent quality φ.
    Naive,
    /// θ, bias coefficients c and κ.
    BiasAware,
}

/// One verdict on an ordered pair of items (item indices), outcome y ∈ [0, 1], weight w.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ItemVerdict {
    /// Item shown first (slot A).
    pub a: usize,
    /// Item shown second (slot B).
    pub b: usize,
    /// 1 first-shown wins, 0 second-shown wins, ½ tie, or soft P(A).
    pub y: f64,
    /// Weight (1 by default).
    pub w: f64,
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
    /// Apparent quality φ̂_m = θ̂_m + ĉᵀx̄_m per base (x̄_m = mean covariates of the base's items).
    pub phi: Vec<f64>,
    /// ĉ per covariate (logits per covariate unit; empty for the naive model).
    pub c: Vec<f64>,
    /// Posterior sd of c.
    pub c_sd: Vec<f64>,
    /// κ̂, the position effect (logits; > 0 favours the first-shown answer).
    pub kappa: f64,
    /// Posterior sd of κ.
    pub kappa_sd: f64,
    /// Point top-k: base indices of the k largest θ̂, best first.
    pub topk: Vec<usize>,
    /// Newton iterations of the last fit.
    pub iterations: usize,
    /// Number of observations fitted.
    pub n_obs: usize,
}

/// From this many parameters on, Σ and the membership draws are computed on two threads.
const PARALLEL_MIN_PARAMS: usize = 200;

/// Fit the model and summarise it; also returns the fit (for acquisition) and the posterior.
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
    let m = pool.n_bases();
    let p = cov.p();
    let lambda = prior.diagonal(m, p);
    let fit = bt::fit(design, &lambda, warm, &FitOptions::default())?;
    // Σ = H⁻¹ and the membership draws both start from the Cholesky factor and are independent:
    // on large problems they run side by side (each is deterministic on its own).
    let (post, membership) = if fit.beta.len() >= PARALLEL_MIN_PARAMS {
        std::thread::scope(|s| {
            let sigma = s.spawn(|| Posterior::from_fit(&fit));
            let membership = topk_membership(&fit, m, k, draws, rng);
            (sigma.join().expect("posterior worker panicked"), membership)
        })
    } else {
        (Posterior::from_fit(&fit), topk_membership(&fit, m, k, draws, rng))
    };
    let sd_all = post.sd();
    let theta = fit.beta[..m].to_vec();
    let c = fit.beta[m..m + p].to_vec();
    let mut xbar = vec![vec![0.0; p]; m];
    let mut cnt = vec![0usize; m];
    for (i, &b) in pool.item_base.iter().enumerate() {
        cnt[b] += 1;
        for k2 in 0..p {
            xbar[b][k2] += cov.x[i][k2];
        }
    }
    let phi = (0..m).map(|b| theta[b] + (0..p).map(|k2| c[k2] * xbar[b][k2] / cnt[b] as f64).sum::<f64>()).collect();
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

//! Acquisition aimed at the apparent ranking of systems (docs/systems.md, "Acquisition").
//!
//! A run over many prompts reports, by default, the apparent quality φ_s = θ_s + cᵀx̄_s of each
//! system (x̄_s: the mean covariates of its answers; docs/model.md "Which ranking is
//! reported"). The top-k rule should then spend its queries where *that* ranking is undecided.
//! The Laplace posterior of (θ, c, κ) is Gaussian, so (φ, c, κ) = W(θ, c, κ) is too, with mean
//! Wβ̂ and covariance WΣWᵀ, W the identity except row s: e_s + Σ_j x̄_sj e_{m+j}. Scored at equal
//! covariates (the candidates of one system pair then differ only by prompt), the query
//! (a, b) of systems i, j has the design row e_i − e_j + e_κ in these coordinates, so the
//! rule of docs/model.md §3 applies unchanged to this posterior and its top-k membership π_φ.

use crate::domain::rng::ChaCha8Rng;
use crate::model::laplace::Posterior;
use crate::model::linalg::{Cholesky, Matrix};
use rand_distr::{Distribution, StandardNormal};

/// The posterior of (φ, c, κ) from that of (θ, c, κ) (`post`, dense, length m + p + 1) and the
/// systems' mean covariates `xbar` (m × p, the units of the covariates the fit used), with the
/// top-k membership of φ from `draws` joint draws (ties by index). `None` when Σ is not dense
/// or WΣWᵀ has no Cholesky factor (the caller then targets θ).
pub fn target(
    post: &Posterior,
    xbar: &[Vec<f64>],
    k: usize,
    draws: usize,
    rng: &mut ChaCha8Rng,
) -> Option<(Posterior, Vec<f64>)> {
    let sigma = post.dense_cov()?;
    let n = post.mean.len();
    let m = xbar.len();
    let p = xbar.first().map_or(0, Vec::len);
    if n != m + p + 1 {
        return None;
    }
    let mut mean = post.mean.clone();
    for (s, x) in xbar.iter().enumerate() {
        mean[s] += (0..p).map(|j| x[j] * post.mean[m + j]).sum::<f64>();
    }
    // A = WΣ (rows of W applied), then WΣWᵀ = A Wᵀ (columns).
    let mut a = Matrix::from_fn(n, n, |r, c| sigma[(r, c)]);
    for (s, x) in xbar.iter().enumerate() {
        for c in 0..n {
            a[(s, c)] += (0..p).map(|j| x[j] * sigma[(m + j, c)]).sum::<f64>();
        }
    }
    let mut cov = Matrix::from_fn(n, n, |r, c| a[(r, c)]);
    for (s, x) in xbar.iter().enumerate() {
        for r in 0..n {
            cov[(r, s)] += (0..p).map(|j| x[j] * a[(r, m + j)]).sum::<f64>();
        }
    }
    let phi_cov = Matrix::from_fn(m, m, |r, c| 0.5 * (cov[(r, c)] + cov[(c, r)]));
    let chol = Cholesky::factor(&phi_cov).ok()?;
    let mut hits = vec![0usize; m];
    for _ in 0..draws {
        let z: Vec<f64> = (0..m).map(|_| StandardNormal.sample(rng)).collect();
        let lz = chol.lower_mul(&z);
        let phi: Vec<f64> = (0..m).map(|s| mean[s] + lz[s]).collect();
        for s in crate::model::membership::point_topk(&phi, k) {
            hits[s] += 1;
        }
    }
    let membership = hits.iter().map(|&h| h as f64 / draws.max(1) as f64).collect();
    Some((Posterior::dense(mean, cov), membership))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_apparent_posterior_is_the_linear_map_of_the_laplace_posterior() {
        // m = 2 systems, p = 1 covariate: β̂ = (θ0, θ1, c, κ) = (0.5, −0.2, 2.0, 0.1).
        let cov = Matrix::from_fn(4, 4, |r, c| if r == c { 1.0 + r as f64 } else { 0.1 });
        let post = Posterior::dense(vec![0.5, -0.2, 2.0, 0.1], cov);
        let xbar = vec![vec![1.0], vec![-0.5]];
        let mut rng = crate::domain::rng::stream(1, "t", 0);
        let (t, pi) = target(&post, &xbar, 1, 4000, &mut rng).unwrap();
        // φ = θ + c x̄: 0.5 + 2 = 2.5 and −0.2 − 1 = −1.2; c and κ unchanged.
        assert_eq!(t.mean, vec![2.5, -1.2, 2.0, 0.1]);
        // Independent computation of WΣWᵀ with the explicit W.
        let w = [[1.0, 0.0, 1.0, 0.0], [0.0, 1.0, -0.5, 0.0], [0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0]];
        let s = post.dense_cov().unwrap();
        let got = t.dense_cov().unwrap();
        for r in 0..4 {
            for c in 0..4 {
                let want: f64 =
                    (0..4).flat_map(|u| (0..4).map(move |v| (u, v))).map(|(u, v)| w[r][u] * s[(u, v)] * w[c][v]).sum();
                assert!((got[(r, c)] - want).abs() < 1e-12, "({r}, {c}): {} vs {want}", got[(r, c)]);
            }
        }
        // Var(φ0 − φ1) = 1 + 2·0.5·... : P(φ0 > φ1) = Φ(3.7 / sd), close to 1.
        let sd = (got[(0, 0)] + got[(1, 1)] - 2.0 * got[(0, 1)]).sqrt();
        let p0 = 0.5 * (1.0 + libm_erf(3.7 / sd / std::f64::consts::SQRT_2));
        assert!((pi[0] - p0).abs() < 0.02, "{pi:?} vs {p0}");
        assert!((pi[0] + pi[1] - 1.0).abs() < 1e-12);
    }

    /// erf by the Abramowitz–Stegun 7.1.26 rational approximation (|error| < 1.5e-7).
    fn libm_erf(x: f64) -> f64 {
        let t = 1.0 / (1.0 + 0.327_591_1 * x.abs());
        let y = 1.0
            - (((((1.061_405_429 * t - 1.453_152_027) * t) + 1.421_413_741) * t - 0.284_496_736) * t + 0.254_829_592)
                * t
                * (-x * x).exp();
        if x >= 0.0 { y } else { -y }
    }
}

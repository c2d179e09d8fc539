//! Laplace posterior β ~ N(β̂, H⁻¹) at the MAP (docs/model.md §2, paper "deferred details").

use super::bt::Fit;
use super::linalg::Matrix;

/// The Laplace posterior of a fit: mean β̂ and covariance Σ = H(β̂)⁻¹ (n×n, order θ, c, κ).
pub struct Posterior {
    /// β̂ (length n), logits.
    pub mean: Vec<f64>,
    /// Σ = H⁻¹ (n×n).
    pub cov: Matrix,
}

impl Posterior {
    /// Σ = H⁻¹ from the fit's Cholesky factor.
    pub fn from_fit(fit: &Fit) -> Self {
        Self { mean: fit.beta.clone(), cov: fit.chol.inverse() }
    }

    /// Posterior standard deviations √Σ_rr (length n), logits.
    pub fn sd(&self) -> Vec<f64> {
        (0..self.mean.len()).map(|r| self.cov[(r, r)].max(0.0).sqrt()).collect()
    }

    /// Posterior variance of the quality contrast θ_i − θ_j: Σ_ii + Σ_jj − 2Σ_ij.
    pub fn contrast_var(&self, i: usize, j: usize) -> f64 {
        self.cov[(i, i)] + self.cov[(j, j)] - 2.0 * self.cov[(i, j)]
    }
}

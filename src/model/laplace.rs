//! Laplace posterior β ~ N(β̂, H⁻¹) at the MAP (docs/model.md §2, paper "deferred details").
//!
//! Small problems keep the dense Σ = H⁻¹. Large pools (docs/model.md §2, "Large pools") keep the
//! sparse factor of H and diag(Σ) from its selected inverse; the Σ entries acquisition needs come
//! from solves with the factor (columns Σ e_r, products Σ d), never from an n×n matrix.

use super::bt::Fit;
use super::linalg::{Factor, InverseFactor, Matrix, SparseCholesky};
use std::sync::Arc;

/// The posterior covariance Σ = H⁻¹ (n×n, order θ, c, κ), dense or implicit.
pub enum Covariance {
    /// Σ as a dense matrix.
    Dense(Matrix),
    /// Σ through the sparse factor of H, with its diagonal precomputed.
    Sparse {
        /// Σ_rr (length n).
        diag: Vec<f64>,
        /// The factor P H Pᵀ = LLᵀ.
        factor: Arc<SparseCholesky>,
        /// W = L⁻¹ when L's fill is nearly dense ([`SparseCholesky::dense_fill`]): then diag Σ,
        /// Σ columns and products Σd come from W.
        inverse: Option<Arc<InverseFactor>>,
        /// D with Σ = D H⁻¹ D when H was factored in scaled units (empty: D = I; see
        /// [`Posterior::rescale`]).
        scale: Vec<f64>,
    },
}

/// The Laplace posterior of a fit: mean β̂ and covariance Σ = H(β̂)⁻¹ (n×n, order θ, c, κ).
pub struct Posterior {
    /// β̂ (length n), logits.
    pub mean: Vec<f64>,
    /// Σ = H⁻¹.
    pub cov: Covariance,
}

impl Posterior {
    /// A posterior with a dense covariance.
    pub fn dense(mean: Vec<f64>, cov: Matrix) -> Self {
        Self { mean, cov: Covariance::Dense(cov) }
    }

    /// Σ from the fit's factor: the dense inverse, or (large pools) diag Σ by selected inversion,
    /// or from W = L⁻¹ when the factor's fill is nearly dense.
    pub fn from_fit(fit: &Fit) -> Self {
        let cov = match &fit.chol {
            Factor::Dense(c) => Covariance::Dense(c.inverse()),
            Factor::Sparse(f) if f.dense_fill() => {
                let inv = f.inverse_factor();
                Covariance::Sparse {
                    diag: inv.inverse_diag(),
                    factor: f.clone(),
                    inverse: Some(Arc::new(inv)),
                    scale: Vec::new(),
                }
            }
            Factor::Sparse(f) => {
                Covariance::Sparse { diag: f.inverse_diag(), factor: f.clone(), inverse: None, scale: Vec::new() }
            }
        };
        Self { mean: fit.beta.clone(), cov }
    }

    /// Σ in user units when the fit was solved with covariate columns scaled by `scales` (length
    /// p): the c rows and columns of Σ divided by their scales (Σ ← D Σ D, D = diag(1, 1/s, 1)).
    pub fn rescale(&mut self, m: usize, scales: &[f64]) {
        if scales.iter().all(|s| *s == 1.0) {
            return;
        }
        let n = self.mean.len();
        match &mut self.cov {
            Covariance::Dense(cov) => {
                for (j, sj) in scales.iter().enumerate() {
                    if *sj != 1.0 {
                        for r in 0..n {
                            cov[(m + j, r)] /= sj;
                        }
                        for r in 0..n {
                            cov[(r, m + j)] /= sj;
                        }
                    }
                }
            }
            Covariance::Sparse { diag, scale, .. } => {
                if scale.is_empty() {
                    *scale = vec![1.0; n];
                }
                for (j, sj) in scales.iter().enumerate() {
                    scale[m + j] /= sj;
                    diag[m + j] /= sj * sj;
                }
            }
        }
    }

    /// The dense Σ, when this posterior has one (small problems).
    pub fn dense_cov(&self) -> Option<&Matrix> {
        match &self.cov {
            Covariance::Dense(m) => Some(m),
            Covariance::Sparse { .. } => None,
        }
    }

    /// Posterior variance of parameter `r`, Σ_rr (logits²).
    pub fn var(&self, r: usize) -> f64 {
        match &self.cov {
            Covariance::Dense(m) => m[(r, r)],
            Covariance::Sparse { diag, .. } => diag[r],
        }
    }

    /// Whether parameter `r` is known to be independent of all others: a large-pool posterior
    /// whose H has no off-diagonal entry in row r (a base no verdict has touched), so
    /// Σ e_r = Σ_rr e_r without a solve. Always `false` for a dense Σ (not tracked there).
    pub fn is_isolated(&self, r: usize) -> bool {
        match &self.cov {
            Covariance::Dense(_) => false,
            Covariance::Sparse { factor, .. } => factor.is_isolated(r),
        }
    }

    /// Posterior standard deviations √Σ_rr (length n), logits.
    pub fn sd(&self) -> Vec<f64> {
        (0..self.mean.len()).map(|r| self.var(r).max(0.0).sqrt()).collect()
    }

    /// Σ d for a design vector given by its nonzeros (index, value) (length n).
    pub fn cov_times(&self, d: &[(usize, f64)]) -> Vec<f64> {
        let n = self.mean.len();
        match &self.cov {
            Covariance::Dense(m) => {
                let mut u = vec![0.0; n];
                for &(c, v) in d {
                    if v != 0.0 {
                        for (t, s) in u.iter_mut().zip(m.col(c)) {
                            *t += v * s;
                        }
                    }
                }
                u
            }
            Covariance::Sparse { factor, inverse, scale, .. } => {
                let d_of = |r: usize| if scale.is_empty() { 1.0 } else { scale[r] };
                let mut b = Matrix::zeros(n, 1);
                for &(c, v) in d {
                    b[(c, 0)] += v * d_of(c);
                }
                match inverse {
                    Some(w) => w.solve_in_place(&mut b),
                    None => factor.solve_in_place(&mut b),
                }
                let mut u = b.col(0).to_vec();
                for (r, x) in u.iter_mut().enumerate() {
                    *x *= d_of(r);
                }
                u
            }
        }
    }

    /// The columns Σ e_c for `cols` (n×cols.len()): copies of the dense Σ, or solves with the
    /// sparse factor (all columns at once).
    pub fn columns(&self, cols: &[usize]) -> Matrix {
        let n = self.mean.len();
        match &self.cov {
            Covariance::Dense(m) => Matrix::from_fn(n, cols.len(), |r, j| m.col(cols[j])[r]),
            Covariance::Sparse { factor, inverse, scale, .. } => {
                let d_of = |r: usize| if scale.is_empty() { 1.0 } else { scale[r] };
                let mut b = Matrix::from_fn(n, cols.len(), |r, j| if r == cols[j] { d_of(r) } else { 0.0 });
                match inverse {
                    Some(w) => w.solve_in_place(&mut b),
                    None => factor.solve_in_place(&mut b),
                }
                Matrix::from_fn(n, cols.len(), |r, j| b[(r, j)] * d_of(r))
            }
        }
    }

    /// Posterior variance of the quality contrast θ_i − θ_j: Σ_ii + Σ_jj − 2Σ_ij.
    pub fn contrast_var(&self, i: usize, j: usize) -> f64 {
        match &self.cov {
            Covariance::Dense(m) => m[(i, i)] + m[(j, j)] - 2.0 * m[(i, j)],
            Covariance::Sparse { .. } => {
                let u = self.cov_times(&[(i, 1.0), (j, -1.0)]);
                u[i] - u[j]
            }
        }
    }
}

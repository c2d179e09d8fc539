//! The only faer import: dense symmetric matrices, Cholesky (H = LLᵀ), triangular solves,
//! inverse, and the Sherman–Morrison rank-one downdate of a covariance (SPEC §2–§3).

use faer::Side;
use faer::linalg::solvers::{DenseSolveCore, Solve};

/// Dense column-major f64 matrix (faer's `Mat<f64>`); index with `m[(i, j)]`.
pub type Matrix = faer::Mat<f64>;

/// An n×n zero matrix.
pub fn zeros(n: usize, m: usize) -> Matrix {
    Matrix::zeros(n, m)
}

/// Cholesky factor of a symmetric positive-definite matrix, H = L Lᵀ.
pub struct Cholesky {
    llt: faer::linalg::solvers::Llt<f64>,
}

impl Cholesky {
    /// Factor `h` (n×n, symmetric; only the lower triangle is read).
    ///
    /// # Errors
    /// `Err(index)`: the pivot at `index` was not positive (the matrix is not positive definite).
    pub fn factor(h: &Matrix) -> Result<Self, usize> {
        match h.llt(Side::Lower) {
            Ok(llt) => Ok(Self { llt }),
            Err(faer::linalg::cholesky::llt::factor::LltError::NonPositivePivot { index }) => Err(index),
        }
    }

    /// Dimension n.
    pub fn dim(&self) -> usize {
        self.llt.L().nrows()
    }

    /// Solve H x = b.
    pub fn solve(&self, b: &[f64]) -> Vec<f64> {
        let mut rhs = Matrix::from_fn(b.len(), 1, |i, _| b[i]);
        self.llt.solve_in_place(rhs.as_mut());
        (0..b.len()).map(|i| rhs[(i, 0)]).collect()
    }

    /// H⁻¹ (n×n).
    pub fn inverse(&self) -> Matrix {
        self.llt.inverse()
    }

    /// Solve Lᵀ U = Z in place for every column of `z` (n×S): each column of the result is a
    /// draw from N(0, H⁻¹) when Z's columns are N(0, I) (SPEC §2, no explicit inverse needed).
    pub fn solve_lt_in_place(&self, z: &mut Matrix) {
        faer::linalg::triangular_solve::solve_upper_triangular_in_place(
            self.llt.L().transpose(),
            z.as_mut(),
            faer::Par::Seq,
        );
    }

    /// L z for the lower-triangular factor L (length n): with z ~ N(0, I), L z ~ N(0, H) — used to
    /// draw from a covariance that was factored directly (e.g. Σ for Thompson sampling).
    ///
    /// # Panics
    /// If `z.len()` differs from the dimension.
    pub fn lower_mul(&self, z: &[f64]) -> Vec<f64> {
        let l = self.llt.L();
        assert_eq!(z.len(), l.nrows(), "z has length {} but L is {}×{}", z.len(), l.nrows(), l.nrows());
        (0..l.nrows()).map(|i| (0..=i).map(|j| l[(i, j)] * z[j]).sum()).collect()
    }

    /// log det H = 2 Σ log L_ii.
    pub fn log_det(&self) -> f64 {
        let l = self.llt.L();
        (0..l.nrows()).map(|i| 2.0 * l[(i, i)].ln()).sum()
    }
}

/// Σ ← Σ − w (Σd)(Σd)ᵀ / (1 + w dᵀΣd): the posterior covariance after one more observation with
/// design row `d` (length n) and Fisher weight `w` = p̂(1 − p̂) (Sherman–Morrison, SPEC §3).
///
/// `sd` must be Σd (length n), computed by the caller who knows the sparsity of d.
///
/// # Panics
/// If the dimensions disagree.
pub fn sherman_morrison_update(sigma: &mut Matrix, sd: &[f64], d_sigma_d: f64, w: f64) {
    let n = sigma.nrows();
    assert_eq!(sd.len(), n, "Σd has length {} but Σ is {n}×{n}", sd.len());
    let f = w / (1.0 + w * d_sigma_d);
    for j in 0..n {
        let fj = f * sd[j];
        if fj == 0.0 {
            continue;
        }
        let col = sigma.col_mut(j);
        let col = col.try_as_col_major_mut().expect("owned matrices are column major").as_slice_mut();
        for (c, s) in col.iter_mut().zip(sd) {
            *c -= fj * s;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spd(n: usize) -> Matrix {
        let b = Matrix::from_fn(n, n, |i, j| ((i * 7 + j * 3) % 5) as f64 - 2.0 + if i == j { 0.5 } else { 0.0 });
        let mut a = &b * b.transpose();
        for i in 0..n {
            a[(i, i)] += n as f64;
        }
        a
    }

    #[test]
    fn solve_and_inverse_agree() {
        let a = spd(6);
        let ch = Cholesky::factor(&a).unwrap();
        let b: Vec<f64> = (0..6).map(|i| i as f64 - 1.5).collect();
        let x = ch.solve(&b);
        for i in 0..6 {
            let r: f64 = (0..6).map(|j| a[(i, j)] * x[j]).sum();
            assert!((r - b[i]).abs() < 1e-12);
        }
        let inv = ch.inverse();
        let prod = &a * &inv;
        for i in 0..6 {
            for j in 0..6 {
                assert!((prod[(i, j)] - if i == j { 1.0 } else { 0.0 }).abs() < 1e-12);
            }
        }
    }

    #[test]
    fn not_positive_definite_reports_pivot() {
        let mut a = Matrix::zeros(3, 3);
        a[(0, 0)] = 1.0;
        a[(1, 1)] = -1.0;
        a[(2, 2)] = 1.0;
        assert_eq!(Cholesky::factor(&a).err(), Some(1));
    }

    #[test]
    fn sherman_morrison_matches_refactorisation() {
        let n = 5;
        let a = spd(n);
        let d = [1.0, -1.0, 0.0, 0.3, 1.0];
        let w = 0.21;
        let mut sigma = Cholesky::factor(&a).unwrap().inverse();
        let sd: Vec<f64> = (0..n).map(|i| (0..n).map(|j| sigma[(i, j)] * d[j]).sum()).collect();
        let dsd: f64 = (0..n).map(|i| d[i] * sd[i]).sum();
        sherman_morrison_update(&mut sigma, &sd, dsd, w);
        let mut a2 = a.clone();
        for i in 0..n {
            for j in 0..n {
                a2[(i, j)] += w * d[i] * d[j];
            }
        }
        let direct = Cholesky::factor(&a2).unwrap().inverse();
        for i in 0..n {
            for j in 0..n {
                assert!((sigma[(i, j)] - direct[(i, j)]).abs() < 1e-12);
            }
        }
    }
}

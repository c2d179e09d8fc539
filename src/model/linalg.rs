//! The only faer import: dense symmetric matrices, Cholesky (H = LLᵀ), triangular solves,
//! inverse, and the Sherman–Morrison rank-one downdate of a covariance (docs/model.md §2–§3).
//!
//! Matrices are stored in our own column-major `Vec<f64>` and handed to faer's kernels as
//! views. faer's own `Mat` allocates with 64-byte alignment, which the system allocator serves
//! with fresh pages every time; at n = 1000 each 8 MB matrix then costs ~6 ms of page faults
//! per refit. A plain `Vec` is recycled by the allocator from one refit to the next.

use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::cholesky::llt::factor::{LltError, LltRegularization, cholesky_in_place, cholesky_in_place_scratch};
use faer::linalg::matmul::triangular::{BlockStructure, matmul};
use faer::{Accum, MatMut, MatRef, Par};

/// Dense column-major f64 matrix; index with `m[(row, col)]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Matrix {
    nrows: usize,
    ncols: usize,
    data: Vec<f64>,
}

impl Matrix {
    /// An nrows×ncols zero matrix.
    pub fn zeros(nrows: usize, ncols: usize) -> Self {
        Self { nrows, ncols, data: vec![0.0; nrows * ncols] }
    }

    /// The matrix with entries f(row, col).
    pub fn from_fn(nrows: usize, ncols: usize, mut f: impl FnMut(usize, usize) -> f64) -> Self {
        let mut data = Vec::with_capacity(nrows * ncols);
        for c in 0..ncols {
            for r in 0..nrows {
                data.push(f(r, c));
            }
        }
        Self { nrows, ncols, data }
    }

    /// Number of rows.
    pub fn nrows(&self) -> usize {
        self.nrows
    }

    /// Number of columns.
    pub fn ncols(&self) -> usize {
        self.ncols
    }

    /// Column `c` (length nrows, contiguous).
    pub fn col(&self, c: usize) -> &[f64] {
        &self.data[c * self.nrows..(c + 1) * self.nrows]
    }

    /// Column `c`, mutable.
    pub fn col_mut(&mut self, c: usize) -> &mut [f64] {
        &mut self.data[c * self.nrows..(c + 1) * self.nrows]
    }

    /// The product self · other (nrows×other.ncols).
    ///
    /// # Panics
    /// If the inner dimensions differ.
    pub fn matmul(&self, other: &Matrix) -> Matrix {
        assert_eq!(self.ncols, other.nrows, "inner dimensions {} and {} differ", self.ncols, other.nrows);
        let mut out = Matrix::zeros(self.nrows, other.ncols);
        faer::linalg::matmul::matmul(out.view_mut(), Accum::Replace, self.view(), other.view(), 1.0, Par::Seq);
        out
    }

    fn view(&self) -> MatRef<'_, f64> {
        MatRef::from_column_major_slice(&self.data, self.nrows, self.ncols)
    }

    fn view_mut(&mut self) -> MatMut<'_, f64> {
        MatMut::from_column_major_slice_mut(&mut self.data, self.nrows, self.ncols)
    }
}

impl std::ops::Index<(usize, usize)> for Matrix {
    type Output = f64;
    fn index(&self, (r, c): (usize, usize)) -> &f64 {
        debug_assert!(r < self.nrows && c < self.ncols);
        &self.data[c * self.nrows + r]
    }
}

impl std::ops::IndexMut<(usize, usize)> for Matrix {
    fn index_mut(&mut self, (r, c): (usize, usize)) -> &mut f64 {
        debug_assert!(r < self.nrows && c < self.ncols);
        &mut self.data[c * self.nrows + r]
    }
}

/// An n×m zero matrix.
pub fn zeros(n: usize, m: usize) -> Matrix {
    Matrix::zeros(n, m)
}

/// Cholesky factor of a symmetric positive-definite matrix, H = L Lᵀ (L lower triangular; the
/// strict upper triangle of the storage is not used).
#[derive(Debug, Clone)]
pub struct Cholesky {
    l: Matrix,
}

impl Cholesky {
    /// Factor `h` (n×n, symmetric; only the lower triangle is read).
    ///
    /// # Errors
    /// `Err(index)`: the pivot at `index` was not positive (the matrix is not positive definite).
    pub fn factor(h: &Matrix) -> Result<Self, usize> {
        Self::factor_in_place(h.clone())
    }

    /// Factor `h` in its own storage (no copy).
    ///
    /// # Errors
    /// As [`Cholesky::factor`].
    pub fn factor_in_place(mut h: Matrix) -> Result<Self, usize> {
        assert_eq!(h.nrows, h.ncols, "Cholesky of a {}×{} matrix", h.nrows, h.ncols);
        let n = h.nrows;
        let mut mem = MemBuffer::new(cholesky_in_place_scratch::<f64>(n, Par::Seq, Default::default()));
        match cholesky_in_place(
            h.view_mut(),
            LltRegularization::default(),
            Par::Seq,
            MemStack::new(&mut mem),
            Default::default(),
        ) {
            Ok(_) => Ok(Self { l: h }),
            Err(LltError::NonPositivePivot { index }) => Err(index),
        }
    }

    /// Dimension n.
    pub fn dim(&self) -> usize {
        self.l.nrows
    }

    /// L[(i, j)] for i ≥ j.
    fn lower(&self) -> MatRef<'_, f64> {
        self.l.view()
    }

    /// Solve H x = b.
    pub fn solve(&self, b: &[f64]) -> Vec<f64> {
        let mut x = b.to_vec();
        let n = x.len();
        let mut rhs = MatMut::from_column_major_slice_mut(&mut x, n, 1);
        faer::linalg::triangular_solve::solve_lower_triangular_in_place(self.lower(), rhs.as_mut(), Par::Seq);
        faer::linalg::triangular_solve::solve_upper_triangular_in_place(self.lower().transpose(), rhs, Par::Seq);
        x
    }

    /// H⁻¹ (n×n, symmetric): W = L⁻¹, then H⁻¹ = WᵀW.
    pub fn inverse(&self) -> Matrix {
        let n = self.dim();
        let mut w = Matrix::zeros(n, n);
        faer::linalg::triangular_inverse::invert_lower_triangular(w.view_mut(), self.lower(), Par::Seq);
        let mut out = Matrix::zeros(n, n);
        matmul(
            out.view_mut(),
            BlockStructure::TriangularLower,
            Accum::Replace,
            w.view().transpose(),
            BlockStructure::TriangularUpper,
            w.view(),
            BlockStructure::TriangularLower,
            1.0,
            Par::Seq,
        );
        for c in 0..n {
            for r in 0..c {
                out.data[c * n + r] = out.data[r * n + c];
            }
        }
        out
    }

    /// Solve Lᵀ U = Z in place for every column of `z` (n×S): each column of the result is a
    /// draw from N(0, H⁻¹) when Z's columns are N(0, I) (docs/model.md §2, no explicit inverse needed).
    pub fn solve_lt_in_place(&self, z: &mut Matrix) {
        faer::linalg::triangular_solve::solve_upper_triangular_in_place(
            self.lower().transpose(),
            z.view_mut(),
            Par::Seq,
        );
    }

    /// L z for the lower-triangular factor L (length n): with z ~ N(0, I), L z ~ N(0, H) — used to
    /// draw from a covariance that was factored directly (e.g. Σ for Thompson sampling).
    ///
    /// # Panics
    /// If `z.len()` differs from the dimension.
    pub fn lower_mul(&self, z: &[f64]) -> Vec<f64> {
        let n = self.dim();
        assert_eq!(z.len(), n, "z has length {} but L is {n}×{n}", z.len());
        (0..n).map(|i| (0..=i).map(|j| self.l[(i, j)] * z[j]).sum()).collect()
    }

    /// log det H = 2 Σ log L_ii.
    pub fn log_det(&self) -> f64 {
        (0..self.dim()).map(|i| 2.0 * self.l[(i, i)].ln()).sum()
    }
}

/// Σ ← Σ − w (Σd)(Σd)ᵀ / (1 + w dᵀΣd): the posterior covariance after one more observation with
/// design row `d` (length n) and Fisher weight `w` = p̂(1 − p̂) (Sherman–Morrison, docs/model.md §3).
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
        for (c, s) in sigma.col_mut(j).iter_mut().zip(sd) {
            *c -= fj * s;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spd(n: usize) -> Matrix {
        let b = Matrix::from_fn(n, n, |i, j| ((i * 7 + j * 3) % 5) as f64 - 2.0 + if i == j { 0.5 } else { 0.0 });
        let bt = Matrix::from_fn(n, n, |i, j| b[(j, i)]);
        let mut a = b.matmul(&bt);
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
        let prod = a.matmul(&inv);
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

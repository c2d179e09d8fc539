//! The only faer import: dense symmetric matrices, Cholesky (H = LLᵀ), triangular solves,
//! inverse, the Sherman–Morrison rank-one downdate of a covariance (docs/model.md §2–§3), and the
//! sparse Cholesky factor of large pools' Hessians with its selected inverse (diag H⁻¹).
//!
//! Matrices are stored in our own column-major `Vec<f64>` and handed to faer's kernels as
//! views. faer's own `Mat` allocates with 64-byte alignment, which the system allocator serves
//! with fresh pages every time; at n = 1000 each 8 MB matrix then costs ~6 ms of page faults
//! per refit. A plain `Vec` is recycled by the allocator from one refit to the next.

use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::cholesky::llt::factor::{LltError, LltRegularization, cholesky_in_place, cholesky_in_place_scratch};
use faer::linalg::matmul::triangular::{BlockStructure, matmul};
use faer::sparse::linalg::SupernodalThreshold;
use faer::sparse::linalg::cholesky::supernodal::{SupernodalLltRef, SymbolicSupernodalCholesky};
use faer::sparse::linalg::cholesky::{
    CholeskySymbolicParams, SymbolicCholesky, SymbolicCholeskyRaw, SymmetricOrdering, factorize_symbolic_cholesky,
};
use faer::sparse::{SparseColMatRef, SymbolicSparseColMatRef};
use faer::{Accum, MatMut, MatRef, Par, Side};
use std::sync::Arc;

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

/// The symbolic analysis of a sparse lower-triangle pattern for [`SparseCholesky::factor_with`]:
/// the fill-reducing (approximate minimum degree) ordering and the supernodal structure of L.
/// It depends on the pattern only, so a fit computes it once, beside its Newton iterations
/// (docs/model.md §2, "Large pools").
pub struct SparsePattern {
    n: usize,
    col_ptr: Vec<usize>,
    row_idx: Vec<usize>,
    symbolic: Arc<SymbolicCholesky<usize>>,
}

impl SparsePattern {
    /// Analyse the n×n lower-triangle pattern in compressed sparse columns (as
    /// [`SparseCholesky::factor`]).
    ///
    /// # Panics
    /// If the column structure is malformed.
    pub fn analyse(n: usize, col_ptr: Vec<usize>, row_idx: Vec<usize>) -> Self {
        let sym = SymbolicSparseColMatRef::new_checked(n, n, &col_ptr, None, &row_idx);
        let params = CholeskySymbolicParams {
            supernodal_flop_ratio_threshold: SupernodalThreshold::FORCE_SUPERNODAL,
            ..Default::default()
        };
        let symbolic = factorize_symbolic_cholesky(sym, Side::Lower, SymmetricOrdering::Amd, params)
            .expect("symbolic Cholesky of a well-formed matrix");
        Self { n, col_ptr, row_idx, symbolic: Arc::new(symbolic) }
    }

    /// Whether this is the pattern given by `col_ptr` and `row_idx`.
    pub fn is(&self, col_ptr: &[usize], row_idx: &[usize]) -> bool {
        self.col_ptr == col_ptr && self.row_idx == row_idx
    }
}

/// Sparse Cholesky factor of a symmetric positive-definite matrix, P H Pᵀ = L Lᵀ, with the
/// fill-reducing (approximate minimum degree) permutation P and a supernodal L (faer). Used for
/// the Hessian of large pools (docs/model.md §2, "Large pools"): H has N + 2·(compared pairs)
/// nonzeros in its θ block plus the p + 1 dense rows of c and κ.
pub struct SparseCholesky {
    n: usize,
    symbolic: Arc<SymbolicCholesky<usize>>,
    values: Vec<f64>,
    /// `fwd[i]` = original index of permuted index i.
    fwd: Vec<usize>,
    /// `inv[r]` = permuted index of original index r.
    inv: Vec<usize>,
    /// `isolated[r]`: row and column r of H have no nonzero off the diagonal (original order).
    isolated: Vec<bool>,
    /// L as a dense lower triangle in single precision (column-major n×n), built on first use
    /// when the fill is nearly dense ([`SparseCholesky::dense_fill`]): for the membership draws
    /// and W = L⁻¹.
    dense32: std::sync::OnceLock<Vec<f32>>,
}

impl std::fmt::Debug for SparseCholesky {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SparseCholesky {{ n: {}, nnz(L): {} }}", self.n, self.values.len())
    }
}

impl SparseCholesky {
    /// Factor the n×n matrix whose lower triangle (diagonal included) is given in compressed
    /// sparse columns: column c holds rows `row_idx[col_ptr[c]..col_ptr[c + 1]]` (sorted,
    /// ascending, each ≥ c) with values `values[..]`.
    ///
    /// # Errors
    /// `Err(index)`: a pivot was not positive (index in the original order when known, else 0).
    ///
    /// # Panics
    /// If the column structure is malformed.
    pub fn factor(n: usize, col_ptr: &[usize], row_idx: &[usize], values: &[f64]) -> Result<Self, usize> {
        Self::factor_with(&SparsePattern::analyse(n, col_ptr.to_vec(), row_idx.to_vec()), values)
    }

    /// Factor the matrix with the lower-triangle pattern `pattern` (analysed once) and the values
    /// `values` (one per stored entry of the pattern, in its order).
    ///
    /// # Errors
    /// As [`SparseCholesky::factor`].
    ///
    /// # Panics
    /// If `values` does not have one value per stored entry.
    pub fn factor_with(pattern: &SparsePattern, values: &[f64]) -> Result<Self, usize> {
        let (n, col_ptr, row_idx) = (pattern.n, &pattern.col_ptr, &pattern.row_idx);
        assert_eq!(values.len(), row_idx.len(), "one value per stored entry of the pattern");
        let sym = SymbolicSparseColMatRef::new_checked(n, n, col_ptr, None, row_idx);
        let mut isolated = vec![true; n];
        for c in 0..n {
            for (&r, &v) in row_idx[col_ptr[c]..col_ptr[c + 1]].iter().zip(&values[col_ptr[c]..col_ptr[c + 1]]) {
                if r != c && v != 0.0 {
                    isolated[r] = false;
                    isolated[c] = false;
                }
            }
        }
        let symbolic = pattern.symbolic.clone();
        let mut l_values = vec![0.0; symbolic.len_val()];
        let mat = SparseColMatRef::new(sym, values);
        let mut mem = MemBuffer::new(symbolic.factorize_numeric_llt_scratch::<f64>(Par::Seq, Default::default()));
        let (fwd, inv): (Vec<usize>, Vec<usize>) = match symbolic.perm() {
            Some(p) => {
                let (f, i) = p.arrays();
                (f.to_vec(), i.to_vec())
            }
            None => ((0..n).collect(), (0..n).collect()),
        };
        let res = symbolic.factorize_numeric_llt(
            &mut l_values,
            mat,
            Side::Lower,
            LltRegularization::default(),
            Par::Seq,
            MemStack::new(&mut mem),
            Default::default(),
        );
        if let Err(e) = res {
            let LltError::NonPositivePivot { index } = e;
            let idx = fwd.get(index).copied().unwrap_or(0);
            return Err(idx);
        }
        Ok(Self { n, symbolic, values: l_values, fwd, inv, isolated, dense32: std::sync::OnceLock::new() })
    }

    /// Dimension n.
    pub fn dim(&self) -> usize {
        self.n
    }

    /// Whether row and column r of H (original order) have no nonzero off the diagonal: then
    /// H⁻¹ e_r = e_r / H_rr exactly, without a solve (a base no verdict has touched yet, whose
    /// θ is independent of every other parameter under the Laplace posterior).
    pub fn is_isolated(&self, r: usize) -> bool {
        self.isolated[r]
    }

    /// Number of stored values of L (the factor's fill).
    pub fn nnz(&self) -> usize {
        self.values.len()
    }

    fn supernodal(&self) -> (&SymbolicSupernodalCholesky<usize>, SupernodalLltRef<'_, usize, f64>) {
        match self.symbolic.raw() {
            SymbolicCholeskyRaw::Supernodal(s) => (s, SupernodalLltRef::new(s, &self.values)),
            SymbolicCholeskyRaw::Simplicial(_) => unreachable!("the factor is forced supernodal"),
        }
    }

    /// The supernodes of one column with no entry below the diagonal (a base no verdict has
    /// touched): (row, 1 / L_rr), permuted order. Their solve is x_r ← x_r · (1 / L_rr) (as
    /// faer's 1×1 triangular solve), independent of every other row, so the solves below do
    /// them column by column in one pass instead of one strided row of x per supernode (a
    /// cache miss per value: most of the time of a solve at N = 100,000).
    fn trivial_supernodes(&self) -> Vec<(usize, f64)> {
        let (sym, l) = self.supernodal();
        (0..sym.n_supernodes())
            .map(|s| l.supernode(s))
            .filter(|sn| sn.val().ncols() == 1 && sn.pattern().is_empty())
            .map(|sn| (sn.start(), sn.val()[(0, 0)].recip()))
            .collect()
    }

    /// x_r ← x_r · inv for each (r, inv) of `rows`, every column of x.
    fn scale_rows(x: &mut Matrix, rows: &[(usize, f64)]) {
        for j in 0..x.ncols() {
            let col = x.col_mut(j);
            for &(r, inv) in rows {
                col[r] *= inv;
            }
        }
    }

    /// x ← L⁻¹ x for every column (permuted order).
    fn l_solve(&self, x: &mut Matrix) {
        let (sym, l) = self.supernodal();
        let k = x.ncols();
        let mut tmp = Vec::new();
        for s in 0..sym.n_supernodes() {
            let sn = l.supernode(s);
            let ls = sn.val();
            let size = ls.ncols();
            let start = sn.start();
            let pattern = sn.pattern();
            if size == 1 && pattern.is_empty() {
                // Updates no other row: scaled last (below).
                continue;
            }
            let (top, bot) = ls.split_at_row(size);
            let mut xv = x.view_mut();
            let mut x_top = xv.as_mut().subrows_mut(start, size);
            faer::linalg::triangular_solve::solve_lower_triangular_in_place(top, x_top.as_mut(), Par::Seq);
            if pattern.is_empty() {
                continue;
            }
            tmp.clear();
            tmp.resize(pattern.len() * k, 0.0);
            let mut t = MatMut::from_column_major_slice_mut(&mut tmp, pattern.len(), k);
            faer::linalg::matmul::matmul(t.as_mut(), Accum::Replace, bot, x_top.as_ref(), 1.0, Par::Seq);
            for j in 0..k {
                let col = x.col_mut(j);
                for (idx, &i) in pattern.iter().enumerate() {
                    col[i] -= tmp[j * pattern.len() + idx];
                }
            }
        }
        Self::scale_rows(x, &self.trivial_supernodes());
    }

    /// x ← L⁻ᵀ x for every column (permuted order).
    fn lt_solve(&self, x: &mut Matrix) {
        // Rows of one-column supernodes without entries below the diagonal depend on no other
        // row: solved first, in one pass.
        Self::scale_rows(x, &self.trivial_supernodes());
        let (sym, l) = self.supernodal();
        let k = x.ncols();
        let mut tmp = Vec::new();
        for s in (0..sym.n_supernodes()).rev() {
            let sn = l.supernode(s);
            let ls = sn.val();
            let size = ls.ncols();
            let start = sn.start();
            let pattern = sn.pattern();
            if size == 1 && pattern.is_empty() {
                continue;
            }
            let (top, bot) = ls.split_at_row(size);
            if !pattern.is_empty() {
                tmp.clear();
                for j in 0..k {
                    let col = x.col(j);
                    tmp.extend(pattern.iter().map(|&i| col[i]));
                }
                let t = MatRef::from_column_major_slice(&tmp, pattern.len(), k);
                let mut xv = x.view_mut();
                let x_top = xv.as_mut().subrows_mut(start, size);
                faer::linalg::matmul::matmul(x_top, Accum::Add, bot.transpose(), t, -1.0, Par::Seq);
            }
            let mut xv = x.view_mut();
            let x_top = xv.as_mut().subrows_mut(start, size);
            faer::linalg::triangular_solve::solve_upper_triangular_in_place(top.transpose(), x_top, Par::Seq);
        }
    }

    /// Solve H X = B for every column of `b` (n×k), in place.
    ///
    /// # Panics
    /// If `b` does not have n rows.
    pub fn solve_in_place(&self, b: &mut Matrix) {
        assert_eq!(b.nrows(), self.n, "B has {} rows but H is {}×{}", b.nrows(), self.n, self.n);
        let mut x = Matrix::zeros(self.n, b.ncols());
        for j in 0..b.ncols() {
            let (src, dst) = (b.col(j), &mut x.data[j * self.n..(j + 1) * self.n]);
            for (i, d) in dst.iter_mut().enumerate() {
                *d = src[self.fwd[i]];
            }
        }
        self.l_solve(&mut x);
        self.lt_solve(&mut x);
        for j in 0..b.ncols() {
            let src = x.col(j).to_vec();
            for (r, d) in b.col_mut(j).iter_mut().enumerate() {
                *d = src[self.inv[r]];
            }
        }
    }

    /// Solve H x = b (length n).
    pub fn solve(&self, b: &[f64]) -> Vec<f64> {
        let mut m = Matrix { nrows: b.len(), ncols: 1, data: b.to_vec() };
        self.solve_in_place(&mut m);
        m.data
    }

    /// U = Pᵀ L⁻ᵀ Z for every column of `z` (n×S), in place: with Z's columns N(0, I), U's
    /// columns are draws from N(0, H⁻¹) (docs/model.md §2). The draws are not those of the
    /// dense factor for the same Z (another square root of H⁻¹), only their distribution is.
    pub fn draws_in_place(&self, z: &mut Matrix) {
        if self.dense_fill() {
            // One dense triangular solve in single precision, 1.6 times faster than in double
            // on this path's sizes: each draw is off by about 1e-6 of its sd, far below the
            // Monte-Carlo error of any π (≥ 1/S).
            let n = self.n;
            let l = self.dense_lower32();
            let mut z32: Vec<f32> = z.data.iter().map(|&v| v as f32).collect();
            let zc = z.ncols();
            faer::linalg::triangular_solve::solve_upper_triangular_in_place(
                MatRef::from_column_major_slice(l, n, n).transpose(),
                MatMut::from_column_major_slice_mut(&mut z32, n, zc),
                Par::Seq,
            );
            for (d, s) in z.data.iter_mut().zip(&z32) {
                *d = f64::from(*s);
            }
        } else {
            self.lt_solve(z);
        }
        let mut tmp = vec![0.0; self.n];
        for j in 0..z.ncols() {
            let col = z.col_mut(j);
            // Permuted index i is original index fwd[i].
            for (i, &f) in self.fwd.iter().enumerate() {
                tmp[f] = col[i];
            }
            col.copy_from_slice(&tmp);
        }
    }

    /// log det H = 2 Σ log L_ii.
    pub fn log_det(&self) -> f64 {
        let (sym, l) = self.supernodal();
        (0..sym.n_supernodes())
            .map(|s| {
                let v = l.supernode(s).val();
                (0..v.ncols()).map(|i| 2.0 * v[(i, i)].ln()).sum::<f64>()
            })
            .sum()
    }

    /// diag(H⁻¹) (length n, original order) by supernodal selected inversion (the Takahashi
    /// recurrences on the factor's pattern): for each supernode J with below-diagonal rows R,
    /// from the last to the first, U = L_RJ L_JJ⁻¹, Z_RJ = −Z_RR U and
    /// Z_JJ = L_JJ⁻ᵀ L_JJ⁻¹ − Uᵀ Z_RJ, where Z = (LLᵀ)⁻¹ restricted to the pattern of L.
    /// Costs about as much as the factorisation; no n×n matrix is formed.
    pub fn inverse_diag(&self) -> Vec<f64> {
        let (sym, l) = self.supernodal();
        let ns = sym.n_supernodes();
        let begin = sym.supernode_begin();
        let end = sym.supernode_end();
        let vptr = sym.col_ptr_for_val();
        let mut owner = vec![0usize; self.n];
        for s in 0..ns {
            for c in begin[s]..end[s] {
                owner[c] = s;
            }
        }
        let mut z = vec![0.0; self.values.len()];
        let mut diag_perm = vec![0.0; self.n];
        let mut pos: Vec<usize> = Vec::new();
        for s in (0..ns).rev() {
            let sn = l.supernode(s);
            let ls = sn.val();
            let nc = ls.ncols();
            let rows = sn.pattern();
            let nr = rows.len();
            let (top, bot) = ls.split_at_row(nc);
            let mut linv = Matrix::zeros(nc, nc);
            faer::linalg::triangular_inverse::invert_lower_triangular(linv.view_mut(), top, Par::Seq);
            // Z_JJ starts as L_JJ⁻ᵀ L_JJ⁻¹.
            let mut zjj = Matrix::zeros(nc, nc);
            faer::linalg::matmul::matmul(
                zjj.view_mut(),
                Accum::Replace,
                linv.view().transpose(),
                linv.view(),
                1.0,
                Par::Seq,
            );
            let mut zrj = Matrix::zeros(nr, nc);
            if nr > 0 {
                // U = L_RJ L_JJ⁻¹ (nr×nc).
                let mut u = Matrix::zeros(nr, nc);
                faer::linalg::matmul::matmul(u.view_mut(), Accum::Replace, bot, linv.view(), 1.0, Par::Seq);
                // Gather Z_RR (nr×nr, symmetric) from the ancestors already done: entry (a, b)
                // with a ≥ b lives in the supernode owning column b.
                let mut zrr = Matrix::zeros(nr, nr);
                let mut bi = 0;
                while bi < nr {
                    let k = owner[rows[bi]];
                    let (kb, ke) = (begin[k], end[k]);
                    let kn = ke - kb;
                    let kpat = sym.supernode(k).pattern();
                    let kz = &z[vptr[k]..vptr[k + 1]];
                    let krows = kn + kpat.len();
                    let mut bj = bi;
                    while bj < nr && rows[bj] < ke {
                        bj += 1;
                    }
                    // Local row of every R row from bi on within supernode k's storage.
                    pos.clear();
                    for &r in &rows[bi..] {
                        pos.push(if r < ke {
                            r - kb
                        } else {
                            kn + kpat.binary_search(&r).expect("pattern closure of the Cholesky factor")
                        });
                    }
                    for b in bi..bj {
                        let cb = rows[b] - kb;
                        let col = &kz[cb * krows..(cb + 1) * krows];
                        for a in b..nr {
                            let v = col[pos[a - bi]];
                            zrr[(a, b)] = v;
                            zrr[(b, a)] = v;
                        }
                    }
                    bi = bj;
                }
                faer::linalg::matmul::matmul(zrj.view_mut(), Accum::Replace, zrr.view(), u.view(), -1.0, Par::Seq);
                faer::linalg::matmul::matmul(
                    zjj.view_mut(),
                    Accum::Add,
                    u.view().transpose(),
                    zrj.view(),
                    -1.0,
                    Par::Seq,
                );
            }
            let out = &mut z[vptr[s]..vptr[s + 1]];
            let krows = nc + nr;
            for c in 0..nc {
                for r in 0..nc {
                    out[c * krows + r] = zjj[(r, c)];
                }
                for r in 0..nr {
                    out[c * krows + nc + r] = zrj[(r, c)];
                }
                diag_perm[begin[s] + c] = zjj[(c, c)];
            }
        }
        (0..self.n).map(|r| diag_perm[self.inv[r]]).collect()
    }
}

/// Below this dimension a factor counts as sparse whatever its fill (the supernodes' padding
/// makes small factors look dense, and their solves cost little either way).
pub const DENSE_FILL_MIN_DIM: usize = 200;

/// Up to this dimension a sparse factor whose fill is nearly dense (see
/// [`SparseCholesky::dense_fill`]) is inverted as a dense triangle: W = L⁻¹ takes n²·8 bytes
/// (134 MB at 4096).
pub const DENSE_FILL_MAX_DIM: usize = 4096;

impl SparseCholesky {
    /// Whether L stores at least a quarter of all n² entries (at most n(n + 1)/2 can be nonzero)
    /// and [`DENSE_FILL_MIN_DIM`] ≤ n ≤ [`DENSE_FILL_MAX_DIM`]: the comparison graph is too well connected for the
    /// ordering to keep L sparse (e.g. N = 1000 with 10·N random pairs fills L completely), and
    /// the dense triangular inverse W = L⁻¹ ([`InverseFactor`]) is cheaper than selected
    /// inversion, and then gives Σ blocks without solves.
    pub fn dense_fill(&self) -> bool {
        (DENSE_FILL_MIN_DIM..=DENSE_FILL_MAX_DIM).contains(&self.n) && 4 * self.values.len() >= self.n * self.n
    }

    /// L (permuted order) scattered into a dense n×n lower triangle in single precision
    /// (column-major), built once.
    fn dense_lower32(&self) -> &[f32] {
        self.dense32.get_or_init(|| self.scatter_lower(|v| v as f32))
    }

    /// L (permuted order) scattered into a dense column-major n×n lower triangle, each value
    /// converted by `conv`.
    fn scatter_lower<T: Copy + Default>(&self, conv: impl Fn(f64) -> T) -> Vec<T> {
        let (sym, l) = self.supernodal();
        let n = self.n;
        let mut out = vec![T::default(); n * n];
        for s in 0..sym.n_supernodes() {
            let sn = l.supernode(s);
            let v = sn.val();
            let (start, size, pattern) = (sn.start(), v.ncols(), sn.pattern());
            for c in 0..size {
                let col = &mut out[(start + c) * n..(start + c + 1) * n];
                for r in c..size {
                    col[start + r] = conv(v[(r, c)]);
                }
                for (idx, &r) in pattern.iter().enumerate() {
                    col[r] = conv(v[(size + idx, c)]);
                }
            }
        }
        out
    }

    /// W = L⁻¹ as a dense triangle, with the permutation: H⁻¹ = Pᵀ WᵀW P. faer's triangular
    /// inverse runs in single precision (2.5 times faster than in double at n = 1000) and W is
    /// kept in double: on the filled-in factors of this path (a well-connected comparison graph,
    /// Hessian in the solver's scaled units) its entries are off by about cond(L) · 6e-8
    /// relative (diag H⁻¹ by 1e-7 on the `refit_step` bench's factor; tested). When the ratio
    /// of L's largest to smallest diagonal entry, a lower bound of cond(L), exceeds
    /// [`W32_MAX_DIAG_RATIO`], W is inverted in double instead.
    pub fn inverse_factor(&self) -> InverseFactor {
        let n = self.n;
        let l = self.dense_lower32();
        let (lo, hi) = (0..n).map(|c| l[c * n + c]).fold((f32::INFINITY, 0f32), |(lo, hi), d| (lo.min(d), hi.max(d)));
        let w = if hi <= W32_MAX_DIAG_RATIO * lo {
            let mut w32 = vec![0f32; n * n];
            faer::linalg::triangular_inverse::invert_lower_triangular(
                MatMut::from_column_major_slice_mut(&mut w32, n, n),
                MatRef::from_column_major_slice(l, n, n),
                Par::Seq,
            );
            Matrix { nrows: n, ncols: n, data: w32.into_iter().map(f64::from).collect() }
        } else {
            let mut w = Matrix::zeros(n, n);
            faer::linalg::triangular_inverse::invert_lower_triangular(
                w.view_mut(),
                self.dense_lower().view(),
                Par::Seq,
            );
            w
        };
        InverseFactor { w, inv: self.inv.clone() }
    }

    /// L (permuted order) scattered into a dense n×n lower triangle in double precision.
    fn dense_lower(&self) -> Matrix {
        Matrix { nrows: self.n, ncols: self.n, data: self.scatter_lower(|v| v) }
    }
}

/// The factor L of a [`SparseCholesky`] restricted to the rows it keeps, for membership draws:
/// every row except a set of *skipped* rows whose entries of L off the diagonal are all zero (a
/// base no verdict has touched: its row of H holds only λ_θ, so its row and column of L are
/// zero off the diagonal, though H's pattern lists its c and κ entries). A skipped row is
/// independent of every other: its draw is u_r = z_r / L_rr. The kept rows are solved on a
/// work matrix of their own (docs/model.md §2, "Large pools").
#[derive(Debug, Clone)]
pub struct KeptRows {
    /// Kept row c's original index.
    original: Vec<usize>,
    /// L_cc per kept row.
    diag: Vec<f64>,
    /// The nonzero entries of L below the diagonal per kept column, in compressed sparse
    /// columns of kept rows (kept order: the factor's order without the skipped rows).
    col_ptr: Vec<usize>,
    row_idx: Vec<usize>,
    values: Vec<f64>,
    /// Each skipped row: (original index, 1 / L_rr), in original order.
    skipped: Vec<(usize, f64)>,
}

impl SparseCholesky {
    /// L restricted to the rows not flagged in `skip` (original order, length n), or `None`
    /// when a flagged row has a nonzero entry of L off the diagonal.
    ///
    /// # Panics
    /// If `skip` does not have length n.
    pub fn kept_rows(&self, skip: &[bool]) -> Option<KeptRows> {
        assert_eq!(skip.len(), self.n, "one flag per row");
        let (sym, l) = self.supernodal();
        let mut kept = vec![usize::MAX; self.n]; // permuted index → kept row
        let mut original = Vec::with_capacity(self.n);
        for (i, &r) in self.fwd.iter().enumerate() {
            if !skip[r] {
                kept[i] = original.len();
                original.push(r);
            }
        }
        let nk = original.len();
        let mut diag = vec![0.0; nk];
        let mut cols: Vec<Vec<(usize, f64)>> = vec![Vec::new(); nk];
        let mut skipped = Vec::with_capacity(self.n - nk);
        for s in 0..sym.n_supernodes() {
            let sn = l.supernode(s);
            let (v, start, pattern) = (sn.val(), sn.start(), sn.pattern());
            let size = v.ncols();
            for ci in 0..size {
                let below = (ci + 1..size)
                    .map(|r| (start + r, v[(r, ci)]))
                    .chain(pattern.iter().enumerate().map(|(idx, &r)| (r, v[(size + idx, ci)])));
                match kept[start + ci] {
                    usize::MAX => {
                        if below.into_iter().any(|(_, x)| x != 0.0) {
                            return None;
                        }
                        skipped.push((self.fwd[start + ci], v[(ci, ci)].recip()));
                    }
                    c => {
                        diag[c] = v[(ci, ci)];
                        for (r, x) in below.filter(|&(_, x)| x != 0.0) {
                            if kept[r] == usize::MAX {
                                return None;
                            }
                            cols[c].push((kept[r], x));
                        }
                    }
                }
            }
        }
        skipped.sort_unstable_by_key(|&(r, _)| r);
        let mut col_ptr = Vec::with_capacity(nk + 1);
        col_ptr.push(0);
        let (mut row_idx, mut values) = (Vec::new(), Vec::new());
        for c in cols {
            for (r, x) in c {
                row_idx.push(r);
                values.push(x);
            }
            col_ptr.push(row_idx.len());
        }
        Some(KeptRows { original, diag, col_ptr, row_idx, values, skipped })
    }
}

impl KeptRows {
    /// Number of kept rows.
    pub fn len(&self) -> usize {
        self.original.len()
    }

    /// Whether no row is kept.
    pub fn is_empty(&self) -> bool {
        self.original.is_empty()
    }

    /// The original index of each kept row, in kept order.
    pub fn original(&self) -> &[usize] {
        &self.original
    }

    /// The skipped rows: (original index, 1 / L_rr), in original order; the draw of row r is
    /// z_r / L_rr.
    pub fn skipped(&self) -> &[(usize, f64)] {
        &self.skipped
    }

    /// x ← L⁻ᵀ x on the kept rows, for `draws` draws stored row by row: x\[c · draws + s\] is
    /// kept row c of draw s. With x N(0, I), row c of the result holds draws of parameter
    /// `original()[c]` from N(0, H⁻¹), jointly over the kept rows.
    ///
    /// # Panics
    /// If `x` does not hold `draws` values per kept row.
    pub fn draws_in_place(&self, x: &mut [f64], draws: usize) {
        assert_eq!(x.len(), self.len() * draws, "draws values per kept row");
        for j in (0..self.len()).rev() {
            let (head, tail) = x.split_at_mut((j + 1) * draws);
            let xj = &mut head[j * draws..];
            for (&i, &l) in self.row_idx[self.col_ptr[j]..self.col_ptr[j + 1]]
                .iter()
                .zip(&self.values[self.col_ptr[j]..self.col_ptr[j + 1]])
            {
                // Kept rows below j are solved already (i > j).
                let xi = &tail[(i - j - 1) * draws..(i - j) * draws];
                for (a, b) in xj.iter_mut().zip(xi) {
                    *a -= l * b;
                }
            }
            let inv = self.diag[j].recip();
            for a in xj.iter_mut() {
                *a *= inv;
            }
        }
    }
}

/// Largest ratio max L_ii / min L_ii for which [`SparseCholesky::inverse_factor`] inverts L in
/// single precision: cond(L) ≥ that ratio, and W's relative error is about cond(L) · 6e-8, so up
/// to 1e3 it stays below 1e-4 (in practice far below: the ratio is a loose lower bound).
pub const W32_MAX_DIAG_RATIO: f32 = 1e3;

/// H⁻¹ = Pᵀ WᵀW P through W = L⁻¹ (n×n lower triangle, permuted order) of a sparse factor
/// P H Pᵀ = LLᵀ whose fill is nearly dense ([`SparseCholesky::dense_fill`]; docs/model.md §2,
/// "Large pools"). Costs one dense triangular inversion (about a third of the flops of H⁻¹);
/// then diag(H⁻¹) is a column norm of W, a column of H⁻¹ is a column of W times Wᵀ, and
/// H⁻¹b is two triangular products instead of two sweeps over the supernodes.
pub struct InverseFactor {
    w: Matrix,
    /// `inv[r]` = permuted index of original index r.
    inv: Vec<usize>,
}

impl std::fmt::Debug for InverseFactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "InverseFactor {{ n: {} }}", self.w.nrows())
    }
}

impl InverseFactor {
    /// Dimension n.
    pub fn dim(&self) -> usize {
        self.w.nrows()
    }

    /// diag(H⁻¹) (length n, original order): (H⁻¹)_rr = ‖W e_{P r}‖².
    pub fn inverse_diag(&self) -> Vec<f64> {
        (0..self.dim())
            .map(|r| {
                let c = self.inv[r];
                self.w.col(c)[c..].iter().map(|x| x * x).sum()
            })
            .collect()
    }

    /// X ← H⁻¹ X for every column of `x` (n×k), in place: Y = W P X (columns of W weighted by
    /// X's nonzeros), then Pᵀ WᵀY.
    ///
    /// # Panics
    /// If `x` does not have n rows.
    pub fn solve_in_place(&self, x: &mut Matrix) {
        let n = self.dim();
        assert_eq!(x.nrows(), n, "X has {} rows but H is {n}×{n}", x.nrows());
        let k = x.ncols();
        let mut y = Matrix::zeros(n, k);
        for j in 0..k {
            for (r, &v) in x.col(j).iter().enumerate() {
                if v != 0.0 {
                    let c = self.inv[r];
                    for (t, wv) in y.col_mut(j)[c..].iter_mut().zip(&self.w.col(c)[c..]) {
                        *t += v * wv;
                    }
                }
            }
        }
        let mut z = Matrix::zeros(n, k);
        matmul(
            z.view_mut(),
            BlockStructure::Rectangular,
            Accum::Replace,
            self.w.view().transpose(),
            BlockStructure::TriangularUpper,
            y.view(),
            BlockStructure::Rectangular,
            1.0,
            Par::Seq,
        );
        for j in 0..k {
            let (src, dst) = (z.col(j), &mut x.data[j * n..(j + 1) * n]);
            for (r, d) in dst.iter_mut().enumerate() {
                *d = src[self.inv[r]];
            }
        }
    }
}

/// The factor of H at the MAP: dense for small problems, sparse for large pools
/// (docs/model.md §2, "Large pools").
#[derive(Debug, Clone)]
pub enum Factor {
    /// Dense Cholesky H = LLᵀ.
    Dense(Cholesky),
    /// Sparse Cholesky P H Pᵀ = LLᵀ (shared with the posterior, which solves with it).
    Sparse(Arc<SparseCholesky>),
}

impl Factor {
    /// Dimension n.
    pub fn dim(&self) -> usize {
        match self {
            Factor::Dense(c) => c.dim(),
            Factor::Sparse(c) => c.dim(),
        }
    }

    /// Solve H x = b.
    pub fn solve(&self, b: &[f64]) -> Vec<f64> {
        match self {
            Factor::Dense(c) => c.solve(b),
            Factor::Sparse(c) => c.solve(b),
        }
    }

    /// Turn every column of `z` (n×S, N(0, I) draws) into a draw from N(0, H⁻¹), in place:
    /// Lᵀ U = Z for the dense factor, Pᵀ L⁻ᵀ Z for the sparse one.
    pub fn solve_lt_in_place(&self, z: &mut Matrix) {
        match self {
            Factor::Dense(c) => c.solve_lt_in_place(z),
            Factor::Sparse(c) => c.draws_in_place(z),
        }
    }

    /// log det H.
    pub fn log_det(&self) -> f64 {
        match self {
            Factor::Dense(c) => c.log_det(),
            Factor::Sparse(c) => c.log_det(),
        }
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

    /// A sparse SPD matrix shaped like a Bradley–Terry Hessian: a weighted graph Laplacian on
    /// `m` nodes (a ring plus chords) plus the identity, and two dense trailing rows/columns.
    fn bt_like(m: usize) -> Matrix {
        bt_graph(m, &[7])
    }

    /// As [`bt_like`] with chords (i, t·i + 3) for each t in `chords`: none leaves a ring, whose
    /// factor stays sparse; several make an expander, whose factor fills in.
    fn bt_graph(m: usize, chords: &[usize]) -> Matrix {
        let n = m + 2;
        let mut a = Matrix::zeros(n, n);
        let edge = |a: &mut Matrix, i: usize, j: usize, w: f64| {
            a[(i, i)] += w;
            a[(j, j)] += w;
            a[(i, j)] -= w;
            a[(j, i)] -= w;
        };
        for i in 0..m {
            edge(&mut a, i, (i + 1) % m, 0.2 + 0.01 * i as f64);
            for &t in chords {
                if (i * t + 3) % m != i {
                    edge(&mut a, i, (i * t + 3) % m, 0.15);
                }
            }
        }
        for i in 0..n {
            a[(i, i)] += 1.0;
        }
        for i in 0..m {
            let (u, v) = (0.05 * ((i % 5) as f64 - 2.0), 0.1);
            a[(i, m)] += u;
            a[(m, i)] += u;
            a[(i, m + 1)] += v;
            a[(m + 1, i)] += v;
        }
        a[(m, m)] += 2.0;
        a[(m + 1, m + 1)] += 3.0;
        a[(m, m + 1)] += 0.3;
        a[(m + 1, m)] += 0.3;
        a
    }

    /// Lower triangle of a dense matrix in compressed sparse columns (structural zeros dropped).
    fn lower_csc(a: &Matrix) -> (Vec<usize>, Vec<usize>, Vec<f64>) {
        let n = a.nrows();
        let (mut cp, mut ri, mut v) = (vec![0], Vec::new(), Vec::new());
        for c in 0..n {
            for r in c..n {
                if a[(r, c)] != 0.0 || r == c {
                    ri.push(r);
                    v.push(a[(r, c)]);
                }
            }
            cp.push(ri.len());
        }
        (cp, ri, v)
    }

    #[test]
    fn sparse_cholesky_matches_dense_solve_inverse_diagonal_and_log_det() {
        // Independent computation: the dense factor and inverse of the same matrix.
        for m in [3usize, 40, 120] {
            let a = bt_like(m);
            let n = a.nrows();
            let (cp, ri, v) = lower_csc(&a);
            let sp = SparseCholesky::factor(n, &cp, &ri, &v).unwrap();
            let dense = Cholesky::factor(&a).unwrap();
            let inv = dense.inverse();
            let b: Vec<f64> = (0..n).map(|i| (i as f64 * 0.37).sin()).collect();
            let (xs, xd) = (sp.solve(&b), dense.solve(&b));
            for i in 0..n {
                assert!((xs[i] - xd[i]).abs() < 1e-12, "m={m} solve[{i}]: {} vs {}", xs[i], xd[i]);
            }
            let d = sp.inverse_diag();
            for i in 0..n {
                assert!((d[i] - inv[(i, i)]).abs() < 1e-12, "m={m} diag[{i}]: {} vs {}", d[i], inv[(i, i)]);
            }
            assert!((sp.log_det() - dense.log_det()).abs() < 1e-9);
            // Columns of H⁻¹ by a multi-column solve.
            let mut e = Matrix::from_fn(n, 3, |r, j| if r == [0, m / 2, n - 1][j] { 1.0 } else { 0.0 });
            sp.solve_in_place(&mut e);
            for (j, c) in [0, m / 2, n - 1].into_iter().enumerate() {
                for r in 0..n {
                    assert!((e[(r, j)] - inv[(r, c)]).abs() < 1e-12);
                }
            }
        }
    }

    #[test]
    fn sparse_draws_have_covariance_h_inverse() {
        // U = Pᵀ L⁻ᵀ Z with Z = I: U Uᵀ = Pᵀ (LLᵀ)⁻¹ P = H⁻¹ exactly, so draws U z have
        // covariance H⁻¹ (checked entry by entry against the dense inverse). A ring keeps the
        // factor sparse, so this is the sweep over the supernodes.
        let a = bt_graph(250, &[]);
        let n = a.nrows();
        let (cp, ri, v) = lower_csc(&a);
        let sp = SparseCholesky::factor(n, &cp, &ri, &v).unwrap();
        assert!(!sp.dense_fill(), "nnz(L) = {} of n² = {}", sp.nnz(), n * n);
        let mut u = Matrix::from_fn(n, n, |r, c| if r == c { 1.0 } else { 0.0 });
        sp.draws_in_place(&mut u);
        let mut ut = Matrix::from_fn(n, n, |r, c| u[(c, r)]);
        ut = u.matmul(&ut);
        let inv = Cholesky::factor(&a).unwrap().inverse();
        for r in 0..n {
            for c in 0..n {
                assert!((ut[(r, c)] - inv[(r, c)]).abs() < 1e-12, "({r},{c})");
            }
        }
    }

    #[test]
    fn a_filled_in_factor_gives_h_inverse_through_w_and_single_precision_draws() {
        // Ring plus four chords per base: the factor fills in, so diag H⁻¹ and H⁻¹B come from
        // W = L⁻¹ (inverted in single precision) and draws from a single-precision solve.
        let a = bt_graph(250, &[7, 13, 31, 57]);
        let n = a.nrows();
        let (cp, ri, v) = lower_csc(&a);
        let sp = SparseCholesky::factor(n, &cp, &ri, &v).unwrap();
        assert!(sp.dense_fill(), "nnz(L) = {} of n² = {}", sp.nnz(), n * n);
        let inv = Cholesky::factor(&a).unwrap().inverse();
        let w = sp.inverse_factor();
        let d = w.inverse_diag();
        let cols = [0, 160, n - 1];
        let mut e = Matrix::from_fn(n, 3, |r, j| if r == cols[j] { 1.0 } else { 0.0 });
        w.solve_in_place(&mut e);
        // A combination of columns, as for a design row d = e_i − e_j + x e_c + e_κ.
        let mut dvec = Matrix::from_fn(n, 1, |r, _| match r {
            3 => 1.0,
            177 => -1.0,
            r if r == n - 2 => 0.4,
            r if r == n - 1 => 1.0,
            _ => 0.0,
        });
        w.solve_in_place(&mut dvec);
        // Single-precision W: entries off by about 1e-7 of H⁻¹'s scale (its entries are ≤ 1
        // here), not by rounding alone.
        let mut worst_diag = 0.0f64;
        for r in 0..n {
            worst_diag = worst_diag.max((d[r] - inv[(r, r)]).abs() / inv[(r, r)]);
            for (j, &c) in cols.iter().enumerate() {
                assert!((e[(r, j)] - inv[(r, c)]).abs() < 1e-6, "H⁻¹[{r},{c}]");
            }
            let want = inv[(r, 3)] - inv[(r, 177)] + 0.4 * inv[(r, n - 2)] + inv[(r, n - 1)];
            assert!((dvec[(r, 0)] - want).abs() < 1e-6, "(H⁻¹d)[{r}]");
        }
        assert!(worst_diag < 1e-6 && worst_diag > 1e-12, "max relative error of diag H⁻¹ {worst_diag:e}");
        // Draws with Z = I: U Uᵀ = H⁻¹ up to single-precision rounding (H⁻¹ entries are ≤ 1).
        let mut u = Matrix::from_fn(n, n, |r, c| if r == c { 1.0 } else { 0.0 });
        sp.draws_in_place(&mut u);
        let ut = Matrix::from_fn(n, n, |r, c| u[(c, r)]);
        let uut = u.matmul(&ut);
        let worst = (0..n).flat_map(|r| (0..n).map(move |c| (r, c))).map(|(r, c)| (uut[(r, c)] - inv[(r, c)]).abs());
        let worst = worst.fold(0.0f64, f64::max);
        assert!(worst < 1e-5 && worst > 0.0, "max |UUᵀ − H⁻¹| = {worst:e}");
    }

    #[test]
    fn an_ill_conditioned_filled_in_factor_inverts_w_in_double_precision() {
        // The same graph with one parameter's curvature 1e8 times larger: L_ii spans more than
        // W32_MAX_DIAG_RATIO, so W is inverted in double and diag H⁻¹ is exact up to rounding.
        let mut a = bt_graph(250, &[7, 13, 31, 57]);
        let n = a.nrows();
        a[(n - 1, n - 1)] += 1e8;
        let (cp, ri, v) = lower_csc(&a);
        let sp = SparseCholesky::factor(n, &cp, &ri, &v).unwrap();
        assert!(sp.dense_fill());
        let inv = Cholesky::factor(&a).unwrap().inverse();
        let d = sp.inverse_factor().inverse_diag();
        for r in 0..n {
            assert!(
                (d[r] - inv[(r, r)]).abs() <= 1e-12 * inv[(r, r)].max(1e-8),
                "diag[{r}]: {} vs {}",
                d[r],
                inv[(r, r)]
            );
        }
    }

    #[test]
    fn kept_rows_draw_h_inverse_on_the_kept_rows_and_skip_isolated_ones() {
        // 60 isolated rows (diagonal only) ahead of a ring-shaped block: the kept rows' draws
        // with Z = I give U Uᵀ = H⁻¹ on the kept rows, each skipped row its 1/√H_rr.
        let g = bt_graph(120, &[]);
        let (iso, ng) = (60, g.nrows());
        let n = iso + ng;
        let a = Matrix::from_fn(n, n, |r, c| match (r < iso, c < iso) {
            (true, true) if r == c => 1.5 + 0.01 * r as f64,
            (false, false) => g[(r - iso, c - iso)],
            _ => 0.0,
        });
        let (cp, ri, v) = lower_csc(&a);
        let sp = SparseCholesky::factor(n, &cp, &ri, &v).unwrap();
        let skip: Vec<bool> = (0..n).map(|r| r < iso).collect();
        assert!((0..n).all(|r| sp.is_isolated(r) == (r < iso)));
        let kept = sp.kept_rows(&skip).expect("isolated rows are zero in L off the diagonal");
        assert_eq!(kept.len(), ng);
        assert_eq!(kept.skipped().len(), iso);
        for (r, (orig, inv)) in kept.skipped().iter().enumerate() {
            assert_eq!(*orig, r);
            assert!((inv - 1.0 / a[(r, r)].sqrt()).abs() < 1e-15);
        }
        // Row-major draws: x[c · ng + s] = Z[c, s] = δ_cs.
        let mut x: Vec<f64> = (0..ng * ng).map(|i| if i / ng == i % ng { 1.0 } else { 0.0 }).collect();
        kept.draws_in_place(&mut x, ng);
        let u = Matrix::from_fn(ng, ng, |r, c| x[r * ng + c]);
        let ut = Matrix::from_fn(ng, ng, |r, c| u[(c, r)]);
        let uut = u.matmul(&ut);
        let inv = Cholesky::factor(&a).unwrap().inverse();
        let orig = kept.original();
        for r in 0..ng {
            for c in 0..ng {
                assert!((uut[(r, c)] - inv[(orig[r], orig[c])]).abs() < 1e-12, "({r},{c})");
            }
        }
        // A row that is not isolated cannot be skipped. (A pattern listing the isolated rows'
        // c and κ entries, as the Hessian's does, is tested in model::membership.)
        let mut bad = skip.clone();
        bad[iso + 5] = true;
        assert!(sp.kept_rows(&bad).is_none());
    }

    #[test]
    fn sparse_cholesky_reports_a_non_positive_pivot() {
        let mut a = bt_like(10);
        a[(4, 4)] = -5.0;
        let (cp, ri, v) = lower_csc(&a);
        assert!(SparseCholesky::factor(a.nrows(), &cp, &ri, &v).is_err());
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

//! Monte-Carlo top-k membership under the Laplace posterior (SPEC §2).
//!
//! π_m = P(base m is among the k largest θ). Draw z ~ N(0, I) (n per draw, ChaCha8 stream),
//! solve Lᵀu = z where H = LLᵀ, take the θ part of β̂ + u; π_m is the fraction of S draws in
//! which m is in the top k.

use super::bt::Fit;
use super::linalg::Matrix;
use crate::rng::ChaCha8Rng;
use rand_distr::{Distribution, StandardNormal};

/// Top-k membership probabilities (length M) from `draws` Monte-Carlo draws.
///
/// # Panics
/// If `k` is 0 or ≥ M.
pub fn topk_membership(fit: &Fit, m: usize, k: usize, draws: usize, rng: &mut ChaCha8Rng) -> Vec<f64> {
    assert!(k >= 1 && k < m, "k = {k} must be in 1..M (M = {m})");
    let n = fit.beta.len();
    let mut z = Matrix::from_fn(n, draws, |_, _| 0.0);
    for s in 0..draws {
        for r in 0..n {
            z[(r, s)] = StandardNormal.sample(rng);
        }
    }
    fit.chol.solve_lt_in_place(&mut z);
    let mut counts = vec![0usize; m];
    let mut idx: Vec<usize> = (0..m).collect();
    let mut theta = vec![0.0; m];
    for s in 0..draws {
        for (t, (b, r)) in theta.iter_mut().zip(fit.beta.iter().zip(0..m)) {
            *t = b + z[(r, s)];
        }
        for (i, v) in idx.iter_mut().enumerate() {
            *v = i;
        }
        idx.select_nth_unstable_by(k - 1, |a, b| theta[*b].total_cmp(&theta[*a]));
        for &i in &idx[..k] {
            counts[i] += 1;
        }
    }
    counts.into_iter().map(|c| c as f64 / draws as f64).collect()
}

/// Indices of the k largest values (ties by lower index), sorted by value descending.
pub fn point_topk(values: &[f64], k: usize) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..values.len()).collect();
    idx.sort_by(|a, b| values[*b].total_cmp(&values[*a]).then(a.cmp(b)));
    idx.truncate(k);
    idx
}

/// Recall@k = |Ŝ ∩ S*| / k.
pub fn recall_at_k(estimated: &[usize], gold: &[usize]) -> f64 {
    let k = gold.len();
    estimated.iter().filter(|i| gold.contains(i)).count() as f64 / k as f64
}

//! Top-k membership that counts the queries whose outcome the posterior has not seen yet
//! (pipelined dispatch; docs/live.md, "Concurrency"; docs/experiments.md, "Pipelined
//! acquisition").
//!
//! The top-k rule weighs a pair by π_i(1 − π_i) + π_j(1 − π_j). In a wide pipeline π is the
//! last refit's, and the queries in flight will sharpen it before their successors' verdicts
//! arrive. Their outcomes are unknown, but their information is not: each pending ordered query
//! (a, b) adds w d dᵀ to H (Fisher weight w = p̂(1 − p̂) at the MAP, design row
//! d = (e_i − e_j, x_a − x_b, 1)), which leaves Σ' = (H + Σ_s w_s d_s d_sᵀ)⁻¹ (Sherman–Morrison
//! steps, no outcome needed). The posterior mean after the pending verdicts is still unknown:
//! before they arrive it is distributed as β̂' ~ N(β̂, Σ − Σ') (the preposterior; Σ − Σ' =
//! Σ_s f_s u_s u_sᵀ with the steps' f_s, u_s), and then β ~ N(β̂', Σ'), so the draws of β are
//! N(β̂, Σ) as before. The weight a pending-aware rule should use is the expected boundary weight
//! once they are in, E[π'_i(1 − π'_i)] over β̂', estimated by nested Monte Carlo.

use crate::acquire::Context;
use crate::acquire::batch::fisher_weight;
use crate::domain::rng::ChaCha8Rng;
use crate::model::linalg::{Cholesky, Matrix};
use rand_distr::{Distribution, StandardNormal};

/// Largest M for which the pending-aware weights are computed: above it the nested draws
/// (O(outer · inner · M²) per selection step) cost more than a refit, and the refit's π is used.
pub const MAX_BASES: usize = 300;

/// One Sherman–Morrison step: its factor f_s and vector u_s.
type RankOneStep = (f64, Vec<f64>);

/// The rank-one steps of the pending queries: Σ' = Σ − Σ_s f_s u_s u_sᵀ, with u_s = Σ_{s−1} d_s and
/// f_s = w_s / (1 + w_s d_sᵀ Σ_{s−1} d_s). Returns Σ' (n×n) and the steps. `None` for a
/// posterior without a dense Σ.
fn pending_steps(ctx: &Context<'_>, pending: &[(usize, usize)]) -> Option<(Matrix, Vec<RankOneStep>)> {
    let mut sigma = ctx.post.dense_cov()?.clone();
    let (m, p) = (ctx.m, ctx.p);
    let n = sigma.nrows();
    let g = ctx.apparent();
    let kappa = ctx.kappa();
    let mut steps = Vec::with_capacity(pending.len());
    for &(a, b) in pending {
        let (i, j) = (ctx.item_base[a], ctx.item_base[b]);
        let mut d = vec![0.0; n];
        d[i] += 1.0;
        d[j] -= 1.0;
        for k in 0..p {
            d[m + k] = ctx.x[a][k] - ctx.x[b][k];
        }
        d[m + p] = 1.0;
        let u: Vec<f64> = (0..n).map(|r| (0..n).map(|c| sigma[(r, c)] * d[c]).sum()).collect();
        let dsd: f64 = d.iter().zip(&u).map(|(x, y)| x * y).sum();
        let w = fisher_weight(&g, kappa, a, b);
        let f = w / (1.0 + w * dsd);
        for c in 0..n {
            let fc = f * u[c];
            for (s, ur) in sigma.col_mut(c).iter_mut().zip(&u) {
                *s -= fc * ur;
            }
        }
        steps.push((f, u));
    }
    Some((sigma, steps))
}

/// The lower-triangular factor L of `chol` as rows (row i holds L_i0..L_ii).
fn lower_rows(chol: &Cholesky) -> Vec<Vec<f64>> {
    let m = chol.dim();
    let mut rows: Vec<Vec<f64>> = (0..m).map(|i| vec![0.0; i + 1]).collect();
    let mut e = vec![0.0; m];
    for j in 0..m {
        e[j] = 1.0;
        let col = chol.lower_mul(&e);
        for (i, row) in rows.iter_mut().enumerate().skip(j) {
            row[j] = col[i];
        }
        e[j] = 0.0;
    }
    rows
}

/// Count of top-k memberships of θ = `mean` + L z over `draws` draws z ~ N(0, I_M), into `counts`.
fn count_topk(mean: &[f64], l: &[Vec<f64>], k: usize, draws: usize, rng: &mut ChaCha8Rng, counts: &mut [usize]) {
    let m = mean.len();
    let mut z = vec![0.0; m];
    let mut theta = vec![0.0; m];
    let mut order: Vec<usize> = (0..m).collect();
    for _ in 0..draws {
        for v in z.iter_mut() {
            *v = StandardNormal.sample(rng);
        }
        for ((t, mu), row) in theta.iter_mut().zip(mean).zip(l) {
            *t = mu + row.iter().zip(&z).map(|(a, b)| a * b).sum::<f64>();
        }
        // The k largest (ties by lower index): a total order, so the set is unique.
        order.select_nth_unstable_by(k - 1, |&a, &b| theta[b].total_cmp(&theta[a]).then(a.cmp(&b)));
        for &i in &order[..k] {
            counts[i] += 1;
        }
    }
}

/// Monte-Carlo draws per selection step: 20 draws of the mean after the pending verdicts, 50
/// draws of β around each.
pub const DRAWS: usize = 1000;

/// Draws of β around each draw of the mean.
const INNER: usize = 50;

/// The top-k membership the top-k rule should weigh with when `pending` queries (each also in
/// `ctx.queried`) have no verdict in the posterior yet: per base a q with q(1 − q) equal to
/// E[π'(1 − π')], the expected boundary weight once they are in (see the module doc), from
/// `draws` Monte-Carlo draws of `rng` (`draws` / 50 means, 50 draws around each), so the rule's
/// weight π(1 − π) becomes that expectation. Length M. `None` when nothing changes: no pending
/// query, no dense Σ, or more than [`MAX_BASES`] bases.
pub fn weights_as_membership(
    ctx: &Context<'_>,
    pending: &[(usize, usize)],
    draws: usize,
    rng: &mut ChaCha8Rng,
) -> Option<Vec<f64>> {
    let m = ctx.m;
    if pending.is_empty() || m > MAX_BASES || ctx.k == 0 || ctx.k >= m {
        return None;
    }
    let (sigma, steps) = pending_steps(ctx, pending)?;
    let theta_block = Matrix::from_fn(m, m, |r, c| sigma[(r, c)]);
    let l = lower_rows(&Cholesky::factor(&theta_block).ok()?);
    let mean = &ctx.post.mean[..m];
    let outer = draws.div_ceil(INNER).max(2);
    let mut weight = vec![0.0; m];
    for _ in 0..outer {
        // β̂' = β̂ + Σ_s √f_s z_s u_s ~ N(β̂, Σ − Σ') (θ part), then β ~ N(β̂', Σ').
        let mut shifted = mean.to_vec();
        for (f, u) in &steps {
            let z: f64 = StandardNormal.sample(rng);
            let s = f.max(0.0).sqrt() * z;
            for (t, ui) in shifted.iter_mut().zip(u) {
                *t += s * ui;
            }
        }
        let mut counts = vec![0usize; m];
        count_topk(&shifted, &l, ctx.k, INNER, rng, &mut counts);
        for (w, c) in weight.iter_mut().zip(counts) {
            let q = c as f64 / INNER as f64;
            // q(1 − q) · S/(S − 1) is unbiased for π'(1 − π') with S draws.
            *w += q * (1.0 - q) * INNER as f64 / (INNER as f64 - 1.0) / outer as f64;
        }
    }
    Some(weight.into_iter().map(|w| (1.0 - (1.0 - 4.0 * w.min(0.25)).sqrt()) / 2.0).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acquire::testutil::{diag, from_posterior};
    use crate::domain::rng;

    fn cdf(x: f64) -> f64 {
        statrs::function::erf::erfc(-x / std::f64::consts::SQRT_2) / 2.0
    }

    #[test]
    fn no_pending_query_changes_nothing() {
        let f = from_posterior(vec![0.3, 0.0, 0.0], diag(&[1.0, 1.0, 1e-9]), 1);
        assert!(weights_as_membership(&f.ctx(), &[], DRAWS, &mut rng::stream(1, "t", 0)).is_none());
    }

    /// Two bases, k = 1, κ known (variance 1e-12): δ = θ₀ − θ₁ has prior variance 2; the pending
    /// query (0, 1) with Fisher weight w leaves Var'(δ) = 2/(1 + 2w), and the mean of δ after it
    /// is N(δ̂, 2 − 2/(1 + 2w)). Then π'₀ = Φ(X), X = δ̂'/sd' ~ N(δ̂/sd', 2w), and the weight is
    /// E[Φ(X)(1 − Φ(X))], here by quadrature; both bases get it (π'₁ = 1 − π'₀).
    #[test]
    fn two_bases_match_the_preposterior_expectation_by_quadrature() {
        let (t0, t1): (f64, f64) = (0.4, 0.0);
        let f = from_posterior(vec![t0, t1, 0.0], diag(&[1.0, 1.0, 1e-12]), 1);
        let s = 1.0 / (1.0 + (t1 - t0).exp());
        let w = s * (1.0 - s);
        let sd1 = (2.0 / (1.0 + 2.0 * w)).sqrt();
        let (mu, tau) = ((t0 - t1) / sd1, (2.0 * w).sqrt());
        let n = 20_000;
        let want: f64 = (0..n)
            .map(|i| {
                let z = -8.0 + 16.0 * (i as f64 + 0.5) / n as f64;
                let dens = (-z * z / 2.0).exp() / (2.0 * std::f64::consts::PI).sqrt() * 16.0 / n as f64;
                let p = cdf(mu + tau * z);
                dens * p * (1.0 - p)
            })
            .sum();
        // Without the pending query the weight would be π₀(1 − π₀) with π₀ = Φ(0.4/√2).
        let before = cdf((t0 - t1) / 2f64.sqrt());
        assert!(want < before * (1.0 - before) - 0.01, "{want} {before}");
        let q = weights_as_membership(&f.ctx(), &[(0, 1)], 200_000, &mut rng::stream(1, "t", 1)).unwrap();
        for qi in &q {
            // MC error of the nested estimate at 4000 × 50 draws is below 0.002.
            assert!((qi * (1.0 - qi) - want).abs() < 0.003, "{q:?} vs {want}");
        }
    }

    #[test]
    fn more_than_max_bases_or_no_dense_covariance_is_left_alone() {
        let m = MAX_BASES + 1;
        let mut mean = vec![0.0; m];
        mean.push(0.0);
        let f = from_posterior(mean, diag(&vec![1.0; m + 1]), 5);
        assert!(weights_as_membership(&f.ctx(), &[(0, 1)], 100, &mut rng::stream(1, "t", 2)).is_none());
    }
}

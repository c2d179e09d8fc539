//! The top-k-aware acquisition score and its D-optimal / uncertainty relatives (docs/model.md §3).
//!
//! s(a, b) = p̂_ab (1 − p̂_ab) · v_ij · (π_i(1 − π_i) + π_j(1 − π_j)),  i = base(a), j = base(b),
//! p̂_ab = σ(η̂_ab), v_ij = Σ_ii + Σ_jj − 2Σ_ij. After each pick Σ is updated by a Sherman–Morrison
//! step with that query's information (weight p̂(1 − p̂), full design row), so a batch of R picks
//! is not redundant; π stays fixed until the next refit.

use super::{Context, StrategyKind, Unit, argmax_tiebreak, candidate_units, candidate_units_touching};
use crate::model::bt::sigmoid;
use crate::model::linalg::{Matrix, sherman_morrison_update};
use crate::rng::ChaCha8Rng;

/// Fisher weight p̂_ab(1 − p̂_ab) of the ordered query (a, b) at the current MAP, with
/// p̂_ab = σ(g_a − g_b + κ̂) and `g` the apparent scores of [`Context::apparent`].
pub(crate) fn fisher_weight(g: &[f64], kappa: f64, a: usize, b: usize) -> f64 {
    let s = sigmoid(g[a] - g[b] + kappa);
    s * (1.0 - s)
}

/// Σ ← Σ − w Σd dᵀΣ / (1 + w dᵀΣd) for the ordered query (a, b): design row
/// d = (e_i − e_j, x_a − x_b, 1) with i = base(a), j = base(b), Fisher weight `w` (docs/model.md §3 batch
/// step; no refit). `sd` is scratch space of length n = M + p + 1.
pub(crate) fn sm_update_query(ctx: &Context<'_>, sigma: &mut Matrix, a: usize, b: usize, w: f64, sd: &mut [f64]) {
    let (m, p) = (ctx.m, ctx.p);
    let (i, j) = (ctx.item_base[a], ctx.item_base[b]);
    for (row, s) in sd.iter_mut().enumerate() {
        let mut v = sigma[(row, i)] - sigma[(row, j)] + sigma[(row, m + p)];
        for k in 0..p {
            v += sigma[(row, m + k)] * (ctx.x[a][k] - ctx.x[b][k]);
        }
        *s = v;
    }
    let mut dsd = sd[i] - sd[j] + sd[m + p];
    for k in 0..p {
        dsd += sd[m + k] * (ctx.x[a][k] - ctx.x[b][k]);
    }
    sherman_morrison_update(sigma, sd, dsd, w);
}

/// The posterior covariance during a batch: Σ_t = Σ − Σ_{s ≤ t} f_s u_s u_sᵀ, kept as Σ plus the
/// rank-one downdates of the queries picked so far (Sherman–Morrison, docs/model.md §3), so a pick costs
/// O(n·t) instead of an O(n²) update of a copy of Σ.
struct BatchCov<'a> {
    sigma: &'a Matrix,
    /// (f_s, u_s = Σ_{s−1} d_s) per picked query.
    downdates: Vec<(f64, Vec<f64>)>,
}

impl<'a> BatchCov<'a> {
    fn new(sigma: &'a Matrix) -> Self {
        Self { sigma, downdates: Vec::new() }
    }

    /// Add the query (a, b) with Fisher weight `w`; returns (f, u) of its downdate.
    fn add(&mut self, ctx: &Context<'_>, a: usize, b: usize, w: f64) -> &(f64, Vec<f64>) {
        let (m, p) = (ctx.m, ctx.p);
        let (i, j) = (ctx.item_base[a], ctx.item_base[b]);
        let n = self.sigma.nrows();
        // d = (e_i − e_j, x_a − x_b, 1); Σ is symmetric, so Σd is a combination of its columns.
        let mut coef: Vec<(usize, f64)> = vec![(i, 1.0), (j, -1.0), (m + p, 1.0)];
        coef.extend((0..p).map(|k| (m + k, ctx.x[a][k] - ctx.x[b][k])));
        let mut u = vec![0.0; n];
        for &(c, v) in &coef {
            if v != 0.0 {
                for (t, s) in u.iter_mut().zip(self.col(c)) {
                    *t += v * s;
                }
            }
        }
        for (f, us) in &self.downdates {
            let ud: f64 = coef.iter().map(|&(c, v)| v * us[c]).sum();
            for (t, s) in u.iter_mut().zip(us) {
                *t -= f * ud * s;
            }
        }
        let dsd: f64 = coef.iter().map(|&(c, v)| v * u[c]).sum();
        self.downdates.push((w / (1.0 + w * dsd), u));
        self.downdates.last().expect("just pushed")
    }

    /// Column c of the batch-start Σ (contiguous).
    fn col(&self, c: usize) -> &[f64] {
        self.sigma.col(c)
    }
}

/// Select up to `r` queries by the score of `kind` (Topk, DOptimal or Uncertainty).
///
/// Candidate units are unordered item pairs with their open orders (`orders: both`, scored by
/// the sum over the open orders) or single ordered pairs (`orders: single`). The unit with the
/// highest score is taken (ties broken uniformly by `rng`), Σ is updated by one Sherman–Morrison
/// step per query taken, and the scores are recomputed, until `r` queries are chosen or no
/// unit is left.
pub fn select(kind: StrategyKind, ctx: &Context<'_>, r: usize, rng: &mut ChaCha8Rng) -> Vec<(usize, usize)> {
    let g = ctx.apparent();
    let kappa = ctx.kappa();
    let bw: Vec<f64> = ctx.membership.iter().map(|q| q * (1.0 - q)).collect();
    let sigma = &ctx.post.cov;
    // Score = weight · v_ij; the weight does not change within the batch. Under `topk` a unit
    // whose two bases both have π ∈ {0, 1} has weight 0 and score 0 for the whole batch, so only
    // the units touching an item with 0 < π < 1 are scored ("active"); the others matter only
    // if no active unit has a positive score, and then every open unit ties at 0.
    let hot: Vec<bool> = match kind {
        StrategyKind::Topk => ctx.item_base.iter().map(|&i| bw[i] > 0.0).collect(),
        _ => vec![true; ctx.n_items()],
    };
    let units = candidate_units_touching(ctx, &hot);
    let pair_bases: Vec<(u32, u32)> = units
        .iter()
        .map(|u| {
            let (a, b) = u.pair();
            (ctx.item_base[a] as u32, ctx.item_base[b] as u32)
        })
        .collect();
    // Fisher weights p̂(1 − p̂) = e^η/(1 + e^η)² with e^η_ab = e^{g_a} e^{κ̂} / e^{g_b}: one exp per
    // item instead of one per candidate (direct form when a product leaves the f64 range).
    let eg: Vec<f64> = g.iter().map(|v| v.exp()).collect();
    let ek = kappa.exp();
    // p̂(1 − p̂) = A K B / (B + A K)² with A = e^{g_a}, B = e^{g_b}, K = e^{κ̂}.
    let info = |a: usize, b: usize| {
        let (ak, bb) = (eg[a] * ek, eg[b]);
        let w = ak * bb / ((bb + ak) * (bb + ak));
        if w.is_finite() && w > 0.0 { w } else { fisher_weight(&g, kappa, a, b) }
    };
    let weight: Vec<f64> = units
        .iter()
        .zip(&pair_bases)
        .map(|(u, &(i, j))| {
            let (a, b) = u.pair();
            let w =
                || (if u.mask & 1 != 0 { info(a, b) } else { 0.0 }) + if u.mask & 2 != 0 { info(b, a) } else { 0.0 };
            match kind {
                StrategyKind::Topk => w() * (bw[i as usize] + bw[j as usize]),
                StrategyKind::DOptimal => w(),
                _ => 1.0,
            }
        })
        .collect();
    // v_ij = Σ_ii + Σ_jj − 2Σ_ij, Σ_ij read from column i (contiguous for a run of units with one a).
    let diag: Vec<f64> = (0..sigma.nrows()).map(|r| sigma[(r, r)]).collect();
    let mut v: Vec<f64> = pair_bases
        .iter()
        .map(|&(i, j)| {
            let (i, j) = (i as usize, j as usize);
            diag[i] + diag[j] - 2.0 * sigma[(j, i)]
        })
        .collect();
    let mut scores: Vec<f64> = weight.iter().zip(&v).map(|(w, v)| w * v).collect();
    let mut taken: Vec<Unit> = Vec::new();
    let mut cov = BatchCov::new(sigma);
    let mut picked: Vec<(usize, usize)> = Vec::new();
    while picked.len() < r {
        let top = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let best = match if top > 0.0 { argmax_tiebreak(&scores, rng) } else { None } {
            Some(u) => units[u],
            None => {
                // No positive score is left: every open unit not yet taken ties at 0.
                let rest: Vec<Unit> = candidate_units(ctx).into_iter().filter(|u| !taken.contains(u)).collect();
                if rest.is_empty() {
                    break;
                }
                rest[argmax_tiebreak(&vec![0.0; rest.len()], rng).expect("non-empty")]
            }
        };
        taken.push(best);
        // Units are sorted by (a, b): retire the taken one from the scored list.
        if let Ok(u) = units.binary_search_by_key(&best.pair(), |u| u.pair()) {
            scores[u] = f64::NEG_INFINITY;
        }
        let first_new = cov.downdates.len();
        for (a, b) in best.orders() {
            if picked.len() >= r {
                break;
            }
            picked.push((a, b));
            cov.add(ctx, a, b, fisher_weight(&g, kappa, a, b));
        }
        if picked.len() >= r {
            break;
        }
        for (f, us) in &cov.downdates[first_new..] {
            for (((s, vu), w), &(i, j)) in scores.iter_mut().zip(v.iter_mut()).zip(&weight).zip(&pair_bases) {
                if *s == f64::NEG_INFINITY {
                    continue;
                }
                let e = us[i as usize] - us[j as usize];
                *vu -= f * e * e;
                *s = w * *vu;
            }
        }
    }
    picked
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acquire::testutil::{Fixture, diag, fitted, from_posterior};
    use crate::acquire::{Orders, select as select_any};
    use crate::model::linalg::Cholesky;
    use std::collections::HashSet;

    /// Design row d of the ordered query (a, b): (e_i − e_j, x_a − x_b, 1).
    fn row(f: &Fixture, a: usize, b: usize) -> Vec<f64> {
        let mut d = vec![0.0; f.m + f.p + 1];
        d[f.item_base[a]] += 1.0;
        d[f.item_base[b]] -= 1.0;
        for k in 0..f.p {
            d[f.m + k] = f.x[a][k] - f.x[b][k];
        }
        d[f.m + f.p] = 1.0;
        d
    }

    /// p̂(1 − p̂) from β̂ directly: η̂ = β̂ · d.
    fn info(f: &Fixture, a: usize, b: usize) -> f64 {
        let eta: f64 = row(f, a, b).iter().zip(&f.post.mean).map(|(d, b)| d * b).sum();
        let s = 1.0 / (1.0 + (-eta).exp());
        s * (1.0 - s)
    }

    /// Brute-force argmax over open unordered pairs of the docs/model.md §3 score under covariance `cov`
    /// (summed over both orders), for `kind`.
    fn brute_best(f: &Fixture, cov: &Matrix, kind: StrategyKind, exclude: &[(usize, usize)]) -> (usize, usize) {
        let n = f.item_base.len();
        let mut best = (f64::NEG_INFINITY, (0, 0));
        for a in 0..n {
            for b in a + 1..n {
                if exclude.contains(&(a, b)) {
                    continue;
                }
                let orders: Vec<(usize, usize)> =
                    [(a, b), (b, a)].into_iter().filter(|q| !f.queried.contains(q)).collect();
                if orders.is_empty() {
                    continue;
                }
                let (i, j) = (f.item_base[a], f.item_base[b]);
                let v = cov[(i, i)] + cov[(j, j)] - 2.0 * cov[(i, j)];
                let w: f64 = orders.iter().map(|&(u, t)| info(f, u, t)).sum();
                let bw = f.membership[i] * (1.0 - f.membership[i]) + f.membership[j] * (1.0 - f.membership[j]);
                let s = match kind {
                    StrategyKind::Topk => w * v * bw,
                    StrategyKind::DOptimal => w * v,
                    _ => v,
                };
                if s > best.0 {
                    best = (s, (a, b));
                }
            }
        }
        best.1
    }

    fn unordered(q: (usize, usize)) -> (usize, usize) {
        (q.0.min(q.1), q.0.max(q.1))
    }

    #[test]
    fn topk_first_pick_is_the_argmax_of_the_spec_score() {
        let f = fitted(10, 2, 3);
        let mut rng = crate::rng::stream(1, "t", 0);
        let picks = select_any(StrategyKind::Topk, &f.ctx(), 2, &mut rng);
        let want = brute_best(&f, &f.post.cov, StrategyKind::Topk, &[]);
        assert_eq!(picks, vec![want, (want.1, want.0)], "both orders of the best unordered pair");
    }

    #[test]
    fn batch_picks_use_the_posterior_updated_by_earlier_picks() {
        // Independent computation: Σ' = (Σ⁻¹ + Σ_q w_q d_q d_qᵀ)⁻¹ by refactorisation, not by
        // Sherman–Morrison.
        let f = fitted(10, 2, 3);
        for kind in [StrategyKind::Topk, StrategyKind::DOptimal, StrategyKind::Uncertainty] {
            let mut rng = crate::rng::stream(1, "t", 0);
            let picks = select_any(kind, &f.ctx(), 6, &mut rng);
            assert_eq!(picks.len(), 6);
            let mut cov = f.post.cov.clone();
            let mut taken = Vec::new();
            for step in 0..3 {
                let want = brute_best(&f, &cov, kind, &taken);
                assert_eq!(unordered(picks[2 * step]), want, "{kind:?} pick {step}");
                taken.push(want);
                let mut prec = Cholesky::factor(&cov).unwrap().inverse();
                for (a, b) in [want, (want.1, want.0)] {
                    let d = row(&f, a, b);
                    let w = info(&f, a, b);
                    for r in 0..d.len() {
                        for c in 0..d.len() {
                            prec[(r, c)] += w * d[r] * d[c];
                        }
                    }
                }
                cov = Cholesky::factor(&prec).unwrap().inverse();
            }
        }
    }

    #[test]
    fn d_optimal_is_topk_without_the_boundary_weight() {
        let mut f = fitted(10, 2, 3);
        // With π constant the boundary weight is a constant factor: identical choices.
        f.membership = vec![0.3; 10];
        let a = select_any(StrategyKind::Topk, &f.ctx(), 8, &mut crate::rng::stream(2, "t", 0));
        let b = select_any(StrategyKind::DOptimal, &f.ctx(), 8, &mut crate::rng::stream(2, "t", 0));
        assert_eq!(a, b);
        // With the real π they differ, and D-optimal picks the argmax of p̂(1 − p̂)·v.
        let f = fitted(10, 2, 3);
        let d = select_any(StrategyKind::DOptimal, &f.ctx(), 2, &mut crate::rng::stream(2, "t", 0));
        assert_eq!(unordered(d[0]), brute_best(&f, &f.post.cov, StrategyKind::DOptimal, &[]));
        let t = select_any(StrategyKind::Topk, &f.ctx(), 2, &mut crate::rng::stream(2, "t", 0));
        assert_ne!(unordered(d[0]), unordered(t[0]), "this fixture separates the two rules");
    }

    #[test]
    fn uncertainty_picks_the_largest_contrast_variance() {
        // Σ diagonal (θ0..θ5, κ): v_ij = Σ_ii + Σ_jj is largest for the two widest bases 1, 3.
        let mut f = from_posterior(vec![0.0; 7], diag(&[1.0, 3.0, 0.5, 2.5, 0.2, 1.2, 0.01]), 2);
        let picks = select_any(StrategyKind::Uncertainty, &f.ctx(), 2, &mut crate::rng::stream(0, "t", 0));
        assert_eq!(picks, vec![(1, 3), (3, 1)]);
        // Once that pair is queried: 1 with the next widest, 5 (v = 4.2 > 4.0 for (0, 1)).
        f.queried = HashSet::from([(1, 3), (3, 1)]);
        let picks = select_any(StrategyKind::Uncertainty, &f.ctx(), 2, &mut crate::rng::stream(0, "t", 0));
        assert_eq!(picks, vec![(1, 5), (5, 1)]);
    }

    #[test]
    fn single_orders_scores_each_ordered_pair_alone() {
        let mut f = fitted(8, 1, 3);
        f.orders = Orders::Single;
        let picks = select_any(StrategyKind::Topk, &f.ctx(), 1, &mut crate::rng::stream(0, "t", 0));
        let n = 8;
        let mut best = (f64::NEG_INFINITY, (0, 0));
        for a in 0..n {
            for b in 0..n {
                if a == b || f.queried.contains(&(a, b)) {
                    continue;
                }
                let v = f.post.contrast_var(a, b);
                let bw = f.membership[a] * (1.0 - f.membership[a]) + f.membership[b] * (1.0 - f.membership[b]);
                let s = info(&f, a, b) * v * bw;
                if s > best.0 {
                    best = (s, (a, b));
                }
            }
        }
        assert_eq!(picks, vec![best.1]);
    }

    #[test]
    fn ties_are_broken_by_the_seeded_rng() {
        // No data: Σ = Λ⁻¹, every contrast variance is 2: every pair ties under `uncertainty`.
        let f = from_posterior(vec![0.0; 11], diag(&[1.0; 11]), 3);
        let mut seen = HashSet::new();
        for seed in 0..200 {
            let a = select_any(StrategyKind::Uncertainty, &f.ctx(), 1, &mut crate::rng::stream(seed, "t", 0));
            let b = select_any(StrategyKind::Uncertainty, &f.ctx(), 1, &mut crate::rng::stream(seed, "t", 0));
            assert_eq!(a, b, "same seed, same pick");
            seen.insert(unordered(a[0]));
        }
        // 45 tied pairs, 200 draws: a uniform tie-break leaves P(< 30 distinct) negligible.
        assert!(seen.len() >= 30, "only {} distinct picks", seen.len());
    }
}

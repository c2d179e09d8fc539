//! Baseline strategies (SPEC §3): round_robin, random, thompson, lucb.

use super::{Context, Orders, argmax_tiebreak, open_orders};
use crate::rng::{self, ChaCha8Rng};
use rand::RngExt;
use rand::seq::SliceRandom;

/// Round robin: a seeded shuffle of all unordered cross-base pairs (fixed for the run), taken in
/// order, both orders of each.
pub fn round_robin(ctx: &Context<'_>, r: usize) -> Vec<(usize, usize)> {
    let n = ctx.n_items();
    let mut pairs: Vec<(usize, usize)> = (0..n)
        .flat_map(|a| (a + 1..n).map(move |b| (a, b)))
        .filter(|&(a, b)| ctx.item_base[a] != ctx.item_base[b])
        .collect();
    pairs.shuffle(&mut rng::stream(ctx.seed, "round_robin", 0));
    let mut out = Vec::new();
    for (a, b) in pairs {
        for q in open_orders(ctx, a, b) {
            if out.len() < r {
                out.push(q);
            }
        }
        if out.len() >= r {
            break;
        }
    }
    out
}

/// Uniformly random open pairs: unordered pairs with both open orders (`both`) or ordered pairs.
pub fn random(ctx: &Context<'_>, r: usize, rng: &mut ChaCha8Rng) -> Vec<(usize, usize)> {
    let n = ctx.n_items();
    let mut units: Vec<Vec<(usize, usize)>> = match ctx.orders {
        Orders::Both => (0..n)
            .flat_map(|a| (a + 1..n).map(move |b| (a, b)))
            .map(|(a, b)| open_orders(ctx, a, b))
            .filter(|o| !o.is_empty())
            .collect(),
        Orders::Single => {
            (0..n).flat_map(|a| (0..n).map(move |b| (a, b))).filter(|&(a, b)| ctx.open(a, b)).map(|q| vec![q]).collect()
        }
    };
    units.shuffle(rng);
    units.into_iter().flatten().take(r).collect()
}

/// Thompson sampling: draw θ from the Laplace posterior (diagonal approximation is not used: the
/// draw is β̂ + Σ^{1/2}z via the covariance's Cholesky factor); query the open pair straddling the
/// sampled k-th/(k+1)-th boundary. Repeated with fresh draws until `r` queries are chosen.
pub fn thompson(ctx: &Context<'_>, r: usize, rng: &mut ChaCha8Rng) -> Vec<(usize, usize)> {
    use rand_distr::{Distribution, StandardNormal};
    let m = ctx.m;
    let sd: Vec<f64> = (0..m).map(|i| ctx.post.cov[(i, i)].max(0.0).sqrt()).collect();
    let mut out: Vec<(usize, usize)> = Vec::new();
    let mut tries = 0;
    while out.len() < r && tries < 50 * r.max(1) {
        tries += 1;
        let theta: Vec<f64> = (0..m)
            .map(|i| ctx.post.mean[i] + sd[i] * <StandardNormal as Distribution<f64>>::sample(&StandardNormal, rng))
            .collect();
        let order = crate::model::membership::point_topk(&theta, m);
        let (bi, bj) = (order[ctx.k - 1], order[ctx.k]);
        let cands = items_of_bases(ctx, bi, bj, &out);
        if cands.is_empty() {
            continue;
        }
        let (a, b) = cands[rng.random_range(0..cands.len())];
        let qs = if ctx.orders == Orders::Both { open_orders(ctx, a, b) } else { vec![(a, b)] };
        for q in qs {
            if out.len() < r && !out.contains(&q) {
                out.push(q);
            }
        }
    }
    if out.len() < r {
        for q in random(ctx, r, rng) {
            if out.len() < r && !out.contains(&q) {
                out.push(q);
            }
        }
    }
    out
}

fn items_of_bases(ctx: &Context<'_>, bi: usize, bj: usize, taken: &[(usize, usize)]) -> Vec<(usize, usize)> {
    let n = ctx.n_items();
    let mut v = Vec::new();
    for a in 0..n {
        for b in 0..n {
            let (ba, bb) = (ctx.item_base[a], ctx.item_base[b]);
            if ((ba == bi && bb == bj) || (ba == bj && bb == bi)) && ctx.open(a, b) && !taken.contains(&(a, b)) {
                v.push((a, b));
            }
        }
    }
    v
}

/// LUCB: among estimated top-k bases the one with the lowest lower bound θ̂ − z·sd, against the
/// outside base with the highest upper bound θ̂ + z·sd (z = 1.96); falls back to the next most
/// ambiguous pair when that pair has no open order.
pub fn lucb(ctx: &Context<'_>, r: usize, rng: &mut ChaCha8Rng) -> Vec<(usize, usize)> {
    const Z: f64 = 1.96;
    let m = ctx.m;
    let theta = &ctx.post.mean[..m];
    let sd: Vec<f64> = (0..m).map(|i| ctx.post.cov[(i, i)].max(0.0).sqrt()).collect();
    let top = crate::model::membership::point_topk(theta, ctx.k);
    let inside: Vec<usize> = {
        let mut v = top.clone();
        v.sort_by(|a, b| (theta[*a] - Z * sd[*a]).total_cmp(&(theta[*b] - Z * sd[*b])));
        v
    };
    let outside: Vec<usize> = {
        let mut v: Vec<usize> = (0..m).filter(|i| !top.contains(i)).collect();
        v.sort_by(|a, b| (theta[*b] + Z * sd[*b]).total_cmp(&(theta[*a] + Z * sd[*a])));
        v
    };
    let mut out = Vec::new();
    'outer: for &bi in &inside {
        for &bj in &outside {
            let cands = items_of_bases(ctx, bi, bj, &out);
            if cands.is_empty() {
                continue;
            }
            let scores = vec![1.0; cands.len()];
            let pick = argmax_tiebreak(&scores, rng).expect("non-empty");
            let (a, b) = cands[pick];
            let qs = if ctx.orders == Orders::Both { open_orders(ctx, a, b) } else { vec![(a, b)] };
            for q in qs {
                if out.len() < r && !out.contains(&q) {
                    out.push(q);
                }
            }
            if out.len() >= r {
                break 'outer;
            }
        }
    }
    out
}

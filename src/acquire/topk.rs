//! The top-k-aware acquisition score and its D-optimal / uncertainty relatives (SPEC §3).
//!
//! s(a, b) = p̂_ab (1 − p̂_ab) · v_ij · (π_i(1 − π_i) + π_j(1 − π_j)),  i = base(a), j = base(b),
//! p̂_ab = σ(η̂_ab), v_ij = Σ_ii + Σ_jj − 2Σ_ij. After each pick Σ is updated by a Sherman–Morrison
//! step with that query's information (weight p̂(1 − p̂), full design row), so a batch of R picks
//! is not redundant; π stays fixed until the next refit.

use super::{Context, Orders, StrategyKind, argmax_tiebreak};
use crate::model::bt::sigmoid;
use crate::model::linalg::sherman_morrison_update;
use crate::rng::ChaCha8Rng;

/// Select up to `r` queries by the score of `kind` (Topk, DOptimal or Uncertainty).
pub fn select(kind: StrategyKind, ctx: &Context<'_>, r: usize, rng: &mut ChaCha8Rng) -> Vec<(usize, usize)> {
    let n = ctx.n_items();
    let (m, p) = (ctx.m, ctx.p);
    let g = ctx.apparent();
    let kappa = ctx.kappa();
    let info = |a: usize, b: usize| {
        let s = sigmoid(g[a] - g[b] + kappa);
        s * (1.0 - s)
    };
    let bw: Vec<f64> = ctx.membership.iter().map(|q| q * (1.0 - q)).collect();
    let mut sigma = ctx.post.cov.clone();
    let mut picked: Vec<(usize, usize)> = Vec::new();
    // Candidate units: (a, b, open orders) with bit 1 = (a, b) open and bit 2 = (b, a) open.
    // `both`: unordered pairs a < b with their open orders; `single`: open ordered pairs.
    let mut units: Vec<(u32, u32, u8)> = Vec::new();
    match ctx.orders {
        Orders::Both => {
            for a in 0..n {
                for b in a + 1..n {
                    let mask = u8::from(ctx.open(a, b)) | (u8::from(ctx.open(b, a)) << 1);
                    if mask != 0 {
                        units.push((a as u32, b as u32, mask));
                    }
                }
            }
        }
        Orders::Single => {
            for a in 0..n {
                for b in 0..n {
                    if ctx.open(a, b) {
                        units.push((a as u32, b as u32, 1));
                    }
                }
            }
        }
    }
    let orders_of = |&(a, b, mask): &(u32, u32, u8)| {
        let (a, b) = (a as usize, b as usize);
        [(mask & 1 != 0).then_some((a, b)), (mask & 2 != 0).then_some((b, a))].into_iter().flatten()
    };
    let unit_info: Vec<f64> = units.iter().map(|u| orders_of(u).map(|(a, b)| info(a, b)).sum()).collect();
    let mut scores = vec![0.0; units.len()];
    let mut alive = vec![true; units.len()];
    let nparams = sigma.nrows();
    let mut sd = vec![0.0; nparams];
    while picked.len() < r {
        for (u, unit) in units.iter().enumerate() {
            if !alive[u] {
                scores[u] = f64::NEG_INFINITY;
                continue;
            }
            let (i, j) = (ctx.item_base[unit.0 as usize], ctx.item_base[unit.1 as usize]);
            let v = sigma[(i, i)] + sigma[(j, j)] - 2.0 * sigma[(i, j)];
            scores[u] = match kind {
                StrategyKind::Topk => unit_info[u] * v * (bw[i] + bw[j]),
                StrategyKind::DOptimal => unit_info[u] * v,
                _ => v,
            };
        }
        let Some(best) = argmax_tiebreak(&scores, rng) else { break };
        alive[best] = false;
        for (a, b) in orders_of(&units[best]) {
            if picked.len() >= r {
                continue;
            }
            picked.push((a, b));
            // Sherman–Morrison with d = (e_i − e_j, x_a − x_b, 1), w = p̂(1 − p̂).
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
            sherman_morrison_update(&mut sigma, &sd, dsd, info(a, b));
        }
    }
    picked
}

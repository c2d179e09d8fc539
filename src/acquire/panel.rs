//! Acquisition over (pair, judge) for a judge panel (docs/model.md §8).
//!
//! A candidate is an unordered pair {a, b} of items of different bases and a judge j that has
//! not answered it; both presentation orders go to that judge. Its score is the top-k rule's
//! expected information per dollar:
//!
//! score(a, b, j) = Σ_orders Δv_o / v_ik · (π_i(1 − π_i) + π_k(1 − π_k)) / Σ_orders price_j(o),
//!
//! where v_ik = Var(θ_i − θ_k) under the panel's Laplace posterior Σ, and
//! Δv_o = w_o (gᵀΣd_o)² / (1 + w_o d_oᵀΣd_o) is the reduction of that variance by one verdict of
//! judge j on order o (g = e_i − e_k, d_o the query's design row [`super::super::model::panel::Layout::row`],
//! w_o = p̄_o(1 − p̄_o), the expected Fisher weight with p̄_o = σ(η̂_o / √(1 + π d_oᵀΣd_o / 8)), the
//! logistic averaged over the Laplace posterior of η_o). With c_j and κ_j known, d_o = s_j g and Δv_o / v ≈ s_j² w_o v_ik: the
//! single-judge top-k score scaled by s_j². A biased judge whose c_j is uncertain informs the
//! contrast less (its d_o also loads on c_j), and a trusted judge's verdict pays for that
//! through Σ. After each pick Σ is updated by one Sherman–Morrison step per order.

use super::argmax_tiebreak;
use crate::domain::rng::ChaCha8Rng;
use crate::model::bt::sigmoid;
use crate::model::linalg::Matrix;
use crate::model::panel::PanelFit;
use std::collections::{HashMap, HashSet};

/// What the panel's acquisition looks at.
pub struct PanelContext<'a> {
    /// The current fit (β̂, Σ).
    pub fit: &'a PanelFit,
    /// Base of each item (length N).
    pub item_base: &'a [usize],
    /// The items of each prompt, ascending: a pair is two items of one prompt (a run over many
    /// prompts, docs/systems.md); a single pool is one prompt holding every item.
    pub prompts: &'a [Vec<usize>],
    /// Covariates in model units as judge j sees item a: `x[j][a]` (length p); a judge-specific
    /// covariate such as "same family" differs between judges.
    pub x: &'a [Vec<Vec<f64>>],
    /// Top-k membership π per base.
    pub membership: &'a [f64],
    /// Ordered pairs each judge has answered or has in flight.
    pub queried: &'a [HashSet<(usize, usize)>],
    /// Worst-case USD of one ordered query (judge, a first, b second): what the run reserves.
    pub cost: &'a (dyn Fn(usize, usize, usize) -> f64 + Sync),
    /// Expected USD of one ordered query (judge, a first, b second): the score's denominator
    /// ([`crate::judge::JudgeInfo::expected_usd`], scaled by what the judge's answered queries
    /// have cost against that estimate, per usable verdict); infinite: the judge is not asked.
    pub price: &'a (dyn Fn(usize, usize, usize) -> f64 + Sync),
    /// USD left: a candidate whose worst case (both orders) is more is not considered.
    pub remaining_usd: f64,
    /// Queries the fit has not seen (in flight, or answered after it started; a pipelined run):
    /// their expected information enters Σ (one Sherman–Morrison step each) before anything is
    /// scored, so picks made while they fly spread instead of repeating them.
    pub pending: &'a [PanelQuery],
}

/// One chosen query: (a first, b second, judge).
pub type PanelQuery = (usize, usize, usize);

struct Unit {
    judge: usize,
    orders: Vec<(usize, usize)>,
    /// Worst case of its orders (USD).
    cost: f64,
    /// Expected cost of its orders (USD).
    price: f64,
}

/// Up to `r` ordered queries, both orders of each chosen pair to one judge, by the score of the
/// module doc (ties broken by `rng`). When no candidate has a positive score, the cheapest open
/// candidate is taken.
pub fn select(ctx: &PanelContext<'_>, r: usize, rng: &mut ChaCha8Rng) -> Vec<PanelQuery> {
    select_units(ctx, r, rng, false)
}

/// One ordered query whose worst case fits in what is left, by the score of the module doc
/// over single orders: what [`select`] cannot give when no pair's two orders fit, at the end of
/// a budget. Empty when no open query fits.
pub fn select_one_order(ctx: &PanelContext<'_>, rng: &mut ChaCha8Rng) -> Vec<PanelQuery> {
    select_units(ctx, 1, rng, true)
}

fn select_units(ctx: &PanelContext<'_>, r: usize, rng: &mut ChaCha8Rng, single: bool) -> Vec<PanelQuery> {
    let fit = ctx.fit;
    let l = &fit.layout;
    let judges = l.kappa.len();
    let bw: Vec<f64> = ctx.membership.iter().map(|q| q * (1.0 - q)).collect();
    let hot = hot_bases(&bw);
    // A pair a judge has asked in one order only (an order taken back unsent, or one order at
    // the end of a budget): its other order is that judge's, picked first, and no other judge
    // takes the pair meanwhile, so both orders of a pair go to one judge.
    let mut half: HashMap<(usize, usize), usize> = HashMap::new();
    for (j, q) in ctx.queried.iter().enumerate() {
        for &(a, b) in q.iter().filter(|&&(a, b)| !q.contains(&(b, a))) {
            half.insert((a.min(b), a.max(b)), j);
        }
    }
    let mut units = Vec::new();
    for g in ctx.prompts {
        for (h, &a) in g.iter().enumerate() {
            for &b in &g[h + 1..] {
                if ctx.item_base[a] == ctx.item_base[b] {
                    continue;
                }
                let owner = half.get(&(a.min(b), a.max(b))).copied();
                for j in (0..judges).filter(|&j| owner.is_none_or(|o| o == j)) {
                    let open: Vec<(usize, usize)> =
                        [(a, b), (b, a)].into_iter().filter(|q| !ctx.queried[j].contains(q)).collect();
                    let groups: Vec<Vec<(usize, usize)>> =
                        if single { open.iter().map(|&q| vec![q]).collect() } else { vec![open] };
                    for orders in groups.into_iter().filter(|o| !o.is_empty()) {
                        let cost: f64 = orders.iter().map(|&(x, y)| (ctx.cost)(j, x, y)).sum();
                        if cost > ctx.remaining_usd {
                            continue;
                        }
                        let price: f64 = orders.iter().map(|&(x, y)| (ctx.price)(j, x, y)).sum();
                        // An infinite price: a judge not to be asked (no usable verdict).
                        if price.is_finite() {
                            units.push(Unit { judge: j, orders, cost, price });
                        }
                    }
                }
            }
        }
    }
    let mut sigma: Matrix = fit.cov.clone();
    for &(a, b, j) in ctx.pending {
        let d = row_of(ctx, j, a, b);
        let w = weight(ctx, &sigma, j, a, b, &d);
        sherman_morrison(&mut sigma, &d, w);
    }
    let mut picked = Vec::new();
    let mut spent = 0.0;
    let mut taken = vec![false; units.len()];
    // The missing other orders first, as a single judge's run sends them.
    for (i, u) in units.iter().enumerate() {
        let (x, y) = u.orders[0];
        let missing = u.orders.len() == 1 && half.get(&(x.min(y), x.max(y))) == Some(&u.judge);
        if missing && picked.len() < r && spent + u.cost <= ctx.remaining_usd {
            taken[i] = true;
            spent += u.cost;
            picked.push((x, y, u.judge));
            let d = row_of(ctx, u.judge, x, y);
            let w = weight(ctx, &sigma, u.judge, x, y, &d);
            sherman_morrison(&mut sigma, &d, w);
        }
    }
    while picked.len() < r {
        // A unit's information depends on its judge and on the bases and covariate differences
        // of its orders only: over many prompts the same system pair recurs on every prompt, so
        // it is computed once per pick.
        let mut known: HashMap<GainKey, f64> = HashMap::new();
        let scores: Vec<f64> = units
            .iter()
            .zip(&taken)
            .map(|(u, &t)| {
                if t || spent + u.cost > ctx.remaining_usd {
                    return f64::NEG_INFINITY;
                }
                let g = *known.entry(gain_key(ctx, u)).or_insert_with(|| gain(ctx, &sigma, u, &bw, &hot));
                g / u.price.max(f64::MIN_POSITIVE)
            })
            .collect();
        let top = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let best = if top > 0.0 {
            argmax_tiebreak(&scores, rng)
        } else {
            // Nothing informative is left: the cheapest open unit.
            let cheap: Vec<f64> = units
                .iter()
                .zip(&scores)
                .map(|(u, s)| if s.is_finite() { -u.price } else { f64::NEG_INFINITY })
                .collect();
            if cheap.iter().all(|c| !c.is_finite()) { None } else { argmax_tiebreak(&cheap, rng) }
        };
        let Some(best) = best else { break };
        taken[best] = true;
        let u = &units[best];
        spent += u.cost;
        for &(x, y) in &u.orders {
            if picked.len() >= r {
                break;
            }
            picked.push((x, y, u.judge));
            let d = row_of(ctx, u.judge, x, y);
            let w = weight(ctx, &sigma, u.judge, x, y, &d);
            sherman_morrison(&mut sigma, &d, w);
        }
    }
    picked
}

fn row_of(ctx: &PanelContext<'_>, judge: usize, a: usize, b: usize) -> Vec<(usize, f64)> {
    let dx: Vec<f64> = ctx.x[judge][a].iter().zip(&ctx.x[judge][b]).map(|(p, q)| p - q).collect();
    ctx.fit.layout.row(&ctx.fit.beta, judge, ctx.item_base[a], ctx.item_base[b], &dx)
}

/// The expected Fisher weight p̄(1 − p̄) of judge `judge` on (a, b): p̄ = σ(η̂ / √(1 + π dᵀΣd / 8)),
/// the logistic averaged over the Laplace posterior of η (MacKay's moderated output), with d the
/// query's design row. A judge whose scale or bias is still uncertain is not taken at its point
/// estimate's word: with a large ŝ learned from a few verdicts, p̂ at β̂ is near 0 or 1 and
/// its verdicts would look worthless.
fn weight(ctx: &PanelContext<'_>, sigma: &Matrix, judge: usize, a: usize, b: usize, d: &[(usize, f64)]) -> f64 {
    let l = &ctx.fit.layout;
    let beta = &ctx.fit.beta;
    let (i, k) = (ctx.item_base[a], ctx.item_base[b]);
    let mut eta = l.scale(beta, judge) * (beta[i] - beta[k]) + beta[l.kappa[judge]];
    if let Some(c) = l.c[judge] {
        for t in 0..l.p {
            eta += beta[c + t] * (ctx.x[judge][a][t] - ctx.x[judge][b][t]);
        }
    }
    let var: f64 = d.iter().map(|&(r, x)| x * d.iter().map(|&(c, y)| sigma[(r, c)] * y).sum::<f64>()).sum();
    let p = sigmoid(eta / (1.0 + std::f64::consts::PI * var.max(0.0) / 8.0).sqrt());
    p * (1.0 - p)
}

/// The bases whose top-k membership is uncertain (π(1 − π) > 1e-3), the contrasts the score
/// sums over.
fn hot_bases(bw: &[f64]) -> Vec<usize> {
    (0..bw.len()).filter(|&b| bw[b] > 1e-3).collect()
}

/// What a unit's information depends on: its judge and, per order, the two bases and the
/// covariate difference (bits).
type GainKey = (usize, Vec<(usize, usize, Vec<u64>)>);

fn gain_key(ctx: &PanelContext<'_>, u: &Unit) -> GainKey {
    let x = &ctx.x[u.judge];
    let orders = u
        .orders
        .iter()
        .map(|&(a, b)| {
            let dx = x[a].iter().zip(&x[b]).map(|(p, q)| (p - q).to_bits()).collect();
            (ctx.item_base[a], ctx.item_base[b], dx)
        })
        .collect();
    (u.judge, orders)
}

#[cfg(test)]
fn score(ctx: &PanelContext<'_>, sigma: &Matrix, u: &Unit, bw: &[f64], hot: &[usize]) -> f64 {
    gain(ctx, sigma, u, bw, hot) / u.price.max(f64::MIN_POSITIVE)
}

/// The expected reduction of the uncertain contrasts' variance by the unit's verdicts, Σ over
/// pairs of uncertain bases of (π_i(1 − π_i) + π_k(1 − π_k)) Δv / v (the score's numerator).
fn gain(ctx: &PanelContext<'_>, sigma: &Matrix, u: &Unit, bw: &[f64], hot: &[usize]) -> f64 {
    let n = sigma.nrows();
    // U = Σ D (n × orders), A = (W⁻¹ + DᵀΣD)⁻¹: the posterior update of both orders at once is
    // Σ ← Σ − U A Uᵀ, so Var(θ_i − θ_k) falls by (U_i − U_k)ᵀ A (U_i − U_k).
    let rows: Vec<(Vec<(usize, f64)>, f64)> = u
        .orders
        .iter()
        .map(|&(x, y)| {
            let d = row_of(ctx, u.judge, x, y);
            let w = weight(ctx, sigma, u.judge, x, y, &d);
            (d, w)
        })
        .collect();
    let cols: Vec<Vec<f64>> =
        rows.iter().map(|(d, _)| (0..n).map(|r| d.iter().map(|&(c, v)| sigma[(r, c)] * v).sum()).collect()).collect();
    let q = rows.len();
    let mut m = [[0.0; 2]; 2];
    for a in 0..q {
        for b in 0..q {
            m[a][b] = rows[b].0.iter().map(|&(r, v)| v * cols[a][r]).sum::<f64>();
        }
        m[a][a] += 1.0 / rows[a].1.max(1e-12);
    }
    let a = if q == 1 {
        [[1.0 / m[0][0], 0.0], [0.0, 0.0]]
    } else {
        let det = m[0][0] * m[1][1] - m[0][1] * m[1][0];
        [[m[1][1] / det, -m[0][1] / det], [-m[1][0] / det, m[0][0] / det]]
    };
    let mut total = 0.0;
    for (h, &i) in hot.iter().enumerate() {
        for &k in &hot[h + 1..] {
            let v = sigma[(i, i)] + sigma[(k, k)] - 2.0 * sigma[(i, k)];
            if v <= 0.0 {
                continue;
            }
            let e: Vec<f64> = cols.iter().map(|c| c[i] - c[k]).collect();
            let mut dv = 0.0;
            for x in 0..q {
                for y in 0..q {
                    dv += e[x] * a[x][y] * e[y];
                }
            }
            total += (bw[i] + bw[k]) * dv / v;
        }
    }
    total
}

/// Σ ← Σ − w Σd dᵀΣ / (1 + w dᵀΣd) for a sparse row d.
fn sherman_morrison(sigma: &mut Matrix, d: &[(usize, f64)], w: f64) {
    let n = sigma.nrows();
    let sd: Vec<f64> = (0..n).map(|r| d.iter().map(|&(c, v)| sigma[(r, c)] * v).sum()).collect();
    let dd: f64 = d.iter().map(|&(r, v)| v * sd[r]).sum();
    let f = w / (1.0 + w * dd);
    for c in 0..n {
        for r in 0..n {
            sigma[(r, c)] -= f * sd[r] * sd[c];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::rng;
    use crate::model::bt::Prior;
    use crate::model::panel::{PanelDesign, PanelObs, PanelRole, fit};

    /// A fitted two-judge panel on 6 bases (one item each, one covariate), judge 0 trusted.
    fn two_judges(seed: u64) -> (PanelFit, Vec<Vec<Vec<f64>>>) {
        let x: Vec<f64> = (0..6).map(|i| (i as f64 - 2.5) / 2.0).collect();
        let mut d = PanelDesign::new(
            6,
            1,
            &[PanelRole { trusted: true, reference: false }, PanelRole { trusted: false, reference: false }],
        );
        let mut r = rng::stream(seed, "panel-acq", 0);
        use rand::RngExt;
        for judge in 0..2 {
            for i in 0..6 {
                for j in 0..6 {
                    if i != j && (i + j) % 3 == 0 {
                        let y = if r.random::<f64>() < sigmoid(0.5 * (i as f64 - j as f64)) { 1.0 } else { 0.0 };
                        d.push(PanelObs { i, j, judge, y, w: 1.0 }, &[x[i] - x[j]]);
                    }
                }
            }
        }
        let f = fit(&d, &Prior::default(), None).unwrap();
        let xs = vec![x.iter().map(|v| vec![*v]).collect(); 2];
        (f, xs)
    }

    /// USD per query (judge, first item, second item).
    type PerQuery = dyn Fn(usize, usize, usize) -> f64 + Sync;

    /// One prompt of the six bases of [`two_judges`], one item each.
    static SIX: std::sync::LazyLock<(Vec<usize>, Vec<Vec<usize>>)> =
        std::sync::LazyLock::new(|| ((0..6).collect(), vec![(0..6).collect()]));

    /// The context of a pick on [`two_judges`]'s fit: membership `pi`, each judge's `queried`,
    /// (worst-case cost, expected price) per query, USD left, nothing pending.
    fn six_bases<'a>(
        (fit, x): (&'a PanelFit, &'a [Vec<Vec<f64>>]),
        pi: &'a [f64],
        queried: &'a [HashSet<(usize, usize)>],
        (cost, price): (&'a PerQuery, &'a PerQuery),
        remaining_usd: f64,
    ) -> PanelContext<'a> {
        PanelContext {
            fit,
            item_base: &SIX.0,
            prompts: &SIX.1,
            x,
            membership: pi,
            queried,
            cost,
            price,
            remaining_usd,
            pending: &[],
        }
    }

    #[test]
    fn both_orders_go_to_one_judge_and_the_budget_holds() {
        let (f, x) = two_judges(1);
        let pi = [0.9, 0.6, 0.5, 0.4, 0.3, 0.3];
        let queried = vec![HashSet::new(), HashSet::new()];
        let cost = |j: usize, _a: usize, _b: usize| if j == 0 { 1.0 } else { 0.1 };
        let ctx = six_bases((&f, &x), &pi, &queried, (&cost, &cost), 2.5);
        let picks = select(&ctx, 8, &mut rng::stream(3, "t", 0));
        assert_eq!(picks.len() % 2, 0);
        for w in picks.chunks(2) {
            assert_eq!((w[0].0, w[0].1, w[0].2), (w[1].1, w[1].0, w[1].2), "{picks:?}");
        }
        let spent: f64 = picks.iter().map(|&(a, b, j)| cost(j, a, b)).sum();
        assert!(spent <= 2.5, "{spent}");
    }

    /// A pair a judge holds in one order only (an order of a write-ahead pick taken back
    /// unsent): its other order goes to that judge first, and no other judge takes the pair
    /// (a pipelined run under load sent (M9, M12) to one judge and (M12, M9) to the other).
    #[test]
    fn a_half_asked_pair_is_finished_by_its_judge_and_no_other() {
        let (f, x) = two_judges(1);
        let pi = [0.9, 0.6, 0.5, 0.4, 0.3, 0.3];
        // Judge 1 holds (0, 1) alone; judge 0 is the cheaper, and would otherwise take any pair.
        let queried = vec![HashSet::new(), HashSet::from([(0, 1)])];
        let cost = |j: usize, _a: usize, _b: usize| if j == 0 { 0.01 } else { 1.0 };
        let ctx = six_bases((&f, &x), &pi, &queried, (&cost, &cost), 100.0);
        for r in [1, 8, 30] {
            let picks = select(&ctx, r, &mut rng::stream(3, "t", 0));
            assert_eq!(picks[0], (1, 0, 1), "the missing order first: {picks:?}");
            let pair: Vec<_> = picks.iter().filter(|&&(a, b, _)| a.min(b) == 0 && a.max(b) == 1).collect();
            assert_eq!(pair, [&(1, 0, 1)], "{picks:?}");
        }
        // Without the budget for it, no one takes the pair.
        let poor = select(&PanelContext { remaining_usd: 0.5, ..ctx }, 30, &mut rng::stream(3, "t", 0));
        assert!(!poor.is_empty() && poor.iter().all(|&(a, b, _)| (a.min(b), a.max(b)) != (0, 1)), "{poor:?}");
    }

    #[test]
    fn queries_are_priced_at_their_expected_cost_and_reserved_at_their_worst_case() {
        // Judge 0's worst case is 20 × its expected cost (an API judge: bound prompt tokens,
        // retries), judge 1's is exact. Priced at the worst case, judge 0 is 10 × dearer and gets
        // nothing; at its expected cost it is half the price and gets queries, while the worst
        // cases of the picks stay within what is left.
        let (f, x) = two_judges(1);
        let pi = [0.9, 0.6, 0.5, 0.4, 0.3, 0.3];
        let queried = vec![HashSet::new(), HashSet::new()];
        let worst = |j: usize, _a: usize, _b: usize| if j == 0 { 1.0 } else { 0.1 };
        let expected = |j: usize, _a: usize, _b: usize| if j == 0 { 0.05 } else { 0.1 };
        let ctx = six_bases((&f, &x), &pi, &queried, (&worst, &worst), 3.0);
        let at_worst = select(&ctx, 8, &mut rng::stream(3, "t", 0));
        assert!(at_worst.iter().all(|q| q.2 == 1), "{at_worst:?}");
        let at_expected = select(&PanelContext { price: &expected, ..ctx }, 8, &mut rng::stream(3, "t", 0));
        let to_0 = at_expected.iter().filter(|q| q.2 == 0).count();
        assert!(to_0 > 0, "{at_expected:?}");
        let reserved: f64 = at_expected.iter().map(|&(a, b, j)| worst(j, a, b)).sum();
        assert!(reserved <= 3.0, "{reserved}");
    }

    #[test]
    fn at_the_end_of_a_budget_one_order_that_fits_is_picked() {
        // Judge 0: 0.1 a query (a pair 0.2); judge 1: 1.0 a query but cheaper to expect. With
        // 0.15 left no pair fits: one order of judge 0 does, none of judge 1.
        let (f, x) = two_judges(1);
        let pi = [0.9, 0.6, 0.5, 0.4, 0.3, 0.3];
        let queried = vec![HashSet::new(), HashSet::new()];
        let worst = |j: usize, _a: usize, _b: usize| if j == 0 { 0.1 } else { 1.0 };
        let expected = |j: usize, _a: usize, _b: usize| if j == 0 { 0.1 } else { 0.01 };
        let ctx = six_bases((&f, &x), &pi, &queried, (&worst, &expected), 0.15);
        assert!(select(&ctx, 8, &mut rng::stream(3, "t", 0)).is_empty());
        let one = select_one_order(&ctx, &mut rng::stream(3, "t", 0));
        assert_eq!((one.len(), one[0].2), (1, 0), "{one:?}");
        assert!(select_one_order(&PanelContext { remaining_usd: 0.05, ..ctx }, &mut rng::stream(3, "t", 0)).is_empty());
    }

    #[test]
    fn the_score_is_the_variance_reduction_of_the_uncertain_contrast_per_dollar() {
        // Only bases 1 and 2 are uncertain (π = ½), so the score of one order (1, 2) by judge 1
        // is (¼ + ¼) · w (gᵀΣd)² / (1 + w dᵀΣd) / v_12 / cost, computed here from dense vectors.
        let (f, x) = two_judges(2);
        let pi = [1.0, 0.5, 0.5, 0.0, 0.0, 0.0];
        let queried = vec![HashSet::new(), HashSet::new()];
        let cost = |_j: usize, _a: usize, _b: usize| 1.0;
        let ctx = six_bases((&f, &x), &pi, &queried, (&cost, &cost), 100.0);
        let sigma = f.cov.clone();
        let bw: Vec<f64> = pi.iter().map(|q| q * (1.0 - q)).collect();
        let hot = hot_bases(&bw);
        assert_eq!(hot, vec![1, 2]);
        let n = f.layout.n;
        let mut d = vec![0.0; n];
        for (r, v) in row_of(&ctx, 1, 1, 2) {
            d[r] += v;
        }
        let mut g = vec![0.0; n];
        g[1] = 1.0;
        g[2] = -1.0;
        let quad = |a: &[f64], b: &[f64]| -> f64 {
            (0..n).map(|r| (0..n).map(|c| a[r] * sigma[(r, c)] * b[c]).sum::<f64>()).sum()
        };
        // The expected Fisher weight at η̂ = s (θ_1 − θ_2) + c (x_1 − x_2) + κ, moderated by
        // Var(η) = dᵀΣd.
        let l = &f.layout;
        let eta = l.scale(&f.beta, 1) * (f.beta[1] - f.beta[2])
            + f.beta[l.c[1].unwrap()] * (x[1][1][0] - x[1][2][0])
            + f.beta[l.kappa[1]];
        let p = sigmoid(eta / (1.0 + std::f64::consts::PI * quad(&d, &d) / 8.0).sqrt());
        let w = p * (1.0 - p);
        assert!((w - weight(&ctx, &sigma, 1, 1, 2, &row_of(&ctx, 1, 1, 2))).abs() < 1e-12);
        let want = 0.5 * w * quad(&g, &d).powi(2) / (1.0 + w * quad(&d, &d)) / quad(&g, &g) / 0.3;
        // The score divides by the expected cost, not the worst case.
        let got = score(&ctx, &sigma, &Unit { judge: 1, orders: vec![(1, 2)], cost: 3.0, price: 0.3 }, &bw, &hot);
        assert!((got - want).abs() < 1e-12 * want.abs().max(1.0), "{got} vs {want}");
        // A price ten times lower scores ten times higher.
        let cheap = score(&ctx, &sigma, &Unit { judge: 1, orders: vec![(1, 2)], cost: 3.0, price: 0.03 }, &bw, &hot);
        assert!((cheap / got - 10.0).abs() < 1e-9);
        // Both orders inform the contrast more than one.
        let both =
            score(&ctx, &sigma, &Unit { judge: 1, orders: vec![(1, 2), (2, 1)], cost: 0.3, price: 0.3 }, &bw, &hot);
        assert!(both > got);
    }

    #[test]
    fn sherman_morrison_matches_the_inverse_of_the_updated_precision() {
        let (f, _) = two_judges(4);
        let n = f.layout.n;
        let d = vec![(0usize, 0.8), (3, -0.8), (f.layout.kappa[1], 1.0)];
        let w = 0.2;
        let mut sigma = f.cov.clone();
        sherman_morrison(&mut sigma, &d, w);
        // Compare with (Σ⁻¹ + w d dᵀ)⁻¹ computed directly.
        let h = crate::model::linalg::Cholesky::factor(&f.cov).unwrap().inverse();
        let mut h2 = h.clone();
        for &(r, vr) in &d {
            for &(c, vc) in &d {
                h2[(r, c)] += w * vr * vc;
            }
        }
        let direct = crate::model::linalg::Cholesky::factor(&h2).unwrap().inverse();
        for r in 0..n {
            for c in 0..n {
                assert!((direct[(r, c)] - sigma[(r, c)]).abs() < 1e-9);
            }
        }
    }
}

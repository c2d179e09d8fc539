//! [`super::topk::select`] for large pools (no dense Σ; docs/model.md §2 "Large pools"): the
//! same picks, found by bounding instead of scoring every candidate unit.
//!
//! By Cauchy–Schwarz v_ij ≤ (sd_i + sd_j)² (and v_ij ≤ Σ_ii + Σ_jj when a base is isolated), and
//! the batch's Sherman–Morrison steps only lower v, so b_u = weight_u · (that bound) bounds a
//! unit's score for the whole batch, and weight_u ≤ ½ (π_i(1 − π_i) + π_j(1 − π_j)) (each
//! p̂(1 − p̂) ≤ ¼). Before each pick every unit whose bound reaches the tie threshold of the best
//! exact score so far is scored exactly (Σ_ij from the column Σ e_i of one of its bases, solved
//! with the sparse factor of H and kept for the batch); a unit left unscored cannot reach the
//! maximum, nor tie with it. The units scored, their order (a, b) for the tie-break and the
//! random draws are those of the exhaustive scan. Units touching a fresh item (a base no verdict,
//! pending query or pick has touched) are not listed: [`Fresh`] finds the best of them.

use super::batch::{BatchCov, FisherWeights, fisher_weight};
use super::fresh::{Fresh, peak_offsets};
use super::pair_set::PairSet;
use super::{Context, Orders, StrategyKind, Unit, argmax_tiebreak, candidate_units};
use crate::domain::rng::ChaCha8Rng;
use std::collections::HashMap;

/// Columns Σ e_i solved at once when any is needed (see `Batch::fill_columns`).
const PREFETCH_COLUMNS: usize = 16;

/// A candidate listed for scoring: (unit, weight, bound).
type Listed = (Unit, f64, f64);

/// What a batch's scores are made of; fixed for the batch.
struct Scorer<'c, 'a> {
    kind: StrategyKind,
    ctx: &'c Context<'a>,
    n: usize,
    /// Fisher weights from the apparent scores g and κ̂.
    fw: FisherWeights,
    /// Asked ordered pairs (a, b).
    queried: PairSet,
    /// π(1 − π) per base.
    bw: &'c [f64],
    /// Σ_rr and √Σ_ii (bases).
    diag: Vec<f64>,
    sd: Vec<f64>,
    /// Per-item factor of the weight bound: weight_u ≤ c (h_a + h_b) with h = π(1 − π) and
    /// c = ½ (topk), h = ½ and c = ½ (d_optimal), or h = ½ and c = 1 (uncertainty).
    h: Vec<f64>,
    c: f64,
    hmax: f64,
    sdmax: f64,
    /// Bases no verdict has touched: Σ_ij = 0 with any other base (no solve needed).
    isolated: Vec<bool>,
    /// Bases with π(1 − π) > 0 that are not isolated, by π(1 − π) descending: the columns
    /// solved ahead when a solve is needed anyway.
    hot: Vec<usize>,
}

impl<'c, 'a> Scorer<'c, 'a> {
    fn new(kind: StrategyKind, ctx: &'c Context<'a>, bw: &'c [f64]) -> Self {
        let (n, base, post) = (ctx.n_items(), ctx.item_base, ctx.post);
        let g = ctx.apparent();
        let kappa = ctx.kappa();
        let queried = PairSet::of(n, ctx.queried);
        let diag: Vec<f64> = (0..post.mean.len()).map(|r| post.var(r)).collect();
        let sd: Vec<f64> = (0..ctx.m).map(|i| diag[i].max(0.0).sqrt()).collect();
        let (h, c): (Vec<f64>, f64) = match kind {
            StrategyKind::Topk => ((0..n).map(|a| bw[base[a]]).collect(), 0.5),
            StrategyKind::DOptimal => (vec![0.5; n], 0.5),
            _ => (vec![0.5; n], 1.0),
        };
        let hmax = h.iter().copied().fold(0.0f64, f64::max);
        let sdmax = sd.iter().copied().fold(0.0f64, f64::max);
        let isolated: Vec<bool> = (0..ctx.m)
            .map(|i| post.is_isolated(i) && post.mean[i].abs() < crate::model::membership::TIE_LOGITS)
            .collect();
        let fw = FisherWeights::new(g, kappa);
        let mut hot: Vec<usize> = (0..ctx.m).filter(|&i| bw[i] > 0.0 && !isolated[i]).collect();
        hot.sort_by(|&x, &y| bw[y].total_cmp(&bw[x]).then(x.cmp(&y)));
        hot.truncate(PREFETCH_COLUMNS);
        Self { kind, ctx, n, fw, queried, bw, diag, sd, h, c, hmax, sdmax, isolated, hot }
    }

    fn base(&self, a: usize) -> usize {
        self.ctx.item_base[a]
    }

    fn open(&self, a: usize, b: usize) -> bool {
        a != b
            && self.base(a) != self.base(b)
            && self.ctx.allowed.is_none_or(|s| s.contains(a, b))
            && !self.queried.contains(a, b)
    }

    /// The unit of items a, b with its open orders (`None`: no open order).
    fn unit_of(&self, a: usize, b: usize) -> Option<Unit> {
        let mask = match self.ctx.orders {
            Orders::Both => u8::from(self.open(a, b)) | (u8::from(self.open(b, a)) << 1),
            Orders::Single => u8::from(self.open(a, b)),
        };
        (mask != 0).then_some(Unit { a: a as u32, b: b as u32, mask })
    }

    /// The unit of a and b in the rule's orientation: (min, max) for both orders, (a, b) else.
    fn unit_between(&self, a: usize, b: usize) -> Option<Unit> {
        match self.ctx.orders {
            Orders::Both => self.unit_of(a.min(b), a.max(b)),
            Orders::Single => self.unit_of(a, b),
        }
    }

    /// The unit's score without v: Fisher weights of its open orders, times the boundary
    /// weight under `topk`.
    fn weight_of(&self, u: Unit) -> f64 {
        let (a, b) = u.pair();
        match self.kind {
            StrategyKind::Topk => self.fw.unit(u) * (self.bw[self.base(a)] + self.bw[self.base(b)]),
            StrategyKind::DOptimal => self.fw.unit(u),
            _ => 1.0,
        }
    }

    /// v_ij ≤ (sd_i + sd_j)² (Cauchy–Schwarz), and v_ij ≤ Σ_ii + Σ_jj when one base is isolated
    /// (Σ_ij = 0; the batch's steps only lower v).
    fn bound_of(&self, u: Unit, w: f64) -> f64 {
        let (i, j) = (self.base(u.a as usize), self.base(u.b as usize));
        let v = if self.isolated[i] || self.isolated[j] {
            self.diag[i] + self.diag[j]
        } else {
            (self.sd[i] + self.sd[j]).powi(2)
        };
        w * v * (1.0 + 1e-9)
    }

    /// A bound on the score of every unit of item a.
    fn item_bound(&self, a: usize) -> f64 {
        self.c * (self.h[a] + self.hmax) * (self.sd[self.base(a)] + self.sdmax).powi(2) * (1.0 + 1e-9)
    }

    /// Every open unit with bound ≥ thr (and positive), not in `seen` and without a fresh
    /// item, by bound descending: both items must pass the item-level bound, so only pairs
    /// among those items are looked at.
    fn above(&self, thr: f64, seen: &PairSet, fresh: &Fresh<'_>) -> Vec<Listed> {
        let items: Vec<usize> = (0..self.n)
            .filter(|&a| !fresh.is_fresh(a) && self.item_bound(a) >= thr && self.item_bound(a) > 0.0)
            .collect();
        // A unit needs one item with h > 0 (its weight is 0 otherwise).
        let warm: Vec<usize> = items.iter().copied().filter(|&a| self.h[a] > 0.0).collect();
        let mut out = Vec::new();
        for &a in &items {
            let pool: &[usize] = if self.h[a] > 0.0 { &items } else { &warm };
            let partners = match self.ctx.orders {
                Orders::Both => &pool[pool.partition_point(|&b| b <= a)..],
                Orders::Single => pool,
            };
            let (ha, sa) = (self.h[a], self.sd[self.base(a)]);
            for &b in partners {
                // weight_u ≤ c (h_a + h_b) and v ≤ (sd_i + sd_j)²: most pairs fall below the
                // threshold on this product alone, before their Fisher weights are computed.
                let s = sa + self.sd[self.base(b)];
                if self.c * (ha + self.h[b]) * s * s * (1.0 + 1e-6) < thr || seen.contains(a, b) {
                    continue;
                }
                if let Some(u) = self.unit_of(a, b) {
                    self.list_if_above(u, thr, &mut out);
                }
            }
        }
        out.sort_by(|x, y| y.2.total_cmp(&x.2));
        out
    }

    fn list_if_above(&self, u: Unit, thr: f64, out: &mut Vec<Listed>) {
        let w = self.weight_of(u);
        let bd = self.bound_of(u, w);
        if bd >= thr && bd > 0.0 {
            out.push((u, w, bd));
        }
    }

    /// The units of `retired` (items that just stopped being fresh) with the other non-fresh
    /// items, bound ≥ thr, not in `seen`.
    fn units_of_retired(&self, retired: &[usize], thr: f64, seen: &PairSet, fresh: &Fresh<'_>) -> Vec<Listed> {
        let mut out = Vec::new();
        for &x in retired {
            for y in (0..self.n).filter(|&y| y != x && !fresh.is_fresh(y)) {
                let both_new = retired.contains(&y);
                let units = match self.ctx.orders {
                    Orders::Both if both_new && y < x => [None, None],
                    Orders::Both => [self.unit_of(x.min(y), x.max(y)), None],
                    Orders::Single if both_new => [self.unit_of(x, y), None],
                    Orders::Single => [self.unit_of(x, y), self.unit_of(y, x)],
                };
                for u in units.into_iter().flatten().filter(|u| !seen.contains(u.a as usize, u.b as usize)) {
                    self.list_if_above(u, thr, &mut out);
                }
            }
        }
        out
    }

    /// The unscored unit with the largest bound among the partners of the non-fresh item with
    /// the largest item-level bound that has one: where scoring starts (again) when no unit is
    /// scored.
    fn seed(&self, order: &[usize], seen: &PairSet, fresh: &Fresh<'_>) -> Option<(Unit, f64)> {
        order.iter().filter(|&&a| !fresh.is_fresh(a)).find_map(|&a0| {
            (0..self.n)
                .filter(|&b| !fresh.is_fresh(b))
                .filter_map(|b| self.unit_between(a0, b))
                .filter(|u| !seen.contains(u.a as usize, u.b as usize))
                .map(|u| (u, self.weight_of(u)))
                .filter(|&(u, w)| self.bound_of(u, w) > 0.0)
                .max_by(|x, y| self.bound_of(x.0, x.1).total_cmp(&self.bound_of(y.0, y.1)))
        })
    }

    /// The best unit of items a and b, b fresh, and its score: Σ_ab = 0 and the batch's vectors
    /// vanish at b, so v = Σ_ii − dvar_i + Σ_jj.
    fn fresh_score(&self, a: usize, b: usize, dvar: &[f64]) -> Option<(Unit, f64)> {
        let (i, j) = (self.base(a), self.base(b));
        let v = self.diag[i] - dvar[i] + self.diag[j] - dvar[j];
        let units = match self.ctx.orders {
            Orders::Both => [self.unit_of(a.min(b), a.max(b)), None],
            Orders::Single => [self.unit_of(a, b), self.unit_of(b, a)],
        };
        units
            .into_iter()
            .flatten()
            .map(|u| (u, self.weight_of(u) * v))
            .filter(|x| x.1 > 0.0)
            .max_by(|x, y| x.1.total_cmp(&y.1))
    }

    /// The fresh items of this batch: items of isolated bases no pending query touches, when
    /// their units can be found by apparent score alone (their weight factors agree: always for
    /// `d_optimal` and `uncertainty`, and for `topk` when the isolated bases share one π, as
    /// membership pools them); otherwise none, and their units are listed like the others.
    fn fresh(&self, pending: &[(usize, usize)]) -> Fresh<'_> {
        let iso_h: Vec<f64> = (0..self.ctx.m).filter(|&i| self.isolated[i]).map(|i| self.bw[i]).collect();
        let pooled = self.kind != StrategyKind::Topk || iso_h.windows(2).all(|w| w[0] == w[1]);
        let bases = if pooled { self.isolated.clone() } else { vec![false; self.ctx.m] };
        let touched = pending.iter().flat_map(|&(a, b)| [self.base(a), self.base(b)]);
        Fresh::new(self.ctx.item_base, self.fw.g(), bases, touched, peak_offsets(self.ctx.orders, self.fw.kappa()))
    }
}

/// The scored units and the batch's covariance updates.
struct Batch<'p> {
    /// Scored units: (unit, weight, v, score), score −∞ once taken.
    scored: Vec<(Unit, f64, f64, f64)>,
    /// Units scored or taken, by their pair (a, b).
    seen: PairSet,
    /// Σ e_i of the batch-start Σ for the bases solved so far.
    columns: HashMap<usize, Vec<f64>>,
    cov: BatchCov<'p>,
    /// dvar[i] = Σ_s f_s u_s[i]²: how much the batch's Sherman–Morrison steps lowered Σ_ii.
    dvar: Vec<f64>,
    /// Units listed down to `floor` by bound descending; the first `next` are done.
    cand: Vec<Listed>,
    next: usize,
    floor: f64,
}

impl<'p> Batch<'p> {
    fn new(sc: &Scorer<'_, 'p>) -> Self {
        Self {
            scored: Vec::new(),
            seen: PairSet::new(sc.n),
            columns: HashMap::new(),
            cov: BatchCov::new(sc.ctx.post),
            dvar: vec![0.0; sc.ctx.m],
            cand: Vec::new(),
            next: 0,
            floor: f64::INFINITY,
        }
    }

    /// One Sherman–Morrison step for the query (a, b) at its Fisher weight.
    fn add(&mut self, sc: &Scorer<'_, 'p>, a: usize, b: usize) {
        let (f, u) = self.cov.add(sc.ctx, a, b, fisher_weight(sc.fw.g(), sc.fw.kappa(), a, b));
        for (d, x) in self.dvar.iter_mut().zip(u) {
            *d += f * x * x;
        }
    }

    /// Σ_ij of the batch-start Σ (0 when a base is isolated; else from a solved column).
    fn sigma_ij(&self, sc: &Scorer<'_, '_>, i: usize, j: usize) -> f64 {
        if sc.isolated[i] || sc.isolated[j] {
            return 0.0;
        }
        match self.columns.get(&i) {
            Some(col) => col[j],
            None => self.columns[&j][i],
        }
    }

    /// Solve the columns the base pairs `pairs` still miss: for each, the base with the larger
    /// π(1 − π), the hot end shared by a unit's many partners, so one column serves them all.
    fn fill_columns(&mut self, sc: &Scorer<'_, '_>, pairs: &[(usize, usize)]) {
        let mut need: Vec<usize> = Vec::new();
        let mut wanted = vec![false; sc.ctx.m];
        for &(i, j) in pairs {
            if sc.isolated[i] || sc.isolated[j] {
                continue;
            }
            if !self.columns.contains_key(&i) && !self.columns.contains_key(&j) && !wanted[i] && !wanted[j] {
                let b = if sc.bw[j] > sc.bw[i] { j } else { i };
                wanted[b] = true;
                need.push(b);
            }
        }
        if need.is_empty() {
            return;
        }
        // One solve for many columns costs little more than for one: fill up with the hottest
        // bases not solved yet, whose columns the next units will most likely ask for.
        for &b in &sc.hot {
            if need.len() >= PREFETCH_COLUMNS {
                break;
            }
            if !self.columns.contains_key(&b) && !wanted[b] {
                wanted[b] = true;
                need.push(b);
            }
        }
        for chunk in need.chunks(64) {
            let cols = sc.ctx.post.columns(chunk);
            for (k, &b) in chunk.iter().enumerate() {
                self.columns.insert(b, cols.col(k).to_vec());
            }
        }
    }

    /// Score the units `fresh` (with their weights) exactly.
    fn score(&mut self, sc: &Scorer<'_, '_>, units: Vec<(Unit, f64)>) {
        let pairs: Vec<(usize, usize)> =
            units.iter().map(|(u, _)| (sc.base(u.a as usize), sc.base(u.b as usize))).collect();
        self.fill_columns(sc, &pairs);
        for ((u, w), (i, j)) in units.into_iter().zip(pairs) {
            let mut v = sc.diag[i] + sc.diag[j] - 2.0 * self.sigma_ij(sc, i, j);
            for (f, us) in &self.cov.downdates {
                let e = us[i] - us[j];
                v -= f * e * e;
            }
            self.seen.insert(u.a as usize, u.b as usize);
            self.scored.push((u, w, v, w * v));
        }
        self.scored.sort_by_key(|x| x.0.pair());
    }

    /// Score every unit that could reach the tie threshold of the best exact score, or beat
    /// `ftop` (the best fresh unit's score, which wins ties).
    fn score_contenders(&mut self, sc: &Scorer<'_, '_>, order: &[usize], fresh: &Fresh<'_>, ftop: f64) {
        loop {
            let best = self.scored.iter().map(|x| x.3).fold(ftop, f64::max);
            if !best.is_finite() {
                match sc.seed(order, &self.seen, fresh) {
                    Some(first) => {
                        self.score(sc, vec![first]);
                        continue;
                    }
                    None => break,
                }
            }
            let thr = (best - 1e-12 * best.abs()).max(ftop * (1.0 + 1e-8)).max(f64::MIN_POSITIVE);
            // The candidates above `floor`, by bound descending, are listed once and scored as
            // the threshold comes down to them; below the floor they are listed again.
            if thr < self.floor {
                self.floor = thr * 0.8;
                self.cand = sc.above(self.floor, &self.seen, fresh);
                self.next = 0;
            }
            let mut todo = Vec::new();
            while self.next < self.cand.len() && self.cand[self.next].2 >= thr {
                let (u, w, _) = self.cand[self.next];
                if !self.seen.contains(u.a as usize, u.b as usize) {
                    todo.push((u, w));
                }
                self.next += 1;
            }
            if todo.is_empty() {
                break;
            }
            self.score(sc, todo);
        }
    }

    /// Mark `best` taken (its score −∞, seen).
    fn take(&mut self, best: Unit) {
        if let Some(x) = self.scored.iter_mut().find(|x| x.0 == best) {
            x.3 = f64::NEG_INFINITY;
        }
        self.seen.insert(best.a as usize, best.b as usize);
    }

    /// Lower the scored units' v by the Sherman–Morrison steps from `first` on.
    fn downdate_scores(&mut self, sc: &Scorer<'_, '_>, first: usize) {
        for (f, us) in &self.cov.downdates[first..] {
            for (u, w, v, s) in self.scored.iter_mut() {
                if *s == f64::NEG_INFINITY {
                    continue;
                }
                let e = us[sc.base(u.a as usize)] - us[sc.base(u.b as usize)];
                *v -= f * e * e;
                *s = *w * *v;
            }
        }
    }

    /// The units of items that stopped being fresh join the candidate list down to its floor
    /// (those with fresh items stay with the heap).
    fn list_retired(&mut self, sc: &Scorer<'_, '_>, retired: &[usize], fresh: &Fresh<'_>) {
        if retired.is_empty() || !self.floor.is_finite() {
            return;
        }
        let extra = sc.units_of_retired(retired, self.floor, &self.seen, fresh);
        if !extra.is_empty() {
            self.cand.extend(extra);
            self.cand[self.next..].sort_by(|x, y| y.2.total_cmp(&x.2));
        }
    }
}

/// A uniformly random open unit not in `taken` (rejection sampling over item pairs; the listed
/// units when that keeps failing), or `None` when none is left.
fn random_open_unit(sc: &Scorer<'_, '_>, taken: &[Unit], rng: &mut ChaCha8Rng) -> Option<Unit> {
    use rand::RngExt;
    let n = sc.n;
    for _ in 0..100_000 {
        let (a, b) = (rng.random_range(0..n), rng.random_range(0..n));
        if let Some(u) = sc.unit_between(a, b).filter(|u| !taken.contains(u)) {
            return Some(u);
        }
    }
    let rest: Vec<Unit> = candidate_units(sc.ctx).into_iter().filter(|u| !taken.contains(u)).collect();
    (!rest.is_empty()).then(|| rest[rng.random_range(0..rest.len())])
}

/// Select up to `r` queries by the score of `kind` on a large-pool posterior (module docs);
/// `bw` = π(1 − π) per base, `pending` as in [`super::topk::select`].
pub(crate) fn select_large(
    kind: StrategyKind,
    ctx: &Context<'_>,
    pending: &[(usize, usize)],
    r: usize,
    rng: &mut ChaCha8Rng,
    bw: &[f64],
) -> Vec<(usize, usize)> {
    let sc = Scorer::new(kind, ctx, bw);
    let mut fresh = sc.fresh(pending);
    let mut batch = Batch::new(&sc);
    for &(a, b) in pending {
        batch.add(&sc, a, b);
    }
    if fresh.len() > 0 {
        fresh.seed_heap(0..sc.n, &|a, b| sc.fresh_score(a, b, &batch.dvar));
    }
    // Every fresh–fresh unit has the same score when the fresh items' apparent scores are equal
    // (or under `uncertainty`): the tie is broken uniformly, as the exhaustive scan would.
    let uniform_fresh = fresh.flat() || kind == StrategyKind::Uncertainty;
    let mut order: Vec<usize> = (0..sc.n).filter(|&a| sc.item_bound(a) > 0.0).collect();
    order.sort_by(|&x, &y| sc.item_bound(y).total_cmp(&sc.item_bound(x)));
    let mut taken: Vec<Unit> = Vec::new();
    let mut picked: Vec<(usize, usize)> = Vec::new();
    while picked.len() < r {
        let fresh_top = fresh.best(&|a, b| sc.fresh_score(a, b, &batch.dvar));
        let ftop = fresh_top.map_or(f64::NEG_INFINITY, |x| x.1);
        batch.score_contenders(&sc, &order, &fresh, ftop);
        let scores: Vec<f64> = batch.scored.iter().map(|x| x.3).collect();
        let top = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let best = match fresh_top {
            Some((u, s)) if s > 0.0 && s >= top => {
                let (a, b) = u.pair();
                let both_fresh = uniform_fresh && fresh.is_fresh(a) && fresh.is_fresh(b);
                match both_fresh.then(|| fresh.random_pair(rng)).flatten() {
                    Some((a, b)) => sc.unit_between(a, b).expect("fresh pairs are open"),
                    None => u,
                }
            }
            _ => match if top > 0.0 { argmax_tiebreak(&scores, rng) } else { None } {
                Some(u) => batch.scored[u].0,
                None => match random_open_unit(&sc, &taken, rng) {
                    Some(u) => u,
                    None => break,
                },
            },
        };
        taken.push(best);
        batch.take(best);
        let first_new = batch.cov.downdates.len();
        for (a, b) in best.orders() {
            if picked.len() >= r {
                break;
            }
            picked.push((a, b));
            batch.add(&sc, a, b);
        }
        if picked.len() >= r {
            break;
        }
        let (a, b) = best.pair();
        let retired = [fresh.retire_base(sc.base(a)), fresh.retire_base(sc.base(b))].concat();
        batch.list_retired(&sc, &retired, &fresh);
        batch.downdate_scores(&sc, first_new);
    }
    picked
}

//! Candidate units touching *fresh* items on the large-pool path (docs/model.md §3, "Large
//! pools"), found without listing them.
//!
//! A base is isolated when no verdict has touched it: its row of H holds only λ_θ, so its θ is
//! independent of every other parameter, Σ e_i = Σ_ii e_i, θ̂_i = 0, and its top-k membership
//! is that of every other isolated base (membership pools them). An item is fresh while its base
//! is isolated and no pending query or pick of the current batch has touched it. Early in a large
//! run almost every item is fresh, and the pairs among them number N²/2.
//!
//! For a unit (a, b) with b fresh, Σ_ab = 0 and the Sherman–Morrison vectors of the batch are 0
//! at b, so its score is
//!
//! ```text
//! s(a, b) = F(g_a − g_b) · (h_a + h_f) · (Σ'_aa + σ²)
//! ```
//!
//! with Σ'_aa the batch-updated variance of a's base, σ² = 1/λ_θ and h_f the common π(1 − π) of
//! fresh bases (the rule's weight factors, docs/model.md §3), and F the sum of the open orders'
//! Fisher weights p̂(1 − p̂), a function of Δ = g_a − g_b only. F is unimodal: for one order
//! σ'(Δ + κ̂) peaks at Δ = −κ̂; for both orders F(Δ) = σ'(Δ + κ̂) + σ'(Δ − κ̂) is even and
//! unimodal in |Δ| with its peak Δ* ∈ [0, |κ̂|] (test `both_orders_weight_is_unimodal`). So for
//! a given a, the best fresh partner is one of the nearest fresh items on either side of
//! g_a ± (peak): four look-ups in the fresh items sorted by g, instead of a scan of all of them.
//! A lazy max-heap over a (scores only fall during a batch: Σ' shrinks, fresh items leave) then
//! gives the best fresh-touching unit exactly.

use super::{Orders, Unit};
use crate::domain::rng::ChaCha8Rng;
use crate::model::bt::sigmoid;
use std::collections::{BTreeSet, BinaryHeap};

/// f64 mapped to u64 with the same order (finite values).
fn key(x: f64) -> u64 {
    let b = x.to_bits();
    if b >> 63 == 1 { !b } else { b | (1 << 63) }
}

/// σ'(x) = σ(x)(1 − σ(x)).
fn dsig(x: f64) -> f64 {
    let s = sigmoid(x);
    s * (1.0 - s)
}

/// The offsets δ = g_b − g_a at which a fresh partner b has the largest Fisher weight:
/// ±κ̂ for single orders ((a, b) peaks at g_b = g_a + κ̂, (b, a) at g_a − κ̂); ±Δ* for both
/// orders, Δ* the maximiser of σ'(Δ + κ̂) + σ'(Δ − κ̂) on [0, |κ̂|] (golden-section search on a
/// unimodal function).
pub(crate) fn peak_offsets(orders: Orders, kappa: f64) -> [f64; 2] {
    let k = kappa.abs();
    let peak = match orders {
        Orders::Single => k,
        Orders::Both => {
            let f = |d: f64| dsig(d + k) + dsig(d - k);
            let (mut lo, mut hi) = (0.0f64, k);
            let r = (5f64.sqrt() - 1.0) / 2.0;
            for _ in 0..100 {
                let (x1, x2) = (hi - r * (hi - lo), lo + r * (hi - lo));
                if f(x1) < f(x2) {
                    lo = x1;
                } else {
                    hi = x2;
                }
            }
            let mid = 0.5 * (lo + hi);
            // The end points too (the peak is at 0 for |κ̂| below ≈ 1.32).
            [0.0, mid, k].into_iter().max_by(|x, y| f(*x).total_cmp(&f(*y))).expect("three points")
        }
    };
    [-peak, peak]
}

/// The fresh items of a batch and the lazy heap of each item's best fresh partner.
pub(crate) struct Fresh<'a> {
    base: &'a [usize],
    g: &'a [f64],
    /// Fresh items by (g, index).
    sorted: BTreeSet<(u64, u32)>,
    /// Fresh items in any order (uniform sampling), and each item's place there (u32::MAX: not
    /// fresh).
    list: Vec<u32>,
    pos: Vec<u32>,
    /// Whether each base is fresh (length M).
    base_fresh: Vec<bool>,
    /// Items of each isolated base (empty for the others).
    items_of: Vec<Vec<u32>>,
    offsets: [f64; 2],
    /// (upper bound of a's best fresh-partner score, a).
    heap: BinaryHeap<(u64, u32)>,
}

impl<'a> Fresh<'a> {
    /// Fresh items: those whose base is isolated (`isolated`, length M) and not in `touched`.
    /// `base` (length N) maps items to bases, `g` are the items' apparent scores.
    pub(crate) fn new(
        base: &'a [usize],
        g: &'a [f64],
        isolated: Vec<bool>,
        touched: impl IntoIterator<Item = usize>,
        offsets: [f64; 2],
    ) -> Self {
        let m = isolated.len();
        let mut base_fresh = isolated;
        for i in touched {
            base_fresh[i] = false;
        }
        let mut items_of = vec![Vec::new(); m];
        let mut sorted = BTreeSet::new();
        let mut list = Vec::new();
        let mut pos = vec![u32::MAX; base.len()];
        for (a, &i) in base.iter().enumerate() {
            if base_fresh[i] {
                items_of[i].push(a as u32);
                sorted.insert((key(g[a]), a as u32));
                pos[a] = list.len() as u32;
                list.push(a as u32);
            }
        }
        Self { base, g, sorted, list, pos, base_fresh, items_of, offsets, heap: BinaryHeap::new() }
    }

    /// Number of fresh items.
    pub(crate) fn len(&self) -> usize {
        self.list.len()
    }

    /// Whether item `a` is fresh.
    pub(crate) fn is_fresh(&self, a: usize) -> bool {
        self.pos[a] != u32::MAX
    }

    /// Whether every fresh item has the same apparent score (then every fresh–fresh unit has
    /// the same Fisher weight).
    pub(crate) fn flat(&self) -> bool {
        match (self.sorted.first(), self.sorted.last()) {
            (Some(x), Some(y)) => x.0 == y.0,
            _ => true,
        }
    }

    /// Base `i` is no longer fresh (picked in this batch); returns the items that were fresh.
    pub(crate) fn retire_base(&mut self, i: usize) -> Vec<usize> {
        if !self.base_fresh[i] {
            return Vec::new();
        }
        self.base_fresh[i] = false;
        for &a in &self.items_of[i] {
            let a = a as usize;
            self.sorted.remove(&(key(self.g[a]), a as u32));
            let p = self.pos[a] as usize;
            let last = *self.list.last().expect("a fresh item is listed");
            self.list.swap_remove(p);
            if (last as usize) != a {
                self.pos[last as usize] = p as u32;
            }
            self.pos[a] = u32::MAX;
        }
        self.items_of[i].iter().map(|&a| a as usize).collect()
    }

    /// The fresh items that can be a's best fresh partner: the nearest on either side of
    /// g_a + δ for each peak offset δ (other bases than a's only).
    fn partners(&self, a: usize) -> Vec<usize> {
        let mut out: Vec<usize> = Vec::with_capacity(4);
        for d in self.offsets {
            let t = key(self.g[a] + d);
            let other = |&&(_, b): &&(u64, u32)| self.base[b as usize] != self.base[a];
            if let Some(&(_, b)) = self.sorted.range(..(t, 0)).rev().find(other) {
                out.push(b as usize);
            }
            if let Some(&(_, b)) = self.sorted.range((t, 0)..).find(other) {
                out.push(b as usize);
            }
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    /// a's best unit with a fresh partner by `score` (unit and score), if any is positive.
    fn best_of(&self, a: usize, score: &impl Fn(usize, usize) -> Option<(Unit, f64)>) -> Option<(Unit, f64)> {
        self.partners(a).into_iter().filter_map(|b| score(a, b)).max_by(|x, y| x.1.total_cmp(&y.1))
    }

    /// Fill the heap with every item in `items` (call once per batch, before [`Self::best`]).
    pub(crate) fn seed_heap(
        &mut self,
        items: impl IntoIterator<Item = usize>,
        score: &impl Fn(usize, usize) -> Option<(Unit, f64)>,
    ) {
        for a in items {
            if let Some((_, s)) = self.best_of(a, score) {
                self.heap.push((key(s), a as u32));
            }
        }
    }

    /// The best unit with a fresh item, by `score` (its exact value now), or `None`. Scores only
    /// fall during a batch, so heap entries are upper bounds: an entry is re-scored when it comes
    /// to the top and kept only if it still beats the next one.
    pub(crate) fn best(&mut self, score: &impl Fn(usize, usize) -> Option<(Unit, f64)>) -> Option<(Unit, f64)> {
        while let Some((_, a)) = self.heap.pop() {
            let Some((u, s)) = self.best_of(a as usize, score) else { continue };
            let k = key(s);
            let wins = self.heap.peek().is_none_or(|&(next, _)| k >= next);
            self.heap.push((k, a));
            if wins {
                return Some((u, s));
            }
        }
        None
    }

    /// A uniformly random pair of fresh items with different bases (both orders' unit follows
    /// from the caller), or `None` when there is none.
    pub(crate) fn random_pair(&self, rng: &mut ChaCha8Rng) -> Option<(usize, usize)> {
        use rand::RngExt;
        let n = self.list.len();
        if n < 2 {
            return None;
        }
        for _ in 0..10_000 {
            let (x, y) = (rng.random_range(0..n), rng.random_range(0..n));
            let (a, b) = (self.list[x] as usize, self.list[y] as usize);
            if x != y && self.base[a] != self.base[b] {
                return Some((a, b));
            }
        }
        // Almost all fresh items share a base: list the pairs.
        let pairs: Vec<(usize, usize)> = self
            .list
            .iter()
            .flat_map(|&a| self.list.iter().map(move |&b| (a as usize, b as usize)))
            .filter(|&(a, b)| a != b && self.base[a] != self.base[b])
            .collect();
        (!pairs.is_empty()).then(|| pairs[rng.random_range(0..pairs.len())])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_orders_weight_is_unimodal() {
        // F(Δ) = σ'(Δ + κ) + σ'(Δ − κ) on [0, 3|κ| + 3]: one change of direction at most, at
        // the peak that `peak_offsets` returns (to 1e-6).
        for ki in 0..=160 {
            let k = ki as f64 / 20.0;
            let f = |d: f64| dsig(d + k) + dsig(d - k);
            let grid: Vec<f64> = (0..=4000).map(|t| t as f64 * (3.0 * k + 3.0) / 4000.0).collect();
            let up: Vec<bool> = grid.windows(2).map(|w| f(w[1]) > f(w[0])).collect();
            let turns = up.windows(2).filter(|w| w[0] != w[1]).count();
            assert!(turns <= 1, "κ = {k}: {turns} turns");
            let best = grid.iter().copied().max_by(|x, y| f(*x).total_cmp(&f(*y))).unwrap();
            let peak = peak_offsets(Orders::Both, k)[1];
            assert!(f(peak) >= f(best) - 1e-12, "κ = {k}: peak {peak} below grid best {best}");
        }
        assert!(peak_offsets(Orders::Both, 0.5)[1].abs() < 1e-6);
        let far = peak_offsets(Orders::Both, 3.0)[1];
        assert!(far > 1.0 && far < 3.0, "κ = 3: peak {far}");
        assert_eq!(peak_offsets(Orders::Single, -0.7), [-0.7, 0.7]);
    }

    #[test]
    fn the_heap_finds_the_exhaustive_best_fresh_unit() {
        // 40 items on 20 bases, 12 isolated; scores from F with κ = 1.8 (peak away from 0)
        // times a per-item factor: the heap's answer equals the brute-force maximum over all
        // fresh-touching pairs, pick after pick, as bases retire.
        use rand::{RngExt, SeedableRng};
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let n = 40;
        let base: Vec<usize> = (0..n).map(|a| a / 2).collect();
        let g: Vec<f64> = (0..n).map(|_| rng.random_range(-2.0..2.0)).collect();
        let factor: Vec<f64> = (0..20).map(|_| rng.random_range(0.5..2.0)).collect();
        let isolated: Vec<bool> = (0..20).map(|i| i % 5 != 0 && i < 15).collect();
        let kappa = 1.8;
        let offsets = peak_offsets(Orders::Both, kappa);
        let mut fresh = Fresh::new(&base, &g, isolated, [3usize], offsets);
        let score = |a: usize, b: usize| {
            let d = g[a] - g[b];
            let s = (dsig(d + kappa) + dsig(d - kappa)) * factor[base[a]];
            Some((Unit { a: a.min(b) as u32, b: a.max(b) as u32, mask: 3 }, s))
        };
        fresh.seed_heap(0..n, &score);
        for _ in 0..6 {
            let brute = (0..n)
                .flat_map(|a| (0..n).map(move |b| (a, b)))
                .filter(|&(a, b)| base[a] != base[b] && fresh.is_fresh(b))
                .map(|(a, b)| score(a, b).unwrap().1)
                .fold(f64::NEG_INFINITY, f64::max);
            let (u, s) = fresh.best(&score).unwrap();
            assert_eq!(s, brute);
            let (a, b) = u.pair();
            let gone = [fresh.retire_base(base[a]), fresh.retire_base(base[b])].concat();
            assert!(gone.contains(&a) || gone.contains(&b), "one of the two was fresh");
        }
    }
}

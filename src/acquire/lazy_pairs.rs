//! `round_robin` and `random` for large pools (docs/model.md §2, "Large pools"): the unordered
//! item pairs are addressed by an index instead of being listed, so a selection step costs
//! O(r + queried pairs) time and O(N) memory instead of O(N²).
//!
//! The index space is every unordered pair {a < b} of items of one prompt, prompt by prompt
//! (same-base pairs included; they are skipped when met). `round_robin` walks a seeded
//! pseudo-random permutation of that space (a Feistel network on the next power of four,
//! cycle-walked into range), fixed for the run by stream `round_robin` of the run seed: every
//! unordered pair comes once before any other repeats, as in the listing version. `random`
//! draws indices uniformly and rejects same-base pairs, pairs without an open order and pairs
//! picked already, which gives a uniformly random open unit per pick (sampling without
//! replacement); after many rejections (a nearly exhausted pool) it falls back to the listing.
//!
//! Below [`LAZY_PAIRS_MIN`] unordered pairs the listing versions run, so small pools pick
//! exactly as before.

use super::{Context, Orders, Unit, open_orders};
use crate::domain::rng::ChaCha8Rng;
use rand::{Rng, RngExt};
use std::collections::HashSet;

/// Unordered within-prompt item pairs from which `round_robin` and `random` stop listing them
/// (≈ a single pool of 2,050 items).
pub const LAZY_PAIRS_MIN: usize = 1 << 21;

/// The unordered within-prompt item pairs, addressed by index.
pub(crate) struct PairSpace {
    groups: Vec<Vec<usize>>,
    /// `offset[p]` = index of prompt p's first pair; `offset[P]` = number of pairs.
    offset: Vec<usize>,
}

impl PairSpace {
    /// The pair space of `ctx`'s items.
    pub(crate) fn new(ctx: &Context<'_>) -> Self {
        let groups = crate::domain::pool::prompt_groups(ctx.item_prompt, ctx.n_items());
        let mut offset = vec![0];
        for g in &groups {
            offset.push(offset[offset.len() - 1] + g.len() * g.len().saturating_sub(1) / 2);
        }
        PairSpace { groups, offset }
    }

    /// Number of unordered pairs.
    pub(crate) fn len(&self) -> usize {
        self.offset[self.groups.len()]
    }

    /// The pair at index `t` < [`Self::len`], as (a, b) with a < b.
    pub(crate) fn pair(&self, t: usize) -> (usize, usize) {
        let p = self.offset.partition_point(|&o| o <= t) - 1;
        let (g, mut t) = (&self.groups[p], t - self.offset[p]);
        // Row i holds the pairs (i, j), j > i: g − 1 − i of them.
        let n = g.len();
        // Closed-form row, then fix rounding.
        let rows_before = |i: usize| i * (2 * n - i - 1) / 2;
        let nf = n as f64;
        let mut i = ((2.0 * nf - 1.0 - ((2.0 * nf - 1.0).powi(2) - 8.0 * t as f64).max(0.0).sqrt()) / 2.0) as usize;
        i = i.min(n.saturating_sub(2));
        while i > 0 && rows_before(i) > t {
            i -= 1;
        }
        while rows_before(i + 1) <= t {
            i += 1;
        }
        t -= rows_before(i);
        (g[i], g[i + 1 + t])
    }
}

/// A seeded pseudo-random permutation of 0..n (Feistel network, cycle-walked).
pub(crate) struct Permutation {
    n: u64,
    half_bits: u32,
    keys: [u64; 4],
}

impl Permutation {
    /// A permutation of 0..n keyed by `rng`.
    pub(crate) fn new(n: usize, rng: &mut ChaCha8Rng) -> Self {
        let bits = (usize::BITS - n.max(2).saturating_sub(1).leading_zeros()).max(2);
        let half_bits = bits.div_ceil(2);
        Permutation { n: n as u64, half_bits, keys: [rng.next_u64(), rng.next_u64(), rng.next_u64(), rng.next_u64()] }
    }

    fn round(x: u64, key: u64) -> u64 {
        // splitmix64 finaliser of x ^ key.
        let mut z = (x ^ key).wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn feistel(&self, x: u64) -> u64 {
        let mask = (1u64 << self.half_bits) - 1;
        let (mut l, mut r) = (x >> self.half_bits, x & mask);
        for &k in &self.keys {
            (l, r) = (r, l ^ (Self::round(r, k) & mask));
        }
        (l << self.half_bits) | r
    }

    /// The image of `t` < n.
    pub(crate) fn at(&self, t: usize) -> usize {
        let mut x = self.feistel(t as u64);
        while x >= self.n {
            x = self.feistel(x);
        }
        x as usize
    }
}

/// `round_robin` without listing the pairs: the permutation's pairs in order, both open orders
/// of each, skipping same-base pairs and pairs with no open order.
pub(crate) fn round_robin(ctx: &Context<'_>, space: &PairSpace, r: usize) -> Vec<(usize, usize)> {
    let perm = Permutation::new(space.len(), &mut crate::domain::rng::stream(ctx.seed, "round_robin", 0));
    let mut out = Vec::new();
    for t in 0..space.len() {
        let (a, b) = space.pair(perm.at(t));
        if ctx.item_base[a] == ctx.item_base[b] {
            continue;
        }
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

/// `random` without listing the pairs: uniformly random open units by rejection; falls back
/// to listing the open units when rejections pile up.
pub(crate) fn random(ctx: &Context<'_>, space: &PairSpace, r: usize, rng: &mut ChaCha8Rng) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut picked: HashSet<(u32, u32)> = HashSet::new();
    let mut rejections = 0usize;
    let max_rejections = 64 * r + 10_000;
    while out.len() < r && space.len() > 0 {
        if rejections > max_rejections {
            // Nearly exhausted: the rest uniformly from the listed open units.
            let mut units: Vec<Unit> =
                super::candidate_units(ctx).into_iter().filter(|u| !picked.contains(&(u.a, u.b))).collect();
            rand::seq::SliceRandom::shuffle(&mut units[..], rng);
            out.extend(units.into_iter().flat_map(Unit::orders).take(r - out.len()));
            break;
        }
        let (a, b) = space.pair(rng.random_range(0..space.len()));
        let unit = match ctx.orders {
            Orders::Both => {
                let mask = u8::from(ctx.open(a, b)) | (u8::from(ctx.open(b, a)) << 1);
                Unit { a: a as u32, b: b as u32, mask }
            }
            Orders::Single => {
                let (a, b) = if rng.random::<bool>() { (a, b) } else { (b, a) };
                Unit { a: a as u32, b: b as u32, mask: u8::from(ctx.open(a, b)) }
            }
        };
        if unit.mask == 0 || !picked.insert((unit.a, unit.b)) {
            rejections += 1;
            continue;
        }
        out.extend(unit.orders().take(r - out.len()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acquire::testutil::{diag, from_posterior};

    #[test]
    fn pair_index_enumerates_every_unordered_pair_once_in_row_order() {
        for n in [2usize, 3, 7, 50] {
            let f = from_posterior(vec![0.0; n + 1], diag(&vec![1.0; n + 1]), 1);
            let ctx = f.ctx();
            let space = PairSpace::new(&ctx);
            assert_eq!(space.len(), ctx.n_items() * (ctx.n_items() - 1) / 2);
            let mut want = Vec::new();
            for a in 0..ctx.n_items() {
                for b in a + 1..ctx.n_items() {
                    want.push((a, b));
                }
            }
            let got: Vec<_> = (0..space.len()).map(|t| space.pair(t)).collect();
            assert_eq!(got, want);
        }
    }

    #[test]
    fn permutation_is_a_bijection() {
        for n in [1usize, 2, 5, 64, 1000, 4097] {
            let p = Permutation::new(n, &mut crate::domain::rng::stream(3, "t", 0));
            let mut seen = vec![false; n];
            for t in 0..n {
                let x = p.at(t);
                assert!(!seen[x], "{x} twice for n = {n}");
                seen[x] = true;
            }
        }
        // Another seed, another order.
        let (p, q) = (
            Permutation::new(1000, &mut crate::domain::rng::stream(3, "t", 0)),
            Permutation::new(1000, &mut crate::domain::rng::stream(4, "t", 0)),
        );
        assert!((0..1000).any(|t| p.at(t) != q.at(t)));
    }

    #[test]
    fn lazy_round_robin_covers_every_pair_once_before_repeating() {
        let mut f = from_posterior(vec![0.0; 8], diag(&[1.0; 8]), 2);
        let mut seq = Vec::new();
        loop {
            let ctx = f.ctx();
            let picks = round_robin(&ctx, &PairSpace::new(&ctx), 3);
            if picks.is_empty() {
                break;
            }
            for q in picks {
                assert!(f.queried.insert(q), "{q:?} asked twice");
                seq.push(q);
            }
        }
        assert_eq!(seq.len(), 7 * 6);
        let pairs: HashSet<(usize, usize)> = seq
            .chunks(2)
            .map(|c| {
                assert_eq!(c[0], (c[1].1, c[1].0), "both orders back to back");
                (c[0].0.min(c[0].1), c[0].0.max(c[0].1))
            })
            .collect();
        assert_eq!(pairs.len(), 21, "every unordered pair exactly once");
    }

    #[test]
    fn lazy_random_picks_distinct_open_units_and_exhausts_the_pool() {
        let mut f = from_posterior(vec![0.0; 6], diag(&[1.0; 6]), 2);
        f.queried = HashSet::from([(0, 1), (1, 0), (2, 3)]);
        let ctx = f.ctx();
        let picks = random(&ctx, &PairSpace::new(&ctx), 19, &mut crate::domain::rng::stream(4, "t", 0));
        // 10 unordered pairs, 20 ordered, 3 queried: 17 open, all picked once.
        assert_eq!(picks.len(), 17);
        let set: HashSet<_> = picks.iter().copied().collect();
        assert_eq!(set.len(), 17);
        assert!(picks.iter().all(|q| !f.queried.contains(q) && q.0 != q.1));
    }

    #[test]
    fn lazy_random_units_are_uniform() {
        // 5 items (4 bases + the intercept column): 10 unordered pairs, one open unit per pick.
        // Each of the 10 should be first pick with probability 1/10.
        let f = from_posterior(vec![0.0; 6], diag(&[1.0; 6]), 2);
        let ctx = f.ctx();
        let space = PairSpace::new(&ctx);
        let trials = 5000;
        let mut counts = std::collections::HashMap::new();
        for s in 0..trials {
            let p = random(&ctx, &space, 1, &mut crate::domain::rng::stream(s, "t", 0))[0];
            *counts.entry((p.0.min(p.1), p.0.max(p.1))).or_insert(0usize) += 1;
        }
        assert_eq!(counts.len(), 10);
        // Binomial(5000, 0.1): sd 21.2; 5 sd = 106.
        assert!(counts.values().all(|&c| c.abs_diff(500) < 106), "{counts:?}");
    }
}

//! Acquisition: which unqueried ordered pairs to send to the judge next (docs/model.md §3, paper App. A).
//!
//! Every strategy sees the same [`Context`] (posterior, membership, queried set) and returns up to
//! `r` ordered queries (item indices, first-shown first). Only unqueried ordered pairs of items
//! with different bases are candidates. All randomness comes from the `rng` passed in.

pub mod apparent;
pub mod baselines;
pub(crate) mod batch;
mod fresh;
mod large;
pub mod lazy_pairs;
mod pair_set;
pub mod panel;
pub mod topk;

use crate::domain::rng::ChaCha8Rng;
use crate::model::Posterior;
use serde::{Deserialize, Serialize};
use std::collections::HashSet;

/// The acquisition strategy (docs/model.md §3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StrategyKind {
    /// Top-k-aware: p̂(1 − p̂) · v_ij · (π_i(1 − π_i) + π_j(1 − π_j)).
    Topk,
    /// D-optimal: p̂(1 − p̂) · v_ij (no boundary weight).
    DOptimal,
    /// Largest posterior contrast variance v_ij.
    Uncertainty,
    /// A seeded shuffle of all unordered pairs, both orders.
    RoundRobin,
    /// Uniformly random unqueried pairs.
    Random,
    /// Sample θ from the posterior; query the pair straddling the sampled k-th/(k+1)-th boundary.
    Thompson,
    /// Lowest lower bound inside the top-k against highest upper bound outside.
    Lucb,
}

/// Whether to query both presentation orders of a chosen pair (docs/model.md §3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Orders {
    /// Select unordered pairs by the sum of their orders' scores; query both orders.
    #[default]
    Both,
    /// Select ordered pairs one by one (the paper's protocol).
    Single,
}

/// What a strategy may look at.
pub struct Context<'a> {
    /// `item_base[i]` = base of item i (length N).
    pub item_base: &'a [usize],
    /// `item_prompt[i]` = prompt of item i in a run over many prompts (length N; only items of
    /// one prompt are compared, docs/systems.md); empty for a single pool.
    pub item_prompt: &'a [usize],
    /// Transformed covariates per item (N × p).
    pub x: &'a [Vec<f64>],
    /// M bases, p covariates.
    pub m: usize,
    /// Number of covariates.
    pub p: usize,
    /// Laplace posterior at the current MAP (β̂ and Σ, order θ, c, κ).
    pub post: &'a Posterior,
    /// Current top-k membership π per base (length M).
    pub membership: &'a [f64],
    /// k: the size of the top set that recall and membership refer to.
    pub k: usize,
    /// Ordered pairs (a, b) already queried (or in flight).
    pub queried: &'a HashSet<(usize, usize)>,
    /// Whether a strategy picks unordered pairs and queries both orders, or ordered pairs one by
    /// one (config key `acquisition.orders`).
    pub orders: Orders,
    /// Run seed (for the round-robin shuffle, which is fixed for the whole run).
    pub seed: u64,
    /// The only ordered pairs a judge can answer, when it says so (a replay judge with
    /// `missing: unavailable` answers only what its recording holds, docs/replay.md): the
    /// candidates are then these pairs, and nothing else is listed or scored. `None`: every
    /// cross-base pair of one prompt.
    pub allowed: Option<&'a AllowedPairs>,
}

/// A fixed set of answerable ordered pairs (item indices, first-shown first): the candidate set
/// of a replay of a sparse recording. Listing the candidates costs O(|pairs|), not O(N²).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AllowedPairs {
    set: HashSet<(usize, usize)>,
    /// Every unordered pair {a < b} with an allowed order, ascending.
    unordered: Vec<(usize, usize)>,
}

impl AllowedPairs {
    /// The set of the given ordered pairs (repeats and (a, a) are dropped).
    pub fn new(pairs: impl IntoIterator<Item = (usize, usize)>) -> Self {
        let set: HashSet<(usize, usize)> = pairs.into_iter().filter(|(a, b)| a != b).collect();
        let mut unordered: Vec<(usize, usize)> = set.iter().map(|&(a, b)| (a.min(b), a.max(b))).collect();
        unordered.sort_unstable();
        unordered.dedup();
        AllowedPairs { set, unordered }
    }

    /// Whether the ordered pair (a, b) is allowed.
    pub fn contains(&self, a: usize, b: usize) -> bool {
        self.set.contains(&(a, b))
    }

    /// Number of allowed ordered pairs.
    pub fn len(&self) -> usize {
        self.set.len()
    }

    /// Whether no pair is allowed.
    pub fn is_empty(&self) -> bool {
        self.set.is_empty()
    }

    /// The unordered pairs {a < b} with at least one allowed order, ascending.
    pub fn unordered(&self) -> &[(usize, usize)] {
        &self.unordered
    }

    /// The allowed ordered pairs (no particular order).
    pub fn ordered(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        self.set.iter().copied()
    }
}

impl Context<'_> {
    /// Number of items N.
    pub fn n_items(&self) -> usize {
        self.item_base.len()
    }

    /// Whether (a, b) is a candidate: different bases, one prompt, allowed (see
    /// [`Context::allowed`]), not yet queried.
    pub fn open(&self, a: usize, b: usize) -> bool {
        a != b
            && self.item_base[a] != self.item_base[b]
            && self.same_prompt(a, b)
            && self.allowed.is_none_or(|s| s.contains(a, b))
            && !self.queried.contains(&(a, b))
    }

    /// Whether items a and b answer one prompt (always, for a single pool).
    pub fn same_prompt(&self, a: usize, b: usize) -> bool {
        self.item_prompt.is_empty() || self.item_prompt[a] == self.item_prompt[b]
    }

    /// Apparent score g_a = θ̂_{base(a)} + ĉᵀx_a, so η̂_ab = g_a − g_b + κ̂.
    pub fn apparent(&self) -> Vec<f64> {
        let beta = &self.post.mean;
        (0..self.n_items())
            .map(|a| beta[self.item_base[a]] + (0..self.p).map(|k| beta[self.m + k] * self.x[a][k]).sum::<f64>())
            .collect()
    }

    /// The MAP position effect κ̂ (logits; docs/model.md §2).
    pub fn kappa(&self) -> f64 {
        self.post.mean[self.m + self.p]
    }
}

/// Select up to `r` ordered queries with `strategy`.
pub fn select(strategy: StrategyKind, ctx: &Context<'_>, r: usize, rng: &mut ChaCha8Rng) -> Vec<(usize, usize)> {
    select_with_pending(strategy, ctx, &[], r, rng)
}

/// [`select`] with queries whose outcome is not in the posterior yet (`pending`: in flight, or
/// stored after the last refit). Each must also be in `ctx.queried` (it is never picked again).
/// The Σ-based rules (`topk`, `d_optimal`, `uncertainty`) count their information first: one
/// Sherman–Morrison step per pending query at its Fisher weight p̂(1 − p̂), which needs no
/// outcome (docs/model.md §3), so a wide pipeline spreads its picks. With `pending` empty this
/// is [`select`].
pub fn select_with_pending(
    strategy: StrategyKind,
    ctx: &Context<'_>,
    pending: &[(usize, usize)],
    r: usize,
    rng: &mut ChaCha8Rng,
) -> Vec<(usize, usize)> {
    if r == 0 {
        return Vec::new();
    }
    match strategy {
        StrategyKind::Topk | StrategyKind::DOptimal | StrategyKind::Uncertainty => {
            topk::select(strategy, ctx, pending, r, rng)
        }
        StrategyKind::RoundRobin => baselines::round_robin(ctx, r),
        StrategyKind::Random => baselines::random(ctx, r, rng),
        StrategyKind::Thompson => baselines::thompson(ctx, r, rng),
        StrategyKind::Lucb => baselines::lucb(ctx, r, rng),
    }
}

/// Choose uniformly among the indices whose score is within a relative 1e-12 of the maximum.
pub(crate) fn argmax_tiebreak(scores: &[f64], rng: &mut ChaCha8Rng) -> Option<usize> {
    use rand::RngExt;
    let max = scores.iter().copied().filter(|s| s.is_finite()).fold(f64::NEG_INFINITY, f64::max);
    if max == f64::NEG_INFINITY {
        return None;
    }
    let thr = max - 1e-12 * max.abs();
    let ties: Vec<usize> = scores.iter().enumerate().filter(|(_, s)| **s >= thr).map(|(i, _)| i).collect();
    if ties.len() == 1 { Some(ties[0]) } else { Some(ties[rng.random_range(0..ties.len())]) }
}

/// Expand an unordered pair into its open orders (a, b) then (b, a).
pub(crate) fn open_orders(ctx: &Context<'_>, a: usize, b: usize) -> Vec<(usize, usize)> {
    let mut v = Vec::with_capacity(2);
    if ctx.open(a, b) {
        v.push((a, b));
    }
    if ctx.open(b, a) {
        v.push((b, a));
    }
    v
}

/// A candidate unit of a selection step: an item pair (a, b) and which of its orders are open
/// (bit 1: (a, b), bit 2: (b, a)). Compact and `Copy`: pools of a few hundred items have tens of
/// thousands of units per selection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Unit {
    a: u32,
    b: u32,
    mask: u8,
}

impl Unit {
    /// The first item pair (a, b) of the unit (both orders share the bases).
    pub(crate) fn pair(self) -> (usize, usize) {
        (self.a as usize, self.b as usize)
    }

    /// The open orders: (a, b) then (b, a).
    pub(crate) fn orders(self) -> impl Iterator<Item = (usize, usize)> {
        let (a, b) = self.pair();
        [(self.mask & 1 != 0).then_some((a, b)), (self.mask & 2 != 0).then_some((b, a))].into_iter().flatten()
    }
}

/// The candidate units of a selection step: with `orders: both`, every unordered cross-base item
/// pair (a < b) that has an open order, with its open orders (a, b) then (b, a); with
/// `orders: single`, every open ordered pair on its own. Order: a ascending, then b.
pub(crate) fn candidate_units(ctx: &Context<'_>) -> Vec<Unit> {
    candidate_units_touching(ctx, &vec![true; ctx.n_items()])
}

/// The candidate units (as [`candidate_units`], same order) with at least one item marked in
/// `hot` (length N). Costs O(N · #hot) instead of O(N²) when few items are hot.
pub(crate) fn candidate_units_touching(ctx: &Context<'_>, hot: &[bool]) -> Vec<Unit> {
    if let Some(allowed) = ctx.allowed {
        return candidate_units_allowed(ctx, allowed, hot);
    }
    if !ctx.item_prompt.is_empty() {
        return candidate_units_within_prompts(ctx, hot);
    }
    let n = ctx.n_items();
    let queried = QueriedPairs::new(n, ctx.queried);
    let base = ctx.item_base;
    let open = |a: usize, b: usize| a != b && base[a] != base[b] && !queried.contains(a, b);
    let hot_items: Vec<usize> = (0..n).filter(|&i| hot[i]).collect();
    let all: Vec<usize> = (0..n).collect();
    let mut units = Vec::new();
    for a in 0..n {
        // Partners of a, ascending: everyone if a is hot, else the hot items.
        let partners = if hot[a] { &all } else { &hot_items };
        match ctx.orders {
            Orders::Both => {
                let from = partners.partition_point(|&b| b <= a);
                for &b in &partners[from..] {
                    let mask = u8::from(open(a, b)) | (u8::from(open(b, a)) << 1);
                    if mask != 0 {
                        units.push(Unit { a: a as u32, b: b as u32, mask });
                    }
                }
            }
            Orders::Single => {
                for &b in partners {
                    if open(a, b) {
                        units.push(Unit { a: a as u32, b: b as u32, mask: 1 });
                    }
                }
            }
        }
    }
    units
}

/// Pools up to which the queried ordered pairs are looked up in a dense N×N bitmap (8 MB at
/// this N); beyond, in a hash set (memory grows with the pairs asked, not with N²).
const DENSE_QUERIED_MAX_N: usize = 8192;

/// The queried ordered pairs for a listing that asks about many pairs: a dense bitmap (one hash
/// lookup per queried pair instead of one per candidate) or, for large pools, a hash set.
enum QueriedPairs {
    Dense { n: usize, bits: Vec<u64> },
    Sparse(pair_set::PairSet),
}

impl QueriedPairs {
    fn new(n: usize, queried: &HashSet<(usize, usize)>) -> Self {
        if n > DENSE_QUERIED_MAX_N {
            return QueriedPairs::Sparse(pair_set::PairSet::of(n, queried));
        }
        let mut bits = vec![0u64; (n * n).div_ceil(64)];
        for &(a, b) in queried {
            if a < n && b < n {
                let k = a * n + b;
                bits[k / 64] |= 1 << (k % 64);
            }
        }
        QueriedPairs::Dense { n, bits }
    }

    fn contains(&self, a: usize, b: usize) -> bool {
        match self {
            QueriedPairs::Dense { n, bits } => {
                let k = a * n + b;
                bits[k / 64] & (1 << (k % 64)) != 0
            }
            QueriedPairs::Sparse(s) => s.contains(a, b),
        }
    }
}

/// [`candidate_units_touching`] when only `allowed` pairs can be answered: the same units in the
/// same order (a ascending, then b), listed from the allowed pairs in O(|allowed|).
fn candidate_units_allowed(ctx: &Context<'_>, allowed: &AllowedPairs, hot: &[bool]) -> Vec<Unit> {
    let mut units = Vec::new();
    match ctx.orders {
        Orders::Both => {
            for &(a, b) in allowed.unordered() {
                if hot[a] || hot[b] {
                    let mask = u8::from(ctx.open(a, b)) | (u8::from(ctx.open(b, a)) << 1);
                    if mask != 0 {
                        units.push(Unit { a: a as u32, b: b as u32, mask });
                    }
                }
            }
        }
        Orders::Single => {
            let mut ordered: Vec<(usize, usize)> =
                allowed.ordered().filter(|&(a, b)| (hot[a] || hot[b]) && ctx.open(a, b)).collect();
            ordered.sort_unstable();
            units.extend(ordered.into_iter().map(|(a, b)| Unit { a: a as u32, b: b as u32, mask: 1 }));
        }
    }
    units
}

/// [`candidate_units_touching`] for a run over many prompts: only pairs of items of one prompt,
/// same order (a ascending, then b). Costs O(Σ n_p²) with one bitmap per prompt instead of an
/// N × N bitmap (N = 10,000 answers for 500 prompts × 20 systems).
fn candidate_units_within_prompts(ctx: &Context<'_>, hot: &[bool]) -> Vec<Unit> {
    let n = ctx.n_items();
    let groups = crate::domain::pool::prompt_groups(ctx.item_prompt, n);
    // Per prompt, a g×g bitmap of queried ordered pairs (position of each item in its prompt's
    // group): one hash-set pass instead of one lookup per candidate.
    let mut pos = vec![0usize; n];
    let mut offset = vec![0usize; groups.len() + 1];
    for (p, g) in groups.iter().enumerate() {
        for (k, &i) in g.iter().enumerate() {
            pos[i] = k;
        }
        offset[p + 1] = offset[p] + g.len() * g.len();
    }
    let bit = |a: usize, b: usize| {
        let p = ctx.item_prompt[a];
        offset[p] + pos[a] * groups[p].len() + pos[b]
    };
    let mut queried = vec![0u64; offset[groups.len()].div_ceil(64)];
    for &(a, b) in ctx.queried {
        if a < n && b < n && ctx.item_prompt[a] == ctx.item_prompt[b] {
            let k = bit(a, b);
            queried[k / 64] |= 1 << (k % 64);
        }
    }
    let base = ctx.item_base;
    let open = |a: usize, b: usize| {
        let k = bit(a, b);
        a != b && base[a] != base[b] && queried[k / 64] & (1 << (k % 64)) == 0
    };
    let mut units = Vec::new();
    for a in 0..n {
        for &b in &groups[ctx.item_prompt[a]] {
            if !(hot[a] || hot[b]) {
                continue;
            }
            match ctx.orders {
                Orders::Both if b > a => {
                    let mask = u8::from(open(a, b)) | (u8::from(open(b, a)) << 1);
                    if mask != 0 {
                        units.push(Unit { a: a as u32, b: b as u32, mask });
                    }
                }
                Orders::Single if open(a, b) => units.push(Unit { a: a as u32, b: b as u32, mask: 1 }),
                _ => {}
            }
        }
    }
    units
}

#[cfg(test)]
pub(crate) mod testutil {
    //! Fixtures for the acquisition tests: a context from a given posterior, or from a fit to a
    //! small synthetic pool.
    use super::{Context, Orders};
    use crate::analysis::synth::{SynthSpec, generate};
    use crate::domain::pool::{CovariateSpec, build_covariates};
    use crate::domain::verdict::ItemVerdict;
    use crate::model::Posterior;
    use crate::model::linalg::Matrix;
    use crate::model::summary::{build_design, fit_and_summarise};
    use std::collections::HashSet;

    /// Everything a [`Context`] borrows.
    pub struct Fixture {
        pub item_base: Vec<usize>,
        pub x: Vec<Vec<f64>>,
        pub m: usize,
        pub p: usize,
        pub post: Posterior,
        pub membership: Vec<f64>,
        pub k: usize,
        pub queried: HashSet<(usize, usize)>,
        pub orders: Orders,
        pub seed: u64,
    }

    impl Fixture {
        pub fn ctx(&self) -> Context<'_> {
            Context {
                item_base: &self.item_base,
                item_prompt: &[],
                x: &self.x,
                m: self.m,
                p: self.p,
                post: &self.post,
                membership: &self.membership,
                k: self.k,
                queried: &self.queried,
                orders: self.orders,
                seed: self.seed,
                allowed: None,
            }
        }
    }

    /// One item per base, no covariates, the given posterior mean (θ then κ) and covariance.
    pub fn from_posterior(mean: Vec<f64>, cov: Matrix, k: usize) -> Fixture {
        let m = mean.len() - 1;
        Fixture {
            item_base: (0..m).collect(),
            x: vec![vec![]; m],
            m,
            p: 0,
            post: Posterior::dense(mean, cov),
            membership: vec![0.5; m],
            k,
            queried: HashSet::new(),
            orders: Orders::Both,
            seed: 1,
        }
    }

    /// A diagonal covariance with the given variances.
    pub fn diag(v: &[f64]) -> Matrix {
        Matrix::from_fn(v.len(), v.len(), |i, j| if i == j { v[i] } else { 0.0 })
    }

    /// A synthetic pool of `n` bases, one item each (ρ = 0, c* = 1, κ* = 0.5, temperature 1).
    pub fn synth(n: usize, seed: u64) -> crate::analysis::synth::SynthPool {
        generate(&SynthSpec { n, rho: 0.0, c_star: 1.0, kappa_star: 0.5, temperature: 1.0, paired: false, seed })
    }

    /// The acquisition context of a synthetic pool (one item per base) with one covariate `x`.
    pub fn synth_ctx<'a>(
        sp: &'a crate::analysis::synth::SynthPool,
        x: &'a [Vec<f64>],
        post: &'a Posterior,
        membership: &'a [f64],
        queried: &'a HashSet<(usize, usize)>,
        k: usize,
        orders: Orders,
    ) -> Context<'a> {
        Context {
            item_base: &sp.pool.item_base,
            item_prompt: &[],
            x,
            m: sp.pool.n_bases(),
            p: 1,
            post,
            membership,
            k,
            queried,
            orders,
            seed: 5,
            allowed: None,
        }
    }

    /// A bias-aware fit to a synthetic pool of `n` bases (c* = 1, κ* = 0.5) after the ordered
    /// pairs (a, a + s mod n) for s = 1..=`shifts` have been judged.
    pub fn fitted(n: usize, shifts: usize, k: usize) -> Fixture {
        let sp = synth(n, 11);
        let cov = build_covariates(&sp.pool, &[CovariateSpec::parse("x:raw").unwrap()]).unwrap();
        let mut verdicts = Vec::new();
        let mut queried = HashSet::new();
        for a in 0..n {
            for s in 1..=shifts {
                let b = (a + s) % n;
                verdicts.push(ItemVerdict { a, b, y: sp.verdict(a, b), w: 1.0 });
                queried.insert((a, b));
            }
        }
        let design = build_design(&sp.pool, &cov, &verdicts);
        let mut rng = crate::domain::rng::stream(3, "membership", 0);
        let prior = crate::model::Prior::default();
        let (summary, _fit, post) =
            fit_and_summarise(&sp.pool, &cov, &design, &prior, k, 2000, None, &mut rng).unwrap();
        Fixture {
            item_base: sp.pool.item_base.clone(),
            x: cov.x.clone(),
            m: n,
            p: 1,
            post,
            membership: summary.membership,
            k,
            queried,
            orders: Orders::Both,
            seed: 5,
        }
    }
}

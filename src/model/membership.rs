//! Monte-Carlo top-k membership under the Laplace posterior (docs/model.md §2).
//!
//! π_m = P(base m is among the k largest θ). Draw z ~ N(0, I) (n per draw, ChaCha8 stream),
//! solve Lᵀu = z where H = LLᵀ, take the θ part of β̂ + u; π_m is the fraction of S draws in
//! which m is in the top k.
//!
//! The S draws come in fixed blocks of [`BLOCK`] draws, each from its own ChaCha8 stream seeded
//! from the caller's stream in block order. Blocks are independent, so large problems spread
//! them over two threads; the result depends only on the seed, never on the thread count.
//!
//! With more than 4,096 bases no verdict has touched ([`ORDER_STATS_MIN_ISOLATED`]), those
//! bases are iid given the posterior and only the k largest of their values are drawn, by
//! their order statistics; every other parameter is drawn as above from the factor restricted
//! to its rows (docs/model.md §2, "Large pools").

use super::bt::Fit;
use super::linalg::{Factor, KeptRows, Matrix};
use crate::domain::rng::ChaCha8Rng;
use rand::{RngExt, SeedableRng};
use rand_distr::{Distribution, StandardNormal};

/// Draws per block (each block has its own stream).
pub const BLOCK: usize = 250;

/// Below this many multiply–adds (n² · S) the blocks run on the calling thread.
const PARALLEL_WORK: usize = 5_000_000;

/// The k-th largest of `values` (k ≥ 1, finite values); `scratch` has the length of `values`.
fn kth_largest(values: &[f64], k: usize, scratch: &mut [f64]) -> f64 {
    if k <= 32 {
        // Insertion into a descending buffer of the k largest so far: most values are rejected
        // by one comparison with the current k-th.
        let top = &mut scratch[..k];
        let mut len = 0;
        for &v in values {
            if len == k && v <= top[k - 1] {
                continue;
            }
            let mut pos = len.min(k - 1);
            while pos > 0 && v > top[pos - 1] {
                top[pos] = top[pos - 1];
                pos -= 1;
            }
            top[pos] = v;
            len = (len + 1).min(k);
        }
        top[k - 1]
    } else {
        scratch.copy_from_slice(values);
        *scratch.select_nth_unstable_by(k - 1, |a, b| b.total_cmp(a)).1
    }
}

/// Fill `z` (n×d) with the N(0, 1) draws of the stream `seed`, column by column.
fn fill_normals(seed: u64, z: &mut Matrix) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    for s in 0..z.ncols() {
        for v in z.col_mut(s) {
            *v = StandardNormal.sample(&mut rng);
        }
    }
}

/// Top-k counts of `draws` draws from the stream `seed`, adding into `counts`; `z` is the
/// n×draws work matrix. With `w` (M rows of p weights) the ranked value of base m is the
/// apparent quality θ_m + Σ_j w[m][j] c_j instead of θ_m.
fn block_counts(fit: &Fit, k: usize, w: Option<&[Vec<f64>]>, seed: u64, z: &mut Matrix, counts: &mut [usize]) {
    fill_normals(seed, z);
    counts_of_normals(fit, k, w, z, counts);
}

/// [`block_counts`] for a work matrix `z` that already holds the block's N(0, 1) draws.
fn counts_of_normals(fit: &Fit, k: usize, w: Option<&[Vec<f64>]>, z: &mut Matrix, counts: &mut [usize]) {
    let m = counts.len();
    fit.chol.solve_lt_in_place(z);
    let mut theta = vec![0.0; m];
    let mut scratch = vec![0.0; m];
    for s in 0..z.ncols() {
        for ((t, b), u) in theta.iter_mut().zip(&fit.beta).zip(z.col(s)) {
            *t = b + u;
        }
        if let Some(w) = w {
            let col = z.col(s);
            for (t, wm) in theta.iter_mut().zip(w) {
                *t += wm.iter().enumerate().map(|(j, x)| x * (fit.beta[m + j] + col[m + j])).sum::<f64>();
            }
        }
        // The top k are the values above the k-th largest, then ties at it by index. (The
        // draws are finite: H is positive definite.)
        let kth = kth_largest(&theta, k, &mut scratch);
        let mut room = k - theta.iter().filter(|&&t| t > kth).count();
        for (c, &t) in counts.iter_mut().zip(&theta) {
            if t > kth {
                *c += 1;
            } else if t == kth && room > 0 {
                *c += 1;
                room -= 1;
            }
        }
    }
}

/// Counts of the blocks `blocks` (draws, seed), one work matrix for all of them.
fn blocks_counts(fit: &Fit, m: usize, k: usize, w: Option<&[Vec<f64>]>, blocks: &[(usize, u64)]) -> Vec<usize> {
    let n = fit.beta.len();
    let mut counts = vec![0usize; m];
    let mut z = Matrix::zeros(n, BLOCK);
    for &(d, seed) in blocks {
        if d != z.ncols() {
            z = Matrix::zeros(n, d);
        }
        block_counts(fit, k, w, seed, &mut z, &mut counts);
    }
    counts
}

/// The blocks of `draws` draws: (draws in the block, its stream's seed), one u64 from `rng` per
/// block, in block order.
fn block_seeds(draws: usize, rng: &mut ChaCha8Rng) -> Vec<(usize, u64)> {
    (0..draws.div_ceil(BLOCK)).map(|b| (BLOCK.min(draws - b * BLOCK), rng.random::<u64>())).collect()
}

/// Top-k membership probabilities (length M) from `draws` Monte-Carlo draws.
///
/// Takes one u64 from `rng` per block of [`BLOCK`] draws to seed that block's stream.
///
/// # Panics
/// If `k` is 0 or ≥ M.
pub fn topk_membership(fit: &Fit, m: usize, k: usize, draws: usize, rng: &mut ChaCha8Rng) -> Vec<f64> {
    membership_of(fit, m, k, None, draws, rng)
}

/// The N(0, I) draws of [`topk_membership`], drawn ahead (e.g. while the fit runs, since they
/// do not depend on it): the same blocks, seeds and values, so π is unchanged. n×S f64 values
/// (8 MB at n = 1000, S = 1000).
pub struct Normals {
    n: usize,
    blocks: Vec<Matrix>,
}

impl Normals {
    /// Take the block seeds from `rng` (one u64 per block of [`BLOCK`] draws, as
    /// [`topk_membership`] does); `draw` then fills the blocks, on any thread.
    pub fn seeds(draws: usize, rng: &mut ChaCha8Rng) -> Vec<(usize, u64)> {
        block_seeds(draws, rng)
    }

    /// The draws of `seeds` for n parameters.
    pub fn draw(n: usize, seeds: &[(usize, u64)]) -> Self {
        let blocks = seeds
            .iter()
            .map(|&(d, seed)| {
                let mut z = Matrix::zeros(n, d);
                fill_normals(seed, &mut z);
                z
            })
            .collect();
        Self { n, blocks }
    }

    /// Draws in all (S).
    pub fn draws(&self) -> usize {
        self.blocks.iter().map(Matrix::ncols).sum()
    }
}

/// π from two workers that each run `work` (top-k counts of the blocks it takes from a shared
/// queue), the second after `side`; counts are sums, so the split does not matter.
fn two_workers_beside<T: Send>(
    fit: &Fit,
    draws: usize,
    work: impl Fn() -> Vec<usize> + Sync,
    side: impl FnOnce() -> T + Send,
) -> (Vec<f64>, T) {
    let (mine, (theirs, out)) = std::thread::scope(|sc| {
        let other = sc.spawn(|| {
            let out = side();
            (work(), out)
        });
        (work(), other.join().expect("membership worker panicked"))
    });
    let mut pi: Vec<f64> = mine.iter().zip(&theirs).map(|(a, b)| (a + b) as f64 / draws as f64).collect();
    pool_isolated(fit, &mut pi);
    (pi, out)
}

/// [`topk_membership`] beside another job: `side` runs on a second thread, which then joins the
/// calling thread in drawing whatever blocks are left. π is the same as [`topk_membership`]'s
/// for the same `rng` (the same blocks and seeds; counts are sums, so which thread drew a block
/// does not matter). Used to overlap Σ = H⁻¹ with the draws on large problems.
///
/// # Panics
/// If `k` is 0 or ≥ M, or if `side` panics.
pub fn topk_membership_beside<T: Send>(
    fit: &Fit,
    m: usize,
    k: usize,
    draws: usize,
    rng: &mut ChaCha8Rng,
    side: impl FnOnce() -> T + Send,
) -> (Vec<f64>, T) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    assert!(k >= 1 && k < m, "k = {k} must be in 1..M (M = {m})");
    let n = fit.beta.len();
    let blocks = block_seeds(draws, rng);
    if let Some(u) = Untouched::of(fit, m, k) {
        return untouched_beside(&u, fit, m, k, &blocks, draws, side);
    }
    let next = AtomicUsize::new(0);
    let work = || {
        let mut counts = vec![0usize; m];
        let mut z = Matrix::zeros(n, BLOCK);
        while let Some(&(d, seed)) = blocks.get(next.fetch_add(1, Ordering::Relaxed)) {
            if d != z.ncols() {
                z = Matrix::zeros(n, d);
            }
            block_counts(fit, k, None, seed, &mut z, &mut counts);
        }
        counts
    };
    two_workers_beside(fit, draws, work, side)
}

/// [`topk_membership_beside`] with the draws already made ([`Normals`], from the caller's
/// stream): the same π as [`topk_membership`] for that stream.
///
/// # Panics
/// If `k` is 0 or ≥ M, if the draws are not for n = the fit's parameters, or if `side` panics.
pub fn topk_membership_drawn_beside<T: Send>(
    fit: &Fit,
    m: usize,
    k: usize,
    normals: Normals,
    side: impl FnOnce() -> T + Send,
) -> (Vec<f64>, T) {
    use std::sync::Mutex;
    assert!(k >= 1 && k < m, "k = {k} must be in 1..M (M = {m})");
    assert_eq!(normals.n, fit.beta.len(), "draws for n = {} but the fit has {}", normals.n, fit.beta.len());
    let draws = normals.draws();
    let queue = Mutex::new(normals.blocks.into_iter());
    let work = || {
        let mut counts = vec![0usize; m];
        loop {
            let next = queue.lock().expect("draws queue").next();
            let Some(mut z) = next else { break };
            counts_of_normals(fit, k, None, &mut z, &mut counts);
        }
        counts
    };
    two_workers_beside(fit, draws, work, side)
}

/// Top-k membership of the apparent quality φ_m = θ_m + Σ_j w\[m\]\[j\] c_j (length M), with `w`
/// the mean covariates of each base's items in the fit's parametrisation; as
/// [`topk_membership`] otherwise.
///
/// # Panics
/// If `k` is 0 or ≥ M, or `w` does not have M rows.
pub fn topk_membership_apparent(
    fit: &Fit,
    m: usize,
    w: &[Vec<f64>],
    k: usize,
    draws: usize,
    rng: &mut ChaCha8Rng,
) -> Vec<f64> {
    assert_eq!(w.len(), m, "one weight row per base");
    membership_of(fit, m, k, Some(w), draws, rng)
}

fn membership_of(
    fit: &Fit,
    m: usize,
    k: usize,
    w: Option<&[Vec<f64>]>,
    draws: usize,
    rng: &mut ChaCha8Rng,
) -> Vec<f64> {
    assert!(k >= 1 && k < m, "k = {k} must be in 1..M (M = {m})");
    let n = fit.beta.len();
    let blocks = block_seeds(draws, rng);
    if w.is_none()
        && let Some(u) = Untouched::of(fit, m, k)
    {
        return untouched_beside(&u, fit, m, k, &blocks, draws, || ()).0;
    }
    let per_worker: Vec<Vec<usize>> = if n * n * draws >= PARALLEL_WORK && blocks.len() > 1 {
        // Two workers take alternate blocks (counts are sums, so the split does not matter).
        let (even, odd): (Vec<_>, Vec<_>) = blocks.iter().enumerate().partition(|(b, _)| b % 2 == 0);
        let strip = |v: Vec<(usize, &(usize, u64))>| v.into_iter().map(|(_, b)| *b).collect::<Vec<_>>();
        let (even, odd) = (strip(even), strip(odd));
        std::thread::scope(|sc| {
            let other = sc.spawn(|| blocks_counts(fit, m, k, w, &odd));
            let mine = blocks_counts(fit, m, k, w, &even);
            vec![mine, other.join().expect("membership worker panicked")]
        })
    } else {
        vec![blocks_counts(fit, m, k, w, &blocks)]
    };
    let mut counts = vec![0usize; m];
    for c in per_worker {
        for (t, v) in counts.iter_mut().zip(c) {
            *t += v;
        }
    }
    let mut pi: Vec<f64> = counts.into_iter().map(|c| c as f64 / draws as f64).collect();
    if w.is_none() {
        pool_isolated(fit, &mut pi);
    }
    pi
}

/// From this many bases no verdict has touched on (more than the 4,096 parameters up to which
/// the draws are made ahead, so no pool of up to 4,096 bases changes), [`topk_membership`] and
/// [`topk_membership_beside`] draw only the k largest of those bases' values per draw, by their
/// order statistics (docs/model.md §2, "Large pools").
pub const ORDER_STATS_MIN_ISOLATED: usize = 4097;

/// The bases no verdict has touched, when there are at least [`ORDER_STATS_MIN_ISOLATED`] of
/// them and more than k: given the posterior they are iid N(μ, s²) (their rows of H hold only
/// λ_θ, so s = 1/√λ_θ and μ = θ̂ = 0 up to the fit's rounding), independent of every other
/// parameter. Only the k largest of their values can be in a draw's top k, and the k largest of
/// M iid values are drawn in O(k): with E_j ~ Exp(1), log U₍M₎ = −E₁/M and
/// log U₍M−j₎ = log U₍M−j+1₎ − E_{j+1}/(M − j) are the logs of the top uniform order
/// statistics, mapped through the normal quantile (from the upper tail 1 − U, without
/// cancellation).
struct Untouched {
    /// The draws of every other parameter.
    kept: KeptRows,
    /// The touched bases: (kept row, base).
    bases: Vec<(usize, usize)>,
    /// Number of untouched bases.
    count: usize,
    /// Their common posterior mean and sd.
    mean: f64,
    sd: f64,
}

impl Untouched {
    /// `None` when the fast path does not apply: a dense factor, too few untouched bases, k not
    /// below their number, or their means or sds not all equal (to [`TIE_LOGITS`], resp.
    /// exactly).
    fn of(fit: &Fit, m: usize, k: usize) -> Option<Self> {
        let Factor::Sparse(f) = &fit.chol else { return None };
        let skip: Vec<bool> = (0..f.dim()).map(|r| r < m && f.is_isolated(r)).collect();
        let count = skip.iter().filter(|&&s| s).count();
        if count < ORDER_STATS_MIN_ISOLATED || k >= count {
            return None;
        }
        let kept = f.kept_rows(&skip)?;
        let skipped = kept.skipped();
        if skipped.len() != count {
            return None;
        }
        let inv = skipped[0].1;
        if skipped.iter().any(|&(_, v)| v != inv) {
            return None;
        }
        let mean = skipped.iter().map(|&(r, _)| fit.beta[r]).sum::<f64>() / count as f64;
        if skipped.iter().any(|&(r, _)| (fit.beta[r] - mean).abs() > TIE_LOGITS) {
            return None;
        }
        let bases = kept.original().iter().enumerate().filter(|&(_, &r)| r < m).map(|(c, &r)| (c, r)).collect();
        Some(Self { kept, bases, count, mean, sd: inv })
    }

    /// The top-k counts of a block of `draws` draws from the stream `seed`: per touched base
    /// into `counts` (indexed by base), and the untouched bases' total into `untouched`. The
    /// stream gives the kept rows' N(0, 1) draws column by column, then per draw the k
    /// exponentials of the untouched bases' order statistics.
    fn block(&self, fit: &Fit, k: usize, draws: usize, seed: u64, counts: &mut [usize], untouched: &mut usize) {
        use rand_distr::Exp1;
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let nk = self.kept.len();
        // Row by row (x[c · draws + s]), filled draw by draw.
        let mut x = vec![0.0; nk * draws];
        for s in 0..draws {
            for c in 0..nk {
                x[c * draws + s] = StandardNormal.sample(&mut rng);
            }
        }
        self.kept.draws_in_place(&mut x, draws);
        let nb = self.bases.len();
        let mut values = vec![0.0; nb + k];
        let mut scratch = vec![0.0; nb + k];
        for s in 0..draws {
            for (v, &(c, b)) in values.iter_mut().zip(&self.bases) {
                *v = fit.beta[b] + x[c * draws + s];
            }
            let mut log_u = 0.0f64;
            for (j, v) in values[nb..].iter_mut().enumerate() {
                let e: f64 = Exp1.sample(&mut rng);
                log_u -= e / (self.count - j) as f64;
                // P(Z > z) = 1 − U ⇒ z = √2 · erfc⁻¹(2(1 − U)).
                let tail = (-log_u.exp_m1()).max(f64::MIN_POSITIVE);
                *v = self.mean + self.sd * std::f64::consts::SQRT_2 * statrs::function::erf::erfc_inv(2.0 * tail);
            }
            let kth = kth_largest(&values, k, &mut scratch);
            let mut room = k - values.iter().filter(|&&t| t > kth).count();
            for (j, &t) in values.iter().enumerate() {
                let hit = t > kth
                    || (t == kth && room > 0 && {
                        room -= 1;
                        true
                    });
                if hit {
                    if j < nb {
                        counts[self.bases[j].1] += 1;
                    } else {
                        *untouched += 1;
                    }
                }
            }
        }
    }

    /// π from the summed counts of all blocks: each touched base its own count over S, each
    /// untouched base the untouched total over S·(their number).
    fn membership(&self, m: usize, counts: &[usize], untouched: usize, draws: usize) -> Vec<f64> {
        let iso = untouched as f64 / (draws as f64 * self.count as f64);
        let mut pi = vec![iso; m];
        for &(_, b) in &self.bases {
            pi[b] = counts[b] as f64 / draws as f64;
        }
        pi
    }
}

/// The counts of [`Untouched::block`] over the blocks a worker takes from a shared queue.
fn untouched_worker(
    u: &Untouched,
    fit: &Fit,
    m: usize,
    k: usize,
    blocks: &[(usize, u64)],
    next: &std::sync::atomic::AtomicUsize,
) -> (Vec<usize>, usize) {
    let mut counts = vec![0usize; m];
    let mut untouched = 0;
    while let Some(&(d, seed)) = blocks.get(next.fetch_add(1, std::sync::atomic::Ordering::Relaxed)) {
        u.block(fit, k, d, seed, &mut counts, &mut untouched);
    }
    (counts, untouched)
}

/// π of the fast path on two threads (the second runs `side` first): counts are sums, so the
/// split does not matter.
fn untouched_beside<T: Send>(
    u: &Untouched,
    fit: &Fit,
    m: usize,
    k: usize,
    blocks: &[(usize, u64)],
    draws: usize,
    side: impl FnOnce() -> T + Send,
) -> (Vec<f64>, T) {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let ((mine, my_iso), ((theirs, their_iso), out)) = std::thread::scope(|sc| {
        let other = sc.spawn(|| {
            let out = side();
            (untouched_worker(u, fit, m, k, blocks, &next), out)
        });
        (untouched_worker(u, fit, m, k, blocks, &next), other.join().expect("membership worker panicked"))
    });
    let counts: Vec<usize> = mine.iter().zip(&theirs).map(|(a, b)| a + b).collect();
    (u.membership(m, &counts, my_iso + their_iso, draws), out)
}

/// Most bases [`rank_intervals`] takes (its rank histogram has M² cells).
pub const MAX_RANKED_BASES: usize = 1000;

/// The central `level` interval of each base's rank under the Laplace posterior (1 = best; the
/// rank of base m in a draw is 1 + the number of bases with a larger value), from `draws`
/// Monte-Carlo draws of θ (or of the apparent quality φ with `w`, as in
/// [`topk_membership_apparent`]): (lower, upper) with P(rank < lower) ≤ (1 − level)/2 and
/// P(rank > upper) ≤ (1 − level)/2. `None` above [`MAX_RANKED_BASES`] bases.
///
/// # Panics
/// If `level` is not in (0, 1), or `w` does not have M rows.
pub fn rank_intervals(
    fit: &Fit,
    m: usize,
    w: Option<&[Vec<f64>]>,
    draws: usize,
    level: f64,
    rng: &mut ChaCha8Rng,
) -> Option<Vec<(usize, usize)>> {
    assert!(level > 0.0 && level < 1.0, "level {level} must be in (0, 1)");
    if let Some(w) = w {
        assert_eq!(w.len(), m, "one weight row per base");
    }
    if m > MAX_RANKED_BASES || draws == 0 {
        return None;
    }
    let n = fit.beta.len();
    let mut hist = vec![0u32; m * m]; // hist[b * m + r]: draws with base b at rank r (0-based)
    let mut values = vec![0.0; m];
    let mut order: Vec<usize> = (0..m).collect();
    for (d, seed) in block_seeds(draws, rng) {
        let mut z = Matrix::zeros(n, d);
        fill_normals(seed, &mut z);
        fit.chol.solve_lt_in_place(&mut z);
        for s in 0..d {
            let col = z.col(s);
            for (b, v) in values.iter_mut().enumerate() {
                *v = fit.beta[b] + col[b];
                if let Some(w) = w {
                    *v += w[b].iter().enumerate().map(|(j, x)| x * (fit.beta[m + j] + col[m + j])).sum::<f64>();
                }
            }
            order.sort_unstable_by(|a, b| values[*b].total_cmp(&values[*a]).then(a.cmp(b)));
            for (r, &b) in order.iter().enumerate() {
                hist[b * m + r] += 1;
            }
        }
    }
    let tail = (1.0 - level) / 2.0 * draws as f64;
    Some(
        (0..m)
            .map(|b| {
                let h = &hist[b * m..(b + 1) * m];
                let (mut below, mut lo) = (0.0, 0);
                while lo + 1 < m && below + f64::from(h[lo]) <= tail {
                    below += f64::from(h[lo]);
                    lo += 1;
                }
                let (mut above, mut hi) = (0.0, m - 1);
                while hi > lo && above + f64::from(h[hi]) <= tail {
                    above += f64::from(h[hi]);
                    hi -= 1;
                }
                (lo + 1, hi + 1)
            })
            .collect(),
    )
}

/// On the large-pool path, the bases no verdict has touched (rows of H with no off-diagonal
/// entry) have the same marginal N(0, 1/λ_θ), independent of everything else: they are
/// exchangeable, so their π are equal. Each gets the mean of their Monte-Carlo estimates, which
/// is unbiased and S·(their number) draws strong, instead of noise that would steer the
/// acquisition (docs/model.md §2, "Large pools").
fn pool_isolated(fit: &Fit, pi: &mut [f64]) {
    let Factor::Sparse(f) = &fit.chol else { return };
    let iso: Vec<usize> = (0..pi.len()).filter(|&b| f.is_isolated(b)).collect();
    if iso.len() > 1 {
        let mean = iso.iter().map(|&b| pi[b]).sum::<f64>() / iso.len() as f64;
        for &b in &iso {
            pi[b] = mean;
        }
    }
}

/// Values closer than this (logits) rank as tied: far below any posterior sd, and above the
/// rounding left by the MAP fit (‖∇L‖∞ < 1e-9), which differs with the warm-start path.
pub const TIE_LOGITS: f64 = 1e-7;

/// The [`TIE_LOGITS`] grid point of `v`: values on one point are tied. A value within half a
/// step below 0 is on the point 0, not −0 (`total_cmp` puts −0 below 0, which ordered two
/// values 1e-19 apart by their sign, not by index: hunt 59).
pub fn tie_grid(v: f64) -> f64 {
    (v / TIE_LOGITS).round() + 0.0
}

/// Indices of the k largest values, sorted by value descending; values on the same
/// [`TIE_LOGITS`] grid point are tied and ordered by lower index. (In a complete design every
/// base with the same number of wins gets the same θ̂ up to rounding; without the grid, which of
/// them makes the top k would depend on rounding noise.)
pub fn point_topk(values: &[f64], k: usize) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..values.len()).collect();
    idx.sort_by(|a, b| tie_grid(values[*b]).total_cmp(&tie_grid(values[*a])).then(a.cmp(b)));
    idx.truncate(k);
    idx
}

/// Recall@k = |Ŝ ∩ S*| / k.
pub fn recall_at_k(estimated: &[usize], gold: &[usize]) -> f64 {
    let k = gold.len();
    estimated.iter().filter(|i| gold.contains(i)).count() as f64 / k as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::rng;
    use crate::model::Posterior;
    use crate::model::bt::{Design, FitOptions, Prior, fit};
    use rand::RngExt;

    #[test]
    fn point_topk_ties_rounding_noise_by_index() {
        // Bases 1 and 3 tie up to rounding (1e-12 apart): the lower index goes first, whichever
        // carries the larger rounding error; real differences (1e-3) still order by value.
        assert_eq!(point_topk(&[0.5, 1.0 - 1e-12, 0.2, 1.0, 1.001], 3), vec![4, 1, 3]);
        assert_eq!(point_topk(&[0.5, 1.0, 0.2, 1.0 - 1e-12, 1.001], 3), vec![4, 1, 3]);
        assert_eq!(point_topk(&[0.5, 1.0, 0.2, 1.0 - 1e-3, 1.001], 3), vec![4, 1, 3]);
        assert_eq!(point_topk(&[0.5, 1.0 - 1e-3, 0.2, 1.0, 1.001], 3), vec![4, 3, 1]);
        // Values 1e-19 around 0 are tied, whatever their signs: by index.
        assert_eq!(point_topk(&[-4.9e-19, 2.7e-19, -1e-20, 4.7e-19], 4), vec![0, 1, 2, 3]);
        assert_eq!(tie_grid(-4.9e-19).to_bits(), 0.0f64.to_bits());
    }

    #[test]
    fn kth_largest_matches_a_full_sort() {
        let mut r = rng::stream(1, "test", 0);
        for m in [1usize, 5, 33, 80] {
            // Values on a coarse grid so that ties occur.
            let values: Vec<f64> = (0..m).map(|_| (r.random::<f64>() * 10.0).floor() - 4.0).collect();
            let mut sorted = values.clone();
            sorted.sort_by(|a, b| b.total_cmp(a));
            let mut scratch = vec![0.0; m];
            for k in 1..=m {
                assert_eq!(kth_largest(&values, k, &mut scratch), sorted[k - 1], "m={m} k={k}");
            }
        }
    }

    /// A fit to `m` bases compared in a ring (a, a+1) with the first-listed winning 2 of 3.
    fn ring_fit(m: usize) -> crate::model::bt::Fit {
        let mut d = Design::new(m, 0);
        for a in 0..m {
            let b = (a + 1) % m;
            for y in [1.0, 1.0, 0.0] {
                d.push(a, b, &[], y, 1.0);
            }
        }
        fit(&d, &Prior::default().diagonal(m, 0), None, &FitOptions::default()).unwrap()
    }

    /// Rank intervals: for two bases, P(rank 1) is the same normal CDF as π with k = 1, so the
    /// 90 % interval of base 0 is [1, 1] when that probability is ≥ 0.95 and [1, 2] below it;
    /// with no verdict every base of 4 is exchangeable (P(rank r) = ¼), so each interval is [1, 4].
    #[test]
    fn rank_intervals_follow_the_rank_distribution() {
        let two = |wins: usize, losses: usize| {
            // Both orders, so that the position effect κ does not take base 0's wins.
            let mut d = Design::new(2, 0);
            for i in 0..wins {
                if i % 2 == 0 { d.push(0, 1, &[], 1.0, 1.0) } else { d.push(1, 0, &[], 0.0, 1.0) }
            }
            for i in 0..losses {
                if i % 2 == 0 { d.push(0, 1, &[], 0.0, 1.0) } else { d.push(1, 0, &[], 1.0, 1.0) }
            }
            fit(&d, &Prior::default().diagonal(2, 0), None, &FitOptions::default()).unwrap()
        };
        let f = two(40, 2);
        let p1 = topk_membership(&f, 2, 1, 20_000, &mut rng::stream(3, "membership", 0))[0];
        assert!(p1 > 0.99, "{p1}");
        let r = rank_intervals(&f, 2, None, 20_000, 0.9, &mut rng::stream(3, "ranks", 0)).unwrap();
        assert_eq!(r, vec![(1, 1), (2, 2)]);
        let f = two(3, 2);
        let p1 = topk_membership(&f, 2, 1, 20_000, &mut rng::stream(3, "membership", 0))[0];
        assert!(p1 > 0.5 && p1 < 0.9, "{p1}");
        let r = rank_intervals(&f, 2, None, 20_000, 0.9, &mut rng::stream(3, "ranks", 0)).unwrap();
        assert_eq!(r, vec![(1, 2), (1, 2)]);
        let empty = fit(&Design::new(4, 0), &Prior::default().diagonal(4, 0), None, &FitOptions::default()).unwrap();
        let r = rank_intervals(&empty, 4, None, 4_000, 0.9, &mut rng::stream(3, "ranks", 0)).unwrap();
        assert_eq!(r, vec![(1, 4); 4]);
    }

    #[test]
    fn two_bases_match_the_normal_cdf() {
        // k = 1 of M = 2: π_0 = P(θ_0 > θ_1) = Φ((θ̂_0 − θ̂_1)/√v), v the contrast variance.
        let mut d = Design::new(2, 0);
        for y in [1.0, 1.0, 1.0, 0.0] {
            d.push(0, 1, &[], y, 1.0);
        }
        let f = fit(&d, &Prior::default().diagonal(2, 0), None, &FitOptions::default()).unwrap();
        let post = Posterior::from_fit(&f);
        let z = (f.beta[0] - f.beta[1]) / post.contrast_var(0, 1).sqrt();
        let want = statrs::function::erf::erfc(-z / std::f64::consts::SQRT_2) / 2.0;
        let s = 40_000;
        let pi = topk_membership(&f, 2, 1, s, &mut rng::stream(2, "membership", 0));
        let se = (want * (1.0 - want) / s as f64).sqrt();
        assert!((pi[0] - want).abs() < 4.0 * se, "MC {} vs Φ {want} (se {se})", pi[0]);
        assert!((pi[0] + pi[1] - 1.0).abs() < 1e-12);
    }

    /// The exact path's π (every base's value drawn, then the untouched bases pooled), for
    /// comparison with the order-statistics path.
    fn exact_membership(f: &crate::model::bt::Fit, m: usize, k: usize, draws: usize, seed: u64) -> Vec<f64> {
        let blocks = block_seeds(draws, &mut rng::stream(seed, "membership", 0));
        let counts = blocks_counts(f, m, k, None, &blocks);
        let mut pi: Vec<f64> = counts.iter().map(|&c| c as f64 / draws as f64).collect();
        pool_isolated(f, &mut pi);
        pi
    }

    #[test]
    fn untouched_bases_by_order_statistics_give_k_over_m_at_the_prior() {
        // No verdict: every base is untouched and identical, so each draw's top k are k of
        // them and π = k/M exactly.
        let m = 5000;
        let f = fit(&Design::new(m, 0), &Prior::default().diagonal(m, 0), None, &FitOptions::default()).unwrap();
        assert!(Untouched::of(&f, m, 100).is_some());
        let pi = topk_membership(&f, m, 100, 500, &mut rng::stream(1, "membership", 0));
        assert!(pi.iter().all(|&p| p == 100.0 / 5000.0), "{:?}", &pi[..3]);
        // Below the threshold the exact path runs.
        let m = ORDER_STATS_MIN_ISOLATED - 1;
        let f = fit(&Design::new(m, 0), &Prior::default().diagonal(m, 0), None, &FitOptions::default()).unwrap();
        assert!(Untouched::of(&f, m, 100).is_none());
    }

    #[test]
    fn untouched_bases_by_order_statistics_match_the_exact_path() {
        // 5000 bases, the first 120 compared in a chain (a beats a + 1 three times of four,
        // both orders), so that their θ̂ spread over the range where the untouched bases' top
        // values compete with them for the top 40.
        let m = 5000;
        let mut d = Design::new(m, 0);
        for a in 0..119 {
            for (i, y) in [1.0, 1.0, 1.0, 0.0].into_iter().enumerate() {
                if i % 2 == 0 { d.push(a, a + 1, &[], y, 1.0) } else { d.push(a + 1, a, &[], 1.0 - y, 1.0) }
            }
        }
        let f = fit(&d, &Prior::default().diagonal(m, 0), None, &FitOptions::default()).unwrap();
        let k = 40;
        let u = Untouched::of(&f, m, k).expect("4880 untouched bases");
        assert_eq!(u.count, m - 120);
        let s = 4000;
        let fast = topk_membership(&f, m, k, s, &mut rng::stream(5, "membership", 0));
        let exact = exact_membership(&f, m, k, s, 6);
        assert!((fast.iter().sum::<f64>() - k as f64).abs() < 1e-9);
        for b in 0..m {
            // Two independent estimates: the sd of their difference is √(2p(1 − p)/S).
            let p = (fast[b] + exact[b]) / 2.0;
            let se = (2.0 * p * (1.0 - p) / s as f64).sqrt();
            assert!((fast[b] - exact[b]).abs() <= 4.5 * se + 1e-3 / s as f64, "base {b}: {} vs {}", fast[b], exact[b]);
        }
        // The untouched bases hold a real share of the top k, pooled (S·M draws strong).
        assert!(fast[m - 1] > 1e-4 && fast[m - 1] == fast[200]);
        let share_fast = fast[120] * (m - 120) as f64;
        let share_exact = exact[120] * (m - 120) as f64;
        assert!((share_fast - share_exact).abs() < 0.05 * share_exact + 0.2, "{share_fast} vs {share_exact}");
        // The same blocks on one thread, in order: the same π; and beside a side job.
        let blocks = block_seeds(s, &mut rng::stream(5, "membership", 0));
        let (counts, untouched) = untouched_worker(&u, &f, m, k, &blocks, &std::sync::atomic::AtomicUsize::new(0));
        assert_eq!(u.membership(m, &counts, untouched, s), fast);
        let (beside, out) = topk_membership_beside(&f, m, k, s, &mut rng::stream(5, "membership", 0), || 7);
        assert_eq!((beside, out), (fast, 7));
    }

    #[test]
    fn memberships_sum_to_k_and_do_not_depend_on_the_thread_split() {
        // n = 81 parameters, S = 1000: n²S ≥ PARALLEL_WORK, so the two-worker path runs.
        let m = 80;
        let f = ring_fit(m);
        assert!(f.beta.len().pow(2) * 1000 >= PARALLEL_WORK);
        let pi = topk_membership(&f, m, 7, 1000, &mut rng::stream(3, "membership", 0));
        assert!((pi.iter().sum::<f64>() - 7.0).abs() < 1e-9);
        // The same blocks and seeds on one thread, in order.
        let mut r = rng::stream(3, "membership", 0);
        let blocks: Vec<(usize, u64)> = (0..4).map(|_| (BLOCK, r.random::<u64>())).collect();
        let counts = blocks_counts(&f, m, 7, None, &blocks);
        let seq: Vec<f64> = counts.iter().map(|c| *c as f64 / 1000.0).collect();
        assert_eq!(pi, seq);
        // Beside a side job, the two threads share the same blocks: the same π, and the job's
        // result; the stream is left where topk_membership leaves it.
        let mut r1 = rng::stream(3, "membership", 0);
        let (beside, out) = topk_membership_beside(&f, m, 7, 1000, &mut r1, || 6 * 7);
        assert_eq!((beside, out), (pi.clone(), 42));
        let mut r2 = rng::stream(3, "membership", 0);
        let _ = topk_membership(&f, m, 7, 1000, &mut r2);
        assert_eq!(r1.random::<u64>(), r2.random::<u64>());
        // Normals drawn ahead (as while the fit runs): the same π, the stream left at the same
        // place.
        let mut r3 = rng::stream(3, "membership", 0);
        let normals = Normals::draw(f.beta.len(), &Normals::seeds(1000, &mut r3));
        assert_eq!(normals.draws(), 1000);
        let (drawn, out) = topk_membership_drawn_beside(&f, m, 7, normals, || "side");
        assert_eq!((drawn, out), (pi, "side"));
        let mut r4 = rng::stream(3, "membership", 0);
        let _ = topk_membership(&f, m, 7, 1000, &mut r4);
        assert_eq!(r3.random::<u64>(), r4.random::<u64>());
    }
}

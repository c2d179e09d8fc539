//! The trusted-anchor gate (docs/model.md §5, paper §5 "Gating: when to enable correction").
//!
//! Decides per (judge, covariate, task) whether to report the bias-corrected or the naive
//! ranking, because the corrected one rests on the prior's assumption that quality is
//! uncorrelated with the covariate (docs/model.md §2), which comparisons cannot test.
//!
//! **Anchors.** Rank the M bases by the naive θ̂ (= apparent quality φ̂) and by the corrected
//! θ̂ (bias-aware model), 1-based, ties by lower base index (as [`point_topk`]). A pair of bases
//! {i, j} is a *disagreement* when the two rankings order it differently. Its distance to the
//! top-k boundary is
//!
//!   D(i, j) = max(|r̄_i − (k + ½)|, |r̄_j − (k + ½)|),  r̄_m = (r^naive_m + r^corrected_m) / 2,
//!
//! so a pair comes first when both bases sit near the boundary on average over the two
//! rankings (a swap across the boundary, e.g. ranks 3 ↔ 8 for k = 5, has D = 0; a swap of
//! ranks 1 ↔ 2 has D = 4 and cannot change the top-k set). Anchors are the K disagreements of
//! smallest D, ties by smaller |r̄_i − (k + ½)| + |r̄_j − (k + ½)|, then by base indices.
//!
//! **Test.** A trusted source labels each anchor (the better base, or a tie). n10 = anchors the
//! corrected ranking gets right and the naive wrong, n01 the reverse (on a disagreement exactly
//! one of them is right unless the label is a tie, which counts for neither). Enable
//! correction iff the exact one-sided sign test P(Bin(n10 + n01, ½) ≥ n10) ≤ α (default 0.05).

use crate::model::membership::point_topk;
use serde::{Deserialize, Serialize};

/// One anchor: a disagreement between the naive and the corrected ranking (base indices).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Anchor {
    /// The base the corrected ranking puts higher (the naive one puts it lower).
    pub corrected_prefers: usize,
    /// The base the naive ranking puts higher.
    pub naive_prefers: usize,
    /// Naive ranks (1-based) of (corrected_prefers, naive_prefers).
    pub naive_ranks: [usize; 2],
    /// Corrected ranks of (corrected_prefers, naive_prefers).
    pub corrected_ranks: [usize; 2],
    /// D, the distance to the top-k boundary (ranks).
    pub distance: f64,
}

/// 1-based ranks of `theta` (descending, ties by lower index).
pub fn ranks(theta: &[f64]) -> Vec<usize> {
    let order = point_topk(theta, theta.len());
    let mut r = vec![0; theta.len()];
    for (pos, &m) in order.iter().enumerate() {
        r[m] = pos + 1;
    }
    r
}

/// Every disagreement of the two rankings, nearest the top-k boundary first (module docs);
/// the first `max_anchors` of them (fewer if fewer disagreements exist).
///
/// `naive`, `corrected`: θ̂ per base (length M, logits).
///
/// # Panics
/// If the lengths differ.
pub fn select_anchors(naive: &[f64], corrected: &[f64], k: usize, max_anchors: usize) -> Vec<Anchor> {
    assert_eq!(naive.len(), corrected.len(), "naive and corrected θ̂ must have one value per base");
    let (rn, rc) = (ranks(naive), ranks(corrected));
    let m = naive.len();
    let boundary = k as f64 + 0.5;
    let dist = |b: usize| ((rn[b] + rc[b]) as f64 / 2.0 - boundary).abs();
    let mut out: Vec<(f64, f64, Anchor)> = Vec::new();
    for i in 0..m {
        for j in i + 1..m {
            if (rn[i] < rn[j]) == (rc[i] < rc[j]) {
                continue;
            }
            let (c, nv) = if rc[i] < rc[j] { (i, j) } else { (j, i) };
            let (di, dj) = (dist(i), dist(j));
            let a = Anchor {
                corrected_prefers: c,
                naive_prefers: nv,
                naive_ranks: [rn[c], rn[nv]],
                corrected_ranks: [rc[c], rc[nv]],
                distance: di.max(dj),
            };
            out.push((di.max(dj), di + dj, a));
        }
    }
    out.sort_by(|x, y| {
        x.0.total_cmp(&y.0).then(x.1.total_cmp(&y.1)).then_with(|| {
            let kx = (x.2.corrected_prefers.min(x.2.naive_prefers), x.2.corrected_prefers.max(x.2.naive_prefers));
            let ky = (y.2.corrected_prefers.min(y.2.naive_prefers), y.2.corrected_prefers.max(y.2.naive_prefers));
            kx.cmp(&ky)
        })
    });
    out.into_iter().take(max_anchors).map(|t| t.2).collect()
}

/// A trusted label for one anchor from its two ordered verdicts: `y_ab` with the first base
/// shown first and `y_ba` with the order swapped (either may be invalid = `None`).
///
/// Returns P(first base better) averaged over the valid orders, (y_ab + (1 − y_ba)) / 2, or
/// `None` when neither order gave a verdict. Above ½ the first base is better, below ½ the
/// second, exactly ½ is a tie (e.g. a judge that always picks slot A).
pub fn order_averaged(y_ab: Option<f64>, y_ba: Option<f64>) -> Option<f64> {
    match (y_ab, y_ba) {
        (Some(u), Some(v)) => Some((u + 1.0 - v) / 2.0),
        (Some(u), None) => Some(u),
        (None, Some(v)) => Some(1.0 - v),
        (None, None) => None,
    }
}

/// Exact one-sided sign-test p-value P(Bin(n10 + n01, ½) ≥ n10) (1 when n10 + n01 = 0).
pub fn sign_test_p(n10: usize, n01: usize) -> f64 {
    let n = n10 + n01;
    if n10 == 0 {
        return 1.0;
    }
    let ln2n = n as f64 * std::f64::consts::LN_2;
    let p: f64 = (n10..=n).map(|t| (statrs::function::factorial::ln_binomial(n as u64, t as u64) - ln2n).exp()).sum();
    p.min(1.0)
}

/// The gate's decision (docs/model.md §5).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct GateDecision {
    /// Anchors used (K, or fewer when fewer disagreements exist).
    pub n_anchors: usize,
    /// Anchors the corrected ranking gets right and the naive wrong.
    pub n10: usize,
    /// Anchors the naive ranking gets right and the corrected wrong.
    pub n01: usize,
    /// Anchors labelled as ties or left unlabelled (count for neither).
    pub n_ties: usize,
    /// P(Bin(n10 + n01, ½) ≥ n10).
    pub p_value: f64,
    /// Level α of the one-sided sign test (e.g. 0.05).
    pub alpha: f64,
    /// Enable correction: p ≤ α.
    pub enable: bool,
}

impl GateDecision {
    /// "enable correction" or "keep the naive ranking", with the reason.
    pub fn text(&self) -> String {
        let test = format!("P(Bin({}, 1/2) ≥ {}) = {:.4}", self.n10 + self.n01, self.n10, self.p_value);
        if self.n10 + self.n01 == 0 {
            // Nothing was tested: no anchor, or the trusted source tied every one.
            let why = if self.n_anchors == 0 {
                "no anchors: the naive and corrected rankings order every pair near the boundary alike"
            } else {
                "no anchor decided: the trusted source ties every one"
            };
            return format!("{why}, so there is nothing to test; keep the apparent ranking");
        }
        if self.enable {
            format!("{test} ≤ α = {}: enable correction (report the bias-corrected ranking)", self.alpha)
        } else {
            format!("{test} > α = {}: keep the apparent ranking (correction not supported by the anchors)", self.alpha)
        }
    }
}

/// Count n10/n01 and test. `better[a]`: the base the trusted source prefers on anchor a
/// (`None` = tie or unlabelled).
///
/// # Panics
/// If the lengths differ.
pub fn decide(anchors: &[Anchor], better: &[Option<usize>], alpha: f64) -> GateDecision {
    assert_eq!(anchors.len(), better.len(), "one label per anchor");
    let (mut n10, mut n01, mut n_ties) = (0, 0, 0);
    for (a, b) in anchors.iter().zip(better) {
        match b {
            Some(w) if *w == a.corrected_prefers => n10 += 1,
            Some(w) if *w == a.naive_prefers => n01 += 1,
            _ => n_ties += 1,
        }
    }
    let p_value = sign_test_p(n10, n01);
    GateDecision { n_anchors: anchors.len(), n10, n01, n_ties, p_value, alpha, enable: p_value <= alpha }
}

/// θ̂ per base (len M) of the naive model (no covariates) and of the bias-aware model with `cov`.
pub fn fit_naive_and_corrected(
    pool: &crate::domain::pool::Pool,
    cov: &crate::domain::pool::Covariates,
    verdicts: &[crate::domain::verdict::ItemVerdict],
    prior: &crate::model::Prior,
) -> Result<[Vec<f64>; 2], crate::model::FitError> {
    let m = pool.n_bases();
    let naive = crate::model::bt::fit(
        &crate::model::summary::build_design(pool, &crate::domain::pool::Covariates::none(pool.n_items()), verdicts),
        &prior.diagonal(m, 0),
        None,
        &crate::model::bt::FitOptions::default(),
    )?;
    let corr = crate::model::summary::fit_scaled(
        &crate::model::summary::build_design(pool, cov, verdicts),
        &prior.diagonal(m, cov.p()),
        None,
        &crate::model::summary::solver_scales(cov),
        &crate::model::bt::FitOptions::default(),
    )?;
    Ok([naive.beta[..m].to_vec(), corr.beta[..m].to_vec()])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Independent computation: Σ_{t ≥ n10} C(n, t) / 2ⁿ with integer binomials.
    fn exact(n10: u64, n01: u64) -> f64 {
        let n = n10 + n01;
        let mut c = 1u128;
        let mut sum = 0u128;
        for t in 0..=n {
            if t >= n10 {
                sum += c;
            }
            c = c * u128::from(n - t) / u128::from(t + 1);
        }
        sum as f64 / 2f64.powi(n as i32)
    }

    #[test]
    fn sign_test_matches_integer_binomials() {
        assert!((sign_test_p(9, 1) - 11.0 / 1024.0).abs() < 1e-15);
        assert!((sign_test_p(5, 0) - 1.0 / 32.0).abs() < 1e-15);
        assert_eq!(sign_test_p(0, 0), 1.0);
        assert_eq!(sign_test_p(0, 7), 1.0);
        for (a, b) in [(26, 14), (27, 13), (8, 2), (30, 10), (3, 3), (60, 40)] {
            let e = exact(a as u64, b as u64);
            assert!((sign_test_p(a, b) - e).abs() < 1e-12 * e, "{a} {b}");
        }
        // The K = 10 threshold: 9 of 10 enables (0.0107), 8 of 10 does not (0.0547).
        assert!(sign_test_p(9, 1) <= 0.05 && sign_test_p(8, 2) > 0.05);
    }

    #[test]
    fn anchors_are_disagreements_nearest_the_boundary_first() {
        // Naive order 0 > 1 > 2 > 3 > 4 > 5; corrected swaps (1, 4) and (2, 3); k = 2.
        let naive = [6.0, 5.0, 4.0, 3.0, 2.0, 1.0];
        let corrected = [6.0, 2.0, 3.0, 4.0, 5.0, 1.0];
        let a = select_anchors(&naive, &corrected, 2, 10);
        // Corrected ranks: 0→1, 4→2, 3→3, 2→4, 1→5, 5→6. Disagreeing pairs: every pair among
        // {1, 2, 3, 4} (6 pairs); mean ranks r̄: 1→3.5, 2→3.5, 3→3.5, 4→3.5; all D = 1.
        assert_eq!(a.len(), 6);
        assert!(a.iter().all(|x| (x.distance - 1.0).abs() < 1e-12));
        assert_eq!((a[0].corrected_prefers, a[0].naive_prefers), (2, 1));
        assert_eq!(a[0].naive_ranks, [3, 2]);
        assert_eq!(a[0].corrected_ranks, [4, 5]);
        // With a second disagreement far from the boundary it comes last.
        let naive = [1.0, 2.0, 10.0, 9.0, 8.0, 7.0, 6.0, 5.0];
        let corrected = [2.0, 1.0, 10.0, 9.0, 8.0, 6.0, 7.0, 5.0];
        // k = 5: naive ranks 2→1, 3→2, 4→3, 5→4, 6→5, 7→6, 1→7, 0→8; corrected swaps 5 ↔ 6
        // (ranks 4 ↔ 5, r̄ = 4.5, D = 1) and 0 ↔ 1 (ranks 7 ↔ 8, r̄ = 7.5, D = 2).
        let a = select_anchors(&naive, &corrected, 5, 10);
        assert_eq!(a.len(), 2);
        assert_eq!((a[0].corrected_prefers, a[0].naive_prefers), (6, 5));
        assert!((a[0].distance - 1.0).abs() < 1e-12);
        assert_eq!((a[1].corrected_prefers, a[1].naive_prefers), (0, 1));
        assert!((a[1].distance - 2.0).abs() < 1e-12);
        assert_eq!(select_anchors(&naive, &corrected, 5, 1).len(), 1);
        assert!(select_anchors(&naive, &naive, 5, 10).is_empty());
    }

    #[test]
    fn decide_counts_and_tests() {
        let a = select_anchors(&[6.0, 5.0, 4.0, 3.0, 2.0, 1.0], &[6.0, 2.0, 3.0, 4.0, 5.0, 1.0], 2, 10);
        let labels: Vec<Option<usize>> = a.iter().map(|x| Some(x.corrected_prefers)).collect();
        let d = decide(&a, &labels, 0.05);
        assert_eq!((d.n10, d.n01, d.n_ties, d.n_anchors), (6, 0, 0, 6));
        assert!((d.p_value - 1.0 / 64.0).abs() < 1e-15 && d.enable);
        let mut labels = labels;
        labels[0] = Some(a[0].naive_prefers);
        labels[1] = None;
        let d = decide(&a, &labels, 0.05);
        assert_eq!((d.n10, d.n01, d.n_ties), (4, 1, 1));
        assert!((d.p_value - 6.0 / 32.0).abs() < 1e-15 && !d.enable);
        assert!(d.text().contains("keep the apparent ranking"), "{}", d.text());
    }

    #[test]
    fn order_averaged_labels() {
        assert_eq!(order_averaged(Some(1.0), Some(0.0)), Some(1.0));
        assert_eq!(order_averaged(Some(1.0), Some(1.0)), Some(0.5)); // always slot A: a tie
        assert_eq!(order_averaged(None, Some(1.0)), Some(0.0));
        assert_eq!(order_averaged(None, None), None);
    }
}

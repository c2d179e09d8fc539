//! Has the judge changed behind the same name? (docs/live.md, "Judge fingerprint")
//!
//! A few stored ordered pairs are asked again and each new verdict is compared with the stored
//! one. A pair *changed* when the two verdicts name different winners (y on opposite sides of
//! ½, a tie counting as a side of its own when the other verdict is decided by at least ½); a
//! soft verdict's P(A) must also move by at least [`SOFT_MIN_MOVE`].
//! Against the judge's own noise — the share of changes it allows, `allowed` (at least
//! [`MIN_ALLOWED`], or the judge's observed flip rate between the two orders of its stored
//! pairs when that is higher) — the one-sided binomial test
//! P(Bin(n, allowed) ≥ changed) ≤ [`LEVEL`] says the judge changed.

use serde::{Deserialize, Serialize};
use statrs::distribution::{Binomial, DiscreteCDF};

/// The least share of changed verdicts a judge's noise allows (temperature 0 still jitters on
/// some servers: batching, prefix caches).
pub const MIN_ALLOWED: f64 = 0.1;

/// The test's level.
pub const LEVEL: f64 = 0.01;

/// One re-asked ordered pair.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reasked {
    /// Item shown first.
    pub a: String,
    /// Item shown second.
    pub b: String,
    /// The stored verdict's y (P(first-shown wins)).
    pub before: f64,
    /// The new verdict's y; `None` when the reply was invalid or failed.
    pub after: Option<f64>,
    /// The winner changed.
    pub changed: bool,
}

/// The least move of a soft verdict's P(A) across ½ that counts as a change (0.55 → 0.45 is
/// jitter around a coin flip, 0.8 → 0.3 a change).
pub const SOFT_MIN_MOVE: f64 = 0.2;

/// Whether two verdicts name different winners: hard verdicts (0, ½, 1) by agreement, soft ones
/// by their P(A), which must cross ½ by at least [`SOFT_MIN_MOVE`] in all.
pub fn changed(before: f64, after: f64) -> bool {
    let soft = |y: f64| y > 0.0 && y < 1.0 && (y - 0.5).abs() > 1e-9;
    if (soft(before) || soft(after)) && (before - after).abs() < SOFT_MIN_MOVE {
        return false;
    }
    let side = |y: f64| {
        if (y - 0.5).abs() < 1e-9 {
            0
        } else if y > 0.5 {
            1
        } else {
            -1
        }
    };
    let (s0, s1) = (side(before), side(after));
    s0 != s1 && (s0 * s1 == -1 || (before - after).abs() >= 0.5)
}

/// The outcome of one fingerprint check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Test {
    /// Pairs with a new valid verdict.
    pub pairs: usize,
    /// Of them, changed.
    pub changed: usize,
    /// The share of changes the judge's noise allows.
    pub allowed: f64,
    /// P(Bin(pairs, allowed) ≥ changed).
    pub p_value: f64,
    /// The level.
    pub level: f64,
    /// The judge changed: p ≤ level.
    pub judge_changed: bool,
}

/// Test the re-asked pairs against the noise share `allowed` (module docs).
pub fn test(reasked: &[Reasked], allowed: f64) -> Test {
    let valid: Vec<&Reasked> = reasked.iter().filter(|r| r.after.is_some()).collect();
    let n = valid.len();
    let k = valid.iter().filter(|r| r.changed).count();
    let allowed = allowed.clamp(MIN_ALLOWED, 0.99);
    let p_value = if k == 0 {
        1.0
    } else {
        let b = Binomial::new(allowed, n as u64).expect("valid binomial");
        // P(X ≥ k) = 1 − P(X ≤ k − 1).
        (1.0 - b.cdf(k as u64 - 1)).max(0.0)
    };
    Test { pairs: n, changed: k, allowed, p_value, level: LEVEL, judge_changed: n > 0 && p_value <= LEVEL }
}

/// The fewest re-asked pairs with which a check against the noise share `allowed` can stop a
/// run: the least n with allowedⁿ ≤ [`LEVEL`] (all n changed then has P ≤ the level).
pub fn pairs_needed(allowed: f64) -> usize {
    let allowed = allowed.clamp(MIN_ALLOWED, 0.99);
    (LEVEL.ln() / allowed.ln()).floor() as usize + 1
}

/// The judge's flip rate between the two orders of its stored pairs: of the pairs stored in
/// both orders with decided verdicts, the share whose two verdicts name different items
/// (`pairs`: (y with a first, y with b first)).
pub fn flip_rate(pairs: &[(f64, f64)]) -> Option<f64> {
    let decided: Vec<&(f64, f64)> =
        pairs.iter().filter(|(x, y)| (x - 0.5).abs() > 1e-9 && (y - 0.5).abs() > 1e-9).collect();
    // The same item wins both orders when y_ab > ½ and y_ba < ½ (or the reverse).
    let flips = decided.iter().filter(|(x, y)| (*x > 0.5) == (*y > 0.5)).count();
    (!decided.is_empty()).then(|| flips as f64 / decided.len() as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(before: f64, after: f64) -> Reasked {
        Reasked { a: "x".into(), b: "y".into(), before, after: Some(after), changed: changed(before, after) }
    }

    #[test]
    fn six_of_eight_changed_is_a_changed_judge_and_one_is_noise() {
        assert!(changed(1.0, 0.0) && changed(0.8, 0.3) && !changed(0.8, 0.6) && !changed(0.5, 0.7));
        assert!(!changed(0.55, 0.45), "soft jitter around ½");
        assert!(changed(0.5, 0.0), "a tie against a decided verdict by ≥ ½");
        let six: Vec<Reasked> = (0..8).map(|i| if i < 6 { r(1.0, 0.0) } else { r(1.0, 1.0) }).collect();
        let t = test(&six, 0.0);
        // P(Bin(8, 0.1) ≥ 6) = C(8,6)·0.1⁶·0.9² + C(8,7)·0.1⁷·0.9 + 0.1⁸ = 2.3410e-5.
        assert!((t.p_value - 2.341e-5).abs() < 1e-8, "{}", t.p_value);
        assert!(t.judge_changed && t.changed == 6 && t.pairs == 8);
        let one: Vec<Reasked> = (0..8).map(|i| if i < 1 { r(1.0, 0.0) } else { r(0.9, 0.8) }).collect();
        let t = test(&one, 0.0);
        // P(Bin(8, 0.1) ≥ 1) = 1 − 0.9⁸ = 0.5695.
        assert!((t.p_value - (1.0 - 0.9f64.powi(8))).abs() < 1e-12 && !t.judge_changed);
        // A judge that flips between orders half the time allows more change.
        assert!(!test(&six, 0.5).judge_changed);
        assert_eq!(flip_rate(&[(1.0, 0.0), (1.0, 1.0), (0.5, 1.0)]), Some(0.5));
    }
}

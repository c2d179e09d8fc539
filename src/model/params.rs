//! The model's and the acquisition's settings with one default and one check each
//! (docs/model.md §2–§3). Every entry point — a run config, a sweep file, `fit`'s flags, the
//! simulation driver — takes its defaults from here and validates with the same checks, so a
//! value that one of them refuses is refused by all.

/// Default prior precision on each θ_m (docs/model.md §2).
pub const DEFAULT_LAMBDA_THETA: f64 = 1.0;
/// Default prior precision on each bias coefficient c_j (docs/model.md §2; the paper's Table 1).
pub const DEFAULT_LAMBDA_B: f64 = 0.1;
/// Default prior precision on the position effect κ (docs/model.md §2).
pub const DEFAULT_LAMBDA_KAPPA: f64 = 0.01;
/// Default number of queries selected per refit, R (docs/model.md §3).
pub const DEFAULT_REFIT_EVERY: usize = 8;
/// Default number of Monte-Carlo draws S for top-k membership (docs/model.md §2).
pub const DEFAULT_MC_DRAWS: usize = 1000;

/// A setting outside its allowed range.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{value} {expected}")]
pub struct ParamError {
    /// The setting's name without a prefix (`lambda_b`, `mc_draws`); callers add the key path
    /// or flag the user wrote.
    pub name: &'static str,
    /// The value found, as written.
    pub value: String,
    /// What is allowed, e.g. "must be > 0 (…)".
    pub expected: &'static str,
}

/// The smallest prior precision taken: a prior sd of 1000 logits. A smaller one vanishes in
/// floating point beside the curvature the comparisons add (about 1e-16 of it), so the Hessian
/// of a component compared only within itself stops being positive definite.
pub const MIN_PRECISION: f64 = 1e-6;

/// The largest prior precision a config may set: a prior sd of 0.001 logits. Above it the prior
/// alone decides (θ̂, ĉ or κ̂ stays at 0 whatever the verdicts say), which is a typo, not a model.
pub const MAX_PRECISION: f64 = 1e6;

/// Check a prior precision: finite, ≥ [`MIN_PRECISION`] (which keeps every MAP fit finite) and
/// ≤ [`MAX_PRECISION`].
///
/// # Errors
/// [`ParamError`] naming `name`.
pub fn check_precision(name: &'static str, v: f64) -> Result<(), ParamError> {
    if v > 0.0 && v.is_finite() && v < MIN_PRECISION {
        Err(ParamError {
            name,
            // `1e-300`, not 300 digits.
            value: format!("{v:e}"),
            expected: "must be ≥ 1e-6 (a prior sd of at most 1000 logits; a smaller precision vanishes in floating point beside the comparisons and the fit cannot be solved)",
        })
    } else if v > MAX_PRECISION && v.is_finite() {
        Err(ParamError {
            name,
            value: format!("{v:e}"),
            expected: "must be ≤ 1e6 (a prior sd of at least 0.001 logits; above it the prior alone decides and the verdicts move nothing): a typo?",
        })
    } else if v > 0.0 && v.is_finite() {
        Ok(())
    } else {
        Err(ParamError {
            name,
            value: v.to_string(),
            expected: "must be a finite number > 0, e.g. 1 (a positive prior precision keeps every fit finite; it is 1 / the prior variance, logits⁻²)",
        })
    }
}

/// The largest weight of a strong-preference verdict (`[[A>>B]]`): a million ordinary verdicts.
/// Beyond it the likelihood's curvature swamps the prior and the Hessian loses its precision.
pub const MAX_STRONG_PREFERENCE_WEIGHT: f64 = 1e6;

/// Check the weight of a strong-preference verdict's likelihood term: finite, > 0 and at most
/// [`MAX_STRONG_PREFERENCE_WEIGHT`].
///
/// # Errors
/// [`ParamError`] naming `strong_preference_weight`.
pub fn check_strong_preference_weight(w: f64) -> Result<(), ParamError> {
    if w > 0.0 && w <= MAX_STRONG_PREFERENCE_WEIGHT {
        Ok(())
    } else {
        Err(ParamError {
            name: "strong_preference_weight",
            value: if w.is_finite() && w.abs() >= 1e7 { format!("{w:e}") } else { w.to_string() },
            expected: "must be a number > 0 and ≤ 1e6 (1 weighs a strong preference like any verdict)",
        })
    }
}

/// Check R, the queries selected per refit: at least 1.
///
/// # Errors
/// [`ParamError`] for 0.
pub fn check_refit_every(r: usize) -> Result<(), ParamError> {
    if r >= 1 {
        Ok(())
    } else {
        Err(ParamError { name: "refit_every", value: r.to_string(), expected: "must be ≥ 1" })
    }
}

/// The most Monte-Carlo draws taken: the standard error of π is at most 0.5/√S, 5e-4 here;
/// more would only cost memory and time (a draw holds a θ vector).
pub const MAX_MC_DRAWS: usize = 1_000_000;

/// Check S, the Monte-Carlo draws for top-k membership: at least 1 (with none, every π would be
/// 0/0), at most [`MAX_MC_DRAWS`].
///
/// # Errors
/// [`ParamError`] for 0 or more than [`MAX_MC_DRAWS`].
pub fn check_mc_draws(s: usize) -> Result<(), ParamError> {
    if s == 0 {
        Err(ParamError {
            name: "mc_draws",
            value: s.to_string(),
            expected: "must be ≥ 1 (top-k membership is a Monte-Carlo average over the draws)",
        })
    } else if s > MAX_MC_DRAWS {
        Err(ParamError {
            name: "mc_draws",
            value: s.to_string(),
            expected: "must be at most 1000000 (π's standard error is then at most 0.0005; each draw holds a θ vector in memory)",
        })
    } else {
        Ok(())
    }
}

/// Check ε of the early stop on confident membership: in (0, 0.5).
///
/// # Errors
/// [`ParamError`] outside (0, 0.5).
pub fn check_confidence(e: f64) -> Result<(), ParamError> {
    if e > 0.0 && e < 0.5 {
        Ok(())
    } else {
        Err(ParamError { name: "confidence", value: e.to_string(), expected: "must be in (0, 0.5)" })
    }
}

/// serde default of `lambda_theta`.
pub fn default_lambda_theta() -> f64 {
    DEFAULT_LAMBDA_THETA
}
/// serde default of `lambda_b`.
pub fn default_lambda_b() -> f64 {
    DEFAULT_LAMBDA_B
}
/// serde default of `lambda_kappa`.
pub fn default_lambda_kappa() -> f64 {
    DEFAULT_LAMBDA_KAPPA
}
/// serde default of `refit_every`.
pub fn default_refit_every() -> usize {
    DEFAULT_REFIT_EVERY
}

/// Default queries in flight at most, C (`acquisition.concurrency`): one batch of R.
pub const DEFAULT_CONCURRENCY: usize = 8;

/// [`DEFAULT_CONCURRENCY`], for serde defaults.
pub fn default_concurrency() -> usize {
    DEFAULT_CONCURRENCY
}
/// serde default of `mc_draws`.
pub fn default_mc_draws() -> usize {
    DEFAULT_MC_DRAWS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checks_accept_the_defaults_and_refuse_the_boundaries() {
        for (n, v) in [("a", DEFAULT_LAMBDA_THETA), ("b", DEFAULT_LAMBDA_B), ("c", DEFAULT_LAMBDA_KAPPA)] {
            assert_eq!(check_precision(n, v), Ok(()));
        }
        for v in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            let e = check_precision("lambda_b", v).unwrap_err();
            assert_eq!((e.name, e.value.as_str()), ("lambda_b", v.to_string().as_str()));
        }
        for (v, shown) in [(1e-300, "1e-300"), (9.9e-7, "9.9e-7")] {
            let e = check_precision("lambda_b", v).unwrap_err();
            assert_eq!((e.name, e.value.as_str()), ("lambda_b", shown));
        }
        assert_eq!(check_precision("lambda_theta", MIN_PRECISION), Ok(()));
        assert!(check_precision("lambda_theta", 1e-300).unwrap_err().to_string().contains("must be ≥ 1e-6"));
        assert_eq!(check_precision("lambda_theta", MAX_PRECISION), Ok(()));
        assert_eq!(
            check_precision("lambda_theta", 1e300).unwrap_err().to_string(),
            "1e300 must be ≤ 1e6 (a prior sd of at least 0.001 logits; above it the prior alone decides and the verdicts move nothing): a typo?"
        );
        // Infinity is > 0 but not finite: the message says finite.
        assert!(
            check_precision("lambda_b", f64::INFINITY).unwrap_err().to_string().contains("must be a finite number > 0")
        );
        assert!(check_refit_every(DEFAULT_REFIT_EVERY).is_ok() && check_refit_every(0).is_err());
        assert!(check_mc_draws(DEFAULT_MC_DRAWS).is_ok());
        assert_eq!(
            check_mc_draws(0).unwrap_err().to_string(),
            "0 must be ≥ 1 (top-k membership is a Monte-Carlo average over the draws)"
        );
        assert_eq!(
            check_mc_draws(1_000_001).unwrap_err().to_string(),
            "1000001 must be at most 1000000 (π's standard error is then at most 0.0005; each draw holds a θ vector in memory)"
        );
        assert!(check_mc_draws(MAX_MC_DRAWS).is_ok());
        assert!(check_confidence(0.05).is_ok() && check_confidence(0.5).is_err() && check_confidence(0.0).is_err());
    }
}

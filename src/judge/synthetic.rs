//! The true judge of a synthetic pool (docs/model.md §7), usable from configs as `judge: {synthetic: {}}`.
//!
//! P(first wins | a, b) = σ((q_a − q_b + c*·(x_a − x_b) + κ*) / temperature), where q is the
//! item's `quality` (the true θ of its base in a synthetic pool) and x its covariate `x` (or the
//! key named by `covariate`). The verdict is one Bernoulli draw keyed by (seed, a, b), exactly
//! [`crate::analysis::synth::SynthPool::verdict`]: on a synthetic pool this judge reproduces the pool's
//! own verdicts. Unset parameters are filled from the config's `pool: {synthetic: ...}` spec
//! (c*, κ*, temperature, seed), else c* = 0, κ* = 0, temperature = 1, seed = 0. A trusted judge
//! for the gate is `synthetic: {c_star: 0, kappa_star: 0}` (quality only).

use super::{BoxFuture, Judge, JudgeError, JudgeInfo};
use crate::analysis::synth::{SynthSpec, keyed_verdict};
use crate::domain::pool::Pool;
use crate::domain::rng;
use crate::domain::verdict::JudgeReply;
use crate::model::bt::sigmoid;
use serde::{Deserialize, Serialize};

/// `judge: {synthetic: {...}}`: every field optional (filled from the synthetic pool spec).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SyntheticJudgeConfig {
    /// True bias coefficient c* (logits per covariate unit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub c_star: Option<f64>,
    /// True position effect κ* (logits).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kappa_star: Option<f64>,
    /// Temperature dividing η (> 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Seed of the keyed draws.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::domain::serde_words::opt_whole"
    )]
    pub seed: Option<u64>,
    /// Covariate key read from the items (default `x`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub covariate: Option<String>,
}

impl SyntheticJudgeConfig {
    /// Fill unset fields from the pool's synthetic spec (if any), then from the defaults.
    pub fn resolve(&mut self, spec: Option<&SynthSpec>) {
        self.c_star = self.c_star.or(spec.map(|s| s.c_star)).or(Some(0.0));
        self.kappa_star = self.kappa_star.or(spec.map(|s| s.kappa_star)).or(Some(0.0));
        self.temperature = self.temperature.or(spec.map(|s| s.temperature)).or(Some(1.0));
        self.seed = self.seed.or(spec.map(|s| s.seed)).or(Some(0));
        if self.covariate.is_none() {
            self.covariate = Some("x".into());
        }
    }

    /// Check the values and that every item carries what the judge reads.
    ///
    /// # Errors
    /// A message naming the field or item.
    pub fn check(&self, pool: &Pool) -> Result<(), crate::domain::invalid::InvalidInput> {
        let j = SyntheticJudge::new(self.clone())?;
        for it in &pool.items {
            if it.quality.is_none() {
                return Err(
                    format!("the synthetic judge needs `quality` on every item; item {:?} has none", it.id).into()
                );
            }
            if j.c_star != 0.0 && !it.covariates.contains_key(&j.covariate) {
                return Err(
                    format!("item {:?} has no covariate {:?} (needed because c_star ≠ 0)", it.id, j.covariate).into()
                );
            }
        }
        Ok(())
    }
}

/// The synthetic true judge (resolved parameters).
#[derive(Debug, Clone)]
pub struct SyntheticJudge {
    c_star: f64,
    kappa_star: f64,
    temperature: f64,
    seed: u64,
    covariate: String,
    cfg: SyntheticJudgeConfig,
}

impl SyntheticJudge {
    /// Build from a config (unset fields take the defaults c* = 0, κ* = 0, T = 1, seed 0, `x`).
    ///
    /// # Errors
    /// Temperature ≤ 0 or non-finite numbers.
    pub fn new(mut cfg: SyntheticJudgeConfig) -> Result<Self, crate::domain::invalid::InvalidInput> {
        cfg.resolve(None);
        let (c_star, kappa_star, temperature) =
            (cfg.c_star.unwrap_or(0.0), cfg.kappa_star.unwrap_or(0.0), cfg.temperature.unwrap_or(1.0));
        if !(temperature > 0.0 && temperature.is_finite()) {
            return Err(format!("temperature = {temperature} must be > 0").into());
        }
        for (k, v) in [("c_star", c_star), ("kappa_star", kappa_star)] {
            if !v.is_finite() {
                return Err(format!("{k} = {v} must be finite").into());
            }
        }
        Ok(Self {
            c_star,
            kappa_star,
            temperature,
            seed: cfg.seed.unwrap_or(0),
            covariate: cfg.covariate.clone().unwrap_or_else(|| "x".into()),
            cfg,
        })
    }

    /// P(first wins) for the ordered items (a, b).
    ///
    /// # Panics
    /// If an item lacks `quality` (checked at config time).
    pub fn p_first(&self, pool: &Pool, a: usize, b: usize) -> f64 {
        let (ia, ib) = (&pool.items[a], &pool.items[b]);
        let q = |it: &crate::domain::pool::Item| it.quality.expect("synthetic judge needs quality");
        let x = |it: &crate::domain::pool::Item| it.covariates.get(&self.covariate).copied().unwrap_or(0.0);
        sigmoid((q(ia) - q(ib) + self.c_star * (x(ia) - x(ib)) + self.kappa_star) / self.temperature)
    }

    /// The keyed verdict on (a, b): 1 first wins, 0 second wins.
    pub fn outcome(&self, pool: &Pool, a: usize, b: usize) -> f64 {
        keyed_verdict(self.seed, &pool.items[a].id, &pool.items[b].id, 0, self.p_first(pool, a, b))
    }
}

impl JudgeInfo for SyntheticJudge {
    fn describe(&self) -> String {
        format!(
            "synthetic (c* {}, κ* {}, temperature {}, seed {})",
            self.c_star, self.kappa_star, self.temperature, self.seed
        )
    }

    fn cache_key(&self, pool: &Pool, a: usize, b: usize) -> String {
        let (ia, ib) = (&pool.items[a], &pool.items[b]);
        let payload =
            serde_json::json!({"judge": "synthetic", "cfg": self.cfg, "pool": pool.pool_id, "a": ia, "b": ib});
        rng::sha256_hex(&payload.to_string())
    }

    /// Free: every worst case is 0.
    fn worst_case_parts(&self, pool: &Pool) -> Option<crate::judge::WorstCaseParts> {
        let zero = vec![0.0; pool.n_items()];
        Some(crate::judge::WorstCaseParts { first: zero.clone(), second: zero })
    }
}

impl Judge for SyntheticJudge {
    fn judge<'a>(&'a self, pool: &'a Pool, a: usize, b: usize) -> BoxFuture<'a, Result<JudgeReply, JudgeError>> {
        Box::pin(async move {
            Ok(JudgeReply {
                y: Some(self.outcome(pool, a, b)),
                invalid_reason: None,
                raw: None,
                usage: Default::default(),
                cost_usd: 0.0,
                attempts: 1,
                latency_ms: 0,
                detail: Default::default(),
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::synth::{SynthSpec, generate};

    #[test]
    fn reproduces_the_synthetic_pools_own_verdicts() {
        for paired in [false, true] {
            let spec = SynthSpec { n: 8, rho: 0.3, c_star: 0.8, kappa_star: 0.5, temperature: 1.5, paired, seed: 11 };
            let s = generate(&spec);
            let mut cfg = SyntheticJudgeConfig::default();
            cfg.resolve(Some(&spec));
            cfg.check(&s.pool).unwrap();
            let j = SyntheticJudge::new(cfg).unwrap();
            let n = s.pool.n_items();
            for a in 0..n {
                for b in 0..n {
                    if a != b {
                        assert!((j.p_first(&s.pool, a, b) - s.p_first(a, b)).abs() < 1e-12);
                        assert_eq!(j.outcome(&s.pool, a, b), s.verdict(a, b));
                    }
                }
            }
        }
    }

    #[test]
    fn explicit_fields_win_over_the_pool_spec_and_bad_values_are_named() {
        let spec = SynthSpec { n: 4, rho: 0.0, c_star: 1.0, kappa_star: 0.5, temperature: 1.0, paired: false, seed: 2 };
        let mut cfg = SyntheticJudgeConfig { c_star: Some(0.0), kappa_star: Some(0.0), ..Default::default() };
        cfg.resolve(Some(&spec));
        assert_eq!((cfg.c_star, cfg.kappa_star, cfg.seed), (Some(0.0), Some(0.0), Some(2)));
        let e =
            SyntheticJudge::new(SyntheticJudgeConfig { temperature: Some(0.0), ..Default::default() }).err().unwrap().0;
        assert!(e.contains("temperature = 0"), "{e}");
    }
}

//! Synthetic pools and their true judge (docs/model.md §7).
//!
//! θ_m ~ N(0, 1); covariate x = ρθ + √(1 − ρ²)ε, ε ~ N(0, 1), then z-scored within the pool; the
//! true judge has η_ab = (θ_a − θ_b + c*(x_a − x_b) + κ*) / temperature and each ordered pair's
//! verdict is one Bernoulli draw keyed by (seed, a, b) as in docs/model.md §4.
//!
//! Paired design (docs/model.md §6): each base m gets two renderings, `terse` (x = 0) and `elaborated`
//! (x = 1), sharing θ_m.

use crate::domain::pool::{CovariateSpec, Covariates, Item, Pool, Transform};
use crate::domain::rng::{self, ChaCha8Rng};
use crate::domain::verdict::ItemVerdict;
use crate::model::bt::sigmoid;
use rand::SeedableRng;
use rand_distr::{Distribution, StandardNormal};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Parameters of a synthetic pool.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SynthSpec {
    /// Number of bases N (items: N, or 2N when paired).
    #[serde(deserialize_with = "crate::domain::serde_words::whole")]
    pub n: usize,
    /// ρ = corr(θ, x) before z-scoring (unpaired pools).
    #[serde(default)]
    pub rho: f64,
    /// True bias coefficient c* (logits per covariate unit).
    #[serde(default)]
    pub c_star: f64,
    /// True position effect κ* (logits).
    #[serde(default)]
    pub kappa_star: f64,
    /// Temperature dividing η (default 1).
    #[serde(default = "one")]
    pub temperature: f64,
    /// Two renderings per base (x = 0/1) instead of one item per base.
    #[serde(default)]
    pub paired: bool,
    /// Seed of θ, x and the verdict draws.
    #[serde(default, deserialize_with = "crate::domain::serde_words::whole")]
    pub seed: u64,
}

fn one() -> f64 {
    1.0
}

/// The largest synthetic pool: N = 100,000 bases. The pool alone is a few MB per thousand bases,
/// but a run keeps per-base vectors of every draw block (250 × N values) and N × N bitmaps of
/// asked pairs (1.25 GB at this N); larger pools would abort on memory instead of failing here.
pub const MAX_SYNTH_N: usize = 100_000;

impl SynthSpec {
    /// Check the ranges [`generate`] needs.
    ///
    /// # Errors
    /// A message naming the field, the value and what was expected.
    pub fn validate(&self) -> Result<(), crate::domain::invalid::InvalidInput> {
        if !(2..=MAX_SYNTH_N).contains(&self.n) {
            return Err(format!("n = {} must be in 2..={MAX_SYNTH_N}", self.n).into());
        }
        if self.rho.is_nan() || self.rho.abs() > 1.0 {
            return Err(format!("rho = {} must be in [-1, 1]", self.rho).into());
        }
        if !(self.temperature > 0.0 && self.temperature.is_finite()) {
            return Err(format!("temperature = {} must be > 0", self.temperature).into());
        }
        if !self.c_star.is_finite() || !self.kappa_star.is_finite() {
            let (k, v) =
                if self.c_star.is_finite() { ("kappa_star", self.kappa_star) } else { ("c_star", self.c_star) };
            return Err(format!("{k} = {v} must be finite").into());
        }
        Ok(())
    }
}

/// The keyed Bernoulli verdict of docs/model.md §4/§7 for the ordered items (a, b) with P(first wins) =
/// `p_first`: 1 when the uniform keyed by (seed, "verdict", id_a, id_b[, rep]) is below `p_first`,
/// else 0. Repetition 0 is the frozen-judge verdict; repetitions ≥ 1 are independent re-draws.
pub fn keyed_verdict(seed: u64, id_a: &str, id_b: &str, rep: usize, p_first: f64) -> f64 {
    let key = if rep == 0 {
        rng::key64(seed, &["verdict", id_a, id_b])
    } else {
        rng::key64(seed, &["verdict", id_a, id_b, &rep.to_string()])
    };
    if rng::keyed_uniform(key) < p_first { 1.0 } else { 0.0 }
}

/// A synthetic pool with its true parameters.
#[derive(Debug, Clone)]
pub struct SynthPool {
    /// The pool: items carry `quality` = θ (true) and covariate `x`.
    pub pool: Pool,
    /// True θ per base.
    pub theta: Vec<f64>,
    /// Covariate per item (as stored in the pool).
    pub x: Vec<f64>,
    /// The spec.
    pub spec: SynthSpec,
}

/// Generate a synthetic pool.
///
/// # Panics
/// If the spec is out of range (see [`SynthSpec::validate`]).
pub fn generate(spec: &SynthSpec) -> SynthPool {
    if let Err(e) = spec.validate() {
        panic!("invalid synthetic spec: {e}");
    }
    let mut r = ChaCha8Rng::seed_from_u64(rng::key64(spec.seed, &["synth"]));
    let mut normal = || -> f64 { StandardNormal.sample(&mut r) };
    let theta: Vec<f64> = (0..spec.n).map(|_| normal()).collect();
    let mut items = Vec::new();
    let mut x = Vec::new();
    if spec.paired {
        for (m, t) in theta.iter().enumerate() {
            for (rend, xv) in [("terse", 0.0), ("elaborated", 1.0)] {
                let mut cov = BTreeMap::new();
                cov.insert("x".to_string(), xv);
                items.push(Item {
                    id: format!("b{m:03}-{rend}"),
                    text: None,
                    quality: Some(*t),
                    covariates: cov,
                    base: Some(format!("b{m:03}")),
                    rendering: Some(rend.to_string()),
                    words: None,
                    human: None,
                    system: None,
                });
                x.push(xv);
            }
        }
    } else {
        let raw: Vec<f64> =
            theta.iter().map(|t| spec.rho * t + (1.0 - spec.rho * spec.rho).sqrt() * normal()).collect();
        let mean = raw.iter().sum::<f64>() / raw.len() as f64;
        let sd = (raw.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / raw.len() as f64).sqrt().max(1e-12);
        for (m, (t, v)) in theta.iter().zip(&raw).enumerate() {
            let xv = (v - mean) / sd;
            let mut cov = BTreeMap::new();
            cov.insert("x".to_string(), xv);
            items.push(Item {
                id: format!("i{m:03}"),
                text: None,
                quality: Some(*t),
                covariates: cov,
                base: None,
                rendering: None,
                words: None,
                human: None,
                system: None,
            });
            x.push(xv);
        }
    }
    let pool = Pool::new(format!("synth-{}", spec.seed), String::new(), items).expect("synthetic pools are valid");
    SynthPool { pool, theta, x, spec: *spec }
}

impl SynthPool {
    /// True P(first wins) for the ordered item pair (a, b).
    pub fn p_first(&self, a: usize, b: usize) -> f64 {
        let (i, j) = (self.pool.item_base[a], self.pool.item_base[b]);
        let s = &self.spec;
        sigmoid((self.theta[i] - self.theta[j] + s.c_star * (self.x[a] - self.x[b]) + s.kappa_star) / s.temperature)
    }

    /// The keyed Bernoulli verdict for (a, b): 1 first wins, 0 second wins.
    pub fn verdict(&self, a: usize, b: usize) -> f64 {
        self.verdict_rep(a, b, 0)
    }

    /// Repetition `rep` of the verdict on (a, b) (rep 0 = [`SynthPool::verdict`]); repetitions are
    /// independent draws, for "r× repeated comparisons" experiments.
    pub fn verdict_rep(&self, a: usize, b: usize, rep: usize) -> f64 {
        keyed_verdict(self.spec.seed, &self.pool.items[a].id, &self.pool.items[b].id, rep, self.p_first(a, b))
    }

    /// Every ordered pair of distinct items (a, b), including within-base pairs of a paired pool,
    /// judged `reps` times (repetitions 0..reps): "full data" with both orders of every pair.
    pub fn full_verdicts(&self, reps: usize) -> Vec<ItemVerdict> {
        let n = self.pool.n_items();
        let mut v = Vec::with_capacity(n * (n - 1) * reps);
        for a in 0..n {
            for b in 0..n {
                if a != b {
                    for rep in 0..reps {
                        v.push(ItemVerdict { a, b, y: self.verdict_rep(a, b, rep), w: 1.0 });
                    }
                }
            }
        }
        v
    }

    /// The covariate matrix of the pool's `x` column, untransformed (already z-scored, or 0/1
    /// for a paired pool).
    pub fn covariates(&self) -> Covariates {
        crate::domain::pool::build_covariates(
            &self.pool,
            &[CovariateSpec { name: "x".into(), transform: Some(Transform::Raw) }],
        )
        .expect("synthetic pools carry x on every item")
    }

    /// Gold top-k bases by true θ.
    pub fn gold_topk(&self, k: usize) -> Vec<usize> {
        crate::model::membership::point_topk(&self.theta, k)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pool_size_outside_2_to_the_largest_is_an_error_not_an_allocation() {
        let spec =
            |n| SynthSpec { n, rho: 0.0, c_star: 1.0, kappa_star: 0.5, temperature: 1.0, paired: false, seed: 1 };
        for n in [0, 1, MAX_SYNTH_N + 1, 5_000_000_000, usize::MAX] {
            let e = spec(n).validate().expect_err("out of range").to_string();
            assert_eq!(e, format!("n = {n} must be in 2..=100000"));
        }
        for n in [2, MAX_SYNTH_N] {
            assert!(spec(n).validate().is_ok());
        }
    }

    #[test]
    fn covariate_is_zscored_and_correlated() {
        let s = generate(&SynthSpec {
            n: 400,
            rho: 0.8,
            c_star: 1.0,
            kappa_star: 0.5,
            temperature: 1.0,
            paired: false,
            seed: 3,
        });
        let n = s.x.len() as f64;
        let mean = s.x.iter().sum::<f64>() / n;
        let var = s.x.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
        assert!(mean.abs() < 1e-12 && (var - 1.0).abs() < 1e-9);
        let tm = s.theta.iter().sum::<f64>() / n;
        let ts = (s.theta.iter().map(|t| (t - tm).powi(2)).sum::<f64>() / n).sqrt();
        let corr = s.theta.iter().zip(&s.x).map(|(t, x)| (t - tm) * x).sum::<f64>() / n / ts;
        assert!((corr - 0.8).abs() < 0.06, "corr {corr}");
        // Same ordered pair, same verdict.
        assert_eq!(s.verdict(3, 7), s.verdict(3, 7));
    }

    #[test]
    fn paired_pools_share_theta() {
        let s = generate(&SynthSpec {
            n: 5,
            rho: 0.0,
            c_star: 1.0,
            kappa_star: 0.0,
            temperature: 1.0,
            paired: true,
            seed: 1,
        });
        assert_eq!(s.pool.n_items(), 10);
        assert_eq!(s.pool.n_bases(), 5);
        // Within one base, only the covariate differs: η = c*(0 − 1).
        assert!((s.p_first(0, 1) - sigmoid(-1.0)).abs() < 1e-12);
    }
}

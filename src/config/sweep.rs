//! The sweep document (`topk-judge simulate SWEEP.yaml`, docs/experiments.md): a grid of
//! synthetic pools (docs/model.md §7) × strategies × models × budgets. The frozen protocol on
//! recordings and the pipelined-dispatch sweep have documents of their own ([`super::frozen`],
//! [`super::pipeline`]).
//!
//! ```yaml
//! name: sweep-rho            # outputs go to <out_dir>/<name>/
//! out_dir: ../runs/sweeps    # relative to the sweep file (default: runs/sweeps in the cwd)
//! k: 5
//! pools:                     # the grid: every combination of the lists below
//!   n: 30                    # bases per pool
//!   count: 200               # pools per grid cell (replicates)
//!   seed: 1                  # replicate i uses pool seed `seed + i` in every cell
//!   rho: [0.0, 0.2, 0.4]     # corr(θ, x)
//!   c_star: [1.0]            # true bias coefficient (logits per sd of x)
//!   kappa_star: [0.5]        # true position effect (logits)
//!   temperature: [1.0]
//!   paired: [false]          # two renderings (x = 0/1) per base
//! strategies: [topk, round_robin]
//! models: [naive, bias_aware]
//! budgets: [40, 120, all]    # comparisons, or `all` ordered pairs
//! acquisition: {orders: both, refit_every: 8, mc_draws: 1000}
//! prior: {lambda_theta: 1.0, lambda_b: 0.1, lambda_kappa: 0.01}
//! profile: false             # profile-likelihood range over c at every checkpoint
//! threads: 0                 # 0 = all cores
//! ```

use super::{ConfigError, sections};
use crate::acquire::{Orders, StrategyKind};
use crate::analysis::synth::SynthSpec;
use crate::domain::invalid::InvalidSetting;
use crate::model::Prior;
use crate::model::summary::ModelKind;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::{Path, PathBuf};

/// A budget: a number of comparisons, or every ordered pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SweepBudget {
    /// At most this many comparisons.
    Comparisons(usize),
    /// Every ordered pair of the pool.
    All,
}

impl SweepBudget {
    /// As a number of comparisons (`usize::MAX` for all pairs).
    pub fn as_usize(self) -> usize {
        match self {
            SweepBudget::Comparisons(n) => n,
            SweepBudget::All => usize::MAX,
        }
    }

    /// From a number of comparisons (`usize::MAX` = all pairs).
    pub fn from_usize(n: usize) -> Self {
        if n == usize::MAX { SweepBudget::All } else { SweepBudget::Comparisons(n) }
    }
}

impl fmt::Display for SweepBudget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SweepBudget::Comparisons(n) => write!(f, "{n}"),
            SweepBudget::All => f.write_str("all"),
        }
    }
}

impl Serialize for SweepBudget {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            SweepBudget::Comparisons(n) => s.serialize_u64(*n as u64),
            SweepBudget::All => s.serialize_str("all"),
        }
    }
}

impl<'de> Deserialize<'de> for SweepBudget {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = SweepBudget;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a positive number of comparisons or \"all\"")
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<SweepBudget, E> {
                if v == 0 {
                    return Err(E::custom("budget 0: expected a positive number of comparisons or \"all\""));
                }
                Ok(SweepBudget::Comparisons(v as usize))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<SweepBudget, E> {
                if v <= 0 {
                    return Err(E::custom(format!("budget {v}: expected a positive number of comparisons or \"all\"")));
                }
                self.visit_u64(v as u64)
            }
            /// A whole number written as a float (`20.0`, `2e1`) is that number, as for every
            /// count of a config.
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<SweepBudget, E> {
                if let Some(n) = crate::domain::serde_words::whole_float(v).filter(|&n| n >= 1) {
                    return self.visit_u64(n);
                }
                Err(E::custom(format!("budget {v}: expected a whole number of comparisons (≥ 1) or \"all\"")))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<SweepBudget, E> {
                if v == "all" {
                    Ok(SweepBudget::All)
                } else if let Ok(n) = v.trim().parse::<u64>() {
                    self.visit_u64(n)
                } else if let Some(x) = v.trim().parse::<f64>().ok().filter(|x| x.is_finite()) {
                    self.visit_f64(x)
                } else {
                    Err(E::custom(format!("budget {v:?}: expected a positive number of comparisons or \"all\"")))
                }
            }
        }
        d.deserialize_any(V)
    }
}

/// The grid of synthetic pools (docs/model.md §7).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PoolGrid {
    /// Bases per pool, N (default 30).
    #[serde(default = "d_n", deserialize_with = "crate::domain::serde_words::whole")]
    pub n: usize,
    /// Pools per grid cell (default 200).
    #[serde(deserialize_with = "crate::domain::serde_words::at_least_one", default = "d_count")]
    pub count: usize,
    /// Replicate i uses pool seed `seed + i` (default 0).
    #[serde(default, deserialize_with = "crate::domain::serde_words::whole")]
    pub seed: u64,
    /// corr(θ, x) values (default `[0]`).
    #[serde(default = "d_rho")]
    pub rho: Vec<f64>,
    /// True bias coefficients c* (default `[1]`).
    #[serde(default = "d_one")]
    pub c_star: Vec<f64>,
    /// True position effects κ* (default `[0.5]`).
    #[serde(default = "d_kappa")]
    pub kappa_star: Vec<f64>,
    /// Temperatures (default `[1]`).
    #[serde(default = "d_one")]
    pub temperature: Vec<f64>,
    /// Paired design or not (default `[false]`).
    #[serde(default = "d_paired")]
    pub paired: Vec<bool>,
}

fn d_n() -> usize {
    30
}
fn d_count() -> usize {
    200
}
fn d_rho() -> Vec<f64> {
    vec![0.0]
}
fn d_one() -> Vec<f64> {
    vec![1.0]
}
fn d_kappa() -> Vec<f64> {
    vec![0.5]
}
fn d_paired() -> Vec<bool> {
    vec![false]
}

impl Default for PoolGrid {
    fn default() -> Self {
        Self {
            n: d_n(),
            count: d_count(),
            seed: 0,
            rho: d_rho(),
            c_star: d_one(),
            kappa_star: d_kappa(),
            temperature: d_one(),
            paired: d_paired(),
        }
    }
}

/// Acquisition settings of a sweep (docs/model.md §3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepAcquisition {
    /// `both` (default) or `single`.
    #[serde(default)]
    pub orders: Orders,
    /// Queries per refit, R (default 8).
    #[serde(
        deserialize_with = "crate::domain::serde_words::at_least_one",
        default = "crate::model::params::default_refit_every"
    )]
    pub refit_every: usize,
    /// Monte-Carlo draws for top-k membership (default 1000).
    #[serde(
        deserialize_with = "crate::domain::serde_words::at_least_one",
        default = "crate::model::params::default_mc_draws"
    )]
    pub mc_draws: usize,
}

impl Default for SweepAcquisition {
    fn default() -> Self {
        Self {
            orders: Orders::Both,
            refit_every: crate::model::params::DEFAULT_REFIT_EVERY,
            mc_draws: crate::model::params::DEFAULT_MC_DRAWS,
        }
    }
}

fn d_k() -> usize {
    5
}
fn d_strategies() -> Vec<StrategyKind> {
    vec![StrategyKind::Topk]
}
fn d_models() -> Vec<ModelKind> {
    vec![ModelKind::BiasAware]
}

/// A sweep file as written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSweep {
    /// Sweep name: outputs go to `<out_dir>/<name>/`.
    pub name: String,
    /// Output folder, relative to the sweep file (default `runs/sweeps` in the working directory).
    #[serde(default)]
    pub out_dir: Option<PathBuf>,
    /// k of top-k (default 5).
    #[serde(deserialize_with = "crate::domain::serde_words::at_least_one", default = "d_k")]
    pub k: usize,
    /// The pool grid.
    #[serde(default)]
    pub pools: PoolGrid,
    /// Strategies (default `[topk]`).
    #[serde(default = "d_strategies")]
    pub strategies: Vec<StrategyKind>,
    /// Models (default `[bias_aware]`).
    #[serde(default = "d_models")]
    pub models: Vec<ModelKind>,
    /// Budgets: comparisons or `all`.
    pub budgets: Vec<SweepBudget>,
    /// Acquisition settings.
    #[serde(default)]
    pub acquisition: SweepAcquisition,
    /// Prior precisions (docs/model.md §2); missing keys take the defaults.
    #[serde(default)]
    pub prior: Prior,
    /// Compute the profile-likelihood range over c at every checkpoint (bias-aware model).
    #[serde(default)]
    pub profile: bool,
    /// Worker threads (0 = all cores).
    #[serde(default, deserialize_with = "crate::domain::serde_words::whole")]
    pub threads: usize,
}

/// A validated sweep.
#[derive(Debug, Clone)]
pub struct Sweep {
    /// As written (deduplicated, sorted budgets).
    pub raw: RawSweep,
    /// The sweep's YAML file; relative paths in it are resolved against its folder.
    pub path: PathBuf,
    /// Output folder, `<out_dir>/<name>`.
    pub out_dir: PathBuf,
}

impl Sweep {
    /// Read, parse and validate a sweep file.
    ///
    /// # Errors
    /// [`ConfigError`] naming the file, key or line and what was expected.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        Self::from_raw(super::read_document(path)?, path)
    }

    /// Validate a parsed sweep; `out_dir` resolves against `path`'s folder.
    ///
    /// # Errors
    /// [`ConfigError::Invalid`] naming the key.
    pub fn from_raw(mut raw: RawSweep, path: &Path) -> Result<Self, ConfigError> {
        let inv = |e: InvalidSetting| ConfigError::invalid(path, e);
        sections::check_name(&raw.name, "sweep").map_err(inv)?;
        check_grid(&raw.pools).map_err(inv)?;
        let g = &raw.pools;
        sections::check_k(raw.k, g.n, &format!("pools.n ({})", g.n)).map_err(inv)?;
        sections::check_nonempty(&[
            ("strategies", raw.strategies.is_empty()),
            ("models", raw.models.is_empty()),
            ("budgets", raw.budgets.is_empty()),
        ])
        .map_err(inv)?;
        sections::check_cadence(raw.acquisition.refit_every, raw.acquisition.mc_draws, "acquisition").map_err(inv)?;
        sections::check_prior(&raw.prior, "prior").map_err(inv)?;
        sections::check_distinct("strategies", &raw.strategies, sections::as_written).map_err(inv)?;
        sections::check_distinct("models", &raw.models, sections::as_written).map_err(inv)?;
        sections::check_distinct("budgets", &raw.budgets, ToString::to_string).map_err(inv)?;
        raw.budgets.sort();
        // A budget of at least every ordered pair asks them all: two such are one setting.
        let n = g.n;
        let most = if g.paired.contains(&true) { 4 * n * n - 2 * n } else { n * (n - 1) };
        let as_all: Vec<String> =
            raw.budgets.iter().filter(|b| b.as_usize() >= most).map(ToString::to_string).collect();
        if as_all.len() > 1 {
            return Err(inv(InvalidSetting::new(
                "budgets",
                format!(
                    "{} are one setting here: a budget of at least every ordered pair ({most} at pools.n = {n}{}) asks them all, so each would run the same runs and count them again; list one",
                    as_all.join(" and "),
                    if g.paired.contains(&true) { ", paired" } else { "" }
                ),
            )));
        }
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let out_dir = sections::out_folder(&dir, raw.out_dir.as_deref(), &raw.name, "runs/sweeps").map_err(inv)?;
        Ok(Self { raw, path: path.to_owned(), out_dir })
    }

    /// The grid cells in a fixed order (ρ slowest … paired fastest).
    pub fn cells(&self) -> Vec<Cell> {
        let g = &self.raw.pools;
        let mut v = Vec::new();
        for &rho in &g.rho {
            for &c_star in &g.c_star {
                for &kappa_star in &g.kappa_star {
                    for &temperature in &g.temperature {
                        for &paired in &g.paired {
                            v.push(Cell { n: g.n, rho, c_star, kappa_star, temperature, paired });
                        }
                    }
                }
            }
        }
        v
    }
}

/// `pools:`: N in 2..=the largest synthetic pool, at least one pool per cell, every list
/// non-empty, ρ in [-1, 1], temperatures > 0, c* and κ* finite.
fn check_grid(g: &PoolGrid) -> Result<(), InvalidSetting> {
    let max = crate::analysis::synth::MAX_SYNTH_N;
    if !(2..=max).contains(&g.n) {
        return Err(InvalidSetting::new(
            "pools.n",
            format!("{} must be in 2..={max} (the largest synthetic pool)", g.n),
        ));
    }
    if g.count == 0 {
        return Err(InvalidSetting::new("pools.count", "0 must be ≥ 1"));
    }
    sections::check_seed_range(g.seed, g.count, "pools.seed")?;
    sections::check_nonempty(&[
        ("pools.rho", g.rho.is_empty()),
        ("pools.c_star", g.c_star.is_empty()),
        ("pools.kappa_star", g.kappa_star.is_empty()),
        ("pools.temperature", g.temperature.is_empty()),
        ("pools.paired", g.paired.is_empty()),
    ])?;
    for (key, v) in [
        ("pools.rho", &g.rho),
        ("pools.c_star", &g.c_star),
        ("pools.kappa_star", &g.kappa_star),
        ("pools.temperature", &g.temperature),
    ] {
        sections::check_distinct(key, v, ToString::to_string)?;
    }
    sections::check_distinct("pools.paired", &g.paired, ToString::to_string)?;
    if let Some(r) = g.rho.iter().find(|r| r.is_nan() || r.abs() > 1.0) {
        return Err(InvalidSetting::new("pools.rho", format!("{r} must be in [-1, 1]")));
    }
    if let Some(t) = g.temperature.iter().find(|t| !(**t > 0.0 && t.is_finite())) {
        return Err(InvalidSetting::new("pools.temperature", format!("{t} must be > 0")));
    }
    for (key, v) in [("pools.c_star", &g.c_star), ("pools.kappa_star", &g.kappa_star)] {
        if let Some(x) = v.iter().find(|x| !x.is_finite()) {
            return Err(InvalidSetting::new(key, format!("{x} must be finite")));
        }
    }
    Ok(())
}

/// One cell of the pool grid.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Cell {
    /// Number of bases M per synthetic pool.
    #[serde(deserialize_with = "crate::domain::serde_words::whole")]
    pub n: usize,
    /// corr(θ, x).
    pub rho: f64,
    /// True c*.
    pub c_star: f64,
    /// True κ*.
    pub kappa_star: f64,
    /// Temperature of the true judge: η is divided by it (logit scale).
    pub temperature: f64,
    /// Whether each base has two renderings sharing θ, asked within-base first (docs/model.md §6).
    pub paired: bool,
}

impl Cell {
    /// The synthetic pool spec of replicate seed `seed`.
    pub fn spec(&self, seed: u64) -> SynthSpec {
        SynthSpec {
            n: self.n,
            rho: self.rho,
            c_star: self.c_star,
            kappa_star: self.kappa_star,
            temperature: self.temperature,
            paired: self.paired,
            seed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::SweepBudget;

    /// The last pool seed is at most 2⁶⁴ − 1: one past it is refused, at it is fine.
    #[test]
    fn pool_seeds_do_not_wrap_round() {
        let check = crate::config::sections::check_seed_range;
        assert!(check(u64::MAX - 2, 3, "pools.seed").is_ok());
        let e = check(u64::MAX - 1, 3, "pools.seed").unwrap_err().to_string();
        assert!(
            e.contains("pools.seed: 18446744073709551614 + 2 more pools passes the largest seed")
                && e.contains("at most 18446744073709551613"),
            "{e}"
        );
        assert!(check(u64::MAX, 1, "pools.seed").is_ok());
    }

    /// A budget of a sweep is read as every count of a config is: `20.0`, `2e1` and `"20"` are
    /// 20 comparisons (`20.0` was refused as "budget 20: expected a whole number").
    #[test]
    fn a_budget_written_as_a_whole_float_is_that_number() {
        let read = |y: &str| crate::store::yaml::from_str::<Vec<SweepBudget>>(y);
        let b = read("[20, 20.0, 2e1, \"20\", '2e1', all]").unwrap();
        assert_eq!(&b[..5], &[SweepBudget::Comparisons(20); 5]);
        assert_eq!(b[5], SweepBudget::All);
        for (v, found) in [("2.5", "budget 2.5"), ("0", "budget 0"), ("-3", "budget -3"), ("0.0", "budget 0")] {
            let e = read(&format!("[{v}]")).unwrap_err().to_string();
            assert!(e.contains(found), "{v}: {e}");
        }
    }
}

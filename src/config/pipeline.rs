//! The pipelined-dispatch sweep document (a `simulate` file with a top-level `pipeline:`
//! section; docs/experiments.md, "Pipelined acquisition"): synthetic pools, budgets, the judge's
//! latency and the dispatch settings to compare (the first is the reference).

use super::run::Dispatch;
use super::{ConfigError, sections};
use crate::acquire::StrategyKind;
use crate::domain::invalid::InvalidSetting;
use crate::model::summary::ModelKind;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The longest simulated latency of one request (mean or sd), seconds: an hour.
pub const MAX_LATENCY_S: f64 = 3600.0;

/// A judge's reply latency, seconds: normal with this mean and standard deviation, cut at 0.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Latency {
    /// Mean latency, seconds (> 0).
    pub mean_s: f64,
    /// Standard deviation, seconds (≥ 0).
    pub sd_s: f64,
}

/// The synthetic pools of the sweep (docs/model.md §7): one setting, `count` replicates.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pools {
    /// Bases per pool, N.
    #[serde(deserialize_with = "crate::domain::serde_words::whole")]
    pub n: usize,
    /// Pools; replicate i uses pool seed `seed + i`.
    #[serde(deserialize_with = "crate::domain::serde_words::at_least_one")]
    pub count: usize,
    /// Seed of the first pool.
    #[serde(default, deserialize_with = "crate::domain::serde_words::whole")]
    pub seed: u64,
    /// corr(θ, x).
    pub rho: f64,
    /// True bias coefficient c*.
    pub c_star: f64,
    /// True position effect κ*.
    pub kappa_star: f64,
}

/// One dispatch setting.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Variant {
    /// Queries in flight at most, C ≥ 1 (not set for `batch`, whose rounds go out whole).
    #[serde(deserialize_with = "crate::domain::serde_words::at_least_one", default)]
    pub concurrency: usize,
    /// `wait_for_batch`, `pipelined`, or `batch` (rounds of `round_size` at the batch price,
    /// `pipeline.batch_discount`).
    pub dispatch: Dispatch,
    /// `batch`: queries per round (one provider batch job; the model refits after each).
    #[serde(
        deserialize_with = "crate::domain::serde_words::opt_at_least_one",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub round_size: Option<usize>,
    /// Pipelined: picks made ahead of a free slot (default 0, at most `concurrency`, as in
    /// `topk-judge run`).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::domain::serde_words::opt_whole"
    )]
    pub write_ahead: Option<usize>,
}

/// The `pipeline:` section: the judge's latency and the dispatch settings (the first one is the
/// reference of the paired differences).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PipelineSection {
    /// Reply latency of the simulated judge, seconds.
    pub latency: Latency,
    /// Dispatch settings, reference first.
    pub runs: Vec<Variant>,
    /// Share of the price a `batch` setting's queries save (default 0.5): spend is counted in
    /// live queries, a batch query at 1 − this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_discount: Option<f64>,
}

impl Variant {
    /// The setting as a flow mapping of its given fields (`{dispatch: batch, round_size: 16}`).
    pub fn as_written(&self) -> String {
        let v = serde_json::to_value(self).expect("serialisable");
        let fields: Vec<String> = v
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(k, x)| !(x.is_null() || (k.as_str() == "concurrency" && x.as_u64() == Some(0))))
            .map(|(k, x)| format!("{k}: {}", x.as_str().map_or_else(|| x.to_string(), str::to_string)))
            .collect();
        format!("{{{}}}", fields.join(", "))
    }

    /// R and C of the simulated dispatch: a batch round is a wait-for-batch round of
    /// `round_size` all sent at once; the others use the sweep's `refit_every`.
    pub fn cadence(&self, refit_every: usize) -> (usize, usize, Dispatch) {
        match (self.dispatch, self.round_size) {
            (Dispatch::Batch, Some(r)) => (r, r, Dispatch::WaitForBatch),
            (d, _) => (refit_every, self.concurrency, d),
        }
    }
}

impl PipelineSection {
    /// What a query of setting `v` costs in live queries.
    pub fn price_factor(&self, v: &Variant) -> f64 {
        if v.dispatch == Dispatch::Batch { 1.0 - self.batch_discount.unwrap_or(0.5) } else { 1.0 }
    }
}

/// A pipelined-acquisition sweep file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PipelineSweep {
    /// Output folder name under `out_dir`.
    pub name: String,
    /// Output root, relative to the file's folder.
    pub out_dir: PathBuf,
    /// k of top-k.
    #[serde(deserialize_with = "crate::domain::serde_words::at_least_one")]
    pub k: usize,
    /// The pools.
    pub pools: Pools,
    /// Acquisition strategy (default `topk`).
    #[serde(default = "d_strategy")]
    pub strategy: StrategyKind,
    /// Model (default `bias_aware`).
    #[serde(default = "d_model")]
    pub model: ModelKind,
    /// Budgets B (comparisons), each a separate run.
    #[serde(deserialize_with = "crate::domain::serde_words::each_at_least_one")]
    pub budgets: Vec<usize>,
    /// R: refit after this many stored verdicts.
    #[serde(deserialize_with = "crate::domain::serde_words::at_least_one")]
    pub refit_every: usize,
    /// Monte-Carlo draws for top-k membership.
    #[serde(deserialize_with = "crate::domain::serde_words::at_least_one")]
    pub mc_draws: usize,
    /// Latency and dispatch settings.
    pub pipeline: PipelineSection,
    /// Worker threads (0 = all cores).
    #[serde(default, deserialize_with = "crate::domain::serde_words::whole")]
    pub threads: usize,
}

fn d_strategy() -> StrategyKind {
    StrategyKind::Topk
}
fn d_model() -> ModelKind {
    ModelKind::BiasAware
}

/// Whether a `simulate` file is a pipelined-acquisition sweep (a top-level `pipeline:` key).
pub fn is_pipeline(text: &str) -> bool {
    text.lines().any(|l| l.starts_with("pipeline:"))
}

impl PipelineSweep {
    /// Read and check a sweep file.
    ///
    /// # Errors
    /// [`ConfigError`]: unreadable, not YAML, an unknown key (file, line, key), or a
    /// value out of range (the key and what was expected).
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let s: PipelineSweep = super::read_document(path)?;
        let inv = |e: InvalidSetting| ConfigError::invalid(path, e);
        let bad = |key: &str, msg: &str| inv(InvalidSetting::new(key, msg));
        sections::check_name(&s.name, "sweep").map_err(inv)?;
        sections::out_folder(Path::new("."), Some(&s.out_dir), &s.name, "runs/sweeps").map_err(inv)?;
        sections::check_k(s.k, s.pools.n, &format!("pools.n ({})", s.pools.n)).map_err(inv)?;
        if s.pools.count == 0 {
            return Err(bad("pools.count", "0 must be ≥ 1"));
        }
        sections::check_seed_range(s.pools.seed, s.pools.count, "pools.seed").map_err(inv)?;
        if s.budgets.is_empty() || s.budgets.contains(&0) {
            return Err(bad("budgets", "must list at least one budget, each ≥ 1"));
        }
        sections::check_distinct("budgets", &s.budgets, ToString::to_string).map_err(inv)?;
        sections::check_cadence(s.refit_every, s.mc_draws, "").map_err(inv)?;
        // Seconds per simulated request: positive, finite and at most an hour (a larger one is
        // a typo, and made the virtual wall time infinite).
        let l = s.pipeline.latency;
        for (key, v, ok) in
            [("pipeline.latency.mean_s", l.mean_s, l.mean_s > 0.0), ("pipeline.latency.sd_s", l.sd_s, l.sd_s >= 0.0)]
        {
            if !(ok && v.is_finite() && v <= MAX_LATENCY_S) {
                return Err(inv(InvalidSetting::new(
                    key,
                    format!(
                        "{} must be {} and at most {MAX_LATENCY_S} (seconds per request; an hour): a typo?",
                        if v.abs() >= 1e6 { format!("{v:e}") } else { v.to_string() },
                        if key.ends_with("mean_s") { "> 0" } else { "≥ 0" }
                    ),
                )));
            }
        }
        if s.pipeline.runs.is_empty() {
            return Err(bad("pipeline.runs", "must list at least one run"));
        }
        let runs = &s.pipeline.runs;
        if let Some(i) = (0..runs.len()).find(|&i| runs[..i].contains(&runs[i])) {
            let first = runs.iter().position(|v| *v == runs[i]).expect("found before i");
            return Err(bad(
                &format!("pipeline.runs[{i}]"),
                &format!(
                    "{} is the setting of pipeline.runs[{first}] again: each setting is run once (a repeat would run it again and print its row twice)",
                    runs[i].as_written()
                ),
            ));
        }
        if let Some(d) = s.pipeline.batch_discount
            && !(0.0..1.0).contains(&d)
        {
            return Err(bad("pipeline.batch_discount", &format!("{d} must be in [0, 1)")));
        }
        for (i, v) in s.pipeline.runs.iter().enumerate() {
            let key = |k: &str| format!("pipeline.runs[{i}].{k}");
            match (v.dispatch, v.round_size, v.concurrency) {
                (Dispatch::Batch, None | Some(0), _) => {
                    return Err(inv(InvalidSetting::new(
                        key("round_size"),
                        "batch needs round_size ≥ 1 (queries per round)",
                    )));
                }
                (Dispatch::Batch, _, 0) => {}
                (Dispatch::Batch, _, _) => {
                    return Err(inv(InvalidSetting::new(
                        key("concurrency"),
                        "not for batch: a round goes out whole (set round_size)",
                    )));
                }
                (_, Some(_), _) => {
                    return Err(inv(InvalidSetting::new(key("round_size"), "applies to dispatch: batch only")));
                }
                (_, None, 0) => {
                    return Err(inv(InvalidSetting::new(
                        key("concurrency"),
                        "must be ≥ 1 (queries in flight at most)",
                    )));
                }
                _ => {}
            }
            v.dispatch
                .check_write_ahead(v.write_ahead, v.concurrency)
                .map_err(|e| inv(InvalidSetting::new(format!("pipeline.runs[{i}].write_ahead"), e)))?;
        }
        Ok(s)
    }

    /// The output folder: `out_dir`/`name` next to the file at `path` (`~` and `${VAR}` in
    /// `out_dir` expanded; [`PipelineSweep::load`] checked that they can be).
    pub fn out_folder(&self, path: &Path) -> PathBuf {
        let dir = path.parent().unwrap_or(Path::new("."));
        sections::out_folder(dir, Some(&self.out_dir), &self.name, "runs/sweeps")
            .unwrap_or_else(|_| dir.join(&self.out_dir).join(&self.name))
    }
}

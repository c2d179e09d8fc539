//! The judge-panel experiment document (a `simulate` file with a top-level `panel:` section;
//! docs/experiments.md, "A judge panel"): pools (a pool file with gold `quality`, or synthetic
//! pools), the judges (mock judges with prices, one optionally trusted), seeds and the spend
//! checkpoints at which each arm's recall@k is read.

use super::{ConfigError, sections};
use crate::domain::invalid::InvalidSetting;
use crate::judge::mock::MockConfig;
use crate::model::Prior;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Synthetic pools for the panel experiment: quality = 3 + `quality_sd`·θ, θ ~ N(0, 1); words =
/// round(`words_mean` + `words_sd`·x), x = ρθ + √(1 − ρ²)ε z-scored (docs/model.md §7), at
/// least 1; a task of `task_words` words (it sets the tokens, so the price, of every query).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SynthPanelPools {
    /// Items per pool N (one per base).
    #[serde(deserialize_with = "crate::domain::serde_words::whole")]
    pub n: usize,
    /// Pools.
    #[serde(deserialize_with = "crate::domain::serde_words::at_least_one")]
    pub count: usize,
    /// Seed of the first pool (pool i uses `seed + i`).
    #[serde(default, deserialize_with = "crate::domain::serde_words::whole")]
    pub seed: u64,
    /// corr(θ, words) before z-scoring.
    #[serde(default)]
    pub rho: f64,
    /// Quality sd per unit θ (default 0.5, SummEval's within-pool sd on its 1–5 scale).
    #[serde(default = "d_quality_sd")]
    pub quality_sd: f64,
    /// Mean words per answer (default 60).
    #[serde(default = "d_words_mean")]
    pub words_mean: f64,
    /// Sd of words (default 17, SummEval's within-pool sd).
    #[serde(default = "d_words_sd")]
    pub words_sd: f64,
    /// Words of the task every query shows (default 400).
    #[serde(default = "d_task_words", deserialize_with = "crate::domain::serde_words::whole")]
    pub task_words: usize,
}

fn d_quality_sd() -> f64 {
    0.5
}
fn d_words_mean() -> f64 {
    60.0
}
fn d_words_sd() -> f64 {
    17.0
}
fn d_task_words() -> usize {
    400
}

/// Where the pools come from: exactly one of `file` or `synthetic`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PanelPools {
    /// A pool file (one pool per line, items with gold `quality` and text), relative to the
    /// experiment file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<PathBuf>,
    /// Use the first this many pools of the file (default all).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::domain::serde_words::opt_whole"
    )]
    pub limit: Option<usize>,
    /// Synthetic pools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub synthetic: Option<SynthPanelPools>,
}

/// One judge of the panel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PanelJudgeSpec {
    /// Name (rows, tables, plots).
    pub name: String,
    /// Its verdicts are free of item-level bias (no c_j; the reference judge of the model).
    #[serde(default)]
    pub trusted: bool,
    /// The mock judge (its `seed` is replaced by one derived from the replicate seed and the
    /// judge's place, so judges draw independent verdicts).
    pub mock: MockConfig,
}

/// The `panel:` section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PanelSection {
    /// The judges, at least two names, at most one trusted.
    pub judges: Vec<PanelJudgeSpec>,
    /// Trusted anchors of the "gate" arm per seed, spread over all pools (default 40).
    #[serde(default = "d_anchors", deserialize_with = "crate::domain::serde_words::whole")]
    pub gate_anchors: usize,
    /// Level α of the gate's sign test (default 0.05).
    #[serde(default = "d_alpha")]
    pub alpha: f64,
    /// Panel spend is compared with a single judge's at this multiple of it (default 5).
    #[serde(default = "d_multiple")]
    pub compare_multiple: f64,
    /// Pairs per seed, spread over all pools and asked of every judge in both orders, from
    /// which each judge's κ_j and c_j are learned and carried into every pool's panel as its
    /// prior (the "panel+carried" arm; their cost shared by the pools). 0 (default): no such arm.
    #[serde(default, deserialize_with = "crate::domain::serde_words::whole")]
    pub prior_anchors: usize,
}

fn d_anchors() -> usize {
    40
}
fn d_alpha() -> f64 {
    0.05
}
fn d_multiple() -> f64 {
    5.0
}

/// A judge-panel experiment file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PanelSweep {
    /// Output folder name under `out_dir`.
    pub name: String,
    /// Output root, relative to the file's folder.
    pub out_dir: PathBuf,
    /// k of top-k.
    #[serde(deserialize_with = "crate::domain::serde_words::at_least_one")]
    pub k: usize,
    /// The pools.
    pub pools: PanelPools,
    /// Replicate seeds (acquisition, Monte Carlo, and the judges' verdict draws).
    pub seeds: Vec<u64>,
    /// Spend checkpoints per pool (USD), increasing.
    pub spend_usd: Vec<f64>,
    /// R: refit after this many verdicts (default 8).
    #[serde(deserialize_with = "crate::domain::serde_words::at_least_one", default = "d_refit")]
    pub refit_every: usize,
    /// Monte-Carlo draws for top-k membership (default 1000).
    #[serde(deserialize_with = "crate::domain::serde_words::at_least_one", default = "d_mc")]
    pub mc_draws: usize,
    /// Prior precisions.
    #[serde(default)]
    pub prior: Prior,
    /// The panel.
    pub panel: PanelSection,
    /// Worker threads (0 = all cores).
    #[serde(default, deserialize_with = "crate::domain::serde_words::whole")]
    pub threads: usize,
}

fn d_refit() -> usize {
    crate::model::params::DEFAULT_REFIT_EVERY
}
fn d_mc() -> usize {
    crate::model::params::DEFAULT_MC_DRAWS
}

/// Whether a `simulate` file is a judge-panel experiment (a top-level `panel:` key).
pub fn is_panel(text: &str) -> bool {
    text.lines().any(|l| l.starts_with("panel:"))
}

impl PanelSweep {
    /// Read and check the file.
    ///
    /// # Errors
    /// [`ConfigError`] naming the file, line or key and what was expected.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let s: PanelSweep = super::read_document(path)?;
        let inv = |e: InvalidSetting| ConfigError::invalid(path, e);
        let bad = |key: &str, msg: String| inv(InvalidSetting::new(key, msg));
        sections::check_name(&s.name, "experiment").map_err(inv)?;
        sections::out_folder(Path::new("."), Some(&s.out_dir), &s.name, "runs/sweeps").map_err(inv)?;
        sections::check_prior(&s.prior, "prior").map_err(inv)?;
        sections::check_cadence(s.refit_every, s.mc_draws, "").map_err(inv)?;
        match (&s.pools.file, &s.pools.synthetic) {
            (Some(_), None) => {}
            (None, Some(sp)) => {
                if sp.count == 0 {
                    return Err(bad("pools.synthetic.count", "0 must be ≥ 1".into()));
                }
                sections::check_seed_range(sp.seed, sp.count, "pools.synthetic.seed").map_err(inv)?;
                sections::check_k(s.k, sp.n, &format!("pools.synthetic.n ({})", sp.n)).map_err(inv)?;
                if sp.rho.is_nan() || sp.rho.abs() >= 1.0 {
                    return Err(bad("pools.synthetic.rho", format!("{} must be in (−1, 1)", sp.rho)));
                }
                for (k, v) in [("quality_sd", sp.quality_sd), ("words_mean", sp.words_mean), ("words_sd", sp.words_sd)]
                {
                    if !(v >= 0.0 && v.is_finite()) {
                        return Err(bad(&format!("pools.synthetic.{k}"), format!("{v} must be ≥ 0")));
                    }
                }
            }
            _ => return Err(bad("pools", "give exactly one of file or synthetic".into())),
        }
        if s.seeds.is_empty() {
            return Err(bad("seeds", "must list at least one seed".into()));
        }
        super::sections::check_distinct("seeds", &s.seeds, ToString::to_string)
            .map_err(|e| ConfigError::invalid(path, e))?;
        if s.spend_usd.is_empty()
            || s.spend_usd.iter().any(|v| !(*v > 0.0 && v.is_finite()))
            || s.spend_usd.windows(2).any(|w| w[0] >= w[1])
        {
            return Err(bad(
                "spend_usd",
                format!("{:?}: must list increasing, finite amounts > 0 (USD per pool)", s.spend_usd),
            ));
        }
        let j = &s.panel.judges;
        if j.is_empty() {
            return Err(bad("panel.judges", "must list at least one judge".into()));
        }
        if j.iter().filter(|x| x.trusted).count() > 1 {
            return Err(bad("panel.judges", "at most one judge may be trusted".into()));
        }
        for (i, x) in j.iter().enumerate() {
            sections::check_name(&x.name, "judge")
                .map_err(|e| bad(&format!("panel.judges[{i}].name"), e.to_string()))?;
            if j[..i].iter().any(|y| y.name == x.name) {
                return Err(bad(&format!("panel.judges[{i}].name"), format!("{:?} is used twice", x.name)));
            }
            crate::judge::mock::MockJudge::new(x.mock.clone())
                .map_err(|e| bad(&format!("panel.judges[{i}].mock"), e.to_string()))?;
            if x.mock.input_usd_per_mtok.is_none() && x.mock.output_usd_per_mtok.is_none() {
                return Err(bad(
                    &format!("panel.judges[{i}].mock"),
                    "needs a price (input_usd_per_mtok, output_usd_per_mtok): the panel routes by value per dollar"
                        .into(),
                ));
            }
        }
        if !(0.0 < s.panel.alpha && s.panel.alpha < 1.0) {
            return Err(bad("panel.alpha", format!("{} must be in (0, 1)", s.panel.alpha)));
        }
        if !(s.panel.compare_multiple >= 1.0 && s.panel.compare_multiple.is_finite()) {
            return Err(bad("panel.compare_multiple", format!("{} must be ≥ 1", s.panel.compare_multiple)));
        }
        if s.panel.prior_anchors > 0 && j.len() < 2 {
            return Err(bad(
                "panel.prior_anchors",
                format!(
                    "{} prior anchors need at least two judges: a judge's carried bias is learned against the others",
                    s.panel.prior_anchors
                ),
            ));
        }
        Ok(s)
    }

    /// The output folder: `out_dir`/`name` next to the file at `path`.
    pub fn out_folder(&self, path: &Path) -> PathBuf {
        let dir = path.parent().unwrap_or(Path::new("."));
        sections::out_folder(dir, Some(&self.out_dir), &self.name, "runs/sweeps")
            .unwrap_or_else(|_| dir.join(&self.out_dir).join(&self.name))
    }

    /// The pool file, resolved against the folder of the file at `path`.
    pub fn pool_file(&self, path: &Path) -> Option<PathBuf> {
        let dir = path.parent().unwrap_or(Path::new("."));
        self.pools.file.as_ref().map(|f| dir.join(f))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(yaml: &str) -> Result<PanelSweep, String> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.yaml");
        std::fs::write(&path, yaml).unwrap();
        PanelSweep::load(&path).map_err(|e| e.to_string())
    }

    const OK: &str = "name: t\nout_dir: runs\nk: 2\npools:\n  synthetic: {n: 8, count: 2}\nseeds: [1]\nspend_usd: [0.01]\npanel:\n  judges:\n    - {name: a, mock: {input_usd_per_mtok: 0.1}}\n    - {name: b, trusted: true, mock: {input_usd_per_mtok: 1.0}}\n";

    #[test]
    fn a_valid_file_loads_and_is_told_apart() {
        let s = load(OK).unwrap();
        assert_eq!(s.panel.judges.len(), 2);
        assert_eq!((s.panel.gate_anchors, s.panel.compare_multiple), (40, 5.0));
        assert!(is_panel(OK));
    }

    #[test]
    fn bad_files_name_the_key_and_what_was_expected() {
        let cases = [
            (
                OK.replace("name: a, mock", "name: a, trusted: true, mock"),
                "panel.judges: at most one judge may be trusted",
            ),
            (OK.replace("{input_usd_per_mtok: 0.1}", "{}"), "panel.judges[0].mock: needs a price"),
            (OK.replace("name: b,", "name: a,"), "panel.judges[1].name: \"a\" is used twice"),
            (OK.replace("[0.01]", "[0.02, 0.01]"), "spend_usd"),
            (
                OK.replace("  synthetic: {n: 8, count: 2}", "  synthetic: {n: 8, count: 2}\n  file: x.jsonl"),
                "pools: give exactly one of file or synthetic",
            ),
            (OK.replace("k: 2", "k: 8"), "k"),
            (OK.replace("seeds: [1]", "seeds: []"), "seeds: must list at least one seed"),
            // Pool seeds that would wrap round past the largest (hunt 41: "pool seeds 18446744073709551615…1").
            (
                OK.replace("{n: 8, count: 2}", "{n: 8, count: 2, seed: 18446744073709551615}"),
                "pools.synthetic.seed: 18446744073709551615 + 1 more pools passes the largest seed (18446744073709551615): pool i uses seed pools.synthetic.seed + i; lower it to at most 18446744073709551614",
            ),
            (
                OK.replace(
                    "    - {name: b, trusted: true, mock: {input_usd_per_mtok: 1.0}}\n",
                    "  prior_anchors: 40\n",
                ),
                "panel.prior_anchors: 40 prior anchors need at least two judges",
            ),
            (
                OK.replace("{input_usd_per_mtok: 0.1}", "{input_usd_per_mtok: 0.1, temperature: 0}"),
                "panel.judges[0].mock",
            ),
        ];
        for (yaml, want) in cases {
            let e = load(&yaml).expect_err(want);
            assert!(e.contains(want), "{want:?} not in {e}");
        }
        let e = load(&OK.replace("seeds:", "sedes:")).expect_err("unknown key");
        assert!(e.contains("sedes"), "{e}");
    }
}

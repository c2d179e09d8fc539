//! Run configuration: [`RawConfig`] mirrors the YAML as written (unknown keys are errors), and
//! [`Config::load`] resolves paths against the config file's folder, reads the pool and checks
//! every rule before anything runs.

use super::judge::JudgeConfig;
use super::{ConfigError, sections};
use crate::acquire::{Orders, StrategyKind};
use crate::analysis::ranking::ReportRanking;
use crate::domain::invalid::InvalidSetting;
use crate::domain::pool::{self, CovariateSpec, Covariates, Pool, PoolError};
use crate::model::Prior;
use crate::model::summary::ModelKind;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Where the pool is: a file, or `synthetic: {...}` (docs/model.md §7).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PoolRef {
    /// JSON Lines pool file (relative to the config's folder); empty with `synthetic`.
    #[serde(default, skip_serializing_if = "path_is_empty")]
    pub file: PathBuf,
    /// Pool id; default: the first pool in the file.
    #[serde(default)]
    pub id: Option<String>,
    /// A run over many pools (docs/systems.md): `all`, or a list of pool ids. Items carry
    /// `system` and the run ranks systems; exclusive with `id`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ids: Option<PoolIds>,
    /// With `ids`: the reference system of the reported win rates (default: the first system).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
    /// With `ids` and a judge panel: the model family of a system, `SYSTEM: FAMILY`, where its
    /// id does not contain the family's name (the self-preference covariate "same family",
    /// docs/model.md §8; a system whose id contains a judge's `family` is of it).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub families: std::collections::BTreeMap<String, String>,
    /// A synthetic pool generated from this spec instead of a file (docs/model.md §7).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub synthetic: Option<crate::analysis::synth::SynthSpec>,
}

/// What a `pool:` section names: one pool of a file, many pools of a file (a run over many
/// prompts, docs/systems.md), or a synthetic pool (docs/model.md §7).
#[derive(Debug, Clone, Copy)]
pub enum PoolSource<'a> {
    /// `file` (and `id`, default: the file's first pool).
    File {
        /// The pool file.
        file: &'a Path,
        /// The pool id, if given.
        id: Option<&'a str>,
    },
    /// `file` and `ids`: the selected pools, merged into one pool of answers per system.
    Systems {
        /// The pool file.
        file: &'a Path,
        /// The selected pools.
        ids: &'a PoolIds,
    },
    /// `synthetic: {...}`.
    Synthetic(&'a crate::analysis::synth::SynthSpec),
}

impl PoolRef {
    /// Which of the three the section names ([`Config::from_raw`] has refused a section that
    /// names two: `file` with `synthetic`, or `ids` with `id` or `synthetic`).
    pub fn source(&self) -> PoolSource<'_> {
        match (&self.synthetic, &self.ids) {
            (Some(spec), _) => PoolSource::Synthetic(spec),
            (None, Some(ids)) => PoolSource::Systems { file: &self.file, ids },
            (None, None) => PoolSource::File { file: &self.file, id: self.id.as_deref() },
        }
    }
}

/// Which pools of a file a run over many pools uses (`pool.ids`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "RawPoolIds", into = "RawPoolIds")]
pub enum PoolIds {
    /// Every pool in the file, in file order (`ids: all`).
    All,
    /// These pools, in this order.
    List(Vec<String>),
}

#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum RawPoolIds {
    One(String),
    Many(Vec<String>),
}

impl TryFrom<RawPoolIds> for PoolIds {
    type Error = String;
    fn try_from(r: RawPoolIds) -> Result<Self, String> {
        match r {
            RawPoolIds::One(s) if s == "all" => Ok(PoolIds::All),
            RawPoolIds::One(s) => Err(format!("pool.ids: {s:?} is not `all`; expected `all` or a list of pool ids")),
            RawPoolIds::Many(v) if v.is_empty() => {
                Err("pool.ids: the list is empty; expected `all` or pool ids".into())
            }
            RawPoolIds::Many(v) => Ok(PoolIds::List(v)),
        }
    }
}

impl From<PoolIds> for RawPoolIds {
    fn from(p: PoolIds) -> Self {
        match p {
            PoolIds::All => RawPoolIds::One("all".into()),
            PoolIds::List(v) => RawPoolIds::Many(v),
        }
    }
}

/// The pools of `file` named by `ids`, in that order, each with its line as written.
///
/// # Errors
/// [`PoolError`]: the file, or an id not in it ([`PoolError::NotFound`]), or a pool id listed
/// twice ([`PoolError::Invalid`]).
pub fn select_pools(file: &Path, ids: &PoolIds) -> Result<Vec<(Pool, String)>, PoolError> {
    let lines = crate::store::pool_file::read_pool_lines(file)?;
    match ids {
        PoolIds::All => Ok(lines.into_iter().map(|(p, _, l)| (p, l)).collect()),
        PoolIds::List(want) => {
            let mut by_id: std::collections::HashMap<String, (Pool, String)> =
                lines.into_iter().map(|(p, _, l)| (p.pool_id.clone(), (p, l))).collect();
            let n = by_id.len();
            let mut out = Vec::with_capacity(want.len());
            for id in want {
                match by_id.remove(id) {
                    Some(x) => out.push(x),
                    None if out.iter().any(|(p, _): &(Pool, String)| &p.pool_id == id) => {
                        return Err(PoolError::Invalid {
                            pool_id: id.clone(),
                            msg: "listed twice in pool.ids; expected each pool once".into(),
                        });
                    }
                    None => {
                        return Err(PoolError::NotFound {
                            path: file.to_owned(),
                            id: id.clone(),
                            available: format!("{n} pools"),
                        });
                    }
                }
            }
            Ok(out)
        }
    }
}

/// The pool of a run over many pools: the selected pools merged by [`Pool::systems`], named
/// `<P> prompts` (judges key verdicts by each item's own prompt id, not by this name).
///
/// # Errors
/// As [`select_pools`] and [`Pool::systems`].
pub fn load_systems_pool(file: &Path, ids: &PoolIds) -> Result<Pool, PoolError> {
    let pools: Vec<Pool> = select_pools(file, ids)?.into_iter().map(|(p, _)| p).collect();
    Pool::systems(crate::domain::fmt::count(pools.len(), "prompt"), pools).map_err(|e| {
        // The line of the prompt the fault names (a rule of the merged pool names none).
        let lines = crate::store::pool_file::read_pool_lines(file).unwrap_or_default();
        e.in_file(file, |id| lines.iter().find(|(p, _, _)| p.pool_id == id).map(|(_, l, _)| *l))
    })
}

fn is_auto(r: &ReportRanking) -> bool {
    *r == ReportRanking::Auto
}

fn path_is_empty(p: &Path) -> bool {
    p.as_os_str().is_empty()
}

/// Model settings (docs/model.md §2).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelConfig {
    /// `naive` or `bias_aware` (default).
    #[serde(default = "d_kind")]
    pub kind: ModelKind,
    /// λ_θ (default 1).
    #[serde(default = "crate::model::params::default_lambda_theta")]
    pub lambda_theta: f64,
    /// λ_b (default 0.1).
    #[serde(default = "crate::model::params::default_lambda_b")]
    pub lambda_b: f64,
    /// λ_κ (default 0.01).
    #[serde(default = "crate::model::params::default_lambda_kappa")]
    pub lambda_kappa: f64,
    /// Covariates; default `words` (zscore) when items have text plus every `covariates` key (raw).
    #[serde(default)]
    pub covariates: Option<Vec<CovariateSpec>>,
    /// Weight of the likelihood term of a verdict that states a strong preference (`[[A>>B]]`),
    /// > 0 (default 1: weighted like any verdict). Never applied by duplicating verdicts.
    #[serde(default = "d_strong", skip_serializing_if = "is_default_strong")]
    pub strong_preference_weight: f64,
}

fn d_strong() -> f64 {
    1.0
}
fn is_default_strong(w: &f64) -> bool {
    *w == 1.0
}

fn d_kind() -> ModelKind {
    ModelKind::BiasAware
}

impl Default for ModelConfig {
    fn default() -> Self {
        let p = Prior::default();
        Self {
            kind: d_kind(),
            lambda_theta: p.lambda_theta,
            lambda_b: p.lambda_b,
            lambda_kappa: p.lambda_kappa,
            covariates: None,
            strong_preference_weight: d_strong(),
        }
    }
}

impl ModelConfig {
    /// The prior.
    pub fn prior(&self) -> Prior {
        Prior { lambda_theta: self.lambda_theta, lambda_b: self.lambda_b, lambda_kappa: self.lambda_kappa }
    }
}

/// Acquisition settings (docs/model.md §3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AcquisitionConfig {
    /// Strategy (default `topk`).
    #[serde(default = "d_strategy")]
    pub strategy: StrategyKind,
    /// `both` (default) or `single`.
    #[serde(default)]
    pub orders: Orders,
    /// Queries selected per refit, R (default 8).
    #[serde(
        deserialize_with = "crate::domain::serde_words::at_least_one",
        default = "crate::model::params::default_refit_every"
    )]
    pub refit_every: usize,
    /// Queries in flight at most, C (default 8). Config key `concurrency`, or `batch_size`, its
    /// older name (the same setting; docs/live.md, "Concurrency").
    #[serde(
        deserialize_with = "crate::domain::serde_words::at_least_one",
        alias = "batch_size",
        default = "crate::model::params::default_concurrency"
    )]
    pub concurrency: usize,
    /// `wait_for_batch` (default: pick R = `refit_every`, send them, wait for all, refit;
    /// deterministic for a fixed seed) or `pipelined` (keep `concurrency` in flight, refit every R
    /// stored verdicts while requests keep flying; docs/live.md, "Concurrency").
    #[serde(default, skip_serializing_if = "Dispatch::is_default")]
    pub dispatch: Dispatch,
    /// `pipelined` only: picks made ahead of a free slot, beyond `concurrency` (default 0, at
    /// most `concurrency`; 0 is stored as no value, so both make the same run):
    /// their intents are fsynced before a slot frees, and each is sent the moment a reply comes
    /// back. After a kill they are booked as possibly billed like the requests in flight
    /// (docs/live.md, "Concurrency").
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::domain::serde_words::opt_whole"
    )]
    pub write_ahead: Option<usize>,
    /// `dispatch: batch` only: queries per round, each round one provider batch job (default
    /// 64; docs/live.md, "Batch dispatch"). The model refits after every round.
    #[serde(
        deserialize_with = "crate::domain::serde_words::opt_at_least_one",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub round_size: Option<usize>,
    /// `dispatch: batch` only: seconds before the first poll of a batch job (default 10); the
    /// wait doubles up to 10 minutes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub poll_s: Option<f64>,
    /// Seed of every random choice (tie-breaks, Monte Carlo, shuffles).
    #[serde(default, deserialize_with = "crate::domain::serde_words::whole")]
    pub seed: u64,
    /// Monte-Carlo draws S for top-k membership (default 1000).
    #[serde(
        deserialize_with = "crate::domain::serde_words::at_least_one",
        default = "crate::model::params::default_mc_draws"
    )]
    pub mc_draws: usize,
    /// Stop early at a top-k certified at ε: k bases with π ≥ 1 − ε and every other ≤ ε, under
    /// the certificate's conditions (docs/model.md, "Certified top-k"; default: off).
    #[serde(default)]
    pub confidence: Option<f64>,
    /// Failed queries of one pair (both orders together) after which the pair is set aside for
    /// the rest of the run (default 2; docs/live.md). Not part of the fit: left out of the
    /// saved settings while it has its default, so older run folders keep matching.
    #[serde(
        deserialize_with = "crate::domain::serde_words::at_least_one",
        default = "d_max_failed",
        skip_serializing_if = "is_d_max_failed"
    )]
    pub max_failed_queries_per_pair: u32,
    /// Pairs of items with identical text: `skip` (default: never sent, they carry no
    /// information about quality) or `send` (e.g. to measure position bias).
    #[serde(default, skip_serializing_if = "IdenticalTexts::is_skip")]
    pub identical_texts: IdenticalTexts,
}

/// How queries are dispatched (config key `acquisition.dispatch`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Dispatch {
    /// Pick R = `refit_every`, send them (at most `concurrency` in flight), wait for all, refit:
    /// deterministic for a fixed seed (the default).
    #[default]
    WaitForBatch,
    /// Keep `concurrency` queries in flight; refit after every R stored verdicts while requests
    /// keep flying. Resume-safe, but the order of the picks depends on reply arrival times.
    Pipelined,
    /// Each round of `round_size` picks is one provider batch job (OpenAI-compatible judges:
    /// Files and Batches API, at the batch price); the model refits after each round
    /// (docs/live.md, "Batch dispatch").
    Batch,
}

/// Queries per round of `dispatch: batch` when `round_size` is not set.
pub const DEFAULT_ROUND_SIZE: usize = 64;

/// Seconds before the first poll of a batch job when `poll_s` is not set.
pub const DEFAULT_POLL_S: f64 = 10.0;

impl Dispatch {
    /// Whether this is the default ([`Dispatch::WaitForBatch`]), for `skip_serializing_if`.
    pub fn is_default(&self) -> bool {
        *self == Self::WaitForBatch
    }

    /// Picks made ahead of a free slot (config key `acquisition.write_ahead`, `given` when set):
    /// 0 unless set, and always 0 for wait-for-batch.
    pub fn write_ahead(self, given: Option<usize>) -> usize {
        match self {
            Dispatch::WaitForBatch | Dispatch::Batch => 0,
            Dispatch::Pipelined => given.unwrap_or(0),
        }
    }

    /// How the scheduler treats this dispatch: a batch round is a wait-for-batch round.
    pub fn scheduling(self) -> Self {
        match self {
            Dispatch::Batch => Dispatch::WaitForBatch,
            d => d,
        }
    }

    /// Check a `write_ahead` setting against this dispatch and `concurrency`: more than 0 only
    /// when pipelined, and at most `concurrency`.
    ///
    /// # Errors
    /// What is expected, for the message naming the setting.
    pub fn check_write_ahead(self, given: Option<usize>, concurrency: usize) -> Result<(), String> {
        match given {
            Some(w) if w > 0 && self != Dispatch::Pipelined => Err(format!(
                "{w} applies to `dispatch: pipelined` only ({}; 0 or no value here)",
                match self {
                    Dispatch::Batch => "a provider batch job is made of the round as it is picked",
                    _ => "wait-for-batch sends each batch as it is picked",
                }
            )),
            Some(w) if w > concurrency => Err(format!(
                "{w} must be at most `concurrency` ({concurrency}): each pick written ahead is booked as possibly billed after a kill, and is decided up to that many replies early"
            )),
            _ => Ok(()),
        }
    }
}

/// What to do with pairs of items whose texts are identical.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IdenticalTexts {
    /// Never send them (default).
    #[default]
    Skip,
    /// Send them like any pair.
    Send,
}

impl IdenticalTexts {
    fn is_skip(&self) -> bool {
        *self == Self::Skip
    }
}

fn d_max_failed() -> u32 {
    2
}
fn is_d_max_failed(n: &u32) -> bool {
    *n == d_max_failed()
}
fn d_strategy() -> StrategyKind {
    StrategyKind::Topk
}

impl Default for AcquisitionConfig {
    fn default() -> Self {
        Self {
            strategy: d_strategy(),
            orders: Orders::Both,
            refit_every: crate::model::params::DEFAULT_REFIT_EVERY,
            concurrency: crate::model::params::DEFAULT_CONCURRENCY,
            dispatch: Dispatch::WaitForBatch,
            write_ahead: None,
            round_size: None,
            poll_s: None,
            seed: 0,
            mc_draws: crate::model::params::DEFAULT_MC_DRAWS,
            confidence: None,
            max_failed_queries_per_pair: d_max_failed(),
            identical_texts: IdenticalTexts::Skip,
        }
    }
}

pub use super::budget::BudgetConfig;
use super::budget::{check_budget, de_budget};

/// `certify:`: the ε of the certified top-k: bases with top-k membership π ≥ 1 − ε are in,
/// π ≤ ε out, the rest undecided (docs/model.md, "Certified top-k").
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CertifyConfig {
    /// ε, in (0, 0.5); default 0.05.
    #[serde(default = "default_epsilon")]
    pub epsilon: f64,
}

fn default_epsilon() -> f64 {
    crate::analysis::certify::DEFAULT_EPSILON
}

impl Default for CertifyConfig {
    fn default() -> Self {
        Self { epsilon: default_epsilon() }
    }
}

impl CertifyConfig {
    fn is_default(&self) -> bool {
        *self == Self::default()
    }

    /// ε in (0, 0.5).
    fn check(&self) -> Result<(), InvalidSetting> {
        if self.epsilon > 0.0 && self.epsilon < 0.5 {
            Ok(())
        } else {
            Err(InvalidSetting::new(
                "certify.epsilon",
                format!(
                    "{} must be in (0, 0.5), e.g. 0.05 (bases with π ≥ 1 − ε are certified in the top-k)",
                    self.epsilon
                ),
            ))
        }
    }
}

/// The configuration as written in YAML.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawConfig {
    /// Run name: outputs go to `<out_dir>/<name>/`.
    pub name: String,
    /// Output folder (relative to the config's folder); default `runs` in the working directory.
    #[serde(default)]
    pub out_dir: Option<PathBuf>,
    /// The pool.
    pub pool: PoolRef,
    /// k of top-k (1 ≤ k < number of bases).
    #[serde(deserialize_with = "crate::domain::serde_words::at_least_one")]
    pub k: usize,
    /// The judge (one judge). Read it with [`RawConfig::judge`]; exactly one of `judge` and
    /// `judges` is given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge: Option<JudgeConfig>,
    /// A judge panel (docs/model.md §8): several named judges in one run, one model and one
    /// budget. A list of one is the single-judge run (its entry becomes `judge`).
    #[serde(default, skip_serializing_if = "Vec::is_empty", deserialize_with = "non_empty_judges")]
    pub judges: Vec<PanelMemberConfig>,
    /// Where the single judge's block sits in the file when it is not `judge`: `judges[0]`, for
    /// a list of one. Read it with [`RawConfig::judge_key`].
    #[serde(skip)]
    pub judge_key_in_file: Option<String>,
    /// The `model` block: kind, covariates, prior precisions λ_θ, λ_b, λ_κ and the
    /// strong-preference weight (docs/model.md §2).
    #[serde(default)]
    pub model: ModelConfig,
    /// The `acquisition` block: strategy, orders, refit cadence, batch size, seed and Monte-Carlo
    /// draws of the top-k acquisition (docs/model.md §3).
    #[serde(default)]
    pub acquisition: AcquisitionConfig,
    /// The `budget` block: `max_comparisons`, `max_usd` (USD) or `unlimited`; the run stops at the first limit.
    #[serde(default, deserialize_with = "de_budget")]
    pub budget: BudgetConfig,
    /// Which ranking the result reports: `auto` (default; the bias-corrected one only when the
    /// design identifies the correction or a gate enabled it), `corrected` or `apparent`.
    #[serde(default, skip_serializing_if = "is_auto")]
    pub report_ranking: ReportRanking,
    /// What the result certifies (docs/model.md, "Certified top-k"): `{epsilon}`, default 0.05.
    #[serde(default, skip_serializing_if = "CertifyConfig::is_default")]
    pub certify: CertifyConfig,
    /// `single` (default) or `paired` (docs/model.md §6: within-base queries first).
    #[serde(default)]
    pub design: crate::analysis::design::DesignKind,
    /// The trusted-anchor gate (docs/model.md §5): run at the end of every `run`, and by `topk-judge gate`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gate: Option<GateConfig>,
    /// After the first Ctrl-C (or SIGTERM), how long the requests in flight are awaited so their
    /// verdicts are stored, seconds (default 30); see docs/live.md.
    #[serde(default = "d_grace")]
    pub interrupt_grace_s: f64,
}

/// One judge of a panel (`judges:` in a run config; docs/model.md §8): its name, whether it is
/// trusted, and one judge block beside them, as in `judge:` (`- name: cheap` then
/// `mock: {...}`, or `openai:`, `synthetic:`, `replay:`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "PanelMemberDoc", into = "PanelMemberDoc")]
pub struct PanelMemberConfig {
    /// The judge's name: its verdicts are recorded under it (`"judge"` of each record) and
    /// its cache keys begin with it, so no judge's verdict is reused for another.
    pub name: String,
    /// Its verdicts are taken as free of item-level bias (no bias coefficients c_j; the paper's
    /// trusted anchors). At most one judge of a panel.
    pub trusted: bool,
    /// Its model family, over systems (`pool.ids`): the "same family" covariate of this judge is
    /// 1 for an answer of a system of the family, and its coefficient is the judge's
    /// self-preference in logits (docs/model.md §8). Not for the trusted judge.
    pub family: Option<String>,
    /// Its carried prior (docs/model.md §8, "Carried judge priors"): by parameter, `kappa` or a
    /// covariate's name (or `same_family`), a normal prior `{mean, sd}` in logits (per covariate
    /// unit for c) learned on other pools, in place of the default one.
    pub prior: std::collections::BTreeMap<String, crate::model::panel::Normal>,
    /// The judge block, with its own price, concurrency and rate limit.
    pub judge: JudgeConfig,
}

/// [`PanelMemberConfig`] as written.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct PanelMemberDoc {
    // Checked with the list (an entry without one is named by its index there).
    #[serde(default)]
    name: String,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    trusted: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    family: Option<String>,
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    prior: std::collections::BTreeMap<String, crate::model::panel::Normal>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    mock: Option<crate::judge::mock::MockConfig>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    synthetic: Option<crate::judge::synthetic::SyntheticJudgeConfig>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    openai: Option<Box<crate::judge::openai::OpenAiConfig>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    replay: Option<crate::judge::replay::ReplayConfig>,
}

impl TryFrom<PanelMemberDoc> for PanelMemberConfig {
    type Error = String;
    fn try_from(d: PanelMemberDoc) -> Result<Self, String> {
        let mut blocks = Vec::new();
        blocks.extend(d.mock.map(JudgeConfig::Mock));
        blocks.extend(d.synthetic.map(JudgeConfig::Synthetic));
        blocks.extend(d.openai.map(JudgeConfig::Openai));
        blocks.extend(d.replay.map(JudgeConfig::Replay));
        if blocks.len() != 1 {
            return Err(format!(
                "judge {:?} has {} judge blocks; give exactly one of `mock`, `openai`, `synthetic`, `replay` beside its `name`{}",
                d.name,
                blocks.len(),
                // A block indented wrongly is often read as no block at all.
                if blocks.is_empty() {
                    " (indented under it: every key of a judge starts in the column of its `name`)"
                } else {
                    ""
                }
            ));
        }
        Ok(Self { name: d.name, trusted: d.trusted, family: d.family, prior: d.prior, judge: blocks.remove(0) })
    }
}

impl From<PanelMemberConfig> for PanelMemberDoc {
    fn from(m: PanelMemberConfig) -> Self {
        let mut d = PanelMemberDoc {
            name: m.name,
            trusted: m.trusted,
            family: m.family,
            prior: m.prior,
            mock: None,
            synthetic: None,
            openai: None,
            replay: None,
        };
        match m.judge {
            JudgeConfig::Mock(c) => d.mock = Some(c),
            JudgeConfig::Synthetic(c) => d.synthetic = Some(c),
            JudgeConfig::Openai(c) => d.openai = Some(c),
            JudgeConfig::Replay(c) => d.replay = Some(c),
        }
        d
    }
}

impl RawConfig {
    /// The judge of a single-judge run; for a panel, its first judge (the commands that take a
    /// single judge refuse a panel first: [`Config::is_panel`]).
    ///
    /// # Panics
    /// On a config with neither `judge` nor `judges` (validation refuses one).
    pub fn judge(&self) -> &JudgeConfig {
        match &self.judge {
            Some(j) => j,
            None => &self.judges.first().expect("a validated config has a judge").judge,
        }
    }

    /// The key of the single judge's block as the file writes it: `judge`, or `judges[0]` for a
    /// list of one judge (which runs as the single judge). Its messages name its settings so:
    /// `judges[0].openai.base_url`, not `judge.openai.base_url`.
    pub fn judge_key(&self) -> &str {
        self.judge_key_in_file.as_deref().unwrap_or("judge")
    }

    /// Whether this is a judge panel of two or more judges (`judges:`; docs/model.md §8).
    pub fn is_panel(&self) -> bool {
        self.judge.is_none() && self.judges.len() >= 2
    }

    /// Whether the run's judge can send and read provider batch jobs (docs/live.md, "Batch
    /// dispatch"): one OpenAI-compatible judge, not a panel. The one answer to it: `dispatch:
    /// batch` needs it, and a folder with a job still open is resumed only by such a judge.
    pub fn reads_batch_jobs(&self) -> bool {
        !self.is_panel() && matches!(self.judge(), JudgeConfig::Openai(_))
    }

    /// [`RawConfig::judge`], mutable.
    ///
    /// # Panics
    /// As [`RawConfig::judge`].
    pub fn judge_mut(&mut self) -> &mut JudgeConfig {
        match &mut self.judge {
            Some(j) => j,
            None => &mut self.judges.first_mut().expect("a validated config has a judge").judge,
        }
    }

    /// Every judge block: the judge, or each judge of the panel.
    pub fn judge_blocks_mut(&mut self) -> Vec<&mut JudgeConfig> {
        match &mut self.judge {
            Some(j) => vec![j],
            None => self.judges.iter_mut().map(|m| &mut m.judge).collect(),
        }
    }

    /// Whether any judge is OpenAI-compatible (a live judge, which bills).
    pub fn any_live_judge(&self) -> bool {
        match &self.judge {
            Some(j) => matches!(j, JudgeConfig::Openai(_)),
            None => self.judges.iter().any(|m| matches!(m.judge, JudgeConfig::Openai(_))),
        }
    }
}

/// `judges:` as written: a list with at least one entry (an empty one is said, not taken for a
/// missing judge).
fn non_empty_judges<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<PanelMemberConfig>, D::Error> {
    let v = <Vec<PanelMemberConfig> as serde::Deserialize>::deserialize(d)?;
    if v.is_empty() {
        return Err(serde::de::Error::custom(
            "an empty list: give the panel's judges, e.g. `judges: [{name: cheap, mock: {...}}, {name: frontier, trusted: true, openai: {...}}]`, or one `judge:`",
        ));
    }
    Ok(v)
}

/// A config read back (`run --dry-run`, or a run folder's copy), which sends nothing: what only a
/// request needs (its credentials, the key) is taken out of the checks and returned as what a
/// real run would stop with; the client refuses it when it is built (`gate` asks its trusted
/// judge).
fn read_back(raw: &mut RawConfig) -> Option<String> {
    let mut problem = None;
    let mut blocks: Vec<(String, &mut JudgeConfig)> = match &mut raw.judge {
        Some(j) => vec![("judge".into(), j)],
        None => raw.judges.iter_mut().enumerate().map(|(i, m)| (format!("judges[{i}]"), &mut m.judge)).collect(),
    };
    let n_run_judges = blocks.len();
    if let Some(t) = raw.gate.as_mut().and_then(|g| g.trusted.as_mut()) {
        blocks.push(("gate.trusted".into(), t));
    }
    for (i, (key, j)) in blocks.into_iter().enumerate() {
        let JudgeConfig::Openai(oc) = j else { continue };
        oc.read_back = true;
        if let Some(m) = crate::judge::openai::secret::base_url_problem(&oc.base_url)
            && oc.base_url.contains("***")
        {
            problem.get_or_insert(format!("{key}.openai.base_url: {m}"));
        }
        if let Some(m) = crate::judge::openai::key_problem(oc).filter(|_| oc.api_key_required) {
            problem.get_or_insert(format!("{key}.openai.api_key_env: {m}"));
            // The run's judges are probed without a key by a dry run (a free request); the
            // gate's trusted judge is asked by `gate`, which needs its key.
            if i < n_run_judges {
                oc.api_key_required = false;
            }
        }
    }
    problem
}

/// `judge:` or `judges:`: exactly one. A panel of one becomes `judge` (so it runs as the
/// single-judge run it is, bit for bit); a panel of two or more needs distinct non-empty names
/// and at most one trusted judge, and runs `wait_for_batch` or `pipelined` over one pool, design
/// single, without a gate (its trusted judge is the anchor).
fn check_judges(raw: &mut RawConfig) -> Result<(), InvalidSetting> {
    match (raw.judge.is_some(), raw.judges.len()) {
        (true, 0) => return Ok(()),
        (true, _) => {
            return Err(InvalidSetting::new(
                "judges",
                "give either `judge` (one judge) or `judges` (a panel), not both",
            ));
        }
        (false, 0) => {
            return Err(InvalidSetting::new(
                "judge",
                "missing: give `judge: {mock: {...}}` (or openai, synthetic, replay), or a panel `judges: [{name: cheap, mock: {...}}, {name: frontier, trusted: true, openai: {...}}]`",
            ));
        }
        (false, 1) => {
            if raw.judges[0].family.is_some() {
                return Err(InvalidSetting::new(
                    "judges[0].family",
                    "a judge's family is a covariate of a panel (its self-preference is identified by the other judges' verdicts, docs/model.md §8); one judge's own verdicts cannot tell it from the quality of its family's systems",
                ));
            }
            if !raw.judges[0].prior.is_empty() {
                return Err(InvalidSetting::new(
                    "judges[0].prior",
                    "a carried prior is a judge panel's (two or more judges under `judges:`); a list of one judge runs the single-judge model, which has none",
                ));
            }
            raw.judge = Some(raw.judges.remove(0).judge);
            raw.judge_key_in_file = Some("judges[0]".into());
            return Ok(());
        }
        (false, _) => {}
    }
    let mut seen = std::collections::HashSet::new();
    for (i, m) in raw.judges.iter().enumerate() {
        let name = m.name.trim();
        if m.name.is_empty() {
            return Err(InvalidSetting::new(
                format!("judges[{i}].name"),
                "missing or empty: every judge of a panel has a `name` (a plain folder name, e.g. `cheap`), which its outputs and `fit --panel --trusted NAME` use",
            ));
        }
        // The name is a folder of the run (its prompt is copied under it) and the prefix of its
        // cache keys: a plain folder name, as a run's.
        if !super::sections::is_plain_folder_name(&m.name) {
            return Err(InvalidSetting::new(
                format!("judges[{i}].name"),
                format!("{} must be {}", super::sections::shown_name(&m.name), super::sections::PLAIN_FOLDER_NAME),
            ));
        }
        // A judge's name is a folder of the run: names that differ only by case are one folder
        // on a case-insensitive file system.
        if !seen.insert(name.to_lowercase()) {
            let other = raw.judges[..i]
                .iter()
                .find(|o| o.name.to_lowercase() == name.to_lowercase())
                .map_or(name, |o| o.name.as_str());
            return Err(InvalidSetting::new(
                format!("judges[{i}].name"),
                if other == name {
                    format!("{name:?} names two judges; give each its own name")
                } else {
                    format!(
                        "{name:?} and {other:?} differ only by case, one folder where case is not told apart (macOS, Windows); give each its own name"
                    )
                },
            ));
        }
    }
    let trusted: Vec<usize> = (0..raw.judges.len()).filter(|&j| raw.judges[j].trusted).collect();
    if let [first, second, ..] = trusted[..] {
        return Err(InvalidSetting::new(
            format!("judges[{second}].trusted"),
            format!(
                "judges[{first}] ({:?}) is `trusted: true` too; mark the one judge whose verdicts are taken as free of item-level bias",
                raw.judges[first].name
            ),
        ));
    }
    let refuse = |key: &str, why: &str| {
        Err(InvalidSetting::new(key, format!("{why}; docs/model.md §8 says what a judge panel (`judges:`) runs")))
    };
    if raw.acquisition.dispatch == Dispatch::Batch {
        return refuse(
            "acquisition.dispatch",
            "a panel runs `wait_for_batch` or `pipelined`, not provider batch jobs, for now",
        );
    }
    if raw.design != crate::analysis::design::DesignKind::Single {
        return refuse("design", "a panel runs design single only for now");
    }
    if raw.acquisition.strategy != crate::acquire::StrategyKind::Topk {
        return refuse(
            "acquisition.strategy",
            "a panel picks by its own top-k rule over (pair, judge), information per USD; leave `topk`",
        );
    }
    if raw.acquisition.orders != crate::acquire::Orders::Both {
        return refuse("acquisition.orders", "a panel sends both orders of a pair to one judge; leave `both`");
    }
    if raw.gate.is_some() {
        return refuse("gate", "a panel's `trusted: true` judge is its anchor; a gate does not apply");
    }
    if raw.acquisition.confidence.is_some() {
        return refuse("acquisition.confidence", "the confidence stop applies to a single judge only for now");
    }
    Ok(())
}

/// Default of [`RawConfig::interrupt_grace_s`], seconds.
pub const DEFAULT_INTERRUPT_GRACE_S: f64 = 30.0;

fn d_grace() -> f64 {
    DEFAULT_INTERRUPT_GRACE_S
}

/// A validated configuration with its pool loaded.
#[derive(Debug, Clone)]
pub struct Config {
    /// The raw configuration, paths resolved.
    pub raw: RawConfig,
    /// The config file.
    pub path: PathBuf,
    /// The run folder, `<out_dir>/<name>`, where the books and results are written.
    pub run_dir: PathBuf,
    /// The pool named by `pool` in the config, loaded and validated (N items, M bases).
    pub pool: Pool,
    /// Covariates of the model (empty for the naive model).
    pub covariates: Covariates,
    /// Covariate specs in force.
    pub covariate_specs: Vec<CovariateSpec>,
    /// Warnings found at load (identical texts, covariates whose scale makes the prior
    /// meaningless); commands print them.
    pub warnings: Vec<String>,
    /// A panel over systems with a judge's `family`: the families of the judges and the systems
    /// (the self-preference covariate, docs/model.md §8); `None` otherwise.
    pub families: Option<crate::analysis::panel_fit::Families>,
    /// Per judge of a panel, its carried prior (`judges[i].prior`; empty when no judge has one).
    pub carried: Vec<crate::model::panel::JudgePrior>,
    /// The command line's `--set` (and its shorthands such as `--name`) applied to the file, in
    /// order: the command that resumes the run repeats them.
    pub overrides: Vec<super::overrides::Override>,
}

impl Config {
    /// Read, parse and validate a config file.
    ///
    /// # Errors
    /// [`ConfigError`] naming file, key (or line) and what was expected.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        Self::load_with(path, &[])
    }

    /// [`Config::load`] with command-line overrides applied before any check
    /// ([`super::overrides`]).
    ///
    /// # Errors
    /// As [`Config::load`]; a fault an override brings names the override.
    pub fn load_with(path: &Path, overrides: &[super::overrides::Override]) -> Result<Self, ConfigError> {
        let raw = super::overrides::read_document_with(path, overrides)?;
        let cfg = Self::from_raw(raw, path).map_err(|e| {
            Self::fault_of_the_file(path, overrides, e, |p| Self::from_raw(super::read_document(p)?, p))
        })?;
        Ok(Self { overrides: overrides.to_vec(), ..cfg })
    }

    /// Load for `run --dry-run`, or to read a run back (`fit`, `profile`, `report`, `gate` on a
    /// run folder), which sends nothing from the config: an unset API key variable, and a
    /// base_url whose credentials a run folder's copy holds as `***`, are not errors here (the
    /// client refuses them when it is built); the second value is the message a real run would
    /// stop with.
    ///
    /// # Errors
    /// As [`Config::load`], apart from the missing key and the redacted base_url.
    pub fn load_for_dry_run(path: &Path) -> Result<(Self, Option<String>), ConfigError> {
        Self::load_for_dry_run_with(path, &[])
    }

    /// [`Config::load_for_dry_run`] with command-line overrides ([`super::overrides`]).
    ///
    /// # Errors
    /// As [`Config::load_with`].
    pub fn load_for_dry_run_with(
        path: &Path,
        overrides: &[super::overrides::Override],
    ) -> Result<(Self, Option<String>), ConfigError> {
        let mut raw: RawConfig = super::overrides::read_document_with(path, overrides)?;
        let problem = read_back(&mut raw);
        let cfg = Self::from_raw(raw, path).map_err(|e| {
            Self::fault_of_the_file(path, overrides, e, |p| {
                let mut raw: RawConfig = super::read_document(p)?;
                read_back(&mut raw);
                Self::from_raw(raw, p)
            })
        })?;
        Ok((Self { overrides: overrides.to_vec(), ..cfg }, problem))
    }

    /// `e`, the fault of the config at `path` as `overrides` change it: the file's own when the
    /// file alone (`load`) fails alike, said without the overrides; else named by the override
    /// that makes it ([`super::overrides::name_the_override`]).
    fn fault_of_the_file(
        path: &Path,
        overrides: &[super::overrides::Override],
        e: ConfigError,
        load: impl Fn(&Path) -> Result<Self, ConfigError>,
    ) -> ConfigError {
        if !overrides.is_empty()
            && let Err(plain) = load(path)
            && plain.to_string() == e.to_string()
        {
            return plain;
        }
        super::overrides::name_the_override(e, overrides)
    }

    /// Validate a parsed config; relative paths resolve against `path`'s folder. The sections
    /// are checked in order: name and pool reference, model, acquisition, budget, the pool
    /// itself and k, the judge, the gate, then the covariates and the design.
    ///
    /// # Errors
    /// [`ConfigError::Invalid`] / [`ConfigError::Pool`].
    pub fn from_raw(mut raw: RawConfig, path: &Path) -> Result<Self, ConfigError> {
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let inv = |e: InvalidSetting| ConfigError::invalid(path, e);
        sections::check_name(&raw.name, "run").map_err(inv)?;
        check_pool_ref(&mut raw.pool, &dir).map_err(inv)?;
        let run_dir = sections::out_folder(&dir, raw.out_dir.as_deref(), &raw.name, "runs").map_err(inv)?;
        check_model(&raw.model).map_err(inv)?;
        check_acquisition(&mut raw.acquisition).map_err(inv)?;
        // A list of one runs the single-judge model, where `trusted` means nothing: said.
        let solo_trusted = (raw.judges.len() == 1 && raw.judges[0].trusted).then(|| {
            format!(
                "judges[0].trusted: a list of one judge runs the single-judge model, which fits its bias coefficients as usual: `trusted` anchors the other judges of a panel (docs/model.md §8); judge {:?} is not taken as unbiased",
                raw.judges[0].name
            )
        });
        check_judges(&mut raw).map_err(inv)?;
        if raw.acquisition.dispatch == Dispatch::Batch && !raw.reads_batch_jobs() {
            return Err(inv(InvalidSetting::new(
                "acquisition.dispatch",
                "`batch` sends provider batch jobs and needs an OpenAI-compatible judge (judge.openai); other judges answer at once, use wait_for_batch or pipelined",
            )));
        }
        raw.certify.check().map_err(inv)?;
        // A live trusted judge of the gate spends from the same budget.
        let live_gate =
            raw.gate.as_ref().and_then(|g| g.trusted.as_ref()).is_some_and(|t| matches!(t, JudgeConfig::Openai(_)));
        check_budget(&raw.budget, raw.any_live_judge()).map_err(inv)?;
        // Its queries are not comparisons of the run: only max_usd (or `unlimited`) bounds them.
        if live_gate && raw.budget.max_usd.is_none() && !raw.budget.unlimited {
            return Err(inv(InvalidSetting::new(
                "budget.max_usd",
                "the gate's trusted judge (gate.trusted) is a live judge: its queries are not comparisons of the run, so only budget.max_usd bounds what it spends; set budget.max_usd, or write `budget: unlimited` to run without a limit on purpose",
            )));
        }
        let g = raw.interrupt_grace_s;
        if !(0.0..=86_400.0).contains(&g) {
            return Err(inv(InvalidSetting::new("interrupt_grace_s", format!("{g} must be in [0, 86400] seconds"))));
        }
        let pool = load_pool(&raw.pool, path, &dir)?;
        check_systems(&raw, &pool).map_err(inv)?;
        sections::check_k_in_pool(raw.k, &pool).map_err(inv)?;
        let synth = raw.pool.synthetic;
        match &mut raw.judge {
            Some(j) => {
                let key = raw.judge_key_in_file.as_deref().unwrap_or("judge");
                super::judge::check_judge(j, &dir, &pool, synth.as_ref(), key).map_err(inv)?;
            }
            None => {
                for (i, m) in raw.judges.iter_mut().enumerate() {
                    super::judge::check_judge(&mut m.judge, &dir, &pool, synth.as_ref(), &format!("judges[{i}]"))
                        .map_err(inv)?;
                }
            }
        }
        if let Some(g) = &mut raw.gate {
            g.check().map_err(inv)?;
            if let Some(t) = &mut g.trusted {
                super::judge::check_judge(t, &dir, &pool, synth.as_ref(), "gate.trusted").map_err(inv)?;
            }
            if let Some(l) = &mut g.labels {
                *l = sections::resolve(&dir, l, "gate.labels").map_err(inv)?;
            }
        }
        let specs = match raw.model.kind {
            ModelKind::Naive => Vec::new(),
            ModelKind::BiasAware => raw.model.covariates.clone().unwrap_or_else(|| pool::default_covariates(&pool)),
        };
        if let Some(given) = &raw.model.covariates {
            for (i, s) in given.iter().enumerate() {
                if let Some(j) = given[..i].iter().position(|t| t.name == s.name) {
                    return Err(inv(InvalidSetting::new(
                        format!("model.covariates[{i}]"),
                        format!("covariate {:?} is listed twice (also at [{j}]); list each covariate once", s.name),
                    )));
                }
            }
        }
        let covariates = pool::build_covariates(&pool, &specs).map_err(|source| match source {
            // Covariates the config asks for that this pool cannot give: the setting is named,
            // with the pool.
            PoolError::Invalid { msg, pool_id } if raw.model.covariates.is_some() => inv(InvalidSetting::new(
                "model.covariates",
                format!("{msg} (pool {pool_id:?} of pool.file {})", raw.pool.file.display()),
            )),
            source => sections::pool_error(path, &raw.pool.file, source),
        })?;
        crate::analysis::design::validate(raw.design, &pool, &covariates)
            .map_err(|m| inv(InvalidSetting::new("design", m.to_string())))?;
        let mut warnings = sections::blank_text_warnings(&pool);
        // A live judge is shown the task with each pair: a blank one is paid for as it is.
        let live =
            raw.judge.iter().chain(raw.judges.iter().map(|m| &m.judge)).any(|j| matches!(j, JudgeConfig::Openai(_)));
        if live {
            warnings.extend(sections::blank_task_warnings(&pool));
        }
        warnings
            .extend(sections::identical_text_warnings(&pool, raw.acquisition.identical_texts == IdenticalTexts::Send));
        warnings.extend(sections::scale_warnings(&covariates, raw.model.lambda_b, "model.covariates"));
        // Ids that print alike (another Unicode form, letter case, invisible characters) are
        // two items, shown as one in every table.
        warnings.extend(
            crate::domain::names::near_duplicates(pool.items.iter().map(|i| i.id.as_str()), "items")
                .into_iter()
                .map(|w| format!("pool {:?}: {}", pool.pool_id, w.trim_start_matches("warning: "))),
        );
        if raw.model.kind == ModelKind::Naive && raw.gate.is_some() {
            return Err(inv(InvalidSetting::new(
                "gate",
                "model.kind naive fits only the naive ranking, so the gate (which chooses between it and the bias-corrected one) has nothing to choose; set model.kind: bias_aware, or remove `gate:`",
            )));
        }
        if raw.model.kind == ModelKind::Naive && raw.model.covariates.as_ref().is_some_and(|c| !c.is_empty()) {
            warnings.push(
                "model.covariates is ignored: model.kind naive fits no bias coefficients (kind: bias_aware fits them)"
                    .into(),
            );
        }
        if raw.model.kind == ModelKind::Naive
            && raw.report_ranking == crate::analysis::ranking::ReportRanking::Corrected
        {
            warnings.push("report_ranking: corrected is not applied: model.kind naive fits no bias-corrected ranking, so the apparent one is reported (kind: bias_aware fits it)".into());
        }
        warnings.extend(solo_trusted);
        let families = families(&raw, &pool, &mut warnings).map_err(inv)?;
        let carried = carried_priors(&raw, &covariates, families.as_ref()).map_err(inv)?;
        Ok(Self {
            raw,
            path: path.to_owned(),
            run_dir,
            pool,
            covariates,
            covariate_specs: specs,
            warnings,
            families,
            carried,
            overrides: Vec::new(),
        })
    }

    /// Whether this is a judge panel of two or more judges (`judges:`; docs/model.md §8).
    pub fn is_panel(&self) -> bool {
        self.raw.is_panel()
    }

    /// Refuse a panel in a command that takes a single judge.
    ///
    /// # Errors
    /// A message naming the command and what it does for a panel instead.
    pub fn single_judge(&self, command: &str) -> Result<(), String> {
        if self.is_panel() {
            return Err(format!(
                "{}: a judge panel (`judges:`) — `{command}` takes a single judge; fit a panel run's verdicts with `topk-judge fit RUN_FOLDER --panel` (docs/model.md §8)",
                self.path.display()
            ));
        }
        Ok(())
    }

    /// Ordered pairs of items (a ≠ b) that are not sent: identical texts under
    /// `acquisition.identical_texts: skip`.
    pub fn skipped_pairs(&self) -> std::collections::HashSet<(usize, usize)> {
        if self.raw.acquisition.identical_texts == IdenticalTexts::Send {
            return Default::default();
        }
        let mut out = std::collections::HashSet::new();
        for group in self.pool.identical_texts() {
            for &a in &group {
                for &b in &group {
                    if a != b {
                        out.insert((a, b));
                    }
                }
            }
        }
        out
    }
}

/// `pool:`: exactly one of a file (one pool, `id`; or many, `ids`) and `synthetic`; the file
/// resolved against the config's folder `dir`.
fn check_pool_ref(p: &mut PoolRef, dir: &Path) -> Result<(), InvalidSetting> {
    if p.synthetic.is_none() && path_is_empty(&p.file) {
        return Err(InvalidSetting::new(
            "pool.file",
            "missing: the pool's JSON Lines file (relative to the config's folder), or `synthetic: {…}` for a generated pool",
        ));
    }
    if p.synthetic.is_none() {
        p.file = sections::resolve(dir, &p.file, "pool.file")?;
    } else if !path_is_empty(&p.file) {
        return Err(InvalidSetting::new("pool", "give either `file` or `synthetic`, not both"));
    }
    if p.ids.is_some() && (p.id.is_some() || p.synthetic.is_some()) {
        return Err(InvalidSetting::new(
            "pool",
            "give either `id` (one pool) or `ids` (many pools: all, or a list), not both",
        ));
    }
    Ok(())
}

/// `model:`: the prior and the strong-preference weight.
fn check_model(m: &ModelConfig) -> Result<(), InvalidSetting> {
    sections::check_prior(&m.prior(), "model")?;
    crate::model::params::check_strong_preference_weight(m.strong_preference_weight)
        .map_err(|e| InvalidSetting::new("model.strong_preference_weight", e.to_string()))
}

/// `acquisition:`: the cadence, queries in flight, picks written ahead, failures per pair and
/// the confidence stop. `write_ahead: 0` written out is the default: it is stored as no value,
/// so the run's settings hash is the same as without it.
fn check_acquisition(a: &mut AcquisitionConfig) -> Result<(), InvalidSetting> {
    if a.write_ahead == Some(0) {
        a.write_ahead = None;
    }
    sections::check_cadence(a.refit_every, a.mc_draws, "acquisition")?;
    if a.concurrency == 0 {
        // The file may use either name of the setting; serde does not say which.
        return Err(InvalidSetting::new(
            "acquisition.concurrency (or batch_size, its older name)",
            "0 must be ≥ 1 (queries in flight at most)",
        ));
    }
    a.dispatch
        .check_write_ahead(a.write_ahead, a.concurrency)
        .map_err(|e| InvalidSetting::new("acquisition.write_ahead", e))?;
    if a.dispatch != Dispatch::Batch {
        for (set, name) in [(a.round_size.is_some(), "round_size"), (a.poll_s.is_some(), "poll_s")] {
            if set {
                return Err(InvalidSetting::new(
                    format!("acquisition.{name}"),
                    "applies to `dispatch: batch` only (provider batch jobs; docs/live.md, \"Batch dispatch\")",
                ));
            }
        }
    }
    if a.round_size == Some(0) {
        return Err(InvalidSetting::new("acquisition.round_size", "0 must be ≥ 1 (queries per batch job)"));
    }
    if let Some(p) = a.poll_s
        && !(p.is_finite() && p > 0.0 && p <= 86_400.0)
    {
        return Err(InvalidSetting::new(
            "acquisition.poll_s",
            format!(
                "{} must be a number of seconds > 0 and ≤ 86400 (the wait before the first poll of a batch job)",
                crate::domain::fmt::value(p)
            ),
        ));
    }
    if a.max_failed_queries_per_pair == 0 {
        return Err(InvalidSetting::new(
            "acquisition.max_failed_queries_per_pair",
            "0 must be ≥ 1 (the failed queries after which a pair is set aside)",
        ));
    }
    if let Some(e) = a.confidence {
        crate::model::params::check_confidence(e)
            .map_err(|e| InvalidSetting::new(format!("acquisition.{}", e.name), e.to_string()))?;
    }
    Ok(())
}

/// The pool a checked `pool:` section names: one pool of its file, the selected pools merged
/// per system, or a synthetic pool.
fn load_pool(p: &PoolRef, path: &Path, _dir: &Path) -> Result<Pool, ConfigError> {
    Ok(match p.source() {
        PoolSource::Synthetic(spec) => {
            spec.validate()
                .map_err(|m| ConfigError::invalid(path, InvalidSetting::within_block("pool.synthetic", m)))?;
            crate::analysis::synth::generate(spec).pool
        }
        PoolSource::File { file, id } => sections::read_pool(path, file, id)?,
        PoolSource::Systems { file, ids } => {
            load_systems_pool(file, ids).map_err(|source| sections::pool_error(path, file, source))?
        }
    })
}

/// A run over many pools: `pool.reference` names one of its systems, and the design is single.
fn check_systems(raw: &RawConfig, pool: &Pool) -> Result<(), InvalidSetting> {
    if let Some(r) = &raw.pool.reference {
        if !pool.is_systems() {
            return Err(InvalidSetting::new(
                "pool.reference",
                "a reference system needs a run over many pools (pool.ids)",
            ));
        }
        if !pool.bases.contains(r) {
            return Err(InvalidSetting::new(
                "pool.reference",
                format!("{r:?} is not a system of the run (systems: {})", pool.bases.join(", ")),
            ));
        }
    }
    if pool.is_systems() && raw.design != crate::analysis::design::DesignKind::Single {
        return Err(InvalidSetting::new("design", "a run over many pools (pool.ids) supports design: single only"));
    }
    Ok(())
}

/// Each panel judge's carried prior (`judges[i].prior`, docs/model.md §8), checked against the
/// run's covariates and families; empty when no judge has one.
fn carried_priors(
    raw: &RawConfig,
    cov: &Covariates,
    families: Option<&crate::analysis::panel_fit::Families>,
) -> Result<Vec<crate::model::panel::JudgePrior>, InvalidSetting> {
    use crate::analysis::panel_fit::{SAME_FAMILY_KEY, carried_prior};
    if raw.judges.iter().all(|m| m.prior.is_empty()) {
        return Ok(Vec::new());
    }
    // A covariate named like a prior's other keys could not be told apart from them.
    if let Some(c) = cov.names.iter().find(|c| *c == "kappa" || *c == SAME_FAMILY_KEY) {
        let i = raw.judges.iter().position(|m| !m.prior.is_empty()).unwrap_or(0);
        return Err(InvalidSetting::new(
            format!("judges[{i}].prior"),
            format!(
                "the model has a covariate named {c:?}, which a carried prior's key `{c}` would mean too (`kappa`: the position effect, `{SAME_FAMILY_KEY}`: the self-preference); rename that covariate in the pool to carry priors"
            ),
        ));
    }
    let mut out = Vec::with_capacity(raw.judges.len());
    for (i, m) in raw.judges.iter().enumerate() {
        let key = |k: &str| format!("judges[{i}].prior.{k}");
        for (k, n) in &m.prior {
            use crate::model::panel::{CARRIED_MAX_MEAN, CARRIED_SD_RANGE};
            let (lo, hi) = CARRIED_SD_RANGE;
            // As written (20.00001 is not "20"), in scientific notation when very large or small.
            let num =
                |x: f64| if x == 0.0 || (1e-4..1e6).contains(&x.abs()) { x.to_string() } else { format!("{x:e}") };
            if !(n.mean.is_finite() && n.mean.abs() <= CARRIED_MAX_MEAN) {
                return Err(InvalidSetting::new(
                    format!("{}.mean", key(k)),
                    format!(
                        "{}: expected a number within ±{CARRIED_MAX_MEAN} logits (a bias of 20 logits already decides a verdict with odds of 5·10⁸ to 1)",
                        num(n.mean)
                    ),
                ));
            }
            if !(n.sd >= lo && n.sd <= hi) {
                return Err(InvalidSetting::new(
                    format!("{}.sd", key(k)),
                    format!(
                        "{}: expected an sd from {lo} to {hi} logits (tighter fixes the parameter, looser is flatter than the default prior)",
                        num(n.sd)
                    ),
                ));
            }
            if m.trusted && k != "kappa" {
                return Err(InvalidSetting::new(
                    key(k),
                    format!(
                        "{:?} is the trusted judge, taken as free of item-level bias: it has no bias coefficient, only `kappa`",
                        m.name
                    ),
                ));
            }
        }
        let family_column = families.is_some_and(|f| f.judge.get(i).is_some_and(Option::is_some));
        let (prior, unused) = carried_prior(&m.prior, &cov.names, families.is_some());
        if let Some(k) = unused.first().or_else(|| m.prior.keys().find(|k| *k == SAME_FAMILY_KEY && !family_column)) {
            let mut expected = vec!["kappa".to_string()];
            if !m.trusted {
                expected.extend(cov.names.iter().cloned());
                if family_column {
                    expected.push(SAME_FAMILY_KEY.into());
                }
            }
            return Err(InvalidSetting::new(
                key(k),
                format!("names no parameter of judge {:?}; expected one of: {}", m.name, expected.join(", ")),
            ));
        }
        out.push(prior);
    }
    Ok(out)
}

/// The families of a panel over systems (`judges[i].family`, `pool.families`, matched by name
/// otherwise; docs/model.md §8), with a warning for a family no verdict can tell apart from
/// quality; `None` when no judge has a family.
fn families(
    raw: &RawConfig,
    pool: &Pool,
    warnings: &mut Vec<String>,
) -> Result<Option<crate::analysis::panel_fit::Families>, InvalidSetting> {
    let judge: Vec<Option<String>> = raw.judges.iter().map(|m| m.family.clone()).collect();
    if !raw.pool.families.is_empty() {
        let why = if !pool.is_systems() {
            Some(
                "a system's model family is a covariate of a judge panel over many prompts (pool.ids) whose items carry `system`; this run has one pool",
            )
        } else if raw.judges.is_empty() {
            Some(
                "a system's model family is a covariate of a judge panel (`judges:`, each judge's `family`); one judge's verdicts cannot tell its self-preference from its family's quality",
            )
        } else {
            None
        };
        if let Some(why) = why {
            return Err(InvalidSetting::new("pool.families", why));
        }
    }
    for (i, m) in raw.judges.iter().enumerate() {
        let Some(f) = &m.family else { continue };
        if f.trim().is_empty() {
            return Err(InvalidSetting::new(format!("judges[{i}].family"), "empty: give the judge's model family"));
        }
        if m.trusted {
            return Err(InvalidSetting::new(
                format!("judges[{i}].family"),
                format!(
                    "{:?} is the trusted judge, taken as free of item-level bias, so it has no self-preference coefficient; give the family of an untrusted judge",
                    m.name
                ),
            ));
        }
        if !pool.is_systems() {
            return Err(InvalidSetting::new(
                format!("judges[{i}].family"),
                "self-preference is a covariate of systems: a run over many prompts (pool.ids) whose items carry `system` (docs/systems.md); this run has one pool",
            ));
        }
    }
    let mut given: Vec<Option<String>> = vec![None; pool.n_bases()];
    for (system, family) in &raw.pool.families {
        let key = format!("pool.families.{system}");
        let Some(b) = pool.bases.iter().position(|s| s == system) else {
            return Err(InvalidSetting::new(
                key,
                if pool.is_systems() {
                    format!("no system {system:?} in the run; its systems: {}", pool.bases.join(", "))
                } else {
                    "a system's family needs a run over many prompts (pool.ids)".to_string()
                },
            ));
        };
        // Spelled as a judge's family, ignoring case and surrounding spaces.
        let Some(family) = judge.iter().flatten().find(|f| f.trim().eq_ignore_ascii_case(family.trim())) else {
            let known: Vec<&str> = judge.iter().flatten().map(String::as_str).collect();
            return Err(InvalidSetting::new(
                key,
                format!(
                    "no judge is of family {family:?} (the judges' families: {}), so this system's family changes nothing",
                    known.join(", ")
                ),
            ));
        };
        given[b] = Some(family.clone());
    }
    if judge.iter().all(Option::is_none) {
        return Ok(None);
    }
    let f = crate::analysis::panel_fit::Families::resolve(&pool.bases, judge, given.clone());
    for r in f.reach() {
        let of: Vec<&str> = r.judges.iter().map(|&j| raw.judges[j].name.as_str()).collect();
        if r.bases.is_empty() {
            warnings.push(format!(
                "no system is of family {:?} (judge {}; a system is of a family when its id contains the name, or by pool.families), so its same-family coefficient is the prior's",
                r.family,
                of.join(", ")
            ));
        } else if let Some(longer) = numbered_matches(&r.family, &r.bases, &pool.bases, &given) {
            // `M1` in `M10`: a number that goes on in the id is most likely another system.
            warnings.push(format!(
                "family {:?} (judge {}) is matched by name inside the longer numbers of {}; a system is of a family when its id contains the name: if they are not of it, name the family's systems in pool.families",
                r.family,
                of.join(", "),
                longer.join(", ")
            ));
        }
        if r.bases.len() == pool.n_bases() {
            warnings.push(format!(
                "every system is of family {:?} (judge {}), so no verdict compares an answer of the family with one outside it and its same-family coefficient is the prior's; name the family's systems in pool.families",
                r.family,
                of.join(", ")
            ));
        }
    }
    Ok(Some(f))
}

/// The systems of `bases` (indices into `ids`) matched to `family` by name (not in
/// `pool.families`, `given`) where the name ends or starts with a digit that a digit of the id
/// continues (`M1` in `M10`, `M11`); `None` when there is none.
fn numbered_matches(family: &str, bases: &[usize], ids: &[String], given: &[Option<String>]) -> Option<Vec<String>> {
    let f = family.to_lowercase();
    let digit = |c: Option<char>| c.is_some_and(|c| c.is_ascii_digit());
    let longer: Vec<String> = bases
        .iter()
        .filter(|&&b| given[b].is_none())
        .map(|&b| &ids[b])
        .filter(|id| {
            let id_l = id.to_lowercase();
            id_l.match_indices(&f).any(|(at, m)| {
                let (before, after) = (id_l[..at].chars().next_back(), id_l[at + m.len()..].chars().next());
                (digit(f.chars().next_back()) && digit(after)) || (digit(f.chars().next()) && digit(before))
            })
        })
        .cloned()
        .collect();
    (!longer.is_empty()).then_some(longer)
}

/// `gate:` in a run config.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GateConfig {
    /// K, the number of anchors (default 10; the paper's gate never false-enabled at K ≥ 10).
    #[serde(deserialize_with = "crate::domain::serde_words::at_least_one", default = "d_anchors")]
    pub anchors: usize,
    /// α of the one-sided sign test (default 0.05).
    #[serde(default = "d_alpha")]
    pub alpha: f64,
    /// A trusted (stronger) judge, queried in both orders on each anchor and cached in
    /// `<run>/trusted_verdicts.jsonl`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trusted: Option<JudgeConfig>,
    /// Or a labels file (JSON Lines `{"a", "b", "better"}`, base ids; `better` = a base id or
    /// `"tie"`), relative to the config's folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels: Option<PathBuf>,
}

fn d_anchors() -> usize {
    10
}
fn d_alpha() -> f64 {
    0.05
}

impl GateConfig {
    /// Check K ≥ 1, 0 < α < 1 and exactly one label source.
    ///
    /// # Errors
    /// [`InvalidSetting`].
    pub fn check(&self) -> Result<(), InvalidSetting> {
        if self.anchors == 0 {
            return Err(InvalidSetting::new("gate.anchors", "0 must be ≥ 1"));
        }
        if !(self.alpha > 0.0 && self.alpha < 1.0) {
            return Err(InvalidSetting::new("gate.alpha", format!("{} must be in (0, 1)", self.alpha)));
        }
        self.source().map(|_| ())
    }

    /// The one label source: the trusted judge or the labels file.
    ///
    /// # Errors
    /// [`InvalidSetting`] at `gate` when both or neither are given.
    pub fn source(&self) -> Result<LabelSource<'_>, InvalidSetting> {
        match (&self.trusted, &self.labels) {
            (Some(_), Some(_)) => {
                Err(InvalidSetting::new("gate", "give either `trusted` (a judge) or `labels` (a file), not both"))
            }
            (None, None) => {
                Err(InvalidSetting::new("gate", "needs a label source: `trusted: {<judge>}` or `labels: FILE`"))
            }
            (Some(t), None) => Ok(LabelSource::Trusted(t)),
            (None, Some(l)) => Ok(LabelSource::Labels(l)),
        }
    }
}

/// Where a trusted-anchor gate's labels come from (docs/identifiability.md).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LabelSource<'a> {
    /// A trusted judge, queried in both orders on each anchor.
    Trusted(&'a JudgeConfig),
    /// A labels file (JSON Lines `{"a", "b", "better"}`).
    Labels(&'a Path),
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A family whose number a system's id goes on with (`M1` in `M10`) is said; a name that
    /// goes on with letters or a separator (`gpt-4` in `gpt-4o`, `llama3` in `llama3-70b`), a
    /// system given in pool.families, and an exact id are not.
    #[test]
    fn a_family_matched_inside_a_longer_number_is_said() {
        let ids: Vec<String> =
            ["M1", "M10", "M11", "gpt-4o", "llama3-70b", "x2M1"].iter().map(|s| s.to_string()).collect();
        let none = vec![None; ids.len()];
        assert_eq!(numbered_matches("m1", &[0, 1, 2], &ids, &none), Some(vec!["M10".to_string(), "M11".to_string()]));
        assert_eq!(numbered_matches("M1", &[0], &ids, &none), None);
        assert_eq!(numbered_matches("gpt-4", &[3], &ids, &none), None);
        assert_eq!(numbered_matches("llama3", &[4], &ids, &none), None);
        assert_eq!(numbered_matches("1", &[5], &ids, &none), None, "1 after M, not after a digit");
        assert_eq!(numbered_matches("2M1", &[5], &ids, &none), None, "2 after x, not after a digit");
        let mut given = none.clone();
        given[1] = Some("M1".into());
        assert_eq!(numbered_matches("M1", &[0, 1, 2], &ids, &given), Some(vec!["M11".to_string()]));
    }
    use crate::config::normalize;

    #[test]
    fn normalize_resolves_parent_components() {
        assert_eq!(normalize(Path::new("configs/../runs/x")), PathBuf::from("runs/x"));
        assert_eq!(normalize(Path::new("../data/./p.jsonl")), PathBuf::from("../data/p.jsonl"));
        assert_eq!(normalize(Path::new("a/..")), PathBuf::from("."));
    }

    /// A panel config's faults, each named by its key, before the pool is read.
    #[test]
    fn panel_configs_are_checked_and_a_panel_of_one_is_a_judge() {
        let err = |judges: &str, extra: &str| {
            let y = format!("name: x\npool: {{file: p.jsonl}}\nk: 2\n{judges}{extra}");
            match crate::store::yaml::from_str::<RawConfig>(&y) {
                Err(e) => e.0,
                Ok(raw) => Config::from_raw(raw, Path::new("c.yaml")).expect_err("refused").to_string(),
            }
        };
        let two = "judges:\n  - {name: cheap, mock: {}}\n  - {name: frontier, trusted: true, mock: {}}\n";
        let cases: &[(&str, &str, &str)] = &[
            (
                "judge: {mock: {}}\n",
                "judges:\n  - {name: a, mock: {}}\n",
                "judges: give either `judge` (one judge) or `judges` (a panel), not both",
            ),
            ("", "", "judge: missing: give `judge: {mock: {...}}`"),
            ("judges: []\n", "", "(key `judges`): an empty list: give the panel's judges"),
            (
                "judges:\n  - {name: a, mock: {}}\n  - {name: a, mock: {}}\n",
                "",
                "judges[1].name: \"a\" names two judges",
            ),
            (
                "judges:\n  - {name: cheap, mock: {}}\n  - {name: Cheap, mock: {}}\n",
                "",
                "judges[1].name: \"Cheap\" and \"cheap\" differ only by case",
            ),
            (
                "judges:\n  - {name: \" a\", mock: {}}\n  - {name: b, mock: {}}\n",
                "",
                "judges[0].name: \" a\" must be a plain folder name",
            ),
            ("judges:\n  - {name: a/b, mock: {}}\n  - {name: b, mock: {}}\n", "", "judges[0].name: \"a/b\" must be"),
            (
                "judges:\n  - {name: a, mock: {}}\n  - {mock: {}}\n",
                "",
                "judges[1].name: missing or empty: every judge of a panel has a `name`",
            ),
            // A name is a folder of the run: `..` would put a judge's prompt beside the run's own files.
            ("judges:\n  - {name: b, mock: {}}\n  - {name: \"..\", mock: {}}\n", "", "judges[1].name: \"..\" must be"),
            ("judges:\n  - {name: \".\", mock: {}}\n  - {name: b, mock: {}}\n", "", "judges[0].name: \".\" must be"),
            (
                "judges:\n  - {name: a\\b, mock: {}}\n  - {name: b, mock: {}}\n",
                "",
                "judges[0].name: \"a\\\\b\" must be",
            ),
            (
                "judges:\n  - {name: a, trusted: true, mock: {}}\n  - {name: b, trusted: true, mock: {}}\n",
                "",
                "judges[1].trusted: judges[0] (\"a\") is `trusted: true` too; mark the one judge",
            ),
            (
                two,
                "acquisition: {dispatch: batch}\n",
                "acquisition.dispatch: a panel runs `wait_for_batch` or `pipelined`",
            ),
            (two, "design: paired\n", "design: a panel runs design single only for now"),
            (two, "acquisition: {strategy: random}\n", "acquisition.strategy: a panel picks by its own top-k rule"),
            (
                two,
                "acquisition: {orders: single}\n",
                "acquisition.orders: a panel sends both orders of a pair to one judge",
            ),
            (two, "acquisition: {confidence: 0.05}\n", "acquisition.confidence: the confidence stop applies"),
            (
                "judges:\n  - {name: a, mock: {}, replay: {file: r.jsonl}}\n",
                "",
                "has 2 judge blocks; give exactly one of `mock`, `openai`, `synthetic`, `replay`",
            ),
            ("judges:\n  - {name: a}\n", "", "has 0 judge blocks"),
            // `prior:` outdented to the dash swallows the judge's block below it.
            (
                "judges:\n  - name: a\n  prior: {kappa: {mean: 1, sd: 0.5}}\n    mock: {}\n  - {name: b, mock: {}}\n",
                "",
                "(indented under it: every key of a judge starts in the column of its `name`)",
            ),
            (
                "judges:\n  - {name: a, family: x, mock: {}}\n",
                "",
                "judges[0].family: a judge's family is a covariate of a panel",
            ),
            ("judges:\n  - {name: a, mock: {}, judge: {mock: {}}}\n", "", "unknown field `judge`"),
        ];
        for (judges, extra, want) in cases {
            let e = err(judges, extra);
            assert!(e.contains(want), "{judges}{extra}: {e}");
        }
        // One entry is the judge it holds; its name and trust have nothing to say alone.
        let y = "name: x\npool: {file: p.jsonl}\nk: 2\njudges:\n  - {name: solo, trusted: true, mock: {seed: 3}}\n";
        let mut raw = crate::store::yaml::from_str::<RawConfig>(y).unwrap();
        check_judges(&mut raw).unwrap();
        assert!(raw.judges.is_empty());
        let JudgeConfig::Mock(m) = raw.judge.as_ref().unwrap() else { panic!("a mock judge") };
        assert_eq!(m.seed, 3);
        // A panel's config copy reads back as the same panel.
        let y = format!("name: x\npool: {{file: p.jsonl}}\nk: 2\n{two}");
        let raw = crate::store::yaml::from_str::<RawConfig>(&y).unwrap();
        let back = crate::store::yaml::from_str::<RawConfig>(&crate::store::yaml::to_string(&raw).unwrap()).unwrap();
        assert_eq!(back, raw);
        assert_eq!((raw.judges[1].name.as_str(), raw.judges[1].trusted), ("frontier", true));
    }

    /// A judge with two blocks is named as such, not by the first fault the parser meets in
    /// one of them (an `openai:` without its `base_url`), also when an override adds a block.
    #[test]
    fn a_judge_with_two_blocks_is_named_before_the_faults_inside_them() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, judge: &str| {
            let p = dir.path().join(name);
            std::fs::write(&p, format!("name: x\npool: {{file: p.jsonl}}\nk: 2\n{judge}")).unwrap();
            p
        };
        let one = write("one.yaml", "judge:\n  openai: {model: m}\n  mock: {}\n");
        assert_eq!(
            Config::load(&one).unwrap_err().to_string(),
            format!(
                "{}: line 4: `judge` has 2 judge blocks (`mock`, `openai`); give exactly one of `mock`, `openai`, `synthetic`, `replay`",
                one.display()
            )
        );
        let panel = write(
            "panel.yaml",
            "judges:\n  - {name: a, mock: {}}\n  - name: b\n    openai: {model: m}\n    mock: {}\n",
        );
        let e = Config::load(&panel).unwrap_err().to_string();
        assert!(e.ends_with("line 6: `judges[1]` has 2 judge blocks (`mock`, `openai`); give exactly one of `mock`, `openai`, `synthetic`, `replay`"), "{e}");
        // With an override: the file's own fault stays the file's; a block an override adds
        // is the override's.
        let set = |a: &str| super::super::overrides::Override::parse(a).unwrap();
        let e = Config::load_with(&one, &[set("k=3")]).unwrap_err().to_string();
        assert!(e.contains("line 4: `judge` has 2 judge blocks"), "{e}");
        let good = write("good.yaml", "judges:\n  - {name: a, mock: {}}\n  - {name: b, mock: {}}\n");
        let e = Config::load_with(&good, &[set("judges.1.replay={file: r.jsonl}")]).unwrap_err().to_string();
        assert_eq!(
            e,
            "--set judges.1.replay={file: r.jsonl}: `judges[1]` has 2 judge blocks (`mock`, `replay`); give exactly one of `mock`, `openai`, `synthetic`, `replay`"
        );
    }

    #[test]
    fn zero_in_flight_is_named_by_both_names_of_the_setting() {
        for key in ["batch_size", "concurrency"] {
            let y =
                format!("name: x\npool: {{file: p.jsonl}}\nk: 2\njudge: {{mock: {{}}}}\nacquisition:\n  {key}: 0\n");
            let raw = crate::store::yaml::from_str::<RawConfig>(&y).expect("parses");
            let e = Config::from_raw(raw, Path::new("c.yaml")).expect_err("0 in flight").to_string();
            assert!(
                e.ends_with(
                    "acquisition.concurrency (or batch_size, its older name): 0 must be ≥ 1 (queries in flight at most)"
                ),
                "{e}"
            );
        }
    }

    #[test]
    fn write_ahead_without_pipelined_dispatch_is_named() {
        let y = "name: x\npool: {file: p.jsonl}\nk: 2\njudge: {mock: {}}\nacquisition:\n  write_ahead: 4\n";
        let raw = crate::store::yaml::from_str::<RawConfig>(y).expect("parses");
        let e = Config::from_raw(raw, Path::new("c.yaml")).expect_err("wait-for-batch").to_string();
        assert!(e.ends_with("acquisition.write_ahead: 4 applies to `dispatch: pipelined` only (wait-for-batch sends each batch as it is picked; 0 or no value here)"), "{e}");
        assert_eq!(
            Dispatch::Batch.check_write_ahead(Some(2), 8).unwrap_err(),
            "2 applies to `dispatch: pipelined` only (a provider batch job is made of the round as it is picked; 0 or no value here)"
        );
        // 0 is the default, also written out; it is stored as no value.
        let dir = tempfile::tempdir().unwrap();
        let items = r#"[{"id": "a", "text": "one", "quality": 1}, {"id": "b", "text": "two two", "quality": 2}, {"id": "c", "text": "three", "quality": 3}]"#;
        std::fs::write(
            dir.path().join("p.jsonl"),
            format!("{{\"pool_id\": \"p\", \"source\": \"s\", \"items\": {items}}}\n"),
        )
        .unwrap();
        let y0 = y.replace("write_ahead: 4", "write_ahead: 0");
        let c0 = crate::store::yaml::from_str::<RawConfig>(&y0).unwrap();
        let c = Config::from_raw(c0, &dir.path().join("c.yaml")).unwrap();
        assert_eq!(c.raw.acquisition.write_ahead, None);
        // More than `concurrency` ahead.
        let y9 = y.replace("write_ahead: 4", "dispatch: pipelined\n  concurrency: 8\n  write_ahead: 9");
        let e = Config::from_raw(crate::store::yaml::from_str::<RawConfig>(&y9).unwrap(), Path::new("c.yaml"))
            .expect_err("9 > 8")
            .to_string();
        assert!(e.contains("acquisition.write_ahead: 9 must be at most `concurrency` (8)"), "{e}");
    }

    #[test]
    fn concurrency_and_batch_size_together_are_named_as_one_setting() {
        let y = "name: x\npool: {file: p.jsonl}\nk: 2\njudge: {mock: {}}\nacquisition:\n  batch_size: 8\n  concurrency: 32\n";
        let e = super::super::one_setting_hint(crate::store::yaml::from_str::<RawConfig>(y).unwrap_err().0);
        assert!(e.contains("duplicate field `concurrency`"), "{e}");
        // Placed at the second of the two names (the parser placed it at the mapping's start).
        let at = super::super::at_the_second_name(crate::store::yaml::from_str::<RawConfig>(y).unwrap_err().0, y);
        assert_eq!(at, "line 7 (key `acquisition.concurrency`): duplicate field `concurrency`");
        let both = super::super::one_setting_hint(at);
        assert_eq!(
            both,
            "line 7 (key `acquisition.concurrency`): duplicate field `concurrency`; `acquisition.concurrency` and \
             `acquisition.batch_size` are one setting (queries in flight): give one of them"
        );
        // Where the parser's excerpt stays, the hint goes after its first line, not below the excerpt.
        assert!(e.lines().next().unwrap().ends_with("`acquisition.concurrency` and `acquisition.batch_size` are one setting (queries in flight): give one of them"), "{e}");
    }

    #[test]
    fn unknown_key_names_line_and_key() {
        let y = "name: x\npool: {file: p.jsonl}\nk: 2\njudge: {mock: {}}\nbudgett: {max_comparisons: 3}\n";
        let e = crate::store::yaml::from_str::<RawConfig>(y).unwrap_err().0;
        assert!(e.contains("budgett"), "{e}");
        assert!(e.contains("line 5") || e.contains("5:"), "{e}");
    }
}

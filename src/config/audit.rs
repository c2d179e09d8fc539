//! The audit document (`topk-judge audit CONFIG`, docs/audit.md): a judge and the pairs to
//! judge in both orders, from a pairs file or as probes built from a pool.
//!
//! ```yaml
//! name: tutorial              # outputs in <out_dir>/<name>/
//! out_dir: ../runs            # default: runs/ in the working directory
//! judge: {mock: {pos_bias: 1.0, verb_per_word: 0.02}}   # same JudgeConfig as `run`
//! pairs: ../data/tutorial_pairs.jsonl                    # either a pairs file ...
//! # pool: {file: ../data/summeval_pools.jsonl, id: POOL_ID, transform: elaborated,
//! #        max_items: 16, pairs: 0, seed: 0}            # ... or probes built from a pool
//! concurrency: 8              # queries in flight (default 8)
//! budget: {max_usd: 0.50}     # a live judge needs a budget (or `budget: unlimited`): enforced
//!                             # in flight, over everything this folder's books hold
//! level: 0.95                 # confidence level of the Wilson intervals
//! ```

use super::budget::BudgetConfig;
use super::judge::JudgeConfig;
use super::{ConfigError, sections};
use crate::analysis::audit::{self, PairSpec};
use crate::analysis::render::RenderKind;
use crate::domain::invalid::InvalidSetting;
use crate::judge::replay::Recording;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Probes built from a pool (config key `pool`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuditPoolRef {
    /// JSON Lines pool file (relative to the config's folder).
    pub file: PathBuf,
    /// Pool id; default: the first pool in the file.
    #[serde(default)]
    pub id: Option<String>,
    /// The content-free rendering each answer is probed against (`elaborated` or `markdown`).
    pub transform: RenderKind,
    /// Probe at most this many items, in pool order (default: all).
    #[serde(default, deserialize_with = "crate::domain::serde_words::opt_whole")]
    pub max_items: Option<usize>,
    /// Also draw this many item pairs for the swap test and order averaging (default 0: the swap
    /// test then runs on the probes).
    #[serde(default, deserialize_with = "crate::domain::serde_words::whole")]
    pub pairs: usize,
    /// Seed of the pair draw.
    #[serde(default, deserialize_with = "crate::domain::serde_words::whole")]
    pub seed: u64,
}

fn d_conc() -> usize {
    8
}
fn d_level() -> f64 {
    0.95
}

/// The audit configuration as written in YAML.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawAuditConfig {
    /// Audit name: outputs go to `<out_dir>/<name>/`.
    pub name: String,
    /// Output folder (relative to the config's folder); default `runs` in the working directory.
    #[serde(default)]
    pub out_dir: Option<PathBuf>,
    /// The judge (as in `run`).
    pub judge: JudgeConfig,
    /// A pairs file (JSON Lines; [`crate::analysis::audit::PairSpec`]).
    #[serde(default)]
    pub pairs: Option<PathBuf>,
    /// Or probes built from a pool.
    #[serde(default)]
    pub pool: Option<AuditPoolRef>,
    /// Queries in flight at once (default 8).
    #[serde(deserialize_with = "crate::domain::serde_words::at_least_one", default = "d_conc")]
    pub concurrency: usize,
    /// The budget, as in `run`: `{max_usd, max_comparisons}` or `unlimited`; a live judge needs
    /// one. `max_usd` bounds everything the audit folder's books hold, enforced in flight.
    #[serde(default, deserialize_with = "super::budget::de_budget")]
    pub budget: BudgetConfig,
    /// The older spelling of `budget.max_usd` (kept for old configs; give one of them).
    #[serde(default, skip_serializing)]
    pub max_usd: Option<f64>,
    /// Confidence level of the intervals (default 0.95).
    #[serde(default = "d_level")]
    pub level: f64,
}

/// Where the audited pairs came from.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AuditSource {
    /// A pairs file.
    Pairs {
        /// The file.
        file: PathBuf,
    },
    /// Probes (and pairs) built from a pool.
    Pool {
        /// The pool file.
        file: PathBuf,
        /// Pool id.
        pool_id: String,
        /// The rendering.
        transform: RenderKind,
    },
}

/// A validated audit configuration with its pairs built.
#[derive(Debug, Clone)]
pub struct AuditConfig {
    /// The raw configuration, paths resolved.
    pub raw: RawAuditConfig,
    /// The config file.
    pub path: PathBuf,
    /// The audit folder, `<out_dir>/<name>`, holding its books and audit.json.
    pub run_dir: PathBuf,
    /// The pairs and probes to judge.
    pub pairs: Vec<PairSpec>,
    /// Their source.
    pub source: AuditSource,
    /// Notes from building probes (skipped items).
    pub build_notes: Vec<String>,
    /// The recording, when the judge is a replay (the audit then reads verdicts, asks nothing).
    pub recording: Option<Recording>,
}

/// A run config given to `audit` (it has `k`, `model` or `acquisition`, which an audit config
/// has not):
/// say so, rather than the first field the audit's parse misses.
fn run_config_given(path: &Path, e: ConfigError) -> ConfigError {
    let Ok(text) = std::fs::read_to_string(path) else { return e };
    let Ok(doc) = crate::store::yaml::from_str::<serde_json::Value>(&text) else { return e };
    let run_keys = ["k", "model", "acquisition", "judges"];
    let has: Vec<&str> = run_keys.iter().copied().filter(|k| doc.get(k).is_some()).collect();
    if has.is_empty() {
        return e;
    }
    ConfigError::Yaml {
        path: path.to_owned(),
        msg: format!(
            "this is a run config (it has {}): `topk-judge audit` takes an audit config, with `pairs:` (a pairs file) or `pool:` and a transform (verbosity probes; docs/audit.md, e.g. configs/llmbar-audit.yaml); run this one with `topk-judge run`",
            has.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", ")
        ),
    }
}

impl AuditConfig {
    /// Read, parse and validate an audit config, then read the pairs file or build the probes.
    ///
    /// # Errors
    /// [`ConfigError`] naming file and key, or the pairs file and line ([`ConfigError::InputLine`]).
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        Self::load_with(path, &[])
    }

    /// [`AuditConfig::load`] with command-line overrides applied before any check
    /// ([`super::overrides`]).
    ///
    /// # Errors
    /// As [`AuditConfig::load`]; a fault an override brings names the override.
    pub fn load_with(path: &Path, overrides: &[super::overrides::Override]) -> Result<Self, ConfigError> {
        // `max_usd` is the older spelling of `budget.max_usd`: an override under one name sets
        // the file's line under the other (as `acquisition.batch_size` replaces `concurrency`).
        let spelled = |doc: &serde_json::Value, old: bool| {
            if old { doc.get("max_usd").is_some() } else { doc.get("budget").and_then(|b| b.get("max_usd")).is_some() }
        };
        let mut overrides = overrides.to_vec();
        if overrides.iter().any(|o| o.key == ["max_usd"] || o.key == ["budget", "max_usd"])
            && let Ok(doc) = super::read_document::<serde_json::Value>(path)
        {
            for o in &mut overrides {
                if o.key == ["budget", "max_usd"] && spelled(&doc, true) && !spelled(&doc, false) {
                    o.key = vec!["max_usd".into()];
                } else if o.key == ["max_usd"] && spelled(&doc, false) && !spelled(&doc, true) {
                    o.key = vec!["budget".into(), "max_usd".into()];
                }
            }
        }
        let overrides = &overrides[..];
        let raw = super::overrides::read_document_with(path, overrides).map_err(|e| run_config_given(path, e))?;
        Self::from_raw(raw, path).map_err(|e| super::overrides::name_the_override(e, overrides))
    }

    /// Validate a parsed config; relative paths resolve against `path`'s folder. The sections:
    /// name and limits, the judge, the pairs (read or built), then what the judge needs of them.
    ///
    /// # Errors
    /// As [`AuditConfig::load`].
    pub fn from_raw(mut raw: RawAuditConfig, path: &Path) -> Result<Self, ConfigError> {
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let inv = |e: InvalidSetting| ConfigError::invalid(path, e);
        sections::check_name(&raw.name, "audit").map_err(inv)?;
        if raw.concurrency == 0 {
            return Err(inv(InvalidSetting::new("concurrency", "0 must be ≥ 1")));
        }
        if !(raw.level > 0.0 && raw.level < 1.0) {
            return Err(inv(InvalidSetting::new("level", format!("{} must be in (0, 1), e.g. 0.95", raw.level))));
        }
        sections::check_usd(raw.max_usd, "max_usd").map_err(inv)?;
        if let Some(m) = raw.max_usd.take() {
            if raw.budget.max_usd.is_some() || raw.budget.unlimited {
                return Err(inv(InvalidSetting::new(
                    "max_usd",
                    "is the older spelling of budget.max_usd: give one of them",
                )));
            }
            raw.budget.max_usd = Some(m);
        }
        super::budget::check_budget(&raw.budget, matches!(raw.judge, JudgeConfig::Openai(_))).map_err(inv)?;
        let recording = check_judge(&mut raw.judge, &dir).map_err(inv)?;
        let run_dir = sections::out_folder(&dir, raw.out_dir.as_deref(), &raw.name, "runs").map_err(inv)?;
        let (pairs, source, build_notes) = match (&mut raw.pairs, &mut raw.pool) {
            (Some(file), None) => {
                *file = sections::resolve(&dir, file, "pairs").map_err(inv)?;
                let pairs = read_pairs(file, path)?;
                let notes = audit::same_text_notes(&pairs);
                (pairs, AuditSource::Pairs { file: file.clone() }, notes)
            }
            (None, Some(p)) => probes(p, path, &dir)?,
            _ => {
                return Err(inv(InvalidSetting::new(
                    "pairs",
                    "give exactly one of `pairs: FILE` (a pairs file) or `pool: {file, id, transform}` (probes from a pool)",
                )));
            }
        };
        check_pairs_for_judge(&raw.judge, &pairs, &source).map_err(inv)?;
        Ok(Self { raw, path: path.to_owned(), run_dir, pairs, source, build_notes, recording })
    }
}

/// The audit's judge: a live judge's prompt resolves against the config's folder `dir`, as in
/// `run`; a replay judge's recording is read (and returned) and must hold the judge it selects;
/// any other judge must build.
fn check_judge(judge: &mut JudgeConfig, dir: &Path) -> Result<Option<Recording>, InvalidSetting> {
    if let JudgeConfig::Openai(oc) = judge {
        oc.prompt = sections::resolve(dir, &oc.prompt, "judge.openai.prompt")?;
    }
    match judge {
        JudgeConfig::Replay(r) => {
            r.file = sections::resolve(dir, &r.file, "judge.replay.file")?;
            let rec = Recording::read(&r.file).map_err(|e| InvalidSetting::new("judge.replay", e.to_string()))?;
            if rec.matching(r.judge.as_deref(), r.prompting.as_deref()).is_empty() {
                let e = rec.select_one(r.judge.as_deref(), r.prompting.as_deref()).unwrap_err();
                return Err(InvalidSetting::new("judge.replay", e.to_string()));
            }
            Ok(Some(rec))
        }
        other => {
            super::judge::make_judge(other).map_err(|msg| InvalidSetting::new("judge", msg.to_string()))?;
            Ok(None)
        }
    }
}

/// The pairs of a pairs file (its path resolved), named by the document at `path`.
fn read_pairs(file: &Path, path: &Path) -> Result<Vec<PairSpec>, ConfigError> {
    let text = std::fs::read_to_string(file).map_err(|e| {
        ConfigError::invalid(
            path,
            InvalidSetting::new(
                "pairs",
                format!(
                    "cannot read the pairs file {}: {e}; expected a JSON Lines file of pairs, relative to the config's folder",
                    file.display()
                ),
            ),
        )
    })?;
    audit::parse_pairs(crate::domain::text::strip_bom_str(&text)).map_err(|e| ConfigError::InputLine {
        what: "pairs file",
        path: file.to_owned(),
        line: e.line,
        msg: e.msg,
    })
}

/// The probes (and the pairs drawn) of `pool:`, with the notes of items skipped.
fn probes(
    p: &mut AuditPoolRef,
    path: &Path,
    dir: &Path,
) -> Result<(Vec<PairSpec>, AuditSource, Vec<String>), ConfigError> {
    let inv = |e: InvalidSetting| ConfigError::invalid(path, e);
    p.file = sections::resolve(dir, &p.file, "pool.file").map_err(inv)?;
    let pool = sections::read_pool(path, &p.file, p.id.as_deref())?;
    if p.max_items == Some(0) {
        return Err(inv(InvalidSetting::new(
            "pool.max_items",
            "0 takes no item; expected the number of items to probe (≥ 1), or leave it out for all",
        )));
    }
    let (mut probes, notes) = audit::probes_from_pool(&pool, p.transform, p.max_items);
    if probes.is_empty() {
        return Err(inv(InvalidSetting::new(
            "pool",
            format!("no probe could be built from pool {:?}: {}", pool.pool_id, notes.join("; ")),
        )));
    }
    let mut pairs = audit::pairs_from_pool(&pool, p.pairs, &mut crate::domain::rng::stream(p.seed, "audit-pairs", 0));
    if pairs.len() < p.pairs {
        return Err(inv(InvalidSetting::new(
            "pool.pairs",
            format!(
                "{} pairs asked, but pool {:?} has only {} pairs of items with text{}",
                p.pairs,
                pool.pool_id,
                pairs.len(),
                if pool.identical_texts().is_empty() { "" } else { " (pairs of items with identical text left out)" }
            ),
        )));
    }
    let mut notes = notes;
    if p.pairs > 0 {
        for g in pool.identical_texts() {
            let ids: Vec<&str> = g.iter().map(|&i| pool.items[i].id.as_str()).collect();
            notes.push(format!(
                "items {} have identical text: pairs of them are not drawn (a judge cannot tell them apart; their verdicts would show the position alone)",
                ids.join(", ")
            ));
        }
    }
    pairs.append(&mut probes);
    let source = AuditSource::Pool { file: p.file.clone(), pool_id: pool.pool_id.clone(), transform: p.transform };
    Ok((pairs, source, notes))
}

/// What the judge needs of the pairs: a live judge the text of both answers, the mock judge
/// their gold quality.
fn check_pairs_for_judge(judge: &JudgeConfig, pairs: &[PairSpec], source: &AuditSource) -> Result<(), InvalidSetting> {
    for p in pairs {
        for (k, side) in [("x", &p.x), ("y", &p.y)] {
            match judge {
                JudgeConfig::Openai(_) if side.text.as_deref().is_none_or(|t| t.trim().is_empty()) => {
                    let whence = match source {
                        AuditSource::Pairs { file } => format!("pairs file {}", file.display()),
                        AuditSource::Pool { file, .. } => format!("pool file {}", file.display()),
                    };
                    return Err(InvalidSetting::new(
                        "judge.openai",
                        format!(
                            "pair {:?} ({whence}) has no answer text on {k}; a live judge needs the text of both answers (\"{k}\": {{\"text\": …}}), or audit it with the mock judge",
                            p.id
                        ),
                    ));
                }
                JudgeConfig::Mock(_) if side.quality.is_none() => {
                    return Err(InvalidSetting::new(
                        "judge.mock",
                        format!("the mock judge needs gold `quality` on both sides; pair {:?} has none on {k}", p.id),
                    ));
                }
                _ => {}
            }
        }
    }
    Ok(())
}

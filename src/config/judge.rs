//! A judge section of a document ([`JudgeConfig`], externally tagged: `judge: {mock: {...}}`):
//! checked against the pool it will judge, and built into the [`Judge`] it asks for.

use crate::domain::invalid::InvalidSetting;
use crate::domain::pool::Pool;
use crate::judge::mock::MockConfig;
use crate::judge::setup::JudgeSetupError;
use crate::judge::{Judge, JudgeInfo};
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::sync::Arc;

/// Judge configuration (externally tagged: `judge: {mock: {...}}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
#[allow(clippy::large_enum_variant)] // built once per run; boxing would only add noise
pub enum JudgeConfig {
    /// Deterministic or keyed-stochastic mock (docs/model.md §4).
    Mock(MockConfig),
    /// The true judge of a synthetic pool (docs/model.md §7).
    Synthetic(crate::judge::synthetic::SyntheticJudgeConfig),
    /// OpenAI-compatible chat-completions endpoint (docs/model.md §4; see docs/live.md).
    Openai(Box<crate::judge::openai::OpenAiConfig>),
    /// Verdicts replayed from a recording (docs/replay.md).
    Replay(crate::judge::replay::ReplayConfig),
}

/// Check a judge config against the pool (and fill a synthetic judge's unset fields from the
/// synthetic pool spec). `key` is where it sits (`judge` or `gate.trusted`).
pub fn check_judge(
    j: &mut JudgeConfig,
    dir: &Path,
    pool: &Pool,
    synth: Option<&crate::analysis::synth::SynthSpec>,
    key: &str,
) -> Result<(), InvalidSetting> {
    match j {
        JudgeConfig::Mock(mc) => {
            let k = format!("{key}.mock");
            crate::judge::mock::MockJudge::new(mc.clone()).map_err(|e| InvalidSetting::within_block(&k, e))?;
            if let Some(sp) = &mc.self_preference {
                let key = format!("{k}.self_preference.systems");
                if !pool.is_systems() {
                    return Err(InvalidSetting::new(
                        key,
                        "a self-preference favours systems: it needs a run over many prompts (pool.ids) whose items carry `system`",
                    ));
                }
                if let Some((i, s)) = sp.systems.iter().enumerate().find(|(i, s)| sp.systems[..*i].contains(s)) {
                    return Err(InvalidSetting::new(
                        key,
                        format!("{s:?} is listed twice (at {i}); list each system once"),
                    ));
                }
                if let Some(s) = sp.systems.iter().find(|s| !pool.bases.contains(s)) {
                    return Err(InvalidSetting::new(
                        key,
                        format!("no system {s:?} in the run; its systems: {}", pool.bases.join(", ")),
                    ));
                }
            }
            if !mc.stand_in_quality
                && let Some(it) = pool.items.iter().find(|i| i.quality.is_none())
            {
                return Err(InvalidSetting::new(
                    k,
                    format!(
                        "the mock judge needs gold `quality` on every item; item {:?} has none (an imported benchmark has none: set judge.mock.stand_in_quality: true to try the path offline with an invented quality per system, or use a live or replay judge)",
                        it.id
                    ),
                ));
            }
        }
        JudgeConfig::Openai(oc) => {
            crate::judge::openai::prepare(oc, dir, pool).map_err(|e| {
                InvalidSetting::new(if key == "judge" { e.key } else { e.key.replacen("judge", key, 1) }, e.message)
            })?;
        }
        JudgeConfig::Synthetic(s) => {
            s.resolve(synth);
            s.check(pool).map_err(|e| InvalidSetting::within_block(&format!("{key}.synthetic"), e))?;
        }
        JudgeConfig::Replay(r) => {
            r.file = super::sections::resolve(dir, &r.file, &format!("{key}.replay.file"))?;
            let k = format!("{key}.replay");
            // The recording's faults are the file's; a selection that matches no single judge,
            // the selection's (`judge`, and `prompting` when given).
            let j = crate::judge::replay::ReplayJudge::new(r.clone()).map_err(|m| {
                use crate::judge::replay::ReplayError as E;
                let field = match &m {
                    E::Io { .. } | E::Line { .. } | E::Duplicate { .. } => "file",
                    E::NoJudge { .. } | E::SeveralJudges { .. } if r.judge.is_some() => "judge",
                    _ => return InvalidSetting::new(k.clone(), m.to_string()),
                };
                InvalidSetting::new(format!("{k}.{field}"), m.to_string())
            })?;
            j.check_pool(pool).map_err(|m| InvalidSetting::new(k, m.to_string()))?;
        }
    }
    Ok(())
}

/// Build the judge a config asks for.
///
/// # Errors
/// [`JudgeSetupError`], naming the config key.
pub fn make_judge(cfg: &JudgeConfig) -> Result<Arc<dyn Judge>, JudgeSetupError> {
    match cfg {
        JudgeConfig::Mock(m) => Ok(Arc::new(crate::judge::mock::MockJudge::new(m.clone())?)),
        JudgeConfig::Synthetic(s) => Ok(Arc::new(crate::judge::synthetic::SyntheticJudge::new(s.clone())?)),
        JudgeConfig::Openai(o) => Ok(Arc::new(crate::judge::openai::OpenAiJudge::from_config(o)?)),
        JudgeConfig::Replay(r) => Ok(Arc::new(crate::judge::replay::ReplayJudge::new(r.clone())?)),
    }
}

/// What is known about the judge a config asks for, without a query ([`JudgeInfo`]): its
/// description, cache keys, worst-case costs and prompt. A live judge's is built without its API
/// key and without an HTTP client, so a dry run or reading a run folder back needs neither.
///
/// # Errors
/// [`JudgeSetupError`], naming the config key.
pub fn judge_info(cfg: &JudgeConfig) -> Result<Arc<dyn JudgeInfo>, JudgeSetupError> {
    match cfg {
        JudgeConfig::Openai(o) => Ok(Arc::new(crate::judge::openai::OpenAiInfo::new((**o).clone())?)),
        JudgeConfig::Mock(m) => Ok(Arc::new(crate::judge::mock::MockJudge::new(m.clone())?)),
        JudgeConfig::Synthetic(s) => Ok(Arc::new(crate::judge::synthetic::SyntheticJudge::new(s.clone())?)),
        JudgeConfig::Replay(r) => Ok(Arc::new(crate::judge::replay::ReplayJudge::new(r.clone())?)),
    }
}

//! Building the judge a config asks for: the mock, the synthetic judge, an OpenAI-compatible
//! endpoint or the replay of a recording, each behind the [`Judge`] trait.

use super::Judge;
use crate::store::config::JudgeConfig;
use std::sync::Arc;

/// Build the judge a config asks for.
///
/// # Errors
/// A message naming the config key.
pub fn make_judge(cfg: &JudgeConfig) -> Result<Arc<dyn Judge>, String> {
    match cfg {
        JudgeConfig::Mock(m) => Ok(Arc::new(super::mock::MockJudge::new(m.clone())?)),
        JudgeConfig::Synthetic(s) => Ok(Arc::new(super::synthetic::SyntheticJudge::new(s.clone())?)),
        JudgeConfig::Openai(o) => Ok(Arc::new(super::openai::OpenAiJudge::from_config(o)?)),
        JudgeConfig::Replay(r) => Ok(Arc::new(super::replay::ReplayJudge::new(r.clone())?)),
    }
}

/// The judge a config asks for, without an API key (a live judge is built keyless): for cache
/// keys and descriptions when reading a run back, where nothing is sent.
///
/// # Errors
/// A message naming the config key.
pub fn make_judge_without_key(cfg: &JudgeConfig) -> Result<Arc<dyn Judge>, String> {
    match cfg {
        JudgeConfig::Openai(o) => Ok(Arc::new(super::openai::OpenAiJudge::new((**o).clone(), None)?)),
        other => make_judge(other),
    }
}

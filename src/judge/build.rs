//! Building the judge a config asks for: the mock, the synthetic judge, an OpenAI-compatible
//! endpoint or the replay of a recording, each behind the [`Judge`] trait.

use super::Judge;
use crate::domain::invalid::InvalidInput;
use crate::store::config::JudgeConfig;
use std::sync::Arc;

/// Why the judge a config asks for cannot be built.
#[derive(Debug, Clone, thiserror::Error)]
pub enum JudgeSetupError {
    /// A setting of the mock, synthetic or live judge out of range, or a pool without what the
    /// judge reads; the message names the key (`judge.mock.temperature = 0 must be > 0`).
    #[error(transparent)]
    Invalid(#[from] InvalidInput),
    /// The API key: its environment variable is not a name, is unset, or holds characters not
    /// allowed in an HTTP header. The key itself is never part of the message.
    #[error("judge.openai.api_key_env: {0}")]
    ApiKey(String),
    /// The prompt template cannot be read or rendered.
    #[error("judge.openai.prompt: {0}")]
    Prompt(String),
    /// The HTTP client cannot be built (TLS, proxy settings).
    #[error("building the HTTP client: {0}")]
    Http(String),
    /// The recording a replay judge answers from cannot be read, or names no single judge.
    #[error(transparent)]
    Recording(#[from] super::replay::ReplayError),
}

/// Build the judge a config asks for.
///
/// # Errors
/// [`JudgeSetupError`], naming the config key.
pub fn make_judge(cfg: &JudgeConfig) -> Result<Arc<dyn Judge>, JudgeSetupError> {
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
/// [`JudgeSetupError`], naming the config key.
pub fn make_judge_without_key(cfg: &JudgeConfig) -> Result<Arc<dyn Judge>, JudgeSetupError> {
    match cfg {
        JudgeConfig::Openai(o) => Ok(Arc::new(super::openai::OpenAiJudge::new((**o).clone(), None)?)),
        other => make_judge(other),
    }
}

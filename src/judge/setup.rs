//! Why a judge cannot be built from its settings ([`JudgeSetupError`]); the configuration layer
//! builds judges (`config::judge::make_judge`).

use crate::domain::invalid::InvalidInput;

/// Why the judge a config asks for cannot be built.
#[derive(Debug, Clone, thiserror::Error)]
pub enum JudgeSetupError {
    /// A setting of the mock, synthetic or live judge out of range, or a pool without what the
    /// judge reads; the message names the setting (`temperature = 0 must be > 0`), the config's
    /// check names it under the judge's key (`judges[1].mock.temperature: 0 must be > 0`).
    #[error(transparent)]
    Invalid(#[from] InvalidInput),
    /// The API key: its environment variable is not a name, is unset, or holds characters not
    /// allowed in an HTTP header. The key itself is never part of the message.
    #[error("judge.openai.api_key_env: {0}")]
    ApiKey(String),
    /// The base_url cannot be sent to: it holds the `***` of a run folder's copy of the config,
    /// or a `#fragment`.
    #[error("judge.openai.base_url: {0}")]
    BaseUrl(String),
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

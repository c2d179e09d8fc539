//! Judges: the async boundary where verdicts come from (SPEC §4).
//!
//! A [`Judge`] answers one ordered query (a shown first, b second) with a [`JudgeReply`]: an
//! outcome y ∈ [0, 1] (1 first-shown wins, 0 second-shown wins, ½ tie, or soft P(A)) or `None`
//! when the reply was invalid, plus token usage and cost in USD.

pub mod mock;
pub mod synthetic;

use crate::pool::Pool;
use serde::{Deserialize, Serialize};
use std::future::Future;
use std::pin::Pin;

/// Token usage of one verdict (tokens), as reported by the provider.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens (including cached ones).
    #[serde(default)]
    pub prompt_tokens: u64,
    /// Completion tokens (including reasoning ones).
    #[serde(default)]
    pub completion_tokens: u64,
    /// Of the prompt tokens, how many were served from the provider's cache.
    #[serde(default)]
    pub cached_tokens: u64,
    /// Of the completion tokens, how many were hidden reasoning.
    #[serde(default)]
    pub reasoning_tokens: u64,
}

impl Usage {
    /// Component-wise sum.
    pub fn add(&mut self, o: &Usage) {
        self.prompt_tokens += o.prompt_tokens;
        self.completion_tokens += o.completion_tokens;
        self.cached_tokens += o.cached_tokens;
        self.reasoning_tokens += o.reasoning_tokens;
    }
}

/// The answer of a judge to one ordered query.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JudgeReply {
    /// Outcome y ∈ [0, 1], or `None` if the reply was invalid (excluded from the fit).
    pub y: Option<f64>,
    /// Why the reply was invalid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invalid_reason: Option<String>,
    /// Raw reply text (live judges).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw: Option<String>,
    /// Tokens used, summed over attempts.
    #[serde(default)]
    pub usage: Usage,
    /// Cost in USD, summed over attempts.
    #[serde(default)]
    pub cost_usd: f64,
    /// Attempts made (1 = first try).
    #[serde(default = "one")]
    pub attempts: u32,
    /// Wall time of the query in milliseconds.
    #[serde(default)]
    pub latency_ms: u64,
}

fn one() -> u32 {
    1
}

/// A failed query (no verdict recorded).
#[derive(Debug, Clone, thiserror::Error)]
pub enum JudgeError {
    /// The endpoint failed; `retryable` says whether trying again may help.
    #[error("judge request failed{}: {message}", status.map(|s| format!(" (HTTP {s})")).unwrap_or_default())]
    Request {
        /// HTTP status, when there was one.
        status: Option<u16>,
        /// What happened (never contains the API key).
        message: String,
        /// Whether a retry may help (429, 5xx, timeouts).
        retryable: bool,
        /// Cost already incurred by this failed query (USD).
        cost_usd: f64,
    },
    /// The query cannot be sent as configured (e.g. the prompt exceeds the context).
    #[error("query {a} vs {b} cannot be judged: {message}")]
    Unjudgeable {
        /// First-shown item id.
        a: String,
        /// Second-shown item id.
        b: String,
        /// Why.
        message: String,
    },
}

/// A boxed, sendable future.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A judge of ordered pairs.
pub trait Judge: Send + Sync {
    /// Short description for logs and summaries (never secrets).
    fn describe(&self) -> String;

    /// Cache key of one ordered query: a hash of everything that determines the verdict (judge
    /// configuration, prompt, texts). At most one verdict per key is ever stored (SPEC §1).
    fn cache_key(&self, pool: &Pool, a: usize, b: usize) -> String;

    /// Worst-case cost of one query in USD, reserved before sending (0 for free judges).
    fn worst_case_usd(&self, _pool: &Pool, _a: usize, _b: usize) -> f64 {
        0.0
    }

    /// Whether this judge reports a cost (so `max_usd` applies).
    fn has_price(&self) -> bool {
        false
    }

    /// The judge's latent preference margin of `a` (shown first) over `b`, in its own score
    /// units, when it can state one without a query; `None` (the default) for judges that only
    /// return verdicts. The deterministic tutorial mock returns score(a, slot A) − score(b, slot B)
    /// (tutorial), of which its verdict is the sign. The bias audit uses it for the order-averaged
    /// verdict, (margin(X first) − margin(Y first)) / 2 = mean score of X − mean score of Y, in
    /// which the slot bonus cancels (the tutorial's `corrected_winner`; [`crate::audit`]).
    fn score_margin(&self, _pool: &Pool, _a: usize, _b: usize) -> Option<f64> {
        None
    }

    /// Judge the ordered query (a first, b second).
    fn judge<'a>(&'a self, pool: &'a Pool, a: usize, b: usize) -> BoxFuture<'a, Result<JudgeReply, JudgeError>>;
}

//! Judges: the async boundary where verdicts come from (docs/model.md §4).
//!
//! A [`Judge`] answers one ordered query (a shown first, b second) with a [`JudgeReply`]: an
//! outcome y ∈ [0, 1] (1 first-shown wins, 0 second-shown wins, ½ tie, or soft P(A)) or `None`
//! when the reply was invalid, plus token usage and cost in USD.

pub mod build;
pub mod mock;
pub mod openai;
pub mod replay;
pub mod synthetic;

use crate::store::pool::Pool;
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
    /// No verdict exists for this query and asking again will not make one (a replay judge's
    /// recording lacks it, under `missing: unavailable`). Not a failure: the run sets the pair
    /// aside for this invocation and acquisition moves on; nothing is stored or counted.
    #[error("unavailable: {message}")]
    Unavailable {
        /// Which query, and why (names the items).
        message: String,
    },
    /// The judge cannot go on (a replay judge's recording lacks a query, under `missing: fail`):
    /// the run sends nothing more, stores the verdicts in flight and stops as for a failing judge
    /// (`stop_reason: judge_failing`, this message).
    #[error("{message}")]
    Fatal {
        /// What happened and what to change.
        message: String,
    },
    /// A failure that is no one pair's fault (the endpoint is not there, refuses the key, does
    /// not know the model, rejects a request field): the message names the setting to change.
    #[error("{message}")]
    Endpoint {
        /// The setting to change (`base_url`, `api_key_env`, `model`, `max_tokens_field`, …, or a
        /// proxy variable such as `HTTP_PROXY`).
        setting: String,
        /// What happened and what to do (never contains the API key).
        message: String,
        /// Cost already incurred by this failed query (USD).
        cost_usd: f64,
    },
}

impl JudgeError {
    /// Cost already incurred by the failed query (USD).
    pub fn cost_usd(&self) -> f64 {
        match self {
            JudgeError::Request { cost_usd, .. } | JudgeError::Endpoint { cost_usd, .. } => *cost_usd,
            JudgeError::Unjudgeable { .. } | JudgeError::Unavailable { .. } | JudgeError::Fatal { .. } => 0.0,
        }
    }

    /// The setting an endpoint-wide failure names (`None`: the failure may be the pair's own).
    pub fn setting(&self) -> Option<&str> {
        match self {
            JudgeError::Endpoint { setting, .. } => Some(setting),
            _ => None,
        }
    }
}

/// Counters of a live judge for one invocation (requests, retries, invalid replies, …);
/// shown in the summary and result.json.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct JudgeStats {
    /// HTTP requests sent (every attempt).
    pub requests: u64,
    /// Retries after a 429, 5xx, timeout, connection error or malformed reply.
    pub retries: u64,
    /// HTTP 429 replies (incl. `insufficient_quota`).
    pub rate_limited: u64,
    /// HTTP 5xx (and 408/409/425) replies.
    pub server_errors: u64,
    /// Requests that timed out.
    pub timeouts: u64,
    /// Connection errors.
    pub connect_errors: u64,
    /// 2xx replies that were not a chat completion.
    pub malformed: u64,
    /// Other failed requests (4xx, auth).
    pub other_errors: u64,
    /// Replies without a usable verdict (each one, re-asked or not).
    pub invalid_replies: u64,
    /// Re-asks after an invalid reply.
    pub reasks: u64,
    /// Invalid replies by reason (`empty`, `refused`, `truncated`, …).
    pub invalid_by_reason: std::collections::BTreeMap<String, u64>,
    /// Queries over the context (detected before sending or by the server).
    pub context_overflows: u64,
    /// Replies without `usage` (booked at their worst case).
    pub usage_missing: u64,
    /// Verdicts taken from log-probabilities (soft P(A)).
    pub soft_verdicts: u64,
    /// Time spent waiting for the client-side rate limits, milliseconds (summed over requests).
    pub rate_limit_wait_ms: u64,
    /// Times the limit on requests in flight was cut after a 429 (adaptive concurrency).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub in_flight_cuts: u64,
    /// The lowest limit on requests in flight reached (absent: never cut).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_flight_lowest: Option<u64>,
    /// The limit on requests in flight at the end (absent: not cut, or restored).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_flight_limit_at_end: Option<u64>,
}

fn is_zero(x: &u64) -> bool {
    *x == 0
}

/// One summary line of a live judge's counters.
pub fn stats_line(j: &JudgeStats) -> String {
    let mut s = format!(
        "judge: {} requests, {} retries (429: {}, 5xx: {}, timeouts: {}, connection: {}, malformed: {}), {} other errors, {} invalid replies",
        j.requests,
        j.retries,
        j.rate_limited,
        j.server_errors,
        j.timeouts,
        j.connect_errors,
        j.malformed,
        j.other_errors,
        j.invalid_replies
    );
    if !j.invalid_by_reason.is_empty() {
        let parts: Vec<String> = j.invalid_by_reason.iter().map(|(k, v)| format!("{k} {v}")).collect();
        s.push_str(&format!(" ({})", parts.join(", ")));
    }
    s.push_str(&format!(", {} re-asks", j.reasks));
    if j.context_overflows > 0 {
        s.push_str(&format!(", {} over context", j.context_overflows));
    }
    if j.usage_missing > 0 {
        s.push_str(&format!(", {} replies without usage (booked at worst case)", j.usage_missing));
    }
    if j.soft_verdicts > 0 {
        s.push_str(&format!(", {} soft verdicts", j.soft_verdicts));
    }
    if j.in_flight_cuts > 0 {
        s.push_str(&format!(
            "; requests in flight cut {}× after 429s (lowest {}), {}",
            j.in_flight_cuts,
            j.in_flight_lowest.unwrap_or(1),
            match j.in_flight_limit_at_end {
                Some(l) => format!("{l} at the end"),
                None => "restored by the end".to_owned(),
            }
        ));
    }
    s
}

/// A boxed, sendable future.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A judge of ordered pairs.
pub trait Judge: Send + Sync {
    /// Short description for logs and summaries (never secrets).
    fn describe(&self) -> String;

    /// Cache key of one ordered query: a hash of everything that determines the verdict (judge
    /// configuration, prompt, texts). At most one verdict per key is ever stored (docs/model.md §1).
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
    /// which the slot bonus cancels (the tutorial's `corrected_winner`; [`crate::analysis::audit`]).
    fn score_margin(&self, _pool: &Pool, _a: usize, _b: usize) -> Option<f64> {
        None
    }

    /// Check the endpoint before the first query with a free request (live judges); returns
    /// warnings to show. The default has nothing to check.
    ///
    /// # Errors
    /// [`JudgeError::Endpoint`] when no query could succeed (nothing listening, key refused, …).
    fn preflight(&self) -> BoxFuture<'_, Result<Vec<String>, JudgeError>> {
        Box::pin(async { Ok(Vec::new()) })
    }

    /// Counters of this invocation (live judges); `None` for judges without any.
    fn stats(&self) -> Option<JudgeStats> {
        None
    }

    /// What a replay judge replays (the recording and the recorded judge); `None` for others.
    fn replay(&self) -> Option<replay::ReplayInfo> {
        None
    }

    /// The prompt this judge would send for (a, b), for `--dry-run`; `None` if it has none.
    fn preview(&self, _pool: &Pool, _a: usize, _b: usize) -> Option<String> {
        None
    }

    /// Judge the ordered query (a first, b second).
    fn judge<'a>(&'a self, pool: &'a Pool, a: usize, b: usize) -> BoxFuture<'a, Result<JudgeReply, JudgeError>>;
}

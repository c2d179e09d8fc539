//! Judges: the async boundary where verdicts come from (docs/model.md §4).
//!
//! A [`Judge`] answers one ordered query (a shown first, b second) with a [`JudgeReply`]: an
//! outcome y ∈ [0, 1] (1 first-shown wins, 0 second-shown wins, ½ tie, or soft P(A)) or `None`
//! when the reply was invalid, plus token usage and cost in USD.

pub mod keyed;
pub mod mock;
pub mod openai;
pub mod panel;
pub mod replay;
pub mod setup;
pub mod synthetic;

use crate::domain::pool::Pool;
use crate::domain::verdict::{InvalidReason, JudgeReply};
use serde::{Deserialize, Serialize};
use std::future::Future;
use std::pin::Pin;

/// ` (HTTP 500)` after "judge request failed", unless the message says the status itself
/// (`HTTP 500: {…}`, `HTTP 200 body is not JSON`): said once.
fn status_part(status: Option<u16>, message: &str) -> String {
    match status {
        Some(s) if !message.starts_with(&format!("HTTP {s}")) => format!(" (HTTP {s})"),
        _ => String::new(),
    }
}

/// A failed query (no verdict recorded).
#[derive(Debug, Clone, thiserror::Error)]
pub enum JudgeError {
    /// The endpoint failed; `retryable` says whether trying again may help.
    #[error("judge request failed{}: {message}", status_part(*status, message))]
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
        /// Why the query cannot be sent (e.g. the rendered prompt, in tokens, exceeds the model's
        /// context).
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
    /// Not sent: the run stopped sending ([`Judge::stop_sending`], a first Ctrl-C) before the
    /// query's next request left. Not a failure of the pair or the judge.
    #[error("not sent: the run stopped sending")]
    NotSent {
        /// Cost already incurred by earlier attempts of this query (USD).
        cost_usd: f64,
    },
    /// The request may have run and been billed, but nothing says what it answered or cost (a
    /// provider batch job whose files have no line for it): booked as possibly billed at
    /// `cost_usd`, its worst case, as a request cut off by a kill is.
    #[error("{message}")]
    PossiblyBilled {
        /// Which job, and why its outcome is unknown.
        message: String,
        /// Its worst case, USD.
        cost_usd: f64,
    },
    /// The provider ended the query's batch job (expired, or cancelled on its side) before the
    /// request ran: not billed, and no failure of the pair (it is not set aside for it); it
    /// counts towards the run's rounds without any verdict.
    #[error("{message}")]
    NotRun {
        /// Which job and how it ended.
        message: String,
    },
    /// The query went out in a provider batch job that has not ended in this invocation (`run
    /// --detach`, or a job that could not be read): nothing is booked for it now, its intent
    /// stays open, and the next run books it from the job's output (docs/live.md, "Batch
    /// dispatch").
    #[error("in batch job {batch}: {message}")]
    Pending {
        /// The batch job (or the uploaded input file, before a job is known).
        batch: String,
        /// Why it is left open.
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
            JudgeError::Request { cost_usd, .. }
            | JudgeError::Endpoint { cost_usd, .. }
            | JudgeError::PossiblyBilled { cost_usd, .. }
            | JudgeError::NotSent { cost_usd } => *cost_usd,
            JudgeError::Unjudgeable { .. }
            | JudgeError::Unavailable { .. }
            | JudgeError::Fatal { .. }
            | JudgeError::NotRun { .. }
            | JudgeError::Pending { .. } => 0.0,
        }
    }

    /// Add `usd` (USD, ≥ 0) to the cost this failure books, so no cost is dropped: a variant
    /// that carries no cost becomes a non-retryable [`JudgeError::Request`] with the same message
    /// and that cost.
    pub fn add_cost(&mut self, usd: f64) {
        match self {
            JudgeError::Request { cost_usd, .. }
            | JudgeError::Endpoint { cost_usd, .. }
            | JudgeError::PossiblyBilled { cost_usd, .. }
            | JudgeError::NotSent { cost_usd } => *cost_usd += usd,
            JudgeError::Unjudgeable { .. }
            | JudgeError::Unavailable { .. }
            | JudgeError::Fatal { .. }
            | JudgeError::NotRun { .. }
            | JudgeError::Pending { .. } => {
                *self =
                    JudgeError::Request { status: None, message: self.to_string(), retryable: false, cost_usd: usd };
            }
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

/// The largest price a judge's config takes, USD per million tokens ($1 a token; the dearest
/// models cost well under $1,000): above it a worst case can overflow to infinity.
pub const MAX_USD_PER_MTOK: f64 = 1e6;

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
    pub invalid_by_reason: std::collections::BTreeMap<InvalidReason, u64>,
    /// Queries over the context (detected before sending or by the server).
    pub context_overflows: u64,
    /// Replies without `usage` (booked at their worst case).
    pub usage_missing: u64,
    /// Verdicts taken from log-probabilities (soft P(A)).
    pub soft_verdicts: u64,
    /// Verdicts that stayed hard although `logprobs` was on, by reason (`logprobs_missing`,
    /// `not_a_letter`, `tokens_unaligned`, `token_not_letter`, `not_probabilities`).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub soft_fallbacks: std::collections::BTreeMap<String, u64>,
    /// Replies that reached the parser (valid and invalid, re-asks included).
    #[serde(default)]
    pub replies: u64,
    /// Errors reported inside a 200 reply (`finish_reason: error` or an `error` object), each also
    /// counted by its kind (a 502 under 5xx) and retried by the same rules.
    #[serde(default)]
    pub in_band_errors: u64,
    /// Reply bodies with broken text (invalid UTF-8, lone surrogate escapes) decoded with U+FFFD.
    #[serde(default)]
    pub broken_text_repairs: u64,
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
    /// Replies billed more output tokens than `max_tokens` (a provider that ignores the limit,
    /// e.g. with a reasoning parser, or bills reasoning tokens apart); billed as reported.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub above_max_tokens: u64,
    /// The most output tokens one reply was billed ([`crate::domain::verdict::Usage::output_tokens`]:
    /// completion tokens, with reasoning tokens a provider counts apart added).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub most_completion_tokens: u64,
    /// The judge's `max_tokens`, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Replies that reported more prompt tokens than their prompt's bound (one token per byte
    /// plus the per-message overhead, what the budget reserves; docs/live.md, "Budget"): a
    /// provider that adds prompt tokens of its own; billed as reported.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub above_prompt_bound: u64,
    /// The most prompt tokens one reply reported.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub most_prompt_tokens: u64,
    /// Provider batch jobs created (`acquisition.dispatch: batch`; docs/live.md, "Batch
    /// dispatch").
    #[serde(default, skip_serializing_if = "is_zero")]
    pub batch_jobs: u64,
    /// Requests to the Files and Batches API (uploads, job creations, polls, cancels, listings,
    /// result files): not queries, and not in `requests`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub batch_api_requests: u64,
}

impl JudgeStats {
    /// The token bounds passed by the replies of several judges (a panel's overrun): counts
    /// added, largest token counts kept, `max_tokens` kept when every judge has the same one.
    pub fn merge_bounds(&mut self, other: &JudgeStats) {
        self.above_max_tokens += other.above_max_tokens;
        self.above_prompt_bound += other.above_prompt_bound;
        self.most_completion_tokens = self.most_completion_tokens.max(other.most_completion_tokens);
        self.most_prompt_tokens = self.most_prompt_tokens.max(other.most_prompt_tokens);
        if self.max_tokens != other.max_tokens {
            self.max_tokens = None;
        }
    }

    /// These counters with the replies, invalid replies and their reasons of `earlier` added
    /// (the stored verdicts of earlier invocations of a resumed run).
    pub fn with_earlier(&self, earlier: &JudgeStats) -> JudgeStats {
        let mut s = self.clone();
        s.replies += earlier.replies;
        s.invalid_replies += earlier.invalid_replies;
        for (k, v) in &earlier.invalid_by_reason {
            *s.invalid_by_reason.entry(k.clone()).or_default() += v;
        }
        s
    }
}

fn is_zero(x: &u64) -> bool {
    *x == 0
}

/// One query of a wave handed to [`Judge::judge_round`].
#[derive(Debug, Clone)]
pub struct RoundQuery {
    /// The pool the items belong to.
    pub pool: std::sync::Arc<Pool>,
    /// Item shown first.
    pub a: usize,
    /// Item shown second.
    pub b: usize,
    /// Its cache key ([`JudgeInfo::cache_key`]).
    pub key: String,
}

/// Where a provider batch job is (the Batches API's `status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BatchJobStatus {
    /// The input file is being checked.
    Validating,
    /// Running.
    InProgress,
    /// Writing its output files.
    Finalizing,
    /// Done: every request has a line in the output or error file.
    Completed,
    /// The input was refused; nothing ran and nothing is billed.
    Failed,
    /// The completion window passed: the requests that ran are in the output file, the rest
    /// did not run and are not billed.
    Expired,
    /// A cancel was asked for; the job is stopping.
    Cancelling,
    /// Cancelled: the requests that ran are in the output file.
    Cancelled,
}

impl BatchJobStatus {
    /// Whether the job has ended (its files say everything it will say).
    pub fn is_final(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Expired | Self::Cancelled)
    }

    /// The status as the API spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Validating => "validating",
            Self::InProgress => "in_progress",
            Self::Finalizing => "finalizing",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Expired => "expired",
            Self::Cancelling => "cancelling",
            Self::Cancelled => "cancelled",
        }
    }
}

/// A provider batch job as the Batches API describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct BatchJob {
    /// The batch id.
    pub id: String,
    /// Where it is.
    pub status: BatchJobStatus,
    /// The uploaded input file.
    pub input_file_id: String,
    /// The output file (successful requests), once there is one.
    pub output_file_id: Option<String>,
    /// The error file (failed requests), once there is one.
    pub error_file_id: Option<String>,
    /// Why the job failed (validation errors), as "code (input line N): message".
    pub errors: Vec<String>,
    /// Requests (completed, failed, total), when the server reports them.
    pub counts: Option<(u32, u32, u32)>,
}

/// One line of a batch output or error file.
#[derive(Debug, Clone, PartialEq)]
pub enum BatchResult {
    /// The request ran: its HTTP status and body (a chat completion, or an error object).
    Response {
        /// The input line's `custom_id`.
        custom_id: String,
        /// HTTP status of the request inside the batch.
        status: u16,
        /// The response body.
        body: serde_json::Value,
    },
    /// The request did not run (or failed before a response).
    Error {
        /// The input line's `custom_id`.
        custom_id: String,
        /// The error code.
        code: String,
        /// The error message.
        message: String,
    },
}

impl BatchResult {
    /// The input line's `custom_id`.
    pub fn custom_id(&self) -> &str {
        match self {
            Self::Response { custom_id, .. } | Self::Error { custom_id, .. } => custom_id,
        }
    }
}

/// The Files and Batches API of a judge's provider (docs/live.md, "Batch dispatch"). Every
/// call is free of charge; what a batch's requests cost is billed per request that ran.
pub trait BatchApi: Send + Sync {
    /// One line of a batch input file: the request a live query of (a, b) would send.
    ///
    /// # Errors
    /// [`JudgeError::Unjudgeable`]: the prompt cannot be rendered or is over the context.
    fn batch_line(&self, pool: &Pool, a: usize, b: usize, custom_id: &str) -> Result<String, JudgeError>;

    /// The reply of (a, b) from its output line (HTTP `status`, response `body`), read as a
    /// live reply and priced at `price_factor` × the judge's price (the batch price).
    ///
    /// # Errors
    /// [`JudgeError::Request`]: the request failed inside the batch (booked at the usage it
    /// reports, if any).
    fn batch_reply(
        &self,
        pool: &Pool,
        a: usize,
        b: usize,
        status: u16,
        body: &serde_json::Value,
        price_factor: f64,
    ) -> Result<JudgeReply, JudgeError>;

    /// Upload a batch input file (JSON lines); returns the file id.
    ///
    /// # Errors
    /// [`JudgeError::Request`] naming the step.
    fn upload(&self, jsonl: Vec<u8>, filename: String) -> BoxFuture<'_, Result<String, JudgeError>>;

    /// Create the batch job of an uploaded input (chat completions, 24 h window), tagged with
    /// the run's `round`.
    ///
    /// # Errors
    /// [`JudgeError::Request`] naming the step.
    fn create(&self, input_file_id: &str, round: u64) -> BoxFuture<'_, Result<BatchJob, JudgeError>>;

    /// The job `id` as it is now.
    ///
    /// # Errors
    /// [`JudgeError::Request`] naming the step.
    fn retrieve<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<BatchJob, JudgeError>>;

    /// The job created from the input file `input_file_id`, if any (listing the batches).
    ///
    /// # Errors
    /// [`JudgeError::Request`] naming the step.
    fn find_by_input<'a>(&'a self, input_file_id: &'a str) -> BoxFuture<'a, Result<Option<BatchJob>, JudgeError>>;

    /// Ask the job `id` to stop.
    ///
    /// # Errors
    /// [`JudgeError::Request`] naming the step.
    fn cancel<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<BatchJob, JudgeError>>;

    /// The bytes of a file (an output or error file).
    ///
    /// # Errors
    /// [`JudgeError::Request`] naming the step.
    fn content<'a>(&'a self, file_id: &'a str) -> BoxFuture<'a, Result<Vec<u8>, JudgeError>>;

    /// Read an output or error file: each non-blank line, or why it is not a batch result line
    /// (`line N: …`, never containing the API key). A bad line does not hide the others.
    fn parse_results(&self, bytes: &[u8]) -> Vec<Result<BatchResult, String>>;
}

/// Per-item parts of a judge's worst-case cost ([`JudgeInfo::worst_case_parts`]): the worst
/// case of (a, b) is a non-decreasing function of `first[a] + second[b]` (length N each, in the
/// judge's own units, e.g. words).
#[derive(Debug, Clone, PartialEq)]
pub struct WorstCaseParts {
    /// Part of item a shown first.
    pub first: Vec<f64>,
    /// Part of item b shown second.
    pub second: Vec<f64>,
}

/// Hex digits of a judge's settings id ([`settings_id`]).
pub const SETTINGS_ID_LEN: usize = 12;

/// A judge's settings id: the first [`SETTINGS_ID_LEN`] hex digits of the hash of its cache key
/// for a fixed two-item reference pool, with [`JudgeInfo::settings_source`]. The cache key holds
/// everything that decides a verdict (docs/model.md §1), so an edit that changes the judge's
/// keys changes its id, and what the key leaves out (price, latency, credentials) does not: the
/// id follows the key by construction, with no second list of settings to keep.
pub fn settings_id<J: JudgeInfo + ?Sized>(judge: &J) -> String {
    static REFERENCE: std::sync::LazyLock<Pool> = std::sync::LazyLock::new(|| {
        let item = |id: &str| crate::domain::pool::Item {
            id: id.into(),
            text: Some(format!("reference answer {id}")),
            ..Default::default()
        };
        Pool::new("judge-settings".into(), "reference task".into(), vec![item("a"), item("b")])
            .expect("a valid two-item pool")
    });
    let of = serde_json::json!([judge.cache_key(&REFERENCE, 0, 1), judge.settings_source()]);
    let mut id = crate::domain::rng::sha256_hex(&of.to_string());
    id.truncate(SETTINGS_ID_LEN);
    id
}

/// A boxed, sendable future.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What is known about a judge without a query: its description, the cache key and worst-case
/// cost of an ordered query, its price, limits and prompt. A dry run, `profile` and `fit` on a
/// run folder need only this, so it is built without a key or an HTTP client
/// (`config::judge::judge_info`).
pub trait JudgeInfo: Send + Sync {
    /// Short description for logs and summaries (never secrets).
    fn describe(&self) -> String;

    /// The `"judge"` of the verdict record of the ordered query (a, b): by default
    /// [`JudgeInfo::describe`]; a panel member's name in a panel ([`panel`]).
    fn record_judge(&self, _pool: &Pool, _a: usize, _b: usize) -> String {
        self.describe()
    }

    /// The `"judge_settings"` of the verdict record of the ordered query (a, b): a short hash of
    /// everything that decides this judge's verdicts, but not the pair ([`settings_id`]). Two
    /// records with one `"judge"` and two settings are of two judges (an edited seed, template or
    /// temperature under one name); `fit` on a verdicts file tells them apart. A panel gives its
    /// member's ([`panel`]).
    fn record_settings(&self, _pool: &Pool, _a: usize, _b: usize) -> String {
        settings_id(self)
    }

    /// What decides this judge's verdicts that its key of the reference pair may not show
    /// ([`settings_id`]): an API judge's prompt template text, whose branches the reference pair
    /// may not render (a multi-turn branch, a test on an answer's length). Empty by default:
    /// every other judge's key holds its settings whole. A wrapper of a judge passes its judge's.
    fn settings_source(&self) -> String {
        String::new()
    }

    /// Cache key of one ordered query: a hash of everything that determines the verdict (judge
    /// configuration, prompt, texts). At most one verdict per key is ever stored (docs/model.md §1).
    fn cache_key(&self, pool: &Pool, a: usize, b: usize) -> String;

    /// Worst-case cost of one query in USD, reserved before sending (0 for free judges).
    fn worst_case_usd(&self, _pool: &Pool, _a: usize, _b: usize) -> f64 {
        0.0
    }

    /// Expected cost of one query in USD: what a panel's acquisition divides a query's value by
    /// (docs/model.md §8, "Acquisition over (pair, judge)"). The reservation stays
    /// [`JudgeInfo::worst_case_usd`]; this is the typical bill, which for an API judge is well
    /// below it (typical rather than bound prompt tokens, no retries). By default the worst case
    /// (exact for the mock and replay judges, whose cost is known before the query).
    fn expected_usd(&self, pool: &Pool, a: usize, b: usize) -> f64 {
        self.worst_case_usd(pool, a, b)
    }

    /// The worst case of every query as one sum of per-item parts, when this judge's is one:
    /// [`JudgeInfo::worst_case_usd`] of (a, b) is a non-decreasing function of
    /// `first[a] + second[b]` (computed in that order), so the most and least expensive pairs
    /// of a large pool are found from the sorted parts without pricing every pair (the dry run,
    /// docs/live.md, "Spend and budget"). `None` (the default): no such form is known.
    fn worst_case_parts(&self, _pool: &Pool) -> Option<WorstCaseParts> {
        None
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

    /// The client-side limit on requests per minute (`judge.openai.requests_per_minute`), when
    /// one is configured; `None` (the default) for judges without one.
    fn requests_per_minute(&self) -> Option<u32> {
        None
    }

    /// The stop rule for invalid replies: (largest share of invalid replies, replies parsed
    /// before the rule applies); `None` (the default) for judges that cannot reply invalidly.
    fn invalid_rate_limit(&self) -> Option<(f64, u64)> {
        None
    }

    /// What a replay judge replays (the recording and the recorded judge); `None` for others.
    fn replay(&self) -> Option<replay::ReplayInfo> {
        None
    }

    /// The only ordered pairs of `pool` (item indices, first-shown first) this judge can
    /// answer, when it can answer only some: the acquisition's candidates are then these pairs
    /// (a replay judge with `missing: unavailable`, docs/replay.md). `None`: any pair.
    fn answerable(&self, _pool: &Pool) -> Option<Vec<(usize, usize)>> {
        None
    }

    /// The prompt this judge would send for (a, b), for `--dry-run`; `None` if it has none.
    fn preview(&self, _pool: &Pool, _a: usize, _b: usize) -> Option<String> {
        None
    }
}

/// A judge of ordered pairs: what is known without a query ([`JudgeInfo`]), and the queries.
pub trait Judge: JudgeInfo {
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

    /// Send no request from now on (a first Ctrl-C): a call not yet on the wire, including a
    /// retry waiting on its backoff or `Retry-After`, ends unsent and unbilled. The default
    /// (judges that send nothing) does nothing.
    fn stop_sending(&self) {}

    /// A reply cost more than its reservation, so every reservation made before is too low: a
    /// query begun before this call does not send another request (one waiting for a rate
    /// limit, a concurrency slot or a retry's backoff ends unsent, [`JudgeError::NotSent`], to
    /// be reserved again at the raised worst case; docs/live.md, "Overruns"). The default
    /// (judges that bill nothing beyond their reservations) does nothing.
    fn reservations_raised(&self) {}

    /// Whether [`Judge::stop_sending`] was called (a query it ends unsent is not asked again).
    fn sending_stopped(&self) -> bool {
        false
    }

    /// The judge's own limits on requests in flight, one per lane (`None`: no limit): an API
    /// judge's `concurrency`, a panel's per member. Empty (the default): one lane, no limit.
    /// The dispatcher sends a query only while its lane has room, so that no query waits inside
    /// the judge for a slot where an overrun could not hold it (docs/live.md, "Overruns").
    fn lane_limits(&self) -> Vec<Option<usize>> {
        Vec::new()
    }

    /// The lane of a query of `pool` ([`Judge::lane_limits`]); 0 by default.
    fn lane(&self, _pool: &Pool) -> usize {
        0
    }

    /// The provider's batch jobs, for judges that have them (OpenAI-compatible servers;
    /// docs/live.md, "Batch dispatch"); `None` (the default) for the others.
    fn batch_api(&self) -> Option<&dyn BatchApi> {
        None
    }

    /// Whether queries go out as provider batch jobs: the dispatcher then hands each wave to
    /// [`Judge::judge_round`] instead of calling [`Judge::judge`] per query.
    fn batched(&self) -> bool {
        false
    }

    /// Judge a whole wave at once (batched judges, [`Judge::batched`]): one outcome per query,
    /// in the order given. The default judges them one by one.
    fn judge_round<'a>(&'a self, queries: &'a [RoundQuery]) -> BoxFuture<'a, Vec<Result<JudgeReply, JudgeError>>> {
        Box::pin(async move {
            let mut out = Vec::with_capacity(queries.len());
            for q in queries {
                out.push(self.judge(&q.pool, q.a, q.b).await);
            }
            out
        })
    }

    /// Judge the ordered query (a first, b second).
    fn judge<'a>(&'a self, pool: &'a Pool, a: usize, b: usize) -> BoxFuture<'a, Result<JudgeReply, JudgeError>>;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The status is said once: by the message when it names it, else after "failed".
    #[test]
    fn a_failed_request_names_its_status_once() {
        let e = |status, message: &str| {
            JudgeError::Request { status, message: message.into(), retryable: true, cost_usd: 0.0 }.to_string()
        };
        assert_eq!(e(Some(500), "HTTP 500: {\"error\": \"x\"}"), "judge request failed: HTTP 500: {\"error\": \"x\"}");
        assert_eq!(e(Some(200), "HTTP 200 body is not JSON: {"), "judge request failed: HTTP 200 body is not JSON: {");
        assert_eq!(e(Some(500), "boom"), "judge request failed (HTTP 500): boom");
        assert_eq!(e(None, "reset"), "judge request failed: reset");
    }

    /// Every variant keeps a cost added to it: the cost-carrying ones sum, the others become a
    /// non-retryable request failure with their message and that cost.
    #[test]
    fn an_added_cost_is_kept_by_every_variant() {
        let all = [
            JudgeError::Request { status: Some(500), message: "m".into(), retryable: true, cost_usd: 0.25 },
            JudgeError::Endpoint { setting: "model".into(), message: "m".into(), cost_usd: 0.25 },
            JudgeError::NotSent { cost_usd: 0.25 },
            JudgeError::Unjudgeable { a: "i1".into(), b: "i2".into(), message: "too long".into() },
            JudgeError::Unavailable { message: "not recorded".into() },
            JudgeError::Fatal { message: "gone".into() },
            JudgeError::Pending { batch: "b1".into(), message: "open".into() },
        ];
        for mut e in all {
            let before = (e.cost_usd(), e.to_string());
            e.add_cost(0.5);
            assert_eq!(e.cost_usd(), before.0 + 0.5, "{}", before.1);
            assert!(e.to_string().contains(&before.1), "{} kept in {e}", before.1);
        }
    }
}

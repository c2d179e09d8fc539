//! OpenAI-compatible chat-completions judge (docs/model.md §4): the only async-openai import.
//!
//! One ordered query (a first, b second) = render the prompt template → check the context →
//! wait for the rate limits → POST `/chat/completions` through async-openai with **our**
//! transport (async-openai's retry layer is not installed, so [`crate::judge::openai::retry`] is the only
//! retry policy; every non-2xx keeps its HTTP status, also for llama.cpp/vLLM error bodies that
//! async-openai cannot parse) → parse the reply ([`parse`]) → re-ask an
//! invalid reply up to `max_invalid_retries` times → price the usage.
//!
//! Spend of one HTTP reply (USD): (uncached prompt · input + cached · cached_input +
//! completion · output) / 10⁶, with completion tokens including reasoning tokens (OpenAI's
//! convention; a provider that reports more reasoning than completion tokens evidently counts
//! them apart, and they are then added). A reply without `usage`, and a failed attempt the
//! provider may have billed (timeout, reply lost or garbled), are booked at their worst case.
//! Worst case of one attempt: (prompt bound · max(input, cached_input) + max_tokens · output)
//! / 10⁶, where the prompt bound is the rendered prompt's UTF-8 bytes + chat-template overhead
//! (no tokenizer makes more tokens than bytes). A query has 1 + max_invalid_retries *paid
//! attempts*: every reply and every possibly-billed failure takes one, unbilled failures (429,
//! 5xx, refused connections) do not. Its worst case, reserved before sending, is therefore
//! (1 + max_invalid_retries) · the attempt's worst case, and it can never cost more.

pub mod body;
pub mod concurrency;
pub mod endpoint;
pub mod extra_body;
pub mod parse;
pub mod prompt;
pub mod proxy;
pub mod ratelimit;
pub mod retry;
pub mod secret;

use self::concurrency::InFlightLimit;
use self::endpoint::Endpoint;
use self::parse::{Channel, Invalid, Outcome, SoftMiss, TokenLogprob, VerdictFormat};
use self::prompt::{PromptTemplate, RenderedPrompt, fit_answers, truncate_to_bytes};
use self::proxy::ProxyEnv;
use self::ratelimit::RateLimits;
use self::retry::{Classify, RetryPolicy};
use self::secret::Secret;
use crate::judge::{BoxFuture, Judge, JudgeError, JudgeReply, JudgeStats, Usage, VerdictDetail};
use crate::store::pool::Pool;
use async_openai::Client;
use async_openai::config::OpenAIConfig;
use async_openai::error::OpenAIError;
use async_openai::middleware::HttpRequestFactory;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Price table, USD per million tokens. `input_usd_per_mtok` and `output_usd_per_mtok` are
/// required (a judge without a price is rejected at config load); cached input defaults to the
/// input price (no discount assumed); reasoning tokens are priced as output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct PriceConfig {
    /// USD per million uncached prompt tokens.
    #[serde(default)]
    pub input_usd_per_mtok: Option<f64>,
    /// USD per million completion tokens (reasoning included).
    #[serde(default)]
    pub output_usd_per_mtok: Option<f64>,
    /// USD per million cached prompt tokens (default: the input price).
    #[serde(default)]
    pub cached_input_usd_per_mtok: Option<f64>,
}

/// A validated price table (USD per million tokens).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Price {
    /// Uncached input.
    pub input: f64,
    /// Cached input.
    pub cached_input: f64,
    /// Output (completion incl. reasoning).
    pub output: f64,
}

impl Price {
    /// Cost of one reply in USD (module docs: cached and reasoning tokens never counted twice).
    pub fn cost_usd(&self, u: &Usage) -> f64 {
        let (uncached, cached) = if u.cached_tokens <= u.prompt_tokens {
            (u.prompt_tokens - u.cached_tokens, u.cached_tokens)
        } else {
            (u.prompt_tokens, u.cached_tokens)
        };
        let output = if u.reasoning_tokens <= u.completion_tokens {
            u.completion_tokens
        } else {
            u.completion_tokens + u.reasoning_tokens
        };
        (uncached as f64 * self.input + cached as f64 * self.cached_input + output as f64 * self.output) / 1e6
    }
}

/// Which request field carries the completion limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum MaxTokensField {
    /// `max_tokens` (widest support: llama.cpp, vLLM, Ollama, OpenRouter).
    #[default]
    MaxTokens,
    /// `max_completion_tokens` (OpenAI reasoning models require it).
    MaxCompletionTokens,
    /// Both fields.
    Both,
}

/// What to do with a query whose prompt does not fit the judge's context.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum OverflowPolicy {
    /// Reject the config at load when the longest pair's estimate is over `context_tokens`;
    /// a server context error fails the query (not stored, never retried) and sets its pair
    /// aside for the rest of the run.
    #[default]
    Fail,
    /// Store the query as invalid (`context_overflow`) without sending it (or after the
    /// server's context error, which is never retried); it is never asked again.
    Skip,
    /// Cut the task text (the same cut for every pair of the pool, so prompts keep a shared
    /// prefix) so the longest pair fits; what still does not fit is skipped.
    TruncateTask,
    /// Shorten the two answers of a pair that does not fit `context_tokens` by cutting their
    /// middles (a visible marker where the cut is), the same cut in both orders
    /// ([`prompt::fit_answers`]); the task is kept whole, and the length covariate keeps the
    /// answers' original length. What still does not fit is skipped. Needs `context_tokens`.
    TruncateAnswers,
}

/// `judge: {openai: {...}}` (docs/model.md §4). Units are in the key names.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpenAiConfig {
    /// Endpoint base including `/v1`, e.g. `https://api.openai.com/v1` (a trailing `/` is removed).
    pub base_url: String,
    /// Model name sent in each request.
    pub model: String,
    /// Name of the environment variable holding the API key (the key itself is never written).
    pub api_key_env: String,
    /// Whether a missing key is an error (default true; `false` for local servers).
    #[serde(default = "yes")]
    pub api_key_required: bool,
    /// Prompt template file (minijinja), relative to the config file.
    pub prompt: PathBuf,
    /// Completion limit per reply, tokens (default 16).
    #[serde(default = "d_max_tokens")]
    pub max_tokens: u32,
    /// Request field for the limit (default `max_tokens`).
    #[serde(default)]
    pub max_tokens_field: MaxTokensField,
    /// Sampling temperature (default 0; `null` = do not send, for models that reject it).
    #[serde(default = "d_temperature")]
    pub temperature: Option<f64>,
    /// Per-request timeout, seconds (default 60).
    #[serde(default = "d_timeout")]
    pub timeout_s: f64,
    /// Retries of one request on 429, 5xx, timeouts and connection errors (default 4).
    #[serde(default = "d_retries")]
    pub max_retries: usize,
    /// First backoff delay, seconds (default 0.5); doubles per retry, with full jitter.
    #[serde(default = "d_backoff_min")]
    pub backoff_min_s: f64,
    /// Largest backoff delay, seconds (default 30).
    #[serde(default = "d_backoff_max")]
    pub backoff_max_s: f64,
    /// Largest `Retry-After` honoured, seconds (default 120; longer waits are cut to this).
    #[serde(default = "d_retry_after_max")]
    pub retry_after_max_s: f64,
    /// Re-asks of an invalid reply (empty, refused, ambiguous, truncated, filtered) before it is
    /// stored as invalid (default 1).
    #[serde(default = "d_invalid")]
    pub max_invalid_retries: u32,
    /// Requests in flight for this judge (default: `acquisition.batch_size` alone limits it).
    #[serde(default)]
    pub concurrency: Option<usize>,
    /// Client-side request limit per minute (default none).
    #[serde(default)]
    pub requests_per_minute: Option<u32>,
    /// Client-side token limit per minute, prompt estimate + max_tokens (default none).
    #[serde(default)]
    pub tokens_per_minute: Option<u32>,
    /// Price table (required; zeros for a free local server).
    #[serde(default)]
    pub price: Option<PriceConfig>,
    /// Ask for `logprobs` and use P(A) of the first token as a soft verdict when available.
    #[serde(default)]
    pub logprobs: bool,
    /// Alternatives per token when `logprobs` is on (1–20, default 5).
    #[serde(default = "d_top")]
    pub top_logprobs: u8,
    /// Context window of the judge, tokens (default: unknown, only server errors detect overflow).
    #[serde(default)]
    pub context_tokens: Option<u64>,
    /// Policy for prompts longer than the context (default `fail`).
    #[serde(default)]
    pub on_context_overflow: OverflowPolicy,
    /// Typical UTF-8 bytes per token for estimates (context pre-check, token rate limit;
    /// default 4). Budget reservations use the strict bound of 1 instead.
    #[serde(default = "d_bpt")]
    pub bytes_per_token: f64,
    /// Extra request fields, sent as is and part of the cache key (e.g. llama.cpp
    /// `cache_prompt: false`, OpenRouter `provider`, `reasoning_effort`); never a field the tool
    /// sets or relies on ([`extra_body::RESERVED`]: a config error naming the setting to use).
    #[serde(default)]
    pub extra_body: Option<Map<String, Value>>,
    /// Which verdict format the prompt asks for: `text` (default) or `json`; checked against the
    /// prompt and `extra_body.response_format` when the config loads (docs/live.md,
    /// "Structured verdicts (JSON)").
    #[serde(default)]
    pub verdict_format: VerdictFormat,
    /// Largest share of invalid replies (re-asks included) before the run stops with a message
    /// naming the likely cause (default 0.5; 1 never stops).
    #[serde(default = "d_max_invalid_rate")]
    pub max_invalid_rate: f64,
    /// Replies parsed in this invocation before `max_invalid_rate` applies (default 20).
    #[serde(default = "d_invalid_rate_min_replies")]
    pub invalid_rate_min_replies: u64,
}

fn yes() -> bool {
    true
}
fn d_max_tokens() -> u32 {
    16
}
fn d_temperature() -> Option<f64> {
    Some(0.0)
}
fn d_timeout() -> f64 {
    60.0
}
fn d_retries() -> usize {
    4
}
fn d_backoff_min() -> f64 {
    0.5
}
fn d_backoff_max() -> f64 {
    30.0
}
fn d_retry_after_max() -> f64 {
    120.0
}
fn d_invalid() -> u32 {
    1
}
fn d_top() -> u8 {
    5
}
fn d_max_invalid_rate() -> f64 {
    0.5
}
fn d_invalid_rate_min_replies() -> u64 {
    20
}
fn d_bpt() -> f64 {
    4.0
}

impl OpenAiConfig {
    /// The validated price table.
    ///
    /// # Errors
    /// `(key, message)` when the table or a required price is missing or negative.
    pub fn price_table(&self) -> Result<Price, (String, String)> {
        let k = |s: &str| format!("judge.openai.price{s}");
        let p = self.price.as_ref().ok_or_else(|| {
            (
                k(""),
                "missing: every judge needs a price table in USD per million tokens, e.g. price: {input_usd_per_mtok: 0.75, output_usd_per_mtok: 4.5}; write zeros for a free local server".into(),
            )
        })?;
        let get = |name: &str, v: Option<f64>, required: bool| -> Result<Option<f64>, (String, String)> {
            match v {
                None if required => Err((k(&format!(".{name}")), "missing (USD per million tokens)".into())),
                Some(x) if !(x >= 0.0 && x.is_finite()) => Err((k(&format!(".{name}")), format!("{x} must be ≥ 0"))),
                v => Ok(v),
            }
        };
        let input = get("input_usd_per_mtok", p.input_usd_per_mtok, true)?.expect("required");
        let output = get("output_usd_per_mtok", p.output_usd_per_mtok, true)?.expect("required");
        let cached_input = get("cached_input_usd_per_mtok", p.cached_input_usd_per_mtok, false)?.unwrap_or(input);
        Ok(Price { input, cached_input, output })
    }

    /// The retry policy of this judge.
    pub fn retry_policy(&self) -> RetryPolicy {
        RetryPolicy {
            max_retries: self.max_retries,
            min_delay: Duration::from_secs_f64(self.backoff_min_s),
            max_delay: Duration::from_secs_f64(self.backoff_max_s),
            max_retry_after: Duration::from_secs_f64(self.retry_after_max_s),
            jitter: true,
        }
    }
}

/// Resolve paths and check an `openai` judge config against the pool, before anything runs:
/// key variable set (when required), price table, template, numbers in range, every item has
/// text and renders, and (policy `fail`) the longest pair fits `context_tokens`.
///
/// # Errors
/// `(key path, message)` naming what was found and what was expected.
pub fn prepare(cfg: &mut OpenAiConfig, config_dir: &Path, pool: &Pool) -> Result<(), (String, String)> {
    let e = |k: &str, m: String| (format!("judge.openai.{k}"), m);
    cfg.base_url = cfg.base_url.trim().trim_end_matches('/').to_owned();
    if !(cfg.base_url.starts_with("http://") || cfg.base_url.starts_with("https://")) {
        return Err(e("base_url", format!("{:?} must start with http:// or https:// and include /v1", cfg.base_url)));
    }
    if cfg.model.trim().is_empty() {
        return Err(e("model", "must not be empty".into()));
    }
    check_key_env(cfg).map_err(|m| e("api_key_env", m))?;
    cfg.price_table()?;
    cfg.prompt = config_dir.join(&cfg.prompt);
    let template = PromptTemplate::load(&cfg.prompt).map_err(|x| e("prompt", x.to_string()))?;
    if cfg.max_tokens == 0 {
        return Err(e("max_tokens", "0 must be ≥ 1".into()));
    }
    if let Some(t) = cfg.temperature
        && !(0.0..=2.0).contains(&t)
    {
        return Err(e("temperature", format!("{t} must be in [0, 2]")));
    }
    if let Some(extra) = &cfg.extra_body {
        extra_body::check(extra, cfg.temperature.is_some())?;
    }
    for (k, v, lo) in [
        ("timeout_s", cfg.timeout_s, f64::MIN_POSITIVE),
        ("backoff_min_s", cfg.backoff_min_s, 0.0),
        ("backoff_max_s", cfg.backoff_max_s, 0.0),
        ("retry_after_max_s", cfg.retry_after_max_s, 0.0),
        ("bytes_per_token", cfg.bytes_per_token, f64::MIN_POSITIVE),
    ] {
        if !(v >= lo && v.is_finite() && v < 1e7) {
            return Err(e(k, format!("{v} must be a finite number {}", if lo > 0.0 { "> 0" } else { "≥ 0" })));
        }
    }
    if !(0.0..=1.0).contains(&cfg.max_invalid_rate) {
        return Err(e("max_invalid_rate", format!("{} must be in [0, 1] (a share of replies)", cfg.max_invalid_rate)));
    }
    check_verdict_format(cfg, &template)?;
    if cfg.logprobs && !(1..=20).contains(&cfg.top_logprobs) {
        return Err(e("top_logprobs", format!("{} must be in 1..=20", cfg.top_logprobs)));
    }
    if cfg.concurrency == Some(0) {
        return Err(e("concurrency", "0 must be ≥ 1".into()));
    }
    if cfg.on_context_overflow == OverflowPolicy::TruncateAnswers && cfg.context_tokens.is_none() {
        return Err(e(
            "context_tokens",
            "missing: on_context_overflow: truncate_answers needs the judge's context window in tokens to know how much to cut".into(),
        ));
    }
    if cfg.context_tokens.is_some_and(|c| c <= u64::from(cfg.max_tokens)) {
        return Err(e(
            "context_tokens",
            format!("{:?} must be larger than max_tokens ({})", cfg.context_tokens, cfg.max_tokens),
        ));
    }
    for it in &pool.items {
        if it.text.is_none() {
            return Err((
                "pool".into(),
                format!("item {:?} of pool {:?} has no text; a live judge needs the answer text", it.id, pool.pool_id),
            ));
        }
    }
    let n = pool.n_items();
    for i in 0..n {
        let j = (i + 1) % n;
        for (a, b) in [(i, j), (j, i)] {
            template.render(&pool.task, text(pool, a), text(pool, b)).map_err(|x| {
                e("prompt", format!("rendering items {:?} vs {:?}: {x}", pool.items[a].id, pool.items[b].id))
            })?;
        }
    }
    if let (Some(ctx), OverflowPolicy::Fail) = (cfg.context_tokens, cfg.on_context_overflow) {
        let (a, b) = longest_pair(pool);
        let r = template.render(&pool.task, text(pool, a), text(pool, b)).map_err(|x| e("prompt", x.to_string()))?;
        let need = r.token_estimate(cfg.bytes_per_token) + u64::from(cfg.max_tokens);
        if need > ctx {
            return Err(e(
                "context_tokens",
                format!(
                    "the prompt for items {:?} vs {:?} needs about {need} tokens (estimate: {} bytes / {} bytes per token + max_tokens {}) but the context is {ctx}; raise context_tokens, or set on_context_overflow: skip or truncate_task",
                    pool.items[a].id,
                    pool.items[b].id,
                    r.bytes(),
                    cfg.bytes_per_token,
                    cfg.max_tokens
                ),
            ));
        }
    }
    Ok(())
}

/// Check that `verdict_format`, the prompt and `extra_body.response_format` ask for the same
/// verdict format, before anything is sent (docs/live.md, "Structured verdicts (JSON)").
///
/// # Errors
/// `(key path, message)` naming the prompt file and what to change.
fn check_verdict_format(cfg: &OpenAiConfig, template: &PromptTemplate) -> Result<(), (String, String)> {
    let e = |m: String| ("judge.openai.verdict_format".to_owned(), m);
    let file = cfg.prompt.display();
    let shown = template
        .render("", "", "")
        .map_err(|x| ("judge.openai.prompt".to_owned(), x.to_string()))?
        .display()
        .to_lowercase();
    let mentions_json = shown.contains("json");
    let names_key = parse::JSON_KEYS.iter().any(|k| shown.contains(&format!("\"{k}\"")));
    let rf = cfg.extra_body.as_ref().and_then(|b| b.get("response_format"));
    let rf_type = rf.and_then(|r| r.get("type")).and_then(Value::as_str);
    match cfg.verdict_format {
        VerdictFormat::Json => {
            if !(mentions_json && names_key) {
                return Err(e(format!(
                    "json, but the prompt {file} never asks for a JSON object with a verdict key (it should mention JSON and a key such as \"winner\"); use prompts/pairwise_json.j2, or set verdict_format: text"
                )));
            }
            if cfg.max_tokens < 8 {
                return Err(e(format!(
                    "json with max_tokens {}: a JSON verdict such as {{\"winner\": \"A\"}} takes about 7 tokens; raise max_tokens (with reasoning in the object, to about 256)",
                    cfg.max_tokens
                )));
            }
        }
        VerdictFormat::Text => {
            if let Some(t @ ("json_object" | "json_schema")) = rf_type {
                return Err(e(format!(
                    "text, but extra_body.response_format asks for {t}: the replies will be JSON objects; set verdict_format: json and use a prompt that asks for a JSON verdict (prompts/pairwise_json.j2)"
                )));
            }
            if mentions_json && names_key {
                return Err(e(format!(
                    "text, but the prompt {file} asks for a JSON verdict; set verdict_format: json"
                )));
            }
        }
    }
    // Tools the judge may call: each function must have a verdict key among its parameters.
    let functions = cfg.extra_body.iter().flat_map(|b| {
        let tools = b.get("tools").and_then(Value::as_array).into_iter().flatten().filter_map(|t| t.get("function"));
        tools.chain(b.get("functions").and_then(Value::as_array).into_iter().flatten())
    });
    for f in functions {
        let props = f.get("parameters").and_then(|p| p.get("properties")).and_then(Value::as_object);
        let has_key = props.is_some_and(|p| {
            p.keys().any(|k| parse::JSON_KEYS.contains(&k.trim().to_lowercase().replace([' ', '-'], "_").as_str()))
        });
        if !has_key {
            let name = f.get("name").and_then(Value::as_str).unwrap_or("?");
            let keys: Vec<&String> = props.map(|p| p.keys().collect()).unwrap_or_default();
            return Err((
                "judge.openai.extra_body.tools".to_owned(),
                format!(
                    "function {name:?} has parameters {keys:?} but no verdict key the parser reads (e.g. \"winner\"; the list is in docs/live.md): its calls would hold no verdict"
                ),
            ));
        }
    }
    if rf_type == Some("json_schema")
        && let Some(props) = rf
            .and_then(|r| r.get("json_schema"))
            .and_then(|j| j.get("schema"))
            .and_then(|s| s.get("properties"))
            .and_then(Value::as_object)
        && !props.keys().any(|k| parse::JSON_KEYS.contains(&k.trim().to_lowercase().replace([' ', '-'], "_").as_str()))
    {
        let keys: Vec<&String> = props.keys().collect();
        return Err((
            "judge.openai.extra_body.response_format".to_owned(),
            format!(
                "the JSON schema's properties {keys:?} hold no verdict key the parser reads (e.g. \"winner\"; the list is in docs/live.md)"
            ),
        ));
    }
    Ok(())
}

/// Why a run with this config could not get its API key, if it could not (`None`: the key is
/// set, or not required). The key itself is not returned.
pub fn key_problem(cfg: &OpenAiConfig) -> Option<String> {
    check_key_env(cfg).err()
}

fn check_key_env(cfg: &OpenAiConfig) -> Result<Option<Secret>, String> {
    let var = cfg.api_key_env.trim();
    if var.is_empty() || !var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        let looks_like_key = var.starts_with("sk-") || var.len() > 40;
        return Err(if looks_like_key {
            "this looks like a key, not a variable name; put the key in an environment variable and write its name here"
                .into()
        } else {
            format!("{var:?} is not an environment variable name (letters, digits, _)")
        });
    }
    match Secret::from_env(var) {
        Some(k) if !k.expose().bytes().all(|b| (0x21..=0x7e).contains(&b)) => {
            Err(format!("the value of ${var} ({} bytes) contains characters not allowed in an HTTP header", k.len()))
        }
        Some(k) => Ok(Some(k)),
        None if cfg.api_key_required => Err(format!(
            "environment variable {var} is not set (or empty); export it with your API key, or set api_key_required: false for a server without keys"
        )),
        None => Ok(None),
    }
}

fn text(pool: &Pool, i: usize) -> &str {
    pool.items[i].text.as_deref().unwrap_or("")
}

/// The two items with the longest texts (bytes), in pool order.
fn longest_pair(pool: &Pool) -> (usize, usize) {
    let mut idx: Vec<usize> = (0..pool.n_items()).collect();
    idx.sort_by_key(|&i| std::cmp::Reverse(text(pool, i).len()));
    let (a, b) = (idx[0], idx[1]);
    (a.min(b), a.max(b))
}

// ---------------------------------------------------------------------------------------------
// Errors of one HTTP call.

/// Kinds of failure of one HTTP call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallErrorKind {
    /// No reply within `timeout_s`.
    Timeout,
    /// Connection refused or failed before the request was sent (never billed).
    Connect,
    /// The request was sent but the reply was lost (reset, body cut): possibly billed.
    Transport,
    /// HTTP 429 (rate limited).
    RateLimited,
    /// HTTP 429 `insufficient_quota`: out of credit, not retried.
    Quota,
    /// HTTP 5xx, 408, 409, 425.
    Server,
    /// The prompt exceeds the model's context (not retried).
    ContextOverflow,
    /// A 2xx body that is not a chat completion (retried).
    Malformed,
    /// An upstream 5xx reported inside a 200 reply that carries `usage` (`finish_reason: error`):
    /// retried like a 5xx, but booked at its worst case since the provider reported tokens.
    UpstreamBilled,
    /// HTTP 401/403.
    Auth,
    /// Other 4xx (bad request, unknown model, wrong path).
    Client,
    /// Anything else (not retried).
    Other,
}

/// A failed HTTP call: kind, status, server-requested delay and a redacted message.
#[derive(Debug, Clone)]
pub struct CallError {
    /// Kind.
    pub kind: CallErrorKind,
    /// HTTP status when there was a response.
    pub status: Option<u16>,
    /// `Retry-After` / `retry-after-ms`.
    pub retry_after: Option<Duration>,
    /// What happened (server text cut to 300 characters, key redacted).
    pub message: String,
}

impl CallErrorKind {
    /// Whether the provider may have billed the failed request (it was sent and may have run:
    /// timeouts, lost or garbled replies). Such attempts are booked at their worst case.
    pub fn maybe_billed(self) -> bool {
        matches!(
            self,
            CallErrorKind::Timeout
                | CallErrorKind::Transport
                | CallErrorKind::Malformed
                | CallErrorKind::UpstreamBilled
        )
    }
}

/// One failed attempt inside a query: the error, and whether the query has paid attempts
/// left (when not, even a retryable error ends the query).
#[derive(Debug)]
struct Attempt {
    err: CallError,
    exhausted: bool,
}

impl Classify for Attempt {
    fn retryable(&self) -> bool {
        !self.exhausted && self.err.retryable()
    }
    fn retry_after(&self) -> Option<Duration> {
        self.err.retry_after
    }
}

impl Classify for CallError {
    fn retryable(&self) -> bool {
        matches!(
            self.kind,
            CallErrorKind::Timeout
                | CallErrorKind::Connect
                | CallErrorKind::Transport
                | CallErrorKind::RateLimited
                | CallErrorKind::Server
                | CallErrorKind::Malformed
                | CallErrorKind::UpstreamBilled
        )
    }
    fn retry_after(&self) -> Option<Duration> {
        self.retry_after
    }
}

const CONTEXT_HINTS: [&str; 8] = [
    "context_length_exceeded",
    "exceed_context_size",
    "maximum context length",
    "context length",
    "context window",
    "exceeds the available context",
    "prompt is too long",
    "too many tokens",
];

/// Classify an HTTP error status with its body (pure).
pub fn classify_http(status: u16, body: &str) -> CallErrorKind {
    let lower = body.to_lowercase();
    match status {
        429 if lower.contains("insufficient_quota") => CallErrorKind::Quota,
        429 => CallErrorKind::RateLimited,
        400 | 413 | 422 if CONTEXT_HINTS.iter().any(|h| lower.contains(h)) => CallErrorKind::ContextOverflow,
        401 | 403 => CallErrorKind::Auth,
        408 | 409 | 425 => CallErrorKind::Server,
        501 | 505 => CallErrorKind::Client,
        500..=599 => CallErrorKind::Server,
        _ => CallErrorKind::Client,
    }
}

/// `retry-after-ms`, or `Retry-After` as seconds (fractions allowed) or an HTTP-date measured
/// from the response's `Date` ([`retry::retry_after_delay`]), from response headers.
fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let get = |k: &str| headers.get(k).and_then(|v| v.to_str().ok());
    if let Some(ms) = get("retry-after-ms").and_then(|s| s.trim().parse::<f64>().ok()).filter(|ms| *ms >= 0.0)
        && ms.is_finite()
    {
        return Some(Duration::from_secs_f64((ms / 1000.0).min(86_400.0)));
    }
    retry::retry_after_delay(get("retry-after")?, get("date"), std::time::SystemTime::now())
}

fn clip(s: &str, n: usize) -> String {
    let t = s.trim();
    if t.chars().count() <= n { t.to_owned() } else { format!("{}…", t.chars().take(n).collect::<String>()) }
}

/// A non-2xx response seen by our transport (keeps the status async-openai would lose).
#[derive(Debug)]
struct HttpFailure {
    status: u16,
    retry_after: Option<Duration>,
    body: String,
}
impl std::fmt::Display for HttpFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "HTTP {}", self.status)
    }
}
impl std::error::Error for HttpFailure {}

/// A 2xx response whose body is not JSON.
#[derive(Debug)]
struct MalformedBody {
    status: u16,
    body: String,
}
impl std::fmt::Display for MalformedBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "HTTP {} with a body that is not JSON", self.status)
    }
}
impl std::error::Error for MalformedBody {}

fn reqwest_error(e: &reqwest::Error) -> CallError {
    let mut msg = e.to_string();
    let mut src = std::error::Error::source(e);
    while let Some(s) = src {
        msg.push_str(&format!(": {s}"));
        src = s.source();
    }
    let kind = if e.is_timeout() {
        CallErrorKind::Timeout
    } else if e.is_connect() {
        CallErrorKind::Connect
    } else if e.is_request() || e.is_body() || e.is_decode() {
        CallErrorKind::Transport
    } else {
        CallErrorKind::Other
    };
    CallError { kind, status: e.status().map(|s| s.as_u16()), retry_after: None, message: msg }
}

fn call_error(e: OpenAIError) -> CallError {
    match e {
        OpenAIError::Boxed(b) => {
            if let Some(h) = b.downcast_ref::<HttpFailure>() {
                // What to change is said by the endpoint classifier (endpoint.rs), which knows
                // whether the request went through a proxy.
                CallError {
                    kind: classify_http(h.status, &h.body),
                    status: Some(h.status),
                    retry_after: h.retry_after,
                    message: format!("HTTP {}: {}", h.status, clip(&h.body, 300)),
                }
            } else if let Some(m) = b.downcast_ref::<MalformedBody>() {
                CallError {
                    kind: CallErrorKind::Malformed,
                    status: Some(m.status),
                    retry_after: None,
                    message: format!("HTTP {} body is not JSON: {}", m.status, clip(&m.body, 200)),
                }
            } else if let Some(r) = b.downcast_ref::<reqwest::Error>() {
                reqwest_error(r)
            } else {
                CallError { kind: CallErrorKind::Other, status: None, retry_after: None, message: b.to_string() }
            }
        }
        OpenAIError::Reqwest(r) => reqwest_error(&r),
        OpenAIError::ApiError(a) => {
            let status = a.status_code.as_u16();
            let body = a.api_error.to_string();
            CallError {
                kind: classify_http(status, &body),
                status: Some(status),
                retry_after: None,
                message: format!("HTTP {status}: {}", clip(&body, 300)),
            }
        }
        OpenAIError::JSONDeserialize(_, body) => CallError {
            kind: CallErrorKind::Malformed,
            status: None,
            retry_after: None,
            message: format!("reply is not a chat completion: {}", clip(&body, 200)),
        },
        other => CallError { kind: CallErrorKind::Other, status: None, retry_after: None, message: other.to_string() },
    }
}

// ---------------------------------------------------------------------------------------------
// Replies.

/// The parts of a chat completion the judge uses (read leniently from JSON: unknown finish
/// reasons, missing ids and vendor fields are fine).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ChatReply {
    /// Text of the first choice (content parts joined; the legacy `text` field when there is
    /// no message content).
    pub content: Option<String>,
    /// The `refusal` field (or a content part of type `refusal`).
    pub refusal: Option<String>,
    /// `finish_reason` as sent (`stop`, `length`, `content_filter`, `tool_calls`, `eos`, …).
    pub finish_reason: Option<String>,
    /// `usage`, if reported.
    pub usage: Option<Usage>,
    /// The content tokens with their log-probabilities (`logprobs.content`), when sent.
    pub logprobs: Option<Vec<TokenLogprob>>,
    /// Arguments of each tool call (`tool_calls[].function.arguments`, then a legacy
    /// `function_call.arguments`), in order.
    pub tool_arguments: Vec<String>,
    /// Every non-empty output channel as received: `content`, `reasoning_content`,
    /// `reasoning`, `refusal`, `tool_calls`, `finish_reason` (stored with a reply that holds no
    /// verdict).
    pub channels: BTreeMap<String, String>,
}

fn u(v: &Value, path: &[&str]) -> Option<u64> {
    let mut x = v;
    for p in path {
        x = x.get(p)?;
    }
    x.as_u64().or_else(|| x.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64))
}

/// The error a 200 reply reports instead of a completion: a top-level `error` object without
/// choices, or a choice with `finish_reason: error` and/or its own `error` object (how some
/// routers report a failed upstream call). `None` for an ordinary completion.
fn in_band_error(v: &Value) -> Option<Value> {
    let choice = v.get("choices").and_then(Value::as_array).and_then(|c| c.first());
    let Some(choice) = choice else {
        return v.get("error").filter(|e| !e.is_null()).cloned();
    };
    let own = choice.get("error").filter(|e| !e.is_null());
    let finish_error = choice.get("finish_reason").and_then(Value::as_str) == Some("error");
    match (own, finish_error) {
        (Some(e), _) => Some(e.clone()),
        (None, true) => Some(v.get("error").filter(|e| !e.is_null()).cloned().unwrap_or(Value::Null)),
        (None, false) => None,
    }
}

fn text_of(v: &Value) -> Option<String> {
    match v {
        Value::String(s) if !s.trim().is_empty() => Some(s.clone()),
        Value::Null | Value::String(_) => None,
        other => Some(other.to_string()),
    }
}

impl ChatReply {
    /// Read a chat-completion JSON value.
    ///
    /// # Errors
    /// [`CallError`]: an error reported inside the reply (an `error` object, or
    /// `finish_reason: error`; classified by its code like the HTTP status it stands for, a
    /// 5xx without code), or no choices.
    pub fn from_value(v: &Value) -> Result<Self, CallError> {
        let usage = v.get("usage").filter(|x| x.is_object()).and_then(|us| {
            let prompt = u(us, &["prompt_tokens"]).or_else(|| u(us, &["input_tokens"]))?;
            let completion = u(us, &["completion_tokens"]).or_else(|| u(us, &["output_tokens"])).unwrap_or(0);
            Some(Usage {
                prompt_tokens: prompt,
                completion_tokens: completion,
                cached_tokens: u(us, &["prompt_tokens_details", "cached_tokens"]).unwrap_or(0),
                reasoning_tokens: u(us, &["completion_tokens_details", "reasoning_tokens"]).unwrap_or(0),
            })
        });
        if let Some(err) = in_band_error(v) {
            let code = err
                .get("code")
                .and_then(|c| c.as_u64().or_else(|| c.as_str().and_then(|s| s.trim().parse().ok())))
                .and_then(|c| u16::try_from(c).ok())
                .filter(|c| (100..600).contains(c));
            let body = if err.is_null() {
                "finish_reason \"error\" without an error object".to_owned()
            } else {
                err.to_string()
            };
            let mut kind = code.map_or_else(
                || if body.contains("rate") { CallErrorKind::RateLimited } else { CallErrorKind::Server },
                |c| classify_http(c, &body),
            );
            let billed = usage.is_some_and(|u| u.prompt_tokens + u.completion_tokens > 0);
            if kind == CallErrorKind::Server && billed {
                kind = CallErrorKind::UpstreamBilled;
            }
            return Err(CallError {
                kind,
                status: code,
                retry_after: None,
                message: format!("error in a 2xx reply: {}", clip(&body, 300)),
            });
        }
        let choices = v.get("choices").and_then(Value::as_array).filter(|c| !c.is_empty());
        let Some(choice) = choices.and_then(|c| c.first()) else {
            return Err(CallError {
                kind: CallErrorKind::Malformed,
                status: None,
                retry_after: None,
                message: format!("reply has no choices: {}", clip(&v.to_string(), 200)),
            });
        };
        let msg = choice.get("message");
        let mut refusal = msg.and_then(|m| m.get("refusal")).and_then(Value::as_str).map(str::to_owned);
        let content = msg.and_then(|m| m.get("content")).and_then(|c| match c {
            Value::String(s) => Some(s.clone()),
            Value::Array(parts) => {
                for p in parts {
                    if p.get("type").and_then(Value::as_str) == Some("refusal")
                        && let Some(r) = p.get("refusal").and_then(Value::as_str)
                    {
                        refusal.get_or_insert_with(String::new).push_str(r);
                    }
                }
                Some(
                    parts
                        .iter()
                        .filter(|p| {
                            !matches!(p.get("type").and_then(Value::as_str), Some("refusal" | "thinking" | "reasoning"))
                        })
                        .filter_map(|p| p.get("text").and_then(Value::as_str).or_else(|| p.as_str()))
                        .collect::<String>(),
                )
            }
            _ => None,
        });
        let content = content.or_else(|| choice.get("text").and_then(Value::as_str).map(str::to_owned));
        let finish_reason = choice.get("finish_reason").and_then(Value::as_str).map(str::to_owned);
        let mut tool_arguments = Vec::new();
        let args_text = |a: &Value| match a {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        if let Some(calls) = msg.and_then(|m| m.get("tool_calls")).and_then(Value::as_array) {
            for c in calls {
                if let Some(a) = c.get("function").and_then(|f| f.get("arguments")) {
                    tool_arguments.push(args_text(a));
                }
            }
        }
        if let Some(a) = msg.and_then(|m| m.get("function_call")).and_then(|f| f.get("arguments")) {
            tool_arguments.push(args_text(a));
        }
        let mut channels = BTreeMap::new();
        if let Some(c) = content.as_deref().filter(|c| !c.trim().is_empty()) {
            channels.insert("content".to_owned(), c.to_owned());
        }
        for key in ["reasoning_content", "reasoning", "reasoning_details", "tool_calls", "function_call"] {
            if let Some(t) = msg.and_then(|m| m.get(key)).and_then(text_of) {
                channels.insert(key.to_owned(), t);
            }
        }
        if let Some(r) = refusal.as_deref().filter(|r| !r.trim().is_empty()) {
            channels.insert("refusal".to_owned(), r.to_owned());
        }
        if let Some(f) = &finish_reason {
            channels.insert("finish_reason".to_owned(), f.clone());
        }
        let logprobs = choice
            .get("logprobs")
            .and_then(|l| l.get("content"))
            .and_then(Value::as_array)
            .map(|toks| {
                toks.iter()
                    .filter_map(|t| {
                        let lp = |x: &Value| x.get("logprob").and_then(Value::as_f64);
                        let bytes = |x: &Value| {
                            x.get("bytes")
                                .and_then(Value::as_array)
                                .and_then(|b| b.iter().map(|n| n.as_u64().and_then(|n| u8::try_from(n).ok())).collect())
                        };
                        Some(TokenLogprob {
                            token: t.get("token")?.as_str()?.to_owned(),
                            bytes: bytes(t),
                            logprob: lp(t)?,
                            top: t
                                .get("top_logprobs")
                                .and_then(Value::as_array)
                                .map(|tops| {
                                    tops.iter()
                                        .filter_map(|x| Some((x.get("token")?.as_str()?.to_owned(), lp(x)?)))
                                        .collect()
                                })
                                .unwrap_or_default(),
                        })
                    })
                    .collect::<Vec<_>>()
            })
            .filter(|v| !v.is_empty());
        Ok(Self { content, refusal, finish_reason, usage, logprobs, tool_arguments, channels })
    }
}

// ---------------------------------------------------------------------------------------------
// The judge.

#[derive(Default)]
struct Counters {
    requests: AtomicU64,
    retries: AtomicU64,
    rate_limited: AtomicU64,
    server_errors: AtomicU64,
    timeouts: AtomicU64,
    connect_errors: AtomicU64,
    malformed: AtomicU64,
    other_errors: AtomicU64,
    invalid_replies: AtomicU64,
    reasks: AtomicU64,
    context_overflows: AtomicU64,
    usage_missing: AtomicU64,
    soft_verdicts: AtomicU64,
    rate_limit_wait_ms: AtomicU64,
    replies: AtomicU64,
    in_band_errors: AtomicU64,
}

/// The OpenAI-compatible judge.
pub struct OpenAiJudge {
    cfg: OpenAiConfig,
    price: Price,
    key: Option<Secret>,
    template: PromptTemplate,
    client: Client<OpenAIConfig>,
    /// The same HTTP client, for the preflight request.
    http: reqwest::Client,
    limits: RateLimits,
    /// Requests in flight: `concurrency` at most, fewer while 429s come ([`concurrency`]).
    in_flight: InFlightLimit,
    /// Classifies endpoint-wide failures and knows the proxy route ([`endpoint`]).
    endpoint: Endpoint,
    policy: RetryPolicy,
    counters: Counters,
    invalid_by_reason: Mutex<BTreeMap<String, u64>>,
    soft_fallbacks: Mutex<BTreeMap<String, u64>>,
    /// Bodies with broken text repaired by the transport (shared with it).
    broken_text: std::sync::Arc<AtomicU64>,
    task_limit: Mutex<HashMap<String, Option<usize>>>,
}

/// One rendered query and its context status.
struct Query {
    prompt: RenderedPrompt,
    over_context: bool,
}

impl OpenAiJudge {
    /// Build the judge from a config prepared by [`prepare`], reading the key from the variable
    /// the config names.
    ///
    /// # Errors
    /// A message naming the key (unset variable, bad template, no price).
    pub fn from_config(cfg: &OpenAiConfig) -> Result<Self, String> {
        let key = check_key_env(cfg).map_err(|m| format!("judge.openai.api_key_env: {m}"))?;
        Self::new(cfg.clone(), key)
    }

    /// Build the judge with an explicit key (`None`: no key; tests and keyless local servers).
    ///
    /// # Errors
    /// A message naming the key.
    pub fn new(cfg: OpenAiConfig, key: Option<Secret>) -> Result<Self, String> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let price = cfg.price_table().map_err(|(k, m)| format!("{k}: {m}"))?;
        let template = PromptTemplate::load(&cfg.prompt).map_err(|e| format!("judge.openai.prompt: {e}"))?;
        if let Some(k) = &key
            && !k.expose().bytes().all(|b| (0x21..=0x7e).contains(&b))
        {
            return Err("judge.openai.api_key_env: the key contains characters not allowed in an HTTP header".into());
        }
        let timeout = Duration::from_secs_f64(cfg.timeout_s);
        let proxies = ProxyEnv::from_env();
        // `identity`: without an Accept-Encoding a conformant server may compress (RFC 9110
        // §12.5.3), and this client decodes no content coding.
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert(reqwest::header::ACCEPT_ENCODING, reqwest::header::HeaderValue::from_static("identity"));
        let http = proxies
            .apply(reqwest::Client::builder())
            .default_headers(headers)
            .timeout(timeout)
            .connect_timeout(timeout.min(Duration::from_secs(15)))
            .build()
            .map_err(|e| format!("building the HTTP client: {e}"))?;
        let oa = OpenAIConfig::new()
            .with_api_base(cfg.base_url.trim_end_matches('/'))
            .with_api_key(key.as_ref().map_or("", Secret::expose))
            .with_org_id("")
            .with_project_id("");
        let transport_http = http.clone();
        let broken_text = std::sync::Arc::new(AtomicU64::new(0));
        let repairs = broken_text.clone();
        let svc = tower::service_fn(move |f: HttpRequestFactory| {
            let http = transport_http.clone();
            let repairs = repairs.clone();
            async move { transport(&http, f, &repairs).await }
        });
        // Client::build installs async-openai's retrying executor; with_http_service replaces it
        // with ours (no retry layer), so only crate::judge::openai::retry retries (async-openai's default client retries on its own).
        let client = Client::build(http.clone(), oa).with_http_service(svc);
        Ok(Self {
            limits: RateLimits::new(cfg.requests_per_minute, cfg.tokens_per_minute),
            in_flight: InFlightLimit::new(cfg.concurrency),
            endpoint: Endpoint::new(&cfg, key.is_some(), &proxies),
            http,
            policy: cfg.retry_policy(),
            price,
            key,
            template,
            client,
            counters: Counters::default(),
            invalid_by_reason: Mutex::new(BTreeMap::new()),
            soft_fallbacks: Mutex::new(BTreeMap::new()),
            broken_text,
            task_limit: Mutex::new(HashMap::new()),
            cfg,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &OpenAiConfig {
        &self.cfg
    }

    fn redact(&self, s: &str) -> String {
        crate::judge::openai::secret::redact_opt(self.key.as_ref(), s)
    }

    /// Byte limit of the task text under `truncate_task` for this pool (None = no cut).
    fn task_limit(&self, pool: &Pool) -> Option<usize> {
        let (Some(ctx), OverflowPolicy::TruncateTask) = (self.cfg.context_tokens, self.cfg.on_context_overflow) else {
            return None;
        };
        let mut cache = self.task_limit.lock().expect("not poisoned");
        *cache.entry(pool.pool_id.clone()).or_insert_with(|| {
            let (a, b) = longest_pair(pool);
            let r = self.template.render("", text(pool, a), text(pool, b)).ok()?;
            let need_rest = r.token_estimate(self.cfg.bytes_per_token) + u64::from(self.cfg.max_tokens);
            let room_tokens = ctx.saturating_sub(need_rest);
            let room_bytes = (room_tokens as f64 * self.cfg.bytes_per_token).floor() as usize;
            (pool.task.len() > room_bytes).then_some(room_bytes)
        })
    }

    /// Bytes the two answers may take together under `truncate_answers` so that the prompt's
    /// estimate plus `max_tokens` fits `context_tokens` (`None` under other policies): with the
    /// task and template rendered around empty answers taking B bytes and O tokens of overhead,
    /// ⌊(context_tokens − max_tokens − O) · bytes_per_token⌋ − B.
    fn answer_room(&self, task: &str) -> Option<usize> {
        let (Some(ctx), OverflowPolicy::TruncateAnswers) = (self.cfg.context_tokens, self.cfg.on_context_overflow)
        else {
            return None;
        };
        let around = self.template.render(task, "", "").ok()?;
        let overhead = around.token_bound() - around.bytes();
        let tokens = ctx.saturating_sub(u64::from(self.cfg.max_tokens) + overhead);
        let bytes = (tokens as f64 * self.cfg.bytes_per_token).floor() as u64;
        Some(bytes.saturating_sub(around.bytes()) as usize)
    }

    fn render(&self, pool: &Pool, a: usize, b: usize) -> Result<Query, String> {
        let task = match self.task_limit(pool) {
            Some(limit) => truncate_to_bytes(&pool.task, limit, " […]"),
            None => pool.task.clone(),
        };
        let cut = self.answer_room(&task).and_then(|room| fit_answers(text(pool, a), text(pool, b), room));
        let (answer_a, answer_b) = match &cut {
            Some((x, y)) => (x.as_str(), y.as_str()),
            None => (text(pool, a), text(pool, b)),
        };
        let prompt = self.template.render(&task, answer_a, answer_b).map_err(|e| e.to_string())?;
        let over_context = self
            .cfg
            .context_tokens
            .is_some_and(|ctx| prompt.token_estimate(self.cfg.bytes_per_token) + u64::from(self.cfg.max_tokens) > ctx);
        Ok(Query { prompt, over_context })
    }

    /// The request body for a rendered prompt (without the key, which travels in a header).
    pub fn request_body(&self, prompt: &RenderedPrompt) -> Value {
        let messages: Vec<Value> = prompt.messages().iter().map(|(r, c)| json!({"role": r, "content": c})).collect();
        let mut body = Map::new();
        body.insert("model".into(), json!(self.cfg.model));
        body.insert("messages".into(), Value::Array(messages));
        body.insert("stream".into(), json!(false));
        body.insert("n".into(), json!(1));
        match self.cfg.max_tokens_field {
            MaxTokensField::MaxTokens => {
                body.insert("max_tokens".into(), json!(self.cfg.max_tokens));
            }
            MaxTokensField::MaxCompletionTokens => {
                body.insert("max_completion_tokens".into(), json!(self.cfg.max_tokens));
            }
            MaxTokensField::Both => {
                body.insert("max_tokens".into(), json!(self.cfg.max_tokens));
                body.insert("max_completion_tokens".into(), json!(self.cfg.max_tokens));
            }
        }
        if let Some(t) = self.cfg.temperature {
            body.insert("temperature".into(), json!(t));
        }
        if self.cfg.logprobs {
            body.insert("logprobs".into(), json!(true));
            body.insert("top_logprobs".into(), json!(self.cfg.top_logprobs));
        }
        if let Some(extra) = &self.cfg.extra_body {
            // The tool's own fields win (config load already rejects reserved keys).
            for (k, v) in extra {
                if extra_body::reserved(k, self.cfg.temperature.is_some()).is_none() {
                    body.entry(k.clone()).or_insert_with(|| v.clone());
                }
            }
        }
        Value::Object(body)
    }

    /// Worst-case cost of one HTTP reply for a prompt (USD).
    fn attempt_worst_usd(&self, prompt: &RenderedPrompt) -> f64 {
        (prompt.token_bound() as f64 * self.price.input.max(self.price.cached_input)
            + f64::from(self.cfg.max_tokens) * self.price.output)
            / 1e6
    }

    fn count_error(&self, e: &CallError) {
        let c = &self.counters;
        let ctr = match e.kind {
            CallErrorKind::RateLimited | CallErrorKind::Quota => &c.rate_limited,
            CallErrorKind::Server | CallErrorKind::UpstreamBilled => &c.server_errors,
            CallErrorKind::Timeout => &c.timeouts,
            CallErrorKind::Connect | CallErrorKind::Transport => &c.connect_errors,
            CallErrorKind::Malformed => &c.malformed,
            CallErrorKind::ContextOverflow => &c.context_overflows,
            _ => &c.other_errors,
        };
        ctr.fetch_add(1, Ordering::Relaxed);
    }

    /// One HTTP call: a slot among the requests in flight, the rate limits, the request.
    async fn call(&self, body: &Value, est_tokens: u64) -> Result<ChatReply, CallError> {
        let slot = self.in_flight.acquire().await;
        let waited = self.limits.acquire(est_tokens).await.map_err(|e| CallError {
            kind: CallErrorKind::Other,
            status: None,
            retry_after: None,
            message: e.to_string(),
        })?;
        self.counters.rate_limit_wait_ms.fetch_add(waited.as_millis() as u64, Ordering::Relaxed);
        self.counters.requests.fetch_add(1, Ordering::Relaxed);
        let deadline = Duration::from_secs_f64(self.cfg.timeout_s) + Duration::from_secs(5);
        let chat = self.client.chat();
        let fut = chat.create_byot::<_, Value>(body.clone());
        let res = match tokio::time::timeout(deadline, fut).await {
            Err(_) => Err(CallError {
                kind: CallErrorKind::Timeout,
                status: None,
                retry_after: None,
                message: format!("no reply within {:.1} s", deadline.as_secs_f64()),
            }),
            Ok(Err(e)) => Err(call_error(e)),
            Ok(Ok(v)) => {
                if in_band_error(&v).is_some() {
                    self.counters.in_band_errors.fetch_add(1, Ordering::Relaxed);
                }
                ChatReply::from_value(&v)
            }
        };
        slot.finish(match &res {
            Ok(_) => concurrency::Outcome::Success,
            Err(e) if e.kind == CallErrorKind::RateLimited => concurrency::Outcome::RateLimited,
            Err(_) => concurrency::Outcome::Other,
        });
        res.map_err(|mut e| {
            e.message = self.redact(&e.message);
            if let Some(p) = self.endpoint.proxy() {
                e.message = format!("{} (through {p})", e.message);
            }
            self.count_error(&e);
            e
        })
    }

    /// The free request before the first query: `GET {base_url}/models` ([`endpoint`] reads
    /// the reply). Warnings to show, or the fault that stops the run.
    async fn check_endpoint(&self) -> Result<Vec<String>, JudgeError> {
        let url = self.endpoint.models_url();
        let mut req = self.http.get(&url).timeout(Duration::from_secs_f64(self.cfg.timeout_s.min(10.0)));
        if let Some(k) = &self.key {
            req = req.bearer_auth(k.expose());
        }
        let stop = |f: endpoint::EndpointFault| JudgeError::Endpoint {
            setting: f.setting,
            message: self.redact(&f.message),
            cost_usd: 0.0,
        };
        match req.send().await {
            Err(e) if e.is_connect() => {
                Err(stop(self.endpoint.connect_fault(&self.redact(&reqwest_error(&e).message))))
            }
            Err(e) => Ok(vec![format!(
                "{url} did not answer ({}); the first queries will tell whether the judge is there",
                clip(&self.redact(&reqwest_error(&e).message), 200)
            )]),
            Ok(resp) => {
                let status = resp.status().as_u16();
                let body = resp.text().await.unwrap_or_default();
                self.endpoint.models_reply(status, &self.redact(&body)).map_err(stop)
            }
        }
    }

    fn invalid_reply(
        &self,
        reason: String,
        raw: Option<String>,
        usage: Usage,
        cost: f64,
        attempts: u32,
        t0: Instant,
    ) -> JudgeReply {
        JudgeReply {
            y: None,
            invalid_reason: Some(reason),
            raw,
            usage,
            cost_usd: cost,
            attempts,
            latency_ms: t0.elapsed().as_millis() as u64,
            detail: VerdictDetail::default(),
        }
    }

    /// The verdict of one reply: y (soft P(A) when logprobs are on and usable at the verdict
    /// letter, else the hard value) and what the parser saw; or why the reply is invalid.
    /// Counts replies, soft verdicts and the reasons verdicts stayed hard.
    fn read_verdict(&self, reply: &ChatReply, answers: [&str; 2]) -> Result<(f64, VerdictDetail), Invalid> {
        self.counters.replies.fetch_add(1, Ordering::Relaxed);
        let channels = parse::Reply {
            content: reply.content.as_deref(),
            finish_reason: reply.finish_reason.as_deref(),
            refusal: reply.refusal.as_deref(),
            tool_arguments: &reply.tool_arguments,
        };
        let v = parse::parse_reply(&channels, answers, self.cfg.verdict_format)?;
        let mut y = v.outcome.y();
        if self.cfg.logprobs {
            let soft = match (&reply.logprobs, v.letter_at, v.outcome) {
                (None, ..) => Err(SoftMiss::Missing),
                (_, _, Outcome::Tie) | (_, None, _) => Err(SoftMiss::NotALetter),
                (Some(toks), Some(at), _) => parse::soft_p_a(reply.content.as_deref().unwrap_or(""), toks, at),
            };
            match soft {
                Ok(p) => {
                    y = p;
                    self.counters.soft_verdicts.fetch_add(1, Ordering::Relaxed);
                }
                Err(miss) => {
                    *self.soft_fallbacks.lock().expect("not poisoned").entry(miss.as_str().to_owned()).or_default() +=
                        1;
                }
            }
        }
        let verdict_from = match v.channel {
            Channel::Text => None,
            Channel::Json => Some("json".to_owned()),
            Channel::ToolCall => Some("tool_call".to_owned()),
        };
        Ok((y, VerdictDetail { strong_preference: v.strong, verdict_from, raw_channels: None }))
    }

    async fn judge_query(&self, pool: &Pool, a: usize, b: usize) -> Result<JudgeReply, JudgeError> {
        let t0 = Instant::now();
        let (ida, idb) = (pool.items[a].id.clone(), pool.items[b].id.clone());
        let q = self.render(pool, a, b).map_err(|message| JudgeError::Unjudgeable {
            a: ida.clone(),
            b: idb.clone(),
            message,
        })?;
        let est = q.prompt.token_estimate(self.cfg.bytes_per_token) + u64::from(self.cfg.max_tokens);
        if q.over_context {
            self.counters.context_overflows.fetch_add(1, Ordering::Relaxed);
            let msg = format!(
                "prompt needs about {est} tokens (with max_tokens), over context_tokens {}",
                self.cfg.context_tokens.unwrap_or(0)
            );
            return match self.cfg.on_context_overflow {
                OverflowPolicy::Fail => Err(JudgeError::Unjudgeable { a: ida, b: idb, message: msg }),
                _ => Ok(self.invalid_reply(
                    format!("context_overflow: {msg}; not sent"),
                    None,
                    Usage::default(),
                    0.0,
                    0,
                    t0,
                )),
            };
        }
        self.limits.check_fits(est).map_err(|e| JudgeError::Unjudgeable {
            a: ida.clone(),
            b: idb.clone(),
            message: e.to_string(),
        })?;
        let body = self.request_body(&q.prompt);
        let answers = [text(pool, a), text(pool, b)];
        let attempt_worst = self.attempt_worst_usd(&q.prompt);
        // Paid attempts left: every reply and every possibly-billed failure takes one, so the
        // query never costs more than the (1 + max_invalid_retries) worst cases reserved for it.
        let slots = AtomicU64::new(1 + u64::from(self.cfg.max_invalid_retries));
        let attempts = AtomicU64::new(0);
        let booked_failures = AtomicU64::new(0); // possibly-billed failed attempts
        let mut usage = Usage::default();
        let mut cost = 0.0;
        let mut last: Option<(Invalid, Option<String>, BTreeMap<String, String>)> = None;
        let mut asks = 0u32;
        while slots.load(Ordering::Relaxed) > 0 {
            if asks > 0 {
                self.counters.reasks.fetch_add(1, Ordering::Relaxed);
            }
            asks += 1;
            let res = crate::judge::openai::retry::retry(
                &self.policy,
                || async {
                    attempts.fetch_add(1, Ordering::Relaxed);
                    match self.call(&body, est).await {
                        Ok(r) => {
                            slots.fetch_sub(1, Ordering::Relaxed);
                            Ok(r)
                        }
                        Err(err) => {
                            if err.kind.maybe_billed() {
                                slots.fetch_sub(1, Ordering::Relaxed);
                                booked_failures.fetch_add(1, Ordering::Relaxed);
                            }
                            Err(Attempt { exhausted: slots.load(Ordering::Relaxed) == 0, err })
                        }
                    }
                },
                |e: &Attempt, d| {
                    self.counters.retries.fetch_add(1, Ordering::Relaxed);
                    tracing::info!("retrying {ida} vs {idb} in {:.2} s after: {}", d.as_secs_f64(), e.err.message);
                },
            )
            .await;
            let n_attempts = attempts.load(Ordering::Relaxed) as u32;
            let failed_cost = booked_failures.swap(0, Ordering::Relaxed) as f64 * attempt_worst;
            cost += failed_cost;
            let reply = match res {
                Ok(r) => r,
                Err(Attempt { err: e, .. }) if e.kind == CallErrorKind::ContextOverflow => {
                    return match self.cfg.on_context_overflow {
                        OverflowPolicy::Fail => Err(JudgeError::Unjudgeable {
                            a: ida,
                            b: idb,
                            message: format!(
                                "the server says the prompt is over its context ({}); with on_context_overflow: fail the pair is set aside (skip stores such queries as invalid; truncate_answers, with context_tokens, shortens the answers)",
                                e.message
                            ),
                        }),
                        _ => Ok(self.invalid_reply(
                            format!("context_overflow: {}", e.message),
                            None,
                            usage,
                            cost,
                            n_attempts,
                            t0,
                        )),
                    };
                }
                Err(Attempt { err: e, exhausted }) => {
                    if let Some(f) = self.endpoint.classify(e.kind, e.status, &e.message) {
                        return Err(JudgeError::Endpoint {
                            setting: f.setting,
                            message: format!("{} (after {n_attempts} attempts)", f.message),
                            cost_usd: cost,
                        });
                    }
                    let why = if exhausted && e.retryable() { "; no paid attempt left for this query" } else { "" };
                    return Err(JudgeError::Request {
                        status: e.status,
                        message: format!("{} (after {n_attempts} attempts{why})", e.message),
                        retryable: e.retryable(),
                        cost_usd: cost,
                    });
                }
            };
            let this_usage = match reply.usage {
                Some(u) => u,
                None => {
                    self.counters.usage_missing.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!("reply for {ida} vs {idb} has no usage; booking its worst case");
                    Usage {
                        prompt_tokens: q.prompt.token_bound(),
                        completion_tokens: u64::from(self.cfg.max_tokens),
                        ..Default::default()
                    }
                }
            };
            usage.add(&this_usage);
            cost += self.price.cost_usd(&this_usage);
            let raw = reply
                .content
                .as_deref()
                .filter(|c| !c.trim().is_empty() || reply.tool_arguments.is_empty())
                .or(reply.tool_arguments.last().map(String::as_str))
                .map(|c| self.redact(c));
            match self.read_verdict(&reply, answers) {
                Ok((y, detail)) => {
                    return Ok(JudgeReply {
                        y: Some(y),
                        invalid_reason: None,
                        raw,
                        usage,
                        cost_usd: cost,
                        attempts: n_attempts,
                        latency_ms: t0.elapsed().as_millis() as u64,
                        detail,
                    });
                }
                Err(inv) => {
                    self.counters.invalid_replies.fetch_add(1, Ordering::Relaxed);
                    *self
                        .invalid_by_reason
                        .lock()
                        .expect("not poisoned")
                        .entry(inv.as_str().to_owned())
                        .or_default() += 1;
                    let raw = match (&raw, &reply.refusal) {
                        (None, Some(r)) => Some(self.redact(r)),
                        _ => raw,
                    };
                    let channels: BTreeMap<String, String> =
                        reply.channels.iter().map(|(k, v)| (k.clone(), self.redact(v))).collect();
                    last = Some((inv, raw, channels));
                }
            }
        }
        let (inv, raw, channels) = last.expect("the loop ends after an invalid reply");
        let n = attempts.load(Ordering::Relaxed) as u32;
        let mut reply = self.invalid_reply(format!("{}: after {asks} asks", inv.as_str()), raw, usage, cost, n, t0);
        reply.detail.raw_channels = Some(channels);
        Ok(reply)
    }
}

/// Our async-openai transport: send, keep the status of every non-2xx (with `Retry-After`),
/// reject a 2xx body that is not JSON, and never retry.
///
/// A 2xx body with broken text (invalid UTF-8, lone surrogate escapes such as `"\ud83d"`, which
/// serde_json and so async-openai reject) is decoded with U+FFFD in place of each broken
/// sequence ([`body::repair`]) and counted in `repairs`, so the verdict around it is read.
async fn transport(
    http: &reqwest::Client,
    f: HttpRequestFactory,
    repairs: &AtomicU64,
) -> Result<reqwest::Response, OpenAIError> {
    let req = f.build().await?;
    let resp = http.execute(req).await.map_err(OpenAIError::Reqwest)?;
    let status = resp.status();
    let retry_after = retry_after(resp.headers());
    let bytes = resp.bytes().await.map_err(OpenAIError::Reqwest)?;
    if !status.is_success() {
        let body = String::from_utf8_lossy(&bytes).into_owned();
        return Err(OpenAIError::Boxed(Box::new(HttpFailure { status: status.as_u16(), retry_after, body })));
    }
    let repaired = body::repair(&bytes);
    let owned: Option<Vec<u8>> = repaired.changed().then(|| {
        repairs.fetch_add(1, Ordering::Relaxed);
        tracing::warn!(
            "reply body with broken text decoded with U+FFFD ({} invalid UTF-8 sequences, {} lone surrogate escapes)",
            repaired.invalid_utf8,
            repaired.lone_surrogates
        );
        repaired.body.into_owned()
    });
    let checked: &[u8] = owned.as_deref().unwrap_or(&bytes);
    if serde_json::from_slice::<serde::de::IgnoredAny>(checked).is_err() {
        let body = String::from_utf8_lossy(checked).into_owned();
        return Err(OpenAIError::Boxed(Box::new(MalformedBody { status: status.as_u16(), body })));
    }
    let body: reqwest::Body = match owned {
        Some(v) => v.into(),
        None => bytes.into(),
    };
    let rebuilt = http::Response::builder().status(status).body(body).map_err(|e| OpenAIError::Boxed(Box::new(e)))?;
    Ok(reqwest::Response::from(rebuilt))
}

impl Judge for OpenAiJudge {
    fn describe(&self) -> String {
        let file = self.cfg.prompt.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
        format!("openai {} @ {} (prompt {file})", self.cfg.model, self.cfg.base_url)
    }

    fn cache_key(&self, pool: &Pool, a: usize, b: usize) -> String {
        let prompt_hash = match self.render(pool, a, b) {
            Ok(q) => q.prompt.hash(),
            Err(e) => format!("render error: {e}"),
        };
        let v = json!({
            "judge": "openai",
            "base_url": self.cfg.base_url,
            "model": self.cfg.model,
            "prompt": prompt_hash,
            "max_tokens": self.cfg.max_tokens,
            "max_tokens_field": self.cfg.max_tokens_field,
            "temperature": self.cfg.temperature,
            "logprobs": self.cfg.logprobs.then_some(self.cfg.top_logprobs),
            "extra_body": self.cfg.extra_body,
            "pool": pool.pool_id,
            "a": pool.items[a].id,
            "b": pool.items[b].id,
        });
        crate::rng::sha256_hex(&v.to_string())
    }

    fn worst_case_usd(&self, pool: &Pool, a: usize, b: usize) -> f64 {
        match self.render(pool, a, b) {
            Ok(q) if q.over_context && self.cfg.on_context_overflow != OverflowPolicy::Fail => 0.0,
            Ok(q) => f64::from(1 + self.cfg.max_invalid_retries) * self.attempt_worst_usd(&q.prompt),
            Err(_) => 0.0,
        }
    }

    fn has_price(&self) -> bool {
        true
    }

    fn stats(&self) -> Option<JudgeStats> {
        let c = &self.counters;
        let g = |x: &AtomicU64| x.load(Ordering::Relaxed);
        let in_flight = self.in_flight.stats();
        Some(JudgeStats {
            requests: g(&c.requests),
            retries: g(&c.retries),
            rate_limited: g(&c.rate_limited),
            server_errors: g(&c.server_errors),
            timeouts: g(&c.timeouts),
            connect_errors: g(&c.connect_errors),
            malformed: g(&c.malformed),
            other_errors: g(&c.other_errors),
            invalid_replies: g(&c.invalid_replies),
            reasks: g(&c.reasks),
            invalid_by_reason: self.invalid_by_reason.lock().expect("not poisoned").clone(),
            context_overflows: g(&c.context_overflows),
            usage_missing: g(&c.usage_missing),
            soft_verdicts: g(&c.soft_verdicts),
            soft_fallbacks: self.soft_fallbacks.lock().expect("not poisoned").clone(),
            replies: g(&c.replies),
            in_band_errors: g(&c.in_band_errors),
            broken_text_repairs: self.broken_text.load(Ordering::Relaxed),
            rate_limit_wait_ms: g(&c.rate_limit_wait_ms),
            in_flight_cuts: in_flight.cuts,
            in_flight_lowest: in_flight.lowest.map(|l| l as u64),
            in_flight_limit_at_end: in_flight.now.map(|l| l as u64),
        })
    }

    fn invalid_rate_limit(&self) -> Option<(f64, u64)> {
        Some((self.cfg.max_invalid_rate, self.cfg.invalid_rate_min_replies))
    }

    fn preview(&self, pool: &Pool, a: usize, b: usize) -> Option<String> {
        Some(match self.render(pool, a, b) {
            Ok(q) => {
                let mut s = q.prompt.display();
                s.push_str(&format!(
                    "\n\n({} bytes; ≤ {} prompt tokens (bound), ≈ {} (estimate at {} bytes/token); max_tokens {}{})",
                    q.prompt.bytes(),
                    q.prompt.token_bound(),
                    q.prompt.token_estimate(self.cfg.bytes_per_token),
                    self.cfg.bytes_per_token,
                    self.cfg.max_tokens,
                    if q.over_context { "; OVER context_tokens" } else { "" }
                ));
                s
            }
            Err(e) => format!("(cannot render: {e})"),
        })
    }

    fn preflight(&self) -> BoxFuture<'_, Result<Vec<String>, JudgeError>> {
        Box::pin(self.check_endpoint())
    }

    fn judge<'a>(&'a self, pool: &'a Pool, a: usize, b: usize) -> BoxFuture<'a, Result<JudgeReply, JudgeError>> {
        Box::pin(self.judge_query(pool, a, b))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tools_request_fields_win_over_extra_body() {
        // A config that skipped `prepare` (which rejects these keys) still sends the tool's own
        // limit and one choice.
        let dir = tempfile::tempdir().unwrap();
        let prompt = dir.path().join("t.j2");
        std::fs::write(&prompt, "{{ task }}\nA: {{ answer_a }}\nB: {{ answer_b }}").unwrap();
        let cfg: OpenAiConfig = serde_json::from_value(json!({
            "base_url": "http://127.0.0.1:9/v1", "model": "m", "api_key_env": "X", "prompt": prompt,
            "max_tokens": 4, "price": {"input_usd_per_mtok": 1.0, "output_usd_per_mtok": 2.0},
            "extra_body": {"max_tokens": 4000, "max_completion_tokens": 4000, "n": 3, "model": "other", "cache_prompt": false}
        }))
        .unwrap();
        let j = OpenAiJudge::new(cfg, None).unwrap();
        let body = j.request_body(&j.template.render("task", "x", "y").unwrap());
        assert_eq!((&body["max_tokens"], &body["n"], &body["model"]), (&json!(4), &json!(1), &json!("m")));
        assert!(body.get("max_completion_tokens").is_none(), "{body}");
        assert_eq!(body["cache_prompt"], false, "vendor fields still pass");
    }

    #[test]
    fn price_books_cached_and_reasoning_once() {
        let p = Price { input: 2.0, cached_input: 0.5, output: 8.0 };
        // 1000 prompt (300 cached), 200 completion (150 reasoning, included in completion).
        let u = Usage { prompt_tokens: 1000, completion_tokens: 200, cached_tokens: 300, reasoning_tokens: 150 };
        let want = (700.0 * 2.0 + 300.0 * 0.5 + 200.0 * 8.0) / 1e6;
        assert!((p.cost_usd(&u) - want).abs() < 1e-15);
        // A provider reporting reasoning apart from (and larger than) completion: added.
        let u2 = Usage { prompt_tokens: 10, completion_tokens: 5, cached_tokens: 0, reasoning_tokens: 40 };
        assert!((p.cost_usd(&u2) - (10.0 * 2.0 + 45.0 * 8.0) / 1e6).abs() < 1e-15);
        // Cached reported beyond prompt (counted apart): both priced, nothing subtracted.
        let u3 = Usage { prompt_tokens: 10, completion_tokens: 0, cached_tokens: 20, reasoning_tokens: 0 };
        assert!((p.cost_usd(&u3) - (10.0 * 2.0 + 20.0 * 0.5) / 1e6).abs() < 1e-15);
    }

    #[test]
    fn http_statuses_are_classified() {
        use CallErrorKind::*;
        let llama_ctx = r#"{"error":{"code":400,"message":"request (5030 tokens) exceeds the available context size (4096 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":5030,"n_ctx":4096}}"#;
        let openai_ctx = r#"{"error":{"message":"This model's maximum context length is 128000 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}"#;
        let quota = r#"{"error":{"message":"You exceeded your current quota","type":"insufficient_quota"}}"#;
        let cases = [
            (429, "", RateLimited),
            (429, quota, Quota),
            (500, "oops", Server),
            (503, "", Server),
            (408, "", Server),
            (400, llama_ctx, ContextOverflow),
            (400, openai_ctx, ContextOverflow),
            (400, r#"{"error":{"code":400,"message":"'messages' is required"}}"#, Client),
            (401, "", Auth),
            (404, r#"{"message":"File Not Found","type":"not_found_error","code":404}"#, Client),
            (501, "", Client),
        ];
        for (s, b, want) in cases {
            assert_eq!(classify_http(s, b), want, "{s} {b}");
        }
        let e = CallError {
            kind: RateLimited,
            status: Some(429),
            retry_after: Some(Duration::from_secs(2)),
            message: String::new(),
        };
        assert!(e.retryable());
        assert_eq!(Classify::retry_after(&e), Some(Duration::from_secs(2)));
        assert!(!CallError { kind: Quota, ..e.clone() }.retryable());
        assert!(!CallError { kind: ContextOverflow, ..e.clone() }.retryable());
        assert!(CallError { kind: Timeout, ..e }.retryable());
    }

    #[test]
    fn replies_are_read_leniently() {
        // llm-server README example (llama.cpp), trimmed.
        let v: Value = serde_json::from_str(r#"{"choices":[{"finish_reason":"length","index":0,"message":{"role":"assistant","content":"A"},
            "logprobs":{"content":[{"id":32,"token":"A","bytes":[65],"logprob":-0.5170,"top_logprobs":[{"id":32,"token":"A","bytes":[65],"logprob":-0.5170},{"id":33,"token":"B","bytes":[66],"logprob":-0.9109}]}]}}],
            "created":1795980776,"model":"qwen2.5-coder-1.5b","object":"chat.completion",
            "usage":{"completion_tokens":1,"prompt_tokens":394,"total_tokens":395,"prompt_tokens_details":{"cached_tokens":226}},"timings":{"cache_n":226}}"#).unwrap();
        let r = ChatReply::from_value(&v).unwrap();
        assert_eq!(r.content.as_deref(), Some("A"));
        assert_eq!(r.finish_reason.as_deref(), Some("length"));
        assert_eq!(
            r.usage,
            Some(Usage { prompt_tokens: 394, completion_tokens: 1, cached_tokens: 226, reasoning_tokens: 0 })
        );
        let toks = r.logprobs.as_ref().unwrap();
        assert_eq!((toks.len(), toks[0].top.len(), toks[0].bytes.as_deref()), (1, 2, Some(&[65u8][..])));
        // "eos" finish reason, content parts, no usage, no id.
        let v2 = json!({"choices":[{"message":{"content":[{"type":"text","text":"[["},{"type":"text","text":"B]]"}]},"finish_reason":"eos"}]});
        let r2 = ChatReply::from_value(&v2).unwrap();
        assert_eq!(r2.content.as_deref(), Some("[[B]]"));
        assert_eq!(r2.usage, None);
        // An error object inside a 200 (OpenRouter style) keeps its code.
        let e = ChatReply::from_value(&json!({"error":{"code":429,"message":"rate limited upstream"}})).unwrap_err();
        assert_eq!((e.kind, e.status), (CallErrorKind::RateLimited, Some(429)));
        let e = ChatReply::from_value(&json!({"choices":[]})).unwrap_err();
        assert_eq!(e.kind, CallErrorKind::Malformed);
    }

    #[test]
    fn errors_inside_a_200_reply_are_the_errors_they_report() {
        // A router's upstream failure: finish_reason "error" with an error object, code 502.
        let v = json!({"id": "gen-1", "choices": [{"index": 0, "finish_reason": "error",
            "message": {"role": "assistant", "content": ""},
            "error": {"code": 502, "message": "Upstream provider returned 502"}}]});
        let e = ChatReply::from_value(&v).unwrap_err();
        assert_eq!((e.kind, e.status), (CallErrorKind::Server, Some(502)));
        assert!(e.retryable() && !e.kind.maybe_billed());
        assert!(in_band_error(&v).is_some());
        // The same with usage reported: retried, and booked at its worst case.
        let mut billed = v.clone();
        billed["usage"] = json!({"prompt_tokens": 900, "completion_tokens": 0});
        let e = ChatReply::from_value(&billed).unwrap_err();
        assert_eq!(e.kind, CallErrorKind::UpstreamBilled);
        assert!(e.retryable() && e.kind.maybe_billed());
        // finish_reason "error" alone, a string code, a top-level error next to choices.
        let e =
            ChatReply::from_value(&json!({"choices": [{"finish_reason": "error", "message": {"content": "[[A]]"}}]}))
                .unwrap_err();
        assert_eq!((e.kind, e.status), (CallErrorKind::Server, None));
        let e = ChatReply::from_value(&json!({"choices": [{"finish_reason": "error", "error": {"code": "429"}}]}))
            .unwrap_err();
        assert_eq!((e.kind, e.status), (CallErrorKind::RateLimited, Some(429)));
        // An ordinary completion is not an error, even with an `error: null` field.
        let ok = json!({"choices": [{"finish_reason": "stop", "error": null, "message": {"content": "[[B]]"}}]});
        assert!(in_band_error(&ok).is_none() && ChatReply::from_value(&ok).is_ok());
    }

    #[test]
    fn every_output_channel_is_read() {
        let v = json!({"choices": [{"finish_reason": "tool_calls", "message": {"role": "assistant", "content": null,
            "reasoning_content": "Let me think: A is vague.",
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "verdict", "arguments": "{\"winner\": \"B\"}"}}]}}]});
        let r = ChatReply::from_value(&v).unwrap();
        assert_eq!(r.content, None);
        assert_eq!(r.tool_arguments, vec!["{\"winner\": \"B\"}".to_string()]);
        assert_eq!(r.channels["reasoning_content"], "Let me think: A is vague.");
        assert!(r.channels["tool_calls"].contains("verdict") && r.channels["finish_reason"] == "tool_calls");
        // Legacy function_call with object arguments, a refusal content part, the legacy `text`.
        let v = json!({"choices": [{"finish_reason": "stop", "message": {
            "content": [{"type": "refusal", "refusal": "I can't compare these."}],
            "function_call": {"name": "verdict", "arguments": {"verdict": "tie"}}}}]});
        let r = ChatReply::from_value(&v).unwrap();
        assert_eq!(r.refusal.as_deref(), Some("I can't compare these."));
        assert_eq!(r.tool_arguments, vec!["{\"verdict\":\"tie\"}".to_string()]);
        let r = ChatReply::from_value(&json!({"choices": [{"text": "[[A]]", "finish_reason": "stop"}]})).unwrap();
        assert_eq!(r.content.as_deref(), Some("[[A]]"));
    }

    #[test]
    fn retry_after_headers() {
        let mut h = reqwest::header::HeaderMap::new();
        h.insert("retry-after", "2".parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::from_secs(2)));
        h.insert("retry-after-ms", "150".parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::from_millis(150)), "ms wins");
        // An HTTP-date, measured from the response's Date (RFC 9110 §10.2.3).
        let mut h2 = reqwest::header::HeaderMap::new();
        h2.insert("retry-after", "Wed, 21 Oct 2015 07:28:07 GMT".parse().unwrap());
        h2.insert("date", "Wed, 21 Oct 2015 07:28:00 GMT".parse().unwrap());
        assert_eq!(retry_after(&h2), Some(Duration::from_secs(7)));
        h2.insert("retry-after", "in a while".parse().unwrap());
        assert_eq!(retry_after(&h2), None);
    }
}

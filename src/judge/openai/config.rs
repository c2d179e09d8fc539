//! The `judge.openai` config block: endpoint, model, prompt, prices (USD per million tokens),
//! limits, retries and the checks `prepare` runs at config load (docs/live.md).

use super::*;
use crate::domain::invalid::InvalidSetting;

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
    /// Share of the price taken off for requests sent in a provider batch job (`dispatch:
    /// batch`; 0.5 at OpenAI; default 0: batch requests are booked and reserved at the full
    /// price).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_discount: Option<f64>,
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
        let output = u.output_tokens();
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
    /// Credentials in it (`user:pass@`, `?api_key=…`) are sent, never shown or stored: written
    /// out (a run folder's config.yaml) it is redacted ([`super::secret::redact_url`]).
    #[serde(serialize_with = "super::secret::serialize_redacted_url")]
    pub base_url: String,
    /// Model name sent in each request.
    pub model: String,
    /// Name of the environment variable holding the API key (the key itself is never written).
    pub api_key_env: String,
    /// Whether a missing key is an error (default true; `false` for local servers).
    #[serde(default = "yes")]
    pub api_key_required: bool,
    /// Loaded to be read back, not to send (`run --dry-run`, and `fit`, `profile`, `report` on a
    /// run folder): a base_url whose credentials were redacted when the config was copied into
    /// the run folder (`***`) is then no error, since the cache keys and the judge's description
    /// hold the redacted URL anyway. Building the client ([`super::OpenAiJudge::new`]) still
    /// refuses it. Never read from or written to a file.
    #[serde(skip)]
    pub read_back: bool,
    /// Prompt template file (minijinja), relative to the config file.
    pub prompt: PathBuf,
    /// Completion limit per reply, tokens (default 16).
    #[serde(default = "d_max_tokens", deserialize_with = "crate::domain::serde_words::at_least_one")]
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
    /// Retries of one request on 429, 5xx, timeouts, connection errors and malformed (or
    /// in-band errored) replies (default 4).
    #[serde(default = "d_retries", deserialize_with = "crate::domain::serde_words::whole")]
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
    #[serde(default = "d_invalid", deserialize_with = "crate::domain::serde_words::whole")]
    pub max_invalid_retries: u32,
    /// Requests in flight for this judge (default: `acquisition.concurrency` alone limits it).
    #[serde(default, deserialize_with = "crate::domain::serde_words::opt_at_least_one")]
    pub concurrency: Option<usize>,
    /// Client-side request limit per minute (default none).
    #[serde(default, deserialize_with = "crate::domain::serde_words::opt_at_least_one")]
    pub requests_per_minute: Option<u32>,
    /// Client-side token limit per minute, prompt estimate + max_tokens (default none).
    #[serde(default, deserialize_with = "crate::domain::serde_words::opt_at_least_one")]
    pub tokens_per_minute: Option<u32>,
    /// Price table (required; zeros for a free local server).
    #[serde(default)]
    pub price: Option<PriceConfig>,
    /// The judge's fingerprint (docs/live.md, "Judge fingerprint"): at the start of a run that
    /// resumes stored verdicts, this many of them are asked again and compared; 0 turns it off.
    #[serde(default)]
    pub fingerprint: FingerprintConfig,
    /// A cache namespace: verdicts stored under another namespace are not reused (set by
    /// `run --judge-changed new` in the run folder's judge_namespaces.json; rarely written by hand).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_namespace: Option<String>,
    /// Ask for `logprobs` and use P(A) of the first token as a soft verdict when available.
    #[serde(default)]
    pub logprobs: bool,
    /// Alternatives per token when `logprobs` is on (1–20, default 5).
    #[serde(default = "d_top", deserialize_with = "crate::domain::serde_words::whole")]
    pub top_logprobs: u8,
    /// Context window of the judge, tokens (default: unknown, only server errors detect overflow).
    #[serde(default, deserialize_with = "crate::domain::serde_words::opt_whole")]
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
    /// Replies parsed (this invocation's and those behind the run's stored verdicts) before
    /// `max_invalid_rate` applies (default 20).
    #[serde(default = "d_invalid_rate_min_replies", deserialize_with = "crate::domain::serde_words::whole")]
    pub invalid_rate_min_replies: u64,
}

pub(super) fn yes() -> bool {
    true
}
pub(super) fn d_max_tokens() -> u32 {
    16
}
pub(super) fn d_temperature() -> Option<f64> {
    Some(0.0)
}
pub(super) fn d_timeout() -> f64 {
    60.0
}
pub(super) fn d_retries() -> usize {
    4
}
pub(super) fn d_backoff_min() -> f64 {
    0.5
}
pub(super) fn d_backoff_max() -> f64 {
    30.0
}
pub(super) fn d_retry_after_max() -> f64 {
    120.0
}
pub(super) fn d_invalid() -> u32 {
    1
}
pub(super) fn d_top() -> u8 {
    5
}
pub(super) fn d_max_invalid_rate() -> f64 {
    0.5
}
pub(super) fn d_invalid_rate_min_replies() -> u64 {
    20
}
pub(super) fn d_bpt() -> f64 {
    4.0
}

impl OpenAiConfig {
    /// `base_url` as messages, judge names and result files show it: its credentials (user,
    /// password, secret query values; [`super::secret::redact_url`]) and the API key itself,
    /// when `api_key_env` holds one and the URL carries it (a key pasted into the path),
    /// redacted.
    pub fn shown_base_url(&self) -> String {
        shown_url(&self.base_url, &self.api_key_env)
    }

    /// `extra_body` as a run folder stores it and cache keys hold it: the API key and the value
    /// of any credential-named environment variable pasted into it (sent as given) written
    /// `redacted-api-key` ([`super::secret::for_disk`]). Read back, it is the same.
    pub fn stored_extra_body(&self) -> Option<Map<String, Value>> {
        let m = self.extra_body.as_ref()?;
        let text = Value::Object(m.clone()).to_string();
        // A value under a credential's name (`api_key`, `token`, …), as the echo of a --set
        // hides it, is not stored either (hunt 57).
        let named = super::secret::override_secrets(&["extra_body".to_owned()], &Value::Object(m.clone()));
        let text_named = super::secret::redact_secrets(
            &text,
            &named.iter().map(String::as_str).collect::<Vec<_>>(),
            "redacted-api-key",
        );
        let stored = super::secret::for_disk(&text_named, Secret::from_env(self.api_key_env.trim()).as_ref());
        if stored == text {
            return Some(m.clone());
        }
        // A secret across a quote (in a field's name) leaves no JSON: the body is stored as that.
        Some(
            serde_json::from_str(&stored).unwrap_or_else(|_| {
                Map::from_iter([("redacted".to_owned(), Value::String("redacted-api-key".into()))])
            }),
        )
    }

    /// The validated price table.
    ///
    /// # Errors
    /// [`InvalidSetting`] when the table or a required price is missing or negative.
    pub fn price_table(&self) -> Result<Price, InvalidSetting> {
        let k = |s: &str| format!("judge.openai.price{s}");
        let p = self.price.as_ref().ok_or_else(|| {
            InvalidSetting::new(
                k(""),
                "missing: every judge needs a price table in USD per million tokens, e.g. price: {input_usd_per_mtok: 0.75, output_usd_per_mtok: 4.5}; write zeros for a free local server",
            )
        })?;
        let get = |name: &str, v: Option<f64>, required: bool| -> Result<Option<f64>, InvalidSetting> {
            match v {
                None if required => {
                    Err(InvalidSetting::new(k(&format!(".{name}")), "missing (USD per million tokens)"))
                }
                Some(x) if !(x >= 0.0 && x.is_finite()) => {
                    Err(InvalidSetting::new(k(&format!(".{name}")), format!("{x} must be ≥ 0")))
                }
                Some(x) if x > crate::judge::MAX_USD_PER_MTOK => Err(InvalidSetting::new(
                    k(&format!(".{name}")),
                    format!("{x:e} must be at most 1e6 (USD per million tokens, $1 a token): a typo?"),
                )),
                v => Ok(v),
            }
        };
        let input = get("input_usd_per_mtok", p.input_usd_per_mtok, true)?.expect("required");
        let output = get("output_usd_per_mtok", p.output_usd_per_mtok, true)?.expect("required");
        let cached_input = get("cached_input_usd_per_mtok", p.cached_input_usd_per_mtok, false)?.unwrap_or(input);
        if let Some(d) = p.batch_discount
            && !(0.0..1.0).contains(&d)
        {
            return Err(InvalidSetting::new(
                k(".batch_discount"),
                format!("{d} must be in [0, 1): the share of the price taken off in a batch job (0.5 = half price)"),
            ));
        }
        Ok(Price { input, cached_input, output })
    }

    /// What a request in a provider batch job costs, as a share of the live price:
    /// 1 − `price.batch_discount`.
    pub fn batch_price_factor(&self) -> f64 {
        1.0 - self.price.as_ref().and_then(|p| p.batch_discount).unwrap_or(0.0)
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

/// `judge.openai.fingerprint`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FingerprintConfig {
    /// Ordered pairs re-asked at the start of a resumed run (default 8; 0 = off; at most 64).
    #[serde(default = "d_fingerprint", deserialize_with = "crate::domain::serde_words::whole")]
    pub queries: usize,
}

impl Default for FingerprintConfig {
    fn default() -> Self {
        Self { queries: d_fingerprint() }
    }
}

fn d_fingerprint() -> usize {
    8
}

/// Resolve paths and check an `openai` judge config against the pool, before anything runs:
/// key variable set (when required), price table, template, numbers in range, every item has
/// text and renders, and (policy `fail`) the longest pair fits `context_tokens`.
///
/// # Errors
/// `(key path, message)` naming what was found and what was expected.
pub fn prepare(cfg: &mut OpenAiConfig, config_dir: &Path, pool: &Pool) -> Result<(), InvalidSetting> {
    let e = |k: &str, m: String| InvalidSetting::new(format!("judge.openai.{k}"), m);
    if cfg.fingerprint.queries > 64 {
        return Err(e(
            "fingerprint.queries",
            format!("{} must be at most 64 (0 turns the fingerprint off)", cfg.fingerprint.queries),
        ));
    }
    // `${VAR}` in the URL (a host or port kept in the environment) is expanded like a path's.
    let expanded =
        crate::domain::paths::expand(std::path::Path::new(cfg.base_url.trim()), "base_url", |k| std::env::var(k).ok())
            .map_err(|m| {
                // The message quotes the URL: never with its credentials.
                let raw = format!("{:?}", cfg.base_url.trim());
                let shown = format!("{:?}", shown_url(cfg.base_url.trim(), &cfg.api_key_env));
                e("base_url", m.trim_start_matches("base_url: ").replace(&raw, &shown))
            })?;
    // Trailing slashes go (`…/v1/` is `…/v1`), but not those of a bare scheme (`http://` is named
    // as written, not as `http:`).
    let full = expanded.to_string_lossy();
    let trimmed = full.trim_end_matches('/');
    cfg.base_url = if trimmed.ends_with(':') { full.trim().to_owned() } else { trimmed.to_owned() };
    // White space or a control character inside (from a variable: `${U}` holding "…/v1 --x")
    // would be sent percent-encoded or dropped, not as read (hunt 54).
    if let Some(c) = cfg.base_url.chars().find(|c| c.is_whitespace() || c.is_control()) {
        return Err(e(
            "base_url",
            format!(
                "{:?} holds {} (U+{:04X}); a URL has none (check the variables it reads)",
                cfg.shown_base_url(),
                if c.is_whitespace() { "white space" } else { "a control character" },
                u32::from(c)
            ),
        ));
    }
    let redacted = cfg.base_url.contains("***");
    if let Some(m) = super::secret::base_url_problem(&cfg.base_url)
        && !(cfg.read_back && redacted)
    {
        return Err(e("base_url", m));
    }
    // Which credential a request carries matters only to a request: not to a redacted copy.
    if !(cfg.read_back && redacted)
        && super::secret::RequestTarget::of(&cfg.base_url).basic.is_some()
        && Secret::from_env(cfg.api_key_env.trim()).is_some()
    {
        return Err(e(
            "base_url",
            "holds credentials (user:password@, sent as HTTP Basic) and api_key_env names a key that is set (sent as Bearer); one request carries one of them: keep one, and set api_key_required: false when base_url carries them".into(),
        ));
    }
    if let Err(err) = reqwest::Url::parse(&cfg.base_url) {
        return Err(e(
            "base_url",
            format!("{:?} is not a URL ({err}); expected e.g. http://127.0.0.1:8088/v1", cfg.shown_base_url()),
        ));
    }
    if !(cfg.base_url.starts_with("http://") || cfg.base_url.starts_with("https://")) {
        return Err(e(
            "base_url",
            format!(
                "{:?} must start with http:// or https:// (the API base, usually ending in /v1)",
                cfg.shown_base_url()
            ),
        ));
    }
    if cfg.model.trim().is_empty() {
        return Err(e("model", "must not be empty".into()));
    }
    // The model is sent as written and names the judge in every table and report: a YAML escape
    // (`"gpt\nx"`) or a pasted invisible character would be sent, and printed, as something else.
    if cfg.model.trim() != cfg.model {
        return Err(e(
            "model",
            format!("{:?} begins or ends with white space; write the model's name without", cfg.model),
        ));
    }
    if let Some(c) = cfg.model.chars().find(|&c| c.is_control() || crate::domain::fmt::ignorable(c)) {
        return Err(e(
            "model",
            format!(
                "{:?} holds the character U+{:04X} (a control character or one that prints as nothing); a model's name has none",
                cfg.model,
                u32::from(c)
            ),
        ));
    }
    // Read back, a key not set now is no error (a pasted key still is: it is never stored).
    let keyless = OpenAiConfig { api_key_required: false, ..cfg.clone() };
    check_key_env(if cfg.read_back { &keyless } else { cfg }).map_err(|m| e("api_key_env", m))?;
    cfg.price_table()?;
    let prompt = crate::domain::paths::expand(&cfg.prompt, "judge.openai.prompt", |k| std::env::var(k).ok())
        .map_err(|m| e("prompt", m.trim_start_matches("judge.openai.prompt: ").to_owned()))?;
    cfg.prompt = config_dir.join(prompt);
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
        // The upper bound keeps a duration a tokio timer can hold (1e7 s is 116 days).
        if !(v >= lo && v.is_finite() && v < 1e7) {
            return Err(e(
                k,
                format!(
                    "{} must be a number {} and below 10000000 (1e7)",
                    crate::domain::fmt::value(v),
                    if lo > 0.0 { "> 0" } else { "≥ 0" }
                ),
            ));
        }
    }
    if !(0.0..=1.0).contains(&cfg.max_invalid_rate) {
        return Err(e(
            "max_invalid_rate",
            format!("{} must be in [0, 1] (a share of replies)", crate::domain::fmt::value(cfg.max_invalid_rate)),
        ));
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
    if let Some(c) = cfg.context_tokens.filter(|c| *c <= u64::from(cfg.max_tokens)) {
        return Err(e("context_tokens", format!("{c} must be larger than max_tokens ({})", cfg.max_tokens)));
    }
    if cfg.backoff_min_s > cfg.backoff_max_s {
        // Named by the one written: the largest delay, when the first is at its default.
        return Err(if cfg.backoff_min_s == d_backoff_min() {
            e(
                "backoff_max_s",
                format!(
                    "{} must be ≥ backoff_min_s ({}, its default): the largest delay cannot be below the first",
                    cfg.backoff_max_s, cfg.backoff_min_s
                ),
            )
        } else {
            e(
                "backoff_min_s",
                format!(
                    "{} must be ≤ backoff_max_s ({}): the first delay cannot exceed the largest",
                    cfg.backoff_min_s, cfg.backoff_max_s
                ),
            )
        });
    }
    for (k, v) in [("requests_per_minute", cfg.requests_per_minute), ("tokens_per_minute", cfg.tokens_per_minute)] {
        if v == Some(0) {
            return Err(e(k, "0 must be ≥ 1 (leave it out for no limit)".into()));
        }
    }
    if let Some(t) = cfg.tokens_per_minute.filter(|t| *t <= cfg.max_tokens) {
        return Err(e(
            "tokens_per_minute",
            format!(
                "{t} must be above max_tokens ({}): each request counts its prompt and max_tokens against it, so none would fit",
                cfg.max_tokens
            ),
        ));
    }
    // The prompt alone (empty task and answers) with max_tokens: a smaller limit fits no request.
    if let Some(t) = cfg.tokens_per_minute
        && let Ok(bare) = template.render("", "", "")
    {
        let need = bare.token_estimate(cfg.bytes_per_token) + u64::from(cfg.max_tokens);
        if need > u64::from(t) {
            return Err(e(
                "tokens_per_minute",
                format!(
                    "{t} is below what one request needs before any task or answer: about {need} tokens (the prompt template's own text, at bytes_per_token {}, and max_tokens {}), so none would fit; raise it to your account's limit",
                    cfg.bytes_per_token, cfg.max_tokens
                ),
            ));
        }
    }
    for it in &pool.items {
        if it.text.is_none() {
            return Err(InvalidSetting::new(
                "pool",
                format!("item {:?} of pool {:?} has no text; a live judge needs the answer text", it.id, pool.pool_id),
            ));
        }
    }
    let n = pool.n_items();
    for i in 0..n {
        let j = (i + 1) % n;
        for (a, b) in [(i, j), (j, i)] {
            template.render(pool.task_of(a), text(pool, a), text(pool, b)).map_err(|x| {
                e("prompt", format!("rendering items {:?} vs {:?}: {x}", pool.items[a].id, pool.items[b].id))
            })?;
        }
    }
    // The tokens a prompt of (task, answer A, answer B) needs with max_tokens, and how that was
    // estimated.
    let need = |task: &str, x: &str, y: &str| {
        template.render(task, x, y).map_err(|m| e("prompt", m.to_string())).map(|r| {
            let how = format!(
                "estimate: {} bytes / {} bytes per token + max_tokens {}",
                r.bytes(),
                cfg.bytes_per_token,
                cfg.max_tokens
            );
            (r.token_estimate(cfg.bytes_per_token) + u64::from(cfg.max_tokens), how)
        })
    };
    // A context no query fits in, even cut as the policy cuts: every query would be stored as
    // invalid and none sent, the budget spent on nothing. The least a query can need: the
    // shortest task with the two shortest answers (skip), the answers without the task
    // (truncate_task), the task without the answers (truncate_answers), the template's own text
    // (fail, whose longest pair is checked below).
    if let Some(ctx) = cfg.context_tokens {
        let shortest_task = (0..n).map(|i| pool.task_of(i)).min_by_key(|t| t.len()).unwrap_or("");
        let (a, b) = shortest_pair(pool);
        let pair = format!("items {:?} and {:?}", pool.items[a].id, pool.items[b].id);
        let (what, texts) = match cfg.on_context_overflow {
            OverflowPolicy::Skip => (
                format!("the shortest query of the pool ({pair}, with the shortest task)"),
                (shortest_task, text(pool, a), text(pool, b)),
            ),
            OverflowPolicy::TruncateTask => (
                format!(
                    "the shortest query of the pool with its task cut to nothing ({pair}; on_context_overflow: truncate_task)"
                ),
                ("", text(pool, a), text(pool, b)),
            ),
            OverflowPolicy::TruncateAnswers => (
                "the shortest task with both answers cut to nothing (on_context_overflow: truncate_answers)".to_owned(),
                (shortest_task, "", ""),
            ),
            OverflowPolicy::Fail => {
                ("one request before any task or answer (the prompt template's own text)".to_owned(), ("", "", ""))
            }
        };
        // A template that refuses empty texts is checked by the pairs above instead.
        if let Ok((tokens, how)) = need(texts.0, texts.1, texts.2)
            && tokens > ctx
        {
            return Err(e(
                "context_tokens",
                format!(
                    "{ctx} is below what {what} needs: about {tokens} tokens ({how}), so every query would be over it, stored as invalid and none sent; raise context_tokens to the judge's context window"
                ),
            ));
        }
    }
    if let (Some(ctx), OverflowPolicy::Fail) = (cfg.context_tokens, cfg.on_context_overflow) {
        let (a, b) = longest_pair(pool);
        let (tokens, how) = need(pool.task_of(a), text(pool, a), text(pool, b))?;
        if tokens > ctx {
            return Err(e(
                "context_tokens",
                format!(
                    "the prompt for items {:?} vs {:?} needs about {tokens} tokens ({how}) but the context is {ctx}; raise context_tokens, or set on_context_overflow: skip or truncate_task",
                    pool.items[a].id, pool.items[b].id,
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
pub(super) fn check_verdict_format(cfg: &OpenAiConfig, template: &PromptTemplate) -> Result<(), InvalidSetting> {
    let e = |m: String| InvalidSetting::new("judge.openai.verdict_format", m);
    let file = cfg.prompt.display();
    let shown = template
        .render("", "", "")
        .map_err(|x| InvalidSetting::new("judge.openai.prompt", x.to_string()))?
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
            return Err(InvalidSetting::new(
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
        return Err(InvalidSetting::new(
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

pub(super) fn check_key_env(cfg: &OpenAiConfig) -> Result<Option<Secret>, String> {
    let var = cfg.api_key_env.trim();
    let named = shown_var_name(var);
    // A long value that is no upper-case variable name is most likely a key pasted here (`gsk_…`,
    // hex, `hf_…`): refused even when no key is required, so it is never copied into a run folder.
    let pasted = !super::secret::looks_like_var_name(var) && var.chars().count() >= 20;
    if pasted || var.is_empty() || !var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(format!(
            "the value ({} characters, not shown: it may be a pasted key) does not look like the name of an environment variable (letters, digits and _, such as OPENAI_API_KEY); put the key in an environment variable and write that variable's name here, e.g. OPENAI_API_KEY",
            var.chars().count()
        ));
    }
    match Secret::from_env(var) {
        Some(k) if !k.expose().bytes().all(|b| (0x21..=0x7e).contains(&b)) => {
            Err(format!("the value of {named} ({} bytes) contains characters not allowed in an HTTP header", k.len()))
        }
        Some(k) => Ok(Some(k)),
        None if cfg.api_key_required => Err(format!(
            "{named} is not set (or empty); export it with your API key, or set api_key_required: false for a server without keys"
        )),
        None => Ok(None),
    }
}

/// How a message names the variable of `api_key_env`: `environment variable NAME` when the value
/// looks like a variable name (upper-case words joined by `_`, such as `OPENAI_API_KEY`, few
/// digits), otherwise without the value, which may be a key pasted in the wrong place (`gsk_…`,
/// `AIza…`, hex): such a value is never printed.
fn shown_var_name(var: &str) -> String {
    if super::secret::looks_like_var_name(var) {
        format!("environment variable {var}")
    } else {
        format!(
            "the environment variable named in api_key_env ({} characters; not shown, as it does not look like a variable name: if it is a key, put it in a variable and write that variable's name here)",
            var.chars().count()
        )
    }
}

/// Upper-case words joined by `_` (`OPENAI_API_KEY`), at most 48 characters, few digits.
pub(super) fn text(pool: &Pool, i: usize) -> &str {
    pool.items[i].text.as_deref().unwrap_or("")
}

/// The two items with the shortest texts (bytes), in pool order.
fn shortest_pair(pool: &Pool) -> (usize, usize) {
    let mut idx: Vec<usize> = (0..pool.n_items()).collect();
    idx.sort_by_key(|&i| text(pool, i).len());
    let (a, b) = (idx[0], idx[1]);
    (a.min(b), a.max(b))
}

/// The two items with the longest texts (bytes), in pool order.
pub(super) fn longest_pair(pool: &Pool) -> (usize, usize) {
    let mut idx: Vec<usize> = (0..pool.n_items()).collect();
    idx.sort_by_key(|&i| std::cmp::Reverse(text(pool, i).len()));
    let (a, b) = (idx[0], idx[1]);
    (a.min(b), a.max(b))
}

/// `url` without its credentials, without the key `api_key_env` holds and without the value of
/// any environment variable named like a credential ([`super::secret::env_secrets`]: a
/// gateway's token expanded into the path from `${…_TOKEN}`), each written `***`
/// ([`OpenAiConfig::shown_base_url`]). Shown again it is the same: a run folder's copy of the
/// config builds the cache keys of its verdicts.
fn shown_url(url: &str, api_key_env: &str) -> String {
    let key = Secret::from_env(api_key_env.trim());
    super::secret::redact_credentials(&super::secret::redact_url(url), key.as_ref(), "***")
}

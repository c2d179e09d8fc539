//! The OpenAI-compatible judge ([`OpenAiJudge`]): one ordered query = render the prompt → wait
//! for the rate limits and a slot → send → parse → re-ask an invalid reply → price the usage;
//! the transport is async-openai with the project's own retry policy (module docs of
//! [`super`]).

use super::prompt::Turns;
use super::*;
use crate::domain::invalid::InvalidInput;
use crate::judge::setup::JudgeSetupError;

#[derive(Default)]
pub(super) struct Counters {
    pub(super) requests: AtomicU64,
    pub(super) retries: AtomicU64,
    pub(super) rate_limited: AtomicU64,
    pub(super) server_errors: AtomicU64,
    pub(super) timeouts: AtomicU64,
    pub(super) connect_errors: AtomicU64,
    pub(super) malformed: AtomicU64,
    pub(super) other_errors: AtomicU64,
    pub(super) invalid_replies: AtomicU64,
    pub(super) reasks: AtomicU64,
    pub(super) context_overflows: AtomicU64,
    pub(super) usage_missing: AtomicU64,
    pub(super) soft_verdicts: AtomicU64,
    pub(super) rate_limit_wait_ms: AtomicU64,
    pub(super) replies: AtomicU64,
    pub(super) in_band_errors: AtomicU64,
    pub(super) above_max_tokens: AtomicU64,
    pub(super) most_completion_tokens: AtomicU64,
    pub(super) above_prompt_bound: AtomicU64,
    pub(super) most_prompt_tokens: AtomicU64,
    pub(super) batch_jobs: AtomicU64,
    pub(super) batch_api_requests: AtomicU64,
}

/// The most bytes of a reply kept in a verdict's `raw` (64 KiB): a reply of megabytes would
/// otherwise be stored whole in verdicts.jsonl, once per verdict.
pub const RAW_MAX_BYTES: usize = 64 * 1024;

/// `raw` cut to its first [`RAW_MAX_BYTES`] (at a character boundary), with a note of the
/// reply's length: `… [cut: the reply holds 2000005 bytes; its first 65536 are kept]`.
pub fn clip_raw(raw: String) -> String {
    if raw.len() <= RAW_MAX_BYTES {
        return raw;
    }
    let end = (0..=RAW_MAX_BYTES).rev().find(|&i| raw.is_char_boundary(i)).unwrap_or(0);
    format!("{}… [cut: the reply holds {} bytes; its first {end} are kept]", &raw[..end], raw.len())
}

/// What is known about an OpenAI-compatible judge without a query: its settings, price and prompt
/// template, from which a query's prompt, cache key and worst-case cost follow. Built without a
/// key or an HTTP client.
pub struct OpenAiInfo {
    pub(super) cfg: OpenAiConfig,
    pub(super) price: Price,
    /// The prompt template the queries are rendered from (`judge.openai.prompt`).
    pub(super) template: PromptTemplate,
    /// `base_url` as names and cache keys show it ([`OpenAiConfig::shown_base_url`]), made once.
    shown_base_url: String,
    /// `extra_body` as cache keys hold it ([`OpenAiConfig::stored_extra_body`]: without the API key
    /// or a credential pasted into it), as the run folder's config.yaml holds it, so the folder's
    /// copy of the config finds its verdicts.
    keyed_extra_body: Option<serde_json::Value>,
    task_limit: Mutex<HashMap<String, Option<usize>>>,
}

/// The OpenAI-compatible judge: its [`OpenAiInfo`], its key and its HTTP client, limits and
/// counters.
pub struct OpenAiJudge {
    pub(super) info: OpenAiInfo,
    pub(super) key: Option<Secret>,
    client: Client<OpenAIConfig>,
    /// The same HTTP client, for the preflight request.
    pub(super) http: reqwest::Client,
    limits: RateLimits,
    /// Requests in flight: `concurrency` at most, fewer while 429s come ([`concurrency`]).
    in_flight: InFlightLimit,
    /// Classifies endpoint-wide failures and knows the proxy route ([`endpoint`]).
    endpoint: Endpoint,
    policy: RetryPolicy,
    pub(super) counters: Counters,
    pub(super) invalid_by_reason: Mutex<BTreeMap<crate::domain::verdict::InvalidReason, u64>>,
    soft_fallbacks: Mutex<BTreeMap<String, u64>>,
    /// Bodies with broken text repaired by the transport (shared with it).
    broken_text: std::sync::Arc<AtomicU64>,
    /// Set by [`Judge::stop_sending`]: no call leaves after it.
    pub(super) stop: retry::StopSending,
    /// Replies billed above their reservations so far ([`Judge::reservations_raised`], and
    /// replies this judge saw cost more than any before relative to their worst case): a call of
    /// a query begun before the last of them is not sent (its reservation is too low).
    overruns: AtomicU64,
    /// The highest cost of a reply relative to its attempt's worst case seen (f64 bits; 1 at
    /// first): a reply above it is an overrun this judge tells its waiting calls of at once,
    /// before its slot goes to the next call.
    most_over: AtomicU64,
    /// The credentials inside `base_url`, redacted from every message ([`secret::url_secrets`]).
    url_secrets: Vec<String>,
    /// The API key and the values of credential-named environment variables
    /// ([`secret::env_secrets`]: a gateway token in the URL's host or path), redacted from every
    /// message. Not `Debug`.
    secrets: Vec<String>,
    /// Where requests go: `base_url` split into its bare URL, query and HTTP Basic credentials.
    pub(super) target: secret::RequestTarget,
}

/// One rendered query and its context status.
pub(super) struct Query {
    pub(super) prompt: RenderedPrompt,
    pub(super) over_context: bool,
}

impl OpenAiJudge {
    /// Build the judge from a config prepared by [`prepare`], reading the key from the variable
    /// the config names.
    ///
    /// # Errors
    /// A message naming the key (unset variable, bad template, no price).
    pub fn from_config(cfg: &OpenAiConfig) -> Result<Self, JudgeSetupError> {
        let key = check_key_env(cfg).map_err(JudgeSetupError::ApiKey)?;
        Self::new(cfg.clone(), key)
    }

    /// Build the judge with an explicit key (`None`: no key; tests and keyless local servers).
    ///
    /// # Errors
    /// A message naming the key.
    pub fn new(cfg: OpenAiConfig, key: Option<Secret>) -> Result<Self, JudgeSetupError> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        // A folder's copy of the config (`***` for its credentials) can be read back, not sent.
        if let Some(m) = super::secret::base_url_problem(&cfg.base_url) {
            return Err(JudgeSetupError::BaseUrl(m));
        }
        let info = OpenAiInfo::new(cfg)?;
        let cfg = &info.cfg;
        if let Some(k) = &key
            && !k.expose().bytes().all(|b| (0x21..=0x7e).contains(&b))
        {
            return Err(JudgeSetupError::ApiKey("the key contains characters not allowed in an HTTP header".into()));
        }
        let timeout = Duration::from_secs_f64(cfg.timeout_s);
        let proxies = ProxyEnv::from_env();
        // `identity`: without an Accept-Encoding a conformant server may compress (RFC 9110
        // §12.5.3). A gateway that compresses anyway is decoded (gzip, deflate, brotli: reqwest
        // reads Content-Encoding whatever was asked for).
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert(reqwest::header::ACCEPT_ENCODING, reqwest::header::HeaderValue::from_static("identity"));
        let http = proxies
            .apply(reqwest::Client::builder())
            .default_headers(headers)
            // A judge API answers where it is asked: a redirect is an error naming its target
            // (followed, a POST may turn into a GET, or go to another host without its key).
            .redirect(reqwest::redirect::Policy::none())
            .timeout(timeout)
            .connect_timeout(timeout.min(Duration::from_secs(15)))
            .build()
            .map_err(|e| JudgeSetupError::Http(e.to_string()))?;
        // Credentials and a query in base_url: async-openai appends its path to the base, so it
        // gets the bare URL; the transport adds the query and HTTP Basic auth to each request.
        let target = secret::RequestTarget::of(&cfg.base_url);
        let oa = OpenAIConfig::new()
            .with_api_base(&target.base)
            .with_api_key(key.as_ref().map_or("", Secret::expose))
            .with_org_id("")
            .with_project_id("");
        let transport_http = http.clone();
        let broken_text = std::sync::Arc::new(AtomicU64::new(0));
        let repairs = broken_text.clone();
        let patch = std::sync::Arc::new(target.clone());
        let has_key = key.is_some();
        let svc = tower::service_fn(move |f: HttpRequestFactory| {
            let http = transport_http.clone();
            let repairs = repairs.clone();
            let patch = patch.clone();
            async move { transport(&http, f, &repairs, &patch, has_key).await }
        });
        // Client::build installs async-openai's retrying executor; with_http_service replaces it
        // with ours (no retry layer), so only crate::judge::openai::retry retries (async-openai's default client retries on its own).
        let client = Client::build(http.clone(), oa).with_http_service(svc);
        let secrets = secret::credentials(key.as_ref());
        Ok(Self {
            limits: RateLimits::new(cfg.requests_per_minute, cfg.tokens_per_minute),
            in_flight: InFlightLimit::new(cfg.concurrency),
            endpoint: Endpoint::new(cfg, key.is_some(), &proxies),
            http,
            policy: cfg.retry_policy(),
            key,
            client,
            counters: Counters::default(),
            invalid_by_reason: Mutex::new(BTreeMap::new()),
            soft_fallbacks: Mutex::new(BTreeMap::new()),
            broken_text,
            stop: retry::StopSending::default(),
            overruns: AtomicU64::new(0),
            most_over: AtomicU64::new(1f64.to_bits()),
            url_secrets: secret::url_secrets(&info.cfg.base_url),
            secrets,
            target,
            info,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &OpenAiConfig {
        &self.info.cfg
    }

    /// `s` without the API key, the values of credential-named environment variables, the
    /// credentials of `base_url` ([`secret::url_secrets`]) and any token shaped like a provider's
    /// key ([`secret::keys_in`]: a gateway quoting its upstream key, a request's `extra_body`
    /// echoed back), for any text from outside or about a request: what it returns is stored in
    /// the run folder (intents, result.json) and printed (hunt 60: such tokens were redacted on
    /// stderr only).
    pub(super) fn redact(&self, s: &str) -> String {
        let shaped = secret::keys_in(s);
        let secrets: Vec<&str> = self.secrets.iter().chain(&shaped).map(String::as_str).collect();
        secret::redact_all(&secret::redact_secrets(s, &secrets, secret::REDACTED), &self.url_secrets)
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

    /// One HTTP call: a slot among the requests in flight, the rate limits, the request. A query
    /// begun at `overruns_at_start` ([`OpenAiJudge::overruns`]) whose reservation an overrun has
    /// raised since is not sent.
    async fn call(
        &self,
        body: &Value,
        est_tokens: u64,
        (overruns_at_start, attempt_worst): (u64, f64),
    ) -> Result<ChatReply, CallError> {
        let slot = self.in_flight.acquire().await;
        let waited = self.limits.acquire(est_tokens).await.map_err(|e| CallError {
            usage: None,
            kind: CallErrorKind::Other,
            status: None,
            retry_after: None,
            message: e.to_string(),
        })?;
        self.counters.rate_limit_wait_ms.fetch_add(waited.as_millis() as u64, Ordering::Relaxed);
        // Checked once the slot and the rate limits are had, just before the request leaves: a
        // query that waited for them (a rate limit, a concurrency cut after 429s, a retry's
        // backoff) while a reply came back above its reservation was reserved too low, and goes
        // back unsent, to be reserved again at the raised worst case.
        let held = self.overruns.load(Ordering::SeqCst) != overruns_at_start;
        if self.stop.stopped() || held {
            slot.finish(concurrency::CallOutcome::Other);
            return Err(CallError {
                usage: None,
                kind: CallErrorKind::NotSent,
                status: None,
                retry_after: None,
                message: if held {
                    "not sent: a reply cost more than its reservation, so this query is reserved again".into()
                } else {
                    "not sent: the run stopped sending".into()
                },
            });
        }
        self.counters.requests.fetch_add(1, Ordering::Relaxed);
        let deadline = Duration::from_secs_f64(self.info.cfg.timeout_s) + Duration::from_secs(5);
        let chat = self.client.chat();
        let fut = chat.create_byot::<_, Value>(body.clone());
        let res = match tokio::time::timeout(deadline, fut).await {
            Err(_) => Err(CallError {
                usage: None,
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
        // A reply costing more than any before relative to its worst case raises the worst case
        // of every reservation: the calls waiting for this slot (or a rate limit) must not leave
        // at the old one, so they are told before the slot is released.
        let usage = match &res {
            Ok(r) => r.usage,
            Err(e) => e.usage,
        };
        if let Some(u) = usage
            && attempt_worst > 0.0
        {
            let ratio = self.info.price.cost_usd(&u) / attempt_worst;
            let raised = self
                .most_over
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |m| {
                    (ratio > f64::from_bits(m) * (1.0 + 1e-9)).then(|| ratio.to_bits())
                })
                .is_ok();
            if raised {
                self.overruns.fetch_add(1, Ordering::SeqCst);
            }
        }
        slot.finish(match &res {
            Ok(_) => concurrency::CallOutcome::Success,
            Err(e) if e.kind == CallErrorKind::RateLimited => concurrency::CallOutcome::RateLimited,
            Err(_) => concurrency::CallOutcome::Other,
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
        let mut req = self.http.get(&url).timeout(Duration::from_secs_f64(self.info.cfg.timeout_s.min(10.0)));
        if let Some(k) = &self.key {
            req = req.bearer_auth(k.expose());
        }
        if let Some((user, pass)) = &self.target.basic {
            req = req.basic_auth(user, pass.as_deref());
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
                let body = match redirect_of(&resp) {
                    Some(t) => t,
                    None => resp.text().await.unwrap_or_default(),
                };
                self.endpoint.models_reply(status, &self.redact(&body)).map_err(stop)
            }
        }
    }

    pub(super) fn invalid_reply(
        &self,
        reason: InvalidNote,
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
    pub(super) fn read_verdict(&self, reply: &ChatReply, answers: [&str; 2]) -> Result<(f64, VerdictDetail), Invalid> {
        let out = self.parse_verdict(reply, answers);
        // The reply, and whether it was invalid, in one step under the reasons' lock: a snapshot
        // ([`Judge::stats`]) never sees a reply without its outcome.
        let mut reasons = self.invalid_by_reason.lock().expect("not poisoned");
        self.counters.replies.fetch_add(1, Ordering::Relaxed);
        if let Err(inv) = &out {
            self.counters.invalid_replies.fetch_add(1, Ordering::Relaxed);
            *reasons.entry((*inv).into()).or_default() += 1;
        }
        out
    }

    fn parse_verdict(&self, reply: &ChatReply, answers: [&str; 2]) -> Result<(f64, VerdictDetail), Invalid> {
        let channels = parse::ReplyChannels {
            content: reply.content.as_deref(),
            finish_reason: reply.finish_reason.as_deref(),
            refusal: reply.refusal.as_deref(),
            tool_arguments: &reply.tool_arguments,
        };
        let v = parse::parse_reply(&channels, answers, self.info.cfg.verdict_format)?;
        let mut y = v.outcome.y();
        if self.info.cfg.logprobs {
            let soft = match (&reply.logprobs, v.letter_at, v.outcome) {
                (None, ..) => Err(SoftMiss::Missing),
                (_, _, ParsedOutcome::Tie) | (_, None, _) => Err(SoftMiss::NotALetter),
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

    /// The end of a query whose last call failed: a context overflow follows
    /// `on_context_overflow`; an endpoint-wide fault stops the run; any other failure is a
    /// failed request carrying what was spent. `exhausted`: why the query has no attempt left
    /// (`None`: it has, and the error is not retried).
    fn failed_query(
        &self,
        e: CallError,
        exhausted: Option<&str>,
        (ida, idb): (&str, &str),
        spent: Spent,
        t0: Instant,
    ) -> Result<JudgeReply, JudgeError> {
        let Spent { usage, cost_usd: cost, attempts: n_attempts } = spent;
        if e.kind == CallErrorKind::NotSent {
            return Err(JudgeError::NotSent { cost_usd: cost });
        }
        if e.kind == CallErrorKind::ContextOverflow {
            return match self.info.cfg.on_context_overflow {
                OverflowPolicy::Fail => Err(JudgeError::Unjudgeable {
                    a: ida.to_owned(),
                    b: idb.to_owned(),
                    message: format!(
                        "the server says the prompt is over its context ({}); with on_context_overflow: fail the pair is set aside (skip stores such queries as invalid; truncate_answers, with context_tokens, shortens the answers)",
                        e.message
                    ),
                }),
                _ => Ok(self.invalid_reply(
                    InvalidNote::new(InvalidReason::ContextOverflow, e.message.clone()),
                    None,
                    usage,
                    cost,
                    n_attempts,
                    t0,
                )),
            };
        }
        let earlier = earlier_attempt_billed(cost, &e);
        if let Some(f) = self.endpoint.classify(e.kind, e.status, &e.message) {
            return Err(JudgeError::Endpoint {
                setting: f.setting,
                message: format!(
                    "{} (after {n_attempts} attempt{}{earlier})",
                    f.message,
                    if n_attempts == 1 { "" } else { "s" }
                ),
                cost_usd: cost,
            });
        }
        let why = match exhausted {
            Some(why) if e.retryable() => format!("; {why}"),
            _ => String::new(),
        };
        Err(JudgeError::Request {
            status: e.status,
            message: format!(
                "{} (after {n_attempts} attempt{}{why}{earlier})",
                e.message,
                if n_attempts == 1 { "" } else { "s" }
            ),
            retryable: e.retryable(),
            cost_usd: cost,
        })
    }

    /// The tokens a reply is booked at: its `usage`, or its worst case (the prompt's token bound
    /// and `max_tokens`) when the server sent none.
    /// Count a reply's usage against the reservation's bounds: billed output (reasoning counted
    /// apart included, as priced) above `max_tokens`, prompt tokens above the prompt's bound.
    /// Every reply a provider bills goes through it, live or from a batch job's file.
    pub(super) fn count_bounds(&self, usage: &Usage, prompt: &RenderedPrompt) {
        self.counters.most_completion_tokens.fetch_max(usage.output_tokens(), Ordering::Relaxed);
        if usage.output_tokens() > u64::from(self.info.cfg.max_tokens) {
            self.counters.above_max_tokens.fetch_add(1, Ordering::Relaxed);
        }
        self.counters.most_prompt_tokens.fetch_max(usage.prompt_tokens, Ordering::Relaxed);
        if usage.prompt_tokens > prompt.token_bound() {
            self.counters.above_prompt_bound.fetch_add(1, Ordering::Relaxed);
        }
    }

    pub(super) fn booked_usage(&self, reply: &ChatReply, prompt: &RenderedPrompt, (ida, idb): (&str, &str)) -> Usage {
        match reply.usage {
            Some(u) => u,
            None => {
                self.counters.usage_missing.fetch_add(1, Ordering::Relaxed);
                match &reply.usage_unreadable {
                    Some(u) => tracing::warn!(
                        "reply for {ida} vs {idb} reports a usage without readable token counts (expected whole numbers ≥ 0 in prompt_tokens and completion_tokens; found {}); booking its worst case",
                        self.redact(u)
                    ),
                    None => tracing::warn!("reply for {ida} vs {idb} has no usage; booking its worst case"),
                }
                Usage {
                    prompt_tokens: prompt.token_bound(),
                    completion_tokens: u64::from(self.info.cfg.max_tokens),
                    ..Default::default()
                }
            }
        }
    }

    /// The reply's text as stored in `raw` (redacted): its content, or the last tool call's
    /// arguments when the content is empty; at most [`RAW_MAX_BYTES`] of it ([`clip_raw`]).
    pub(super) fn raw_text(&self, reply: &ChatReply) -> Option<String> {
        reply
            .content
            .as_deref()
            .filter(|c| !c.trim().is_empty() || reply.tool_arguments.is_empty())
            .or(reply.tool_arguments.last().map(String::as_str))
            .map(|c| clip_raw(self.redact(c)))
    }

    /// The ids of (a, b) and their rendered query; a prompt that cannot be rendered is
    /// [`JudgeError::Unjudgeable`].
    pub(super) fn rendered(&self, pool: &Pool, a: usize, b: usize) -> Result<(String, String, Query), JudgeError> {
        let (ida, idb) = (pool.items[a].id.clone(), pool.items[b].id.clone());
        match self.info.render(pool, a, b) {
            Ok(q) => Ok((ida, idb, q)),
            Err(message) => Err(JudgeError::Unjudgeable { a: ida, b: idb, message }),
        }
    }

    async fn judge_query(&self, pool: &Pool, a: usize, b: usize) -> Result<JudgeReply, JudgeError> {
        let t0 = Instant::now();
        // Its reservation was made at the worst case as of now.
        let overruns_at_start = self.overruns.load(Ordering::SeqCst);
        let (ida, idb, q) = self.rendered(pool, a, b)?;
        let est = q.prompt.token_estimate(self.info.cfg.bytes_per_token) + u64::from(self.info.cfg.max_tokens);
        if q.over_context {
            self.counters.context_overflows.fetch_add(1, Ordering::Relaxed);
            let msg = format!(
                "prompt needs about {est} tokens (with max_tokens), over context_tokens {}",
                self.info.cfg.context_tokens.unwrap_or(0)
            );
            return match self.info.cfg.on_context_overflow {
                OverflowPolicy::Fail => Err(JudgeError::Unjudgeable { a: ida, b: idb, message: msg }),
                _ => Ok(self.invalid_reply(
                    InvalidNote::new(InvalidReason::ContextOverflow, format!("{msg}; not sent")),
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
        let body = self.info.request_body(&q.prompt);
        let answers = [text(pool, a), text(pool, b)];
        let attempt_worst = self.info.attempt_worst_usd(&q.prompt);
        // Paid attempts left: every reply and every possibly-billed failure takes one, so the
        // query never costs more than the (1 + max_invalid_retries) worst cases reserved for it.
        let slots = AtomicU64::new(1 + u64::from(self.info.cfg.max_invalid_retries));
        // What the query reserved: no further attempt once what it has spent leaves less than
        // one attempt's worst case of it (a reply billed above max_tokens, a failure reporting
        // more usage than expected), so only an attempt already sent can pass the reservation.
        let query_worst = (1 + self.info.cfg.max_invalid_retries) as f64 * attempt_worst;
        let room_for_another = |spent: f64| spent + attempt_worst <= query_worst * (1.0 + 1e-9) + 1e-12;
        let overran = std::sync::atomic::AtomicBool::new(false);
        let attempts = AtomicU64::new(0);
        // Failed attempts that cost (or may have cost) money: the usage they report, and their
        // booked cost (USD): at least that usage, and the attempt's worst case when the provider
        // may have billed it without saying.
        let paid_failures = Mutex::new((Usage::default(), 0.0f64));
        let mut usage = Usage::default();
        let mut cost = 0.0;
        let mut last: Option<(Invalid, Option<String>, BTreeMap<String, String>)> = None;
        let mut asks = 0u32;
        while slots.load(Ordering::Relaxed) > 0 {
            if asks > 0 {
                self.counters.reasks.fetch_add(1, Ordering::Relaxed);
            }
            asks += 1;
            let spent_before = cost;
            let res = crate::judge::openai::retry::retry(
                &self.policy,
                &self.stop,
                || async {
                    attempts.fetch_add(1, Ordering::Relaxed);
                    match self.call(&body, est, (overruns_at_start, attempt_worst)).await {
                        Ok(r) => {
                            slots.fetch_sub(1, Ordering::Relaxed);
                            Ok(r)
                        }
                        Err(err) => {
                            let reported = err.usage.map_or(0.0, |u| self.info.price.cost_usd(&u));
                            let worst = if err.kind.maybe_billed() { attempt_worst } else { 0.0 };
                            if err.usage.is_some() || err.kind.maybe_billed() {
                                slots.fetch_sub(1, Ordering::Relaxed);
                                let mut paid = paid_failures.lock().expect("not poisoned");
                                if let Some(u) = &err.usage {
                                    paid.0.add(u);
                                }
                                paid.1 += reported.max(worst);
                                // No room although paid attempts are left: it cost more than
                                // what it reserved for the attempts so far (none left: used up).
                                if !room_for_another(spent_before + paid.1) && slots.load(Ordering::Relaxed) > 0 {
                                    slots.store(0, Ordering::Relaxed);
                                    overran.store(true, Ordering::Relaxed);
                                }
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
            let (failed_usage, failed_cost) = std::mem::take(&mut *paid_failures.lock().expect("not poisoned"));
            usage.add(&failed_usage);
            cost += failed_cost;
            let reply = match res {
                Ok(r) => r,
                Err(Attempt { err, exhausted }) => {
                    let spent = Spent { usage, cost_usd: cost, attempts: n_attempts };
                    let left = match (exhausted, overran.load(Ordering::Relaxed)) {
                        (_, true) => Some("not tried again: it cost more than its reservation"),
                        (true, false) => Some("no paid attempt left for this query"),
                        (false, false) => None,
                    };
                    return self.failed_query(err, left, (&ida, &idb), spent, t0);
                }
            };
            let this_usage = self.booked_usage(&reply, &q.prompt, (&ida, &idb));
            self.count_bounds(&this_usage, &q.prompt);
            usage.add(&this_usage);
            cost += self.info.price.cost_usd(&this_usage);
            if !room_for_another(cost) && slots.load(Ordering::Relaxed) > 0 {
                slots.store(0, Ordering::Relaxed);
                overran.store(true, Ordering::Relaxed);
            }
            let raw = self.raw_text(&reply);
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
        let why = if overran.load(Ordering::Relaxed) {
            format!(
                "after {asks} ask{}; not asked again: it cost more than its reservation",
                if asks == 1 { "" } else { "s" }
            )
        } else {
            format!("after {asks} asks")
        };
        let mut reply = self.invalid_reply(InvalidNote::new(inv, why), raw, usage, cost, n, t0);
        reply.detail.raw_channels = Some(channels);
        Ok(reply)
    }
}

/// What a query has spent so far: tokens, USD and HTTP attempts.
struct Spent {
    usage: Usage,
    cost_usd: f64,
    attempts: u32,
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
    target: &secret::RequestTarget,
    has_key: bool,
) -> Result<reqwest::Response, OpenAIError> {
    let mut req = f.build().await?;
    if let Some(q) = &target.query {
        req.url_mut().set_query(Some(q));
    }
    if !has_key {
        // async-openai always writes `Authorization: Bearer <key>`, also with no key.
        req.headers_mut().remove(reqwest::header::AUTHORIZATION);
    }
    if let Some((user, pass)) = &target.basic {
        req = reqwest::RequestBuilder::from_parts(http.clone(), req)
            .basic_auth(user, pass.as_deref())
            .build()
            .map_err(OpenAIError::Reqwest)?;
    }
    let resp = http.execute(req).await.map_err(OpenAIError::Reqwest)?;
    let status = resp.status();
    let retry_after = retry_after(resp.headers());
    let content_type =
        resp.headers().get(reqwest::header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).map(str::to_owned);
    if let Some(body) = redirect_of(&resp) {
        return Err(OpenAIError::Boxed(Box::new(HttpFailure { status: status.as_u16(), retry_after, body })));
    }
    // Compressed bodies (gzip, deflate, brotli) are decoded by reqwest from Content-Encoding.
    let mut bytes = read_body(resp, status.as_u16()).await?;
    if !status.is_success() {
        let body = String::from_utf8_lossy(&bytes).into_owned();
        return Err(OpenAIError::Boxed(Box::new(HttpFailure { status: status.as_u16(), retry_after, body })));
    }
    if sse::is_event_stream(content_type.as_deref(), &bytes) {
        match sse::completion(&bytes) {
            Ok(v) => bytes = v.to_string().into_bytes(),
            Err(message) => return Err(OpenAIError::Boxed(Box::new(StreamBody { message }))),
        }
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

/// A response's body, at most [`MAX_BODY_BYTES`] of it: a larger one is an error, its rest not
/// read (a server streaming megabytes would otherwise take the memory of every request in
/// flight).
async fn read_body(mut resp: reqwest::Response, status: u16) -> Result<Vec<u8>, OpenAIError> {
    let mut buf = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(OpenAIError::Reqwest)? {
        if buf.len() + chunk.len() > MAX_BODY_BYTES {
            return Err(OpenAIError::Boxed(Box::new(OversizedBody { status })));
        }
        buf.extend_from_slice(&chunk);
    }
    Ok(buf)
}

impl OpenAiInfo {
    /// What a prepared config says of the judge ([`prepare`]): its price and prompt template.
    ///
    /// # Errors
    /// No price, or a template that cannot be read.
    pub fn new(cfg: OpenAiConfig) -> Result<Self, JudgeSetupError> {
        super::parse::prepare();
        let price = cfg.price_table().map_err(|e| InvalidInput(e.to_string()))?;
        let template = PromptTemplate::load(&cfg.prompt).map_err(|e| JudgeSetupError::Prompt(e.to_string()))?;
        let shown_base_url = cfg.shown_base_url();
        let keyed_extra_body = cfg.stored_extra_body().map(serde_json::Value::Object);
        Ok(Self { cfg, price, template, shown_base_url, keyed_extra_body, task_limit: Mutex::new(HashMap::new()) })
    }

    /// Byte limit of the task text under `truncate_task` for this pool (None = no cut).
    fn task_limit(&self, pool: &Pool, item: usize) -> Option<usize> {
        let (Some(ctx), OverflowPolicy::TruncateTask) = (self.cfg.context_tokens, self.cfg.on_context_overflow) else {
            return None;
        };
        let mut cache = self.task_limit.lock().expect("not poisoned");
        *cache.entry(pool.prompt_id_of(item).to_owned()).or_insert_with(|| {
            let (a, b) = longest_pair(pool);
            let r = self.template.render("", text(pool, a), text(pool, b)).ok()?;
            let need_rest = r.token_estimate(self.cfg.bytes_per_token) + u64::from(self.cfg.max_tokens);
            let room_tokens = ctx.saturating_sub(need_rest);
            let room_bytes = (room_tokens as f64 * self.cfg.bytes_per_token).floor() as usize;
            (pool.task_of(item).len() > room_bytes).then_some(room_bytes)
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

    pub(super) fn render(&self, pool: &Pool, a: usize, b: usize) -> Result<Query, String> {
        let task = match self.task_limit(pool, a) {
            Some(limit) => truncate_to_bytes(pool.task_of(a), limit, " […]"),
            None => pool.task_of(a).to_owned(),
        };
        let cut = self.answer_room(&task).and_then(|room| fit_answers(text(pool, a), text(pool, b), room));
        let (answer_a, answer_b) = match &cut {
            Some((x, y)) => (x.as_str(), y.as_str()),
            None => (text(pool, a), text(pool, b)),
        };
        // A multi-turn task's turns go to the template whole, or not at all when the task or
        // an answer had to be cut (the template then falls back to task / answer_a / answer_b).
        let whole = task == pool.task_of(a) && answer_a == text(pool, a) && answer_b == text(pool, b);
        let turns = if whole {
            Turns { task: pool.task_turns_of(a), a: pool.turns_of(a), b: pool.turns_of(b) }
        } else {
            Turns::default()
        };
        let prompt = self.template.render_turns(&task, answer_a, answer_b, &turns).map_err(|e| e.to_string())?;
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
    pub(super) fn attempt_worst_usd(&self, prompt: &RenderedPrompt) -> f64 {
        (prompt.token_bound() as f64 * self.price.input.max(self.price.cached_input)
            + f64::from(self.cfg.max_tokens) * self.price.output)
            / 1e6
    }
}

impl JudgeInfo for OpenAiInfo {
    fn requests_per_minute(&self) -> Option<u32> {
        self.cfg.requests_per_minute.filter(|r| *r > 0)
    }

    fn describe(&self) -> String {
        let file = self.cfg.prompt.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
        format!("openai {} @ {} (prompt {file})", self.cfg.model, self.shown_base_url)
    }

    /// The template's text: its key holds only what the template renders for each pair.
    fn settings_source(&self) -> String {
        self.template.source().to_owned()
    }

    fn cache_key(&self, pool: &Pool, a: usize, b: usize) -> String {
        let prompt_hash = match self.render(pool, a, b) {
            Ok(q) => q.prompt.hash(),
            Err(e) => format!("render error: {e}"),
        };
        let v = json!({
            "judge": "openai",
            // Without credentials: the key does not change when they do.
            "base_url": self.shown_base_url,
            "model": self.cfg.model,
            "prompt": prompt_hash,
            "max_tokens": self.cfg.max_tokens,
            "max_tokens_field": self.cfg.max_tokens_field,
            "temperature": self.cfg.temperature,
            "logprobs": self.cfg.logprobs.then_some(self.cfg.top_logprobs),
            // Without the key pasted into it, as base_url without its credentials.
            "extra_body": self.keyed_extra_body,
            "pool": pool.pool_id,
            "a": pool.items[a].id,
            "b": pool.items[b].id,
        });
        let mut v = v;
        if let Some(ns) = &self.cfg.cache_namespace {
            v["namespace"] = json!(ns);
        }
        crate::domain::rng::sha256_hex(&v.to_string())
    }

    fn worst_case_usd(&self, pool: &Pool, a: usize, b: usize) -> f64 {
        match self.render(pool, a, b) {
            Ok(q) if q.over_context && self.cfg.on_context_overflow != OverflowPolicy::Fail => 0.0,
            Ok(q) => f64::from(1 + self.cfg.max_invalid_retries) * self.attempt_worst_usd(&q.prompt),
            Err(_) => 0.0,
        }
    }

    /// The prompt's typical tokens ([`RenderedPrompt::token_estimate`] at `bytes_per_token`) at
    /// the input price plus `max_tokens` at the output price, one attempt.
    fn expected_usd(&self, pool: &Pool, a: usize, b: usize) -> f64 {
        match self.render(pool, a, b) {
            Ok(q) if q.over_context && self.cfg.on_context_overflow != OverflowPolicy::Fail => 0.0,
            Ok(q) => {
                (q.prompt.token_estimate(self.cfg.bytes_per_token) as f64 * self.price.input
                    + f64::from(self.cfg.max_tokens) * self.price.output)
                    / 1e6
            }
            Err(_) => 0.0,
        }
    }

    fn has_price(&self) -> bool {
        true
    }

    /// The worst case is linear in the prompt's bytes, which for a plain template are the
    /// template's own plus each answer's: parts = answer bytes, checked against the exact worst
    /// case on pairs of the shortest, longest and spread-out items (any mismatch, e.g. a template
    /// that transforms the answers, gives `None`). Not under a context policy that cuts or skips.
    fn worst_case_parts(&self, pool: &Pool) -> Option<crate::judge::WorstCaseParts> {
        let n = pool.n_items();
        if n < 2
            || (self.cfg.context_tokens.is_some() && self.cfg.on_context_overflow != OverflowPolicy::Fail)
            || (0..n).any(|i| !pool.turns_of(i).is_empty() || !pool.task_turns_of(i).is_empty())
        {
            return None;
        }
        let len: Vec<f64> = (0..n).map(|i| text(pool, i).len() as f64).collect();
        let (lo, hi) = (0..n)
            .fold((0, 0), |(lo, hi), i| (if len[i] < len[lo] { i } else { lo }, if len[i] > len[hi] { i } else { hi }));
        let per_byte =
            f64::from(1 + self.cfg.max_invalid_retries) * self.price.input.max(self.price.cached_input) / 1e6;
        let (a0, b0) = if lo == hi { (0, 1) } else { (lo, hi) };
        let base = self.worst_case_usd(pool, a0, b0) - per_byte * (len[a0] + len[b0]);
        let step = (n / 61).max(1);
        let mut checks: Vec<(usize, usize)> = vec![(hi, lo), (lo, hi), (hi, (hi + 1) % n), ((lo + 1) % n, lo)];
        checks.extend((0..n).step_by(step).map(|a| (a, (a * 7 + 3) % n)));
        for (a, b) in checks.into_iter().filter(|(a, b)| a != b) {
            let exact = self.worst_case_usd(pool, a, b);
            let linear = base + per_byte * (len[a] + len[b]);
            if (exact - linear).abs() > 1e-9 * exact.abs().max(1e-12) {
                return None;
            }
        }
        Some(crate::judge::WorstCaseParts { first: len.clone(), second: len })
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
}

impl JudgeInfo for OpenAiJudge {
    fn describe(&self) -> String {
        self.info.describe()
    }
    fn cache_key(&self, pool: &Pool, a: usize, b: usize) -> String {
        self.info.cache_key(pool, a, b)
    }
    fn settings_source(&self) -> String {
        self.info.settings_source()
    }
    fn worst_case_usd(&self, pool: &Pool, a: usize, b: usize) -> f64 {
        self.info.worst_case_usd(pool, a, b)
    }
    fn expected_usd(&self, pool: &Pool, a: usize, b: usize) -> f64 {
        self.info.expected_usd(pool, a, b)
    }
    fn has_price(&self) -> bool {
        self.info.has_price()
    }
    fn worst_case_parts(&self, pool: &Pool) -> Option<crate::judge::WorstCaseParts> {
        self.info.worst_case_parts(pool)
    }
    fn requests_per_minute(&self) -> Option<u32> {
        self.info.requests_per_minute()
    }
    fn invalid_rate_limit(&self) -> Option<(f64, u64)> {
        self.info.invalid_rate_limit()
    }
    fn preview(&self, pool: &Pool, a: usize, b: usize) -> Option<String> {
        self.info.preview(pool, a, b)
    }
}

impl Judge for OpenAiJudge {
    fn batch_api(&self) -> Option<&dyn crate::judge::BatchApi> {
        Some(self)
    }

    fn stats(&self) -> Option<JudgeStats> {
        let c = &self.counters;
        let g = |x: &AtomicU64| x.load(Ordering::Relaxed);
        let in_flight = self.in_flight.stats();
        // Replies, invalid replies and their reasons as one snapshot ([`OpenAiJudge::read_verdict`]).
        let reasons = self.invalid_by_reason.lock().expect("not poisoned");
        let (replies, invalid_replies, invalid_by_reason) = (g(&c.replies), g(&c.invalid_replies), reasons.clone());
        drop(reasons);
        Some(JudgeStats {
            requests: g(&c.requests),
            retries: g(&c.retries),
            rate_limited: g(&c.rate_limited),
            server_errors: g(&c.server_errors),
            timeouts: g(&c.timeouts),
            connect_errors: g(&c.connect_errors),
            malformed: g(&c.malformed),
            other_errors: g(&c.other_errors),
            invalid_replies,
            reasks: g(&c.reasks),
            invalid_by_reason,
            context_overflows: g(&c.context_overflows),
            usage_missing: g(&c.usage_missing),
            soft_verdicts: g(&c.soft_verdicts),
            soft_fallbacks: self.soft_fallbacks.lock().expect("not poisoned").clone(),
            replies,
            in_band_errors: g(&c.in_band_errors),
            broken_text_repairs: self.broken_text.load(Ordering::Relaxed),
            rate_limit_wait_ms: g(&c.rate_limit_wait_ms),
            in_flight_cuts: in_flight.cuts,
            in_flight_lowest: in_flight.lowest.map(|l| l as u64),
            in_flight_limit_at_end: in_flight.now.map(|l| l as u64),
            above_max_tokens: g(&c.above_max_tokens),
            most_completion_tokens: g(&c.most_completion_tokens),
            max_tokens: Some(self.info.cfg.max_tokens),
            above_prompt_bound: g(&c.above_prompt_bound),
            most_prompt_tokens: g(&c.most_prompt_tokens),
            batch_jobs: g(&c.batch_jobs),
            batch_api_requests: g(&c.batch_api_requests),
        })
    }

    fn preflight(&self) -> BoxFuture<'_, Result<Vec<String>, JudgeError>> {
        Box::pin(self.check_endpoint())
    }

    fn stop_sending(&self) {
        self.stop.stop();
    }

    fn sending_stopped(&self) -> bool {
        self.stop.stopped()
    }

    fn reservations_raised(&self) {
        self.overruns.fetch_add(1, Ordering::SeqCst);
    }

    fn lane_limits(&self) -> Vec<Option<usize>> {
        vec![self.info.cfg.concurrency]
    }

    fn judge<'a>(&'a self, pool: &'a Pool, a: usize, b: usize) -> BoxFuture<'a, Result<JudgeReply, JudgeError>> {
        Box::pin(self.judge_query(pool, a, b))
    }
}

/// Why a failure that is never billed (a refused connection, say) still costs: an earlier
/// attempt of the same query was sent and its reply lost, so it is booked at its worst case
/// (the server died mid-request, then refused the retries).
fn earlier_attempt_billed(cost_usd: f64, last: &CallError) -> &'static str {
    if cost_usd > 0.0 && !last.kind.maybe_billed() && last.usage.is_none() {
        "; an earlier attempt was sent and its reply lost, so it may have been billed: booked at its worst case"
    } else {
        ""
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reply of 2 MB keeps its first 64 KiB in `raw`, cut at a character boundary, and says
    /// how long it was; a reply within the limit is kept whole.
    #[test]
    fn a_huge_reply_is_kept_cut_with_its_length() {
        let short = "A ".repeat(100);
        assert_eq!(clip_raw(short.clone()), short);
        let whole = "x".repeat(RAW_MAX_BYTES);
        assert_eq!(clip_raw(whole.clone()), whole);
        let huge = format!("A {}", "y".repeat(2_000_000));
        let kept = clip_raw(huge);
        assert_eq!(
            kept.len(),
            RAW_MAX_BYTES + "… [cut: the reply holds 2000002 bytes; its first 65536 are kept]".len()
        );
        assert!(
            kept.ends_with("yyy… [cut: the reply holds 2000002 bytes; its first 65536 are kept]"),
            "{}",
            &kept[65000..]
        );
        // A two-byte character across the limit is left out whole.
        let accented = format!("{}é{}", "z".repeat(RAW_MAX_BYTES - 1), "z".repeat(10));
        assert!(clip_raw(accented).contains("its first 65535 are kept"));
    }

    #[test]
    fn a_refused_retry_after_a_lost_reply_says_why_it_costs() {
        let refused = |usage: Option<Usage>| CallError {
            kind: CallErrorKind::Connect,
            status: None,
            retry_after: None,
            message: "connection refused".into(),
            usage,
        };
        assert!(
            earlier_attempt_billed(0.0057, &refused(None)).contains("an earlier attempt was sent and its reply lost")
        );
        // Nothing spent, a failure billed itself, or one that reports its usage: nothing to add.
        assert_eq!(earlier_attempt_billed(0.0, &refused(None)), "");
        assert_eq!(earlier_attempt_billed(0.0057, &CallError { kind: CallErrorKind::Transport, ..refused(None) }), "");
        assert_eq!(earlier_attempt_billed(0.0057, &refused(Some(Usage::default()))), "");
    }
}

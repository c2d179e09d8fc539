//! Errors of one HTTP call to the judge: their kinds (timeout, connection, HTTP status,
//! malformed body, context overflow), how each is retried ([`super::retry`]) and the hints an
//! error message carries (docs/live.md, "Retries, rate limits, concurrency").

use super::*;

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
    /// A 2xx event stream (`text/event-stream`) with no completion in it: the server streams
    /// although `stream: false` was sent. Possibly billed; not retried (every retry would be
    /// the same), and it stops the run.
    Stream,
    /// Not sent: the run stopped sending (a first Ctrl-C) before this call left. Never billed,
    /// never retried.
    NotSent,
    /// Anything else (not retried).
    Other,
}

/// A failed HTTP call: kind, status, server-requested delay and a redacted message.
#[derive(Debug, Clone)]
pub struct CallError {
    /// What failed (timeout, connection, HTTP status class, malformed body, …): decides the retry.
    pub kind: CallErrorKind,
    /// HTTP status when there was a response.
    pub status: Option<u16>,
    /// The delay the server asked for (`Retry-After` in seconds or as an HTTP date, or
    /// `retry-after-ms`), when it sent one.
    pub retry_after: Option<Duration>,
    /// What happened (server text cut to 300 characters, key redacted).
    pub message: String,
    /// The tokens the reply reports as used (`usage` in a non-2xx body: some gateways bill a
    /// failed request and say so); booked at least at this usage, whatever the status.
    pub usage: Option<Usage>,
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
                | CallErrorKind::Stream
        )
    }
}

/// One failed attempt inside a query: the error, and whether the query has paid attempts
/// left (when not, even a retryable error ends the query).
#[derive(Debug)]
pub(super) struct Attempt {
    pub(super) err: CallError,
    pub(super) exhausted: bool,
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

pub(super) const CONTEXT_HINTS: [&str; 8] = [
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
pub(super) fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let get = |k: &str| headers.get(k).and_then(|v| v.to_str().ok());
    if let Some(ms) = get("retry-after-ms").and_then(|s| s.trim().parse::<f64>().ok()).filter(|ms| *ms >= 0.0)
        && ms.is_finite()
    {
        return Some(Duration::from_secs_f64((ms / 1000.0).min(86_400.0)));
    }
    retry::retry_after_delay(get("retry-after")?, get("date"), std::time::SystemTime::now())
}

/// The `usage` an error body reports (top level, or inside `error`), when it is JSON and has one
/// with at least one token.
pub(super) fn usage_in_body(body: &str) -> Option<Usage> {
    let v: Value = serde_json::from_str(body).ok()?;
    let u = v.get("usage").or_else(|| v.get("error").and_then(|e| e.get("usage")))?;
    let u = super::reply::usage_of(u)?;
    (u.total() > 0).then_some(u)
}

pub(super) fn clip(s: &str, n: usize) -> String {
    let t = s.trim();
    if t.chars().count() <= n { t.to_owned() } else { format!("{}…", t.chars().take(n).collect::<String>()) }
}

/// `a redirect to TARGET` of a 3xx response (the client follows none), its credentials and
/// query values as `***` ([`super::secret::redact_url`]); `None` for any other status.
pub(super) fn redirect_of(resp: &reqwest::Response) -> Option<String> {
    resp.status().is_redirection().then(|| {
        let to = resp.headers().get(reqwest::header::LOCATION).and_then(|v| v.to_str().ok()).unwrap_or("nowhere");
        format!("a redirect to {}", super::secret::redact_url(to))
    })
}

/// A non-2xx response seen by our transport (keeps the status async-openai would lose).
#[derive(Debug)]
pub(super) struct HttpFailure {
    pub(super) status: u16,
    pub(super) retry_after: Option<Duration>,
    pub(super) body: String,
}
impl std::fmt::Display for HttpFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "HTTP {}", self.status)
    }
}
impl std::error::Error for HttpFailure {}

/// A 2xx event stream with no completion in it.
#[derive(Debug)]
pub(super) struct StreamBody {
    pub(super) message: String,
}
impl std::fmt::Display for StreamBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}
impl std::error::Error for StreamBody {}

/// The most of a response body that is read, bytes: a chat completion is a few KB, an error
/// page a few more; a body past this is not read further (its memory is not taken).
pub const MAX_BODY_BYTES: usize = 16 << 20;

/// A response whose body is larger than [`MAX_BODY_BYTES`].
#[derive(Debug)]
pub(super) struct OversizedBody {
    pub(super) status: u16,
}
impl std::fmt::Display for OversizedBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "HTTP {} with a body larger than {} MiB (a chat completion is a few KB): not read further",
            self.status,
            MAX_BODY_BYTES >> 20
        )
    }
}
impl std::error::Error for OversizedBody {}

/// A 2xx response whose body is not JSON.
#[derive(Debug)]
pub(super) struct MalformedBody {
    pub(super) status: u16,
    pub(super) body: String,
}
impl std::fmt::Display for MalformedBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "HTTP {} with a body that is not JSON", self.status)
    }
}
impl std::error::Error for MalformedBody {}

pub(super) fn reqwest_error(e: &reqwest::Error) -> CallError {
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
    CallError { usage: None, kind, status: e.status().map(|s| s.as_u16()), retry_after: None, message: msg }
}

pub(super) fn call_error(e: OpenAIError) -> CallError {
    match e {
        OpenAIError::Boxed(b) => {
            if let Some(h) = b.downcast_ref::<HttpFailure>() {
                // What to change is said by the endpoint classifier (endpoint.rs), which knows
                // whether the request went through a proxy.
                CallError {
                    usage: usage_in_body(&h.body),
                    kind: classify_http(h.status, &h.body),
                    status: Some(h.status),
                    retry_after: h.retry_after,
                    message: format!("HTTP {}: {}", h.status, clip(&h.body, 300)),
                }
            } else if let Some(s) = b.downcast_ref::<StreamBody>() {
                CallError {
                    usage: None,
                    kind: CallErrorKind::Stream,
                    status: None,
                    retry_after: None,
                    message: s.message.clone(),
                }
            } else if let Some(m) = b.downcast_ref::<OversizedBody>() {
                CallError {
                    usage: None,
                    kind: CallErrorKind::Malformed,
                    status: Some(m.status),
                    retry_after: None,
                    message: m.to_string(),
                }
            } else if let Some(m) = b.downcast_ref::<MalformedBody>() {
                CallError {
                    usage: None,
                    kind: CallErrorKind::Malformed,
                    status: Some(m.status),
                    retry_after: None,
                    message: format!("HTTP {} body is not JSON: {}", m.status, clip(&m.body, 200)),
                }
            } else if let Some(r) = b.downcast_ref::<reqwest::Error>() {
                reqwest_error(r)
            } else {
                CallError {
                    usage: None,
                    kind: CallErrorKind::Other,
                    status: None,
                    retry_after: None,
                    message: b.to_string(),
                }
            }
        }
        OpenAIError::Reqwest(r) => reqwest_error(&r),
        OpenAIError::ApiError(a) => {
            let status = a.status_code.as_u16();
            let body = a.api_error.to_string();
            CallError {
                usage: None,
                kind: classify_http(status, &body),
                status: Some(status),
                retry_after: None,
                message: format!("HTTP {status}: {}", clip(&body, 300)),
            }
        }
        OpenAIError::JSONDeserialize(_, body) => CallError {
            usage: None,
            kind: CallErrorKind::Malformed,
            status: None,
            retry_after: None,
            message: format!("reply is not a chat completion: {}", clip(&body, 200)),
        },
        other => CallError {
            usage: None,
            kind: CallErrorKind::Other,
            status: None,
            retry_after: None,
            message: other.to_string(),
        },
    }
}

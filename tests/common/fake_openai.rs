//! An in-process fake OpenAI-compatible server (axum on 127.0.0.1:0) for the live-judge tests.
//!
//! It runs on its own thread and runtime, so both in-process runs and spawned binaries can use
//! it. Every request is recorded (body, Authorization header, arrival time, what was answered).
//! Replies follow a script of [`Fault`]s, one per request in arrival order, then the normal
//! reply: the verdict of a rule on the two answers (default: the longer answer wins, so both
//! orders agree), with `usage` from a rule on the request.
#![allow(dead_code)]

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One scripted reply in place of the normal one.
#[derive(Debug, Clone, PartialEq)]
pub enum Fault {
    /// The normal reply (to place a success inside a script).
    Ok,
    /// HTTP 429 with `Retry-After: secs`.
    RateLimited {
        /// Seconds.
        retry_after_s: u64,
    },
    /// HTTP 429 `insufficient_quota` (not retryable).
    Quota,
    /// HTTP 500 with a plain-text body.
    ServerError,
    /// Sleep this long, then answer normally (the client should time out first).
    Hang {
        /// Milliseconds.
        ms: u64,
    },
    /// HTTP 200 whose body is not JSON.
    MalformedJson,
    /// HTTP 200 with empty content.
    Empty,
    /// HTTP 200 with a `refusal` and no content.
    Refusal,
    /// The normal reply without `usage`.
    NoUsage,
    /// HTTP 200, `finish_reason: length`, an explanation cut before its verdict.
    Truncated,
    /// HTTP 200, `finish_reason: content_filter`.
    ContentFilter,
    /// HTTP 400 with llama.cpp's context-size error body (integer code: async-openai alone would
    /// lose the status).
    ContextOverflow,
    /// HTTP 401.
    Unauthorized,
    /// HTTP 200 with this content.
    Text(String),
    /// HTTP 500 whose body repeats the Authorization header.
    EchoKeyInError,
    /// HTTP 200 whose content repeats the Authorization header after a valid verdict.
    EchoKeyInReply,
}

/// One recorded request.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// Request body (JSON; `Value::Null` if it was not JSON).
    pub body: Value,
    /// The Authorization header.
    pub auth: Option<String>,
    /// Arrival time.
    pub at: Instant,
    /// The scripted fault answered, if any.
    pub fault: Option<Fault>,
    /// Answer texts (slot A, slot B) found between the test template's markers.
    pub answers: Option<(String, String)>,
}

type VerdictFn = dyn Fn(&str, &str) -> String + Send + Sync;
type UsageFn = dyn Fn(&Value) -> Option<Value> + Send + Sync;

struct Shared {
    script: Mutex<VecDeque<Fault>>,
    requests: Mutex<Vec<Recorded>>,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
    delay_ms: AtomicU64,
    verdict: Box<VerdictFn>,
    usage: Box<UsageFn>,
    top_logprobs: Mutex<Option<Vec<(String, f64)>>>,
    holds: Holds,
}

/// Held replies (issue 12's kill points): arrival numbers to hold, the held requests' release
/// handles, and counters.
#[derive(Default)]
struct Holds {
    numbers: Mutex<std::collections::HashSet<usize>>,
    waiting: Mutex<VecDeque<tokio::sync::oneshot::Sender<()>>>,
    arrivals: AtomicUsize,
    replied: AtomicUsize,
}

/// The running fake server; stops when dropped.
pub struct FakeOpenAi {
    /// `http://127.0.0.1:PORT/v1`.
    pub base_url: String,
    shared: Arc<Shared>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// The test template's answer markers.
pub const TEMPLATE: &str = "{% block system %}You are a strict judge. Reply with [[A]] or [[B]].{% endblock %}\n{% block user %}Task:\n{{ task }}\n<<A>>{{ answer_a }}<</A>>\n<<B>>{{ answer_b }}<</B>>\nWhich answer is better?{% endblock %}\n";

/// Answer texts between the markers of [`TEMPLATE`] in the last user message.
pub fn answers_of(body: &Value) -> Option<(String, String)> {
    let msgs = body.get("messages")?.as_array()?;
    let user = msgs.iter().rev().find(|m| m.get("role").and_then(Value::as_str) == Some("user"))?;
    let c = user.get("content")?.as_str()?;
    let between = |l: &str, r: &str| -> Option<String> {
        let s = c.find(l)? + l.len();
        let e = c[s..].find(r)? + s;
        Some(c[s..e].to_owned())
    };
    Some((between("<<A>>", "<</A>>")?, between("<<B>>", "<</B>>")?))
}

/// Default verdict: the longer answer (in characters) wins; a tie in length goes to A.
pub fn longer_wins(a: &str, b: &str) -> String {
    if a.chars().count() >= b.chars().count() { "[[A]]".into() } else { "[[B]]".into() }
}

/// Default usage: 100 prompt tokens, 3 completion tokens.
pub fn fixed_usage(_: &Value) -> Option<Value> {
    Some(json!({"prompt_tokens": 100, "completion_tokens": 3, "total_tokens": 103}))
}

impl FakeOpenAi {
    /// Start with the default verdict and usage rules.
    pub fn start() -> Self {
        Self::start_with(Box::new(longer_wins), Box::new(fixed_usage))
    }

    /// Start with custom verdict and usage rules.
    pub fn start_with(verdict: Box<VerdictFn>, usage: Box<UsageFn>) -> Self {
        let shared = Arc::new(Shared {
            script: Mutex::new(VecDeque::new()),
            requests: Mutex::new(Vec::new()),
            in_flight: AtomicUsize::new(0),
            max_in_flight: AtomicUsize::new(0),
            delay_ms: AtomicU64::new(0),
            verdict,
            usage,
            top_logprobs: Mutex::new(None),
            holds: Holds::default(),
        });
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let s2 = shared.clone();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                addr_tx.send(listener.local_addr().unwrap()).unwrap();
                let app = Router::new().route("/v1/chat/completions", post(handle_counted)).with_state(s2);
                tokio::select! {
                    r = axum::serve(listener, app) => { r.unwrap(); }
                    _ = stop_rx => {}
                }
            });
            rt.shutdown_timeout(Duration::from_millis(100));
        });
        let addr = addr_rx.recv().unwrap();
        Self { base_url: format!("http://{addr}/v1"), shared, stop: Some(stop_tx), thread: Some(thread) }
    }

    /// Append faults to the script.
    pub fn script(&self, faults: impl IntoIterator<Item = Fault>) {
        self.shared.script.lock().unwrap().extend(faults);
    }

    /// Delay every normal reply by `ms`.
    pub fn set_delay_ms(&self, ms: u64) {
        self.shared.delay_ms.store(ms, Ordering::SeqCst);
    }

    /// Send these top log-probabilities for the first token of every normal reply.
    pub fn set_top_logprobs(&self, tops: Vec<(String, f64)>) {
        *self.shared.top_logprobs.lock().unwrap() = Some(tops);
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.shared.requests.lock().unwrap().clone()
    }

    /// Number of requests so far.
    pub fn n_requests(&self) -> usize {
        self.shared.requests.lock().unwrap().len()
    }

    /// Most requests in flight at once.
    pub fn max_in_flight(&self) -> usize {
        self.shared.max_in_flight.load(Ordering::SeqCst)
    }

    /// Faults not yet used.
    pub fn script_left(&self) -> usize {
        self.shared.script.lock().unwrap().len()
    }

    /// Hold the replies to these requests (1-based arrival numbers) until released: the request
    /// is recorded on arrival, then waits.
    pub fn hold(&self, numbers: impl IntoIterator<Item = usize>) {
        self.shared.holds.numbers.lock().unwrap().extend(numbers);
    }

    /// Requests waiting in a hold now.
    pub fn n_held(&self) -> usize {
        self.shared.holds.waiting.lock().unwrap().len()
    }

    /// Release the `n` requests held longest (they are then answered as usual).
    pub fn release(&self, n: usize) {
        let mut w = self.shared.holds.waiting.lock().unwrap();
        for _ in 0..n {
            if let Some(tx) = w.pop_front() {
                let _ = tx.send(());
            }
        }
    }

    /// Release every held request and hold no further ones.
    pub fn release_all(&self) {
        self.shared.holds.numbers.lock().unwrap().clear();
        let n = self.n_held();
        self.release(n);
    }

    /// Replies handed back so far (handlers that finished).
    pub fn n_replied(&self) -> usize {
        self.shared.holds.replied.load(Ordering::SeqCst)
    }
}

/// Wait here if this arrival is to be held.
async fn hold_if_asked(s: &Shared) {
    let number = s.holds.arrivals.fetch_add(1, Ordering::SeqCst) + 1;
    if s.holds.numbers.lock().unwrap().remove(&number) {
        let (tx, rx) = tokio::sync::oneshot::channel();
        s.holds.waiting.lock().unwrap().push_back(tx);
        let _ = rx.await;
    }
}

/// [`handle`], counting the replies handed back.
async fn handle_counted(state: State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    let s = state.0.clone();
    let reply = handle(state, headers, body).await;
    s.holds.replied.fetch_add(1, Ordering::SeqCst);
    reply
}

impl Drop for FakeOpenAi {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

struct InFlight(Arc<Shared>);
impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

fn completion(
    content: Value,
    finish: &str,
    usage: Option<Value>,
    refusal: Option<&str>,
    logprobs: Option<Value>,
) -> Value {
    let mut v = json!({
        "id": "chatcmpl-fake", "object": "chat.completion", "created": 1_795_980_776u64, "model": "fake-judge",
        "choices": [{"index": 0, "finish_reason": finish,
                     "message": {"role": "assistant", "content": content, "refusal": refusal}}],
    });
    if let Some(u) = usage {
        v["usage"] = u;
    }
    if let Some(l) = logprobs {
        v["choices"][0]["logprobs"] = l;
    }
    v
}

async fn handle(State(s): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    let n = s.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    s.max_in_flight.fetch_max(n, Ordering::SeqCst);
    let _guard = InFlight(s.clone());
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let auth = headers.get("authorization").and_then(|v| v.to_str().ok()).map(str::to_owned);
    let fault = s.script.lock().unwrap().pop_front();
    let answers = answers_of(&body);
    s.requests.lock().unwrap().push(Recorded {
        body: body.clone(),
        auth: auth.clone(),
        at: Instant::now(),
        fault: fault.clone(),
        answers: answers.clone(),
    });
    hold_if_asked(&s).await;
    let (a, b) = answers.unwrap_or_default();
    let verdict = (s.verdict)(&a, &b);
    let usage = (s.usage)(&body);
    let json_reply = |v: Value| (StatusCode::OK, [("content-type", "application/json")], v.to_string()).into_response();
    let delay = s.delay_ms.load(Ordering::SeqCst);
    match fault {
        Some(Fault::RateLimited { retry_after_s }) => (
            StatusCode::TOO_MANY_REQUESTS,
            [("retry-after", retry_after_s.to_string()), ("content-type", "application/json".into())],
            json!({"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}}).to_string(),
        )
            .into_response(),
        Some(Fault::Quota) => (
            StatusCode::TOO_MANY_REQUESTS,
            json!({"error": {"message": "You exceeded your current quota", "type": "insufficient_quota", "code": "insufficient_quota"}}).to_string(),
        )
            .into_response(),
        Some(Fault::ServerError) => (StatusCode::INTERNAL_SERVER_ERROR, "upstream exploded").into_response(),
        Some(Fault::EchoKeyInError) => {
            (StatusCode::INTERNAL_SERVER_ERROR, format!("bad gateway; you sent {}", auth.unwrap_or_default())).into_response()
        }
        Some(Fault::Unauthorized) => (
            StatusCode::UNAUTHORIZED,
            json!({"error": {"message": "Incorrect API key provided", "type": "invalid_request_error", "code": "invalid_api_key"}}).to_string(),
        )
            .into_response(),
        Some(Fault::ContextOverflow) => (
            StatusCode::BAD_REQUEST,
            r#"{"error":{"code":400,"message":"request (5030 tokens) exceeds the available context size (4096 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":5030,"n_ctx":4096}}"#,
        )
            .into_response(),
        Some(Fault::MalformedJson) => (StatusCode::OK, [("content-type", "application/json")], "{\"choices\": [ {\"mess").into_response(),
        Some(Fault::Empty) => json_reply(completion(json!(""), "stop", usage, None, None)),
        Some(Fault::Refusal) => json_reply(completion(Value::Null, "stop", usage, Some("I can't help with that."), None)),
        Some(Fault::Truncated) => json_reply(completion(json!("Let me compare the two answers carefully. Assistant A is"), "length", usage, None, None)),
        Some(Fault::ContentFilter) => json_reply(completion(json!(""), "content_filter", usage, None, None)),
        Some(Fault::Text(t)) => json_reply(completion(json!(t), "stop", usage, None, None)),
        Some(Fault::EchoKeyInReply) => json_reply(completion(json!(format!("{verdict}\n(you sent {})", auth.unwrap_or_default())), "stop", usage, None, None)),
        Some(Fault::NoUsage) => json_reply(completion(json!(verdict), "stop", None, None, None)),
        Some(Fault::Hang { ms }) => {
            tokio::time::sleep(Duration::from_millis(ms)).await;
            json_reply(completion(json!(verdict), "stop", usage, None, None))
        }
        Some(Fault::Ok) | None => {
            if delay > 0 {
                tokio::time::sleep(Duration::from_millis(delay)).await;
            }
            let tops = s.top_logprobs.lock().unwrap().clone();
            let wants = body.get("logprobs").and_then(Value::as_bool) == Some(true);
            let logprobs = tops.filter(|_| wants).map(|t| {
                let first = verdict.chars().find(|c| *c == 'A' || *c == 'B').unwrap_or('A').to_string();
                json!({"content": [{"token": first, "logprob": t[0].1,
                        "top_logprobs": t.iter().map(|(tok, lp)| json!({"token": tok, "logprob": lp})).collect::<Vec<_>>()}]})
            });
            json_reply(completion(json!(verdict), "stop", usage, None, logprobs))
        }
    }
}

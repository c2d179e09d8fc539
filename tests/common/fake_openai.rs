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
use axum::routing::{get, post};
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
    /// HTTP 429 whose `Retry-After` is an HTTP-date this many seconds ahead (rounded up to the
    /// next whole second, the resolution of an HTTP-date).
    RateLimitedUntil {
        /// Seconds ahead.
        secs_ahead: u64,
    },
    /// HTTP 200: the normal envelope (id, model, usage) with this value as `choices[0]`.
    Choice(Value),
    /// HTTP 200: the normal envelope (id, model, usage) with an empty `choices` list. Billed.
    NoChoices,
    /// Any status with this body (JSON or text).
    Status {
        /// HTTP status.
        code: u16,
        /// Body.
        body: String,
    },
    /// HTTP 500 whose JSON body reports the request's `usage` (a gateway that bills a failed
    /// request and says so). Billed.
    ServerErrorWithUsage,
    /// HTTP 429 whose `Retry-After` is an HTTP-date this many seconds in the past.
    RateLimitedPast {
        /// Seconds ago.
        secs_ago: u64,
    },
    /// HTTP 200 as server-sent events (`Content-Type: text/event-stream`) although the request
    /// asked for `stream: false`: `chunks` (deltas, usage in the last chunk) or the whole
    /// completion as one event; then `data: [DONE]`. Billed.
    Sse {
        /// Deltas (true) or one whole completion (false).
        chunks: bool,
    },
    /// The normal reply gzip-compressed with `Content-Encoding: gzip`, although the request
    /// asked for `identity`. Billed.
    Gzip,
    /// HTTP 307 to this URL (`Location`).
    Redirect(String),
}

/// Faults for the requests of one pair of answers (either order): `faults` in turn, then
/// `then` for every later request of the pair (`None`: the normal reply).
struct PairScript {
    texts: (String, String),
    faults: VecDeque<Fault>,
    then: Option<Fault>,
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
    /// Requests in flight when this one arrived (itself included).
    pub in_flight: usize,
    /// Path and query of the request.
    pub uri: String,
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
    pair_scripts: Mutex<Vec<PairScript>>,
    always: Mutex<Option<Fault>>,
    capacity: Mutex<Option<(usize, usize)>>,
    context_limit_bytes: Mutex<Option<usize>>,
    models_reply: Mutex<(u16, String)>,
    models_requests: AtomicUsize,
    holds: Holds,
    /// Usage of every reply sent that reported one (any status): the server's bill.
    billed: Mutex<Vec<(u64, u64)>>,
    /// Files and batch jobs ([`FakeOpenAi::batch_script`]).
    batch: BatchState,
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

/// Answer texts between the markers of [`TEMPLATE`] in the last user message, or else between
/// those of the shipped templates (`Answer A:` then the text between `<<<` and `>>>` lines).
pub fn answers_of(body: &Value) -> Option<(String, String)> {
    let msgs = body.get("messages")?.as_array()?;
    let user = msgs.iter().rev().find(|m| m.get("role").and_then(Value::as_str) == Some("user"))?;
    let c = user.get("content")?.as_str()?;
    let between = |l: &str, r: &str| -> Option<String> {
        let s = c.find(l)? + l.len();
        let e = c[s..].find(r)? + s;
        Some(c[s..e].to_owned())
    };
    let test_template = || Some((between("<<A>>", "<</A>>")?, between("<<B>>", "<</B>>")?));
    let shipped = || Some((between("Answer A:\n<<<\n", "\n>>>")?, between("Answer B:\n<<<\n", "\n>>>")?));
    test_template().or_else(shipped)
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
        Self::start_on("127.0.0.1:0", verdict, usage).expect("a free port on 127.0.0.1")
    }

    /// Start on `addr` (`127.0.0.1:8088`; port 0 picks a free one) with these verdict and usage
    /// rules.
    ///
    /// # Errors
    /// The address cannot be bound (in use, or not an address).
    pub fn start_on(addr: &str, verdict: Box<VerdictFn>, usage: Box<UsageFn>) -> std::io::Result<Self> {
        let listener = std::net::TcpListener::bind(addr)?;
        listener.set_nonblocking(true)?;
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
            pair_scripts: Mutex::new(Vec::new()),
            always: Mutex::new(None),
            capacity: Mutex::new(None),
            context_limit_bytes: Mutex::new(None),
            models_reply: Mutex::new((
                200,
                json!({"object": "list", "data": [{"id": "fake-judge", "object": "model"}]}).to_string(),
            )),
            models_requests: AtomicUsize::new(0),
            billed: Mutex::new(Vec::new()),
            batch: BatchState::default(),
        });
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let s2 = shared.clone();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                addr_tx.send(listener.local_addr().unwrap()).unwrap();
                let app = Router::new()
                    .route("/v1/chat/completions", post(handle_counted))
                    .route("/v1/models", get(models))
                    .route("/v1/files", post(upload_file))
                    .route("/v1/files/{id}/content", get(file_content))
                    .route("/v1/batches", post(create_batch).get(list_batches))
                    .route("/v1/batches/{id}", get(retrieve_batch))
                    .route("/v1/batches/{id}/cancel", post(cancel_batch))
                    // A gateway that takes its token in the path (`/<token>/v1`).
                    .route("/{token}/v1/chat/completions", post(handle_counted))
                    .route("/{token}/v1/models", get(models))
                    .with_state(s2);
                tokio::select! {
                    r = axum::serve(listener, app) => { r.unwrap(); }
                    _ = stop_rx => {}
                }
            });
            rt.shutdown_timeout(Duration::from_millis(100));
        });
        let addr = addr_rx.recv().unwrap();
        Ok(Self { base_url: format!("http://{addr}/v1"), shared, stop: Some(stop_tx), thread: Some(thread) })
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

    /// Script the requests whose two answers are `x` and `y` (either order): `faults` in turn,
    /// then `then` for every later one (`None`: the normal reply). The arrival-order script comes first.
    pub fn script_pair(&self, x: &str, y: &str, faults: impl IntoIterator<Item = Fault>, then: Option<Fault>) {
        self.shared.pair_scripts.lock().unwrap().push(PairScript {
            texts: (x.to_owned(), y.to_owned()),
            faults: faults.into_iter().collect(),
            then,
        });
    }

    /// Answer every chat request with this fault once the scripts are used up (`None`: normally).
    pub fn set_always(&self, fault: Option<Fault>) {
        *self.shared.always.lock().unwrap() = fault;
    }

    /// For the first `for_first` chat requests, answer 429 (`Retry-After: 0`) to a request that
    /// arrives while `max_in_flight` others are in flight; like a loaded server, it takes the
    /// normal reply delay ([`FakeOpenAi::set_delay_ms`]) to say so.
    pub fn set_capacity(&self, max_in_flight: usize, for_first: usize) {
        *self.shared.capacity.lock().unwrap() = Some((max_in_flight, for_first));
    }

    /// Answer HTTP 400 with OpenAI's context-length error to a request whose messages hold
    /// more than this many bytes (`None`: no limit).
    pub fn set_context_limit_bytes(&self, limit: Option<usize>) {
        *self.shared.context_limit_bytes.lock().unwrap() = limit;
    }

    /// The reply to `GET /v1/models` (default: 200 listing `fake-judge`).
    pub fn set_models_reply(&self, status: u16, body: String) {
        *self.shared.models_reply.lock().unwrap() = (status, body);
    }

    /// `GET /v1/models` requests so far (not in [`FakeOpenAi::requests`]).
    pub fn models_requests(&self) -> usize {
        self.shared.models_requests.load(Ordering::SeqCst)
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

    /// The server's bill: (prompt tokens, completion tokens) of every reply it sent that
    /// reported usage, whatever its status.
    pub fn billed(&self) -> Vec<(u64, u64)> {
        self.shared.billed.lock().unwrap().clone()
    }

    /// The bill in USD at these prices (USD per million prompt and completion tokens).
    pub fn billed_usd(&self, input: f64, output: f64) -> f64 {
        self.billed().iter().map(|(p, c)| (*p as f64 * input + *c as f64 * output) / 1e6).sum()
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
async fn handle_counted(state: State<Arc<Shared>>, uri: axum::http::Uri, headers: HeaderMap, body: Bytes) -> Response {
    let s = state.0.clone();
    let reply = handle(state, uri, headers, body).await;
    s.holds.replied.fetch_add(1, Ordering::SeqCst);
    reply
}

/// The body of a 429 for a request over [`FakeOpenAi::set_capacity`].
const OVER_CAPACITY: &str =
    r#"{"error":{"message":"Too many requests in flight","type":"requests","code":"rate_limit_exceeded"}}"#;

/// The fault for a request beyond the arrival-order script: the pair's script, then the
/// capacity and context rules, then `always`.
fn extra_fault(
    s: &Shared,
    answers: Option<&(String, String)>,
    body: &Value,
    in_flight: usize,
    n: usize,
) -> Option<Fault> {
    if let Some((a, b)) = answers {
        let mut scripts = s.pair_scripts.lock().unwrap();
        if let Some(p) =
            scripts.iter_mut().find(|p| (p.texts.0 == *a && p.texts.1 == *b) || (p.texts.0 == *b && p.texts.1 == *a))
        {
            if let Some(f) = p.faults.pop_front() {
                return Some(f);
            }
            if let Some(f) = &p.then {
                return Some(f.clone());
            }
        }
    }
    if let Some((cap, for_first)) = *s.capacity.lock().unwrap()
        && n < for_first
        && in_flight > cap
    {
        return Some(Fault::Status { code: 429, body: OVER_CAPACITY.into() });
    }
    if let Some(limit) = *s.context_limit_bytes.lock().unwrap() {
        let bytes: usize = body
            .get("messages")
            .and_then(Value::as_array)
            .map(|m| m.iter().filter_map(|x| x.get("content").and_then(Value::as_str)).map(str::len).sum())
            .unwrap_or(0);
        if bytes > limit {
            return Some(Fault::Status {
                code: 400,
                body: json!({"error": {"message": format!("This model's maximum context length is {} tokens. However, your messages resulted in {} tokens. Please reduce the length of the messages.", limit / 4, bytes / 4),
                    "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}).to_string(),
            });
        }
    }
    s.always.lock().unwrap().clone()
}

async fn models(State(s): State<Arc<Shared>>) -> Response {
    s.models_requests.fetch_add(1, Ordering::SeqCst);
    let (code, body) = s.models_reply.lock().unwrap().clone();
    (StatusCode::from_u16(code).unwrap(), [("content-type", "application/json")], body).into_response()
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

/// Sleep `d` (the server's reply latency, [`FakeOpenAi::set_delay_ms`]) on the server's own
/// timer thread, which wakes within about 0.1 ms of the deadline. tokio's timer rounds a deadline
/// up to its next millisecond tick and then wakes the runtime: a "500 ms" reply took 501.3 ms
/// (median), which a throughput benchmark would count against the client.
async fn sleep_precisely(d: Duration) {
    let (tx, rx) = tokio::sync::oneshot::channel();
    precise_timer().add(Instant::now() + d, tx);
    let _ = rx.await;
}

/// The deadlines waiting on the timer thread, each with the sender that ends its sleep.
struct PreciseTimer {
    due: Mutex<Vec<(Instant, tokio::sync::oneshot::Sender<()>)>>,
    changed: std::sync::Condvar,
}

impl PreciseTimer {
    fn add(&self, at: Instant, tx: tokio::sync::oneshot::Sender<()>) {
        self.due.lock().unwrap().push((at, tx));
        self.changed.notify_one();
    }

    /// The timer thread: end every sleep whose deadline has passed, then wait for the next one.
    fn run(&self) {
        let mut due = self.due.lock().unwrap();
        loop {
            let now = Instant::now();
            let mut i = 0;
            while i < due.len() {
                if due[i].0 <= now {
                    let _ = due.swap_remove(i).1.send(());
                } else {
                    i += 1;
                }
            }
            due = match due.iter().map(|(at, _)| *at).min() {
                Some(next) => self.changed.wait_timeout(due, next - now).unwrap().0,
                None => self.changed.wait(due).unwrap(),
            };
        }
    }
}

/// The one timer thread of the test process, started on first use.
fn precise_timer() -> &'static PreciseTimer {
    static TIMER: std::sync::OnceLock<&'static PreciseTimer> = std::sync::OnceLock::new();
    TIMER.get_or_init(|| {
        let timer: &'static PreciseTimer =
            Box::leak(Box::new(PreciseTimer { due: Mutex::new(Vec::new()), changed: std::sync::Condvar::new() }));
        std::thread::Builder::new().name("fake-openai-timer".into()).spawn(move || timer.run()).unwrap();
        timer
    })
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

/// Record a reply's usage in the bill.
fn bill(s: &Shared, usage: Option<&Value>) {
    if let Some(u) = usage {
        let t = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
        s.billed.lock().unwrap().push((t("prompt_tokens"), t("completion_tokens")));
    }
}

/// Faults whose reply carries the usage of the request (billed when sent).
fn billed_fault(f: Option<&Fault>) -> bool {
    matches!(
        f,
        None | Some(
            Fault::Ok
                | Fault::Empty
                | Fault::Refusal
                | Fault::Truncated
                | Fault::ContentFilter
                | Fault::Text(_)
                | Fault::EchoKeyInReply
                | Fault::Hang { .. }
                | Fault::Choice(_)
                | Fault::NoChoices
                | Fault::ServerErrorWithUsage
                | Fault::Sse { .. }
                | Fault::Gzip
        )
    )
}

async fn handle(State(s): State<Arc<Shared>>, uri: axum::http::Uri, headers: HeaderMap, body: Bytes) -> Response {
    let s2 = s.clone();
    let usage = (s.usage)(&serde_json::from_slice::<Value>(&body).unwrap_or(Value::Null));
    let (reply, fault) = handle_inner(State(s), uri, headers, body).await;
    if billed_fault(fault.as_ref()) {
        bill(&s2, usage.as_ref());
    }
    reply
}

async fn handle_inner(
    State(s): State<Arc<Shared>>,
    uri: axum::http::Uri,
    headers: HeaderMap,
    body: Bytes,
) -> (Response, Option<Fault>) {
    let n = s.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    s.max_in_flight.fetch_max(n, Ordering::SeqCst);
    let _guard = InFlight(s.clone());
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let auth = headers.get("authorization").and_then(|v| v.to_str().ok()).map(str::to_owned);
    let answers = answers_of(&body);
    let scripted = s.script.lock().unwrap().pop_front();
    let n_before = s.requests.lock().unwrap().len();
    let fault = match scripted {
        Some(f) => Some(f),
        None => extra_fault(&s, answers.as_ref(), &body, n, n_before),
    };
    s.requests.lock().unwrap().push(Recorded {
        body: body.clone(),
        auth: auth.clone(),
        at: Instant::now(),
        fault: fault.clone(),
        answers: answers.clone(),
        in_flight: n,
        uri: uri.path_and_query().map(|p| p.as_str().to_owned()).unwrap_or_default(),
    });
    hold_if_asked(&s).await;
    let (a, b) = answers.unwrap_or_default();
    let verdict = (s.verdict)(&a, &b);
    let usage = (s.usage)(&body);
    let json_reply = |v: Value| (StatusCode::OK, [("content-type", "application/json")], v.to_string()).into_response();
    let delay = s.delay_ms.load(Ordering::SeqCst);
    let sent = fault.clone();
    let reply = match fault {
        Some(Fault::RateLimited { retry_after_s }) => (
            StatusCode::TOO_MANY_REQUESTS,
            [("retry-after", retry_after_s.to_string()), ("content-type", "application/json".into())],
            json!({"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}}).to_string(),
        )
            .into_response(),
        Some(Fault::RateLimitedUntil { secs_ahead }) => {
            let now = std::time::SystemTime::now();
            let whole = now.duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() + 1 + secs_ahead;
            let until = std::time::UNIX_EPOCH + Duration::from_secs(whole);
            (
                StatusCode::TOO_MANY_REQUESTS,
                [("retry-after", httpdate::fmt_http_date(until)), ("content-type", "application/json".into())],
                json!({"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}}).to_string(),
            )
                .into_response()
        }
        Some(Fault::Status { code, body }) if body == OVER_CAPACITY => {
            sleep_precisely(Duration::from_millis(delay)).await;
            (StatusCode::from_u16(code).unwrap(), [("retry-after", "0")], body).into_response()
        }
        Some(Fault::Status { code, body }) => (StatusCode::from_u16(code).unwrap(), body).into_response(),
        Some(Fault::Redirect(to)) => (StatusCode::TEMPORARY_REDIRECT, [("location", to)], "").into_response(),
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
        Some(Fault::Choice(c)) => {
            let mut v = completion(json!(""), "stop", usage, None, None);
            v["choices"] = json!([c]);
            json_reply(v)
        }
        Some(Fault::NoChoices) => {
            let mut v = completion(json!(""), "stop", usage, None, None);
            v["choices"] = json!([]);
            json_reply(v)
        }
        Some(Fault::Ok) | None => {
            if delay > 0 {
                sleep_precisely(Duration::from_millis(delay)).await;
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
        Some(Fault::ServerErrorWithUsage) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            [("content-type", "application/json")],
            json!({"error": {"message": "upstream failed after generating", "type": "server_error"}, "usage": usage}).to_string(),
        )
            .into_response(),
        Some(Fault::RateLimitedPast { secs_ago }) => {
            let until = std::time::SystemTime::now() - Duration::from_secs(secs_ago);
            (
                StatusCode::TOO_MANY_REQUESTS,
                [("retry-after", httpdate::fmt_http_date(until)), ("content-type", "application/json".into())],
                json!({"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}}).to_string(),
            )
                .into_response()
        }
        Some(Fault::Sse { chunks }) => {
            let full = completion(json!(verdict), "stop", usage.clone(), None, None);
            let events: Vec<Value> = if chunks {
                let mut v = vec![json!({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "model": "fake-judge",
                    "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": null}]})];
                for piece in [&verdict[..verdict.len() / 2], &verdict[verdict.len() / 2..]] {
                    v.push(json!({"id": "chatcmpl-fake", "object": "chat.completion.chunk",
                        "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": null}]}));
                }
                v.push(json!({"id": "chatcmpl-fake", "object": "chat.completion.chunk",
                    "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}));
                v.push(json!({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "choices": [], "usage": usage}));
                v
            } else {
                vec![full]
            };
            let body: String = events.iter().map(|e| format!("data: {e}\n\n")).collect::<String>() + "data: [DONE]\n\n";
            (StatusCode::OK, [("content-type", "text/event-stream")], body).into_response()
        }
        Some(Fault::Gzip) => {
            use std::io::Write;
            let text = completion(json!(verdict), "stop", usage, None, None).to_string();
            let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            gz.write_all(text.as_bytes()).unwrap();
            let bytes = gz.finish().unwrap();
            (StatusCode::OK, [("content-type", "application/json"), ("content-encoding", "gzip")], bytes).into_response()
        }
    };
    (reply, sent)
}

// ---------------------------------------------------------------------------------------------
// Provider batch jobs (docs/live.md, "Batch dispatch"): the Files API (multipart upload, content)
// and the Batches API (create, retrieve, list, cancel). A job runs each input line through the
// same handler as a live request (so the same verdicts, usage and bill), `delay_ms` after it is
// created; a script makes lines fail, the job expire after some lines, or the whole job fail.

/// Where a batch request can be held (its reply kept back until released), for kill tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BatchStep {
    /// An upload, before the file is stored.
    UploadBeforeStore,
    /// An upload, after the file is stored (its id never reaches the client if killed).
    UploadAfterStore,
    /// A create, after the job is made (its id never reaches the client if killed).
    CreateAfterStore,
    /// A retrieve (polling).
    Retrieve,
    /// A file's content (the output being read).
    Content,
}

/// How the next batch jobs run.
#[derive(Debug, Clone, Default)]
pub struct BatchScript {
    /// Wait before a job runs its lines.
    pub delay_ms: u64,
    /// Run only this many lines, then the job expires (the rest are not run, not billed).
    pub expire_after: Option<usize>,
    /// From the job of this number on (0-based), every job expires before running a line.
    pub expire_from_job: Option<usize>,
    /// Input lines (0-based) answered in the error file instead of running.
    pub error_lines: Vec<usize>,
    /// The `code` and `message` of those lines' `error` objects (default: a plain one).
    pub error_text: Option<String>,
    /// Write `error_text` with every character as a JSON `\uXXXX` escape (valid JSON, the
    /// same string once parsed).
    pub escape_error_text: bool,
    /// The job fails validation: nothing runs.
    pub fail: bool,
    /// The message of a failed job's error (default: a plain one).
    pub fail_message: Option<String>,
    /// Job objects spell their status in capitals (`COMPLETED`), as some providers do.
    pub status_upper: bool,
    /// The output file disagrees with what ran (every line still ran and is billed).
    pub output_fault: Option<OutputFault>,
    /// Job objects report this status, whatever the job's state (one the API does not have).
    pub status_text: Option<String>,
}

/// How a job's output file disagrees with the lines that ran and were billed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputFault {
    /// Every line's custom_id is one the input never had.
    WrongIds,
    /// Every line carries the first line's custom_id.
    RepeatFirst,
    /// Only the first half of the lines are written (the counts name all).
    DropHalf,
    /// No output file at all (the counts name every line completed).
    NoOutputFile,
    /// The output file is not JSON lines.
    Garbage,
    /// 20 lines more than the input had, each with a custom_id of its own, run and billed.
    Extra,
}

#[derive(Debug, Clone)]
struct FakeJob {
    id: String,
    input_file_id: String,
    status: String,
    output_file_id: Option<String>,
    error_file_id: Option<String>,
    cancel: bool,
    completed: usize,
    failed: usize,
    total: usize,
    fail: bool,
    fail_message: Option<String>,
    upper: bool,
    status_text: Option<String>,
}

#[derive(Default)]
struct BatchState {
    files: Mutex<std::collections::HashMap<String, Vec<u8>>>,
    jobs: Mutex<Vec<FakeJob>>,
    next: AtomicUsize,
    script: Mutex<BatchScript>,
    holds: Mutex<std::collections::HashSet<BatchStep>>,
    arrived: Mutex<Vec<BatchStep>>,
    release: tokio::sync::Notify,
    released: Mutex<bool>,
    /// Answer texts of every batch line billed, in order.
    billed_lines: Mutex<Vec<(String, String)>>,
    /// No Files API: uploads answer 404, as on a server without batch jobs.
    no_files: std::sync::atomic::AtomicBool,
    /// Uploads answer HTTP 307 to this URL.
    files_moved_to: Mutex<Option<String>>,
    /// Uploads and creates are answered as chat completions, as by a proxy that answers every
    /// POST so.
    posts_as_chat: std::sync::atomic::AtomicBool,
}

impl FakeOpenAi {
    /// How the next batch jobs run.
    pub fn batch_script(&self, script: BatchScript) {
        *self.shared.batch.script.lock().unwrap() = script;
    }

    /// Hold the next request at `step` (its reply waits for [`FakeOpenAi::release_batch`]).
    pub fn hold_batch(&self, step: BatchStep) {
        *self.shared.batch.released.lock().unwrap() = false;
        self.shared.batch.holds.lock().unwrap().insert(step);
    }

    /// Whether a request has arrived at the held `step`.
    pub fn batch_held_at(&self, step: BatchStep) -> bool {
        self.shared.batch.arrived.lock().unwrap().contains(&step)
    }

    /// Release every held batch request and hold nothing more.
    pub fn release_batch(&self) {
        self.shared.batch.holds.lock().unwrap().clear();
        *self.shared.batch.released.lock().unwrap() = true;
        self.shared.batch.release.notify_waiters();
    }

    /// Answer texts of every batch line billed.
    pub fn batch_billed_lines(&self) -> Vec<(String, String)> {
        self.shared.batch.billed_lines.lock().unwrap().clone()
    }

    /// Jobs made: (id, status).
    pub fn batch_jobs(&self) -> Vec<(String, String)> {
        self.shared.batch.jobs.lock().unwrap().iter().map(|j| (j.id.clone(), j.status.clone())).collect()
    }

    /// Forget every batch job made so far (retrieving one answers 404), as a provider that
    /// deleted or lost them does.
    pub fn forget_batch_jobs(&self) {
        self.shared.batch.jobs.lock().unwrap().clear();
    }

    /// Answer uploads with 404, as a server without the Files API does.
    pub fn without_files_api(&self) {
        self.shared.batch.no_files.store(true, Ordering::SeqCst);
    }

    /// Uploads answer HTTP 307 to `to`.
    pub fn move_files_api(&self, to: &str) {
        *self.shared.batch.files_moved_to.lock().unwrap() = Some(to.to_owned());
    }

    /// Answer uploads and batch creates as chat completions (no Files and Batches API).
    pub fn answer_batch_posts_as_chat(&self) {
        self.shared.batch.posts_as_chat.store(true, Ordering::SeqCst);
    }

    /// Files stored.
    pub fn n_files(&self) -> usize {
        self.shared.batch.files.lock().unwrap().len()
    }
}

async fn hold_batch_step(s: &Shared, step: BatchStep) {
    if !s.batch.holds.lock().unwrap().remove(&step) {
        return;
    }
    s.batch.arrived.lock().unwrap().push(step);
    loop {
        let notified = s.batch.release.notified();
        if *s.batch.released.lock().unwrap() {
            return;
        }
        notified.await;
    }
}

fn new_id(s: &Shared, prefix: &str) -> String {
    format!("{prefix}-{}", s.batch.next.fetch_add(1, Ordering::SeqCst) + 1)
}

fn job_json(j: &FakeJob) -> Value {
    json!({
        "id": j.id, "object": "batch", "endpoint": "/v1/chat/completions",
        "errors": if j.fail { json!({"object": "list", "data": [{"code": "invalid_request", "message": j.fail_message.as_deref().unwrap_or("the input file is not valid for this model"), "line": 1}]}) } else { Value::Null },
        "input_file_id": j.input_file_id, "completion_window": "24h",
        "status": match &j.status_text { Some(t) => t.clone(), None if j.upper => j.status.to_uppercase(), None => j.status.clone() },
        "output_file_id": j.output_file_id, "error_file_id": j.error_file_id, "created_at": 1_795_980_776u64,
        "request_counts": {"total": j.total, "completed": j.completed, "failed": j.failed},
        "metadata": {},
    })
}

fn not_found(what: &str) -> Response {
    (
        StatusCode::NOT_FOUND,
        json!({"error": {"message": format!("no such {what}"), "type": "invalid_request_error"}}).to_string(),
    )
        .into_response()
}

/// The `file` part of a multipart body.
fn multipart_file(headers: &HeaderMap, body: &[u8]) -> Option<Vec<u8>> {
    let ct = headers.get("content-type")?.to_str().ok()?;
    let boundary = ct.split("boundary=").nth(1)?.trim_matches('"');
    let text = String::from_utf8_lossy(body);
    let delim = format!("--{boundary}");
    for part in text.split(&delim) {
        if part.contains("name=\"file\"") {
            let start = part.find("\r\n\r\n")? + 4;
            let content = part[start..].strip_suffix("\r\n").unwrap_or(&part[start..]);
            return Some(content.as_bytes().to_vec());
        }
    }
    None
}

async fn upload_file(State(s): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    if s.batch.no_files.load(Ordering::SeqCst) {
        return (StatusCode::NOT_FOUND, "File Not Found").into_response();
    }
    if let Some(to) = s.batch.files_moved_to.lock().unwrap().clone() {
        return (StatusCode::TEMPORARY_REDIRECT, [("location", to)], "").into_response();
    }
    if s.batch.posts_as_chat.load(Ordering::SeqCst) {
        return chat_object("u1");
    }
    hold_batch_step(&s, BatchStep::UploadBeforeStore).await;
    let Some(content) = multipart_file(&headers, &body) else {
        return (StatusCode::BAD_REQUEST, "no file part").into_response();
    };
    let id = new_id(&s, "file");
    let n = content.len();
    s.batch.files.lock().unwrap().insert(id.clone(), content);
    hold_batch_step(&s, BatchStep::UploadAfterStore).await;
    let v = json!({"id": id, "object": "file", "bytes": n, "created_at": 1_795_980_776u64, "filename": "input.jsonl", "purpose": "batch"});
    (StatusCode::OK, [("content-type", "application/json")], v.to_string()).into_response()
}

async fn file_content(State(s): State<Arc<Shared>>, axum::extract::Path(id): axum::extract::Path<String>) -> Response {
    hold_batch_step(&s, BatchStep::Content).await;
    match s.batch.files.lock().unwrap().get(&id) {
        Some(b) => (StatusCode::OK, [("content-type", "application/octet-stream")], b.clone()).into_response(),
        None => not_found("file"),
    }
}

/// A chat completion object (id `id`), as a server without the Batches API answers a POST.
fn chat_object(id: &str) -> Response {
    let v = json!({"id": id, "object": "chat.completion", "choices": [{"index": 0, "finish_reason": "stop",
        "message": {"role": "assistant", "content": "[[A]]"}}], "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}});
    (StatusCode::OK, [("content-type", "application/json")], v.to_string()).into_response()
}

async fn create_batch(State(s): State<Arc<Shared>>, body: Bytes) -> Response {
    if s.batch.posts_as_chat.load(Ordering::SeqCst) {
        return chat_object("c2");
    }
    let req: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let Some(input) = req["input_file_id"].as_str().map(str::to_owned) else {
        return (StatusCode::BAD_REQUEST, "no input_file_id").into_response();
    };
    let Some(bytes) = s.batch.files.lock().unwrap().get(&input).cloned() else { return not_found("file") };
    let script = s.batch.script.lock().unwrap().clone();
    let lines: Vec<Value> = String::from_utf8_lossy(&bytes)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let job = FakeJob {
        id: new_id(&s, "batch"),
        input_file_id: input,
        status: if script.fail { "failed".into() } else { "validating".into() },
        output_file_id: None,
        error_file_id: None,
        cancel: false,
        completed: 0,
        failed: 0,
        total: lines.len(),
        fail: script.fail,
        fail_message: script.fail_message.clone(),
        upper: script.status_upper,
        status_text: script.status_text.clone(),
    };
    let v = job_json(&job);
    let id = job.id.clone();
    let mut script = script;
    {
        let mut jobs = s.batch.jobs.lock().unwrap();
        if script.expire_from_job.is_some_and(|n| jobs.len() >= n) {
            script.expire_after = Some(0);
        }
        jobs.push(job);
    }
    if !script.fail {
        tokio::spawn(run_job(s.clone(), id, lines, script));
    }
    hold_batch_step(&s, BatchStep::CreateAfterStore).await;
    (StatusCode::OK, [("content-type", "application/json")], v.to_string()).into_response()
}

fn with_job<R>(s: &Shared, id: &str, f: impl FnOnce(&mut FakeJob) -> R) -> Option<R> {
    s.batch.jobs.lock().unwrap().iter_mut().find(|j| j.id == id).map(f)
}

/// Run a job's lines through the live handler; write its output and error files.
async fn run_job(s: Arc<Shared>, id: String, lines: Vec<Value>, script: BatchScript) {
    tokio::time::sleep(Duration::from_millis(script.delay_ms)).await;
    with_job(&s, &id, |j| {
        if !j.cancel {
            j.status = "in_progress".into();
        }
    });
    let (mut out, mut err) = (String::new(), String::new());
    let mut end = "completed";
    let mut lines = lines;
    if script.output_fault == Some(OutputFault::Extra) {
        let first = lines[0].clone();
        for k in 0..20 {
            let mut l = first.clone();
            l["custom_id"] = json!(format!("extra-{k}"));
            lines.push(l);
        }
    }
    for (i, line) in lines.iter().enumerate() {
        if with_job(&s, &id, |j| j.cancel).unwrap_or(true) {
            end = "cancelled";
            break;
        }
        if script.expire_after.is_some_and(|n| i >= n) {
            end = "expired";
            break;
        }
        let custom_id = line["custom_id"].as_str().unwrap_or_default().to_owned();
        if script.error_lines.contains(&i) {
            let mut line = json!({"id": format!("req-{i}"), "custom_id": custom_id, "response": null,
                "error": {"code": script.error_text.as_deref().unwrap_or("server_error"),
                    "message": script.error_text.as_deref().unwrap_or("the request failed inside the batch")}})
            .to_string();
            if let Some(t) = script.error_text.as_deref().filter(|_| script.escape_error_text) {
                let escaped: String = t.encode_utf16().map(|u| format!("\\u{u:04x}")).collect();
                line = line.replace(t, &escaped);
            }
            err.push_str(&line);
            err.push('\n');
            with_job(&s, &id, |j| j.failed += 1);
            continue;
        }
        let body = line["body"].clone();
        let usage = (s.usage)(&body);
        let bytes = serde_json::to_vec(&body).unwrap();
        let (reply, fault) = handle_inner(
            State(s.clone()),
            "/v1/batch-line/chat/completions".parse().unwrap(),
            HeaderMap::new(),
            bytes.into(),
        )
        .await;
        if billed_fault(fault.as_ref()) {
            bill(&s, usage.as_ref());
            if let Some(pair) = answers_of(&body) {
                s.batch.billed_lines.lock().unwrap().push(pair);
            }
        }
        let status = reply.status().as_u16();
        let rbytes = axum::body::to_bytes(reply.into_body(), usize::MAX).await.unwrap();
        let rbody: Value =
            serde_json::from_slice(&rbytes).unwrap_or(json!({"error": {"message": String::from_utf8_lossy(&rbytes)}}));
        let custom_id = match script.output_fault {
            Some(OutputFault::WrongIds) => format!("{custom_id}-not-asked"),
            Some(OutputFault::RepeatFirst) => lines[0]["custom_id"].as_str().unwrap_or_default().to_owned(),
            Some(OutputFault::DropHalf) if i >= lines.len() / 2 => {
                with_job(&s, &id, |j| j.completed += 1);
                continue;
            }
            _ => custom_id,
        };
        out.push_str(
            &json!({"id": format!("req-{i}"), "custom_id": custom_id,
            "response": {"status_code": status, "request_id": format!("r{i}"), "body": rbody}, "error": null})
            .to_string(),
        );
        out.push('\n');
        with_job(&s, &id, |j| j.completed += 1);
    }
    let (oid, eid) = (new_id(&s, "file"), new_id(&s, "file"));
    if script.output_fault == Some(OutputFault::Garbage) {
        out = "this is not json\n".repeat(lines.len());
    }
    {
        let mut files = s.batch.files.lock().unwrap();
        files.insert(oid.clone(), out.into_bytes());
        files.insert(eid.clone(), err.into_bytes());
    }
    with_job(&s, &id, |j| {
        j.output_file_id = (script.output_fault != Some(OutputFault::NoOutputFile)).then_some(oid);
        j.error_file_id = Some(eid);
        j.status = end.into();
    });
}

async fn retrieve_batch(
    State(s): State<Arc<Shared>>,
    axum::extract::Path(id): axum::extract::Path<String>,
) -> Response {
    hold_batch_step(&s, BatchStep::Retrieve).await;
    match with_job(&s, &id, |j| job_json(j)) {
        Some(v) => (StatusCode::OK, [("content-type", "application/json")], v.to_string()).into_response(),
        None => not_found("batch"),
    }
}

async fn list_batches(State(s): State<Arc<Shared>>) -> Response {
    let data: Vec<Value> = s.batch.jobs.lock().unwrap().iter().rev().map(job_json).collect();
    let v = json!({"object": "list", "data": data, "first_id": null, "last_id": null, "has_more": false});
    (StatusCode::OK, [("content-type", "application/json")], v.to_string()).into_response()
}

async fn cancel_batch(State(s): State<Arc<Shared>>, axum::extract::Path(id): axum::extract::Path<String>) -> Response {
    let v = with_job(&s, &id, |j| {
        if !["completed", "failed", "expired", "cancelled"].contains(&j.status.as_str()) {
            j.cancel = true;
            j.status = "cancelling".into();
        }
        job_json(j)
    });
    match v {
        Some(v) => (StatusCode::OK, [("content-type", "application/json")], v.to_string()).into_response(),
        None => not_found("batch"),
    }
}

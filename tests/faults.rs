//! Faults do not end a run (docs/live.md, "Retries, rate limits, concurrency"): one scenario per
//! kind of fault, each driving the real binary against a scripted server on 127.0.0.1 and
//! asserting the server's request log (count per pair, timing of retries) and the outputs
//! (result.json, set-aside pairs, the setting a message names).

use crate::common::fake_openai::{FakeOpenAi, Fault, TEMPLATE};
use crate::common::*;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

const PROXY_VARS: [&str; 8] =
    ["HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy"];

/// A pool of items `(id, text)` with one task, written to `dir/pool.jsonl`.
fn pool(dir: &Path, items: &[(&str, &str)]) -> PathBuf {
    let items: Vec<Value> = items.iter().map(|(id, t)| json!({"id": id, "text": t})).collect();
    let line = json!({"pool_id": "faults", "task": "Summarise the report in one sentence.", "items": items});
    write(dir, "pool.jsonl", &format!("{line}\n"))
}

/// Three items whose texts tell them apart in the server's log.
fn abc(dir: &Path) -> PathBuf {
    pool(
        dir,
        &[
            ("A", "Answer A: the report says costs fell."),
            ("B", "Answer B: the report says costs fell by a third in 2025."),
            ("C", "Answer C: costs fell."),
        ],
    )
}

/// A live-judge config on `pool_file` (no API key unless `judge_extra` names one).
fn config(dir: &Path, name: &str, pool_file: &Path, base_url: &str, judge_extra: &str, rest: &str) -> PathBuf {
    write(dir, "prompts/test.j2", TEMPLATE);
    let key = if judge_extra.contains("api_key_env") {
        ""
    } else {
        "    api_key_env: TOPK_FAULTS_NO_KEY\n    api_key_required: false\n"
    };
    // These scenarios end on their own (the pool runs out); a live judge needs the choice said.
    let rest = if rest.contains("budget:") { rest.to_string() } else { format!("{rest}budget: unlimited\n") };
    let yaml = format!(
        "name: {name}\nout_dir: runs\npool:\n  file: {pool}\nk: 1\njudge:\n  openai:\n    base_url: {base_url}\n    model: fake-judge\n    fingerprint:\n      queries: 0\n    prompt: prompts/test.j2\n    max_tokens: 8\n    backoff_min_s: 0.005\n    backoff_max_s: 0.02\n    price: {{input_usd_per_mtok: 1.0, output_usd_per_mtok: 2.0}}\n{key}{judge_extra}{rest}",
        pool = pool_file.display()
    );
    write(dir, &format!("{name}.yaml"), &yaml)
}

/// Run `topk-judge run CONFIG --quiet` with no proxy variables except `env`.
fn run(dir: &Path, cfg: &Path, env: &[(&str, String)]) -> Output {
    let mut c = std::process::Command::new(bin());
    c.current_dir(dir).args(["run", cfg.to_str().unwrap(), "--quiet"]).env_remove("RUST_LOG");
    for v in PROXY_VARS {
        c.env_remove(v);
    }
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("binary runs")
}

fn result(dir: &Path, name: &str) -> Value {
    let p = dir.join("runs").join(name).join("result.json");
    serde_json::from_str(&std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))).unwrap()
}

/// Item id of an answer text in the server's log.
fn id_of(items: &[(&str, &str)], text: &str) -> String {
    items.iter().find(|(_, t)| *t == text).map(|(id, _)| id.to_string()).unwrap_or_else(|| format!("?{text}"))
}

/// Requests per unordered pair ("A–B"), from the server's log.
fn per_pair(fake: &FakeOpenAi, items: &[(&str, &str)]) -> BTreeMap<String, usize> {
    let mut m = BTreeMap::new();
    for q in fake.requests() {
        let (a, b) = q.answers.clone().unwrap();
        let (mut x, mut y) = (id_of(items, &a), id_of(items, &b));
        if x > y {
            std::mem::swap(&mut x, &mut y);
        }
        *m.entry(format!("{x}–{y}")).or_insert(0) += 1;
    }
    m
}

const ABC: [(&str, &str); 3] = [
    ("A", "Answer A: the report says costs fell."),
    ("B", "Answer B: the report says costs fell by a third in 2025."),
    ("C", "Answer C: costs fell."),
];

#[test]
fn retry_after_as_an_http_date_is_honoured_and_capped() {
    let fake = FakeOpenAi::start();
    let dir = tempfile::tempdir().unwrap();
    let items = [ABC[0], ABC[1]];
    let p = pool(dir.path(), &items);
    // (A, B): 429 with `Retry-After: 2`, then 429 with a date 3 s ahead, then 200.
    fake.script_pair(
        items[0].1,
        items[1].1,
        [Fault::RateLimited { retry_after_s: 2 }, Fault::RateLimitedUntil { secs_ahead: 3 }],
        None,
    );
    let cfg = config(dir.path(), "date", &p, &fake.base_url, "    max_retries: 4\n", "acquisition:\n  batch_size: 1\n");
    let out = run(dir.path(), &cfg, &[]);
    assert!(out.status.success(), "{}", text(&out));
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 4, "three attempts for the first order, one for the other");
    let wait1 = reqs[1].at.duration_since(reqs[0].at);
    let wait2 = reqs[2].at.duration_since(reqs[1].at);
    // Backoff alone would wait 5–20 ms: the seconds and the date were both honoured. The date
    // has whole-second resolution (the fake rounds it up), so the second wait is 3–5 s.
    assert!(wait1 >= Duration::from_secs(2) && wait1 < Duration::from_millis(2900), "{wait1:?}");
    assert!(wait2 >= Duration::from_secs(3) && wait2 < Duration::from_millis(5500), "{wait2:?}");
    let r = result(dir.path(), "date");
    assert_eq!((r["valid"].as_u64(), r["failed"].as_u64()), (Some(2), Some(0)));
    assert_eq!((r["judge_stats"]["retries"].as_u64(), r["judge_stats"]["rate_limited"].as_u64()), (Some(2), Some(2)));

    // A date 30 s ahead is cut to retry_after_max_s = 1.
    let fake = FakeOpenAi::start();
    fake.script_pair(items[0].1, items[1].1, [Fault::RateLimitedUntil { secs_ahead: 30 }], None);
    let cfg = config(
        dir.path(),
        "capped",
        &p,
        &fake.base_url,
        "    retry_after_max_s: 1\n",
        "acquisition:\n  batch_size: 1\n",
    );
    let out = run(dir.path(), &cfg, &[]);
    assert!(out.status.success(), "{}", text(&out));
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 3);
    let wait = reqs[1].at.duration_since(reqs[0].at);
    assert!(wait >= Duration::from_secs(1) && wait < Duration::from_millis(2500), "{wait:?}");
}

#[test]
fn a_pair_that_always_fails_is_set_aside_and_the_run_ends_normally() {
    let fake = FakeOpenAi::start();
    let dir = tempfile::tempdir().unwrap();
    let p = abc(dir.path());
    // (B, C) always gets 429; (A, C) one 500, then 200.
    fake.script_pair(ABC[1].1, ABC[2].1, [], Some(Fault::RateLimited { retry_after_s: 0 }));
    fake.script_pair(ABC[0].1, ABC[2].1, [Fault::ServerError], None);
    let cfg = config(
        dir.path(),
        "setaside",
        &p,
        &fake.base_url,
        "    max_retries: 2\n",
        "acquisition:\n  refit_every: 2\n  batch_size: 2\n  max_failed_queries_per_pair: 2\n",
    );
    let out = run(dir.path(), &cfg, &[]);
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    // Two failed queries (one per order) of three attempts each, and never again.
    let counts = per_pair(&fake, &ABC);
    assert_eq!(counts.get("B–C"), Some(&6), "{counts:?}");
    assert_eq!(counts.get("A–C"), Some(&3), "one 500 retried: {counts:?}");
    assert_eq!(counts.get("A–B"), Some(&2), "{counts:?}");
    let r = result(dir.path(), "setaside");
    assert_eq!(r["stop_reason"], "exhausted");
    assert_eq!((r["valid"].as_u64(), r["failed"].as_u64()), (Some(4), Some(2)));
    let q = r["quarantined"].as_array().unwrap();
    assert_eq!(q.len(), 1, "{q:?}");
    let mut pair = [q[0]["a"].as_str().unwrap(), q[0]["b"].as_str().unwrap()];
    pair.sort_unstable();
    assert_eq!(pair, ["B", "C"]);
    assert_eq!(q[0]["failed_queries"], 2);
    assert!(q[0]["last_error"].as_str().unwrap().contains("429"), "{q:?}");
    assert!(t.contains("set aside") && (t.contains("B vs C") || t.contains("C vs B")), "{t}");
}

/// A reply body past 16 MiB is not read further: the attempt is a garbled reply (retried, booked
/// at its worst case), and the next attempt's verdict is stored.
#[test]
fn a_reply_body_past_the_size_limit_is_not_read() {
    let fake = FakeOpenAi::start();
    let dir = tempfile::tempdir().unwrap();
    let p = abc(dir.path());
    fake.script([Fault::Text(format!("{}[[A]]", "x".repeat(17 << 20)))]);
    let cfg = config(
        dir.path(),
        "big",
        &p,
        &fake.base_url,
        "    max_retries: 2\n",
        "acquisition:\n  concurrency: 1\nbudget:\n  max_comparisons: 1\n",
    );
    let out = run(dir.path(), &cfg, &[]);
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    assert_eq!(fake.n_requests(), 2, "the oversized reply, then one retried: {t}");
    let r = result(dir.path(), "big");
    assert_eq!(r["valid"].as_u64(), Some(1), "{t}");
    let stats = &r["judge_stats"];
    assert_eq!(stats["malformed"].as_u64(), Some(1), "{stats}");
}

/// One endpoint-wide failure: the fake's replies, the setting the message must name, and how
/// many chat requests may reach the server before the run stops.
struct EndpointCase {
    name: &'static str,
    chat: Option<Fault>,
    models: (u16, String),
    base_suffix: &'static str,
    setting: &'static str,
    also: &'static str,
    chat_requests: usize,
}

#[test]
fn endpoint_wide_errors_stop_early_and_name_the_setting() {
    let unsupported = r#"{"error":{"message":"Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.","type":"invalid_request_error","param":"max_tokens","code":"unsupported_parameter"}}"#;
    let no_model = r#"{"error":{"message":"The model `fake-judge` does not exist or you do not have access to it.","type":"invalid_request_error","param":null,"code":"model_not_found"}}"#;
    let bad_key = r#"{"error":{"message":"Incorrect API key provided: sk-fa***. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","code":"invalid_api_key"}}"#;
    let listed = |ids: &[&str]| {
        let data: Vec<Value> = ids.iter().map(|i| json!({"id": i, "object": "model"})).collect();
        (200, json!({"object": "list", "data": data}).to_string())
    };
    let cases = [
        // 2 in flight: the third identical 400 stops the run; the fourth was already sent.
        EndpointCase {
            name: "maxtokens",
            chat: Some(Fault::Status { code: 400, body: unsupported.into() }),
            models: listed(&["fake-judge"]),
            base_suffix: "",
            setting: "max_tokens_field",
            also: "max_completion_tokens",
            chat_requests: 4,
        },
        // The model list answers 401: the run stops before any query.
        EndpointCase {
            name: "key401",
            chat: Some(Fault::Unauthorized),
            models: (401, bad_key.into()),
            base_suffix: "",
            setting: "api_key_env",
            also: "TOPK_FAULTS_KEY",
            chat_requests: 0,
        },
        EndpointCase {
            name: "key403",
            chat: Some(Fault::Status { code: 403, body: "Forbidden: this key may not use fake-judge".into() }),
            models: listed(&["fake-judge"]),
            base_suffix: "",
            setting: "api_key_env",
            also: "TOPK_FAULTS_KEY",
            chat_requests: 4,
        },
        EndpointCase {
            name: "nomodel",
            chat: Some(Fault::Status { code: 404, body: no_model.into() }),
            models: listed(&["gpt-other", "gpt-another"]),
            base_suffix: "",
            setting: "judge.openai.model",
            also: "gpt-other",
            chat_requests: 4,
        },
        // base_url without /v1: every path is unknown to the server.
        EndpointCase {
            name: "nov1",
            chat: None,
            models: listed(&["fake-judge"]),
            base_suffix: "/../..",
            setting: "judge.openai.base_url",
            also: "/v1",
            chat_requests: 0,
        },
    ];
    for c in cases {
        let fake = FakeOpenAi::start();
        fake.set_always(c.chat.clone());
        fake.set_models_reply(c.models.0, c.models.1.clone());
        let dir = tempfile::tempdir().unwrap();
        let p = abc(dir.path());
        let base = if c.base_suffix.is_empty() {
            fake.base_url.clone()
        } else {
            fake.base_url.trim_end_matches("/v1").to_owned()
        };
        let cfg = config(
            dir.path(),
            c.name,
            &p,
            &base,
            "    api_key_env: TOPK_FAULTS_KEY\n    max_retries: 3\n",
            "acquisition:\n  batch_size: 2\n",
        );
        let t0 = Instant::now();
        let out = run(dir.path(), &cfg, &[("TOPK_FAULTS_KEY", "sk-faults-test-0001".into())]);
        let t = text(&out);
        assert!(!out.status.success(), "{}: {t}", c.name);
        assert!(t0.elapsed() < Duration::from_secs(20), "{}: {:?}", c.name, t0.elapsed());
        assert!(t.contains(c.setting) && t.contains(c.also), "{}: {t}", c.name);
        assert!(!t.contains("sk-faults-test-0001"), "{}: the key leaked", c.name);
        // Early: none when the model list already fails; otherwise the queries of the first
        // rounds only (with 2 in flight, one more may already be on its way when the run stops).
        let n = fake.n_requests();
        if c.chat_requests == 0 {
            assert_eq!(n, 0, "{}: {t}", c.name);
        } else {
            assert!((2..=c.chat_requests + 2).contains(&n), "{}: {n} requests: {t}", c.name);
        }
        let r = result(dir.path(), c.name);
        assert_eq!(r["stop_reason"], "judge_failing", "{}", c.name);
        assert!(r["last_error"].as_str().unwrap().contains(c.setting), "{}: {r}", c.name);
        assert!(t.contains("stopped: judge_failing"), "{}: the summary is printed: {t}", c.name);
    }
}

/// configs/local.yaml as shipped, in `dir` (its pool and prompt read from the repository, its
/// runs under `dir/runs`).
fn shipped_local(dir: &Path) -> PathBuf {
    let yaml = std::fs::read_to_string(root().join("configs/local.yaml"))
        .unwrap()
        .replace("../data/", &format!("{}/data/", root().display()))
        .replace("../prompts/", &format!("{}/prompts/", root().display()))
        .replace("out_dir: ../runs", "out_dir: runs");
    write(dir, "local.yaml", &yaml)
}

#[test]
fn a_judge_that_is_not_there_ends_the_run_within_seconds() {
    // configs/local.yaml as shipped (whatever its base_url), pointed with --base-url at a port
    // where nothing listens, as the README tells a user to point it at a server.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let dir = tempfile::tempdir().unwrap();
    let cfg = shipped_local(dir.path());
    let t0 = Instant::now();
    let url = format!("http://127.0.0.1:{port}/v1");
    let mut c = std::process::Command::new(bin());
    c.current_dir(dir.path())
        .args(["run", cfg.to_str().unwrap(), "--quiet", "--base-url", &url])
        .env_remove("RUST_LOG");
    for v in PROXY_VARS {
        c.env_remove(v);
    }
    let out = c.output().unwrap();
    let took = t0.elapsed();
    let t = text(&out);
    assert!(!out.status.success(), "{t}");
    assert!(took < Duration::from_secs(5), "{took:?}");
    assert!(
        t.contains("judge.openai.base_url") && t.contains(&format!("nothing is listening on 127.0.0.1:{port}")),
        "{t}"
    );
    assert!(t.contains(&format!("llama-server -m MODEL.gguf --port {port}")), "says what to start: {t}");
    assert_eq!(
        t.lines().filter(|l| l.contains("warning") && !l.contains("identical text")).count(),
        0,
        "no retry warnings: {t}"
    );
    let r = result(dir.path(), "summeval-local");
    assert_eq!((r["stop_reason"].as_str(), r["comparisons"].as_u64()), (Some("judge_failing"), Some(0)));
}

/// `run --dry-run` on a live judge probes its endpoint (its free model list) and says within
/// seconds whether it answers, with the scheme and port used: a server that answers, a port
/// where nothing listens, https against a plain-http server. Nothing is sent to /chat.
#[test]
fn the_dry_run_says_whether_the_endpoint_answers() {
    let server = FakeOpenAi::start();
    let dir = tempfile::tempdir().unwrap();
    let cfg = shipped_local(dir.path());
    let dry = |url: &str| {
        let t0 = Instant::now();
        let mut c = std::process::Command::new(bin());
        c.current_dir(dir.path()).args(["run", cfg.to_str().unwrap(), "--dry-run", "--base-url", url]);
        for v in PROXY_VARS {
            c.env_remove(v);
        }
        let out = c.output().unwrap();
        assert!(t0.elapsed() < Duration::from_secs(8), "{:?}", t0.elapsed());
        assert!(out.status.success(), "{}", text(&out));
        stdout(&out)
    };
    let port = server.base_url.trim_start_matches("http://127.0.0.1:").trim_end_matches("/v1").to_string();
    let t = dry(&server.base_url);
    assert!(t.contains(&format!("endpoint {} (http, port {port}): answers (GET /models in ", server.base_url)), "{t}");
    assert_eq!((server.models_requests(), server.n_requests()), (1, 0), "one model-list request, no query");
    let https = server.base_url.replace("http://", "https://");
    let t = dry(&https);
    assert!(t.contains(&format!("endpoint {https} (https, port {port}): a real run would stop")), "{t}");
    assert!(t.contains("local servers usually speak http://"), "{t}");
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let t = dry(&format!("http://127.0.0.1:{closed}/v1"));
    assert!(
        t.contains(&format!("(http, port {closed}): a real run would stop")) && t.contains("nothing is listening"),
        "{t}"
    );
}

/// README, "Rank with the judge you choose": the stand-in judge (`cargo run --example
/// fake_judge -- PORT`, built by `cargo test` with the examples) serves configs/local.yaml as
/// the README runs it: its dry run finds the endpoint and the model, and the run finds no
/// position effect and a length coefficient it cannot identify, as the README says.
#[test]
fn the_readme_fake_judge_serves_the_local_config() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    assert!(readme.contains("cargo run --example fake_judge -- 8088 &"), "README shows the command");
    let exe = std::env::current_exe().unwrap();
    let example = exe.parent().unwrap().parent().unwrap().join("examples/fake_judge");
    assert!(example.exists(), "cargo test builds the examples: {}", example.display());
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    /// Kills the server however the test ends.
    struct Server(std::process::Child);
    impl Drop for Server {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let mut server = Server(
        std::process::Command::new(&example)
            .arg(port.to_string())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut first = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(server.0.stdout.take().unwrap()), &mut first).unwrap();
    let url = format!("http://127.0.0.1:{port}/v1");
    assert_eq!(
        first,
        format!("fake judge at {url} (model \"qwen2.5-coder-1.5b\"): the longer answer wins; Ctrl-C stops it\n")
    );
    // Port taken: said so.
    let taken = std::process::Command::new(&example).arg(port.to_string()).output().unwrap();
    assert_eq!(
        (
            taken.status.code(),
            String::from_utf8_lossy(&taken.stderr).starts_with(&format!("error: cannot listen on 127.0.0.1:{port}: "))
        ),
        (Some(1), true),
        "{}",
        text(&taken)
    );
    let dir = tempfile::tempdir().unwrap();
    let cfg = shipped_local(dir.path());
    let c = cfg.to_str().unwrap();
    let out = run_bin(dir.path(), &["run", c, "--base-url", &url, "--dry-run"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        stdout(&out).contains(&format!("endpoint {url} (http, port {port}): answers (GET /models in ")),
        "{}",
        text(&out)
    );
    assert!(!text(&out).contains("is not among"), "the model it lists is the config's: {}", text(&out));
    let out = run_bin(dir.path(), &["run", c, "--base-url", &url, "--max-comparisons", "80", "--name", "local-80"]);
    assert!(out.status.success(), "{}", text(&out));
    let r = result(dir.path(), "local-80");
    assert_eq!((r["valid"].as_u64(), r["spend_usd"].as_f64()), (Some(80), Some(0.0)), "{r}");
    assert_eq!(r["usage"]["prompt_tokens"], 8000, "100 prompt tokens billed per reply");
    let (kappa, sd) = (r["kappa"].as_f64().unwrap(), r["kappa_sd"].as_f64().unwrap());
    assert!(kappa.abs() < sd, "the longer answer wins in both orders: κ̂ = {kappa} ± {sd}");
    assert!(r["c"]["words"].as_f64().unwrap() > 1.0, "{}", r["c"]);
    assert_eq!(r["identifiability"]["words"]["identified"], false);
}

/// A `--base-url` (or `--set …base_url=`) holding credentials that the config refuses is named
/// in the error with its credentials redacted, however the URL is spelled.
#[test]
fn a_refused_base_url_override_does_not_show_its_credentials() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = shipped_local(dir.path());
    for args in [
        vec!["--base-url", "http://user:s3cretpw@127.0.0.1:9/v1?api_key=QQSECRETQQ"],
        vec!["--base-url", "htp://user:s3cretpw@127.0.0.1:9/v1"],
        vec!["--set", "judge.openai.base_url=http://user:s3cretpw@127.0.0.1:9/v1?api_key=QQSECRETQQ"],
    ] {
        let out = std::process::Command::new(bin())
            .current_dir(dir.path())
            .args(["run", cfg.to_str().unwrap(), "--dry-run"])
            .args(&args)
            .env("LOCAL_LLM_API_KEY", "sk-local-0123456789abcdef")
            .output()
            .unwrap();
        let t = text(&out);
        assert_eq!(out.status.code(), Some(1), "{t}");
        assert!(t.contains("http://***:***@127.0.0.1:9/v1") || t.contains("htp://***:***@"), "{t}");
        assert!(!t.contains("s3cretpw") && !t.contains("QQSECRETQQ") && !t.contains("0123456789abcdef"), "{t}");
    }
}

#[test]
fn context_overflow_reported_by_the_server_follows_the_policy() {
    let long = format!("Answer C: {}", "costs fell again and again, said the report. ".repeat(140));
    let items = [ABC[0], ABC[1], ("C", long.as_str())];
    let limit_bytes = 2048;
    let ctx_tokens = 600; // 4 bytes per token: prompts of ≤ 4 · (600 − 80 − 8) = 2048 bytes fit
    let mut requests = BTreeMap::new();
    for policy in ["fail", "skip", "truncate_answers"] {
        let fake = FakeOpenAi::start();
        fake.set_context_limit_bytes(Some(limit_bytes));
        let dir = tempfile::tempdir().unwrap();
        let p = pool(dir.path(), &items);
        let extra = match policy {
            "truncate_answers" => format!("    on_context_overflow: {policy}\n    context_tokens: {ctx_tokens}\n"),
            _ => format!("    on_context_overflow: {policy}\n"),
        };
        let name = format!("ctx_{policy}");
        let cfg = config(dir.path(), &name, &p, &fake.base_url, &format!("{extra}    max_retries: 3\n"), "");
        let out = run(dir.path(), &cfg, &[]);
        let t = text(&out);
        assert!(out.status.success(), "{policy}: {t}");
        let r = result(dir.path(), &name);
        requests.insert(policy, per_pair(&fake, &items));
        match policy {
            "fail" => {
                // Never retried, never aborting: both pairs with C are set aside at once.
                assert_eq!(
                    (r["valid"].as_u64(), r["invalid"].as_u64(), r["failed"].as_u64()),
                    (Some(2), Some(0), Some(4))
                );
                let q = r["quarantined"].as_array().unwrap();
                assert_eq!(q.len(), 2, "{q:?}");
                assert!(q.iter().all(|x| x["last_error"].as_str().unwrap().contains("context")), "{q:?}");
                assert_eq!(r["stop_reason"], "exhausted");
            }
            "skip" => {
                assert_eq!(
                    (r["valid"].as_u64(), r["invalid"].as_u64(), r["failed"].as_u64()),
                    (Some(2), Some(4), Some(0))
                );
                assert_eq!(r["quarantined"].as_array().unwrap().len(), 0);
                assert_eq!(r["judge_stats"]["context_overflows"], 4);
            }
            _ => {
                assert_eq!((r["valid"].as_u64(), r["invalid"].as_u64()), (Some(6), Some(0)), "{t}");
                assert_eq!(r["judge_stats"]["context_overflows"], 0, "the cut made every prompt fit");
                // C is cut in the middle with a visible marker, identically in both orders of
                // each pair (how much depends on the other answer's length); A and B go whole.
                let mut cut_of: BTreeMap<String, std::collections::BTreeSet<String>> = BTreeMap::new();
                for q in fake.requests() {
                    let (a, b) = q.answers.clone().unwrap();
                    let (x, y) = (id_of(&items, &a), id_of(&items, &b));
                    for (s, other) in [(&a, &y), (&b, &x)] {
                        if s.starts_with("Answer C") {
                            cut_of.entry(other.clone()).or_default().insert(s.clone());
                        } else {
                            assert!(items.iter().any(|(_, t)| t == s), "{s}");
                        }
                    }
                    let bytes: usize = q.body["messages"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|m| m["content"].as_str().unwrap().len())
                        .sum();
                    assert!(bytes <= limit_bytes, "{bytes}");
                }
                assert_eq!(cut_of.keys().map(String::as_str).collect::<Vec<_>>(), ["A", "B"]);
                for (other, cuts) in &cut_of {
                    assert_eq!(cuts.len(), 1, "C against {other}: the same text in both orders: {cuts:?}");
                    let c = cuts.iter().next().unwrap();
                    assert!(c.contains("[… middle cut …]") && c.len() < long.len(), "{c}");
                    assert!(long.starts_with(&c[..c.find("\n[…").unwrap()]), "the head is kept");
                    assert!(long.ends_with(&c[c.rfind("…]\n").unwrap() + "…]\n".len()..]), "the tail is kept");
                }
                // The length covariate keeps the original length (words of the uncut texts).
                let loaded = topk_judge::config::run::Config::load(&cfg).unwrap();
                let words: Vec<f64> = items.iter().map(|(_, t)| t.split_whitespace().count() as f64).collect();
                let mean = words.iter().sum::<f64>() / 3.0;
                let sd = (words.iter().map(|w| (w - mean).powi(2)).sum::<f64>() / 3.0).sqrt();
                for (i, w) in words.iter().enumerate() {
                    let z = loaded.covariates.x[i][0];
                    let want = (w - mean) / sd;
                    let want_sample = (w - mean) / (sd * (3.0f64 / 2.0).sqrt());
                    assert!((z - want).abs() < 1e-9 || (z - want_sample).abs() < 1e-9, "item {i}: {z} vs {want}");
                }
            }
        }
    }
    // Each query was sent once: the server's context error is never retried.
    for (policy, counts) in &requests {
        assert_eq!(counts.values().sum::<usize>(), 6, "{policy}: {counts:?}");
    }
}

#[test]
fn in_flight_requests_shrink_while_429s_come_and_grow_back() {
    let fake = FakeOpenAi::start();
    fake.set_delay_ms(120);
    // The server takes 2 requests at a time for its first 40 requests (429 beyond), then any number.
    fake.set_capacity(2, 40);
    let dir = tempfile::tempdir().unwrap();
    let cfg = {
        write(dir.path(), "prompts/test.j2", TEMPLATE);
        let yaml = format!(
            "name: aimd\nout_dir: runs\npool:\n  file: {}\nk: 3\njudge:\n  openai:\n    base_url: {}\n    model: fake-judge\n    fingerprint:\n      queries: 0\n    prompt: prompts/test.j2\n    max_tokens: 8\n    api_key_env: TOPK_FAULTS_NO_KEY\n    api_key_required: false\n    max_retries: 8\n    backoff_min_s: 0.005\n    backoff_max_s: 0.02\n    price: {{input_usd_per_mtok: 1.0, output_usd_per_mtok: 2.0}}\nacquisition:\n  refit_every: 8\n  batch_size: 8\n  mc_draws: 200\nbudget:\n  max_comparisons: 64\n",
            summeval().display(),
            fake.base_url
        );
        write(dir.path(), "aimd.yaml", &yaml)
    };
    let out = run(dir.path(), &cfg, &[]);
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    let r = result(dir.path(), "aimd");
    assert_eq!((r["valid"].as_u64(), r["failed"].as_u64()), (Some(64), Some(0)), "{t}");
    let st = &r["judge_stats"];
    let reqs = fake.requests();
    let n429 = reqs.iter().filter(|q| q.fault.is_some()).count();
    assert_eq!(st["rate_limited"].as_u64(), Some(n429 as u64));
    assert!(st["in_flight_cuts"].as_u64().unwrap() >= 2, "{st}");
    assert!(st["in_flight_lowest"].as_u64().unwrap() <= 2, "{st}");
    assert!(st.get("in_flight_limit_at_end").is_none_or(Value::is_null), "restored by the end: {st}");
    // The first 8 arrive together; from then until the 429s stop, the cuts keep at most 4 in
    // flight (without them all 8 queries would keep retrying at once); once they stop, the limit
    // grows back (one slot per success) above what the cuts allowed, and is whole at the end
    // (`in_flight_limit_at_end` absent, above). How far the server sees it grow before the last
    // query depends on timing, so the check is "more than during the 429s", not "all 8".
    let last_429 = reqs.iter().rposition(|q| q.fault.is_some()).unwrap();
    assert!(last_429 > 8, "the 429s went on after the first wave");
    let during = reqs[8..=last_429].iter().map(|q| q.in_flight).max().unwrap();
    assert!(during <= 4, "in flight while 429s kept coming: {during}");
    let after = reqs[last_429 + 1..].iter().map(|q| q.in_flight).max().unwrap();
    assert!(after > during, "grown back: {:?}", reqs.iter().map(|q| q.in_flight).collect::<Vec<_>>());
    // Without the cuts each of the 8 queries of a round would meet 6 × 429 per wave; with them a
    // few 429s probe the limit.
    assert!(n429 <= 24, "{n429} 429s");
    assert!(t.contains("in flight cut"), "{t}");
}

/// A fake HTTP proxy on 127.0.0.1 that answers 403 to everything and records each request line.
struct RefusingProxy {
    url: String,
    lines: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl RefusingProxy {
    fn start() -> Self {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let lines = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let l2 = lines.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(mut s) = conn else { continue };
                let l3 = l2.clone();
                std::thread::spawn(move || {
                    while let Some((head, _)) = read_request(&mut s) {
                        l3.lock().unwrap().push(head.lines().next().unwrap_or("").to_owned());
                        let body = "Access denied by the corporate proxy policy.";
                        let resp = format!(
                            "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nVia: 1.1 fake-proxy\r\n\r\n{body}",
                            body.len()
                        );
                        if s.write_all(resp.as_bytes()).is_err() {
                            break;
                        }
                    }
                });
            }
        });
        Self { url, lines }
    }

    fn lines(&self) -> Vec<String> {
        self.lines.lock().unwrap().clone()
    }
}

/// Read one HTTP/1.1 request (head, body by Content-Length); `None` at end of stream.
fn read_request(s: &mut std::net::TcpStream) -> Option<(String, Vec<u8>)> {
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    while !buf.ends_with(b"\r\n\r\n") {
        match s.read(&mut byte) {
            Ok(1) => buf.push(byte[0]),
            _ => return None,
        }
    }
    let head = String::from_utf8_lossy(&buf).into_owned();
    let len = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().parse::<usize>().unwrap())
        })
        .unwrap_or(0);
    let mut body = vec![0u8; len];
    s.read_exact(&mut body).ok()?;
    Some((head, body))
}

#[test]
fn loopback_and_no_proxy_hosts_bypass_the_proxy_and_its_errors_name_it() {
    let proxy = RefusingProxy::start();
    let fake = FakeOpenAi::start();
    let dir = tempfile::tempdir().unwrap();
    let p = abc(dir.path());
    let env = |extra: &[(&'static str, &str)]| -> Vec<(&'static str, String)> {
        let mut v = vec![("HTTP_PROXY", proxy.url.clone()), ("HTTPS_PROXY", proxy.url.clone())];
        v.extend(extra.iter().map(|(k, x)| (*k, x.to_string())));
        v
    };
    // A judge on 127.0.0.1 never goes through the proxy.
    let cfg = config(dir.path(), "direct", &p, &fake.base_url, "", "");
    let out = run(dir.path(), &cfg, &env(&[]));
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(result(dir.path(), "direct")["valid"], 6);
    assert_eq!(proxy.lines(), Vec::<String>::new());
    // A remote judge goes through it: its 403 is named as the proxy's, not as a key problem.
    let cfg = config(dir.path(), "proxied", &p, "http://judge.example.test/v1", "", "");
    let out = run(dir.path(), &cfg, &env(&[]));
    let t = text(&out);
    assert!(!out.status.success(), "{t}");
    assert!(t.contains(&format!("through proxy {} (from HTTP_PROXY)", proxy.url)), "{t}");
    assert!(t.contains("NO_PROXY") && t.contains("judge.example.test"), "{t}");
    assert!(!t.to_lowercase().contains("api key"), "{t}");
    assert_eq!(proxy.lines(), vec!["GET http://judge.example.test/v1/models HTTP/1.1".to_owned()]);
    assert_eq!(result(dir.path(), "proxied")["stop_reason"], "judge_failing");
    // NO_PROXY names it: the request goes direct (and finds no such host).
    let out = run(dir.path(), &cfg, &env(&[("NO_PROXY", "example.test")]));
    let t = text(&out);
    assert!(!out.status.success(), "{t}");
    assert!(t.contains("cannot be resolved") && t.contains("judge.openai.base_url"), "{t}");
    assert_eq!(proxy.lines().len(), 1, "the proxy saw nothing more");
    assert_eq!(fake.n_requests(), 6);
}

/// `data` as a gzip stream of stored (uncompressed) deflate blocks: valid gzip that any decoder
/// reads, and not the plain JSON.
fn gzip_stored(data: &[u8]) -> Vec<u8> {
    let crc = !data.iter().fold(!0u32, |mut c, &b| {
        c ^= u32::from(b);
        for _ in 0..8 {
            c = if c & 1 != 0 { (c >> 1) ^ 0xEDB8_8320 } else { c >> 1 };
        }
        c
    });
    let mut out = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];
    let blocks: Vec<&[u8]> = data.chunks(65_535).collect();
    for (i, b) in blocks.iter().enumerate() {
        out.push(u8::from(i + 1 == blocks.len()));
        let len = b.len() as u16;
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&(!len).to_le_bytes());
        out.extend_from_slice(b);
    }
    out.extend_from_slice(&crc.to_le_bytes());
    out.extend_from_slice(&(data.len() as u32).to_le_bytes());
    out
}

/// Canned responses a conformant HTTP/1.1 server may send, one per request in arrival order
/// (`any_coding`: the request had no `Accept-Encoding`, so RFC 9110 lets the server compress).
fn conformant_response(i: usize, body: &str, any_coding: bool) -> (Vec<u8>, bool) {
    let json_head = "Content-Type: application/json; charset=utf-8";
    let chunked = |sizes_upper: bool, ext: bool| -> String {
        let mut s = String::new();
        for piece in body.as_bytes().chunks(7) {
            let n = if sizes_upper { format!("{:04X}", piece.len()) } else { format!("{:x}", piece.len()) };
            s.push_str(&n);
            if ext {
                s.push_str(";name=\"v\"");
            }
            s.push_str("\r\n");
            s.push_str(std::str::from_utf8(piece).unwrap());
            s.push_str("\r\n");
        }
        s
    };
    let (text, close) = match i % 8 {
        // Chunked with chunk extensions and a trailer field.
        0 => (
            format!(
                "HTTP/1.1 200 OK\r\n{json_head}\r\nTransfer-Encoding: chunked\r\n\r\n{}0\r\nX-Checksum: none\r\n\r\n",
                chunked(false, true)
            ),
            false,
        ),
        // No Content-Length: the body ends when the connection closes.
        1 => (format!("HTTP/1.1 200 OK\r\n{json_head}\r\nConnection: close\r\n\r\n{body}"), true),
        // An HTTP/1.0 response to an HTTP/1.1 request.
        2 => (format!("HTTP/1.0 200 OK\r\n{json_head}\r\nContent-Length: {}\r\n\r\n{body}", body.len()), true),
        // Interim 1xx responses before the final one.
        3 => (
            format!(
                "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\nHTTP/1.1 200 OK\r\n{json_head}\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            ),
            false,
        ),
        // Field names in any case, whitespace around values, a reason phrase of its own.
        4 => (
            format!(
                "HTTP/1.1 200 Fine By Me\r\ncontent-TYPE:   application/json  \r\nCONTENT-LENGTH:\t{}\r\nX-Empty:\r\n\r\n{body}",
                body.len()
            ),
            false,
        ),
        // Chunk sizes in upper-case, zero-padded hex.
        5 => (
            format!(
                "HTTP/1.1 200 OK\r\n{json_head}\r\nTransfer-Encoding: chunked\r\n\r\n{}0000\r\n\r\n",
                chunked(true, false)
            ),
            false,
        ),
        // Keep-alive stated, then the idle connection is closed by the server.
        6 => (
            format!(
                "HTTP/1.1 200 OK\r\n{json_head}\r\nConnection: keep-alive\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            ),
            true,
        ),
        // gzip when the request left the coding open (no Accept-Encoding).
        _ if any_coding => {
            let z = gzip_stored(body.as_bytes());
            let mut v = format!(
                "HTTP/1.1 200 OK\r\n{json_head}\r\nContent-Encoding: gzip\r\nContent-Length: {}\r\n\r\n",
                z.len()
            )
            .into_bytes();
            v.extend_from_slice(&z);
            return (v, false);
        }
        // Content-Length and a body written in small pieces (the writer trickles it).
        _ => (format!("HTTP/1.1 200 OK\r\n{json_head}\r\nContent-Length: {}\r\n\r\n{body}", body.len()), false),
    };
    (text.into_bytes(), close)
}

#[test]
fn every_conformant_http11_response_is_read() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}/v1", listener.local_addr().unwrap());
    let served = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let s2 = served.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut s) = conn else { continue };
            let served = s2.clone();
            std::thread::spawn(move || {
                while let Some((head, _)) = read_request(&mut s) {
                    if head.starts_with("GET ") {
                        let b = r#"{"object":"list","data":[{"id":"fake-judge"}]}"#;
                        let _ = write!(s, "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{b}", b.len());
                        continue;
                    }
                    let i = served.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    let body = json!({"id": "x", "object": "chat.completion", "choices": [{"index": 0, "finish_reason": "stop",
                        "message": {"role": "assistant", "content": "[[A]]"}}],
                        "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}})
                    .to_string();
                    let any_coding = !head.to_ascii_lowercase().contains("\r\naccept-encoding:");
                    let (bytes, close) = conformant_response(i, &body, any_coding);
                    let ok = if i % 8 == 7 {
                        bytes.chunks(5).all(|c| {
                            std::thread::sleep(Duration::from_millis(2));
                            s.write_all(c).is_ok()
                        })
                    } else {
                        s.write_all(&bytes).is_ok()
                    };
                    if !ok || close {
                        break;
                    }
                }
            });
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let cfg = {
        write(dir.path(), "prompts/test.j2", TEMPLATE);
        let yaml = format!(
            "name: http11\nout_dir: runs\npool:\n  file: {}\nk: 3\njudge:\n  openai:\n    base_url: {base}\n    model: fake-judge\n    fingerprint:\n      queries: 0\n    prompt: prompts/test.j2\n    max_tokens: 8\n    api_key_env: TOPK_FAULTS_NO_KEY\n    api_key_required: false\n    max_invalid_retries: 0\n    price: {{input_usd_per_mtok: 1.0, output_usd_per_mtok: 2.0}}\nacquisition:\n  batch_size: 1\n  mc_draws: 200\nbudget:\n  max_comparisons: 24\n",
            summeval().display()
        );
        write(dir.path(), "http11.yaml", &yaml)
    };
    let out = run(dir.path(), &cfg, &[]);
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    let r = result(dir.path(), "http11");
    assert_eq!((r["valid"].as_u64(), r["failed"].as_u64()), (Some(24), Some(0)), "{t}");
    let st = &r["judge_stats"];
    // Every response is read the first time. Form 6 states keep-alive and then closes: a request
    // the client sent on that connection before the close reached it is retried on a new one
    // (the race of an idle close, RFC 9112 §9.3.1; the server never read it), at most once per
    // such response, 3 in all. Seen once in many runs on a loaded 2-core machine.
    let (requests, retries) = (st["requests"].as_u64().unwrap(), st["retries"].as_u64().unwrap());
    assert!(retries <= 3 && requests == 24 + retries, "every response read the first time: {st}");
    assert_eq!(served.load(std::sync::atomic::Ordering::SeqCst), 24, "three of each of the 8 forms");
    // Every verdict is the server's [[A]] = 1.
    let log = std::fs::read_to_string(dir.path().join("runs/http11/verdicts.jsonl")).unwrap();
    assert!(log.lines().all(|l| serde_json::from_str::<Value>(l).unwrap()["y"] == 1.0));
}

#[test]
fn a_run_that_stops_for_its_judge_still_leaves_a_current_result() {
    let fake = FakeOpenAi::start();
    let dir = tempfile::tempdir().unwrap();
    let cfg = |budget: u64| {
        write(dir.path(), "prompts/test.j2", TEMPLATE);
        let yaml = format!(
            "name: always\nout_dir: runs\npool:\n  file: {}\nk: 3\njudge:\n  openai:\n    base_url: {}\n    model: fake-judge\n    fingerprint:\n      queries: 0\n    prompt: prompts/test.j2\n    max_tokens: 8\n    api_key_env: TOPK_FAULTS_NO_KEY\n    api_key_required: false\n    max_retries: 1\n    backoff_min_s: 0.005\n    backoff_max_s: 0.02\n    price: {{input_usd_per_mtok: 1.0, output_usd_per_mtok: 2.0}}\nacquisition:\n  mc_draws: 200\nbudget:\n  max_comparisons: {budget}\n",
            summeval().display(),
            fake.base_url
        );
        write(dir.path(), "always.yaml", &yaml)
    };
    let out = run(dir.path(), &cfg(8), &[]);
    assert!(out.status.success(), "{}", text(&out));
    let first = result(dir.path(), "always");
    assert_eq!((first["stop_reason"].as_str(), first["valid"].as_u64()), (Some("max_comparisons"), Some(8)));
    // The server now fails every query with a 500: 3 rounds of 8 queries without a verdict.
    fake.set_always(Some(Fault::ServerError));
    let before = fake.n_requests();
    let out = run(dir.path(), &cfg(24), &[]);
    let t = text(&out);
    assert!(!out.status.success(), "{t}");
    assert_eq!(fake.n_requests() - before, 3 * 8 * 2, "3 rounds × 8 queries × 2 attempts");
    let r = result(dir.path(), "always");
    assert_eq!(r["stop_reason"], "judge_failing");
    assert_eq!((r["comparisons"].as_u64(), r["failed"].as_u64()), (Some(8), Some(24)));
    assert!(r["last_error"].as_str().unwrap().contains("HTTP 500"), "{r}");
    assert_eq!(r["topk"].as_array().unwrap().len(), 3, "fitted from the 8 verdicts it has");
    assert!(t.contains("stopped: judge_failing") && t.contains("top-3 ("), "the summary is printed: {t}");
    assert!(t.contains("error:") && t.contains("3 consecutive rounds"), "{t}");
}

#[test]
fn an_interrupted_run_leaves_no_stale_result() {
    let fake = FakeOpenAi::start();
    let dir = tempfile::tempdir().unwrap();
    let p = abc(dir.path());
    let cfg = config(dir.path(), "stale", &p, &fake.base_url, "", "budget:\n  max_comparisons: 2\n");
    assert!(run(dir.path(), &cfg, &[]).status.success());
    let result_path = dir.path().join("runs/stale/result.json");
    assert!(result_path.exists());
    // The re-run is killed while its replies are slow: the older result.json must be gone.
    fake.set_delay_ms(5000);
    let cfg = config(dir.path(), "stale", &p, &fake.base_url, "", "budget:\n  max_comparisons: 6\n");
    let mut child = std::process::Command::new(bin())
        .current_dir(dir.path())
        .args(["run", cfg.to_str().unwrap(), "--quiet"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while fake.n_requests() <= 2 {
        assert!(t0.elapsed() < Duration::from_secs(30), "no request");
        std::thread::sleep(Duration::from_millis(10));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(!result_path.exists(), "an older result.json was left looking current");
}

/// A reply may claim any token count: usage of 10¹⁹ tokens (as a float, or summed over the
/// attempts of a query) is booked, saturating, and the run ends at its budget with its
/// result.json instead of overflowing; an error body that claims such usage does the same.
#[test]
fn a_reply_claiming_absurd_usage_is_booked_and_the_run_ends_at_its_budget() {
    let huge = |_: &Value| Some(json!({"prompt_tokens": 1e19, "completion_tokens": 18446744073709551615u64}));
    let fake = FakeOpenAi::start_with(Box::new(crate::common::fake_openai::longer_wins), Box::new(huge));
    let dir = tempfile::tempdir().unwrap();
    let p = abc(dir.path());
    let cfg = config(dir.path(), "absurd", &p, &fake.base_url, "", "budget:\n  max_usd: 0.05\n");
    let out = run(dir.path(), &cfg, &[]);
    let t = text(&out);
    assert!(!t.contains("panicked"), "{t}");
    // All 6 queries in flight at once; one whose request had not left when the first reply came
    // back (a busy machine) goes back unsent: n of them billed.
    let n = fake.n_requests();
    let r = if n == 1 { "reply" } else { "replies" };
    assert!(
        t.contains(&format!("overrun: {n} {r} billed more prompt tokens than the prompt has bytes (up to 10000000000000000000 prompt tokens; the reservation counts one per byte); {n} {r} billed above max_tokens 8 (up to more than 1.8e19 output tokens, reasoning included)")),
        "{t}"
    );
    // The budget was passed: the run says so and fails (exit code 1), its result written.
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(t.contains("above budget.max_usd $0.0500: replies were billed above what was reserved for them"), "{t}");
    let r = result(dir.path(), "absurd");
    assert!(r["spend_usd"].as_f64().unwrap() > 1e12, "{r}");
    // Its report and `compare` say so too (they gave the spend and `stopped: max_usd` alone).
    let out = run_bin(dir.path(), &["report", "runs/absurd"]);
    assert!(out.status.success(), "{}", text(&out));
    let md = std::fs::read_to_string(dir.path().join("runs/absurd/report.md")).unwrap();
    assert!(
        md.contains("- budget passed: the run folder's books hold \\$")
            && md.contains("above budget.max_usd \\$0.0500 ("),
        "{md}"
    );
    let out = run_bin(dir.path(), &["compare", "runs/absurd"]);
    assert!(
        stdout(&out).contains("\nabsurd: budget passed: the run folder's books hold $")
            && stdout(&out).contains("above budget.max_usd $0.0500 ("),
        "{}",
        text(&out)
    );
    // The folder stays readable: a second run asks nothing and ends.
    let out = run(dir.path(), &cfg, &[]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(fake.n_requests(), n, "nothing asked again");

    let fake = FakeOpenAi::start();
    fake.set_always(Some(Fault::Status {
        code: 500,
        body: json!({"error": {"message": "upstream failed"}, "usage": {"prompt_tokens": 1e19, "completion_tokens": 1e19}})
            .to_string(),
    }));
    let cfg = config(dir.path(), "absurd500", &p, &fake.base_url, "    max_retries: 2\n", "budget:\n  max_usd: 0.05\n");
    let out = run(dir.path(), &cfg, &[]);
    let t = text(&out);
    assert!(!t.contains("panicked"), "{t}");
    assert!(result(dir.path(), "absurd500")["spend_usd"].as_f64().unwrap() > 1e12, "{t}");
}

/// A server's reply is shown, not obeyed: escape sequences and other control characters in a
/// body quoted by a warning, the summary or the error reach the terminal escaped.
#[test]
fn control_characters_in_a_reply_reach_the_terminal_escaped() {
    let fake = FakeOpenAi::start();
    fake.set_always(Some(Fault::Status { code: 200, body: "\u{1b}[2J\u{1b}[31mgotcha\u{0}\u{7}".into() }));
    let dir = tempfile::tempdir().unwrap();
    let p = abc(dir.path());
    let cfg = config(dir.path(), "ctl", &p, &fake.base_url, "    max_retries: 0\n", "budget:\n  max_comparisons: 4\n");
    let out = run(dir.path(), &cfg, &[]);
    let t = text(&out);
    assert!(t.contains("gotcha"), "{t}");
    for c in ['\u{1b}', '\u{0}', '\u{7}'] {
        assert!(!t.contains(c), "{c:?} reached the terminal: {t:?}");
    }
    assert!(t.contains("\\u{1b}[31mgotcha"), "{t}");
}

/// A judge whose every reply is unusable (HTTP 200, not a completion) spends the budget on
/// failed queries booked at their worst case: the run ends with exit 1, saying so, not as a
/// successful run that merely reached max_usd.
#[test]
fn a_budget_spent_on_failed_queries_alone_is_a_failing_judge() {
    let fake = FakeOpenAi::start();
    fake.set_always(Some(Fault::MalformedJson));
    let dir = tempfile::tempdir().unwrap();
    let p = abc(dir.path());
    let cfg = config(
        dir.path(),
        "garbage",
        &p,
        &fake.base_url,
        "    max_retries: 0\n",
        "acquisition:\n  max_failed_queries_per_pair: 5\nbudget:\n  max_usd: 0.0009\n",
    );
    let out = run(dir.path(), &cfg, &[]);
    let t = text(&out);
    assert!(!out.status.success(), "{t}");
    assert!(
        t.contains("the budget went to 2 failed queries and no valid verdict; result.json and the books are kept in"),
        "{t}"
    );
    let r = result(dir.path(), "garbage");
    assert_eq!((r["valid"].as_u64(), r["stop_reason"].as_str()), (Some(0), Some("max_usd")), "{r}");
    assert!(r["failed"].as_u64().unwrap() > 0 && r["spend_usd"].as_f64().unwrap() <= 0.0009 + 1e-12, "{r}");
}

/// A query whose paid attempts are used up (garbled replies, each booked at its worst case)
/// says so: it did not cost more than its reservation, it has no attempt left.
#[test]
fn a_query_out_of_paid_attempts_says_so_not_that_it_overran() {
    let fake = FakeOpenAi::start();
    fake.set_always(Some(Fault::MalformedJson));
    let dir = tempfile::tempdir().unwrap();
    let p = abc(dir.path());
    let judge = "    max_retries: 5\n    max_invalid_retries: 1\n";
    let cfg = config(dir.path(), "spent", &p, &fake.base_url, judge, "budget:\n  max_comparisons: 2\n");
    let out = run(dir.path(), &cfg, &[]);
    let t = text(&out);
    assert!(t.contains("(after 2 attempts; no paid attempt left for this query)"), "{t}");
    assert!(!t.contains("cost more than its reservation"), "{t}");
    // Two paid attempts per query, (1 + max_invalid_retries), whatever max_retries allows.
    let failed = std::fs::read_to_string(dir.path().join("runs/spent/failed.jsonl")).unwrap();
    assert_eq!(fake.n_requests(), 2 * failed.lines().count(), "{failed}");
}

/// A gateway that quotes its upstream key in its error body (a token shaped like a provider's
/// key, not this judge's key): the token is written nowhere, neither in the run folder
/// (intents.jsonl, result.json's last_error) nor on stdout or stderr (hunt 60 F3: it was
/// redacted in the warnings only).
#[test]
fn a_provider_shaped_token_in_an_error_reply_is_stored_and_printed_redacted() {
    let fake = FakeOpenAi::start();
    let dir = tempfile::tempdir().unwrap();
    let token = "sk-proj-AbCdEf0123456789QwErTy0123456789";
    write(dir.path(), "prompts/test.j2", TEMPLATE);
    let yaml = format!(
        "name: leak\nout_dir: runs\npool:\n  file: {}\nk: 3\njudge:\n  openai:\n    base_url: {}\n    model: fake-judge\n    prompt: prompts/test.j2\n    max_tokens: 8\n    api_key_env: TOPK_FAULTS_NO_KEY\n    api_key_required: false\n    max_retries: 0\n    price: {{input_usd_per_mtok: 1.0, output_usd_per_mtok: 2.0}}\nacquisition:\n  mc_draws: 200\nbudget:\n  max_comparisons: 8\n",
        summeval().display(),
        fake.base_url
    );
    let cfg = write(dir.path(), "leak.yaml", &yaml);
    fake.set_always(Some(Fault::Status { code: 500, body: format!("upstream failed: token={token} ; retry later") }));
    let out = run(dir.path(), &cfg, &[]);
    assert!(!out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("upstream failed: token=[redacted]"), "{}", text(&out));
    assert!(!text(&out).contains("AbCdEf0123456789"), "{}", text(&out));
    let r = result(dir.path(), "leak");
    assert!(r["last_error"].as_str().unwrap().contains("upstream failed"), "{r}");
    for f in std::fs::read_dir(dir.path().join("runs/leak")).unwrap() {
        let p = f.unwrap().path();
        if p.is_file() {
            let t = String::from_utf8_lossy(&std::fs::read(&p).unwrap()).into_owned();
            assert!(!t.contains("AbCdEf0123456789"), "{}: {t}", p.display());
        }
    }
}

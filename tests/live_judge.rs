//! Live (OpenAI-compatible) judges against the in-process fake server: faults, budget with 32
//! requests in flight, SIGKILL and resume, key hygiene, dry run, config errors, context
//! overflow, soft verdicts; and the opt-in test against a real local LLM
//! (any OpenAI-compatible server, see docs/live.md).

use crate::common::fake_openai::{FakeOpenAi, Fault, TEMPLATE, answers_of};
use crate::common::*;
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use topk_judge::config::judge::JudgeConfig;
use topk_judge::config::run::Config;
use topk_judge::domain::verdict::InvalidReason;
use topk_judge::judge::JudgeInfo;
use topk_judge::judge::openai::secret::Secret;
use topk_judge::judge::openai::{OpenAiConfig, OpenAiJudge};
use topk_judge::report::schema::RunResult;
use topk_judge::run::RunOptions;
use topk_judge::run::live;
use topk_judge::store::ledger::{VerdictRecord, read_records};

const POOL_ID: &str = "dm-test-2377095dda83df778e34304b7a09813808105d3b";

fn tls() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// Write prompts/test.j2 and a config using it; `judge_extra`, `acq` and `budget` are YAML
/// lines (indented as needed).
fn live_config(dir: &Path, name: &str, base_url: &str, judge_extra: &str, acq: &str, budget: &str) -> PathBuf {
    write(dir, "prompts/test.j2", TEMPLATE);
    let yaml = format!(
        "name: {name}\nout_dir: runs\npool:\n  file: {pool}\n  id: {POOL_ID}\nk: 3\njudge:\n  openai:\n    base_url: {base_url}\n    model: fake-judge\n    fingerprint:\n      queries: 0\n    prompt: prompts/test.j2\n    max_tokens: 8\n    backoff_min_s: 0.005\n    backoff_max_s: 0.02\n    price: {{input_usd_per_mtok: 1.0, output_usd_per_mtok: 2.0}}\n{judge_extra}acquisition:\n  seed: 11\n  mc_draws: 200\n{acq}budget:\n{budget}",
        pool = summeval().display()
    );
    write(dir, &format!("{name}.yaml"), &yaml)
}

fn no_key() -> &'static str {
    "    api_key_env: TOPK_JUDGE_TEST_UNSET_KEY_VAR\n    api_key_required: false\n"
}

fn openai_cfg(cfg: &Config) -> OpenAiConfig {
    match cfg.raw.judge() {
        JudgeConfig::Openai(o) => (**o).clone(),
        other => panic!("not an openai judge: {other:?}"),
    }
}

async fn run_inproc(cfg: &Config, key: &str) -> (RunResult, Arc<OpenAiJudge>) {
    let judge = Arc::new(OpenAiJudge::new(openai_cfg(cfg), Some(Secret::new(key))).unwrap());
    let res = live::run(cfg, judge.clone(), &RunOptions::default()).await.unwrap();
    (res, judge)
}

fn records(cfg: &Config) -> Vec<VerdictRecord> {
    let (r, _, warning) = read_records(&cfg.run_dir.join("verdicts.jsonl")).unwrap();
    assert!(warning.is_none(), "{warning:?}");
    r
}

fn text_of(cfg: &Config, id: &str) -> String {
    cfg.pool.items[cfg.pool.item_index(id).unwrap()].text.clone().unwrap()
}

/// Ordered pair (item ids) of a recorded request, from the answer texts it carried.
fn pair_of(pool: &topk_judge::domain::pool::Pool, answers: &(String, String)) -> (String, String) {
    let id = |t: &str| pool.items.iter().find(|i| i.text.as_deref() == Some(t)).map(|i| i.id.clone()).unwrap();
    (id(&answers.0), id(&answers.1))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_fault_is_survived_stored_once_and_counted() {
    tls();
    let fake = FakeOpenAi::start();
    fake.script([
        Fault::RateLimited { retry_after_s: 1 },
        Fault::ServerError,
        Fault::Hang { ms: 4000 },
        Fault::MalformedJson,
        Fault::Ok, // query 1: four transport faults (two possibly billed), then a verdict
        Fault::Empty,
        Fault::Refusal,
        Fault::ContentFilter, // query 2: invalid three times → stored invalid (content_filter)
        Fault::NoUsage,       // query 3: valid, usage booked at its worst case
        Fault::Truncated,
        Fault::Ok, // query 4: invalid once, then a verdict on the re-ask
        Fault::Text("Both are good, but overall it's a tie.\n[[C]]".into()), // query 5: a tie
    ]);
    let dir = tempfile::tempdir().unwrap();
    let path = live_config(
        dir.path(),
        "faults",
        &fake.base_url,
        &format!("{}    timeout_s: 2\n    max_retries: 4\n    max_invalid_retries: 2\n", no_key()),
        "  batch_size: 1\n  refit_every: 4\n",
        "  max_comparisons: 16\n",
    );
    let cfg = Config::load(&path).unwrap();
    let t0 = Instant::now();
    let (res, judge) = run_inproc(&cfg, "sk-inproc-123456").await;
    assert!(t0.elapsed() < Duration::from_secs(60));
    assert_eq!(fake.script_left(), 0);

    // Counts: 16 stored (15 valid incl. one tie, 1 invalid), 4 transport retries, 3 re-asks.
    assert_eq!((res.comparisons, res.valid, res.invalid, res.failed), (16, 15, 1, 0));
    let st = res.judge_stats.clone().unwrap();
    assert_eq!(st.requests, 16 + 4 + 3);
    assert_eq!(fake.n_requests() as u64, st.requests);
    assert_eq!((st.retries, st.rate_limited, st.server_errors, st.timeouts, st.malformed), (4, 1, 1, 1, 1));
    assert_eq!((st.invalid_replies, st.reasks, st.usage_missing), (4, 3, 1));
    assert_eq!(st.invalid_by_reason.values().sum::<u64>(), 4);
    for r in ["empty", "refused", "truncated", "content_filter"] {
        assert_eq!(st.invalid_by_reason.get(&InvalidReason::of(r)), Some(&1), "{r}: {:?}", st.invalid_by_reason);
    }
    let summary = topk_judge::report::result::summary_text(&res, &cfg.run_dir);
    assert!(summary.contains("23 requests, 4 retries") && summary.contains("3 re-asks"), "{summary}");
    assert!(summary.contains("15 valid, 1 invalid, 0 failed"), "{summary}");
    let saved: Value =
        serde_json::from_str(&std::fs::read_to_string(cfg.run_dir.join("result.json")).unwrap()).unwrap();
    assert_eq!(saved["judge_stats"]["retries"], 4);
    assert_eq!(saved["invalid"], 1);

    // Retry-After honoured: the retry came ≥ 1 s after the 429 (backoff alone is 5–20 ms).
    let reqs = fake.requests();
    assert!(reqs[1].at.duration_since(reqs[0].at) >= Duration::from_millis(950));

    // Every verdict stored exactly once; valid ones agree with the fake's rule; both orders.
    let recs = records(&cfg);
    assert_eq!(recs.len(), 16);
    let keys: HashSet<&str> = recs.iter().map(|r| r.key.as_str()).collect();
    assert_eq!(keys.len(), 16);
    let pairs: HashSet<(String, String)> = recs.iter().map(|r| (r.a.clone(), r.b.clone())).collect();
    for r in &recs {
        assert!(pairs.contains(&(r.b.clone(), r.a.clone())), "both orders of {} vs {}", r.a, r.b);
        match (r.reply.y, r.reply.invalid_reason_text().as_deref()) {
            (Some(y), None) if r.reply.raw.as_deref().is_some_and(|t| t.contains("[[C]]")) => assert_eq!(y, 0.5),
            (Some(y), None) => {
                let (ta, tb) = (text_of(&cfg, &r.a), text_of(&cfg, &r.b));
                let want = if ta.chars().count() >= tb.chars().count() { 1.0 } else { 0.0 };
                assert_eq!(y, want, "{} vs {}", r.a, r.b);
            }
            (None, Some(reason)) => {
                assert!(reason.starts_with("content_filter: after 3 asks"), "{reason}");
                assert_eq!(r.reply.attempts, 3);
                assert!(r.reply.cost_usd > 0.0, "an invalid reply's cost is still booked");
            }
            other => panic!("unexpected record {other:?}"),
        }
    }
    assert_eq!(recs.iter().filter(|r| r.reply.y == Some(0.5)).count(), 1, "one tie = one outcome of ½");
    let ia = |r: &VerdictRecord| (cfg.pool.item_index(&r.a).unwrap(), cfg.pool.item_index(&r.b).unwrap());
    // Query 1: 5 attempts; the timed-out and the garbled attempt are booked at their worst case.
    let (a0, b0) = ia(&recs[0]);
    let attempt_worst = judge.worst_case_usd(&cfg.pool, a0, b0) / 3.0;
    let fake_cost = (100.0 * 1.0 + 3.0 * 2.0) / 1e6;
    assert_eq!(recs[0].reply.attempts, 5);
    assert!((recs[0].reply.cost_usd - (2.0 * attempt_worst + fake_cost)).abs() < 1e-12, "{}", recs[0].reply.cost_usd);
    assert_eq!(recs[1].reply.y, None);
    // Query 3: the reply without usage was booked at its worst case (prompt bound + max_tokens).
    let (a2, b2) = ia(&recs[2]);
    assert!(
        recs[2].reply.usage.prompt_tokens > 1000 && recs[2].reply.usage.completion_tokens == 8,
        "{:?}",
        recs[2].reply.usage
    );
    assert!((recs[2].reply.cost_usd - judge.worst_case_usd(&cfg.pool, a2, b2) / 3.0).abs() < 1e-12);
    assert_eq!((recs[3].reply.attempts, recs[3].reply.y.is_some()), (2, true), "re-asked once after a truncated reply");
    for r in &recs {
        let (a, b) = ia(r);
        assert!(
            r.reply.cost_usd <= judge.worst_case_usd(&cfg.pool, a, b) + 1e-15,
            "no query costs more than its reservation"
        );
    }
    let spend: f64 = recs.iter().map(|r| r.reply.cost_usd).sum();
    assert!((res.spend_usd - spend).abs() < 1e-12);

    // Request shape: model, messages, limits, no logprobs unless asked, the key as bearer.
    for q in &reqs {
        let b = &q.body;
        assert_eq!(b["model"], "fake-judge");
        assert_eq!(b["max_tokens"], 8);
        assert_eq!(b["temperature"], 0.0);
        assert_eq!(b["stream"], false);
        assert!(b.get("logprobs").is_none());
        let msgs = b["messages"].as_array().unwrap();
        assert_eq!(msgs.len(), 2);
        assert_eq!(msgs[0]["role"], "system");
        assert_eq!(msgs[1]["role"], "user");
        assert!(msgs[1]["content"].as_str().unwrap().starts_with("Task:\n"));
        assert_eq!(q.auth.as_deref(), Some("Bearer sk-inproc-123456"));
        let (a, b2) = pair_of(&cfg.pool, q.answers.as_ref().unwrap());
        // Two different items; SummEval's M1 and M2 wrote identical summaries in this pool.
        let same_text = cfg.pool.items.iter().filter(|i| i.text.as_deref() == Some(text_of(&cfg, &a).as_str())).count();
        assert!(a != b2 || same_text >= 2, "{a} against itself");
    }
    drop(judge);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn budget_holds_with_32_requests_in_flight() {
    tls();
    // The fake bills exactly the reservation bound (prompt bytes + template overhead, and
    // max_tokens), so a request sent past the budget would show in the server's own total.
    let price_in = 1.0;
    let price_out = 2.0;
    let cost_of = move |body: &Value| -> (u64, u64) {
        let msgs = body["messages"].as_array().unwrap();
        let bytes: usize = msgs.iter().map(|m| m["content"].as_str().unwrap().len()).sum();
        let prompt = bytes as u64
            + topk_judge::judge::openai::prompt::BASE_OVERHEAD_TOKENS
            + topk_judge::judge::openai::prompt::PER_MESSAGE_OVERHEAD_TOKENS * msgs.len() as u64;
        (prompt, body["max_tokens"].as_u64().unwrap())
    };
    let fake = FakeOpenAi::start_with(
        Box::new(crate::common::fake_openai::longer_wins),
        Box::new(move |b: &Value| {
            let (p, c) = cost_of(b);
            Some(serde_json::json!({"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c}))
        }),
    );
    fake.set_delay_ms(150);
    let dir = tempfile::tempdir().unwrap();
    let extra = format!("{}    max_invalid_retries: 0\n    timeout_s: 20\n", no_key());
    // First load without a budget to price the pairs, then set max_usd = 50 × mean worst case.
    let probe = live_config(dir.path(), "probe", &fake.base_url, &extra, "", "  max_comparisons: 1\n");
    let pcfg = Config::load(&probe).unwrap();
    let judge = OpenAiJudge::new(openai_cfg(&pcfg), None).unwrap();
    let pool = &pcfg.pool;
    let mut worst = Vec::new();
    for a in 0..pool.n_items() {
        for b in 0..pool.n_items() {
            if a != b {
                worst.push(judge.worst_case_usd(pool, a, b));
            }
        }
    }
    let mean = worst.iter().sum::<f64>() / worst.len() as f64;
    let max_w = worst.iter().cloned().fold(0.0, f64::max);
    let max_usd = 50.0 * mean;
    let path = live_config(
        dir.path(),
        "budget",
        &fake.base_url,
        &extra,
        "  batch_size: 32\n  refit_every: 32\n",
        &format!("  max_usd: {max_usd}\n"),
    );
    let cfg = Config::load(&path).unwrap();
    let (res, _judge) = run_inproc(&cfg, "sk-budget-0000").await;
    let recs = records(&cfg);
    let failed = topk_judge::store::ledger::read_failed(&cfg.run_dir.join("failed.jsonl"))
        .unwrap()
        .0
        .iter()
        .map(|f| f.cost_usd)
        .sum::<f64>();
    let logged: f64 = recs.iter().map(|r| r.reply.cost_usd).sum::<f64>() + failed;
    let server_total: f64 = fake
        .requests()
        .iter()
        .map(|q| {
            let (p, c) = cost_of(&q.body);
            (p as f64 * price_in + c as f64 * price_out) / 1e6
        })
        .sum();
    assert!(logged <= max_usd + 1e-12, "logged {logged} > max {max_usd}");
    assert!(server_total <= max_usd + 1e-12, "requests sent worth {server_total} > max {max_usd}");
    assert!((server_total - logged).abs() < 1e-9, "every request was logged and billed once");
    assert_eq!(fake.n_requests(), recs.len() + res.failed);
    assert_eq!(res.failed, 0, "{:?}", res.judge_stats);
    assert_eq!(fake.max_in_flight(), 32, "the first round had 32 requests in flight");
    assert!((res.spend_usd - logged).abs() < 1e-12);
    assert_eq!(res.stop_reason, topk_judge::report::schema::StopReason::MaxUsd);
    assert!(max_usd - logged < max_w, "stopped only when a query's worst case no longer fit");
    assert!((40..=60).contains(&recs.len()), "≈ 50 calls: {}", recs.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timed_out_paid_call_is_booked_and_survives_resume() {
    tls();
    let fake = FakeOpenAi::start();
    fake.script([Fault::Hang { ms: 3000 }]);
    let dir = tempfile::tempdir().unwrap();
    let path = live_config(
        dir.path(),
        "timeout",
        &fake.base_url,
        &format!("{}    timeout_s: 0.4\n    max_invalid_retries: 0\n", no_key()),
        "  batch_size: 1\n  refit_every: 2\n",
        "  max_comparisons: 2\n  max_usd: 1.0\n",
    );
    let cfg = Config::load(&path).unwrap();
    let (res, judge) = run_inproc(&cfg, "sk-x-000").await;
    assert_eq!((res.comparisons, res.failed), (2, 1));
    let st = res.judge_stats.clone().unwrap();
    assert_eq!((st.timeouts, st.retries), (1, 0), "one paid attempt per query: a timeout is not retried");
    let recs = records(&cfg);
    let first = fake.requests()[0].answers.clone().unwrap();
    let (fa, fb) = pair_of(&cfg.pool, &first);
    let (ia, ib) = (cfg.pool.item_index(&fa).unwrap(), cfg.pool.item_index(&fb).unwrap());
    let w = judge.worst_case_usd(&cfg.pool, ia, ib);
    let booked = topk_judge::store::ledger::read_failed(&cfg.run_dir.join("failed.jsonl"))
        .unwrap()
        .0
        .iter()
        .map(|f| f.cost_usd)
        .sum::<f64>();
    assert!((booked - w).abs() < 1e-15, "the timed-out call is booked at its worst case");
    let logged: f64 = recs.iter().map(|r| r.reply.cost_usd).sum();
    assert!((res.spend_usd - (logged + w)).abs() < 1e-12);
    // Resume: nothing left to ask, and the failed call's spend still counts.
    let (again, _) = run_inproc(&cfg, "sk-x-000").await;
    assert!((again.spend_usd - res.spend_usd).abs() < 1e-12);
}

#[test]
fn sigkill_mid_run_then_resume_asks_no_logged_verdict_again() {
    tls();
    let fake = FakeOpenAi::start();
    fake.set_delay_ms(120);
    let dir = tempfile::tempdir().unwrap();
    let path = live_config(
        dir.path(),
        "kill",
        &fake.base_url,
        "    api_key_env: TOPK_KILL_TEST_KEY\n",
        "  batch_size: 4\n  refit_every: 4\n",
        "  max_comparisons: 40\n",
    );
    let log = dir.path().join("runs/kill/verdicts.jsonl");
    let mut child = std::process::Command::new(bin())
        .current_dir(dir.path())
        .args(["run", path.to_str().unwrap(), "--quiet"])
        .env("TOPK_KILL_TEST_KEY", "sk-kill-test-42")
        .env_remove("RUST_LOG")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    loop {
        let n = std::fs::read_to_string(&log).map(|t| t.lines().count()).unwrap_or(0);
        if n >= 10 {
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(60), "run too slow");
        assert!(child.try_wait().unwrap().is_none(), "child ended before the kill");
        std::thread::sleep(Duration::from_millis(10));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let at_kill = fake.n_requests();
    let (before, _, _) = read_records(&log).unwrap();
    assert!(before.len() >= 10 && before.len() < 40, "{}", before.len());
    let logged: HashSet<(String, String)> = before.iter().map(|r| (r.a.clone(), r.b.clone())).collect();

    let out = std::process::Command::new(bin())
        .current_dir(dir.path())
        .args(["run", path.to_str().unwrap(), "--quiet"])
        .env("TOPK_KILL_TEST_KEY", "sk-kill-test-42")
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let pool = topk_judge::store::pool_file::read_pool(&summeval(), Some(POOL_ID)).unwrap();
    let reqs = fake.requests();
    for q in &reqs[at_kill..] {
        let p = pair_of(&pool, q.answers.as_ref().unwrap());
        assert!(!logged.contains(&p), "{p:?} was logged before the kill and asked again");
    }
    let (after, _, warning) = read_records(&log).unwrap(); // parses, no torn line left
    assert!(warning.is_none(), "{warning:?}");
    assert_eq!(after.len(), 40);
    let keys: HashSet<&str> = after.iter().map(|r| r.key.as_str()).collect();
    assert_eq!(keys.len(), 40, "no verdict stored twice");
    for (i, r) in before.iter().enumerate() {
        assert_eq!(&after[i], r, "logged verdicts are kept as they were");
    }
}

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() { out.extend(files_under(&p)) } else { out.push(p) }
    }
    out
}

/// A judge server that redirects: not followed (a POST could become a GET, or go to another
/// host without its key); the run stops on the first query, naming the status and the target
/// (its credentials and the key in its query redacted) and the setting to change.
#[test]
fn a_redirect_is_not_followed_and_is_named_with_its_target() {
    let key = "sk-redirect-0123456789abcdefXYZ";
    let fake = FakeOpenAi::start();
    let target = format!("http://user:pw@127.0.0.1:9/v1/chat/completions?api_key={key}");
    fake.set_always(Some(Fault::Redirect(target)));
    let dir = tempfile::tempdir().unwrap();
    let path = live_config(
        dir.path(),
        "redir",
        &fake.base_url,
        "    api_key_env: TOPK_REDIRECT_TEST_KEY\n",
        "  batch_size: 1\n",
        "  max_comparisons: 6\n",
    );
    let out = std::process::Command::new(bin())
        .current_dir(dir.path())
        .args(["run", path.to_str().unwrap()])
        .env("TOPK_REDIRECT_TEST_KEY", key)
        .output()
        .unwrap();
    let all = text(&out);
    assert!(!out.status.success(), "{all}");
    assert!(
        all.contains(&format!(
            "{}/chat/completions answered HTTP 307 (a redirect to http://***@127.0.0.1:9/v1/chat/completions?api_key=***)",
            fake.base_url
        )),
        "{all}"
    );
    assert!(all.contains("set judge.openai.base_url to the address it redirects to"), "{all}");
    assert!(!all.contains(key) && !all.contains("user:pw"), "{all}");
    assert!(all.contains("redirects to (after 1 attempt)"), "not retried: {all}");
    assert!(fake.requests().len() <= 4, "stopped as an endpoint-wide fault: {}", fake.requests().len());
}

#[test]
fn api_key_appears_in_no_file_and_no_output() {
    tls();
    let key = format!("sk-leaktest-{}", std::process::id());
    let fake = FakeOpenAi::start();
    // The server echoes the key in an error body and in a reply.
    fake.script([Fault::EchoKeyInError, Fault::Unauthorized, Fault::EchoKeyInReply]);
    let dir = tempfile::tempdir().unwrap();
    let path = live_config(
        dir.path(),
        "leak",
        &fake.base_url,
        "    api_key_env: TOPK_LEAK_TEST_KEY\n    max_retries: 2\n",
        "  batch_size: 1\n  refit_every: 2\n",
        "  max_comparisons: 6\n",
    );
    let out = std::process::Command::new(bin())
        .current_dir(dir.path())
        .args(["run", path.to_str().unwrap()])
        .env("TOPK_LEAK_TEST_KEY", &key)
        .env("RUST_LOG", "debug")
        .output()
        .unwrap();
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    assert!(fake.requests().iter().all(|q| q.auth.as_deref() == Some(&*format!("Bearer {key}"))), "key was sent");
    assert!(!all.contains(&key), "key in output");
    assert!(all.contains("[redacted]"), "the echoed key was redacted where it would have shown: {all}");
    let run = dir.path().join("runs/leak");
    let files = files_under(&run);
    assert!(files.len() >= 4);
    for f in files {
        let bytes = std::fs::read(&f).unwrap();
        assert!(!String::from_utf8_lossy(&bytes).contains(&key), "key in {}", f.display());
    }
    let saved = std::fs::read_to_string(run.join("config.yaml")).unwrap();
    assert!(saved.contains("TOPK_LEAK_TEST_KEY"), "the saved config names the variable");
    let verdicts = std::fs::read_to_string(run.join("verdicts.jsonl")).unwrap();
    assert!(verdicts.contains("[redacted]"), "the echoed key in a reply was redacted: {verdicts}");
    // The key pasted into base_url's path (a provider that takes it there): the judge's name,
    // the endpoint's messages and the dry run show the URL with the key redacted.
    let url = format!("http://127.0.0.1:9/v1/{key}");
    let path = live_config(
        dir.path(),
        "inurl",
        &url,
        "    api_key_env: TOPK_LEAK_TEST_KEY\n    max_retries: 0\n",
        "  batch_size: 1\n",
        "  max_comparisons: 2\n",
    );
    for extra in [&[][..], &["--dry-run"]] {
        let out = std::process::Command::new(bin())
            .current_dir(dir.path())
            .args(["run", path.to_str().unwrap()])
            .args(extra)
            .env("TOPK_LEAK_TEST_KEY", &key)
            .output()
            .unwrap();
        let all = text(&out);
        assert!(!all.contains(&key), "{extra:?}: key in output: {all}");
        assert!(all.contains("127.0.0.1:9/v1/***"), "{extra:?}: {all}");
    }
    for f in files_under(&dir.path().join("runs/inurl")) {
        assert!(!String::from_utf8_lossy(&std::fs::read(&f).unwrap()).contains(&key), "key in {}", f.display());
    }
}

#[test]
fn dry_run_sends_nothing_and_prices_the_budget() {
    tls();
    let fake = FakeOpenAi::start();
    let dir = tempfile::tempdir().unwrap();
    let path = live_config(dir.path(), "dry", &fake.base_url, no_key(), "", "  max_comparisons: 40\n  max_usd: 0.05\n");
    let out = run_bin(dir.path(), &["run", path.to_str().unwrap(), "--dry-run"]);
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    assert_eq!(fake.n_requests(), 0);
    assert!(!dir.path().join("runs/dry").exists(), "a dry run writes nothing");
    assert!(t.contains("first prompt") && t.contains("<<A>>") && t.contains("[system]"), "{t}");
    assert!(t.contains("worst-case cost per query") && t.contains("queries the budget allows"), "{t}");
    // Independent check of the count: 40 comparisons, 238 sendable pairs, and $0.05 at ≈ $0.0044–0.006
    // per worst-case query (≈ 2–3 KB prompts at $1/Mtok, 8 × $2/Mtok out, × 2 asks).
    let cfg = Config::load(&path).unwrap();
    let judge = OpenAiJudge::new(openai_cfg(&cfg), None).unwrap();
    let d = topk_judge::commands::dry_run::dry_run(&cfg, &judge, &Default::default(), 0.0).unwrap();
    let mut w: Vec<f64> = (0..16)
        .flat_map(|a| (0..16).map(move |b| (a, b)))
        // Items with identical texts (M1, M2) are never sent.
        .filter(|&(a, b)| a != b && cfg.pool.items[a].text != cfg.pool.items[b].text)
        .map(|(a, b)| judge.worst_case_usd(&cfg.pool, a, b))
        .collect();
    w.sort_by(|x, y| y.total_cmp(x));
    let mut sum = 0.0;
    let at_least = w.iter().take_while(|c| {
        sum += *c;
        sum <= 0.05
    });
    let at_least = at_least.count().min(40);
    assert_eq!(d.allowed_at_least, at_least);
    assert!(t.contains(&format!("at least {at_least}")) || t.contains(&format!("allows: {at_least}")), "{t}");
    assert_eq!(d.pairs, 238);
}

#[test]
fn config_errors_come_before_any_request() {
    tls();
    let fake = FakeOpenAi::start();
    let dir = tempfile::tempdir().unwrap();
    // No price.
    let p = live_config(dir.path(), "noprice", &fake.base_url, no_key(), "", "  max_comparisons: 4\n");
    let y = std::fs::read_to_string(&p)
        .unwrap()
        .replace("    price: {input_usd_per_mtok: 1.0, output_usd_per_mtok: 2.0}\n", "");
    std::fs::write(&p, y).unwrap();
    let out = run_bin(dir.path(), &["run", p.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(text(&out).contains("judge.openai.price") && text(&out).contains("USD per million"), "{}", text(&out));
    // A price without output.
    let p = live_config(dir.path(), "halfprice", &fake.base_url, no_key(), "", "  max_comparisons: 4\n");
    let y = std::fs::read_to_string(&p).unwrap().replace(", output_usd_per_mtok: 2.0", "");
    std::fs::write(&p, y).unwrap();
    let out = run_bin(dir.path(), &["run", p.to_str().unwrap()]);
    assert!(text(&out).contains("judge.openai.price.output_usd_per_mtok"), "{}", text(&out));
    // Key variable not set.
    let p = live_config(
        dir.path(),
        "nokey",
        &fake.base_url,
        "    api_key_env: TOPK_TEST_SURELY_UNSET_7F2\n",
        "",
        "  max_comparisons: 4\n",
    );
    let out = run_bin(dir.path(), &["run", p.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(text(&out).contains("TOPK_TEST_SURELY_UNSET_7F2") && text(&out).contains("not set"), "{}", text(&out));
    // A key pasted where the variable name belongs.
    let p = live_config(
        dir.path(),
        "pasted",
        &fake.base_url,
        "    api_key_env: sk-abcdefghijklmnop\n",
        "",
        "  max_comparisons: 4\n",
    );
    let out = run_bin(dir.path(), &["run", p.to_str().unwrap()]);
    assert!(text(&out).contains("may be a pasted key"), "{}", text(&out));
    assert!(!text(&out).contains("sk-abcdefghijklmnop"), "{}", text(&out));
    // Keys of every shape pasted there (Groq, Google, hex, an upper-case token) are never echoed,
    // whether or not they pass for a variable name.
    for key in [
        "gsk_9fQ2xLm4Tz8RbV1cKd7WnH3pYs6EaJ0uGo5iFt2Mq",
        "AIzaSyD-3kF9xQ2mL7vB8nR4tY6uW1oP5sA0cZe",
        "0123456789abcdef0123456789abcdef",
        "A1B2C3D4E5F6A7B8C9D0",
    ] {
        let p = live_config(
            dir.path(),
            "pasted2",
            &fake.base_url,
            &format!("    api_key_env: {key}\n"),
            "",
            "  max_comparisons: 4\n",
        );
        let out = run_bin(dir.path(), &["run", p.to_str().unwrap()]);
        assert!(!out.status.success(), "{}", text(&out));
        assert!(text(&out).contains("api_key_env"), "{}", text(&out));
        assert!(!text(&out).contains(key), "{key} echoed: {}", text(&out));
        // The same key given with --set: the echoed argument hides it.
        let good = live_config(dir.path(), "pasted3", &fake.base_url, no_key(), "", "  max_comparisons: 4\n");
        let set = format!("judge.openai.api_key_env={key}");
        let out = run_bin(dir.path(), &["run", good.to_str().unwrap(), "--set", &set]);
        assert!(!out.status.success(), "{}", text(&out));
        assert!(text(&out).contains("--set judge.openai.api_key_env=[redacted]"), "{}", text(&out));
        assert!(!text(&out).contains(key), "{key} echoed: {}", text(&out));
    }
    // Invalid UTF-8 and a lone surrogate inside an item's text: the error names the item.
    let good = std::fs::read_to_string(summeval()).unwrap();
    let mut v: Value = serde_json::from_str(good.lines().next().unwrap()).unwrap();
    let victim = v["items"][3]["id"].as_str().unwrap().to_owned();
    let t3 = v["items"][3]["text"].as_str().unwrap().to_owned();
    let mid = (0..=t3.len() / 2).rev().find(|i| t3.is_char_boundary(*i)).unwrap();
    v["items"][3]["text"] = Value::String(format!("{}\u{FFFD}{}", &t3[..mid], &t3[mid..]));
    let line = serde_json::to_string(&v).unwrap();
    let mut bad = line.clone().into_bytes();
    let pos = bad.windows(3).position(|w| w == "\u{FFFD}".as_bytes()).unwrap();
    bad.splice(pos..pos + 3, [0xC3u8, 0x28]); // an invalid UTF-8 sequence inside item 3's text
    let pool_path = dir.path().join("bad_pool.jsonl");
    std::fs::write(&pool_path, &bad).unwrap();
    let p = live_config(dir.path(), "badutf8", &fake.base_url, no_key(), "", "  max_comparisons: 4\n");
    let y =
        std::fs::read_to_string(&p).unwrap().replace(&summeval().display().to_string(), pool_path.to_str().unwrap());
    std::fs::write(&p, y).unwrap();
    let out = run_bin(dir.path(), &["run", p.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(text(&out).contains(&victim) && text(&out).contains("UTF-8"), "{}", text(&out));
    let surrogate = line.replace('\u{FFFD}', "\\ud800"); // a lone surrogate escape in item 3's text
    std::fs::write(&pool_path, surrogate).unwrap();
    let out = run_bin(dir.path(), &["run", p.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(text(&out).contains(&victim), "{}", text(&out));
    assert_eq!(fake.n_requests(), 0, "no request before the config is valid");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn context_overflow_policies() {
    tls();
    let fake = FakeOpenAi::start();
    let dir = tempfile::tempdir().unwrap();
    // A config of this context and on_context_overflow policy, 8 comparisons.
    let with_context = |ctx: u64, policy: &str| {
        live_config(
            dir.path(),
            &format!("ctx{policy}"),
            &fake.base_url,
            &format!("{}    context_tokens: {ctx}\n    on_context_overflow: {policy}\n", no_key()),
            "",
            "  max_comparisons: 8\n",
        )
    };
    // fail (the default): the config is rejected before anything runs.
    let e = Config::load(&with_context(600, "fail")).unwrap_err().to_string();
    assert!(e.contains("judge.openai.context_tokens") && e.contains("600"), "{e}");
    let needs = |e: &str, before: &str| -> u64 {
        let at = e.find(before).unwrap_or_else(|| panic!("{e}")) + before.len();
        e[at..].split_whitespace().next().unwrap().parse().unwrap()
    };
    let longest = needs(&e, "needs about ");
    let skip = |ctx: u64| with_context(ctx, "skip");
    // skip, with a context no query fits in: refused, naming the shortest query (it stored every
    // query as invalid, sent nothing and spent the budget's comparisons on them).
    let e = Config::load(&skip(600)).unwrap_err().to_string();
    assert!(e.contains("judge.openai.context_tokens: 600 is below what the shortest query of the pool (items "), "{e}");
    assert!(e.contains("so every query would be over it, stored as invalid and none sent"), "{e}");
    // So with the cutting policies, below what a query cut to its least needs (they stored
    // every query invalid, as skip did).
    for (policy, least) in [
        ("truncate_task", "the shortest query of the pool with its task cut to nothing"),
        ("truncate_answers", "the shortest task with both answers cut to nothing"),
    ] {
        let e = Config::load(&with_context(250, policy)).unwrap_err().to_string();
        assert!(e.contains(&format!("judge.openai.context_tokens: 250 is below what {least}")), "{e}");
    }
    let shortest = needs(&e, "needs: about ");
    assert!(shortest < longest, "{shortest} {longest}");
    // skip, with a context some queries fit in: those are sent, the others are stored invalid
    // at no cost.
    let cfg = Config::load(&skip(u64::midpoint(shortest, longest))).unwrap();
    let (res, _) = run_inproc(&cfg, "sk-x-000").await;
    let sent = fake.n_requests();
    assert!(sent > 0 && sent < 8, "{sent}");
    assert_eq!((res.comparisons, res.invalid, res.valid), (8, 8 - sent, sent));
    let over = records(&cfg)
        .iter()
        .filter(|r| r.reply.invalid_reason_text().is_some_and(|t| t.starts_with("context_overflow")))
        .count();
    assert_eq!(over, 8 - sent);
    assert_eq!(res.judge_stats.unwrap().context_overflows, (8 - sent) as u64);
    // truncate_task: the article is cut (same cut for every pair) so every prompt fits.
    let cfg = Config::load(&with_context(700, "truncate_task")).unwrap();
    let (res, judge) = run_inproc(&cfg, "sk-x-000").await;
    assert_eq!(res.valid, 8);
    let reqs = fake.requests()[sent..].to_vec();
    assert_eq!(reqs.len(), 8);
    let tasks: HashSet<String> = reqs
        .iter()
        .map(|q| {
            let c = q.body["messages"][1]["content"].as_str().unwrap();
            c[..c.find("<<A>>").unwrap()].to_owned()
        })
        .collect();
    assert_eq!(tasks.len(), 1, "one shared, truncated task prefix");
    assert!(tasks.iter().next().unwrap().contains(" […]"));
    for q in &reqs {
        let bytes: usize =
            q.body["messages"].as_array().unwrap().iter().map(|m| m["content"].as_str().unwrap().len()).sum();
        assert!((bytes as f64 / 4.0).ceil() as u64 + 80 + 8 <= 700, "estimate fits the context");
    }
    drop(judge);
    // A server-side context error (llama.cpp body, integer code) is not retried; skip stores it.
    fake.script([Fault::ContextOverflow]);
    let p = live_config(
        dir.path(),
        "ctxserver",
        &fake.base_url,
        &format!("{}    on_context_overflow: skip\n    max_retries: 3\n", no_key()),
        "  batch_size: 1\n",
        "  max_comparisons: 2\n",
    );
    let cfg = Config::load(&p).unwrap();
    let before = fake.n_requests();
    let (res, _) = run_inproc(&cfg, "sk-x-000").await;
    assert_eq!(fake.n_requests() - before, 2, "the context error was asked once, not retried");
    assert_eq!((res.valid, res.invalid), (1, 1));
    let r = records(&cfg).into_iter().find(|r| r.reply.y.is_none()).unwrap();
    assert!(r.reply.invalid_reason_text().unwrap().contains("HTTP 400"), "the status survived the llama.cpp body");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn soft_verdicts_from_first_token_logprobs() {
    tls();
    let fake =
        FakeOpenAi::start_with(Box::new(|_, _| "A".to_string()), Box::new(crate::common::fake_openai::fixed_usage));
    fake.set_top_logprobs(vec![("A".into(), 0.7f64.ln()), ("B".into(), 0.2f64.ln()), ("C".into(), 0.05f64.ln())]);
    let dir = tempfile::tempdir().unwrap();
    let p = live_config(
        dir.path(),
        "soft",
        &fake.base_url,
        &format!("{}    logprobs: true\n    top_logprobs: 3\n", no_key()),
        "",
        "  max_comparisons: 4\n",
    );
    let cfg = Config::load(&p).unwrap();
    let (res, _) = run_inproc(&cfg, "sk-x-000").await;
    assert_eq!(res.valid, 4);
    for r in records(&cfg) {
        assert!((r.reply.y.unwrap() - 0.7 / 0.9).abs() < 1e-9, "{:?}", r.reply.y);
    }
    for q in fake.requests() {
        assert_eq!(q.body["logprobs"], true);
        assert_eq!(q.body["top_logprobs"], 3);
    }
    assert_eq!(res.judge_stats.unwrap().soft_verdicts, 4);
    // Editing the prompt changes every cache key, so no stale verdict is reused.
    let j1 = OpenAiJudge::new(openai_cfg(&cfg), None).unwrap();
    write(dir.path(), "prompts/test.j2", &TEMPLATE.replace("Which answer is better?", "Which answer is best?"));
    let j2 = OpenAiJudge::new(openai_cfg(&cfg), None).unwrap();
    assert_ne!(j1.cache_key(&cfg.pool, 0, 1), j2.cache_key(&cfg.pool, 0, 1));
    assert_ne!(j1.cache_key(&cfg.pool, 0, 1), j1.cache_key(&cfg.pool, 1, 0));
}

/// Opt-in: a 16-item SummEval pool with a budget of 40 verdicts against a real local LLM.
///
/// ```sh
/// llama-server -m MODEL.gguf --port 8088 &   # or any OpenAI-compatible server
/// LLM_BASE_URL=http://127.0.0.1:8088/v1 cargo test --test integration live::real_llm -- --ignored --nocapture
/// ```
#[test]
#[ignore = "needs a local LLM server: see docs/live.md"]
fn real_llm_summeval_pool_budget_40() {
    tls();
    let base =
        std::env::var("LLM_BASE_URL").expect("LLM_BASE_URL: the server's /v1 address, e.g. http://127.0.0.1:8088/v1");
    let model = std::env::var("LLM_MODEL_NAME").unwrap_or_else(|_| "local".into());
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("prompts")).unwrap();
    std::fs::copy(root().join("prompts/pairwise.j2"), dir.path().join("prompts/pairwise.j2")).unwrap();
    let yaml = format!(
        "name: real\nout_dir: runs\npool:\n  file: {pool}\n  id: {POOL_ID}\nk: 3\njudge:\n  openai:\n    base_url: {base}\n    model: {model}\n    api_key_env: LOCAL_LLM_API_KEY\n    api_key_required: false\n    prompt: prompts/pairwise.j2\n    max_tokens: 4\n    temperature: 0\n    logprobs: true\n    top_logprobs: 5\n    timeout_s: 300\n    context_tokens: 4096\n    on_context_overflow: skip\n    price: {{input_usd_per_mtok: 0, output_usd_per_mtok: 0}}\nacquisition:\n  seed: 7\n  batch_size: 2\n  refit_every: 8\n  mc_draws: 500\nbudget:\n  max_comparisons: 40\n",
        pool = summeval().display()
    );
    let p = write(dir.path(), "real.yaml", &yaml);
    let t0 = Instant::now();
    let out = std::process::Command::new(bin())
        .current_dir(dir.path())
        .args(["run", p.to_str().unwrap(), "--quiet"])
        .output()
        .unwrap();
    let wall = t0.elapsed();
    println!("{}", text(&out));
    assert!(out.status.success());
    let cfg = Config::load(&p).unwrap();
    let recs = records(&cfg);
    assert_eq!(recs.len(), 40);
    assert!(recs.iter().all(|r| r.reply.usage.prompt_tokens > 0), "usage logged");
    let valid: Vec<&VerdictRecord> = recs.iter().filter(|r| r.reply.y.is_some()).collect();
    assert!(!valid.is_empty(), "verdicts parsed");
    let lat: Vec<u64> = recs.iter().map(|r| r.reply.latency_ms).collect();
    let mut sorted = lat.clone();
    sorted.sort_unstable();
    let by_pair: HashMap<(String, String), f64> =
        valid.iter().map(|r| ((r.a.clone(), r.b.clone()), r.reply.y.unwrap())).collect();
    let (mut both, mut flips, mut a_wins) = (0, 0, 0);
    for ((a, b), y) in &by_pair {
        if *y > 0.5 {
            a_wins += 1;
        }
        if a < b
            && let Some(y2) = by_pair.get(&(b.clone(), a.clone()))
        {
            both += 1;
            // A position flip: the same slot wins in both orders (hard verdicts at ½).
            if (*y > 0.5) == (*y2 > 0.5) {
                flips += 1;
            }
        }
    }
    // Order-averaged verdicts (P(a beats b) = (y_ab + 1 − y_ba) / 2) against gold quality.
    let gold = |id: &str| cfg.pool.items[cfg.pool.item_index(id).unwrap()].quality.unwrap();
    let (mut agree, mut decided) = (0, 0);
    for ((a, b), y) in &by_pair {
        if let Some(y2) = by_pair.get(&(b.clone(), a.clone()))
            && a < b
            && gold(a) != gold(b)
        {
            let p = (y + 1.0 - y2) / 2.0;
            if p != 0.5 {
                decided += 1;
                if (p > 0.5) == (gold(a) > gold(b)) {
                    agree += 1;
                }
            }
        }
    }
    let mean_y = valid.iter().map(|r| r.reply.y.unwrap()).sum::<f64>() / valid.len() as f64;
    println!(
        "REAL LLM: mean P(first shown wins) {mean_y:.3}; order-averaged verdicts agree with gold on {agree}/{decided} pairs"
    );
    let prompt_tokens: u64 = recs.iter().map(|r| r.reply.usage.prompt_tokens).sum();
    let cached: u64 = recs.iter().map(|r| r.reply.usage.cached_tokens).sum();
    println!(
        "REAL LLM: {} verdicts in {:.1} s; latency per verdict mean {:.2} s, median {:.2} s, max {:.2} s; invalid {}/{} = {:.3}; \
         slot A preferred in {}/{} valid verdicts; position flips {}/{} pairs asked in both orders = {:.2}; prompt tokens {} ({} cached)",
        recs.len(),
        wall.as_secs_f64(),
        lat.iter().sum::<u64>() as f64 / lat.len() as f64 / 1000.0,
        sorted[sorted.len() / 2] as f64 / 1000.0,
        sorted[sorted.len() - 1] as f64 / 1000.0,
        recs.len() - valid.len(),
        recs.len(),
        (recs.len() - valid.len()) as f64 / recs.len() as f64,
        a_wins,
        valid.len(),
        flips,
        both,
        if both > 0 { flips as f64 / both as f64 } else { f64::NAN },
        prompt_tokens,
        cached
    );
    let _ = answers_of; // shared helper used by the fake-server tests
}

/// Run `topk-judge run CONFIG --dry-run` with the given environment.
fn dry_run_bin(cwd: &Path, config: &Path, env: &[(&str, &str)]) -> std::process::Output {
    let mut c = std::process::Command::new(bin());
    c.current_dir(cwd).args(["run", config.to_str().unwrap(), "--dry-run"]).env_remove("RUST_LOG");
    c.env_remove("OPENAI_API_KEY").env_remove("OPENROUTER_API_KEY");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

#[test]
fn shipped_configs_validate_and_dry_run() {
    let dir = tempfile::tempdir().unwrap();
    let keys = [("OPENAI_API_KEY", "sk-dummy-openai-000"), ("OPENROUTER_API_KEY", "sk-or-dummy-000")];
    for name in ["openai.yaml", "openrouter.yaml", "local.yaml"] {
        let out = dry_run_bin(dir.path(), &root().join("configs").join(name), &keys);
        let t = text(&out);
        assert!(out.status.success(), "{name}: {t}");
        assert!(
            t.contains("first prompt") && t.contains("Answer B:") && t.contains("queries the budget allows"),
            "{name}: {t}"
        );
        assert!(!t.contains("sk-dummy") && !t.contains("sk-or-dummy"), "{name}: key in output");
    }
    // The frontier judge of openai.yaml, swapped in as its comment says.
    let src = std::fs::read_to_string(root().join("configs/openai.yaml")).unwrap();
    let mut out_lines = Vec::new();
    let mut state = 0; // 0 before, 1 in the cheap block, 2 in the frontier block, 3 after
    for l in src.lines() {
        if l.starts_with("  openai:") {
            state = 1;
            continue;
        }
        if state == 1 && l.starts_with("  # openai:") {
            state = 2;
        }
        match state {
            1 => continue,
            2 if l.starts_with("  #") => out_lines.push(format!("  {}", &l[4..])),
            2 => {
                state = 3;
                out_lines.push(l.to_owned());
            }
            _ => out_lines.push(l.to_owned()),
        }
    }
    let frontier = out_lines
        .join("\n")
        .replace("../data/", &format!("{}/data/", root().display()))
        .replace("../prompts/", &format!("{}/prompts/", root().display()))
        .replace("out_dir: ../runs", "out_dir: runs");
    assert!(frontier.contains("model: gpt-5.5") && !frontier.contains("gpt-5.4-mini"), "{frontier}");
    let p = write(dir.path(), "frontier.yaml", &frontier);
    let out = dry_run_bin(dir.path(), &p, &keys);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("openai gpt-5.5 @ https://api.openai.com/v1"), "{}", text(&out));
    // Without the key variable the dry run still prices the run (it sends nothing) and warns,
    // naming the variable; a real run fails before anything is sent.
    let out = dry_run_bin(dir.path(), &p, &[]);
    let t = text(&out);
    assert!(out.status.success() && t.contains("queries the budget allows"), "{t}");
    assert!(t.contains("warning: a real run would stop here") && t.contains("OPENAI_API_KEY"), "{t}");
    let mut c = std::process::Command::new(bin());
    c.current_dir(dir.path()).args(["run", p.to_str().unwrap(), "--quiet"]).env_remove("OPENAI_API_KEY");
    let out = c.output().unwrap();
    assert!(!out.status.success() && text(&out).contains("OPENAI_API_KEY"), "{}", text(&out));
    assert!(!dir.path().join("runs").exists() || std::fs::read_dir(dir.path().join("runs")).unwrap().count() == 0);
}

fn openai_yaml(base_url: &str, prompt: &str, budget: &str) -> String {
    format!(
        "name: live\nout_dir: runs\npool:\n  file: {pool}\n  id: {POOL_ID}\nk: 3\njudge:\n  openai:\n    base_url: {base_url}\n    model: fake-judge\n    fingerprint:\n      queries: 0\n    prompt: {prompt}\n    max_tokens: 8\n    api_key_env: TOPK_JUDGE_TEST_UNSET_KEY_VAR\n    api_key_required: false\n    price: {{input_usd_per_mtok: 1.0, output_usd_per_mtok: 2.0}}\n{budget}",
        pool = summeval().display()
    )
}

#[test]
fn a_live_config_needs_a_budget_or_says_unlimited() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "cfg/prompt.j2", crate::common::fake_openai::TEMPLATE);
    let none = write(dir.path(), "cfg/none.yaml", &openai_yaml("http://127.0.0.1:9/v1", "prompt.j2", ""));
    let out = run_bin(dir.path(), &["run", none.to_str().unwrap(), "--dry-run"]);
    assert!(!out.status.success());
    assert!(text(&out).contains("budget: a live judge needs a budget: set budget.max_comparisons and/or budget.max_usd, or write `budget: unlimited`"), "{}", text(&out));
    let unlimited =
        write(dir.path(), "cfg/unl.yaml", &openai_yaml("http://127.0.0.1:9/v1", "prompt.j2", "budget: unlimited\n"));
    let out = run_bin(dir.path(), &["run", unlimited.to_str().unwrap(), "--dry-run"]);
    assert!(out.status.success(), "{}", text(&out));
    // The dry run says the budget is unlimited, and does not claim max_comparisons bounds it;
    // the pairs it counts are those a run sends (M1/M2 have identical text: 240 − 2).
    let s = stdout(&out);
    assert!(s.contains("16 items, 16 bases, 238 ordered pairs; 0 verdicts already stored"), "{s}");
    assert!(
        s.contains("budget: unlimited\nqueries the budget allows: all 238 ordered pairs not yet judged (no limit)\n"),
        "{s}"
    );
    assert!(
        s.contains("note: no budget is set: only the pool's unjudged pairs bound the spend (the worst case above)"),
        "{s}"
    );
    assert!(!s.contains("only max_comparisons bounds the spend"), "{s}");
    assert!(!s.contains("the budget allows no query"), "{s}");
    // A budget below the cheapest query's worst case: the dry run warns that nothing would be sent.
    let out =
        run_bin(dir.path(), &["run", unlimited.to_str().unwrap(), "--dry-run", "--set", "budget={max_usd: 0.000001}"]);
    assert!(out.status.success(), "{}", text(&out));
    let s = stdout(&out);
    assert!(s.contains("queries the budget allows: 0\n"), "{s}");
    assert!(s.contains("warning: the budget allows no query (the cheapest query's worst case is $"), "{s}");
    assert!(s.contains("a real run would send nothing; raise budget.max_usd (--max-usd) to go on"), "{s}");
    // Nothing can be sent, so nothing can be spent (it said the sum of worst cases up to max_usd).
    assert!(s.contains("worst-case cost of this run: $0.000000\n"), "{s}");
    let typo =
        write(dir.path(), "cfg/typo.yaml", &openai_yaml("http://127.0.0.1:9/v1", "prompt.j2", "budget: unlimted\n"));
    let out = run_bin(dir.path(), &["run", typo.to_str().unwrap(), "--dry-run"]);
    assert!(!out.status.success());
    assert!(text(&out).contains("expected `unlimited` or a mapping"), "{}", text(&out));
}

#[test]
fn a_live_run_folder_keeps_its_prompt_template() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "cfg/prompts/judge.j2", crate::common::fake_openai::TEMPLATE);
    let yaml = openai_yaml("http://127.0.0.1:9/v1", "prompts/judge.j2", "budget: {max_comparisons: 0}\n");
    let cfg = write(dir.path(), "cfg/live.yaml", &yaml);
    let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", text(&out));
    let run = dir.path().join("cfg/runs/live");
    assert_eq!(std::fs::read_to_string(run.join("prompt/judge.j2")).unwrap(), crate::common::fake_openai::TEMPLATE);
    assert!(std::fs::read_to_string(run.join("config.yaml")).unwrap().contains("prompt: prompt/judge.j2"));
    // The folder is read back from elsewhere, without the API key.
    let cwd = tempfile::tempdir().unwrap();
    let out = run_bin(cwd.path(), &["fit", run.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
}

/// The dry run's count of queries is exact only when a count binds (max_comparisons, the open
/// pairs) or none fits; when money binds it is a floor at worst-case cost, also when every
/// query's worst case is the same (it printed a bare 2, and the run then sent 16).
#[test]
fn the_dry_runs_count_is_a_floor_when_money_binds() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "cfg/prompt.j2", crate::common::fake_openai::TEMPLATE);
    let items: Vec<String> = ["aaaa", "bbbb", "cccc", "dddd"]
        .iter()
        .map(|t| format!("{{\"id\": \"{}\", \"text\": \"{t} {t}\"}}", &t[..1]))
        .collect();
    let pool = write(dir.path(), "eq.jsonl", &format!("{{\"pool_id\": \"eq\", \"items\": [{}]}}\n", items.join(", ")));
    let yaml = openai_yaml("http://127.0.0.1:9/v1", "prompt.j2", "budget:\n  max_usd: 1\n")
        .replace(&summeval().display().to_string(), &pool.display().to_string())
        .replace(POOL_ID, "eq");
    let cfg = write(dir.path(), "cfg/eq.yaml", &yaml);
    let c = cfg.to_str().unwrap();
    let s = stdout(&run_bin(dir.path(), &["run", c, "--dry-run"]));
    let per = s.lines().find_map(|l| l.strip_prefix("worst-case cost per query: $")).unwrap_or_else(|| panic!("{s}"));
    let (lo, rest) = per.split_once(" – $").unwrap();
    assert_eq!(lo, rest.split_whitespace().next().unwrap(), "every query costs the same: {s}");
    assert!(s.contains("queries the budget allows: 12\n"), "all 12 ordered pairs fit in $1: {s}");
    let two = format!("{}", 2.5 * lo.parse::<f64>().unwrap());
    let s = stdout(&run_bin(dir.path(), &["run", c, "--dry-run", "--max-usd", &two]));
    assert!(
        s.contains("queries the budget allows: at least 2 at worst-case cost (more when replies cost less than their worst case)\n"),
        "{s}"
    );
    let s = stdout(&run_bin(dir.path(), &["run", c, "--dry-run", "--set", "budget.max_comparisons=2"]));
    assert!(s.contains("queries the budget allows: 2\n"), "{s}");
}

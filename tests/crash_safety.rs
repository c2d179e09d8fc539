//! Crash safety: paid work is never lost and the budget holds, proved on the real binary against the
//! fake OpenAI-compatible server, with the server's own request log as the bill:
//! - SIGKILL at precise points (the server holds replies, the test stops the process with
//!   SIGSTOP so a billed reply is sent but never read) with 1 and 8 requests in flight;
//! - Ctrl-C with requests in flight, a second Ctrl-C, the grace period running out;
//! - two processes on one run folder, and a verdict log holding duplicate records;
//! - `extra_body` trying to lift `max_tokens` past what the budget reserves.
//!
//! In each: the server's billed count ≤ the requests the run folder books (verdicts + paid
//! failures + possibly billed), no verdict key is counted twice, spend never passes `max_usd`,
//! and the resumed run's numbers equal the server's.

use crate::common::fake_openai::{FakeOpenAi, Fault, TEMPLATE, longer_wins};
use crate::common::*;
use serde_json::Value;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};
use topk_judge::judge::openai::prompt::{BASE_OVERHEAD_TOKENS, PER_MESSAGE_OVERHEAD_TOKENS};

const PRICE_IN: f64 = 1.0; // USD per million prompt tokens
const PRICE_OUT: f64 = 2.0; // USD per million completion tokens

/// What the fake server bills for one request: exactly the reservation bound of one attempt
/// (prompt bytes + chat-template overhead, and the `max_tokens` the request carries), so the
/// budget has no slack to hide an unbooked request in.
pub(crate) fn usage_of(body: &Value) -> (u64, u64) {
    let msgs = body["messages"].as_array().unwrap();
    let bytes: usize = msgs.iter().map(|m| m["content"].as_str().unwrap().len()).sum();
    let prompt = bytes as u64 + BASE_OVERHEAD_TOKENS + PER_MESSAGE_OVERHEAD_TOKENS * msgs.len() as u64;
    (prompt, body["max_tokens"].as_u64().unwrap())
}

pub(crate) fn cost_of(body: &Value) -> f64 {
    let (p, c) = usage_of(body);
    (p as f64 * PRICE_IN + c as f64 * PRICE_OUT) / 1e6
}

pub(crate) fn fake() -> FakeOpenAi {
    FakeOpenAi::start_with(
        Box::new(longer_wins),
        Box::new(|b: &Value| {
            let (p, c) = usage_of(b);
            Some(serde_json::json!({"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c}))
        }),
    )
}

/// The server's bill: requests received (a provider may bill any request it received) and their
/// total cost.
pub(crate) fn server_bill(fake: &FakeOpenAi) -> (usize, f64) {
    let reqs = fake.requests();
    (reqs.len(), reqs.iter().map(|q| cost_of(&q.body)).sum())
}

/// 8 items of the shipped SummEval pool (distinct texts) as a pool file in `dir`.
pub(crate) fn pool8(dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string(summeval()).unwrap();
    let line = text.lines().find(|l| l.contains(POOL_ID)).unwrap();
    let mut v: Value = serde_json::from_str(line).unwrap();
    let mut seen = HashSet::new();
    let items: Vec<Value> =
        v["items"].as_array().unwrap().iter().filter(|i| seen.insert(i["text"].to_string())).take(8).cloned().collect();
    assert_eq!(items.len(), 8);
    v["items"] = Value::Array(items);
    write(dir, "pool8.jsonl", &(v.to_string() + "\n"))
}

/// A live config on the 8-item pool; `acq`, `budget` and `top` are YAML lines.
pub(crate) fn config(dir: &Path, name: &str, fake: &FakeOpenAi, acq: &str, budget: &str, top: &str) -> PathBuf {
    write(dir, "prompts/test.j2", TEMPLATE);
    let pool = pool8(dir);
    let yaml = format!(
        "name: {name}\nout_dir: runs\n{top}pool:\n  file: {pool}\nk: 2\njudge:\n  openai:\n    base_url: {url}\n    model: fake-judge\n    fingerprint:\n      queries: 0\n    api_key_env: TOPK_MONEY_TEST_UNSET_KEY\n    api_key_required: false\n    prompt: prompts/test.j2\n    max_tokens: 8\n    max_invalid_retries: 0\n    timeout_s: 60\n    backoff_min_s: 0.005\n    backoff_max_s: 0.02\n    price: {{input_usd_per_mtok: {PRICE_IN}, output_usd_per_mtok: {PRICE_OUT}}}\nacquisition:\n  seed: 5\n  mc_draws: 200\n{acq}budget:\n{budget}",
        pool = pool.display(),
        url = fake.base_url
    );
    write(dir, &format!("{name}.yaml"), &yaml)
}

pub(crate) fn start(dir: &Path, cfg: &Path) -> Child {
    Command::new(bin())
        .current_dir(dir)
        .args(["run", cfg.to_str().unwrap(), "--quiet"])
        .env_remove("RUST_LOG")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

pub(crate) fn run_to_end(dir: &Path, cfg: &Path) -> Output {
    start(dir, cfg).wait_with_output().unwrap()
}

pub(crate) fn signal(child: &Child, sig: &str) {
    let ok = Command::new("kill").args([sig, &child.id().to_string()]).status().unwrap();
    assert!(ok.success(), "kill {sig}");
}

pub(crate) fn wait_until(what: &str, timeout_s: u64, mut cond: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !cond() {
        assert!(t0.elapsed() < Duration::from_secs(timeout_s), "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// How many whole lines (ended by '\n') the file has now; a line still being written is not counted.
pub(crate) fn complete_lines(path: &Path) -> usize {
    std::fs::read(path).map(|t| t.iter().filter(|&&b| b == b'\n').count()).unwrap_or(0)
}

pub(crate) fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .map(|t| t.lines().filter(|l| !l.trim().is_empty()).map(|l| serde_json::from_str(l).unwrap()).collect())
        .unwrap_or_default()
}

/// What the run folder books, read from its files here (not through the library).
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Booked {
    pub(crate) verdicts: usize,
    pub(crate) failed: usize,
    pub(crate) possibly_billed: usize,
    pub(crate) open_intents: usize,
    pub(crate) usd: f64,
}

impl Booked {
    pub(crate) fn requests(&self) -> usize {
        self.verdicts + self.failed + self.possibly_billed
    }
}

pub(crate) fn booked(run: &Path) -> Booked {
    let verdicts = lines(&run.join("verdicts.jsonl"));
    let keys: HashSet<&str> = verdicts.iter().map(|r| r["key"].as_str().unwrap()).collect();
    assert_eq!(keys.len(), verdicts.len(), "no verdict key is stored twice");
    let failed: Vec<Value> =
        lines(&run.join("failed.jsonl")).into_iter().filter(|f| f["cost_usd"].as_f64().unwrap() > 0.0).collect();
    let intents = lines(&run.join("intents.jsonl"));
    let pb: Vec<&Value> = intents.iter().filter(|l| l["possibly_billed"] == true).collect();
    let opened: HashSet<u64> = intents.iter().filter_map(|l| l["intent"].as_u64()).collect();
    let mut closed: HashSet<u64> = intents.iter().filter_map(|l| l["closed"].as_u64()).collect();
    closed.extend(verdicts.iter().chain(&failed).filter_map(|r| r["intent"].as_u64()));
    let usd = verdicts.iter().chain(&failed).chain(pb.iter().copied()).map(|r| r["cost_usd"].as_f64().unwrap()).sum();
    Booked {
        verdicts: verdicts.len(),
        failed: failed.len(),
        possibly_billed: pb.len(),
        open_intents: opened.difference(&closed).count(),
        usd,
    }
}

pub(crate) fn result_json(run: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(run.join("result.json")).unwrap()).unwrap()
}

/// The invariants of every test, after a run that ended on its own: nothing the server billed is
/// missing from the books, every intent is closed, spend within `max_usd`, and result.json agrees
/// with the files. `exact`: every open intent had reached the server, so the books equal the bill.
pub(crate) fn check_books(fake: &FakeOpenAi, run: &Path, max_usd: Option<f64>, exact: bool) -> Booked {
    let (n, usd) = server_bill(fake);
    let b = booked(run);
    println!("{}: server billed {n} requests, ${usd:.6}; books {b:?}; max_usd {max_usd:?}", run.display());
    assert_eq!(b.open_intents, 0, "{b:?}");
    assert!(n <= b.requests(), "server billed {n} requests, the books hold {b:?}");
    assert!(usd <= b.usd + 1e-12, "server billed ${usd}, the books ${}", b.usd);
    if let Some(max) = max_usd {
        assert!(b.usd <= max + 1e-12, "booked ${} > max_usd {max}", b.usd);
        assert!(usd <= max + 1e-12, "server billed ${usd} > max_usd {max}");
    }
    if exact {
        assert_eq!(n, b.requests(), "{b:?}");
        assert!((usd - b.usd).abs() < 1e-12, "server ${usd}, books ${}", b.usd);
    }
    let r = result_json(run);
    assert_eq!(r["comparisons"].as_u64().unwrap() as usize, b.verdicts);
    assert_eq!(r["possibly_billed"].as_u64().unwrap() as usize, b.possibly_billed);
    assert!((r["spend_usd"].as_f64().unwrap() - b.usd).abs() < 1e-12, "{} vs {}", r["spend_usd"], b.usd);
    b
}

/// Worst case of one query on the 8-item pool: (mean, max) over ordered pairs.
pub(crate) fn worst_cases(cfg: &Path) -> (f64, f64) {
    let c = topk_judge::config::run::Config::load(cfg).unwrap();
    let judge = topk_judge::config::judge::make_judge(c.raw.judge()).unwrap();
    let n = c.pool.n_items();
    let w: Vec<f64> = (0..n)
        .flat_map(|a| (0..n).map(move |b| (a, b)))
        .filter(|(a, b)| a != b)
        .map(|(a, b)| judge.worst_case_usd(&c.pool, a, b))
        .collect();
    (w.iter().sum::<f64>() / w.len() as f64, w.iter().cloned().fold(0.0, f64::max))
}

#[test]
fn sigkill_after_the_13th_paid_reply_books_it_and_resumes_to_the_servers_numbers() {
    // The case: 8 items, max_comparisons 20, batch_size 1; the server sends its 13th
    // billed reply and the process dies before it can write it.
    let fake = fake();
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), "kill1", &fake, "  batch_size: 1\n", "  max_comparisons: 20\n", "");
    let run = dir.path().join("runs/kill1");
    fake.hold([13]);
    let mut child = start(dir.path(), &cfg);
    // The 12th reply reaches the log before the kill: the request after it can be sent while the
    // driver is still writing it.
    wait_until("the 13th request and 12 verdicts", 60, || {
        fake.n_held() == 1 && complete_lines(&run.join("verdicts.jsonl")) == 12
    });
    signal(&child, "-STOP"); // the process can no longer read the reply ...
    fake.release(1); // ... which the server now sends (billed)
    wait_until("the 13th reply", 10, || fake.n_replied() == 13);
    std::thread::sleep(Duration::from_millis(150));
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let before = booked(&run);
    assert_eq!((before.verdicts, before.open_intents, before.possibly_billed), (12, 1, 0), "{before:?}");
    assert_eq!(server_bill(&fake).0, 13);

    let out = run_to_end(dir.path(), &cfg);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("possibly billed"), "{}", text(&out));
    let b = check_books(&fake, &run, None, true);
    assert_eq!((b.verdicts, b.possibly_billed, b.failed), (20, 1, 0));
    assert_eq!(server_bill(&fake).0, 21, "20 verdicts + the lost reply");
    let r = result_json(&run);
    assert_eq!(r["stop_reason"], "max_comparisons");
    assert!((r["spend_usd"].as_f64().unwrap() - server_bill(&fake).1).abs() < 1e-12, "spend = what the server billed");
    assert!(text(&out).contains("1 possibly billed"), "{}", text(&out));
}

/// One kill point with 8 in flight. `release`: how many held replies the server sends while the
/// process is stopped (`None`: no hold, kill once `at` verdicts are logged).
fn kill_with_8_in_flight(name: &str, release: Option<usize>, at: usize) {
    let fake = fake();
    let dir = tempfile::tempdir().unwrap();
    let probe = config(dir.path(), name, &fake, "  batch_size: 8\n", "  max_comparisons: 1\n", "");
    let (mean, max_w) = worst_cases(&probe);
    let max_usd = 20.5 * mean;
    let cfg = config(
        dir.path(),
        name,
        &fake,
        "  batch_size: 8\n  refit_every: 8\n",
        &format!("  max_comparisons: 40\n  max_usd: {max_usd}\n"),
        "",
    );
    let run = dir.path().join(format!("runs/{name}"));
    let mut child = match release {
        Some(k) => {
            fake.hold(9..=16); // the second round: 8 requests in flight
            let child = start(dir.path(), &cfg);
            wait_until("8 requests in flight and 8 verdicts", 60, || {
                fake.n_held() == 8 && complete_lines(&run.join("verdicts.jsonl")) == 8
            });
            if k > 0 {
                signal(&child, "-STOP");
                fake.release(k);
                wait_until("the released replies", 10, || fake.n_replied() == 8 + k);
                std::thread::sleep(Duration::from_millis(150));
            }
            child
        }
        None => {
            let child = start(dir.path(), &cfg);
            wait_until("verdicts", 60, || lines(&run.join("verdicts.jsonl")).len() >= at);
            child
        }
    };
    child.kill().unwrap();
    child.wait().unwrap();
    fake.release_all();
    let before = booked(&run);
    let (n_before, _) = server_bill(&fake);
    assert!(n_before <= before.verdicts + before.open_intents, "{n_before} billed, {before:?}");
    if release.is_some() {
        assert_eq!((before.verdicts, before.open_intents), (8, 8), "{before:?}");
        assert_eq!(n_before, 16);
    }

    let out = run_to_end(dir.path(), &cfg);
    assert!(out.status.success(), "{}", text(&out));
    let b = check_books(&fake, &run, Some(max_usd), release.is_some());
    let r = result_json(&run);
    assert_eq!(r["stop_reason"], "max_usd", "{}", text(&out));
    if release.is_some() {
        assert_eq!(b.possibly_billed, 8, "{b:?}");
        assert!(max_usd - b.usd < max_w, "stopped only when a worst case no longer fit: {} of {max_usd}", b.usd);
    }
    // Nothing is asked twice unless its first reply was lost: keys on the server beyond the
    // possibly billed ones are unique.
    let (n, _) = server_bill(&fake);
    let distinct: HashSet<String> = fake.requests().iter().map(|q| q.body["messages"].to_string()).collect();
    assert!(n - distinct.len() <= b.possibly_billed, "{n} requests, {} distinct", distinct.len());
}

#[test]
fn sigkill_with_8_in_flight_none_answered() {
    kill_with_8_in_flight("kill8a", Some(0), 0);
}

#[test]
fn sigkill_with_8_in_flight_5_answered_unread() {
    kill_with_8_in_flight("kill8b", Some(5), 0);
}

#[test]
fn sigkill_with_8_in_flight_at_a_free_point() {
    kill_with_8_in_flight("kill8c", None, 11);
}

#[test]
fn sigkill_with_1_in_flight_before_its_reply_and_max_usd_binding() {
    let fake = fake();
    let dir = tempfile::tempdir().unwrap();
    let probe = config(dir.path(), "kill1b", &fake, "  batch_size: 1\n", "  max_comparisons: 1\n", "");
    let (mean, max_w) = worst_cases(&probe);
    let max_usd = 15.5 * mean;
    let budget = format!("  max_comparisons: 40\n  max_usd: {max_usd}\n");
    let cfg = config(dir.path(), "kill1b", &fake, "  batch_size: 1\n", &budget, "");
    let run = dir.path().join("runs/kill1b");
    fake.hold([7]);
    let mut child = start(dir.path(), &cfg);
    wait_until("the 7th request and 6 verdicts", 60, || {
        fake.n_held() == 1 && complete_lines(&run.join("verdicts.jsonl")) == 6
    });
    child.kill().unwrap();
    child.wait().unwrap();
    fake.release_all();
    let before = booked(&run);
    assert_eq!((before.verdicts, before.open_intents), (6, 1), "{before:?}");
    let out = run_to_end(dir.path(), &cfg);
    assert!(out.status.success(), "{}", text(&out));
    let b = check_books(&fake, &run, Some(max_usd), true);
    assert_eq!(b.possibly_billed, 1);
    assert_eq!(result_json(&run)["stop_reason"], "max_usd", "{}", text(&out));
    let (_, billed_usd) = server_bill(&fake);
    assert!(max_usd - billed_usd < max_w, "stopped only when a worst case no longer fit: {billed_usd} of {max_usd}");
}

#[test]
fn ctrl_c_waits_for_requests_in_flight_stores_them_and_resumes() {
    ctrl_c_waits_for_requests_in_flight(false);
}

/// One Ctrl-C delivered twice in quick succession, as GNU `timeout -s INT` does (to the process,
/// then to its group), is one Ctrl-C: it waits for the requests in flight (hunt 58: it quit at
/// once, and their paid replies were asked again on resume).
#[test]
fn one_ctrl_c_delivered_twice_at_once_still_waits_for_requests_in_flight() {
    ctrl_c_waits_for_requests_in_flight(true);
}

fn ctrl_c_waits_for_requests_in_flight(twice: bool) {
    let fake = fake();
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), "intr", &fake, "  batch_size: 4\n  refit_every: 4\n", "  max_comparisons: 12\n", "");
    let run = dir.path().join("runs/intr");
    fake.hold(5..=8);
    let mut child = start(dir.path(), &cfg);
    wait_until("4 requests in flight", 60, || fake.n_held() == 4);
    if twice {
        // The second 50 ms after the first: late enough that the first has been taken (two at
        // once are one to the signal handler), well within the window.
        signal(&child, "-INT");
        std::thread::sleep(Duration::from_millis(50));
        signal(&child, "-INT");
    } else {
        signal(&child, "-INT");
    }
    std::thread::sleep(Duration::from_millis(400));
    assert!(child.try_wait().unwrap().is_none(), "the first Ctrl-C waits for the requests in flight");
    fake.release_all();
    let t0 = Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(t0.elapsed() < Duration::from_secs(20));
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(130), "{stdout}{stderr}");
    assert!(stderr.contains("waiting up to 30 s for the 4 in flight"), "the grace period is shown: {stderr}");
    assert!(stdout.contains("stopped: interrupted; 8 comparisons"), "{stdout}");
    assert!(stdout.contains(&format!("topk-judge run {}", cfg.display())), "the command that resumes: {stdout}");
    let r = result_json(&run);
    assert_eq!(r["stop_reason"], "interrupted");
    let b = check_books(&fake, &run, None, true);
    assert_eq!((b.verdicts, b.possibly_billed, server_bill(&fake).0), (8, 0, 8), "the 4 in flight were stored");

    let out = run_to_end(dir.path(), &cfg);
    assert!(out.status.success(), "{}", text(&out));
    let b = check_books(&fake, &run, None, true);
    assert_eq!((b.verdicts, b.possibly_billed), (12, 0));
    let asked: Vec<String> = fake.requests().iter().map(|q| q.body["messages"].to_string()).collect();
    assert_eq!(asked.iter().collect::<HashSet<_>>().len(), 12, "none of the 4 is paid again on resume");
}

#[test]
fn second_ctrl_c_quits_at_once_and_its_requests_are_booked_on_resume() {
    let fake = fake();
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), "intr2", &fake, "  batch_size: 4\n  refit_every: 4\n", "  max_comparisons: 8\n", "");
    let run = dir.path().join("runs/intr2");
    fake.hold(5..=8);
    let child = start(dir.path(), &cfg);
    wait_until("4 requests in flight", 60, || fake.n_held() == 4);
    signal(&child, "-INT");
    std::thread::sleep(Duration::from_millis(300));
    let t0 = Instant::now();
    signal(&child, "-INT");
    let out = child.wait_with_output().unwrap();
    assert!(t0.elapsed() < Duration::from_secs(3), "the second Ctrl-C exits at once");
    assert_eq!(out.status.code(), Some(130), "{}", text(&out));
    assert!(text(&out).contains("interrupted again: quitting now"), "{}", text(&out));
    // It still says how to go on.
    let resume = format!("resume: topk-judge run {}", cfg.display());
    assert!(text(&out).contains(&resume), "{resume}: {}", text(&out));
    fake.release_all();
    let before = booked(&run);
    assert_eq!((before.verdicts, before.open_intents), (4, 4), "{before:?}");
    // The dry run already counts the 4 open intents at their worst case, and books nothing.
    let intents = std::fs::read(run.join("intents.jsonl")).unwrap();
    let dry =
        Command::new(bin()).current_dir(dir.path()).args(["run", cfg.to_str().unwrap(), "--dry-run"]).output().unwrap();
    assert!(dry.status.success(), "{}", text(&dry));
    let verdicts = lines(&run.join("verdicts.jsonl"));
    let closed: HashSet<u64> = verdicts.iter().filter_map(|r| r["intent"].as_u64()).collect();
    let open_worst: f64 = lines(&run.join("intents.jsonl"))
        .iter()
        .filter(|i| !closed.contains(&i["intent"].as_u64().unwrap()))
        .map(|i| i["reserved_usd"].as_f64().unwrap())
        .sum();
    let expect = verdicts.iter().map(|r| r["cost_usd"].as_f64().unwrap()).sum::<f64>() + open_worst;
    assert!(text(&dry).contains(&format!("4 verdicts already stored; spend booked ${expect:.6}")), "{}", text(&dry));
    assert_eq!(std::fs::read(run.join("intents.jsonl")).unwrap(), intents, "the dry run writes nothing");

    let out = run_to_end(dir.path(), &cfg);
    assert!(out.status.success(), "{}", text(&out));
    let b = check_books(&fake, &run, None, true);
    assert_eq!((b.verdicts, b.possibly_billed, server_bill(&fake).0), (8, 4, 12));
}

#[test]
fn grace_period_runs_out_and_the_requests_in_flight_are_booked() {
    let fake = fake();
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(
        dir.path(),
        "grace",
        &fake,
        "  batch_size: 4\n  refit_every: 4\n",
        "  max_comparisons: 8\n",
        "interrupt_grace_s: 0.5\n",
    );
    let run = dir.path().join("runs/grace");
    fake.hold(5..=8);
    let child = start(dir.path(), &cfg);
    wait_until("4 requests in flight", 60, || fake.n_held() == 4);
    let t0 = Instant::now();
    signal(&child, "-INT");
    let out = child.wait_with_output().unwrap();
    let waited = t0.elapsed();
    fake.release_all();
    assert_eq!(out.status.code(), Some(130), "{}", text(&out));
    assert!(waited >= Duration::from_millis(500) && waited < Duration::from_secs(10), "{waited:?}");
    assert!(text(&out).contains("waiting up to 0.5 s"), "{}", text(&out));
    let b = check_books(&fake, &run, None, true);
    assert_eq!((b.verdicts, b.possibly_billed), (4, 4), "{b:?}");
    let r = result_json(&run);
    assert_eq!(r["stop_reason"], "interrupted");
    assert!(text(&out).contains("4 possibly billed"), "{}", text(&out));
}

/// A run whose stderr is a closed pipe (`2>&1 >out | head -1` once the head is done) loses its
/// warnings, not the run: it panicked on its second warning (exit 101, no result.json; hunt 53).
#[test]
fn a_closed_stderr_does_not_end_the_run() {
    let fake = fake();
    // Every query fails twice (two warnings each), then the judge answers.
    fake.script(vec![Fault::ServerError; 8]);
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), "deaf", &fake, "  concurrency: 1\n", "  max_comparisons: 6\n", "");
    let cfg = {
        let y = std::fs::read_to_string(&cfg)
            .unwrap()
            .replace("    timeout_s: 60\n", "    timeout_s: 60\n    max_retries: 0\n");
        write(dir.path(), "deaf.yaml", &y)
    };
    let mut child = Command::new(bin())
        .current_dir(dir.path())
        .args(["run", cfg.to_str().unwrap(), "--quiet"])
        .env_remove("RUST_LOG")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stderr.take());
    let status = child.wait().unwrap();
    assert_ne!(status.code(), Some(101), "a panic");
    let r = result_json(&dir.path().join("runs/deaf"));
    assert_eq!(r["stop_reason"], "max_comparisons", "{r}");
    assert!(r["failed"].as_u64().unwrap() >= 2, "the warnings were due: {r}");
}

#[test]
fn a_second_process_on_the_same_run_folder_fails_at_once() {
    let fake = fake();
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), "twice", &fake, "  batch_size: 1\n", "  max_comparisons: 8\n", "");
    let run = dir.path().join("runs/twice");
    fake.hold([2]);
    let first = start(dir.path(), &cfg);
    wait_until("the first process mid-run", 60, || fake.n_held() == 1);
    let t0 = Instant::now();
    let second = run_to_end(dir.path(), &cfg);
    assert!(t0.elapsed() < Duration::from_secs(10));
    assert!(!second.status.success());
    let msg = text(&second);
    assert!(msg.contains(&run.display().to_string()) && msg.contains("in use"), "{msg}");
    assert!(msg.contains(&format!("pid {}", first.id())), "names the holder: {msg}");
    // Its dry run says so too (hunt 52: it counted the holder's request in flight as possibly
    // billed without a word).
    let dry = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--dry-run"]);
    assert!(dry.status.success(), "{}", text(&dry));
    assert!(
        stderr(&dry).contains(&format!(
            "run folder {} is in use by another topk-judge process (pid {}): the spend booked below counts its requests in flight as possibly billed",
            run.display(),
            first.id()
        )),
        "{}",
        text(&dry)
    );
    fake.release_all();
    let out = first.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let b = check_books(&fake, &run, None, true);
    assert_eq!((b.verdicts, server_bill(&fake).0), (8, 8));
    assert!(text(&out).contains("stopped: max_comparisons; 8 comparisons"), "{}", text(&out));
}

#[test]
fn duplicate_records_in_a_verdict_log_are_reported_and_counted_once() {
    // A log written by two processes at once (older versions) or merged by hand.
    let fake = fake();
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), "dups", &fake, "", "  max_comparisons: 8\n", "");
    let run = dir.path().join("runs/dups");
    let out = run_to_end(dir.path(), &cfg);
    assert!(out.status.success(), "{}", text(&out));
    let theta_before = result_json(&run)["theta"].clone();
    let log = run.join("verdicts.jsonl");
    let original = std::fs::read_to_string(&log).unwrap();
    // The second copy says the opposite of the first (and carries no intent, as older versions).
    let flipped: String = lines(&log)
        .into_iter()
        .map(|mut r| {
            r["y"] = serde_json::json!(1.0 - r["y"].as_f64().unwrap());
            r.as_object_mut().unwrap().remove("intent");
            r.to_string() + "\n"
        })
        .collect();
    std::fs::write(&log, original + &flipped).unwrap();
    let per_copy: f64 = lines(&log).iter().take(8).map(|r| r["cost_usd"].as_f64().unwrap()).sum();
    let out = run_to_end(dir.path(), &cfg);
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    assert!(t.contains("8 duplicate records") && t.contains("the first record of each key is used"), "{t}");
    assert!(t.contains("stopped: max_comparisons; 8 comparisons (8 valid"), "{t}");
    assert_eq!(server_bill(&fake).0, 8, "nothing asked again");
    let r = result_json(&run);
    assert_eq!((r["comparisons"].as_u64(), r["duplicate_records"].as_u64()), (Some(8), Some(8)));
    assert!((r["spend_usd"].as_f64().unwrap() - 2.0 * per_copy).abs() < 1e-12, "both copies were paid for");
    // The fit used the first records: θ̂ is the one fitted before the copies were appended (the
    // flipped copies would cancel every verdict and pull θ̂ to 0).
    for (id, t0) in theta_before.as_object().unwrap() {
        let t1 = r["theta"][id].as_f64().unwrap();
        assert!((t1 - t0.as_f64().unwrap()).abs() < 1e-6, "theta[{id}] {t0} → {t1}");
    }
    assert!(theta_before.as_object().unwrap().values().any(|t| t.as_f64().unwrap().abs() > 0.1), "{theta_before}");
    for f in lines(&run.join("fits.jsonl")) {
        assert!(f["comparisons"].as_u64().unwrap() <= 8, "a fit counted a duplicate: {f}");
    }
}

#[test]
fn extra_body_cannot_lift_max_tokens_past_the_budget() {
    let fake = fake();
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), "extra", &fake, "  batch_size: 8\n", "  max_usd: 0.01\n", "");
    let yaml = std::fs::read_to_string(&cfg).unwrap();
    let bad = yaml
        .replace("    max_tokens: 8\n", "    max_tokens: 4\n    extra_body: {max_tokens: 4000, cache_prompt: false}\n");
    std::fs::write(&cfg, &bad).unwrap();
    let out = run_to_end(dir.path(), &cfg);
    let t = text(&out);
    assert!(!out.status.success(), "{t}");
    assert!(
        t.contains("judge.openai.extra_body.max_tokens") && t.contains("use judge.openai.max_tokens instead"),
        "{t}"
    );
    assert_eq!(fake.n_requests(), 0, "nothing sent");
    assert!(!dir.path().join("runs/extra").exists(), "nothing written");
    // The same with extra_body's own fields only: 4 tokens are sent, and the budget holds.
    std::fs::write(&cfg, bad.replace("max_tokens: 4000, ", "")).unwrap();
    let out = run_to_end(dir.path(), &cfg);
    assert!(out.status.success(), "{}", text(&out));
    let reqs = fake.requests();
    assert!(!reqs.is_empty());
    for q in &reqs {
        assert_eq!((q.body["max_tokens"].as_u64(), q.body["cache_prompt"].as_bool()), (Some(4), Some(false)));
    }
    let b = check_books(&fake, &dir.path().join("runs/extra"), Some(0.01), true);
    assert_eq!(result_json(&dir.path().join("runs/extra"))["stop_reason"], "max_usd");
    assert_eq!(b.verdicts, reqs.len());
}

#[test]
fn torn_last_line_is_dropped_with_a_warning_on_resume() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let c = mock_config(dir.path(), "torn", 16, "");
    assert!(run_bin(dir.path(), &["run", c.to_str().unwrap()]).status.success());
    let v = dir.path().join("runs/torn/verdicts.jsonl");
    let mut f = std::fs::OpenOptions::new().append(true).open(&v).unwrap();
    f.write_all(b"{\"key\":\"abc\",\"a\":\"M0\",\"b\":\"M").unwrap();
    drop(f);
    let c = mock_config(dir.path(), "torn", 24, "");
    let out = run_bin(dir.path(), &["run", c.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("dropped a torn last line"), "{}", text(&out));
    let lines: Vec<String> = std::fs::read_to_string(&v).unwrap().lines().map(String::from).collect();
    assert_eq!(lines.len(), 24);
    for l in &lines {
        serde_json::from_str::<serde_json::Value>(l).expect("every line parses");
    }
}

/// A verdict torn by a crash of a free judge's run (its request's intent is on disk, its line
/// is cut): the pair is asked again and nothing is said about money a free judge cannot bill.
#[test]
fn a_torn_verdict_of_a_free_judge_is_asked_again_without_a_possibly_billed_note() {
    let dir = tempfile::tempdir().unwrap();
    let c = mock_config(dir.path(), "torn-free", 16, "");
    assert!(run_bin(dir.path(), &["run", c.to_str().unwrap()]).status.success());
    let v = dir.path().join("runs/torn-free/verdicts.jsonl");
    let bytes = std::fs::read(&v).unwrap();
    std::fs::write(&v, &bytes[..bytes.len() - 40]).unwrap();
    let out = run_bin(dir.path(), &["run", c.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("dropped a torn last line"), "{}", text(&out));
    assert!(text(&out).contains("resumed: 15 stored verdicts reused, 1 query asked in this run"), "{}", text(&out));
    assert!(!text(&out).contains("possibly billed"), "{}", text(&out));
    assert_eq!(std::fs::read_to_string(&v).unwrap().lines().count(), 16);
    assert_eq!(result_json(&dir.path().join("runs/torn-free"))["spend_usd"].as_f64(), Some(0.0));
}

#[test]
fn reusing_a_run_name_for_another_config_warns() {
    let dir = tempfile::tempdir().unwrap();
    let c = mock_config(dir.path(), "shared", 16, "");
    let first = run_bin(dir.path(), &["run", c.to_str().unwrap()]);
    assert!(first.status.success() && !text(&first).contains("holds a run"), "{}", text(&first));
    // Raising the budget is the same run: no warning.
    let c = mock_config(dir.path(), "shared", 24, "");
    let out = run_bin(dir.path(), &["run", c.to_str().unwrap()]);
    assert!(out.status.success() && !text(&out).contains("holds a run"), "{}", text(&out));
    // Another k under the same name: warned, naming what differs; its dry run says so first
    // (and the same config's does not).
    let dry = run_bin(dir.path(), &["run", c.to_str().unwrap(), "--dry-run"]);
    assert!(dry.status.success() && !text(&dry).contains("holds a run"), "{}", text(&dry));
    let yaml = std::fs::read_to_string(&c).unwrap().replace("k: 3", "k: 4");
    std::fs::write(&c, yaml).unwrap();
    let dry = run_bin(dir.path(), &["run", c.to_str().unwrap(), "--dry-run"]);
    assert!(
        stderr(&dry).contains("runs/shared holds a run with a different model, k, acquisition or pool: running this config replaces its result.json and config.yaml"),
        "{}",
        text(&dry)
    );
    let out = run_bin(dir.path(), &["run", c.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("holds a run with a different model, k, acquisition or pool"), "{}", text(&out));
    // Another judge seed: the judge differs.
    let yaml = std::fs::read_to_string(&c).unwrap().replace("seed: 7", "seed: 8");
    std::fs::write(&c, yaml).unwrap();
    let out = run_bin(dir.path(), &["run", c.to_str().unwrap()]);
    assert!(
        text(&out)
            .contains("holds a run with a different judge (or the items it reads: texts, a mock judge's qualities):"),
        "{}",
        text(&out)
    );
}

/// An item edited in the pool file after a run (not one of the first pair, whose cache key names
/// the judge in run.json): the next run under the same name says which items read otherwise, as
/// their pairs are asked and paid again; an unchanged pool says nothing.
#[test]
fn an_item_edited_after_a_run_is_named_when_the_run_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let pool = pool30(dir.path());
    let cfg = |n: u64| {
        write(
            dir.path(),
            "edit.yaml",
            &format!(
                "name: edit\nout_dir: runs\npool:\n  file: {}\nk: 5\njudge:\n  mock:\n    mode: stochastic\n    seed: 7\nacquisition:\n  seed: 42\n  mc_draws: 400\nbudget:\n  max_comparisons: {n}\n",
                pool.display()
            ),
        )
    };
    let run = |n| {
        let out = run_bin(dir.path(), &["run", cfg(n).to_str().unwrap(), "--quiet"]);
        assert!(out.status.success(), "{}", text(&out));
        text(&out)
    };
    let first = run(40);
    assert!(!first.contains("read otherwise"), "{first}");
    assert!(!run(48).contains("read otherwise"), "the same pool: nothing said");
    let text0 = std::fs::read_to_string(&pool).unwrap();
    let edited = text0.replace(&format!("\"{}\"", vec!["word"; 32].join(" ")), "\"an edited answer\"");
    assert_ne!(edited, text0, "s29 has 32 words");
    std::fs::write(&pool, edited.replace("\"quality\":3,", "\"quality\":3.5,")).unwrap();
    let said = run(56);
    assert!(
        said.contains("runs/edit/pool.jsonl: 2 items read otherwise than in the folder's last run (text or other fields): s29, s3; where the judge reads what changed, it is asked (and paid) again for their pairs, and fits.jsonl gets a second history; give this run its own `name` to keep both"),
        "{said}"
    );
    assert!(!said.contains("holds a run with a different"), "the first pair is unchanged: {said}");
    // The folder's own pool.jsonl edited in place, the run resumed from the folder: no copy is
    // left to compare, and run.json's hash of the pool says that it changed.
    let copy = dir.path().join("runs/edit/pool.jsonl");
    let text1 = std::fs::read_to_string(&copy).unwrap();
    std::fs::write(&copy, text1.replace(&format!("\"{}\"", ["word"; 8].join(" ")), "\"edited in place\"")).unwrap();
    assert_ne!(std::fs::read_to_string(&copy).unwrap(), text1, "s5 has 8 words");
    let out = run_bin(dir.path(), &["run", "runs/edit/config.yaml", "--quiet", "--max-comparisons", "64"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("runs/edit/pool.jsonl: the pool reads otherwise than in the folder's last run (edited in place since?): where the judge reads what changed, it is asked (and paid) again for the pairs of those items, and fits.jsonl gets a second history"),
        "{}",
        text(&out)
    );
    // Unchanged since: nothing said.
    let out = run_bin(dir.path(), &["run", "runs/edit/config.yaml", "--quiet", "--max-comparisons", "66"]);
    assert!(!text(&out).contains("reads otherwise") && !text(&out).contains("read otherwise"), "{}", text(&out));
}

/// A 30-item pool with distinct texts (item i has i + 3 words) as a pool file in `dir`.
fn pool30(dir: &Path) -> PathBuf {
    let items: Vec<Value> = (0..30)
        .map(|i| serde_json::json!({"id": format!("s{i}"), "text": vec!["word"; i + 3].join(" "), "quality": i}))
        .collect();
    write(
        dir,
        "pool30.jsonl",
        &(serde_json::json!({"pool_id": "p30", "task": "Summarise.", "items": items}).to_string() + "\n"),
    )
}

/// Short runs in a row (30 items, k 5, 150 comparisons, seeds 1..=n), each must exit 0 with its
/// result.json: a synthetic judge (default dispatch) and a live judge on the fake server
/// (pipelined, 4 written ahead). A finished run once panicked before writing result.json when a
/// task still held the books (Dispatcher::close now waits for it). `n` is `TOPK_STRESS_RUNS`
/// (default 25); the acceptance measurement runs 1,000 of each while another job loads the CPU:
/// `TOPK_STRESS_RUNS=1000 cargo test --release --test integration short_runs -- --ignored`.
#[test]
#[ignore]
fn short_runs_always_write_their_result() {
    let n: u64 = std::env::var("TOPK_STRESS_RUNS").ok().and_then(|v| v.parse().ok()).unwrap_or(25);
    let dir = tempfile::tempdir().unwrap();
    let pool = pool30(dir.path());
    let fake = fake();
    write(dir.path(), "prompts/test.j2", TEMPLATE);
    for seed in 1..=n {
        for (kind, pool_yaml, judge, acq) in [
            (
                "synthetic",
                format!("{{synthetic: {{n: 30, seed: {seed}}}}}"),
                "  synthetic: {}\n".to_string(),
                String::new(),
            ),
            (
                "live",
                format!("{{file: {}}}", pool.display()),
                format!(
                    "  openai:\n    base_url: {}\n    model: fake-judge\n    fingerprint:\n      queries: 0\n    api_key_env: TOPK_STRESS_UNSET_KEY\n    api_key_required: false\n    prompt: prompts/test.j2\n    max_tokens: 8\n    price: {{input_usd_per_mtok: 1.0, output_usd_per_mtok: 2.0}}\n",
                    fake.base_url
                ),
                "  dispatch: pipelined\n  concurrency: 8\n  write_ahead: 4\n".to_string(),
            ),
        ] {
            let name = format!("{kind}-{seed}");
            let yaml = format!(
                "name: {name}\nout_dir: runs\npool: {pool_yaml}\nk: 5\njudge:\n{judge}acquisition:\n  seed: {seed}\n  mc_draws: 200\n{acq}budget: {{max_comparisons: 150}}\n"
            );
            let cfg = write(dir.path(), &format!("{name}.yaml"), &yaml);
            let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet"]);
            assert!(out.status.success(), "{name}: exit {:?}\n{}", out.status.code(), text(&out));
            let r = json(&dir.path().join("runs").join(&name).join("result.json"));
            assert_eq!(r["comparisons"], 150, "{name}");
            std::fs::remove_dir_all(dir.path().join("runs").join(&name)).unwrap();
        }
    }
}

//! A judge panel in one run (`judges:`, docs/model.md §8): a panel of one is the single-judge
//! run bit for bit; a panel of two live judges on two fake OpenAI-compatible servers keeps the
//! money guarantees of a single judge (one `max_usd` for the panel, a kill with requests in
//! flight on both servers, Ctrl-C, two processes), with each server's own log as its bill.

use crate::common::fake_openai::{FakeOpenAi, Fault, TEMPLATE, longer_wins};
use crate::common::*;
use crate::crash_safety::{lines, pool8, run_to_end, signal, start, usage_of, wait_until};
use serde_json::Value;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// configs/mock.yaml with its judge block replaced by `judge` (YAML lines).
fn main_job_with_judge(dir: &Path, name: &str, judge: &str) -> PathBuf {
    let yaml = std::fs::read_to_string(root().join("configs/mock.yaml")).unwrap();
    let (head, rest) = yaml.split_once("judge:\n").unwrap();
    let tail = &rest[rest.find("model:").unwrap()..];
    let yaml = format!("{head}{judge}{tail}")
        .replace("name: summeval-mock", &format!("name: {name}"))
        .replace("out_dir: ../runs", "out_dir: runs")
        .replace("../data/summeval_pools.jsonl", summeval().to_str().unwrap());
    write(dir, &format!("{name}.yaml"), &yaml)
}

/// A verdict record without its time of storage.
fn timeless(mut v: Value) -> Value {
    v.as_object_mut().unwrap().remove("ts");
    v.as_object_mut().unwrap().remove("latency_ms");
    v
}

#[test]
fn a_panel_of_one_is_the_single_judge_run_bit_for_bit() {
    let dir = tempfile::tempdir().unwrap();
    let mock = "    mode: stochastic\n    pos_bias: 0.3\n    verb_per_word: 0.01\n    temperature: 0.25\n    seed: 7\n";
    let single = main_job_with_judge(dir.path(), "single", &format!("judge:\n  mock:\n{mock}"));
    let one = main_job_with_judge(
        dir.path(),
        "one",
        &format!("judges:\n  - name: solo\n    trusted: true\n    mock:\n  {}", mock.replace("\n    ", "\n      ")),
    );
    for cfg in [&single, &one] {
        let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet"]);
        assert!(out.status.success(), "{}", text(&out));
        // `trusted` alone means nothing: said, not silently dropped.
        assert_eq!(
            text(&out).contains("judges[0].trusted: a list of one judge runs the single-judge model, which fits its bias coefficients as usual"),
            cfg == &one,
            "{}",
            text(&out)
        );
    }
    let (a, b) = (dir.path().join("runs/single"), dir.path().join("runs/one"));
    // Records are appended as replies arrive; the intents number the queries in the order sent.
    let by_intent = |dir: &Path| {
        let mut v: Vec<Value> = lines(&dir.join("verdicts.jsonl")).into_iter().map(timeless).collect();
        v.sort_by_key(|r| r["intent"].as_u64().unwrap());
        v
    };
    let (va, vb) = (by_intent(&a), by_intent(&b));
    assert_eq!(va.len(), 120);
    assert_eq!(va, vb, "the same queries, sent in the same order, with the same keys and verdicts");
    let (mut ra, mut rb) = (json(&a.join("result.json")), json(&b.join("result.json")));
    for r in [&mut ra, &mut rb] {
        let o = r.as_object_mut().unwrap();
        for k in ["name", "run_dir", "config", "rate", "session"] {
            o.remove(k);
        }
    }
    assert_eq!(ra["fit"]["theta"], rb["fit"]["theta"]);
    assert_eq!(ra, rb, "result.json is the same but for the run's name and folder");
    // The config copy in the run folder is the single-judge config it is.
    let copy = std::fs::read_to_string(b.join("config.yaml")).unwrap();
    assert!(copy.contains("judge:") && !copy.contains("judges:"), "{copy}");
}

/// The panel's budget in the money tests, USD (a query of the 8-item pool costs ≈ 0.001 at the
/// cheap judge's price).
const MAX_USD: f64 = 0.1;

/// Prices of the two judges, USD per million tokens (input, output).
const CHEAP: (f64, f64) = (1.0, 2.0);
const FRONTIER: (f64, f64) = (1.5, 3.0);

/// A fake server billing each request exactly its reservation bound (as in crash_safety), with
/// `verdict` as its judgement.
fn server(verdict: fn(&str, &str) -> String) -> FakeOpenAi {
    FakeOpenAi::start_with(
        Box::new(verdict),
        Box::new(|b: &Value| {
            let (p, c) = usage_of(b);
            Some(serde_json::json!({"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c}))
        }),
    )
}

fn shorter_wins(a: &str, b: &str) -> String {
    if a.chars().count() <= b.chars().count() { "[[A]]".into() } else { "[[B]]".into() }
}

fn bill((fake, price): (&FakeOpenAi, (f64, f64))) -> (usize, f64) {
    let reqs = fake.requests();
    let usd = reqs
        .iter()
        .map(|q| {
            let (p, c) = usage_of(&q.body);
            (p as f64 * price.0 + c as f64 * price.1) / 1e6
        })
        .sum();
    (reqs.len(), usd)
}

fn openai_member(name: &str, fake: &FakeOpenAi, price: (f64, f64), extra: &str) -> String {
    format!(
        "  - name: {name}\n{extra}    openai:\n      base_url: {url}\n      model: fake-{name}\n      fingerprint:\n        queries: 0\n      api_key_env: TOPK_PANEL_TEST_UNSET_KEY\n      api_key_required: false\n      prompt: prompts/test.j2\n      max_tokens: 8\n      max_invalid_retries: 0\n      timeout_s: 60\n      backoff_min_s: 0.005\n      backoff_max_s: 0.02\n      concurrency: 4\n      price: {{input_usd_per_mtok: {}, output_usd_per_mtok: {}}}\n",
        price.0,
        price.1,
        url = fake.base_url
    )
}

/// A panel of a cheap judge and a trusted frontier judge, each on its own fake server, over the
/// 8-item pool; `acq` and `budget` are YAML lines.
fn panel_config(dir: &Path, name: &str, cheap: &FakeOpenAi, frontier: &FakeOpenAi, acq: &str, budget: &str) -> PathBuf {
    write(dir, "prompts/test.j2", TEMPLATE);
    let pool = pool8(dir);
    let yaml = format!(
        "name: {name}\nout_dir: runs\npool:\n  file: {pool}\nk: 2\njudges:\n{}{}model:\n  covariates:\n    - {{name: words, transform: zscore}}\nacquisition:\n  seed: 5\n  mc_draws: 200\n{acq}budget:\n{budget}",
        openai_member("cheap", cheap, CHEAP, ""),
        openai_member("frontier", frontier, FRONTIER, "    trusted: true\n"),
        pool = pool.display(),
    );
    write(dir, &format!("{name}.yaml"), &yaml)
}

/// The largest worst case of one query of panel judge `j` over the pool's ordered pairs, USD.
fn max_worst_case(cfg: &Path, j: usize) -> f64 {
    let c = topk_judge::config::run::Config::load(cfg).unwrap();
    let judge = topk_judge::config::judge::make_judge(&c.raw.judges[j].judge).unwrap();
    let n = c.pool.n_items();
    (0..n)
        .flat_map(|a| (0..n).map(move |b| (a, b)))
        .filter(|(a, b)| a != b)
        .map(|(a, b)| judge.worst_case_usd(&c.pool, a, b))
        .fold(0.0, f64::max)
}

/// What the run folder books per judge (by the records' `"judge"` and the intents' keys), read
/// from its files here.
#[derive(Debug, Default)]
struct Books {
    verdicts: [usize; 2],
    possibly_billed: usize,
    open_intents: usize,
    usd: f64,
}

fn books(run: &Path) -> Books {
    let verdicts = lines(&run.join("verdicts.jsonl"));
    let keys: HashSet<&str> = verdicts.iter().map(|r| r["key"].as_str().unwrap()).collect();
    assert_eq!(keys.len(), verdicts.len(), "no verdict key is stored twice");
    let mut b = Books::default();
    // Each judge's records carry its one settings id, not the other's.
    let mut settings: [HashSet<&str>; 2] = Default::default();
    for r in &verdicts {
        let (j, prefix) = match r["judge"].as_str().unwrap() {
            "cheap" => (0, "cheap:"),
            "frontier" => (1, "frontier:"),
            other => panic!("a record of judge {other:?}"),
        };
        assert!(r["key"].as_str().unwrap().starts_with(prefix), "{r}");
        settings[j].insert(r["judge_settings"].as_str().unwrap());
        b.verdicts[j] += 1;
    }
    assert!(settings.iter().all(|s| s.len() <= 1), "{settings:?}");
    assert!(settings[0].is_disjoint(&settings[1]), "{settings:?}");
    let failed: Vec<Value> =
        lines(&run.join("failed.jsonl")).into_iter().filter(|f| f["cost_usd"].as_f64().unwrap() > 0.0).collect();
    let intents = lines(&run.join("intents.jsonl"));
    let pb: Vec<&Value> = intents.iter().filter(|l| l["possibly_billed"] == true).collect();
    let opened: HashSet<u64> = intents.iter().filter_map(|l| l["intent"].as_u64()).collect();
    let mut closed: HashSet<u64> = intents.iter().filter_map(|l| l["closed"].as_u64()).collect();
    closed.extend(verdicts.iter().chain(&failed).filter_map(|r| r["intent"].as_u64()));
    b.usd = verdicts.iter().chain(&failed).chain(pb.iter().copied()).map(|r| r["cost_usd"].as_f64().unwrap()).sum();
    b.possibly_billed = pb.len();
    b.open_intents = opened.difference(&closed).count();
    b
}

/// The invariants after a run that ended on its own: both servers' bills are in the books,
/// every intent is closed, the panel's spend within `max_usd`, each judge's verdicts are its
/// server's replies, result.json agrees with the files. `exact`: every request reached a server.
fn check(cheap: &FakeOpenAi, frontier: &FakeOpenAi, run: &Path, max_usd: Option<f64>, exact: bool) -> Books {
    let (nc, uc) = bill((cheap, CHEAP));
    let (nf, uf) = bill((frontier, FRONTIER));
    let b = books(run);
    println!("{}: billed cheap {nc} ${uc:.6}, frontier {nf} ${uf:.6}; books {b:?}", run.display());
    assert_eq!(b.open_intents, 0, "{b:?}");
    let requests = b.verdicts[0] + b.verdicts[1] + b.possibly_billed;
    assert!(nc + nf <= requests, "billed {} requests, the books hold {b:?}", nc + nf);
    assert!(uc + uf <= b.usd + 1e-12, "billed ${}, the books ${}", uc + uf, b.usd);
    assert!(b.verdicts[0] <= nc && b.verdicts[1] <= nf, "each judge's verdicts came from its own server: {b:?}");
    if let Some(max) = max_usd {
        assert!(b.usd <= max + 1e-12, "booked ${} > max_usd {max}", b.usd);
        assert!(uc + uf <= max + 1e-12, "billed ${} > max_usd {max}", uc + uf);
    }
    if exact {
        assert_eq!((nc, nf), (b.verdicts[0], b.verdicts[1]), "{b:?}");
        assert!((uc + uf - b.usd).abs() < 1e-12, "billed ${}, books ${}", uc + uf, b.usd);
    }
    let r = json(&run.join("result.json"));
    assert_eq!(r["comparisons"].as_u64().unwrap() as usize, b.verdicts[0] + b.verdicts[1]);
    assert_eq!(r["possibly_billed"].as_u64().unwrap() as usize, b.possibly_billed);
    assert!((r["spend_usd"].as_f64().unwrap() - b.usd).abs() < 1e-12, "{} vs {}", r["spend_usd"], b.usd);
    for (j, name) in ["cheap", "frontier"].iter().enumerate() {
        assert_eq!(r["judges"][j]["name"], *name);
        assert_eq!(r["judges"][j]["queries"].as_u64().unwrap() as usize, b.verdicts[j], "{}", r["judges"]);
        assert_eq!(r["fit"]["judges"][j]["verdicts"].as_u64().unwrap() as usize, b.verdicts[j]);
    }
    b
}

#[test]
fn one_max_usd_binds_a_panel_of_two_live_judges() {
    max_usd_binds_a_panel("  refit_every: 8\n  concurrency: 8\n", 0);
}

/// Pipelined across the judges: 8 in flight over both servers (each answering in 20 ms), 4
/// written ahead, a refit every 4 verdicts while requests fly.
#[test]
fn one_max_usd_binds_a_pipelined_panel_of_two_live_judges() {
    max_usd_binds_a_panel("  refit_every: 4\n  concurrency: 8\n  dispatch: pipelined\n  write_ahead: 4\n", 20);
}

fn max_usd_binds_a_panel(acq: &str, delay_ms: u64) {
    let (cheap, frontier) = (server(longer_wins), server(shorter_wins));
    cheap.set_delay_ms(delay_ms);
    frontier.set_delay_ms(delay_ms);
    let dir = tempfile::tempdir().unwrap();
    let max_usd = MAX_USD;
    let cfg = panel_config(dir.path(), "money", &cheap, &frontier, acq, &format!("  max_usd: {max_usd}\n"));
    let run = dir.path().join("runs/money");
    let out = run_to_end(dir.path(), &cfg);
    assert!(out.status.success(), "{}", text(&out));
    let b = check(&cheap, &frontier, &run, Some(max_usd), true);
    assert!(b.verdicts[0] > 0 && b.verdicts[1] > 0, "both judges were asked: {b:?}");
    // Each judge within its own `concurrency: 4`, while the panel sends 8 at once.
    assert!(
        cheap.max_in_flight() <= 4 && frontier.max_in_flight() <= 4,
        "{} {}",
        cheap.max_in_flight(),
        frontier.max_in_flight()
    );
    let r = json(&run.join("result.json"));
    assert_eq!(r["stop_reason"], "max_usd", "{}", text(&out));
    // Stopped only when no open query's worst case fitted in what was left.
    let (_, uc) = bill((&cheap, CHEAP));
    let (_, uf) = bill((&frontier, FRONTIER));
    let pair = 2.0 * max_worst_case(&cfg, 0).max(max_worst_case(&cfg, 1));
    assert!(max_usd - (uc + uf) < pair, "{} left of {max_usd}, a pair costs at most {pair}", max_usd - uc - uf);
    // Both orders of a pair go to one judge.
    for rec in lines(&run.join("verdicts.jsonl")) {
        let other = lines(&run.join("verdicts.jsonl"))
            .into_iter()
            .find(|o| o["a"] == rec["b"] && o["b"] == rec["a"] && o["judge"] != rec["judge"]);
        assert!(other.is_none(), "{rec} and {other:?}");
    }
    // A second invocation resumes: nothing more fits, nothing is asked again.
    let n = cheap.n_requests() + frontier.n_requests();
    let out = run_to_end(dir.path(), &cfg);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(cheap.n_requests() + frontier.n_requests(), n);
    assert!(stdout(&out).contains("0 asked now"), "{}", stdout(&out));
    // The panel's verdicts fit again from the folder, as the run reported them.
    let fit = run_bin(
        dir.path(),
        &[
            "fit",
            run.to_str().unwrap(),
            "--panel",
            "--trusted",
            "frontier",
            "--out",
            dir.path().join("f.json").to_str().unwrap(),
        ],
    );
    assert!(fit.status.success(), "{}", text(&fit));
    let f = json(&dir.path().join("f.json"));
    let r = json(&run.join("result.json"));
    for (x, y) in f["theta"].as_array().unwrap().iter().zip(r["fit"]["theta"].as_array().unwrap()) {
        assert!((x.as_f64().unwrap() - y.as_f64().unwrap()).abs() < 1e-9, "{x} vs {y}");
    }
}

/// A panel member billed far above `max_tokens`, with its own `concurrency: 1` under the
/// panel's 8: only its request on the wire at the first overrun is sent (before: 4, $0.164
/// against max_usd $0.05), and the summary and result.json name the overrun and the judge
/// (before: the error pointed to an `overrun:` line the panel did not print).
#[test]
fn a_panel_members_overrun_holds_its_queue_and_is_named() {
    let cheap = FakeOpenAi::start_with(
        Box::new(longer_wins),
        Box::new(|_: &Value| Some(serde_json::json!({"prompt_tokens": 100, "completion_tokens": 2_000_000}))),
    );
    let frontier = server(shorter_wins);
    cheap.set_delay_ms(50);
    let dir = tempfile::tempdir().unwrap();
    let cfg = panel_config(dir.path(), "over", &cheap, &frontier, "  concurrency: 8\n", "  max_usd: 0.05\n");
    let yaml = std::fs::read_to_string(&cfg).unwrap().replacen("      concurrency: 4\n", "      concurrency: 1\n", 1);
    std::fs::write(&cfg, yaml).unwrap();
    let out = run_to_end(dir.path(), &cfg);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert_eq!(cheap.max_in_flight(), 1);
    assert_eq!(cheap.n_requests(), 1, "{}", text(&out));
    let r = json(&dir.path().join("runs/over/result.json"));
    assert_eq!((r["overrun"]["replies"].as_u64(), r["overrun"]["above_max_tokens"].as_u64()), (Some(1), Some(1)));
    assert_eq!(r["overrun_judges"], serde_json::json!(["cheap"]));
    assert!(
        stdout(&out)
            .contains("  overrun (judge cheap): 1 reply billed above max_tokens 8 (up to 2000000 output tokens, reasoning included); "),
        "{}",
        stdout(&out)
    );
    assert!(text(&out).contains("the provider does not keep to max_tokens (cheap)"), "{}", text(&out));
    // The panel's report names it too (it showed the spend alone).
    let run = dir.path().join("runs/over");
    assert!(run_bin(dir.path(), &["report", run.to_str().unwrap()]).status.success());
    let md = std::fs::read_to_string(run.join("report.md")).unwrap();
    assert!(
        md.contains("- overrun (judge cheap): 1 reply billed above max_tokens 8 (up to 2000000 output tokens"),
        "{md}"
    );
}

/// SIGKILL with requests held on both servers, some answered and never read: every billed
/// request is booked (as possibly billed), the resumed run ends within max_usd, and nothing is
/// asked twice but the lost replies.
#[test]
fn sigkill_with_requests_in_flight_on_both_servers_books_them_and_resumes_within_max_usd() {
    let (cheap, frontier) = (server(longer_wins), server(shorter_wins));
    let dir = tempfile::tempdir().unwrap();
    let max_usd = MAX_USD;
    let cfg = panel_config(
        dir.path(),
        "kill",
        &cheap,
        &frontier,
        "  refit_every: 8\n  concurrency: 8\n",
        &format!("  max_usd: {max_usd}\n"),
    );
    let run = dir.path().join("runs/kill");
    // Every request of either server from the 9th on waits for the test.
    cheap.hold(9..=200);
    frontier.hold(1..=200);
    let mut child = start(dir.path(), &cfg);
    wait_until("requests held", 60, || cheap.n_held() + frontier.n_held() >= 4);
    signal(&child, "-STOP");
    // One held reply of each server is sent (billed) and never read.
    let replied = cheap.n_replied() + frontier.n_replied();
    let (hc, hf) = (cheap.n_held(), frontier.n_held());
    cheap.release(hc.min(1));
    frontier.release(hf.min(1));
    wait_until("the released replies", 10, || {
        cheap.n_replied() + frontier.n_replied() == replied + hc.min(1) + hf.min(1)
    });
    std::thread::sleep(Duration::from_millis(150));
    child.kill().unwrap();
    child.wait().unwrap();
    cheap.release_all();
    frontier.release_all();
    let before = books(&run);
    assert!(before.open_intents >= hc + hf, "{before:?}; held {hc} + {hf}");

    let out = run_to_end(dir.path(), &cfg);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("possibly billed"), "{}", text(&out));
    let b = check(&cheap, &frontier, &run, Some(max_usd), false);
    assert!(b.possibly_billed >= hc.min(1) + hf.min(1), "{b:?}");
    assert_eq!(json(&run.join("result.json"))["stop_reason"], "max_usd");
    let distinct =
        |f: &FakeOpenAi| f.requests().iter().map(|q| q.body["messages"].to_string()).collect::<HashSet<_>>().len();
    let asked_twice = cheap.n_requests() - distinct(&cheap) + frontier.n_requests() - distinct(&frontier);
    assert!(asked_twice <= b.possibly_billed, "{asked_twice} asked twice, {b:?}");
}

#[test]
fn ctrl_c_waits_for_both_servers_stores_their_replies_and_resumes() {
    ctrl_c_on_a_panel("  refit_every: 8\n  concurrency: 8\n");
    // Pipelined with picks written ahead: those are taken back unsent, and not counted as asked.
    ctrl_c_on_a_panel("  refit_every: 8\n  concurrency: 8\n  dispatch: pipelined\n  write_ahead: 4\n");
}

fn ctrl_c_on_a_panel(acq: &str) {
    let (cheap, frontier) = (server(longer_wins), server(shorter_wins));
    let dir = tempfile::tempdir().unwrap();
    let cfg = panel_config(dir.path(), "intr", &cheap, &frontier, acq, "  max_comparisons: 24\n");
    let run = dir.path().join("runs/intr");
    cheap.hold(9..=200);
    frontier.hold(1..=200);
    let mut child = start(dir.path(), &cfg);
    wait_until("requests held", 60, || cheap.n_held() + frontier.n_held() >= 2);
    std::thread::sleep(Duration::from_millis(200));
    signal(&child, "-INT");
    std::thread::sleep(Duration::from_millis(400));
    assert!(child.try_wait().unwrap().is_none(), "the first Ctrl-C waits for the requests in flight");
    let held = cheap.n_held() + frontier.n_held();
    cheap.release_all();
    frontier.release_all();
    let t0 = Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(t0.elapsed() < Duration::from_secs(20));
    assert_eq!(out.status.code(), Some(130), "{}", text(&out));
    assert!(stdout(&out).contains("stopped (interrupted)"), "{}", stdout(&out));
    let b = check(&cheap, &frontier, &run, None, true);
    assert_eq!(b.possibly_billed, 0, "the replies in flight were stored: {b:?}");
    assert!(b.verdicts[0] + b.verdicts[1] >= 8 + held.min(1), "{b:?}");
    let asked = cheap.n_requests() + frontier.n_requests();
    assert_eq!(asked, b.verdicts[0] + b.verdicts[1], "no request left after the Ctrl-C");
    assert_eq!(json(&run.join("result.json"))["asked_now"].as_u64(), Some(asked as u64), "{acq}");

    let out = run_to_end(dir.path(), &cfg);
    assert!(out.status.success(), "{}", text(&out));
    let b = check(&cheap, &frontier, &run, None, true);
    assert_eq!(b.verdicts[0] + b.verdicts[1], 24);
    assert_eq!(json(&run.join("result.json"))["stop_reason"], "max_comparisons");
}

#[test]
fn a_second_process_on_a_panel_run_folder_fails_at_once() {
    let (cheap, frontier) = (server(longer_wins), server(shorter_wins));
    let dir = tempfile::tempdir().unwrap();
    let cfg = panel_config(
        dir.path(),
        "twice",
        &cheap,
        &frontier,
        "  refit_every: 4\n  concurrency: 4\n",
        "  max_comparisons: 8\n",
    );
    let run = dir.path().join("runs/twice");
    cheap.hold([2]);
    let first = start(dir.path(), &cfg);
    wait_until("the first process mid-run", 60, || cheap.n_held() == 1);
    let t0 = Instant::now();
    let second = run_to_end(dir.path(), &cfg);
    assert!(t0.elapsed() < Duration::from_secs(10));
    assert!(!second.status.success());
    let msg = text(&second);
    assert!(msg.contains(&run.display().to_string()) && msg.contains("in use"), "{msg}");
    assert!(msg.contains(&format!("pid {}", first.id())), "names the holder: {msg}");
    cheap.release_all();
    let out = first.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let b = check(&cheap, &frontier, &run, None, true);
    assert_eq!(b.verdicts[0] + b.verdicts[1], 8);
}

/// docs/model.md shows what `topk-judge run configs/panel.yaml` prints, and a second run in a
/// fresh folder gives the same result.json (deterministic for a fixed seed).
#[test]
fn model_doc_shows_what_the_shipped_panel_run_prints_and_runs_repeat() {
    let dir = tempfile::tempdir().unwrap();
    let yaml = std::fs::read_to_string(root().join("configs/panel.yaml"))
        .unwrap()
        .replace("out_dir: ../runs", "out_dir: runs")
        .replace("../data/summeval_pools.jsonl", summeval().to_str().unwrap());
    let cfg = write(dir.path(), "panel.yaml", &yaml);
    let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", text(&out));
    let printed = stdout(&out).replace(
        &dir.path().join("runs/summeval-panel/result.json").display().to_string(),
        "runs/summeval-panel/result.json",
    );
    let doc = std::fs::read_to_string(root().join("docs/model.md")).unwrap();
    let block = format!("$ topk-judge run configs/panel.yaml\n{printed}```");
    assert!(doc.contains(&block), "docs/model.md should hold:\n{block}");
    let first = std::fs::read_to_string(dir.path().join("runs/summeval-panel/result.json")).unwrap();
    std::fs::rename(dir.path().join("runs/summeval-panel"), dir.path().join("runs/first")).unwrap();
    let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", text(&out));
    let second = std::fs::read_to_string(dir.path().join("runs/summeval-panel/result.json")).unwrap();
    assert_eq!(first, second);
    let r: Value = serde_json::from_str(&second).unwrap();
    assert!(r["spend_usd"].as_f64().unwrap() <= 0.06);
    assert_eq!(r["recall_at_k"], 1.0);
    // report: the panel's pages, each judge's row read from result.json here, and the table
    // docs/reports.md shows.
    let rep = run_bin(dir.path(), &["report", "runs/summeval-panel"]);
    assert!(rep.status.success(), "{}", text(&rep));
    let run = dir.path().join("runs/summeval-panel");
    let md = std::fs::read_to_string(run.join("report.md")).unwrap();
    for (j, fit) in r["judges"].as_array().unwrap().iter().zip(r["fit"]["judges"].as_array().unwrap()) {
        let row = format!(
            "| {} | {} | {} | {} | {:.6} | {:.3} ± {:.3} |",
            j["name"].as_str().unwrap(),
            if j["trusted"] == true { "yes" } else { "" },
            j["judge"].as_str().unwrap(),
            j["queries"],
            j["spend_usd"].as_f64().unwrap(),
            fit["kappa"]["value"].as_f64().unwrap(),
            fit["kappa"]["sd"].as_f64().unwrap()
        );
        assert!(md.contains(&row), "{row} not in\n{md}");
    }
    assert!(md.contains("- top-3 by θ̂: M12, M13, M0; recall@3 against the gold top-3 (M13, M12, M0): 1.00"), "{md}");
    // Certified sets in the words of the summary and of a single judge's report.
    assert!(
        md.contains("- top-3 not certified (ε = 0.05): 2 of 3 places decided (M12, M13, each π ≥ 0.95); M0, M22, M1 compete for the other 1 place\n- out (π ≤ 0.05): 11 (M14, M17, M5, M11, M23, M2, M8, M15, … and 3 more)"),
        "{md}"
    );
    let reports_doc = std::fs::read_to_string(root().join("docs/reports.md")).unwrap();
    let table: Vec<&str> = md.lines().skip_while(|l| !l.starts_with("| judge |")).take(4).collect();
    assert_eq!(table.len(), 4, "{md}");
    assert!(reports_doc.contains(&table.join("\n")), "docs/reports.md should hold:\n{}", table.join("\n"));
    let html = std::fs::read_to_string(run.join("report.html")).unwrap();
    assert_eq!(html.matches("<figure>").count(), 3, "θ̂, π and recall against spend");
    for svg in ["theta.svg", "membership.svg", "recall_vs_spend.svg"] {
        assert!(run.join(svg).exists(), "{svg}");
    }
    // A damaged panel result: the file and what was expected are named.
    let mut bad = r.clone();
    bad["fit"]["theta"].as_array_mut().unwrap().pop();
    let broken = dir.path().join("broken");
    std::fs::create_dir_all(&broken).unwrap();
    std::fs::write(broken.join("result.json"), bad.to_string()).unwrap();
    let out = run_bin(dir.path(), &["report", "broken"]);
    assert!(!out.status.success());
    assert!(text(&out).contains("result.json") && text(&out).contains("one entry per base (16)"), "{}", text(&out));
    // A result without its refits: the report says why the recall plot is missing.
    let nofits = dir.path().join("nofits");
    std::fs::create_dir_all(&nofits).unwrap();
    std::fs::write(nofits.join("result.json"), r.to_string()).unwrap();
    // Without its verdicts too, the folder is refused: flips and spend would read as none.
    let out = run_bin(dir.path(), &["report", "nofits"]);
    assert!(
        text(&out).contains("nofits/verdicts.jsonl: not found, while result.json counts 204 comparisons"),
        "{}",
        text(&out)
    );
    std::fs::copy(run.join("verdicts.jsonl"), nofits.join("verdicts.jsonl")).unwrap();
    let out = run_bin(dir.path(), &["report", "nofits"]);
    assert!(out.status.success(), "{}", text(&out));
    let md = std::fs::read_to_string(nofits.join("report.md")).unwrap();
    assert!(md.contains("panel_fits.jsonl: recall against spend is not drawn"), "{md}");
    assert_eq!(std::fs::read_to_string(nofits.join("report.html")).unwrap().matches("<figure>").count(), 2);
    // Not a run folder; an --out that is a file.
    std::fs::create_dir_all(dir.path().join("empty")).unwrap();
    let out = run_bin(dir.path(), &["report", "empty"]);
    assert!(
        !out.status.success() && text(&out).contains("result.json: not found: give a run folder"),
        "{}",
        text(&out)
    );
    std::fs::write(dir.path().join("notes.md"), "mine\n").unwrap();
    let out = run_bin(dir.path(), &["report", "runs/summeval-panel", "--out", "notes.md"]);
    assert!(!out.status.success() && text(&out).contains("notes.md: --out: not a folder"), "{}", text(&out));
    // By its config, a panel's report is of the judges that made it: one renamed, or its trust
    // dropped, is another panel (the folder's report was written for it without a word).
    assert!(run_bin(dir.path(), &["report", cfg.to_str().unwrap(), "--out", "by-config"]).status.success());
    for (edited, shows) in [
        (
            yaml.replace("name: frontier", "name: gold"),
            "judges ([cheap, frontier (trusted)] there, [cheap, gold (trusted)] here)",
        ),
        (
            yaml.replace("trusted: true", "trusted: false"),
            "judges ([cheap, frontier (trusted)] there, [cheap, frontier] here)",
        ),
        (
            yaml.replace("seed: 8", "seed: 9"),
            "judge \"frontier\" (\"mock (stochastic, pos_bias 0.05, verb_per_word 0, temperature 0.15, seed 8)\" there, \"mock (stochastic, pos_bias 0.05, verb_per_word 0, temperature 0.15, seed 9)\" here)",
        ),
    ] {
        let other = write(dir.path(), "panel.yaml", &edited);
        let out = run_bin(dir.path(), &["report", other.to_str().unwrap(), "--out", "by-config"]);
        assert!(!out.status.success() && text(&out).contains(&format!("configures: {shows};")), "{}", text(&out));
    }
    // Listed in another order, or run at another concurrency, it is the same panel and run.
    let (a, b) = yaml.split_once("  - name: frontier").unwrap();
    let (head, cheap) = a.split_once("judges:\n").unwrap();
    let (frontier, tail) = b.split_once("model:").unwrap();
    let reordered = format!("{head}judges:\n  - name: frontier{frontier}{cheap}model:{tail}")
        .replace("  concurrency: 8\n  seed: 42", "  concurrency: 2\n  seed: 42");
    assert!(
        reordered.contains("  concurrency: 2\n") && reordered.find("name: frontier") < reordered.find("name: cheap")
    );
    let other = write(dir.path(), "panel.yaml", &reordered);
    let out = run_bin(dir.path(), &["report", other.to_str().unwrap(), "--out", "by-config"]);
    assert!(out.status.success(), "{}", text(&out));
    write(dir.path(), "panel.yaml", &yaml);
    assert_eq!(std::fs::read_to_string(dir.path().join("notes.md")).unwrap(), "mine\n");
    let prof = run_bin(dir.path(), &["profile", "runs/summeval-panel"]);
    assert!(!prof.status.success() && text(&prof).contains("`profile` takes a single judge"), "{}", text(&prof));
    // The dry run: per judge what it has stored and what the budget left would buy of it.
    let dry = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--dry-run"]);
    assert!(dry.status.success(), "{}", text(&dry));
    // A single-judge flag is refused by the dry run as by the run.
    for flag in [&["--detach"][..], &["--fail-on-undecided"][..]] {
        let mut a = vec!["run", cfg.to_str().unwrap(), "--dry-run"];
        a.extend_from_slice(flag);
        let out = run_bin(dir.path(), &a);
        assert!(!out.status.success(), "{}", text(&out));
        assert!(text(&out).contains(&format!("{}: applies to a single judge only", flag[0])), "{}", text(&out));
    }
    let d = stdout(&dry);
    assert!(d.contains("judge panel of 2 judges"), "{d}");
    assert!(d.contains("238 ordered pairs per judge; spend booked $0.059975"), "{d}");
    assert!(d.contains("  cheap: 190 verdicts stored;"), "{d}");
    // $0.000025 left, below every query's worst case: said, not "at least 0".
    assert!(d.contains("the budget buys none of its 48 open queries (below)"), "{d}");
    assert!(
        d.contains("warning: the budget allows no query of any judge (the cheapest worst case is $0.000135): a real run would send nothing"),
        "{d}"
    );
    assert!(d.contains("  frontier (trusted): 14 verdicts stored;"), "{d}");
    assert!(d.contains("budget: max_comparisons none, max_usd $0.06 (for the panel as a whole)"), "{d}");
    // A fresh folder: the frontier judge's worst cases ($0.002227 – $0.002475 a query) fit 24 to
    // 26 times in $0.06.
    let fresh = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--dry-run", "--set", "name=fresh"]);
    let f = stdout(&fresh);
    assert!(
        f.contains("if every query went to it, the budget would buy at least 24 (up to 26 on the cheapest pairs) of its 238 open queries at worst-case cost (more when replies cost less)"),
        "{f}"
    );
    assert!(!dir.path().join("runs/fresh").exists(), "a dry run writes nothing");
    // max_comparisons binds before money: 20 of the 24 the frontier judge's worst cases allow,
    // exactly (the count, not the cost, decides it).
    let capped = run_bin(
        dir.path(),
        &["run", cfg.to_str().unwrap(), "--dry-run", "--set", "name=fresh", "--max-comparisons", "20"],
    );
    assert!(
        stdout(&capped).contains("  frontier (trusted): 0 verdicts stored; worst case per query $0.002227 – $0.002475 (mean $0.002357); if every query went to it, the budget would buy 20 of its 238 open queries (budget.max_comparisons leaves the panel 20 queries)\n"),
        "{}",
        text(&capped)
    );
    // The folder's 204 stored verdicts of both judges count against it.
    let spent =
        run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--dry-run", "--max-comparisons", "205", "--max-usd", "1"]);
    assert!(
        stdout(&spent).contains(
            "the budget would buy 1 of its 48 open queries (budget.max_comparisons leaves the panel 1 query)"
        ),
        "{}",
        text(&spent)
    );
    // A fingerprint check's books count against max_usd, as the run counts them: $0.0603 less
    // the judges' $0.059975 would buy 2 cheap queries, less the check's $0.000504 too none.
    let record = r#"{"key":"fingerprint 1: cheap:95af","pool_id":"dm-test-2377095dda83df778e34304b7a09813808105d3b","a":"M9","b":"M17","judge":"cheap","judge_settings":"a0b7","ts":1796585429,"y":0.0,"raw":"B","usage":{"prompt_tokens":500,"completion_tokens":1,"cached_tokens":0,"reasoning_tokens":0},"cost_usd":0.000504,"attempts":1,"latency_ms":6}"#;
    std::fs::write(dir.path().join("runs/summeval-panel/fingerprint_verdicts.jsonl"), format!("{record}\n")).unwrap();
    let fp = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--dry-run", "--max-usd", "0.0603"]);
    let f = stdout(&fp);
    assert!(
        f.contains("the run folder's books also hold $0.000504 ($0.000504 for the judge's fingerprint checks), counted against max_usd as the run counts it\n"),
        "{f}"
    );
    assert!(f.contains("the budget buys none of its 48 open queries (below)"), "{f}");
    // `--set` names a judge of the panel by its index.
    let set = run_bin(
        dir.path(),
        &["run", cfg.to_str().unwrap(), "--dry-run", "--set", "name=fresh", "--set", "judges.0.mock.temperature=0.5"],
    );
    assert!(
        stdout(&set).contains("mock (stochastic, pos_bias 0.3, verb_per_word 0.01, temperature 0.5, seed 7)"),
        "{}",
        text(&set)
    );
    let past = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--dry-run", "--set", "judges.2.mock.seed=1"]);
    assert!(text(&past).contains("judges is a list of 2 entries"), "{}", text(&past));
}

/// `compare` puts a panel's run beside single-judge runs of its pool: its row (spend, recall,
/// certified, flips) from its own files, and its recall curve.
#[test]
fn compare_puts_a_panel_run_beside_single_judge_runs() {
    let dir = tempfile::tempdir().unwrap();
    for c in ["cheap.yaml", "panel.yaml"] {
        let yaml = std::fs::read_to_string(root().join("configs").join(c))
            .unwrap()
            .replace("out_dir: ../runs", "out_dir: runs")
            .replace("../data/", &format!("{}/", root().join("data").display()))
            .replace("max_usd: 0.06", "max_usd: 0.03");
        let cfg = write(dir.path(), c, &yaml);
        let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet"]);
        assert!(out.status.success(), "{}", text(&out));
    }
    let out = run_bin(dir.path(), &["compare", "runs/cheap", "runs/summeval-panel", "--out", "cmp"]);
    assert!(out.status.success(), "{}", text(&out));
    let c = json(&dir.path().join("cmp/compare.json"));
    let r = json(&dir.path().join("runs/summeval-panel/result.json"));
    let row = &c["rows"][1];
    assert_eq!(row["run"], "summeval-panel");
    assert_eq!(row["judge"], "panel (cheap, frontier)");
    let own: f64 = r["judges"].as_array().unwrap().iter().map(|j| j["spend_usd"].as_f64().unwrap()).sum();
    assert!((row["spend_usd"].as_f64().unwrap() - own).abs() < 1e-12, "{row} against {own}");
    assert!(
        (own - r["spend_usd"].as_f64().unwrap()).abs() < 1e-9,
        "alone in its folder, the panel's own spend is the folder's"
    );
    assert_eq!(row["comparisons"], r["comparisons"]);
    assert_eq!(row["topk"], r["topk"]);
    assert_eq!(row["certified"], r["certified"]);
    // Recall against the gold top-3 the single run reports, |S ∩ T| / k.
    let gold = strs(&c["target_topk"]);
    let hits = strs(&r["topk"]).iter().filter(|b| gold.contains(b)).count();
    assert_eq!(row["recall"].as_f64().unwrap(), hits as f64 / 3.0);
    // Flips counted from the panel's verdicts: pairs asked in both orders (by one judge).
    let both: usize =
        r["fit"]["judges"].as_array().unwrap().iter().map(|j| j["both_orders"].as_u64().unwrap() as usize).sum();
    assert_eq!(row["both_order_pairs"].as_u64().unwrap() as usize, both);
    let svg = std::fs::read_to_string(dir.path().join("cmp/recall_vs_spend.svg")).unwrap();
    assert!(svg.contains("summeval-panel"), "the panel's curve is in the plot");
    let fits = lines(&dir.path().join("runs/summeval-panel/panel_fits.jsonl"));
    assert!(fits.len() > 10 && fits.last().unwrap()["topk"] == r["topk"], "{}", fits.len());
    // Another pool's panel run is refused, and a panel run is not a reference.
    let other = run_bin(dir.path(), &["compare", "runs/summeval-panel", &root().join("data").display().to_string()]);
    assert!(!other.status.success());
    let refd =
        run_bin(dir.path(), &["compare", "runs/cheap", "runs/summeval-panel", "--reference", "runs/summeval-panel"]);
    assert!(!refd.status.success());
    assert!(
        text(&refd).contains("--reference runs/summeval-panel: a judge panel's run cannot be the reference"),
        "{}",
        text(&refd)
    );

    // A single-judge run under other settings (another seed: no member takes its verdicts
    // over) and then a panel in one folder: the panel's row counts its own verdicts and spend,
    // and its curve starts at its own $0.
    for (c, seed) in [("cheap.yaml", "judge.mock.seed=99"), ("panel.yaml", "judges.0.mock.seed=7")] {
        let out = run_bin(dir.path(), &["run", c, "--quiet", "--set", "name=mixed", "--set", seed]);
        assert!(out.status.success(), "{}", text(&out));
    }
    let out = run_bin(dir.path(), &["compare", "runs/cheap", "runs/mixed", "--out", "cmp2"]);
    assert!(out.status.success(), "{}", text(&out));
    let c = json(&dir.path().join("cmp2/compare.json"));
    let r = json(&dir.path().join("runs/mixed/result.json"));
    let own: f64 = r["judges"].as_array().unwrap().iter().map(|j| j["spend_usd"].as_f64().unwrap()).sum();
    assert!((r["spend_usd"].as_f64().unwrap() - own).abs() < 1e-12, "{r}");
    let folder = r["folder_spend"]["spend_usd"].as_f64().unwrap();
    assert!(folder > own + 0.005, "the folder holds the single-judge run's spend too: {r}");
    assert!((r["folder_spend"]["other_usd"].as_f64().unwrap() - (folder - own)).abs() < 1e-12, "{r}");
    let row = &c["rows"][1];
    assert!((row["spend_usd"].as_f64().unwrap() - own).abs() < 1e-12, "{row} against {own}");
    let both: u64 = r["fit"]["judges"].as_array().unwrap().iter().map(|j| j["both_orders"].as_u64().unwrap()).sum();
    assert_eq!(row["both_order_pairs"].as_u64().unwrap(), both, "{row}");
    let fits = lines(&dir.path().join("runs/mixed/panel_fits.jsonl"));
    assert_eq!(fits[0]["spend_usd"], 0.0, "{}", fits[0]);
    assert!((fits.last().unwrap()["spend_usd"].as_f64().unwrap() - own).abs() < 1e-9);
    // report.md says what the rest of the folder's spend is, in the run summary's words.
    let rep = run_bin(dir.path(), &["report", "runs/mixed", "--out", "rep"]);
    assert!(rep.status.success(), "{}", text(&rep));
    let md = std::fs::read_to_string(dir.path().join("rep/report.md")).unwrap();
    let other = r["folder_spend"]["other_usd"].as_f64().unwrap();
    let says = format!(
        "spend: ${own:.6} by the panel's judges; the run folder's books hold ${folder:.6} of max_usd $0.03 (of it ${other:.6} under other settings (earlier configs, judges or pools))"
    );
    // (report.md escapes `$` as `\$`)
    assert!(md.contains(&says.replace('$', "\\$")), "{says}\n{md}");
    // The same folder run again with one judge edited: its lines are told apart, and only the
    // last configuration's are read.
    let out =
        run_bin(dir.path(), &["run", "panel.yaml", "--quiet", "--set", "name=mixed", "--set", "judges.0.mock.seed=3"]);
    assert!(out.status.success(), "{}", text(&out));
    let fits = lines(&dir.path().join("runs/mixed/panel_fits.jsonl"));
    let configs: HashSet<&str> = fits.iter().map(|f| f["config"].as_str().unwrap()).collect();
    assert_eq!(configs.len(), 2, "two configurations' refits");
    let panel = topk_judge::report::compare::PanelRunDir::load(&dir.path().join("runs/mixed")).unwrap();
    let last = fits.last().unwrap()["config"].as_str().unwrap();
    let n_last = fits.iter().filter(|f| f["config"] == last).count();
    assert_eq!(panel.fits.len(), n_last);
}

/// configs/panel.yaml in `dir` with `edit` applied, as `NAME.yaml`.
fn shipped_panel(dir: &Path, name: &str, edit: impl Fn(String) -> String) -> PathBuf {
    shipped_as(dir, "panel.yaml", &format!("{name}.yaml"), edit)
}

/// A panel run stopped before its trusted judge was asked: `fit` on it says the config marks
/// that judge trusted (it advised marking one, as if none were).
#[test]
fn fit_names_a_trusted_judge_without_verdicts_yet() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = shipped_panel(dir.path(), "early", |y| y);
    let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet", "--max-comparisons", "6"]);
    assert!(out.status.success(), "{}", text(&out));
    let r = json(&dir.path().join("runs/summeval-panel/result.json"));
    assert_eq!(r["fit"]["judges"][1]["verdicts"], 0, "{r}");
    let out = run_bin(dir.path(), &["fit", "runs/summeval-panel"]);
    assert!(
        out.status.success()
            && text(&out).contains("note: judge \"frontier\" is marked trusted in the run's config but has no verdict here yet, so it cannot anchor the other judges' c")
            && text(&out).contains("identification: no judge with verdicts here is trusted")
            && text(&out).contains("The run's trusted judge has none yet (below): its verdicts identify the split.")
            && !text(&out).contains("Mark a judge"),
        "{}",
        text(&out)
    );
    // Its trusted judge is part of the panel's model: dropping it is another run of the folder,
    // said (it was not, and panel_fits.jsonl kept one config hash for both models).
    let hash = |d: &Path| {
        let fits = std::fs::read_to_string(d.join("runs/summeval-panel/panel_fits.jsonl")).unwrap();
        let last: Value = serde_json::from_str(fits.lines().last().unwrap()).unwrap();
        last["config"].as_str().unwrap().to_owned()
    };
    let before = hash(dir.path());
    let out = run_bin(
        dir.path(),
        &["run", cfg.to_str().unwrap(), "--quiet", "--max-comparisons", "8", "--set", "judges.1.trusted=false"],
    );
    assert!(
        out.status.success()
            && text(&out).contains("runs/summeval-panel holds a run with a different model, k, acquisition or pool"),
        "{}",
        text(&out)
    );
    assert_ne!(hash(dir.path()), before);
}

/// A panel resumed under a budget its folder already reaches says so rather than printing a
/// spend above max_usd unexplained; a huge max_usd is printed in scientific notation.
#[test]
fn a_panel_resumed_under_a_used_up_budget_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = shipped_panel(dir.path(), "panel", |y| y.replace("max_usd: 0.06", "max_usd: 0.02"));
    assert!(run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet"]).status.success());
    let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--max-usd", "0.01"]);
    assert!(out.status.success(), "{}", text(&out));
    let said = stdout(&out);
    assert!(
        said.contains("already reach max_usd $0.0100; raise it (budget.max_usd, --max-usd) to go on\n")
            && said.contains("\n  the run folder's books ($0.0"),
        "{said}"
    );
    // Its report says the budget was lowered below the books (no reply passed a reservation).
    assert!(run_bin(dir.path(), &["report", "runs/summeval-panel"]).status.success());
    let md = std::fs::read_to_string(dir.path().join("runs/summeval-panel/report.md")).unwrap();
    assert!(
        md.contains("above budget.max_usd \\$0.0100 (") && md.contains("spent before budget.max_usd was lowered to it"),
        "{md}"
    );
    let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--max-comparisons", "10", "--max-usd", "1e300"]);
    let said = stdout(&out);
    assert!(
        said.contains("of max_usd $1e300\n  the stored verdicts already reach max_comparisons; raise it (budget.max_comparisons, --max-comparisons) to go on\n"),
        "{said}"
    );
    let tiny = shipped_panel(dir.path(), "tiny", |y| {
        y.replace("name: summeval-panel", "name: tiny").replace("max_usd: 0.06", "max_usd: 0.00001")
    });
    let said = stdout(&run_bin(dir.path(), &["run", tiny.to_str().unwrap()]));
    assert!(
        said.contains("  max_usd $0.00001 does not cover one query's worst-case cost of any judge: nothing was bought"),
        "{said}"
    );
}

/// A member whose cheapest query's worst case is above what max_usd leaves is asked nothing: the
/// run and its dry run say so, naming it and what it costs the panel (hunt 41: the dry run said
/// "at least 0 … (more when replies cost less)", the run nothing).
#[test]
fn a_member_the_budget_cannot_reserve_one_query_of_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = shipped_panel(dir.path(), "panel", |y| {
        y.replace(
            "input_usd_per_mtok: 2.50, output_usd_per_mtok: 10.0",
            "input_usd_per_mtok: 250, output_usd_per_mtok: 10.0",
        )
    });
    let warned = "judge frontier: the cheapest worst case of its open queries, $";
    let trusted = "is asked nothing in this run (as the trusted judge, it anchors no other judge's bias c); raising budget.max_usd (--max-usd) by $";
    let dry = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--dry-run"]);
    assert!(dry.status.success(), "{}", text(&dry));
    let said = stdout(&dry);
    assert!(said.contains(warned) && said.contains(trusted), "{said}");
    assert!(
        said.contains("the budget buys none of its 238 open queries (below)") && !said.contains("at least 0"),
        "{said}"
    );
    // The raise is the cheapest worst case (the one the member's line gives) less the $0.06 left.
    let cheapest: f64 = said.split("frontier (trusted): 0 verdicts stored; worst case per query $").nth(1).unwrap()
        [..8]
        .parse()
        .unwrap();
    assert!(said.contains(&format!("open queries, ${cheapest:.6}, is above the $0.060000")), "{said}");
    assert!(
        said.contains(&format!(
            "by ${:.6} is the least that could ask it, and the other judges' queries",
            cheapest - 0.06
        )),
        "{said}"
    );
    let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(text(&out).matches(warned).count(), 1, "{}", text(&out));
    let r = json(&dir.path().join("runs/summeval-panel/result.json"));
    assert_eq!(r["fit"]["judges"][1]["verdicts"].as_u64(), Some(0), "{r}");
    assert!(r["fit"]["judges"][0]["verdicts"].as_u64().unwrap() > 0, "{r}");
}

/// A judge that answers only some pairs (a replay of a sparse recording) is asked only those;
/// the other judge goes on with the rest, and the run ends when both have nothing left.
#[test]
fn a_judge_that_answers_some_pairs_is_asked_only_those() {
    let dir = tempfile::tempdir().unwrap();
    let recording = root().join("data/panel_verdicts.jsonl");
    let cfg = shipped_panel(dir.path(), "sparse", |y| {
        let (head, _) = y.split_once("  - name: frontier").unwrap();
        format!(
            "{head}  - name: frontier\n    trusted: true\n    replay: {{file: {}, judge: frontier, missing: unavailable}}\nacquisition: {{refit_every: 8, concurrency: 8, seed: 42, mc_draws: 300}}\nbudget: {{max_comparisons: 400}}\n",
            recording.display()
        )
    });
    let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", text(&out));
    let r = json(&dir.path().join("runs/summeval-panel/result.json"));
    assert_eq!(r["stop_reason"], "exhausted", "{}", stdout(&out));
    // Every ordered pair of distinct texts for the mock judge, every recorded one for the replay.
    let recorded = std::fs::read_to_string(&recording).unwrap().lines().filter(|l| l.contains("\"frontier\"")).count();
    assert_eq!(
        (r["judges"][0]["queries"].as_u64(), r["judges"][1]["queries"].as_u64()),
        (Some(238), Some(recorded as u64))
    );
    assert_eq!(r["asked_now"], 238 + recorded as u64, "no query was sent that the replay cannot answer");
}

/// Editing a judge under the same name: `fit RUN --panel` fits each judge's verdicts of its
/// configuration now, as the run did; a judge list in another order is the same panel; a panel
/// with no verdict claims no top-k; a single-judge run's verdicts in the folder are said not to
/// be reused.
#[test]
fn edited_renamed_and_reordered_panels_keep_their_verdicts_apart() {
    let dir = tempfile::tempdir().unwrap();
    let first = shipped_panel(dir.path(), "a", |y| y.replace("max_usd: 0.06", "max_comparisons: 60"));
    let out = run_bin(dir.path(), &["run", first.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", text(&out));
    // The cheap judge's seed changes: its 60 verdicts are another configuration's.
    let edited = shipped_panel(dir.path(), "b", |y| {
        y.replace("max_usd: 0.06", "max_comparisons: 40")
            .replace("temperature: 0.25, seed: 7", "temperature: 0.25, seed: 9")
    });
    let dry = run_bin(dir.path(), &["run", edited.to_str().unwrap(), "--dry-run"]);
    assert!(stderr(&dry).contains("holds a run with a different judge"), "the dry run says it too: {}", text(&dry));
    let dry = run_bin(dir.path(), &["run", first.to_str().unwrap(), "--dry-run"]);
    assert!(!stderr(&dry).contains("holds a run"), "{}", text(&dry));
    let out = run_bin(dir.path(), &["run", edited.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(stderr(&out).contains("holds a run with a different judge"), "{}", stderr(&out));
    assert!(stdout(&out).contains("other books of this folder: $"), "{}", stdout(&out));
    let run = dir.path().join("runs/summeval-panel");
    let r = json(&run.join("result.json"));
    assert_eq!(r["comparisons"], 40);
    // spend_usd is the judges' as configured now (compare's figure); folder_spend holds all the
    // books: every record's cost, the cheap judge's earlier seed's among them.
    let judges_usd: f64 = r["judges"].as_array().unwrap().iter().map(|j| j["spend_usd"].as_f64().unwrap()).sum();
    let books_usd: f64 = lines(&run.join("verdicts.jsonl")).iter().map(|v| v["cost_usd"].as_f64().unwrap()).sum();
    let (spend, folder) = (r["spend_usd"].as_f64().unwrap(), &r["folder_spend"]);
    assert!((spend - judges_usd).abs() < 1e-12, "{r}");
    assert!((folder["spend_usd"].as_f64().unwrap() - books_usd).abs() < 1e-12, "{folder}");
    assert!((folder["other_usd"].as_f64().unwrap() - (books_usd - spend)).abs() < 1e-12, "{folder}");
    assert!(folder["other_usd"].as_f64().unwrap() > 0.0, "{folder}");
    let fit = run_bin(dir.path(), &["fit", run.to_str().unwrap(), "--panel", "--out", "f.json"]);
    assert!(fit.status.success(), "{}", text(&fit));
    assert!(text(&fit).contains("records of") && text(&fit).contains("earlier configurations"), "{}", text(&fit));
    let f = json(&dir.path().join("f.json"));
    assert_eq!(f["comparisons"], r["fit"]["comparisons"]);
    for (x, y) in f["theta"].as_array().unwrap().iter().zip(r["fit"]["theta"].as_array().unwrap()) {
        assert!((x.as_f64().unwrap() - y.as_f64().unwrap()).abs() < 1e-9, "{x} vs {y}");
    }
    // compare counts each judge's flips over its verdicts of its configuration now: the
    // frontier's (unchanged) and the cheap judge's of its last settings id, counted here apart.
    let records = lines(&run.join("verdicts.jsonl"));
    let cheap_now = records.iter().rev().find(|v| v["judge"] == "cheap").unwrap()["judge_settings"].clone();
    let mut flips = (0, 0);
    for judge in ["cheap", "frontier"] {
        let mine: Vec<&Value> = records
            .iter()
            .filter(|v| v["judge"] == judge && (judge == "frontier" || v["judge_settings"] == cheap_now))
            .collect();
        let y = |a: &Value, b: &Value| mine.iter().find(|v| v["a"] == *a && v["b"] == *b).and_then(|v| v["y"].as_f64());
        for v in &mine {
            if let (Some(y1), Some(y2)) = (v["y"].as_f64(), y(&v["b"], &v["a"]))
                && v["a"].as_str() < v["b"].as_str()
            {
                flips.1 += 1;
                flips.0 += usize::from((y1 > 0.5 && y2 > 0.5) || (y1 < 0.5 && y2 < 0.5));
            }
        }
    }
    assert!(records.len() > 60 && flips.1 > 0, "{} records, {flips:?}", records.len());
    let out = run_bin(dir.path(), &["compare", run.to_str().unwrap(), "--out", "cmp"]);
    assert!(out.status.success(), "{}", text(&out));
    let row = &json(&dir.path().join("cmp/compare.json"))["rows"][0];
    assert_eq!(row["spend_usd"], r["spend_usd"], "compare and result.json give one spend");
    let out = run_bin(dir.path(), &["report", run.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    let md = std::fs::read_to_string(run.join("report.md")).unwrap();
    let said = format!(
        "spend: ${:.6} by the panel's judges; the run folder's books hold ${:.6} (of it ${:.6} under other settings",
        r["spend_usd"].as_f64().unwrap(),
        r["folder_spend"]["spend_usd"].as_f64().unwrap(),
        r["folder_spend"]["other_usd"].as_f64().unwrap()
    );
    // Markdown writes `$` as `\$`.
    let said = said.replace('$', "\\$");
    assert!(md.contains(&said), "{said}\n{md}");
    assert_eq!((row["flips"].as_u64(), row["both_order_pairs"].as_u64()), (Some(flips.0 as u64), Some(flips.1 as u64)));
    // The same judges in the other order: the same panel, nothing asked again, no warning.
    let reordered = shipped_panel(dir.path(), "c", |y| {
        let y = y
            .replace("max_usd: 0.06", "max_comparisons: 40")
            .replace("temperature: 0.25, seed: 7", "temperature: 0.25, seed: 9");
        let (head, rest) = y.split_once("  - name: cheap\n").unwrap();
        let (cheap, rest) = rest.split_once("  - name: frontier\n").unwrap();
        let (frontier, tail) = rest.split_once("model:").unwrap();
        format!("{head}  - name: frontier\n{frontier}  - name: cheap\n{cheap}model:{tail}")
    });
    let out = run_bin(dir.path(), &["run", reordered.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(stdout(&out).contains("0 asked now, 40 reused"), "{}", stdout(&out));
    assert!(!stderr(&out).contains("different judge"), "{}", stderr(&out));
    // No money, no verdict: no top-k and no recall claimed.
    let broke = shipped_panel(dir.path(), "d", |y| {
        y.replace("name: summeval-panel", "name: broke").replace("max_usd: 0.06", "max_usd: 0.0")
    });
    let out = run_bin(dir.path(), &["run", broke.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(stdout(&out).contains("no valid verdict: no top-k and no recall is claimed"), "{}", stdout(&out));
    let r = json(&dir.path().join("runs/broke/result.json"));
    assert_eq!((r["topk"].as_array().unwrap().len(), &r["recall_at_k"]), (0, &Value::Null));
    // A single-judge run of the cheap judge, then a panel in its folder: taken over, said.
    let single = shipped_panel(dir.path(), "e", |y| {
        let y = y.replace("name: summeval-panel", "name: grow").replace("max_usd: 0.06", "max_comparisons: 16");
        let (head, rest) = y.split_once("  - name: frontier\n").unwrap();
        format!("{head}{}", &rest[rest.find("model:").unwrap()..])
    });
    let out = run_bin(dir.path(), &["run", single.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", text(&out));
    // A single-judge run in the panel's folder: `fit RUN --panel` fits the run's judge as
    // configured now (one judge: no panel), not every earlier judge of the folder. Judge cheap's
    // verdicts stored by the panel are its own (same settings): reused, and fitted.
    let before = lines(&run.join("verdicts.jsonl"));
    let alone = shipped_panel(dir.path(), "e2", |y| {
        let y = y.replace("max_usd: 0.06", "max_comparisons: 8");
        let (head, rest) = y.split_once("  - name: frontier\n").unwrap();
        format!("{head}{}", &rest[rest.find("model:").unwrap()..])
    });
    let out = run_bin(dir.path(), &["run", alone.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", text(&out));
    let fit = run_bin(dir.path(), &["fit", run.to_str().unwrap(), "--panel"]);
    assert!(fit.status.success(), "{}", text(&fit));
    assert!(stdout(&fit).contains("judge panel of 1 judge (shared θ"), "{}", stdout(&fit));
    assert_eq!(lines(&run.join("verdicts.jsonl")).len(), before.len(), "nothing bought: {}", text(&out));
    let reused: usize = text(&out)
        .split("resumed: ")
        .nth(1)
        .and_then(|t| t.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{}", text(&out)));
    assert!(reused > 8, "{}", text(&out));
    assert!(stdout(&fit).contains(&format!(", {reused} valid verdicts\n")), "{}", stdout(&fit));
    assert!(text(&fit).contains("a panel of one judge is the model of docs/model.md §2"), "{}", text(&fit));
    let grown = shipped_panel(dir.path(), "f", |y| {
        y.replace("name: summeval-panel", "name: grow").replace("max_usd: 0.06", "max_comparisons: 16")
    });
    let out = run_bin(dir.path(), &["run", grown.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        stderr(&out).contains("judge \"cheap\" takes over 16 verdicts its configuration stored in a single-judge run"),
        "{}",
        stderr(&out)
    );
}

/// A panel over the systems of [`systems_pool`]: a cheap judge of family "acme" that favours
/// its family's answers by 0.25 quality units, a mid judge of family "zeta" that does not, and a
/// trusted frontier judge.
const SYSTEMS_PANEL: &str = r#"name: sp
out_dir: runs
pool: {file: systems.jsonl, ids: all}
k: 3
judges:
  - name: cheap
    family: acme
    mock: {mode: stochastic, pos_bias: 0.3, verb_per_word: 0.01, temperature: 0.25, seed: 7,
           input_usd_per_mtok: 0.15, output_usd_per_mtok: 0.60,
           self_preference: {systems: [acme-a, acme-b, acme-c], bonus: 0.25}}
  - name: mid
    family: zeta
    mock: {mode: stochastic, pos_bias: 0.1, verb_per_word: 0.005, temperature: 0.2, seed: 9,
           input_usd_per_mtok: 0.15, output_usd_per_mtok: 0.60}
  - name: frontier
    trusted: true
    mock: {mode: stochastic, pos_bias: 0.05, verb_per_word: 0.0, temperature: 0.15, seed: 8,
           input_usd_per_mtok: 2.50, output_usd_per_mtok: 10.0}
model:
  kind: bias_aware
  covariates:
    - {name: words, transform: zscore}
acquisition: {refit_every: 16, concurrency: 16, seed: 42, mc_draws: 500}
budget: {max_usd: 0.2}
"#;

/// A pool file of `prompts` prompts × 8 systems whose quality is the system's (no per-answer
/// quality, so the model of docs/systems.md holds exactly) and whose lengths vary per answer:
/// systems acme-a, acme-b, acme-c (family "acme" by name) and zeta-d … zeta-h.
fn systems_pool(dir: &Path, prompts: usize) -> PathBuf {
    let systems = ["acme-a", "zeta-d", "acme-b", "zeta-e", "zeta-f", "acme-c", "zeta-g", "zeta-h"];
    let quality = [3.6, 3.5, 3.2, 3.1, 2.9, 2.8, 2.6, 2.4];
    let mut out = String::new();
    for p in 0..prompts {
        let items: Vec<Value> = systems
            .iter()
            .zip(quality)
            .enumerate()
            .map(|(s, (sys, q))| {
                let words = 40 + (p * 7 + s * 13) % 41;
                serde_json::json!({"id": format!("{sys}"), "system": sys, "quality": q,
                    "text": vec![format!("w{p}s{s}"); words].join(" ")})
            })
            .collect();
        out.push_str(
            &serde_json::json!({"pool_id": format!("p{p:02}"), "task": "Summarise the article.", "items": items})
                .to_string(),
        );
        out.push('\n');
    }
    write(dir, "systems.jsonl", &out)
}

/// Self-preference in a panel run over systems (docs/model.md §8): the cheap judge adds 0.25
/// quality units (1 logit at its temperature 0.25) to its own family's answers, the mid judge,
/// of another family, adds nothing. The run recovers each judge's "same family" coefficient
/// within 2 sd of the truth (1 and 0 logits) against the trusted judge, and `fit RUN --panel`
/// repeats the run's fit from the folder, with the config's trusted judge and families.
#[test]
fn a_panel_over_systems_recovers_each_judges_self_preference() {
    let dir = tempfile::tempdir().unwrap();
    systems_pool(dir.path(), 40);
    let cfg = write(dir.path(), "sp.yaml", SYSTEMS_PANEL);
    let dry = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--dry-run"]);
    assert!(dry.status.success(), "{}", text(&dry));
    assert!(stdout(&dry).contains("family \"acme\": judge cheap; systems acme-a, acme-b, acme-c"), "{}", text(&dry));
    assert!(stdout(&dry).contains("family \"zeta\": judge mid; systems zeta-d, zeta-e, zeta-f, zeta-g, zeta-h"));
    let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", text(&out));
    let run = dir.path().join("runs/sp");
    let r = json(&run.join("result.json"));
    let f = &r["fit"];
    assert_eq!(f["covariates"], serde_json::json!(["words", "same family"]));
    let judge = |name: &str| f["judges"].as_array().unwrap().iter().find(|j| j["name"] == name).unwrap().clone();
    // Truths in each judge's logits: bonus / temperature, and κ = pos_bias / temperature.
    for (name, same, kappa) in [("cheap", 1.0, 0.3 / 0.25), ("mid", 0.0, 0.1 / 0.2)] {
        let j = judge(name);
        let (c, sd) = (j["c"][1]["value"].as_f64().unwrap(), j["c"][1]["sd"].as_f64().unwrap());
        assert!((c - same).abs() < 2.0 * sd, "{name}: ĉ same family {c} ± {sd}, truth {same}\n{}", stdout(&out));
        assert!(sd < 0.3, "{name}: sd {sd} (the verdicts identify it)");
        assert!(j["c_profile_nats"][1].as_f64().unwrap() > 2.0, "{j}");
        let (k, ksd) = (j["kappa"]["value"].as_f64().unwrap(), j["kappa"]["sd"].as_f64().unwrap());
        assert!((k - kappa).abs() < 2.0 * ksd, "{name}: κ̂ {k} ± {ksd}, truth {kappa}");
    }
    assert!(judge("frontier")["verdicts"].as_u64().unwrap() >= 10, "{}", stdout(&out));
    // Every query compares two answers to one prompt.
    for v in lines(&run.join("verdicts.jsonl")) {
        let (a, b) = (v["a"].as_str().unwrap(), v["b"].as_str().unwrap());
        assert_eq!(a.split('/').next(), b.split('/').next(), "{v}");
    }
    let fit = run_bin(dir.path(), &["fit", run.to_str().unwrap(), "--panel", "--out", "f.json"]);
    assert!(fit.status.success(), "{}", text(&fit));
    let g = json(&dir.path().join("f.json"));
    for (x, y) in g["theta"].as_array().unwrap().iter().zip(f["theta"].as_array().unwrap()) {
        assert!((x.as_f64().unwrap() - y.as_f64().unwrap()).abs() < 1e-9, "{x} vs {y}");
    }
    assert_eq!(g["covariates"], f["covariates"]);
}

/// A family or a self-preference that cannot apply is named by its key, with what was expected.
#[test]
fn families_and_self_preferences_that_cannot_apply_are_refused_by_key() {
    let dir = tempfile::tempdir().unwrap();
    systems_pool(dir.path(), 4);
    let cases: &[(&str, &str, &str)] = &[
        (
            "    trusted: true\n",
            "    trusted: true\n    family: acme\n",
            "judges[2].family: \"frontier\" is the trusted judge",
        ),
        (
            "pool: {file: systems.jsonl, ids: all}",
            "pool: {file: systems.jsonl}",
            "judges[0].mock.self_preference.systems: a self-preference favours systems",
        ),
        (
            "self_preference: {systems: [acme-a, acme-b, acme-c], bonus: 0.25}",
            "self_preference: {systems: [acme-a, acme-x], bonus: 0.25}",
            "judges[0].mock.self_preference.systems: no system \"acme-x\" in the run; its systems: acme-a, zeta-d",
        ),
        (
            "ids: all}",
            "ids: all, families: {zeta-h: acme, nope: acme}}",
            "pool.families.nope: no system \"nope\" in the run",
        ),
        ("ids: all}", "ids: all, families: {zeta-h: beta}}", "pool.families.zeta-h: no judge is of family \"beta\""),
        ("    family: zeta\n", "    family: \" \"\n", "judges[1].family: empty"),
        (
            "[acme-a, acme-b, acme-c]",
            "[acme-a, acme-b, acme-a]",
            "judges[0].mock.self_preference.systems: \"acme-a\" is listed twice",
        ),
    ];
    for (from, to, want) in cases {
        assert!(SYSTEMS_PANEL.contains(from), "{from}");
        let cfg = write(dir.path(), "bad.yaml", &SYSTEMS_PANEL.replacen(from, to, 1));
        let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--dry-run"]);
        assert!(!out.status.success() && text(&out).contains(want), "{to}: {}", text(&out));
        assert!(text(&out).contains("bad.yaml"), "{}", text(&out));
    }
    // Over one pool, a family is refused too (self-preference is a systems covariate).
    let one = SYSTEMS_PANEL
        .replacen("pool: {file: systems.jsonl, ids: all}", "pool: {file: systems.jsonl}", 1)
        .replacen(",\n           self_preference: {systems: [acme-a, acme-b, acme-c], bonus: 0.25}", "", 1);
    let cfg = write(dir.path(), "one.yaml", &one);
    let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--dry-run"]);
    assert!(
        !out.status.success() && text(&out).contains("judges[0].family: self-preference is a covariate of systems"),
        "{}",
        text(&out)
    );
    // Faults an override brings are the override's; a rule of another key that fails because
    // of one says the file was changed by it.
    let cfg = write(dir.path(), "good.yaml", SYSTEMS_PANEL);
    let set = |args: &[&str]| {
        let mut a = vec!["run", cfg.to_str().unwrap(), "--dry-run"];
        a.extend_from_slice(args);
        run_bin(dir.path(), &a)
    };
    let out = set(&["--set", "judges.2.family=acme"]);
    assert!(
        text(&out).contains("error: --set judges.2.family=acme: judges[2].family: \"frontier\" is the trusted judge"),
        "{}",
        text(&out)
    );
    let out = set(&["--set", "judges.0.mock.temperature=-1"]);
    assert!(
        text(&out).contains(
            "error: --set judges.0.mock.temperature=-1: judges[0].mock.temperature: -1 must be a finite number > 0"
        ),
        "{}",
        text(&out)
    );
    let out = set(&["--set", "pool.families={zeta-h: beta}"]);
    assert!(
        text(&out).contains(
            "error: --set pool.families={zeta-h: beta}: pool.families.zeta-h: no judge is of family \"beta\""
        ),
        "{}",
        text(&out)
    );
    let with =
        write(dir.path(), "with.yaml", &SYSTEMS_PANEL.replacen("ids: all}", "ids: all, families: {zeta-h: acme}}", 1));
    let out = run_bin(dir.path(), &["run", with.to_str().unwrap(), "--dry-run", "--set", "judges.0.family=beta"]);
    assert!(
        text(&out).contains(
            "with.yaml:3: pool.families.zeta-h: no judge is of family \"acme\" (the judges' families: beta, zeta)"
        ) && text(&out).contains("(in the file as changed by --set judges.0.family=beta)"),
        "{}",
        text(&out)
    );
    // pool.families over one pool, or with one judge, says what families need.
    let plain = SYSTEMS_PANEL.replacen(
        ",\n           self_preference: {systems: [acme-a, acme-b, acme-c], bonus: 0.25}",
        "",
        1,
    );
    let plain = write(dir.path(), "plain.yaml", &plain);
    let out = run_bin(
        dir.path(),
        &[
            "run",
            plain.to_str().unwrap(),
            "--dry-run",
            "--set",
            "pool.ids=null",
            "--set",
            "pool.families={acme-a: acme}",
        ],
    );
    assert!(
        text(&out).contains("pool.families: a system's model family is a covariate of a judge panel over many prompts"),
        "{}",
        text(&out)
    );
    // A system's family is spelled as its judge's, whatever the case.
    let out = set(&["--set", "pool.families={zeta-h: ACME}"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        stdout(&out).contains("family \"acme\": judge cheap; systems acme-a, acme-b, acme-c, zeta-h"),
        "{}",
        text(&out)
    );
    // A family of every system, or of none, leaves its coefficient to the prior: said.
    let all = SYSTEMS_PANEL.replacen("family: acme", "family: a", 1).replacen("family: zeta", "family: zz", 1);
    let cfg = write(dir.path(), "all.yaml", &all);
    let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--dry-run"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("every system is of family \"a\" (judge cheap)"), "{}", text(&out));
    assert!(text(&out).contains("no system is of family \"zz\" (judge mid;"), "{}", text(&out));
}

/// configs/panel-systems.yaml prints what docs/model.md shows ("A panel over systems"), and the
/// same cheap judge alone, with the same budget, puts two systems of its own family in its
/// top 3, as the doc says.
#[test]
fn the_shipped_systems_panel_prints_what_the_model_doc_shows() {
    let dir = tempfile::tempdir().unwrap();
    let systems = root().join("data/summeval_systems.jsonl");
    let yaml = std::fs::read_to_string(root().join("configs/panel-systems.yaml"))
        .unwrap()
        .replace("out_dir: ../runs", "out_dir: runs")
        .replace("../data/summeval_systems.jsonl", systems.to_str().unwrap());
    let cfg = write(dir.path(), "panel-systems.yaml", &yaml);
    let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", text(&out));
    let printed = stdout(&out);
    let head: Vec<&str> = printed
        .lines()
        .take_while(|l| !l.starts_with("certified top-3") && !l.starts_with("top-3 not certified"))
        .collect();
    let doc = std::fs::read_to_string(root().join("docs/model.md")).unwrap();
    let block = format!("$ topk-judge run configs/panel-systems.yaml\n{}\n…\n```", head.join("\n"));
    assert!(doc.contains(&block), "docs/model.md should hold:\n{block}");
    let r = json(&dir.path().join("runs/summeval-systems-panel/result.json"));
    assert_eq!(r["gold_topk"], serde_json::json!(["M22", "M0", "M23"]));
    let same = &r["fit"]["judges"][0]["c"][1];
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let said =
        format!("({:.2} ± {:.2} logits, truly 1)", same["value"].as_f64().unwrap(), same["sd"].as_f64().unwrap());
    assert!(readme.contains(&said), "README should say {said}");
    // fit RUN --panel --system-family alone: the run's judges' families, one system moved out of
    // the run's family "acme" (before, clap asked for --family too).
    let out = run_bin(dir.path(), &["fit", "runs/summeval-systems-panel", "--panel", "--system-family", "M5=other"]);
    assert!(out.status.success(), "{}", text(&out));
    let said = text(&out);
    assert!(
        said.contains("note: judges' families: the run's (judges[i].family); --family gives others")
            && said.contains("note: family \"acme\": judge cheap; systems M12, M13\n"),
        "{said}"
    );
    // The cheap judge alone: `judge:` with its mock block, no families.
    let (head, rest) = yaml.split_once("judges:\n").unwrap();
    let mock = rest.split_once("    mock: ").unwrap().1.split_once("  - name: frontier").unwrap().0;
    let tail = &rest[rest.find("model:").unwrap()..];
    let single = format!("{head}judge:\n  mock: {mock}{tail}")
        .replace("name: summeval-systems-panel", "name: cheap-alone")
        .replace("  families: {M5: acme, M12: acme, M13: acme}   # systems of model family \"acme\"\n", "");
    let cfg = write(dir.path(), "cheap-alone.yaml", &single);
    let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}\n{single}", text(&out));
    assert!(
        stdout(&out).contains("point top-3 (apparent, reported): M0, M5, M12\nrecall@3 against gold: 0.33"),
        "{}",
        stdout(&out)
    );
    // It spent the panel's $0.10, within max_usd.
    let spend = json(&dir.path().join("runs/cheap-alone/result.json"))["spend_usd"].as_f64().unwrap();
    assert!((0.09..=0.1).contains(&spend) && stdout(&out).contains("stopped: max_usd; "), "{spend}: {}", stdout(&out));
}

/// Runs over different prompts are not one pool, though a run over many prompts is named by
/// their count: `compare` says so rather than putting them side by side under one gold.
#[test]
fn compare_refuses_runs_over_different_prompts_under_one_pool_name() {
    let dir = tempfile::tempdir().unwrap();
    systems_pool(dir.path(), 4);
    for (name, ids) in [("first", "[p00, p01]"), ("last", "[p02, p03]"), ("again", "[p00, p01]")] {
        let cfg = write(
            dir.path(),
            &format!("{name}.yaml"),
            &format!(
                "name: {name}\nout_dir: runs\npool: {{file: systems.jsonl, ids: {ids}}}\nk: 2\njudge: {{mock: {{mode: deterministic}}}}\nbudget: {{max_comparisons: 20}}\n"
            ),
        );
        let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet"]);
        assert!(out.status.success(), "{}", text(&out));
    }
    let out = run_bin(dir.path(), &["compare", "runs/first", "runs/last", "--out", "cmp"]);
    assert!(!out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("runs/first and runs/last both name their pool \"2 prompts\" but hold different pools"),
        "{}",
        text(&out)
    );
    let out = run_bin(dir.path(), &["compare", "runs/first", "runs/again", "--out", "cmp"]);
    assert!(out.status.success(), "{}", text(&out));
}

/// A judge's carried prior (`judges[i].prior`, docs/model.md §8 "Carried judge priors"): a tight
/// one holds the judge's κ̂ and ĉ at its means, the run says so, and `fit RUN --panel` fits the
/// run's verdicts with it to the same estimates; priors that cannot apply are refused by key.
#[test]
fn a_carried_prior_holds_a_judges_bias_and_fit_reproduces_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = shipped_panel(dir.path(), "carried", |y| {
        y.replace("name: summeval-panel", "name: carried").replacen(
            "  - name: cheap\n",
            "  - name: cheap\n    prior: {kappa: {mean: 1.2, sd: 0.05}, words: {mean: 0.9, sd: 0.01}}\n",
            1,
        )
    });
    let dry = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--dry-run"]);
    assert!(
        stdout(&dry).contains(
            "judge \"cheap\": carried prior κ ~ N(1.2, 0.05²), words ~ N(0.9, 0.01²) (logits; judges[0].prior)"
        ),
        "{}",
        text(&dry)
    );
    let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    let printed = stdout(&out);
    assert!(
        printed.contains(
            "judge \"cheap\": carried prior κ ~ N(1.2, 0.05²), words ~ N(0.9, 0.01²) (logits; judges[0].prior): its estimates lean on verdicts of other pools"
        ),
        "{printed}"
    );
    let r = json(&dir.path().join("runs/carried/result.json"));
    let cheap = &r["fit"]["judges"][0];
    assert_eq!(
        cheap["carried_prior"],
        serde_json::json!({"kappa": {"mean": 1.2, "sd": 0.05}, "c": [{"mean": 0.9, "sd": 0.01}]})
    );
    assert!(r["fit"]["judges"][1].get("carried_prior").is_none(), "{}", r["fit"]["judges"][1]);
    assert!(!printed.contains("alone put"), "{printed}");
    // The profile is curved by the prior as much as by the verdicts: said so.
    assert!(
        printed.contains(
            "identification: every judge's c is identified by the verdicts with the carried prior of cheap, relative to frontier (trusted: no c)"
        ),
        "{printed}"
    );
    let (c, c_sd) = (cheap["c"][0]["value"].as_f64().unwrap(), cheap["c"][0]["sd"].as_f64().unwrap());
    let (k, k_sd) = (cheap["kappa"]["value"].as_f64().unwrap(), cheap["kappa"]["sd"].as_f64().unwrap());
    // The posterior sits within a few prior sds of the prior mean, never looser than the prior.
    assert!((c - 0.9).abs() < 0.03 && c_sd <= 0.0101, "ĉ = {c} ± {c_sd}");
    assert!((k - 1.2).abs() < 0.15 && k_sd <= 0.0501, "κ̂ = {k} ± {k_sd}");
    // The same run without the prior estimates ĉ elsewhere (0.52 ± 0.21 in docs/model.md §8).
    let plain = shipped_panel(dir.path(), "plain", |y| y);
    assert!(run_bin(dir.path(), &["run", plain.to_str().unwrap(), "--quiet"]).status.success());
    let p = json(&dir.path().join("runs/summeval-panel/result.json"));
    let pc = p["fit"]["judges"][0]["c"][0]["value"].as_f64().unwrap();
    assert!((pc - 0.9).abs() > 0.3, "without the prior ĉ = {pc}");
    // fit RUN --panel: the run's prior, the run's numbers.
    let fit = run_bin(dir.path(), &["fit", "runs/carried", "--panel", "--out", "fit.json"]);
    assert!(fit.status.success(), "{}", text(&fit));
    let f = json(&dir.path().join("fit.json"));
    let fc = &f["judges"][0];
    assert!((fc["c"][0]["value"].as_f64().unwrap() - c).abs() < 1e-9, "{fc}");
    assert!((fc["kappa"]["value"].as_f64().unwrap() - k).abs() < 1e-9, "{fc}");
    assert!(
        f["notes"]
            .to_string()
            .contains("carried prior κ ~ N(1.2, 0.05²), words ~ N(0.9, 0.01²) (logits; the run's judges[i].prior)"),
        "{}",
        f["notes"]
    );
    // Without --panel, a panel run's folder is refitted as its panel (pooling the judges as one
    // mixed their biases), and says so; its config alike (it fitted the two judges' verdicts
    // pooled as one judge's).
    for (run, says) in [
        (
            "runs/carried",
            "note: runs/carried holds a judge panel's run: fitted as that panel (as --panel); --judge NAME fits one judge alone",
        ),
        (cfg.to_str().unwrap(), "carried.yaml configures a judge panel's run: fitted as that panel (as --panel)"),
    ] {
        let plain_fit = run_bin(dir.path(), &["fit", run, "--out", "fit-implied.json"]);
        assert!(plain_fit.status.success() && text(&plain_fit).contains(says), "{}", text(&plain_fit));
        assert_eq!(json(&dir.path().join("fit-implied.json"))["judges"], f["judges"]);
    }
    // A fit in other units, or with the judge trusted, leaves those terms out and says so.
    let raw = run_bin(dir.path(), &["fit", "runs/carried", "--panel", "--covariates", "words:raw"]);
    assert!(raw.status.success(), "{}", text(&raw));
    let said = text(&raw);
    assert!(
        said.contains("judge \"cheap\": the run's carried prior on words is not applied: this fit's words is raw, the run's zscore: the prior is in the run's unit")
            && said.contains("judge \"cheap\": carried prior κ ~ N(1.2, 0.05²) (logits; the run's judges[i].prior)"),
        "{said}"
    );
    let trusted = text(&run_bin(dir.path(), &["fit", "runs/carried", "--panel", "--trusted", "cheap"]));
    assert!(
        trusted.contains("the run's carried prior on words is not applied: judge \"cheap\" is trusted here (no c)")
            && trusted.contains("carried prior κ ~ N(1.2, 0.05²) (logits"),
        "{trusted}"
    );

    // Another carried prior in the same folder is another model: the run says its result is
    // replaced (the prior is part of the run's identity and of panel_fits.jsonl's).
    let changed = shipped_panel(dir.path(), "carried", |y| {
        y.replace("name: summeval-panel", "name: carried").replacen(
            "  - name: cheap\n",
            "  - name: cheap\n    prior: {kappa: {mean: 1.2, sd: 0.05}, words: {mean: 3, sd: 0.05}}\n",
            1,
        )
    });
    let again = run_bin(dir.path(), &["run", changed.to_str().unwrap()]);
    let said = text(&again);
    assert!(
        said.contains("holds a run with a different model, k, acquisition or pool: running this config replaces its result.json and config.yaml, and panel_fits.jsonl gets a second history"),
        "{said}"
    );
    // A prior 3 logits per sd of words off what these verdicts say (0.52 ± 0.21 without it) is
    // flagged; κ's prior, where the verdicts agree, is not.
    assert!(
        said.contains("judge \"cheap\": this pool's verdicts alone put words at ")
            && said.contains("sd from its carried prior N(3, 0.05²): the prior may not hold for this pool")
            && !said.contains("alone put κ"),
        "{said}"
    );

    let cases: &[(&str, &str)] = &[
        (
            "{wordz: {mean: 1, sd: 0.1}}",
            "judges[0].prior.wordz: names no parameter of judge \"cheap\"; expected one of: kappa, words",
        ),
        ("{words: {mean: 1, sd: 0}}", "judges[0].prior.words.sd: 0: expected an sd from 0.001 to 100 logits"),
        ("{kappa: {mean: .nan, sd: 1}}", "judges[0].prior.kappa.mean: NaN: expected a number within ±20 logits"),
        // Accepted at load once, then failed the fit after verdicts were bought.
        ("{words: {mean: 0.5, sd: 1e-4}}", "judges[0].prior.words.sd: 0.0001: expected an sd from 0.001"),
        ("{words: {mean: 1e6, sd: 1}}", "judges[0].prior.words.mean: 1e6: expected a number within ±20"),
        ("{kappa: {mean: 20.00001, sd: 1}}", "judges[0].prior.kappa.mean: 20.00001: expected"),
        ("{kappa: {mean: 0, sd: 1e308}}", "judges[0].prior.kappa.sd: 1e308: expected an sd from 0.001 to 100"),
        (
            "{same_family: {mean: 1, sd: 1}}",
            "judges[0].prior.same_family: names no parameter of judge \"cheap\"; expected one of: kappa, words",
        ),
        ("{words: {mean: 1, sdd: 1}}", "sdd"),
    ];
    for (prior, want) in cases {
        let bad = shipped_panel(dir.path(), "bad", |y| {
            y.replacen("  - name: cheap\n", &format!("  - name: cheap\n    prior: {prior}\n"), 1)
        });
        let out = run_bin(dir.path(), &["run", bad.to_str().unwrap(), "--dry-run"]);
        assert!(!out.status.success() && text(&out).contains(want), "{prior}: want {want:?} in\n{}", text(&out));
    }
    // A prior at the edge of the accepted range runs to the end (its fit once stopped at 200
    // iterations, ‖∇L‖∞ = 1.4e-9 against 1e-9, after verdicts were bought).
    let edge = shipped_panel(dir.path(), "edge", |y| {
        y.replace("name: summeval-panel", "name: edge").replacen(
            "  - name: cheap\n",
            "  - name: cheap\n    prior: {words: {mean: -20, sd: 0.001}}\n",
            1,
        )
    });
    let out = run_bin(dir.path(), &["run", edge.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    let e = json(&dir.path().join("runs/edge/result.json"));
    assert!((e["fit"]["judges"][0]["c"][0]["value"].as_f64().unwrap() + 20.0).abs() < 0.01, "{}", e["fit"]);
    assert!(text(&out).contains("sd from its carried prior N(-20, 0.001²)"), "{}", text(&out));
    // Without covariates (model: naive) a prior on words names nothing: said, not a panic (an
    // index underflow once); a pool covariate named `kappa` is refused beside a carried prior.
    let naive = shipped_panel(dir.path(), "bad", |y| {
        let (head, tail) = y
            .split_once("model:\n  kind: bias_aware\n  covariates:\n    - {name: words, transform: zscore}\n")
            .unwrap();
        format!("{head}model: {{kind: naive}}\n{tail}").replacen(
            "  - name: cheap\n",
            "  - name: cheap\n    prior: {words: {mean: 0.45, sd: 0.2}}\n",
            1,
        )
    });
    let out = run_bin(dir.path(), &["run", naive.to_str().unwrap(), "--dry-run"]);
    assert!(
        !out.status.success()
            && text(&out)
                .contains("judges[0].prior.words: names no parameter of judge \"cheap\"; expected one of: kappa")
            && !text(&out).contains("panicked"),
        "{}",
        text(&out)
    );
    let line = std::fs::read_to_string(root().join("data/summeval_pools.jsonl")).unwrap();
    let mut pool: serde_json::Value =
        serde_json::from_str(line.lines().find(|l| l.contains(POOL_ID)).unwrap()).unwrap();
    for (i, it) in pool["items"].as_array_mut().unwrap().iter_mut().enumerate() {
        it["covariates"] = serde_json::json!({"kappa": i % 3});
    }
    let pool_file = write(dir.path(), "kappa-pool.jsonl", &format!("{pool}\n"));
    let named_kappa = shipped_panel(dir.path(), "bad", |y| {
        y.replace(&root().join("data/summeval_pools.jsonl").display().to_string(), pool_file.to_str().unwrap())
            .replace(
                "    - {name: words, transform: zscore}\n",
                "    - {name: words, transform: zscore}\n    - {name: kappa}\n",
            )
            .replacen("  - name: cheap\n", "  - name: cheap\n    prior: {kappa: {mean: 1, sd: 0.5}}\n", 1)
    });
    let out = run_bin(dir.path(), &["run", named_kappa.to_str().unwrap(), "--dry-run"]);
    assert!(
        text(&out).contains("judges[0].prior: the model has a covariate named \"kappa\", which a carried prior's key `kappa` would mean too"),
        "{}",
        text(&out)
    );
    let on_trusted = shipped_panel(dir.path(), "bad", |y| {
        y.replacen("    trusted: true\n", "    trusted: true\n    prior: {words: {mean: 0.5, sd: 0.1}}\n", 1)
    });
    let out = run_bin(dir.path(), &["run", on_trusted.to_str().unwrap(), "--dry-run"]);
    // Named with the line the prior is written on.
    let line =
        1 + std::fs::read_to_string(&on_trusted).unwrap().lines().position(|l| l.contains("prior: {words")).unwrap();
    assert!(
        text(&out).contains(&format!("bad.yaml:{line}: judges[1].prior.words: \"frontier\" is the trusted judge, taken as free of item-level bias: it has no bias coefficient, only `kappa`")),
        "{}",
        text(&out)
    );
    let one = shipped_panel(dir.path(), "bad", |y| {
        let (head, _) = y.split_once("  - name: frontier").unwrap();
        format!(
            "{}model:{}",
            head.replacen("  - name: cheap\n", "  - name: cheap\n    prior: {kappa: {mean: 1, sd: 1}}\n", 1),
            y.split_once("\nmodel:").unwrap().1
        )
    });
    let out = run_bin(dir.path(), &["run", one.to_str().unwrap(), "--dry-run"]);
    assert!(
        text(&out).contains("judges[0].prior: a carried prior is a judge panel's (two or more judges"),
        "{}",
        text(&out)
    );
}

/// A trusted API judge beside a cheap mock: the acquisition prices each judge's query at its
/// expected cost (typical prompt tokens, one attempt) and corrects that by what the judge's
/// replies have billed, not at the reservation's worst case (one token per byte, every re-ask).
/// At 4 bytes per token and one re-ask, the worst case of the API judge is about 8 × its bill:
/// priced so, a trusted judge 5 × dearer than the mock looked 40 × dearer.
#[test]
fn a_trusted_api_judge_is_priced_at_what_it_bills_not_at_its_worst_case() {
    let frontier = FakeOpenAi::start_with(
        Box::new(shorter_wins),
        Box::new(|b: &Value| {
            let p = typical_prompt_tokens(b);
            Some(serde_json::json!({"prompt_tokens": p, "completion_tokens": 2, "total_tokens": p + 2}))
        }),
    );
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "prompts/test.j2", TEMPLATE);
    let member = format!(
        "  - name: frontier\n    trusted: true\n    openai:\n      base_url: {url}\n      model: fake-frontier\n      fingerprint:\n        queries: 0\n      api_key_env: TOPK_PANEL_TEST_UNSET_KEY\n      api_key_required: false\n      prompt: prompts/test.j2\n      max_tokens: 8\n      backoff_min_s: 0.005\n      backoff_max_s: 0.02\n      price: {{input_usd_per_mtok: 0.75, output_usd_per_mtok: 3}}\n",
        url = frontier.base_url
    );
    let yaml = format!(
        "name: priced\nout_dir: runs\npool:\n  file: {pool}\n  id: {id}\nk: 3\njudges:\n  - name: cheap\n    mock: {{mode: stochastic, pos_bias: 0.3, verb_per_word: 0.01, temperature: 0.25, seed: 7, input_usd_per_mtok: 0.15, output_usd_per_mtok: 0.60}}\n{member}model:\n  covariates:\n    - {{name: words, transform: zscore}}\nacquisition:\n  seed: 5\n  mc_draws: 200\nbudget:\n  max_usd: 0.06\n",
        pool = summeval().display(),
        id = POOL_ID,
    );
    let cfg = write(dir.path(), "priced.yaml", &yaml);
    let out = run_to_end(dir.path(), &cfg);
    assert!(out.status.success(), "{}", text(&out));
    let r = json(&dir.path().join("runs/priced/result.json"));
    let q = |j: usize| r["judges"][j]["queries"].as_u64().unwrap();
    let spend = |j: usize| r["judges"][j]["spend_usd"].as_f64().unwrap();
    // The server's bill is what the books hold for the trusted judge.
    let billed: f64 =
        frontier.requests().iter().map(|x| (typical_prompt_tokens(&x.body) as f64 * 0.75 + 2.0 * 3.0) / 1e6).sum();
    assert!((spend(1) - billed).abs() < 1e-12, "{} vs {billed}", spend(1));
    // Priced at its worst case (one token per byte, two attempts: about 8 × its bill) the
    // trusted judge was first asked after 190 cheap verdicts and answered 27 queries (238 cheap);
    // at its expected cost, after 110, and it answers 36 (226 cheap).
    let order: Vec<bool> =
        lines(&dir.path().join("runs/priced/verdicts.jsonl")).iter().map(|v| v["judge"] == "frontier").collect();
    let first = order.iter().position(|&f| f).unwrap();
    // Its round of 8 (verdicts 104–111): within a round the log holds replies in the order they
    // came back, and the mock's come back before the server's, by however much the machine lags.
    assert_eq!((first / 8, q(0), q(1)), (110 / 8, 226, 36), "first at {first}: {}", stdout(&out));
}

/// A prompt's tokens at 4 bytes per token, with the chat overheads.
fn typical_prompt_tokens(body: &Value) -> u64 {
    let msgs = body["messages"].as_array().unwrap();
    let bytes: usize = msgs.iter().map(|m| m["content"].as_str().unwrap().len()).sum();
    bytes.div_ceil(4) as u64
        + topk_judge::judge::openai::prompt::BASE_OVERHEAD_TOKENS
        + topk_judge::judge::openai::prompt::PER_MESSAGE_OVERHEAD_TOKENS * msgs.len() as u64
}

/// A panel member whose replies hold no verdict stops the panel at its `max_invalid_rate`, as a
/// single judge does (exit 1, the judge named, result.json's `stop_message`), and a second
/// invocation counts the stored replies and sends nothing.
#[test]
fn a_panel_member_with_too_many_invalid_replies_stops_the_panel() {
    let cheap = FakeOpenAi::start_with(
        Box::new(|_, _| "Both have merits and flaws.".into()),
        Box::new(crate::common::fake_openai::fixed_usage),
    );
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "prompts/test.j2", TEMPLATE);
    let pool = pool8(dir.path());
    let member = openai_member("cheap", &cheap, (0.1, 0.1), "").replace(
        "      max_invalid_retries: 0\n",
        "      max_invalid_retries: 0\n      max_invalid_rate: 0.5\n      invalid_rate_min_replies: 6\n",
    );
    let yaml = format!(
        "name: garbled\nout_dir: runs\npool:\n  file: {pool}\nk: 2\njudges:\n{member}  - name: frontier\n    trusted: true\n    mock: {{mode: stochastic, pos_bias: 0.05, temperature: 0.15, seed: 8, input_usd_per_mtok: 2.5, output_usd_per_mtok: 10}}\nmodel:\n  covariates:\n    - {{name: words, transform: zscore}}\nacquisition:\n  seed: 5\n  mc_draws: 200\nbudget:\n  max_usd: 1\n",
        pool = pool.display(),
    );
    let cfg = write(dir.path(), "garbled.yaml", &yaml);
    let out = run_to_end(dir.path(), &cfg);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    // The first round's 8 queries were out at once; the rule applied at the 6th reply.
    assert_eq!(cheap.n_requests(), 8, "stopped after the round the rule applied in: {t}");
    // The rule applies at the 6th reply; replies of the round that come in while its query
    // settles may be counted too (all 8 were out at once), never a reply without its outcome.
    let n = (6..=8)
        .find(|n| {
            t.contains(&format!(
                "judge cheap: {n} of {n} replies were invalid (100%, above max_invalid_rate 0.5; no_verdict {n})"
            ))
        })
        .unwrap_or_else(|| panic!("{t}"));
    assert!(t.contains("likely cause: the parser finds no verdict in the replies"), "{n}: {t}");
    // No table of the prior's zeros.
    assert!(
        t.contains("no ranking: no valid verdict, so every θ̂ is the prior's 0") && !t.contains("rank  base"),
        "{t}"
    );
    assert!(t.contains("  cheap: 8 verdicts (8 invalid), $"), "{t}");
    let r = json(&dir.path().join("runs/garbled/result.json"));
    assert_eq!(r["stop_reason"], "max_invalid_rate");
    assert_eq!((r["judges"][0]["invalid"].as_u64(), r["judges"][1]["invalid"].as_u64()), (Some(8), Some(0)));
    assert!(
        r["stop_message"].as_str().unwrap().starts_with(&format!("judge cheap: {n} of {n} replies")),
        "{}",
        r["stop_message"]
    );
    let again = run_to_end(dir.path(), &cfg);
    let t = text(&again);
    assert_eq!(again.status.code(), Some(1), "{t}");
    assert_eq!(cheap.n_requests(), 8, "nothing more is sent: {t}");
    assert!(
        t.contains("judge cheap: 8 of 8 replies were invalid")
            && t.contains("8 of these replies are behind verdicts stored by earlier invocations"),
        "{t}"
    );
}

/// A panel member whose server fails every query (HTTP 500) while the other answers: each
/// warning names the member, a pair is set aside for that member, and the run stops
/// `judge_failing` naming it and what to do, in the summary and in result.json's `last_error`
/// (hunt 47: the warnings named no judge, and the panel's result.json had no `last_error`).
#[test]
fn a_panel_member_whose_server_fails_is_named_where_the_run_stops() {
    let (cheap, frontier) = (server(shorter_wins), server(shorter_wins));
    frontier.set_always(Some(Fault::ServerError));
    let dir = tempfile::tempdir().unwrap();
    let cfg = panel_config(dir.path(), "down", &cheap, &frontier, "", "  max_usd: 1\n");
    let out = run_to_end(dir.path(), &cfg);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(cheap.n_requests() > 0 && frontier.n_requests() > 0, "{t}");
    let failed: Vec<&str> = t.lines().filter(|l| l.contains(" failed: ") && l.contains("query ")).collect();
    assert!(!failed.is_empty() && failed.iter().all(|l| l.contains(" failed: the judge frontier: ")), "{t}");
    assert!(t.contains(" set aside for judge frontier for the rest of this run after "), "{t}");
    let r = json(&dir.path().join("runs/down/result.json"));
    assert_eq!(r["stop_reason"], "judge_failing");
    let last = r["last_error"].as_str().unwrap_or_else(|| panic!("{r}"));
    assert!(last.contains("without any verdict; last error: the judge frontier: "), "{last}");
    assert!(
        last.ends_with("; all of them judge frontier's: fix its endpoint, or take it out of `judges:` to go on without it (its stored verdicts stay in the folder)"),
        "{last}"
    );
    assert!(t.contains(last), "the stop says it too: {t}");
    assert!(r["judges"][0]["queries"].as_u64().unwrap() > 0 && r["judges"][1]["queries"] == 0, "{r}");
}

/// A panel member none of whose answered queries gave a verdict is not asked again (the
/// acquisition's price rule, docs/model.md §8); the run then stops as it would at the member's
/// `max_invalid_rate`, before that limit's minimum of 20 replies: exit 1, the judge named with
/// its queries, its replies and their likely cause. Before, the other judge went on alone and
/// the run ended `exhausted`, exit 0.
#[test]
fn a_panel_judge_without_a_valid_verdict_stops_the_run() {
    let live = FakeOpenAi::start_with(
        Box::new(|_, _| "Both answers have merits; I cannot decide.".into()),
        Box::new(crate::common::fake_openai::fixed_usage),
    );
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "prompts/test.j2", TEMPLATE);
    let pool = pool8(dir.path());
    let member = openai_member("live", &live, (0.1, 0.1), "    trusted: true\n");
    let yaml = format!(
        "name: silent\nout_dir: runs\npool:\n  file: {pool}\nk: 2\njudges:\n  - name: cheap\n    mock: {{mode: stochastic, pos_bias: 0.3, temperature: 0.25, seed: 8, input_usd_per_mtok: 2.5, output_usd_per_mtok: 10}}\n{member}model:\n  covariates:\n    - {{name: words, transform: zscore}}\nacquisition:\n  seed: 5\n  mc_draws: 200\nbudget:\n  max_usd: 1\n",
        pool = pool.display(),
    );
    let cfg = write(dir.path(), "silent.yaml", &yaml);
    let out = run_to_end(dir.path(), &cfg);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    let r = json(&dir.path().join("runs/silent/result.json"));
    assert_eq!(r["stop_reason"], "max_invalid_rate", "{t}");
    let asked = r["judges"][1]["queries"].as_u64().unwrap();
    assert!((4..20).contains(&asked), "stopped by the price rule, not at 20 replies: {asked}: {t}");
    assert_eq!(r["judges"][1]["invalid"].as_u64(), Some(asked));
    let said = format!(
        "judge live: none of its {asked} answered queries gave a verdict ({asked} of {asked} replies invalid, re-asks included: no_verdict {asked}), so the panel would not ask it again"
    );
    assert!(r["stop_message"].as_str().unwrap().starts_with(&said), "{}", r["stop_message"]);
    assert!(t.contains(&said) && t.contains("likely cause: the parser finds no verdict in the replies"), "{t}");
}

/// A cheap judge that always picks the first-shown answer carries no signal: once its verdicts
/// show it (10 valid, ≥ 90 % one slot), the acquisition prices it per usable verdict and sends
/// the rest of the budget to the judge that does; the summary says where θ̂ rests.
#[test]
fn a_judge_without_signal_is_left_once_its_verdicts_show_it() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = shipped_panel(dir.path(), "slot", |y| y.replace("pos_bias: 0.3,", "pos_bias: 40,"));
    let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", text(&out));
    let r = json(&dir.path().join("runs/summeval-panel/result.json"));
    let q = |j: usize| r["judges"][j]["queries"].as_u64().unwrap();
    // The cheap judge's first round(s) until the rule can tell, then the frontier judge.
    let order: Vec<bool> =
        lines(&dir.path().join("runs/summeval-panel/verdicts.jsonl")).iter().map(|v| v["judge"] == "cheap").collect();
    let last_cheap = order.iter().rposition(|&c| c).unwrap();
    // 16 cheap verdicts (two rounds: the rule needs 10), then only the frontier judge, also
    // when what is left of the budget buys no frontier pair but would buy cheap ones.
    assert_eq!((q(0), last_cheap), (16, 15), "{}", stdout(&out));
    assert!(q(1) >= 20, "cheap {} frontier {}: {}", q(0), q(1), stdout(&out));
    let said = stdout(&out);
    assert!(
        said.contains("judge \"cheap\" picked the first-shown answer in 100 % of its")
            && said.contains("the panel's θ̂ rests on the other judges"),
        "{said}"
    );
    // It was said when the run stopped asking it.
    assert_eq!(
        text(&out).matches("warning: judge cheap: its valid verdicts carry no signal (one slot or ties win ≥ 90 % of them), so it is not asked again in this run").count(),
        1,
        "{}",
        text(&out)
    );
}

/// Two judges answering at random: the panel certifies nothing (the single judge's equal-quality
/// test, over each judge and over all verdicts), where it once certified 6 bases out of noise;
/// `fit --panel` of its folder says the same. The shipped panel (judges with signal) certifies.
#[test]
fn a_panel_of_judges_answering_at_random_certifies_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let noise = |y: String| {
        y.replace(
            "pos_bias: 0.3, verb_per_word: 0.01, temperature: 0.25",
            "pos_bias: 0, verb_per_word: 0, temperature: 1000",
        )
        .replace(
            "pos_bias: 0.05, verb_per_word: 0.0, temperature: 0.15",
            "pos_bias: 0, verb_per_word: 0, temperature: 1000",
        )
    };
    let cfg = shipped_panel(dir.path(), "noise", noise);
    let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", text(&out));
    let says = "certified top-3 (ε = 0.05): nothing certified: the panel's ";
    assert!(stdout(&out).contains(says), "{}", stdout(&out));
    assert!(
        stdout(&out).contains(
            "verdicts do not tell the answers apart: they spread their wins and agree across a pair's two orders as judges answering at random would (equal-quality test: p = "
        ),
        "{}",
        stdout(&out)
    );
    let r = json(&dir.path().join("runs/summeval-panel/result.json"));
    let c = &r["certified"];
    assert_eq!((c["in"].as_array().unwrap().len(), c["out"].as_array().unwrap().len()), (0, 0), "{c}");
    assert_eq!(c["undecided"].as_array().unwrap().len(), 16);
    let out = run_bin(dir.path(), &["fit", "runs/summeval-panel"]);
    assert!(stdout(&out).contains("verdicts do not tell the answers apart: they spread their wins"), "{}", text(&out));
    // Five judges answering at random, one of which passes its own test by chance (j0, 212
    // verdicts): one test over all verdicts, so still nothing (4 bases were certified out).
    let judges: String = (0..5)
        .map(|j| format!("  - {{name: j{j}, mock: {{mode: stochastic, pos_bias: 0, verb_per_word: 0, temperature: 1000, seed: {}, input_usd_per_mtok: 0.15, output_usd_per_mtok: 0.6}}}}\n", 40 + j))
        .collect();
    let five = write(
        dir.path(),
        "five.yaml",
        &format!(
            "name: five\nout_dir: runs\npool: {{file: {}}}\nk: 3\njudges:\n{judges}model: {{kind: bias_aware, covariates: [{{name: words, transform: zscore}}]}}\nacquisition: {{refit_every: 8, concurrency: 8, seed: 42, mc_draws: 1000}}\nbudget: {{max_comparisons: 500}}\n",
            summeval().display()
        ),
    );
    let out = run_bin(dir.path(), &["run", five.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(stdout(&out).contains(says), "{}", stdout(&out));
    let r = json(&dir.path().join("runs/five/result.json"));
    assert_eq!(r["certified"]["out"].as_array().unwrap().len(), 0, "{}", r["certified"]);
    // The shipped panel's judges see quality: bases are certified out.
    let cfg = shipped_panel(dir.path(), "signal", |y| y.replace("name: summeval-panel", "name: signal"));
    let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", text(&out));
    let r = json(&dir.path().join("runs/signal/result.json"));
    assert!(r["certified"]["out"].as_array().unwrap().len() >= 8, "{}", r["certified"]);
}

/// A panel of a live judge `cheap` that re-asks 8 stored verdicts when resumed and a trusted
/// frontier mock 25 times its price, over the 8-item pool, at most 24 comparisons.
fn fingerprinted_panel(dir: &Path, cheap: &FakeOpenAi) -> PathBuf {
    write(dir, "prompts/test.j2", TEMPLATE);
    let pool = pool8(dir);
    let member = openai_member("cheap", cheap, (0.1, 0.1), "").replace("        queries: 0\n", "        queries: 8\n");
    let yaml = format!(
        "name: fp\nout_dir: runs\npool:\n  file: {pool}\nk: 2\njudges:\n{member}  - name: frontier\n    trusted: true\n    mock: {{mode: stochastic, pos_bias: 0.05, temperature: 0.15, seed: 8, input_usd_per_mtok: 2.5, output_usd_per_mtok: 10}}\nmodel:\n  covariates:\n    - {{name: words, transform: zscore}}\nacquisition:\n  seed: 5\n  mc_draws: 200\nbudget:\n  max_usd: 1\n  max_comparisons: 24\n",
        pool = pool.display(),
    );
    write(dir, "fp.yaml", &yaml)
}

/// A panel member that takes over a single-judge run's verdicts of its live configuration is
/// fingerprinted on them before the panel goes on, as when resuming its own (hunt 41: the check
/// read the member's own verdicts only, found none, and said nothing).
#[test]
fn a_member_taking_over_a_single_judge_runs_verdicts_is_fingerprinted_on_them() {
    let cheap = server(longer_wins);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cfg = fingerprinted_panel(d, &cheap);
    let panel = std::fs::read_to_string(&cfg).unwrap();
    let frontier = panel.find("  - name: frontier\n").unwrap();
    let end = frontier + panel[frontier..].find("model:\n").unwrap();
    let one = write(d, "one.yaml", &format!("{}{}", &panel[..frontier], &panel[end..]));
    let out = run_bin(d, &["run", one.to_str().unwrap(), "--quiet", "--max-comparisons", "8"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(cheap.n_requests(), 8);
    // A list of one runs as the single judge, and names its settings as the file has them (hunt
    // 42: `judge.openai.model`, a key that file does not have), in the run and its dry run.
    let said = "judges[0].openai.model \"fake-cheap\" is not among the 1 model(s)";
    assert!(text(&out).contains(said) && !text(&out).contains("judge.openai."), "{}", text(&out));
    let dead = ["run", one.to_str().unwrap(), "--dry-run", "--base-url", "http://127.0.0.1:1/v1"];
    let dry = run_bin(d, &dead);
    assert!(
        stdout(&dry).contains("point judges[0].openai.base_url at the server you run")
            && !text(&dry).contains("judge.openai."),
        "{}",
        text(&dry)
    );
    let out = run_bin(d, &["run", one.to_str().unwrap(), "--name", "dead", "--base-url", "http://127.0.0.1:1/v1"]);
    assert!(!out.status.success());
    assert!(
        text(&out).contains("point judges[0].openai.base_url at the server you run")
            && !text(&out).contains("judge.openai."),
        "{}",
        text(&out)
    );
    assert_eq!(cheap.n_requests(), 8, "the dry run and the dead endpoint ask nothing of it");
    // The dry run plans the check as the run makes it, and sends nothing.
    let dry = run_bin(d, &["run", cfg.to_str().unwrap(), "--dry-run"]);
    assert!(dry.status.success(), "{}", text(&dry));
    assert!(
        stdout(&dry).contains(
            "judge fingerprint of cheap: a real run first asks 8 stored verdicts again, reserved at their worst case $"
        ),
        "{}",
        text(&dry)
    );
    assert_eq!(cheap.n_requests(), 8, "the dry run asks nothing");
    let out = run_bin(d, &["run", cfg.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("judge \"cheap\" takes over 8 verdicts"), "{}", text(&out));
    // The member's model, not among those the server lists, is named by its key in the panel's
    // config (hunt 41: it read `judge.openai.model`, a key a panel does not have).
    assert!(
        text(&out).contains("judge cheap: judges[0].openai.model \"fake-cheap\" is not among the 1 model(s)")
            && !text(&out).contains("judge.openai."),
        "{}",
        text(&out)
    );
    let line = "judge fingerprint of cheap: 0 of 8 re-asked stored verdicts changed";
    assert!(stdout(&out).contains(line), "{}", text(&out));
    let r = json(&d.join("runs/fp/result.json"));
    assert!(r["fingerprint"][0].as_str().is_some_and(|l| l.starts_with(line)), "{r}");
}

/// Two members of the same settings (one endpoint and model, other prices): a single-judge run's
/// verdict is taken over by one of them, once and for good. The second run gave the ones the
/// first member had taken to the other member as well (hunt 42: one paid reply fitted as two
/// judges' evidence, and counted twice in the panel's spend).
#[test]
fn a_single_judge_verdict_is_taken_over_by_one_member_for_good() {
    let fake = server(longer_wins);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "prompts/test.j2", TEMPLATE);
    let pool = pool8(d);
    let member = |name: &str, price: (f64, f64)| {
        openai_member(name, &fake, price, "")
            .replace(&format!("model: fake-{name}"), "model: fake-same")
            .replace("        queries: 0\n", "        queries: 8\n")
    };
    let yaml = |members: String| {
        format!(
            "name: same\nout_dir: runs\npool:\n  file: {}\nk: 2\njudges:\n{members}acquisition:\n  seed: 5\n  mc_draws: 200\nbudget:\n  max_usd: 1\n",
            pool.display()
        )
    };
    let one = write(d, "one.yaml", &yaml(member("a", CHEAP)));
    let two = write(d, "two.yaml", &yaml(member("a", CHEAP) + &member("b", (0.5, 1.0))));
    let run =
        |cfg: &Path, extra: &[&str]| run_bin(d, &[&["run", cfg.to_str().unwrap(), "--quiet"][..], extra].concat());
    assert!(run(&one, &["--max-comparisons", "12"]).status.success());
    let out = run(&two, &["--max-comparisons", "40"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("judge \"a\" takes over 12 verdicts"), "{}", text(&out));
    // The dry run plans the two members' fingerprint checks one after the other, as the run
    // makes them: with room for the first one's worst case only, the second is not run (both
    // were planned against the whole budget: hunt 42).
    let reserve = |said: &str, m: &str| -> f64 {
        let at = format!(
            "judge fingerprint of {m}: a real run first asks 8 stored verdicts again, reserved at their worst case $"
        );
        said.split(&at).nth(1).unwrap_or_else(|| panic!("{m}: {said}"))[..8].parse().unwrap()
    };
    let dry = |max: f64| {
        let out = run(&two, &["--dry-run", "--max-comparisons", "1000", "--max-usd", &format!("{max:.6}")]);
        assert!(out.status.success(), "{}", text(&out));
        stdout(&out)
    };
    let books = json(&d.join("runs/same/result.json"))["folder_spend"]["spend_usd"].as_f64().unwrap();
    let roomy = dry(1000.0);
    let (first, second) = (reserve(&roomy, "a"), reserve(&roomy, "b"));
    let tight = dry(books + first + second / 4.0);
    assert!((reserve(&tight, "a") - first).abs() < 1e-6, "{tight}");
    assert!(tight.contains("a real run first says: judge fingerprint of b: not run"), "{tight}");
    for _ in 0..2 {
        let again = run(&two, &[]);
        assert!(again.status.success(), "{}", text(&again));
        assert!(!text(&again).contains("takes over"), "{}", text(&again));
    }
    let records = lines(&d.join("runs/same/verdicts.jsonl"));
    let copies: Vec<&str> = records.iter().filter_map(|r| r["reused_from"].as_str()).collect();
    let distinct: HashSet<&str> = copies.iter().copied().collect();
    assert_eq!((copies.len(), distinct.len()), (12, 12), "each original copied once");
}

/// max_comparisons counts a panel's verdicts, all judges': a member whose own verdicts are
/// fewer, resumed under a max_comparisons the panel has reached, asks nothing, so its
/// fingerprint check is not paid for (it compared the member's own count and re-asked 8).
#[test]
fn a_panel_at_max_comparisons_pays_for_no_fingerprint_check() {
    let cheap = server(longer_wins);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cfg = fingerprinted_panel(d, &cheap);
    let run = |extra: &[&str]| run_bin(d, &[&["run", cfg.to_str().unwrap(), "--quiet"][..], extra].concat());
    let out = run(&["--max-comparisons", "8"]);
    assert!(out.status.success(), "{}", text(&out));
    // The frontier judge made cheap (it has no verdicts yet, so its price is its own): the next
    // 16 are its.
    let cheaper =
        ["--set", "judges.1.mock.input_usd_per_mtok=0.001", "--set", "judges.1.mock.output_usd_per_mtok=0.001"];
    let out = run(&cheaper);
    assert!(out.status.success(), "{}", text(&out));
    let r = json(&d.join("runs/fp/result.json"));
    let verdicts = |j: usize| r["fit"]["judges"][j]["verdicts"].as_u64().unwrap();
    assert_eq!((verdicts(0), verdicts(0) + verdicts(1)), (8, 24), "{r}");
    let asked = cheap.n_requests();
    for _ in 0..2 {
        let out = run(&cheaper);
        assert!(out.status.success(), "{}", text(&out));
        assert!(!stdout(&out).contains("judge fingerprint"), "{}", stdout(&out));
    }
    assert_eq!(cheap.n_requests(), asked, "nothing sent");
}

/// A live panel member resuming its verdicts gets the judge fingerprint a single judge gets: one
/// that now answers differently is stopped with its name, before anything else is sent;
/// `--judge-changed accept` goes on (recorded); `new` is refused with what a panel does instead.
#[test]
fn a_panel_member_that_changed_behind_its_name_is_stopped_by_its_fingerprint() {
    let cheap = server(longer_wins);
    let dir = tempfile::tempdir().unwrap();
    let cfg = fingerprinted_panel(dir.path(), &cheap);
    let out = run_to_end(dir.path(), &cfg);
    assert!(out.status.success(), "{}", text(&out));
    let stored = cheap.n_requests();
    assert!(stored >= 8, "{}", text(&out));
    let more = |extra: &[&str]| {
        let mut args = vec!["run", cfg.to_str().unwrap(), "--quiet"];
        args.extend_from_slice(extra);
        run_bin(dir.path(), &args)
    };
    // The same judge, resumed with room to go on: 8 of its verdicts asked again, none changed.
    let out = more(&["--max-comparisons", "40"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        stdout(&out).contains("judge fingerprint of cheap: 0 of 8 re-asked stored verdicts changed"),
        "{}",
        stdout(&out)
    );
    // Its cost is said as the fingerprint's, not as earlier configurations'.
    let r = json(&dir.path().join("runs/fp/result.json"));
    let fp_usd = r["folder_spend"]["fingerprint_usd"].as_f64().unwrap();
    assert!(fp_usd > 0.0 && (fp_usd - r["folder_spend"]["other_usd"].as_f64().unwrap()).abs() < 1e-9, "{r}");
    assert!(
        stdout(&out).contains(&format!("(${fp_usd:.6} for the judge's fingerprint checks; counted against max_usd")),
        "{}",
        stdout(&out)
    );
    // Now it always answers B: half of its stored verdicts change, the run stops before any
    // other query and names the judge.
    cheap.set_always(Some(crate::common::fake_openai::Fault::Text("[[B]]".into())));
    let before = cheap.n_requests();
    let out = more(&["--max-comparisons", "56"]);
    let t = text(&out);
    assert!(!out.status.success(), "{t}");
    assert!(
        t.contains("the judge cheap: openai fake-cheap")
            && t.contains("--judge-changed accept")
            && t.contains("a new `name`"),
        "{t}"
    );
    assert_eq!(cheap.n_requests() - before, 8, "only the fingerprint's queries: {t}");
    // Refused before anything is asked, and by the dry run alike (it said "no query was sent", exit 0).
    let before = cheap.n_requests();
    for extra in [&[][..], &["--dry-run"][..]] {
        let refused = more(&[&["--max-comparisons", "56", "--judge-changed", "new"][..], extra].concat());
        assert_eq!(refused.status.code(), Some(1), "{extra:?}: {}", text(&refused));
        assert!(text(&refused).contains("--judge-changed: new applies to a single judge"), "{}", text(&refused));
    }
    assert_eq!(cheap.n_requests(), before);
    let accepted = more(&["--max-comparisons", "56", "--judge-changed", "accept"]);
    assert!(accepted.status.success(), "{}", text(&accepted));
    let fp = lines(&dir.path().join("runs/fp/fingerprint.jsonl"));
    assert_eq!(fp.last().unwrap()["decision"], "accept", "{fp:?}");
}

/// Two judges that always pick the answer shown first say nothing about quality: every θ̂ is
/// tied, so the panel claims no top-k place and no recall (as a single judge's run), in its
/// summary, result.json and report.
#[test]
fn a_panel_whose_theta_is_all_tied_claims_no_top_k() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = shipped_panel(dir.path(), "tied", |y| {
        y.replace(
            "mode: stochastic, pos_bias: 0.3, verb_per_word: 0.01",
            "mode: deterministic, pos_bias: 100, verb_per_word: 0.0",
        )
        .replace(
            "mode: stochastic, pos_bias: 0.05, verb_per_word: 0.0",
            "mode: deterministic, pos_bias: 100, verb_per_word: 0.0",
        )
    });
    let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", text(&out));
    let said = stdout(&out);
    println!("{said}");
    let r: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("runs/summeval-panel/result.json")).unwrap())
            .unwrap();
    assert_eq!((r["topk"].as_array().map(Vec::len), r["recall_at_k"].is_null()), (Some(0), true), "{r}");
    assert_eq!(r["topk_tied"].as_array().map(Vec::len), Some(16), "{r}");
    assert!(
        said.contains("top-3 by θ̂: 16 bases tied for the last 3 places (")
            && said.contains("the data do not say which, so no recall is claimed"),
        "{said}"
    );
    assert!(!said.contains("recall@3 against"), "{said}");
    let rep = run_bin(dir.path(), &["report", dir.path().join("runs/summeval-panel").to_str().unwrap()]);
    assert!(rep.status.success(), "{}", text(&rep));
    let md = std::fs::read_to_string(dir.path().join("runs/summeval-panel/report.md")).unwrap();
    assert!(md.contains("- top-3 by θ̂: 16 bases tied for the last 3 places ("), "{md}");
}

/// A panel's folder resumed with one of its judges alone (a list of one, the single-judge run)
/// reuses that judge's verdicts stored under its name (its settings unchanged): none is bought
/// again, and `fit` and `report` read them as the run's. Before, all 70 were bought again. The
/// other way round the panel says per judge what a single-judge run stored.
#[test]
fn a_panel_cut_to_one_judge_reuses_its_verdicts() {
    let dir = tempfile::tempdir().unwrap();
    let cheap = "    mock: {mode: stochastic, seed: 7, input_usd_per_mtok: 0.15, output_usd_per_mtok: 0.6}\n";
    // At the cheap judge's price, so both judges are asked.
    let frontier =
        "    mock: {mode: stochastic, seed: 8, temperature: 0.5, input_usd_per_mtok: 0.15, output_usd_per_mtok: 0.6}\n";
    let two = main_job_with_judge(
        dir.path(),
        "p",
        &format!("judges:\n  - name: cheap\n{cheap}  - name: frontier\n    trusted: true\n{frontier}"),
    );
    // Both configs name the folder p; each in a file of its own.
    let two = write(dir.path(), "two.yaml", &std::fs::read_to_string(&two).unwrap());
    let out = run_bin(dir.path(), &["run", two.to_str().unwrap(), "--quiet", "--max-comparisons", "24"]);
    assert!(out.status.success(), "{}", text(&out));
    let log = dir.path().join("runs/p/verdicts.jsonl");
    let stored = lines(&log);
    let of_cheap = stored.iter().filter(|r| r["judge"] == "cheap").count();
    assert_eq!(stored.len(), 24);
    assert!(of_cheap > 0 && of_cheap < 24, "{of_cheap}");
    let one = main_job_with_judge(dir.path(), "p", &format!("judges:\n  - name: cheap\n{cheap}"));
    let total = of_cheap + 8;
    let out = run_bin(dir.path(), &["run", one.to_str().unwrap(), "--quiet", "--max-comparisons", &total.to_string()]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains(&format!("resumed: {of_cheap} stored verdicts reused, 8 queries asked in this run")),
        "{}",
        text(&out)
    );
    // No ordered pair of judge cheap's is asked twice.
    let after = lines(&log);
    assert_eq!(after.len(), 32);
    let mut cheap_pairs: Vec<(String, String)> = after
        .iter()
        .filter(|r| r["judge"] != "frontier")
        .map(|r| (r["a"].as_str().unwrap().to_owned(), r["b"].as_str().unwrap().to_owned()))
        .collect();
    let n = cheap_pairs.len();
    cheap_pairs.sort();
    cheap_pairs.dedup();
    assert_eq!((n, cheap_pairs.len()), (total, total));
    // `fit` and `report` read the folder as the run: its verdicts are the judge's, by key.
    let fit = run_bin(dir.path(), &["fit", "runs/p"]);
    assert!(fit.status.success(), "{}", text(&fit));
    assert!(stdout(&fit).contains(&format!("{total} valid verdicts")), "{}", text(&fit));
    let rep = run_bin(dir.path(), &["report", "runs/p", "--out", "rep"]);
    assert!(rep.status.success(), "{}", text(&rep));
    // And back: the panel takes over the 8 verdicts judge cheap's configuration stored as a
    // single judge (they were bought again), as copies at $0 under its name; the dry run says
    // so first.
    let dry = run_bin(dir.path(), &["run", two.to_str().unwrap(), "--dry-run", "--max-comparisons", "40"]);
    assert!(dry.status.success(), "{}", text(&dry));
    let says = "judge \"cheap\" takes over 8 verdicts its configuration stored in a single-judge run in ";
    assert!(stdout(&dry).contains(says), "{}", text(&dry));
    assert!(stdout(&dry).contains(&format!("  cheap: {total} verdicts stored;")), "{}", text(&dry));
    let out = run_bin(dir.path(), &["run", two.to_str().unwrap(), "--quiet", "--max-comparisons", "40"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains(says), "{}", text(&out));
    let last = lines(&log);
    let copies: Vec<&serde_json::Value> = last.iter().filter(|r| r["reused_from"].is_string()).collect();
    assert_eq!(copies.len(), 8);
    for c in &copies {
        assert_eq!((c["judge"].as_str(), c["cost_usd"].as_f64()), (Some("cheap"), Some(0.0)));
        let from = last.iter().find(|r| r["key"] == c["reused_from"]).unwrap();
        assert_eq!((&from["a"], &from["b"], &from["y"]), (&c["a"], &c["b"], &c["y"]));
        assert!(from["cost_usd"].as_f64().unwrap() > 0.0);
    }
    // No ordered pair of judge cheap's is bought twice: its own, the single run's and the copies.
    let mut paid: Vec<(String, String)> = last
        .iter()
        .filter(|r| r["judge"] != "frontier" && !r["reused_from"].is_string())
        .map(|r| (r["a"].as_str().unwrap().to_owned(), r["b"].as_str().unwrap().to_owned()))
        .collect();
    let n = paid.len();
    paid.sort();
    paid.dedup();
    assert_eq!(paid.len(), n, "a pair of judge cheap's was bought twice");
    // What the copies' originals cost is judge cheap's spend, not "other settings": the panel's
    // spend is the folder's, and each judge's is what its verdicts cost.
    let result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("runs/p/result.json")).unwrap()).unwrap();
    let cost_of = |judge_is_cheap: bool| -> f64 {
        last.iter()
            .filter(|r| (r["judge"] != "frontier") == judge_is_cheap)
            .map(|r| r["cost_usd"].as_f64().unwrap())
            .sum()
    };
    let judge_spend = |name: &str| {
        result["judges"].as_array().unwrap().iter().find(|j| j["name"] == name).unwrap()["spend_usd"].as_f64().unwrap()
    };
    assert!((judge_spend("cheap") - cost_of(true)).abs() < 1e-9, "{result}");
    assert!((judge_spend("frontier") - cost_of(false)).abs() < 1e-9, "{result}");
    assert_eq!(result["folder_spend"]["other_usd"].as_f64(), Some(0.0), "{result}");
    assert!(
        (result["spend_usd"].as_f64().unwrap() - result["folder_spend"]["spend_usd"].as_f64().unwrap()).abs() < 1e-9
    );
    assert!(!text(&out).contains("under other settings"), "{}", text(&out));
    // The panel's fit holds every verdict of judge cheap's: a resume takes over nothing more.
    let fit = run_bin(dir.path(), &["fit", "runs/p", "--panel"]);
    assert!(fit.status.success(), "{}", text(&fit));
    let again = run_bin(dir.path(), &["run", two.to_str().unwrap(), "--dry-run", "--max-comparisons", "40"]);
    assert!(!stdout(&again).contains("takes over"), "{}", text(&again));
}

//! The one judge dispatcher: `gate` and `audit` send their queries through the same
//! dispatcher as `run`, so their paid work is booked the same way — an intent before each
//! request, a paid failure in the failed log, and no reply dropped when the sending stops —
//! proved on the real binary against the fake OpenAI-compatible server.

use crate::common::fake_openai::{FakeOpenAi, Fault, TEMPLATE};
use crate::common::*;
use crate::crash_safety::{cost_of, fake, server_bill};
use std::path::{Path, PathBuf};

fn lines(path: &Path) -> usize {
    std::fs::read_to_string(path).map(|t| t.lines().count()).unwrap_or(0)
}

/// The YAML of a priced live judge on the fake server (no retries, `timeout_s` given).
fn live_judge(fake: &FakeOpenAi, indent: &str, timeout_s: f64) -> String {
    let lines = [
        "openai:".to_string(),
        format!("  base_url: {}", fake.base_url),
        "  model: fake-judge".into(),
        "  api_key_env: TOPK_DISPATCH_TEST_UNSET_KEY".into(),
        "  api_key_required: false".into(),
        "  prompt: prompts/test.j2".into(),
        "  max_tokens: 8".into(),
        "  max_invalid_retries: 0".into(),
        "  max_retries: 0".into(),
        format!("  timeout_s: {timeout_s}"),
        "  price: {input_usd_per_mtok: 1.0, output_usd_per_mtok: 2.0}".into(),
    ];
    lines.iter().map(|l| format!("{indent}{l}\n")).collect()
}

/// A mock run whose gate asks a live trusted judge on 10 anchors (20 ordered queries).
fn gated_run(dir: &Path, fake: &FakeOpenAi) -> PathBuf {
    write(dir, "prompts/test.j2", TEMPLATE);
    // (continues the budget: a live trusted judge needs budget.max_usd)
    let gate = format!("  max_usd: 1.0\ngate:\n  anchors: 10\n  trusted:\n{}", live_judge(fake, "    ", 60.0));
    mock_config(dir, "gated", 60, &gate)
}

/// The gate's first failed query stops the sending, but the trusted requests already in flight
/// are waited for and stored: re-running the gate asks only the query that failed. (The gate
/// used to return at the failure and drop the replies in flight, which were then paid twice.)
#[test]
fn a_failing_trusted_judge_loses_no_reply_in_flight() {
    let dir = tempfile::tempdir().unwrap();
    let fake = fake();
    let cfg = gated_run(dir.path(), &fake);
    fake.set_delay_ms(300);
    fake.script([Fault::Ok, Fault::Ok, Fault::ServerError]);
    let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet"]);
    assert!(!out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("trusted judge failed on"), "{}", text(&out));
    let run = dir.path().join("runs/gated");
    let sent = fake.n_requests();
    assert!(sent >= 8, "8 in flight when the failure came back: {sent}");
    // Every request but the failed one is a stored verdict; its intent is closed unbilled.
    assert_eq!(lines(&run.join("trusted_verdicts.jsonl")), sent - 1);
    assert!(lines(&run.join("trusted_intents.jsonl")) >= sent, "an intent per request");
    assert_eq!(lines(&run.join("trusted_failed.jsonl")), 0, "a 500 is not billed");
    assert_eq!(lines(&run.join("verdicts.jsonl")), 60, "the run's own books are apart");

    // Re-running the gate asks the failed query only, and the gate decides.
    fake.set_delay_ms(0);
    let out = run_bin(dir.path(), &["gate", "runs/gated"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(lines(&run.join("trusted_verdicts.jsonl")), 20);
    assert_eq!(fake.n_requests(), 21, "20 ordered queries, one of them asked twice");
    let g: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(run.join("gate.json")).unwrap()).unwrap();
    assert_eq!(g["decision"]["n_anchors"], 10);
}

/// An audit's timed-out (possibly billed) query is booked in failed.jsonl at its worst case,
/// which equals the server's bill for it, and counts in audit.json's spend; the rest of the
/// audit goes on, and a re-run asks only that query.
#[test]
fn an_audit_books_its_paid_failures_and_spends_what_the_server_bills() {
    let dir = tempfile::tempdir().unwrap();
    let fake = fake();
    write(dir.path(), "prompts/test.j2", TEMPLATE);
    // 17 pairs of answers of different lengths: 34 ordered queries.
    let pairs: String = (0..17)
        .map(|i| {
            let text = |n: usize| serde_json::json!({"text": vec!["word"; n].join(" ")});
            serde_json::json!({"id": format!("p{i:02}"), "kind": "pair", "x": text(5 + i), "y": text(30 + i)})
                .to_string()
                + "\n"
        })
        .collect();
    let pairs = write(dir.path(), "pairs.jsonl", &pairs);
    let yaml = format!(
        "name: live\nout_dir: runs\nconcurrency: 4\nmax_usd: 1.0\njudge:\n{}pairs: {}\n",
        live_judge(&fake, "  ", 0.5),
        pairs.display()
    );
    let cfg = write(dir.path(), "audit.yaml", &yaml);
    fake.script([Fault::Hang { ms: 3000 }]);
    let out = run_bin(dir.path(), &["audit", cfg.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("queries: 34 (33 new, 0 cached, 1 failed)"), "{}", text(&out));
    let run = dir.path().join("runs/live");
    assert_eq!(lines(&run.join("verdicts.jsonl")), 33);
    let failed = std::fs::read_to_string(run.join("failed.jsonl")).unwrap();
    assert_eq!(failed.lines().count(), 1, "{failed}");
    let booked: f64 = serde_json::from_str::<serde_json::Value>(failed.trim()).unwrap()["cost_usd"].as_f64().unwrap();
    let hung = fake.requests().iter().map(|r| cost_of(&r.body)).next().unwrap();
    assert!((booked - hung).abs() < 1e-12, "booked {booked}, billed {hung}");
    let (n, bill) = server_bill(&fake);
    assert_eq!(n, 34);
    let audit: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("audit.json")).unwrap()).unwrap();
    assert!((audit["spend_usd"].as_f64().unwrap() - bill).abs() < 1e-12, "{} vs {bill}", audit["spend_usd"]);
    assert!(lines(&run.join("intents.jsonl")) >= 34, "an intent per request");

    let out = run_bin(dir.path(), &["audit", cfg.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("queries: 34 (1 new, 33 cached, 0 failed)"), "{}", text(&out));
    assert_eq!(fake.n_requests(), 35);
}

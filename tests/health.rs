//! Behaviours that had no test: the early stop on confident membership, `orders: single`
//! through the real runner, and HTML escaping in report.html.

use crate::common::*;
use std::collections::HashMap;

fn result(dir: &std::path::Path, name: &str) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("runs").join(name).join("result.json")).unwrap()).unwrap()
}

#[test]
fn confidence_stops_when_every_membership_is_settled() {
    let dir = tempfile::tempdir().unwrap();
    let eps = 0.25;
    // The deterministic tutorial mock: consistent verdicts, so membership settles before the
    // 240 ordered pairs run out.
    let cfg = mock_config(dir.path(), "conf", 240, "model:\n  kind: naive\n");
    let with_eps = std::fs::read_to_string(&cfg)
        .unwrap()
        .replace("mode: stochastic", "mode: deterministic")
        .replace("  mc_draws: 400", &format!("  mc_draws: 400\n  confidence: {eps}"));
    std::fs::write(&cfg, with_eps).unwrap();
    let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", text(&out));
    let r = result(dir.path(), "conf");
    assert_eq!(r["stop_reason"], "confident", "{r}");
    let n = r["comparisons"].as_u64().unwrap();
    assert!(n < 240, "stopped early: {n} comparisons");
    for (id, p) in r["membership"].as_object().unwrap() {
        let p = p.as_f64().unwrap();
        assert!(p <= eps || p >= 1.0 - eps, "{id}: π = {p} is not within ε of 0 or 1");
    }
    // Without the stop the same run goes on to its budget.
    let cfg = mock_config(dir.path(), "noconf", 200, "model:\n  kind: naive\n");
    let t = std::fs::read_to_string(&cfg).unwrap().replace("mode: stochastic", "mode: deterministic");
    std::fs::write(&cfg, t).unwrap();
    assert!(run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet"]).status.success());
    assert_eq!(result(dir.path(), "noconf")["stop_reason"], "max_comparisons");
}

#[test]
fn orders_single_picks_ordered_pairs_one_by_one() {
    let dir = tempfile::tempdir().unwrap();
    let count = |pairs: &[(String, String)]| {
        let mut m: HashMap<(String, String), usize> = HashMap::new();
        for (a, b) in pairs {
            let k = if a < b { (a.clone(), b.clone()) } else { (b.clone(), a.clone()) };
            *m.entry(k).or_default() += 1;
        }
        m
    };
    let both = mock_config(dir.path(), "both", 48, "");
    assert!(run_bin(dir.path(), &["run", both.to_str().unwrap(), "--quiet"]).status.success());
    let p = ordered_pairs(dir.path(), "both");
    assert_eq!(p.len(), 48);
    assert!(count(&p).values().all(|&c| c == 2), "orders: both asks each chosen pair in both orders");

    let single = mock_config(dir.path(), "single", 48, "");
    let t = std::fs::read_to_string(&single).unwrap().replace("  seed: 42\n", "  seed: 42\n  orders: single\n");
    std::fs::write(&single, t).unwrap();
    assert!(run_bin(dir.path(), &["run", single.to_str().unwrap(), "--quiet"]).status.success());
    let p = ordered_pairs(dir.path(), "single");
    assert_eq!(p.len(), 48);
    let distinct: std::collections::HashSet<_> = p.iter().collect();
    assert_eq!(distinct.len(), 48, "one verdict per ordered pair");
    let c = count(&p);
    assert!(c.values().any(|&n| n == 1), "orders: single leaves some pairs with one order: {c:?}");
    assert!(c.len() > 24, "{} unordered pairs for 48 single-order picks", c.len());
}

#[test]
fn report_html_escapes_ids_and_names() {
    let dir = tempfile::tempdir().unwrap();
    let pool = write(
        dir.path(),
        "pool.jsonl",
        concat!(
            r#"{"pool_id": "p<&>", "task": "Pick the best.", "items": ["#,
            r#"{"id": "a<b>", "text": "one two three", "quality": 3.0}, "#,
            r#"{"id": "c&d", "text": "one two", "quality": 2.0}, "#,
            r#"{"id": "q\"x", "text": "one", "quality": 1.0}, "#,
            r#"{"id": "e", "text": "one two three four", "quality": 0.0}]}"#,
            "\n"
        ),
    );
    let cfg = write(
        dir.path(),
        "c.yaml",
        &format!(
            "name: esc\nout_dir: runs\npool:\n  file: {}\nk: 2\njudge:\n  mock: {{mode: deterministic}}\nacquisition: {{mc_draws: 200}}\nbudget:\n  max_comparisons: 12\n",
            pool.display()
        ),
    );
    let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", text(&out));
    let run = dir.path().join("runs/esc");
    let out = run_bin(dir.path(), &["report", run.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    let html = std::fs::read_to_string(run.join("report.html")).unwrap();
    assert!(html.contains("a&lt;b&gt;") && html.contains("c&amp;d"), "ids are escaped");
    assert!(!html.contains("a<b>") && !html.contains("p<&>"), "no raw markup from the data");
    assert!(!html.contains("c&d<") && !html.contains("c&d "), "a bare & from the data");
}

#[test]
/// The gate reads the run's verdicts; the run's live judge is only described (gate.json names
/// it), so its API key is not needed: without it the gate goes on to the verdicts.
fn gate_on_a_live_run_needs_no_key_for_the_runs_judge() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = root().join("configs/openai.yaml");
    let text0 = std::fs::read_to_string(&cfg)
        .unwrap()
        .replace("out_dir: ../runs", &format!("out_dir: {}", dir.path().join("runs").display()));
    let text0 = text0
        .replace("../data/", &format!("{}/data/", root().display()))
        .replace("../prompts/", &format!("{}/prompts/", root().display()));
    let labels = write(dir.path(), "labels.jsonl", "");
    let cfg = write(dir.path(), "openai.yaml", &format!("{text0}\ngate:\n  labels: {}\n", labels.display()));
    // A run folder with (no) verdicts, so that the gate gets as far as its judge.
    std::fs::create_dir_all(dir.path().join("runs/summeval-openai")).unwrap();
    std::fs::write(dir.path().join("runs/summeval-openai/verdicts.jsonl"), "").unwrap();
    let out = std::process::Command::new(bin())
        .current_dir(dir.path())
        .args(["gate", cfg.to_str().unwrap()])
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap();
    assert!(!out.status.success(), "{}", text(&out));
    assert!(!text(&out).contains("OPENAI_API_KEY"), "the run's judge needs no key here: {}", text(&out));
    assert!(text(&out).contains("runs/summeval-openai: the run has no valid verdicts"), "{}", text(&out));
    assert!(!dir.path().join("runs/summeval-openai/gate.json").exists());
}

/// `run --dry-run` shows the query the real run sends first: under `design: paired` a
/// within-base query (before this was fixed the dry run left those out and showed a cross-base
/// pair), and under the single design the acquisition rule's first pick on the prior.
#[test]
fn the_dry_run_shows_the_first_query_the_run_sends() {
    let dir = tempfile::tempdir().unwrap();
    for (file, name, pairs) in
        [("paired.yaml", "summeval-paired", 32 * 31 - 2), ("mock.yaml", "summeval-mock", 16 * 15 - 2)]
    {
        let yaml = std::fs::read_to_string(root().join("configs").join(file))
            .unwrap()
            .replace("out_dir: ../runs", "out_dir: runs")
            .replace("../data/", &format!("{}/", root().join("data").display()));
        let cfg = write(dir.path(), file, &yaml);
        let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--dry-run"]);
        assert!(out.status.success(), "{}", text(&out));
        let t = text(&out);
        let line = t.lines().find(|l| l.starts_with("first query: ")).unwrap_or_else(|| panic!("{t}"));
        let (a, b) = line["first query: ".len()..].split_once(" vs ").unwrap();
        let b = b.split(' ').next().unwrap();
        assert!(t.contains(&format!("{pairs} ordered pairs")), "{file}: {t}");
        let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet"]);
        assert!(out.status.success(), "{}", text(&out));
        // The first request sent (intents are written in send order; verdicts in reply order).
        let sent = sent_pairs(dir.path(), name);
        assert_eq!(sent[0], (a.to_string(), b.to_string()), "{file}: {line}");
        if file == "paired.yaml" {
            let base = |id: &str| id.split('.').next().unwrap().to_string();
            assert_eq!(base(a), base(b), "a within-base query goes first: {line}");
        }
    }
}

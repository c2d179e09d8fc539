//! `topk-judge run` and `fit` end to end on the shipped SummEval pool with the mock judge.

use crate::common::*;

#[test]
fn run_writes_outputs_and_table() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = mock_config(dir.path(), "smoke", 24, "");
    let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    let run = dir.path().join("runs/smoke");
    for f in ["config.yaml", "verdicts.jsonl", "fits.jsonl", "result.json"] {
        assert!(run.join(f).exists(), "{f} missing");
    }
    let verdicts = std::fs::read_to_string(run.join("verdicts.jsonl")).unwrap();
    assert_eq!(verdicts.lines().count(), 24);
    // The printed table holds the ranking of result.json: one row per base, in order, θ̂ to 3 decimals.
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("result.json")).unwrap()).unwrap();
    let shown = text(&out);
    let rows: Vec<&str> = shown
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("rank"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .collect();
    let ranking = r["ranking"].as_array().unwrap();
    // The table's value column is the reported ranking's: φ̂ (apparent) or θ̂ (corrected).
    let value = if r["reported"] == "apparent" { "phi" } else { "theta" };
    assert_eq!(rows.len(), ranking.len(), "{shown}");
    for (row, want) in rows.iter().zip(ranking) {
        let cols: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(cols[1], want["id"].as_str().unwrap(), "{row}");
        assert_eq!(cols[2], format!("{:.3}", want[value].as_f64().unwrap()), "{row}");
    }
}

fn result(dir: &std::path::Path, name: &str) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.join("runs").join(name).join("result.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn resume_matches_uninterrupted_run() {
    let dir = tempfile::tempdir().unwrap();
    // Interrupted: 40 comparisons, then the same config with a budget of 80.
    let c40 = mock_config(dir.path(), "resumed", 40, "");
    assert!(run_bin(dir.path(), &["run", c40.to_str().unwrap()]).status.success());
    assert_eq!(ordered_pairs(dir.path(), "resumed").len(), 40);
    let c80 = mock_config(dir.path(), "resumed", 80, "");
    let out = run_bin(dir.path(), &["run", c80.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    // Uninterrupted 80.
    let full = mock_config(dir.path(), "full", 80, "");
    assert!(run_bin(dir.path(), &["run", full.to_str().unwrap()]).status.success());

    let p = ordered_pairs(dir.path(), "resumed");
    assert_eq!(p.len(), 80);
    let distinct: std::collections::HashSet<_> = p.iter().cloned().collect();
    assert_eq!(distinct.len(), 80, "no ordered pair queried twice");
    let mut q = ordered_pairs(dir.path(), "full");
    let mut p_sorted = p.clone();
    p_sorted.sort();
    q.sort();
    assert_eq!(p_sorted, q, "same ordered pairs as the uninterrupted run");
    let (r1, r2) = (result(dir.path(), "resumed"), result(dir.path(), "full"));
    for key in ["theta", "sd", "membership", "c", "kappa", "topk", "recall_at_k"] {
        assert_eq!(r1[key], r2[key], "{key} differs");
    }
}

#[test]
fn same_config_gives_identical_result_json() {
    let dir = tempfile::tempdir().unwrap();
    let a = mock_config(dir.path(), "a", 48, "");
    assert!(run_bin(dir.path(), &["run", a.to_str().unwrap()]).status.success());
    let first = std::fs::read_to_string(dir.path().join("runs/a/result.json")).unwrap();
    std::fs::remove_dir_all(dir.path().join("runs/a")).unwrap();
    assert!(run_bin(dir.path(), &["run", a.to_str().unwrap()]).status.success());
    let second = std::fs::read_to_string(dir.path().join("runs/a/result.json")).unwrap();
    assert_eq!(first, second);
    // Re-running a finished run changes nothing either (no new queries, same fit).
    assert!(run_bin(dir.path(), &["run", a.to_str().unwrap()]).status.success());
    let third = std::fs::read_to_string(dir.path().join("runs/a/result.json")).unwrap();
    assert_eq!(first, third);
    assert_eq!(ordered_pairs(dir.path(), "a").len(), 48);
}

#[test]
fn exhausting_a_pool_queries_every_ordered_pair_once() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = mock_config(dir.path(), "all", 1000, "");
    let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    let p = ordered_pairs(dir.path(), "all");
    // M1 and M2 have identical text in this pool: their two ordered pairs are not sent.
    assert_eq!(p.len(), 16 * 15 - 2);
    let distinct: std::collections::HashSet<_> = p.iter().collect();
    assert_eq!(distinct.len(), 238);
    assert!(!p.iter().any(|(a, b)| (a == "M1" && b == "M2") || (a == "M2" && b == "M1")));
    assert_eq!(result(dir.path(), "all")["stop_reason"], "exhausted");
}

/// Each bad input: non-zero exit, a message naming the problem, and an earlier run's verdicts
/// left byte-for-byte as they were.
#[test]
fn bad_inputs_fail_clearly_without_touching_earlier_verdicts() {
    let dir = tempfile::tempdir().unwrap();
    let good = mock_config(dir.path(), "keep", 16, "");
    assert!(run_bin(dir.path(), &["run", good.to_str().unwrap()]).status.success());
    let verdicts = dir.path().join("runs/keep/verdicts.jsonl");
    let before = std::fs::read(&verdicts).unwrap();

    let pool_line = |items: &str| format!("{{\"pool_id\": \"p\", \"task\": \"t\", \"items\": [{items}]}}\n");
    write(dir.path(), "empty.jsonl", &pool_line(""));
    write(
        dir.path(),
        "dup.jsonl",
        &pool_line(
            r#"{"id": "a", "text": "x", "quality": 1}, {"id": "b", "text": "y", "quality": 2}, {"id": "a", "text": "z", "quality": 3}"#,
        ),
    );
    write(
        dir.path(),
        "three.jsonl",
        &pool_line(
            r#"{"id": "a", "text": "x", "quality": 1}, {"id": "b", "text": "y", "quality": 2}, {"id": "c", "text": "z", "quality": 3}"#,
        ),
    );
    let cfg = |pool: &str, k: usize, extra: &str| {
        format!(
            "name: keep\nout_dir: runs\npool: {{file: {pool}}}\nk: {k}\njudge: {{mock: {{}}}}\nbudget: {{max_comparisons: 32}}\n{extra}"
        )
    };
    let cases: Vec<(&str, String, &str)> = vec![
        ("missing.yaml", cfg("nope.jsonl", 2, ""), "cannot read pool file"),
        ("empty.yaml", cfg("empty.jsonl", 2, ""), "no items"),
        ("dup.yaml", cfg("dup.jsonl", 2, ""), "duplicate item id \"a\""),
        ("bigk.yaml", cfg("three.jsonl", 3, ""), "k: 3 must satisfy 1 ≤ k < number of bases (3)"),
        ("unknown.yaml", cfg("three.jsonl", 1, "acquisition: {refit_evry: 8}\n"), "refit_evry"),
    ];
    for (name, yaml, expect) in cases {
        let path = write(dir.path(), name, &yaml);
        let out = run_bin(dir.path(), &["run", path.to_str().unwrap()]);
        let t = text(&out);
        assert!(!out.status.success(), "{name} should fail");
        assert!(t.contains(expect), "{name}: expected {expect:?} in\n{t}");
        assert!(t.contains(name), "{name}: the message names the config file\n{t}");
        assert_eq!(std::fs::read(&verdicts).unwrap(), before, "{name} touched the earlier verdicts");
    }
    // The unknown key error names the line.
    let out = run_bin(dir.path(), &["run", dir.path().join("unknown.yaml").to_str().unwrap()]);
    assert!(text(&out).contains("line 7") || text(&out).contains("7:"), "{}", text(&out));
}

#[test]
fn fit_command_refits_a_runs_verdicts() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = mock_config(dir.path(), "r", 64, "");
    assert!(run_bin(dir.path(), &["run", cfg.to_str().unwrap()]).status.success());
    let out_json = dir.path().join("fit.json");
    let out = run_bin(
        dir.path(),
        &[
            "fit",
            summeval().to_str().unwrap(),
            dir.path().join("runs/r/verdicts.jsonl").to_str().unwrap(),
            "--pool-id",
            "dm-test-2377095dda83df778e34304b7a09813808105d3b",
            "--k",
            "3",
            "--draws",
            "400",
            "--seed",
            "42",
            "--out",
            out_json.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let fit: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&out_json).unwrap()).unwrap();
    let run = result(dir.path(), "r");
    // Same verdicts, same model and prior → the same MAP as the run's final fit.
    for (id, t) in run["theta"].as_object().unwrap() {
        let f = fit["theta"][id].as_f64().unwrap();
        assert!((f - t.as_f64().unwrap()).abs() < 1e-6, "{id}: {f} vs {t}");
    }
    assert!((fit["c"]["words"].as_f64().unwrap() - run["c"]["words"].as_f64().unwrap()).abs() < 1e-6);
    assert_eq!(fit["topk"], run["topk"]);
    for key in ["sd", "membership", "kappa"] {
        assert!(!fit[key].is_null(), "{key} missing");
    }
    // A verdict naming an unknown item is an error naming the record.
    let bad = write(
        dir.path(),
        "bad.jsonl",
        "{\"a\": \"M0\", \"b\": \"M1\", \"y\": 1}\n{\"a\": \"M0\", \"b\": \"ZZ\", \"y\": 0}\n",
    );
    let out = run_bin(dir.path(), &["fit", summeval().to_str().unwrap(), bad.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(text(&out).contains("bad.jsonl:2: item \"ZZ\""), "{}", text(&out));
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
    // Another k under the same name: warned, naming what differs.
    let yaml = std::fs::read_to_string(&c).unwrap().replace("k: 3", "k: 4");
    std::fs::write(&c, yaml).unwrap();
    let out = run_bin(dir.path(), &["run", c.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("holds a run with a different model, k, acquisition or pool"), "{}", text(&out));
    // Another judge seed: the judge differs.
    let yaml = std::fs::read_to_string(&c).unwrap().replace("seed: 7", "seed: 8");
    std::fs::write(&c, yaml).unwrap();
    let out = run_bin(dir.path(), &["run", c.to_str().unwrap()]);
    assert!(text(&out).contains("holds a run with a different judge:"), "{}", text(&out));
}

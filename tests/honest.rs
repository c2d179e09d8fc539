//! Issue 14, "honest results": each test drives the binary on one point — the reported ranking
//! and why, no claim without comparisons, ties, the comparison graph, `fit`/`audit` checks,
//! portable run folders, resume counts, budgets, and inputs that would mislead.

use crate::common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};

const POOL_ID: &str = "dm-test-2377095dda83df778e34304b7a09813808105d3b";

fn json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))).unwrap()
}

fn stdout(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn strs(v: &Value) -> Vec<String> {
    v.as_array().unwrap().iter().map(|x| x.as_str().unwrap().to_string()).collect()
}

/// configs/mock.yaml with its paths made absolute / local to `dir`, plus `extra` YAML lines.
fn main_job(dir: &Path, name: &str, extra: &str) -> PathBuf {
    let yaml = std::fs::read_to_string(root().join("configs/mock.yaml"))
        .unwrap()
        .replace("name: summeval-mock", &format!("name: {name}"))
        .replace("out_dir: ../runs", "out_dir: runs")
        .replace("../data/summeval_pools.jsonl", summeval().to_str().unwrap());
    write(dir, &format!("{name}.yaml"), &format!("{yaml}{extra}"))
}

/// The README's main job, exactly as the README shows it (everything but the last line,
/// `outputs: <folder>`).
#[test]
fn the_readme_main_job_shows_what_the_binary_prints() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = main_job(dir.path(), "summeval-mock", "");
    let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", text(&out));
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let start = readme.find("prints the ranking").expect("README: the main job's output block");
    let block = &readme[start..];
    let block = &block[block.find("```\n").unwrap() + 4..];
    let block = &block[..block.find("```").unwrap()];
    let printed = stdout(&out);
    // The run folder is a temporary one here: the last line is compared by its ending.
    let folder = printed.lines().find(|l| l.starts_with("outputs: ")).expect("an outputs line");
    assert!(folder.ends_with("runs/summeval-mock"), "{folder}");
    assert_eq!(block.lines().last(), Some("outputs: runs/summeval-mock"));
    let printed: Vec<&str> = printed.trim_end().lines().filter(|l| !l.starts_with("outputs: ")).collect();
    let shown: Vec<&str> = block.lines().filter(|l| !l.starts_with("outputs: ")).collect();
    assert_eq!(shown, printed, "README main job output differs from the binary's:\n{}", printed.join("\n"));
}

#[test]
fn the_main_job_reports_the_apparent_ranking_and_why() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = main_job(dir.path(), "auto", "");
    let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", text(&out));
    let s = stdout(&out);
    assert!(
        s.contains("reported ranking: apparent quality φ̂ (report_ranking: auto): c[words] is prior-selected (the comparisons do not inform it) and no trusted-anchor gate enabled the correction; the bias-corrected ranking is shown beside it"),
        "{s}"
    );
    assert!(s.contains("top-3 (apparent, reported): M12, M13, M0\nrecall@3 against gold: 1.00\n"), "{s}");
    assert!(s.contains("bias-corrected top-3 (beside): M13, M12, M22; recall@3 against gold 0.67"), "{s}");
    let r = json(&dir.path().join("runs/auto/result.json"));
    assert_eq!(r["reported"], "apparent");
    assert_eq!(r["report_ranking"], "auto");
    assert_eq!(strs(&r["topk"]), ["M12", "M13", "M0"]);
    assert_eq!(r["recall_at_k"], 1.0);
    assert_eq!(strs(&r["corrected"]["topk"]), ["M13", "M12", "M22"]);
    assert!((r["corrected"]["recall_at_k"].as_f64().unwrap() - 2.0 / 3.0).abs() < 1e-12);
    assert_eq!(strs(&r["apparent"]["topk"]), ["M12", "M13", "M0"]);
    // The apparent top-3 is the three largest φ̂ in result.json (independent of the table).
    let mut phi: Vec<(String, f64)> =
        r["phi"].as_object().unwrap().iter().map(|(k, v)| (k.clone(), v.as_f64().unwrap())).collect();
    phi.sort_by(|a, b| b.1.total_cmp(&a.1));
    assert_eq!(phi.iter().take(3).map(|p| p.0.as_str()).collect::<Vec<_>>(), ["M12", "M13", "M0"]);

    // report_ranking: corrected reports θ̂ and says the correction rests on the prior.
    let cfg = main_job(dir.path(), "forced", "report_ranking: corrected\n");
    let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        stdout(&out).contains("top-3 (corrected, reported): M13, M12, M22\nrecall@3 against gold: 0.67"),
        "{}",
        stdout(&out)
    );
    assert!(stdout(&out).contains("the correction rests on the prior"), "{}", stdout(&out));
    let r = json(&dir.path().join("runs/forced/result.json"));
    assert_eq!(
        (r["reported"].as_str(), strs(&r["topk"])),
        (Some("corrected"), vec!["M13".into(), "M12".into(), "M22".into()])
    );
}

/// A `gate:` block runs the gate at the end of the run; an unbiased trusted judge keeps the
/// apparent ranking; `report` shows the decision and both rankings.
#[test]
fn a_gate_in_the_config_runs_after_the_run_and_decides_what_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let gate = "gate:\n  anchors: 10\n  trusted:\n    mock: {mode: stochastic, pos_bias: 0.0, verb_per_word: 0.0, temperature: 0.1, seed: 3}\n";
    let cfg = main_job(dir.path(), "gated", gate);
    let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", text(&out));
    let run = dir.path().join("runs/gated");
    let g = json(&run.join("gate.json"));
    let d = &g["decision"];
    let (n10, n01) = (d["n10"].as_u64().unwrap() as usize, d["n01"].as_u64().unwrap() as usize);
    let p = topk_judge::analysis::gate::sign_test_p(n10, n01);
    assert!((d["p_value"].as_f64().unwrap() - p).abs() < 1e-12);
    assert_eq!(d["enable"], false, "an unbiased trusted judge does not support the correction: {d}");
    // 10 anchors in both orders, cached like any verdict.
    assert_eq!(std::fs::read_to_string(run.join("trusted_verdicts.jsonl")).unwrap().lines().count(), 20);
    let r = json(&run.join("result.json"));
    assert_eq!(r["reported"], "apparent");
    assert!(
        r["reported_reason"].as_str().unwrap().starts_with("the trusted-anchor gate kept the apparent ranking"),
        "{}",
        r["reported_reason"]
    );
    assert_eq!(r["gate"]["chosen"], "apparent");
    assert_eq!(r["gate"]["topk"], r["topk"]);
    // The prior-selected note no longer advises a gate: this run had one.
    let notes: Vec<String> = strs(&r["notes"]);
    assert!(notes.iter().all(|n| !n.contains("test that with a `gate:`")), "{notes:?}");
    assert!(
        notes.iter().any(|n| n.starts_with("c[words] is prior-selected")
            && n.ends_with("; the trusted-anchor gate of this run tested it (its decision is shown with the ranking)")),
        "{notes:?}"
    );
    let s = stdout(&out);
    assert!(s.contains("/runs/gated/gate.json): P(Bin("), "{s}");
    assert_eq!(s.matches("P(Bin(").count(), 1, "the gate's decision is printed once: {s}");
    assert!(s.contains("chosen (apparent) top-3: M12, M13, M0"), "{s}");
    // Re-running asks the trusted judge nothing new.
    let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(std::fs::read_to_string(run.join("trusted_verdicts.jsonl")).unwrap().lines().count(), 20);
    // report shows the gate decision and both rankings.
    let out = run_bin(dir.path(), &["report", "runs/gated"]);
    assert!(out.status.success(), "{}", text(&out));
    let md = std::fs::read_to_string(run.join("report.md")).unwrap();
    assert!(md.contains("reported ranking: apparent quality φ̂"), "{md}");
    assert!(md.contains("reported (apparent) top-3: M12, M13, M0"), "{md}");
    assert!(md.contains("bias-corrected (beside) top-3: M13, M12, M22"), "{md}");
    assert!(md.contains("/runs/gated/gate.json`): P(Bin("), "{md}");
    assert!(md.contains("keep the naive ranking"), "{md}");

    // The gate's spend counts in the run's budget: a priced trusted judge that does not fit in
    // what max_usd leaves is refused before any query is sent.
    let priced = "  max_usd: 0.0\ngate:\n  anchors: 4\n  trusted:\n    mock: {pos_bias: 0.0, verb_per_word: 0.0, input_usd_per_mtok: 1.0, output_usd_per_mtok: 1.0}\n";
    let cfg = mock_config(dir.path(), "priced", 24, priced);
    let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet"]);
    assert!(!out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("the gate's 8 trusted queries could cost up to $"), "{}", text(&out));
    assert!(text(&out).contains("has $0 left"), "{}", text(&out));
    assert!(
        !dir.path().join("runs/priced/trusted_verdicts.jsonl").exists()
            || std::fs::read_to_string(dir.path().join("runs/priced/trusted_verdicts.jsonl")).unwrap().is_empty()
    );
    assert_eq!(json(&dir.path().join("runs/priced/result.json"))["reported"], "apparent");
}

#[test]
fn zero_valid_comparisons_claim_no_top_k_and_say_what_a_query_needs() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = mock_config(dir.path(), "zero", 0, "");
    let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", text(&out));
    let s = stdout(&out);
    assert!(
        s.contains("top-3 (apparent, reported): none claimed: no valid comparison, the ranking is the prior"),
        "{s}"
    );
    assert!(!s.contains("recall@"), "{s}");
    assert!(s.contains("note: no valid comparison: the ranking is the prior (every θ̂ and φ̂ is 0), so no top-k and no recall is claimed; one query needs budget.max_comparisons ≥ 1"), "{s}");
    let r = json(&dir.path().join("runs/zero/result.json"));
    assert_eq!(r["topk"], serde_json::json!([]));
    assert!(r.get("recall_at_k").is_none(), "{r}");
    assert_eq!(r["topk_tied"].as_array().unwrap().len(), 16);
    // A priced judge: the note names the worst case of one query.
    let cfg = mock_config(dir.path(), "zero-usd", 10, "  max_usd: 0.0\n");
    let yaml = std::fs::read_to_string(&cfg)
        .unwrap()
        .replace("    seed: 7\n", "    seed: 7\n    input_usd_per_mtok: 1.0\n    output_usd_per_mtok: 1.0\n");
    std::fs::write(&cfg, yaml).unwrap();
    let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        stdout(&out).contains("one query needs budget.max_comparisons ≥ 1 and budget.max_usd ≥ $"),
        "{}",
        stdout(&out)
    );
}

/// A 4-item pool: a beats b and c, b and c each beat d, in both orders: b and c are tied for
/// the second place of a top-2.
#[test]
fn ties_that_decide_the_top_k_are_reported_as_ties() {
    let dir = tempfile::tempdir().unwrap();
    let pool = write(
        dir.path(),
        "pool.jsonl",
        "{\"pool_id\": \"t\", \"task\": \"x\", \"items\": [{\"id\": \"a\", \"quality\": 4}, {\"id\": \"b\", \"quality\": 3}, {\"id\": \"c\", \"quality\": 2}, {\"id\": \"d\", \"quality\": 1}]}\n",
    );
    let mut v = String::new();
    for (w, l) in [("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")] {
        v.push_str(&format!(
            "{{\"a\": \"{w}\", \"b\": \"{l}\", \"y\": 1}}\n{{\"a\": \"{l}\", \"b\": \"{w}\", \"y\": 0}}\n"
        ));
    }
    let verdicts = write(dir.path(), "v.jsonl", &v);
    let out_json = dir.path().join("fit.json");
    let out = run_bin(
        dir.path(),
        &["fit", pool.to_str().unwrap(), verdicts.to_str().unwrap(), "--k", "2", "--out", out_json.to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", text(&out));
    let s = stdout(&out);
    assert!(s.contains("top-2: a + 1 of the tied b, c\n"), "{s}");
    assert!(
        s.contains(
            "decide the top-2: b, c are tied for the last 1 place; the data do not say which, so no recall is claimed"
        ),
        "{s}"
    );
    assert!(s.contains("\n   2=  b "), "{s}");
    let f = json(&out_json);
    assert_eq!(strs(&f["topk"]), ["a"]);
    assert_eq!(strs(&f["topk_tied"]), ["b", "c"]);
    assert!(f.get("recall_at_k").is_none());
}

#[test]
fn components_and_never_compared_items_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let items: Vec<String> = (1..=6).map(|i| format!("{{\"id\": \"i{i}\", \"quality\": {i}}}")).collect();
    let pool = write(
        dir.path(),
        "pool.jsonl",
        &format!("{{\"pool_id\": \"g\", \"task\": \"x\", \"items\": [{}]}}\n", items.join(", ")),
    );
    let mut v = String::new();
    for (a, b, y) in [("i1", "i2", 1), ("i2", "i3", 0), ("i3", "i1", 1), ("i4", "i5", 1), ("i5", "i4", 1)] {
        v.push_str(&format!("{{\"a\": \"{a}\", \"b\": \"{b}\", \"y\": {y}}}\n"));
    }
    let verdicts = write(dir.path(), "v.jsonl", &v);
    let out_json = dir.path().join("fit.json");
    let out = run_bin(
        dir.path(),
        &["fit", pool.to_str().unwrap(), verdicts.to_str().unwrap(), "--k", "2", "--out", out_json.to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        stdout(&out).contains("comparison graph: 3 components (sizes 3, 2, 1); never compared: i6"),
        "{}",
        stdout(&out)
    );
    assert!(stdout(&out).contains("note: the comparison graph has 3 components (sizes 3, 2, 1)"), "{}", stdout(&out));
    let g = &json(&out_json)["graph"];
    assert_eq!(g["components"], 3);
    assert_eq!(g["component_sizes"], serde_json::json!([3, 2, 1]));
    assert_eq!(strs(&g["never_compared"]), ["i6"]);

    // A run that stops after one pair (both orders): 1 component of 2 and 14 bases alone.
    let cfg = mock_config(dir.path(), "sparse", 2, "");
    let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", text(&out));
    let r = json(&dir.path().join("runs/sparse/result.json"));
    assert_eq!(r["graph"]["components"], 15);
    assert_eq!(r["graph"]["never_compared"].as_array().unwrap().len(), 14);
    // Fourteen singletons are one run, and the never-compared list stops after eight.
    let line = stdout(&out).lines().find(|l| l.starts_with("comparison graph:")).unwrap_or_default().to_string();
    assert!(line.starts_with("comparison graph: 15 components (sizes 2, 14 of size 1); never compared: "), "{line}");
    assert!(line.ends_with(", … (14 in all)") && line.matches(", ").count() == 9, "{line}");
}

#[test]
fn fit_rejects_records_without_y_and_reports_pools_and_judges() {
    let dir = tempfile::tempdir().unwrap();
    let pool = summeval();
    let bad = write(dir.path(), "winner.jsonl", "{\"a\": \"M0\", \"b\": \"M1\", \"winner\": \"a\"}\n");
    let out = run_bin(dir.path(), &["fit", pool.to_str().unwrap(), bad.to_str().unwrap()]);
    assert!(!out.status.success(), "{}", text(&out));
    let t = text(&out);
    assert!(
        t.contains("winner.jsonl:1: no \"y\" (found \"a\": write it as \"y\": 1 when a, the item shown first, won"),
        "{t}"
    );
    assert!(
        t.contains("expected one JSON object per line: {\"a\": item shown first, \"b\": item shown second, \"y\":"),
        "{t}"
    );
    // Lookup errors name the line.
    let bad = write(
        dir.path(),
        "bad.jsonl",
        "{\"a\": \"M0\", \"b\": \"M1\", \"y\": 1}\n\n{\"a\": \"M0\", \"b\": \"ZZ\", \"y\": 0}\n",
    );
    let out = run_bin(dir.path(), &["fit", pool.to_str().unwrap(), bad.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(text(&out).contains("bad.jsonl:3: item \"ZZ\" is not in pool"), "{}", text(&out));

    // Two judges and another pool in one file (with a BOM and CRLF line ends).
    let mut v = String::from("\u{feff}");
    let pairs = [("M0", "M1"), ("M1", "M2"), ("M2", "M5"), ("M5", "M0")];
    for (j, y) in [("judge A", 1), ("judge B", 0)] {
        for (a, b) in pairs {
            v.push_str(&format!(
                "{{\"pool_id\": \"{POOL_ID}\", \"judge\": \"{j}\", \"a\": \"{a}\", \"b\": \"{b}\", \"y\": {y}}}\r\n"
            ));
        }
    }
    for _ in 0..3 {
        v.push_str("{\"pool_id\": \"other\", \"a\": \"x\", \"b\": \"y\", \"y\": 1}\r\n");
    }
    v.push_str("\r\n\r\n");
    let mixed = write(dir.path(), "mixed.jsonl", &v);
    let out_json = dir.path().join("fit.json");
    let args = ["fit", pool.to_str().unwrap(), mixed.to_str().unwrap(), "--out", out_json.to_str().unwrap()];
    let out = run_bin(dir.path(), &args);
    assert!(out.status.success(), "{}", text(&out));
    let t = text(&out);
    assert!(t.contains("warning: ") && t.contains("holds verdicts of 2 judges for pool"), "{t}");
    assert!(
        t.contains("(\"judge A\": 4, \"judge B\": 4); they are fitted together as one judge — pass --judge to fit one"),
        "{t}"
    );
    assert!(t.contains("note: ") && t.contains("mixed.jsonl: 3 records of other pools skipped (other: 3)"), "{t}");
    let f = json(&out_json);
    assert_eq!(f["comparisons"], 8);
    assert_eq!(f["other_pools"]["other"], 3);
    assert_eq!(f["judges"]["judge A"], 4);
    for key in ["c_sd", "kappa_sd"] {
        assert!(!f[key].is_null(), "{key} missing from --out");
    }
    assert!(f["c_sd"]["words"].as_f64().unwrap() > 0.0);
    // --judge selects one (a unique prefix is enough).
    let out = run_bin(dir.path(), &[&args[..], &["--judge", "judge B"]].concat());
    assert!(out.status.success(), "{}", text(&out));
    let f = json(&out_json);
    assert_eq!((f["comparisons"].as_u64(), f["judge"].as_str()), (Some(4), Some("judge B")));
    let out = run_bin(dir.path(), &[&args[..], &["--judge", "judge C"]].concat());
    assert!(!out.status.success());
    assert!(text(&out).contains("--judge \"judge C\": no verdict of pool"), "{}", text(&out));
}

#[test]
fn fit_prints_the_same_notes_as_run() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = mock_config(dir.path(), "r", 48, "");
    let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", text(&out));
    let run = json(&dir.path().join("runs/r/result.json"));
    let out_json = dir.path().join("fit.json");
    // A run folder, from another working directory: the run's pool, verdicts and settings.
    let elsewhere = tempfile::tempdir().unwrap();
    let folder = dir.path().join("runs/r");
    let out = run_bin(elsewhere.path(), &["fit", folder.to_str().unwrap(), "--out", out_json.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    let f = json(&out_json);
    assert_eq!(f["notes"], run["notes"]);
    for key in ["topk", "reported", "reported_reason", "graph", "corrected", "apparent"] {
        assert_eq!(f[key], run[key], "{key}");
    }
    let close = |key: &str, tol: f64| {
        for (id, v) in run[key].as_object().unwrap() {
            let (a, b) = (f[key][id].as_f64().unwrap(), v.as_f64().unwrap());
            assert!((a - b).abs() <= tol, "{key}[{id}]: {a} vs {b}");
        }
    };
    close("theta", 1e-6);
    close("c", 1e-6);
    close("c_sd", 1e-6);
    close("membership", 0.01);
    close("membership_apparent", 0.01);
    assert!((f["kappa_sd"].as_f64().unwrap() - run["kappa_sd"].as_f64().unwrap()).abs() < 1e-6);
    assert!(stdout(&out).contains("note: c[words] is prior-selected"), "{}", stdout(&out));
}

fn openai_yaml(base_url: &str, prompt: &str, budget: &str) -> String {
    format!(
        "name: live\nout_dir: runs\npool:\n  file: {pool}\n  id: {POOL_ID}\nk: 3\njudge:\n  openai:\n    base_url: {base_url}\n    model: fake-judge\n    prompt: {prompt}\n    max_tokens: 8\n    api_key_env: TOPK_JUDGE_TEST_UNSET_KEY_VAR\n    api_key_required: false\n    price: {{input_usd_per_mtok: 1.0, output_usd_per_mtok: 2.0}}\n{budget}",
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
    let typo =
        write(dir.path(), "cfg/typo.yaml", &openai_yaml("http://127.0.0.1:9/v1", "prompt.j2", "budget: unlimted\n"));
    let out = run_bin(dir.path(), &["run", typo.to_str().unwrap(), "--dry-run"]);
    assert!(!out.status.success());
    assert!(text(&out).contains("expected `unlimited` or a mapping"), "{}", text(&out));
}

#[test]
fn audit_resolves_the_prompt_against_the_config_and_refuses_pairs_without_text() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "cfg/prompt.j2", crate::common::fake_openai::TEMPLATE);
    write(
        dir.path(),
        "cfg/pairs.jsonl",
        "{\"id\": \"p1\", \"x\": {\"quality\": 1, \"words\": 10}, \"y\": {\"quality\": 2, \"words\": 20}}\n",
    );
    let yaml = "name: a\nout_dir: runs\njudge:\n  openai:\n    base_url: http://127.0.0.1:9/v1\n    model: fake-judge\n    prompt: prompt.j2\n    max_tokens: 8\n    api_key_env: TOPK_JUDGE_TEST_UNSET_KEY_VAR\n    api_key_required: false\n    price: {input_usd_per_mtok: 1.0, output_usd_per_mtok: 2.0}\npairs: pairs.jsonl\n";
    let cfg = write(dir.path(), "cfg/audit.yaml", yaml);
    // Run from the parent folder: the prompt is found next to the config (no prompt error), and
    // the pair without answer text is refused before anything is sent.
    let out = run_bin(dir.path(), &["audit", cfg.to_str().unwrap(), "--quiet"]);
    assert!(!out.status.success());
    let t = text(&out);
    assert!(!t.contains("prompt"), "{t}");
    assert!(t.contains("judge.openai: pair \"p1\" (pairs file") && t.contains("has no answer text on x"), "{t}");
    assert!(
        !dir.path().join("cfg/runs/a/verdicts.jsonl").exists()
            || std::fs::read_to_string(dir.path().join("cfg/runs/a/verdicts.jsonl")).unwrap().is_empty()
    );
}

#[test]
fn run_folders_are_self_contained_and_portable() {
    let dir = tempfile::tempdir().unwrap();
    let gate = "gate:\n  anchors: 6\n  trusted:\n    mock: {pos_bias: 0.0, verb_per_word: 0.0}\n";
    let cfg = main_job(dir.path(), "port", gate);
    let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", text(&out));
    let run = dir.path().join("runs/port");
    // The pool it ran on, verbatim from the pool file.
    let pool_line = std::fs::read_to_string(run.join("pool.jsonl")).unwrap();
    let source = std::fs::read_to_string(summeval()).unwrap();
    assert!(source.lines().any(|l| l == pool_line.trim_end()), "pool.jsonl is the pool's line");
    let saved = std::fs::read_to_string(run.join("config.yaml")).unwrap();
    assert!(saved.contains("file: pool.jsonl") && !saved.contains(dir.path().to_str().unwrap()), "{saved}");
    // Copied elsewhere and read from a third working directory.
    let other = tempfile::tempdir().unwrap();
    let moved = other.path().join("moved");
    std::fs::create_dir_all(&moved).unwrap();
    for e in std::fs::read_dir(&run).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), moved.join(e.file_name())).unwrap();
    }
    let cwd = tempfile::tempdir().unwrap();
    for args in [
        vec!["profile", moved.to_str().unwrap()],
        vec!["gate", moved.to_str().unwrap()],
        vec!["report", moved.to_str().unwrap()],
        vec!["fit", moved.to_str().unwrap()],
    ] {
        let out = run_bin(cwd.path(), &args);
        assert!(out.status.success(), "{args:?}: {}", text(&out));
    }
    assert!(moved.join("profile.json").exists() && moved.join("report.html").exists());
    // report also takes the config file.
    let out = run_bin(cwd.path(), &["report", cfg.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(run.join("report.md").exists());
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

#[test]
fn a_resumed_run_says_what_it_reused_and_a_half_pair_gets_its_other_order_first() {
    let dir = tempfile::tempdir().unwrap();
    let c40 = mock_config(dir.path(), "res", 40, "");
    assert!(run_bin(dir.path(), &["run", c40.to_str().unwrap(), "--quiet"]).status.success());
    let c80 = mock_config(dir.path(), "res", 80, "");
    let out = run_bin(dir.path(), &["run", c80.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        stdout(&out).contains("resumed: 40 stored verdicts reused, 40 queries asked in this run"),
        "{}",
        stdout(&out)
    );
    // Cut the last verdict: its pair is left with one order; a re-run asks that order first.
    let path = dir.path().join("runs/res/verdicts.jsonl");
    let text0 = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text0.lines().collect();
    let last: Value = serde_json::from_str(lines[79]).unwrap();
    let partner = lines[..79]
        .iter()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .any(|v| v["a"] == last["b"] && v["b"] == last["a"]);
    assert!(partner, "the cut verdict's reverse order is stored");
    std::fs::write(&path, lines[..79].join("\n") + "\n").unwrap();
    let c81 = mock_config(dir.path(), "res", 80, "  # one more\n");
    let out = run_bin(dir.path(), &["run", c81.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        stdout(&out).contains("resumed: 79 stored verdicts reused, 1 queries asked in this run"),
        "{}",
        stdout(&out)
    );
    let after = std::fs::read_to_string(&path).unwrap();
    let new: Value = serde_json::from_str(after.lines().nth(79).unwrap()).unwrap();
    assert_eq!((new["a"].clone(), new["b"].clone()), (last["a"].clone(), last["b"].clone()));
}

fn pool_line(id: &str, items: &[(&str, &str)]) -> String {
    let items: Vec<String> = items
        .iter()
        .enumerate()
        .map(|(i, (id, t))| format!("{{\"id\": \"{id}\", \"text\": \"{t}\", \"quality\": {}}}", i + 1))
        .collect();
    format!("{{\"pool_id\": \"{id}\", \"task\": \"t\", \"items\": [{}]}}", items.join(", "))
}

fn small_config(dir: &Path, name: &str, pool: &Path, extra: &str) -> PathBuf {
    write(
        dir,
        &format!("{name}.yaml"),
        &format!(
            "name: {name}\nout_dir: runs\npool:\n  file: {}\nk: 1\njudge:\n  mock: {{mode: stochastic, seed: 1}}\nacquisition:\n  mc_draws: 100\n{extra}budget:\n  max_comparisons: 100\n",
            pool.display()
        ),
    )
}

#[test]
fn duplicate_pool_ids_and_unknown_item_keys_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let a = pool_line("p", &[("x", "one"), ("y", "two words")]);
    let pool = write(dir.path(), "dup.jsonl", &format!("{a}\n{}\n{a}\n", pool_line("q", &[("x", "a"), ("y", "b c")])));
    let cfg = small_config(dir.path(), "dup", &pool, "");
    let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet"]);
    assert!(!out.status.success());
    assert!(text(&out).contains("dup.jsonl:3: not a valid pool (pool_id \"p\" is also on line 1"), "{}", text(&out));
    let pool = write(
        dir.path(),
        "typo.jsonl",
        "{\"pool_id\": \"p\", \"items\": [{\"id\": \"x\", \"text\": \"a\", \"qualty\": 3}, {\"id\": \"y\", \"text\": \"b\"}]}\n",
    );
    let cfg = small_config(dir.path(), "typo", &pool, "");
    let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet"]);
    assert!(!out.status.success());
    assert!(text(&out).contains("typo.jsonl:1: not a valid pool (unknown field `qualty`"), "{}", text(&out));
    assert!(text(&out).contains("(in item \"x\")"), "{}", text(&out));
}

#[test]
fn identical_texts_are_named_and_not_sent_unless_asked() {
    let dir = tempfile::tempdir().unwrap();
    let pool = write(
        dir.path(),
        "same.jsonl",
        &(pool_line("s", &[("a", "same text"), ("b", "same text"), ("c", "other text here")]) + "\n"),
    );
    let cfg = small_config(dir.path(), "skip", &pool, "");
    let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("warning: pool \"s\": items \"a\", \"b\" have identical text; pairs of them are not sent"),
        "{}",
        text(&out)
    );
    let sent = |name: &str| -> Vec<(String, String)> {
        std::fs::read_to_string(dir.path().join(format!("runs/{name}/verdicts.jsonl")))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .map(|v| (v["a"].as_str().unwrap().to_string(), v["b"].as_str().unwrap().to_string()))
            .collect()
    };
    let s = sent("skip");
    assert_eq!(s.len(), 4, "6 ordered pairs minus a–b and b–a: {s:?}");
    assert!(!s.iter().any(|(a, b)| (a == "a" && b == "b") || (a == "b" && b == "a")));
    let cfg = small_config(dir.path(), "send", &pool, "  identical_texts: send\n");
    let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(sent("send").len(), 6);
}

#[test]
fn a_covariate_at_scale_1e7_converges_and_is_warned_about() {
    let dir = tempfile::tempdir().unwrap();
    let items: Vec<String> = (0..8)
        .map(|i| {
            format!(
                "{{\"id\": \"i{i}\", \"quality\": {}, \"covariates\": {{\"bytes\": {}}}}}",
                i % 5,
                1.0e7 + 1.3e6 * f64::from(i)
            )
        })
        .collect();
    let pool = write(
        dir.path(),
        "big.jsonl",
        &format!("{{\"pool_id\": \"big\", \"task\": \"t\", \"items\": [{}]}}\n", items.join(", ")),
    );
    let cfg = write(
        dir.path(),
        "big.yaml",
        &format!(
            "name: big\nout_dir: runs\npool:\n  file: {}\nk: 2\njudge:\n  mock: {{mode: stochastic, seed: 1}}\nmodel:\n  covariates: [{{name: bytes, transform: raw}}]\nacquisition:\n  mc_draws: 100\nbudget:\n  max_comparisons: 56\n",
            pool.display()
        ),
    );
    let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", text(&out));
    let t = text(&out);
    assert!(t.contains("warning: model.covariates: covariate \"bytes\" (raw) has sd 3.0e6 in this pool"), "{t}");
    assert!(t.contains("use transform zscore (or log for a positive quantity)"), "{t}");
    let r = json(&dir.path().join("runs/big/result.json"));
    let c = r["c"]["bytes"].as_f64().unwrap();
    assert!(c.is_finite() && c.abs() < 1e-3, "ĉ in logits per byte: {c}");
    assert_eq!(r["stop_reason"], "exhausted");
    // The same verdicts refitted by `fit` give the same ĉ (user units both ways).
    let out_json = dir.path().join("fit.json");
    let out = run_bin(
        dir.path(),
        &["fit", dir.path().join("runs/big").to_str().unwrap(), "--out", out_json.to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", text(&out));
    let f = json(&out_json)["c"]["bytes"].as_f64().unwrap();
    assert!((f - c).abs() <= 1e-6 * c.abs().max(1e-12), "{f} vs {c}");
}

#[test]
fn input_files_as_other_tools_write_them() {
    let dir = tempfile::tempdir().unwrap();
    // BOM, CRLF and trailing blank lines: loads.
    let line = pool_line("w", &[("a", "one"), ("b", "two words"), ("c", "three more words")]);
    let pool = write(dir.path(), "win.jsonl", &format!("\u{feff}{line}\r\n\r\n\r\n"));
    let cfg = small_config(dir.path(), "win", &pool, "");
    let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", text(&out));
    // UTF-16, a JSON array, a pretty-printed object: fail naming the real cause.
    let utf16: Vec<u8> = [0xFF, 0xFE].into_iter().chain(line.encode_utf16().flat_map(u16::to_le_bytes)).collect();
    std::fs::write(dir.path().join("u16.jsonl"), utf16).unwrap();
    for (file, content, want) in [
        ("u16.jsonl", None, "the file is UTF-16 text"),
        ("arr.jsonl", Some(format!("[{line}]\n")), "looks like one JSON array"),
        (
            "pretty.jsonl",
            Some("{\n  \"pool_id\": \"w\",\n  \"items\": []\n}\n".to_string()),
            "looks like pretty-printed JSON",
        ),
    ] {
        if let Some(c) = content {
            write(dir.path(), file, &c);
        }
        let cfg = small_config(dir.path(), "bad", &dir.path().join(file), "");
        let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet"]);
        assert!(!out.status.success(), "{file}");
        assert!(text(&out).contains(want), "{file}: {}", text(&out));
    }
    // A config saved with a BOM and CRLF line ends.
    let yaml = std::fs::read_to_string(small_config(dir.path(), "crlf", &pool, "")).unwrap();
    let cfg = write(dir.path(), "crlf.yaml", &format!("\u{feff}{}", yaml.replace('\n', "\r\n")));
    let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", text(&out));
}

#[test]
fn warnings_on_a_redirected_stderr_carry_no_colour_codes() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = mock_config(dir.path(), "torn", 8, "");
    assert!(run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet"]).status.success());
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new().append(true).open(dir.path().join("runs/torn/verdicts.jsonl")).unwrap();
    f.write_all(b"{\"key\": \"abc\", \"a\": \"M").unwrap();
    // profile logs the torn line through the tracing subscriber (a WARN line).
    let out = run_bin(dir.path(), &["profile", "runs/torn"]);
    assert!(out.status.success(), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("WARN") && err.contains("torn last line"), "{err}");
    assert!(!err.contains('\u{1b}'), "ANSI escape in redirected stderr: {err:?}");
    // profile, gate and fit each say it once (fit reads the file itself: no second warning).
    assert_eq!(err.matches("torn last line").count(), 1, "{err}");
    let out = run_bin(dir.path(), &["fit", "runs/torn"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(text(&out).matches("dropped a torn last line").count(), 1, "{}", text(&out));
}

/// Zero valid comparisons because the judge's replies were invalid or its queries failed: the
/// note says so, and does not send the user to raise a budget that was not the cause.
#[test]
fn zero_valid_comparisons_from_a_failing_judge_do_not_blame_the_budget() {
    use crate::common::fake_openai::{FakeOpenAi, Fault, TEMPLATE};
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "prompts/test.j2", TEMPLATE);
    let pool = write(
        dir.path(),
        "pool.jsonl",
        "{\"pool_id\": \"p\", \"task\": \"t\", \"items\": [{\"id\": \"x\", \"text\": \"The cat sat.\"}, {\"id\": \"y\", \"text\": \"A dog ran far.\"}]}\n",
    );
    let config = |name: &str, url: &str| {
        write(
            dir.path(),
            &format!("{name}.yaml"),
            &format!(
                "name: {name}\nout_dir: runs\npool: {{file: {}}}\nk: 1\njudge:\n  openai:\n    base_url: {url}\n    model: fake-judge\n    api_key_env: TOPK_JUDGE_TEST_UNSET_KEY_VAR\n    api_key_required: false\n    prompt: prompts/test.j2\n    max_tokens: 8\n    max_retries: 0\n    max_invalid_retries: 0\n    price: {{input_usd_per_mtok: 1.0, output_usd_per_mtok: 2.0}}\nacquisition: {{batch_size: 1}}\nbudget: {{max_comparisons: 2}}\n",
                pool.display()
            ),
        )
    };
    // Every reply without a verdict: 2 invalid verdicts stored.
    let fake = FakeOpenAi::start();
    fake.set_always(Some(Fault::Text("I cannot tell.".into())));
    let cfg = config("invalid", &fake.base_url);
    let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", text(&out));
    let s = stdout(&out);
    assert!(s.contains("stopped: exhausted; 2 comparisons (0 valid, 2 invalid, 0 failed)"), "{s}");
    assert!(s.contains("note: no valid comparison: the ranking is the prior (every θ̂ and φ̂ is 0), so no top-k and no recall is claimed; the judge gave no valid verdict (2 invalid, 0 failed queries: see invalid_by_reason in result.json and failed.jsonl), so the budget is not what is missing"), "{s}");
    assert!(!s.contains("one query needs"), "{s}");
    // Every request failing (HTTP 500, no retry): 2 failed queries, the pair set aside.
    let fake = FakeOpenAi::start();
    fake.set_always(Some(Fault::ServerError));
    let cfg = config("failing", &fake.base_url);
    let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet"]);
    let s = stdout(&out);
    assert!(s.contains("(0 valid, 0 invalid, 2 failed)"), "{}", text(&out));
    assert!(s.contains("the judge gave no valid verdict (0 invalid, 2 failed queries: "), "{s}");
    assert!(!s.contains("one query needs"), "{s}");
    let r = json(&dir.path().join("runs/failing/result.json"));
    assert_eq!(r["failed"], 2);
    assert!(
        r["notes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n.as_str().unwrap().contains("so the budget is not what is missing"))
    );
}

/// Two items with identical text: their pairs are skipped, nothing is asked, and the run ends
/// `exhausted`; raising the budget would change nothing, so the note does not suggest it.
#[test]
fn zero_comparisons_with_nothing_to_ask_do_not_blame_the_budget() {
    let dir = tempfile::tempdir().unwrap();
    let pool = write(
        dir.path(),
        "pool.jsonl",
        "{\"pool_id\": \"p\", \"task\": \"t\", \"items\": [{\"id\": \"x\", \"text\": \"same\", \"quality\": 1}, {\"id\": \"y\", \"text\": \"same\", \"quality\": 2}]}\n",
    );
    let cfg = write(
        dir.path(),
        "same.yaml",
        &format!(
            "name: same\nout_dir: runs\npool: {{file: {}}}\nk: 1\njudge: {{mock: {{}}}}\nbudget: {{max_comparisons: 10}}\n",
            pool.display()
        ),
    );
    let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", text(&out));
    let s = stdout(&out);
    assert!(s.contains("stopped: exhausted; 0 comparisons"), "{s}");
    assert!(s.contains("no top-k and no recall is claimed; no query was answered before the run stopped (exhausted), so the budget is not what is missing"), "{s}");
    assert!(!s.contains("one query needs"), "{s}");
}

/// A verdicts file whose records are all of another pool of the pool file, fitted without
/// --pool-id: an error naming the pool used by default and the pools the records are for (not
/// a fit of zero verdicts); with --pool-id the same file fits.
#[test]
fn fit_without_pool_id_on_records_of_another_pool_names_that_pool() {
    let dir = tempfile::tempdir().unwrap();
    let pools = summeval();
    let second: Value = serde_json::from_str(std::fs::read_to_string(&pools).unwrap().lines().nth(1).unwrap()).unwrap();
    let id = second["pool_id"].as_str().unwrap();
    let items: Vec<&str> = second["items"].as_array().unwrap().iter().map(|i| i["id"].as_str().unwrap()).collect();
    let v: String = items
        .windows(2)
        .map(|w| format!("{{\"pool_id\": \"{id}\", \"a\": \"{}\", \"b\": \"{}\", \"y\": 1}}\n", w[0], w[1]))
        .collect();
    let file = write(dir.path(), "second.jsonl", &v);
    let out = run_bin(dir.path(), &["fit", pools.to_str().unwrap(), file.to_str().unwrap()]);
    assert!(!out.status.success(), "{}", text(&out));
    let t = text(&out);
    assert!(
        t.contains(&format!(
            "second.jsonl: none of its records is for pool \"{POOL_ID}\" (the first pool of {}, used without --pool-id); its records are for \"{id}\" ({}): choose one with --pool-id",
            pools.display(),
            items.len() - 1
        )),
        "{t}"
    );
    let out = run_bin(dir.path(), &["fit", pools.to_str().unwrap(), file.to_str().unwrap(), "--pool-id", id]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        stdout(&out).contains(&format!("pool {id}: bias_aware model, {} valid verdicts", items.len() - 1)),
        "{}",
        text(&out)
    );
}

/// A run folder whose config.yaml was damaged: the error's excerpt names that file (not
/// `<input>`), like a config error in `run`.
#[test]
fn a_damaged_run_folder_config_is_named_in_the_error_excerpt() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = mock_config(dir.path(), "damaged", 8, "");
    let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", text(&out));
    let run = dir.path().join("runs/damaged");
    std::fs::write(run.join("config.yaml"), "garbage: [\n").unwrap();
    let out = run_bin(dir.path(), &["profile", run.to_str().unwrap()]);
    assert!(!out.status.success());
    let t = text(&out);
    assert!(t.contains(&format!("--> {}:1:", run.join("config.yaml").display())), "{t}");
    assert!(!t.contains("<input>"), "{t}");
}

/// A stored verdict whose line names an item the pool does not have (hand-edited: `"a": "x0"`
/// made `"zz9"`, key unchanged) is still that pair's verdict, through the key its intent line
/// resolves: a resume asks nothing, and asks nothing again on the next resume (it re-asked the
/// pair, and paid for it, on every resume).
#[test]
fn a_verdict_line_with_an_unknown_item_id_is_matched_by_its_key_and_not_asked_again() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = mock_config(dir.path(), "unk", 30, "");
    assert!(run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet"]).status.success());
    let run = dir.path().join("runs/unk");
    let verdicts = std::fs::read_to_string(run.join("verdicts.jsonl")).unwrap();
    let mut lines: Vec<String> = verdicts.lines().map(str::to_owned).collect();
    let mut rec: serde_json::Value = serde_json::from_str(&lines[4]).unwrap();
    rec["a"] = serde_json::json!("zz9");
    lines[4] = rec.to_string();
    std::fs::write(run.join("verdicts.jsonl"), lines.join("\n") + "\n").unwrap();
    let intents_before = std::fs::read_to_string(run.join("intents.jsonl")).unwrap().lines().count();
    for _ in 0..2 {
        let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet"]);
        assert!(out.status.success(), "{}", text(&out));
        assert!(text(&out).contains("resumed: 30 stored verdicts reused, 0 queries asked"), "{}", text(&out));
    }
    let intents_after = std::fs::read_to_string(run.join("intents.jsonl")).unwrap().lines().count();
    assert_eq!(intents_after, intents_before, "no request was sent");
}

//! `topk-judge run` end to end on the shipped SummEval pool with the mock judge: the README's
//! main job and what it reports (the ranking and why, no claim without comparisons, ties, the
//! comparison graph), resume, portable run folders, stop rules, the dry run, and inputs that
//! would mislead.

use crate::common::*;
use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

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
        // The key at fault and its line; the words of the system's error without its number.
        ("missing.yaml", cfg("nope.jsonl", 2, ""), "missing.yaml:3: pool.file: cannot read pool file"),
        (
            "noid.yaml",
            cfg("three.jsonl\n  id: nope", 2, "")
                .replace("{file: three.jsonl\n  id: nope}", "\n  file: three.jsonl\n  id: nope"),
            "noid.yaml:5: pool.id:",
        ),
        ("empty.yaml", cfg("empty.jsonl", 2, ""), "no items"),
        ("dup.yaml", cfg("dup.jsonl", 2, ""), "duplicate item id \"a\""),
        ("bigk.yaml", cfg("three.jsonl", 3, ""), "k: 3 must satisfy 1 ≤ k < number of bases (3)"),
        ("unknown.yaml", cfg("three.jsonl", 1, "acquisition: {refit_evry: 8}\n"), "refit_evry"),
        // A judge block's rule, and a setting written under its older name, at their own lines
        // (hunt 43: the line of `mock:` and of `acquisition:`).
        (
            "temp.yaml",
            cfg("three.jsonl", 1, "").replace("judge: {mock: {}}", "judge:\n  mock:\n    seed: 3\n    temperature: 0"),
            "temp.yaml:8: judge.mock.temperature: 0 must be a finite number > 0",
        ),
        (
            "older.yaml",
            cfg("three.jsonl", 1, "acquisition:\n  seed: 1\n  batch_size: 0\n"),
            "older.yaml:9: acquisition.concurrency (or batch_size, its older name): 0 must be ≥ 1",
        ),
        (
            "newer.yaml",
            cfg("three.jsonl", 1, "acquisition:\n  concurrency: 0\n"),
            "newer.yaml:8: acquisition.concurrency (or batch_size, its older name): 0 must be ≥ 1",
        ),
        // Each setting by its own key and line (hunt 44: `c_star: 0 and kappa_star = inf`, the
        // `mock:` line for two settings at once, the `replay:` line for its file).
        (
            "synth.yaml",
            cfg("three.jsonl", 1, "")
                .replace("judge: {mock: {}}", "judge:\n  synthetic:\n    seed: 1\n    kappa_star: .inf"),
            "synth.yaml:8: judge.synthetic.kappa_star: inf must be finite",
        ),
        (
            "nan.yaml",
            cfg("three.jsonl", 1, "").replace("judge: {mock: {}}", "judge:\n  mock:\n    pos_bias: .nan"),
            "nan.yaml:7: judge.mock.pos_bias: NaN must be finite",
        ),
        (
            "rec.yaml",
            cfg("three.jsonl", 1, "")
                .replace("judge: {mock: {}}", "judge:\n  replay:\n    missing: fail\n    file: norec.jsonl"),
            "rec.yaml:8: judge.replay.file: cannot read recording ",
        ),
    ];
    for (name, yaml, expect) in cases {
        let path = write(dir.path(), name, &yaml);
        let out = run_bin(dir.path(), &["run", path.to_str().unwrap()]);
        let t = text(&out);
        assert!(!out.status.success(), "{name} should fail");
        assert!(t.contains(expect), "{name}: expected {expect:?} in\n{t}");
        assert!(t.contains(name), "{name}: the message names the config file\n{t}");
        assert!(!t.contains("os error"), "{t}");
        assert_eq!(std::fs::read(&verdicts).unwrap(), before, "{name} touched the earlier verdicts");
    }
    // An override that does not make the file's own fault is not said as its cause (hunt 44,
    // 45: "in the file as changed by --name r1", by --max-usd, by --set k=…), whether the run
    // or its dry run reads it.
    let rec = dir.path().join("rec.yaml");
    for extra in [&["--name", "r1"][..], &["--max-usd", "1"], &["--set", "k=1"], &["--max-usd", "1", "--dry-run"]] {
        let out = run_bin(dir.path(), &[&["run", rec.to_str().unwrap()][..], extra].concat());
        assert!(text(&out).contains("rec.yaml:8: judge.replay.file: cannot read recording "), "{}", text(&out));
        assert!(!text(&out).contains("as changed by"), "{extra:?}: {}", text(&out));
    }
    // One that does is named: k = 3 of three items.
    let out = run_bin(dir.path(), &["run", rec.to_str().unwrap(), "--set", "k=3"]);
    assert!(text(&out).contains("--set k=3: k: 3 must satisfy"), "{}", text(&out));
    // The unknown key error names the line.
    let out = run_bin(dir.path(), &["run", dir.path().join("unknown.yaml").to_str().unwrap()]);
    assert!(text(&out).contains("line 7") || text(&out).contains("7:"), "{}", text(&out));
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

#[test]
fn zero_valid_comparisons_claim_no_top_k_and_say_what_a_query_needs() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = mock_config(dir.path(), "zero", 0, "");
    let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", text(&out));
    let s = stdout(&out);
    assert!(s.contains("certified top-3 (ε = 0.05): nothing certified: no valid comparison\n"), "{s}");
    // No table of prior zeros: the reason instead.
    assert!(s.contains("\nno ranking: no valid comparison: the ranking is the prior"), "{s}");
    assert!(!s.contains(" rank  item"), "{s}");
    assert!(!s.contains("recall@"), "{s}");
    assert!(s.contains("\nno ranking: no valid comparison: the ranking is the prior (every θ̂ and φ̂ is 0), so no top-k and no recall is claimed; one query needs budget.max_comparisons ≥ 1"), "{s}");
    // Said once, not again as a note; and no note on a coefficient no comparison could inform.
    assert_eq!(s.matches("no valid comparison: the ranking is the prior").count(), 1, "{s}");
    assert!(!s.contains("is prior-selected (profile range"), "{s}");
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
    let s = stdout(&out);
    let needs = s.split("one query needs budget.max_usd ≥ $").nth(1).unwrap_or_else(|| panic!("{s}"));
    let (amount, rest) = needs.split_once(' ').unwrap();
    assert!(rest.starts_with("(its worst-case cost)"), "{s}");
    // The amount is the cheapest query's worst case, rounded up (hunt 48: it was the dearest
    // neighbouring pair's, and "$0.0001" for $0.000134): that budget buys one query, a millionth
    // of a dollar less buys none.
    let c = topk_judge::config::run::Config::load(&cfg).unwrap();
    let judge = topk_judge::config::judge::make_judge(c.raw.judge()).unwrap();
    let n = c.pool.n_items();
    let cheapest = (0..n)
        .flat_map(|a| (0..n).map(move |b| (a, b)))
        .filter(|&(a, b)| c.pool.item_base[a] != c.pool.item_base[b])
        .map(|(a, b)| judge.worst_case_usd(&c.pool, a, b))
        .fold(f64::INFINITY, f64::min);
    assert_eq!(amount, format!("{:.6}", (cheapest * 1e6).ceil() / 1e6), "{s}");
    for (usd, asked) in [(amount.to_string(), 1), (format!("{:.6}", amount.parse::<f64>().unwrap() - 1e-6), 0)] {
        let out = run_bin(
            dir.path(),
            &["run", cfg.to_str().unwrap(), "--quiet", "--max-usd", &usd, "--name", &format!("z{asked}")],
        );
        assert!(out.status.success(), "{}", text(&out));
        let r = json(&dir.path().join(format!("runs/z{asked}/result.json")));
        assert_eq!(
            (r["comparisons"].as_u64(), r["stop_reason"].as_str()),
            (Some(asked), Some("max_usd")),
            "{usd}: {r}"
        );
    }
}

/// Two comparisons of the main job: the point top-3 is three answers never compared (ranked on
/// ĉ·x), so its recall is said to be the prior's guess, not a result.
#[test]
fn the_recall_of_a_top_k_never_compared_is_said_to_be_the_priors() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = main_job(dir.path(), "two", "");
    let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet", "--max-comparisons", "2"]);
    assert!(out.status.success(), "{}", text(&out));
    let s = stdout(&out);
    assert!(
        s.contains("(never compared)\n")
            && s.contains(
                "recall@3 against gold: 0.00 (none of the top-3 was compared: the prior's guess, not a result)\n"
            ),
        "{s}"
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
    assert!(
        line.starts_with("comparison graph: 15 components (sizes 2 plus 14 of size 1); never compared: "),
        "{line}"
    );
    assert!(line.ends_with(", … (14 in all)") && line.matches(", ").count() == 8, "{line}");
    // Under the table: the rows it ranks without a verdict (a long answer never compared could
    // head the apparent ranking on ĉ·x alone, with nothing said there).
    assert!(
        stdout(&out).contains("\nnever compared (14 of the 16 rows: ")
            && stdout(&out).contains(", … and 9 more): their places are the prior's (θ̂ = 0, φ̂ = ĉ·x from their covariates alone), not the verdicts'"),
        "{}",
        stdout(&out)
    );
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
    certified_at(&r, eps, 3);
    // Without the stop the same run goes on to its budget.
    let cfg = mock_config(dir.path(), "noconf", 200, "model:\n  kind: naive\n");
    let t = std::fs::read_to_string(&cfg).unwrap().replace("mode: stochastic", "mode: deterministic");
    std::fs::write(&cfg, t).unwrap();
    assert!(run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet"]).status.success());
    assert_eq!(result(dir.path(), "noconf")["stop_reason"], "max_comparisons");
}

/// A result whose membership certifies the top-k at ε: k bases with π ≥ 1 − ε, every other ≤ ε.
fn certified_at(r: &serde_json::Value, eps: f64, k: usize) {
    let pi: Vec<f64> = r["membership"].as_object().unwrap().values().map(|p| p.as_f64().unwrap()).collect();
    assert!(pi.iter().all(|&p| p <= eps || p >= 1.0 - eps), "a π is not within ε = {eps} of 0 or 1: {r}");
    assert_eq!(pi.iter().filter(|&&p| p >= 1.0 - eps).count(), k, "{r}");
}

/// The `confidence` stop waits for a certified top-k: with k/N below ε every prior π is within ε
/// of 0, and a place open among bases each below ε is not settled (it stopped there: at 0
/// comparisons, and with the 3rd place spread over six bases at ε = 0.3).
#[test]
fn confidence_stops_only_at_a_certified_topk() {
    let dir = tempfile::tempdir().unwrap();
    numbered_pool(dir.path(), "p60", 60);
    let cfg = write(
        dir.path(),
        "c.yaml",
        "name: conf\nout_dir: runs\npool: {file: pool.jsonl}\nk: 1\njudge:\n  mock: {mode: stochastic, pos_bias: 0.3, verb_per_word: 0.01, temperature: 0.25, seed: 7}\n\
         acquisition: {strategy: topk, seed: 42, confidence: 0.05}\nbudget: {max_comparisons: 400}\n",
    );
    let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", text(&out));
    let r = result(dir.path(), "conf");
    assert!(r["comparisons"].as_u64().unwrap() > 0, "{r}");
    if r["stop_reason"] == "confident" {
        certified_at(&r, 0.05, 1);
    }
    let shipped = root().join("configs/mock.yaml");
    let out = run_bin(
        dir.path(),
        &[
            "run",
            shipped.to_str().unwrap(),
            "--quiet",
            "--name",
            "conf03",
            "--set",
            &format!("out_dir={}", dir.path().join("runs").display()),
            "--set",
            "acquisition.confidence=0.3",
            "--max-comparisons",
            "400",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let r = result(dir.path(), "conf03");
    assert_eq!(r["stop_reason"], "confident", "{r}");
    certified_at(&r, 0.3, 3);
    let apparent: Vec<f64> =
        r["membership_apparent"].as_object().unwrap().values().map(|p| p.as_f64().unwrap()).collect();
    assert!(apparent.iter().all(|&p| p <= 0.3 || p >= 0.7), "{r}");
    assert_eq!(apparent.iter().filter(|&&p| p >= 0.7).count(), 3, "{r}");
    assert!(r["comparisons"].as_u64().unwrap() > 80, "{r}");
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

/// A paired run stopped while it still asks within-base queries has valid verdicts but no
/// comparison between two bases (hunt 46): the certification says that, not "no valid
/// comparison" under "10 valid", and the ranking beside it (φ̂ = ĉ·x alone) carries no recall
/// as if it were a result.
#[test]
fn a_paired_run_with_only_within_base_verdicts_says_what_they_inform() {
    let dir = tempfile::tempdir().unwrap();
    let yaml = std::fs::read_to_string(root().join("configs/paired.yaml"))
        .unwrap()
        .replace("out_dir: ../runs", "out_dir: runs")
        .replace("../data/", &format!("{}/", root().join("data").display()));
    let cfg = write(dir.path(), "paired.yaml", &yaml);
    let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet", "--max-comparisons", "10"]);
    assert!(out.status.success(), "{}", text(&out));
    let t = stdout(&out);
    assert!(t.contains("10 comparisons (10 valid, 0 invalid, 0 failed)"), "{t}");
    assert!(
        t.contains(
            "nothing certified: no valid comparison between two bases (a comparison of one base's renderings informs only c and κ)\n"
        ),
        "{t}"
    );
    let beside = t.lines().find(|l| l.starts_with("apparent top-3 (beside): ")).unwrap_or_else(|| panic!("{t}"));
    assert!(beside.ends_with(" (none of the top-3 was compared: the prior's guess, not a result)"), "{beside}");
    let r = result(dir.path(), "summeval-paired");
    assert_eq!(r["certified"]["claimed"], false);
}

/// A covariate the same for every item (no SummEval summary has markdown) changes nothing: it
/// gets its own note, not the prior-selected advice (a gate, paired renderings) of a covariate
/// that varies (hunt 46).
#[test]
fn a_covariate_without_variation_is_not_advised_on_as_prior_selected() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = main_job(dir.path(), "flat", "");
    let set = "model.covariates=[{name: words, transform: zscore}, {name: markdown, transform: zscore}]";
    let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet", "--set", set]);
    assert!(out.status.success(), "{}", text(&out));
    let r = result(dir.path(), "flat");
    let notes: Vec<&str> = r["notes"].as_array().unwrap().iter().map(|n| n.as_str().unwrap()).collect();
    assert!(notes.contains(&"covariate \"markdown\" has no variation in this pool: its column is zero and ĉ is the prior mean 0, so its term changes no ranking (and no gate or paired design is needed for it)"), "{notes:?}");
    assert!(!notes.iter().any(|n| n.starts_with("c[markdown]")), "{notes:?}");
    assert!(notes.iter().any(|n| n.starts_with("c[words] is prior-selected")), "{notes:?}");
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
    assert!(stdout(&out).contains("resumed: 79 stored verdicts reused, 1 query asked in this run"), "{}", stdout(&out));
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
    assert!(
        text(&out).contains(
            "typo.jsonl:1: not a valid pool (at `items[0]`: unknown field `qualty`, expected one of `id`, `text`"
        ),
        "{}",
        text(&out)
    );
    assert!(text(&out).contains("(column 60, in item \"x\"))"), "{}", text(&out));
    // A missing field is found at the end of the object that lacks it: the error's path names
    // it, not the item before (whose id is the last one written); a top-level one is said so.
    for (line, says) in [
        (
            "{\"pool_id\": \"p\", \"items\": [{\"id\": \"x\", \"text\": \"a\"}, {\"text\": \"b\"}]}\n",
            "not a valid pool (at `items[1]`: missing field `id` (column 66)); expected",
        ),
        (
            "{\"items\": [{\"id\": \"x\", \"text\": \"a\"}, {\"id\": \"y\", \"text\": \"b\"}]}\n",
            "not a valid pool (missing field `pool_id` at column 63 (in the pool's top-level object)); expected",
        ),
    ] {
        write(dir.path(), "typo.jsonl", line);
        let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet"]);
        assert!(text(&out).contains(says) && !text(&out).contains("in item"), "{}", text(&out));
    }
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
    assert!(err.contains("warning: ") && err.contains("torn last line"), "{err}");
    assert!(!err.contains("topk_judge::"), "no module paths in a warning: {err}");
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
    assert!(s.contains("no ranking: no valid comparison: the ranking is the prior (every θ̂ and φ̂ is 0), so no top-k and no recall is claimed; the judge gave no valid verdict (2 invalid, 0 failed queries: see invalid_by_reason in result.json and `raw` in verdicts.jsonl), so the budget is not what is missing"), "{s}");
    assert!(!s.contains("one query needs"), "{s}");
    // The same stopped by its budget: the budget went on invalid replies, and more buys more.
    let out =
        run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet", "--name", "inv1", "--max-comparisons", "1"]);
    let s = stdout(&out);
    assert!(
        s.contains("stopped: max_comparisons; 1 comparison") && s.contains(" (0 valid, 1 invalid, 0 failed)"),
        "{s}"
    );
    assert!(s.contains("the judge gave no valid verdict (1 invalid, 0 failed queries: see invalid_by_reason in result.json and `raw` in verdicts.jsonl); the budget went on those replies, and a larger one buys more of them until the judge's fault is mended"), "{s}");
    assert!(!s.contains("not what is missing"), "{s}");
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

/// `profile` of a run whose config lists no covariates (`model.covariates: []`) says that the
/// config chose none, not that the pool has no text.
#[test]
fn profile_of_a_run_without_covariates_names_the_config() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = mock_config(dir.path(), "nocov", 8, "model:\n  covariates: []\n");
    let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", text(&out));
    let out = run_bin(dir.path(), &["profile", "runs/nocov"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains(
            "error: profile runs/nocov: the run's config sets `model.covariates: []`, so the model has no bias coefficient to profile"
        ),
        "{}",
        text(&out)
    );
}

/// A budget lowered below what the folder already holds buys nothing, and the summary says so
/// instead of leaving "stopped: max_usd … spend $0.0169" under max_usd $0.001 unexplained.
#[test]
fn a_resume_under_a_budget_already_used_up_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = shipped(dir.path(), "cheap.yaml", |y| y);
    assert!(run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet"]).status.success());
    let r = json(&dir.path().join("runs/cheap/result.json"));
    let spent = r["spend_usd"].as_f64().unwrap();
    assert!(spent > 0.001, "{spent}");
    let args = |extra: &[&'static str]| [&["run", cfg.to_str().unwrap(), "--quiet"][..], extra].concat();
    let out = run_bin(dir.path(), &args(&["--max-comparisons", "50"]));
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        stdout(&out).contains("resumed: 120 stored verdicts reused, 0 queries asked in this run: the stored verdicts already reach max_comparisons; raise it (budget.max_comparisons, --max-comparisons) to go on"),
        "{}",
        stdout(&out)
    );
    let out = run_bin(dir.path(), &args(&["--max-usd", "0.001", "--max-comparisons", "500"]));
    assert!(out.status.success(), "{}", text(&out));
    let want = format!(
        "resumed: 120 stored verdicts reused, 0 queries asked in this run: the run folder's books (${spent:.4}) already reach max_usd $0.0010; raise it (budget.max_usd, --max-usd) to go on"
    );
    assert!(stdout(&out).contains(&want), "{}\n{want}", stdout(&out));
    assert_eq!(json(&dir.path().join("runs/cheap/result.json"))["spend_usd"].as_f64().unwrap(), spent);
}

/// A stored verdict whose line names an item the pool does not have (hand-edited: `"a": "x0"`
/// made `"zz9"`, key unchanged) is still that pair's verdict, through the key its intent line
/// resolves: a resume asks nothing, and asks nothing again on the next resume (it re-asked the
/// pair, and paid for it, on every resume). The resume says so, naming the line's ids and its
/// key's, since `fit` of the folder refuses the line (it said nothing).
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
        let written: serde_json::Value = serde_json::from_str(verdicts.lines().nth(4).unwrap()).unwrap();
        let (was, b) = (&written["a"], &written["b"]);
        let want = format!(
            "runs/unk/verdicts.jsonl holds 1 record whose item ids disagree with the query of its cache key (the first names \"zz9\" vs {b} for {was} vs {b}): this run counts each as its key's query, but `fit` and `report` of the folder read the ids and refuse it"
        );
        assert!(text(&out).contains(&want), "{}\n{want}", text(&out));
    }
    let out = run_bin(dir.path(), &["fit", "runs/unk"]);
    assert!(
        !out.status.success() && text(&out).contains("verdicts.jsonl:5: item \"zz9\" is not in pool"),
        "{}",
        text(&out)
    );
    let intents_after = std::fs::read_to_string(run.join("intents.jsonl")).unwrap().lines().count();
    assert_eq!(intents_after, intents_before, "no request was sent");
}

/// A torn last line of fits.jsonl (a crash while writing a fit) is cut before the next run
/// appends, so every line stays a fit and `report` reads the folder.
#[test]
fn a_torn_fits_line_is_cut_before_the_next_append() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = main_job(dir.path(), "torn", "");
    let c = cfg.to_str().unwrap();
    let out = run_bin(dir.path(), &["run", c, "--quiet", "--max-comparisons", "24"]);
    assert!(out.status.success(), "{}", text(&out));
    let fits = dir.path().join("runs/torn/fits.jsonl");
    let full = std::fs::read(&fits).unwrap();
    let lines_before = full.iter().filter(|&&b| b == b'\n').count();
    std::fs::write(&fits, &full[..full.len() - 300]).unwrap();
    let out = run_bin(dir.path(), &["run", c, "--quiet", "--max-comparisons", "48"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("runs/torn/fits.jsonl: cut a torn last line ("), "{}", text(&out));
    let after = std::fs::read_to_string(&fits).unwrap();
    assert!(after.ends_with('\n'));
    for (i, l) in after.lines().enumerate() {
        assert!(serde_json::from_str::<serde_json::Value>(l).is_ok(), "line {} is not JSON: {l:.80}", i + 1);
    }
    // The torn fit (on 24 verdicts) is redone at the start of the resumed run.
    assert!(after.lines().count() > lines_before, "{after:.200}");
    let out = run_bin(dir.path(), &["report", dir.path().join("runs/torn").to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
}

/// A dry run of a finished run names the limit its stored verdicts reach, not a cost.
#[test]
fn a_dry_run_names_the_comparison_limit_the_stored_verdicts_reach() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = mock_config(dir.path(), "done", 8, "");
    assert!(run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet"]).status.success());
    let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--dry-run"]);
    let s = stdout(&out);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        s.contains("warning: the stored verdicts (8) already reach budget.max_comparisons: a real run would send nothing; raise it (--max-comparisons) to go on\n"),
        "{s}"
    );
    assert!(!s.contains("the budget allows no query"), "{s}");
}

/// Item ids that print alike (`café` precomposed and with a combining accent) are refused: they
/// showed as one id twice in every table and report (hunt 55, which also found ` x` beside
/// `x`, and `a,b`, refused with their own words); ids one letter case apart print apart and are
/// warned of. A CJK id keeps the ranking table's columns (it took two columns a character).
#[test]
fn ids_that_print_alike_are_refused_or_warned_of_and_wide_ids_keep_the_table_aligned() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = write(
        dir.path(),
        "u.yaml",
        "name: u\nout_dir: runs\npool:\n  file: p.jsonl\nk: 1\njudge:\n  mock: {mode: stochastic, seed: 1}\nbudget:\n  max_comparisons: 12\n",
    );
    let pool = |second: &str| {
        let items = serde_json::json!([
            {"id": "caf\u{e9}", "text": "a b c", "quality": 1},
            {"id": second, "text": "a b c d", "quality": 2},
            {"id": "x", "text": "a", "quality": 3},
            {"id": "\u{6a21}\u{578b}", "text": "a b", "quality": 4}
        ]);
        write(
            dir.path(),
            "p.jsonl",
            &(serde_json::json!({"pool_id": "u", "task": "t", "items": items}).to_string() + "\n"),
        );
        run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet"])
    };
    for (second, said) in [
        ("cafe\u{301}", "items \"caf\u{e9}\" and \"cafe\\u{301}\" are one name in two Unicode forms"),
        (" x", "\" x\" begins or ends with white space"),
        ("a,b", "\"a,b\" holds a comma"),
    ] {
        let out = pool(second);
        assert_eq!(out.status.code(), Some(1), "{second:?}: {}", text(&out));
        assert!(text(&out).contains(said) && text(&out).contains("p.jsonl"), "{second:?}: {}", text(&out));
    }
    let out = pool("X");
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains(
            "warning: pool \"u\": items \"X\" and \"x\" differ only in letter case: they are kept as 2 items; if they are one, give them one name"
        ),
        "{}",
        text(&out)
    );
    // Every row of the ranking table ends its φ̂ (third field) at the same display column.
    let table = stdout(&out);
    let rows: Vec<&str> = table
        .lines()
        .filter(|l| {
            l.split_whitespace().count() > 10 && l.split_whitespace().next().is_some_and(|t| t.parse::<usize>().is_ok())
        })
        .collect();
    assert_eq!(rows.len(), 4, "{table}");
    let phi_end = |l: &str| {
        let fields: Vec<(usize, &str)> = l
            .split(' ')
            .scan(0, |at, t| {
                let start = *at;
                *at += t.len() + 1;
                Some((start, t))
            })
            .filter(|(_, t)| !t.is_empty())
            .collect();
        let (start, t) = fields[2];
        unicode_width::UnicodeWidthStr::width(&l[..start + t.len()])
    };
    assert!(rows.iter().all(|l| phi_end(l) == phi_end(rows[0])), "{rows:?}");
}

/// A live judge is shown the task with every pair: a pool line without `task` (or with a blank
/// one) is warned of before anything is paid (hunt 55: accepted without a word); the mock judge,
/// which sends no prompt, is not warned.
#[test]
fn a_blank_task_is_warned_of_for_a_live_judge() {
    let dir = tempfile::tempdir().unwrap();
    let items = r#"[{"id": "a", "text": "x y", "quality": 1}, {"id": "b", "text": "x", "quality": 2}]"#;
    for (name, line) in [
        ("notask", format!("{{\"pool_id\": \"p1\", \"items\": {items}}}\n")),
        ("blanktask", format!("{{\"pool_id\": \"p1\", \"task\": \"  \\n\", \"items\": {items}}}\n")),
    ] {
        let pool = write(dir.path(), &format!("{name}.jsonl"), &line);
        let prompts = format!("{}/prompts/", root().display());
        let cfg = shipped(dir.path(), "local.yaml", |y| y.replace("../prompts/", &prompts));
        let set = format!("pool={{file: {}, id: p1}}", pool.display());
        let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--dry-run", "--set", &set, "--set", "k=1"]);
        assert!(
            stderr(&out).contains("warning: pool \"p1\": the task (\"task\" or \"source\" of the pool line) is empty: the judge is shown an empty task with every pair"),
            "{name}: {}",
            text(&out)
        );
        let mock = mock_config(dir.path(), name, 2, "");
        let out = run_bin(dir.path(), &["run", mock.to_str().unwrap(), "--dry-run", "--set", &set, "--set", "k=1"]);
        assert!(out.status.success() && !text(&out).contains("the task"), "{name}: {}", text(&out));
    }
}

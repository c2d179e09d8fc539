//! Recorded judgments: the replay judge, the LLMBar audit, the frozen protocol and `compare` on
//! replayed runs (docs/replay.md), each against an independent computation.

use crate::common::*;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use topk_judge::analysis::synth::generate;
use topk_judge::report::schema::{RunResult, StopReason};

fn read_json(p: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))).unwrap()
}

fn lines(p: &Path) -> Vec<Value> {
    std::fs::read_to_string(p)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn result(dir: &Path) -> RunResult {
    serde_json::from_value(read_json(&dir.join("result.json"))).unwrap()
}

/// A shipped config with its `../data/` paths made absolute and its outputs sent to `out`.
fn shipped_config(dir: &Path, name: &str) -> PathBuf {
    let text = std::fs::read_to_string(root().join("configs").join(name)).unwrap();
    assert!(text.contains("out_dir: ../runs") && text.contains("../data/"), "{text}");
    let data = format!("{}/", root().join("data").display());
    write(dir, name, &text.replace("out_dir: ../runs", "out_dir: out").replace("../data/", &data))
}

/// One count/n as written in audit.json.
fn count_n(v: &Value) -> (f64, u64) {
    (v["count"].as_f64().unwrap(), v["n"].as_u64().unwrap())
}

#[test]
fn llmbar_audit_table_equals_an_independent_count() {
    // Straight from the shipped JSON Lines: for every recorded judge × prompting strategy on the
    // 419 LLMBar pairs, count flips, first-shown picks, correct picks and the order-averaged
    // credit by hand (LLMBar verdicts are hard: y is 1, 0 or null).
    let pairs = lines(&root().join("data/llmbar_pairs.jsonl"));
    assert_eq!(pairs.len(), 419);
    let mut gold: HashMap<String, &str> = HashMap::new(); // pair → gold output id ("1" or "2")
    let mut words: HashMap<String, [usize; 2]> = HashMap::new();
    for p in &pairs {
        let id = p["id"].as_str().unwrap().to_owned();
        assert_eq!((p["x"]["id"].as_str(), p["y"]["id"].as_str()), (Some("1"), Some("2")));
        gold.insert(id.clone(), if p["winner"] == "x" { "1" } else { "2" });
        let w = |s: &Value| s["text"].as_str().unwrap().split_whitespace().count();
        words.insert(id, [w(&p["x"]), w(&p["y"])]);
    }
    // (judge, prompting) → pair → [y with output 1 first, y with output 2 first]
    type BothOrders = BTreeMap<String, [Option<Option<f64>>; 2]>;
    let mut rec: BTreeMap<(String, String), BothOrders> = BTreeMap::new();
    let mut all_lines = 0;
    for v in lines(&root().join("data/llmbar_verdicts.jsonl")) {
        all_lines += 1;
        let pid = v["pool_id"].as_str().unwrap().to_owned();
        if !gold.contains_key(&pid) {
            continue; // a pair of the other sets
        }
        let key = (v["judge"].as_str().unwrap().to_owned(), v["prompting"].as_str().unwrap().to_owned());
        let slot = if v["a"] == "1" { 0 } else { 1 };
        rec.entry(key).or_default().entry(pid).or_insert([None, None])[slot] = Some(v["y"].as_f64());
    }
    assert_eq!(all_lines, 46_004, "23,002 both-order judgments");
    assert_eq!(rec.len(), 46, "46 judge × prompting combinations on LLMBar");

    let dir = tempfile::tempdir().unwrap();
    let cfg = shipped_config(dir.path(), "llmbar-audit.yaml");
    let out = run_bin(dir.path(), &["audit", cfg.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    let audit = read_json(&dir.path().join("out/llmbar/audit.json"));
    let rows = audit["judges"].as_array().unwrap();
    assert_eq!(rows.len(), 46);
    for row in rows {
        let key = (row["judge"].as_str().unwrap().to_owned(), row["prompting"].as_str().unwrap().to_owned());
        let by_pair = &rec[&key];
        assert_eq!(by_pair.len(), 419, "{key:?}");
        let (mut flips, mut both) = (0.0, 0u64);
        let (mut first, mut right, mut longer, mut valid, mut unequal) = (0.0, 0.0, 0.0, 0u64, 0u64);
        let (mut avg, mut invalid) = (0.0, 0u64);
        for (pid, ys) in by_pair {
            let picked = |slot: usize, y: f64| -> &str {
                // output 1 first: y = 1 → "1"; output 2 first: y = 1 → "2".
                match (slot, y == 1.0) {
                    (0, true) | (1, false) => "1",
                    _ => "2",
                }
            };
            let [w1, w2] = words[pid];
            let long = if w1 > w2 {
                Some("1")
            } else if w2 > w1 {
                Some("2")
            } else {
                None
            };
            let mut picks = Vec::new();
            for (slot, y) in ys.iter().enumerate() {
                match y.expect("both orders recorded") {
                    None => invalid += 1,
                    Some(y) => {
                        assert!(y == 0.0 || y == 1.0);
                        let p = picked(slot, y);
                        valid += 1;
                        first += y;
                        right += f64::from(u8::from(p == gold[pid.as_str()]));
                        if let Some(l) = long {
                            unequal += 1;
                            longer += f64::from(u8::from(p == l));
                        }
                        picks.push(p);
                    }
                }
            }
            if picks.len() == 2 {
                both += 1;
                if picks[0] != picks[1] {
                    flips += 1.0;
                    avg += 0.5;
                } else if picks[0] == gold[pid.as_str()] {
                    avg += 1.0;
                }
            }
        }
        assert_eq!(count_n(&row["flips"]), (flips, both), "flips {key:?}");
        assert_eq!(count_n(&row["first_shown"]), (first, valid), "first-shown {key:?}");
        assert_eq!(count_n(&row["accuracy"]), (right, valid), "accuracy {key:?}");
        assert_eq!(count_n(&row["longer_wins"]), (longer, unequal), "longer wins {key:?}");
        assert_eq!(count_n(&row["averaged_accuracy"]), (avg, both), "order-averaged {key:?}");
        assert_eq!(row["invalid"].as_u64(), Some(invalid), "{key:?}");
    }
    // A table per judge, a plot, and the printed tables.
    let md = std::fs::read_to_string(dir.path().join("out/llmbar/audit.md")).unwrap();
    let judges: BTreeSet<&str> = rows.iter().map(|r| r["judge"].as_str().unwrap()).collect();
    assert_eq!(judges.len(), 6);
    for j in &judges {
        assert!(md.contains(&format!("### {j}\n")), "no table for {j}");
    }
    assert!(text(&out).contains("### GPT-4\n"));
    let svg = std::fs::read_to_string(dir.path().join("out/llmbar/flip_vs_accuracy.svg")).unwrap();
    assert!(svg.contains("position flips against accuracy") && svg.contains("ChatGPT-0301"));
}

#[test]
fn a_replayed_run_makes_the_same_picks_and_result() {
    // A priced stochastic mock on a SummEval pool, half its ordered pairs; then the same config
    // with the replay judge reading that run's verdicts.jsonl, same seed, another folder.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let orig = mock_config(d, "orig", 120, "");
    let text0 = std::fs::read_to_string(&orig).unwrap();
    let priced =
        text0.replace("    seed: 7\n", "    seed: 7\n    input_usd_per_mtok: 0.15\n    output_usd_per_mtok: 0.6\n");
    assert_ne!(priced, text0);
    std::fs::write(&orig, &priced).unwrap();
    let out = run_bin(d, &["run", orig.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", text(&out));
    let judge_block = "judge:\n  mock:\n    mode: stochastic\n    seed: 7\n    input_usd_per_mtok: 0.15\n    output_usd_per_mtok: 0.6\n";
    assert!(priced.contains(judge_block));
    let replay_cfg = |name: &str, extra: &str, budget: u64| {
        let t = priced
            .replace(judge_block, &format!("judge:\n  replay:\n    file: runs/orig/verdicts.jsonl\n{extra}"))
            .replace("out_dir: runs", &format!("out_dir: {name}"))
            .replace("max_comparisons: 120", &format!("max_comparisons: {budget}"));
        write(d, &format!("{name}.yaml"), &t)
    };
    let cfg = replay_cfg("replayed", "", 120);
    let out = run_bin(d, &["run", cfg.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("replayed mock (stochastic"), "{}", text(&out));
    let (a, b) = (d.join("runs/orig"), d.join("replayed/orig"));
    // Every refit saw the same verdicts: fits.jsonl is byte for byte the same.
    let fits = std::fs::read_to_string(a.join("fits.jsonl")).unwrap();
    assert_eq!(fits.lines().count(), 16);
    assert_eq!(fits, std::fs::read_to_string(b.join("fits.jsonl")).unwrap());
    // The same picks, batch by batch (arrival order within a batch of 8 may differ).
    let picks = |p: &Path| -> Vec<BTreeSet<(String, String, String, String)>> {
        let v = lines(&p.join("verdicts.jsonl"));
        v.chunks(8)
            .map(|c| {
                c.iter()
                    .map(|r| (r["a"].to_string(), r["b"].to_string(), r["y"].to_string(), r["cost_usd"].to_string()))
                    .collect()
            })
            .collect()
    };
    assert_eq!(picks(&a).len(), 15);
    assert_eq!(picks(&a), picks(&b));
    // result.json: identical apart from the judge's description and the replay's own record.
    let (mut ra, mut rb) = (read_json(&a.join("result.json")), read_json(&b.join("result.json")));
    assert!(rb["judge"].as_str().unwrap().starts_with("replay of mock (stochastic"), "{}", rb["judge"]);
    assert_eq!(rb["replay"]["recorded_cost"], true);
    assert!(ra["spend_usd"].as_f64().unwrap() > 0.0);
    for k in ["judge", "replay"] {
        ra.as_object_mut().unwrap().remove(k);
        rb.as_object_mut().unwrap().remove(k);
    }
    assert_eq!(ra, rb);

    // A bigger budget than the recording: `missing: fail` stops at the first unrecorded query …
    let cfg = replay_cfg("fail", "", 200);
    let out = run_bin(d, &["run", cfg.to_str().unwrap(), "--quiet"]);
    assert!(!out.status.success());
    let t = text(&out);
    assert!(t.contains("has no verdict of mock (stochastic") && t.contains("(missing: fail)"), "{t}");
    assert!(t.contains("set `missing: unavailable`"), "{t}");
    // The summary's "judge failing" line and the error name the same query (both orders of a
    // pair fail in one round; the one that stopped the run is named in both).
    let said = stdout(&out).lines().find_map(|l| l.strip_prefix("judge failing: ")).unwrap().to_owned();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.trim_end().ends_with(&said), "summary: {said}\nerror: {err}");
    // … and still leaves a result: the 120 recorded verdicts, stopped for its judge; the round's
    // 8 queries the recording lacks were asked and gave no verdict: failed (they were counted
    // nowhere, so a panel said "8 asked now" beside 2 new verdicts and 0 failed).
    let r = result(&d.join("fail/orig"));
    assert_eq!((r.comparisons, r.failed, r.stop_reason), (120, 8, StopReason::JudgeFailing));
    assert!(stdout(&out).contains("8 failed"), "{}", stdout(&out));
    // … `missing: unavailable` makes the recorded ordered pairs the only candidates: the 118
    // unrecorded ones (240 ordered pairs, less the 2 of M1 and M2, whose texts are identical
    // and are never sent, less the 120 recorded) are never opened nor set aside, and the run
    // ends normally when every recorded pair is asked.
    let cfg = replay_cfg("unavailable", "    missing: unavailable\n", 200);
    let out = run_bin(d, &["run", cfg.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", text(&out));
    let r = result(&d.join("unavailable/orig"));
    assert_eq!((r.comparisons, r.failed, r.stop_reason), (120, 0, StopReason::Exhausted));
    assert_eq!(r.replay.as_ref().unwrap().unavailable, 0);
    assert_eq!(r.replay.as_ref().unwrap().candidates, Some(120));
    assert!(text(&out).contains("candidates: the 120 recorded ordered pairs (missing: unavailable)"), "{}", text(&out));
    let intents = std::fs::read_to_string(d.join("unavailable/orig/intents.jsonl")).unwrap_or_default();
    assert!(!intents.contains("unavailable") && intents.lines().count() <= 2 * 120, "{intents}");
    // A recorded pair of the two identical texts is never sent: not a candidate (it was counted,
    // "121 recorded ordered pairs" where 120 can be asked).
    let mut rec = String::new();
    for r in lines(&d.join("runs/orig/verdicts.jsonl")) {
        let keep = serde_json::json!({"pool_id": r["pool_id"], "a": r["a"], "b": r["b"], "y": r["y"]});
        rec.push_str(&format!("{keep}\n"));
    }
    rec.push_str(
        "{\"pool_id\": \"dm-test-2377095dda83df778e34304b7a09813808105d3b\", \"a\": \"M1\", \"b\": \"M2\", \"y\": 1}\n",
    );
    write(d, "m12.jsonl", &rec);
    let cfg = replay_cfg("m12", "    missing: unavailable\n", 500);
    let yaml = std::fs::read_to_string(&cfg).unwrap().replace("file: runs/orig/verdicts.jsonl", "file: m12.jsonl");
    std::fs::write(&cfg, yaml).unwrap();
    let out = run_bin(d, &["run", cfg.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", text(&out));
    let r = result(&d.join("m12/orig"));
    assert_eq!((r.comparisons, r.replay.as_ref().unwrap().candidates), (120, Some(120)));
    assert!(text(&out).contains("candidates: the 120 recorded ordered pairs (missing: unavailable)"), "{}", text(&out));
    // The same 120 verdicts, at the recorded cost.
    let spend =
        |p: &Path| lines(&p.join("verdicts.jsonl")).iter().map(|v| v["cost_usd"].as_f64().unwrap()).sum::<f64>();
    assert!((spend(&d.join("unavailable/orig")) - spend(&a)).abs() < 1e-12);
    // The log of a run stopped while writing (its last line cut, no newline) replays without
    // that line, said once (it was refused; then said once per reading).
    let log = std::fs::read_to_string(a.join("verdicts.jsonl")).unwrap();
    let last = log.trim_end().rfind('\n').unwrap();
    write(d, "torn.jsonl", &log[..last + 40]);
    let cfg = replay_cfg("torn", "    missing: unavailable\n", 500);
    let yaml = std::fs::read_to_string(&cfg).unwrap().replace("file: runs/orig/verdicts.jsonl", "file: torn.jsonl");
    std::fs::write(&cfg, yaml).unwrap();
    let out = run_bin(d, &["run", cfg.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(text(&out).matches("torn.jsonl:120: dropped a torn last line").count(), 1, "{}", text(&out));
    assert_eq!(result(&d.join("torn/orig")).comparisons, 119);
}

#[test]
fn replay_configs_name_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let rec = write(
        d,
        "rec.jsonl",
        "{\"pool_id\":\"dm-test-2377095dda83df778e34304b7a09813808105d3b\",\"a\":\"M0\",\"b\":\"M1\",\"y\":1,\"judge\":\"J\",\"prompting\":\"CoT\"}\n\
         {\"pool_id\":\"dm-test-2377095dda83df778e34304b7a09813808105d3b\",\"a\":\"M0\",\"b\":\"M1\",\"y\":0,\"judge\":\"J\",\"prompting\":\"Vanilla\"}\n\
         {\"pool_id\":\"other\",\"a\":\"M0\",\"b\":\"M1\",\"y\":0,\"judge\":\"K\"}\n",
    );
    let cfg = |name: &str, judge: &str| {
        let base = mock_config(d, name, 10, "");
        let t = std::fs::read_to_string(&base).unwrap();
        let t = t.replace("judge:\n  mock:\n    mode: stochastic\n    seed: 7\n", judge);
        write(d, &format!("{name}.yaml"), &t)
    };
    let run = |c: PathBuf| text(&run_bin(d, &["run", c.to_str().unwrap(), "--quiet"]));
    let t = run(cfg("two", &format!("judge: {{replay: {{file: {}, judge: J}}}}\n", rec.display())));
    assert!(
        t.contains("judge.replay") && t.contains("holds 2 recorded judges") && t.contains("\"J / Vanilla\""),
        "{t}"
    );
    let t = run(cfg("k", &format!("judge: {{replay: {{file: {}, judge: K}}}}\n", rec.display())));
    assert!(t.contains("K has no verdict for pool \"dm-test-2377") && t.contains("it has 1 pool: other"), "{t}");
    let bad = write(d, "bad.jsonl", "{\"pool_id\":\"p\",\"a\":\"M0\",\"b\":\"M1\",\"winner\":\"a\"}\n");
    let t = run(cfg("bad", &format!("judge: {{replay: {{file: {}}}}}\n", bad.display())));
    assert!(t.contains("bad.jsonl:1: missing field `y`") && t.contains("expected {\"pool_id\""), "{t}");
}

/// Write every pool of a synthetic sweep cell as a recording: pools.jsonl and every ordered pair's
/// keyed verdict (the synthetic true judge's frozen verdicts) in verdicts.jsonl.
fn record_synthetic(dir: &Path, seeds: &[u64]) -> (PathBuf, PathBuf) {
    let (mut pools, mut verdicts) = (String::new(), String::new());
    for &seed in seeds {
        let spec = topk_judge::analysis::synth::SynthSpec {
            n: 10,
            rho: 0.3,
            c_star: 1.0,
            kappa_star: 0.5,
            temperature: 1.0,
            paired: false,
            seed,
        };
        let sp = generate(&spec);
        let p = &sp.pool;
        pools.push_str(&serde_json::json!({"pool_id": p.pool_id, "task": p.task, "items": p.items}).to_string());
        pools.push('\n');
        for a in 0..p.n_items() {
            for b in 0..p.n_items() {
                if a != b {
                    let v = serde_json::json!({"pool_id": p.pool_id, "a": p.items[a].id, "b": p.items[b].id, "y": sp.verdict(a, b), "judge": "synthetic"});
                    verdicts.push_str(&(v.to_string() + "\n"));
                }
            }
        }
    }
    (write(dir, "pools.jsonl", &pools), write(dir, "verdicts.jsonl", &verdicts))
}

#[test]
fn the_frozen_protocol_on_recorded_synthetic_pools_matches_simulate() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let common = "k: 3\nstrategies: [topk, round_robin, random]\nmodels: [naive, bias_aware]\nbudgets: [16, 24, 40, all]\nacquisition: {mc_draws: 200}\nthreads: 2\n";
    let sweep = write(
        d,
        "sweep.yaml",
        &format!(
            "name: sim\nout_dir: out\npools: {{n: 10, count: 3, seed: 11, rho: [0.3], c_star: [1.0], kappa_star: [0.5]}}\n{common}"
        ),
    );
    let out = run_bin(d, &["simulate", sweep.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", text(&out));
    let (pools, verdicts) = record_synthetic(d, &[11, 12, 13]);
    let frozen = write(
        d,
        "frozen.yaml",
        &format!(
            "name: frozen\nout_dir: out\nrecorded: {{pools: {}, verdicts: {}}}\nseeds: [11, 12, 13]\n{common}",
            pools.display(),
            verdicts.display()
        ),
    );
    let out = run_bin(d, &["simulate", frozen.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("Paired differences between strategies"), "{}", text(&out));
    let sim: Vec<topk_judge::report::sweep::Row> =
        csv::Reader::from_path(d.join("out/sim/rows.csv")).unwrap().deserialize().map(|r| r.unwrap()).collect();
    let fro: Vec<topk_judge::report::frozen::FrozenRow> =
        csv::Reader::from_path(d.join("out/frozen/rows.csv")).unwrap().deserialize().map(|r| r.unwrap()).collect();
    // 3 pools × 3 strategies × 2 models × 4 budgets; the frozen protocol runs every pool at every
    // seed (×3): the runs whose seed is the pool's own are the simulated ones.
    assert_eq!((sim.len(), fro.len()), (72, 216));
    for s in &sim {
        let f = fro
            .iter()
            .find(|f| {
                f.pool == format!("synth-{}", s.seed)
                    && f.seed == s.seed
                    && f.strategy == s.strategy
                    && f.model == s.model
                    && f.budget == s.budget
            })
            .unwrap();
        assert_eq!(f.recall_gold, Some(s.recall), "{s:?}");
        assert_eq!(f.comparisons, s.comparisons, "{s:?}");
    }
    // With every pair asked, each strategy returns the full-data top-k.
    assert!(
        fro.iter()
            .filter(|f| f.budget == topk_judge::config::sweep::SweepBudget::All)
            .all(|f| f.recall_full == 1.0 && f.comparisons == 90)
    );
    // The summary's paired difference is the mean of the per-run differences.
    let s: Value = read_json(&d.join("out/frozen/summary.json"));
    let diff = s["diffs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["a"] == "topk" && x["b"] == "random" && x["budget"] == 24 && x["model"] == "bias_aware")
        .unwrap();
    let by = |st: &str| -> BTreeMap<(String, u64), f64> {
        fro.iter()
            .filter(|f| {
                topk_judge::report::table::name(&f.strategy) == st
                    && f.budget == topk_judge::config::sweep::SweepBudget::Comparisons(24)
                    && f.model == topk_judge::model::summary::ModelKind::BiasAware
            })
            .map(|f| ((f.pool.clone(), f.seed), f.recall_full))
            .collect()
    };
    let (t, r) = (by("topk"), by("random"));
    let mean = t.iter().map(|(k, v)| v - r[k]).sum::<f64>() / 9.0;
    assert!((diff["full"]["mean"].as_f64().unwrap() - mean).abs() < 1e-12);
    assert_eq!(diff["full"]["n"], 9);
    // An incomplete recording is refused, naming the pool and a missing pair.
    let partial: String =
        std::fs::read_to_string(&verdicts).unwrap().lines().skip(1).map(|l| format!("{l}\n")).collect();
    write(d, "verdicts.jsonl", &partial);
    let out = run_bin(d, &["simulate", frozen.to_str().unwrap(), "--quiet"]);
    assert!(!out.status.success());
    assert!(text(&out).contains("lacks 1 of the 90 ordered pairs of pool \"synth-11\""), "{}", text(&out));
}

#[test]
fn compare_prices_replayed_judges_over_pools() {
    // Two mock judges record every ordered pair of two SummEval pools; each is replayed at a
    // budget of 48 on both pools; compare prices them from a table (the recordings carry no cost).
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let pools =
        ["dm-test-2377095dda83df778e34304b7a09813808105d3b", "cnn-test-b8b6e729fff27c4eef87887e61d3448de9c063f6"];
    let judges = [
        ("cheap", "mode: stochastic, seed: 7"),
        ("frontier", "mode: stochastic, seed: 7, pos_bias: 0.05, verb_per_word: 0, temperature: 0.1"),
    ];
    let run_cfg = |name: &str, pool: &str, judge: &str, budget: u64| d.join(run_on(d, name, pool, judge, budget).0);
    let mut replays = Vec::new();
    for (jname, params) in judges {
        // The recording: plain JSON Lines {pool_id, a, b, y, judge}.
        let mut rec = String::new();
        for (i, pool) in pools.iter().enumerate() {
            let full = run_cfg(&format!("rec-{jname}-{i}"), pool, &format!("{{mock: {{{params}}}}}"), 240);
            for v in lines(&full.join("verdicts.jsonl")) {
                let l =
                    serde_json::json!({"pool_id": v["pool_id"], "a": v["a"], "b": v["b"], "y": v["y"], "judge": jname});
                rec.push_str(&(l.to_string() + "\n"));
            }
        }
        let file = write(d, &format!("{jname}.jsonl"), &rec);
        for (i, pool) in pools.iter().enumerate() {
            replays.push(run_cfg(
                &format!("{jname}-{i}"),
                pool,
                &format!("{{replay: {{file: {}}}}}", file.display()),
                48,
            ));
        }
    }
    let prices = write(
        d,
        "prices.yaml",
        "cheap: {usd_per_verdict: 0.001}\nfrontier: {usd_per_verdict: 0.02}\nunused: {usd_per_verdict: 1}\n",
    );
    let mut args = vec!["compare".to_string()];
    args.extend(replays.iter().map(|p| p.display().to_string()));
    args.extend(["--prices".into(), prices.display().to_string(), "--out".into(), "cmp".into()]);
    let out = run_bin(d, &args.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(out.status.success(), "{}", text(&out));
    let c = read_json(&d.join("cmp/compare.json"));
    assert_eq!(c["pools"].as_array().unwrap().len(), 2);
    for (row, (jname, _)) in c["rows"].as_array().unwrap().iter().zip(judges) {
        assert_eq!(row["judge"], jname);
        let rs: Vec<RunResult> = (0..2).map(|i| result(&d.join("runs").join(format!("{jname}-{i}")))).collect();
        let comparisons: usize = rs.iter().map(|r| r.comparisons).sum();
        assert_eq!(comparisons, 96);
        let price = if jname == "cheap" { 0.001 } else { 0.02 };
        assert!((row["cost_usd"].as_f64().unwrap() - price * 96.0).abs() < 1e-12, "{row}");
        assert_eq!(row["cost"], "price_table");
        let mean = rs.iter().map(|r| r.fit.recall_at_k.unwrap()).sum::<f64>() / 2.0;
        assert!((row["recall"].as_f64().unwrap() - mean).abs() < 1e-12, "{row}");
        assert!(rs.iter().all(|r| r.spend_usd == 0.0 && !r.replay.as_ref().unwrap().recorded_cost));
    }
    let md = std::fs::read_to_string(d.join("cmp/compare.md")).unwrap();
    assert!(md.contains("| cheap | 2 | 96 | 96 | 0.0960 | 0.0480 | price table |"), "{md}");
    assert!(md.contains("Price-table entries that matched no run: unused."), "{md}");
    assert!(d.join("cmp/cost_vs_recall.svg").exists());
    // An empty price table prices nothing: refused, not taken as "no table".
    write(d, "none.yaml", "");
    let mut empty = args.clone();
    let at = empty.iter().position(|a| a == "--prices").unwrap() + 1;
    empty[at] = d.join("none.yaml").display().to_string();
    let out = run_bin(d, &empty.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(!out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("none.yaml: holds no price; expected `JUDGE:"), "{}", text(&out));
    // A judge missing on one pool cannot be compared judge by judge.
    let out = run_bin(
        d,
        &["compare", replays[0].to_str().unwrap(), replays[1].to_str().unwrap(), replays[2].to_str().unwrap()],
    );
    assert!(!out.status.success());
    assert!(text(&out).contains("compare judges on the same pools"), "{}", text(&out));
}

/// docs/replay.md's frozen-protocol commands as shipped: `run configs/record-summeval.yaml`
/// records every ordered pair (the identical-text pair M1/M2 included, which the frozen
/// protocol requires), then `simulate configs/frozen-summeval.yaml` runs and prints every row of
/// the doc's table.
#[test]
fn the_shipped_record_and_frozen_configs_reproduce_the_docs_table() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let record = shipped_config(d, "record-summeval.yaml");
    let out = run_bin(d, &["run", record.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("240 comparisons (240 valid, 0 invalid, 0 failed)"),
        "{}",
        text(&out)
    );
    let frozen = shipped_config(d, "frozen-summeval.yaml");
    let t = std::fs::read_to_string(&frozen).unwrap().replace("../runs/summeval-record/", "out/summeval-record/");
    std::fs::write(&frozen, t).unwrap();
    let out = run_bin(d, &["simulate", frozen.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", text(&out));
    let summary = std::fs::read_to_string(d.join("out/sweeps/frozen-summeval/summary.md")).unwrap();
    let doc = std::fs::read_to_string(root().join("docs/replay.md")).unwrap();
    let section = &doc[doc.find("## The frozen protocol").unwrap()..doc.find("## Which judge to pay for").unwrap()];
    let rows: Vec<&str> = section.lines().filter(|l| l.starts_with("| ") && l.contains("bias_aware")).collect();
    assert_eq!(rows.len(), 34);
    for r in rows {
        assert!(summary.contains(r), "docs/replay.md row not in summary.md: {r}\n{summary}");
    }
}

/// The two SummEval pools of the tests over pools.
const TWO_POOLS: (&str, &str) =
    ("dm-test-2377095dda83df778e34304b7a09813808105d3b", "cnn-test-b8b6e729fff27c4eef87887e61d3448de9c063f6");

/// Run `name` on a SummEval `pool` with the `judge` block (YAML flow) and `budget`
/// comparisons; its folder (relative to `d`) and stdout.
fn run_on(d: &Path, name: &str, pool: &str, judge: &str, budget: u64) -> (String, String) {
    let y = format!(
        "name: {name}\nout_dir: runs\npool: {{file: {}, id: {pool}}}\nk: 3\njudge: {judge}\nacquisition: {{seed: 3, mc_draws: 300}}\nbudget: {{max_comparisons: {budget}}}\n",
        summeval().display()
    );
    let c = write(d, &format!("{name}.yaml"), &y);
    let out = run_bin(d, &["run", c.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", text(&out));
    (format!("runs/{name}"), stdout(&out))
}

/// Runs of one description on several pools are one judge only when its settings agree: a
/// changed seed under the same description (a deterministic mock's, which its description leaves
/// out) is another judge (named with its settings id), and
/// a judge with a cost on one pool and none on another is refused, not averaged.
#[test]
fn compare_over_pools_keeps_judges_of_other_settings_and_costs_apart() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (a, b) = TWO_POOLS;
    let run = |name: &str, pool: &str, mock: &str| {
        run_on(d, name, pool, &format!("{{mock: {{mode: deterministic, {mock}}}}}"), 24).0
    };
    let priced = "input_usd_per_mtok: 0.15, output_usd_per_mtok: 0.6";
    let cheap_a = run("cheap-a", a, &format!("seed: 7, {priced}"));
    let cheap_b = run("cheap-b", b, &format!("seed: 7, {priced}"));
    let other_b = run("other-b", b, &format!("seed: 99, {priced}"));
    let free_b = run("free-b", b, "seed: 7");
    // The same judge on both pools: one row, its cost the two runs' spend.
    let out = run_bin(d, &["compare", &cheap_a, &cheap_b, "--out", "cmp"]);
    assert!(out.status.success(), "{}", text(&out));
    let c = read_json(&d.join("cmp/compare.json"));
    let rows = c["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 1);
    let spend = result(&d.join(&cheap_a)).spend_usd + result(&d.join(&cheap_b)).spend_usd;
    assert!(spend > 0.0);
    assert!((rows[0]["cost_usd"].as_f64().unwrap() - spend).abs() < 1e-12, "{}", rows[0]);
    // Another seed under the same description: two judges, each on one pool.
    let out = run_bin(d, &["compare", &cheap_a, &other_b]);
    assert!(!out.status.success());
    let t = text(&out);
    assert!(t.contains(" [settings ") && t.contains("compare judges on the same pools"), "{t}");
    // No price on pool B: refused, naming both runs.
    let out = run_bin(d, &["compare", &cheap_a, &free_b]);
    assert!(!out.status.success());
    assert!(
        text(&out)
            .contains(&format!("has a cost on pool \"{a}\" (run {cheap_a}) but none on pool \"{b}\" (run {free_b})")),
        "{}",
        text(&out)
    );
}

/// Replays of two recordings made under one description with other settings (seeds 7 and 99 of
/// a deterministic mock)
/// are two judges in `compare`, as the live runs are; a recording with a cost on only some
/// verdicts says its spend is partial, and `compare` refuses to average it.
#[test]
fn replayed_judges_keep_their_recorded_settings_and_partial_costs_are_said() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (a, b) = TWO_POOLS;
    let run = |name: &str, pool: &str, judge: &str| run_on(d, name, pool, judge, 16);
    let priced = "input_usd_per_mtok: 0.15, output_usd_per_mtok: 0.6";
    run("rec-a", a, &format!("{{mock: {{mode: deterministic, seed: 7, {priced}}}}}"));
    run("rec-b", b, &format!("{{mock: {{mode: deterministic, seed: 99, {priced}}}}}"));
    let replay = |file: &str| format!("{{replay: {{file: {}, missing: unavailable}}}}", d.join(file).display());
    let (rep_a, _) = run("rep-a", a, &replay("runs/rec-a/verdicts.jsonl"));
    let (rep_b, _) = run("rep-b", b, &replay("runs/rec-b/verdicts.jsonl"));
    let settings = |r: &str| json(&d.join(r).join("result.json"))["replay"]["settings"].as_str().unwrap().to_owned();
    assert_ne!(settings(&rep_a), settings(&rep_b));
    let out = run_bin(d, &["compare", &rep_a, &rep_b]);
    assert!(!out.status.success());
    assert!(
        text(&out).contains(" [settings ") && text(&out).contains("compare judges on the same pools"),
        "{}",
        text(&out)
    );
    // Seed 99 on both pools, half of its records without their cost.
    run("rec-a99", a, &format!("{{mock: {{mode: deterministic, seed: 99, {priced}}}}}"));
    let both = std::fs::read_to_string(d.join("runs/rec-b/verdicts.jsonl")).unwrap()
        + &std::fs::read_to_string(d.join("runs/rec-a99/verdicts.jsonl")).unwrap();
    let half: String = both
        .lines()
        .enumerate()
        .map(|(i, l)| {
            let mut v: Value = serde_json::from_str(l).unwrap();
            if i % 2 == 0 {
                v.as_object_mut().unwrap().remove("cost_usd");
            }
            v.to_string() + "\n"
        })
        .collect();
    write(d, "half.jsonl", &half);
    let (rep_hb, said) = run("rep-hb", b, &replay("half.jsonl"));
    assert!(said.contains("partial: 16 of its 32 recorded verdicts have no cost_usd and count $0"), "{said}");
    assert_eq!(json(&d.join(&rep_hb).join("result.json"))["replay"]["unpriced"], serde_json::json!([16, 32]));
    let (rep_ha, _) = run("rep-ha", a, &replay("half.jsonl"));
    let out = run_bin(d, &["compare", &rep_ha, &rep_hb]);
    assert!(!out.status.success());
    assert!(
        text(&out).contains("its recording records a cost on only some verdicts (16 of 32 have none; run runs/rep-hb): its cost would be partial; give its prices with --prices FILE"),
        "{}",
        text(&out)
    );
}

/// A replay judge's verdicts are part of its cache keys: after a recorded verdict the run used is
/// edited, `report` names that (the judge's configuration changed), not a missing
/// verdicts.jsonl, which is whole.
#[test]
fn a_recording_edited_after_its_replay_run_is_named_as_the_change() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (pool, _) = TWO_POOLS;
    let (orig, _) = run_on(d, "orig", pool, "{mock: {mode: stochastic, seed: 7}}", 40);
    std::fs::copy(d.join(&orig).join("verdicts.jsonl"), d.join("rec.jsonl")).unwrap();
    let (r, _) = run_on(d, "r", pool, "{replay: {file: rec.jsonl}}", 16);
    let used = lines(&d.join(&r).join("verdicts.jsonl"));
    assert_eq!(used.len(), 16);
    let ok = run_bin(d, &["report", &r, "--out", "rep1"]);
    assert!(ok.status.success(), "{}", text(&ok));
    // Flip the recorded verdict of the first pair the replay run asked.
    let (a, b) = (used[0]["a"].as_str().unwrap(), used[0]["b"].as_str().unwrap());
    let edited: String = std::fs::read_to_string(d.join("rec.jsonl"))
        .unwrap()
        .lines()
        .map(|l| {
            let mut v: Value = serde_json::from_str(l).unwrap();
            if v["a"] == a && v["b"] == b {
                v["y"] = serde_json::json!(1.0 - v["y"].as_f64().unwrap());
            }
            v.to_string() + "\n"
        })
        .collect();
    std::fs::write(d.join("rec.jsonl"), edited).unwrap();
    let out = run_bin(d, &["report", &r, "--out", "rep2"]);
    assert!(!out.status.success());
    assert!(
        text(&out).contains("holds 16 records of this run's judge, but only 15 have the cache keys of that judge as its config.yaml builds it now, while result.json counts 16 comparisons: the judge's configuration changed since the run"),
        "{}",
        text(&out)
    );
}

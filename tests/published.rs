//! Published judgments end to end (docs/systems.md "Published judgments: replay and check"):
//! the AlpacaEval excerpt's outputs and GPT-4-Turbo annotations imported, replayed as a
//! systems run whose only candidates are the recorded pairs, fitted, checked, and the
//! acquisition strategies compared on the recording (frozen protocol).

use crate::common::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn alpaca(sub: &str) -> Vec<PathBuf> {
    let dir = root().join("tests/fixtures/benchmarks/alpaca_eval").join(sub);
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    v.sort();
    v
}

/// pool.jsonl and rec.jsonl of the AlpacaEval excerpt in `d`.
fn imported(d: &Path) {
    for (flag, value, sub, out) in [
        ("--format", "alpaca_eval", "outputs", "pool.jsonl"),
        ("--judgments", "alpaca_eval", "annotations", "rec.jsonl"),
    ] {
        let mut args = vec!["import".to_string(), flag.into(), value.into()];
        args.extend(alpaca(sub).iter().map(|p| p.display().to_string()));
        args.extend(["--out".into(), out.into()]);
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = run_bin(d, &a);
        assert!(o.status.success(), "{}", text(&o));
    }
}

const SYSTEMS_REPLAY: &str = "name: ae\nout_dir: runs\npool:\n  file: pool.jsonl\n  ids: all\n  reference: gpt4_1106_preview\nk: 3\njudge:\n  replay:\n    file: rec.jsonl\n    missing: unavailable\nacquisition:\n  strategy: topk\n  seed: 1\nbudget:\n  max_comparisons: 200\n";

#[test]
fn a_star_shaped_recording_replays_at_the_cost_of_what_is_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    imported(d);
    let cfg = write(d, "ae.yaml", SYSTEMS_REPLAY);
    let o = run_bin(d, &["run", cfg.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(stdout(&o).contains("candidates: the 405 recorded ordered pairs (missing: unavailable)"), "{}", text(&o));
    let r = result(d, "ae");
    assert_eq!(r["comparisons"], 200);
    assert_eq!(r["replay"]["candidates"], 405);
    assert_eq!(r["replay"]["unavailable"], 0);
    // Every query sent was recorded: one intent per verdict, none opened for an unrecorded pair.
    let intents = std::fs::read_to_string(d.join("runs/ae/intents.jsonl")).unwrap();
    assert_eq!(intents.lines().count(), 200);
    let rec: std::collections::HashSet<(String, String, String)> = std::fs::read_to_string(d.join("rec.jsonl"))
        .unwrap()
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            (v["pool_id"].as_str().unwrap().into(), v["a"].as_str().unwrap().into(), v["b"].as_str().unwrap().into())
        })
        .collect();
    for l in std::fs::read_to_string(d.join("runs/ae/verdicts.jsonl")).unwrap().lines() {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        let (a, b) = (v["a"].as_str().unwrap(), v["b"].as_str().unwrap());
        let (p, sa) = a.split_once('/').unwrap();
        let sb = b.split_once('/').unwrap().1;
        assert!(rec.contains(&(p.to_string(), sa.to_string(), sb.to_string())), "{l}");
    }
    // Systems runs report the apparent ranking under auto (the correction is shown beside).
    assert_eq!(r["reported"], "apparent", "{}", r["reported_reason"]);
    // The systems block keeps its columns aligned for names longer than the header's.
    let out = stdout(&o);
    let block: Vec<&str> =
        out.lines().skip_while(|l| !l.starts_with("systems over 45 prompts")).skip(1).take(11).collect();
    // Where the third field (θ̂, right-aligned) ends, in characters.
    let theta_end = |l: &str| {
        let chars: Vec<char> = l.chars().collect();
        let mut fields = 0;
        (0..chars.len())
            .find(|&i| {
                let ends = !chars[i].is_whitespace() && chars.get(i + 1).is_none_or(|c| c.is_whitespace());
                fields += usize::from(ends);
                fields == 3
            })
            .unwrap()
    };
    assert!(block[0].starts_with(" rank  system"), "{out}");
    let ends: Vec<usize> = block.iter().map(|l| theta_end(l)).collect();
    assert!(ends.windows(2).all(|w| w[0] == w[1]), "misaligned:\n{}", block.join("\n"));
    // report.md has the systems block too.
    let o = run_bin(d, &["report", "runs/ae"]);
    assert!(o.status.success(), "{}", text(&o));
    let md = std::fs::read_to_string(d.join("runs/ae/report.md")).unwrap();
    assert!(
        md.contains(
            "## Systems over 45 prompts, in the reported ranking by apparent quality φ̂ (θ̂ at equal covariates; win rate against gpt4_1106_preview, 95 % interval)"
        ),
        "{md}"
    );
    // Its rows in the reported order show the reported values: φ̂ never rises down the table
    // (it showed θ̂ in φ̂'s order, rank 4 above rank 3).
    let phis: Vec<f64> = md
        .lines()
        .skip_while(|l| !l.starts_with("## Systems"))
        .filter(|l| l.starts_with("| ") && l.split('|').nth(1).is_some_and(|c| c.trim().parse::<usize>().is_ok()))
        .map(|l| l.split('|').nth(3).unwrap().trim().parse().unwrap())
        .collect();
    assert!(phis.len() > 3 && phis.windows(2).all(|w| w[0] >= w[1]), "{phis:?}");
    assert!(md.contains("| gpt4_1106_preview | ") && md.contains("| 0.500 | \\[0.500, 0.500\\] |"), "{md}");
}

/// The fenced block of `doc` whose first line starts with `first` (without the fences).
fn block(doc: &str, first: &str) -> String {
    let at = doc.find(&format!("\n{first}")).unwrap_or_else(|| panic!("no block starting {first:?}")) + 1;
    let end = doc[at..].find("```").expect("closed block");
    doc[at..at + end].to_string()
}

/// docs/systems.md "Published judgments: replay and check", run as written: every printed line
/// shown there is printed.
#[test]
fn the_documented_published_judgments_path_prints_what_the_docs_show() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::os::unix::fs::symlink(root().join("tests"), d.join("tests")).unwrap();
    let doc = std::fs::read_to_string(root().join("docs/systems.md")).unwrap();
    let commands = block(&doc, "topk-judge import --format alpaca_eval tests/fixtures/benchmarks/alpaca_eval/outputs/");
    let mut printed = String::new();
    let mut run_line = |line: &str| {
        let mut args: Vec<String> = Vec::new();
        for w in line.split_whitespace().skip(1) {
            if w.contains('*') {
                let (dirpart, _) = w.rsplit_once('/').unwrap();
                let mut v: Vec<String> = std::fs::read_dir(d.join(dirpart))
                    .unwrap()
                    .map(|e| format!("{dirpart}/{}", e.unwrap().file_name().to_string_lossy()))
                    .collect();
                v.sort();
                args.extend(v);
            } else {
                args.push(w.to_string());
            }
        }
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = run_bin(d, &a);
        assert!(o.status.success(), "{line}: {}", text(&o));
        printed.push_str(&stdout(&o));
    };
    for line in commands.lines().filter(|l| l.starts_with("topk-judge ")) {
        run_line(line);
    }
    write(d, "alpaca-eval.yaml", &block(&doc, "name: alpaca-eval-replay"));
    run_line("topk-judge run alpaca-eval.yaml");
    run_line("topk-judge check data/alpaca_eval.jsonl data/alpaca_eval_judgments.jsonl --k 3 --out check.json");
    for first in [
        "wrote data/alpaca_eval.jsonl: 45 prompts",
        "run \"alpaca-eval-replay\"",
        "point top-3 (apparent, reported)",
        "leaderboard check: 45 prompts",
    ] {
        for l in block(&doc, first).lines() {
            assert!(printed.contains(l), "docs/systems.md shows {l:?}, the commands print:\n{printed}");
        }
    }
    assert_eq!(json(&d.join("runs/alpaca-eval-replay/result.json"))["replay"]["candidates"], 405);
}

#[test]
fn fit_and_check_rank_the_systems_of_a_recording() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    imported(d);
    let o = run_bin(d, &["fit", "pool.jsonl", "rec.jsonl", "--k", "3"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(stdout(&o).starts_with("pool 45 prompts: bias_aware model, 405 valid verdicts\n"), "{}", text(&o));
    let o = run_bin(d, &["check", "pool.jsonl", "rec.jsonl", "--out", "check.json"]);
    assert!(o.status.success(), "{}", text(&o));
    let t = stdout(&o);
    assert!(t.starts_with("leaderboard check: 45 prompts × 10 systems, 405 verdicts\n"), "{t}");
    // The file written is said last, as `compare` and `report` say theirs.
    assert!(t.ends_with("\nwrote check.json\n"), "{t}");
    assert_eq!(json(&d.join("check.json"))["verdicts"], 405);
    assert!(
        t.contains(
            "raw top-3 (apparent φ̂): FuseChat-Gemma-2-9B-Instruct, FuseChat-Llama-3.1-8B-Instruct, gpt4_1106_preview\n"
        ),
        "{t}"
    );
    assert!(
        t.contains(
            "corrected top-3 (θ̂): FuseChat-Gemma-2-9B-Instruct, FuseChat-Llama-3.1-8B-Instruct, FuseChat-Llama-3.2-3B-Instruct\n"
        ),
        "{t}"
    );
    assert!(
        t.contains("the correction changes the top-3: FuseChat-Llama-3.2-3B-Instruct in, gpt4_1106_preview out\n"),
        "{t}"
    );
    // A point top-k is not a claim: the line below says what the verdicts decide.
    assert!(
        t.contains("\n  raw: top-3 not certified (ε = 0.05): 2 of 3 places decided (FuseChat-Gemma-2-9B-Instruct, FuseChat-Llama-3.1-8B-Instruct, each π ≥ 0.95); gpt4_1106_preview, FuseChat-Llama-3.2-3B-Instruct compete for the other 1 place\n"),
        "{t}"
    );
    // The same recording with the first-shown answer winning every verdict: the two point top-3
    // differ by noise (θ̂ gaps near 1e-3 logits, sd near 1), and check does not call that a change.
    let all_first: String = std::fs::read_to_string(d.join("rec.jsonl"))
        .unwrap()
        .lines()
        .map(|l| {
            let mut r: serde_json::Value = serde_json::from_str(l).unwrap();
            r["y"] = 1.0.into();
            r.to_string() + "\n"
        })
        .collect();
    write(d, "first.jsonl", &all_first);
    let o = run_bin(d, &["check", "pool.jsonl", "first.jsonl", "--k", "3"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        stdout(&o).contains("the judgments carry no signal (the judge picked the first-shown answer), so neither top-3 is determined by them, nor whether the correction changes it\n")
            && !stdout(&o).contains("the correction changes the top-3"),
        "{}",
        text(&o)
    );
    // The verdicts among five systems only (every verdict has the baseline in it: five are left
    // never compared): the order across components rests on the prior, and so does any
    // difference of the two point top-3 (it said "the correction changes which systems tie at the
    // top-1 boundary" of two groups compared apart).
    let recs: Vec<serde_json::Value> = std::fs::read_to_string(d.join("rec.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let mut systems: Vec<String> = recs.iter().map(|r| r["a"].as_str().unwrap().to_owned()).collect();
    systems.sort();
    systems.dedup();
    assert_eq!(systems.len(), 10);
    let first_five = |s: &serde_json::Value| systems[..5].contains(&s.as_str().unwrap().to_owned());
    let apart: String =
        recs.iter().filter(|r| first_five(&r["a"]) == first_five(&r["b"])).map(|r| r.to_string() + "\n").collect();
    write(d, "apart.jsonl", &apart);
    let o = run_bin(d, &["check", "pool.jsonl", "apart.jsonl", "--k", "3"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        stdout(&o).contains("the judgments do not connect the systems (a comparison graph of 6 components), so the top-3 across them rests on the prior, not on the judgments, and so does whether the correction changes it\n")
            && !stdout(&o).contains("the correction changes the top")
            && !stdout(&o).contains("which systems tie"),
        "{}",
        text(&o)
    );
    let c = json(&d.join("check.json"));
    assert_eq!(c["covariates"][0]["name"], "words");
    assert_eq!(c["covariates"][0]["identified"], true);
    assert!(c["covariates"][0]["profile_range_nats"].as_f64().unwrap() > 1.0, "{c}");
    // The published leaderboard (all 805 instructions) has gpt4_1106_preview 4th and
    // FuseChat-Llama-3.2-3B 3rd: trusted verdicts that say so enable the correction.
    let trusted = (0..10)
        .map(|i| {
            let (a, b, y) = if i % 2 == 0 {
                ("FuseChat-Llama-3.2-3B-Instruct", "gpt4_1106_preview", 1)
            } else {
                ("gpt4_1106_preview", "FuseChat-Llama-3.2-3B-Instruct", 0)
            };
            format!("{{\"pool_id\":\"h{i}\",\"a\":\"{a}\",\"b\":\"{b}\",\"y\":{y}}}\n")
        })
        .collect::<String>();
    write(d, "trusted.jsonl", &trusted);
    let o = run_bin(d, &["check", "pool.jsonl", "rec.jsonl", "--anchors", "trusted.jsonl", "--out", "gated.json"]);
    assert!(o.status.success(), "{}", text(&o));
    let g = json(&d.join("gated.json"))["gate"].clone();
    // One disagreement of the two rankings is labelled (the trusted file names one pair): the
    // corrected ranking is right on it; one anchor cannot reach p ≤ 0.05 (p = ½).
    assert_eq!(
        (g["labelled"].as_u64(), g["decision"]["n10"].as_u64(), g["decision"]["n01"].as_u64()),
        (Some(1), Some(1), Some(0))
    );
    assert_eq!(g["decision"]["p_value"], 0.5);
    assert!(stdout(&o).contains("→ keep the raw ranking"), "{}", text(&o));
}

#[test]
fn on_the_alpaca_eval_recording_topk_settles_the_top3_no_later_than_random() {
    // Frozen protocol in systems mode: every budget 10, 20, …, 400, ten seeds; per seed the
    // budget from which the top-3 equals the full recording's and stays so; mean over seeds.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    imported(d);
    let budgets: Vec<String> = (1..=40).map(|b| (10 * b).to_string()).collect();
    let cfg = write(
        d,
        "frozen.yaml",
        &format!(
            "name: ae\nout_dir: sweeps\nk: 3\nrecorded:\n  pools: pool.jsonl\n  verdicts: rec.jsonl\n  systems: true\nstrategies: [topk, random]\nmodels: [bias_aware]\nbudgets: [{}, all]\nseeds: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\n",
            budgets.join(", ")
        ),
    );
    let o = run_bin(d, &["simulate", cfg.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
    let mut rd = csv::Reader::from_path(d.join("sweeps/ae/rows.csv")).unwrap();
    let mut paths: BTreeMap<(String, String), Vec<(usize, f64)>> = BTreeMap::new();
    for rec in rd.records() {
        let rec = rec.unwrap();
        let b = if &rec[4] == "all" { usize::MAX } else { rec[4].parse().unwrap() };
        paths.entry((rec[2].to_string(), rec[1].to_string())).or_default().push((b, rec[6].parse().unwrap()));
    }
    let mut settle: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for ((strategy, _), mut v) in paths {
        v.sort_by_key(|p| p.0);
        let from = (0..v.len()).find(|&i| v[i..].iter().all(|p| p.1 == 1.0)).unwrap();
        settle.entry(strategy).or_default().push(v[from].0);
    }
    let mean = |s: &str| settle[s].iter().sum::<usize>() as f64 / settle[s].len() as f64;
    assert_eq!(settle["topk"].len(), 10);
    // Measured: topk 104, random 134 (docs/systems.md).
    assert!(mean("topk") <= mean("random"), "{settle:?}");
    assert_eq!((mean("topk"), mean("random")), (104.0, 134.0), "{settle:?}");
}

#[test]
fn the_mock_judges_an_imported_pool_only_with_a_stand_in_quality() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    imported(d);
    let cfg = |extra: &str| {
        format!(
            "name: offline\nout_dir: runs\npool:\n  file: pool.jsonl\n  ids: all\nk: 3\njudge:\n  mock:\n    mode: stochastic\n{extra}budget:\n  max_comparisons: 16\n"
        )
    };
    let refused = write(d, "refused.yaml", &cfg(""));
    let o = run_bin(d, &["run", refused.to_str().unwrap(), "--quiet"]);
    assert!(!o.status.success());
    assert!(
        text(&o).contains("judge.mock: the mock judge needs gold `quality` on every item; item \"i-"),
        "{}",
        text(&o)
    );
    assert!(text(&o).contains("set judge.mock.stand_in_quality: true"), "{}", text(&o));
    let ok = write(d, "ok.yaml", &cfg("    stand_in_quality: true\n"));
    let o = run_bin(d, &["run", ok.to_str().unwrap(), "--quiet"]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(result(d, "offline")["comparisons"], 16);
}

/// The scale of AlpacaEval 2's leaderboard: 58 systems × 805 prompts, a star-shaped recording
/// (every system against one reference, one presentation order each: 45,885 verdicts), replayed
/// for 2,000 verdicts. Ignored in the suite (a debug build is slow); docs/benchmarks.md has the
/// measured time of a release build:
/// `cargo test --release --test integration published::replay_at_leaderboard_scale -- --ignored --nocapture`.
#[test]
#[ignore]
fn replay_at_leaderboard_scale() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (systems, prompts) = (58usize, 805usize);
    // A fixed linear congruential stream: lengths, the shown order and the outcome.
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        (state >> 11) as f64 / (1u64 << 53) as f64
    };
    let theta: Vec<f64> = (0..systems).map(|s| 2.0 * (s as f64 / systems as f64) - 1.0).collect();
    let (mut pool, mut rec) = (String::new(), String::new());
    for p in 0..prompts {
        let items: Vec<String> = (0..systems)
            .map(|s| {
                let words = 20 + (next() * 380.0) as usize;
                format!("{{\"id\":\"s{s:02}\",\"system\":\"s{s:02}\",\"text\":\"{}{p} {s}\"}}", "w ".repeat(words))
            })
            .collect();
        pool.push_str(&format!("{{\"pool_id\":\"q{p}\",\"task\":\"question {p}\",\"items\":[{}]}}\n", items.join(",")));
        for s in 1..systems {
            let (a, b) = if next() < 0.5 { (0, s) } else { (s, 0) };
            let pa = 1.0 / (1.0 + (-(theta[a] - theta[b] + 0.2)).exp());
            let y = u8::from(next() < pa);
            rec.push_str(&format!("{{\"pool_id\":\"q{p}\",\"a\":\"s{a:02}\",\"b\":\"s{b:02}\",\"y\":{y}}}\n"));
        }
    }
    write(d, "pool.jsonl", &pool);
    write(d, "rec.jsonl", &rec);
    let cfg = write(
        d,
        "big.yaml",
        "name: big\nout_dir: runs\npool:\n  file: pool.jsonl\n  ids: all\nk: 5\njudge:\n  replay:\n    file: rec.jsonl\n    missing: unavailable\nacquisition:\n  strategy: topk\n  seed: 1\nbudget:\n  max_comparisons: 2000\n",
    );
    let t = std::time::Instant::now();
    let o = run_bin(d, &["run", cfg.to_str().unwrap(), "--quiet"]);
    let secs = t.elapsed().as_secs_f64();
    assert!(o.status.success(), "{}", text(&o));
    let r = result(d, "big");
    assert_eq!((r["comparisons"].as_u64(), r["replay"]["candidates"].as_u64()), (Some(2000), Some(45_885)));
    assert_eq!(r["replay"]["unavailable"], 0);
    let intents = std::fs::read_to_string(d.join("runs/big/intents.jsonl")).unwrap();
    assert_eq!(intents.lines().count(), 2000, "one intent per verdict: nothing unrecorded is opened");
    println!("58 systems × 805 prompts, 2,000 verdicts replayed in {secs:.1} s (wall)");
}

#[test]
fn the_gate_asks_a_recorded_trusted_judge_only_what_it_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    imported(d);
    let pool = std::fs::read_to_string(d.join("pool.jsonl")).unwrap();
    let first: serde_json::Value = serde_json::from_str(pool.lines().next().unwrap()).unwrap();
    let p0 = first["pool_id"].as_str().unwrap();
    // Trusted verdicts (e.g. human preferences) on one prompt: FuseChat-Llama-3.2-3B beats the
    // reference, in both orders. Every other anchor has no trusted verdict: a tie.
    write(
        d,
        "trusted.jsonl",
        &format!(
            "{{\"pool_id\":\"{p0}\",\"a\":\"FuseChat-Llama-3.2-3B-Instruct\",\"b\":\"gpt4_1106_preview\",\"y\":1}}\n{{\"pool_id\":\"{p0}\",\"a\":\"gpt4_1106_preview\",\"b\":\"FuseChat-Llama-3.2-3B-Instruct\",\"y\":0}}\n"
        ),
    );
    let cfg = write(
        d,
        "gated.yaml",
        &format!(
            "{}gate:\n  anchors: 10\n  trusted:\n    replay:\n      file: trusted.jsonl\n      missing: unavailable\n",
            SYSTEMS_REPLAY.replace("name: ae", "name: gated")
        ),
    );
    let o = run_bin(d, &["run", cfg.to_str().unwrap(), "--quiet"]);
    assert!(o.status.success(), "{}", text(&o));
    let o = run_bin(d, &["gate", "runs/gated"]);
    assert!(o.status.success(), "{}", text(&o));
    let t = stdout(&o);
    // The anchor FuseChat-Llama-3.2-3B vs gpt4_1106_preview (the corrected ranking prefers the
    // former) is labelled by the two trusted verdicts; no other anchor has one.
    assert!(t.contains(", n10 = 1 (corrected right, naive wrong), n01 = 0 (naive right), ties = "), "{t}");
    let trusted = std::fs::read_to_string(d.join("runs/gated/trusted_intents.jsonl")).unwrap();
    assert_eq!(trusted.lines().count(), 2, "only the two recorded queries are asked:\n{trusted}");
}

#[test]
fn runs_on_one_large_pool_share_one_copy_of_it() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    imported(d);
    let size = std::fs::metadata(d.join("pool.jsonl")).unwrap().len();
    assert!(size >= 1 << 19, "the AlpacaEval excerpt's pool file is {size} bytes");
    for name in ["one", "two"] {
        let cfg = write(
            d,
            &format!("{name}.yaml"),
            &SYSTEMS_REPLAY
                .replace("name: ae", &format!("name: {name}"))
                .replace("max_comparisons: 200", "max_comparisons: 8"),
        );
        let o = run_bin(d, &["run", cfg.to_str().unwrap(), "--quiet"]);
        assert!(o.status.success(), "{}", text(&o));
    }
    use std::os::unix::fs::MetadataExt;
    let shared: Vec<PathBuf> = std::fs::read_dir(d.join("runs/.pools")).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(shared.len(), 1, "{shared:?}");
    let ino = |p: &Path| std::fs::metadata(p).unwrap().ino();
    assert_eq!(ino(&d.join("runs/one/pool.jsonl")), ino(&shared[0]));
    assert_eq!(ino(&d.join("runs/two/pool.jsonl")), ino(&shared[0]));
    // The copy is the selected lines as written: the pool file itself here (ids: all).
    assert_eq!(std::fs::read(&shared[0]).unwrap(), std::fs::read(d.join("pool.jsonl")).unwrap());
    // The folder still reads from anywhere: fit on it, and a resume relinks nothing new.
    let o = run_bin(d, &["fit", "runs/one"]);
    assert!(o.status.success(), "{}", text(&o));
    let o = run_bin(d, &["run", "one.yaml", "--quiet"]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(std::fs::read_dir(d.join("runs/.pools")).unwrap().count(), 1);
}

#[test]
fn check_names_what_it_cannot_use() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    imported(d);
    // A pool file of one pool: check is for systems over many prompts; fit is for one pool.
    let o = run_bin(d, &["check", summeval_one(d).to_str().unwrap(), "rec.jsonl"]);
    assert!(!o.status.success());
    assert!(text(&o).contains("holds 1 pool: `check` compares systems across many prompts"), "{}", text(&o));
    assert!(text(&o).contains("use `topk-judge fit POOL VERDICTS`"), "{}", text(&o));
    // Five of the 45 prompts: the verdicts of the other 40 are left out, and said so.
    let five: String =
        std::fs::read_to_string(d.join("pool.jsonl")).unwrap().lines().take(5).map(|l| format!("{l}\n")).collect();
    write(d, "five.jsonl", &five);
    let o = run_bin(d, &["check", "five.jsonl", "rec.jsonl"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(stdout(&o).starts_with("leaderboard check: 5 prompts × 10 systems, 45 verdicts\nleft out: 360 verdicts on prompts the pool file does not have: 40 prompts ("), "{}", text(&o));
    assert!(stdout(&o).contains(", …; check --out lists them all)\n"), "{}", text(&o));
    // The verdicts of one prompt of the 45: the header says the ranking rests on it alone.
    let rec = std::fs::read_to_string(d.join("rec.jsonl")).unwrap();
    let first: serde_json::Value = serde_json::from_str(rec.lines().next().unwrap()).unwrap();
    let one: String = rec
        .lines()
        .filter(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["pool_id"] == first["pool_id"])
        .map(|l| format!("{l}\n"))
        .collect();
    write(d, "one.jsonl", &one);
    let o = run_bin(d, &["check", "pool.jsonl", "one.jsonl", "--out", "one-check.json"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        stdout(&o).starts_with(
            "leaderboard check: 45 prompts (1 judged: the ranking rests on it alone) × 10 systems, 9 verdicts\n"
        ),
        "{}",
        text(&o)
    );
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("one-check.json")).unwrap()).unwrap();
    assert_eq!((j["prompts"].as_u64(), j["judged_prompts"].as_u64()), (Some(45), Some(1)));
    // The judgments are a recording (docs/replay.md): a repeated line counts once (it was fitted
    // twice, and raised the profile from 5.445 to 6.566 nats with 50 repeats), another verdict
    // for a recorded ordered pair names both lines, and a record without its prompt says so.
    let first_50: String = rec.lines().take(50).map(|l| format!("{l}\n")).collect();
    write(d, "dup.jsonl", &format!("{rec}{first_50}"));
    let once = run_bin(d, &["check", "pool.jsonl", "rec.jsonl"]);
    let twice = run_bin(d, &["check", "pool.jsonl", "dup.jsonl"]);
    assert!(twice.status.success(), "{}", text(&twice));
    assert_eq!(stdout(&twice), stdout(&once));
    assert!(
        stderr(&twice).contains("dup.jsonl: 50 lines repeat the verdict of an earlier line for the same judge, prompt and ordered pair (line 406 repeats line 1); each is counted once"),
        "{}",
        text(&twice)
    );
    let line1: serde_json::Value = serde_json::from_str(rec.lines().next().unwrap()).unwrap();
    let mut flipped = line1.clone();
    flipped["y"] = serde_json::json!(1.0 - line1["y"].as_f64().unwrap());
    write(d, "conflict.jsonl", &format!("{rec}{flipped}\n"));
    let o = run_bin(d, &["check", "pool.jsonl", "conflict.jsonl"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        stderr(&o).contains(&format!(
            "conflict.jsonl:406: judge {}, pool {}, {} shown first vs {}: recorded again with another verdict (first on line 1)",
            line1["judge"], line1["pool_id"], line1["a"], line1["b"]
        )),
        "{}",
        text(&o)
    );
    // Two prompting strategies of one judge are two recorded judges (as the replay judge reads
    // them), not a conflict; another cost for one verdict is.
    let mut plain = flipped.clone();
    plain["prompting"] = serde_json::json!("plain");
    write(d, "prompting.jsonl", &format!("{rec}{plain}\n"));
    let o = run_bin(d, &["check", "pool.jsonl", "prompting.jsonl"]);
    assert!(o.status.success(), "{}", text(&o));
    let mut dearer = line1.clone();
    dearer["cost_usd"] = serde_json::json!(line1["cost_usd"].as_f64().unwrap_or(0.0) + 1.0);
    write(d, "cost.jsonl", &format!("{rec}{dearer}\n"));
    let o = run_bin(d, &["check", "pool.jsonl", "cost.jsonl"]);
    assert!(
        stderr(&o).contains("recorded again with another cost_usd (the same verdict) (first on line 1)"),
        "{}",
        text(&o)
    );
    let mut no_prompt = line1.clone();
    no_prompt.as_object_mut().unwrap().remove("pool_id");
    write(d, "noprompt.jsonl", &format!("{no_prompt}\n{rec}"));
    let o = run_bin(d, &["check", "pool.jsonl", "noprompt.jsonl"]);
    assert!(
        stderr(&o).contains("noprompt.jsonl:1: no \"pool_id\": the judgments of a leaderboard are keyed per prompt"),
        "{}",
        text(&o)
    );
    // A system a prompt lacks is named as that prompt's answer, with the answers it has.
    let mut unknown = line1.clone();
    unknown["a"] = serde_json::json!("nosuch");
    write(d, "unknown.jsonl", &format!("{unknown}\n"));
    let o = run_bin(d, &["check", "pool.jsonl", "unknown.jsonl"]);
    assert!(
        stderr(&o).contains(&format!(
            "unknown.jsonl:1: item \"nosuch\" is not among the answers to prompt {} in the pool file (its answers: ",
            line1["pool_id"]
        )),
        "{}",
        text(&o)
    );
    // k out of range, and a trusted file that is not there, named by their flags.
    let o = run_bin(d, &["check", "pool.jsonl", "rec.jsonl", "--k", "10"]);
    assert!(text(&o).contains("--k 10 must satisfy 1 ≤ k < number of systems (10)"), "{}", text(&o));
    // Without --k, the default is named as such (it read "--k 3", a flag not given).
    write(
        d,
        "two.jsonl",
        "{\"pool_id\":\"p1\",\"task\":\"q\",\"items\":[{\"id\":\"alpha\",\"system\":\"alpha\",\"text\":\"aa\"},{\"id\":\"beta\",\"system\":\"beta\",\"text\":\"bb bb\"}]}\n{\"pool_id\":\"p2\",\"task\":\"q2\",\"items\":[{\"id\":\"alpha\",\"system\":\"alpha\",\"text\":\"x\"},{\"id\":\"beta\",\"system\":\"beta\",\"text\":\"y y\"}]}\n",
    );
    write(
        d,
        "two_v.jsonl",
        "{\"pool_id\":\"p1\",\"a\":\"alpha\",\"b\":\"beta\",\"y\":1}\n{\"pool_id\":\"p2\",\"a\":\"beta\",\"b\":\"alpha\",\"y\":0}\n",
    );
    let o = run_bin(d, &["check", "two.jsonl", "two_v.jsonl"]);
    assert!(
        text(&o).contains("k = 3 (the default; --k sets another) must satisfy 1 ≤ k < number of systems (2)"),
        "{}",
        text(&o)
    );
    let o = run_bin(d, &["check", "pool.jsonl", "rec.jsonl", "--anchors", "nope.jsonl"]);
    assert!(text(&o).contains("--anchors nope.jsonl: cannot read verdicts file nope.jsonl"), "{}", text(&o));
    // A recording of other prompts altogether.
    let other = std::fs::read_to_string(d.join("rec.jsonl")).unwrap().replace("\"pool_id\":\"i-", "\"pool_id\":\"x-");
    write(d, "other.jsonl", &other);
    let o = run_bin(d, &["check", "pool.jsonl", "other.jsonl"]);
    assert!(!o.status.success());
    assert!(text(&o).contains("none of its records is for one of the 45 prompts of pool.jsonl"), "{}", text(&o));
    // Trusted verdicts that name none of the pool's systems, and a gate of no anchor.
    write(d, "anc_bad.jsonl", &"{\"pool_id\":\"nope\",\"a\":\"x\",\"b\":\"y\",\"y\":1}\n".repeat(3));
    let o = run_bin(d, &["check", "pool.jsonl", "rec.jsonl", "--anchors", "anc_bad.jsonl"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        text(&o).contains("--anchors anc_bad.jsonl: 3 of its 3 verdicts name a system this pool does not have (line 1: \"x\"; line 2: \"x\"; line 3: \"x\"); expected the trusted judge's verdicts between its systems: "),
        "{}",
        text(&o)
    );
    let o = run_bin(d, &["check", "pool.jsonl", "rec.jsonl", "--anchors", "rec.jsonl", "--max-anchors", "0"]);
    assert!(
        text(&o).contains("--max-anchors 0: the gate needs at least 1 anchor to test (default 40)"),
        "{}",
        text(&o)
    );
    // The judged file as its own anchors; anchors of two judges; anchors on prompts the pool
    // does not have (their system names alone used to match).
    let o = run_bin(d, &["check", "pool.jsonl", "rec.jsonl", "--anchors", "./rec.jsonl"]);
    assert!(
        text(&o).contains(
            "--anchors ./rec.jsonl: the judged verdicts themselves; expected another, trusted judge's verdicts"
        ),
        "{}",
        text(&o)
    );
    let rec: Vec<serde_json::Value> = std::fs::read_to_string(d.join("rec.jsonl"))
        .unwrap()
        .lines()
        .take(10)
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let lines = |judge: &dyn Fn(usize) -> &'static str, pool: Option<&str>| -> String {
        rec.iter()
            .enumerate()
            .map(|(i, v)| {
                let mut v = v.clone();
                v["judge"] = judge(i).into();
                if let Some(p) = pool {
                    v["pool_id"] = p.into();
                }
                v.to_string() + "\n"
            })
            .collect()
    };
    write(d, "mixed.jsonl", &lines(&|i| if i == 9 { "another judge" } else { "human" }, None));
    let o = run_bin(d, &["check", "pool.jsonl", "rec.jsonl", "--anchors", "mixed.jsonl"]);
    assert!(
        text(&o).contains("--anchors mixed.jsonl: holds verdicts of 2 judges (another judge, human); expected one trusted judge's verdicts"),
        "{}",
        text(&o)
    );
    // Anchors compare systems: a trusted verdict of two systems on a prompt the pool does not
    // have is evidence too (human labels of other instructions), read as the same pair.
    write(d, "human.jsonl", &lines(&|_| "human", None));
    write(d, "elsewhere.jsonl", &lines(&|_| "human", Some("nope")));
    let gate = |f: &str| {
        let o = run_bin(d, &["check", "pool.jsonl", "rec.jsonl", "--anchors", f]);
        assert!(o.status.success(), "{}", text(&o));
        stdout(&o).lines().filter(|l| l.contains("anchor")).map(str::to_owned).collect::<Vec<_>>()
    };
    let here = gate("human.jsonl");
    assert!(here.iter().any(|l| l.starts_with("gate: ") && l.contains(" with trusted verdicts")), "{here:?}");
    assert_eq!(gate("elsewhere.jsonl"), here);
}

/// One pool of the shipped SummEval file, alone in a file.
fn summeval_one(d: &Path) -> PathBuf {
    let first = std::fs::read_to_string(summeval()).unwrap().lines().next().unwrap().to_string();
    write(d, "one.jsonl", &(first + "\n"))
}

//! `compare` on runs with known answers and `report` on a real mock run.

use crate::common::*;
use std::collections::BTreeMap;
use std::path::Path;
use topk_judge::acquire::StrategyKind;
use topk_judge::model::summary::ModelKind;
use topk_judge::report::compare::{RunDir, compare, recall_curve};
use topk_judge::report::schema::FittedRanking;
use topk_judge::report::schema::{RunResult, StopReason};
use topk_judge::report::{FitLine, RankRow};
use topk_judge::store::ledger::VerdictRecord;

const IDS: [&str; 4] = ["a", "b", "c", "d"];

fn result(name: &str, topk: &[&str], spend: f64) -> RunResult {
    let m = |v: [f64; 4]| -> BTreeMap<String, f64> { IDS.iter().map(|s| s.to_string()).zip(v).collect() };
    RunResult {
        name: name.into(),
        pool_id: "p".into(),
        k: 2,
        model: ModelKind::BiasAware,
        judge: format!("judge {name}"),
        strategy: StrategyKind::Topk,
        stop_reason: StopReason::MaxComparisons,
        comparisons: 4,
        valid: 4,
        invalid: 0,
        failed: 0,
        not_run: 0,
        spend_usd: spend,
        possibly_billed: 0,
        possibly_billed_usd: 0.0,
        in_open_batch_job: None,
        duplicate_records: 0,
        folder_spend: Default::default(),
        overrun: None,
        usage: Default::default(),
        fit: FittedRanking {
            topk: topk.iter().map(|s| s.to_string()).collect(),
            theta: m([1.0, 0.5, 0.0, -1.0]),
            sd: m([0.5; 4]),
            membership: m([0.9, 0.6, 0.4, 0.1]),
            phi: m([1.0, 0.5, 0.0, -1.0]),
            c: BTreeMap::new(),
            c_sd: BTreeMap::new(),
            kappa: 0.2,
            kappa_sd: 0.1,
            gold_topk: Some(vec!["a".into(), "b".into()]),
            recall_at_k: None,
            ranking: IDS
                .iter()
                .enumerate()
                .map(|(r, id)| RankRow {
                    rank: r + 1,
                    id: id.to_string(),
                    theta: 1.0 - r as f64,
                    sd: 0.5,
                    membership: 0.5,
                    phi: 0.0,
                    in_topk: topk.contains(id),
                    gold: None,
                    gold_topk: None,
                    ..Default::default()
                })
                .collect(),
            notes: vec![],
            identifiability: BTreeMap::new(),
            reporting: Default::default(),
        },
        no_variation: vec![],
        gate: None,
        judge_stats: None,
        quarantined: vec![],
        last_error: None,
        batch_pending: None,
        verdicts_report: Default::default(),
        replay: None,
        fingerprint: Vec::new(),
        throughput: None,
    }
}

fn rec(judge: &str, a: &str, b: &str, y: Option<f64>, cost: f64) -> VerdictRecord {
    VerdictRecord {
        key: format!("{a}>{b}:{y:?}"), // unique: a log counts a key once (an invalid verdict and its re-ask differ)
        pool_id: "p".into(),
        a: a.into(),
        b: b.into(),
        judge: judge.into(),
        judge_settings: None,
        ts: 0,
        intent: None,
        reused_from: None,
        reply: topk_judge::domain::verdict::JudgeReply {
            cost_usd: cost,
            ..topk_judge::domain::verdict::JudgeReply::outcome(y)
        },
    }
}

fn fit(n: usize, topk: &[&str]) -> FitLine {
    FitLine {
        config_hash: "h".into(),
        comparisons: n,
        theta: BTreeMap::new(),
        sd: BTreeMap::new(),
        membership: BTreeMap::new(),
        c: BTreeMap::new(),
        kappa: 0.0,
        topk: topk.iter().map(|s| s.to_string()).collect(),
        topk_apparent: None,
        beta: vec![],
        light: false,
    }
}

fn write_run(dir: &Path, r: &RunResult, verdicts: &[VerdictRecord], fits: &[FitLine]) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("result.json"), serde_json::to_string(r).unwrap()).unwrap();
    let v: String = verdicts.iter().map(|x| serde_json::to_string(x).unwrap() + "\n").collect();
    std::fs::write(dir.join("verdicts.jsonl"), v).unwrap();
    let f: String = fits.iter().map(|x| serde_json::to_string(x).unwrap() + "\n").collect();
    std::fs::write(dir.join("fits.jsonl"), f).unwrap();
}

/// Run A: top-2 {a, b} (gold), no flip; run B: top-2 {a, c}, both of its pairs flip.
fn two_runs(root: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let (a, b) = (root.join("A"), root.join("B"));
    let ja = "judge A";
    write_run(
        &a,
        &result("A", &["a", "b"], 0.04),
        &[
            rec(ja, "a", "b", Some(1.0), 0.01),
            rec(ja, "b", "a", Some(0.0), 0.01), // a wins both: no flip
            rec(ja, "c", "d", None, 0.01),      // invalid, still paid
            rec(ja, "c", "d", Some(1.0), 0.005),
            rec(ja, "d", "c", Some(0.0), 0.005),          // c wins both: no flip
            rec("other judge", "a", "c", Some(1.0), 9.0), // another judge's record: ignored
        ],
        &[fit(0, &["a", "c"]), fit(2, &["a", "c"]), fit(4, &["a", "b"])],
    );
    let jb = "judge B";
    write_run(
        &b,
        &result("B", &["a", "c"], 0.2),
        &[
            rec(jb, "a", "b", Some(1.0), 0.05),
            rec(jb, "b", "a", Some(1.0), 0.05), // first wins both: flip
            rec(jb, "a", "c", Some(0.0), 0.05),
            rec(jb, "c", "a", Some(0.0), 0.05), // second wins both: flip
        ],
        &[fit(0, &["b", "d"]), fit(4, &["a", "c"])],
    );
    (a, b)
}

#[test]
fn compare_two_runs_with_known_answers() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = two_runs(dir.path());
    let ra = RunDir::load(&a).unwrap();
    let rb = RunDir::load(&b).unwrap();
    assert_eq!(ra.verdicts.len(), 5, "the other judge's record is skipped");
    let c = compare(&[ra.clone(), rb.clone()], None).unwrap();
    assert_eq!(c.target.as_deref(), Some("gold"));
    assert_eq!(c.rows[0].recall, Some(1.0));
    assert_eq!(c.rows[1].recall, Some(0.5));
    assert_eq!((c.rows[0].flips, c.rows[0].both_order_pairs), (0, 2));
    assert_eq!((c.rows[1].flips, c.rows[1].both_order_pairs), (2, 2));
    assert_eq!(c.rows[1].flip_rate, Some(1.0));
    assert_eq!(c.agreement, vec![vec![Some(1.0), Some(0.5)], vec![Some(0.5), Some(1.0)]]);
    assert_eq!(c.rows[1].spend_usd, 0.2);
    // Recall against spend: A's fit after 2 valid verdicts sits at 0.02 USD, the one after 4 at
    // 0.01·3 + 0.005·2 = 0.04 USD (the invalid verdict is paid for).
    let curve = recall_curve(&ra, &topk_judge::report::RecallTarget::exact(vec!["a".to_string(), "b".to_string()]));
    let want = [(0.0, 0, 0.5), (0.02, 2, 0.5), (0.04, 4, 1.0)];
    for (g, w) in curve.iter().zip(want) {
        assert!((g.0 - w.0).abs() < 1e-12 && g.1 == w.1 && g.2 == w.2, "{curve:?}");
    }
    // Against B as the reference: A agrees on a only.
    let c = compare(&[ra.clone(), rb.clone()], Some(&rb)).unwrap();
    assert_eq!(c.target.as_deref(), Some("reference B"));
    assert_eq!(c.rows[0].recall, Some(0.5));
    assert_eq!(c.rows[1].recall, Some(1.0));
}

/// A result.json saved with a byte-order mark (an editor's save) reads as the same result (it
/// said "not a topk-judge result (expected value at line 1 column 1)").
#[test]
fn a_result_json_with_a_byte_order_mark_reads() {
    let dir = tempfile::tempdir().unwrap();
    let (a, _) = two_runs(dir.path());
    let plain = RunDir::load(&a).unwrap();
    let rp = a.join("result.json");
    let text = std::fs::read_to_string(&rp).unwrap();
    std::fs::write(&rp, format!("\u{feff}{text}")).unwrap();
    let bom = RunDir::load(&a).unwrap();
    assert_eq!((bom.result.spend_usd, bom.result.fit.topk.clone()), (plain.result.spend_usd, plain.result.fit.topk));
}

#[test]
fn compare_cli_writes_table_and_plot_and_rejects_other_pools() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = two_runs(dir.path());
    let out = run_bin(
        dir.path(),
        &["compare", a.to_str().unwrap(), b.to_str().unwrap(), "--out", dir.path().join("cmp").to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", text(&out));
    let md = std::fs::read_to_string(dir.path().join("cmp/compare.md")).unwrap();
    assert!(md.contains("| A | judge A | none (0.05) | 0.0400 | 4 | 4 | 1.00 | 0/2 = 0.00 | a, b |"), "{md}");
    assert!(md.contains("| B | judge B | none (0.05) | 0.2000 | 4 | 4 | 0.50 | 2/2 = 1.00 | a, c |"), "{md}");
    let svg = std::fs::read_to_string(dir.path().join("cmp/recall_vs_spend.svg")).unwrap();
    assert!(svg.contains("cumulative spend (USD)"), "{svg}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("cmp/compare.json")).unwrap()).unwrap();
    assert_eq!(json["agreement"][0][1], 0.5);
    // Another pool cannot be compared.
    let mut other = result("C", &["a", "b"], 0.0);
    other.pool_id = "q".into();
    other.comparisons = 0;
    write_run(&dir.path().join("C"), &other, &[], &[]);
    let out = run_bin(dir.path(), &["compare", a.to_str().unwrap(), dir.path().join("C").to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(text(&out).contains("same pool"), "{}", text(&out));
    // Two runs of one name in two folders are named by their folders.
    let a3 = dir.path().join("again").join("A");
    std::fs::create_dir_all(&a3).unwrap();
    for f in std::fs::read_dir(&a).unwrap() {
        let f = f.unwrap().path();
        std::fs::copy(&f, a3.join(f.file_name().unwrap())).unwrap();
    }
    let cmp = dir.path().join("cmp2");
    let out =
        run_bin(dir.path(), &["compare", a.to_str().unwrap(), a3.to_str().unwrap(), "--out", cmp.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(cmp.join("compare.json")).unwrap()).unwrap();
    let names: Vec<&str> = json["rows"].as_array().unwrap().iter().map(|r| r["run"].as_str().unwrap()).collect();
    assert_eq!(names, [a.to_str().unwrap(), a3.to_str().unwrap()]);
    // A reference of that name in a third folder is named by its folder too; a reference that is
    // one of the compared runs, alone of its name, keeps its name.
    let a4 = dir.path().join("third").join("A");
    std::fs::create_dir_all(&a4).unwrap();
    for f in std::fs::read_dir(&a).unwrap() {
        let f = f.unwrap().path();
        std::fs::copy(&f, a4.join(f.file_name().unwrap())).unwrap();
    }
    for (runs, reference, target) in [
        ([&a, &a3], &a4, format!("reference {}", a4.display())),
        ([&a, &b], &a4, format!("reference {}", a4.display())),
        ([&a, &b], &b, "reference B".to_string()),
    ] {
        let args = [runs[0].to_str().unwrap(), runs[1].to_str().unwrap(), "--reference", reference.to_str().unwrap()];
        let out = run_bin(dir.path(), &[&["compare", "--out", cmp.to_str().unwrap()][..], &args].concat());
        assert!(out.status.success(), "{}", text(&out));
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(cmp.join("compare.json")).unwrap()).unwrap();
        assert_eq!(json["target"].as_str(), Some(target.as_str()));
        assert!(stdout(&out).contains(&format!("measured against the {target} top-2")), "{}", text(&out));
    }
    // One run folder given twice, however spelled, is no comparison.
    let a2 = dir.path().join(".").join(a.file_name().unwrap()).join("");
    for (x, y, says) in [(&a, &a, format!("{} is given twice", a.display())), (&a, &a2, "are one run folder".into())] {
        let out = run_bin(dir.path(), &["compare", x.to_str().unwrap(), y.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(1), "{}", text(&out));
        assert!(
            text(&out).contains(&says) && text(&out).contains("compare different runs, each once"),
            "{}",
            text(&out)
        );
    }
}

/// A config given for a run folder names the run it makes: `report` and `profile` refuse a
/// folder whose run was made with another k (they reported the old k = 3 run for a k = 5
/// config) or whose verdicts are all another judge configuration's ("no valid verdicts").
#[test]
fn a_config_given_for_a_run_folder_must_have_made_its_run() {
    let dir = tempfile::tempdir().unwrap();
    mock_run(dir.path(), "m", 0.0);
    let base = std::fs::read_to_string(dir.path().join("m.yaml")).unwrap();
    assert!(run_bin(dir.path(), &["report", "m.yaml"]).status.success());
    let n = json(&dir.path().join("runs/m/result.json"))["comparisons"].as_u64().unwrap();
    write(dir.path(), "k3.yaml", &base.replace("k: 2\n", "k: 3\n"));
    write(dir.path(), "seed.yaml", &base.replace("pos_bias: 0", "pos_bias: 0.5"));
    let out = run_bin(dir.path(), &["report", "k3.yaml"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert_eq!(
        stderr(&out),
        "error: report k3.yaml: runs/m: holds a run made with other settings than k3.yaml configures: k (2 there, 3 here); give the run folder itself for the run it holds, or run this config first\n"
    );
    // Every setting that differs is named with both values; a budget alone is no other run.
    write(dir.path(), "draws.yaml", &base.replace("mc_draws: 200", "mc_draws: 300"));
    let out = run_bin(dir.path(), &["report", "draws.yaml"]);
    assert!(stderr(&out).contains("configures: acquisition.mc_draws (200 there, 300 here);"), "{}", text(&out));
    write(dir.path(), "budget.yaml", &format!("{base}budget: {{max_comparisons: 7}}\n"));
    assert!(run_bin(dir.path(), &["report", "budget.yaml"]).status.success());
    // What a run reports by is a setting of the run too (the folder's `auto` report was written
    // for a config that asks for the corrected ranking, or another ε, without a word).
    write(dir.path(), "rr.yaml", &format!("{base}report_ranking: corrected\ncertify: {{epsilon: 0.2}}\n"));
    let out = run_bin(dir.path(), &["report", "rr.yaml"]);
    assert!(
        stderr(&out).contains(
            "configures: certify.epsilon (0.05 there, 0.2 here), report_ranking (\"auto\" there, \"corrected\" here);"
        ),
        "{}",
        text(&out)
    );
    // Another judge: every command that reads the run by this config says so (gate said "no
    // valid verdicts" of a folder of them, fit printed an empty fit and exit 0).
    for cmd in ["report", "profile", "fit"] {
        let out = run_bin(dir.path(), &[cmd, "seed.yaml"]);
        assert_eq!(out.status.code(), Some(1), "{cmd}: {}", text(&out));
        assert!(
            stderr(&out).contains(&format!(
                "runs/m: none of the {n} verdicts stored here is of the judge seed.yaml configures"
            )),
            "{cmd}: {}",
            text(&out)
        );
    }
    assert!(run_bin(dir.path(), &["profile", "runs/m"]).status.success(), "the folder itself");
    // A folder without run.json (an older version's) is read from its config.yaml all the same.
    std::fs::remove_file(dir.path().join("runs/m/run.json")).unwrap();
    let out = run_bin(dir.path(), &["report", "k3.yaml"]);
    assert!(stderr(&out).contains("configures: k (2 there, 3 here);"), "{}", text(&out));
}

/// A 6-item pool with distinct qualities and texts of different lengths.
fn small_pool(dir: &Path) -> std::path::PathBuf {
    let quality = [3.0, 1.0, 5.0, 2.0, 4.0, 0.0];
    let items: Vec<serde_json::Value> = (0..6)
        .map(|i| serde_json::json!({"id": format!("s{i}"), "text": "word ".repeat(3 + 2 * i), "quality": quality[i]}))
        .collect();
    let line = serde_json::json!({"pool_id": "six", "task": "t", "items": items});
    write(dir, "six.jsonl", &(line.to_string() + "\n"))
}

fn mock_run(dir: &Path, name: &str, pos_bias: f64) -> std::path::PathBuf {
    small_pool(dir);
    let yaml = format!(
        "name: {name}\nout_dir: runs\npool: {{file: six.jsonl}}\nk: 2\njudge:\n  mock: {{mode: deterministic, pos_bias: {pos_bias}, verb_per_word: 0.0, input_usd_per_mtok: 1.0}}\n\
         model: {{kind: naive}}\nacquisition: {{strategy: round_robin, mc_draws: 200}}\n"
    );
    let cfg = write(dir, &format!("{name}.yaml"), &yaml);
    let out = run_bin(dir, &["run", cfg.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", text(&out));
    dir.join("runs").join(name)
}

/// A run folder whose judge changed under one description (another mock seed): `compare` and
/// `report` count flips over the current judge's verdicts (by cache key, as `fit RUN` does), the
/// same as a folder of that judge alone; it counted the first verdict of each ordered pair over
/// the whole file, mostly the earlier judge's.
#[test]
fn compare_counts_the_flips_of_the_current_judge_only() {
    let dir = tempfile::tempdir().unwrap();
    small_pool(dir.path());
    let run = |name: &str, seed: u64| {
        let yaml = format!(
            "name: {name}\nout_dir: runs\npool: {{file: six.jsonl}}\nk: 2\njudge:\n  mock: {{mode: stochastic, seed: {seed}, pos_bias: 1.0, temperature: 1.0}}\nmodel: {{kind: naive}}\nacquisition: {{strategy: round_robin, mc_draws: 200}}\n"
        );
        let cfg = write(dir.path(), &format!("{name}-{seed}.yaml"), &yaml);
        let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet"]);
        assert!(out.status.success(), "{}", text(&out));
    };
    run("old", 1);
    run("fresh", 5);
    run("mixed", 1);
    run("mixed", 5);
    let out = run_bin(dir.path(), &["compare", "runs/old", "runs/fresh", "runs/mixed", "--out", "cmp"]);
    assert!(out.status.success(), "{}", text(&out));
    let c = json(&dir.path().join("cmp/compare.json"));
    let flips = |i: usize| (c["rows"][i]["flips"].as_u64(), c["rows"][i]["both_order_pairs"].as_u64());
    assert_ne!(flips(0), flips(1), "the two seeds flip differently: {c}");
    assert_eq!(flips(2), flips(1), "{c}");
    assert_eq!(flips(2).1, Some(15));
}

/// A run folder whose fits.jsonl is missing, empty, or holds refits of another configuration
/// only has no refits to draw: `compare` and `report` say so, naming the file (hunt 43: an empty
/// curve and a left-out boundary plot, and no word about either). Lines of another
/// configuration (another config_hash than run.json's `fit`) are skipped wherever they stand
/// (hunt 44: the last line's hash was taken for the run's).
#[test]
fn a_run_without_its_refits_is_said_by_compare_and_report() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let fair = mock_run(d, "fair", 0.0);
    let slot = mock_run(d, "slot", 100.0);
    let compare = |out: &str| {
        let o = run_bin(d, &["compare", "runs/fair", "runs/slot", "--out", out]);
        assert!(o.status.success(), "{}", text(&o));
        let svg = std::fs::read_to_string(d.join(out).join("recall_vs_spend.svg")).unwrap();
        (svg.matches("<circle").count(), stderr(&o))
    };
    let (whole, said) = compare("whole");
    assert!(whole > 0 && !said.contains("warning"), "{said}");
    let said_of = |name: &str, state: &str| {
        format!(
            "warning: runs/{name}/fits.jsonl {state} while result.json counts 30 comparisons (one line is written at each refit): no curve over the refits is drawn for this run"
        )
    };
    std::fs::remove_file(slot.join("fits.jsonl")).unwrap();
    let (fair_alone, said) = compare("fair-alone");
    assert!(said.contains(&said_of("slot", "is missing")), "{said}");
    assert!(fair_alone > 0 && fair_alone < whole, "{fair_alone} of {whole}");
    // Lines of another configuration around the run's own: the run's own are drawn.
    let own = std::fs::read_to_string(fair.join("fits.jsonl")).unwrap();
    let hash = json(&fair.join("run.json"))["fit"].as_str().unwrap().to_owned();
    assert!(own.contains(&format!("\"config_hash\":\"{hash}\"")));
    let other = own.replace(&hash, "deadbeef");
    // (Also a line of another configuration and another shape, and a byte-order mark.)
    let odd = "{\"config_hash\":\"0000000000000000\",\"comparisons\":0}\n";
    for (name, text) in [
        ("before", format!("{other}{own}")),
        ("after", format!("{own}{other}")),
        ("shape", format!("{odd}{own}")),
        ("bom", format!("\u{feff}{own}")),
    ] {
        std::fs::write(fair.join("fits.jsonl"), text).unwrap();
        let (points, said) = compare(name);
        assert_eq!(points, fair_alone, "{name}");
        assert!(!said.contains("runs/fair/"), "{said}");
    }
    // Only lines of another configuration, or none: nothing drawn, and said.
    let lines = own.lines().count();
    let foreign = format!(
        "holds no refit of this run's configuration ({lines} lines of another configuration than run.json names)"
    );
    for (text, state) in [(other.clone(), foreign.as_str()), (String::new(), "holds no refit")] {
        std::fs::write(fair.join("fits.jsonl"), text).unwrap();
        let (points, said) = compare("cut");
        assert!(said.contains(&said_of("fair", state)), "{said}");
        assert_eq!(points, 0);
    }
    let out = run_bin(d, &["report", "runs/slot", "--out", "rep"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(stderr(&out).contains(&said_of("slot", "is missing")), "{}", text(&out));
    let md = std::fs::read_to_string(d.join("rep/report.md")).unwrap();
    assert!(md.contains("runs/slot/fits.jsonl is missing while result.json counts 30 comparisons"), "{md}");
    assert!(!d.join("rep/boundary_pi.svg").exists() && d.join("rep/theta.svg").exists());
    // A line cut short before the end of the file: an error that says what to do.
    let mut cut: Vec<String> = own.lines().map(|l| format!("{l}\n")).collect();
    cut[1] = format!("{}\n", &cut[1][..40]);
    std::fs::write(fair.join("fits.jsonl"), cut.concat()).unwrap();
    let out = run_bin(d, &["compare", "runs/fair", "runs/slot", "--out", "cutmid"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        stderr(&out).contains("runs/fair/fits.jsonl: line 2: not a fit line (")
            && stderr(&out).contains(
                "a line cut short before the end of the file (a hand edit or a copy?): remove it to read the rest"
            ),
        "{}",
        text(&out)
    );
    // A fits.jsonl that is there but cannot be read is an error, not a file without refits.
    std::fs::remove_file(fair.join("fits.jsonl")).unwrap();
    std::fs::create_dir(fair.join("fits.jsonl")).unwrap();
    let out = run_bin(d, &["compare", "runs/fair", "runs/slot", "--out", "dir"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(stderr(&out).contains("runs/fair/fits.jsonl: cannot read: "), "{}", text(&out));
}

#[test]
fn compare_real_mock_runs_fair_and_slot_biased() {
    // Deterministic mocks over all 30 ordered pairs: the fair judge (no position bonus) never
    // flips and its complete, transitive verdicts give the gold top-2 (s2, s4); a judge whose slot
    // bonus dwarfs every quality gap flips on all 15 pairs.
    let dir = tempfile::tempdir().unwrap();
    let fair = mock_run(dir.path(), "fair", 0.0);
    let slot = mock_run(dir.path(), "slot", 100.0);
    let out = run_bin(dir.path(), &["compare", fair.to_str().unwrap(), slot.to_str().unwrap(), "--out", "cmp"]);
    assert!(out.status.success(), "{}", text(&out));
    let c: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("cmp/compare.json")).unwrap()).unwrap();
    let rf: RunResult = serde_json::from_str(&std::fs::read_to_string(fair.join("result.json")).unwrap()).unwrap();
    assert_eq!(rf.comparisons, 30);
    assert_eq!(c["rows"][0]["flips"], 0);
    assert_eq!(c["rows"][0]["both_order_pairs"], 15);
    assert_eq!(c["rows"][1]["flips"], 15);
    assert_eq!(c["rows"][0]["recall"], 1.0);
    assert_eq!(c["target_topk"], serde_json::json!(["s2", "s4"]));
    assert_eq!(c["rows"][0]["spend_usd"], rf.spend_usd);
    assert!(rf.spend_usd > 0.0);
}

#[test]
fn report_files_exist_parse_and_hold_the_runs_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = mock_config(dir.path(), "rep", 40, "");
    let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", text(&out));
    let run = dir.path().join("runs/rep");
    let out = run_bin(dir.path(), &["report", run.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    let r: RunResult = serde_json::from_str(&std::fs::read_to_string(run.join("result.json")).unwrap()).unwrap();
    let md = std::fs::read_to_string(run.join("report.md")).unwrap();
    // The ranking table: one row per base, θ̂ and sd as in result.json.
    let rows: Vec<Vec<String>> = md
        .lines()
        .skip_while(|l| !l.starts_with("## Ranking"))
        .filter(|l| l.starts_with("| ") && !l.starts_with("| rank"))
        .take_while(|l| !l.contains("covariate"))
        .map(|l| l.trim_matches('|').split('|').map(|c| c.trim().to_string()).collect())
        .take(r.fit.ranking.len())
        .collect();
    assert_eq!(rows.len(), r.fit.ranking.len());
    // The reported ranking (here the apparent one) leads, then what is certified, then θ̂ beside.
    assert_eq!(r.fit.reporting.reported, topk_judge::analysis::ranking::RankingKind::Apparent);
    let set = |id: &str| {
        let c = &r.fit.reporting.certified;
        if c.inside.iter().any(|x| x == id) {
            "in"
        } else if c.outside.iter().any(|x| x == id) {
            "out"
        } else {
            "?"
        }
    };
    for (row, want) in rows.iter().zip(&r.fit.ranking) {
        assert_eq!(row[1], want.id);
        assert_eq!(row[2], format!("{:.3}", want.phi));
        assert_eq!(row[4], format!("{:.3}", want.membership_apparent));
        assert_eq!(row[6], set(&want.id));
        let (lo, hi) = want.rank_interval.unwrap();
        assert_eq!(row[7], format!("{lo}–{hi}"));
        assert_eq!(row[9], format!("{:.3}", want.theta));
        assert_eq!(row[10], format!("{:.3}", want.sd));
        assert_eq!(row[11], format!("{:.3}", want.membership));
    }
    assert!(md.contains(&format!("κ̂ = {:.3} ± {:.3}", r.fit.kappa, r.fit.kappa_sd)));
    assert!(md.contains(&format!("top-3: {}", r.fit.topk.join(", "))));
    // One rendering per base: the words coefficient is prior-selected (flat profile), and the
    // report says so with the run's profile range.
    let words = md.lines().find(|l| l.starts_with("| words |")).expect("bias row");
    let ident = &r.fit.identifiability["words"];
    assert!(!ident.identified());
    assert!(words.contains(&format!("{:.3}", r.fit.c["words"])), "{words}");
    assert!(words.contains(&topk_judge::report::sweep::nats(ident.range_nats.unwrap())), "{words}");
    assert!(words.contains("prior-selected") && words.contains("Prop. 2"), "{words}");
    for f in ["theta.svg", "membership.svg", "boundary_pi.svg"] {
        assert!(run.join(f).exists(), "{f}");
        assert!(md.contains(&format!("]({f})")));
    }
    // The boundary plot follows θ̂ (fits.jsonl keeps its π): its caption says so beside the
    // reported apparent ranking, whose π it does not show (it read as if it did: hunt 39 F1).
    assert!(md.contains("π by θ̂ of the items around the top-k boundary of the bias-corrected ranking"), "{md}");
    let html = std::fs::read_to_string(run.join("report.html")).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>") && html.trim_end().ends_with("</html>"));
    assert_eq!(html.matches("<svg").count(), 3, "plots inlined");
    assert!(!html.contains("src=") && !html.contains("href="), "self-contained");
    // Three tables (spend, ranking, bias): a header row each, 1 + N + 1 body rows.
    assert_eq!(html.matches("<tr>").count(), 3 + 1 + r.fit.ranking.len() + 1);
    assert!(html.contains(&format!("<td>{:.3}</td>", r.fit.ranking[0].theta)));
    // `--out` another run's folder: refused, that run's report left as it was; its own folder
    // (by another spelling) and a new folder are fine.
    let cfg2 = mock_config(dir.path(), "other", 24, "");
    assert!(run_bin(dir.path(), &["run", cfg2.to_str().unwrap(), "--quiet"]).status.success());
    assert!(run_bin(dir.path(), &["report", "runs/other"]).status.success());
    let theirs = std::fs::read_to_string(dir.path().join("runs/other/report.md")).unwrap();
    let out = run_bin(dir.path(), &["report", "runs/rep", "--out", "runs/other"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains(
            "runs/other: --out: the folder of another run (it holds its verdicts or result), whose report this would overwrite"
        ),
        "{}",
        text(&out)
    );
    assert_eq!(std::fs::read_to_string(dir.path().join("runs/other/report.md")).unwrap(), theirs);
    assert!(run_bin(dir.path(), &["report", "runs/rep", "--out", "runs/../runs/rep"]).status.success());
    assert!(run_bin(dir.path(), &["report", "runs/rep", "--out", "rep-report"]).status.success());
    assert!(dir.path().join("rep-report/report.html").exists());
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

/// The headless Chromium this machine's CI installs (.ci/run), if present. Without it the test
/// fails when `TOPK_REQUIRE_BROWSER` is set (as in .ci/run) and is skipped otherwise.
fn chromium() -> Option<std::path::PathBuf> {
    let found =
        ["/usr/bin/chromium", "/usr/bin/chromium-browser"].iter().map(std::path::PathBuf::from).find(|p| p.exists());
    if found.is_none() {
        assert!(
            std::env::var_os("TOPK_REQUIRE_BROWSER").is_none(),
            "TOPK_REQUIRE_BROWSER is set but no chromium is installed"
        );
        eprintln!("skipped: no chromium (.ci/run installs it)");
    }
    found
}

fn headless(browser: &Path, profile: &Path, args: &[&str], page: &Path) -> std::process::Output {
    std::process::Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--enable-logging=stderr",
            "--v=0",
            "--virtual-time-budget=3000",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("chromium runs")
}

/// report.html of the shipped main job, opened in a real browser: every plot is laid out with a
/// size and drawn marks, no script error, nothing loaded from anywhere (the page's own record,
/// and no console line of a blocked or failed load), and a screenshot of it is taken.
#[test]
fn the_report_page_renders_in_a_real_browser() {
    let Some(browser) = chromium() else { return };
    let dir = tempfile::tempdir().unwrap();
    let cfg = main_job(dir.path(), "browser", "");
    let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", text(&out));
    let run = dir.path().join("runs/browser");
    let out = run_bin(dir.path(), &["report", run.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    let page = run.join("report.html");
    let out = headless(&browser, &dir.path().join("profile"), &["--dump-dom"], &page);
    let dom = stdout(&out);
    let log = String::from_utf8_lossy(&out.stderr).into_owned();
    let check = dom
        .lines()
        .find(|l| l.contains("id=\"self-check\""))
        .unwrap_or_else(|| panic!("no self-check in:\n{dom:.400}"));
    let attr = |name: &str| -> usize {
        let at =
            check.find(&format!("{name}=\"")).unwrap_or_else(|| panic!("{name} missing: {check}")) + name.len() + 2;
        check[at..].split('"').next().unwrap().parse().unwrap()
    };
    assert_eq!(attr("data-plots"), 3, "theta.svg, membership.svg, boundary_pi.svg: {check}");
    assert_eq!(attr("data-rendered"), 3, "every plot laid out with marks: {check}");
    assert_eq!(attr("data-resources"), 0, "nothing loaded: {check}");
    for bad in ["Uncaught", "Content Security Policy", "Failed to load", "ERR_"] {
        let hit: Vec<&str> = log.lines().filter(|l| l.contains("CONSOLE") && l.contains(bad)).collect();
        assert!(hit.is_empty(), "console: {hit:?}");
    }
    let shot = dir.path().join("report.png");
    let out = headless(
        &browser,
        &dir.path().join("profile2"),
        &[&format!("--screenshot={}", shot.display()), "--window-size=1200,2400"],
        &page,
    );
    let png = std::fs::read(&shot).unwrap_or_else(|e| panic!("no screenshot ({e}): {}", text(&out)));
    assert!(png.starts_with(b"\x89PNG") && png.len() > 20_000, "a screenshot of a drawn page: {} bytes", png.len());
}

/// A command's context and its error read as one line, as every other error does; a cause
/// the line already says is not repeated below it.
#[test]
fn a_commands_error_is_one_line_with_its_context() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_bin(dir.path(), &["compare", "nope"]);
    assert!(!out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "error: compare: nope/result.json: not found: give a run folder (a run writes result.json there when it stops)\n"
    );
    // A folder with a run's books but no result yet: a run stopped before its end (or running).
    write(dir.path(), "unfinished/verdicts.jsonl", "");
    let out = run_bin(dir.path(), &["compare", "unfinished"]);
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "error: compare: unfinished/result.json: not found: the run in unfinished has not finished (it was stopped before writing it, or is still running); run its config again to resume it, and it writes result.json when it stops\n"
    );
    let out = run_bin(dir.path(), &["simulate", "nope.yaml"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("error: simulate nope.yaml: cannot read config nope.yaml: "), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    // A config, a sweep file or a price table in another encoding: its line and byte.
    std::fs::write(dir.path().join("latin1.yaml"), b"name: caf\xe9\nk: 3\n").unwrap();
    for args in [&["run", "latin1.yaml"][..], &["simulate", "latin1.yaml"]] {
        let out = run_bin(dir.path(), args);
        assert!(
            stderr(&out).contains("latin1.yaml: line 1: invalid UTF-8 at byte 10 of the line (byte 0xE9)"),
            "{}",
            text(&out)
        );
    }
    std::fs::write(dir.path().join("u16.yaml"), b"\xff\xfen\x00").unwrap();
    let out = run_bin(dir.path(), &["run", "u16.yaml"]);
    assert!(stderr(&out).contains("u16.yaml: line 1: the file is UTF-16 text"), "{}", text(&out));
    // `report` of nothing, and of a file that is no config: said once, with what it takes.
    let out = run_bin(dir.path(), &["report", "nope"]);
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "error: report nope: nope: no such file or folder; give a run folder or the run's config file\n"
    );
    std::fs::write(dir.path().join("pool.jsonl"), "{\"id\": \"p01\"}\n").unwrap();
    let out = run_bin(dir.path(), &["report", "pool.jsonl"]);
    let err = String::from_utf8_lossy(&out.stderr);
    let says = "error: report pool.jsonl: pool.jsonl: not a run folder, and not a run's config file (line 1 column 2: unknown field `id`";
    assert!(err.starts_with(says), "{err}");
}

/// `compare --reference` a run that reports no top-k, and `check` with no valid verdict, have
/// nothing to measure: each says so and fails, instead of printing NaN or empty sets.
#[test]
fn nothing_to_measure_against_is_an_error_not_nan_or_an_empty_set() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = mock_config(dir.path(), "a", 24, "");
    assert!(run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet"]).status.success());
    let empty = mock_config(dir.path(), "t0", 0, "");
    assert!(run_bin(dir.path(), &["run", empty.to_str().unwrap(), "--quiet"]).status.success());
    let out = run_bin(dir.path(), &["compare", "runs/a", "--reference", "runs/t0"]);
    assert!(!out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("--reference runs/t0: that run reports no top-3 (0 of its bases named)"),
        "{}",
        text(&out)
    );
    assert!(!stdout(&out).contains("NaN"), "{}", stdout(&out));
    // Side by side, the run without a top-k has no recall and no agreement (not 0.00 or NaN).
    let out = run_bin(dir.path(), &["compare", "runs/a", "runs/t0"]);
    assert!(out.status.success(), "{}", text(&out));
    let t = stdout(&out);
    let row = t.lines().find(|l| l.starts_with("| t0 |")).unwrap();
    assert!(row.ends_with("| 0.0000 | 0 | 0 | – | no pair in both orders | none claimed |"), "{row}");
    assert!(t.contains("\n| a | 1.00 | – |\n| t0 | – | – |\n"), "{t}");
    assert!(t.contains("– : the run names fewer than 3 bases"), "{t}");
    assert!(!t.contains("NaN"), "{t}");
    // A run's result.json stands for its folder, as in `report`.
    let out = run_bin(dir.path(), &["compare", "runs/a/result.json", "runs/t0", "--out", "cmp"]);
    assert!(out.status.success(), "{}", text(&out));
    // The same table; each says which files it wrote, where.
    let table = |s: &str| s.lines().filter(|l| !l.starts_with("wrote ")).collect::<Vec<_>>().join("\n");
    assert_eq!(table(&stdout(&out)), table(&t));
    assert!(t.ends_with("\nwrote ./compare.md\nwrote ./compare.json\nwrote ./recall_vs_spend.svg\n"), "{t}");
    assert!(stdout(&out).ends_with("\nwrote cmp/compare.md\nwrote cmp/compare.json\nwrote cmp/recall_vs_spend.svg\n"));
    assert!(dir.path().join("cmp/recall_vs_spend.svg").exists() && dir.path().join("compare.md").exists());
    let out = run_bin(dir.path(), &["compare", "runs/a", "runs/a/result.json"]);
    assert_eq!(stderr(&out), "error: compare: runs/a is given twice: compare different runs, each once\n");
    // --reference-judge names one judge; two runs of it are not told apart silently, and an
    // unknown name lists the judges in words.
    let b = mock_config(dir.path(), "b", 24, "");
    assert!(run_bin(dir.path(), &["run", b.to_str().unwrap(), "--quiet"]).status.success());
    let judge = "mock (stochastic, pos_bias 0.3, verb_per_word 0.01, temperature 0.25, seed 7)";
    let out = run_bin(dir.path(), &["compare", "runs/a", "runs/b", "--reference-judge", judge]);
    assert!(!out.status.success());
    assert_eq!(
        stderr(&out),
        format!(
            "error: compare: reference judge {judge:?} judged 2 of these runs (runs/a, runs/b): give --reference RUN_FOLDER to say which is the reference\n"
        )
    );
    let out = run_bin(dir.path(), &["compare", "runs/a", "runs/b", "--reference-judge", "nope"]);
    assert_eq!(stderr(&out), format!("error: compare: no run of reference judge \"nope\"; the judges are: {judge}\n"));
    let judgments = write(dir.path(), "none.jsonl", "");
    let systems = root().join("data/summeval_systems.jsonl");
    let out = run_bin(dir.path(), &["check", systems.to_str().unwrap(), judgments.to_str().unwrap()]);
    assert!(!out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("none.jsonl: no valid verdict of these prompts"), "{}", text(&out));
}

/// A run folder or its result.json given where a config or JSON Lines are expected: each
/// command names what it takes and where that file is; `report` takes the result.json for its
/// folder.
#[test]
fn a_run_folder_or_its_result_json_in_the_wrong_place_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let run = mock_run(dir.path(), "here", 0.0);
    let err = |args: &[&str]| {
        let out = run_bin(dir.path(), args);
        assert!(!out.status.success(), "{args:?}: {}", text(&out));
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    assert_eq!(
        err(&["run", "runs/here"]),
        "error: runs/here: a folder, not a config file; this looks like a run folder: its config is runs/here/config.yaml (`topk-judge run runs/here/config.yaml` resumes the run)\n"
    );
    assert_eq!(
        err(&["run", "runs/here/result.json"]),
        "error: runs/here/result.json: a run's result.json (what a run wrote), not a config; the run's config is runs/here/config.yaml (`topk-judge run runs/here/config.yaml` resumes the run)\n"
    );
    let e = err(&["fit", "six.jsonl", "runs/here/result.json"]);
    assert!(
        e.contains("runs/here/result.json:1: this is a run's result.json (one JSON document), not JSON Lines; give what the run folder runs/here holds: its pool.jsonl or verdicts.jsonl"),
        "{e}"
    );
    let out = run_bin(dir.path(), &["report", "runs/here/result.json"]);
    assert!(out.status.success() && run.join("report.html").is_file(), "{}", text(&out));
    // A result.json that is a folder is not "not found".
    let odd = mock_run(dir.path(), "odd", 0.0);
    std::fs::remove_file(odd.join("result.json")).unwrap();
    std::fs::create_dir(odd.join("result.json")).unwrap();
    let e = err(&["report", "runs/odd"]);
    assert_eq!(
        e,
        "error: report runs/odd: runs/odd/result.json: not a file (a run writes its result there as a file when it stops): give a run folder or the run's config file\n"
    );
    let e = err(&["compare", "runs/here", "runs/odd"]);
    assert!(
        e.contains("runs/odd/result.json: not a file (a run writes its result there as a file when it stops): give a run folder\n"),
        "{e}"
    );
    // A folder whose verdicts.jsonl is gone: its flips and spend would read as none.
    let gone = mock_run(dir.path(), "gone", 0.0);
    std::fs::remove_file(gone.join("verdicts.jsonl")).unwrap();
    let n = json(&gone.join("result.json"))["comparisons"].as_u64().unwrap();
    assert!(n > 0);
    let said = format!(
        "runs/gone/verdicts.jsonl: not found, while result.json counts {n} comparisons; put the run's verdicts.jsonl back"
    );
    for args in [&["compare", "runs/here", "runs/gone"][..], &["report", "runs/gone"]] {
        let e = err(args);
        assert!(e.contains(&said), "{args:?}: {e}");
    }
    // Emptied, cut to half, or another pool's: the same refusal, with what the file holds.
    let v = std::fs::read_to_string(run.join("verdicts.jsonl")).unwrap();
    let half: String = v.lines().take(v.lines().count() / 2).map(|l| format!("{l}\n")).collect();
    let foreign = v.replace("\"pool_id\":\"six\"", "\"pool_id\":\"other\"");
    assert_ne!(foreign, v);
    for (text, holds) in [("", 0), (half.as_str(), v.lines().count() / 2), (foreign.as_str(), 0)] {
        std::fs::write(gone.join("verdicts.jsonl"), text).unwrap();
        let e = err(&["compare", "runs/here", "runs/gone"]);
        assert!(
            e.contains(&format!("runs/gone/verdicts.jsonl: holds {holds} verdicts of this run's judge and pool, while result.json counts {n} comparisons")),
            "{e}"
        );
    }
    // A torn last line (a crash while writing it): the file is there, and what repairs it is said.
    let torn = &v[..v.len() - 10];
    std::fs::write(gone.join("verdicts.jsonl"), torn).unwrap();
    for args in [&["compare", "runs/here", "runs/gone"][..], &["report", "runs/gone"]] {
        let e = err(args);
        let last = v.lines().count();
        assert!(
            e.contains(&format!("runs/gone/verdicts.jsonl: holds {} verdicts of this run's judge and pool, while result.json counts {n} comparisons: runs/gone/verdicts.jsonl:{last}: dropped a torn last line (", last - 1))
                && e.contains("; run the run's config again to repair the folder (the torn line is cut, its pair asked again and result.json written anew)"),
            "{args:?}: {e}"
        );
    }
    assert!(run_bin(dir.path(), &["run", "gone.yaml", "--quiet"]).status.success());
    let out = run_bin(dir.path(), &["report", "runs/gone"]);
    assert!(out.status.success(), "{}", text(&out));
}

/// A gold tie at the top-k boundary: report.md names the gold top-k as the members it is sure
/// A result.json whose k is more than its ranking holds, or whose ranking is empty (a hand edit
/// or damage) is an error naming the file and the field: `report` panicked on a slice out of
/// range (hunt 49), also for a judge panel's run.
#[test]
fn a_result_whose_k_or_ranking_cannot_be_a_runs_is_an_error_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let run = mock_run(d, "edited", 0.0);
    let original = std::fs::read_to_string(run.join("result.json")).unwrap();
    let said = |edit: &dyn Fn(&mut serde_json::Value)| {
        let mut r: serde_json::Value = serde_json::from_str(&original).unwrap();
        edit(&mut r);
        std::fs::write(run.join("result.json"), r.to_string()).unwrap();
        let mut out = Vec::new();
        for cmd in ["report", "compare"] {
            let o = run_bin(d, &[cmd, "runs/edited"]);
            assert_eq!(o.status.code(), Some(1), "{cmd}: {}", text(&o));
            out.push(stderr(&o));
        }
        out
    };
    for e in said(&|r| r["k"] = 20.into()) {
        assert!(
            e.contains("runs/edited/result.json: `k` is 20 but `ranking` holds 6 bases: k must satisfy 1 ≤ k < 6"),
            "{e}"
        );
    }
    // k = N: a run needs k < N (hunt 59 F4: a "top-6" of six was reported).
    for e in said(&|r| r["k"] = 6.into()) {
        assert!(e.contains("`k` is 6 but `ranking` holds 6 bases: k must satisfy 1 ≤ k < 6"), "{e}");
    }
    // Values no fit gives, printed as they were (hunt 59 F4): a recall of 5, π of 1.7, sd −0.5,
    // a top-k naming a base the pool lacks, a certified top-2 of the two worst bases.
    let again = "(the result was edited or damaged; run the config again to write it anew)";
    for e in said(&|r| r["recall_at_k"] = 5.into()) {
        assert!(e.contains(&format!("`recall_at_k` is 5: a probability or recall lies in [0, 1] {again}")), "{e}");
    }
    for e in said(&|r| r["ranking"][1]["membership_apparent"] = 1.7.into()) {
        assert!(e.contains("`ranking[1].membership_apparent` is 1.7: a probability or recall lies in [0, 1]"), "{e}");
    }
    for e in said(&|r| r["ranking"][0]["sd"] = (-0.5).into()) {
        assert!(e.contains(&format!("`ranking[0].sd` is -0.5: a posterior sd is finite and ≥ 0 {again}")), "{e}");
    }
    for e in said(&|r| r["topk"][0] = "ZZ".into()) {
        assert!(e.contains(&format!("`topk` names \"ZZ\", which `ranking` does not hold {again}")), "{e}");
    }
    let worst: Vec<serde_json::Value> = {
        let r: serde_json::Value = serde_json::from_str(&original).unwrap();
        r["ranking"].as_array().unwrap()[4..].iter().map(|x| x["id"].clone()).collect()
    };
    let last = worst[0].as_str().unwrap().to_owned();
    for e in said(&|r| {
        r["certified"]["in"] = serde_json::Value::Array(worst.clone());
        r["certified"]["claimed"] = true.into();
    }) {
        assert!(
            e.contains(&format!(
                "`certified.in` names \"{last}\", whose top-2 membership π is below 1 − ε = 0.95 in both rankings {again}"
            )),
            "{e}"
        );
    }
    for e in said(&|r| {
        r["certified"]["in"] = serde_json::json!([]);
        r["certified"]["claimed"] = true.into();
    }) {
        assert!(
            e.contains("`certified.claimed` is true with 0 bases in `certified.in`: a certified top-2 has 2"),
            "{e}"
        );
    }
    for e in said(&|r| r["k"] = 0.into()) {
        assert!(e.contains("`k` is 0 but `ranking` holds 6 bases"), "{e}");
    }
    for e in said(&|r| r["ranking"] = serde_json::json!([])) {
        assert!(e.contains("runs/edited/result.json: `ranking` is empty"), "{e}");
    }
    for e in said(&|r| r["ranking"][2]["rank"] = 7.into()) {
        assert!(e.contains("`ranking[2]` (\"s0\") has a rank outside 1 … 6 (rank 7"), "{e}");
    }
    // The run's own result reads.
    std::fs::write(run.join("result.json"), &original).unwrap();
    let o = run_bin(d, &["report", "runs/edited"]);
    assert!(o.status.success(), "{}", text(&o));
    // A panel's result.
    let cfg = shipped(d, "panel.yaml", |y| y);
    let out = run_bin(d, &["run", cfg.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", text(&out));
    let rp = d.join("runs/summeval-panel/result.json");
    let panel = std::fs::read_to_string(&rp).unwrap();
    // Its own result reads, by both commands.
    for cmd in ["report", "compare"] {
        let o = run_bin(d, &[cmd, "runs/summeval-panel"]);
        assert!(o.status.success(), "{cmd}: {}", text(&o));
    }
    // Values no panel run writes (hunt 60 F5: π 1.5, a negative spend, an unknown base).
    type Edit<'a> = (&'a dyn Fn(&mut serde_json::Value), &'a str);
    let edits: [Edit; 4] = [
        (
            &|r| r["fit"]["membership"][0] = 1.5.into(),
            "`fit.membership[0]` is 1.5: a probability, recall or rate lies in [0, 1]",
        ),
        (
            &|r| r["judges"][0]["spend_usd"] = (-4.97).into(),
            "`judges[0].spend_usd` is -4.97: an sd or a spend is finite and ≥ 0",
        ),
        (&|r| r["topk"][1] = "ZZZ".into(), "`topk` names \"ZZZ\", which `fit.bases` does not hold"),
        (&|r| r["fit"]["sd"][2] = (-1.0).into(), "`fit.sd[2]` is -1: an sd or a spend is finite and ≥ 0"),
    ];
    for (edit, want) in edits {
        let mut r: serde_json::Value = serde_json::from_str(&panel).unwrap();
        edit(&mut r);
        std::fs::write(&rp, r.to_string()).unwrap();
        for cmd in ["report", "compare"] {
            let o = run_bin(d, &[cmd, "runs/summeval-panel"]);
            assert_eq!(o.status.code(), Some(1), "{cmd} {want}: {}", text(&o));
            assert!(stderr(&o).contains(want), "{cmd}: {}", text(&o));
        }
    }
    let mut r: serde_json::Value = serde_json::from_str(&panel).unwrap();
    r["fit"]["k"] = 17.into();
    std::fs::write(&rp, r.to_string()).unwrap();
    let o = run_bin(d, &["report", "runs/summeval-panel"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        stderr(&o).contains("runs/summeval-panel/result.json: fit: `k` is 17 but `bases` holds 16: k must satisfy 1 ≤ k ≤ the bases ranked"),
        "{}",
        text(&o)
    );
}

/// of, then the tie sharing its places (it named one arbitrary set, i0, i1, i2).
#[test]
fn a_reports_gold_top_k_names_a_tie_at_its_boundary() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let long: Vec<&str> = std::iter::repeat_n("w", 52).collect();
    write(
        d,
        "tie.jsonl",
        &format!(
            "{{\"pool_id\": \"t\", \"items\": [{{\"id\": \"i0\", \"quality\": 5, \"text\": \"x\"}}, {{\"id\": \"i1\", \"quality\": 4, \"text\": \"x y\"}}, {{\"id\": \"i2\", \"quality\": 3, \"text\": \"a b c\"}}, {{\"id\": \"i3\", \"quality\": 3, \"text\": \"{}\"}}, {{\"id\": \"i4\", \"quality\": 1, \"text\": \"z\"}}]}}\n",
            long.join(" ")
        ),
    );
    let cfg = write(
        d,
        "tie.yaml",
        "name: tie\nout_dir: runs\npool: {file: tie.jsonl}\nk: 3\njudge: {mock: {seed: 3}}\nmodel: {kind: naive}\nbudget: {max_comparisons: 20}\n",
    );
    let out = run_bin(d, &["run", cfg.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(stdout(&out).contains("point top-3: i0, i1, i3\nrecall@3 against gold: 1.00\n"), "{}", stdout(&out));
    assert!(run_bin(d, &["report", "runs/tie"]).status.success());
    let md = std::fs::read_to_string(d.join("runs/tie/report.md")).unwrap();
    assert!(
        md.contains(
            "- top-3: i0, i1, i3; recall@3 against the gold top-3 (i0, i1, then i3 = i2 sharing 1 place): 1.00"
        ),
        "{md}"
    );
}

/// A gold tie at the top-k boundary (qualities 5, 3, 3, 3, 1 with k = 3: i1, i2, i3 share 2
/// places) counts alike for a single judge and a panel, in `run`, result.json, report.md and
/// `compare`: both runs' top-3 hold i0 and two of the tie, so recall@3 = 1. Before, `compare`
/// measured 2/3 against the point gold top-3 (i0, i1, i2), and the panel named that point
/// top-3 as the gold one, with no tie marked.
#[test]
fn a_gold_tie_counts_alike_for_a_judge_and_a_panel_in_every_output() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let item = |i: usize, q: u32| format!(r#"{{"id": "i{i}", "text": "{}", "quality": {q}}}"#, "word ".repeat(5 + i));
    let items: Vec<String> = [5, 3, 3, 3, 1].iter().enumerate().map(|(i, &q)| item(i, q)).collect();
    write(d, "tie.jsonl", &format!(r#"{{"pool_id": "p1", "task": "t", "items": [{}]}}"#, items.join(", ")));
    write(
        d,
        "single.yaml",
        "name: single\npool: {file: tie.jsonl}\nk: 3\njudge: {mock: {mode: stochastic, pos_bias: 0.1, verb_per_word: 0, temperature: 0.5, seed: 1}}\nmodel: {kind: bias_aware}\nbudget: {max_comparisons: 40}\nreport_ranking: corrected\n",
    );
    write(
        d,
        "panel.yaml",
        "name: panel\npool: {file: tie.jsonl}\nk: 3\njudges:\n  - name: a\n    mock: {mode: stochastic, seed: 2, input_usd_per_mtok: 0.15, output_usd_per_mtok: 0.60}\n  - name: b\n    trusted: true\n    mock: {mode: stochastic, seed: 52, pos_bias: 0, verb_per_word: 0, temperature: 0.15, input_usd_per_mtok: 2.5, output_usd_per_mtok: 10}\nbudget: {max_comparisons: 40}\n",
    );
    let single = run_bin(d, &["run", "single.yaml"]);
    assert!(single.status.success(), "{}", text(&single));
    assert!(stdout(&single).contains("point top-3 (corrected, reported): i3, i0, i2\n"), "{}", text(&single));
    assert!(stdout(&single).contains("recall@3 against gold: 1.00"), "{}", text(&single));
    let panel = run_bin(d, &["run", "panel.yaml"]);
    assert!(panel.status.success(), "{}", text(&panel));
    let p = stdout(&panel);
    assert!(p.contains("top-3 by θ̂: i0, i3, i2; recall@3 against the pool's gold quality 1.00\n"), "{p}");
    assert!(
        p.contains("gold top-3: i0, then i1 = i2 = i3 sharing 2 places (a tie in gold quality at its boundary: recall@3 counts any of them)\n"),
        "{p}"
    );
    let r = json(&d.join("runs/panel/result.json"));
    assert_eq!(strs(&r["gold_tied"]), ["i1", "i2", "i3"]);
    assert_eq!(r["recall_at_k"], 1.0);
    // The panel's report names the tie and marks each member.
    let rep = run_bin(d, &["report", "runs/panel"]);
    assert!(rep.status.success(), "{}", text(&rep));
    let md = std::fs::read_to_string(d.join("runs/panel/report.md")).unwrap();
    assert!(md.contains("against the gold top-3 (i0, then i1 = i2 = i3 sharing 2 places): 1.00"), "{md}");
    assert_eq!(md.lines().filter(|l| l.starts_with("| ") && l.ends_with(" | = |")).count(), 3, "{md}");
    // compare: both rows at 1.00, against the tie.
    let cmp = run_bin(d, &["compare", "runs/single", "runs/panel", "--out", "cmp"]);
    assert!(cmp.status.success(), "{}", text(&cmp));
    let c = json(&d.join("cmp/compare.json"));
    assert_eq!((c["rows"][0]["recall"].as_f64(), c["rows"][1]["recall"].as_f64()), (Some(1.0), Some(1.0)), "{c}");
    assert_eq!(strs(&c["target_tied"]).len(), 3, "{c}");
    let md = std::fs::read_to_string(d.join("cmp/compare.md")).unwrap();
    assert!(md.contains("Recall@3 is measured against the gold top-3: i0, then i3 = i2 = i1 sharing 2 places (a tie in gold quality: any of them counts).\n"), "{md}");
}

/// A panel run's torn panel_fits.jsonl is said as torn, as a single judge's fits.jsonl is, before
/// the report says it has no refit to draw (hunt 44: "holds no refit" alone).
#[test]
fn a_torn_panel_fits_file_is_said_as_torn() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cfg = shipped(d, "panel.yaml", |y| y);
    let out = run_bin(d, &["run", cfg.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", text(&out));
    let fits = d.join("runs/summeval-panel/panel_fits.jsonl");
    let text0 = std::fs::read_to_string(&fits).unwrap();
    std::fs::write(&fits, &text0[..30]).unwrap();
    let out = run_bin(d, &["report", "runs/summeval-panel", "--out", "rep"]);
    assert!(out.status.success(), "{}", text(&out));
    let said = stderr(&out);
    assert!(said.contains("runs/summeval-panel/panel_fits.jsonl:1: ignored a torn last line"), "{said}");
    assert!(said.contains("runs/summeval-panel/panel_fits.jsonl holds no refit while result.json counts "), "{said}");
    // Lines of another panel configuration are skipped wherever they stand; with none of the
    // run's own left, said (hunt 45: the last line's configuration was taken for the run's).
    let own = json(&d.join("runs/summeval-panel/run.json"));
    let id = topk_judge::report::panel_fits_id(own["fit"].as_str().unwrap(), own["judge"].as_str().unwrap());
    assert!(text0.lines().all(|l| l.contains(&format!("\"config\":\"{id}\""))), "{text0}");
    let other = text0.replace(&id, "0000000000000000");
    let report = || {
        let out = run_bin(d, &["report", "runs/summeval-panel", "--out", "rep"]);
        assert!(out.status.success(), "{}", text(&out));
        let svg = std::fs::read_to_string(d.join("rep/recall_vs_spend.svg")).unwrap_or_default();
        (stderr(&out), svg.matches("<circle").count())
    };
    std::fs::write(&fits, &text0).unwrap();
    let (_, whole) = report();
    assert_eq!(whole, text0.lines().count());
    std::fs::write(&fits, format!("{text0}{}\n", other.lines().last().unwrap())).unwrap();
    let (said, points) = report();
    assert!(!said.contains("panel_fits.jsonl"), "{said}");
    assert_eq!(points, whole);
    std::fs::write(&fits, &other).unwrap();
    let (said, points) = report();
    assert_eq!(points, 0);
    let n = text0.lines().count();
    assert!(
        said.contains(&format!("runs/summeval-panel/panel_fits.jsonl holds no refit of this run's configuration ({n} lines of another configuration than run.json names)")),
        "{said}"
    );
}

/// A run stopped after 2 comparisons ranks 14 bases by the prior alone: `report` and `compare`
/// mark its top-3's bases never compared and say its recall is the prior's guess, as the run's
/// summary does (hunt 59 F2: both printed the top-3 and its recall 0.00 as measured).
#[test]
fn report_and_compare_say_a_top_k_never_compared_is_the_priors_guess() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cfg = main_job(d, "two", "");
    let out = run_bin(d, &["run", cfg.to_str().unwrap(), "--quiet", "--max-comparisons", "2"]);
    assert!(out.status.success(), "{}", text(&out));
    let said = "recall@3 against gold: 0.00 (none of the top-3 was compared: the prior's guess, not a result)";
    assert!(stdout(&out).contains(said), "{}", stdout(&out));
    assert!(run_bin(d, &["report", "runs/two"]).status.success());
    let md = std::fs::read_to_string(d.join("runs/two/report.md")).unwrap();
    assert!(
        md.contains("- reported (apparent) top-3: M1 (never compared), M2 (never compared), M5 (never compared); recall@3 against the gold top-3 (M13, M12, M0): 0.00 (none of the top-3 was compared: the prior's guess, not a result)"),
        "{md}"
    );
    let out = run_bin(d, &["compare", "runs/two", "--out", "cmp"]);
    assert!(out.status.success(), "{}", text(&out));
    let md = std::fs::read_to_string(d.join("cmp/compare.md")).unwrap();
    assert!(
        md.contains("| 2 | 2 | 0.00 † | 0/1 = 0.00 | M1 (never compared), M2 (never compared), M5 (never compared) |"),
        "{md}"
    );
    assert!(
        md.contains(
            "† two: 3 of its top-3 never compared (M1, M2, M5): its recall is the prior's guess, not a result."
        ),
        "{md}"
    );
    let json = json(&d.join("cmp/compare.json"));
    assert_eq!(strs(&json["rows"][0]["never_compared"]), ["M1", "M2", "M5"]);
}

/// `report --out DIR` into a folder that holds another run's report refuses to replace it;
/// the same run's report there is written anew (hunt 59 F5: run A's report was replaced unsaid).
#[test]
fn report_out_does_not_replace_another_runs_report() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    mock_run(d, "A", 0.0);
    mock_run(d, "B", 0.5);
    assert!(run_bin(d, &["report", "runs/A", "--out", "shared"]).status.success());
    let before = std::fs::read_to_string(d.join("shared/report.md")).unwrap();
    let o = run_bin(d, &["report", "runs/B", "--out", "shared"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        stderr(&o).contains("shared: --out: holds the report of run `A` (report.md, report.html and its plots), which the report of run `B` would replace; give each run's report a folder of its own, or remove that one first"),
        "{}",
        text(&o)
    );
    assert_eq!(std::fs::read_to_string(d.join("shared/report.md")).unwrap(), before);
    assert!(run_bin(d, &["report", "runs/A", "--out", "shared"]).status.success());
}

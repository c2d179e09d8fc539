//! `topk-judge audit` end to end: the tutorial reproduction (exact numbers, audit.json, free
//! re-runs), the two ablations, probes built from a pool, and config errors.

use crate::common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// An audit config on the shipped tutorial pairs file with the deterministic mock judge.
fn tutorial_config(dir: &Path, name: &str, pos_bias: f64, verb_per_word: f64) -> PathBuf {
    let yaml = format!(
        "name: {name}\nout_dir: runs\njudge:\n  mock: {{mode: deterministic, pos_bias: {pos_bias}, verb_per_word: {verb_per_word}}}\npairs: {}\n",
        root().join("data/tutorial_pairs.jsonl").display()
    );
    write(dir, &format!("{name}.yaml"), &yaml)
}

fn audit_json(dir: &Path, name: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("runs").join(name).join("audit.json")).unwrap()).unwrap()
}

#[test]
fn tutorial_audit_reproduces_the_tutorial_and_reruns_for_free() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = tutorial_config(dir.path(), "tutorial", 1.0, 0.02);
    let out = run_bin(dir.path(), &["audit", cfg.to_str().unwrap()]);
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    // The tutorial's printed numbers (docs/model.md §4).
    for s in [
        " p01       (5,40)       (6,20)      X      Y   YES     Y",
        "position-bias rate = flips / pairs = 7/12 = 0.58",
        "    q02       20       45       Y       Y",
        "verbosity-bias rate = longer-wins / pairs = 5/5 = 1.00",
        "naive judge (X always first):  disagreement with truth = 5/12 = 0.42",
        "corrected (both orders avg):   disagreement with truth = 1/12 = 0.08",
        "corrected position-bias rate:  0/12 = 0.00",
        "not fixed by order averaging: p11\n",
        "queries: 34 (34 new, 0 cached, 0 failed)",
    ] {
        assert!(t.contains(s), "{s:?} missing from\n{t}");
    }
    let j = audit_json(dir.path(), "tutorial");
    assert_eq!(j["position"]["flips"]["count"], 7.0);
    assert_eq!(j["position"]["flips"]["n"], 12);
    assert_eq!(j["verbosity"]["longer_wins"]["count"], 5.0);
    assert_eq!(j["averaging"]["naive_disagreement"]["count"], 5.0);
    assert_eq!(j["averaging"]["averaged_disagreement"]["count"], 1.0);
    assert_eq!(j["averaging"]["averaged_flips"]["count"], 0.0);
    assert_eq!(j["averaging"]["survivors"][0]["id"], "p11");
    assert_eq!(j["rows"].as_array().unwrap().len(), 17);
    // The 95% Wilson interval of 7/12 brackets the rate.
    let (lo, hi) = (j["position"]["flips"]["lo"].as_f64().unwrap(), j["position"]["flips"]["hi"].as_f64().unwrap());
    assert!(lo < 7.0 / 12.0 && 7.0 / 12.0 < hi && lo > 0.3 && hi < 0.82, "{lo} {hi}");
    let verdicts = dir.path().join("runs/tutorial/verdicts.jsonl");
    assert_eq!(std::fs::read_to_string(&verdicts).unwrap().lines().count(), 34);

    // Re-running sends no query: every verdict comes from the cache, the report is unchanged.
    let out = run_bin(dir.path(), &["audit", cfg.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("queries: 34 (0 new, 34 cached, 0 failed)"), "{}", text(&out));
    assert_eq!(std::fs::read_to_string(&verdicts).unwrap().lines().count(), 34);
    let again = audit_json(dir.path(), "tutorial");
    assert_eq!(again["rows"], j["rows"]);
    assert_eq!(again["averaging"], j["averaging"]);

    // A comparison limit keeps the rest unsent, and the line names that limit.
    let cfg = tutorial_config(dir.path(), "capped", 1.0, 0.02);
    let out = run_bin(dir.path(), &["audit", cfg.to_str().unwrap(), "--max-comparisons", "3"]);
    let says = "queries: 34 (3 new, 0 cached, 0 failed, 31 not sent: budget.max_comparisons reached)";
    assert!(text(&out).contains(says), "{}", text(&out));
    assert_eq!(audit_json(dir.path(), "capped")["queries"]["unsent_because"], "budget.max_comparisons");

    // A priced judge whose books pass a lowered max_usd: the cached audit is read, as it costs
    // nothing (it was refused: "needs 0 new queries with a worst-case cost of $-0.0000").
    let priced = write(
        dir.path(),
        "priced.yaml",
        &format!(
            "name: priced\nout_dir: runs\njudge:\n  mock: {{mode: deterministic, pos_bias: 1.0, verb_per_word: 0.02, input_usd_per_mtok: 100, output_usd_per_mtok: 100}}\npairs: {}\n",
            root().join("data/tutorial_pairs.jsonl").display()
        ),
    );
    let out = run_bin(dir.path(), &["audit", priced.to_str().unwrap(), "--max-usd", "1"]);
    assert!(out.status.success() && text(&out).contains("(34 new, 0 cached, 0 failed)"), "{}", text(&out));
    let out = run_bin(dir.path(), &["audit", priced.to_str().unwrap(), "--max-usd", "0.001"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("queries: 34 (0 new, 34 cached, 0 failed)"), "{}", text(&out));
}

#[test]
fn ablations_remove_flips_and_the_verbosity_survivor() {
    let dir = tempfile::tempdir().unwrap();
    // POS_BIAS = 0: no verdict flips.
    let cfg = tutorial_config(dir.path(), "no-pos", 0.0, 0.02);
    let out = run_bin(dir.path(), &["audit", cfg.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("position-bias rate = flips / pairs = 0/12 = 0.00"), "{}", text(&out));
    assert_eq!(audit_json(dir.path(), "no-pos")["position"]["flips"]["count"], 0.0);
    // VERB_PER_WORD = 0: the order-averaged verdict never disagrees with the truth.
    let cfg = tutorial_config(dir.path(), "no-verb", 1.0, 0.0);
    let out = run_bin(dir.path(), &["audit", cfg.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("disagreement with truth = 0/12 = 0.00"), "{}", text(&out));
    assert!(text(&out).contains("not fixed by order averaging: none"), "{}", text(&out));
    let j = audit_json(dir.path(), "no-verb");
    assert_eq!(j["averaging"]["averaged_disagreement"]["count"], 0.0);
    assert_eq!(j["averaging"]["survivors"].as_array().unwrap().len(), 0);
}

#[test]
fn pool_probes_are_saved_reusable_and_flagged_as_assuming_equal_quality() {
    let dir = tempfile::tempdir().unwrap();
    let yaml = format!(
        "name: probes\nout_dir: runs\njudge:\n  mock: {{mode: stochastic, pos_bias: 0.3, verb_per_word: 0.01, seed: 7}}\npool:\n  file: {}\n  id: dm-test-2377095dda83df778e34304b7a09813808105d3b\n  transform: markdown\n  max_items: 6\n  pairs: 5\n  seed: 1\n",
        summeval().display()
    );
    let cfg = write(dir.path(), "probes.yaml", &yaml);
    let out = run_bin(dir.path(), &["audit", cfg.to_str().unwrap()]);
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    assert!(t.contains("ASSUME the two are of equal quality"), "{t}");
    assert!(t.contains("rendering-bias rate = rendered-wins / pairs ="), "{t}");
    assert!(t.contains("queries: 22 (22 new"), "{t}");
    let probes = dir.path().join("runs/probes/probes.jsonl");
    let lines: Vec<Value> =
        std::fs::read_to_string(&probes).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 11, "5 pairs + 6 probes");
    let probe = lines.iter().find(|l| l["kind"] == "probe").unwrap();
    assert_eq!(probe["y"]["rendering"], "markdown");
    assert_eq!(probe["x"]["quality"], probe["y"]["quality"]);
    assert!(probe["y"]["text"].as_str().unwrap().starts_with("**"));

    // probes.jsonl is itself a pairs file: auditing it with the same judge reuses nothing from
    // the other run's folder but gives the same verdicts (keyed by pair, items and judge).
    let yaml2 = format!(
        "name: again\nout_dir: runs\njudge:\n  mock: {{mode: stochastic, pos_bias: 0.3, verb_per_word: 0.01, seed: 7}}\npairs: {}\n",
        probes.display()
    );
    let cfg2 = write(dir.path(), "again.yaml", &yaml2);
    let out = run_bin(dir.path(), &["audit", cfg2.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    let (a, b) = (audit_json(dir.path(), "probes"), audit_json(dir.path(), "again"));
    assert_eq!(a["position"], b["position"]);
    assert_eq!(a["verbosity"], b["verbosity"]);
}

#[test]
fn bad_configs_name_the_key_or_line() {
    let dir = tempfile::tempdir().unwrap();
    let pairs =
        write(dir.path(), "bad.jsonl", "{\"id\":\"a\",\"x\":{\"quality\":1,\"words\":3},\"y\":{\"quality\":2}}\n");
    let cfg = write(dir.path(), "bad.yaml", &format!("name: bad\njudge: {{mock: {{}}}}\npairs: {}\n", pairs.display()));
    let out = run_bin(dir.path(), &["audit", cfg.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(text(&out).contains("bad.jsonl:1: pair \"a\": y: needs \"text\" or \"words\""), "{}", text(&out));
    let cfg = write(dir.path(), "bad2.yaml", "name: bad\njudge: {mock: {}}\npairs: p.jsonl\ntransform: markdown\n");
    let out = run_bin(dir.path(), &["audit", cfg.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(text(&out).contains("transform"), "{}", text(&out));
    // A pairs file that is not there: the config and its `pairs` field are named.
    let cfg = write(dir.path(), "bad3.yaml", "name: bad\njudge: {mock: {}}\npairs: nope.jsonl\n");
    let out = run_bin(dir.path(), &["audit", cfg.to_str().unwrap()]);
    assert!(!out.status.success());
    let t = text(&out);
    assert!(t.contains("bad3.yaml") && t.contains("pairs") && t.contains("cannot read the pairs file"), "{t}");
    assert!(t.contains("nope.jsonl"), "{t}");
    // Probes of no item: the key and what was expected, not an empty reason.
    let cfg = write(
        dir.path(),
        "bad4.yaml",
        &format!(
            "name: bad\njudge: {{mock: {{}}}}\npool: {{file: {}, transform: markdown, max_items: 0}}\n",
            summeval().display()
        ),
    );
    let out = run_bin(dir.path(), &["audit", cfg.to_str().unwrap()]);
    assert!(
        text(&out).contains("pool.max_items: 0 takes no item; expected the number of items to probe (≥ 1)"),
        "{}",
        text(&out)
    );
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
    let yaml = "name: a\nout_dir: runs\njudge:\n  openai:\n    base_url: http://127.0.0.1:9/v1\n    model: fake-judge\n    prompt: prompt.j2\n    max_tokens: 8\n    api_key_env: TOPK_JUDGE_TEST_UNSET_KEY_VAR\n    api_key_required: false\n    price: {input_usd_per_mtok: 1.0, output_usd_per_mtok: 2.0}\npairs: pairs.jsonl\nbudget: unlimited\n";
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

/// `audit --fail-on`: the tutorial's position-bias rate is 7/12 = 0.58, so `flip_rate>0.3`
/// fails the check (exit 1, the threshold named) and `flip_rate>0.6` passes (exit 0); the
/// first-shown answer wins 19 of the 24 verdicts (10 X-first, 9 Y-first) = 0.79; the longer
/// answer wins 5 of 5 probes.
#[test]
fn fail_on_thresholds_give_the_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = tutorial_config(dir.path(), "ci", 1.0, 0.02);
    let c = cfg.to_str().unwrap();
    let out = run_bin(dir.path(), &["audit", c, "--quiet", "--fail-on", "flip_rate>0.3"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(stderr(&out).contains("fail-on: flip_rate = 0.5833 passes the threshold flip_rate>0.3"), "{}", text(&out));
    let out = run_bin(dir.path(), &["audit", c, "--quiet", "--fail-on", "flip_rate>0.6"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let out =
        run_bin(dir.path(), &["audit", c, "--quiet", "--fail-on", "flip_rate>0.6,first_shown>0.75,longer_wins>=1"]);
    assert_eq!(out.status.code(), Some(1));
    let e = stderr(&out);
    assert!(e.contains("first_shown = 0.7917 passes the threshold first_shown>0.75"), "{e}");
    assert!(e.contains("longer_wins = 1 passes the threshold longer_wins>=1"), "{e}");
    assert!(!e.contains("flip_rate ="), "{e}");
    // A value that rounds onto its limit is shown in full (hunt 59 F7: "0.5833 passes >0.5833").
    let out = run_bin(dir.path(), &["audit", c, "--quiet", "--fail-on", "flip_rate>0.5833"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("flip_rate = 0.5833333333333334 passes the threshold flip_rate>0.5833"),
        "{}",
        text(&out)
    );
    // A threshold that cannot be read is a usage error naming the part.
    let out = run_bin(dir.path(), &["audit", c, "--fail-on", "flips>0.2"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("unknown metric \"flips\"; expected one of flip_rate, first_shown"),
        "{}",
        text(&out)
    );
}

/// A run config given to `audit` is named as one, not by the first field the audit misses.
#[test]
fn a_run_config_given_to_audit_is_named_as_one() {
    let out = run_bin(&root(), &["audit", "configs/mock.yaml"]);
    assert!(!out.status.success());
    assert!(
        text(&out).contains("configs/mock.yaml: this is a run config (it has `k`, `model`, `acquisition`): `topk-judge audit` takes an audit config"),
        "{}",
        text(&out)
    );
}

/// A pairs file saved with a UTF-8 byte-order mark (as some editors do) is read like one without.
#[test]
fn a_pairs_file_with_a_byte_order_mark_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let plain = std::fs::read_to_string(root().join("data/tutorial_pairs.jsonl")).unwrap();
    let bom = write(dir.path(), "bom.jsonl", &format!("\u{feff}{plain}"));
    let cfg = write(
        dir.path(),
        "b.yaml",
        &format!(
            "name: b\nout_dir: runs\njudge:\n  mock: {{mode: deterministic, pos_bias: 1.0, verb_per_word: 0.02}}\npairs: {}\n",
            bom.display()
        ),
    );
    let out = run_bin(dir.path(), &["audit", cfg.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        audit_json(dir.path(), "b")["queries"]["total"],
        plain.lines().filter(|l| !l.trim().is_empty()).count() * 2
    );
}

//! The judge fingerprint (docs/live.md, "Judge fingerprint") against the in-process fake
//! OpenAI server: a judge that flips its preference behind the same name is stopped with the
//! changed pairs named, one that jitters within its noise passes, `--judge-changed new` and
//! `accept` go on (recorded), and the check's cost is booked against the folder.

use crate::common::fake_openai::{FakeOpenAi, TEMPLATE, fixed_usage, longer_wins};
use crate::common::*;
use serde_json::Value;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

const POOL_ID: &str = "dm-test-2377095dda83df778e34304b7a09813808105d3b";

type Flips = Arc<Mutex<HashSet<(String, String)>>>;

/// A fake judge: the longer answer wins, except on the ordered pairs (A text, B text) in `flips`.
fn server(flips: &Flips) -> FakeOpenAi {
    let f = flips.clone();
    FakeOpenAi::start_with(
        Box::new(move |a: &str, b: &str| {
            let v = longer_wins(a, b);
            if f.lock().unwrap().contains(&(a.to_string(), b.to_string())) {
                if v == "[[A]]" { "[[B]]".into() } else { "[[A]]".into() }
            } else {
                v
            }
        }),
        Box::new(fixed_usage),
    )
}

fn config(dir: &Path, out: &str, base_url: &str) -> PathBuf {
    write(dir, "prompts/test.j2", TEMPLATE);
    let yaml = format!(
        "name: fp\nout_dir: {out}\npool:\n  file: {pool}\n  id: {POOL_ID}\nk: 3\njudge:\n  openai:\n    base_url: {base_url}\n    model: fake-judge\n    prompt: prompts/test.j2\n    max_tokens: 8\n    api_key_env: TOPK_FP_UNSET_KEY\n    api_key_required: false\n    price: {{input_usd_per_mtok: 1.0, output_usd_per_mtok: 2.0}}\nacquisition:\n  seed: 3\n  mc_draws: 200\nbudget:\n  max_comparisons: 32\n  max_usd: 1.0\n",
        pool = summeval().display()
    );
    write(dir, &format!("{out}.yaml"), &yaml)
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        if p.is_file() {
            std::fs::copy(&p, to.join(p.file_name().unwrap())).unwrap();
        }
    }
}

fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn run(dir: &Path, cfg: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["run", cfg.to_str().unwrap(), "--quiet"];
    args.extend(extra);
    run_bin(dir, &args)
}

/// A judge that never flips, a temporary folder, and a first run there of at most
/// `max_comparisons` (its config returned).
fn first_run(max_comparisons: &str) -> (FakeOpenAi, tempfile::TempDir, PathBuf) {
    let fake = server(&Flips::default());
    let dir = tempfile::tempdir().unwrap();
    let a = config(dir.path(), "a", &fake.base_url);
    let out = run(dir.path(), &a, &["--max-comparisons", max_comparisons]);
    assert!(out.status.success(), "{}", text(&out));
    (fake, dir, a)
}

/// The texts of an item of the pool.
fn texts() -> std::collections::HashMap<String, String> {
    let text = std::fs::read_to_string(summeval()).unwrap();
    let pool: Value =
        text.lines().map(|l| serde_json::from_str::<Value>(l).unwrap()).find(|p| p["pool_id"] == POOL_ID).unwrap();
    pool["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| (i["id"].as_str().unwrap().into(), i["text"].as_str().unwrap().into()))
        .collect()
}

#[test]
fn a_judge_that_changed_behind_its_name_is_stopped_and_the_user_decides() {
    let flips: Flips = Arc::default();
    let fake = server(&flips);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // A first run stores 24 verdicts (a fresh run checks nothing: its verdicts are the reference).
    let a = config(d, "a", &fake.base_url);
    let out = run(d, &a, &["--max-comparisons", "24"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(!d.join("a/fp/fingerprint.jsonl").exists());
    for copy in ["b", "c", "j"] {
        copy_dir(&d.join("a/fp"), &d.join(copy).join("fp"));
    }
    // The same judge, resumed: 8 stored verdicts asked again, none changed, the run goes on.
    let out = run(d, &a, &[]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(stdout(&out).contains("judge fingerprint: 0 of 8 re-asked stored verdicts changed"), "{}", text(&out));
    let checks = lines(&d.join("a/fp/fingerprint.jsonl"));
    assert_eq!((checks.len(), checks[0]["decision"].as_str()), (1, Some("passed")));
    // Its cost is booked in the fingerprint books and counted in the folder's spend.
    let fp_cost: f64 =
        lines(&d.join("a/fp/fingerprint_verdicts.jsonl")).iter().map(|r| r["cost_usd"].as_f64().unwrap()).sum();
    let run_cost: f64 = lines(&d.join("a/fp/verdicts.jsonl")).iter().map(|r| r["cost_usd"].as_f64().unwrap()).sum();
    assert_eq!(lines(&d.join("a/fp/fingerprint_verdicts.jsonl")).len(), 8);
    assert!((fp_cost - 8.0 * (100.0 + 2.0 * 3.0) / 1e6).abs() < 1e-12, "{fp_cost}");
    let r = json(&d.join("a/fp/result.json"));
    assert_eq!(r["comparisons"], 32, "the fingerprint's queries are not the run's comparisons");
    assert!(
        (r["folder_spend"]["spend_usd"].as_f64().unwrap() - (fp_cost + run_cost)).abs() < 1e-9,
        "{}",
        r["folder_spend"]
    );
    // Named as the fingerprint's, not as spend under other settings.
    assert!((r["folder_spend"]["fingerprint_usd"].as_f64().unwrap() - fp_cost).abs() < 1e-12, "{}", r["folder_spend"]);
    let out = run_bin(d, &["run", a.to_str().unwrap(), "--dry-run"]);
    let said = format!("(${fp_cost:.6} for the judge's fingerprint checks)");
    assert!(stdout(&out).contains(&said) && !stdout(&out).contains("under other settings"), "{said}: {}", text(&out));
    // The pairs it re-asks, from the same stored state, are the same in the copies.
    let pairs: Vec<(String, String)> = checks[0]["pairs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["a"].as_str().unwrap().to_string(), p["b"].as_str().unwrap().to_string()))
        .collect();
    assert_eq!(pairs.len(), 8);
    let t = texts();
    let flip = |n: usize| {
        let mut f = flips.lock().unwrap();
        f.clear();
        for (a, b) in &pairs[..n] {
            f.insert((t[a].clone(), t[b].clone()));
        }
    };
    // Jitter within its noise: 1 of 8 changed passes.
    flip(1);
    let out = run(d, &config(d, "j", &fake.base_url), &[]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(stdout(&out).contains("judge fingerprint: 1 of 8 re-asked stored verdicts changed"), "{}", text(&out));
    // The judge flips on 6 of the 8 pairs: stopped before any other query, the pairs named.
    flip(6);
    let b = config(d, "b", &fake.base_url);
    let before = lines(&d.join("b/fp/verdicts.jsonl")).len();
    let out = run(d, &b, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let e = text(&out);
    assert!(e.contains("6 of 8 changed: ") && e.contains(&format!("{} vs {}: ", pairs[0].0, pairs[0].1)), "{e}");
    assert!(e.contains("--judge-changed new") && e.contains("--judge-changed accept"), "{e}");
    assert_eq!(lines(&d.join("b/fp/verdicts.jsonl")).len(), before, "nothing new mixed into the cache");
    assert_eq!(lines(&d.join("b/fp/fingerprint.jsonl"))[0]["decision"], "stopped");
    // Run again without a decision: the recorded finding stands, nothing is asked or paid
    // again (before, each such run paid for 8 more fingerprint queries) and nothing recorded.
    let asked = fake.n_requests();
    let out = run(d, &b, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert_eq!(fake.n_requests(), asked, "the check is not asked again");
    assert!(
        text(&out).contains("(the check of session 1 in fingerprint.jsonl, repeated without asking again; remove that line to check anew)")
            && text(&out).contains("6 of 8 changed: "),
        "{}",
        text(&out)
    );
    assert_eq!(lines(&d.join("b/fp/fingerprint.jsonl")).len(), 1);
    // --judge-changed new: a new namespace; the old verdicts are kept and not used.
    let out = run(d, &b, &["--judge-changed", "new"]);
    assert!(out.status.success(), "{}", text(&out));
    let checks = lines(&d.join("b/fp/fingerprint.jsonl"));
    assert_eq!(
        (checks[1]["decision"].as_str(), checks[1]["namespace"].as_str()),
        (Some("new"), Some("judge-changed-2"))
    );
    let r = json(&d.join("b/fp/result.json"));
    assert_eq!(r["comparisons"], 32, "32 verdicts of the new namespace, none of the old 24 reused");
    assert_eq!(lines(&d.join("b/fp/verdicts.jsonl")).len(), before + 32);
    // --judge-changed accept: goes on with the old verdicts, recorded.
    let c = config(d, "c", &fake.base_url);
    let out = run(d, &c, &["--judge-changed", "accept"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(stdout(&out).contains("accepted (--judge-changed accept)"), "{}", text(&out));
    assert_eq!(lines(&d.join("c/fp/fingerprint.jsonl"))[0]["decision"], "accept");
    assert_eq!(json(&d.join("c/fp/result.json"))["comparisons"], 32);
}

/// A run that has asked every pair it may send (the pool's two identical texts are never sent,
/// so 238 of its 240 ordered pairs) asks nothing on resume, and pays for no check: before, its
/// check compared the stored verdicts with all 240 pairs and re-asked 8 on every re-run.
#[test]
fn a_resumed_run_with_nothing_left_to_ask_pays_for_no_check() {
    let (fake, dir, a) = first_run("1000");
    let d = dir.path();
    assert_eq!(json(&d.join("a/fp/result.json"))["comparisons"], 238);
    let asked = fake.n_requests();
    for _ in 0..2 {
        let out = run(d, &a, &["--max-comparisons", "1000"]);
        assert!(out.status.success(), "{}", text(&out));
        assert!(!stdout(&out).contains("judge fingerprint"), "{}", text(&out));
    }
    assert_eq!(fake.n_requests(), asked, "nothing sent on resume");
    assert!(!d.join("a/fp/fingerprint_verdicts.jsonl").exists());
}

/// A budget with room for one more query but not for a check besides: the check is not run, and
/// the run buys that query (before, the check took its money and said it "cannot tell"). The
/// run says the check was not run and why, and result.json and fingerprint.jsonl keep it (it
/// was skipped without a word, so a judge changed behind its name went unnoticed: hunt 39).
#[test]
fn a_check_the_budget_cannot_pay_beside_one_query_is_not_run() {
    let (fake, dir, a) = first_run("24");
    let d = dir.path();
    let books = json(&d.join("a/fp/result.json"))["folder_spend"]["spend_usd"].as_f64().unwrap();
    // The dearest query's worst case, from the dry run: "worst-case cost per query: $lo – $hi".
    let dry = stdout(&run_bin(d, &["run", a.to_str().unwrap(), "--dry-run"]));
    let hi: f64 = dry
        .lines()
        .find_map(|l| l.strip_prefix("worst-case cost per query: $"))
        .and_then(|l| l.split(" – $").nth(1))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|x| x.parse().ok())
        .unwrap_or_else(|| panic!("{dry}"));
    let max_usd = format!("{:.9}", books + 1.5 * hi);
    // The same folder, kept to try the raise the line names.
    copy_dir(&d.join("a/fp"), &d.join("b/fp"));
    let before = fake.n_requests();
    let out = run(d, &a, &["--max-usd", &max_usd]);
    assert!(out.status.success(), "{}", text(&out));
    let line = stdout(&out)
        .lines()
        .find(|l| l.starts_with("judge fingerprint"))
        .unwrap_or_else(|| panic!("{}", text(&out)))
        .to_owned();
    // allowed 0.1 (this judge never flips): 0.1ⁿ ≤ 0.01 takes n = 3 re-asks.
    assert!(line.starts_with("judge fingerprint: not run, nothing asked: max_usd leaves $"), "{line}");
    assert!(line.contains(" beyond the run's next query, enough for 0 of the 3 re-asks a check needs to stop a run (at their worst case, $"), "{line}");
    assert!(line.contains(" for the 3 to ask); raise max_usd by $"), "{line}");
    assert!(line.ends_with(" to run it; a judge changed behind its name would go unnoticed in this run"), "{line}");
    assert_eq!(json(&d.join("a/fp/result.json"))["fingerprint"], serde_json::json!([line]));
    let check = lines(&d.join("a/fp/fingerprint.jsonl")).pop().unwrap();
    assert_eq!((check["decision"].as_str(), check["cost_usd"].as_f64()), (Some("not_run"), Some(0.0)), "{check}");
    // Replies cost less than their worst case, so the money buys a few queries: all of the
    // run's, none for a check.
    let bought = json(&d.join("a/fp/result.json"))["comparisons"].as_u64().unwrap() - 24;
    assert!(bought >= 1, "{}", text(&out));
    assert_eq!((fake.n_requests() - before) as u64, bought, "the run's queries only, no check");
    // Raised by what the line says, the same folder runs the check.
    let raise: f64 =
        line.split("raise max_usd by $").nth(1).unwrap().split_whitespace().next().unwrap().parse().unwrap();
    let raised = format!("{:.9}", max_usd.parse::<f64>().unwrap() + raise);
    let out = run(d, &config(d, "b", &fake.base_url), &["--max-usd", &raised]);
    assert!(stdout(&out).contains("judge fingerprint: 0 of 3 re-asked stored verdicts changed"), "{}", text(&out));
    assert!(lines(&d.join("a/fp/fingerprint_verdicts.jsonl")).is_empty());
}

/// A judge whose stored verdicts follow the slot (it always answers "A": all of its pairs flip
/// with the order) gives a check that cannot tell whatever its re-asks answer (0.99ⁿ ≤ 0.01
/// takes n = 459): it is not run and nothing is paid for it (it bought 8 re-asks, then said it
/// "cannot tell": hunt 39).
#[test]
fn a_check_that_cannot_tell_is_said_and_not_paid_for() {
    let fake = FakeOpenAi::start_with(Box::new(|_: &str, _: &str| "[[A]]".to_string()), Box::new(fixed_usage));
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let a = config(d, "a", &fake.base_url);
    assert!(run(d, &a, &["--max-comparisons", "24"]).status.success());
    let (books, asked) =
        (json(&d.join("a/fp/result.json"))["folder_spend"]["spend_usd"].as_f64().unwrap(), fake.n_requests());
    let out = run(d, &a, &[]);
    assert!(out.status.success(), "{}", text(&out));
    let want = "judge fingerprint: not run, nothing asked: the check cannot tell: the judge's verdicts flip with the order it is shown them in (100 % of its stored pairs), so even 8 of 8 re-asked changed would pass (it needs 459); its verdicts follow the slot, not the answers; a judge changed behind its name would go unnoticed in this run";
    assert!(stdout(&out).lines().any(|l| l == want), "{}", text(&out));
    // The run's 8 queries only; the folder's books grew by them alone.
    let r = json(&d.join("a/fp/result.json"));
    assert_eq!((fake.n_requests() - asked, r["comparisons"].as_u64()), (8, Some(32)), "{}", text(&out));
    assert_eq!(r["fingerprint"], serde_json::json!([want]));
    assert_eq!(r["folder_spend"].get("fingerprint_usd"), None, "{r}");
    assert!(
        (r["folder_spend"]["spend_usd"].as_f64().unwrap() - books - 8.0 * (100.0 + 2.0 * 3.0) / 1e6).abs() < 1e-9,
        "{r}"
    );
    let check = lines(&d.join("a/fp/fingerprint.jsonl")).pop().unwrap();
    assert_eq!((check["decision"].as_str(), check["flip_rate"].as_f64()), (Some("not_run"), Some(1.0)), "{check}");
}

/// A run whose config has a gate holds its trusted judge's worst case back from max_usd; the
/// fingerprint check before the run leaves it too (it took what the budget left, the gate's
/// hold included, and the gate could then be refused for want of money: hunt 39 review).
#[test]
fn the_check_leaves_what_the_run_holds_for_its_gate() {
    let fake = server(&Flips::default());
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let a = config(d, "a", &fake.base_url);
    let gate = "gate:\n  anchors: 4\n  trusted:\n    mock: {pos_bias: 0.0, verb_per_word: 0.0, input_usd_per_mtok: 10.0, output_usd_per_mtok: 10.0}\n";
    std::fs::write(&a, std::fs::read_to_string(&a).unwrap() + gate).unwrap();
    assert!(run(d, &a, &["--max-comparisons", "24"]).status.success());
    let books = json(&d.join("a/fp/result.json"))["folder_spend"]["spend_usd"].as_f64().unwrap();
    let dry = stdout(&run_bin(d, &["run", a.to_str().unwrap(), "--dry-run"]));
    let number = |prefix: &str, sep: Option<&str>| -> f64 {
        let rest = dry.lines().find_map(|l| l.strip_prefix(prefix)).unwrap_or_else(|| panic!("{dry}"));
        let rest = sep.map_or(rest, |s| rest.split(s).nth(1).unwrap());
        rest.split_whitespace().next().unwrap().parse().unwrap()
    };
    let (held, hi) = (number("held for the gate: $", None), number("worst-case cost per query: $", Some(" – $")));
    // Without the hold the check would have the held money besides 2.5 queries: enough for the
    // 3 re-asks it needs (allowed 0.1).
    assert!(held > 3.0 * hi, "{dry}");
    let max_usd = format!("{:.9}", books + held + 2.5 * hi);
    let out = run(d, &a, &["--max-usd", &max_usd]);
    assert!(out.status.success(), "{}", text(&out));
    let want = format!(" (after ${held:.6} held for the gate) beyond the run's next query, enough for ");
    let line = stdout(&out).lines().find(|l| l.starts_with("judge fingerprint")).unwrap_or_default().to_owned();
    assert!(
        line.starts_with("judge fingerprint: not run, nothing asked: max_usd leaves $") && line.contains(&want),
        "{}",
        text(&out)
    );
    assert!(lines(&d.join("a/fp/fingerprint_verdicts.jsonl")).is_empty());
    let f = &json(&d.join("a/fp/result.json"))["folder_spend"];
    assert!(f["spend_usd"].as_f64().unwrap() <= f["max_usd"].as_f64().unwrap() + 1e-12, "{f}");
}

/// A check stopped before it was recorded (a kill or Ctrl-C during it) left its replies in the
/// fingerprint books: the next run's check takes them as its answers and does not ask those
/// pairs again (a pair whose reply was recorded is never asked again).
#[test]
fn a_check_cut_short_is_not_asked_again() {
    let (fake, dir, a) = first_run("24");
    let d = dir.path();
    copy_dir(&d.join("a/fp"), &d.join("k/fp"));
    // The check runs in `a` (8 re-asked), then the folder goes on to 32 comparisons.
    assert!(run(d, &a, &[]).status.success());
    // `k`: the state before that run plus the check's booked replies, without its record.
    std::fs::copy(d.join("a/fp/fingerprint_verdicts.jsonl"), d.join("k/fp/fingerprint_verdicts.jsonl")).unwrap();
    let before = fake.requests().len();
    let out = run(d, &config(d, "k", &fake.base_url), &[]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(stdout(&out).contains("judge fingerprint: 0 of 8 re-asked stored verdicts changed"), "{}", text(&out));
    assert_eq!(fake.requests().len() - before, 8, "only the run's 8 new comparisons are sent");
    assert_eq!(lines(&d.join("k/fp/fingerprint_verdicts.jsonl")).len(), 8);
    let check = &lines(&d.join("k/fp/fingerprint.jsonl"))[0];
    assert!((check["cost_usd"].as_f64().unwrap() - 8.0 * (100.0 + 2.0 * 3.0) / 1e6).abs() < 1e-12, "{check}");
}

/// Ctrl-C during the check: nothing more is sent, the replies in flight are booked, the run does
/// not start (exit 130, said on stderr), and the next run repeats the check from its booked
/// replies without asking them again.
#[test]
fn ctrl_c_during_the_check_books_its_replies_and_the_next_run_repeats_it() {
    let (fake, dir, a) = first_run("24");
    let d = dir.path();
    let stored = fake.requests().len();
    let before = json(&d.join("a/fp/result.json"))["folder_spend"]["spend_usd"].as_f64().unwrap();
    // The check's 8 requests go out at once (concurrency 8) and are held 1.5 s each.
    fake.set_delay_ms(1500);
    let child = crate::crash_safety::start(d, &a);
    crate::crash_safety::wait_until("the check's requests", 30, || fake.requests().len() >= stored + 8);
    crate::crash_safety::signal(&child, "-INT");
    let out = child.wait_with_output().unwrap();
    let t = text(&out);
    assert_eq!(out.status.code(), Some(130), "{t}");
    assert!(t.contains("interrupted during the judge fingerprint check of openai fake-judge"), "{t}");
    assert_eq!(fake.requests().len(), stored + 8, "nothing but the check was sent: {t}");
    assert_eq!(lines(&d.join("a/fp/fingerprint_verdicts.jsonl")).len(), 8, "its replies are booked");
    assert!(!d.join("a/fp/fingerprint.jsonl").exists(), "the check is not recorded");
    // The earlier result.json counts what the check paid (hunt 52: it understated the spend).
    let after = json(&d.join("a/fp/result.json"))["folder_spend"]["spend_usd"].as_f64().unwrap();
    assert!((after - before - 8.0 * (100.0 + 2.0 * 3.0) / 1e6).abs() < 1e-12, "{before} → {after}");
    // The next run repeats the check from the booked replies, then goes on.
    fake.set_delay_ms(0);
    let out = run(d, &a, &[]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(stdout(&out).contains("judge fingerprint: 0 of 8 re-asked stored verdicts changed"), "{}", text(&out));
    assert_eq!(fake.requests().len(), stored + 8 + 8, "the run's 8 new comparisons only");
}

//! Batch dispatch (docs/live.md, "Batch dispatch"): the real binary against the fake server's
//! Files and Batches API, whose own record of the batch lines it ran and billed is the bill.
//! In every case: no query is paid twice, every billed result ends in verdicts.jsonl once the
//! folder is resumed, the books hold at least the bill, and `max_usd` holds.

use crate::common::fake_openai::{BatchScript, BatchStep, FakeOpenAi, Fault, OutputFault, TEMPLATE};
use crate::common::*;
use crate::crash_safety::{booked, lines, signal, wait_until};
use serde_json::{Value, json};
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const PRICE_IN: f64 = 1.0;
const PRICE_OUT: f64 = 2.0;
const DISCOUNT: f64 = 0.5;

const IDS: [&str; 8] = ["a0", "a1", "a2", "a3", "a4", "a5", "a6", "a7"];

/// A batch-dispatch config on 8 short items: rounds of 8, polled every 20 ms.
fn config(dir: &Path, name: &str, url: &str, budget: &str) -> PathBuf {
    write(dir, "prompts/test.j2", TEMPLATE);
    let items: Vec<Value> = IDS
        .iter()
        .enumerate()
        .map(|(i, id)| json!({"id": id, "text": vec!["word"; i + 2].join(" "), "quality": i}))
        .collect();
    let pool = write(
        dir,
        "small.jsonl",
        &(json!({"pool_id": "small", "task": "Pick the better answer.", "items": items}).to_string() + "\n"),
    );
    let yaml = format!(
        "name: {name}\nout_dir: runs\npool:\n  file: {pool}\nk: 2\njudge:\n  openai:\n    base_url: {url}\n    model: fake-judge\n    fingerprint:\n      queries: 0\n    api_key_env: TOPK_BATCH_TEST_UNSET_KEY\n    api_key_required: false\n    prompt: prompts/test.j2\n    max_tokens: 64\n    max_invalid_retries: 0\n    price: {{input_usd_per_mtok: {PRICE_IN}, output_usd_per_mtok: {PRICE_OUT}, batch_discount: {DISCOUNT}}}\nacquisition:\n  seed: 3\n  mc_draws: 200\n  dispatch: batch\n  round_size: 8\n  poll_s: 0.02\nbudget:\n{budget}",
        pool = pool.display()
    );
    write(dir, &format!("{name}.yaml"), &yaml)
}

fn bill(fake: &FakeOpenAi) -> f64 {
    fake.billed_usd(PRICE_IN * (1.0 - DISCOUNT), PRICE_OUT * (1.0 - DISCOUNT))
}

/// `topk-judge run CFG --quiet` as a child process, its stdout and stderr to `io()`.
fn spawn_run(dir: &Path, cfg: &Path, io: fn() -> Stdio) -> std::process::Child {
    Command::new(bin())
        .current_dir(dir)
        .args(["run", cfg.to_str().unwrap(), "--quiet"])
        .stdout(io())
        .stderr(io())
        .spawn()
        .unwrap()
}

fn run(dir: &Path, cfg: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["run", cfg.to_str().unwrap(), "--quiet"];
    args.extend_from_slice(extra);
    run_bin(dir, &args)
}

/// The invariants of every case, once the folder has been resumed to its end.
fn check_books(fake: &FakeOpenAi, runs: &Path, max_usd: Option<f64>) {
    let billed = fake.batch_billed_lines();
    let unique: HashSet<&(String, String)> = billed.iter().collect();
    assert_eq!(unique.len(), billed.len(), "no query is paid twice: {billed:?}");
    let texts = |id: &str| vec!["word"; IDS.iter().position(|x| *x == id).unwrap() + 2].join(" ");
    let stored: HashSet<(String, String)> = lines(&runs.join("verdicts.jsonl"))
        .iter()
        .map(|r| (texts(r["a"].as_str().unwrap()), texts(r["b"].as_str().unwrap())))
        .collect();
    for pair in &billed {
        assert!(stored.contains(pair), "a billed result is in verdicts.jsonl: {pair:?}");
    }
    let b = booked(runs);
    assert_eq!(b.open_intents, 0, "every intent is closed once resumed: {b:?}");
    assert!(bill(fake) <= b.usd + 1e-12, "the books (${}) hold at least the bill (${})", b.usd, bill(fake));
    if let Some(max) = max_usd {
        assert!(b.usd <= max + 1e-12, "the books (${}) stay within max_usd {max}", b.usd);
    }
}

#[test]
fn each_round_is_one_batch_job_booked_at_the_batch_price() {
    let fake = FakeOpenAi::start();
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), "b", &fake.base_url, "  max_comparisons: 24\n");
    let out = run(dir.path(), &cfg, &[]);
    assert!(out.status.success(), "{}", text(&out));
    let runs = dir.path().join("runs/b");
    assert_eq!(fake.batch_jobs().len(), 3, "24 comparisons in rounds of 8");
    assert_eq!(fake.batch_billed_lines().len(), 24);
    let b = booked(&runs);
    assert_eq!(b.verdicts, 24);
    // Each line bills 100 prompt and 3 completion tokens at half price.
    let one = (100.0 * PRICE_IN + 3.0 * PRICE_OUT) / 1e6 * (1.0 - DISCOUNT);
    assert!((b.usd - 24.0 * one).abs() < 1e-12, "books {} = 24 × {one}", b.usd);
    assert!((bill(&fake) - b.usd).abs() < 1e-12);
    let rounds = lines(&runs.join("batches.jsonl"));
    let ended: Vec<&str> = rounds.iter().filter_map(|l| l["ended"].as_str()).collect();
    assert_eq!(ended.len(), 3, "{rounds:?}");
    // No live chat request: every verdict came from a batch line (recorded as /v1/batch-line/…).
    let live = fake.requests().iter().filter(|r| r.uri.starts_with("/v1/chat")).count();
    assert_eq!(live, 0);
    assert_eq!(json(&runs.join("result.json"))["stop_reason"], "max_comparisons");
    check_books(&fake, &runs, None);
}

/// A batch line answered 200 whose body is no chat completion (no choices; a content that is a
/// number) may have been billed, as on live dispatch: booked at least at the usage it reports,
/// at its worst case, never at $0 (the provider billed 1.8 × max_usd over re-runs while the
/// books held $0); so is a 500 whose body reports its usage.
#[test]
fn a_batch_line_answered_without_a_completion_is_booked_as_billed() {
    let number = json!({"index": 0, "message": {"role": "assistant", "content": 12345}, "finish_reason": "stop"});
    for fault in [Fault::NoChoices, Fault::Choice(number), Fault::ServerErrorWithUsage] {
        let fake = FakeOpenAi::start();
        fake.set_always(Some(fault.clone()));
        let dir = tempfile::tempdir().unwrap();
        let max = 0.02;
        let cfg = config(dir.path(), "nc", &fake.base_url, &format!("  max_comparisons: 200\n  max_usd: {max}\n"));
        for _ in 0..3 {
            let out = run(dir.path(), &cfg, &[]);
            assert!(!out.status.success(), "{fault:?}: no verdict: the judge is failing: {}", text(&out));
        }
        let runs = dir.path().join("runs/nc");
        let b = booked(&runs);
        assert!(bill(&fake) > 0.0 && fake.batch_billed_lines().len() >= 24, "{fault:?}");
        assert!(
            bill(&fake) <= b.usd + 1e-12,
            "{fault:?}: the books (${}) hold at least the bill (${})",
            b.usd,
            bill(&fake)
        );
        assert!(b.usd <= max + 1e-12, "{fault:?}: the books (${}) stay within max_usd", b.usd);
        let failed = lines(&runs.join("failed.jsonl"));
        assert!(failed.iter().all(|f| f["cost_usd"].as_f64().unwrap() > 0.0), "{fault:?}: {failed:?}");
    }
}

/// A kill at every step of a round (SIGKILL while the server holds the request of that step),
/// then the same config run again: the open round is resumed, never submitted twice.
#[test]
fn a_kill_at_every_step_is_resumed_without_paying_twice_or_losing_a_result() {
    for step in [
        BatchStep::UploadBeforeStore,
        BatchStep::UploadAfterStore,
        BatchStep::CreateAfterStore,
        BatchStep::Retrieve,
        BatchStep::Content,
    ] {
        let fake = FakeOpenAi::start();
        let dir = tempfile::tempdir().unwrap();
        let max = 0.01;
        let cfg = config(dir.path(), "k", &fake.base_url, &format!("  max_comparisons: 16\n  max_usd: {max}\n"));
        fake.hold_batch(step);
        let mut child = spawn_run(dir.path(), &cfg, Stdio::null);
        wait_until(&format!("a request held at {step:?}"), 60, || fake.batch_held_at(step));
        child.kill().unwrap();
        child.wait().unwrap();
        fake.release_batch();
        let runs = dir.path().join("runs/k");
        let out = run(dir.path(), &cfg, &[]);
        assert!(out.status.success(), "{step:?}: {}", text(&out));
        let jobs = fake.batch_jobs();
        let made_before = matches!(step, BatchStep::CreateAfterStore | BatchStep::Retrieve | BatchStep::Content);
        assert_eq!(
            jobs.len(),
            2,
            "{step:?}: two rounds, the first {} ({jobs:?})",
            if made_before { "adopted" } else { "submitted again" }
        );
        assert_eq!(booked(&runs).verdicts, 16, "{step:?}");
        check_books(&fake, &runs, Some(max));
    }
}

/// Killed right after the output file was read (while the results are booked): the next run
/// books what is missing and nothing twice.
#[test]
fn a_kill_while_booking_is_resumed() {
    let fake = FakeOpenAi::start();
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), "kb", &fake.base_url, "  max_comparisons: 8\n");
    fake.hold_batch(BatchStep::Content);
    let mut child = spawn_run(dir.path(), &cfg, Stdio::null);
    wait_until("the output being read", 60, || fake.batch_held_at(BatchStep::Content));
    fake.release_batch();
    std::thread::sleep(std::time::Duration::from_millis(3));
    child.kill().unwrap();
    child.wait().unwrap();
    let out = run(dir.path(), &cfg, &[]);
    assert!(out.status.success(), "{}", text(&out));
    let runs = dir.path().join("runs/kb");
    assert_eq!(booked(&runs).verdicts, 8);
    assert_eq!(fake.batch_jobs().len(), 1, "the round was not submitted again");
    check_books(&fake, &runs, None);
}

/// Ctrl-C while a job runs: the job is cancelled, what it ran is booked, the rest is closed
/// unbilled, and the run exits 130; the next run goes on.
#[test]
fn ctrl_c_cancels_the_open_job_and_books_what_it_ran() {
    let fake = FakeOpenAi::start();
    fake.batch_script(BatchScript { delay_ms: 3_000, ..Default::default() });
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), "c", &fake.base_url, "  max_comparisons: 16\n");
    let child = spawn_run(dir.path(), &cfg, Stdio::piped);
    wait_until("a batch job", 60, || !fake.batch_jobs().is_empty());
    signal(&child, "-INT");
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", text(&out));
    assert_eq!(fake.batch_jobs()[0].1, "cancelled");
    let runs = dir.path().join("runs/c");
    let b = booked(&runs);
    assert_eq!((b.verdicts, b.open_intents, b.usd), (0, 0, 0.0), "nothing ran, nothing is billed: {b:?}");
    // The queries the cancel kept from running were not asked: no failure, no pair set aside,
    // no warning, and the signal said what happens to the job.
    let r = json(&runs.join("result.json"));
    assert_eq!((r["stop_reason"].as_str(), r["failed"].as_u64()), (Some("interrupted"), Some(0)), "{r}");
    let stats = &r["judge_stats"];
    assert_eq!((stats["batch_jobs"].as_u64(), stats["requests"].as_u64()), (Some(1), Some(0)), "{stats}");
    assert!(stats["batch_api_requests"].as_u64().unwrap() >= 4, "upload, create, a poll, the cancel: {stats}");
    let said = text(&out);
    assert!(said.contains("cancelling the open batch job (8 queries)"), "{said}");
    for never in ["failed:", "set aside", "waiting up to", "throughput: 8"] {
        assert!(!said.contains(never), "{never}: {said}");
    }
    fake.batch_script(BatchScript::default());
    let out = run(dir.path(), &cfg, &[]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(booked(&runs).verdicts, 16);
    check_books(&fake, &runs, None);
}

/// A job that expires after 3 of its 8 lines, and one with two lines in its error file: what
/// ran is booked, the rest is named and not billed, and the run goes on.
#[test]
fn expired_and_erroring_jobs_book_what_ran_and_name_the_rest() {
    for (script, ran) in [
        (BatchScript { expire_after: Some(3), ..Default::default() }, 3),
        (BatchScript { error_lines: vec![1, 4], ..Default::default() }, 6),
    ] {
        let fake = FakeOpenAi::start();
        fake.batch_script(script.clone());
        let dir = tempfile::tempdir().unwrap();
        let cfg = config(dir.path(), "e", &fake.base_url, "  max_comparisons: 8\n");
        let out = run(dir.path(), &cfg, &[]);
        assert!(out.status.success(), "{script:?}: {}", text(&out));
        let runs = dir.path().join("runs/e");
        let first = &fake.batch_jobs()[0];
        assert_eq!(first.1, if script.expire_after.is_some() { "expired" } else { "completed" });
        assert!(fake.batch_billed_lines().len() >= ran);
        let closed: Vec<String> = lines(&runs.join("failed.jsonl"))
            .iter()
            .chain(lines(&runs.join("intents.jsonl")).iter())
            .filter_map(|l| l["error"].as_str().or(l["reason"].as_str()).map(str::to_owned))
            .collect();
        let word = if script.expire_after.is_some() {
            "ended expired before this request ran; not billed"
        } else {
            "server_error"
        };
        assert!(closed.iter().any(|c| c.contains(word)), "{script:?}: {closed:?}");
        check_books(&fake, &runs, None);
    }
}

/// Jobs the provider lets expire before running a line: their queries are not billed, not
/// charged to their pairs (none is set aside), and asked again; three such rounds in a row
/// stop the run, counting only the queries of those rounds.
#[test]
fn requests_an_expired_job_never_ran_are_no_fault_of_their_pairs() {
    let fake = FakeOpenAi::start();
    // Jobs 0 and 1 run 6 of their 8 lines; from job 2 on, none.
    fake.batch_script(BatchScript { expire_after: Some(6), expire_from_job: Some(2), ..Default::default() });
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), "x", &fake.base_url, "  max_comparisons: 56\n");
    let out = run(dir.path(), &cfg, &[]);
    assert!(!out.status.success(), "{}", text(&out));
    let jobs = fake.batch_jobs();
    assert_eq!(jobs.iter().map(|j| j.1.as_str()).collect::<Vec<_>>(), ["expired"; 5]);
    assert!(
        text(&out).contains("24 queries failed in 3 consecutive rounds without any verdict; last error: batch job"),
        "{}",
        text(&out)
    );
    assert!(text(&out).contains("ended expired before this request ran; not billed"), "{}", text(&out));
    assert!(!text(&out).contains("set aside"), "{}", text(&out));
    assert!(
        text(&out).contains("(12 valid, 0 invalid, 28 failed, 28 of them never run by their batch job)"),
        "{}",
        text(&out)
    );
    let runs = dir.path().join("runs/x");
    assert_eq!(json(&runs.join("result.json"))["not_run"], 28, "2 + 2 lines of jobs 0 and 1, 8 of each of 3 jobs");
    assert_eq!(booked(&runs).verdicts, 12);
    check_books(&fake, &runs, None);
}

/// `--detach` submits one round and exits (`stop_reason: batch_pending`); a second `--detach`
/// while the job runs books nothing and says where the job is; the next run books it.
#[test]
fn detach_submits_one_round_and_a_later_run_books_it() {
    let fake = FakeOpenAi::start();
    fake.batch_script(BatchScript { delay_ms: 1_500, ..Default::default() });
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), "d", &fake.base_url, "  max_comparisons: 8\n  max_usd: 0.01\n");
    let out = run(dir.path(), &cfg, &["--detach"]);
    assert!(out.status.success(), "{}", text(&out));
    let runs = dir.path().join("runs/d");
    let r = json(&runs.join("result.json"));
    assert_eq!(r["stop_reason"], "batch_pending");
    assert_eq!(booked(&runs).open_intents, 8, "the round's intents stay open");
    // Counted at their reservations, under this config (not "other settings"), and not as
    // possibly billed: the job's files will tell what ran. Nothing is resolved yet.
    let job = &r["in_open_batch_job"];
    let reserved = job["reserved_usd"].as_f64().unwrap();
    assert_eq!((job["queries"].as_u64(), r["possibly_billed"].as_u64()), (Some(8), Some(0)), "{r}");
    assert!(reserved > 0.0 && (r["spend_usd"].as_f64().unwrap() - reserved).abs() < 1e-12, "{r}");
    assert_eq!(r["folder_spend"]["in_open_batch_job"], *job, "{}", r["folder_spend"]);
    assert_eq!(r["folder_spend"]["other_usd"], 0.0, "{}", r["folder_spend"]);
    assert!(r.get("throughput").is_none(), "{r}");
    // No valid comparison yet: that note alone, not one per coefficient the prior chose.
    let notes: Vec<&str> = r["notes"].as_array().unwrap().iter().map(|n| n.as_str().unwrap()).collect();
    assert!(notes.iter().any(|n| n.starts_with("no valid comparison")), "{notes:?}");
    assert!(notes.iter().all(|n| !n.contains("prior-selected")), "{notes:?}");
    let said = "includes 8 queries in the open batch job, reserved at $";
    assert!(stdout(&out).contains(said) && stdout(&out).contains("until its results are booked"), "{}", stdout(&out));
    assert!(!stdout(&out).contains("possibly billed"), "{}", stdout(&out));
    // The report says what its spend holds, as the summary does (it showed the reservation as
    // plain spend beside 0 comparisons).
    assert!(run_bin(dir.path(), &["report", runs.to_str().unwrap()]).status.success());
    let md = std::fs::read_to_string(runs.join("report.md")).unwrap();
    // (report.md writes a dollar as `\$`.)
    assert!(md.contains(&format!("- spend \\${reserved:.4} includes 8 queries in the open batch job, reserved at \\${reserved:.4} until its results are booked")), "{md}");
    let out = run(dir.path(), &cfg, &["--detach"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(stdout(&out).contains("batch job") || text(&out).contains("batch job"), "{}", text(&out));
    assert_eq!(fake.batch_jobs().len(), 1, "not submitted again");
    wait_until("the job to end", 30, || fake.batch_jobs()[0].1 == "completed");
    let out = run(dir.path(), &cfg, &[]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(booked(&runs).verdicts, 8);
    assert_eq!(fake.batch_jobs().len(), 1);
    check_books(&fake, &runs, Some(0.01));
}

/// A `--detach` loop with the judge fingerprint on: the first call that finds verdicts stored
/// checks the judge (8 live queries); the calls that find a job still open and a check passed
/// only poll or book it (hunt 58: each poll paid 8 live queries, more than the batch verdicts).
#[test]
fn a_detach_loop_pays_one_fingerprint_check_not_one_per_poll() {
    let fake = FakeOpenAi::start();
    fake.batch_script(BatchScript { delay_ms: 1_500, ..Default::default() });
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), "loop", &fake.base_url, "  max_comparisons: 40\n");
    let text_of = std::fs::read_to_string(&cfg).unwrap().replace("queries: 0", "queries: 8");
    std::fs::write(&cfg, text_of).unwrap();
    let live = || fake.n_requests() - fake.batch_billed_lines().len();
    let detach = || {
        let out = run(dir.path(), &cfg, &["--detach"]);
        assert!(out.status.success(), "{}", text(&out));
        out
    };
    detach();
    wait_until("round 1 to end", 30, || fake.batch_jobs()[0].1 == "completed");
    // Books round 1 (nothing stored when it started: no check) and submits round 2.
    detach();
    assert_eq!((live(), fake.batch_jobs().len()), (0, 2));
    // Round 2 open, 8 verdicts stored: the judge is checked once.
    let out = detach();
    assert!(stdout(&out).contains("judge fingerprint: 0 of 8 re-asked stored verdicts changed"), "{}", text(&out));
    assert_eq!(live(), 8);
    // A job open again, the judge checked: polls only.
    for _ in 0..2 {
        let out = detach();
        assert!(!text(&out).contains("judge fingerprint"), "{}", text(&out));
        assert_eq!(live(), 8);
    }
    let runs = dir.path().join("runs/loop");
    let checks = std::fs::read_to_string(runs.join("fingerprint.jsonl")).unwrap();
    assert_eq!(checks.lines().count(), 1, "{checks}");
}

/// batches.jsonl moved away while a job is open: the run refuses to start, naming the file and
/// the job result.json counts (hunt 58 F3: its queries were booked as possibly billed, their
/// paid results never read, and the file could not be put back); put back, the job is booked.
#[test]
fn a_missing_batches_file_with_a_job_open_is_named_before_anything_is_booked() {
    let fake = FakeOpenAi::start();
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), "gone", &fake.base_url, "  max_comparisons: 8\n  max_usd: 0.01\n");
    assert!(run(dir.path(), &cfg, &["--detach"]).status.success());
    let runs = dir.path().join("runs/gone");
    let (file, away) = (runs.join("batches.jsonl"), dir.path().join("batches.saved"));
    std::fs::rename(&file, &away).unwrap();
    let intents = std::fs::read(runs.join("intents.jsonl")).unwrap();
    let saved = std::fs::read_to_string(&away).unwrap();
    let first_line = saved.lines().next().unwrap().to_owned() + "\n";
    // Missing, emptied, or cut back to its first line (the round's keys, no input file: it
    // would read as never sent, and be asked again in a new job; hunt 60 F1, F2).
    for (content, what) in
        [(None, "is missing"), (Some(String::new()), "does not record it"), (Some(first_line), "does not record it")]
    {
        if let Some(c) = &content {
            std::fs::write(&file, c).unwrap();
        }
        for args in [&[][..], &["--dry-run"]] {
            let out = run(dir.path(), &cfg, args);
            assert_eq!(out.status.code(), Some(1), "{args:?}: {}", text(&out));
            assert!(
                stderr(&out).contains("the last run of this folder left a provider batch job open (8 queries, reserved at $")
                    && stderr(&out).contains(&format!("runs/gone/batches.jsonl {what}"))
                    && stderr(&out).contains(": put the whole file back, and this run books the job's results; if it is lost for good, run with --abandon-batch"),
                "{args:?}: {}",
                text(&out)
            );
        }
        let _ = std::fs::remove_file(&file);
    }
    assert_eq!(std::fs::read(runs.join("intents.jsonl")).unwrap(), intents, "nothing booked");
    std::fs::rename(&away, &file).unwrap();
    let out = run(dir.path(), &cfg, &[]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!((booked(&runs).verdicts, booked(&runs).possibly_billed), (8, 0));
    assert_eq!(fake.batch_jobs().len(), 1);
    check_books(&fake, &runs, Some(0.01));
}

/// A round left open by `--detach` is booked by the next run of the folder whatever its
/// dispatch: a pipelined run polls the job to its end, books its 8 results, then asks only
/// queries the job did not hold. A judge that cannot read batch jobs is refused before anything
/// is written, naming batches.jsonl.
#[test]
fn an_open_batch_job_is_booked_by_a_run_of_another_dispatch() {
    let fake = FakeOpenAi::start();
    fake.batch_script(BatchScript { delay_ms: 800, ..Default::default() });
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), "sw", &fake.base_url, "  max_comparisons: 16\n");
    let out = run(dir.path(), &cfg, &["--detach"]);
    assert!(out.status.success(), "{}", text(&out));
    let runs = dir.path().join("runs/sw");
    assert_eq!(booked(&runs).open_intents, 8);
    let yaml = std::fs::read_to_string(&cfg).unwrap();
    let live = yaml.replace("  dispatch: batch\n  round_size: 8\n  poll_s: 0.02\n", "");
    assert_ne!(live, yaml);
    let mock = live.replace(
        &yaml[yaml.find("  openai:").unwrap()..yaml.find("acquisition:").unwrap()],
        "  mock: {mode: deterministic}\n",
    );
    let mock = write(dir.path(), "sw-mock.yaml", &mock);
    let before = std::fs::read_to_string(runs.join("intents.jsonl")).unwrap();
    for args in [&[][..], &["--dry-run"][..]] {
        let out = run(dir.path(), &mock, args);
        assert!(!out.status.success(), "{args:?}");
        assert!(
            text(&out).contains("batches.jsonl: a provider batch job of an earlier run is still open (8 queries), and this judge cannot read batch jobs"),
            "{args:?}: {}",
            text(&out)
        );
    }
    assert_eq!(std::fs::read_to_string(runs.join("intents.jsonl")).unwrap(), before, "nothing booked");
    let live = write(dir.path(), "sw-live.yaml", &live);
    wait_until("the job to end", 30, || fake.batch_jobs()[0].1 == "completed");
    let out = run(dir.path(), &live, &[]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(!text(&out).contains("possibly billed"), "{}", text(&out));
    assert!(
        stdout(&out).contains("resumed: 0 stored verdicts reused, 8 verdicts booked from the batch job an earlier run left open, 8 queries asked in this run"),
        "{}",
        stdout(&out)
    );
    assert_eq!(fake.batch_jobs().len(), 1, "the job is booked, not submitted again");
    let b = booked(&runs);
    assert_eq!(b.verdicts, 16);
    let job: HashSet<(String, String)> = fake.batch_billed_lines().into_iter().collect();
    assert_eq!(job.len(), 8);
    // Every query the server ran (the job's lines and the live requests): 16, none twice.
    let asked: Vec<(String, String)> = fake.requests().into_iter().filter_map(|r| r.answers).collect();
    assert_eq!(asked.len(), 16, "{asked:?}");
    assert_eq!(asked.iter().collect::<HashSet<_>>().len(), 16, "no query of the job is asked again live: {asked:?}");
    // The job's records carry the judge that sent the round, as batches.jsonl names it.
    let round = &lines(&runs.join("batches.jsonl"))[0];
    let sent_by = &round["judge"];
    assert_eq!(sent_by[1].as_str().unwrap().len(), 12, "{round}");
    let keys: HashSet<&str> = round["keys"].as_array().unwrap().iter().map(|k| k.as_str().unwrap()).collect();
    let records = lines(&runs.join("verdicts.jsonl"));
    let of_job: Vec<&Value> = records.iter().filter(|r| keys.contains(r["key"].as_str().unwrap())).collect();
    assert_eq!(of_job.len(), 8);
    assert!(of_job.iter().all(|r| r["judge"] == sent_by[0] && r["judge_settings"] == sent_by[1]), "{of_job:?}");
    check_books(&fake, &runs, None);
}

/// An open round resumed by a config whose base_url changed: its job cannot be read there; the
/// round stays open (booked at its reservation), and the message names the judge that sent it.
#[test]
fn an_open_round_resumed_at_another_base_url_names_the_judge_that_sent_it() {
    let (first, other) = (FakeOpenAi::start(), FakeOpenAi::start());
    first.batch_script(BatchScript { delay_ms: 60_000, ..Default::default() });
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), "mv", &first.base_url, "  max_comparisons: 8\n");
    assert!(run(dir.path(), &cfg, &["--detach"]).status.success());
    let moved = config(dir.path(), "mv", &other.base_url, "  max_comparisons: 8\n");
    let out = run(dir.path(), &moved, &[]);
    let said = text(&out);
    assert!(said.contains("batch job batch-"), "{said}");
    assert!(said.contains(" is not found at this endpoint: "), "asked once, not polled: {said}");
    assert!(
        said.contains(&format!(
            "round 1 was sent by judge `openai fake-judge @ {} (prompt test.j2)` and this config's judge is `openai fake-judge @ {} (prompt test.j2)`: if base_url changed, run the config that sent it to book the job",
            first.base_url, other.base_url
        )),
        "{said}"
    );
    // One piece of advice: not also "run the same config again … once it has ended".
    assert!(!said.contains("once it has ended"), "{said}");
    assert_eq!(booked(&dir.path().join("runs/mv")).open_intents, 8, "the round stays open");
    assert_eq!(other.batch_jobs().len(), 0);
}

/// A job of this judge that its endpoint no longer knows (HTTP 404: deleted, or lost by the
/// provider) will never end: the next run closes its round, each query booked as possibly billed
/// at its reservation (the spend stays what was reserved), says so, and goes on; the folder is
/// not stuck on it. With `--detach` too.
#[test]
fn a_job_the_endpoint_no_longer_knows_is_closed_as_possibly_billed() {
    let fake = FakeOpenAi::start();
    fake.batch_script(BatchScript { delay_ms: 60_000, ..Default::default() });
    let dir = tempfile::tempdir().unwrap();
    let max = 0.01;
    let cfg = config(dir.path(), "lost", &fake.base_url, &format!("  max_comparisons: 16\n  max_usd: {max}\n"));
    assert!(run(dir.path(), &cfg, &["--detach"]).status.success());
    let runs = dir.path().join("runs/lost");
    let reserved = json(&runs.join("result.json"))["in_open_batch_job"]["reserved_usd"].as_f64().unwrap();
    assert!(reserved > 0.0);
    fake.forget_batch_jobs();
    fake.batch_script(BatchScript { delay_ms: 0, ..Default::default() });
    let out = run(dir.path(), &cfg, &["--detach"]);
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains(" is not found at this endpoint: ")
            && said.contains(&format!(
                "the job was deleted or lost and will not end; round 1's 8 queries booked as possibly billed at their reservations (${reserved:.6}) and closed; their pairs may be asked again"
            )),
        "{said}"
    );
    // What is left open is the next round, not the lost one.
    assert!(said.contains(": round 2 submitted with --detach; run the same config again"), "{said}");
    let log = lines(&runs.join("batches.jsonl"));
    assert!(log.iter().any(|l| l["round"] == 1 && l["ended"] == "gone"), "{log:?}");
    // Round 2 is submitted with --detach; the next run books it.
    assert_eq!(fake.batch_jobs().len(), 1, "{:?}", fake.batch_jobs());
    wait_until("the job to end", 30, || fake.batch_jobs()[0].1 == "completed");
    let out = run(dir.path(), &cfg, &[]);
    assert!(out.status.success(), "{}", text(&out));
    let b = booked(&runs);
    let r = json(&runs.join("result.json"));
    assert_eq!((b.open_intents, b.possibly_billed, r["possibly_billed"].as_u64()), (0, 8, Some(8)), "{r}");
    assert!(b.usd <= max + 1e-12, "${} within max_usd", b.usd);
    // The lost round's queries are held at their reservation, next to what was billed since.
    assert!(
        (b.usd - reserved - bill(&fake)).abs() < 1e-9,
        "books ${} = reserved ${reserved} + bill ${}",
        b.usd,
        bill(&fake)
    );
    assert!(stdout(&out).contains("(includes 8 possibly billed"), "{}", stdout(&out));
    assert!(run_bin(dir.path(), &["report", runs.to_str().unwrap()]).status.success());
    for (page, dollar) in [("report.md", "\\$"), ("report.html", "$")] {
        let t = std::fs::read_to_string(runs.join(page)).unwrap();
        assert!(
            t.contains(&format!("includes 8 possibly billed, {dollar}{reserved:.4} at their worst case")),
            "{page}: {t}"
        );
    }
}

/// A job whose endpoint is gone for good (the server no longer answers) blocked the folder: the
/// config that sent it cannot read it, and every other config was refused. `run --abandon-batch`
/// closes its round from any config of the folder: each query booked as possibly billed at its
/// reservation, the round recorded `ended: abandoned`, and the run goes on within `max_usd`.
#[test]
fn abandon_batch_closes_a_round_whose_endpoint_is_gone() {
    let fake = FakeOpenAi::start();
    fake.batch_script(BatchScript { delay_ms: 60_000, ..Default::default() });
    let dir = tempfile::tempdir().unwrap();
    let max = 0.01;
    let cfg = config(dir.path(), "gone", &fake.base_url, &format!("  max_comparisons: 16\n  max_usd: {max}\n"));
    assert!(run(dir.path(), &cfg, &["--detach"]).status.success());
    let runs = dir.path().join("runs/gone");
    let reserved = json(&runs.join("result.json"))["in_open_batch_job"]["reserved_usd"].as_f64().unwrap();
    drop(fake);
    // Another config of the folder (a mock judge) is refused, and told the way out.
    let yaml = std::fs::read_to_string(&cfg).unwrap();
    let mock = yaml.replace(
        &yaml[yaml.find("  openai:").unwrap()..yaml.find("acquisition:").unwrap()],
        "  mock: {mode: deterministic}\n",
    );
    let mock =
        write(dir.path(), "gone-mock.yaml", &mock.replace("  dispatch: batch\n  round_size: 8\n  poll_s: 0.02\n", ""));
    let out = run(dir.path(), &mock, &[]);
    assert!(!out.status.success());
    assert!(text(&out).contains("run this one with --abandon-batch"), "{}", text(&out));
    let out = run(dir.path(), &mock, &["--dry-run", "--abandon-batch"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        stdout(&out).contains("--abandon-batch: a real run would first close the open batch rounds without reading their jobs, booking their 8 queries as possibly billed at their reservations"),
        "{}",
        stdout(&out)
    );
    assert_eq!(booked(&runs).open_intents, 8, "the dry run books nothing");
    let job =
        lines(&runs.join("batches.jsonl")).iter().find_map(|l| l["batch_id"].as_str().map(str::to_owned)).unwrap();
    // Abandoned under a max_usd the round's reservation passes: the run stops at once, and says
    // what the books hold (it said "one query needs budget.max_comparisons ≥ 1", which held).
    let low = format!("{}", reserved / 2.0);
    let out = run(dir.path(), &mock, &["--abandon-batch", "--max-usd", &low]);
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains(&format!("the run folder's books already hold ${reserved:.4}, at or above budget.max_usd: a query of this free judge needs budget.max_usd above that")),
        "{said}"
    );
    assert!(
        said.contains(&format!(
            "--abandon-batch: closed without reading its job: round 1 (batch job {job}): 8 queries booked as possibly billed at their reservations (${reserved:.6}); if the job still runs, the provider may bill them"
        )),
        "{said}"
    );
    let log = lines(&runs.join("batches.jsonl"));
    assert!(log.iter().any(|l| l["round"] == 1 && l["ended"] == "abandoned"), "{log:?}");
    // The dry run agrees: no query, though the mock is free (it said all 16 fit).
    let out = run(dir.path(), &mock, &["--dry-run", "--max-usd", &low]);
    assert!(stdout(&out).contains("queries the budget allows: 0\n"), "{}", stdout(&out));
    assert!(
        stdout(&out).contains(&format!("the run folder's books already hold ${reserved:.6} of max_usd ${low}")),
        "{}",
        stdout(&out)
    );
    let out = run(dir.path(), &mock, &[]);
    assert!(out.status.success(), "{}", text(&out));
    let b = booked(&runs);
    assert_eq!((b.open_intents, b.possibly_billed), (0, 8), "{b:?}");
    // The mock is free: the books hold the abandoned round at its reservation, within max_usd.
    assert!((b.usd - reserved).abs() < 1e-12 && b.usd <= max, "books ${} = reserved ${reserved}", b.usd);
    assert_eq!(b.verdicts, 16, "the run went on: {b:?}");
    // Nothing left to abandon: said, not an error.
    let out = run(dir.path(), &mock, &["--abandon-batch"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("--abandon-batch: batches.jsonl records no open batch round, so the option closed none"),
        "{}",
        text(&out)
    );
}

/// The same, while a run waits for its own job: the round is closed as possibly billed and the
/// run goes on with the next round, within `max_usd`.
#[test]
fn a_job_lost_while_polled_closes_its_round_and_the_run_goes_on() {
    let fake = FakeOpenAi::start();
    fake.batch_script(BatchScript { delay_ms: 60_000, ..Default::default() });
    let dir = tempfile::tempdir().unwrap();
    let max = 0.01;
    let cfg = config(dir.path(), "lost", &fake.base_url, &format!("  max_comparisons: 16\n  max_usd: {max}\n"));
    let child = spawn_run(dir.path(), &cfg, Stdio::piped);
    wait_until("the first job", 30, || fake.batch_jobs().len() == 1);
    fake.batch_script(BatchScript { delay_ms: 0, ..Default::default() });
    fake.forget_batch_jobs();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let runs = dir.path().join("runs/lost");
    let b = booked(&runs);
    // The lost round's pairs are asked again: 16 comparisons, as configured.
    assert_eq!((b.open_intents, b.possibly_billed, b.verdicts), (0, 8, 16), "{b:?}");
    assert!(b.usd <= max + 1e-12, "${} within max_usd", b.usd);
    let log = lines(&runs.join("batches.jsonl"));
    assert!(log.iter().any(|l| l["round"] == 1 && l["ended"] == "gone"), "{log:?}");
    assert!(stdout(&out).contains("(includes 8 possibly billed"), "{}", stdout(&out));
    assert!(text(&out).contains("the job was deleted or lost and will not end; round 1's 8 queries booked as possibly billed at their reservations ($"), "{}", text(&out));
}

/// Replies in a batch job's output go through the bounds a live reply does: 1 completion and
/// 100 reasoning tokens counted apart (max_tokens 64) are 101 output tokens billed above
/// max_tokens, named in result.json and the summary (it said 0 above max_tokens, 0 tokens most).
#[test]
fn batch_replies_billed_above_max_tokens_are_named() {
    let fake = FakeOpenAi::start_with(
        Box::new(crate::common::fake_openai::longer_wins),
        Box::new(|_| {
            Some(
                json!({"prompt_tokens": 100, "completion_tokens": 1, "completion_tokens_details": {"reasoning_tokens": 100}}),
            )
        }),
    );
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), "think", &fake.base_url, "  max_comparisons: 8\n  max_usd: 1\n");
    let out = run(dir.path(), &cfg, &[]);
    assert!(out.status.success(), "{}", text(&out));
    let r = json(&dir.path().join("runs/think/result.json"));
    let o = &r["overrun"];
    assert_eq!((o["above_max_tokens"].as_u64(), o["most_completion_tokens"].as_u64()), (Some(8), Some(101)), "{o}");
    assert!(
        text(&out).contains("8 replies billed above max_tokens 64 (up to 101 output tokens, reasoning included)"),
        "{}",
        text(&out)
    );
}

/// `max_usd` bounds a round before it is submitted: the reservations at the batch price.
#[test]
fn max_usd_holds_across_rounds() {
    let fake = FakeOpenAi::start();
    let dir = tempfile::tempdir().unwrap();
    // A query's worst case is a few hundred prompt bytes and 64 completion tokens at half price.
    let max = 0.0012;
    let cfg = config(dir.path(), "m", &fake.base_url, &format!("  max_usd: {max}\n"));
    let out = run(dir.path(), &cfg, &[]);
    assert!(out.status.success(), "{}", text(&out));
    let runs = dir.path().join("runs/m");
    assert_eq!(json(&runs.join("result.json"))["stop_reason"], "max_usd");
    assert!(booked(&runs).verdicts > 0);
    check_books(&fake, &runs, Some(max));
}

/// The dry run of a batch config prices each query at the batch price: half the live worst
/// case with `batch_discount: 0.5`.
#[test]
fn the_dry_run_prices_queries_at_the_batch_price() {
    let fake = FakeOpenAi::start();
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), "p", &fake.base_url, "  max_comparisons: 8\n");
    let worst = |cfg: &Path| -> f64 {
        let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--dry-run"]);
        assert!(out.status.success(), "{}", text(&out));
        let line = stdout(&out).lines().find(|l| l.starts_with("worst-case cost of this run: $")).unwrap().to_owned();
        line.trim_start_matches("worst-case cost of this run: $").parse().unwrap()
    };
    let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--dry-run"]);
    assert!(
        stdout(&out).contains("dispatch: batch, rounds of 8 queries") && stdout(&out).contains("50% off"),
        "{}",
        stdout(&out)
    );
    let batch = worst(&cfg);
    let yaml =
        std::fs::read_to_string(&cfg).unwrap().replace("  dispatch: batch\n  round_size: 8\n  poll_s: 0.02\n", "");
    let live = write(dir.path(), "live.yaml", &yaml);
    let full = worst(&live);
    assert!(batch > 0.0 && (batch - full * (1.0 - DISCOUNT)).abs() < 1e-6 * full, "batch {batch}, live {full}");
    assert_eq!(fake.batch_jobs().len(), 0, "a dry run sends nothing");
}

/// The dry run of a folder with an open batch job says so, leaves the job's queries out of the
/// counts (max_comparisons 16, 8 in the job: 8 more) and never shows one of them as the first
/// prompt (it showed the job's first pair, counted 16 and called the reservation "verdicts, paid
/// failures, possibly billed requests").
#[test]
fn the_dry_run_leaves_out_the_queries_of_an_open_batch_job() {
    let fake = FakeOpenAi::start();
    fake.batch_script(BatchScript { delay_ms: 60_000, ..Default::default() });
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), "o", &fake.base_url, "  max_comparisons: 16\n");
    assert!(run(dir.path(), &cfg, &["--detach"]).status.success());
    let runs = dir.path().join("runs/o");
    let reserved = json(&runs.join("result.json"))["in_open_batch_job"]["reserved_usd"].as_f64().unwrap();
    let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--dry-run"]);
    let t = stdout(&out);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        t.contains(&format!("an open batch job holds 8 queries (in the spend booked at their reservations, ${reserved:.6}, until its results are booked): a real run first waits for the job")),
        "{t}"
    );
    assert!(t.contains("queries the budget allows: 8\n"), "{t}");
    let first = t.lines().find(|l| l.starts_with("first prompt (")).unwrap_or_else(|| panic!("{t}"));
    let (a, b) = first["first prompt (".len()..].split_once(" shown first, ").unwrap();
    let b = b.split(' ').next().unwrap();
    let in_job: Vec<(String, String)> = lines(&runs.join("intents.jsonl"))
        .iter()
        .filter_map(|i| Some((i["a"].as_str()?.to_owned(), i["b"].as_str()?.to_owned())))
        .collect();
    assert_eq!(in_job.len(), 8);
    assert!(!in_job.contains(&(a.to_owned(), b.to_owned())), "{first} is in the job: {in_job:?}");
    assert_eq!(fake.batch_jobs().len(), 1, "a dry run sends nothing");
}

/// Batch settings are checked where they are written.
#[test]
fn batch_settings_are_checked_and_named() {
    let fake = FakeOpenAi::start();
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), "s", &fake.base_url, "  max_comparisons: 8\n");
    let yaml = std::fs::read_to_string(&cfg).unwrap();
    for (from, to, names) in [
        ("  dispatch: batch\n", "", "acquisition.round_size"),
        ("batch_discount: 0.5", "batch_discount: 1.5", "judge.openai.price.batch_discount"),
        ("  poll_s: 0.02\n", "  poll_s: -1\n", "acquisition.poll_s"),
        ("  round_size: 8\n", "  round_size: 0\n", "acquisition.round_size"),
    ] {
        let bad = write(dir.path(), "bad.yaml", &yaml.replace(from, to));
        let out = run(dir.path(), &bad, &[]);
        assert!(!out.status.success() && text(&out).contains(names), "{names}: {}", text(&out));
    }
    let mock = write(dir.path(), "mock.yaml", &mock_config_text());
    let out = run(dir.path(), &mock, &[]);
    assert!(text(&out).contains("acquisition.dispatch") && text(&out).contains("OpenAI-compatible"), "{}", text(&out));
    let live =
        write(dir.path(), "live.yaml", &yaml.replace("  dispatch: batch\n  round_size: 8\n  poll_s: 0.02\n", ""));
    // The run and its dry run refuse it alike.
    for args in [&["--detach"][..], &["--detach", "--dry-run"][..]] {
        let out = run(dir.path(), &live, args);
        assert!(!out.status.success(), "{args:?}: {}", text(&out));
        assert!(text(&out).contains("--detach: applies to `acquisition.dispatch: batch` only"), "{}", text(&out));
    }
    assert_eq!(fake.n_requests() + fake.batch_jobs().len(), 0, "nothing was sent");
}

fn mock_config_text() -> String {
    "name: m\nout_dir: runs\npool:\n  synthetic: {n: 6, seed: 1}\nk: 2\njudge:\n  mock: {}\nacquisition:\n  dispatch: batch\nbudget:\n  max_comparisons: 8\n".into()
}

/// In the simulator a batch round of R is a wait-for-batch round of R sent at once, at the batch
/// price: the `batch` setting's recall equals that of a sweep with `refit_every: R` and
/// wait-for-batch C = R on the same pools, at half the spend; `round_size` is checked.
#[test]
fn a_simulated_batch_round_is_a_wait_for_batch_round_at_half_price() {
    let dir = tempfile::tempdir().unwrap();
    let sweep = |name: &str, refit: usize, runs: &str| {
        write(
            dir.path(),
            &format!("{name}.yaml"),
            &format!(
                "name: {name}\nout_dir: out\nk: 3\npools: {{n: 12, count: 3, seed: 1, rho: 0.0, c_star: 1.0, kappa_star: 0.5}}\nbudgets: [24, 48]\nrefit_every: {refit}\nmc_draws: 100\npipeline:\n  latency: {{mean_s: 0.5, sd_s: 0.0}}\n  batch_discount: 0.5\n  runs:\n{runs}threads: 1\n"
            ),
        )
    };
    let rows = |name: &str| -> Vec<Vec<String>> {
        let t = std::fs::read_to_string(dir.path().join("out").join(name).join("rows.csv")).unwrap();
        t.lines().skip(1).map(|l| l.split(',').map(str::to_owned).collect()).collect()
    };
    let a = sweep("a", 4, "    - {concurrency: 4, dispatch: wait_for_batch}\n    - {dispatch: batch, round_size: 8}\n");
    let b = sweep("b", 8, "    - {concurrency: 8, dispatch: wait_for_batch}\n");
    for cfg in [&a, &b] {
        let out = run_bin(dir.path(), &["simulate", cfg.to_str().unwrap(), "--quiet"]);
        assert!(out.status.success(), "{}", text(&out));
    }
    // rows.csv: pool_seed,budget,concurrency,dispatch,write_ahead,comparisons,spend,recall,wall_s
    let batch: Vec<Vec<String>> = rows("a").into_iter().filter(|r| r[3] == "batch").collect();
    let wfb = rows("b");
    assert_eq!(batch.len(), 6);
    for (x, y) in batch.iter().zip(&wfb) {
        assert_eq!((&x[0], &x[1], &x[2], &x[5], &x[7]), (&y[0], &y[1], &y[2], &y[5], &y[7]), "{x:?} vs {y:?}");
        let (cmp, spend): (f64, f64) = (x[5].parse().unwrap(), x[6].parse().unwrap());
        assert_eq!(spend, cmp * 0.5);
    }
    let summary = std::fs::read_to_string(dir.path().join("out/a/summary.md")).unwrap();
    assert!(summary.contains("| batch, rounds of 8 |") && summary.contains("spend (live queries)"), "{summary}");
    let bad = sweep("c", 4, "    - {concurrency: 4, dispatch: batch}\n");
    let out = run_bin(dir.path(), &["simulate", bad.to_str().unwrap(), "--quiet"]);
    assert!(!out.status.success() && text(&out).contains("pipeline.runs[0].round_size"), "{}", text(&out));
}

/// A provider that refuses every batch input: nothing runs, nothing is billed, each query is
/// closed unbilled with the provider's error quoted, and the run ends as a failing judge.
#[test]
fn a_failed_job_bills_nothing_and_quotes_the_provider() {
    let fake = FakeOpenAi::start();
    fake.batch_script(BatchScript { fail: true, ..Default::default() });
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), "f", &fake.base_url, "  max_comparisons: 16\n");
    let out = run(dir.path(), &cfg, &[]);
    let runs = dir.path().join("runs/f");
    let r = json(&runs.join("result.json"));
    assert_eq!(r["stop_reason"], "judge_failing", "{}", text(&out));
    assert!(!out.status.success());
    let last = r["last_error"].as_str().unwrap();
    assert!(last.contains("failed before running it") && last.contains("input line 1"), "{last}");
    // Nothing ran: only the pair of the input line the errors name failed (hunt 47: every pair
    // of the round was counted failed, and each set aside after its two orders).
    let q = r["quarantined"].as_array().unwrap();
    assert_eq!(q.len(), 1, "{q:?}");
    assert_eq!(
        (q[0]["a"].as_str(), q[0]["b"].as_str(), q[0]["failed_queries"].as_u64()),
        (Some("a2"), Some("a6"), Some(2))
    );
    let b = booked(&runs);
    assert_eq!((b.verdicts, b.usd, b.open_intents), (0, 0.0, 0));
    assert!(fake.batch_billed_lines().is_empty());
    check_books(&fake, &runs, None);
}

/// A server without the Files API (e.g. a local llama.cpp): the first round's upload answers
/// 404, the run stops at once as a failing judge naming `acquisition.dispatch`, nothing is billed.
#[test]
fn a_server_without_batch_jobs_is_named_at_the_first_round() {
    let fake = FakeOpenAi::start();
    fake.without_files_api();
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), "n", &fake.base_url, "  max_comparisons: 16\n");
    let out = run(dir.path(), &cfg, &[]);
    assert!(!out.status.success());
    let runs = dir.path().join("runs/n");
    let r = json(&runs.join("result.json"));
    assert_eq!(r["stop_reason"], "judge_failing");
    let last = r["last_error"].as_str().unwrap();
    assert!(last.contains("no Files API") && last.contains("HTTP 404") && last.contains("wait_for_batch"), "{last}");
    let b = booked(&runs);
    assert_eq!((b.verdicts, b.usd, b.open_intents), (0, 0.0, 0));
    assert_eq!(lines(&runs.join("intents.jsonl")).iter().filter(|l| l["intent"].is_u64()).count(), 8, "one round only");
    // Files API redirected: not followed; the first round stops the run naming the target
    // (its query values as ***) and base_url, and leaves no round open.
    let fake = FakeOpenAi::start();
    fake.move_files_api("http://127.0.0.1:9/v1/files?token=abc");
    let cfg = config(dir.path(), "m", &fake.base_url, "  max_comparisons: 16\n");
    let out = run(dir.path(), &cfg, &[]);
    assert!(!out.status.success());
    let runs = dir.path().join("runs/m");
    let last = json(&runs.join("result.json"))["last_error"].as_str().unwrap().to_owned();
    assert!(
        last.contains(&format!(
            "{}/files answered HTTP 307 (a redirect to http://127.0.0.1:9/v1/files?token=***)",
            fake.base_url
        )) && last.contains("set judge.openai.base_url"),
        "{last}"
    );
    let b = booked(&runs);
    assert_eq!((b.verdicts, b.usd, b.open_intents), (0, 0.0, 0));
    assert_eq!(lines(&runs.join("intents.jsonl")).iter().filter(|l| l["intent"].is_u64()).count(), 8, "one round only");
    assert!(lines(&runs.join("batches.jsonl")).iter().any(|l| l["ended"] == "not_submitted"));
    // A server answering the Files and Batches API's POSTs as chat completions (a proxy): no
    // Batches API there. It was taken as a job made, then lost, and each round booked as
    // possibly billed at its worst case; now the first round stops the run, nothing booked.
    let fake = FakeOpenAi::start();
    fake.answer_batch_posts_as_chat();
    let cfg = config(dir.path(), "chat", &fake.base_url, "  max_comparisons: 16\n");
    let out = run(dir.path(), &cfg, &[]);
    assert!(!out.status.success());
    let runs = dir.path().join("runs/chat");
    let last = json(&runs.join("result.json"))["last_error"].as_str().unwrap().to_owned();
    assert!(
        last.contains("upload the batch input: the server answered with a chat.completion object, not a file: it has no Files and Batches API; use dispatch: wait_for_batch or pipelined"),
        "{last}"
    );
    let b = booked(&runs);
    assert_eq!((b.verdicts, b.possibly_billed, b.usd, b.open_intents), (0, 0, 0.0, 0));
}

/// A job's files that disagree with what ran (custom ids the round never had, one id repeated,
/// half the lines missing, no output file, lines that are not JSON): every line ran and is
/// billed, so the requests without a line are booked as possibly billed at their worst case,
/// the round closes with a warning naming the disagreement, and the books hold the bill within
/// `max_usd`.
#[test]
fn files_that_disagree_with_the_bill_are_booked_at_the_worst_case() {
    for (fault, said) in [
        (OutputFault::WrongIds, "8 lines with a custom_id no request of the round has"),
        (OutputFault::RepeatFirst, "7 lines repeating a request's custom_id"),
        (OutputFault::DropHalf, "request counts of 8 that ran against 4 lines of the round"),
        (OutputFault::NoOutputFile, "request counts of 8 that ran against 0 lines of the round"),
        (OutputFault::Garbage, "8 unreadable lines (file file-"),
        (OutputFault::Extra, "20 lines with a custom_id no request of the round has"),
    ] {
        let fake = FakeOpenAi::start();
        fake.batch_script(BatchScript { output_fault: Some(fault), ..Default::default() });
        let dir = tempfile::tempdir().unwrap();
        let max = 0.01;
        let cfg = config(dir.path(), "d", &fake.base_url, &format!("  max_comparisons: 16\n  max_usd: {max}\n"));
        let out = run(dir.path(), &cfg, &[]);
        let runs = dir.path().join("runs/d");
        let all = text(&out);
        assert!(all.contains("do not match the round") && all.contains(said), "{fault:?}: {all}");
        let b = booked(&runs);
        assert_eq!(b.open_intents, 0, "{fault:?}: the round is closed, not left pending: {b:?}");
        let billed = bill(&fake);
        assert!(billed > 0.0 && billed <= b.usd + 1e-12, "{fault:?}: the books (${}) hold the bill (${billed})", b.usd);
        assert!(b.usd <= max + 1e-12, "{fault:?}: ${} within max_usd", b.usd);
        let r = json(&runs.join("result.json"));
        assert_ne!(r["stop_reason"], "batch_pending", "{fault:?}");
        // The queries without a line are booked as possibly billed, and said so.
        assert_eq!(r["possibly_billed"].as_u64().unwrap() as usize, b.possibly_billed, "{fault:?}: {r}");
        assert_eq!(r["folder_spend"]["possibly_billed"], r["possibly_billed"], "{fault:?}: {r}");
        if fault != OutputFault::Extra {
            assert!(b.possibly_billed > 0, "{fault:?}: {b:?}");
            assert!(
                stdout(&out).contains(&format!("(includes {} possibly billed", b.possibly_billed)),
                "{fault:?}: {all}"
            );
        }
        if fault == OutputFault::Extra {
            // Every query has its line: the extra lines are booked at the usage they report.
            assert!((b.usd - billed).abs() < 1e-12, "books ${} = bill ${billed}", b.usd);
            assert_eq!(b.verdicts, 16);
        }
    }
}

/// A job that reports a status the Batches API does not have is polled, never submitted again,
/// and left open with the way out said; the run exits 1 with an `error:` line.
#[test]
fn a_job_in_an_unknown_status_is_left_open_with_the_way_out() {
    let fake = FakeOpenAi::start();
    fake.batch_script(BatchScript { status_text: Some("exploded".into()), ..Default::default() });
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), "x", &fake.base_url, "  max_comparisons: 16\n");
    let out = run(dir.path(), &cfg, &[]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert_eq!(fake.batch_jobs().len(), 1, "not submitted again: {t}");
    assert!(
        t.contains("reports the status \"exploded\", not one of the Batches API's")
            && t.contains("cancel the job with the provider and run again"),
        "{t}"
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("error: run ") && err.contains("a batch job is still open"), "{err}");
    let b = booked(&dir.path().join("runs/x"));
    assert_eq!((b.verdicts, b.open_intents), (0, 8), "the round stays open, reserved");
}

/// A provider's batch error texts are server text: the key they quote is redacted everywhere;
/// a provider that spells job statuses in capitals is read as the API's statuses.
#[test]
fn batch_errors_never_show_the_key_and_capital_statuses_are_read() {
    let key = "sk-proj-BATCHLEAK0123456789abcdefXYZ";
    let fake = FakeOpenAi::start();
    fake.batch_script(BatchScript {
        fail: true,
        fail_message: Some(format!("bad input; key={key}")),
        ..Default::default()
    });
    let dir = tempfile::tempdir().unwrap();
    // A run of `name` against `fake` with the key set: all it printed.
    let keyed_run = |name: &str, fake: &FakeOpenAi| {
        let cfg = config(dir.path(), name, &fake.base_url, "  max_comparisons: 16\n");
        let out = Command::new(bin())
            .current_dir(dir.path())
            .args(["run", cfg.to_str().unwrap()])
            .env("TOPK_BATCH_TEST_UNSET_KEY", key)
            .env_remove("RUST_LOG")
            .output()
            .unwrap();
        text(&out)
    };
    let all = keyed_run("s", &fake);
    assert!(all.contains("bad input; key=[redacted]"), "{all}");
    let no_key = |all: &str, run: &Path| {
        assert!(!all.contains("BATCHLEAK"), "{all}");
        for f in std::fs::read_dir(run).unwrap() {
            let f = f.unwrap().path();
            let t = std::fs::read_to_string(&f).unwrap_or_default();
            assert!(!t.contains("BATCHLEAK"), "the key is in {}", f.display());
        }
    };
    no_key(&all, &dir.path().join("runs/s"));
    // The key in the `error` object (code and message) of a failed line of the error file: the
    // file is redacted before any field of it is read.
    let fake = FakeOpenAi::start();
    fake.batch_script(BatchScript {
        error_lines: (0..8).collect(),
        error_text: Some(format!("Incorrect API key provided: {key}")),
        ..Default::default()
    });
    let all = keyed_run("e", &fake);
    assert!(all.contains("Incorrect API key provided: [redacted]"), "{all}");
    no_key(&all, &dir.path().join("runs/e"));
    // The same with every character of the line's text written as a JSON \u escape: redacted
    // in the strings as parsed.
    let fake = FakeOpenAi::start();
    fake.batch_script(BatchScript {
        error_lines: (0..8).collect(),
        error_text: Some(format!("Incorrect API key provided: {key}")),
        escape_error_text: true,
        ..Default::default()
    });
    let all = keyed_run("x", &fake);
    assert!(all.contains("Incorrect API key provided: [redacted]"), "{all}");
    no_key(&all, &dir.path().join("runs/x"));
    let out = run_bin(dir.path(), &["report", "runs/e"]);
    no_key(&text(&out), &dir.path().join("runs/e"));
    let fake = FakeOpenAi::start();
    fake.batch_script(BatchScript { status_upper: true, ..Default::default() });
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), "u", &fake.base_url, "  max_comparisons: 16\n");
    let out = run(dir.path(), &cfg, &[]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(fake.batch_jobs().len(), 2, "one job per round, none submitted twice");
    let runs = dir.path().join("runs/u");
    assert_eq!(booked(&runs).verdicts, 16);
    check_books(&fake, &runs, None);
}

/// A line of batches.jsonl that is not a batch line is named alike by the run, its dry run and
/// `--abandon-batch`: `batches.jsonl:2: …; fix or remove that line` (hunt 41: the dry run said
/// `batches.jsonl: line 2:` and the real run had no advice). Nothing is sent or booked.
#[test]
fn a_damaged_batch_log_is_named_alike_by_every_command() {
    let fake = FakeOpenAi::start();
    fake.batch_script(BatchScript { delay_ms: 60_000, ..Default::default() });
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), "dmg", &fake.base_url, "  max_comparisons: 8\n  max_usd: 0.01\n");
    assert!(run(dir.path(), &cfg, &["--detach"]).status.success());
    let runs = dir.path().join("runs/dmg");
    let log = runs.join("batches.jsonl");
    let text0 = std::fs::read_to_string(&log).unwrap();
    let (first, rest) = text0.split_once('\n').unwrap();
    std::fs::write(&log, format!("{first}\nnot json at all\n{rest}")).unwrap();
    let (jobs, requests) = (fake.batch_jobs().len(), fake.n_requests());
    for extra in [&[][..], &["--dry-run"], &["--abandon-batch"], &["--dry-run", "--abandon-batch"]] {
        let out = run(dir.path(), &cfg, extra);
        assert_eq!(out.status.code(), Some(1), "{extra:?}: {}", text(&out));
        let said = stderr(&out);
        assert!(
            said.contains(&format!("{}:2: not a batch line", log.display()))
                && said.contains("; fix or remove that line (the queries of a round no longer recorded are booked as possibly billed)"),
            "{extra:?}: {said}"
        );
    }
    assert_eq!((fake.batch_jobs().len(), fake.n_requests()), (jobs, requests), "nothing was sent");
    assert_eq!(booked(&runs).open_intents, 8, "nothing was booked");
}

/// The last line of intents.jsonl torn by hand while a round is open: the job's line for that
/// request is the round's own (batches.jsonl records its key), said as such and booked at what
/// it cost, not as a line "no request of the round has" (hunt 41 #5b). The rest is booked as
/// usual: 7 verdicts, and the books hold the bill.
#[test]
fn a_lost_intent_of_an_open_round_is_said_as_the_rounds_own() {
    let fake = FakeOpenAi::start();
    fake.batch_script(BatchScript { delay_ms: 1_500, ..Default::default() });
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), "torn", &fake.base_url, "  max_comparisons: 8\n  max_usd: 0.01\n");
    assert!(run(dir.path(), &cfg, &["--detach"]).status.success());
    let runs = dir.path().join("runs/torn");
    let path = runs.join("intents.jsonl");
    let text0 = std::fs::read_to_string(&path).unwrap();
    let cut = text0.trim_end().rfind('\n').unwrap() + 1;
    std::fs::write(&path, &text0[..cut + 10]).unwrap();
    wait_until("the job to end", 30, || fake.batch_jobs()[0].1 == "completed");
    let out = run(dir.path(), &cfg, &["--max-comparisons", "7"]);
    assert!(out.status.success(), "{}", text(&out));
    let said = stderr(&out);
    assert!(
        said.contains("1 line of a request the round recorded in batches.jsonl whose intent intents.jsonl no longer holds open (a damaged line?): booked at what it cost, its verdict matched to no pair"),
        "{said}"
    );
    assert!(!said.contains("no request of the round has") && !said.contains("request counts of"), "{said}");
    assert_eq!(booked(&runs).verdicts, 7);
    assert_eq!(fake.batch_jobs().len(), 1, "nothing asked again");
    assert!(bill(&fake) <= booked(&runs).usd + 1e-12);
}

/// A stop while a round's results were being booked (here: the round's `ended` line and its
/// last verdict are not written): the resumed round books the one left, and the job's lines of
/// the requests already booked are not booked again as lines beyond the round; the books equal
/// the bill.
#[test]
fn a_round_stopped_while_booking_books_each_result_once() {
    let fake = FakeOpenAi::start();
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), "half", &fake.base_url, "  max_comparisons: 8\n");
    assert!(run(dir.path(), &cfg, &[]).status.success());
    let runs = dir.path().join("runs/half");
    assert_eq!(booked(&runs).verdicts, 8);
    let drop_last = |file: &str, keep: &dyn Fn(&str) -> bool| {
        let p = runs.join(file);
        let t = std::fs::read_to_string(&p).unwrap();
        let mut kept: Vec<&str> = t.lines().collect();
        let at = kept.iter().rposition(|l| !keep(l)).unwrap();
        kept.remove(at);
        std::fs::write(&p, kept.iter().map(|l| format!("{l}\n")).collect::<String>()).unwrap();
    };
    drop_last("batches.jsonl", &|l| !l.contains("\"ended\""));
    drop_last("verdicts.jsonl", &|_| false);
    assert_eq!(booked(&runs).open_intents, 1);
    let out = run(dir.path(), &cfg, &[]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(!stderr(&out).contains("do not match the round"), "{}", text(&out));
    assert_eq!(booked(&runs).verdicts, 8);
    assert_eq!(fake.batch_jobs().len(), 1, "nothing asked again");
    assert!(
        (bill(&fake) - booked(&runs).usd).abs() < 1e-12,
        "books ${} for a bill of ${}",
        booked(&runs).usd,
        bill(&fake)
    );
}

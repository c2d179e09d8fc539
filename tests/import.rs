//! `topk-judge import` on the real benchmark excerpts of tests/fixtures/benchmarks (README.md
//! there): answers into pool files with exact counts, the same data in other layouts to the same
//! bytes, named errors, and published verdicts into replay recordings.

use crate::common::*;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The AlpacaEval models in the order of the excerpt's CSV rows.
const AE_MODELS: [&str; 10] = [
    "FuseChat-Gemma-2-9B-Instruct",
    "FuseChat-Llama-3.1-8B-Instruct",
    "FuseChat-Llama-3.2-3B-Instruct",
    "gpt4_1106_preview",
    "claude-2",
    "gpt-3.5-turbo-0301",
    "Qwen-14B-Chat",
    "vicuna-13b-v1.5",
    "alpaca-7b",
    "falcon-7b-instruct",
];

fn bench(rel: &str) -> PathBuf {
    root().join("tests/fixtures/benchmarks").join(rel)
}

fn files(dir: &str, ext: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(bench(dir))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == ext))
        .collect();
    v.sort();
    v
}

/// Run `import` with `args` then the input files and `--out out`; stdout on success, else the
/// error text (stdout + stderr) with `Err`.
fn import(dir: &Path, args: &[&str], inputs: &[PathBuf], out: &Path) -> Result<String, String> {
    let mut all: Vec<String> = vec!["import".into()];
    all.extend(args.iter().map(|s| s.to_string()));
    all.extend(inputs.iter().map(|p| p.display().to_string()));
    all.extend(["--out".into(), out.display().to_string()]);
    let refs: Vec<&str> = all.iter().map(String::as_str).collect();
    let o = run_bin(dir, &refs);
    if o.status.success() { Ok(stdout(&o)) } else { Err(text(&o)) }
}

fn lines(p: &Path) -> Vec<Value> {
    std::fs::read_to_string(p).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn alpaca_outputs() -> Vec<PathBuf> {
    AE_MODELS.iter().map(|m| bench(&format!("alpaca_eval/outputs/{m}.json"))).collect()
}

#[test]
fn alpaca_eval_json_csv_and_tsv_import_to_the_same_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let json = d.join("json.jsonl");
    let shown = import(d, &["--format", "alpaca_eval"], &alpaca_outputs(), &json).unwrap();
    assert_eq!(
        shown,
        format!("wrote {}: 45 prompts × 10 systems (450 answers: {})\n", json.display(), AE_MODELS.join(", "))
    );
    let pools = lines(&json);
    assert_eq!(pools.len(), 45);
    assert!(pools.iter().all(|p| p["items"].as_array().unwrap().len() == 10));
    let csv = d.join("csv.jsonl");
    import(d, &["--format", "csv"], &[bench("alpaca_eval/alpaca_eval_excerpt.csv")], &csv).unwrap();
    let tsv = d.join("tsv.jsonl");
    import(d, &["--format", "tsv"], &[bench("alpaca_eval/alpaca_eval_excerpt.tsv")], &tsv).unwrap();
    let bytes = std::fs::read(&json).unwrap();
    assert!(std::fs::read(&csv).unwrap() == bytes, "CSV import differs from the JSON import");
    assert!(std::fs::read(&tsv).unwrap() == bytes, "TSV import differs from the JSON import");

    // Columns in another order, with pandas' unnamed index column and one more: the same pool.
    let mut rd = csv::Reader::from_path(bench("alpaca_eval/alpaca_eval_excerpt.csv")).unwrap();
    let re = d.join("reordered.csv");
    let mut wr = csv::Writer::from_path(&re).unwrap();
    wr.write_record(["", "text", "model_note", "system", "prompt", "prompt_id"]).unwrap();
    for (i, r) in rd.records().enumerate() {
        let r = r.unwrap();
        wr.write_record([&i.to_string(), &r[3], "n/a", &r[2], &r[1], &r[0]]).unwrap();
    }
    wr.flush().unwrap();
    drop(wr);
    let out = d.join("re.jsonl");
    let shown = import(d, &["--format", "csv"], std::slice::from_ref(&re), &out).unwrap();
    assert!(shown.ends_with(&format!("ignored columns: \"\", \"model_note\" (in {})\n", re.display())), "{shown}");
    assert!(std::fs::read(&out).unwrap() == bytes);

    // --system-from file: the file stem names the system (here the same names).
    let stem = d.join("stem.jsonl");
    import(d, &["--format", "alpaca_eval", "--system-from", "file"], &alpaca_outputs(), &stem).unwrap();
    assert!(std::fs::read(&stem).unwrap() == bytes);
    let renamed = d.join("NullModel.json");
    std::fs::copy(bench("alpaca_eval/outputs/claude-2.json"), &renamed).unwrap();
    let two = [bench("alpaca_eval/outputs/alpaca-7b.json"), renamed];
    let shown = import(d, &["--format", "alpaca_eval", "--system-from", "file"], &two, &d.join("n.jsonl")).unwrap();
    assert!(shown.contains("45 prompts × 2 systems (90 answers: alpaca-7b, NullModel)"), "{shown}");
}

#[test]
fn arena_hard_2024_and_2025_layouts_import_to_the_same_pool() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut outs = Vec::new();
    for year in ["2024", "2025"] {
        let out = d.join(format!("{year}.jsonl"));
        let q = bench(&format!("arena_hard/{year}/question.jsonl")).display().to_string();
        let shown = import(
            d,
            &["--format", "arena_hard", "--questions", &q],
            &files(&format!("arena_hard/{year}/model_answer"), "jsonl"),
            &out,
        )
        .unwrap();
        assert_eq!(
            shown,
            format!(
                "wrote {}: 20 prompts × 3 systems (60 answers: gpt-3.5-turbo-0125, gpt-4-0314, gpt-4-0613)\n",
                out.display()
            )
        );
        outs.push(lines(&out));
    }
    // The same prompts × systems and texts (2024's question_id is 2025's uid).
    assert_eq!(outs[0], outs[1]);
    let questions: BTreeMap<String, String> = lines(&bench("arena_hard/2025/question.jsonl"))
        .iter()
        .map(|q| (q["uid"].as_str().unwrap().to_owned(), q["prompt"].as_str().unwrap().to_owned()))
        .collect();
    let got: BTreeMap<String, String> = outs[0]
        .iter()
        .map(|p| (p["pool_id"].as_str().unwrap().to_owned(), p["task"].as_str().unwrap().to_owned()))
        .collect();
    assert_eq!(got, questions);
}

#[test]
fn mt_bench_keeps_both_turns_and_arena_bench_reads_string_turns() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = d.join("mt.jsonl");
    let q = bench("mt_bench/question.jsonl").display().to_string();
    let inputs = [bench("mt_bench/model_answer/gpt-4o.jsonl"), bench("mt_bench/reference_answer/gpt-4.jsonl")];
    let shown = import(d, &["--format", "mt_bench", "--questions", &q], &inputs, &out).unwrap();
    assert_eq!(
        shown,
        format!(
            "wrote {}: 4 prompts × 2 systems (8 answers: gpt-4o, gpt-4)\n\
             left out 6 prompts answered by fewer than 2 systems (nothing to compare): 81, 89, 97, 137, 145, … (6 in all)\n\
             4 prompts keep their turns (task_turns on the pool line, turns on each answer)\n",
            out.display()
        )
    );
    let pools = lines(&out);
    let ids: Vec<&str> = pools.iter().map(|p| p["pool_id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["105", "113", "121", "129"]);
    for p in &pools {
        let tt: Vec<&str> = p["task_turns"].as_array().unwrap().iter().map(|t| t.as_str().unwrap()).collect();
        assert_eq!(tt.len(), 2);
        assert_eq!(p["task"], tt.join("\n\n"));
        for it in p["items"].as_array().unwrap() {
            let turns: Vec<&str> = it["turns"].as_array().unwrap().iter().map(|t| t.as_str().unwrap()).collect();
            assert_eq!(turns.len(), 2);
            assert_eq!(it["text"], turns.join("\n\n"));
        }
    }
    // The pool file loads with its turns.
    let pool = topk_judge::config::run::load_systems_pool(&out, &topk_judge::config::run::PoolIds::All).unwrap();
    assert_eq!((pool.n_prompts(), pool.n_bases(), pool.n_items()), (4, 2, 8));
    assert_eq!(pool.task_turns_of(0).len(), 2);
    assert_eq!(
        pool.turns_of(1),
        pools[0]["items"][1]["turns"].as_array().unwrap().iter().map(|t| t.as_str().unwrap()).collect::<Vec<_>>()
    );

    // arena-bench-v1 answers are in FastChat's layout: 30 prompts × 4 systems, single-turn.
    let out = d.join("ab.jsonl");
    let q = bench("arena_bench_v1/question.jsonl").display().to_string();
    let shown =
        import(d, &["--format", "mt_bench", "--questions", &q], &files("arena_bench_v1/model_answer", "jsonl"), &out)
            .unwrap();
    assert!(shown.starts_with(&format!("wrote {}: 30 prompts × 4 systems (120 answers: ", out.display())), "{shown}");
    assert!(lines(&out).iter().all(|p| p.get("task_turns").is_none()));
}

#[test]
fn bad_inputs_are_named_errors() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = d.join("out.jsonl");
    let err = |args: &[&str], inputs: &[PathBuf]| {
        import(d, args, inputs, &out)
            .unwrap_err()
            .replace(&d.display().to_string(), "D")
            .replace(&root().join("tests/fixtures/benchmarks").display().to_string(), "B")
    };
    // A FastChat question file read as Arena-Hard: its string turns are named, not read as empty.
    let q = bench("arena_bench_v1/question.jsonl").display().to_string();
    let e = err(&["--format", "arena_hard", "--questions", &q], &files("arena_bench_v1/model_answer", "jsonl"));
    assert!(
        e.contains(
            "B/arena_bench_v1/question.jsonl:1: turn 1 is a string, as in the MT-Bench (FastChat) layout: read this file with --format mt_bench; expected an Arena-Hard question {\"uid\", \"prompt\"} (2025) or {\"question_id\", \"turns\": [{\"content\"}]} (2024)"
        ),
        "{e}"
    );
    // An answer of two turns to a question of one is joined into one text and said (it was
    // silent); to a question of two, a count of turns that differs is refused.
    let q1 = write(d, "mtq.jsonl", "{\"question_id\": 1, \"turns\": [\"q1\"]}\n");
    let a2 = write(
        d,
        "mta.jsonl",
        "{\"question_id\": 1, \"model_id\": \"a\", \"choices\": [{\"index\": 0, \"turns\": [\"x\", \"y\"]}]}\n{\"question_id\": 1, \"model_id\": \"b\", \"choices\": [{\"index\": 0, \"turns\": [\"x\"]}]}\n",
    );
    let shown = import(d, &["--format", "mt_bench", "--questions", q1.to_str().unwrap()], &[a2], &d.join("mt1.jsonl"))
        .unwrap()
        .replace(&d.display().to_string(), "D");
    assert!(
        shown.contains("1 answer to a prompt of one turn has several turns, joined into one text with a blank line between them (first: system \"a\", prompt \"1\", 2 turns, D/mta.jsonl:1)"),
        "{shown}"
    );
    let q2 = write(d, "mtq2.jsonl", "{\"question_id\": 1, \"turns\": [\"q1\", \"q2\"]}\n");
    let a3 = write(
        d,
        "mta3.jsonl",
        "{\"question_id\": 1, \"model_id\": \"a\", \"choices\": [{\"index\": 0, \"turns\": [\"x\", \"y\", \"z\"]}]}\n",
    );
    let e = err(&["--format", "mt_bench", "--questions", q2.to_str().unwrap()], &[a3]);
    assert!(
        e.contains("D/mta3.jsonl:1: system \"a\" answers 3 turns of prompt \"1\", which has 2 turns; expected one answer per turn"),
        "{e}"
    );
    // FastChat's samples (--num-choices 2): the first choice is imported and the rest is said (it
    // was left out silently); one prompt that keeps its turns is "1 prompt keeps" ("1 prompts keep").
    let two = write(
        d,
        "mta2c.jsonl",
        "{\"question_id\": 1, \"model_id\": \"a\", \"choices\": [{\"index\": 0, \"turns\": [\"x\", \"y\"]}, {\"index\": 1, \"turns\": [\"X\", \"Y\"]}]}\n{\"question_id\": 1, \"model_id\": \"b\", \"choices\": [{\"index\": 0, \"turns\": [\"u\", \"v\"]}]}\n",
    );
    let mt2 = d.join("mt2.jsonl");
    let shown = import(d, &["--format", "mt_bench", "--questions", q2.to_str().unwrap()], &[two], &mt2)
        .unwrap()
        .replace(&d.display().to_string(), "D");
    assert!(
        shown.contains("1 answer holds several choices (samples); the first, \"choices\"[0], is imported and the others are left out (first: system \"a\", prompt \"1\", 2 choices, D/mta2c.jsonl:1)")
            && shown.contains("1 prompt keeps its turns")
            && !shown.contains("1 prompts"),
        "{shown}"
    );
    assert_eq!(lines(&mt2)[0]["items"][0]["turns"], serde_json::json!(["x", "y"]));
    // A blank answer.
    let blank = write(
        d,
        "blank.json",
        "[\n  {\"instruction\": \"Say hi.\", \"output\": \"Hi!\", \"generator\": \"m1\"},\n  {\"instruction\": \"Say bye.\", \"output\": \" \\n\", \"generator\": \"m1\"}\n]\n",
    );
    let e = err(&["--format", "alpaca_eval"], &[blank]);
    let id = topk_judge::commands::import::instruction_id("Say bye.");
    assert!(
        e.contains(&format!(
            "D/blank.json:3: empty answer of system \"m1\" to prompt \"{id}\"; expected a non-empty answer"
        )),
        "{e}"
    );
    // Ids written with surrounding spaces are one system and one prompt (as the header's names
    // are trimmed, and read in any case); an id of spaces only is empty.
    let ws = write(d, "ws.csv", "Prompt_ID,Prompt,System,TEXT\np1 ,hi,a ,x\n p1,hi, b,y\np2,yo,a,z\np2,yo,b ,w\n");
    let shown = import(d, &["--format", "csv"], &[ws], &d.join("ws.jsonl")).unwrap();
    assert!(shown.contains("2 prompts × 2 systems (4 answers: a, b)"), "{shown}");
    let e = err(&["--format", "csv"], &[write(d, "sp.csv", "prompt_id,prompt,system,text\np1,hi,  ,x\n")]);
    assert!(e.contains("D/sp.csv:2: empty system; expected a non-empty system"), "{e}");
    let generators = write(
        d,
        "gen.json",
        "[{\"instruction\": \"Hi.\", \"output\": \"x\", \"generator\": \"m1 \"}, {\"instruction\": \"Hi.\", \"output\": \"y\", \"generator\": \"m2\"}, {\"instruction\": \"Yo.\", \"output\": \"z\", \"generator\": \"m1\"}, {\"instruction\": \"Yo.\", \"output\": \"w\", \"generator\": \"m2\"}]\n",
    );
    let shown = import(d, &["--format", "alpaca_eval"], &[generators], &d.join("gen.jsonl")).unwrap();
    assert!(shown.contains("× 2 systems (4 answers: m1, m2)"), "{shown}");
    // A file that holds no record: an error naming it, whatever its kind (an empty questions
    // file was reported as answers without question text; an empty array was dropped).
    let empty = write(d, "empty.jsonl", "");
    let e = err(
        &["--format", "arena_hard", "--questions", &empty.display().to_string()],
        &files("arena_bench_v1/model_answer", "jsonl"),
    );
    assert!(e.contains("D/empty.jsonl:1: the file holds no record (no line of JSON); expected"), "{e}");
    let e = err(&["--format", "alpaca_eval"], &[write(d, "none.json", "[]\n")]);
    assert!(e.contains("D/none.json:1: an empty JSON array (the file holds no record)"), "{e}");
    let e = err(&["--format", "csv"], &[write(d, "head.csv", "prompt_id,prompt,system,text\n")]);
    assert!(e.contains("D/head.csv:1: a header and no row (the file holds no answer)"), "{e}");
    // A row of another length than the header's, said as the tool's other faults are (it read
    // "CSV error: record 1 (line: 2, byte: 29): found record with 5 fields, but the previous
    // record has 4 fields; expected 4 fields, as in the header").
    let e = err(&["--format", "csv"], &[write(d, "extra.csv", "prompt_id,prompt,system,text\np1,hi,a,x,y\n")]);
    assert!(e.contains("D/extra.csv:2: 5 fields; expected 4, as in the header") && !e.contains("CSV error"), "{e}");
    // The physical line, with CRLF ends and a blank line before the row (the reader's own count
    // said 2 for this row on line 4: hunt 42).
    let crlf = write(d, "crlf.csv", "prompt_id,prompt,system,text\r\ncap,Q?,s1,Berlin.\r\n\r\ncap,Q?,s2\r\n");
    let e = err(&["--format", "csv"], &[crlf]);
    assert!(e.contains("D/crlf.csv:4: 3 fields; expected 4, as in the header"), "{e}");
    let e = err(&["--format", "csv"], &[write(d, "nothing.csv", "")]);
    assert!(e.contains("D/nothing.csv:1: the file is empty; expected a CSV header naming the columns prompt_id, prompt, system, text"), "{e}");
    // A key given twice in an answer: refused on its line, not read last-wins.
    let two = write(
        d,
        "two.json",
        "[{\"instruction\": \"Hi.\", \"output\": \"x\", \"generator\": \"m1\"},\n {\"instruction\": \"Hi.\", \"output\": \"y\", \"generator\": \"m2\", \"generator\": \"m3\"}]\n",
    );
    let e = err(&["--format", "alpaca_eval"], &[two]);
    assert!(e.contains("D/two.json:2: at `[1]`: duplicate key \"generator\""), "{e}");
    // A blank prompt.
    let bp = write(d, "bp.csv", "prompt_id,prompt,system,text\np1,  ,s1,x\n");
    let e = err(&["--format", "csv"], &[bp]);
    assert!(e.contains("D/bp.csv:2: blank prompt \"p1\"; expected a non-empty prompt text"), "{e}");
    // The same file twice (also under another spelling of its path).
    let f = bench("alpaca_eval/outputs/claude-2.json");
    let again = bench("alpaca_eval/outputs/../outputs/claude-2.json");
    let e = err(&["--format", "alpaca_eval"], &[f, again]);
    assert!(e.contains("B/alpaca_eval/outputs/../outputs/claude-2.json is given twice"), "{e}");
    // A missing column.
    let mc = write(d, "mc.csv", "prompt_id,text,answer\np1,x,y\n");
    let e = err(&["--format", "csv"], &[mc]);
    assert!(
        e.contains("D/mc.csv:1: the header \"prompt_id,text,answer\" lacks the columns prompt, system; expected the columns prompt_id, prompt, system, text in any order (other columns are ignored)"),
        "{e}"
    );
    // A .tsv file with --format csv.
    let e = err(&["--format", "csv"], &[bench("alpaca_eval/alpaca_eval_excerpt.tsv")]);
    assert!(
        e.contains("B/alpaca_eval/alpaca_eval_excerpt.tsv is a .tsv file: give --format tsv for tab-separated values"),
        "{e}"
    );
    // Exactly one of --format / --judgments.
    let e = err(&[], &[bench("alpaca_eval/outputs/claude-2.json")]);
    assert!(e.contains("<--format <FORMAT>|--judgments <JUDGMENTS>>"), "{e}");
    let e = err(&["--format", "csv", "--judgments", "csv"], &[bench("alpaca_eval/outputs/claude-2.json")]);
    assert!(e.contains("cannot be used with"), "{e}");
}

#[test]
fn alpaca_eval_annotations_become_405_ordered_verdicts_189_with_the_model_first() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = d.join("rec.jsonl");
    let shown = import(d, &["--judgments", "alpaca_eval"], &files("alpaca_eval/annotations", "json"), &out).unwrap();
    assert!(
        shown.starts_with(&format!(
            "wrote {}: 405 ordered verdicts of judge weighted_alpaca_eval_gpt4_turbo on 45 prompts × 10 systems (skipped 45 self-comparisons)\n",
            out.display()
        )),
        "{shown}"
    );
    assert!(shown.contains("189 of the 405 were shown with generator_2 (the model) first"), "{shown}");
    // A repeated annotation is skipped, and the count of the switch is of the verdicts written
    // (it said "of the 46" beside "45 ordered verdicts").
    let one = bench("alpaca_eval/annotations/claude-2.json");
    let mut ann: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(&one).unwrap()).unwrap();
    ann.push(ann[0].clone());
    let dup = write(d, "dup.json", &serde_json::to_string(&ann).unwrap());
    let shown = import(d, &["--judgments", "alpaca_eval"], &[dup], &d.join("dup.jsonl")).unwrap();
    assert!(shown.contains("45 ordered verdicts of judge weighted_alpaca_eval_gpt4_turbo on 45 prompts × 2 systems (skipped 1 repeated verdict)\n"), "{shown}");
    assert!(shown.contains("\n21 of the 45 were shown with generator_2 (the model) first"), "{shown}");
    let rec = lines(&out);
    assert_eq!(rec.len(), 405);
    let reference = "gpt4_1106_preview";
    assert_eq!(rec.iter().filter(|v| v["a"] != reference).count(), 189);
    assert!(rec.iter().all(|v| v["a"] == reference || v["b"] == reference));
    // pool_id is the id the answers import gives the instruction; y = P(first-shown wins).
    let pools = d.join("pools.jsonl");
    import(d, &["--format", "alpaca_eval"], &alpaca_outputs(), &pools).unwrap();
    let ids: BTreeSet<String> = lines(&pools).iter().map(|p| p["pool_id"].as_str().unwrap().to_owned()).collect();
    assert!(rec.iter().all(|v| ids.contains(v["pool_id"].as_str().unwrap())));
    // The first record of claude-2.json: preference 1.0001195986, not swapped → y = 2 − p.
    let ann: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(bench("alpaca_eval/annotations/claude-2.json")).unwrap())
            .unwrap();
    let first = &ann[0];
    let id = topk_judge::commands::import::instruction_id(first["instruction"].as_str().unwrap());
    let v = rec.iter().find(|v| v["pool_id"] == id.as_str() && (v["a"] == "claude-2" || v["b"] == "claude-2")).unwrap();
    let p = first["preference"].as_f64().unwrap();
    let y = v["y"].as_f64().unwrap();
    if v["a"] == reference {
        assert!((y - (2.0 - p)).abs() < 1e-12)
    } else {
        assert!((y - (p - 1.0)).abs() < 1e-12)
    }
    assert_eq!(v["cost_usd"], first["price_per_example"]);
    // The recording reads as a replay recording.
    topk_judge::judge::replay::Recording::read(&out).unwrap();
}

#[test]
fn arena_bench_grades_give_both_orders_of_every_graded_pair() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let inputs = files("arena_bench_v1/model_judgment", "jsonl");
    // Independently: graded models per question → 2 · C(n, 2) ordered verdicts.
    let mut graded: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in &inputs {
        for l in std::fs::read_to_string(f).unwrap().lines() {
            let v: Value = serde_json::from_str(l).unwrap();
            if !v["score"].is_null() {
                graded
                    .entry(v["question_id"].as_str().unwrap().to_owned())
                    .or_default()
                    .insert(v["model"].as_str().unwrap().to_owned());
            }
        }
    }
    let expected: usize = graded.values().map(|m| m.len() * (m.len() - 1)).sum();
    assert_eq!(expected, 360);
    let out = d.join("grades.jsonl");
    let shown = import(d, &["--judgments", "arena_bench"], &inputs, &out).unwrap();
    assert!(
        shown.starts_with(&format!(
            "wrote {}: {expected} ordered verdicts of judge gpt-4 (grades) on 30 prompts × 4 systems\n",
            out.display()
        )),
        "{shown}"
    );
    assert!(shown.contains("carry no position information"), "{shown}");
    let rec = lines(&out);
    assert_eq!(rec.len(), expected);
    // gpt-4-turbo.jsonl grades gpt-4-1106-preview (its `model` field).
    assert!(rec.iter().any(|v| v["a"] == "gpt-4-1106-preview") && rec.iter().all(|v| v["a"] != "gpt-4-turbo"));
    // Both orders of a pair have complementary outcomes.
    let y: BTreeMap<(String, String, String), f64> = rec
        .iter()
        .map(|v| ((v["pool_id"].to_string(), v["a"].to_string(), v["b"].to_string()), v["y"].as_f64().unwrap()))
        .collect();
    for ((p, a, b), v) in &y {
        assert_eq!(v + y[&(p.clone(), b.clone(), a.clone())], 1.0);
    }
    // A grade line given twice is counted once, as the other formats' repeated verdicts are
    // (hunt 47: it was an error here only); the same model graded otherwise is a conflict.
    let first = std::fs::read_to_string(&inputs[0]).unwrap();
    let line1 = first.lines().next().unwrap();
    let twice = write(d, "twice.jsonl", &format!("{first}{line1}\n"));
    let again = [&[twice.clone()][..], &inputs[1..]].concat();
    let shown = import(d, &["--judgments", "arena_bench"], &again, &d.join("g2.jsonl")).unwrap();
    assert!(shown.contains(&format!("{expected} ordered verdicts")) && shown.contains("1 repeated grade"), "{shown}");
    assert_eq!(std::fs::read_to_string(d.join("g2.jsonl")).unwrap(), std::fs::read_to_string(&out).unwrap());
    let mut v: Value = serde_json::from_str(line1).unwrap();
    let other = if v["score"].as_f64() == Some(1.0) { 2.0 } else { 1.0 };
    v["score"] = other.into();
    let n = first.lines().count() + 1;
    let conflict = write(d, "conflict.jsonl", &format!("{first}{v}\n"));
    let e = import(d, &["--judgments", "arena_bench"], &[conflict], &d.join("g3.jsonl")).unwrap_err();
    assert!(e.contains(&format!("conflict.jsonl:{n}: model \"claude-2.1\" is graded {other} here but ")), "{e}");
    assert!(e.contains("conflict.jsonl:1 on question "), "{e}");
}

#[test]
fn arena_hard_mt_bench_and_csv_judgments() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Arena-Hard: game 1 shows the baseline first, game 2 the model.
    let out = d.join("ah.jsonl");
    let shown =
        import(d, &["--judgments", "arena_hard"], &[bench("arena_hard/judgments/gpt-4-0613.jsonl")], &out).unwrap();
    assert!(
        shown.starts_with(&format!(
            "wrote {}: 6 ordered verdicts of judge gpt-4-1106-preview on 3 prompts × 2 systems\n",
            out.display()
        )),
        "{shown}"
    );
    let rec = lines(&out);
    let got: Vec<(&str, Value)> = rec.iter().map(|v| (v["a"].as_str().unwrap(), v["y"].clone())).collect();
    let j = |x: f64| Value::from(x);
    assert_eq!(
        got,
        [
            ("gpt-4-0314", j(0.0)),
            ("gpt-4-0613", j(0.5)),
            ("gpt-4-0314", j(1.0)),
            ("gpt-4-0613", j(0.0)),
            ("gpt-4-0314", Value::Null),
            ("gpt-4-0613", j(1.0))
        ]
    );
    assert_eq!(rec[2]["strong_preference"], true);
    topk_judge::judge::replay::Recording::read(&out).unwrap();
    // Checked against the 2024 answers: 5 valid verdicts inform c (profile range above 1e-3
    // nats) but not its sign, which the line says (hunt 43: "identified" alone read as known).
    let answers = d.join("ah24.jsonl");
    let q = bench("arena_hard/2024/question.jsonl");
    import(
        d,
        &["--format", "arena_hard", "--questions", q.to_str().unwrap()],
        &files("arena_hard/2024/model_answer", "jsonl"),
        &answers,
    )
    .unwrap();
    let o = run_bin(d, &["check", answers.to_str().unwrap(), out.to_str().unwrap(), "--k", "1"]);
    assert!(
        stdout(&o).contains("style words: c = -0.108 ± 1.359 logits per sd of words; profile range 0.2209 nats → identified by the design, if a system's quality does not change with it from prompt to prompt; its sign is not known (|c| is within its sd)\n"),
        "{}",
        text(&o)
    );
    // A --baseline given with a surrounding space names the same system (as names in the lines
    // are trimmed): the same recording.
    let spaced = d.join("ah_spaced.jsonl");
    import(
        d,
        &["--judgments", "arena_hard", "--baseline", "gpt-4-0314 "],
        &[bench("arena_hard/judgments/gpt-4-0613.jsonl")],
        &spaced,
    )
    .unwrap();
    assert_eq!(std::fs::read_to_string(&spaced).unwrap(), std::fs::read_to_string(&out).unwrap());
    // A game that is not an object, or has no score, is named by line (it was read as an invalid
    // verdict); a null score stays an invalid verdict, as above.
    for (games, said) in [
        (r#"["B>A", "A>B"]"#, r#"game 1 is "B>A", not an object;"#),
        (r#"[{"score": "A>B"}, {"judgment": "…"}]"#, r#"game 2 has no "score" (null when the judge gave none);"#),
    ] {
        let f = write(
            d,
            "ah_bad.jsonl",
            &format!("{{\"question_id\": \"q1\", \"model\": \"m\", \"judge\": \"J\", \"games\": {games}}}\n"),
        );
        let e = import(d, &["--judgments", "arena_hard"], std::slice::from_ref(&f), &d.join("x.jsonl")).unwrap_err();
        assert!(e.contains(&format!("{}:1: {said}", f.display())), "{e}");
    }
    // Numeric ids: integers as their digits (7.0 and 1e2 as 7 and 100); a fractional one, or one
    // too large to hold exactly (two of them could read as one id), is refused.
    let f = write(
        d,
        "ah_num.jsonl",
        "{\"question_id\": 7.0, \"model\": \"m\", \"judge\": \"J\", \"games\": [{\"score\": \"A>B\"}]}\n\
         {\"question_id\": 1e2, \"model\": \"m\", \"judge\": \"J\", \"games\": [{\"score\": \"A>B\"}]}\n",
    );
    let out = d.join("num.jsonl");
    import(d, &["--judgments", "arena_hard"], std::slice::from_ref(&f), &out).unwrap();
    let ids: std::collections::BTreeSet<String> =
        lines(&out).iter().map(|r| r["pool_id"].as_str().unwrap().to_owned()).collect();
    assert_eq!(ids, ["100".to_owned(), "7".to_owned()].into());
    for id in ["1.5", "123456789012345678901234"] {
        let f = write(
            d,
            "ah_big.jsonl",
            &format!(
                "{{\"question_id\": {id}, \"model\": \"m\", \"judge\": \"J\", \"games\": [{{\"score\": \"A>B\"}}]}}\n"
            ),
        );
        let e = import(d, &["--judgments", "arena_hard"], std::slice::from_ref(&f), &d.join("x.jsonl")).unwrap_err();
        assert!(e.contains("a number that is not an integer id this reader can hold exactly"), "{id}: {e}");
    }
    // A line naming two questions (uid and question_id apart) is refused, not read as one of them.
    let f = write(
        d,
        "ah_two.jsonl",
        "{\"question_id\": \"q1\", \"uid\": \"q2\", \"model\": \"m\", \"judge\": \"J\", \"games\": [{\"score\": \"A>B\"}]}\n",
    );
    let e = import(d, &["--judgments", "arena_hard"], std::slice::from_ref(&f), &d.join("x.jsonl")).unwrap_err();
    assert!(
        e.contains(&format!(
            "{}:1: fields \"question_id\" (\"q1\") and \"uid\" (\"q2\") name two questions; expected one id (or both the same)",
            f.display()
        )),
        "{e}"
    );
    // MT-Bench pairwise: winners in model terms, judge per turn.
    let out = d.join("mt.jsonl");
    let shown =
        import(d, &["--judgments", "mt_bench"], &[bench("mt_bench/model_judgment/gpt-4_pair.jsonl")], &out).unwrap();
    assert!(
        shown.starts_with(&format!(
            "wrote {}: 8 ordered verdicts of judges gpt-4 turn 1, gpt-4 turn 2 on 3 prompts × 2 systems\n",
            out.display()
        )),
        "{shown}"
    );
    let rec = lines(&out);
    assert_eq!(
        (rec[2]["judge"].as_str(), rec[2]["a"].as_str(), rec[2]["y"].as_f64()),
        (Some("gpt-4 turn 2"), Some("gpt-4o"), Some(0.0))
    );
    assert_eq!((rec[5]["a"].as_str(), rec[5]["y"].as_f64()), (Some("gpt-4"), Some(1.0)));
    // A judgment without "turn" among ones with it is a judge of its own: said (it was silent).
    let text = std::fs::read_to_string(bench("mt_bench/model_judgment/gpt-4_pair.jsonl")).unwrap();
    let first = text.lines().next().unwrap();
    let mut v: serde_json::Value = serde_json::from_str(first).unwrap();
    v.as_object_mut().unwrap().remove("turn");
    let mixed = write(d, "mixed_turns.jsonl", &format!("{text}{v}\n"));
    let shown = import(d, &["--judgments", "mt_bench"], std::slice::from_ref(&mixed), &d.join("mt2.jsonl")).unwrap();
    let n = text.lines().count();
    assert!(
        shown.contains(&format!("mixed_turns.jsonl: 1 judgment carries no \"turn\" beside {n} that do (first: line {}): their judge is named without a turn", n + 1)),
        "{shown}"
    );
    // CSV: any column order; y for the first-shown; a conflicting repeat names both lines.
    let c = write(
        d,
        "j.csv",
        "winner,shown_first,system_b,system_a,prompt_id,judge,cost_usd\na,a,m2,m1,p1,J,0.001\na,b,m2,m1,p1,J,\ntie,a,m3,m1,p1,J,\n",
    );
    let out = d.join("c.jsonl");
    let shown = import(d, &["--judgments", "csv"], std::slice::from_ref(&c), &out).unwrap();
    assert!(
        shown.starts_with(&format!("wrote {}: 3 ordered verdicts of judge J on 1 prompt × 3 systems\n", out.display())),
        "{shown}"
    );
    let rec = lines(&out);
    assert_eq!(
        rec[0],
        serde_json::json!({"pool_id": "p1", "a": "m1", "b": "m2", "y": 1.0, "judge": "J", "cost_usd": 0.001})
    );
    assert_eq!(rec[1], serde_json::json!({"pool_id": "p1", "a": "m2", "b": "m1", "y": 0.0, "judge": "J"}));
    let c = write(d, "k.csv", "prompt_id,system_a,system_b,shown_first,winner\np1,m1,m2,a,a\np1,m1,m2,a,b\n");
    let e = import(d, &["--judgments", "csv"], std::slice::from_ref(&c), &out).unwrap_err();
    let c = c.display();
    assert!(
        e.contains(&format!("{c}:3: judge \"\", prompt \"p1\", \"m1\" shown first vs \"m2\": y = 0 here but 1 at {c}:2; expected one verdict per judge, prompt and ordered pair")),
        "{e}"
    );
    // An AlpacaEval array on one line (as json.dump writes it): the two records are named by
    // their places (both read `:1`).
    let rec = |p: f64| {
        format!(
            "{{\"instruction\": \"Say hi.\", \"generator_1\": \"m1\", \"generator_2\": \"m2\", \"preference\": {p}}}"
        )
    };
    let a = write(d, "dup.json", &format!("[{}, {}, {}]\n", rec(1.1), rec(1.5), rec(1.9)));
    let e = import(d, &["--judgments", "alpaca_eval"], std::slice::from_ref(&a), &out).unwrap_err();
    let a = a.display();
    assert!(
        e.contains(&format!("{a}:1: record 2 of the array: judge "))
            && e.contains(&format!(" at {a}:1 (record 1 of the array); expected one verdict per judge")),
        "{e}"
    );
    // Two verdict columns (winner and Winner: one name in any case) were read from the first,
    // silently; refused as the answers CSV refuses a repeated column.
    for head in ["winner,Winner", "winner,winner", "judge,JUDGE"] {
        let c = write(d, "two.csv", &format!("prompt_id,system_a,system_b,shown_first,{head}\np1,m1,m2,a,a,b\n"));
        let c = if head.starts_with("judge") {
            write(d, "two.csv", &format!("prompt_id,system_a,system_b,shown_first,winner,{head}\np1,m1,m2,a,a,J,K\n"))
        } else {
            c
        };
        let e = import(d, &["--judgments", "csv"], std::slice::from_ref(&c), &out).unwrap_err();
        let name = head.split(',').next().unwrap();
        assert!(
            e.contains(&format!("{}:1: the header names the column {name:?} twice; expected each of prompt_id, system_a, system_b, shown_first, winner (and optionally judge, cost_usd) once", c.display())),
            "{head}: {e}"
        );
    }
    // An empty file, a header without rows, a ragged row: said as the answers CSV says them
    // (hunt 41: "the header \"\" lacks the columns …", and "no verdict to write" naming no file).
    let wanted = "prompt_id, system_a, system_b, shown_first, winner (and optionally judge, cost_usd)";
    for (name, text, said) in [
        (
            "e.csv",
            "",
            format!(
                ":1: the file is empty; expected a CSV header naming the columns {wanted}, then one verdict per row"
            ),
        ),
        (
            "h.csv",
            "prompt_id,system_a,system_b,shown_first,winner\n",
            format!(":1: a header and no row (the file holds no verdict); expected rows of {wanted}"),
        ),
        (
            "r.csv",
            "prompt_id,system_a,system_b,shown_first,winner\np1,x,y,a\n",
            ":2: 4 fields; expected 5, as in the header".to_string(),
        ),
    ] {
        let c = write(d, name, text);
        let e = import(d, &["--judgments", "csv"], std::slice::from_ref(&c), &out).unwrap_err();
        assert!(e.contains(&format!("{}{said}", c.display())), "{name}: {e}");
    }
    let c =
        write(d, "jcrlf.csv", "prompt_id,system_a,system_b,shown_first,winner\r\np1,s1,s2,a,a\r\n\r\np1,s1,s4,a,q\r\n");
    let e = import(d, &["--judgments", "csv"], std::slice::from_ref(&c), &out).unwrap_err();
    assert!(e.contains(&format!("{}:4: winner is \"q\"", c.display())), "{e}");
    // Systems named A and B: a winner "A" when system_b is called "A" reads both ways; refused
    // (it was read as side a, the opposite of what a user naming the system meant).
    let c = write(d, "ab.csv", "prompt_id,system_a,system_b,shown_first,winner\np1,B,A,a,A\n");
    let e = import(d, &["--judgments", "csv"], std::slice::from_ref(&c), &out).unwrap_err();
    assert!(e.contains(":2: winner is \"A\": side a by the format's letters, but system_b is also named \"A\""), "{e}");
    // A cost no query has (three of 1e308 summed to inf in a replay): refused by line, and an
    // AlpacaEval price below 0 is refused as a CSV cost is, not dropped.
    let c = write(d, "big.csv", "prompt_id,system_a,system_b,shown_first,winner,cost_usd\np1,x,y,a,a,1e308\n");
    let e = import(d, &["--judgments", "csv"], std::slice::from_ref(&c), &out).unwrap_err();
    assert!(
        e.contains(&format!("{}:2: cost_usd is 1e308: expected a number of USD from 0 to 1000000, the most one query may cost, or empty", c.display())),
        "{e}"
    );
    // Named as written: 1e400 is read as infinity, and was shown as "inf".
    let c = write(d, "inf.csv", "prompt_id,system_a,system_b,shown_first,winner,cost_usd\np1,x,y,a,a,1e400\n");
    let e = import(d, &["--judgments", "csv"], std::slice::from_ref(&c), &out).unwrap_err();
    assert!(e.contains(":2: cost_usd is 1e400: expected a number of USD from 0 to 1000000"), "{e}");
    let a = write(
        d,
        "neg.json",
        r#"[{"instruction": "Q", "generator_1": "x", "generator_2": "y", "preference": 1.5, "price_per_example": -1}]"#,
    );
    let e = import(d, &["--judgments", "alpaca_eval"], std::slice::from_ref(&a), &out).unwrap_err();
    assert!(
        e.contains(&format!("{}:1: price_per_example is -1: expected a number of USD from 0 to 1000000, the most one query may cost, or null;", a.display())),
        "{e}"
    );
    // Nothing left to write: said in terms of verdicts, with what was skipped.
    let c = write(d, "self.csv", "prompt_id,system_a,system_b,shown_first,winner\np1,A,A,a,a\n");
    let e = import(d, &["--judgments", "csv"], std::slice::from_ref(&c), &out).unwrap_err();
    assert!(
        e.contains(
            "no verdict to write: the files hold no verdict between two different systems (skipped 1 self-comparison)"
        ),
        "{e}"
    );
    // Named on its own side, the letter means the same either way: read.
    let c = write(d, "ab2.csv", "prompt_id,system_a,system_b,shown_first,winner\np1,A,B,a,A\np1,A,B,b,b\n");
    import(d, &["--judgments", "csv"], std::slice::from_ref(&c), &d.join("ab2.jsonl")).unwrap();
    let rec = lines(&d.join("ab2.jsonl"));
    assert_eq!((rec[0]["a"].as_str(), rec[0]["y"].as_f64()), (Some("A"), Some(1.0)));
    // A system name is trimmed, as `import --format` trims it, so the two imports of one
    // benchmark name one system alike (a kept "b " made `check` refuse the pair of files).
    let m = write(
        d,
        "spaced.jsonl",
        "{\"question_id\": 1, \"model_1\": \"a\", \"model_2\": \"b \", \"g1_winner\": \"model_1\", \"g2_winner\": \"model_2\", \"judge\": [\"gpt-4\", \"pair-v2\"], \"turn\": 1}\n",
    );
    let shown = import(d, &["--judgments", "mt_bench"], std::slice::from_ref(&m), &d.join("spaced_rec.jsonl")).unwrap();
    let rec = lines(&d.join("spaced_rec.jsonl"));
    let names: Vec<(&str, &str)> = rec.iter().map(|r| (r["a"].as_str().unwrap(), r["b"].as_str().unwrap())).collect();
    assert_eq!(names, [("a", "b"), ("b", "a")], "{shown}");
    // One system spelled in two Unicode forms (NFC and NFD `café`) stays two systems, said.
    let c = write(d, "nf.csv", "prompt_id,system_a,system_b,shown_first,winner\np1,caf\u{e9},cafe\u{301},a,a\n");
    let shown = import(d, &["--judgments", "csv"], std::slice::from_ref(&c), &d.join("nf.jsonl")).unwrap();
    assert!(
        shown.contains("warning: systems \"caf\u{e9}\" and \"cafe\\u{301}\" differ only in Unicode form: they are kept as 2 systems; if they are one, give them one name\n"),
        "{shown}"
    );
    // alpaca_eval's older draw, preference 0, is its 1.5 (its win-rate code maps 0 to 1.5 "for
    // backward compatibility"; hunt 55 found it refused as outside [1, 2]): y = ½ either way.
    let a = write(
        d,
        "pref0.json",
        r#"[{"instruction": "Q", "generator_1": "x", "generator_2": "y", "preference": 0}, {"instruction": "Q2", "generator_1": "x", "generator_2": "y", "preference": 0.5}]"#,
    );
    let e = import(d, &["--judgments", "alpaca_eval"], std::slice::from_ref(&a), &out).unwrap_err();
    assert!(e.contains(":1: record 2 of the array: preference = 0.5 is outside [1, 2]"), "only 0 is the old draw: {e}");
    let a =
        write(d, "pref0.json", r#"[{"instruction": "Q", "generator_1": "x", "generator_2": "y", "preference": 0}]"#);
    let shown = import(d, &["--judgments", "alpaca_eval"], std::slice::from_ref(&a), &d.join("pref0.jsonl")).unwrap();
    assert!(
        shown.contains("preference 0 (in ") && shown.contains("is alpaca_eval's older spelling of a draw: read as 1.5"),
        "{shown}"
    );
    assert_eq!(lines(&d.join("pref0.jsonl"))[0]["y"].as_f64(), Some(0.5));
}

/// A quote opened and never closed would take every following row into one field; valid RFC
/// 4180 files (the 450-row excerpt above, with commas, line breaks and doubled quotes) pass.
#[test]
fn an_unclosed_quote_is_named_instead_of_swallowing_rows() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let unclosed =
        "prompt_id,prompt,system,text\np1,q1,A,a1\np1,q1,B,b1\np2,q2,A,\"ans3\np2,q2,B,b2\np3,q3,A,a3\np3,q3,B,b3\n";
    std::fs::write(d.join("u.csv"), unclosed).unwrap();
    let e = import(d, &["--format", "csv"], &[d.join("u.csv")], &d.join("u.jsonl")).unwrap_err();
    assert!(
        e.contains("u.csv:4: the quoted field opened on this line is never closed (the file ends inside it)"),
        "{e}"
    );
    std::fs::write(d.join("u.tsv"), unclosed.replace(',', "\t")).unwrap();
    let e = import(d, &["--format", "tsv"], &[d.join("u.tsv")], &d.join("u.jsonl")).unwrap_err();
    assert!(e.contains("u.tsv:4: the quoted field opened on this line is never closed"), "{e}");
    // A quote inside a quoted field that neither doubles nor closes it.
    std::fs::write(d.join("s.csv"), "prompt_id,prompt,system,text\np1,q1,A,\"a \"x\" b\"\np1,q1,B,b\n").unwrap();
    let e = import(d, &["--format", "csv"], &[d.join("s.csv")], &d.join("s.jsonl")).unwrap_err();
    assert!(e.contains("s.csv:2: a quote inside the quoted field opened on line 2 is neither doubled"), "{e}");
    // Doubled quotes, commas and line breaks inside quoted fields are fine.
    std::fs::write(
        d.join("ok.csv"),
        "prompt_id,prompt,system,text\r\np1,q1,A,\"say \"\"hi\"\",\r\nthen go\"\r\np1,q1,B,b\r\n",
    )
    .unwrap();
    let out = import(d, &["--format", "csv"], &[d.join("ok.csv")], &d.join("ok.jsonl")).unwrap();
    assert!(out.starts_with("wrote "), "{out}");
    let line = std::fs::read_to_string(d.join("ok.jsonl")).unwrap();
    assert!(line.contains("say \\\"hi\\\",\\r\\nthen go"), "{line}");
}

/// The 2025 Arena-Hard answers hold their question (the user message): `--questions` is then
/// optional and gives the same pool; the 2024 answers need it, and say so.
#[test]
fn arena_hard_2025_answers_carry_their_questions() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let q = bench("arena_hard/2025/question.jsonl").display().to_string();
    let answers = files("arena_hard/2025/model_answer", "jsonl");
    import(d, &["--format", "arena_hard", "--questions", &q], &answers, &d.join("with.jsonl")).unwrap();
    import(d, &["--format", "arena_hard"], &answers, &d.join("without.jsonl")).unwrap();
    assert_eq!(std::fs::read(d.join("with.jsonl")).unwrap(), std::fs::read(d.join("without.jsonl")).unwrap());
    let e = import(d, &["--format", "arena_hard"], &files("arena_hard/2024/model_answer", "jsonl"), &d.join("x.jsonl"))
        .unwrap_err();
    assert!(e.contains(":1: this answer holds no question text") && e.contains("--questions"), "{e}");
}

/// Judgments in the other layout: a JSON Lines format given one JSON array (pandas `to_json`)
/// says so, not "missing field"; an AlpacaEval array written on one line names the bad record by
/// its place (every record starts on line 1), one pretty-printed by its line alone.
#[test]
fn judgments_in_the_other_layout_are_named_so() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = d.join("rec.jsonl");
    let mt: Vec<Value> = std::fs::read_to_string(bench("mt_bench/model_judgment/gpt-4_pair.jsonl"))
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // The file written, and import's refusal of it.
    let refused = |name: &str, format: &str, body: String| {
        let file = write(d, name, &body);
        let e = import(d, &["--judgments", format], std::slice::from_ref(&file), &out).unwrap_err();
        (file, e)
    };
    let (arr, e) = refused("mt_array.jsonl", "mt_bench", serde_json::to_string(&mt).unwrap() + "\n");
    assert!(
        e.contains(&format!("{}:1: a JSON array where JSON Lines (one object per line) is expected", arr.display())),
        "{e}"
    );
    // Pretty-printed, the same file is named by its layout too.
    let (pretty, e) = refused("mt_pretty.jsonl", "mt_bench", serde_json::to_string_pretty(&mt).unwrap());
    assert!(
        e.contains(&format!("{}:1: the file looks like one JSON array; expected JSON Lines", pretty.display())),
        "{e}"
    );
    let al: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(bench("alpaca_eval/annotations/claude-2.json")).unwrap())
            .unwrap();
    let mut al: Vec<Value> = al.into_iter().take(6).collect();
    al[4]["preference"] = serde_json::json!(5);
    let (flat, e) = refused("al_flat.json", "alpaca_eval", serde_json::to_string(&al).unwrap());
    assert!(
        e.contains(&format!("{}:1: record 5 of the array: preference = 5 is outside [1, 2]", flat.display())),
        "{e}"
    );
    let (_, e) = refused("al_pretty.json", "alpaca_eval", serde_json::to_string_pretty(&al).unwrap());
    assert!(e.contains("preference = 5 is outside [1, 2]") && !e.contains("record 5"), "{e}");
    // The AlpacaEval array written as JSON Lines (serde said "trailing characters at line 2").
    let lines: String = al.iter().map(|v| serde_json::to_string(v).unwrap() + "\n").collect();
    let (jl, e) = refused("al_lines.jsonl", "alpaca_eval", lines);
    assert!(
        e.contains(&format!(
            "{}:2: the file looks like JSON Lines (one object per line); expected AlpacaEval annotations",
            jl.display()
        )) && e.contains("in one JSON array"),
        "{e}"
    );
    assert!(!out.exists(), "nothing written");
}

/// Judgments whose names the pool loader and the reports refuse (a line break, ESC, a
/// text-direction override) are refused at their record, and nothing is written.
#[test]
fn judgment_names_that_would_not_load_are_refused_at_their_row() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let header = "prompt_id,system_a,system_b,shown_first,winner,judge\n";
    for (name, row, want) in [
        (
            "esc.csv",
            "p1,good,\"ev\u{1b}[31mil\",a,a,j\n",
            "esc.csv:2: its system \"ev\\u{1b}[31mil\" holds the character U+001B",
        ),
        (
            "rlo.csv",
            "p\u{202e}1,good,bad,a,a,j\n",
            "rlo.csv:2: its prompt id \"p\\u{202e}1\" holds the character U+202E",
        ),
        ("nl.csv", "p1,good,bad,a,a,\"jud\nge\"\n", "nl.csv:2: its judge \"jud\\nge\" holds the character U+000A"),
    ] {
        write(d, name, &format!("{header}{row}"));
        let out = run_bin(d, &["import", "--judgments", "csv", name, "--out", "rec.jsonl"]);
        assert_eq!(out.status.code(), Some(1), "{name}: {}", text(&out));
        assert!(text(&out).contains(want), "{name}: {}", text(&out));
        assert!(!d.join("rec.jsonl").exists(), "{name}: nothing written");
    }
}

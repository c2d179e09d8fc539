//! `topk-judge fit`: a run folder refitted, verdicts collected elsewhere (records without `y`,
//! several pools and judges), and the notes it shares with `run`.

use crate::common::*;
use serde_json::Value;

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
    // A strong preference that is not a JSON boolean ("true", 1) was read as none: an error.
    for (i, sp) in ["\"true\"", "1", "\"yes\""].iter().enumerate() {
        let f = write(
            dir.path(),
            &format!("sp{i}.jsonl"),
            &format!(
                "{{\"a\": \"M0\", \"b\": \"M2\", \"y\": 1}}\n{{\"a\": \"M0\", \"b\": \"M3\", \"y\": 1, \"strong_preference\": {sp}}}\n"
            ),
        );
        let out = run_bin(dir.path(), &["fit", pool.to_str().unwrap(), f.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(1), "{}", text(&out));
        assert!(
            text(&out).contains(&format!(
                "sp{i}.jsonl:2: \"strong_preference\" = {sp} is not true or false (a JSON boolean)"
            )),
            "{}",
            text(&out)
        );
    }
    // A verdicts file `fit` refuses: what it says.
    let refused = |name: &str, lines: &str| {
        let bad = write(dir.path(), name, lines);
        let out = run_bin(dir.path(), &["fit", pool.to_str().unwrap(), bad.to_str().unwrap()]);
        assert!(!out.status.success(), "{}", text(&out));
        text(&out)
    };
    // Lookup errors name the line.
    let said =
        refused("bad.jsonl", "{\"a\": \"M0\", \"b\": \"M1\", \"y\": 1}\n\n{\"a\": \"M0\", \"b\": \"ZZ\", \"y\": 0}\n");
    assert!(said.contains("bad.jsonl:3: item \"ZZ\" is not in pool"), "{said}");
    // An item spelled alike (a trailing space) is named.
    let said = refused("spaced.jsonl", "{\"a\": \"M0\", \"b\": \"M1 \", \"y\": 1}\n");
    assert!(
        said.contains("spaced.jsonl:1: item \"M1 \" is not in pool")
            && said.contains("; the pool has \"M1\", spelled alike"),
        "{said}"
    );
    // A line that is not JSON: the file's line and the column, not serde's "line 1" of the
    // line as well (hunt 48).
    let said = refused(
        "broken.jsonl",
        "{\"a\": \"M0\", \"b\": \"M1\", \"y\": 1}\n\n{\"a\": \"M0\" \"b\": \"M1\", \"y\": 1}\n",
    );
    assert!(said.contains("broken.jsonl:3: not JSON (expected `,` or `}` at column 12); expected"), "{said}");

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
    assert!(stdout(&out).ends_with(&format!("\nwrote {}\n", out_json.display())), "{t}");
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
    // Records without a judge are named so (they were listed as `"": 2`).
    let unnamed = write(
        dir.path(),
        "unnamed.jsonl",
        "{\"a\": \"M0\", \"b\": \"M1\", \"y\": 1}\n{\"a\": \"M1\", \"b\": \"M0\", \"y\": 0}\n",
    );
    let out = run_bin(dir.path(), &["fit", pool.to_str().unwrap(), unnamed.to_str().unwrap(), "--judge", "nope"]);
    assert!(text(&out).contains("the judges there: (no \"judge\" field): 2"), "{}", text(&out));
    // A verdicts file without one valid verdict of the pool fails as `check` does (it exited 0
    // with a prior's ranking): empty, and only invalid verdicts; `--panel` alike.
    let empty = write(dir.path(), "empty.jsonl", "");
    let invalid = write(dir.path(), "invalid.jsonl", "{\"judge\": \"j\", \"a\": \"M0\", \"b\": \"M1\", \"y\": null}\n");
    for (file, counts) in [(&empty, "(0 invalid, 0 of other pools)"), (&invalid, "(1 invalid, 0 of other pools)")] {
        for panel in [false, true] {
            let mut a = vec!["fit", pool.to_str().unwrap(), file.to_str().unwrap()];
            if panel {
                a.push("--panel");
            }
            let out = run_bin(dir.path(), &a);
            assert_eq!(out.status.code(), Some(1), "{}", text(&out));
            let says = if panel && counts.starts_with("(0") {
                format!("error: {}: no record of pool \"{POOL_ID}\" to fit", file.display())
            } else {
                format!(
                    "error: {}: no valid verdict of pool \"{POOL_ID}\" {counts}: there is no ranking to fit",
                    file.display()
                )
            };
            assert!(stderr(&out).starts_with(&says), "{}", text(&out));
            assert!(stdout(&out).is_empty(), "{}", text(&out));
        }
    }
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
    // --out inside the run folder would overwrite the run's own files (its paid verdicts): refused
    // before fitting, the verdicts left as they were.
    let verdicts = folder.join("verdicts.jsonl");
    let kept = std::fs::read(&verdicts).unwrap();
    for extra in [&[][..], &["--panel"][..]] {
        let args = [&["fit", folder.to_str().unwrap(), "--out", verdicts.to_str().unwrap()][..], extra].concat();
        let out = run_bin(elsewhere.path(), &args);
        assert!(!out.status.success());
        assert!(text(&out).contains("--out: it is inside the input folder"), "{}", text(&out));
        assert_eq!(std::fs::read(&verdicts).unwrap(), kept);
    }
}

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

/// `fit VERDICTS POOL` (arguments swapped) says the order.
#[test]
fn swapped_fit_arguments_get_a_hint() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = main_job(dir.path(), "sw", "");
    let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet", "--max-comparisons", "8"]);
    assert!(out.status.success(), "{}", text(&out));
    let v = dir.path().join("runs/sw/verdicts.jsonl");
    let out = run_bin(dir.path(), &["fit", v.to_str().unwrap(), summeval().to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(
        text(&out).contains("looks like a verdicts file and")
            && text(&out).contains("the order is `topk-judge fit POOL VERDICTS`"),
        "{}",
        text(&out)
    );
}

/// A run folder whose judge was edited under the same name (another seed of a deterministic
/// mock, which its description leaves out as its verdicts do not depend on it; for a live judge,
/// another template) holds two judges' verdicts under one description: `fit RUN` fits the run's judge as configured now,
/// as the run did, with the same θ̂, and says how many records it left out. Given as a verdicts
/// file, the records' settings ids split them; records without one (an older version's) are
/// named in a warning.
#[test]
fn fit_of_a_run_folder_fits_the_verdicts_of_the_runs_judge_as_configured_now() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = mock_config(dir.path(), "mix", 48, "");
    let det = "judge.mock.mode=deterministic";
    assert!(run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet", "--set", det]).status.success());
    let out =
        run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet", "--set", det, "--set", "judge.mock.seed=8"]);
    assert!(out.status.success(), "{}", text(&out));
    let run = result(dir.path(), "mix");
    assert_eq!(std::fs::read_to_string(dir.path().join("runs/mix/verdicts.jsonl")).unwrap().lines().count(), 96);
    let out_json = dir.path().join("fit.json");
    let out = run_bin(dir.path(), &["fit", "runs/mix", "--out", out_json.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(stdout(&out).contains("bias_aware model, 48 valid verdicts"), "{}", stdout(&out));
    assert!(
        stdout(&out).contains(
            "note: 48 of the 96 records of runs/mix/verdicts.jsonl are of another judge or judge configuration"
        ),
        "{}",
        stdout(&out)
    );
    let fit: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&out_json).unwrap()).unwrap();
    for (id, t) in run["theta"].as_object().unwrap() {
        let f = fit["theta"][id].as_f64().unwrap();
        assert!((f - t.as_f64().unwrap()).abs() < 1e-6, "{id}: {f} vs {t}");
    }
    // A folder whose config.yaml was edited to a judge none of its records are of: refused
    // (it printed "no ranking" and succeeded, as for an empty run).
    let saved = dir.path().join("runs/mix/config.yaml");
    let yaml = std::fs::read_to_string(&saved).unwrap();
    std::fs::write(&saved, yaml.replace("seed: 8", "seed: 9")).unwrap();
    let out = run_bin(dir.path(), &["fit", "runs/mix"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains(
            "runs/mix: none of the 96 records of runs/mix/verdicts.jsonl is of the judge its config.yaml configures now"
        ),
        "{}",
        text(&out)
    );
    std::fs::write(&saved, yaml).unwrap();
    // The same file given as a verdicts file: each record's settings id tells the two seeds
    // apart under their one description, and `--judge` picks the second, as `fit RUN` does.
    let records: Vec<Value> = std::fs::read_to_string(dir.path().join("runs/mix/verdicts.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let (first, last) = (&records[0], &records[95]);
    assert_eq!(first["judge"], last["judge"], "one description for both seeds");
    let (id1, id8) = (first["judge_settings"].as_str().unwrap(), last["judge_settings"].as_str().unwrap());
    assert_ne!(id1, id8);
    assert_eq!(id8.len(), 12);
    assert_eq!(records.iter().filter(|r| r["judge_settings"] == id8).count(), 48);
    let pool = summeval();
    let (pool, verdicts) = (pool.to_str().unwrap(), "runs/mix/verdicts.jsonl");
    let out =
        run_bin(dir.path(), &["fit", pool, verdicts, "--pool-id", "dm-test-2377095dda83df778e34304b7a09813808105d3b"]);
    assert!(out.status.success(), "{}", text(&out));
    let desc = first["judge"].as_str().unwrap();
    let (lo, hi) = if id1 < id8 { (id1, id8) } else { (id8, id1) };
    assert!(
        stderr(&out)
            .contains(&format!("the judge {desc:?} has records of 2 settings ({lo}: 48 records, {hi}: 48 records)")),
        "{}",
        text(&out)
    );
    assert!(stderr(&out).contains("holds verdicts of 2 judges"), "{}", text(&out));
    let out_json = dir.path().join("fit8.json");
    let out = run_bin(
        dir.path(),
        &[
            "fit",
            pool,
            verdicts,
            "--pool-id",
            "dm-test-2377095dda83df778e34304b7a09813808105d3b",
            "--judge",
            &format!("{desc} [settings {id8}]"),
            "--out",
            out_json.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert!(stdout(&out).contains("bias_aware model, 48 valid verdicts"), "{}", stdout(&out));
    let fit8 = json(&out_json);
    for (id, t) in run["theta"].as_object().unwrap() {
        let f = fit8["theta"][id].as_f64().unwrap();
        assert!((f - t.as_f64().unwrap()).abs() < 1e-6, "{id}: {f} vs {t}");
    }
    // Seed 8's records, 20 of them as an older version wrote them (no settings id): they cannot
    // be told apart from the others, and the warning says so.
    let older: Vec<String> = records
        .iter()
        .filter(|r| r["judge_settings"] == id8)
        .enumerate()
        .map(|(i, r)| {
            let mut r = r.clone();
            if i < 20 {
                r.as_object_mut().unwrap().remove("judge_settings");
            }
            r.to_string()
        })
        .collect();
    std::fs::write(dir.path().join("older.jsonl"), older.join("\n") + "\n").unwrap();
    let out = run_bin(
        dir.path(),
        &["fit", pool, "older.jsonl", "--pool-id", "dm-test-2377095dda83df778e34304b7a09813808105d3b"],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert!(stdout(&out).contains("bias_aware model, 48 valid verdicts"), "{}", stdout(&out));
    assert!(
        stderr(&out).contains(&format!(
            "older.jsonl: the judge {desc:?} has 20 records without a settings id (written by an older topk-judge) beside 28 with one"
        )),
        "{}",
        text(&out)
    );
}

/// `fit` of a path that does not exist says so, instead of asking for a verdicts file.
#[test]
fn fit_of_a_missing_path_says_it_does_not_exist() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_bin(dir.path(), &["fit", "runs/nope"]);
    assert!(!out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "error: runs/nope: no such file or folder; give a run folder (`topk-judge fit runs/NAME`) or `topk-judge fit POOL_FILE VERDICTS_FILE`\n"
    );
}

/// A k that does not fit the pool names where it came from: the default, not a flag never given.
#[test]
fn a_default_k_too_large_for_the_pool_is_named_as_the_default() {
    let dir = tempfile::tempdir().unwrap();
    let pool = write(
        dir.path(),
        "two.jsonl",
        "{\"pool_id\": \"two\", \"items\": [{\"id\": \"a\", \"text\": \"x\"}, {\"id\": \"b\", \"text\": \"y y\"}]}\n",
    );
    let v = write(dir.path(), "v.jsonl", "{\"a\": \"a\", \"b\": \"b\", \"y\": 1}\n");
    let out = run_bin(dir.path(), &["fit", pool.to_str().unwrap(), v.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(
        text(&out).contains("k = 3 (the default; --k sets another) must satisfy 1 ≤ k < number of bases (2)"),
        "{}",
        text(&out)
    );
}

/// A pool file with answers that are empty or only whitespace (`import` refuses them, a pool
/// written otherwise may hold them): `run` and `fit` say which items the judge sees as empty.
#[test]
fn items_with_an_empty_text_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let pool = serde_json::json!({"pool_id": "blank", "task": "Pick.", "items": [
        {"id": "a", "text": "", "quality": 1},
        {"id": "b", "text": "  \n ", "quality": 2},
        {"id": "c", "text": "a real answer", "quality": 3},
        {"id": "d", "text": "another real answer", "quality": 4},
    ]});
    write(d, "blank.jsonl", &(pool.to_string() + "\n"));
    write(d, "v.jsonl", "{\"a\": \"c\", \"b\": \"a\", \"y\": 1}\n{\"a\": \"d\", \"b\": \"b\", \"y\": 1}\n");
    let warning = "warning: pool \"blank\": items \"a\", \"b\" have an empty text (or only whitespace): the judge is shown an empty answer for each\n";
    let o = run_bin(d, &["fit", "blank.jsonl", "v.jsonl", "--k", "1"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(stderr(&o).contains(warning), "{}", text(&o));
    // A verdict line that gives "y" twice says two things: refused, not read last-wins.
    write(d, "dup.jsonl", "{\"a\": \"c\", \"b\": \"a\", \"y\": 1, \"y\": 0}\n");
    let o = run_bin(d, &["fit", "blank.jsonl", "dup.jsonl", "--k", "1"]);
    assert!(!o.status.success(), "{}", text(&o));
    assert!(stderr(&o).contains("dup.jsonl:1: duplicate key \"y\": the object gives it twice"), "{}", text(&o));
    write(
        d,
        "r.yaml",
        "name: r\nout_dir: runs\npool: {file: blank.jsonl}\nk: 1\njudge: {mock: {}}\nbudget: {max_comparisons: 4}\n",
    );
    let o = run_bin(d, &["run", "r.yaml", "--quiet"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(stderr(&o).contains(warning), "{}", text(&o));
}

/// Verdicts that name no pool, fitted against a file of several pools, go to its first pool:
/// said, with how to choose another, instead of silently leaving the others out.
#[test]
fn records_without_a_pool_id_on_a_file_of_several_pools_are_said_to_go_to_the_first() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let pool = |id: &str| {
        serde_json::json!({"pool_id": id, "task": "t", "items": [
            {"id": "A", "text": "one two three"}, {"id": "B", "text": "one"}, {"id": "C", "text": "one two"},
        ]})
        .to_string()
    };
    write(d, "two.jsonl", &format!("{}\n{}\n", pool("q1"), pool("q2")));
    write(d, "v.jsonl", "{\"a\": \"A\", \"b\": \"B\", \"y\": 1}\n{\"a\": \"C\", \"b\": \"B\", \"y\": 1}\n");
    let o = run_bin(d, &["fit", "two.jsonl", "v.jsonl", "--k", "1"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        stderr(&o).contains("warning: v.jsonl: 2 records name no pool (no \"pool_id\"): fitted as pool \"q1\", the first of the 2 pools of two.jsonl; give --pool-id"),
        "{}",
        text(&o)
    );
    assert!(stdout(&o).starts_with("pool q1: bias_aware model, 2 valid verdicts\n"), "{}", text(&o));
    // Chosen with --pool-id: nothing to say.
    let o = run_bin(d, &["fit", "two.jsonl", "v.jsonl", "--k", "1", "--pool-id", "q2"]);
    assert!(o.status.success() && !stderr(&o).contains("name no pool"), "{}", text(&o));
    assert!(stdout(&o).starts_with("pool q2: "), "{}", text(&o));
    // Beside records that name their pool, --pool-id does not say where the others belong: they
    // are fitted as its pool, and said (it fitted 3 with no word).
    write(
        d,
        "mixed.jsonl",
        "{\"a\": \"A\", \"b\": \"B\", \"y\": 1}\n{\"a\": \"C\", \"b\": \"B\", \"y\": 1}\n{\"pool_id\": \"q2\", \"a\": \"A\", \"b\": \"C\", \"y\": 1}\n",
    );
    let o = run_bin(d, &["fit", "two.jsonl", "mixed.jsonl", "--k", "1", "--pool-id", "q2"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        stderr(&o).contains("warning: mixed.jsonl: 2 records name no pool (no \"pool_id\") while 1 names its: fitted as pool \"q2\" (--pool-id), which they may not be of; give each record its pool_id"),
        "{}",
        text(&o)
    );
    assert!(stdout(&o).starts_with("pool q2: bias_aware model, 3 valid verdicts\n"), "{}", text(&o));
}

/// A run folder's log with records of one key on two lines (merged by hand, or two writers) is
/// read by `fit` as the run reads it: the first record of each key, the others said and not
/// fitted. Before, `fit RUN` fitted 150 records where the run fitted 120.
#[test]
fn fit_of_a_run_folder_keeps_the_first_record_of_each_key() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cfg = mock_config(d, "c", 40, "");
    assert!(run_bin(d, &["run", cfg.to_str().unwrap(), "--quiet"]).status.success());
    let clean = run_bin(d, &["fit", "runs/c"]);
    assert!(clean.status.success(), "{}", text(&clean));
    let log = d.join("runs/c/verdicts.jsonl");
    let text0 = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = text0.lines().collect();
    // Ten records again as they are, and five with the verdict flipped.
    let mut merged = text0.clone();
    for l in &lines[..10] {
        merged.push_str(l);
        merged.push('\n');
    }
    for l in &lines[10..15] {
        let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
        let y = v["y"].as_f64().unwrap();
        v["y"] = serde_json::json!(1.0 - y);
        merged.push_str(&v.to_string());
        merged.push('\n');
    }
    std::fs::write(&log, merged).unwrap();
    let dup = run_bin(d, &["fit", "runs/c"]);
    assert!(dup.status.success(), "{}", text(&dup));
    assert_eq!(stdout(&dup), stdout(&clean), "the fit is the clean log's");
    assert!(
        stderr(&dup).contains(
            "verdicts.jsonl: 15 duplicate records (lines 41, 42, 43, 44, 45, …) repeat a key stored on an earlier line"
        ),
        "{}",
        stderr(&dup)
    );
    // The same log given as a verdicts file: every record is fitted (samples of merged runs may
    // repeat a query), and the five that answer a key again otherwise are said (they were fitted
    // silently and changed the certified set); the ten exact repeats are said as before.
    let as_file = run_bin(d, &["fit", summeval().to_str().unwrap(), log.to_str().unwrap()]);
    assert!(as_file.status.success(), "{}", text(&as_file));
    assert!(stdout(&as_file).contains("55 valid verdicts"), "{}", stdout(&as_file));
    assert!(
        stderr(&as_file).contains(
            "verdicts.jsonl: 5 records of judge \"mock (stochastic, pos_bias 0.3, verb_per_word 0.01, temperature 0.25, seed 7)\" repeat the cache key of an earlier line with another verdict (line 51, key of line 11)"
        ),
        "{}",
        stderr(&as_file)
    );
    assert!(
        stderr(&as_file).contains("10 lines repeat an earlier line exactly (line 41 repeats line 1)"),
        "{}",
        stderr(&as_file)
    );
}

/// A run's config file alone stands for its run folder (as in `report`); a folder that is not a
/// run says so without an operating-system error.
#[test]
fn fit_takes_a_run_config_for_its_folder() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cfg = mock_config(d, "c", 24, "");
    assert!(run_bin(d, &["run", cfg.to_str().unwrap(), "--quiet"]).status.success());
    let by_folder = run_bin(d, &["fit", "runs/c"]);
    assert!(by_folder.status.success(), "{}", text(&by_folder));
    let by_config = run_bin(d, &["fit", cfg.to_str().unwrap()]);
    assert!(by_config.status.success(), "{}", text(&by_config));
    assert_eq!(stdout(&by_config), stdout(&by_folder));
    std::fs::create_dir_all(d.join("other")).unwrap();
    let o = run_bin(d, &["fit", "other"]);
    assert_eq!(
        stderr(&o),
        "error: other: not a run folder (it holds no config.yaml); expected a folder written by `topk-judge run`, or a config file\n"
    );
}

/// A pool file whose pool breaks a rule (not its syntax) is named with the line of that pool,
/// in `fit` as in `run`; two prompts whose answers a `/` gives one id are named both.
#[test]
fn pool_rule_errors_name_the_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(
        d,
        "pf.jsonl",
        "{\"pool_id\":\"p1\",\"items\":[{\"id\":\"a\"},{\"id\":\"b\"}]}\n{\"pool_id\":\"p2\",\"items\":[{\"id\":\"a\"},{\"id\":\"a\"}]}\n",
    );
    write(d, "v.jsonl", "{\"a\":\"a\",\"b\":\"b\",\"y\":1}\n");
    let out = run_bin(d, &["fit", "pf.jsonl", "v.jsonl", "--pool-id", "p1"]);
    assert!(!out.status.success());
    assert!(text(&out).contains("error: pf.jsonl:2: pool \"p2\": duplicate item id \"a\""), "{}", text(&out));
    // An id of 65,536 characters panicked the ranking table (a width it cannot format), after
    // result.json was written: refused at load, in `run` as in `fit`.
    let long = "x".repeat(65_536);
    write(
        d,
        "long.jsonl",
        &format!(
            "{{\"pool_id\":\"p\",\"items\":[{{\"id\":\"{long}\",\"quality\":1}},{{\"id\":\"b\",\"quality\":2}},{{\"id\":\"c\",\"quality\":3}}]}}\n"
        ),
    );
    write(
        d,
        "long.yaml",
        "name: long\nout_dir: runs\npool: {file: long.jsonl}\nk: 1\njudge: {mock: {}}\nbudget: {max_comparisons: 12}\n",
    );
    let want = "long.jsonl:1: pool \"p\": item #1: its id \"xxxxxxxxxxxxxxxxxxxxxxxx\"… is 65536 characters long; ids are columns of the tables and names in the reports: at most 1000 characters";
    for args in [&["fit", "long.jsonl", "v.jsonl"][..], &["run", "long.yaml"]] {
        let out = run_bin(d, args);
        assert_eq!(out.status.code(), Some(1), "{}", text(&out));
        assert!(text(&out).contains(want), "{}", text(&out));
    }
    assert!(!d.join("runs/long").exists());
    // A long pool id is shortened in every mention (the `pool "…":` prefix held all of it).
    let id = "P".repeat(65_536);
    write(d, "longpool.jsonl", &format!("{{\"pool_id\":\"{id}\",\"items\":[{{\"id\":\"a\"}},{{\"id\":\"b\"}}]}}\n"));
    let out = run_bin(d, &["fit", "longpool.jsonl", "v.jsonl"]);
    let t = text(&out);
    assert!(!out.status.success() && t.contains("is 65536 characters long") && t.len() < 1000, "{}", t.len());
    // A covariate's name and a verdict's judge are columns and names too: refused as long ids.
    let name = "L".repeat(1001);
    write(
        d,
        "longcov.jsonl",
        &format!(
            "{{\"pool_id\":\"p\",\"items\":[{{\"id\":\"a\",\"covariates\":{{\"{name}\":1}}}},{{\"id\":\"b\",\"covariates\":{{\"{name}\":2}}}}]}}\n"
        ),
    );
    let out = run_bin(d, &["fit", "longcov.jsonl", "v.jsonl"]);
    assert!(
        !out.status.success()
            && text(&out).contains("its covariate name \"LLLLLLLLLLLLLLLLLLLLLLLL\"… is 1001 characters long"),
        "{}",
        text(&out)
    );
    write(d, "longjudge.jsonl", &format!("{{\"a\":\"a\",\"b\":\"b\",\"y\":1,\"judge\":\"{name}\"}}\n"));
    let out = run_bin(d, &["fit", "pf.jsonl", "longjudge.jsonl", "--pool-id", "p1"]);
    assert!(
        !out.status.success() && text(&out).contains("longjudge.jsonl:1: \"judge\": the name \"LLLL"),
        "{}",
        text(&out)
    );
    // A pool file of blank lines has no line to name (it named line 1 of an empty file).
    write(d, "blank.jsonl", "\n\n");
    let out = run_bin(d, &["fit", "blank.jsonl", "v.jsonl"]);
    assert!(
        !out.status.success() && text(&out).contains("error: blank.jsonl: the file holds no pool (it is empty, or only blank lines); expected one pool per line"),
        "{}",
        text(&out)
    );
    // A covariate the pool's items lack, named by `--covariates`: the flag first, then the pool's
    // file and line.
    write(
        d,
        "cov.jsonl",
        "{\"pool_id\":\"q\",\"items\":[{\"id\":\"x\"},{\"id\":\"y\"}]}\n{\"pool_id\":\"p1\",\"items\":[{\"id\":\"a\"},{\"id\":\"b\"}]}\n",
    );
    let out = run_bin(d, &["fit", "cov.jsonl", "v.jsonl", "--pool-id", "p1", "--covariates", "len", "--k", "1"]);
    assert!(!out.status.success());
    assert!(
        text(&out).contains("error: --covariates len: cov.jsonl:2: pool \"p1\": item \"a\" has no covariate \"len\"")
            && text(&out).contains("(each covariate the flag names must be on every item of the pool)"),
        "{}",
        text(&out)
    );
    // A value its transform cannot take is not an item lacking the covariate: no such hint.
    write(
        d,
        "neg.jsonl",
        "{\"pool_id\":\"p1\",\"items\":[{\"id\":\"a\",\"covariates\":{\"len\":-1e300}},{\"id\":\"b\",\"covariates\":{\"len\":2}}]}\n",
    );
    let out = run_bin(d, &["fit", "neg.jsonl", "v.jsonl", "--covariates", "len:log", "--k", "1"]);
    assert!(!out.status.success());
    assert!(
        text(&out).contains("error: --covariates len: neg.jsonl:1: pool \"p1\": item \"a\": covariate \"len\" = -1e300 cannot take transform log (needs > 0)\n"),
        "{}",
        text(&out)
    );
    // Over many prompts (systems): the prompt's line and the item as the file writes it, not the
    // merged id `q2/B`.
    write(
        d,
        "sys.jsonl",
        "{\"pool_id\":\"q1\",\"items\":[{\"id\":\"A\",\"system\":\"A\",\"covariates\":{\"len\":1}},{\"id\":\"B\",\"system\":\"B\",\"covariates\":{\"len\":2}}]}\n\
         {\"pool_id\":\"q2\",\"items\":[{\"id\":\"A\",\"system\":\"A\",\"covariates\":{\"len\":3}},{\"id\":\"B\",\"system\":\"B\"}]}\n",
    );
    write(
        d,
        "sv.jsonl",
        "{\"pool_id\":\"q1\",\"a\":\"A\",\"b\":\"B\",\"y\":1}\n{\"pool_id\":\"q2\",\"a\":\"B\",\"b\":\"A\",\"y\":0}\n",
    );
    let out = run_bin(d, &["fit", "sys.jsonl", "sv.jsonl", "--systems", "--covariates", "len", "--k", "1"]);
    assert!(!out.status.success());
    assert!(
        text(&out).contains("error: --covariates len: sys.jsonl:2: pool \"q2\": item \"B\" has no covariate \"len\""),
        "{}",
        text(&out)
    );
    write(
        d,
        "slash.jsonl",
        "{\"pool_id\":\"a/b\",\"items\":[{\"id\":\"c\",\"system\":\"c\"},{\"id\":\"d\",\"system\":\"d\"}]}\n{\"pool_id\":\"a\",\"items\":[{\"id\":\"b/c\",\"system\":\"b/c\"},{\"id\":\"d\",\"system\":\"d\"}]}\n",
    );
    write(
        d,
        "v2.jsonl",
        "{\"pool_id\":\"a/b\",\"a\":\"c\",\"b\":\"d\",\"y\":1}\n{\"pool_id\":\"a\",\"a\":\"b/c\",\"b\":\"d\",\"y\":0}\n",
    );
    let out = run_bin(d, &["fit", "slash.jsonl", "v2.jsonl"]);
    assert!(!out.status.success());
    assert!(
        text(&out).contains("slash.jsonl:2: pool \"a\": its item \"b/c\" and item \"c\" of prompt \"a/b\" both become \"a/b/c\" (prompt id/item id)"),
        "{}",
        text(&out)
    );
}

/// No command writes one of a run folder's own files: `fit --out` and `check --out` (another
/// run's verdicts or result), `import --out` (its pool), and an audit named like the run.
#[test]
fn other_commands_never_write_a_run_folders_own_files() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for name in ["cheap", "other"] {
        let cfg = mock_config(d, name, 16, "");
        assert!(run_bin(d, &["run", cfg.to_str().unwrap(), "--quiet"]).status.success());
    }
    let before = std::fs::read(d.join("runs/cheap/verdicts.jsonl")).unwrap();
    for file in ["verdicts.jsonl", "result.json"] {
        let out = run_bin(d, &["fit", "runs/other", "--out", &format!("runs/cheap/{file}")]);
        assert_eq!(out.status.code(), Some(1), "{}", text(&out));
        assert!(
            text(&out).contains(&format!(
                "--out: it is the {file} of the run folder runs/cheap: writing would overwrite that run's own file"
            )),
            "{}",
            text(&out)
        );
    }
    assert_eq!(std::fs::read(d.join("runs/cheap/verdicts.jsonl")).unwrap(), before);
    let pairs = root().join("data/tutorial_pairs.jsonl");
    let audit = write(
        d,
        "aud.yaml",
        &format!("name: cheap\nout_dir: runs\njudge:\n  mock: {{mode: deterministic}}\npairs: {}\n", pairs.display()),
    );
    let out = run_bin(d, &["audit", audit.to_str().unwrap(), "--quiet"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("runs/cheap: the folder of a run (it holds its result.json), not of an audit"),
        "{}",
        text(&out)
    );
    assert_eq!(std::fs::read(d.join("runs/cheap/verdicts.jsonl")).unwrap(), before);
    assert!(std::fs::read_to_string(d.join("runs/cheap/config.yaml")).unwrap().contains("max_comparisons: 16"));
    write(d, "a.csv", "prompt_id,prompt,system,text\np1,Q,s1,x\np1,Q,s2,y\n");
    let out = run_bin(d, &["import", "--format", "csv", "a.csv", "--out", "runs/cheap/pool.jsonl"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("it is the pool.jsonl of the run folder runs/cheap"), "{}", text(&out));
    // What `report` writes beside the books is the run's too: its pages and plots.
    for file in ["report.md", "theta.svg"] {
        let out = run_bin(d, &["fit", "runs/other", "--out", &format!("runs/cheap/{file}")]);
        assert_eq!(out.status.code(), Some(1), "{}", text(&out));
        assert!(text(&out).contains(&format!("it is the {file} of the run folder runs/cheap")), "{}", text(&out));
    }
    let out = run_bin(d, &["import", "--format", "csv", "a.csv", "--out", "runs/cheap/report.html"]);
    assert!(text(&out).contains("it is the report.html of the run folder runs/cheap"), "{}", text(&out));
    // `compare --out` a run's folder would replace its recall_vs_spend.svg: refused, as `report
    // --out` another run's folder is.
    let out = run_bin(d, &["compare", "runs/cheap", "runs/other", "--out", "runs/other"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("runs/other: --out: the folder of a run (it holds its verdicts or result), whose report and plots this would overwrite"), "{}", text(&out));
    assert!(!d.join("runs/other/compare.md").exists());
    // `simulate --out` alike, for every kind of sweep file.
    for sweep in ["sweep-rho.yaml", "sweep-pipeline.yaml", "sweep-panel-synthetic.yaml"] {
        let file = root().join("configs").join(sweep);
        let out = run_bin(d, &["simulate", file.to_str().unwrap(), "--out", "runs/other", "--quiet"]);
        assert_eq!(out.status.code(), Some(1), "{sweep}: {}", text(&out));
        assert!(text(&out).contains("runs/other: the folder of a run (it holds its verdicts or result), whose report and plots the sweep's outputs would overwrite"), "{sweep}: {}", text(&out));
    }
    assert!(!d.join("runs/other/summary.md").exists());
    // A run named like an audit: refused (it overwrote the audit's config.yaml and appended its
    // verdicts to the audit's), in the dry run as in the run.
    let audit = write(
        d,
        "aud2.yaml",
        &format!("name: aud\nout_dir: runs\njudge:\n  mock: {{mode: deterministic}}\npairs: {}\n", pairs.display()),
    );
    assert!(run_bin(d, &["audit", audit.to_str().unwrap(), "--quiet"]).status.success());
    let config = std::fs::read(d.join("runs/aud/config.yaml")).unwrap();
    let verdicts = std::fs::read(d.join("runs/aud/verdicts.jsonl")).unwrap();
    let cfg = mock_config(d, "aud", 16, "");
    for dry in [false, true] {
        let mut args = vec!["run", cfg.to_str().unwrap(), "--quiet"];
        if dry {
            args.push("--dry-run");
        }
        let out = run_bin(d, &args);
        assert_eq!(out.status.code(), Some(1), "{}", text(&out));
        assert!(
            text(&out).contains("cannot create the run folder (out_dir/name): the folder of an audit (it holds its audit.json), not of a run: the run would write its config and verdicts into that audit's; give the run another `name` or `out_dir`"),
            "{}",
            text(&out)
        );
    }
    assert_eq!(std::fs::read(d.join("runs/aud/config.yaml")).unwrap(), config);
    assert_eq!(std::fs::read(d.join("runs/aud/verdicts.jsonl")).unwrap(), verdicts);
    // Commands that read a run's folder name an audit's folder as such (they said "unknown
    // field `pairs`").
    for cmd in ["gate", "profile", "fit"] {
        let out = run_bin(d, &[cmd, "runs/aud"]);
        assert_eq!(out.status.code(), Some(1), "{}", text(&out));
        assert!(
            text(&out).contains("runs/aud: the folder of an audit (it holds its audit.json), not of a run"),
            "{cmd}: {}",
            text(&out)
        );
    }
    let out = run_bin(d, &["report", "runs/aud"]);
    assert!(
        text(&out).contains(
            "runs/aud is the folder of an audit (it holds its audit.json, where its findings are), not of a run"
        ),
        "{}",
        text(&out)
    );
    let out = run_bin(d, &["run", "runs/aud"]);
    assert!(
        text(&out).contains("this looks like an audit's folder: its config is runs/aud/config.yaml (`topk-judge audit runs/aud/config.yaml` repeats the audit)"),
        "{}",
        text(&out)
    );
}

/// A tie in gold quality at the top-k boundary: its members share the remaining places, so the
/// gold column marks each of them `=` (it starred one of them, the first by index) and says so
/// under the table, as recall@k counts either; `--out` rows carry `gold_tied`.
#[test]
fn a_gold_tie_at_the_boundary_is_marked_on_each_member() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let q = [5.0, 4.0, 3.0, 3.0, 1.0];
    let items: Vec<String> =
        q.iter().enumerate().map(|(i, g)| format!("{{\"id\": \"i{i}\", \"quality\": {g}}}")).collect();
    write(d, "tie.jsonl", &format!("{{\"pool_id\": \"t\", \"items\": [{}]}}\n", items.join(", ")));
    // Every ordered pair, won by the better gold (i3 over i2 in both orders).
    let mut v = String::new();
    for a in 0..5 {
        for b in (0..5).filter(|&b| b != a) {
            let better = q[a] > q[b] || (q[a] == q[b] && a == 3);
            v.push_str(&format!("{{\"a\": \"i{a}\", \"b\": \"i{b}\", \"y\": {}}}\n", u8::from(better)));
        }
    }
    write(d, "v.jsonl", &v);
    let out = run_bin(d, &["fit", "tie.jsonl", "v.jsonl", "--k", "3", "--model", "naive", "--out", "f.json"]);
    assert!(out.status.success(), "{}", text(&out));
    let s = stdout(&out);
    let mark = |id: &str| {
        s.lines().find(|l| l.split_whitespace().nth(1) == Some(id)).unwrap().trim_end().chars().last().unwrap()
    };
    assert_eq!([mark("i0"), mark("i1"), mark("i2"), mark("i3")], ['*', '*', '=', '='], "{s}");
    assert!(s.contains("gold top-3: = marks a tie in gold quality at its boundary: i3, i2 share 1 place (recall@3 counts any of them)\n"), "{s}");
    assert!(s.contains("recall@3 against gold: 1.00"), "{s}");
    let f = json(&d.join("f.json"));
    let tied: Vec<&str> = f["ranking"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["gold_tied"] == true)
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(tied, ["i3", "i2"]);
}

/// Records naming a pool the pool file does not have are said on the terminal, with the pool
/// spelled alike (hunt 55: half a file's records said `"p4 "` and were dropped without a word;
/// only `fit --out`'s other_pools showed them).
#[test]
fn records_of_a_pool_the_file_lacks_are_said_with_its_spelling_alike() {
    let dir = tempfile::tempdir().unwrap();
    let pool = numbered_pool(dir.path(), "p4", 4);
    let mut lines = String::new();
    for (i, p) in ["p4", "p4 ", "P4", "p4"].iter().enumerate() {
        for (a, b) in [("i00", "i01"), ("i02", "i03")] {
            lines.push_str(&format!("{{\"pool_id\": \"{p}\", \"a\": \"{a}\", \"b\": \"{b}\", \"y\": {}}}\n", i % 2));
        }
    }
    let v = write(dir.path(), "v.jsonl", &lines);
    let out = run_bin(dir.path(), &["fit", pool.to_str().unwrap(), v.to_str().unwrap(), "--k", "1"]);
    assert!(out.status.success(), "{}", text(&out));
    let said = stderr(&out);
    assert!(
        said.contains("v.jsonl: 4 records of pools that ")
            && said
                .contains("pool.jsonl does not have are left out: \"P4\" (2); the pool file has \"p4\", spelled alike")
            && said.contains("; \"p4 \" (2); the pool file has \"p4\", spelled alike"),
        "{said}"
    );
    assert!(stdout(&out).contains("pool p4: bias_aware model, 4 valid verdicts"), "{}", text(&out));
}

/// Two pools of one file whose ids are one name in two Unicode forms are refused (they printed
/// as one `pool café`), and `fit` warns of item ids one letter case apart as `run` does (hunt 56).
#[test]
fn pool_ids_in_two_forms_are_refused_and_fit_warns_of_ids_alike() {
    let dir = tempfile::tempdir().unwrap();
    let items = r#"[{"id": "M1", "text": "a"}, {"id": "m1", "text": "b"}]"#;
    let two = format!(
        "{{\"pool_id\": \"caf\u{e9}\", \"task\": \"t\", \"items\": {items}}}\n{{\"pool_id\": \"cafe\u{301}\", \"task\": \"t\", \"items\": {items}}}\n"
    );
    let pool = write(dir.path(), "two.jsonl", &two);
    let v = write(
        dir.path(),
        "v.jsonl",
        "{\"a\": \"M1\", \"b\": \"m1\", \"y\": 1}\n{\"a\": \"m1\", \"b\": \"M1\", \"y\": 1}\n",
    );
    let out = run_bin(dir.path(), &["fit", pool.to_str().unwrap(), v.to_str().unwrap(), "--k", "1"]);
    assert!(
        text(&out).contains(
            "two.jsonl:2: not a valid pool (pool_id \"cafe\\u{301}\" is pool_id \"caf\u{e9}\" of line 1 in another Unicode form"
        ),
        "{}",
        text(&out)
    );
    let one = write(dir.path(), "one.jsonl", &format!("{{\"pool_id\": \"p\", \"task\": \"t\", \"items\": {items}}}\n"));
    let out = run_bin(dir.path(), &["fit", one.to_str().unwrap(), v.to_str().unwrap(), "--k", "1"]);
    assert!(
        stderr(&out).contains(
            "warning: pool \"p\": items \"M1\" and \"m1\" differ only in letter case: they are kept as 2 items"
        ),
        "{}",
        text(&out)
    );
}

/// A record key spelled like a field the reader uses is said with the field (hunt 55:
/// `poolid`, `jugde`, `strong_preferense` were read as absent without a word); the keys of a run
/// folder's own records are not.
#[test]
fn a_misspelled_record_field_is_said() {
    let dir = tempfile::tempdir().unwrap();
    let pool = numbered_pool(dir.path(), "p4", 4);
    let v = write(
        dir.path(),
        "v.jsonl",
        "{\"a\": \"i00\", \"b\": \"i01\", \"y\": 1, \"latency_ms\": 3, \"poolid\": \"x\", \"jugde\": \"gpt-4\"}\n{\"a\": \"i02\", \"b\": \"i03\", \"y\": 0, \"Strong_Preferense\": true}\n",
    );
    let out = run_bin(dir.path(), &["fit", pool.to_str().unwrap(), v.to_str().unwrap(), "--k", "1"]);
    assert!(out.status.success(), "{}", text(&out));
    let said = stderr(&out);
    for (line, k, meant) in
        [(1, "jugde", "judge"), (1, "poolid", "pool_id"), (2, "Strong_Preferense", "strong_preference")]
    {
        assert!(said.contains(&format!("v.jsonl:{line}: the key \"{k}\" is not read (a record's optional fields are pool_id, judge, strong_preference, prompting, cost_usd); \"{meant}\" is spelled alike or means the same")), "{said}");
    }
    assert!(!said.contains("latency_ms"), "{said}");
}

/// A run folder whose log ends with a torn line followed by a newline is fitted without that
/// line, with a warning, as `profile` reads it (hunt 55: `fit RUN` refused it as not JSON).
#[test]
fn fit_drops_a_torn_last_line_with_or_without_its_newline() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = mock_config(dir.path(), "torn", 12, "");
    assert!(run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet"]).status.success());
    let log = dir.path().join("runs/torn/verdicts.jsonl");
    let whole = std::fs::read_to_string(&log).unwrap();
    for tail in ["{\"a\":\"M1\",\"b\":\"M3\",\"y\":1\n", "{\"a\":\"M1\",\"b\":\"M3\",\"y\":1\n\n"] {
        std::fs::write(&log, format!("{whole}{tail}")).unwrap();
        let out = run_bin(dir.path(), &["fit", dir.path().join("runs/torn").to_str().unwrap()]);
        assert!(out.status.success(), "{tail:?}: {}", text(&out));
        assert!(
            stderr(&out).contains("verdicts.jsonl:13: dropped a torn last line (24 bytes, cut short"),
            "{tail:?}: {}",
            text(&out)
        );
    }
    // In the middle of the file it is an error naming its line.
    std::fs::write(&log, format!("{{\"a\":\"M1\"\n{whole}")).unwrap();
    let out = run_bin(dir.path(), &["fit", dir.path().join("runs/torn").to_str().unwrap()]);
    assert!(!out.status.success() && text(&out).contains("verdicts.jsonl:1: not a verdict record"), "{}", text(&out));
}

/// Judges that would print as one are refused or said (hunt 57: `gpt-4` and `gpt-4 ` were two
/// identical rows of `fit --panel`), and other tools' words for a field are named with it
/// (`model` for the judge merged two judges silently; `strong` was dropped).
#[test]
fn judges_named_alike_and_other_tools_words_are_said() {
    let dir = tempfile::tempdir().unwrap();
    let pool = numbered_pool(dir.path(), "p4", 4);
    let fit = |name: &str, lines: &str| {
        let v = write(dir.path(), name, lines);
        run_bin(dir.path(), &["fit", pool.to_str().unwrap(), v.to_str().unwrap(), "--k", "1"])
    };
    let out = fit(
        "sp.jsonl",
        "{\"a\": \"i00\", \"b\": \"i01\", \"y\": 1, \"judge\": \"gpt-4\"}\n{\"a\": \"i02\", \"b\": \"i03\", \"y\": 1, \"judge\": \"gpt-4 \"}\n",
    );
    assert!(
        !out.status.success()
            && text(&out).contains("sp.jsonl:2: \"judge\": the name \"gpt-4 \" begins or ends with white space"),
        "{}",
        text(&out)
    );
    let out = fit(
        "case.jsonl",
        "{\"a\": \"i00\", \"b\": \"i01\", \"y\": 1, \"judge\": \"gpt-4\"}\n{\"a\": \"i02\", \"b\": \"i03\", \"y\": 1, \"judge\": \"GPT-4\"}\n",
    );
    assert!(
        stderr(&out).contains("case.jsonl: judges \"GPT-4\" and \"gpt-4\" differ only in letter case"),
        "{}",
        text(&out)
    );
    let out = fit(
        "words.jsonl",
        "{\"a\": \"i00\", \"b\": \"i01\", \"y\": 1, \"model\": \"gpt-4\", \"strong\": true, \"prompt_id\": \"p4\"}\n",
    );
    for (k, meant) in [("model", "judge"), ("strong", "strong_preference"), ("prompt_id", "pool_id")] {
        assert!(stderr(&out).contains(&format!("the key \"{k}\" is not read (a record's optional fields are pool_id, judge, strong_preference, prompting, cost_usd); \"{meant}\" is spelled alike or means the same")), "{}", text(&out));
    }
}

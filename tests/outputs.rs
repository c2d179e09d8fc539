//! The JSON outputs match their committed schemas (docs/schemas/): `result.json` of runs that
//! exercise different parts (the main job, a paired run, a run over many prompts, a run with
//! its gate, a run that compared nothing), `fit --out`, and `gate.json`. The schemas forbid
//! unknown properties, so a field added to an output without its schema fails here.

use crate::common::*;
use serde_json::Value;
use std::path::Path;

fn schema(name: &str) -> jsonschema::Validator {
    let s = json(&root().join("docs/schemas").join(format!("{name}.schema.json")));
    jsonschema::draft202012::new(&s).unwrap_or_else(|e| panic!("docs/schemas/{name}.schema.json: {e}"))
}

fn check(v: &jsonschema::Validator, file: &Path) {
    let doc = json(file);
    let errors: Vec<String> = v.iter_errors(&doc).map(|e| format!("{} at {}", e, e.instance_path())).collect();
    assert!(errors.is_empty(), "{} does not match its schema:\n{}", file.display(), errors.join("\n"));
}

fn run_ok(dir: &Path, cfg: &Path) {
    let out = run_bin(dir, &["run", cfg.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", text(&out));
}

#[test]
fn result_fit_and_gate_json_match_their_schemas() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let result = schema("result");
    for (file, name) in [
        ("mock.yaml", "summeval-mock"),
        ("paired.yaml", "summeval-paired"),
        ("summeval-systems.yaml", "summeval-systems"),
        ("synthetic.yaml", "synthetic-spurious"),
    ] {
        run_ok(d, &shipped(d, file, |y| y));
        let run = d.join("runs").join(yaml_name(&d.join(file)).unwrap_or(name.to_owned()));
        check(&result, &run.join("result.json"));
    }
    // Nothing compared: the fields of a run that claims no ranking.
    let none = mock_config(d, "nothing", 0, "");
    run_ok(d, &none);
    check(&result, &d.join("runs/nothing/result.json"));
    let r = json(&d.join("runs/nothing/result.json"));
    assert_eq!(r["comparisons"], 0);
    // fit --out on a run folder and on verdicts collected elsewhere.
    let fit = schema("fit");
    let out = run_bin(d, &["fit", "runs/summeval-mock", "--out", "fit.json"]);
    assert!(out.status.success(), "{}", text(&out));
    check(&fit, &d.join("fit.json"));
    let out = run_bin(d, &["fit", "runs/summeval-systems", "--out", "fit-systems.json"]);
    assert!(out.status.success(), "{}", text(&out));
    check(&fit, &d.join("fit-systems.json"));
    // The systems run's report gives the caveat of what identifies c there (a system's answers
    // across prompts), not the paired design's renderings; the paired run's keeps its own.
    for (run, caveat, other) in [
        (
            "summeval-systems",
            "valid only if a system's quality does not change with words from prompt to prompt",
            "renderings",
        ),
        ("summeval-paired", "valid only if the renderings of a base really share quality", "from prompt to prompt"),
    ] {
        let out = run_bin(d, &["report", &format!("runs/{run}")]);
        assert!(out.status.success(), "{}", text(&out));
        let md = std::fs::read_to_string(d.join("runs").join(run).join("report.md")).unwrap();
        let row = md.lines().find(|l| l.starts_with("| words |")).unwrap_or_else(|| panic!("{md}"));
        assert!(row.contains(caveat) && !row.contains(other), "{run}: {row}");
    }
    // gate.json of the synthetic run's gate.
    check(&schema("gate"), &d.join("runs/synthetic-spurious/gate.json"));
    // The schemas are strict: an unknown field fails.
    let mut bogus: Value = json(&d.join("runs/summeval-mock/result.json"));
    bogus["not_a_field"] = Value::Bool(true);
    assert!(!result.is_valid(&bogus), "an unknown field must fail the result schema");
}

/// The `name:` of a run config.
fn yaml_name(cfg: &Path) -> Option<String> {
    let text = std::fs::read_to_string(cfg).ok()?;
    text.lines().find_map(|l| l.strip_prefix("name: ")).map(|n| n.split('#').next().unwrap_or(n).trim().to_owned())
}

/// A panel run's result.json matches docs/schemas/panel-result.schema.json, its `fit` the
/// fit-panel schema.
#[test]
fn panel_run_result_matches_its_schema() {
    let dir = tempfile::tempdir().unwrap();
    // With a carried prior, so its field is checked too.
    let cfg = shipped(dir.path(), "panel.yaml", |y| {
        y.replace("max_usd: 0.06", "max_usd: 0.03").replacen(
            "  - name: cheap\n",
            "  - name: cheap\n    prior: {kappa: {mean: 1.1, sd: 0.4}}\n",
            1,
        )
    });
    let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", text(&out));
    let result = dir.path().join("runs/summeval-panel/result.json");
    check(&schema("panel-result"), &result);
    let fit = dir.path().join("fit.json");
    std::fs::write(&fit, json(&result)["fit"].to_string()).unwrap();
    check(&schema("fit-panel"), &fit);
    assert_eq!(
        json(&result)["fit"]["judges"][0]["carried_prior"],
        serde_json::json!({"kappa": {"mean": 1.1, "sd": 0.4}})
    );
}

/// `fit --panel --out` matches docs/schemas/fit-panel.schema.json, with and without a trusted
/// judge.
#[test]
fn fit_panel_json_matches_its_schema() {
    let dir = tempfile::tempdir().unwrap();
    let v = schema("fit-panel");
    for (i, extra) in [&["--trusted", "frontier"][..], &[][..]].iter().enumerate() {
        let out_file = dir.path().join(format!("panel-{i}.json"));
        let mut args = vec!["fit", "data/summeval_pools.jsonl", "data/panel_verdicts.jsonl", "--panel", "--out"];
        args.push(out_file.to_str().unwrap());
        args.extend_from_slice(extra);
        let out = run_bin(&root(), &args);
        assert!(out.status.success(), "{}", text(&out));
        check(&v, &out_file);
    }
}

//! The judge-panel experiment end to end (`simulate` with a `panel:` file, docs/experiments.md,
//! "A judge panel").

use crate::common::{root, run_bin, text, write};

fn shrunk(file: &str, from: &[(&str, &str)]) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let mut yaml = std::fs::read_to_string(root().join("configs").join(file)).unwrap();
    for (a, b) in from {
        assert!(yaml.contains(a), "{file} should contain {a:?}");
        yaml = yaml.replace(a, b);
    }
    let yaml = yaml
        .replace("out_dir: ../runs/sweeps", "out_dir: out")
        .replace("../data/", &format!("{}/", root().join("data").display()));
    let cfg = write(dir.path(), file, &yaml);
    (dir, cfg)
}

/// The shipped SummEval panel experiment on 3 pools and one seed: every arm at every
/// checkpoint (and the single judges at 5× each), the panel never over its checkpoint, one
/// judges.csv line per judge, the plot, and the summary's tables with the headers the docs show.
#[test]
fn summeval_panel_experiment_small_scale() {
    let (dir, cfg) = shrunk(
        "sweep-panel-summeval.yaml",
        &[
            ("file: ../data/summeval_systems.jsonl", "file: ../data/summeval_systems.jsonl\n  limit: 3"),
            ("seeds: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]", "seeds: [1]"),
            ("mc_draws: 500", "mc_draws: 100"),
        ],
    );
    let out = run_bin(dir.path(), &["simulate", cfg.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", text(&out));
    let o = dir.path().join("out/sweep-panel-summeval");
    let csv = std::fs::read_to_string(o.join("rows.csv")).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines[0], "pool,seed,arm,budget_usd,spend_usd,recall,queries_cheap,queries_frontier");
    // 5 checkpoints and their 5× (0.02, 0.045 and 0.1 are both): 7 budgets for the two judges
    // alone and the gate, 5 for the panel, per pool.
    assert_eq!(lines.len() - 1, 3 * (3 * 7 + 5), "{csv}");
    for l in &lines[1..] {
        let f: Vec<&str> = l.split(',').collect();
        let (budget, spend): (f64, f64) = (f[3].parse().unwrap(), f[4].parse().unwrap());
        if f[2] == "panel" || f[2].starts_with("alone:") {
            assert!(spend <= budget + 1e-12, "{l}");
        }
    }
    let judges = std::fs::read_to_string(o.join("judges.csv")).unwrap();
    assert_eq!(judges.lines().count(), 1 + 3 * 2, "{judges}");
    assert!(o.join("recall_vs_spend.svg").exists());
    let md = std::fs::read_to_string(o.join("summary.md")).unwrap();
    assert!(md.contains("| 0.1000 | panel | "), "{md}");
    assert!(md.contains("| B (USD) | judge | panel − alone at 5× B | panel − alone at B |"), "{md}");
}

/// A bad experiment file is refused with the key named, before anything runs.
#[test]
fn a_panel_file_with_two_trusted_judges_is_refused() {
    let (dir, cfg) =
        shrunk("sweep-panel-synthetic.yaml", &[("    - name: cheap\n", "    - name: cheap\n      trusted: true\n")]);
    let out = run_bin(dir.path(), &["simulate", cfg.to_str().unwrap(), "--quiet"]);
    assert!(!out.status.success());
    assert!(text(&out).contains("panel.judges: at most one judge may be trusted"), "{}", text(&out));
}

/// The numbers of docs/experiments.md, "A judge panel" (SummEval, 1,000 runs, about 4 minutes
/// in release): `cargo test --release --test integration panel:: -- --ignored`.
#[test]
#[ignore = "the full SummEval experiment; run with --ignored"]
fn summeval_panel_numbers_in_the_docs() {
    let (dir, cfg) = shrunk("sweep-panel-summeval.yaml", &[]);
    let out = run_bin(dir.path(), &["simulate", cfg.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", text(&out));
    let md = std::fs::read_to_string(dir.path().join("out/sweep-panel-summeval/summary.md")).unwrap();
    for row in [
        "| 0.0040 | panel | 0.559 ± 0.008 |",
        "| 0.0450 | panel | 0.812 ± 0.006 |",
        "| 0.1000 | panel | 0.882 ± 0.005 |",
        "| 0.5000 | alone:frontier | 0.890 ± 0.005 |",
        "| 0.1000 | frontier | -0.008 ± 0.006 | +0.109 ± 0.007 |",
        "| 0.0450 | frontier | -0.063 ± 0.007 | +0.295 ± 0.010 |",
    ] {
        assert!(md.contains(row), "{row} not in\n{md}");
    }
}

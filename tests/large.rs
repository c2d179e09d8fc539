//! Large pools from the command line (docs/model.md §2 "Large pools"): what a run over more
//! items than a terminal can show prints, and how it starts.

use crate::common::{run_bin, text, write};

/// A synthetic pool of `n` items, k = 5, the top-k rule, `budget` comparisons.
fn synthetic_config(dir: &std::path::Path, name: &str, n: usize, budget: usize) -> std::path::PathBuf {
    let yaml = format!(
        "name: {name}\nout_dir: runs\npool:\n  synthetic: {{n: {n}, rho: 0.0, c_star: 1.0, kappa_star: 0.5, temperature: 1.0, paired: false, seed: 3}}\nk: 5\njudge:\n  synthetic: {{}}\nmodel:\n  kind: bias_aware\nacquisition:\n  strategy: topk\n  seed: 1\n  mc_draws: 200\nbudget:\n  max_comparisons: {budget}\n"
    );
    write(dir, &format!("{name}.yaml"), &yaml)
}

#[test]
fn the_summary_table_of_a_large_pool_stops_after_fifty_rows() {
    // 80 items: the table shows 50 ranks, then says how many more rows result.json holds; the
    // never-compared items and the one-item components are summarised, not listed.
    let dir = tempfile::tempdir().unwrap();
    let cfg = synthetic_config(dir.path(), "wide", 80, 40);
    let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let ranks: Vec<usize> =
        stdout.lines().filter_map(|l| l.split_whitespace().next()?.trim_end_matches('=').parse().ok()).collect();
    assert_eq!(ranks.first(), Some(&1), "{stdout}");
    assert_eq!(ranks.iter().max(), Some(&50), "{stdout}");
    assert!(stdout.contains("\n  … 30 more rows (every item is in result.json)\n"), "{stdout}");
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("runs/wide/result.json")).unwrap()).unwrap();
    assert_eq!(r["ranking"].as_array().unwrap().len(), 80);
    // 40 comparisons in both orders: 20 pairs, so at least 40 of the 80 items were never compared.
    let never = r["graph"]["never_compared"].as_array().unwrap().len();
    assert!(never >= 40, "{never}");
    let line = stdout.lines().find(|l| l.starts_with("comparison graph:")).unwrap_or_default();
    assert!(line.contains(" of size 1); never compared: ") && line.ends_with(&format!("… ({never} in all)")), "{line}");
}

#[test]
fn a_large_pool_run_begins_with_disjoint_pairs() {
    // 1,200 items take the large-pool path; before any verdict every pair ties, and the first
    // batch of 8 queries is 4 pairs of 8 different items, each in both orders.
    let dir = tempfile::tempdir().unwrap();
    let cfg = synthetic_config(dir.path(), "start", 1200, 8);
    let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", text(&out));
    let pairs = crate::common::ordered_pairs(dir.path(), "start");
    assert_eq!(pairs.len(), 8);
    let mut items: Vec<&String> = pairs.iter().flat_map(|(a, b)| [a, b]).collect();
    items.sort();
    items.dedup();
    assert_eq!(items.len(), 8, "{pairs:?}");
    for (a, b) in &pairs {
        assert!(pairs.contains(&(b.clone(), a.clone())), "{a} {b} without its other order");
    }
}

#[test]
fn fits_jsonl_of_a_large_pool_is_light_between_checkpoints_and_full_at_the_end() {
    // 2,500 bases (more than 2,000): the first line, the 10th, 20th, 40th, … and the last are
    // full; the
    // lines between list the 2,000 bases of highest π and no β̂. A resumed run warm-starts from
    // the last line, which a finished run always leaves full.
    let dir = tempfile::tempdir().unwrap();
    let cfg = synthetic_config(dir.path(), "light", 2500, 56);
    let text_of =
        std::fs::read_to_string(&cfg).unwrap().replace("  mc_draws: 200\n", "  mc_draws: 200\n  refit_every: 4\n");
    std::fs::write(&cfg, text_of).unwrap();
    let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", text(&out));
    let fits = std::fs::read_to_string(dir.path().join("runs/light/fits.jsonl")).unwrap();
    let lines: Vec<serde_json::Value> = fits.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(lines.len() >= 12, "{} lines", lines.len());
    let light = |l: &serde_json::Value| l.get("light").and_then(serde_json::Value::as_bool).unwrap_or(false);
    for (i, l) in lines.iter().enumerate() {
        let full = topk_judge::run::observe::is_checkpoint(i) || i + 1 == lines.len();
        assert_eq!(light(l), !full, "line {i}");
        let (listed, beta) = (l["membership"].as_object().unwrap().len(), l["beta"].as_array().unwrap().len());
        if full {
            assert_eq!((listed, beta), (2500, 2500 + 1 + 1), "line {i}");
        } else {
            assert_eq!((listed, beta), (2000, 0), "line {i}");
            assert_eq!(l["theta"].as_object().unwrap().len(), 2000);
        }
    }
    let size = |i: usize| fits.lines().nth(i).unwrap().len();
    assert!(size(1) * 5 < size(0) * 4, "a light line is smaller: {} vs {}", size(1), size(0));
    // Resume with a larger budget: the run goes on from the stored verdicts and the full last line.
    let more = std::fs::read_to_string(&cfg).unwrap().replace("max_comparisons: 56", "max_comparisons: 64");
    std::fs::write(&cfg, more).unwrap();
    let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{}", text(&out));
    let after = std::fs::read_to_string(dir.path().join("runs/light/fits.jsonl")).unwrap();
    let last: serde_json::Value = serde_json::from_str(after.lines().last().unwrap()).unwrap();
    assert!(!light(&last) && last["comparisons"].as_u64() == Some(64), "{last}");
    assert!(after.starts_with(&fits), "the first run's lines are kept");
}

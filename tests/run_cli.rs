//! `topk-judge run` and `fit` end to end on the shipped SummEval pool with the mock judge.

use crate::common::*;

#[test]
fn run_writes_outputs_and_table() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = mock_config(dir.path(), "smoke", 24, "");
    let out = run_bin(dir.path(), &["run", cfg.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    let run = dir.path().join("runs/smoke");
    for f in ["config.yaml", "verdicts.jsonl", "fits.jsonl", "result.json"] {
        assert!(run.join(f).exists(), "{f} missing");
    }
    let verdicts = std::fs::read_to_string(run.join("verdicts.jsonl")).unwrap();
    assert_eq!(verdicts.lines().count(), 24);
    assert!(text(&out).contains("rank"), "{}", text(&out));
}

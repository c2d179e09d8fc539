//! Shared helpers for the integration tests: the binary, temp dirs, config writing.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The pool id of the shipped SummEval pool the main job ranks.
pub const POOL_ID: &str = "dm-test-2377095dda83df778e34304b7a09813808105d3b";

/// Path of the built binary.
pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_topk-judge"))
}

/// The project root (for shipped data and configs).
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The shipped SummEval pools file.
pub fn summeval() -> PathBuf {
    root().join("data/summeval_pools.jsonl")
}

/// Run the binary with arguments in `cwd`.
pub fn run_bin(cwd: &Path, args: &[&str]) -> Output {
    Command::new(bin()).current_dir(cwd).args(args).env_remove("RUST_LOG").output().expect("binary runs")
}

/// stdout + stderr as text.
pub fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// Write a file under `dir`, returning its path.
pub fn write(dir: &Path, name: &str, content: &str) -> PathBuf {
    let p = dir.join(name);
    if let Some(parent) = p.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(&p, content).unwrap();
    p
}

/// `dir/pool.jsonl`: one pool `pool_id` of `n` items i00, i01, … with texts "answer j" and gold
/// quality j (the last is the best).
pub fn numbered_pool(dir: &Path, pool_id: &str, n: usize) -> PathBuf {
    let items: Vec<String> = (0..n)
        .map(|j| {
            serde_json::json!({"id": format!("i{j:02}"), "text": format!("answer {j}"), "quality": j as f64})
                .to_string()
        })
        .collect();
    let line =
        format!("{{\"pool_id\": \"{pool_id}\", \"task\": \"pick the best\", \"items\": [{}]}}\n", items.join(", "));
    write(dir, "pool.jsonl", &line)
}

/// A shipped config (`configs/FILE`) with its `../data/` paths made absolute and its outputs in
/// `dir/runs`, edited by `edit` and written to `dir/FILE`.
pub fn shipped(dir: &Path, file: &str, edit: impl Fn(String) -> String) -> PathBuf {
    shipped_as(dir, file, file, edit)
}

/// [`shipped`] written to `dir/AS`.
pub fn shipped_as(dir: &Path, file: &str, r#as: &str, edit: impl Fn(String) -> String) -> PathBuf {
    let yaml = std::fs::read_to_string(root().join("configs").join(file))
        .unwrap()
        .replace("out_dir: ../runs", "out_dir: runs")
        .replace("../data/", &format!("{}/", root().join("data").display()));
    write(dir, r#as, &edit(yaml))
}

/// A mock-judge config on the shipped SummEval pool, output into `dir/runs`.
pub fn mock_config(dir: &Path, name: &str, max_comparisons: u64, extra: &str) -> PathBuf {
    let yaml = format!(
        "name: {name}\nout_dir: runs\npool:\n  file: {pool}\n  id: dm-test-2377095dda83df778e34304b7a09813808105d3b\nk: 3\njudge:\n  mock:\n    mode: stochastic\n    seed: 7\nacquisition:\n  seed: 42\n  mc_draws: 400\nbudget:\n  max_comparisons: {max_comparisons}\n{extra}",
        pool = summeval().display()
    );
    write(dir, &format!("{name}.yaml"), &yaml)
}
pub mod fake_openai;

/// A JSON file.
pub fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))).unwrap()
}

/// stdout as text.
pub fn stdout(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// stderr as text.
pub fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The strings of a JSON array.
pub fn strs(v: &serde_json::Value) -> Vec<String> {
    v.as_array().unwrap().iter().map(|x| x.as_str().unwrap().to_string()).collect()
}

/// configs/mock.yaml with its paths made absolute / local to `dir`, plus `extra` YAML lines.
pub fn main_job(dir: &Path, name: &str, extra: &str) -> PathBuf {
    let yaml = std::fs::read_to_string(root().join("configs/mock.yaml"))
        .unwrap()
        .replace("name: summeval-mock", &format!("name: {name}"))
        .replace("out_dir: ../runs", "out_dir: runs")
        .replace("../data/summeval_pools.jsonl", summeval().to_str().unwrap());
    write(dir, &format!("{name}.yaml"), &format!("{yaml}{extra}"))
}

/// The result.json of run `name` in `<dir>/runs`.
pub fn result(dir: &Path, name: &str) -> serde_json::Value {
    json(&dir.join("runs").join(name).join("result.json"))
}

/// The ordered pairs (a shown first, b second) of `<dir>/runs/<name>/verdicts.jsonl`, in the
/// order they were stored.
pub fn ordered_pairs(dir: &Path, name: &str) -> Vec<(String, String)> {
    pairs_of(&dir.join("runs").join(name).join("verdicts.jsonl"))
}

/// The ordered pairs of `<dir>/runs/<name>/intents.jsonl`, in the order they were sent (an
/// intent is written before its request; verdicts are stored in the order replies arrive).
pub fn sent_pairs(dir: &Path, name: &str) -> Vec<(String, String)> {
    pairs_of(&dir.join("runs").join(name).join("intents.jsonl"))
}

fn pairs_of(path: &Path) -> Vec<(String, String)> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            (v["a"].as_str().unwrap().to_string(), v["b"].as_str().unwrap().to_string())
        })
        .collect()
}

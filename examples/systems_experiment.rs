//! The systems experiment of docs/experiments.md ("Ranking systems across prompts"): recall@3 of
//! the 16 SummEval systems against the expert gold ranking, on `configs/summeval-systems.yaml`
//! (100 articles, mock judge), for topk, round_robin and random acquisition at budgets 200, 400
//! and 800, over judge seeds 0–49. Prints the table of docs/experiments.md and writes
//! `docs/img/systems-recall.svg`.
//!
//! Run from the project root: `cargo run --release --example systems_experiment`.

use std::path::Path;
use topk_judge::acquire::StrategyKind;
use topk_judge::report::plots::{LineChart, Series, line_chart};
use topk_judge::report::systems::{markdown_table, mean_se, recalls};
use topk_judge::sweep::systems::recall_experiment;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let cfg = topk_judge::config::run::Config::load(Path::new("configs/summeval-systems.yaml"))?;
    let strategies = [StrategyKind::Topk, StrategyKind::RoundRobin, StrategyKind::Random];
    let budgets = [200, 400, 800];
    let seeds: Vec<u64> = (0..50).collect();
    let t = std::time::Instant::now();
    let rows = recall_experiment(&cfg, &strategies, &budgets, &seeds, 0)?;
    eprintln!("{} paths in {:.1} s", strategies.len() * seeds.len(), t.elapsed().as_secs_f64());
    print!("{}", markdown_table(&rows, &strategies, &budgets));
    let name = |s: StrategyKind| format!("{s:?}").to_lowercase().replace("roundrobin", "round_robin");
    let series: Vec<Series> = strategies
        .iter()
        .map(|&s| {
            let cells: Vec<(f64, f64)> = budgets.iter().map(|&b| mean_se(&recalls(&rows, s, b))).collect();
            Series {
                name: name(s),
                points: budgets.iter().zip(&cells).map(|(&b, c)| (b as f64, c.0)).collect(),
                err: Some(cells.iter().map(|c| c.1).collect()),
            }
        })
        .collect();
    let svg = line_chart(&LineChart {
        title: "SummEval systems (100 articles × 16 systems), mock judge: recall@3 vs budget".into(),
        x_label: "comparisons (budget)".into(),
        y_label: "recall@3 against the expert gold (mean ± SE, 50 seeds)".into(),
        series,
        hlines: vec![],
        vlines: vec![],
        y_range: Some((0.0, 1.0)),
        legend_upper: false,
    })?;
    std::fs::write("docs/img/systems-recall.svg", svg)?;
    Ok(())
}

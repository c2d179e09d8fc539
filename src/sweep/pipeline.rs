//! The pipelined-acquisition sweep (docs/experiments.md, "Pipelined acquisition"): recall@k and
//! virtual wall time of Algorithm 1 on synthetic pools for several dispatch settings (wait-for-
//! batch, pipelined with concurrency C), the judge answering after a random latency
//! ([`crate::run::sim_time`]). Each setting runs on the same pools, so differences to the first
//! setting (the reference, normally wait-for-batch) are paired per pool.
//!
//! A `simulate` file is this sweep when it has a top-level `pipeline:` section.

use super::{SweepError, parallel_jobs};
use crate::analysis::synth::{SynthSpec, generate};
use crate::config::pipeline::PipelineSweep;
use crate::config::run::Dispatch;
use crate::report::pipeline::{CellStats, Row, label, markdown, summarise};
use crate::run::sim::SimSettings;
use crate::run::sim_time::{TimedSettings, run_timed};

use std::fmt::Write as _;
use std::path::Path;

impl PipelineSweep {
    /// The simulation settings.
    fn settings(&self) -> SimSettings {
        SimSettings { k: self.k, refit_every: self.refit_every, mc_draws: self.mc_draws, ..SimSettings::default() }
    }
}

/// Run every (pool, budget, setting) on `threads` workers (0 = all cores); rows in that order.
///
/// # Errors
/// [`SweepError::Sim`] for a failed fit.
pub fn run(s: &PipelineSweep, threads: usize, on_done: &(dyn Fn(usize) + Sync)) -> Result<Vec<Row>, SweepError> {
    let mut jobs = Vec::new();
    for i in 0..s.pools.count as u64 {
        for &b in &s.budgets {
            for r in 0..s.pipeline.runs.len() {
                jobs.push((s.pools.seed + i, b, r));
            }
        }
    }
    parallel_jobs(&jobs, threads, on_done, |&(seed, budget, r)| {
        let sp = generate(&SynthSpec {
            n: s.pools.n,
            rho: s.pools.rho,
            c_star: s.pools.c_star,
            kappa_star: s.pools.kappa_star,
            temperature: 1.0,
            paired: false,
            seed,
        });
        let v = s.pipeline.runs[r];
        let (refit_every, concurrency, dispatch) = v.cadence(s.refit_every);
        let settings = SimSettings { refit_every, ..s.settings() };
        let timed = TimedSettings {
            concurrency,
            dispatch,
            write_ahead: dispatch.write_ahead(v.write_ahead),
            latency: s.pipeline.latency,
        };
        let t = run_timed(&sp, s.strategy, s.model, budget, &settings, &timed)?;
        Ok::<_, SweepError>(Row {
            pool_seed: seed,
            budget,
            run: r,
            comparisons: t.comparisons,
            spend: t.comparisons as f64 * s.pipeline.price_factor(&v),
            recall: t.recall,
            wall_s: t.wall_s,
        })
    })
}

/// Write rows.csv, summary.md and recall_vs_wall_time.svg into `dir`; returns summary.md's text.
///
/// # Errors
/// [`SweepError::Write`].
pub fn write_outputs(s: &PipelineSweep, rows: &[Row], dir: &Path) -> Result<String, SweepError> {
    let werr = |path: &Path, msg: String| SweepError::Write { path: path.to_owned(), msg };
    crate::store::files::create_folder(dir).map_err(|e| werr(dir, e))?;
    let csv_path = dir.join("rows.csv");
    let mut csv = String::from("pool_seed,budget,concurrency,dispatch,write_ahead,comparisons,spend,recall,wall_s\n");
    for r in rows {
        let v = s.pipeline.runs[r.run];
        let (_, concurrency, _) = v.cadence(s.refit_every);
        let d = match v.dispatch {
            Dispatch::Pipelined => "pipelined",
            Dispatch::WaitForBatch => "wait_for_batch",
            Dispatch::Batch => "batch",
        };
        let _ = writeln!(
            csv,
            "{},{},{},{d},{},{},{},{},{}",
            r.pool_seed,
            r.budget,
            concurrency,
            v.dispatch.write_ahead(v.write_ahead),
            r.comparisons,
            r.spend,
            r.recall,
            r.wall_s
        );
    }
    std::fs::write(&csv_path, csv).map_err(|e| werr(&csv_path, e.to_string()))?;
    let cells = summarise(s, rows);
    let md = markdown(s, &cells);
    let md_path = dir.join("summary.md");
    std::fs::write(&md_path, &md).map_err(|e| werr(&md_path, e.to_string()))?;
    let series = s
        .pipeline
        .runs
        .iter()
        .map(|v| {
            let mine: Vec<&CellStats> = cells.iter().filter(|c| c.variant == *v).collect();
            crate::report::plots::Series {
                name: label(v),
                points: mine.iter().map(|c| (c.wall_s.mean, c.recall.mean)).collect(),
                err: Some(mine.iter().map(|c| c.recall.se).collect()),
            }
        })
        .collect();
    let chart = crate::report::plots::LineChart {
        title: format!("recall@{} against virtual wall time (B = {:?})", s.k, s.budgets),
        x_label: "virtual wall time (s)".into(),
        y_label: format!("recall@{} (mean ± se)", s.k),
        series,
        hlines: Vec::new(),
        vlines: Vec::new(),
        y_range: None,
        legend_upper: false,
    };
    super::write_chart(&chart, &dir.join("recall_vs_wall_time.svg"))?;
    Ok(md)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acquire::StrategyKind;
    use crate::config::pipeline::{Latency, PipelineSection, Pools, Variant};
    use crate::model::summary::ModelKind;

    /// `simulate` checks `write_ahead` as `run` does, naming the run.
    #[test]
    fn write_ahead_is_checked_per_run() {
        let dir = tempfile::tempdir().unwrap();
        let yaml = "name: t\nout_dir: runs\nk: 2\npools: {n: 6, count: 1, seed: 1, rho: 0.0, c_star: 1.0, kappa_star: 0.5}\nstrategy: topk\nmodel: bias_aware\nbudgets: [10]\nrefit_every: 4\nmc_draws: 100\npipeline:\n  latency: {mean_s: 0.5, sd_s: 0.1}\n  runs:\n    - {concurrency: 8, dispatch: pipelined, write_ahead: 8}\n    - {concurrency: 8, dispatch: wait_for_batch, write_ahead: 4}\n";
        let path = dir.path().join("s.yaml");
        std::fs::write(&path, yaml).unwrap();
        let e = PipelineSweep::load(&path).expect_err("wait-for-batch with 4 ahead").to_string();
        assert!(e.contains("pipeline.runs[1].write_ahead: 4 applies to `dispatch: pipelined` only"), "{e}");
        std::fs::write(&path, yaml.replace("write_ahead: 8}", "write_ahead: 9}")).unwrap();
        let e = PipelineSweep::load(&path).expect_err("9 ahead of 8").to_string();
        assert!(e.contains("pipeline.runs[0].write_ahead: 9 must be at most `concurrency` (8)"), "{e}");
    }

    /// A run listed twice is refused, as a repeated budget is (hunt 46: it ran twice and its
    /// row was printed twice); the budgets' rule is said the same way for a word and for 0.
    #[test]
    fn a_repeated_run_and_a_budget_that_is_not_a_count_are_refused_in_one_rule() {
        let dir = tempfile::tempdir().unwrap();
        let yaml = "name: t\nout_dir: runs\nk: 2\npools: {n: 6, count: 1, seed: 1, rho: 0.0, c_star: 1.0, kappa_star: 0.5}\nbudgets: [10]\nrefit_every: 4\nmc_draws: 100\npipeline:\n  latency: {mean_s: 0.5, sd_s: 0.1}\n  runs:\n    - {dispatch: batch, round_size: 16}\n    - {concurrency: 8, dispatch: pipelined}\n    - {round_size: 16, dispatch: batch}\n";
        let path = dir.path().join("s.yaml");
        std::fs::write(&path, yaml).unwrap();
        let e = PipelineSweep::load(&path).expect_err("the batch run twice").to_string();
        assert!(
            e.contains("pipeline.runs[2]: {dispatch: batch, round_size: 16} is the setting of pipeline.runs[0] again"),
            "{e}"
        );
        std::fs::write(&path, yaml.replace("    - {round_size: 16, dispatch: batch}\n", "")).unwrap();
        assert!(PipelineSweep::load(&path).is_ok());
        for (budgets, says) in [
            ("[10, all]", "expected a whole number ≥ 1, found \"all\""),
            ("[0, 10]", "budgets: must list at least one budget, each ≥ 1"),
        ] {
            let y = yaml.replace("    - {round_size: 16, dispatch: batch}\n", "").replace("[10]", budgets);
            std::fs::write(&path, y).unwrap();
            let e = PipelineSweep::load(&path).expect_err(budgets).to_string();
            assert!(e.contains(says), "{budgets}: {e}");
        }
    }

    #[test]
    fn paired_differences_and_the_table() {
        let s = PipelineSweep {
            name: "t".into(),
            out_dir: "runs".into(),
            k: 2,
            pools: Pools { n: 6, count: 2, seed: 0, rho: 0.0, c_star: 1.0, kappa_star: 0.5 },
            strategy: StrategyKind::Topk,
            model: ModelKind::BiasAware,
            budgets: vec![10],
            refit_every: 4,
            mc_draws: 100,
            pipeline: PipelineSection {
                latency: Latency { mean_s: 1.0, sd_s: 0.0 },
                batch_discount: None,
                runs: vec![
                    Variant { concurrency: 4, dispatch: Dispatch::WaitForBatch, write_ahead: None, round_size: None },
                    Variant { concurrency: 8, dispatch: Dispatch::Pipelined, write_ahead: None, round_size: None },
                ],
            },
            threads: 1,
        };
        let row = |pool_seed, run, recall, wall_s| Row {
            pool_seed,
            budget: 10,
            run,
            comparisons: 10,
            spend: 10.0,
            recall,
            wall_s,
        };
        let rows = vec![row(0, 0, 0.5, 3.0), row(0, 1, 1.0, 2.0), row(1, 0, 1.0, 3.0), row(1, 1, 1.0, 2.0)];
        let c = summarise(&s, &rows);
        assert_eq!(c.len(), 2);
        assert_eq!((c[0].diff.mean, c[0].diff.se), (0.0, 0.0), "the reference against itself");
        // Differences 0.5 and 0: mean 0.25, sd 0.3536, se 0.25.
        assert!((c[1].diff.mean - 0.25).abs() < 1e-12 && (c[1].diff.se - 0.25).abs() < 1e-12);
        assert_eq!(c[1].wall_s.mean, 2.0);
        let md = markdown(&s, &c);
        assert!(md.contains("| 10 | pipelined, C = 8 | 1.000 ± 0.000 | +0.250 ± 0.250 | 2.0 |"), "{md}");
        assert!(md.contains("| 10 | wait-for-batch, C = 4 | 0.750 ± 0.250 | +0.000 ± 0.000 | 3.0 |"), "{md}");
    }
}

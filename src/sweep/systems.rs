//! The systems experiment of docs/experiments.md ("Ranking systems across prompts"): recall@k
//! of the system top-k against the gold system ranking (mean gold quality over each system's
//! answers), for several acquisition strategies, budgets and judge seeds, on a run over many
//! prompts with the mock judge.
//!
//! Each (strategy, seed) is one simulated path of Algorithm 1 ([`crate::run::sim::follow`]: the
//! runner's choices without the I/O) with the mock judge's seed and the acquisition seed both set
//! to the seed, recording the point top-k of θ̂ at every budget. Pairs of answers with identical
//! text are set aside as the runner does (`acquisition.identical_texts: skip`).

use crate::acquire::StrategyKind;
use crate::config::run::Config;
use crate::domain::verdict::Answer;
use crate::judge::mock::{MockConfig, MockJudge};
use crate::model::membership::{point_topk, recall_at_k};
use crate::run::sim::{PathInput, SimSettings, follow};

/// One simulated path at one budget.
#[derive(Debug, Clone, PartialEq)]
pub struct SystemsRow {
    /// Acquisition strategy.
    pub strategy: StrategyKind,
    /// Judge and acquisition seed.
    pub seed: u64,
    /// Comparisons (the budget).
    pub budget: usize,
    /// Recall@k of the point top-k of θ̂ against the gold top-k.
    pub recall: f64,
}

/// Errors of the systems experiment.
#[derive(Debug, thiserror::Error)]
pub enum SystemsExperimentError {
    /// The config's judge is not the mock judge, or the pool has no gold quality.
    #[error("{0}")]
    Setup(String),
    /// A fit failed on a path.
    #[error("{strategy:?}, seed {seed}, after {comparisons} verdicts: {source}")]
    Fit {
        /// Strategy of the path.
        strategy: StrategyKind,
        /// Seed of the path.
        seed: u64,
        /// Valid verdicts at the failed fit.
        comparisons: usize,
        /// The fit's error.
        source: crate::model::FitError,
    },
}

/// Run every (strategy, seed) path of `cfg` (a run over many prompts with a mock judge) and
/// report recall@k at each of `budgets` (strictly increasing), on `threads` worker threads
/// (0 = all cores). Rows in (strategy, seed, budget) order; deterministic.
///
/// # Errors
/// [`SystemsExperimentError`].
pub fn recall_experiment(
    cfg: &Config,
    strategies: &[StrategyKind],
    budgets: &[usize],
    seeds: &[u64],
    threads: usize,
) -> Result<Vec<SystemsRow>, SystemsExperimentError> {
    let crate::config::judge::JudgeConfig::Mock(mock) = &cfg.raw.judge else {
        return Err(SystemsExperimentError::Setup("the systems experiment needs `judge: {mock: …}`".into()));
    };
    let pool = &cfg.pool;
    let gold = pool
        .base_quality()
        .map(|g| point_topk(&g, cfg.raw.k))
        .ok_or_else(|| SystemsExperimentError::Setup("every answer needs `quality` (gold)".into()))?;
    let skipped = cfg.skipped_pairs();
    let settings = SimSettings {
        k: cfg.raw.k,
        prior: cfg.raw.model.prior(),
        refit_every: cfg.raw.acquisition.refit_every,
        orders: cfg.raw.acquisition.orders,
        mc_draws: cfg.raw.acquisition.mc_draws,
        profile: false,
    };
    let jobs: Vec<(StrategyKind, u64)> =
        strategies.iter().flat_map(|&s| seeds.iter().map(move |&seed| (s, seed))).collect();
    let paths = super::parallel_jobs(&jobs, threads, &|_| {}, |&(strategy, seed)| {
        let judge = MockJudge::new(MockConfig { seed, ..mock.clone() })
            .map_err(|e| SystemsExperimentError::Setup(e.to_string()))?;
        let answer = |a: usize, b: usize| {
            if skipped.contains(&(a, b)) { Answer::Unavailable } else { Answer::Verdict(judge.outcome(pool, a, b)) }
        };
        let input = PathInput { pool, covariates: &cfg.covariates, design: cfg.raw.design, seed, judge: &answer };
        let path = follow(&input, strategy, budgets, &settings)
            .map_err(|(comparisons, source)| SystemsExperimentError::Fit { strategy, seed, comparisons, source })?;
        Ok(path
            .points
            .iter()
            .map(|p| SystemsRow { strategy, seed, budget: p.budget, recall: recall_at_k(&p.topk, &gold) })
            .collect::<Vec<_>>())
    })?;
    Ok(paths.into_iter().flatten().collect())
}

/// Mean and standard error (sd / √n, sample sd) of `v`.
pub fn mean_se(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let var = if v.len() > 1 { v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0) } else { 0.0 };
    (mean, (var / n).sqrt())
}

/// Recalls of `strategy` at `budget`, in seed order.
pub fn recalls(rows: &[SystemsRow], strategy: StrategyKind, budget: usize) -> Vec<f64> {
    rows.iter().filter(|r| r.strategy == strategy && r.budget == budget).map(|r| r.recall).collect()
}

/// The gain of `a` over `b` at `budget`: mean and SE of the per-seed differences (paired: both
/// strategies see the same judge seed).
pub fn paired_gain(rows: &[SystemsRow], a: StrategyKind, b: StrategyKind, budget: usize) -> (f64, f64) {
    let (x, y) = (recalls(rows, a, budget), recalls(rows, b, budget));
    let d: Vec<f64> = x.iter().zip(&y).map(|(u, v)| u - v).collect();
    mean_se(&d)
}

/// The markdown table of docs/experiments.md: one row per strategy with recall@k mean ± SE at
/// each budget, then the paired gain of the first strategy over the second.
pub fn markdown_table(rows: &[SystemsRow], strategies: &[StrategyKind], budgets: &[usize]) -> String {
    let name = |s: StrategyKind| match s {
        StrategyKind::RoundRobin => "round_robin".to_string(),
        StrategyKind::DOptimal => "d_optimal".to_string(),
        other => format!("{other:?}").to_lowercase(),
    };
    let heads: Vec<String> = budgets
        .iter()
        .enumerate()
        .map(|(i, b)| if i == 0 { format!("recall@3, B = {b}") } else { format!("B = {b}") })
        .collect();
    let mut out = format!("| strategy | {} |\n|{}\n", heads.join(" | "), " --- |".repeat(budgets.len() + 1));
    for &s in strategies {
        let cells: Vec<String> = budgets
            .iter()
            .map(|&b| {
                let (m, se) = mean_se(&recalls(rows, s, b));
                format!("{m:.3} ± {se:.3}")
            })
            .collect();
        out.push_str(&format!("| {} | {} |\n", name(s), cells.join(" | ")));
    }
    if let [a, b, ..] = strategies {
        let cells: Vec<String> = budgets
            .iter()
            .map(|&bu| {
                let (g, se) = paired_gain(rows, *a, *b, bu);
                format!("{} ± {se:.3}", if g < 0.0 { format!("−{:.3}", -g) } else { format!("+{g:.3}") })
            })
            .collect();
        out.push_str(&format!("| {} − {} (paired by seed) | {} |\n", name(*a), name(*b), cells.join(" | ")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_se_and_paired_gain_closed_forms() {
        let (m, se) = mean_se(&[1.0, 2.0, 3.0, 6.0]);
        // mean 3, sample var (4 + 1 + 0 + 9)/3 = 14/3, se = sqrt(14/12).
        assert_eq!(m, 3.0);
        assert!((se - (14.0f64 / 12.0).sqrt()).abs() < 1e-12);
        let row = |strategy, seed, recall| SystemsRow { strategy, seed, budget: 8, recall };
        let rows = [
            row(StrategyKind::Topk, 0, 1.0),
            row(StrategyKind::Topk, 1, 2.0 / 3.0),
            row(StrategyKind::RoundRobin, 0, 1.0 / 3.0),
            row(StrategyKind::RoundRobin, 1, 2.0 / 3.0),
        ];
        let (g, se) = paired_gain(&rows, StrategyKind::Topk, StrategyKind::RoundRobin, 8);
        // Differences 2/3 and 0: mean 1/3, sample sd sqrt(2/9), se = sqrt(2/9)/sqrt(2) = 1/3.
        assert!((g - 1.0 / 3.0).abs() < 1e-12 && (se - 1.0 / 3.0).abs() < 1e-12);
    }

    #[test]
    fn the_experiment_runs_every_strategy_seed_and_budget_deterministically() {
        let dir = tempfile::tempdir().unwrap();
        let pools = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("data/summeval_systems.jsonl");
        let yaml = format!(
            "name: s\npool:\n  file: {}\n  ids: [dm-test-2377095dda83df778e34304b7a09813808105d3b, cnn-test-404f859482d47c127868964a9a39d1a7645dd2e9, dm-test-e880fda4c25289f8325574246f0f8ed4ff5eb26b]\nk: 3\njudge:\n  mock: {{mode: stochastic, seed: 1}}\nacquisition: {{mc_draws: 200}}\n",
            pools.display()
        );
        let path = dir.path().join("s.yaml");
        std::fs::write(&path, yaml).unwrap();
        let cfg = Config::load(&path).unwrap();
        let rows = recall_experiment(&cfg, &[StrategyKind::Topk, StrategyKind::Random], &[16, 40], &[3, 4], 2).unwrap();
        assert_eq!(rows.len(), 2 * 2 * 2);
        assert_eq!(
            rows.iter().map(|r| (r.strategy, r.seed, r.budget)).collect::<Vec<_>>()[..3],
            [(StrategyKind::Topk, 3, 16), (StrategyKind::Topk, 3, 40), (StrategyKind::Topk, 4, 16)]
        );
        // Recall@3 takes the values 0, 1/3, 2/3, 1; deterministic.
        assert!(rows.iter().all(|r| [0.0, 1.0 / 3.0, 2.0 / 3.0, 1.0].iter().any(|v| (r.recall - v).abs() < 1e-12)));
        let again =
            recall_experiment(&cfg, &[StrategyKind::Topk, StrategyKind::Random], &[16, 40], &[3, 4], 1).unwrap();
        assert_eq!(rows, again);
    }
}

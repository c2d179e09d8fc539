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
use crate::report::systems::SystemsRow;
use crate::run::sim::{PathInput, SimSettings, follow};

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
    let crate::config::judge::JudgeConfig::Mock(mock) = cfg.raw.judge() else {
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
        let input = PathInput {
            pool,
            covariates: &cfg.covariates,
            design: cfg.raw.design,
            seed,
            judge: &answer,
            allowed: None,
        };
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

#[cfg(test)]
mod tests {
    use super::*;

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

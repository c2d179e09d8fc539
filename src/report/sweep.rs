//! A sweep's outputs (docs/experiments.md): its rows (rows.csv), the summaries — means and
//! standard errors per cell, the correction benefit
//! (bias-aware − naive recall, paired by pool) and its crossing in ρ, strategy gaps (topk − other,
//! paired by pool), boundary shares relative to round_robin, and the plots.
//!
//! Standard errors are sd/√n with the sample sd (n − 1) over pools; differences are computed per
//! pool first (the pools are shared by models and strategies), so their se is the se of the
//! paired differences.

use super::plots::{self, LineChart, Series};
pub use super::table::{name, nats};
use crate::acquire::StrategyKind;
use crate::config::sweep::{Cell, Sweep, SweepBudget};
use crate::model::summary::ModelKind;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write;

/// One row of rows.csv: one pool × strategy × model × budget.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// Index of the grid cell (order of [`Sweep::cells`]).
    pub cell: usize,
    /// Replicate index within the cell.
    pub pool: usize,
    /// Seed of the synthetic pool (replicate) this row was run on.
    pub seed: u64,
    /// Number of bases M in the pool.
    pub n: usize,
    /// corr(θ, x).
    pub rho: f64,
    /// True c*.
    pub c_star: f64,
    /// True κ*.
    pub kappa_star: f64,
    /// Temperature of the true judge: η is divided by it (logit scale).
    pub temperature: f64,
    /// Whether the pool uses the paired rendering design (docs/model.md §6).
    pub paired: bool,
    /// Acquisition strategy (`topk`, `round_robin`, …).
    pub strategy: StrategyKind,
    /// Model kind (`naive` or `bias_aware`).
    pub model: ModelKind,
    /// SweepBudget asked for.
    pub budget: SweepBudget,
    /// Comparisons made.
    pub comparisons: usize,
    /// Recall@k against the gold top-k.
    pub recall: f64,
    /// Share of queries touching the base of gold rank k or k + 1 ([`crate::run::sim`]).
    pub boundary_share: f64,
    /// Share of queries with exactly one base in the gold top-k.
    pub straddle_share: f64,
    /// Share of queries with both bases in gold ranks k − 2 … k + 3.
    pub window_share: f64,
    /// ĉ (bias-aware model).
    pub c_hat: Option<f64>,
    /// Estimated position effect κ̂ at the end of the run (logits).
    pub kappa_hat: f64,
    /// Profile-likelihood range over c (nats), when computed.
    pub profile_range_nats: Option<f64>,
    /// Bases certified in at ε = 0.05 (π ≥ 0.95; docs/model.md, "Certified top-k").
    pub certified_in_05: usize,
    /// Of them, not in the true top-k (by θ* for the bias-aware model, by the apparent
    /// φ* = θ* + c*·x for the naive one).
    pub false_in_05: usize,
    /// Bases certified in at ε = 0.1.
    pub certified_in_10: usize,
    /// Of them, not in the true top-k.
    pub false_in_10: usize,
}

/// How often a base certified in the top-k (π ≥ 1 − ε) is not in the true top-k, over the runs
/// of one strategy × model × budget (docs/experiments.md, "Certified top-k coverage").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CoverageStats {
    /// The grid cell (synthetic sweeps; absent for the frozen protocol).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cell_index: Option<usize>,
    /// The acquisition strategy.
    pub strategy: StrategyKind,
    /// The model fitted.
    pub model: ModelKind,
    /// The budget.
    pub budget: SweepBudget,
    /// ε.
    pub epsilon: f64,
    /// Simulated runs (pools × seeds).
    pub runs: usize,
    /// Bases certified in, summed over the runs.
    pub certified_in: usize,
    /// Of them, not in the true top-k.
    pub false_in: usize,
    /// false_in / certified_in (absent when nothing was certified).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
    /// Its 95 % Wilson interval (the bases of one run are not independent, so it is a guide).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<(f64, f64)>,
    /// Whether the claim holds: the interval reaches down to ε or below (or nothing is claimed).
    pub holds: bool,
    /// Whether the data confirm it: something was certified and the whole interval lies at or
    /// below ε. A row that holds without being confirmed has too few certified bases to tell.
    #[serde(default)]
    pub confirmed: bool,
}

impl CoverageStats {
    /// The stats of `counts` ((certified in, wrongly in) per run) at ε.
    pub fn of(
        key: (Option<usize>, StrategyKind, ModelKind, SweepBudget),
        epsilon: f64,
        counts: &[(usize, usize)],
    ) -> Self {
        let (certified_in, false_in) = counts.iter().fold((0, 0), |(a, b), (i, f)| (a + i, b + f));
        let rate = (certified_in > 0).then(|| false_in as f64 / certified_in as f64);
        let interval = (certified_in > 0).then(|| crate::analysis::audit::wilson(false_in as f64, certified_in, 0.95));
        Self {
            cell_index: key.0,
            strategy: key.1,
            model: key.2,
            budget: key.3,
            epsilon,
            runs: counts.len(),
            certified_in,
            false_in,
            rate,
            interval,
            holds: interval.is_none_or(|(lo, _)| lo <= epsilon),
            confirmed: interval.is_some_and(|(_, hi)| hi <= epsilon),
        }
    }
}

/// The coverage table in Markdown: one row per strategy × model × budget × ε.
pub fn coverage_markdown(rows: &[CoverageStats]) -> String {
    let mut t = String::from(
        "| strategy | model | budget | ε | runs | certified in | not in the true top-k | rate [95 % interval] | holds |
|---|---|---|---|---|---|---|---|---|
",
    );
    for c in rows {
        let rate = match (c.rate, c.interval) {
            (Some(r), Some((lo, hi))) => format!("{r:.4} [{lo:.4}, {hi:.4}]"),
            _ => "– (nothing certified)".into(),
        };
        let holds = match c.interval {
            None => "untested (nothing certified)".to_string(),
            Some(_) if !c.holds => "**no**".into(),
            Some(_) if c.confirmed => "yes".into(),
            Some((_, hi)) => format!("not refuted (too few to tell: the interval reaches {hi:.2} > ε)"),
        };
        let _ = writeln!(
            t,
            "| {} | {} | {} | {} | {} | {} | {} | {rate} | {holds} |",
            name(&c.strategy),
            name(&c.model),
            c.budget,
            c.epsilon,
            c.runs,
            c.certified_in,
            c.false_in,
        );
    }
    t
}

/// The results of a sweep: rows in a fixed order, and queries by gold rank.
#[derive(Debug, Clone)]
pub struct SweepResult {
    /// Rows ordered by cell, replicate, strategy, model, budget.
    pub rows: Vec<Row>,
    /// Per row (same order): queries involving the base of each gold rank.
    pub queries_by_rank: Vec<Vec<usize>>,
}

/// Mean, standard error and count of a sample.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MeanSe {
    /// Sample mean.
    pub mean: f64,
    /// Standard error sd/√n (sample sd, n − 1; 0 when n = 1).
    pub se: f64,
    /// Sample size.
    pub n: usize,
}

impl MeanSe {
    /// Mean and se of `v`.
    ///
    /// # Panics
    /// If `v` is empty.
    pub fn of(v: &[f64]) -> Self {
        assert!(!v.is_empty(), "mean of an empty sample");
        let n = v.len();
        let mean = v.iter().sum::<f64>() / n as f64;
        let se = if n > 1 {
            (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt() / (n as f64).sqrt()
        } else {
            0.0
        };
        Self { mean, se, n }
    }
}

/// Statistics of one (cell, strategy, model, budget).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellStats {
    /// Index of the cell.
    pub cell_index: usize,
    /// The pool grid cell.
    pub cell: Cell,
    /// Acquisition strategy (`topk`, `round_robin`, …).
    pub strategy: StrategyKind,
    /// Model kind (`naive` or `bias_aware`).
    pub model: ModelKind,
    /// SweepBudget of the checkpoint, in comparisons (verdicts).
    pub budget: SweepBudget,
    /// Mean comparisons made.
    pub comparisons: f64,
    /// Recall@k against the true top-k, mean ± SE over the pools (0–1).
    pub recall: MeanSe,
    /// Mean share of boundary queries (gold rank k or k + 1 involved).
    pub boundary_share: f64,
    /// Mean share of straddling queries.
    pub straddle_share: f64,
    /// Mean share of window queries.
    pub window_share: f64,
    /// ĉ (bias-aware model).
    pub c_hat: Option<MeanSe>,
    /// Estimated position effect κ̂, mean ± SE over the pools (logits).
    pub kappa_hat: MeanSe,
    /// Profile-likelihood range over c (nats), when computed.
    pub profile_range_nats: Option<MeanSe>,
    /// Largest profile range over the pools (nats), when computed.
    pub profile_range_max_nats: Option<f64>,
}

/// Correction benefit (bias-aware − naive recall@k, paired by pool) of one (cell, strategy, budget).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenefitStats {
    /// The pool grid cell.
    pub cell: Cell,
    /// Acquisition strategy (`topk`, `round_robin`, …).
    pub strategy: StrategyKind,
    /// SweepBudget of the checkpoint, in comparisons (verdicts).
    pub budget: SweepBudget,
    /// Recall@k of the naive model (θ and κ only, ranking by apparent quality φ).
    pub naive: MeanSe,
    /// Recall@k of the bias-aware model (θ, bias coefficients c and κ).
    pub bias_aware: MeanSe,
    /// Bias-aware − naive, paired by pool.
    pub benefit: MeanSe,
}

/// The correction benefit as a function of ρ for one setting of everything else.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Crossing {
    /// Number of bases M per synthetic pool.
    pub n: usize,
    /// True c*.
    pub c_star: f64,
    /// True κ*.
    pub kappa_star: f64,
    /// Temperature of the true judge: η is divided by it (logit scale).
    pub temperature: f64,
    /// Whether the pools use the paired rendering design (docs/model.md §6).
    pub paired: bool,
    /// Acquisition strategy (`topk`, `round_robin`, …).
    pub strategy: StrategyKind,
    /// SweepBudget of the checkpoint, in comparisons (verdicts).
    pub budget: SweepBudget,
    /// ρ values, increasing.
    pub rho: Vec<f64>,
    /// Benefit at each ρ.
    pub benefit: Vec<MeanSe>,
    /// Whether the mean benefit never increases from one ρ to the next.
    pub monotone: bool,
    /// ρ at the first sign change from > 0 to ≤ 0 of the mean benefit, by linear interpolation
    /// between the two ρ values around it.
    pub crossing: Option<f64>,
}

/// topk − other recall@k at one (cell, model, budget), paired by pool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StrategyGap {
    /// Index of the pool grid cell (order of [`Sweep::cells`]).
    pub cell_index: usize,
    /// Model kind (`naive` or `bias_aware`).
    pub model: ModelKind,
    /// SweepBudget of the checkpoint, in comparisons (verdicts).
    pub budget: SweepBudget,
    /// The strategy compared with topk.
    pub other: StrategyKind,
    /// topk − other.
    pub gap: MeanSe,
}

/// A strategy's boundary shares relative to round_robin's at one (cell, model, budget).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BoundaryRatio {
    /// Index of the pool grid cell (order of [`Sweep::cells`]).
    pub cell_index: usize,
    /// Model kind (`naive` or `bias_aware`).
    pub model: ModelKind,
    /// SweepBudget of the checkpoint, in comparisons (verdicts).
    pub budget: SweepBudget,
    /// Acquisition strategy (`topk`, `round_robin`, …).
    pub strategy: StrategyKind,
    /// mean boundary share / round_robin's (NaN when both are 0, infinite when only round_robin's is;
    /// null in summary.json).
    pub boundary: f64,
    /// mean straddle share / round_robin's (NaN when both are 0, infinite when only round_robin's is;
    /// null in summary.json).
    pub straddle: f64,
    /// mean window share / round_robin's (NaN when both are 0, infinite when only round_robin's is;
    /// null in summary.json).
    pub window: f64,
}

/// Mean queries per pool involving the base of each gold rank.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RankStats {
    /// Index of the pool grid cell (order of [`Sweep::cells`]).
    pub cell_index: usize,
    /// The cell.
    pub cell: Cell,
    /// Acquisition strategy (`topk`, `round_robin`, …).
    pub strategy: StrategyKind,
    /// Model kind (`naive` or `bias_aware`).
    pub model: ModelKind,
    /// SweepBudget of the checkpoint, in comparisons (verdicts).
    pub budget: SweepBudget,
    /// Index = gold rank − 1.
    pub mean_queries: Vec<f64>,
}

/// Everything summary.json holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Sweep name.
    pub name: String,
    /// k: the size of the top set that recall and membership refer to.
    pub k: usize,
    /// Pools per cell.
    pub pools_per_cell: usize,
    /// Per (cell, strategy, model, budget).
    pub cells: Vec<CellStats>,
    /// Per (cell, strategy, budget) with both models.
    pub benefits: Vec<BenefitStats>,
    /// Benefit against ρ (when the sweep has several ρ).
    pub crossings: Vec<Crossing>,
    /// topk − other (when the sweep has topk and others).
    pub strategy_gaps: Vec<StrategyGap>,
    /// Boundary shares / round_robin's (when the sweep has round_robin).
    pub boundary_ratios: Vec<BoundaryRatio>,
    /// Queries by gold rank.
    pub by_rank: Vec<RankStats>,
    /// How often a base certified in is not in the true top-k, per cell × strategy × model ×
    /// budget and ε.
    #[serde(default)]
    pub coverage: Vec<CoverageStats>,
}

type Key = (usize, usize, usize, SweepBudget);

/// Aggregate a sweep's rows.
pub fn summarise(sweep: &Sweep, result: &SweepResult) -> Summary {
    let strategies = &sweep.raw.strategies;
    let models = &sweep.raw.models;
    let cells = sweep.cells();
    let si = |s: StrategyKind| strategies.iter().position(|x| *x == s).expect("strategy of the sweep");
    let mi = |m: ModelKind| models.iter().position(|x| *x == m).expect("model of the sweep");
    let mut groups: BTreeMap<Key, Vec<usize>> = BTreeMap::new();
    for (idx, r) in result.rows.iter().enumerate() {
        groups.entry((r.cell, si(r.strategy), mi(r.model), r.budget)).or_default().push(idx);
    }
    let rows = &result.rows;
    let col = |ids: &[usize], f: &dyn Fn(&Row) -> f64| -> Vec<f64> { ids.iter().map(|&i| f(&rows[i])).collect() };
    let opt = |ids: &[usize], f: &dyn Fn(&Row) -> Option<f64>| -> Option<MeanSe> {
        let v: Option<Vec<f64>> = ids.iter().map(|&i| f(&rows[i])).collect();
        v.filter(|v| !v.is_empty()).map(|v| MeanSe::of(&v))
    };
    let mean = |v: Vec<f64>| v.iter().sum::<f64>() / v.len() as f64;
    let mut stats = Vec::new();
    let mut by_rank = Vec::new();
    let mut coverage = Vec::new();
    for (&(c, s, m, b), ids) in &groups {
        for (e, eps) in crate::analysis::certify::COVERAGE_EPSILONS.into_iter().enumerate() {
            let counts: Vec<(usize, usize)> = ids
                .iter()
                .map(|&i| {
                    let r = &rows[i];
                    if e == 0 { (r.certified_in_05, r.false_in_05) } else { (r.certified_in_10, r.false_in_10) }
                })
                .collect();
            coverage.push(CoverageStats::of((Some(c), strategies[s], models[m], b), eps, &counts));
        }
        stats.push(CellStats {
            cell_index: c,
            cell: cells[c],
            strategy: strategies[s],
            model: models[m],
            budget: b,
            comparisons: mean(col(ids, &|r| r.comparisons as f64)),
            recall: MeanSe::of(&col(ids, &|r| r.recall)),
            boundary_share: mean(col(ids, &|r| r.boundary_share)),
            straddle_share: mean(col(ids, &|r| r.straddle_share)),
            window_share: mean(col(ids, &|r| r.window_share)),
            c_hat: opt(ids, &|r| r.c_hat),
            kappa_hat: MeanSe::of(&col(ids, &|r| r.kappa_hat)),
            profile_range_nats: opt(ids, &|r| r.profile_range_nats),
            profile_range_max_nats: ids
                .iter()
                .map(|&i| rows[i].profile_range_nats)
                .collect::<Option<Vec<f64>>>()
                .map(|v| v.into_iter().fold(f64::NEG_INFINITY, f64::max)),
        });
        let nb = result.queries_by_rank[ids[0]].len();
        let mut acc = vec![0.0; nb];
        for &i in ids {
            for (a, q) in acc.iter_mut().zip(&result.queries_by_rank[i]) {
                *a += *q as f64;
            }
        }
        by_rank.push(RankStats {
            cell_index: c,
            cell: cells[c],
            strategy: strategies[s],
            model: models[m],
            budget: b,
            mean_queries: acc.iter().map(|a| a / ids.len() as f64).collect(),
        });
    }
    // Per-pool recall for paired differences.
    let mut recall: BTreeMap<(usize, usize, usize, SweepBudget), BTreeMap<usize, f64>> = BTreeMap::new();
    for r in rows {
        recall.entry((r.cell, si(r.strategy), mi(r.model), r.budget)).or_default().insert(r.pool, r.recall);
    }
    let paired_diff = |a: &BTreeMap<usize, f64>, b: &BTreeMap<usize, f64>| -> Option<MeanSe> {
        let d: Vec<f64> = a.iter().filter_map(|(p, x)| b.get(p).map(|y| x - y)).collect();
        (!d.is_empty()).then(|| paired_mean(&d))
    };
    let mut benefits = Vec::new();
    if let (Some(n_i), Some(b_i)) =
        (models.iter().position(|m| *m == ModelKind::Naive), models.iter().position(|m| *m == ModelKind::BiasAware))
    {
        for (&(c, s, m, b), nv) in &recall {
            if m != n_i {
                continue;
            }
            let Some(ba) = recall.get(&(c, s, b_i, b)) else { continue };
            let Some(benefit) = paired_diff(ba, nv) else { continue };
            let v = |x: &BTreeMap<usize, f64>| MeanSe::of(&x.values().copied().collect::<Vec<_>>());
            benefits.push(BenefitStats {
                cell: cells[c],
                strategy: strategies[s],
                budget: b,
                naive: v(nv),
                bias_aware: v(ba),
                benefit,
            });
        }
    }
    let crossings = crossings(&benefits);
    let mut strategy_gaps = Vec::new();
    if let Some(t) = strategies.iter().position(|s| *s == StrategyKind::Topk) {
        for (&(c, s, m, b), other) in &recall {
            if s == t {
                continue;
            }
            if let Some(gap) = recall.get(&(c, t, m, b)).and_then(|tk| paired_diff(tk, other)) {
                strategy_gaps.push(StrategyGap {
                    cell_index: c,
                    model: models[m],
                    budget: b,
                    other: strategies[s],
                    gap,
                });
            }
        }
    }
    let mut boundary_ratios = Vec::new();
    if strategies.contains(&StrategyKind::RoundRobin) {
        for st in &stats {
            if st.strategy == StrategyKind::RoundRobin {
                continue;
            }
            let rr = stats.iter().find(|x| {
                x.cell_index == st.cell_index
                    && x.model == st.model
                    && x.budget == st.budget
                    && x.strategy == StrategyKind::RoundRobin
            });
            if let Some(rr) = rr {
                // 0 / 0 is NaN and a / 0 infinite (null in summary.json; see share_ratio).
                let ratio = |a: f64, b: f64| a / b;
                boundary_ratios.push(BoundaryRatio {
                    cell_index: st.cell_index,
                    model: st.model,
                    budget: st.budget,
                    strategy: st.strategy,
                    boundary: ratio(st.boundary_share, rr.boundary_share),
                    straddle: ratio(st.straddle_share, rr.straddle_share),
                    window: ratio(st.window_share, rr.window_share),
                });
            }
        }
    }
    Summary {
        name: sweep.raw.name.clone(),
        k: sweep.raw.k,
        pools_per_cell: sweep.raw.pools.count,
        cells: stats,
        benefits,
        crossings,
        strategy_gaps,
        boundary_ratios,
        by_rank,
        coverage,
    }
}

/// Mean and se of paired differences `d`, with a mean within rounding of 0 read as 0: recalls are
/// multiples of 1/k, and the differences of two arms with equal means sum to ±1e-17, not 0, in
/// floating point (hunt 59: a "crossing at ρ ≈ 0.000" between two arms of equal recall). The
/// tolerance, 1e-9 of the largest difference, is far below any difference of recalls (1/k over
/// at most millions of pools).
fn paired_mean(d: &[f64]) -> MeanSe {
    let mut m = MeanSe::of(d);
    let scale = d.iter().fold(0.0_f64, |a, x| a.max(x.abs()));
    if m.mean.abs() <= 1e-9 * scale {
        m.mean = 0.0;
    }
    m
}

/// Group benefits by everything but ρ; keep the groups with at least two ρ values.
fn crossings(benefits: &[BenefitStats]) -> Vec<Crossing> {
    let mut out: Vec<Crossing> = Vec::new();
    for b in benefits {
        let c = &b.cell;
        let found = out.iter_mut().find(|x| {
            x.n == c.n
                && x.c_star == c.c_star
                && x.kappa_star == c.kappa_star
                && x.temperature == c.temperature
                && x.paired == c.paired
                && x.strategy == b.strategy
                && x.budget == b.budget
        });
        match found {
            Some(x) => {
                x.rho.push(c.rho);
                x.benefit.push(b.benefit);
            }
            None => out.push(Crossing {
                n: c.n,
                c_star: c.c_star,
                kappa_star: c.kappa_star,
                temperature: c.temperature,
                paired: c.paired,
                strategy: b.strategy,
                budget: b.budget,
                rho: vec![c.rho],
                benefit: vec![b.benefit],
                monotone: true,
                crossing: None,
            }),
        }
    }
    out.retain(|x| x.rho.len() >= 2);
    for x in &mut out {
        let mut idx: Vec<usize> = (0..x.rho.len()).collect();
        idx.sort_by(|a, b| x.rho[*a].total_cmp(&x.rho[*b]));
        x.rho = idx.iter().map(|&i| x.rho[i]).collect();
        x.benefit = idx.iter().map(|&i| x.benefit[i]).collect();
        let means: Vec<f64> = x.benefit.iter().map(|b| b.mean).collect();
        x.monotone = means.windows(2).all(|w| w[1] <= w[0]);
        x.crossing = crossing_point(&x.rho, &means);
    }
    out
}

/// First ρ where `y` goes from > 0 to ≤ 0, interpolated linearly (ρ₁ + (ρ₂ − ρ₁)·y₁/(y₁ − y₂)).
pub fn crossing_point(x: &[f64], y: &[f64]) -> Option<f64> {
    (1..x.len()).find(|&i| y[i - 1] > 0.0 && y[i] <= 0.0).map(|i| {
        let (x1, x2, y1, y2) = (x[i - 1], x[i], y[i - 1], y[i]);
        x1 + (x2 - x1) * y1 / (y1 - y2)
    })
}

fn f3(x: f64) -> String {
    format!("{x:.3}")
}

fn ms(m: &MeanSe) -> String {
    format!("{:.3} ± {:.3}", m.mean, m.se)
}

fn cell_label(c: &Cell) -> String {
    format!(
        "N={} ρ={} c*={} κ*={} T={}{}",
        c.n,
        c.rho,
        c.c_star,
        c.kappa_star,
        c.temperature,
        if c.paired { " paired" } else { "" }
    )
}

/// A note under the cell table when a design's rows at two or more budgets are the same runs: a
/// budget of at least every ordered pair of that design asks them all (n(n−1) single-rendering,
/// 4n² − 2n paired). The sweep file refuses two such budgets for the larger design; this names
/// them for the smaller one, where they still differ for the other. Empty when none.
fn same_runs_note(sweep: &Sweep) -> String {
    let g = &sweep.raw.pools;
    let mut designs = g.paired.clone();
    designs.dedup();
    let mut note = String::new();
    for paired in designs {
        let n = g.n;
        let most = if paired { 4 * n * n - 2 * n } else { n * (n - 1) };
        let as_all: Vec<String> =
            sweep.raw.budgets.iter().filter(|b| b.as_usize() >= most).map(ToString::to_string).collect();
        if as_all.len() > 1 {
            let _ = writeln!(
                note,
                "\nThe {} rows at budgets {} are the same runs: a {} pool of n = {n} has {most} ordered pairs, \
                 and each of these budgets asks them all.",
                if paired { "paired" } else { "single-rendering" },
                as_all.join(" and "),
                if paired { "paired" } else { "single-rendering" },
            );
        }
    }
    note
}

/// summary.md: settings and every table of the summary (means ± standard errors over pools).
pub fn markdown(sweep: &Sweep, s: &Summary) -> String {
    let r = &sweep.raw;
    let mut md = String::new();
    let _ = writeln!(md, "# Sweep {}\n", crate::report::md::code(&r.name, false));
    let _ = writeln!(
        md,
        "k = {}, {} per cell (pool seeds {}…{}), orders {}, refit every {}, {} Monte-Carlo draws, \
         λ_θ = {}, λ_b = {}, λ_κ = {}. Values are means ± standard errors over pools; differences \
         are paired by pool.\n",
        r.k,
        crate::domain::fmt::count(r.pools.count, "pool"),
        r.pools.seed,
        // The config keeps the last seed within u64 (config::sections::check_seed_range).
        r.pools.seed + (r.pools.count as u64 - 1),
        name(&r.acquisition.orders),
        r.acquisition.refit_every,
        r.acquisition.mc_draws,
        r.prior.lambda_theta,
        r.prior.lambda_b,
        r.prior.lambda_kappa
    );
    let _ = writeln!(md, "## Recall@{} by cell\n", r.k);
    let has_profile = s.cells.iter().any(|c| c.profile_range_nats.is_some());
    let _ = write!(
        md,
        "| cell | strategy | model | budget | comparisons | recall@{} | boundary share | straddle share | window share | ĉ | κ̂ |",
        r.k
    );
    md.push_str(if has_profile { " profile range (nats) | max over pools (nats) |\n" } else { "\n" });
    md.push_str("|---|---|---|---|---|---|---|---|---|---|---|");
    md.push_str(if has_profile { "---|---|\n" } else { "\n" });
    for c in &s.cells {
        let _ = write!(
            md,
            "| {} | {} | {} | {} | {:.1} | {} | {} | {} | {} | {} | {} |",
            cell_label(&c.cell),
            name(&c.strategy),
            name(&c.model),
            c.budget,
            c.comparisons,
            ms(&c.recall),
            f3(c.boundary_share),
            f3(c.straddle_share),
            f3(c.window_share),
            c.c_hat.map(|m| ms(&m)).unwrap_or_else(|| "–".into()),
            ms(&c.kappa_hat)
        );
        if has_profile {
            // Three significant digits: single-rendering ranges are ~1e-6 nats, paired ones ~10.
            let _ = write!(
                md,
                " {} | {} |",
                c.profile_range_nats.map(|m| format!("{:.3e} ± {:.2e}", m.mean, m.se)).unwrap_or("–".into()),
                c.profile_range_max_nats.map(|m| format!("{m:.3e}")).unwrap_or("–".into())
            );
        }
        md.push('\n');
    }
    md.push_str(&same_runs_note(sweep));
    if !s.benefits.is_empty() {
        let _ = writeln!(md, "\n## Correction benefit (bias-aware − naive recall@{})\n", r.k);
        md.push_str("| cell | strategy | budget | naive | bias-aware | benefit |\n|---|---|---|---|---|---|\n");
        for b in &s.benefits {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} | {} |",
                cell_label(&b.cell),
                name(&b.strategy),
                b.budget,
                ms(&b.naive),
                ms(&b.bias_aware),
                ms(&b.benefit)
            );
        }
    }
    for x in &s.crossings {
        let _ = writeln!(
            md,
            "\n## Benefit against ρ (c* = {}, κ* = {}, T = {}, {}, budget {})\n",
            x.c_star,
            x.kappa_star,
            x.temperature,
            name(&x.strategy),
            x.budget
        );
        md.push_str("| ρ | benefit |\n|---|---|\n");
        for (rho, b) in x.rho.iter().zip(&x.benefit) {
            let _ = writeln!(md, "| {rho} | {} |", ms(b));
        }
        let _ = writeln!(
            md,
            "\nMonotone (non-increasing) in ρ: **{}**. Crossing (first sign change, linear interpolation): **{}**.",
            if x.monotone { "yes" } else { "no" },
            x.crossing.map(|c| format!("ρ ≈ {c:.3}")).unwrap_or_else(|| "none in the range".into())
        );
    }
    if !s.strategy_gaps.is_empty() {
        let _ = writeln!(md, "\n## topk − other strategies (recall@{}, paired by pool)\n", r.k);
        md.push_str("| cell | model | budget | other | topk − other |\n|---|---|---|---|---|\n");
        for g in &s.strategy_gaps {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} |",
                g.cell_index,
                name(&g.model),
                g.budget,
                name(&g.other),
                ms(&g.gap)
            );
        }
    }
    if !s.boundary_ratios.is_empty() {
        md.push_str(
            "\n## Boundary shares relative to round_robin\n\nRatio of the strategy's mean share of \
             queries to round_robin's, for three definitions of a boundary query (see `sim.rs`): \
             touching gold rank k or k+1 (primary), straddling the gold top-k, both in gold ranks \
             k−2…k+3.\n\n| cell | model | budget | strategy | boundary (k, k+1) | straddle | window |\n|---|---|---|---|---|---|---|\n",
        );
        for b in &s.boundary_ratios {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} | {} | {} |",
                b.cell_index,
                name(&b.model),
                b.budget,
                name(&b.strategy),
                share_ratio(b.boundary),
                share_ratio(b.straddle),
                share_ratio(b.window)
            );
        }
    }
    if !s.coverage.is_empty() {
        md.push_str(
            "\n## Certified top-k coverage\n\nOf the bases certified in the top-k at ε (π ≥ 1 − ε), how many are not in the true \
             top-k of the reported ranking (θ* for the bias-aware model on paired renderings, the apparent φ* = θ* + c*·x \
             otherwise), summed over the pools; nothing is certified while the comparison graph is not connected (a base without a valid verdict, or components not linked); the claim holds \
             (yes) when the whole 95 % interval of that rate lies at or below ε, fails (**no**) when it lies above, and is \
             not refuted when it spans ε: too few bases were certified to tell (docs/experiments.md, \"Certified top-k coverage\").\n\n",
        );
        let cells_many = s.coverage.iter().any(|c| c.cell_index != Some(0));
        if cells_many {
            for c in 0..=s.coverage.iter().filter_map(|c| c.cell_index).max().unwrap_or(0) {
                let rows: Vec<CoverageStats> = s.coverage.iter().filter(|x| x.cell_index == Some(c)).cloned().collect();
                let _ = writeln!(md, "Cell {c}:\n");
                md.push_str(&coverage_markdown(&rows));
                md.push('\n');
            }
        } else {
            md.push_str(&coverage_markdown(&s.coverage));
        }
    }
    // plots() draws recall against budget from two numbered budgets on: said when it does not.
    let numbered = r.budgets.iter().filter(|b| matches!(b, SweepBudget::Comparisons(_))).count();
    if numbered < 2 {
        let all = if numbered < r.budgets.len() { " (`all` is not a number of comparisons)" } else { "" };
        let _ = writeln!(
            md,
            "\nNo recall_vs_budget plot: it needs two or more numbered budgets, and `budgets` lists {numbered}{all}.",
        );
    }
    md
}

/// A ratio of boundary shares for the summary table: "1.23×"; when round_robin's share is 0,
/// "0 / 0" (neither strategy asked such a query) or "> 0 / 0" instead of NaN or inf.
fn share_ratio(r: f64) -> String {
    if r.is_finite() {
        format!("{r:.2}×")
    } else if r.is_nan() {
        "0 / 0".into()
    } else {
        "> 0 / 0".into()
    }
}

/// The sweep's plots as (file name, SVG text).
///
/// # Errors
/// [`plots::PlotError`].
pub fn plots(sweep: &Sweep, s: &Summary) -> Result<Vec<(String, String)>, plots::PlotError> {
    let mut out = Vec::new();
    let k = sweep.raw.k;
    let n_cells = sweep.cells().len();
    let numeric_budgets = sweep.raw.budgets.iter().filter(|b| matches!(b, SweepBudget::Comparisons(_))).count();
    // Recall against budget: one plot per (cell, model) with a line per strategy, or, when the
    // sweep has one strategy, one plot per cell with a line per model.
    if numeric_budgets >= 2 {
        let one_strategy = sweep.raw.strategies.len() == 1;
        let mut keys: Vec<(usize, Option<ModelKind>)> = Vec::new();
        for c in &s.cells {
            let key = (c.cell_index, (!one_strategy).then_some(c.model));
            if !keys.contains(&key) {
                keys.push(key);
            }
        }
        for (ci, model) in keys {
            let combos: Vec<(StrategyKind, ModelKind)> = match model {
                Some(m) => sweep.raw.strategies.iter().map(|st| (*st, m)).collect(),
                None => sweep.raw.models.iter().map(|m| (sweep.raw.strategies[0], *m)).collect(),
            };
            let series: Vec<Series> = combos
                .iter()
                .map(|(st, m)| {
                    let pts: Vec<&CellStats> =
                        s.cells.iter().filter(|c| c.cell_index == ci && c.model == *m && c.strategy == *st).collect();
                    Series {
                        name: if model.is_some() { name(st) } else { format!("{} model", name(m)) },
                        points: pts.iter().map(|c| (c.comparisons, c.recall.mean)).collect(),
                        err: Some(pts.iter().map(|c| c.recall.se).collect()),
                    }
                })
                .collect();
            let cell = sweep.cells()[ci];
            let what = match model {
                Some(m) => format!("{} model", name(&m)),
                None => name(&sweep.raw.strategies[0]),
            };
            let chart = LineChart {
                title: format!("recall@{k} vs budget — {what}, {}", cell_label(&cell)),
                x_label: "comparisons".into(),
                y_label: format!("recall@{k} (mean ± se over pools)"),
                series,
                hlines: vec![],
                vlines: vec![],
                y_range: Some((0.0, 1.0)),
                legend_upper: false,
            };
            let mut file = String::from("recall_vs_budget");
            if n_cells > 1 {
                file.push_str(&format!("_cell{ci}"));
            }
            if let Some(m) = model {
                file.push_str(&format!("_{}", name(&m)));
            }
            file.push_str(".svg");
            out.push((file, plots::line_chart(&chart)?));
        }
    }
    // Correction benefit against ρ with the crossing marked: one plot per strategy, one line per
    // budget (and per setting of c*, κ*, T, design when the sweep varies them).
    let mut strategies: Vec<StrategyKind> = Vec::new();
    for x in &s.crossings {
        if !strategies.contains(&x.strategy) {
            strategies.push(x.strategy);
        }
    }
    for st in &strategies {
        let xs: Vec<&Crossing> = s.crossings.iter().filter(|x| x.strategy == *st).collect();
        let series = xs
            .iter()
            .map(|x| Series {
                name: format!(
                    "budget {}{}",
                    x.budget,
                    if xs.iter().any(|y| (y.c_star, y.kappa_star, y.temperature, y.paired)
                        != (x.c_star, x.kappa_star, x.temperature, x.paired))
                    {
                        format!(
                            ", c*={} κ*={} T={}{}",
                            x.c_star,
                            x.kappa_star,
                            x.temperature,
                            if x.paired { " paired" } else { "" }
                        )
                    } else {
                        String::new()
                    }
                ),
                points: x.rho.iter().zip(&x.benefit).map(|(r, b)| (*r, b.mean)).collect(),
                err: Some(x.benefit.iter().map(|b| b.se).collect()),
            })
            .collect();
        let vlines = xs
            .iter()
            .filter_map(|x| x.crossing.map(|c| (c, format!("crossing ρ ≈ {c:.2} (budget {})", x.budget))))
            .collect();
        let chart = LineChart {
            title: format!("correction benefit vs ρ ({}, mean ± se over pools)", name(st)),
            x_label: "ρ = corr(θ, x)".into(),
            y_label: format!("bias-aware − naive recall@{k}"),
            series,
            hlines: vec![0.0],
            vlines,
            y_range: None,
            legend_upper: true,
        };
        let file = if strategies.len() == 1 {
            "benefit_vs_rho.svg".to_string()
        } else {
            format!("benefit_vs_rho_{}.svg", name(st))
        };
        out.push((file, plots::line_chart(&chart)?));
    }
    // Profile range against comparisons, paired vs unpaired.
    let prof: Vec<&CellStats> = s.cells.iter().filter(|c| c.profile_range_nats.is_some()).collect();
    if !prof.is_empty() {
        let mut series = Vec::new();
        for paired in [false, true] {
            let pts: Vec<&&CellStats> = prof.iter().filter(|c| c.cell.paired == paired).collect();
            if pts.is_empty() {
                continue;
            }
            series.push(Series {
                name: if paired { "paired renderings".into() } else { "single rendering".into() },
                points: pts.iter().map(|c| (c.comparisons, c.profile_range_nats.expect("filtered").mean)).collect(),
                err: Some(pts.iter().map(|c| c.profile_range_nats.expect("filtered").se).collect()),
            });
        }
        let chart = LineChart {
            title: "profile-likelihood range over c vs comparisons".into(),
            x_label: "comparisons".into(),
            y_label: "profile range (nats)".into(),
            series,
            hlines: vec![],
            vlines: vec![],
            y_range: None,
            legend_upper: false,
        };
        out.push(("profile_vs_comparisons.svg".into(), plots::line_chart(&chart)?));
    }
    // Queries per base by gold rank (paper Figure 7), first cell, at the budget closest to 200.
    if sweep.raw.strategies.len() >= 2 {
        let target = sweep
            .raw
            .budgets
            .iter()
            .filter_map(|b| match b {
                SweepBudget::Comparisons(n) => Some(*n),
                SweepBudget::All => None,
            })
            .min_by_key(|n| n.abs_diff(200));
        if let Some(target) = target {
            let model =
                sweep.raw.models.iter().copied().find(|m| *m == ModelKind::BiasAware).unwrap_or(sweep.raw.models[0]);
            let series: Vec<Series> = s
                .by_rank
                .iter()
                .filter(|g| g.cell_index == 0 && g.model == model && g.budget == SweepBudget::Comparisons(target))
                .map(|g| Series {
                    name: name(&g.strategy),
                    points: g.mean_queries.iter().enumerate().map(|(r, q)| ((r + 1) as f64, *q)).collect(),
                    err: None,
                })
                .collect();
            let chart = LineChart {
                title: format!("queries per base by gold rank at budget {target} ({} model)", name(&model)),
                x_label: "gold rank".into(),
                y_label: "queries involving the base (mean per pool)".into(),
                series,
                hlines: vec![],
                vlines: vec![(k as f64 + 0.5, format!("top-{k} boundary"))],
                y_range: None,
                legend_upper: true,
            };
            out.push(("queries_by_rank.svg".into(), plots::line_chart(&chart)?));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Shares of 0 for both strategies (N = 10,000: the window k−2…k+3 is rarely asked) print
    /// as "0 / 0", not "NaN×".
    #[test]
    fn share_ratios_with_a_zero_round_robin_share() {
        assert_eq!(share_ratio(0.003 / 0.002), "1.50×");
        assert_eq!(share_ratio(f64::NAN), "0 / 0");
        assert_eq!(share_ratio(f64::INFINITY), "> 0 / 0");
    }

    /// A coverage row is confirmed only when its whole 95 % Wilson interval lies at or below ε:
    /// nothing certified is untested, and one certified base (interval [0, 0.79]) is too few to
    /// tell. Wilson's upper end for 0 of n at z = 1.96 is z²/(n + z²).
    #[test]
    fn a_coverage_row_says_yes_only_when_the_interval_lies_below_epsilon() {
        let key = (Some(0), StrategyKind::Topk, ModelKind::BiasAware, SweepBudget::Comparisons(40));
        let row = |certified: usize, wrong: usize| {
            let runs: Vec<(usize, usize)> = vec![(certified, wrong)];
            CoverageStats::of(key, 0.05, &runs)
        };
        let z2 = 1.959_963_984_540_054_f64.powi(2);
        for (certified, wrong, holds, confirmed, says) in [
            (0, 0, true, false, "untested (nothing certified)"),
            (1, 0, true, false, "not refuted (too few to tell: the interval reaches 0.79 > ε)"),
            (19, 0, true, false, "not refuted (too few to tell: the interval reaches 0.17 > ε)"),
            (155, 0, true, true, "yes"),
            (19, 10, false, false, "**no**"),
        ] {
            let r = row(certified, wrong);
            assert_eq!((r.holds, r.confirmed), (holds, confirmed), "{certified} / {wrong}");
            if wrong == 0 && certified > 0 {
                let hi = r.interval.unwrap().1;
                assert!((hi - z2 / (certified as f64 + z2)).abs() < 1e-4, "{hi}");
            }
            let md = coverage_markdown(&[r]);
            assert!(md.lines().nth(2).unwrap().ends_with(&format!("| {says} |")), "{md}");
        }
    }

    #[test]
    fn mean_and_standard_error() {
        // 1, 2, 3, 4: mean 2.5, sample sd √(5/3), se √(5/3)/2.
        let m = MeanSe::of(&[1.0, 2.0, 3.0, 4.0]);
        assert!((m.mean - 2.5).abs() < 1e-15);
        assert!((m.se - (5.0f64 / 3.0).sqrt() / 2.0).abs() < 1e-15);
        assert_eq!(MeanSe::of(&[7.0]).se, 0.0);
    }

    #[test]
    fn crossing_interpolates_the_first_sign_change() {
        // 0.2 at ρ = 0.4, −0.1 at ρ = 0.5: crossing at 0.4 + 0.1·0.2/0.3.
        let c = crossing_point(&[0.0, 0.4, 0.5, 0.6], &[0.3, 0.2, -0.1, 0.05]).unwrap();
        assert!((c - (0.4 + 0.1 * 2.0 / 3.0)).abs() < 1e-12);
        assert_eq!(crossing_point(&[0.0, 0.5], &[0.1, 0.05]), None);
        assert_eq!(crossing_point(&[0.0, 0.5], &[0.1, 0.0]), Some(0.5));
        // Two arms with equal mean recall, paired per pool: the differences sum to 1.85e-17 in
        // floating point; the benefit is 0, and there is no crossing from it.
        let (ba, nv) = ([0.0, 1.0, 1.0 / 3.0], [1.0, 1.0 / 3.0, 0.0]);
        let d: Vec<f64> = ba.iter().zip(&nv).map(|(x, y)| x - y).collect();
        assert_eq!(MeanSe::of(&d).mean, 1.850371707708594e-17);
        let m = paired_mean(&d);
        assert_eq!((m.mean, m.se), (0.0, MeanSe::of(&d).se));
        assert_eq!(crossing_point(&[0.0, 0.5], &[m.mean, -0.133]), None);
        // A real difference is kept.
        assert_eq!(paired_mean(&[1.0 / 3.0, 0.0]).mean, 1.0 / 6.0);
    }

    /// configs/sweep-profile.yaml's grid: at n = 30 a single-rendering pool has 30·29 = 870
    /// ordered pairs, so its rows at 1024 and 2048 are the same runs; a paired pool has
    /// 4·900 − 60 = 3540, so none of its rows are.
    #[test]
    fn budgets_past_every_ordered_pair_of_one_design_are_named() {
        let sweep = |budgets: &str| {
            let text = format!(
                "name: t\nk: 5\npools: {{n: 30, count: 2, paired: [false, true]}}\nstrategies: [round_robin]\n\
                 models: [bias_aware]\nbudgets: {budgets}\n"
            );
            let raw = crate::store::yaml::from_str(&text).unwrap();
            Sweep::from_raw(raw, std::path::Path::new("s.yaml")).unwrap()
        };
        assert_eq!(
            same_runs_note(&sweep("[64, 1024, 2048]")),
            "\nThe single-rendering rows at budgets 1024 and 2048 are the same runs: a single-rendering \
             pool of n = 30 has 870 ordered pairs, and each of these budgets asks them all.\n"
        );
        assert_eq!(
            same_runs_note(&sweep("[64, 870, 3539]")),
            "\nThe single-rendering rows at budgets 870 and 3539 are the same runs: a single-rendering pool of n = 30 has 870 ordered pairs, and each of these budgets asks them all.\n"
        );
        assert_eq!(same_runs_note(&sweep("[64, 869, 1024]")), "");
    }
}

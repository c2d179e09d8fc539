//! The frozen protocol's outputs (docs/replay.md): its rows, the summary per strategy × model ×
//! budget with paired differences, summary.md and the plots.

use super::plots::{self, LineChart, Series};
use super::sweep::MeanSe;
use super::table::name;
use crate::acquire::StrategyKind;
use crate::config::frozen::Frozen;
use crate::config::sweep::SweepBudget;
use crate::model::summary::ModelKind;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write;

/// One row of rows.csv: one pool × seed × strategy × model × budget.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FrozenRow {
    /// Pool id.
    pub pool: String,
    /// Acquisition seed.
    pub seed: u64,
    /// The acquisition strategy that chose the comparisons of this row.
    pub strategy: StrategyKind,
    /// The model fitted to rank: `naive` (θ and κ) or `bias_aware` (θ, bias coefficients c, κ).
    pub model: ModelKind,
    /// SweepBudget asked for.
    pub budget: SweepBudget,
    /// Comparisons made.
    pub comparisons: usize,
    /// Recall@k against the full-data top-k of the same judge and model.
    pub recall_full: f64,
    /// Recall@k against the gold top-k (pools with `quality`).
    pub recall_gold: Option<f64>,
    /// The point top-k (base ids, best first, space-separated).
    pub topk: String,
    /// Bases certified in at ε = 0.05 (π ≥ 0.95).
    pub certified_in_05: usize,
    /// Of them, not in the full-data top-k.
    pub false_in_05: usize,
    /// Bases certified in at ε = 0.1.
    pub certified_in_10: usize,
    /// Of them, not in the full-data top-k.
    pub false_in_10: usize,
}

/// Mean ± se of one strategy × model × budget over pools × seeds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FrozenCell {
    /// The acquisition strategy the cell averages.
    pub strategy: StrategyKind,
    /// The model fitted: `naive` or `bias_aware`.
    pub model: ModelKind,
    /// The budget asked for: a number of comparisons, or `all` ordered pairs of the pool.
    pub budget: SweepBudget,
    /// Comparisons made.
    pub comparisons: MeanSe,
    /// Recall@k against the full-data top-k.
    pub recall_full: MeanSe,
    /// Recall@k against gold (pools with gold only).
    pub recall_gold: Option<MeanSe>,
}

/// Paired difference recall(a) − recall(b) over the same pools and seeds (a = the first strategy).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairedDiff {
    /// The model both strategies were fitted with: `naive` or `bias_aware`.
    pub model: ModelKind,
    /// The budget both strategies had: a number of comparisons, or `all` ordered pairs.
    pub budget: SweepBudget,
    /// First strategy.
    pub a: StrategyKind,
    /// Second strategy.
    pub b: StrategyKind,
    /// recall_full(a) − recall_full(b).
    pub full: MeanSe,
    /// Pool × seed runs where a's recall vs full data is higher.
    pub a_better: usize,
    /// … where b's is higher.
    pub b_better: usize,
    /// recall_gold(a) − recall_gold(b) (pools with gold).
    pub gold: Option<MeanSe>,
}

/// summary.json of a frozen protocol.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FrozenSummary {
    /// The protocol's `name` from its YAML file; the outputs are in `<out_dir>/<name>/`.
    pub name: String,
    /// The recorded judge.
    pub judge: String,
    /// Number of recorded pools the protocol replayed.
    pub pools: usize,
    /// The acquisition seeds each pool was replayed with.
    pub seeds: Vec<u64>,
    /// k: the top-k size recall@k is measured at.
    pub k: usize,
    /// One per strategy × model × budget.
    pub cells: Vec<FrozenCell>,
    /// The first strategy against each other one, per model and budget (not `all`).
    pub diffs: Vec<PairedDiff>,
    /// How often a base certified in is not in the full-data top-k, per strategy × model ×
    /// budget and ε.
    #[serde(default)]
    pub coverage: Vec<super::sweep::CoverageStats>,
}

/// Means, standard errors and paired differences of the rows.
pub fn summarise(f: &Frozen, rows: &[FrozenRow]) -> FrozenSummary {
    let mut cells = Vec::new();
    let mut diffs = Vec::new();
    let mut coverage = Vec::new();
    let get = |s: StrategyKind, m: ModelKind, b: SweepBudget| -> Vec<&FrozenRow> {
        rows.iter().filter(|r| r.strategy == s && r.model == m && r.budget == b).collect()
    };
    for &strategy in &f.raw.strategies {
        for &model in &f.raw.models {
            for &budget in &f.raw.budgets {
                let rs = get(strategy, model, budget);
                if rs.is_empty() {
                    continue;
                }
                for (e, eps) in crate::analysis::certify::COVERAGE_EPSILONS.into_iter().enumerate() {
                    let counts: Vec<(usize, usize)> = rs
                        .iter()
                        .map(|r| {
                            if e == 0 { (r.certified_in_05, r.false_in_05) } else { (r.certified_in_10, r.false_in_10) }
                        })
                        .collect();
                    coverage.push(super::sweep::CoverageStats::of((None, strategy, model, budget), eps, &counts));
                }
                let gold: Vec<f64> = rs.iter().filter_map(|r| r.recall_gold).collect();
                cells.push(FrozenCell {
                    strategy,
                    model,
                    budget,
                    comparisons: MeanSe::of(&rs.iter().map(|r| r.comparisons as f64).collect::<Vec<_>>()),
                    recall_full: MeanSe::of(&rs.iter().map(|r| r.recall_full).collect::<Vec<_>>()),
                    recall_gold: (!gold.is_empty()).then(|| MeanSe::of(&gold)),
                });
            }
        }
    }
    let (a, others) = f.raw.strategies.split_first().expect("validated: at least one strategy");
    let a = *a;
    let key = |r: &FrozenRow| (r.pool.clone(), r.seed);
    for &model in &f.raw.models {
        for &budget in f.raw.budgets.iter().filter(|b| **b != SweepBudget::All) {
            for &b in others {
                let rb: BTreeMap<(String, u64), &FrozenRow> =
                    get(b, model, budget).into_iter().map(|r| (key(r), r)).collect();
                let pairs: Vec<(&FrozenRow, &FrozenRow)> =
                    get(a, model, budget).into_iter().filter_map(|r| rb.get(&key(r)).map(|o| (r, *o))).collect();
                if pairs.is_empty() {
                    continue;
                }
                let d: Vec<f64> = pairs.iter().map(|(x, y)| x.recall_full - y.recall_full).collect();
                let g: Vec<f64> = pairs.iter().filter_map(|(x, y)| Some(x.recall_gold? - y.recall_gold?)).collect();
                diffs.push(PairedDiff {
                    model,
                    budget,
                    a,
                    b,
                    full: MeanSe::of(&d),
                    a_better: d.iter().filter(|v| **v > 0.0).count(),
                    b_better: d.iter().filter(|v| **v < 0.0).count(),
                    gold: (!g.is_empty()).then(|| MeanSe::of(&g)),
                });
            }
        }
    }
    FrozenSummary {
        name: f.raw.name.clone(),
        judge: f.judge.clone(),
        pools: f.pools.len(),
        seeds: f.raw.seeds.clone(),
        k: f.raw.k,
        cells,
        diffs,
        coverage,
    }
}

fn ms(m: &MeanSe) -> String {
    format!("{:.3} ± {:.3}", m.mean, m.se)
}

fn signed(m: &MeanSe) -> String {
    format!("{:+.3} ± {:.3}", m.mean + 0.0, m.se)
}

/// The frozen-protocol summary as Markdown (summary.md): one table row per strategy × budget.
pub fn markdown(s: &FrozenSummary) -> String {
    let mut t = String::new();
    let _ = writeln!(
        t,
        "# Frozen protocol \"{}\": {} on {}, k = {}, seeds {:?}\n",
        crate::report::md::text(&s.name),
        crate::report::md::text(&s.judge),
        crate::domain::fmt::count(s.pools, "recorded pool"),
        s.k,
        s.seeds
    );
    t.push_str(
        "Recall@k against the **full-data top-k** (the same model fitted to every recorded verdict of the pool: \
         what this judge says with unlimited budget) and against the gold top-k when the pool has one; \
         mean ± se over pools × seeds.\n\n",
    );
    let gold = s.cells.iter().any(|c| c.recall_gold.is_some());
    t.push_str("| strategy | model | budget | comparisons | recall vs full data |");
    t.push_str(if gold { " recall vs gold |\n|---|---|---|---|---|---|\n" } else { "\n|---|---|---|---|---|\n" });
    for c in &s.cells {
        let _ = write!(
            t,
            "| {} | {} | {} | {:.1} | {} |",
            name(&c.strategy),
            name(&c.model),
            c.budget,
            c.comparisons.mean,
            ms(&c.recall_full)
        );
        if gold {
            let _ = write!(t, " {} |", c.recall_gold.as_ref().map(ms).unwrap_or_else(|| "–".into()));
        }
        t.push('\n');
    }
    if !s.diffs.is_empty() {
        t.push_str(
            "\n## Paired differences between strategies\n\nThe first strategy listed (a) against each other one (b): per pool and seed, recall(a) − recall(b) on the same recording; mean ± se of the differences, and the runs where each side is higher. (With every pair asked, all strategies return the full-data fit.)\n\n",
        );
        t.push_str("| model | budget | a − b | Δ recall vs full data | a higher / b higher |");
        t.push_str(if gold {
            " Δ recall vs gold |\n|---|---|---|---|---|---|\n"
        } else {
            "\n|---|---|---|---|---|\n"
        });
        for d in &s.diffs {
            let _ = write!(
                t,
                "| {} | {} | {} − {} | {} | {} / {} |",
                name(&d.model),
                d.budget,
                name(&d.a),
                name(&d.b),
                signed(&d.full),
                d.a_better,
                d.b_better
            );
            if gold {
                let _ = write!(t, " {} |", d.gold.as_ref().map(signed).unwrap_or_else(|| "–".into()));
            }
            t.push('\n');
        }
    }
    if !s.coverage.is_empty() {
        t.push_str(
            "\n## Certified top-k coverage\n\nOf the bases certified in the top-k at ε (π ≥ 1 − ε), how many are not in the \
             full-data top-k (the same model fitted to every recorded verdict), summed over pools × seeds; the claim holds \
             when the 95 % interval of that rate reaches ε.\n\n",
        );
        t.push_str(&super::sweep::coverage_markdown(&s.coverage));
    }
    t
}

/// Recall against comparisons, one line per strategy, for each model (and target).
///
/// # Errors
/// [`plots::PlotError`].
pub fn plots(s: &FrozenSummary) -> Result<Vec<(String, String)>, plots::PlotError> {
    let mut out = Vec::new();
    let models: Vec<ModelKind> = s.cells.iter().fold(Vec::new(), |mut v, c| {
        if !v.contains(&c.model) {
            v.push(c.model);
        }
        v
    });
    let strategies: Vec<StrategyKind> = s.cells.iter().fold(Vec::new(), |mut v, c| {
        if !v.contains(&c.strategy) {
            v.push(c.strategy);
        }
        v
    });
    for model in models {
        for gold in [false, true] {
            let series: Vec<Series> = strategies
                .iter()
                .filter_map(|&st| {
                    let cs: Vec<&FrozenCell> =
                        s.cells.iter().filter(|c| c.model == model && c.strategy == st).collect();
                    let pts: Vec<(f64, MeanSe)> = cs
                        .iter()
                        .filter_map(|c| {
                            let m = if gold { c.recall_gold? } else { c.recall_full };
                            Some((c.comparisons.mean, m))
                        })
                        .collect();
                    (!pts.is_empty()).then(|| Series {
                        name: name(&st),
                        points: pts.iter().map(|(x, m)| (*x, m.mean)).collect(),
                        err: Some(pts.iter().map(|(_, m)| m.se).collect()),
                    })
                })
                .collect();
            if series.is_empty() {
                continue;
            }
            let target = if gold { "gold" } else { "full data" };
            let chart = LineChart {
                title: format!("{}: recall@{} vs {target} ({} model)", s.judge, s.k, name(&model)),
                x_label: "comparisons".into(),
                y_label: format!("recall@{} vs {target} (mean ± se)", s.k),
                series,
                hlines: vec![],
                vlines: vec![],
                y_range: Some((0.0, 1.0)),
                legend_upper: false,
            };
            let file = format!("recall_vs_budget_{}_{}.svg", name(&model), if gold { "gold" } else { "full" });
            out.push((file, plots::line_chart(&chart)?));
        }
    }
    Ok(out)
}

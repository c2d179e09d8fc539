//! "Which judge should I pay for?": runs of several judges on the same pools (typically replays
//! of recordings, docs/replay.md) compared judge by judge — cost against recall — and the price
//! table that puts a cost on recordings that have none.
//!
//! **Price table** (`compare --prices FILE`, YAML): judge name → prices in USD,
//!
//! ```yaml
//! "GPT-4": {usd_per_verdict: 0.03}
//! "ChatGPT / CoT": {input_usd_per_mtok: 0.5, output_usd_per_mtok: 1.5}
//! ```
//!
//! A run's judge name is what `compare` shows ([`RunDir::judge_label`]): a replayed judge's
//! recorded `judge / prompting`, else the run's judge description; an entry under the recorded
//! `judge` alone covers all its prompting strategies. A priced verdict costs `usd_per_verdict` +
//! prompt tokens × `input_usd_per_mtok` / 10⁶ + completion tokens × `output_usd_per_mtok` / 10⁶
//! (token prices need recorded `usage`); invalid verdicts are paid for too. A table entry
//! replaces the recorded cost of that judge's runs; runs of judges without an entry keep their
//! recorded cost.
//!
//! **Per judge** (runs of one judge on several pools, one run per pool; every judge on the same
//! pools; runs of one name whose judges' settings ids differ are judges of their own, and a
//! judge's cost must be recorded or priced on all its pools or none): comparisons, cost (total and per pool), recall@k against the target top-k on each pool
//! — gold, or the run of a reference judge on the same pool — as mean ± se over pools, and the
//! position-flip rate over all its both-order pairs.

use super::compare::{CompareError, CostSource, RunDir, flips};
use super::md;
use super::plots::{self, LineChart, Series};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;
use std::path::Path;

/// Prices of one judge (USD).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    /// USD per verdict.
    #[serde(default)]
    pub usd_per_verdict: Option<f64>,
    /// USD per million prompt tokens.
    #[serde(default)]
    pub input_usd_per_mtok: Option<f64>,
    /// USD per million completion tokens.
    #[serde(default)]
    pub output_usd_per_mtok: Option<f64>,
}

impl Price {
    /// The priced cost of one verdict with this usage (USD).
    pub fn cost(&self, usage: &crate::domain::verdict::Usage) -> f64 {
        self.usd_per_verdict.unwrap_or(0.0)
            + usage.prompt_tokens as f64 * self.input_usd_per_mtok.unwrap_or(0.0) / 1e6
            + usage.completion_tokens as f64 * self.output_usd_per_mtok.unwrap_or(0.0) / 1e6
    }

    fn per_token(&self) -> bool {
        self.input_usd_per_mtok.is_some() || self.output_usd_per_mtok.is_some()
    }
}

/// A price table: judge name → prices (module docs).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PriceTable {
    /// The entries.
    pub prices: BTreeMap<String, Price>,
}

/// The model name of a live judge's description (`openai MODEL @ URL (prompt FILE)`).
pub fn model_of(label: &str) -> Option<&str> {
    label.strip_prefix("openai ")?.split(" @ ").next().map(str::trim).filter(|m| !m.is_empty())
}

/// The 1-based line of `field` of the top-level entry `judge` in a price table's `text` (the
/// entry's own line when the field is in a flow mapping or not found). Judge names may hold dots
/// or spaces, so the entry is found by its written name, bare or quoted.
fn entry_line(text: &str, judge: &str, field: &str) -> Option<usize> {
    let lines: Vec<&str> = text.lines().collect();
    let names = [judge.to_owned(), format!("{judge:?}"), format!("'{judge}'")];
    let keyed = |l: &str, name: &str| l.strip_prefix(name).is_some_and(|r| r.trim_start().starts_with(':'));
    let top = lines.iter().position(|l| !l.starts_with([' ', '\t']) && names.iter().any(|n| keyed(l, n)))?;
    let inner = lines[top + 1..]
        .iter()
        .take_while(|l| l.trim().is_empty() || l.starts_with([' ', '\t']) || l.trim_start().starts_with('#'))
        .position(|l| keyed(l.trim_start(), field));
    Some(top + 1 + inner.map_or(0, |i| i + 1))
}

impl PriceTable {
    /// Read and check a price table (YAML).
    ///
    /// # Errors
    /// [`CompareError::Read`] naming the file and the entry: unreadable, not YAML, an unknown
    /// key, a negative price or an entry without any price.
    pub fn load(path: &Path) -> Result<Self, CompareError> {
        let bad = |msg: String| CompareError::Read { path: path.to_owned(), msg };
        let bytes = std::fs::read(path).map_err(|e| bad(e.to_string()))?;
        let text = crate::domain::text::utf8_text(&bytes).map_err(|(line, m)| bad(format!("line {line}: {m}")))?;
        let prices: BTreeMap<String, Price> = crate::store::yaml::from_file_text(text, path).map_err(|m| {
            bad(format!("{m}; expected `JUDGE: {{usd_per_verdict, input_usd_per_mtok, output_usd_per_mtok}}`"))
        })?;
        if prices.is_empty() {
            return Err(bad(
                "holds no price; expected `JUDGE: {usd_per_verdict, input_usd_per_mtok, output_usd_per_mtok}`, one line per judge".into(),
            ));
        }
        for (k, p) in &prices {
            if p.usd_per_verdict.is_none() && !p.per_token() {
                let at = entry_line(text, k, "usd_per_verdict").map(|l| format!("line {l}: ")).unwrap_or_default();
                return Err(bad(format!(
                    "{at}{k:?}: no price; give usd_per_verdict, or input_usd_per_mtok / output_usd_per_mtok"
                )));
            }
            for (f, v) in [
                ("usd_per_verdict", p.usd_per_verdict),
                ("input_usd_per_mtok", p.input_usd_per_mtok),
                ("output_usd_per_mtok", p.output_usd_per_mtok),
            ] {
                if let Some(v) = v
                    && !(v >= 0.0 && v.is_finite())
                {
                    let at = entry_line(text, k, f).map(|l| format!("line {l}: ")).unwrap_or_default();
                    return Err(bad(format!("{at}{k:?}.{f} = {v} must be a finite number ≥ 0")));
                }
            }
        }
        Ok(Self { prices })
    }

    /// The entry for a run: its judge name, else (replays) the recorded judge alone, else (live
    /// judges) the model name alone (`gpt-4o-mini` for `openai gpt-4o-mini @ URL (prompt …)`).
    pub fn find(&self, run: &RunDir) -> Option<(&str, &Price)> {
        let label = run.judge_label();
        self.prices
            .get_key_value(&label)
            .or_else(|| run.result.replay.as_ref().and_then(|r| self.prices.get_key_value(&r.judge)))
            .or_else(|| model_of(&label).and_then(|m| self.prices.get_key_value(m)))
            .map(|(k, p)| (k.as_str(), p))
    }

    /// Re-price the runs that have an entry: every verdict's `cost_usd` and the run's
    /// `spend_usd` (the sum over its verdicts). Returns the entries no run used.
    ///
    /// # Errors
    /// [`CompareError::Mismatch`] when an entry prices tokens but the run's verdicts record none.
    pub fn apply(&self, runs: &mut [RunDir]) -> Result<Vec<String>, CompareError> {
        let mut used = BTreeSet::new();
        for run in runs.iter_mut() {
            let Some((key, price)) = self.find(run).map(|(k, p)| (k.to_owned(), *p)) else { continue };
            let tokens: u64 = run.verdicts.iter().map(|v| v.reply.usage.total()).fold(0u64, u64::saturating_add);
            if price.per_token() && price.usd_per_verdict.is_none() && tokens == 0 && !run.verdicts.is_empty() {
                return Err(CompareError::Mismatch(format!(
                    "price table entry {key:?} prices tokens, but the verdicts of run {} record no token usage; give usd_per_verdict",
                    run.dir.display()
                )));
            }
            for v in &mut run.verdicts {
                v.reply.cost_usd = price.cost(&v.reply.usage);
            }
            run.result.spend_usd = run.verdicts.iter().map(|v| v.reply.cost_usd).sum();
            run.priced = true;
            used.insert(key);
        }
        Ok(self.prices.keys().filter(|k| !used.contains(*k)).cloned().collect())
    }
}

/// Mean and standard error (sample sd / √n; 0 for n = 1) of a non-empty sample.
fn mean_se(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let se = if v.len() > 1 {
        (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt() / n.sqrt()
    } else {
        0.0
    };
    (mean, se)
}

/// One judge's line of a [`JudgeComparison`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JudgeComparisonRow {
    /// The judge ([`RunDir::judge_label`]).
    pub judge: String,
    /// Runs (one per pool).
    pub runs: usize,
    /// Verdicts stored, over all its runs.
    pub comparisons: usize,
    /// Valid verdicts.
    pub valid: usize,
    /// Total cost over its runs (USD).
    pub cost_usd: f64,
    /// Mean cost per pool (USD).
    pub cost_per_pool_usd: f64,
    /// Where the cost comes from (a price table if any run was priced).
    pub cost: CostSource,
    /// Mean recall@k over the pools with a target top-k.
    pub recall: Option<f64>,
    /// Its standard error over pools.
    pub recall_se: Option<f64>,
    /// Recall@k per pool (pool id → recall), where there is a target.
    pub recall_by_pool: BTreeMap<String, f64>,
    /// Position flips over all its runs.
    pub flips: usize,
    /// Pairs with both orders valid.
    pub both_order_pairs: usize,
    /// flips / both_order_pairs.
    pub flip_rate: Option<f64>,
}

/// Judges compared over several pools (module docs).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JudgeComparison {
    /// The pools, sorted.
    pub pools: Vec<String>,
    /// k: the top-k size every compared run used (they must agree; recall@k is at this k).
    pub k: usize,
    /// `gold` or `reference judge NAME` (None: no target).
    pub target: Option<String>,
    /// One row per judge, in the order first seen.
    pub rows: Vec<JudgeComparisonRow>,
    /// Price-table entries no run used.
    pub unused_prices: Vec<String>,
}

/// The judge of each run as `compare` names it: [`RunDir::judge_label`], with ` [settings ID]`
/// added where runs of one label have judges of different settings (a seed, model, template or
/// temperature changed under one description), so they are not taken for one judge.
fn judge_names(runs: &[RunDir]) -> Vec<String> {
    let mut ids: BTreeMap<String, BTreeSet<Option<&str>>> = BTreeMap::new();
    for r in runs {
        ids.entry(r.judge_label()).or_default().insert(r.judge_settings());
    }
    runs.iter()
        .map(|r| {
            let label = r.judge_label();
            match r.judge_settings() {
                Some(id) if ids[&label].len() > 1 => format!("{label} [settings {id}]"),
                _ => label,
            }
        })
        .collect()
}

/// Compare judges over pools: group the runs by judge (its description and settings id), check
/// that every judge has exactly one run on each of the same pools with the same k, and that its
/// cost is recorded or priced on all of them or none, and measure each (module docs). Recall is
/// against the runs of `reference_judge` on the same pools, else against gold.
///
/// # Errors
/// [`CompareError::Mismatch`] naming the runs or judges that do not line up.
pub fn compare_judges(runs: &[RunDir], reference_judge: Option<&str>) -> Result<JudgeComparison, CompareError> {
    let first = runs.first().ok_or_else(|| CompareError::Mismatch("no runs to compare".into()))?;
    let k = first.result.k;
    let names = judge_names(runs);
    let mut order: Vec<String> = Vec::new();
    let mut by_judge: BTreeMap<String, BTreeMap<String, &RunDir>> = BTreeMap::new();
    for (r, j) in runs.iter().zip(names) {
        if r.result.k != k {
            return Err(CompareError::Mismatch(format!(
                "run {} has k = {}, but run {} has k = {k}; compare runs with the same k",
                r.dir.display(),
                r.result.k,
                first.dir.display()
            )));
        }
        if !order.contains(&j) {
            order.push(j.clone());
        }
        if let Some(other) = by_judge.entry(j.clone()).or_default().insert(r.result.pool_id.clone(), r) {
            return Err(CompareError::Mismatch(format!(
                "runs {} and {} are both judge {j:?} on pool {:?}; give one run per judge and pool",
                other.dir.display(),
                r.dir.display(),
                r.result.pool_id
            )));
        }
    }
    let pools: Vec<String> = by_judge[&order[0]].keys().cloned().collect();
    for j in &order {
        let mine: Vec<String> = by_judge[j].keys().cloned().collect();
        if mine != pools {
            return Err(CompareError::Mismatch(format!(
                "judge {j:?} has runs on pools {mine:?}, but judge {:?} on {pools:?}; compare judges on the same pools",
                order[0]
            )));
        }
    }
    let target_of = |pool: &str| -> Option<crate::report::RecallTarget> {
        match reference_judge {
            Some(rj) => by_judge
                .get(rj)
                .and_then(|m| m.get(pool))
                .map(|r| crate::report::RecallTarget::exact(r.result.fit.topk.clone())),
            None => by_judge
                .values()
                .find_map(|m| m.get(pool).and_then(|r| crate::report::RecallTarget::gold(&r.result.fit))),
        }
    };
    if let Some(rj) = reference_judge
        && !by_judge.contains_key(rj)
    {
        return Err(CompareError::Mismatch(format!("no run of reference judge {rj:?}; the judges are {order:?}")));
    }
    for j in &order {
        // A recording priced on only some verdicts gives a partial cost.
        if let Some(r) =
            by_judge[j].values().find(|r| !r.priced && r.result.replay.as_ref().is_some_and(|x| x.unpriced.is_some()))
        {
            let [none, all] = r.result.replay.as_ref().and_then(|x| x.unpriced).unwrap_or_default();
            return Err(CompareError::Mismatch(format!(
                "judge {j:?}: its recording records a cost on only some verdicts ({none} of {all} have none; run {}): its cost would be partial; give its prices with --prices FILE",
                r.dir.display()
            )));
        }
        // A cost on some pools and none on others would average a real cost with nothing.
        let (costed, free): (Vec<&RunDir>, Vec<&RunDir>) =
            by_judge[j].values().partition(|r| r.priced || r.result.spend_usd > 0.0);
        if let (Some(c), Some(f)) = (costed.first(), free.iter().find(|r| r.result.comparisons > 0)) {
            return Err(CompareError::Mismatch(format!(
                "judge {j:?} has a cost on pool {:?} (run {}) but none on pool {:?} (run {}): its cost per pool would average the two; give its prices with --prices FILE",
                c.result.pool_id,
                c.dir.display(),
                f.result.pool_id,
                f.dir.display()
            )));
        }
    }
    let mut rows = Vec::new();
    for j in &order {
        let runs = &by_judge[j];
        let (mut comparisons, mut valid, mut cost, mut f, mut n) = (0, 0, 0.0, 0, 0);
        let mut recall_by_pool = BTreeMap::new();
        let mut priced = false;
        for (pool, r) in runs {
            comparisons += r.result.comparisons;
            valid += r.result.valid;
            cost += r.result.spend_usd;
            priced |= r.priced;
            let (rf, rn) = flips(&r.verdicts);
            f += rf;
            n += rn;
            if let Some(t) = target_of(pool) {
                recall_by_pool.insert(pool.clone(), t.overlap(&r.result.fit.topk));
            }
        }
        let recalls: Vec<f64> = recall_by_pool.values().copied().collect();
        let ms = (!recalls.is_empty()).then(|| mean_se(&recalls));
        rows.push(JudgeComparisonRow {
            judge: j.clone(),
            runs: runs.len(),
            comparisons,
            valid,
            cost_usd: cost,
            cost_per_pool_usd: cost / runs.len() as f64,
            cost: if priced {
                CostSource::PriceTable
            } else if cost > 0.0 {
                CostSource::Recorded
            } else {
                CostSource::None
            },
            recall: ms.map(|m| m.0),
            recall_se: ms.map(|m| m.1),
            recall_by_pool,
            flips: f,
            both_order_pairs: n,
            flip_rate: (n > 0).then(|| f as f64 / n as f64),
        });
    }
    let target = match reference_judge {
        Some(rj) => Some(format!("reference judge {rj}")),
        None => rows.iter().any(|r| r.recall.is_some()).then(|| "gold".to_string()),
    };
    Ok(JudgeComparison { pools, k, target, rows, unused_prices: Vec::new() })
}

/// compare.md of a judge comparison.
pub fn markdown(c: &JudgeComparison) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# Judges compared on {} pools (k = {})\n", c.pools.len(), c.k);
    match &c.target {
        Some(t) => {
            let _ = writeln!(
                s,
                "Recall@{} against the {} top-{} of each pool, mean ± se over pools.\n",
                c.k,
                md::text(t),
                c.k
            );
        }
        None => s.push_str("No gold quality and no reference judge: recall is not available.\n\n"),
    }
    let _ = writeln!(
        s,
        "| judge | pools | comparisons | valid | cost (USD) | per pool (USD) | cost from | recall@{} | position flips |\n|---|---|---|---|---|---|---|---|---|",
        c.k
    );
    for r in &c.rows {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {:.4} | {:.4} | {} | {} | {} |",
            md::text(&r.judge),
            r.runs,
            r.comparisons,
            r.valid,
            r.cost_usd,
            r.cost_per_pool_usd,
            r.cost.name(),
            match (r.recall, r.recall_se) {
                (Some(m), Some(se)) => format!("{m:.3} ± {se:.3}"),
                _ => "–".into(),
            },
            r.flip_rate
                .map(|v| format!("{}/{} = {v:.2}", r.flips, r.both_order_pairs))
                .unwrap_or_else(|| "no pair in both orders".into()),
        );
    }
    let _ = writeln!(s, "\nPools: {}.", c.pools.iter().map(|x| md::text(x)).collect::<Vec<_>>().join(", "));
    if !c.unused_prices.is_empty() {
        let unused: Vec<String> = c.unused_prices.iter().map(|x| md::text(x)).collect();
        let _ = writeln!(s, "\nPrice-table entries that matched no run: {}.", unused.join(", "));
    }
    s.push_str(
        "\nA position flip is a pair judged in both orders whose winner changes with the order \
         (the same slot wins twice); ties are not flips.\n",
    );
    s
}

/// Cost per pool against mean recall (± se), one point per judge; against comparisons per pool
/// when no judge has a cost. `None` without a recall target.
///
/// # Errors
/// [`CompareError::Plot`].
pub fn plot(c: &JudgeComparison) -> Result<Option<String>, CompareError> {
    let Some(target) = &c.target else { return Ok(None) };
    let priced = c.rows.iter().any(|r| r.cost_usd > 0.0);
    let series = c
        .rows
        .iter()
        .filter_map(|r| {
            let x = if priced { r.cost_per_pool_usd } else { r.comparisons as f64 / r.runs as f64 };
            Some(Series { name: r.judge.clone(), points: vec![(x, r.recall?)], err: Some(vec![r.recall_se?]) })
        })
        .collect();
    let chart = LineChart {
        title: format!("recall@{} against {}", c.k, if priced { "cost" } else { "comparisons (no judge has a cost)" }),
        x_label: if priced { "cost per pool (USD)".into() } else { "comparisons per pool".into() },
        y_label: format!("recall@{} vs {target} (mean ± se over pools)", c.k),
        series,
        hlines: vec![],
        vlines: vec![],
        y_range: Some((0.0, 1.05)),
        legend_upper: false,
    };
    Ok(Some(plots::line_chart(&chart)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_live_judge_is_priced_by_its_model_name() {
        assert_eq!(
            model_of("openai gpt-4o-mini @ https://api.openai.com/v1 (prompt pairwise.txt)"),
            Some("gpt-4o-mini")
        );
        assert_eq!(
            model_of("openai Qwen/Qwen2.5-7B @ http://127.0.0.1:8088/v1 (prompt p.txt)"),
            Some("Qwen/Qwen2.5-7B")
        );
        assert_eq!(model_of("mock (stochastic, pos_bias 0.3)"), None);
    }

    /// A price that breaks its rule is named at its line, as a type error is (hunt 43: no line).
    #[test]
    fn a_bad_price_is_named_at_its_line() {
        let dir = tempfile::tempdir().unwrap();
        let cases = [
            ("x: {usd_per_verdict: -1}\n", "line 1: \"x\".usd_per_verdict = -1 must be a finite number ≥ 0"),
            (
                "# prices\nGPT-4.1 mini:\n  usd_per_verdict: 0.01\n\n  input_usd_per_mtok: -2\n",
                "line 5: \"GPT-4.1 mini\".input_usd_per_mtok = -2 must be a finite number ≥ 0",
            ),
            (
                "a: {usd_per_verdict: 1}\n\"b:c\":\n  output_usd_per_mtok: .nan\n",
                "line 3: \"b:c\".output_usd_per_mtok = NaN must be a finite number ≥ 0",
            ),
            ("a: {usd_per_verdict: 1}\nfoo: {}\n", "line 2: \"foo\": no price; give usd_per_verdict"),
            ("a: {input_usd_per_mtok: .inf}\n", "line 1: \"a\".input_usd_per_mtok = inf must be a finite number ≥ 0"),
        ];
        for (text, said) in cases {
            let p = dir.path().join("prices.yaml");
            std::fs::write(&p, text).unwrap();
            let e = PriceTable::load(&p).unwrap_err().to_string();
            assert!(e.starts_with(&format!("{}: {said}", p.display())), "{text}: {e}");
        }
    }
}

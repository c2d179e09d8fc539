//! What `run --dry-run` finds and prints (docs/live.md, "Dry run"): [`DryRun`] and its text.

use crate::config::run::Config;
use crate::judge::JudgeInfo;

/// What a dry run found (all USD amounts are worst cases unless named `spent`).
#[derive(Debug, Clone, PartialEq)]
pub struct DryRun {
    /// Ordered pairs the run may send (cross-base, plus within-base under `design: paired`; less
    /// pairs of identical texts, which are never sent).
    pub pairs: usize,
    /// Verdicts already stored for this judge configuration.
    pub stored: usize,
    /// Spend booked so far for this judge configuration, USD: stored verdicts, paid failures and
    /// possibly billed requests (intents still open count, as the next run books them).
    pub spent_usd: f64,
    /// Spend booked in the run folder under other settings (earlier configurations, judges or
    /// pools), USD: counted against `max_usd` as the run counts it.
    pub other_usd: f64,
    /// Of `other_usd`, the judge's fingerprint checks, USD.
    pub fingerprint_usd: f64,
    /// Of `other_usd`, a gate's trusted judge, USD.
    pub gate_trusted_usd: f64,
    /// What the run's judge leaves of `max_usd` for the config's gate (USD, its trusted judge's
    /// queries at their worst case) and how many queries that is.
    pub held_for_gate: (f64, usize),
    /// Why nothing is held for the gate although it has a priced trusted judge.
    pub gate_not_held: Option<String>,
    /// Queries of an open provider batch job and their reservations (USD, in `spent_usd`): a
    /// real run books the job's results before it picks anything.
    pub in_open_job: Option<(usize, f64)>,
    /// The first query the run sends (item ids: shown first, second) and its rendered prompt.
    pub first: Option<(String, String, Option<String>)>,
    /// Worst-case cost per query over the unqueried pairs: (min, max, mean), USD, as the run
    /// reserves it (times `carried_factor`).
    pub worst_per_query_usd: Option<(f64, f64, f64)>,
    /// The factor the run reserves above the judge's worst case (≥ 1): the largest cost of a
    /// stored reply relative to its query's worst case, above 1 when the provider billed past it
    /// (docs/live.md, "Overruns").
    pub carried_factor: f64,
    /// The mean of `worst_per_query_usd` is that of a seeded sample of open pairs (a large
    /// pool, whose extremes come from the judge's per-item parts), not of every pair.
    pub mean_sampled: bool,
    /// Queries the budget allows for sure (most expensive pairs first).
    pub allowed_at_least: usize,
    /// Queries the budget could allow (cheapest pairs first).
    pub allowed_at_most: usize,
    /// Worst-case spend of the queries that may be sent, USD (never above `max_usd` − spent).
    pub worst_total_usd: f64,
    /// What the judge fingerprint check before the run does (docs/live.md): the re-asks and
    /// what they reserve, or the line a check decided without asking prints.
    pub fingerprint: Option<String>,
}

/// The dry run as text for the terminal.
pub fn render(cfg: &Config, judge: &dyn JudgeInfo, d: &DryRun) -> String {
    let mut s = String::from("dry run: no query was sent and nothing was written.\n");
    s.push_str(&format!("judge: {}\n", judge.describe()));
    s.push_str(&format!(
        "pool {}: {} items, {} bases, {} ordered pairs; {} already stored; spend booked ${:.6} (verdicts, paid failures, possibly billed requests)\n",
        cfg.pool.pool_id,
        cfg.pool.n_items(),
        cfg.pool.n_bases(),
        d.pairs,
        crate::domain::fmt::count(d.stored, "verdict"),
        d.spent_usd
    ));
    if let Some((n, usd)) = d.in_open_job {
        s.push_str(&format!(
            "an open batch job holds {n} quer{} (in the spend booked at their reservations, ${usd:.6}, until its results are booked): a real run first waits for the job and books its results; the counts below leave them out\n",
            if n == 1 { "y" } else { "ies" }
        ));
    }
    if d.other_usd > 0.0 {
        s.push_str(&format!(
            "the run folder's books also hold ${:.6} ({}), counted against max_usd as the run counts it\n",
            d.other_usd,
            crate::report::summary::other_spend_parts(
                d.other_usd,
                d.fingerprint_usd,
                d.gate_trusted_usd,
                &|x| format!("${x:.6}")
            )
        ));
    }
    match &d.first {
        Some((a, b, Some(p))) => {
            s.push_str(&format!("\nfirst prompt ({a} shown first, {b} second):\n---\n{p}\n---\n\n"))
        }
        Some((a, b, None)) => s.push_str(&format!("first query: {a} vs {b} (this judge sends no prompt)\n")),
        None => s.push_str("every ordered pair already has a verdict: nothing to send\n"),
    }
    if let Some((lo, hi, mean)) = d.worst_per_query_usd {
        s.push_str(&format!(
            "worst-case cost per query: ${lo:.6} – ${hi:.6} (mean ${mean:.6}{}), reserved before sending{}\n",
            if d.mean_sampled { " over a sample of open pairs" } else { "" },
            if d.carried_factor > 1.0 {
                format!(
                    " (the judge's own worst case × {f}, since a stored reply cost {f} times its worst case; docs/live.md, \"Overruns\")",
                    f = crate::domain::fmt::num(d.carried_factor)
                )
            } else {
                String::new()
            }
        ));
    }
    let b = &cfg.raw.budget;
    s.push_str(&budget_line(b, ""));
    if d.held_for_gate.0 > 0.0 {
        s.push_str(&format!(
            "held for the gate: ${:.6} of max_usd, its trusted judge's {} queries (2 × gate.anchors, cached or not: the anchors are picked after the run) at their worst case (asked after the run; the run's judge does not spend it)\n",
            d.held_for_gate.0, d.held_for_gate.1
        ));
    }
    if let Some(w) = &d.gate_not_held {
        s.push_str(&format!("warning: {w}\n"));
    }
    if let Some(f) = &d.fingerprint {
        s.push_str(&format!("{f}\n"));
    }
    if b.max_comparisons.is_none() && b.max_usd.is_none() {
        s.push_str(&format!(
            "queries the budget allows: all {} ordered pairs not yet judged (no limit)\n",
            d.allowed_at_least
        ));
    } else if d.allowed_at_least == d.allowed_at_most
        && (b.max_usd.is_none()
            || d.allowed_at_least == 0
            || d.allowed_at_least as u64
                == b.max_comparisons
                    .map_or(u64::MAX, |m| m.saturating_sub(d.stored as u64))
                    .min(d.pairs.saturating_sub(d.stored) as u64))
    {
        // The count is exact: max_comparisons or the open pairs bind, not money (or no query's
        // worst case fits: the run reserves it before sending, so it sends none).
        s.push_str(&format!("queries the budget allows: {}\n", d.allowed_at_least));
    } else if d.allowed_at_least == d.allowed_at_most {
        s.push_str(&format!(
            "queries the budget allows: at least {} at worst-case cost (more when replies cost less than their worst case)\n",
            d.allowed_at_least
        ));
    } else {
        s.push_str(&format!(
            "queries the budget allows: at least {} at worst-case cost (up to {} on the cheapest pairs; more when replies cost less than their worst case)\n",
            d.allowed_at_least, d.allowed_at_most
        ));
    }
    s.push_str(&format!("worst-case cost of this run: ${:.6}\n", d.worst_total_usd));
    // Open pairs, and a budget that buys none of them: the run would send nothing.
    if d.allowed_at_most == 0 && d.pairs > d.stored {
        // The limit that binds: the stored verdicts reach max_comparisons, or max_usd is spent.
        if b.max_comparisons.is_some_and(|m| d.stored as u64 >= m) {
            s.push_str(&format!(
                "warning: the stored verdicts ({}) already reach budget.max_comparisons: a real run would send nothing; raise it (--max-comparisons) to go on\n",
                d.stored
            ));
        } else {
            let cheapest = d
                .worst_per_query_usd
                .map(|(lo, _, _)| format!(" (the cheapest query's worst case is ${lo:.6})"))
                .unwrap_or_default();
            // max_comparisons leaves room (above), so max_usd is what binds.
            let held = d.spent_usd + d.other_usd;
            let books = match b.max_usd {
                Some(m) if held > 0.0 => format!("; the run folder's books already hold ${held:.6} of max_usd ${m}"),
                _ => String::new(),
            };
            s.push_str(&format!(
                "warning: the budget allows no query{cheapest}{books}: a real run would send nothing; raise budget.max_usd (--max-usd) to go on\n"
            ));
        }
    }
    if b.max_usd.is_none() && judge.has_price() {
        s.push_str(if b.max_comparisons.is_some() {
            "note: no budget.max_usd is set; only max_comparisons bounds the spend\n"
        } else {
            "note: no budget is set: only the pool's unjudged pairs bound the spend (the worst case above)\n"
        });
    }
    s
}

/// The dry run's budget line: `budget: unlimited`, or both limits (`none` when unset) followed
/// by `what` (e.g. " (for the panel as a whole)").
pub fn budget_line(b: &crate::config::budget::BudgetConfig, what: &str) -> String {
    if b.unlimited {
        "budget: unlimited\n".into()
    } else {
        format!(
            "budget: max_comparisons {}, max_usd {}{what}\n",
            b.max_comparisons.map_or("none".into(), |m| m.to_string()),
            // As given ($0.00028), but -0 is $0 and 1e308 is not 309 digits (hunt 52).
            b.max_usd.map_or("none".into(), |m| if m == 0.0 || m.abs() >= 1e6 || m.abs() < 1e-4 {
                super::table::usd(m)
            } else {
                format!("${m}")
            })
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The budget line gives max_usd as written, but -0 as $0 and 1e308 not as 309 digits
    /// (hunt 52).
    #[test]
    fn the_budget_line_writes_odd_amounts_readably() {
        let line = |usd: f64| {
            let b = crate::config::budget::BudgetConfig { max_usd: Some(usd), ..Default::default() };
            budget_line(&b, "")
        };
        assert_eq!(line(0.00028), "budget: max_comparisons none, max_usd $0.00028\n");
        assert_eq!(line(-0.0), "budget: max_comparisons none, max_usd $0\n");
        assert_eq!(line(1e308), "budget: max_comparisons none, max_usd $1.000e308\n");
        assert_eq!(line(1e-300), "budget: max_comparisons none, max_usd $1.0e-300\n");
    }
}

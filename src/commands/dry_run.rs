//! `topk-judge run CONFIG --dry-run`: render the first prompt, count the queries the budget
//! allows and print the worst-case cost, sending nothing and writing nothing.
//!
//! Queries allowed = min(comparisons left, unqueried ordered pairs, queries whose worst-case
//! costs fit `max_usd` − spent). "At least" takes the most expensive pairs first (the
//! guarantee); "at most" the cheapest first. The worst case of a query is what the runner
//! reserves before sending it ([`Judge::worst_case_usd`]).

use crate::judge::Judge;
use crate::store::books::{BooksError, peek_spend};
use crate::store::config::Config;
use crate::store::ledger::read_records;
use std::collections::HashSet;

/// What a dry run found (all USD amounts are worst cases unless named `spent`).
#[derive(Debug, Clone, PartialEq)]
pub struct DryRun {
    /// Cross-base ordered pairs in the pool that a run may send (identical texts skipped unless
    /// `acquisition.identical_texts: send`).
    pub pairs: usize,
    /// Verdicts already stored for this judge configuration.
    pub stored: usize,
    /// Spend booked so far for this judge configuration, USD: stored verdicts, paid failures and
    /// possibly billed requests (intents still open count, as the next run books them).
    pub spent_usd: f64,
    /// The first unqueried pair (item ids) and its rendered prompt.
    pub first: Option<(String, String, Option<String>)>,
    /// Worst-case cost per query over the unqueried pairs: (min, max, mean), USD.
    pub worst_per_query_usd: Option<(f64, f64, f64)>,
    /// Queries the budget allows for sure (most expensive pairs first).
    pub allowed_at_least: usize,
    /// Queries the budget could allow (cheapest pairs first).
    pub allowed_at_most: usize,
    /// Worst-case spend of the queries that may be sent, USD (never above `max_usd` − spent).
    pub worst_total_usd: f64,
}

/// Compute the dry run.
///
/// # Errors
/// [`BooksError`] when an existing verdicts.jsonl or intents.jsonl cannot be read.
pub fn dry_run(cfg: &Config, judge: &dyn Judge) -> Result<DryRun, BooksError> {
    let pool = &cfg.pool;
    let log = cfg.run_dir.join("verdicts.jsonl");
    let records = if log.exists() { read_records(&log)?.0 } else { Vec::new() };
    // The pairs a run may send: not within a base, not of identical texts under
    // `acquisition.identical_texts: skip`.
    let skipped = cfg.skipped_pairs();
    let mut pairs = Vec::new();
    for a in 0..pool.n_items() {
        for b in 0..pool.n_items() {
            if a != b && pool.item_base[a] != pool.item_base[b] && !skipped.contains(&(a, b)) {
                pairs.push((a, b, judge.cache_key(pool, a, b)));
            }
        }
    }
    let keys: HashSet<&str> = pairs.iter().map(|p| p.2.as_str()).collect();
    let mine: Vec<_> = records.iter().filter(|r| keys.contains(r.key.as_str())).collect();
    let stored_keys: HashSet<&str> = mine.iter().map(|r| r.key.as_str()).collect();
    // + 0.0: an empty f64 sum is −0.0, printed as "$-0.000000".
    let spent_usd: f64 = peek_spend(&cfg.run_dir, &|k: &str| keys.contains(k))?.total_usd() + 0.0;
    let open: Vec<(usize, usize)> =
        pairs.iter().filter(|p| !stored_keys.contains(p.2.as_str())).map(|p| (p.0, p.1)).collect();
    let first =
        open.first().map(|&(a, b)| (pool.items[a].id.clone(), pool.items[b].id.clone(), judge.preview(pool, a, b)));
    let mut worst: Vec<f64> = open.iter().map(|&(a, b)| judge.worst_case_usd(pool, a, b)).collect();
    worst.sort_by(|x, y| y.total_cmp(x));
    let per_query =
        (!worst.is_empty()).then(|| (worst[worst.len() - 1], worst[0], worst.iter().sum::<f64>() / worst.len() as f64));
    let cmp_left = cfg.raw.budget.max_comparisons.map_or(usize::MAX, |m| m.saturating_sub(mine.len() as u64) as usize);
    let n = open.len().min(cmp_left);
    let fit = |costs: &mut dyn Iterator<Item = f64>, left: f64| -> usize {
        let mut sum = 0.0;
        costs
            .take(n)
            .take_while(|c| {
                sum += c;
                sum <= left + 1e-12
            })
            .count()
    };
    let (at_least, at_most, worst_total) = match cfg.raw.budget.max_usd {
        Some(max) => {
            let left = (max - spent_usd).max(0.0);
            let lo = fit(&mut worst.iter().copied(), left);
            let hi = fit(&mut worst.iter().rev().copied(), left);
            (lo, hi, worst.iter().take(n).sum::<f64>().min(left))
        }
        None => (n, n, worst.iter().take(n).sum::<f64>()),
    };
    Ok(DryRun {
        pairs: pairs.len(),
        stored: mine.len(),
        spent_usd,
        first,
        worst_per_query_usd: per_query,
        allowed_at_least: at_least,
        allowed_at_most: at_most,
        worst_total_usd: worst_total + 0.0,
    })
}

/// The dry run as text for the terminal.
pub fn render(cfg: &Config, judge: &dyn Judge, d: &DryRun) -> String {
    let mut s = String::from("dry run: nothing was sent and nothing was written.\n");
    s.push_str(&format!("judge: {}\n", judge.describe()));
    s.push_str(&format!(
        "pool {}: {} items, {} bases, {} ordered pairs; {} verdicts already stored; spend booked ${:.6} (verdicts, paid failures, possibly billed requests)\n",
        cfg.pool.pool_id,
        cfg.pool.n_items(),
        cfg.pool.n_bases(),
        d.pairs,
        d.stored,
        d.spent_usd
    ));
    match &d.first {
        Some((a, b, Some(p))) => {
            s.push_str(&format!("\nfirst prompt ({a} shown first, {b} second):\n---\n{p}\n---\n\n"))
        }
        Some((a, b, None)) => s.push_str(&format!("first query: {a} vs {b} (this judge sends no prompt)\n")),
        None => s.push_str("every ordered pair already has a verdict: nothing to send\n"),
    }
    if let Some((lo, hi, mean)) = d.worst_per_query_usd {
        s.push_str(&format!(
            "worst-case cost per query: ${lo:.6} – ${hi:.6} (mean ${mean:.6}), reserved before sending\n"
        ));
    }
    let b = &cfg.raw.budget;
    if b.unlimited {
        s.push_str("budget: unlimited\n");
    } else {
        s.push_str(&format!(
            "budget: max_comparisons {}, max_usd {}\n",
            b.max_comparisons.map_or("none".into(), |m| m.to_string()),
            b.max_usd.map_or("none".into(), |m| format!("${m}"))
        ));
    }
    if b.max_comparisons.is_none() && b.max_usd.is_none() {
        s.push_str(&format!(
            "queries the budget allows: all {} ordered pairs not yet judged (no limit)\n",
            d.allowed_at_least
        ));
    } else if d.allowed_at_least == d.allowed_at_most {
        s.push_str(&format!("queries the budget allows: {}\n", d.allowed_at_least));
    } else {
        s.push_str(&format!(
            "queries the budget allows: at least {} at worst-case cost (up to {} on the cheapest pairs; more when replies cost less than their worst case)\n",
            d.allowed_at_least, d.allowed_at_most
        ));
    }
    s.push_str(&format!("worst-case cost of this run: ${:.6}\n", d.worst_total_usd));
    if b.max_usd.is_none() && judge.has_price() {
        s.push_str(if b.max_comparisons.is_some() {
            "note: no budget.max_usd is set; only max_comparisons bounds the spend\n"
        } else {
            "note: no budget is set: only the pool's unjudged pairs bound the spend (the worst case above)\n"
        });
    }
    s
}

//! `topk-judge run CONFIG --dry-run`: render the first prompt, count the queries the budget
//! allows and print the worst-case cost, sending nothing and writing nothing.
//!
//! Queries allowed = min(comparisons left, unqueried ordered pairs, queries whose worst-case
//! costs fit `max_usd` − spent). "At least" takes the most expensive pairs first (the
//! guarantee); "at most" the cheapest first. The worst case of a query is what the runner
//! reserves before sending it: [`JudgeInfo::worst_case_usd`], times the factor the folder's
//! stored replies have shown when its provider billed above it ([`RunQueries::carried_factor`]).

use crate::config::run::Config;
use crate::judge::JudgeInfo;
use crate::model::summary::{build_design, fit_and_summarise};
use crate::report::dry_run::DryRun;
use crate::run::queries::{RunQueries, next_picks};
use crate::store::books::{BooksError, peek_spend};
use crate::store::ledger::VerdictRecord;
use crate::store::ledger::read_records;
use std::collections::HashSet;

/// Compute the dry run; `held` is what the run holds back of `max_usd` for its gate
/// ([`super::gate::gate_hold`]), `check_usd` what the judge fingerprint check before the run
/// reserves (USD, [`crate::run::fingerprint::plan`]).
///
/// # Errors
/// [`BooksError`] when an existing verdicts.jsonl or intents.jsonl cannot be read.
pub fn dry_run(
    cfg: &Config,
    judge: &dyn JudgeInfo,
    held: &super::gate::GateHold,
    check_usd: f64,
) -> Result<DryRun, BooksError> {
    let pool = &cfg.pool;
    let log = cfg.run_dir.join("verdicts.jsonl");
    let records = if log.exists() { read_records(&log)?.0 } else { Vec::new() };
    let queries = RunQueries::new(cfg, judge);
    queries.learn_folder(&cfg.run_dir);
    let mine = queries.stored(&records);
    // + 0.0: an empty f64 sum is −0.0, printed as "$-0.000000".
    let spend = peek_spend(&cfg.run_dir, &|k: &str| queries.contains_key(k))?;
    let spent_usd: f64 = spend.total_usd() + 0.0;
    // The queries of an open provider batch job: a real run books the job's results first, so
    // they are neither picked again nor left to the budget.
    let in_job: Vec<(usize, usize)> =
        crate::store::batches::BatchLog::open_keys(&cfg.run_dir)?.iter().filter_map(|k| queries.pair_of(k)).collect();
    // The run counts the whole folder's books against max_usd (also those of earlier settings,
    // a gate's trusted judge and the fingerprint checks).
    let folder = crate::store::books::folder_books(&cfg.run_dir)?;
    let folder_usd: f64 = folder.total().total_usd() + 0.0;
    let asked: HashSet<(usize, usize)> = mine
        .iter()
        .map(|&(a, b, _)| (a, b))
        .chain(queries.skipped().iter().copied())
        .chain(in_job.iter().copied())
        .collect();
    // Every asked pair is a run pair (stored records are matched to run pairs, skipped ones are).
    let n_open = queries.n_pairs() - asked.len();
    let cmp_left = cfg
        .raw
        .budget
        .max_comparisons
        .map_or(usize::MAX, |m| m.saturating_sub((mine.len() + in_job.len()) as u64) as usize);
    let first = first_pick(cfg, &queries, &records, &asked, cmp_left)
        .map(|(a, b)| (pool.items[a].id.clone(), pool.items[b].id.clone(), judge.preview(pool, a, b)));
    let n = n_open.min(cmp_left);
    // A provider that billed above the worst case raised it for every later reservation.
    let factor = queries.carried_factor(&records);
    let worst = |a: usize, b: usize| judge.worst_case_usd(pool, a, b) * factor;
    let single_prompt = (0..pool.n_items()).all(|a| pool.prompt_of(a) == pool.prompt_of(0));
    let parts =
        (n_open > FULL_SORT_MAX_PAIRS && n <= FULL_SORT_MAX_PAIRS && single_prompt && queries.allowed().is_none())
            .then(|| judge.worst_case_parts(pool))
            .flatten();
    let costs = match parts {
        // A large pool: the n most and least expensive open pairs from the sorted per-item
        // parts, priced exactly; no pass over every pair.
        Some(parts) => {
            WorstCosts::of_parts(&parts, n, &|a, b| queries.is_pair(a, b) && !asked.contains(&(a, b)), &worst)
        }
        None => {
            let open_costs = queries.iter().filter(|p| !asked.contains(p)).map(|(a, b)| worst(a, b));
            WorstCosts::of(open_costs, n_open, n)
        }
    };
    let per_query = costs.per_query;
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
            // Not clamped at 0: books above max_usd allow no query, not even a free one (the
            // run refuses a reservation that passes max_usd by more than 1e-12). The config's
            // gate is held back, as the run holds it.
            let left = max - folder_usd.max(spent_usd) - held.usd - check_usd;
            let lo = fit(&mut costs.desc.iter().copied(), left);
            let hi = fit(&mut costs.asc(), left);
            // A budget that buys no query costs nothing.
            let total = if hi == 0 { 0.0 } else { costs.desc.iter().take(n).sum::<f64>().min(left.max(0.0)) };
            (lo, hi, total)
        }
        None => (n, n, costs.desc.iter().take(n).sum::<f64>()),
    };
    Ok(DryRun {
        pairs: queries.sendable(),
        stored: mine.len(),
        spent_usd,
        other_usd: (folder_usd - spent_usd).max(0.0),
        fingerprint_usd: folder.fingerprint.total_usd(),
        gate_trusted_usd: folder.trusted.total_usd(),
        held_for_gate: (held.usd, held.queries),
        gate_not_held: held.warning.clone(),
        in_open_job: (spend.in_open_job > 0).then_some((spend.in_open_job, spend.in_open_job_usd)),
        first,
        worst_per_query_usd: per_query,
        carried_factor: factor,
        mean_sampled: costs.mean_sampled,
        allowed_at_least: at_least,
        allowed_at_most: at_most,
        worst_total_usd: worst_total + 0.0,
        fingerprint: None,
    })
}

/// Open pairs beyond which the dry run keeps only the `n` most and `n` least expensive worst
/// cases (bounded heaps) instead of sorting them all (8 bytes per open pair).
const FULL_SORT_MAX_PAIRS: usize = 1 << 22;

/// The worst-case costs of the open pairs, as far as the dry run needs them.
struct WorstCosts {
    /// (min, max, mean) over every open pair.
    per_query: Option<(f64, f64, f64)>,
    /// The costs, most expensive first: all of them, or at least the `n` largest.
    desc: Vec<f64>,
    /// The `n` smallest, cheapest first, when `desc` does not hold them all.
    smallest: Option<Vec<f64>>,
    /// The mean of `per_query` is a sample's.
    mean_sampled: bool,
}

impl WorstCosts {
    /// Collect `costs` (`count` of them) for budgets of `n` queries.
    fn of(costs: impl Iterator<Item = f64>, count: usize, n: usize) -> Self {
        Self::of_sorting_up_to(costs, count, n, FULL_SORT_MAX_PAIRS)
    }

    /// [`Self::of`] with the full-sort limit `full_sort_max`.
    fn of_sorting_up_to(costs: impl Iterator<Item = f64>, count: usize, n: usize, full_sort_max: usize) -> Self {
        if count <= full_sort_max || n >= count {
            let mut desc: Vec<f64> = costs.collect();
            desc.sort_by(|x, y| y.total_cmp(x));
            let per_query = (!desc.is_empty())
                .then(|| (desc[desc.len() - 1], desc[0], desc.iter().sum::<f64>() / desc.len() as f64));
            return WorstCosts { per_query, desc, smallest: None, mean_sampled: false };
        }
        use std::cmp::Reverse;
        use std::collections::BinaryHeap;
        struct Usd(f64);
        impl PartialEq for Usd {
            fn eq(&self, o: &Self) -> bool {
                self.0.total_cmp(&o.0).is_eq()
            }
        }
        impl Eq for Usd {}
        impl PartialOrd for Usd {
            fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
                Some(self.cmp(o))
            }
        }
        impl Ord for Usd {
            fn cmp(&self, o: &Self) -> std::cmp::Ordering {
                self.0.total_cmp(&o.0)
            }
        }
        let (mut largest, mut smallest) = (BinaryHeap::new(), BinaryHeap::new());
        let (mut lo, mut hi, mut sum, mut seen) = (f64::INFINITY, f64::NEG_INFINITY, 0.0, 0usize);
        for c in costs {
            (lo, hi, sum, seen) = (lo.min(c), hi.max(c), sum + c, seen + 1);
            largest.push(Reverse(Usd(c)));
            if largest.len() > n {
                largest.pop();
            }
            smallest.push(Usd(c));
            if smallest.len() > n {
                smallest.pop();
            }
        }
        let per_query = (seen > 0).then(|| (lo, hi, sum / seen as f64));
        let mut desc: Vec<f64> = largest.into_iter().map(|Reverse(Usd(c))| c).collect();
        desc.sort_by(|x, y| y.total_cmp(x));
        let mut asc: Vec<f64> = smallest.into_iter().map(|Usd(c)| c).collect();
        asc.sort_by(|x, y| x.total_cmp(y));
        WorstCosts { per_query, desc, smallest: Some(asc), mean_sampled: false }
    }

    /// The `n` most and `n` least expensive of the pairs `open`, when the worst case of (a, b)
    /// is a non-decreasing function of `parts.first[a] + parts.second[b]`: the pairs of largest
    /// (smallest) part sums, found by merging the sorted parts with a heap (O((N + n) log N)),
    /// and priced exactly by `cost`. The same costs as sorting every pair's; the mean per query
    /// is that of a seeded sample of open pairs.
    fn of_parts(
        parts: &crate::judge::WorstCaseParts,
        n: usize,
        open: &dyn Fn(usize, usize) -> bool,
        cost: &dyn Fn(usize, usize) -> f64,
    ) -> Self {
        let take = n.max(1);
        let desc: Vec<f64> = extreme_pairs(parts, take, true, open).into_iter().map(|(a, b)| cost(a, b)).collect();
        let asc: Vec<f64> = extreme_pairs(parts, take, false, open).into_iter().map(|(a, b)| cost(a, b)).collect();
        let per_query = match (asc.first(), desc.first()) {
            (Some(&lo), Some(&hi)) => Some((lo, hi, sampled_mean(parts.first.len(), open, cost).clamp(lo, hi))),
            _ => None,
        };
        let keep = |mut v: Vec<f64>| {
            v.truncate(n);
            v
        };
        WorstCosts { per_query, desc: keep(desc), smallest: Some(keep(asc)), mean_sampled: true }
    }

    /// The costs cheapest first (at least the `n` smallest).
    fn asc(&self) -> Box<dyn Iterator<Item = f64> + '_> {
        match &self.smallest {
            Some(v) => Box::new(v.iter().copied()),
            None => Box::new(self.desc.iter().rev().copied()),
        }
    }
}

/// The `n` pairs (a, b) with `open(a, b)` of largest (`largest`) or smallest part sum
/// `first[a] + second[b]`, in that order: the items sorted by each part, and a heap holding,
/// for each first item, its next partner in sorted order.
fn extreme_pairs(
    parts: &crate::judge::WorstCaseParts,
    n: usize,
    largest: bool,
    open: &dyn Fn(usize, usize) -> bool,
) -> Vec<(usize, usize)> {
    use std::collections::BinaryHeap;
    let sorted = |v: &[f64]| {
        let mut idx: Vec<usize> = (0..v.len()).collect();
        idx.sort_by(|&x, &y| if largest { v[y].total_cmp(&v[x]) } else { v[x].total_cmp(&v[y]) });
        idx
    };
    let (fa, sb) = (sorted(&parts.first), sorted(&parts.second));
    // Keys are negated for the smallest sums, so the max-heap pops the next pair either way.
    let key = |i: usize, j: usize| {
        let k = parts.first[fa[i]] + parts.second[sb[j]];
        if largest { k } else { -k }
    };
    #[derive(PartialEq)]
    struct Entry(f64, usize, usize);
    impl Eq for Entry {}
    impl PartialOrd for Entry {
        fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
            Some(self.cmp(o))
        }
    }
    impl Ord for Entry {
        fn cmp(&self, o: &Self) -> std::cmp::Ordering {
            self.0.total_cmp(&o.0).then(o.1.cmp(&self.1)).then(o.2.cmp(&self.2))
        }
    }
    let mut out = Vec::with_capacity(n.min(1 << 20));
    if sb.is_empty() {
        return out;
    }
    let mut heap: BinaryHeap<Entry> = (0..fa.len()).map(|i| Entry(key(i, 0), i, 0)).collect();
    while out.len() < n {
        let Some(Entry(_, i, j)) = heap.pop() else { break };
        if open(fa[i], sb[j]) {
            out.push((fa[i], sb[j]));
        }
        if j + 1 < sb.len() {
            heap.push(Entry(key(i, j + 1), i, j + 1));
        }
    }
    out
}

/// Pairs drawn (seeded) for the mean worst case per query of a large pool.
const MEAN_SAMPLE: usize = 100_000;

/// The mean of `cost` over up to [`MEAN_SAMPLE`] open pairs of `n` items drawn uniformly (a fixed
/// stream); 0 when none is open.
fn sampled_mean(n: usize, open: &dyn Fn(usize, usize) -> bool, cost: &dyn Fn(usize, usize) -> f64) -> f64 {
    use rand::RngExt;
    let mut rng = crate::domain::rng::stream(0, "dry-run-mean", 0);
    let (mut sum, mut got) = (0.0, 0usize);
    for _ in 0..4 * MEAN_SAMPLE {
        if got == MEAN_SAMPLE {
            break;
        }
        let (a, b) = (rng.random_range(0..n), rng.random_range(0..n));
        if open(a, b) {
            sum += cost(a, b);
            got += 1;
        }
    }
    if got == 0 { 0.0 } else { sum / got as f64 }
}

/// The first ordered pair the run sends now: Algorithm 1's first pick after fitting the
/// stored verdicts (no warm start; the MAP is the same). `None` when nothing is left to send or
/// the fit fails (the run then reports the failure itself).
fn first_pick(
    cfg: &Config,
    queries: &RunQueries<'_>,
    records: &[VerdictRecord],
    asked: &HashSet<(usize, usize)>,
    comparisons_left: usize,
) -> Option<(usize, usize)> {
    let pool = &cfg.pool;
    let acq = &cfg.raw.acquisition;
    let verdicts = queries.verdicts(records, cfg.raw.model.strong_preference_weight);
    let design = build_design(pool, &cfg.covariates, &verdicts);
    let mut mc_rng = crate::domain::rng::stream(acq.seed, "membership", verdicts.len() as u64);
    let prior = cfg.raw.model.prior();
    let (summary, _, post) =
        fit_and_summarise(pool, &cfg.covariates, &design, &prior, cfg.raw.k, acq.mc_draws, None, &mut mc_rng).ok()?;
    let ctx = crate::run::queries::acquisition_context(cfg, &post, &summary.membership, asked);
    let mut rng = crate::domain::rng::stream(acq.seed, "acquire", asked.len() as u64);
    // The runner's batch size; with no comparison left, the query it would send next.
    let r = acq.refit_every.min(comparisons_left).max(1);
    next_picks(pool, cfg.raw.design, acq.strategy, &ctx, r, &mut rng).first().copied()
}

/// How long the dry run waits for a live judge's endpoint to answer (seconds).
pub const PROBE_TIMEOUT_S: u64 = 5;

/// Probe a live judge's endpoint for the dry run: its free preflight request (`GET
/// {base_url}/models`, docs/live.md), within [`PROBE_TIMEOUT_S`]. One line saying whether it
/// answered, with the URL (credentials redacted), the scheme and the port it used.
pub async fn probe(judge: &dyn crate::judge::Judge, oc: &crate::judge::openai::OpenAiConfig) -> String {
    let shown = oc.shown_base_url();
    let mut how = crate::judge::openai::endpoint::scheme_and_port(&oc.base_url);
    // Through a proxy, the connection goes to the proxy's port (docs/live.md, "Proxies").
    if let Some(p) = crate::judge::openai::proxy::ProxyEnv::from_env().shown_route(&oc.base_url) {
        how.push_str(&format!(", through {p}"));
    }
    let t0 = std::time::Instant::now();
    let r = tokio::time::timeout(std::time::Duration::from_secs(PROBE_TIMEOUT_S), judge.preflight()).await;
    let ms = t0.elapsed().as_millis();
    match r {
        Err(_) => {
            let hint = if oc.base_url.starts_with("https://") {
                "; a local server usually speaks plain http: try http://"
            } else {
                ""
            };
            format!("endpoint {shown} ({how}): no answer within {PROBE_TIMEOUT_S} s{hint}")
        }
        Ok(Err(e)) => format!("endpoint {shown} ({how}): a real run would stop: {e}"),
        Ok(Ok(warnings)) if warnings.iter().any(|w| w.contains("did not answer")) => {
            format!("endpoint {shown} ({how}): {}", warnings.join("; "))
        }
        Ok(Ok(warnings)) => {
            // A reply that is not JSON is a server, not necessarily the API.
            let who =
                if warnings.iter().any(|w| w.contains("but not with JSON")) { "a server answers" } else { "answers" };
            let mut line = format!("endpoint {shown} ({how}): {who} (GET /models in {ms} ms)");
            for w in warnings {
                line.push_str(&format!("; {w}"));
            }
            line
        }
    }
}

#[cfg(test)]
mod tests {
    use super::WorstCosts;

    #[test]
    fn the_large_pool_preview_prices_the_same_extremes_as_every_pair() {
        use crate::domain::pool::{Item, Pool};
        use crate::judge::JudgeInfo;
        use crate::judge::mock::{MockConfig, MockJudge};
        // 300 items of 1..=40 words (many ties), a priced mock judge, some pairs asked.
        let items: Vec<Item> = (0..300)
            .map(|i| Item {
                id: format!("i{i}"),
                text: Some(vec!["word"; 1 + (i * 7919) % 40].join(" ")),
                quality: Some(0.0),
                ..Item::default()
            })
            .collect();
        let pool = Pool::new("p".into(), "Which is better? Say A or B.".into(), items).unwrap();
        let judge = MockJudge::new(MockConfig {
            input_usd_per_mtok: Some(0.37),
            output_usd_per_mtok: Some(1.1),
            ..MockConfig::default()
        })
        .unwrap();
        let asked: std::collections::HashSet<(usize, usize)> = (0..300).map(|a| (a, (a * 13 + 1) % 300)).collect();
        let open = |a: usize, b: usize| a != b && !asked.contains(&(a, b));
        let cost = |a: usize, b: usize| judge.worst_case_usd(&pool, a, b);
        let all: Vec<f64> = (0..300)
            .flat_map(|a| (0..300).map(move |b| (a, b)))
            .filter(|&(a, b)| open(a, b))
            .map(|(a, b)| cost(a, b))
            .collect();
        let parts = judge.worst_case_parts(&pool).unwrap();
        for n in [1, 17, 500, 5000] {
            let exact = WorstCosts::of_sorting_up_to(all.iter().copied(), all.len(), n, usize::MAX);
            let large = WorstCosts::of_parts(&parts, n, &open, &cost);
            assert_eq!(large.desc[..], exact.desc[..n], "the n most expensive, n = {n}");
            assert_eq!(large.asc().collect::<Vec<_>>(), exact.asc().take(n).collect::<Vec<_>>(), "the n cheapest");
            // at_least / at_most / worst_total as the dry run computes them, for a few budgets.
            for left in [0.0, 1e-4, 2e-3, 0.05] {
                let fit = |c: &mut dyn Iterator<Item = f64>| {
                    let mut sum = 0.0;
                    c.take(n)
                        .take_while(|c| {
                            sum += c;
                            sum <= left + 1e-12
                        })
                        .count()
                };
                assert_eq!(fit(&mut large.desc.iter().copied()), fit(&mut exact.desc.iter().copied()));
                assert_eq!(fit(&mut large.asc()), fit(&mut exact.asc()));
            }
            let total = |w: &WorstCosts| w.desc.iter().take(n).sum::<f64>();
            assert_eq!(total(&large).to_bits(), total(&exact).to_bits());
            let ((lo, hi, mean), (elo, ehi, emean)) = (large.per_query.unwrap(), exact.per_query.unwrap());
            assert_eq!((lo, hi), (elo, ehi));
            assert!((mean - emean).abs() <= 0.02 * emean, "sampled mean {mean} vs {emean}");
        }
    }

    #[test]
    fn bounded_heaps_keep_the_n_most_and_least_expensive_as_a_full_sort() {
        let costs: Vec<f64> = (0..50).map(|i| f64::from((i * 37) % 50) * 0.25).collect();
        let full = WorstCosts::of_sorting_up_to(costs.iter().copied(), 50, 7, usize::MAX);
        let heaps = WorstCosts::of_sorting_up_to(costs.iter().copied(), 50, 7, 0);
        assert!(full.smallest.is_none() && heaps.smallest.is_some());
        assert_eq!(heaps.desc, vec![12.25, 12.0, 11.75, 11.5, 11.25, 11.0, 10.75]);
        assert_eq!(heaps.desc[..], full.desc[..7]);
        assert_eq!(heaps.asc().collect::<Vec<_>>(), vec![0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5]);
        assert_eq!(heaps.asc().collect::<Vec<_>>(), full.asc().take(7).collect::<Vec<_>>());
        // min 0, max 12.25, mean 0.25 · (0 + … + 49) / 50 = 6.125.
        assert_eq!(heaps.per_query, Some((0.0, 12.25, 6.125)));
        assert_eq!(full.per_query, heaps.per_query);
    }
}

//! One definition of a run's queries: which ordered pairs (a shown first, b second) a run may
//! send, their cache keys, which of them are never sent (identical texts), how stored verdict
//! records map back to ordered pairs, and which pairs go out next. `run`, `run --dry-run` and
//! the commands that re-read a run folder (`profile`, `gate`, `fit`, `report`) all use it, so
//! they agree on what belongs to a run.
//!
//! The ordered pairs are every pair of items of different bases, plus, under `design: paired`
//! (docs/model.md §6), the pairs of renderings of one base. The next picks follow Algorithm 1
//! with two rules in front of the acquisition rule: a pair left with one presentation order gets
//! its other order first, and under the paired design every within-base query goes first.

use crate::acquire::{self, Context};
use crate::analysis::design::{self, DesignKind};
use crate::judge::Judge;
use crate::model::laplace::Posterior;
use crate::model::summary::ItemVerdict;
use crate::rng::ChaCha8Rng;
use crate::store::config::Config;
use crate::store::ledger::VerdictRecord;
use crate::store::pool::Pool;
use std::collections::{HashMap, HashSet};

/// The ordered pairs of a run and their cache keys (one judge configuration).
#[derive(Debug, Clone)]
pub struct RunQueries {
    pairs: Vec<(usize, usize)>,
    by_key: HashMap<String, (usize, usize)>,
    skipped: HashSet<(usize, usize)>,
}

impl RunQueries {
    /// The queries of `cfg`'s pool and design for `judge` (its cache key names each query).
    pub fn new(cfg: &Config, judge: &dyn Judge) -> Self {
        let pool = &cfg.pool;
        let pairs = ordered_pairs(pool, cfg.raw.design);
        let by_key = pairs.iter().map(|&(a, b)| (judge.cache_key(pool, a, b), (a, b))).collect();
        let set: HashSet<(usize, usize)> = pairs.iter().copied().collect();
        let skipped = cfg.skipped_pairs().into_iter().filter(|p| set.contains(p)).collect();
        RunQueries { pairs, by_key, skipped }
    }

    /// Every ordered pair of the run, sent or not, in (a, b) order.
    pub fn pairs(&self) -> &[(usize, usize)] {
        &self.pairs
    }

    /// Ordered pairs that are never sent (items with identical texts, unless
    /// `acquisition.identical_texts: send`); they count as asked.
    pub fn skipped(&self) -> &HashSet<(usize, usize)> {
        &self.skipped
    }

    /// Ordered pairs that may be sent: all of them less the skipped ones.
    pub fn sendable(&self) -> usize {
        self.pairs.len() - self.skipped.len()
    }

    /// The ordered pair a cache key names, if it is one of this run's queries.
    pub fn pair_of(&self, key: &str) -> Option<(usize, usize)> {
        self.by_key.get(key).copied()
    }

    /// Whether a cache key is one of this run's queries (for the books: spend of this judge).
    pub fn contains_key(&self, key: &str) -> bool {
        self.by_key.contains_key(key)
    }

    /// This run's records among `records` (matched by cache key), with their ordered pairs.
    pub fn stored<'a>(&self, records: &'a [VerdictRecord]) -> Vec<(usize, usize, &'a VerdictRecord)> {
        records.iter().filter_map(|r| self.pair_of(&r.key).map(|(a, b)| (a, b, r))).collect()
    }

    /// The valid verdicts among this run's records, each with the weight of its likelihood term
    /// (`strong_preference_weight` for a strong preference, else 1).
    pub fn verdicts(&self, records: &[VerdictRecord], strong_preference_weight: f64) -> Vec<ItemVerdict> {
        self.stored(records)
            .into_iter()
            .filter_map(|(a, b, r)| r.y.map(|y| ItemVerdict { a, b, y, w: r.weight(strong_preference_weight) }))
            .collect()
    }
}

/// Every ordered pair of items of different bases (of one prompt, in a run over many prompts),
/// plus the within-base pairs under `design: paired`, in (a, b) order.
pub fn ordered_pairs(pool: &Pool, design: DesignKind) -> Vec<(usize, usize)> {
    let paired = design == DesignKind::Paired;
    pool.ordered_pairs_within_prompts(|a, b| paired || pool.item_base[a] != pool.item_base[b])
}

/// The acquisition rule's view of a run at one refit: the pool's bases and covariates from
/// `cfg`, the Laplace posterior `post` and top-k membership π (length M) of the current MAP,
/// and every ordered pair already asked, skipped or set aside (`queried`).
pub fn acquisition_context<'a>(
    cfg: &'a Config,
    post: &'a Posterior,
    membership: &'a [f64],
    queried: &'a HashSet<(usize, usize)>,
) -> Context<'a> {
    Context {
        item_base: &cfg.pool.item_base,
        item_prompt: &cfg.pool.item_prompt,
        x: &cfg.covariates.x,
        m: cfg.pool.n_bases(),
        p: cfg.covariates.p(),
        post,
        membership,
        k: cfg.raw.k,
        queried,
        orders: cfg.raw.acquisition.orders,
        seed: cfg.raw.acquisition.seed,
    }
}

/// The next (at most `r`) ordered pairs to send, as Algorithm 1 picks them: a missing other
/// presentation order first (under `orders: both`), then the paired design's within-base
/// queries, then the acquisition rule on the current posterior (`ctx`, whose `queried` holds
/// every pair asked, skipped or set aside). `rng` is the run's acquisition stream.
pub fn next_picks(
    pool: &Pool,
    design: DesignKind,
    strategy: acquire::StrategyKind,
    ctx: &Context<'_>,
    r: usize,
    rng: &mut ChaCha8Rng,
) -> Vec<(usize, usize)> {
    let mut picks = design::other_orders(ctx.queried, ctx.orders, r);
    if picks.is_empty() {
        picks = design::first_queries(pool, design, ctx.queried, r);
    }
    if picks.is_empty() {
        picks = acquire::select(strategy, ctx, r, rng);
    }
    picks
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::pool::Item;

    fn item(id: &str, base: Option<&str>) -> Item {
        Item {
            id: id.into(),
            text: None,
            quality: None,
            covariates: Default::default(),
            base: base.map(Into::into),
            rendering: None,
            words: None,
            human: None,
            system: None,
        }
    }

    #[test]
    fn ordered_pairs_are_cross_base_and_within_base_only_when_paired() {
        // Bases x = {x1, x2}, y = {y1}: 3 items, 2 bases.
        let pool = Pool::new(
            "p".into(),
            String::new(),
            vec![item("x1", Some("x")), item("x2", Some("x")), item("y1", Some("y"))],
        )
        .unwrap();
        // Cross-base: x1↔y1, x2↔y1 in both orders = 4.
        assert_eq!(ordered_pairs(&pool, DesignKind::Single), vec![(0, 2), (1, 2), (2, 0), (2, 1)]);
        // Paired adds x1↔x2 in both orders: 3·2 = 6 = every ordered pair.
        assert_eq!(ordered_pairs(&pool, DesignKind::Paired), vec![(0, 1), (0, 2), (1, 0), (1, 2), (2, 0), (2, 1)]);
    }
}

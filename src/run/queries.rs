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

use crate::acquire::{self, AllowedPairs, Context};
use crate::analysis::design::{self, DesignKind};
use crate::config::run::Config;
use crate::domain::pool::Pool;
use crate::domain::rng::ChaCha8Rng;
use crate::domain::verdict::{ItemVerdict, StoredVerdict};
use crate::judge::JudgeInfo;
use crate::model::laplace::Posterior;
use crate::store::ledger::VerdictRecord;
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Mutex;

/// Open pairs priced to find the cheapest one the budget leaves room for (the first this many,
/// on a very large pool).
pub const AFFORDABLE_SCAN_MAX: usize = 100_000;

/// The ordered pairs of a run and their cache keys (one judge configuration).
///
/// Nothing of size N(N − 1) is built: the ordered pairs are enumerated on demand
/// ([`RunQueries::iter`]) and counted in closed form, and a cache key is computed only for a
/// pair that is looked up — a stored record (its `a`, `b` item ids), a line of the run folder
/// ([`RunQueries::learn_folder`]) or a query ([`RunQueries::key`]). Keys already checked are
/// remembered, so a record is hashed once per run however often the books are re-read.
pub struct RunQueries<'a> {
    pool: &'a Pool,
    judge: &'a dyn JudgeInfo,
    paired: bool,
    /// Items of each prompt, ascending (one group for a single pool).
    groups: Vec<Vec<usize>>,
    n_pairs: usize,
    skipped: HashSet<(usize, usize)>,
    /// The only pairs the judge can answer ([`JudgeInfo::answerable`]): then the run's pairs.
    allowed: Option<AllowedPairs>,
    /// Cache keys checked so far: the run's ordered pair they name, or `None` (another judge
    /// configuration, pool or item).
    known: Mutex<HashMap<String, Option<(usize, usize)>>>,
    /// A single-judge run also takes a record stored by a judge panel's member of the same
    /// configuration (key `NAME:KEY`, [`crate::judge::panel`]): the same judge's verdict, paid
    /// for, so a panel's folder resumed with one of its judges alone does not buy it again.
    member_keys: bool,
}

impl std::fmt::Debug for RunQueries<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunQueries").field("pairs", &self.n_pairs).field("skipped", &self.skipped.len()).finish()
    }
}

impl<'a> RunQueries<'a> {
    /// The queries of `cfg`'s pool and design for `judge` (its cache key names each query).
    /// Costs O(N + identical-text groups²), no cache key is computed.
    pub fn new(cfg: &'a Config, judge: &'a dyn JudgeInfo) -> Self {
        let pool = &cfg.pool;
        let paired = cfg.raw.design == DesignKind::Paired;
        let groups = pool.prompt_items();
        // Σ_prompts g(g − 1), less the pairs within one base of one prompt unless paired.
        let mut n_pairs: usize = groups.iter().map(|g| g.len() * g.len().saturating_sub(1)).sum();
        if !paired {
            let mut per_base: HashMap<(usize, usize), usize> = HashMap::new();
            for i in 0..pool.n_items() {
                *per_base.entry((pool.prompt_of(i), pool.item_base[i])).or_default() += 1;
            }
            n_pairs -= per_base.values().map(|s| s * (s - 1)).sum::<usize>();
        }
        let mut q = RunQueries {
            pool,
            judge,
            paired,
            groups,
            n_pairs,
            skipped: HashSet::new(),
            allowed: None,
            known: Mutex::new(HashMap::new()),
            member_keys: !cfg.is_panel(),
        };
        if let Some(pairs) = judge.answerable(pool) {
            let allowed = AllowedPairs::new(pairs.into_iter().filter(|&(a, b)| q.is_pair(a, b)));
            q.n_pairs = allowed.len();
            q.allowed = Some(allowed);
        }
        q.skipped = cfg
            .skipped_pairs()
            .into_iter()
            .filter(|&(a, b)| q.is_pair(a, b) && q.allowed.as_ref().is_none_or(|al| al.contains(a, b)))
            .collect();
        q
    }

    /// The only ordered pairs the judge can answer (a replay of a sparse recording with
    /// `missing: unavailable`), which are then the run's pairs; `None`: every pair.
    pub fn allowed(&self) -> Option<&AllowedPairs> {
        self.allowed.as_ref()
    }

    /// Whether (a, b) is one of the run's ordered pairs: two items of one prompt, of different
    /// bases unless the design is paired.
    pub fn is_pair(&self, a: usize, b: usize) -> bool {
        let pool = self.pool;
        a != b
            && a < pool.n_items()
            && b < pool.n_items()
            && pool.prompt_of(a) == pool.prompt_of(b)
            && (self.paired || pool.item_base[a] != pool.item_base[b])
    }

    /// Number of ordered pairs of the run, sent or not.
    pub fn n_pairs(&self) -> usize {
        self.n_pairs
    }

    /// Every ordered pair of the run, sent or not, in (a, b) order ([`ordered_pairs`]'s order),
    /// enumerated lazily.
    pub fn iter(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        (0..self.pool.n_items()).flat_map(move |a| {
            self.groups[self.pool.prompt_of(a)]
                .iter()
                .filter(move |&&b| self.is_pair(a, b) && self.allowed.as_ref().is_none_or(|al| al.contains(a, b)))
                .map(move |&b| (a, b))
        })
    }

    /// Ordered pairs that are never sent (items with identical texts, unless
    /// `acquisition.identical_texts: send`); they count as asked.
    pub fn skipped(&self) -> &HashSet<(usize, usize)> {
        &self.skipped
    }

    /// Ordered pairs that may be sent: all of them less the skipped ones.
    pub fn sendable(&self) -> usize {
        self.n_pairs - self.skipped.len()
    }

    /// The cache key of the ordered pair (a, b) (one SHA-256; remembered for [`Self::contains_key`]).
    pub fn key(&self, a: usize, b: usize) -> String {
        let key = self.judge.cache_key(self.pool, a, b);
        if self.is_pair(a, b) {
            self.known.lock().expect("key table lock").insert(key.clone(), Some((a, b)));
        }
        key
    }

    /// The run's ordered pair that a line of the run folder names: its cache `key` together with
    /// the item ids `a` (shown first) and `b` it was written with. `None` unless both ids are
    /// items of the pool, (a, b) is a run pair and `key` is its cache key.
    pub fn learn(&self, key: &str, a: &str, b: &str) -> Option<(usize, usize)> {
        if let Some(&hit) = self.known.lock().expect("key table lock").get(key) {
            return hit;
        }
        let (Some(a), Some(b)) = (self.pool.item_index(a), self.pool.item_index(b)) else {
            // An id the pool does not have (a hand-edited or damaged line) says nothing about the
            // key: another line naming the key's own items (its intent's, written before the
            // request) may still resolve it, and then this line counts as that pair's. Caching
            // `None` here made such a pair look unasked on every resume, and each resume paid
            // for it again (the reply then lost to the stored line's key).
            return None;
        };
        if a == b {
            // An item against itself is no query of any run: a damaged line, as above (cached,
            // it made its key's pair look unasked, and the run asked one past max_comparisons).
            return None;
        }
        let pair = (self.is_pair(a, b) && self.is_key_of(key, a, b)).then_some((a, b));
        self.known.lock().expect("key table lock").insert(key.to_owned(), pair);
        pair
    }

    /// Whether `key` is the judge's key of (a, b), or (a single-judge run) a panel member's key
    /// of it: the member's name, `:`, the key (names hold no `:`, keys are hex digests).
    fn is_key_of(&self, key: &str, a: usize, b: usize) -> bool {
        let own = self.judge.cache_key(self.pool, a, b);
        key == own
            || (self.member_keys
                && key
                    .strip_suffix(own.as_str())
                    .and_then(|p| p.strip_suffix(':'))
                    .is_some_and(|name| !name.is_empty() && !name.contains(':')))
    }

    /// Check the cache keys of every line of the run folder `dir` that names its items
    /// (`verdicts.jsonl`, `intents.jsonl`, `failed.jsonl`; absent files and unreadable lines are
    /// skipped), so [`Self::contains_key`] knows each of them. Closing lines of intents carry
    /// only a key: their intent's line names the items.
    pub fn learn_folder(&self, dir: &Path) {
        #[derive(serde::Deserialize)]
        struct Line {
            key: String,
            a: String,
            b: String,
        }
        for file in ["verdicts.jsonl", "intents.jsonl", "failed.jsonl"] {
            let Ok(text) = std::fs::read_to_string(dir.join(file)) else { continue };
            for l in text.lines().filter_map(|l| serde_json::from_str::<Line>(l).ok()) {
                self.learn(&l.key, &l.a, &l.b);
            }
        }
    }

    /// The ordered pair a cache key names, if it is one of this run's queries and was met before
    /// (a stored record, a line of [`Self::learn_folder`] or [`Self::key`]).
    pub fn pair_of(&self, key: &str) -> Option<(usize, usize)> {
        self.known.lock().expect("key table lock").get(key).copied().flatten()
    }

    /// Whether a cache key is one of this run's queries (for the books: spend of this judge); as
    /// [`Self::pair_of`], the key must have been met before.
    pub fn contains_key(&self, key: &str) -> bool {
        self.pair_of(key).is_some()
    }

    /// Records among `records` of this judge comparing two renderings of one base that this run
    /// does not fit because its design is `single` (asked under `design: paired`): their count.
    pub fn within_base_left_out(&self, records: &[VerdictRecord]) -> usize {
        if self.paired {
            return 0;
        }
        let pool = self.pool;
        records
            .iter()
            .filter(|r| match (pool.item_index(&r.a), pool.item_index(&r.b)) {
                (Some(a), Some(b)) => {
                    a != b
                        && pool.item_base[a] == pool.item_base[b]
                        && pool.prompt_of(a) == pool.prompt_of(b)
                        && self.is_key_of(&r.key, a, b)
                }
                _ => false,
            })
            .count()
    }

    /// This run's records among `records` (matched by cache key: the key of the record's own
    /// item pair), with their ordered pairs: the first record of each pair, as a pair may be
    /// stored under its own key and under panel members' names (a judge renamed in a panel).
    pub fn stored<'r>(&self, records: &'r [VerdictRecord]) -> Vec<(usize, usize, &'r VerdictRecord)> {
        let mut seen = HashSet::new();
        records
            .iter()
            .filter_map(|r| self.learn(&r.key, &r.a, &r.b).map(|(a, b)| (a, b, r)))
            .filter(|&(a, b, _)| seen.insert((a, b)))
            .collect()
    }

    /// This run's records among `records` whose item ids disagree with the query their cache key
    /// names (a hand-edited line: an id the pool lacks, an item against itself, another pair):
    /// (the key's query as item ids, the ids the record names). The run counts each by its key
    /// ([`Self::stored`]); `fit` and `report` of the folder read the ids and refuse them.
    pub fn mislabelled(&self, records: &[VerdictRecord]) -> Vec<((String, String), (String, String))> {
        let pool = self.pool;
        self.stored(records)
            .into_iter()
            .filter(|&(a, b, r)| (pool.item_index(&r.a), pool.item_index(&r.b)) != (Some(a), Some(b)))
            .map(|(a, b, r)| ((pool.items[a].id.clone(), pool.items[b].id.clone()), (r.a.clone(), r.b.clone())))
            .collect()
    }

    /// The largest cost of this run's records among `records` relative to their queries' worst
    /// case, at least 1: above 1 when its provider billed past the worst case in an earlier run
    /// ([`crate::store::budget::Budget::carry_factor`]). Only a judge with a price has one.
    pub fn carried_factor(&self, records: &[VerdictRecord]) -> f64 {
        if !self.judge.has_price() {
            return 1.0;
        }
        self.stored(records)
            .into_iter()
            .filter(|(_, _, r)| r.reply.cost_usd > 0.0)
            .map(|(a, b, r)| r.reply.cost_usd / self.judge.worst_case_usd(self.pool, a, b))
            .filter(|f| f.is_finite())
            .fold(1.0, f64::max)
    }

    /// This run's stored verdicts among `records`, in the order stored; `strong_preference_weight`
    /// weighs a strong preference's likelihood term.
    pub fn stored_verdicts(&self, records: &[VerdictRecord], strong_preference_weight: f64) -> Vec<StoredVerdict> {
        self.stored(records)
            .into_iter()
            .map(|(a, b, r)| StoredVerdict {
                a,
                b,
                y: r.reply.y,
                cost_usd: r.reply.cost_usd,
                usage: r.reply.usage,
                weight: r.weight(strong_preference_weight),
            })
            .collect()
    }

    /// The replies behind this run's stored records, for the invalid-reply limit of a resumed run
    /// (docs/live.md, "Faults"): a valid record is one reply; an invalid one is as many invalid
    /// replies as its `invalid_reason` says it was asked (`no_verdict: after 2 asks`), else one.
    /// A valid record whose first ask was invalid counts as one valid reply, so the share is a
    /// lower bound.
    pub fn stored_replies(&self, records: &[VerdictRecord]) -> crate::judge::JudgeStats {
        let mut st = crate::judge::JudgeStats::default();
        for (_, _, r) in self.stored(records) {
            let Some(note) = &r.reply.invalid_reason else {
                st.replies += 1;
                continue;
            };
            let asks = u64::from(note.asks());
            st.replies += asks;
            st.invalid_replies += asks;
            *st.invalid_by_reason.entry(note.reason.clone()).or_default() += asks;
        }
        st
    }

    /// The valid verdicts among this run's records, each with the weight of its likelihood term
    /// (`strong_preference_weight` for a strong preference, else 1).
    pub fn verdicts(&self, records: &[VerdictRecord], strong_preference_weight: f64) -> Vec<ItemVerdict> {
        self.stored(records)
            .into_iter()
            .filter_map(|(a, b, r)| r.reply.y.map(|y| ItemVerdict { a, b, y, w: r.weight(strong_preference_weight) }))
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
        allowed: None,
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
    use crate::domain::pool::Item;

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

    /// A 4-item pool: bases x = {x1, x2}, y = {y1}, z = {z1}; y1 and z1 have the same text.
    fn four_items(dir: &std::path::Path) -> Config {
        let pool = r#"{"pool_id":"p","task":"t","items":[{"id":"x1","text":"a","base":"x","quality":1.0},{"id":"x2","text":"b","base":"x","quality":2.0},{"id":"y1","text":"c","base":"y","quality":3.0},{"id":"z1","text":"c","base":"z","quality":4.0}]}"#;
        std::fs::write(dir.join("pool.jsonl"), format!("{pool}\n")).unwrap();
        let yaml =
            "name: q\nout_dir: runs\npool:\n  file: pool.jsonl\nk: 1\njudge:\n  mock:\n    mode: deterministic\n";
        std::fs::write(dir.join("q.yaml"), yaml).unwrap();
        Config::load(&dir.join("q.yaml")).unwrap()
    }

    fn record(key: &str, a: &str, b: &str) -> VerdictRecord {
        serde_json::from_value(serde_json::json!({"key": key, "pool_id": "p", "a": a, "b": b, "y": 1.0})).unwrap()
    }

    #[test]
    fn pairs_are_counted_and_listed_without_a_table_and_keys_match_by_item_ids() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = four_items(dir.path());
        let judge = crate::config::judge::make_judge(cfg.raw.judge()).unwrap();
        let q = RunQueries::new(&cfg, judge.as_ref());
        // 4·3 = 12 ordered pairs less x1↔x2 (one base) = 10; y1↔z1 (same text) are skipped.
        let listed = ordered_pairs(&cfg.pool, DesignKind::Single);
        assert_eq!(listed.len(), 10);
        assert_eq!(q.n_pairs(), 10);
        assert_eq!(q.iter().collect::<Vec<_>>(), listed);
        assert_eq!(q.skipped(), &HashSet::from([(2, 3), (3, 2)]));
        assert_eq!(q.sendable(), 8);
        let key = |a, b| judge.cache_key(&cfg.pool, a, b);
        // A record is this run's when its key is the key of its own two items, in its order.
        let records = vec![
            record(&key(2, 0), "y1", "x1"),
            record(&key(0, 2), "y1", "x1"), // key of the other order
            record("", "x1", "y1"),         // imported: no key
            record(&key(0, 1), "x1", "x2"), // within one base: not a run pair
            record(&key(3, 1), "z1", "x2"),
            record(&key(3, 1), "z1", "x2"), // a second record of a pair is not fitted again
            record(&format!("cheap:{}", key(1, 2)), "x2", "y1"), // a panel member's of this judge
            record(&format!("cheap2:{}", key(1, 2)), "x2", "y1"), // the member renamed: one pair
            record(&format!("a:b:{}", key(2, 1)), "y1", "x2"), // no member name holds `:`
        ];
        let got: Vec<(usize, usize)> = q.stored(&records).iter().map(|&(a, b, _)| (a, b)).collect();
        assert_eq!(got, vec![(2, 0), (3, 1), (1, 2)]);
        assert!(q.contains_key(&key(2, 0)) && !q.contains_key(&key(0, 2)) && !q.contains_key(&key(0, 1)));
        // A key met only in the run folder (an intent nothing closed) is known after learn_folder;
        // a key sent by the run is known once computed.
        let intent =
            serde_json::json!({"intent": 1, "key": key(1, 2), "a": "x2", "b": "y1", "attempt": 1, "reserved_usd": 0.0});
        std::fs::write(dir.path().join("intents.jsonl"), format!("{intent}\n")).unwrap();
        let q = RunQueries::new(&cfg, judge.as_ref());
        assert!(!q.contains_key(&key(1, 2)));
        q.learn_folder(dir.path());
        assert_eq!(q.pair_of(&key(1, 2)), Some((1, 2)));
        assert!(!q.contains_key(&key(2, 3)));
        assert_eq!(q.key(2, 3), key(2, 3));
        assert_eq!(q.pair_of(&key(2, 3)), Some((2, 3)));
    }

    /// A verdicts.jsonl line edited to compare an item with itself keeps its key's pair, which its
    /// intent's line names: it stays that pair's verdict (read before, it made the pair look
    /// unasked, and the run asked it again and one query past max_comparisons).
    #[test]
    fn a_line_naming_an_item_against_itself_counts_as_its_keys_pair() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = four_items(dir.path());
        let judge = crate::config::judge::make_judge(cfg.raw.judge()).unwrap();
        let q = RunQueries::new(&cfg, judge.as_ref());
        let key = judge.cache_key(&cfg.pool, 0, 3);
        let damaged = record(&key, "x1", "x1");
        std::fs::write(dir.path().join("verdicts.jsonl"), format!("{}\n", serde_json::to_string(&damaged).unwrap()))
            .unwrap();
        let intent =
            serde_json::json!({"intent": 1, "key": key, "a": "x1", "b": "z1", "attempt": 1, "reserved_usd": 0.0});
        std::fs::write(dir.path().join("intents.jsonl"), format!("{intent}\n")).unwrap();
        q.learn_folder(dir.path());
        assert_eq!(q.pair_of(&key), Some((0, 3)));
        let got: Vec<(usize, usize)> = q.stored(&[damaged]).iter().map(|&(a, b, _)| (a, b)).collect();
        assert_eq!(got, vec![(0, 3)]);
    }
}

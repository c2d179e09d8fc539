//! Paired rendering design (docs/model.md §6, paper §4 "Restoring identifiability", Proofs).
//!
//! Two renderings of one base (e.g. `terse` and `elaborated`, x = 0/1) share θ. A within-base
//! query (a, b) has η_ab = cᵀ(x_a − x_b) + κ: the quality cancels, so these comparisons read c
//! directly and break the invariance θ → θ + δx, c → c − δ that leaves c prior-selected in a
//! single-rendering design. With `design: paired` the runner first sends every within-base
//! ordered query (both orders; [`first_queries`]), then runs Algorithm 1 over between-base pairs
//! (the acquisition code only considers pairs of different bases). Rankings and top-k are over
//! bases.
//!
//! The design is valid only if renderings really share quality (the referee's main caveat,
//! a referee report on the paper): an elaboration that adds or removes content makes the tied-θ
//! model misspecified and the "identified" c an artefact.
//!
//! This module also builds the shipped example (`data/summeval_paired.jsonl`): every SummEval
//! summary becomes a base with its original text (`terse`) and a content-free elaboration
//! ([`elaborate`]: the same text between a filler opening and a filler closing sentence).

use crate::domain::pool::{Covariates, Item, Pool};
use crate::domain::rng;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashSet};

/// `design:` in a run config (docs/model.md §6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DesignKind {
    /// Algorithm 1 over all between-base pairs (default).
    #[default]
    Single,
    /// Within-base queries first (both orders), then Algorithm 1 between bases.
    Paired,
}

/// Every within-base ordered query (a, b), a ≠ b, item indices: grouped by base in base order,
/// each unordered pair followed by its reverse.
pub fn within_base_pairs(pool: &Pool) -> Vec<(usize, usize)> {
    let mut by_base: Vec<Vec<usize>> = vec![Vec::new(); pool.n_bases()];
    for (i, &b) in pool.item_base.iter().enumerate() {
        by_base[b].push(i);
    }
    let mut out = Vec::new();
    for items in &by_base {
        for (u, &a) in items.iter().enumerate() {
            for &b in &items[u + 1..] {
                out.push((a, b));
                out.push((b, a));
            }
        }
    }
    out
}

/// The within-base queries still to send before Algorithm 1 starts (at most `r`, in
/// [`within_base_pairs`] order); empty for `design: single` or once all are in `queried`.
pub fn first_queries(
    pool: &Pool,
    kind: DesignKind,
    queried: &HashSet<(usize, usize)>,
    r: usize,
) -> Vec<(usize, usize)> {
    if kind == DesignKind::Single {
        return Vec::new();
    }
    within_base_pairs(pool).into_iter().filter(|p| !queried.contains(p)).take(r).collect()
}

/// Under `orders: both`, the ordered queries whose reverse order is missing (a pair left with
/// one order, e.g. by a crash mid-batch): at most `r`, sorted. Empty under `orders: single`.
pub fn other_orders(
    queried: &HashSet<(usize, usize)>,
    orders: crate::acquire::Orders,
    r: usize,
) -> Vec<(usize, usize)> {
    if orders != crate::acquire::Orders::Both {
        return Vec::new();
    }
    let mut out: Vec<(usize, usize)> =
        queried.iter().filter(|(a, b)| !queried.contains(&(*b, *a))).map(|&(a, b)| (b, a)).collect();
    out.sort_unstable();
    out.truncate(r);
    out
}

/// Check that a paired design can identify something: some base has ≥ 2 renderings and at
/// least one covariate varies within a base.
///
/// # Errors
/// A message saying what is missing.
pub fn validate(kind: DesignKind, pool: &Pool, cov: &Covariates) -> Result<(), crate::domain::invalid::InvalidInput> {
    if kind == DesignKind::Single {
        return Ok(());
    }
    let pairs = within_base_pairs(pool);
    if pairs.is_empty() {
        return Err(format!(
            "paired needs items that share a `base` (two renderings of one answer); every item of pool {:?} is its own base",
            pool.pool_id
        ).into());
    }
    let varies = (0..cov.p()).any(|k| pairs.iter().any(|&(a, b)| cov.x[a][k] != cov.x[b][k]));
    if !varies {
        return Err(format!(
            "paired needs a covariate that differs between renderings of a base (e.g. the rendering indicator or words); covariates {:?} are constant within every base",
            cov.names
        ).into());
    }
    Ok(())
}

const OPENERS: [&str; 4] = [
    "Here is a summary of the article.",
    "What follows is a short summary of the news article.",
    "The article can be summarised as follows.",
    "This is a summary of the story reported in the article.",
];
const CLOSERS: [&str; 4] = [
    "These are the main points of the article as reported.",
    "In short, that is what the article says.",
    "That, in brief, is the content of the story.",
    "Taken together, these points summarise the article.",
];

/// A content-free elaboration of `text`: one filler opening sentence, the text unchanged, one
/// filler closing sentence (neither adds a fact). The choice among four openers and four
/// closers is keyed by `key` (e.g. pool id + base id), so it is deterministic.
pub fn elaborate(text: &str, key: &str) -> String {
    let h = rng::key64(0, &["elaborate", key]);
    let open = OPENERS[(h % 4) as usize];
    let close = CLOSERS[((h >> 8) % 4) as usize];
    format!("{open} {} {close}", text.trim())
}

/// The paired version of a single-rendering pool: every item `id` becomes base `id` with items
/// `id.terse` (the original text, covariate `elaborated` = 0) and `id.elaborated`
/// ([`elaborate`], `elaborated` = 1), both with the original gold `quality`.
///
/// # Panics
/// If an item has no text.
pub fn paired_items(pool: &Pool) -> Vec<Item> {
    let mut out = Vec::with_capacity(2 * pool.n_items());
    for it in &pool.items {
        let text = it.text.as_deref().expect("pairing needs item texts");
        for (rendering, elaborated, t) in [
            ("terse", 0.0, text.to_string()),
            ("elaborated", 1.0, elaborate(text, &format!("{}/{}", pool.pool_id, it.id))),
        ] {
            out.push(Item {
                id: format!("{}.{rendering}", it.id),
                text: Some(t),
                quality: it.quality,
                covariates: BTreeMap::from([("elaborated".to_string(), elaborated)]),
                base: Some(it.id.clone()),
                rendering: Some(rendering.to_string()),
                words: None,
                human: None,
                system: None,
            });
        }
    }
    out
}

/// One line of a pool file.
#[derive(Serialize)]
struct PoolLine<'a> {
    pool_id: &'a str,
    source: &'a str,
    items: Vec<Item>,
}

/// The JSON Lines text of the paired versions of `pools` (one pool per line), as shipped in
/// `data/summeval_paired.jsonl`.
pub fn paired_pools_jsonl(pools: &[Pool]) -> String {
    let mut s = String::new();
    for p in pools {
        let line = PoolLine { pool_id: &p.pool_id, source: &p.task, items: paired_items(p) };
        s.push_str(&serde_json::to_string(&line).expect("serialisable"));
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pair_left_with_one_order_gets_the_other_first() {
        let q: HashSet<(usize, usize)> = [(0, 1), (1, 0), (2, 3), (5, 4)].into();
        assert_eq!(other_orders(&q, crate::acquire::Orders::Both, 8), vec![(3, 2), (4, 5)]);
        assert_eq!(other_orders(&q, crate::acquire::Orders::Both, 1), vec![(3, 2)]);
        assert!(other_orders(&q, crate::acquire::Orders::Single, 8).is_empty());
    }
    use crate::domain::pool::{CovariateSpec, build_covariates, word_count};

    fn pool() -> Pool {
        let it = |id: &str, t: &str, q: f64| Item {
            id: id.into(),
            text: Some(t.into()),
            quality: Some(q),
            covariates: BTreeMap::new(),
            base: None,
            rendering: None,
            words: None,
            human: None,
            system: None,
        };
        Pool::new("p".into(), "src".into(), vec![it("A", "one two three", 3.0), it("B", "four five", 4.0)]).unwrap()
    }

    #[test]
    fn paired_pool_shares_bases_and_only_adds_filler() {
        let src = pool();
        let paired = Pool::new("p".into(), "src".into(), paired_items(&src)).unwrap();
        assert_eq!((paired.n_items(), paired.n_bases()), (4, 2));
        assert_eq!(paired.item_base, vec![0, 0, 1, 1]);
        assert_eq!(paired.base_quality(), Some(vec![3.0, 4.0]));
        let e = paired.items[1].text.as_deref().unwrap();
        assert!(e.contains(" one two three "), "{e}");
        // The filler is one of the fixed sentences: removing them gives the original back.
        let stripped = OPENERS.iter().chain(&CLOSERS).fold(e.to_string(), |s, f| s.replace(f, ""));
        assert_eq!(stripped.trim(), "one two three");
        assert!(word_count(e) > word_count("one two three") + 8);
        assert_eq!(elaborate("x", "k"), elaborate("x", "k"));
    }

    #[test]
    fn within_base_queries_come_first_in_both_orders() {
        let paired = Pool::new("p".into(), "src".into(), paired_items(&pool())).unwrap();
        assert_eq!(within_base_pairs(&paired), vec![(0, 1), (1, 0), (2, 3), (3, 2)]);
        let mut q = HashSet::new();
        q.insert((0, 1));
        assert_eq!(first_queries(&paired, DesignKind::Paired, &q, 2), vec![(1, 0), (2, 3)]);
        assert!(first_queries(&paired, DesignKind::Single, &q, 8).is_empty());
        assert!(within_base_pairs(&pool()).is_empty());
    }

    #[test]
    fn validation_names_what_is_missing() {
        let single = pool();
        let cov = build_covariates(&single, &[CovariateSpec::parse("words").unwrap()]).unwrap();
        assert!(validate(DesignKind::Paired, &single, &cov).unwrap_err().0.contains("share a `base`"));
        let paired = Pool::new("p".into(), "src".into(), paired_items(&single)).unwrap();
        let none = Covariates::none(4);
        assert!(validate(DesignKind::Paired, &paired, &none).unwrap_err().0.contains("constant within every base"));
        let cov = build_covariates(&paired, &[CovariateSpec::parse("elaborated").unwrap()]).unwrap();
        validate(DesignKind::Paired, &paired, &cov).unwrap();
    }
}

//! Judge bias audit: the swap test, equal-quality probes and order averaging (docs/model.md §4, tutorial
//! "Judging the Judge"). Pure: pairs and observed verdicts in, tables and rates out.
//!
//! A **pair** is system X against system Y on one task; a **probe** is a pair whose two answers
//! have equal quality and differ in length (or in a content-free rendering, [`crate::analysis::render`]).
//! Each is judged in both orders, giving y(X first) = P(X wins | X shown first) and
//! y(Y first) = P(Y wins | Y shown first), each in [0, 1] (1, 0, ½ for a tie, or soft).
//!
//! - **Ordered verdict**: y > ½ → the first-shown system wins, y < ½ → the second, y = ½ → tie.
//! - **Flip**: the verdict with X first and the verdict with Y first name different winners
//!   (a tie in one order and a win in the other also counts). Position-bias rate = flips / pairs.
//! - **Order-averaged verdict**: P(X wins) = (y(X first) + 1 − y(Y first)) / 2, X if > ½, Y if
//!   < ½, **tie** if = ½ (|P − ½| ≤ 1e-12), i.e. when a hard-verdict judge's two orders disagree.
//!   For a judge that states its latent score (the judge's `score_margin`, as the
//!   deterministic tutorial mock) the verdict follows the tutorial's `corrected_winner`: the sign
//!   of Δ = (m(X first) − m(Y first)) / 2 = mean score of X over its two slots − mean score of Y,
//!   in which the slot bonus cancels (|Δ| ≤ 1e-9·(1 + |m|) is a tie). For a Bradley–Terry judge
//!   with soft verdicts σ(d ± κ) the outcome average has the sign of d, so both rules agree.
//! - **True winner**: the pair's gold `winner`, else the side with the higher gold `quality`;
//!   unknown when qualities are equal or missing (such pairs are left out of disagreement).
//! - **Disagreement** of a verdict with the truth: 1 if it names the other system, ½ for a tie
//!   (the expected error of breaking the tie with a fair coin), 0 if right. Naive verdict = the
//!   X-first verdict (X always shown first). Both rates use the same pairs (truth known, both
//!   verdicts valid). The order-averaged flip rate re-computes the averaged verdict with X and Y
//!   relabelled and counts changed winners: 0 by construction.
//! - **Longer-wins rate**: over probes whose two sides differ in words, the order-averaged
//!   verdict picks the longer side (a tie counts ½). **Rendered-wins rate**: the same for probes
//!   with exactly one rendered side (e.g. `elaborated`, `markdown`).
//! - **Intervals**: Wilson score intervals at `level` (default 95%) for a count out of n (the
//!   formula is also valid for the half counts that ties produce).
//!
//! The position-bias swap test runs on the `pair` entries, or on the probes when there are none.

use crate::analysis::render::RenderKind;
use crate::domain::pool::{Item, Pool, word_count};
use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, Normal};
use std::collections::{BTreeMap, HashMap};

/// One system of a pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Label {
    /// System X (shown first in the naive verdict).
    X,
    /// System Y.
    Y,
}

impl Label {
    /// "X" or "Y".
    pub fn name(self) -> &'static str {
        match self {
            Label::X => "X",
            Label::Y => "Y",
        }
    }
}

/// A verdict: one system wins, or a tie.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Winner {
    /// X wins.
    X,
    /// Y wins.
    Y,
    /// Neither wins: a tie (outcome y = 0.5, or an order-averaged margin of 0).
    Tie,
}

impl Winner {
    /// The winner named by a label.
    pub fn of(l: Label) -> Self {
        match l {
            Label::X => Winner::X,
            Label::Y => Winner::Y,
        }
    }

    /// X and Y exchanged (relabelling the pair).
    pub fn swapped(self) -> Self {
        match self {
            Winner::X => Winner::Y,
            Winner::Y => Winner::X,
            Winner::Tie => Winner::Tie,
        }
    }

    /// "X", "Y" or "tie".
    pub fn name(self) -> &'static str {
        match self {
            Winner::X => "X",
            Winner::Y => "Y",
            Winner::Tie => "tie",
        }
    }

    /// Disagreement with the true winner: 0 right, ½ tie, 1 wrong.
    pub fn miss(self, truth: Label) -> f64 {
        if self == Winner::of(truth) {
            0.0
        } else if self == Winner::Tie {
            0.5
        } else {
            1.0
        }
    }
}

/// `pair` (swap test, order averaging) or `probe` (equal quality; verbosity / rendering bias).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PairKind {
    /// A comparison whose true winner may be known.
    #[default]
    Pair,
    /// Equal quality, different length or rendering.
    Probe,
}

/// One side of a pair as written in a pairs file.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Side {
    /// Item id (default `X` / `Y`); part of the cache key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The answer text (needed by live judges).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Gold quality, any real scale (mock judges, true winner).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quality: Option<f64>,
    /// Length in words, when there is no text (with text it must equal the whitespace word count).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub words: Option<f64>,
    /// Name of the content-free rendering this side is (e.g. `elaborated`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rendering: Option<String>,
}

impl Side {
    /// Words: `words`, else the whitespace word count of `text` (validated to exist).
    pub fn word_count(&self) -> f64 {
        self.words.unwrap_or_else(|| self.text.as_deref().map(word_count).unwrap_or(0) as f64)
    }
}

/// One line of a pairs file: `{"id", "task"?, "kind"?, "x": Side, "y": Side, "winner"?}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PairSpec {
    /// Unique id (pool id of the pair's two-item pool; part of the cache key).
    pub id: String,
    /// The prompt both systems answered (default empty).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    /// `pair` (default) or `probe`.
    #[serde(default)]
    pub kind: PairKind,
    /// System X.
    pub x: Side,
    /// System Y.
    pub y: Side,
    /// Gold winner (`x` or `y`) when known without qualities (e.g. LLMBar labels).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub winner: Option<Label>,
}

impl PairSpec {
    /// The side of a label.
    pub fn side(&self, l: Label) -> &Side {
        match l {
            Label::X => &self.x,
            Label::Y => &self.y,
        }
    }

    /// Item id of a side (`X` / `Y` by default).
    pub fn item_id(&self, l: Label) -> String {
        self.side(l).id.clone().unwrap_or_else(|| l.name().to_owned())
    }

    /// Check the rules of the pairs-file format (docs/audit.md).
    ///
    /// # Errors
    /// A message naming the field and what was expected.
    pub fn validate(&self) -> Result<(), crate::domain::invalid::InvalidInput> {
        if self.id.trim().is_empty() {
            return Err("\"id\" is empty; expected a unique non-empty id".into());
        }
        for (l, s) in [(Label::X, &self.x), (Label::Y, &self.y)] {
            let k = l.name().to_lowercase();
            if s.text.is_none() && s.words.is_none() {
                return Err(format!("{k}: needs \"text\" or \"words\"").into());
            }
            if let Some(w) = s.words {
                if !(w >= 0.0 && w.is_finite()) {
                    return Err(format!("{k}.words = {}; expected a number ≥ 0", crate::domain::fmt::value(w)).into());
                }
                if w > crate::domain::pool::MAX_COVARIATE {
                    return Err(format!("{k}.words = {w:e} is too large (≤ 1e100: the bias fit squares it)").into());
                }
                if let Some(t) = &s.text
                    && word_count(t) as f64 != w
                {
                    return Err(format!(
                        "{k}.words = {w} but {k}.text has {} whitespace words; give one of them, or make them agree",
                        word_count(t)
                    )
                    .into());
                }
            }
            if let Some(q) = s.quality
                && !q.is_finite()
            {
                return Err(format!("{k}.quality = {q} is not finite").into());
            }
            if s.id.as_deref().is_some_and(|i| i.is_empty()) {
                return Err(format!("{k}.id is empty").into());
            }
        }
        if self.item_id(Label::X) == self.item_id(Label::Y) {
            return Err(
                format!("x and y have the same id {:?}; expected two different ids", self.item_id(Label::X)).into()
            );
        }
        let (qx, qy) = (self.x.quality, self.y.quality);
        match self.kind {
            PairKind::Probe => {
                if self.winner.is_some() {
                    return Err("a probe has no winner (its two sides are of equal quality); remove \"winner\" or use kind \"pair\"".into());
                }
                if let (Some(a), Some(b)) = (qx, qy)
                    && a != b
                {
                    return Err(format!(
                        "probe with x.quality = {a} ≠ y.quality = {b}; probes must have equal quality (use kind \"pair\")"
                    ).into());
                }
            }
            PairKind::Pair => {
                if let (Some(w), Some(a), Some(b)) = (self.winner, qx, qy) {
                    let by_q = if a > b {
                        Some(Label::X)
                    } else if b > a {
                        Some(Label::Y)
                    } else {
                        None
                    };
                    if by_q != Some(w) {
                        return Err(
                            // As the file writes it (`"winner": "x"`).
                            format!(
                                "winner {:?} contradicts x.quality = {a}, y.quality = {b}",
                                w.name().to_lowercase()
                            )
                            .into(),
                        );
                    }
                }
            }
        }
        Ok(())
    }

    /// The true winner: `winner`, else the higher gold quality; `None` when unknown or equal.
    pub fn truth(&self) -> Option<Label> {
        if self.kind == PairKind::Probe {
            return None;
        }
        if self.winner.is_some() {
            return self.winner;
        }
        match (self.x.quality, self.y.quality) {
            (Some(a), Some(b)) if a > b => Some(Label::X),
            (Some(a), Some(b)) if b > a => Some(Label::Y),
            _ => None,
        }
    }

    /// The side with more words; `None` when equal.
    pub fn longer(&self) -> Option<Label> {
        let (a, b) = (self.x.word_count(), self.y.word_count());
        if a > b {
            Some(Label::X)
        } else if b > a {
            Some(Label::Y)
        } else {
            None
        }
    }

    /// The rendered side when exactly one side carries a `rendering`.
    pub fn rendered(&self) -> Option<Label> {
        match (&self.x.rendering, &self.y.rendering) {
            (Some(_), None) => Some(Label::X),
            (None, Some(_)) => Some(Label::Y),
            _ => None,
        }
    }

    /// The pair as a two-item pool (X is item 0, Y item 1; pool id = pair id, task = the pair's
    /// task), so any judge and the verdict cache work unchanged. A side without
    /// text carries its length as the `words` covariate (read by the mock judge).
    ///
    /// # Errors
    /// The pool's validation message (call [`PairSpec::validate`] first).
    pub fn to_pool(&self) -> Result<Pool, crate::domain::invalid::InvalidInput> {
        let item = |l: Label| {
            let s = self.side(l);
            let mut covariates = BTreeMap::new();
            if s.text.is_none() {
                covariates.insert("words".to_owned(), s.word_count());
            }
            Item {
                id: self.item_id(l),
                text: s.text.clone(),
                quality: s.quality,
                covariates,
                base: None,
                rendering: s.rendering.clone(),
                words: None,
                human: None,
                system: None,
            }
        };
        Pool::new(self.id.clone(), self.task.clone().unwrap_or_default(), vec![item(Label::X), item(Label::Y)])
            .map_err(|e| e.to_string().into())
    }
}

/// A pairs-file error: 1-based line and message.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("line {line}: {msg}")]
pub struct PairsError {
    /// 1-based line.
    pub line: usize,
    /// What is wrong and what was expected.
    pub msg: String,
}

/// Parse and validate a pairs file (JSON Lines, one [`PairSpec`] per line; blank lines skipped;
/// ids unique).
///
/// # Errors
/// [`PairsError`] naming the line.
pub fn parse_pairs(text: &str) -> Result<Vec<PairSpec>, PairsError> {
    let mut out = Vec::new();
    let mut seen: HashMap<String, usize> = HashMap::new();
    for (i, line) in text.lines().enumerate() {
        let ln = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        // The shared reader: the failing field and its column (serde's own text added a second
        // "line 1" beside the file's line).
        let p: PairSpec = crate::domain::json::from_str(line).map_err(|e| PairsError {
            line: ln,
            msg: format!(
                "{}; expected {{\"id\", \"task\"?, \"kind\"?: \"pair\"|\"probe\", \"x\": {{\"id\"?, \"text\"?, \"quality\"?, \"words\"?, \"rendering\"?}}, \"y\": {{...}}, \"winner\"?: \"x\"|\"y\"}}",
                crate::domain::text::not_json_lines(line).unwrap_or_else(|| e.to_string())
            ),
        })?;
        p.validate().map_err(|msg| PairsError { line: ln, msg: format!("pair {:?}: {msg}", p.id) })?;
        // Each pair is judged as a pool of its two answers: refused here, by line, when it would
        // not make one (a quality or word count beyond what the model holds).
        p.to_pool().map_err(|e| PairsError { line: ln, msg: format!("pair {:?}: {e}", p.id) })?;
        if let Some(prev) = seen.insert(p.id.clone(), ln) {
            return Err(PairsError { line: ln, msg: format!("duplicate id {:?} (first on line {prev})", p.id) });
        }
        out.push(p);
    }
    if out.is_empty() {
        return Err(PairsError { line: 1, msg: "the file holds no pair".into() });
    }
    Ok(out)
}

/// Probes built from a pool: each item with text against its content-free `kind` rendering
/// (X = the original item, Y = the rendering, id `<item>~<kind>`), both given the item's gold
/// quality: the probes **assume** the rendering has the quality of the original. At most
/// `max_items` items, in pool order. Returns the probes and notes on skipped items.
pub fn probes_from_pool(pool: &Pool, kind: RenderKind, max_items: Option<usize>) -> (Vec<PairSpec>, Vec<String>) {
    let mut out = Vec::new();
    let mut notes = Vec::new();
    for it in pool.items.iter().take(max_items.unwrap_or(usize::MAX)) {
        let Some(text) = &it.text else {
            notes.push(format!("item {:?} has no text: no probe", it.id));
            continue;
        };
        let rendered = kind.apply(text);
        if rendered == *text {
            notes.push(format!("item {:?}: the {} rendering equals the original: no probe", it.id, kind.name()));
            continue;
        }
        let rid = format!("{}~{}", it.id, kind.name());
        out.push(PairSpec {
            id: rid.clone(),
            task: Some(pool.task.clone()),
            kind: PairKind::Probe,
            x: Side {
                id: Some(it.id.clone()),
                text: Some(text.clone()),
                quality: it.quality,
                words: None,
                rendering: None,
            },
            y: Side {
                id: Some(rid),
                text: Some(rendered),
                quality: it.quality,
                words: None,
                rendering: Some(kind.name().to_owned()),
            },
            winner: None,
        });
    }
    (out, notes)
}

/// Notes for the pairs of a pairs file whose two texts are the same words
/// ([`crate::domain::text::words_of`]): a judge cannot tell them apart, so their verdicts show
/// the position alone (a flip whenever the judge keeps to a side) and a tie at best against
/// their truth. They are kept, as the file gives them (identical texts are the purest swap
/// test), and named.
pub fn same_text_notes(pairs: &[PairSpec]) -> Vec<String> {
    use crate::domain::text::words_of;
    let ids: Vec<&str> = pairs
        .iter()
        .filter(|p| match (&p.x.text, &p.y.text) {
            (Some(x), Some(y)) => words_of(x) == words_of(y),
            _ => false,
        })
        .map(|p| p.id.as_str())
        .collect();
    if ids.is_empty() {
        return Vec::new();
    }
    vec![format!(
        "{} ({}) {} the same text in x and y, up to whitespace: a judge cannot tell them apart, so {} verdicts show the position alone",
        crate::domain::fmt::count(ids.len(), "pair"),
        ids.join(", "),
        if ids.len() == 1 { "has" } else { "have" },
        if ids.len() == 1 { "its" } else { "their" }
    )]
}

/// `n` distinct unordered pairs of a pool's items with text, drawn with `rng` (a seeded shuffle
/// of all pairs, then the first n, listed in pool order). Id `<a>:<b>`; the true winner is the
/// higher gold quality when the pool has it. Pairs of items with identical text
/// ([`Pool::identical_texts`]) are not drawn: no judge can tell them apart, so their verdicts
/// show the position alone, as `run` does not send them.
pub fn pairs_from_pool(pool: &Pool, n: usize, rng: &mut crate::domain::rng::ChaCha8Rng) -> Vec<PairSpec> {
    use rand::seq::SliceRandom;
    let idx: Vec<usize> = (0..pool.n_items()).filter(|i| pool.items[*i].text.is_some()).collect();
    let same: std::collections::HashSet<(usize, usize)> = pool
        .identical_texts()
        .iter()
        .flat_map(|g| g.iter().flat_map(move |&a| g.iter().filter(move |&&b| b > a).map(move |&b| (a, b))))
        .collect();
    let mut all: Vec<(usize, usize)> = idx
        .iter()
        .flat_map(|&a| idx.iter().filter(move |&&b| b > a).map(move |&b| (a, b)))
        .filter(|p| !same.contains(p))
        .collect();
    all.shuffle(rng);
    all.truncate(n);
    all.sort_unstable();
    let side = |i: usize| {
        let it = &pool.items[i];
        Side { id: Some(it.id.clone()), text: it.text.clone(), quality: it.quality, words: None, rendering: None }
    };
    all.into_iter()
        .map(|(a, b)| PairSpec {
            id: format!("{}:{}", pool.items[a].id, pool.items[b].id),
            task: Some(pool.task.clone()),
            kind: PairKind::Pair,
            x: side(a),
            y: side(b),
            winner: None,
        })
        .collect()
}

/// What the judge said about one pair, in both orders.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BothOrders {
    /// y with X shown first = P(X wins); `None` if missing or invalid.
    pub y_xfirst: Option<f64>,
    /// y with Y shown first = P(Y wins); `None` if missing or invalid.
    pub y_yfirst: Option<f64>,
    /// The judge's latent margin with X first (score units; the judge's `score_margin`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub margin_xfirst: Option<f64>,
    /// The judge's latent margin with Y first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub margin_yfirst: Option<f64>,
    /// Why a verdict is missing (failed query, invalid reply).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missing: Option<String>,
}

impl BothOrders {
    /// X and Y exchanged.
    pub fn swapped(&self) -> Self {
        BothOrders {
            y_xfirst: self.y_yfirst,
            y_yfirst: self.y_xfirst,
            margin_xfirst: self.margin_yfirst,
            margin_yfirst: self.margin_xfirst,
            missing: self.missing.clone(),
        }
    }
}

/// Which rule made the order-averaged verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AverageRule {
    /// Sign of the mean latent score difference (tutorial `corrected_winner`).
    Score,
    /// P(X wins) = (y(X first) + 1 − y(Y first)) / 2.
    Outcome,
}

/// The order-averaged verdict of one pair.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Averaged {
    /// P(X wins) under the average (1, 0 or ½ for the score rule).
    pub p_x: f64,
    /// Δ = mean score of X − mean score of Y (score rule only; judge's score units).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delta: Option<f64>,
    /// The verdict.
    pub winner: Winner,
    /// The rule used.
    pub rule: AverageRule,
}

/// The verdict of one ordered query: y > ½ → `first` wins, y < ½ → the other, y = ½ → tie.
pub fn ordered_winner(y: f64, first: Label) -> Winner {
    let w = if y > 0.5 {
        Winner::X
    } else if y < 0.5 {
        Winner::Y
    } else {
        Winner::Tie
    };
    if first == Label::X { w } else { w.swapped() }
}

/// The order-averaged verdict (module docs): the score rule when both margins are known, else the
/// outcome average; `None` when a verdict is missing.
pub fn order_averaged(o: &BothOrders) -> Option<Averaged> {
    if let (Some(mx), Some(my)) = (o.margin_xfirst, o.margin_yfirst) {
        let delta = (mx - my) / 2.0;
        let tol = 1e-9 * (1.0 + mx.abs() + my.abs());
        let (winner, p_x) = if delta > tol {
            (Winner::X, 1.0)
        } else if delta < -tol {
            (Winner::Y, 0.0)
        } else {
            (Winner::Tie, 0.5)
        };
        return Some(Averaged { p_x, delta: Some(delta), winner, rule: AverageRule::Score });
    }
    let (a, b) = (o.y_xfirst?, o.y_yfirst?);
    let p_x = (a + 1.0 - b) / 2.0;
    let winner = if p_x > 0.5 + 1e-12 {
        Winner::X
    } else if p_x < 0.5 - 1e-12 {
        Winner::Y
    } else {
        Winner::Tie
    };
    Some(Averaged { p_x, delta: None, winner, rule: AverageRule::Outcome })
}

/// Wilson score interval for `count` successes out of `n` at confidence `level` (e.g. 0.95):
/// (p̂ + z²/2n ± z·√(p̂(1 − p̂)/n + z²/4n²)) / (1 + z²/n), z = Φ⁻¹(1 − (1 − level)/2), clamped to
/// [0, 1]. Valid for half counts (ties).
///
/// # Panics
/// If `n` = 0 or `level` is not in (0, 1).
pub fn wilson(count: f64, n: usize, level: f64) -> (f64, f64) {
    assert!(n > 0, "wilson interval of 0 trials");
    assert!(level > 0.0 && level < 1.0, "level {level} not in (0, 1)");
    let z = Normal::standard().inverse_cdf(1.0 - (1.0 - level) / 2.0);
    let nf = n as f64;
    let p = count / nf;
    let z2 = z * z;
    let centre = (p + z2 / (2.0 * nf)) / (1.0 + z2 / nf);
    let half = z / (1.0 + z2 / nf) * (p * (1.0 - p) / nf + z2 / (4.0 * nf * nf)).max(0.0).sqrt();
    ((centre - half).max(0.0), (centre + half).min(1.0))
}

/// A rate with its interval: `count` out of `n` (count may be a half number because of ties).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rate {
    /// Events (ties count ½).
    pub count: f64,
    /// Pairs counted.
    pub n: usize,
    /// count / n (`None` when n = 0).
    pub rate: Option<f64>,
    /// Lower end of the Wilson interval.
    pub lo: Option<f64>,
    /// Upper end of the Wilson interval.
    pub hi: Option<f64>,
    /// Confidence level of the interval.
    pub level: f64,
}

fn fmt_count(c: f64) -> String {
    if c.fract() == 0.0 { format!("{c:.0}") } else { format!("{c}") }
}

impl Rate {
    /// A rate with its Wilson interval at `level`.
    pub fn new(count: f64, n: usize, level: f64) -> Self {
        // An empty float sum is −0 (IEEE's additive identity): no events is 0.
        let count = count + 0.0;
        if n == 0 {
            return Rate { count, n, rate: None, lo: None, hi: None, level };
        }
        let (lo, hi) = wilson(count, n, level);
        Rate { count, n, rate: Some(count / n as f64), lo: Some(lo), hi: Some(hi), level }
    }

    /// `7/12 = 0.58` (tutorial style).
    pub fn fraction(&self) -> String {
        match self.rate {
            Some(r) => format!("{}/{} = {r:.2}", fmt_count(self.count), self.n),
            None => format!("{}/0 (none)", fmt_count(self.count)),
        }
    }

    /// `95% CI [0.32, 0.81]` (Wilson), or empty when n = 0.
    pub fn interval(&self) -> String {
        match (self.lo, self.hi) {
            (Some(lo), Some(hi)) => format!("{:.0}% CI [{lo:.2}, {hi:.2}]", self.level * 100.0),
            _ => String::new(),
        }
    }
}

/// One side, as shown in the tables and audit.json.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SideSummary {
    /// Item id.
    pub id: String,
    /// Gold quality.
    pub quality: Option<f64>,
    /// Length of this side's answer in words (its `words` field, else the whitespace word count).
    pub words: f64,
    /// Rendering name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rendering: Option<String>,
}

/// Everything measured on one pair.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PairRow {
    /// Pair id.
    pub id: String,
    /// Pair or probe.
    pub kind: PairKind,
    /// System X.
    pub x: SideSummary,
    /// System Y.
    pub y: SideSummary,
    /// The judge's observations.
    pub observation: BothOrders,
    /// Verdict with X shown first.
    pub verdict_xfirst: Option<Winner>,
    /// Verdict with Y shown first.
    pub verdict_yfirst: Option<Winner>,
    /// The two verdicts differ.
    pub flip: Option<bool>,
    /// True winner.
    pub truth: Option<Label>,
    /// The order-averaged verdict.
    pub averaged: Option<Averaged>,
    /// The averaged verdict changes when X and Y are relabelled (never, by construction).
    pub averaged_flip: Option<bool>,
    /// The longer side.
    pub longer: Option<Label>,
    /// The rendered side.
    pub rendered: Option<Label>,
}

/// A pair whose order-averaged verdict still disagrees with the truth.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Survivor {
    /// Pair id.
    pub id: String,
    /// The order-averaged verdict.
    pub averaged: Winner,
    /// The true winner.
    pub truth: Label,
    /// The naive verdict was wrong too (not fixed, rather than broken, by averaging).
    pub naive_wrong: bool,
    /// The averaged winner is the longer answer (a verbosity error).
    pub longer_won: bool,
}

/// Position bias (swap test).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PositionResult {
    /// Which entries the swap test ran on.
    pub on: PairKind,
    /// Flips / pairs with both verdicts.
    pub flips: Rate,
    /// Verdicts won by the answer shown first / verdicts that name a winner, over both orders
    /// of the entries the swap test ran on (ties and invalid verdicts left out).
    pub first_shown: Rate,
}

/// Verbosity / rendering bias (probes, order-averaged verdicts).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VerbosityResult {
    /// Probes with an order-averaged verdict.
    pub probes: usize,
    /// Longer side wins / probes whose sides differ in words.
    pub longer_wins: Rate,
    /// Rendered side wins / probes with one rendered side.
    pub rendered_wins: Option<Rate>,
    /// Probes whose sides have equal words (left out of longer-wins).
    pub equal_words: usize,
}

/// Order averaging against the truth.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AveragingResult {
    /// Naive (X always first) disagreement with the truth.
    pub naive_disagreement: Rate,
    /// Order-averaged disagreement with the truth.
    pub averaged_disagreement: Rate,
    /// Order-averaged verdicts that change when X and Y are relabelled.
    pub averaged_flips: Rate,
    /// Pairs the averaging does not fix (averaged verdict ≠ truth).
    pub survivors: Vec<Survivor>,
}

/// A pair left out of the rates.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Excluded {
    /// Pair id.
    pub id: String,
    /// Which order lacks a verdict and why, e.g. `X first: no verdict`.
    pub reason: String,
}

/// The whole audit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AuditReport {
    /// Confidence level of every interval.
    pub level: f64,
    /// Position bias.
    pub position: PositionResult,
    /// Verbosity bias (when there are probes).
    pub verbosity: Option<VerbosityResult>,
    /// Order averaging.
    pub averaging: AveragingResult,
    /// Pairs with a missing verdict.
    pub excluded: Vec<Excluded>,
    /// Every pair, in input order.
    pub rows: Vec<PairRow>,
}

fn summary(p: &PairSpec, l: Label) -> SideSummary {
    let s = p.side(l);
    SideSummary { id: p.item_id(l), quality: s.quality, words: s.word_count(), rendering: s.rendering.clone() }
}

/// Measure position bias, verbosity bias and order averaging (module docs) from both-order
/// observations; `obs[i]` belongs to `pairs[i]`. Intervals at `level`.
///
/// # Panics
/// If the lengths differ or `level` is not in (0, 1).
pub fn analyse(pairs: &[PairSpec], obs: &[BothOrders], level: f64) -> AuditReport {
    assert_eq!(pairs.len(), obs.len(), "one observation per pair");
    assert!(level > 0.0 && level < 1.0, "level {level} not in (0, 1)");
    let mut rows = Vec::with_capacity(pairs.len());
    let mut excluded = Vec::new();
    for (p, o) in pairs.iter().zip(obs) {
        let vx = o.y_xfirst.map(|y| ordered_winner(y, Label::X));
        let vy = o.y_yfirst.map(|y| ordered_winner(y, Label::Y));
        let averaged = order_averaged(o);
        let averaged_flip = averaged.and_then(|a| order_averaged(&o.swapped()).map(|s| s.winner.swapped() != a.winner));
        if vx.is_none() || vy.is_none() {
            let which = match (vx, vy) {
                (None, None) => "both orders",
                (None, _) => "X first",
                _ => "Y first",
            };
            let why = o.missing.clone().unwrap_or_else(|| "no verdict".into());
            excluded.push(Excluded { id: p.id.clone(), reason: format!("{which}: {why}") });
        }
        rows.push(PairRow {
            id: p.id.clone(),
            kind: p.kind,
            x: summary(p, Label::X),
            y: summary(p, Label::Y),
            observation: o.clone(),
            verdict_xfirst: vx,
            verdict_yfirst: vy,
            flip: vx.zip(vy).map(|(a, b)| a != b),
            truth: p.truth(),
            averaged,
            averaged_flip,
            longer: p.longer(),
            rendered: p.rendered(),
        });
    }
    let on = if pairs.iter().any(|p| p.kind == PairKind::Pair) { PairKind::Pair } else { PairKind::Probe };
    let swap: Vec<&PairRow> = rows.iter().filter(|r| r.kind == on && r.flip.is_some()).collect();
    let flips = Rate::new(swap.iter().filter(|r| r.flip == Some(true)).count() as f64, swap.len(), level);
    let averaged_flips =
        Rate::new(swap.iter().filter(|r| r.averaged_flip == Some(true)).count() as f64, swap.len(), level);

    let judged: Vec<&PairRow> =
        rows.iter().filter(|r| r.kind == PairKind::Pair && r.truth.is_some() && r.flip.is_some()).collect();
    let (mut naive, mut avg) = (0.0, 0.0);
    let mut survivors = Vec::new();
    for r in &judged {
        let (t, a) = (r.truth.expect("filtered"), r.averaged.expect("both verdicts").winner);
        let naive_miss = r.verdict_xfirst.expect("both verdicts").miss(t);
        naive += naive_miss;
        avg += a.miss(t);
        if a.miss(t) > 0.0 {
            survivors.push(Survivor {
                id: r.id.clone(),
                averaged: a,
                truth: t,
                naive_wrong: naive_miss > 0.0,
                longer_won: r.longer.is_some_and(|l| a == Winner::of(l)),
            });
        }
    }
    let averaging = AveragingResult {
        naive_disagreement: Rate::new(naive, judged.len(), level),
        averaged_disagreement: Rate::new(avg, judged.len(), level),
        averaged_flips,
        survivors,
    };

    let probes: Vec<&PairRow> = rows.iter().filter(|r| r.kind == PairKind::Probe && r.averaged.is_some()).collect();
    let verbosity = (!probes.is_empty()).then(|| {
        let wins = |f: &dyn Fn(&PairRow) -> Option<Label>| {
            let with: Vec<(&PairRow, Label)> = probes.iter().filter_map(|r| f(r).map(|l| (*r, l))).collect();
            let c: f64 = with.iter().map(|(r, l)| 1.0 - r.averaged.expect("filtered").winner.miss(*l)).sum();
            (c, with.len())
        };
        let (lc, ln) = wins(&|r| r.longer);
        let (rc, rn) = wins(&|r| r.rendered);
        VerbosityResult {
            probes: probes.len(),
            longer_wins: Rate::new(lc, ln, level),
            rendered_wins: (rn > 0).then(|| Rate::new(rc, rn, level)),
            equal_words: probes.iter().filter(|r| r.longer.is_none()).count(),
        }
    });
    let (mut first, mut decided) = (0usize, 0usize);
    for r in rows.iter().filter(|r| r.kind == on) {
        for (verdict, first_side) in [(r.verdict_xfirst, Winner::X), (r.verdict_yfirst, Winner::Y)] {
            if let Some(w) = verdict.filter(|w| *w != Winner::Tie) {
                decided += 1;
                first += usize::from(w == first_side);
            }
        }
    }
    let first_shown = Rate::new(first as f64, decided, level);
    AuditReport { level, position: PositionResult { on, flips, first_shown }, verbosity, averaging, excluded, rows }
}

#[cfg(test)]
pub(crate) mod testutil {
    //! The tutorial's audit, judged by the deterministic mock without the async driver.
    use super::*;
    use crate::judge::JudgeInfo;
    use crate::judge::mock::{MockConfig, MockJudge};

    pub(crate) const TUTORIAL: &str = include_str!("../../data/tutorial_pairs.jsonl");

    /// Both-order observations from a mock judge, without the async driver.
    pub(crate) fn observe(j: &MockJudge, pairs: &[PairSpec]) -> Vec<BothOrders> {
        pairs
            .iter()
            .map(|p| {
                let pool = p.to_pool().unwrap();
                BothOrders {
                    y_xfirst: Some(j.outcome(&pool, 0, 1)),
                    y_yfirst: Some(j.outcome(&pool, 1, 0)),
                    margin_xfirst: j.score_margin(&pool, 0, 1),
                    margin_yfirst: j.score_margin(&pool, 1, 0),
                    missing: None,
                }
            })
            .collect()
    }

    pub(crate) fn tutorial(pos_bias: f64, verb_per_word: f64) -> AuditReport {
        let pairs = parse_pairs(TUTORIAL).unwrap();
        let j = MockJudge::new(MockConfig { pos_bias, verb_per_word, ..Default::default() }).unwrap();
        analyse(&pairs, &observe(&j, &pairs), 0.95)
    }
}

#[cfg(test)]
mod tests {
    use super::testutil::{TUTORIAL, observe, tutorial};
    use super::*;
    use crate::judge::mock::{MockConfig, MockJudge, MockMode};

    #[test]
    fn tutorial_numbers_exactly() {
        // Tutorial: POS_BIAS = 1.00, VERB_PER_WORD = 0.02 on its 12 pairs and 5 probes.
        let r = tutorial(1.0, 0.02);
        assert_eq!(r.position.on, PairKind::Pair);
        assert_eq!((r.position.flips.count, r.position.flips.n), (7.0, 12));
        assert_eq!(r.position.flips.fraction(), "7/12 = 0.58");
        let v = r.verbosity.as_ref().unwrap();
        assert_eq!(v.longer_wins.fraction(), "5/5 = 1.00");
        assert_eq!(r.averaging.naive_disagreement.fraction(), "5/12 = 0.42");
        assert_eq!(r.averaging.averaged_disagreement.fraction(), "1/12 = 0.08");
        assert_eq!(r.averaging.averaged_flips.fraction(), "0/12 = 0.00");
        let surv: Vec<&str> = r.averaging.survivors.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(surv, ["p11"]);
        let s = &r.averaging.survivors[0];
        assert!(s.naive_wrong && s.longer_won && s.averaged == Winner::X && s.truth == Label::Y);
        // The flipping pairs of the tutorial's table, and the X-1st / Y-1st / true columns.
        let flipped: Vec<&str> =
            r.rows.iter().filter(|x| x.kind == PairKind::Pair && x.flip == Some(true)).map(|x| x.id.as_str()).collect();
        assert_eq!(flipped, ["p01", "p02", "p03", "p04", "p09", "p10", "p11"]);
        let cols: String = r
            .rows
            .iter()
            .filter(|x| x.kind == PairKind::Pair)
            .map(|x| {
                let w = |v: Option<Winner>| v.map_or("-", Winner::name);
                format!("{}{}{}", w(x.verdict_xfirst), w(x.verdict_yfirst), x.truth.map_or("?", Label::name))
            })
            .collect::<Vec<_>>()
            .join(" ");
        assert_eq!(cols, "XYY XYY XYY XYY XXX XXX YYY YYY XYX XYX XYY XXX");
        // The order-averaged verdict used the scores (tutorial corrected_winner): p11's Δ =
        // (5 + 0.02·70) − (6 + 0.02·15) = 0.1.
        let p11 = r.rows.iter().find(|x| x.id == "p11").unwrap().averaged.unwrap();
        assert_eq!(p11.rule, AverageRule::Score);
        assert!((p11.delta.unwrap() - 0.1).abs() < 1e-12);
    }

    #[test]
    fn ablation_no_position_bias_no_flips() {
        // Tutorial: "Set POS_BIAS to zero and every flip disappears".
        let r = tutorial(0.0, 0.02);
        assert_eq!(r.position.flips.fraction(), "0/12 = 0.00");
        // Without the slot bonus the naive verdict equals the corrected one: p11 only.
        assert_eq!(r.averaging.naive_disagreement.fraction(), "1/12 = 0.08");
        assert_eq!(r.averaging.averaged_disagreement.fraction(), "1/12 = 0.08");
    }

    #[test]
    fn ablation_no_verbosity_bias_no_corrected_error() {
        // Tutorial: "set VERB_PER_WORD to zero and the last corrected error vanishes too".
        let r = tutorial(1.0, 0.0);
        assert_eq!(r.averaging.averaged_disagreement.fraction(), "0/12 = 0.00");
        assert!(r.averaging.survivors.is_empty());
        // Flips are then the pairs whose quality gap (1 point everywhere in p01–p04, p09–p12) does
        // not exceed the bonus: a tie on score goes to slot A, so a 1-point gap still flips.
        let independent = parse_pairs(TUTORIAL)
            .unwrap()
            .iter()
            .filter(|p| p.kind == PairKind::Pair)
            .filter(|p| (p.x.quality.unwrap() - p.y.quality.unwrap()).abs() <= 1.0)
            .count();
        assert_eq!(r.position.flips.count, independent as f64);
        // Probes: equal quality and no length credit: every averaged verdict is a tie (½ each).
        assert_eq!(r.verbosity.unwrap().longer_wins.fraction(), "2.5/5 = 0.50");
    }

    #[test]
    fn hard_outcome_average_gives_ties_on_flips() {
        // Without scores (a hard-verdict live judge), a flipped pair averages to P(X) = ½.
        let o = BothOrders { y_xfirst: Some(1.0), y_yfirst: Some(1.0), ..Default::default() };
        let a = order_averaged(&o).unwrap();
        assert_eq!((a.p_x, a.winner, a.rule), (0.5, Winner::Tie, AverageRule::Outcome));
        let o = BothOrders { y_xfirst: Some(1.0), y_yfirst: Some(0.0), ..Default::default() };
        assert_eq!(order_averaged(&o).unwrap().winner, Winner::X);
        let o = BothOrders { y_xfirst: Some(0.5), y_yfirst: Some(0.0), ..Default::default() };
        assert_eq!(order_averaged(&o).unwrap().p_x, 0.75);
        assert!(order_averaged(&BothOrders { y_xfirst: Some(1.0), ..Default::default() }).is_none());
        // Ties count half a disagreement.
        assert_eq!(Winner::Tie.miss(Label::X), 0.5);
        assert_eq!(Winner::Y.miss(Label::X), 1.0);
    }

    proptest::proptest! {
        #[test]
        fn soft_bradley_terry_average_has_the_sign_of_the_quality_gap(d in -4.0f64..4.0, kappa in -3.0f64..3.0) {
            // y(X first) = σ(d + κ), y(Y first) = σ(−d + κ): the average picks X iff d > 0.
            let s = crate::model::bt::sigmoid;
            let o = BothOrders { y_xfirst: Some(s(d + kappa)), y_yfirst: Some(s(-d + kappa)), ..Default::default() };
            let a = order_averaged(&o).unwrap();
            if d > 1e-6 { proptest::prop_assert_eq!(a.winner, Winner::X); }
            if d < -1e-6 { proptest::prop_assert_eq!(a.winner, Winner::Y); }
            // Relabelling never changes the averaged winner.
            proptest::prop_assert_eq!(order_averaged(&o.swapped()).unwrap().winner.swapped(), a.winner);
        }

        #[test]
        fn averaged_verdict_never_flips(a in 0.0f64..=1.0, b in 0.0f64..=1.0, hard in proptest::bool::ANY) {
            let (a, b) = if hard { (a.round(), b.round()) } else { (a, b) };
            let o = BothOrders { y_xfirst: Some(a), y_yfirst: Some(b), ..Default::default() };
            let r = analyse(&[tutorial_like("p")], std::slice::from_ref(&o), 0.95);
            proptest::prop_assert_eq!(r.averaging.averaged_flips.count, 0.0);
        }
    }

    fn tutorial_like(id: &str) -> PairSpec {
        parse_pairs(&format!(r#"{{"id":"{id}","x":{{"quality":5,"words":40}},"y":{{"quality":6,"words":20}}}}"#))
            .unwrap()
            .remove(0)
    }

    #[test]
    fn wilson_matches_the_score_test_inversion() {
        // Independent computation: the Wilson interval is {p : |p̂ − p| ≤ z·√(p(1 − p)/n)};
        // find its ends by bisection.
        let z = 1.959963984540054;
        for (k, n) in [(7.0, 12), (5.0, 5), (0.0, 12), (1.0, 12), (2.5, 5), (40.0, 300)] {
            let ph = k / n as f64;
            let inside = |p: f64| (ph - p).abs() <= z * (p * (1.0 - p) / n as f64).sqrt();
            let bisect = |mut a: f64, mut b: f64| {
                // a inside, b outside (or the reverse); returns the boundary.
                for _ in 0..200 {
                    let m = (a + b) / 2.0;
                    if inside(m) == inside(a) { a = m } else { b = m }
                }
                (a + b) / 2.0
            };
            let lo = if ph == 0.0 { 0.0 } else { bisect(ph, 0.0) };
            let hi = if ph == 1.0 { 1.0 } else { bisect(ph, 1.0) };
            let (wl, wh) = wilson(k, n, 0.95);
            assert!((wl - lo).abs() < 1e-9 && (wh - hi).abs() < 1e-9, "{k}/{n}: {wl},{wh} vs {lo},{hi}");
        }
        // 7/12 at 95%: [0.3195, 0.8067] (two decimals as printed).
        assert_eq!(Rate::new(7.0, 12, 0.95).interval(), "95% CI [0.32, 0.81]");
        assert_eq!(Rate::new(0.0, 0, 0.95).fraction(), "0/0 (none)");
    }

    /// Closed-form flip probability of the keyed-stochastic mock on one pair: with
    /// p₁ = P(X wins | X first) = σ(m(X first)/T) and p₂ = P(Y wins | Y first) = σ(m(Y first)/T),
    /// the two independent draws name different winners with probability
    /// p₁p₂ (X then Y) + (1 − p₁)(1 − p₂) (Y then X).
    fn p_flip(pos: f64, verb: f64, t: f64, p: &PairSpec) -> f64 {
        let s = crate::model::bt::sigmoid;
        let score = |side: &Side, slot_a: bool| {
            side.quality.unwrap() + if slot_a { pos } else { 0.0 } + verb * side.word_count()
        };
        let p1 = s((score(&p.x, true) - score(&p.y, false)) / t);
        let p2 = s((score(&p.y, true) - score(&p.x, false)) / t);
        p1 * p2 + (1.0 - p1) * (1.0 - p2)
    }

    fn synthetic_pairs(n: usize, seed: u64) -> Vec<PairSpec> {
        use rand::RngExt;
        let mut rng = crate::domain::rng::stream(seed, "audit-test-pairs", 0);
        (0..n)
            .map(|i| {
                let q: f64 = rng.random_range(3.0..7.0);
                let gap: f64 = rng.random_range(-1.5..1.5);
                let side = |q: f64, w: f64| Side { quality: Some(q), words: Some(w.round()), ..Default::default() };
                PairSpec {
                    id: format!("s{i:03}"),
                    task: None,
                    kind: PairKind::Pair,
                    x: side(q, rng.random_range(10.0..80.0)),
                    y: side(q + gap, rng.random_range(10.0..80.0)),
                    winner: None,
                }
            })
            .collect()
    }

    #[test]
    fn stochastic_mock_flip_rate_interval_covers_the_model_value() {
        let (pos, verb, t) = (0.8, 0.01, 0.5);
        let pairs = synthetic_pairs(300, 1);
        let expected: f64 = pairs.iter().map(|p| p_flip(pos, verb, t, p)).sum::<f64>() / pairs.len() as f64;
        // Sanity of the closed form: a strong slot bonus makes flips common but not certain.
        assert!(expected > 0.3 && expected < 0.8, "{expected}");
        let mut covered = 0;
        let seeds = 40;
        for seed in 0..seeds {
            let j = MockJudge::new(MockConfig {
                pos_bias: pos,
                verb_per_word: verb,
                mode: MockMode::Stochastic,
                temperature: t,
                seed,
                ..Default::default()
            })
            .unwrap();
            let obs = observe(&j, &pairs);
            assert!(obs.iter().all(|o| o.margin_xfirst.is_none()), "the stochastic mock states no scores");
            let r = analyse(&pairs, &obs, 0.95);
            let f = &r.position.flips;
            assert_eq!(f.n, 300);
            if seed == 0 {
                assert!(f.lo.unwrap() <= expected && expected <= f.hi.unwrap(), "{f:?} vs {expected}");
            }
            covered += usize::from(f.lo.unwrap() <= expected && expected <= f.hi.unwrap());
            assert_eq!(r.averaging.averaged_flips.count, 0.0);
        }
        // Nominal 95% (binomial sd ≈ 1.4 of 40): at least 34 of 40 seeds must cover.
        assert!(covered >= 34, "covered {covered}/{seeds}");
    }

    /// A pairs file's pairs of one text in both sides (up to whitespace) are named; an empty
    /// count is 0, not −0 (an empty float sum).
    #[test]
    fn same_text_pairs_are_named_and_no_event_is_zero() {
        let side = |t: &str| Side { text: Some(t.into()), ..Side::default() };
        let pair = |id: &str, x: &str, y: &str| PairSpec {
            id: id.into(),
            task: None,
            kind: PairKind::Pair,
            x: side(x),
            y: side(y),
            winner: None,
        };
        let pairs = [pair("w1", "a b", " a  b\n"), pair("w2", "ab", "a b"), pair("w3", "x", "x")];
        assert_eq!(
            same_text_notes(&pairs),
            [
                "2 pairs (w1, w3) have the same text in x and y, up to whitespace: a judge cannot tell them apart, so their verdicts show the position alone"
            ]
        );
        assert!(same_text_notes(&pairs[1..2]).is_empty());
        let r = Rate::new(Vec::<f64>::new().iter().sum(), 0, 0.95);
        assert_eq!((r.fraction(), r.count.is_sign_positive()), ("0/0 (none)".to_string(), true));
    }

    #[test]
    fn pairs_file_errors_name_line_and_field() {
        let e = parse_pairs("\n{\"id\":\"a\",\"x\":{\"quality\":1},\"y\":{\"words\":3}}\n").unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.msg.contains("x: needs \"text\" or \"words\""), "{e}");
        let e = parse_pairs(r#"{"id":"a","x":{"words":1},"y":{"words":3},"colour":1}"#).unwrap_err();
        assert!(e.msg.contains("colour"), "{e}");
        // The file's line alone, the column within it and the field in words (serde said "at
        // line 1 column 62" beside the file's line 4, and "unknown variant").
        let e = parse_pairs("{\"id\":\"a\",\"x\":{\"words\":1},\"y\":{\"words\":3").unwrap_err();
        assert!(e.msg.starts_with("not valid JSON: EOF while parsing an object at column 40; expected {"), "{e}");
        let e = parse_pairs(r#"{"id":"a","kind":"pear","x":{"words":1},"y":{"words":3}}"#).unwrap_err();
        assert!(e.msg.starts_with("at `kind`: unknown value `pear`, expected `pair` or `probe` (column 23)"), "{e}");
        let e = parse_pairs(r#"{"id":"q","kind":"probe","x":{"quality":1,"words":1},"y":{"quality":2,"words":3}}"#)
            .unwrap_err();
        assert!(e.msg.contains("probes must have equal quality"), "{e}");
        let e = parse_pairs("{\"id\":\"a\",\"x\":{\"words\":1},\"y\":{\"words\":3}}\n{\"id\":\"a\",\"x\":{\"words\":1},\"y\":{\"words\":3}}")
            .unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.msg.contains("duplicate id \"a\" (first on line 1)"), "{e}");
        // A pairs file written as one JSON array, or pretty-printed, is named as such (serde said
        // "invalid type: map, expected a string" and "EOF while parsing a list").
        let e = parse_pairs("[{\"id\":\"a\",\"x\":{\"words\":1},\"y\":{\"words\":3}}]").unwrap_err();
        assert!(e.msg.starts_with("the file looks like one JSON array; expected JSON Lines"), "{e}");
        let e = parse_pairs("[\n  {\n    \"id\": \"a\",").unwrap_err();
        assert_eq!(e.line, 1);
        assert!(e.msg.starts_with("the file looks like one JSON array"), "{e}");
        let e = parse_pairs("{\n  \"id\": \"a\",").unwrap_err();
        assert!(e.msg.starts_with("the file looks like pretty-printed JSON"), "{e}");
        // Numbers a pool refuses are refused by line, not left to a panic when the pair is judged.
        let e = parse_pairs("{\"id\":\"a\",\"x\":{\"words\":1},\"y\":{\"words\":3}}\n{\"id\":\"p1\",\"x\":{\"quality\":1e308,\"words\":50},\"y\":{\"quality\":-1e308,\"words\":20}}").unwrap_err();
        assert_eq!(e.line, 2);
        assert!(
            e.msg.starts_with("pair \"p1\": ") && e.msg.contains("quality 1e308 is too large (|quality| ≤ 1e100"),
            "{e}"
        );
        let e = parse_pairs(r#"{"id":"w","x":{"quality":1,"words":1e300},"y":{"quality":5,"words":20}}"#).unwrap_err();
        assert_eq!(e.msg, "pair \"w\": x.words = 1e300 is too large (≤ 1e100: the bias fit squares it)");
        let e = parse_pairs(r#"{"id":"n","x":{"words":-1e300},"y":{"words":20}}"#).unwrap_err();
        assert_eq!(e.msg, "pair \"n\": x.words = -1e300; expected a number ≥ 0");
        let e = parse_pairs(r#"{"id":"a","x":{"text":"one two","words":3},"y":{"words":3}}"#).unwrap_err();
        assert!(e.msg.contains("x.words = 3 but x.text has 2"), "{e}");
        let e = parse_pairs(r#"{"id":"a","x":{"quality":2,"words":1},"y":{"quality":1,"words":3},"winner":"y"}"#)
            .unwrap_err();
        // The winner as the file writes it.
        assert!(e.msg.contains("winner \"y\" contradicts x.quality = 2, y.quality = 1"), "{e}");
    }

    #[test]
    fn gold_winner_labels_define_truth_without_quality() {
        let p = parse_pairs(r#"{"id":"a","x":{"text":"short"},"y":{"text":"a longer one"},"winner":"x"}"#)
            .unwrap()
            .remove(0);
        assert_eq!(p.truth(), Some(Label::X));
        assert_eq!(p.longer(), Some(Label::Y));
        let pool = p.to_pool().unwrap();
        assert_eq!(pool.items[1].id, "Y");
        assert!(pool.items[1].covariates.is_empty(), "text gives the words");
    }

    #[test]
    fn pool_probes_and_pairs() {
        let pool = crate::store::pool_file::read_pool(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("data/summeval_pools.jsonl"),
            None,
        )
        .unwrap();
        let (probes, notes) = probes_from_pool(&pool, RenderKind::Elaborated, Some(4));
        assert_eq!(probes.len(), 4);
        assert!(notes.is_empty());
        for p in &probes {
            p.validate().unwrap();
            assert_eq!(p.longer(), Some(Label::Y), "the elaborated side is longer");
            assert_eq!(p.rendered(), Some(Label::Y));
            assert_eq!(p.x.quality, p.y.quality);
            assert_eq!(
                p.y.text.as_deref(),
                Some(crate::analysis::render::elaborate(p.x.text.as_deref().unwrap()).as_str())
            );
        }
        let mut rng = crate::domain::rng::stream(3, "audit-pairs", 0);
        let pairs = pairs_from_pool(&pool, 10, &mut rng);
        assert_eq!(pairs.len(), 10);
        let mut ids: Vec<&str> = pairs.iter().map(|p| p.id.as_str()).collect();
        ids.dedup();
        assert_eq!(ids.len(), 10, "distinct pairs");
        let again = pairs_from_pool(&pool, 10, &mut crate::domain::rng::stream(3, "audit-pairs", 0));
        assert_eq!(pairs, again, "seeded");
        // M1 and M2 of this pool have one text: of its 16 items' 120 pairs, 119 are drawn, not
        // theirs.
        assert_eq!(pool.identical_texts().len(), 1);
        let all = pairs_from_pool(&pool, 200, &mut crate::domain::rng::stream(3, "audit-pairs", 0));
        assert_eq!(all.len(), 119);
        assert!(all.iter().all(|p| p.x.text != p.y.text), "a pair of identical texts was drawn");
        // A deterministic mock with only a verbosity term prefers every elaborated rendering.
        let j = MockJudge::new(MockConfig { pos_bias: 0.0, verb_per_word: 0.01, ..Default::default() }).unwrap();
        let r = analyse(&probes, &observe(&j, &probes), 0.95);
        assert_eq!(r.position.on, PairKind::Probe);
        assert_eq!(r.verbosity.unwrap().rendered_wins.unwrap().fraction(), "4/4 = 1.00");
    }
}

//! What the data certify about the top-k (docs/model.md, "Certified top-k"): at a stated ε,
//! the items whose top-k membership π is at least 1 − ε (*in*), at most ε (*out*), and the rest
//! (*undecided*); tiers of items whose 90 % rank intervals overlap; and the judge that carries
//! no signal (one slot or one label winning nearly every verdict), about which nothing is
//! certified.
//!
//! "top-k" is claimed only when *in* has k members. The coverage of the claim under adaptive
//! sampling is measured, not assumed (docs/experiments.md, "Certified top-k coverage").

use crate::analysis::ranking::ComparisonGraph;
use crate::domain::verdict::ItemVerdict;

/// The default ε of `certify.epsilon`.
pub const DEFAULT_EPSILON: f64 = 0.05;

/// The share of verdicts one slot (or one label) must win to name the judge as carrying no
/// signal.
pub const NO_SIGNAL_SHARE: f64 = 0.9;

/// Fewest valid verdicts before the no-signal check applies.
pub const NO_SIGNAL_MIN_VERDICTS: usize = 10;

/// The equal-quality test's level: verdicts whose p-value is above it do not tell the bases
/// apart ([`indistinct`]).
pub const EQUAL_QUALITY_ALPHA: f64 = 0.05;

/// Simulated verdict sets of the equal-quality test ([`indistinct`]).
pub const EQUAL_QUALITY_DRAWS: usize = 199;

/// The three sets (base indices, each in the reported order).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sets {
    /// π ≥ 1 − ε.
    pub inside: Vec<usize>,
    /// π ≤ ε.
    pub outside: Vec<usize>,
    /// The rest.
    pub undecided: Vec<usize>,
}

impl Sets {
    /// Whether the top-k is certified: *in* holds k bases.
    pub fn claimed(&self, k: usize) -> bool {
        self.inside.len() == k
    }
}

/// The sets at ε of the membership `pi` (per base), listed in `order` (the reported ranking,
/// best first).
///
/// # Panics
/// If ε is not in (0, ½).
pub fn sets(pi: &[f64], order: &[usize], epsilon: f64) -> Sets {
    assert!(epsilon > 0.0 && epsilon < 0.5, "ε = {epsilon} must be in (0, 0.5)");
    let mut s = Sets::default();
    for &b in order {
        if pi[b] >= 1.0 - epsilon {
            s.inside.push(b);
        } else if pi[b] <= epsilon {
            s.outside.push(b);
        } else {
            s.undecided.push(b);
        }
    }
    s
}

/// Tiers (1 = best) from rank intervals (1-based, inclusive) listed in `order` (best first):
/// the best base not yet placed leads a new tier, and every following base whose interval
/// overlaps the leader's joins it (the data cannot tell it from the leader). Chaining overlaps
/// instead would put a whole field into one tier. Returns the tier of each base (by base).
pub fn tiers(intervals: &[(usize, usize)], order: &[usize]) -> Vec<usize> {
    let mut tier = vec![0; intervals.len()];
    let (mut current, mut leader_hi) = (0, 0);
    for &b in order {
        let (lo, hi) = intervals[b];
        if current == 0 || lo > leader_hi {
            current += 1;
            leader_hi = hi;
        }
        tier[b] = current;
    }
    tier
}

/// Why nothing is certified while some bases have no valid verdict: their places rest on the
/// prior alone, and on adaptively chosen pairs the Laplace posterior then certifies too much
/// (docs/experiments.md, "Certified top-k coverage": 4 of 19 certified-in bases wrong at
/// ε = 0.05 after 40 comparisons of 30 bases before this rule, 0 of 0 after).
/// `noun`: what the bases are called in the run (`base`, or `system` over many prompts).
pub fn prior_only_text(never_compared: &[String], bases: usize, noun: &str) -> String {
    let n = never_compared.len();
    let shown: Vec<&str> = never_compared.iter().take(3).map(String::as_str).collect();
    format!(
        "{n} of {bases} {noun}s {} no valid verdict ({}{}): {} on the prior alone, so nothing is certified until every {noun} has been compared",
        if n == 1 { "has" } else { "have" },
        shown.join(", "),
        if n > shown.len() { ", …" } else { "" },
        if n == 1 { "its place rests" } else { "their places rest" }
    )
}

/// Why nothing is certified on the comparison graph `graph` of the valid verdicts over
/// `bases` bases (`None`: it is connected). A base without a verdict rests on the prior alone
/// ([`prior_only_text`]); bases in different components are ordered by the prior (and by
/// bias coefficients, which across components the verdicts do not test), so π near 0 or 1
/// across components is the prior's, not the data's: two pairs compared 200 and 4 times, and
/// never with each other, gave the first pair's winner π = 1.000 to lead all four
/// (docs/model.md, "Certified top-k").
pub fn graph_withholds(graph: &ComparisonGraph, bases: usize, noun: &str) -> Option<String> {
    if !graph.never_compared.is_empty() {
        return Some(prior_only_text(&graph.never_compared, bases, noun));
    }
    (!graph.connected()).then(|| {
        format!(
            "the comparison graph has {} components ({}): {noun}s in different components are ordered by the prior alone, so nothing is certified until verdicts connect them",
            graph.components,
            graph.sizes_words()
        )
    })
}

/// The fewest Monte-Carlo draws that resolve π at ε: ⌈10/ε⌉ (an estimate of π near 1 − ε then
/// rests on at least 10 draws outside the top-k). With fewer, a π of 1 or 0 may be an artefact
/// of too few draws, so nothing is certified.
pub fn min_draws(epsilon: f64) -> usize {
    (10.0 / epsilon).ceil().min(1e12) as usize
}

/// Why nothing is certified with `draws` Monte-Carlo draws at ε, if too few ([`min_draws`]).
pub fn too_few_draws(draws: usize, epsilon: f64) -> Option<String> {
    let need = min_draws(epsilon);
    (draws > 0 && draws < need).then(|| {
        format!(
            "{draws} Monte-Carlo draw{} cannot resolve π at ε = {epsilon}: at least {need} are needed (acquisition.mc_draws, or fit --draws)",
            if draws == 1 { "" } else { "s" }
        )
    })
}

/// The ε of the coverage measurement (docs/experiments.md, "Certified top-k coverage").
pub const COVERAGE_EPSILONS: [f64; 2] = [0.05, 0.1];

/// Of the bases certified in at ε (π ≥ 1 − ε), how many there are and how many are not in
/// `truth` (the true top-k): (certified in, wrongly certified in). Nothing is certified while
/// the comparison graph of the valid verdicts is not connected ([`graph_withholds`]), as in a
/// run's result.
pub fn false_in(pi: &[f64], graph: &ComparisonGraph, truth: &[usize], epsilon: f64) -> (usize, usize) {
    if !graph.connected() {
        return (0, 0);
    }
    let inside: Vec<usize> = (0..pi.len()).filter(|&b| pi[b] >= 1.0 - epsilon).collect();
    let wrong = inside.iter().filter(|b| !truth.contains(b)).count();
    (inside.len(), wrong)
}

/// Which way a signal-less judge leans.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Lean {
    /// The first-shown answer wins (nearly) always.
    FirstShown,
    /// The second-shown answer wins (nearly) always.
    SecondShown,
    /// Every verdict is a tie.
    Ties,
    /// Wins spread as a judge answering at random (with its position effect) spreads them: the
    /// equal-quality test ([`indistinct`]) does not reject.
    Indistinct,
}

/// A judge whose verdicts say nothing about the answers: counts over the valid verdicts.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct NoSignal {
    /// Which way it leans.
    pub lean: Lean,
    /// Valid verdicts.
    pub verdicts: usize,
    /// Won by the first-shown answer (y > ½).
    pub first_shown: usize,
    /// Won by the second-shown answer (y < ½).
    pub second_shown: usize,
    /// Ties (y = ½).
    pub ties: usize,
    /// Verdicts whose ordered pair was also asked the other way round (both orders sent).
    #[serde(default)]
    pub both_orders: usize,
    /// Soft verdicts among them (0 < y < 1, y ≠ ½: from logprobs): then logprobs are on already.
    #[serde(default, skip_serializing)]
    pub soft: usize,
    /// The equal-quality test's p-value ([`indistinct`]; lean `indistinct` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub equal_quality_p: Option<f64>,
}

impl NoSignal {
    /// The verdicts of its lean.
    pub fn count(&self) -> usize {
        match self.lean {
            Lean::FirstShown => self.first_shown,
            Lean::SecondShown => self.second_shown,
            Lean::Ties => self.ties,
            Lean::Indistinct => self.verdicts,
        }
    }

    /// The share of verdicts of its lean.
    pub fn share(&self) -> f64 {
        self.count() as f64 / self.verdicts.max(1) as f64
    }

    /// What the judge did, as a verb phrase ("picked the first-shown answer").
    pub fn what(&self) -> &'static str {
        match self.lean {
            Lean::FirstShown => "picked the first-shown answer",
            Lean::SecondShown => "picked the second-shown answer",
            Lean::Ties => "called a tie",
            Lean::Indistinct => "spread its wins as a judge answering at random",
        }
    }

    /// In words, with what helps.
    pub fn text(&self) -> String {
        if let Some(p) = self.equal_quality_p.filter(|_| self.lean == Lean::Indistinct) {
            return format!(
                "the judge's {} verdicts do not tell the answers apart: a judge answering at random, with the same position effect, would spread its wins as unevenly and agree with itself across a pair's two orders as often (equal-quality test over {EQUAL_QUALITY_DRAWS} simulated verdict sets: p = {p:.3} > {EQUAL_QUALITY_ALPHA}), so nothing is certified; more comparisons may show a difference, or use a stronger judge",
                self.verdicts
            );
        }
        let what = self.what();
        let n = self.count();
        let orders = if 2 * self.both_orders >= self.verdicts {
            "both orders of each pair are sent already, so this is the judge"
        } else {
            "most pairs were asked in one order only: ask both orders of each pair (a run's acquisition.orders: both) so a slot preference cancels out"
        };
        format!(
            "the judge {what} in {n} of {} verdicts ({:.0} %): its verdicts carry no signal about the answers, so nothing is certified; {orders}; {}try another prompt, or use a stronger judge",
            self.verdicts,
            100.0 * self.share(),
            if self.soft > 0 {
                "its verdicts are soft already (logprobs), and still lean one way: "
            } else {
                "with a live judge, turn on logprobs for soft verdicts (`logprobs: true` in its openai block), "
            }
        )
    }
}

/// The no-signal check: at least [`NO_SIGNAL_MIN_VERDICTS`] valid verdicts, of which one slot
/// (or ties) took at least [`NO_SIGNAL_SHARE`]. `y` is P(first-shown wins): > ½ first, < ½
/// second, ½ a tie.
pub fn no_signal(verdicts: &[ItemVerdict]) -> Option<NoSignal> {
    let n = verdicts.len();
    if n < NO_SIGNAL_MIN_VERDICTS {
        return None;
    }
    let first = verdicts.iter().filter(|v| v.y > 0.5).count();
    let second = verdicts.iter().filter(|v| v.y < 0.5).count();
    let ties = n - first - second;
    let lean = [(Lean::FirstShown, first), (Lean::SecondShown, second), (Lean::Ties, ties)]
        .into_iter()
        .find(|(_, c)| *c as f64 >= NO_SIGNAL_SHARE * n as f64)?
        .0;
    Some(signal_record(verdicts, lean, None))
}

/// The no-signal record of `verdicts` leaning `lean`: its counts over them.
fn signal_record(verdicts: &[ItemVerdict], lean: Lean, equal_quality_p: Option<f64>) -> NoSignal {
    let n = verdicts.len();
    let first = verdicts.iter().filter(|v| v.y > 0.5).count();
    let second = verdicts.iter().filter(|v| v.y < 0.5).count();
    let asked: std::collections::HashSet<(usize, usize)> = verdicts.iter().map(|v| (v.a, v.b)).collect();
    NoSignal {
        lean,
        verdicts: n,
        first_shown: first,
        second_shown: second,
        ties: n - first - second,
        both_orders: verdicts.iter().filter(|v| asked.contains(&(v.b, v.a))).count(),
        soft: verdicts.iter().filter(|v| v.y > 0.0 && v.y < 1.0 && v.y != 0.5).count(),
        equal_quality_p,
    }
}

/// [`no_signal`], else [`indistinct`]: a judge whose verdicts say nothing about the bases, one
/// way or the other. `item_base` maps each item of the verdicts to its base (of `bases`).
pub fn signal_check(verdicts: &[ItemVerdict], item_base: &[usize], bases: usize) -> Option<NoSignal> {
    no_signal(verdicts).or_else(|| indistinct(verdicts, item_base, bases))
}

/// The equal-quality test: do the verdicts tell the bases apart at all? Under equal quality a
/// verdict's y is a coin with P(first wins) = p₀ (the position effect alone, estimated as the
/// mean y). The statistic is T = Σ_m U_m² / n_m + Σ_q W_q² / n_q, with U_m the sum of a base's
/// residuals (y − p₀ as the first shown, p₀ − y as the second) over its n_m verdicts (pairs of
/// one base's items left out) and W_q the same sum for the first base of the unordered pair q
/// over the pair's n_q verdicts (a judge that agrees with itself across a pair's two orders);
/// its p-value is the share of [`EQUAL_QUALITY_DRAWS`] verdict sets drawn
/// under equal quality with T as large, counting the observed one: for hard verdicts coins with
/// P(first wins) = p₀ (p₀ estimated again in each; a parametric bootstrap), for soft ones or ties
/// the observed y shuffled over the pairs (a permutation test; coins would spread more than soft
/// verdicts do, and hide their signal). Returns the no-signal record (lean `indistinct`) when p > [`EQUAL_QUALITY_ALPHA`], with
/// at least [`NO_SIGNAL_MIN_VERDICTS`] verdicts; deterministic (a fixed random stream).
pub fn indistinct(verdicts: &[ItemVerdict], item_base: &[usize], bases: usize) -> Option<NoSignal> {
    let mut pairs: Vec<(usize, usize, f64)> =
        verdicts.iter().map(|v| (item_base[v.a], item_base[v.b], v.y)).filter(|(a, b, _)| a != b).collect();
    // In one order whatever order the verdicts arrived in (a pipelined run stores them as they
    // come back): the draws pair with the verdicts by position, so the p-value is a function
    // of the verdict set alone.
    pairs.sort_by(|x, y| (x.0, x.1).cmp(&(y.0, y.1)).then(x.2.total_cmp(&y.2)));
    if pairs.len() < NO_SIGNAL_MIN_VERDICTS {
        return None;
    }
    let p = equal_quality_p(&pairs, bases);
    (p > EQUAL_QUALITY_ALPHA).then(|| signal_record(verdicts, Lean::Indistinct, Some(p)))
}

/// The p-value of [`indistinct`]'s test over verdicts (first base, second base, y).
fn equal_quality_p(pairs: &[(usize, usize, f64)], bases: usize) -> f64 {
    let mut n_m = vec![0.0; bases];
    for &(a, b, _) in pairs {
        n_m[a] += 1.0;
        n_m[b] += 1.0;
    }
    // Each verdict's unordered pair of bases, and the sign of its residual for the pair's first
    // base: the pair term sees a judge that agrees with itself across the two orders of a pair,
    // which the base term misses when adaptive picks pair bases of like rank (their wins even
    // out; hunt 50: 32 of 33 pairs alike in both orders read p = 0.055).
    let mut index: std::collections::HashMap<(usize, usize), usize> = std::collections::HashMap::new();
    let mut n_q: Vec<f64> = Vec::new();
    let of_pair: Vec<(usize, f64)> = pairs
        .iter()
        .map(|&(a, b, _)| {
            let next = index.len();
            let q = *index.entry((a.min(b), a.max(b))).or_insert(next);
            if q == n_q.len() {
                n_q.push(0.0);
            }
            n_q[q] += 1.0;
            (q, if a < b { 1.0 } else { -1.0 })
        })
        .collect();
    let mut u = vec![0.0; bases];
    let mut w = vec![0.0; n_q.len()];
    let mut statistic = |ys: &mut dyn Iterator<Item = f64>| -> f64 {
        u.iter_mut().for_each(|x| *x = 0.0);
        w.iter_mut().for_each(|x| *x = 0.0);
        let ys: Vec<f64> = ys.collect();
        let p0 = ys.iter().sum::<f64>() / ys.len() as f64;
        for ((&(a, b, _), y), &(q, sign)) in pairs.iter().zip(&ys).zip(&of_pair) {
            u[a] += y - p0;
            u[b] -= y - p0;
            w[q] += sign * (y - p0);
        }
        let by_base: f64 = u.iter().zip(&n_m).filter(|(_, n)| **n > 0.0).map(|(x, n)| x * x / n).sum();
        let by_pair: f64 = w.iter().zip(&n_q).map(|(x, n)| x * x / n).sum();
        by_base + by_pair
    };
    let observed = statistic(&mut pairs.iter().map(|p| p.2));
    let p0 = pairs.iter().map(|p| p.2).sum::<f64>() / pairs.len() as f64;
    let mut rng = crate::domain::rng::stream(0, "equal-quality", pairs.len() as u64);
    // Hard verdicts: each draw a coin with P(first wins) = p₀. Soft ones or ties spread less
    // than coins do, so coins would make any soft signal look like chance: each draw is then the
    // observed y shuffled over the pairs, which equal quality leaves exchangeable (a
    // permutation test, exact in level whatever the scale of y).
    let hard = pairs.iter().all(|p| p.2 == 0.0 || p.2 == 1.0);
    let mut ys: Vec<f64> = pairs.iter().map(|p| p.2).collect();
    let mut as_large = 0;
    for _ in 0..EQUAL_QUALITY_DRAWS {
        use rand::RngExt;
        use rand::seq::SliceRandom;
        let t = if hard {
            statistic(&mut (0..pairs.len()).map(|_| if rng.random::<f64>() < p0 { 1.0 } else { 0.0 }))
        } else {
            ys.shuffle(&mut rng);
            statistic(&mut ys.iter().copied())
        };
        // A relative margin: equal statistics computed in another order are counted as equal.
        as_large += usize::from(t >= observed * (1.0 - 1e-12));
    }
    (1 + as_large) as f64 / (1 + EQUAL_QUALITY_DRAWS) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Verdicts of every ordered pair of `m` bases, `rounds` times, with P(first wins) =
    /// σ(θ_a − θ_b + κ) drawn from `seed`.
    fn drawn(theta: &[f64], kappa: f64, rounds: usize, seed: u64) -> Vec<ItemVerdict> {
        use rand::RngExt;
        let mut r = crate::domain::rng::stream(seed, "test", 0);
        let mut v = Vec::new();
        for _ in 0..rounds {
            for a in 0..theta.len() {
                for b in (0..theta.len()).filter(|&b| b != a) {
                    let p = 1.0 / (1.0 + (-(theta[a] - theta[b] + kappa)).exp());
                    v.push(ItemVerdict { a, b, y: if r.random::<f64>() < p { 1.0 } else { 0.0 }, w: 1.0 });
                }
            }
        }
        v
    }

    /// Soft verdicts (logprobs): a judge that always leans to the better answer, at P = 0.8 or
    /// 0.6, is told from chance; it was not when the draws were coins, which spread more than
    /// soft verdicts (hunt 45: p = 0.585 for P = 0.8). Soft verdicts of no signal (P drawn at
    /// random, whatever the pair) hold the level.
    #[test]
    fn the_equal_quality_test_reads_soft_verdicts() {
        let ident: Vec<usize> = (0..8).collect();
        for lean in [0.8, 0.6] {
            let soft: Vec<ItemVerdict> = drawn(&[0.0; 8], 0.0, 1, 0)
                .into_iter()
                .map(|v| ItemVerdict { y: if v.a < v.b { lean } else { 1.0 - lean }, ..v })
                .collect();
            let pairs: Vec<(usize, usize, f64)> = soft.iter().map(|v| (v.a, v.b, v.y)).collect();
            assert_eq!(equal_quality_p(&pairs, 8), 1.0 / 200.0, "P = {lean}");
        }
        // P(first wins) drawn uniformly for each verdict: rejected in about 5 % of 200 sets.
        let rejected = (0..200)
            .filter(|&s| {
                use rand::RngExt;
                let mut r = crate::domain::rng::stream(s, "soft", 0);
                let v: Vec<ItemVerdict> = drawn(&[0.0; 8], 0.0, 2, s)
                    .into_iter()
                    .map(|v| ItemVerdict { y: r.random::<f64>(), ..v })
                    .collect();
                indistinct(&v, &ident, 8).is_none()
            })
            .count();
        assert!((2..=20).contains(&rejected), "{rejected} of 200 rejected at level 0.05");
    }

    /// A judge that always picks the longer summary, its pairs picked by the top-k rule (hunt 50,
    /// tests/fixtures/adaptive_longer_wins.jsonl): no drawn set is as large as its own once the
    /// pair term counts its agreement across orders (p = 0.055 on the base term alone).
    #[test]
    fn a_judge_alike_across_orders_is_told_from_chance() {
        let text = include_str!("../../tests/fixtures/adaptive_longer_wins.jsonl");
        let mut ids: Vec<String> = Vec::new();
        let mut at = |id: &str| match ids.iter().position(|x| x == id) {
            Some(i) => i,
            None => {
                ids.push(id.to_owned());
                ids.len() - 1
            }
        };
        let pairs: Vec<(usize, usize, f64)> = text
            .lines()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                (at(v["a"].as_str().unwrap()), at(v["b"].as_str().unwrap()), v["y"].as_f64().unwrap())
            })
            .collect();
        assert_eq!(pairs.len(), 66);
        assert_eq!(equal_quality_p(&pairs, ids.len()), 1.0 / 200.0);
    }

    #[test]
    fn the_equal_quality_test_holds_its_level_and_finds_a_signal() {
        let ident: Vec<usize> = (0..8).collect();
        // A judge answering at random with a position effect: over 200 verdict sets the test
        // rejects about 5 % of them (binomial(200, 0.05) is within 2..=20 with probability
        // above 0.999).
        let rejected = (0..200).filter(|&s| indistinct(&drawn(&[0.0; 8], 0.4, 2, s), &ident, 8).is_none()).count();
        assert!((2..=20).contains(&rejected), "{rejected} of 200 rejected at level 0.05");
        // A judge that sees a quality spread of 0.5 logits a step: rejected every time.
        let theta: Vec<f64> = (0..8).map(|i| 0.5 * i as f64).collect();
        assert!((0..20).all(|s| indistinct(&drawn(&theta, 0.4, 2, s), &ident, 8).is_none()));
        // Perfectly consistent verdicts: no simulated set is as uneven, p = 1/200.
        let sure: Vec<ItemVerdict> = drawn(&[0.0; 6], 0.0, 1, 0)
            .into_iter()
            .map(|v| ItemVerdict { y: if v.a < v.b { 1.0 } else { 0.0 }, ..v })
            .collect();
        let pairs: Vec<(usize, usize, f64)> = sure.iter().map(|v| (v.a, v.b, v.y)).collect();
        assert_eq!(equal_quality_p(&pairs, 6), 1.0 / 200.0);
        // The record of a random judge: its p-value, and what it says.
        let ns = indistinct(&drawn(&[0.0; 8], 0.4, 2, 1), &ident, 8).unwrap();
        assert_eq!(ns.lean, Lean::Indistinct);
        assert_eq!(ns.verdicts, 112);
        let p = ns.equal_quality_p.unwrap();
        assert!(p > EQUAL_QUALITY_ALPHA && p <= 1.0);
        assert!(ns.text().starts_with("the judge's 112 verdicts do not tell the answers apart"), "{}", ns.text());
        // Items of one base (renderings) compared with each other carry no test; two items of a
        // base are one base.
        let two_items = [0, 0, 1, 1, 2, 2, 3, 3];
        let within: Vec<ItemVerdict> =
            (0..12).map(|i| ItemVerdict { a: 2 * (i % 4), b: 2 * (i % 4) + 1, y: 1.0, w: 1.0 }).collect();
        assert!(indistinct(&within, &two_items, 4).is_none(), "no pair of two bases: nothing to test");
        assert!(signal_check(&within, &two_items, 4).is_some(), "the first-shown answer always won");
    }

    #[test]
    fn false_in_counts_wrong_members_and_nothing_while_a_base_is_uncompared() {
        let pi = [0.99, 0.97, 0.5, 0.93, 0.01];
        let names: Vec<String> = ["b0", "b1", "b2", "b3", "b4"].map(String::from).into();
        let graph =
            |edges: &[(usize, usize)]| crate::analysis::ranking::comparison_graph(&names, edges.iter().copied());
        let chain = graph(&[(0, 1), (1, 2), (2, 3), (3, 4)]);
        // Truth {0, 2}: at ε = 0.05 bases 0 and 1 are in, 1 wrongly; at ε = 0.1 also base 3.
        assert_eq!(false_in(&pi, &chain, &[0, 2], 0.05), (2, 1));
        assert_eq!(false_in(&pi, &chain, &[0, 2], 0.1), (3, 2));
        assert_eq!(graph_withholds(&chain, 5, "base"), None);
        // Base 4 has no verdict: nothing is certified.
        let uncompared = graph(&[(0, 1), (1, 2), (2, 3)]);
        assert_eq!(false_in(&pi, &uncompared, &[0, 2], 0.05), (0, 0));
        assert_eq!(
            graph_withholds(&uncompared, 5, "base").unwrap(),
            "1 of 5 bases has no valid verdict (b4): its place rests on the prior alone, so nothing is certified until every base has been compared"
        );
        // Every base compared, in two components: nothing is certified either.
        let pieces = graph(&[(0, 1), (1, 2), (3, 4)]);
        assert_eq!(false_in(&pi, &pieces, &[0, 2], 0.05), (0, 0));
        assert_eq!(
            graph_withholds(&pieces, 5, "system").unwrap(),
            "the comparison graph has 2 components (sizes 3, 2): systems in different components are ordered by the prior alone, so nothing is certified until verdicts connect them"
        );
        let ids: Vec<String> = ["a", "b", "c", "d"].map(String::from).into();
        assert_eq!(
            prior_only_text(&ids, 9, "base"),
            "4 of 9 bases have no valid verdict (a, b, c, …): their places rest on the prior alone, so nothing is certified until every base has been compared"
        );
        assert_eq!(
            prior_only_text(&ids[3..], 4, "system"),
            "1 of 4 systems has no valid verdict (d): its place rests on the prior alone, so nothing is certified until every system has been compared"
        );
    }

    #[test]
    fn sets_split_at_epsilon_in_the_reported_order() {
        let pi = [0.99, 0.2, 0.96, 0.01, 0.05, 0.5];
        let order = [0, 2, 5, 1, 4, 3];
        let s = sets(&pi, &order, 0.05);
        assert_eq!((s.inside, s.undecided, s.outside), (vec![0, 2], vec![5, 1], vec![4, 3]));
        assert!(sets(&pi, &order, 0.05).claimed(2) && !sets(&pi, &order, 0.05).claimed(3));
        let s = sets(&pi, &order, 0.2);
        assert_eq!((s.inside, s.undecided, s.outside), (vec![0, 2], vec![5], vec![1, 4, 3]));
    }

    /// The equal-quality test is a function of the verdict set: the same verdicts in another
    /// order (a pipelined run stores them as they come back) give the same p-value.
    #[test]
    fn the_equal_quality_test_does_not_depend_on_the_verdicts_order() {
        use rand::RngExt;
        let mut rng = crate::domain::rng::stream(7, "test", 0);
        let mut v: Vec<ItemVerdict> = (0..300)
            .map(|_| {
                let a = rng.random_range(0..25);
                let b = (a + 1 + rng.random_range(0..24)) % 25;
                ItemVerdict { a, b, y: if rng.random::<f64>() < 0.5 { 1.0 } else { 0.0 }, w: 1.0 }
            })
            .collect();
        let base: Vec<usize> = (0..25).collect();
        let p = |v: &[ItemVerdict]| indistinct(v, &base, 25).and_then(|ns| ns.equal_quality_p);
        let first = p(&v);
        assert!(first.is_some_and(|x| x > EQUAL_QUALITY_ALPHA), "{first:?}");
        v.reverse();
        assert_eq!(p(&v), first);
        v.rotate_left(117);
        assert_eq!(p(&v), first);
    }

    #[test]
    fn tiers_chain_overlapping_rank_intervals() {
        // Best first: [1,1] leads; [2,3] leads tier 2 and [2,4] overlaps it; [4,6] starts past
        // the leader's 3, though it overlaps [2,4]: no chaining.
        let iv = [(1, 1), (2, 3), (2, 4), (4, 6), (5, 5)];
        assert_eq!(tiers(&iv, &[0, 1, 2, 3, 4]), vec![1, 2, 2, 3, 3]);
        // The main job's first ranks: [1,2], [1,3], [2,5] share tier 1; [3,9] leads tier 2.
        assert_eq!(tiers(&[(1, 2), (1, 3), (2, 5), (3, 9), (3, 10)], &[0, 1, 2, 3, 4]), vec![1, 1, 1, 2, 2]);
        assert_eq!(tiers(&[(1, 4); 4], &[3, 2, 1, 0]), vec![1, 1, 1, 1]);
        assert_eq!(tiers(&[(1, 1), (2, 2), (3, 3)], &[0, 1, 2]), vec![1, 2, 3]);
    }

    #[test]
    fn a_judge_that_always_picks_one_slot_is_named() {
        let v = |y: f64| ItemVerdict { a: 0, b: 1, y, w: 1.0 };
        let all_a: Vec<_> = (0..40).map(|_| v(1.0)).collect();
        let ns = no_signal(&all_a).unwrap();
        assert_eq!((ns.lean, ns.first_shown, ns.verdicts), (Lean::FirstShown, 40, 40));
        assert!(ns.text().contains("first-shown answer in 40 of 40 verdicts (100 %)"), "{}", ns.text());
        let mostly_b: Vec<_> = (0..20).map(|i| v(if i < 18 { 0.0 } else { 1.0 })).collect();
        assert_eq!(no_signal(&mostly_b).unwrap().lean, Lean::SecondShown);
        let mixed: Vec<_> = (0..20).map(|i| v(if i < 17 { 1.0 } else { 0.0 })).collect();
        assert_eq!(no_signal(&mixed), None, "85 % is a biased judge, not a judge without signal");
        assert_eq!(no_signal(&all_a[..9]), None, "too few verdicts to say");
        let ties: Vec<_> = (0..12).map(|_| v(0.5)).collect();
        assert_eq!(no_signal(&ties).unwrap().lean, Lean::Ties);
        assert!(ns.text().contains("turn on logprobs for soft verdicts"), "{}", ns.text());
        // Soft verdicts (logprobs on already) that all lean first: not told to turn logprobs on.
        let soft: Vec<_> = (0..16).map(|i| v(0.8 + 0.01 * f64::from(i))).collect();
        let ns = no_signal(&soft).unwrap();
        assert_eq!(ns.soft, 16);
        assert!(
            !ns.text().contains("turn on logprobs") && ns.text().contains("its verdicts are soft already (logprobs)"),
            "{}",
            ns.text()
        );
    }
}

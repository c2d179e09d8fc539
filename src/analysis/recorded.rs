//! Bias of recorded judges: one row of rates per judge × prompting strategy, measured on
//! verdicts recorded in both presentation orders (`topk-judge audit` with a replay judge,
//! docs/replay.md). Pure: pairs and both-order observations in, rates out.
//!
//! With y(X first) and y(Y first) as in [`crate::analysis::audit`] (1 = the first-shown answer
//! wins, ½ tie, `None` invalid or missing), over the pairs of a pairs file:
//! - **flip rate**: pairs whose two ordered verdicts name different winners / pairs with both
//!   verdicts valid (the swap test of [`crate::analysis::audit::analyse`]);
//! - **first-shown pick rate**: valid ordered verdicts that pick the first-shown answer / valid
//!   ordered verdicts (a tie counts ½). 0.5 for a judge without position bias;
//! - **longer-wins rate**: valid ordered verdicts that pick the answer with more words / valid
//!   ordered verdicts on pairs whose answers differ in words (tie ½). On pairs of unequal
//!   quality this mixes length preference with quality: read it next to the share of pairs whose
//!   gold winner is the longer answer ([`JudgeRow::gold_longer`]);
//! - **accuracy**: valid ordered verdicts that pick the gold winner / valid ordered verdicts on
//!   pairs with a known winner (tie ½);
//! - **order-averaged accuracy**: over pairs with a known winner and both verdicts valid, the
//!   order-averaged verdict against the gold winner: 1 when both orders pick it, ½ when they
//!   disagree (a tie), 0 when both miss (1 − the averaged disagreement of the audit).
//!
//! Invalid verdicts are left out of every denominator and counted apart (`invalid`); so are
//! ordered queries missing from the recording (`missing`). Every rate carries its count, n and
//! Wilson interval ([`Rate`]).

use crate::analysis::audit::{self, BothOrders, Label, PairKind, PairSpec, Rate};
use serde::Serialize;

/// The rates of one recorded judge (module docs).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JudgeRow {
    /// The recorded `judge`.
    pub judge: String,
    /// The prompting strategy, when recorded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompting: Option<String>,
    /// Pairs audited (pairs of the pairs file with at least one recorded verdict).
    pub pairs: usize,
    /// Ordered verdicts recorded on them (valid and invalid).
    pub verdicts: usize,
    /// Of those, invalid (`y: null`).
    pub invalid: usize,
    /// Ordered queries of those pairs without a record.
    pub missing: usize,
    /// Flips / pairs with both verdicts valid.
    pub flips: Rate,
    /// First-shown picks / valid ordered verdicts.
    pub first_shown: Rate,
    /// Longer-answer picks / valid ordered verdicts on pairs of unequal length.
    pub longer_wins: Rate,
    /// Gold picks / valid ordered verdicts on pairs with a known winner.
    pub accuracy: Rate,
    /// Order-averaged verdicts right / pairs with a known winner and both verdicts valid.
    pub averaged_accuracy: Rate,
    /// Pairs whose gold winner is the longer answer / pairs with a known winner and unequal
    /// length (a property of the pairs the judge answered, for reading `longer_wins`).
    pub gold_longer: Rate,
}

/// The credit of one ordered verdict for `target`: 1 if it picks it, ½ for a tie, 0 otherwise.
fn credit(y: f64, first: Label, target: Label) -> f64 {
    1.0 - audit::ordered_winner(y, first).miss(target)
}

/// How many ordered verdicts a recorded judge has on the audited pairs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Tally {
    /// Pairs with at least one recorded verdict.
    pub pairs: usize,
    /// Ordered verdicts recorded (valid and invalid).
    pub verdicts: usize,
    /// Of those, invalid.
    pub invalid: usize,
    /// Ordered queries of the pairs file without a record.
    pub missing: usize,
}

/// Measure one recorded judge (module docs); `obs[i]` belongs to `pairs[i]` (the pairs it has
/// verdicts on). Intervals at `level`.
///
/// # Panics
/// If the lengths differ or `level` is not in (0, 1).
pub fn judge_row(
    judge: &str,
    prompting: Option<&str>,
    pairs: &[PairSpec],
    obs: &[BothOrders],
    tally: Tally,
    level: f64,
) -> JudgeRow {
    let report = audit::analyse(pairs, obs, level);
    let (mut first, mut n_valid) = (0.0, 0usize);
    let (mut longer, mut n_longer) = (0.0, 0usize);
    let (mut right, mut n_truth) = (0.0, 0usize);
    let (mut gold_longer, mut n_gold_longer) = (0.0, 0usize);
    for (p, o) in pairs.iter().zip(obs) {
        let (truth, long) = (p.truth(), p.longer());
        if p.kind == PairKind::Pair
            && let (Some(t), Some(l)) = (truth, long)
        {
            n_gold_longer += 1;
            if t == l {
                gold_longer += 1.0;
            }
        }
        for (y, first_label) in [(o.y_xfirst, Label::X), (o.y_yfirst, Label::Y)] {
            let Some(y) = y else { continue };
            n_valid += 1;
            first += credit(y, first_label, first_label);
            if let Some(l) = long {
                n_longer += 1;
                longer += credit(y, first_label, l);
            }
            if let Some(t) = truth {
                n_truth += 1;
                right += credit(y, first_label, t);
            }
        }
    }
    let avg = &report.averaging.averaged_disagreement;
    JudgeRow {
        judge: judge.to_owned(),
        prompting: prompting.map(str::to_owned),
        pairs: tally.pairs,
        verdicts: tally.verdicts,
        invalid: tally.invalid,
        missing: tally.missing,
        flips: report.position.flips,
        first_shown: Rate::new(first, n_valid, level),
        longer_wins: Rate::new(longer, n_longer, level),
        accuracy: Rate::new(right, n_truth, level),
        averaged_accuracy: Rate::new(avg.n as f64 - avg.count, avg.n, level),
        gold_longer: Rate::new(gold_longer, n_gold_longer, level),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::audit::Side;

    fn pair(id: &str, wx: f64, wy: f64, winner: Label) -> PairSpec {
        PairSpec {
            id: id.into(),
            task: None,
            kind: PairKind::Pair,
            x: Side { words: Some(wx), ..Default::default() },
            y: Side { words: Some(wy), ..Default::default() },
            winner: Some(winner),
        }
    }

    fn obs(x: Option<f64>, y: Option<f64>) -> BothOrders {
        BothOrders { y_xfirst: x, y_yfirst: y, ..Default::default() }
    }

    #[test]
    fn rates_by_hand() {
        // p1: X gold and longer; X first → X, Y first → Y (first-shown twice: a flip).
        // p2: Y gold, X longer; both orders pick Y (no flip, right twice).
        // p3: X gold, equal length; X first → invalid, Y first → X.
        // p4: Y gold, Y longer; X first → tie, Y first → Y.
        let pairs = [
            pair("p1", 30.0, 10.0, Label::X),
            pair("p2", 20.0, 10.0, Label::Y),
            pair("p3", 10.0, 10.0, Label::X),
            pair("p4", 5.0, 9.0, Label::Y),
        ];
        let o = [obs(Some(1.0), Some(1.0)), obs(Some(0.0), Some(1.0)), obs(None, Some(0.0)), obs(Some(0.5), Some(1.0))];
        let tally = Tally { pairs: 4, verdicts: 8, invalid: 1, missing: 0 };
        let r = judge_row("J", Some("CoT"), &pairs, &o, tally, 0.95);
        assert_eq!((r.pairs, r.verdicts, r.invalid, r.missing), (4, 8, 1, 0));
        // Both-valid pairs: p1 (flip), p2, p4 (tie vs Y: different winners → flip).
        assert_eq!((r.flips.count, r.flips.n), (2.0, 3));
        // First-shown credits: p1 1 + 1, p2 0 + 1, p3 (Y first picks X) 0, p4 ½ + 1 → 4.5 / 7.
        assert_eq!((r.first_shown.count, r.first_shown.n), (4.5, 7));
        // Longer (p1 X, p2 X, p4 Y): p1 1 + 0, p2 0 + 0, p4 ½ + 1 → 2.5 / 6.
        assert_eq!((r.longer_wins.count, r.longer_wins.n), (2.5, 6));
        // Gold: p1 1 + 0, p2 1 + 1, p3 1, p4 ½ + 1 → 5.5 / 7.
        assert_eq!((r.accuracy.count, r.accuracy.n), (5.5, 7));
        // Order-averaged P(X wins) = (y(X first) + 1 − y(Y first)) / 2: p1 ½ (tie, ½), p2 0 (Y,
        // right), p4 ¼ (Y, right) → 2.5 / 3.
        assert_eq!((r.averaged_accuracy.count, r.averaged_accuracy.n), (2.5, 3));
        // Gold winner is the longer answer in p1 and p4, not p2 (p3 has equal lengths).
        assert_eq!((r.gold_longer.count, r.gold_longer.n), (2.0, 3));
        let t = crate::report::audit::judge_tables(&[r]);
        assert!(t.contains("### J\n"), "{t}");
        assert!(
            t.contains("| CoT | 4 | 2/3 = 0.67 | 4.5/7 = 0.64 | 2.5/6 = 0.42 | 5.5/7 = 0.79 | 2.5/3 = 0.83 | 1 |"),
            "{t}"
        );
    }
}

//! The bias audit as written and shown (docs/audit.md): `audit.json` ([`AuditOutput`]; a
//! recorded audit's [`RecordedAudit`]), the tutorial's swap and probe tables, the printed audit
//! with its rates, the table per recorded judge and its plot (the statistics are
//! [`crate::analysis::audit`] and [`crate::analysis::recorded`]).

use super::plots::PlotError;
use crate::analysis::audit::{self, AuditReport, Label, PairKind, PairRow, SideSummary, Winner};
use crate::analysis::recorded::JudgeRow;
use crate::config::audit::AuditSource;
use crate::domain::verdict::Usage;
use serde::Serialize;
use std::fmt::Write;
use std::path::{Path, PathBuf};

fn w_name(w: Option<Winner>) -> &'static str {
    w.map(Winner::name).unwrap_or("-")
}

fn truth_name(r: &PairRow) -> &'static str {
    match (r.truth, r.x.quality, r.y.quality) {
        (Some(t), _, _) => t.name(),
        (None, Some(a), Some(b)) if a == b => "=",
        _ => "?",
    }
}

/// The swap table (tutorial): pair / X(q,words) / Y(q,words) / X-1st / Y-1st / flip / true, over the
/// entries the swap test ran on.
pub fn swap_table(r: &AuditReport) -> String {
    let rows: Vec<&PairRow> = r.rows.iter().filter(|x| x.kind == r.position.on).collect();
    let w = rows.iter().map(|x| crate::domain::fmt::display_width(&x.id)).max().unwrap_or(4).max(4);
    let sw = rows.iter().map(|x| fmt_side(&x.x).len().max(fmt_side(&x.y).len())).max().unwrap_or(12).max(12);
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:<w$} {:>sw$} {:>sw$} {:>6} {:>6} {:>5} {:>5}",
        "pair", "X(q,words)", "Y(q,words)", "X-1st", "Y-1st", "flip", "true"
    );
    for x in rows {
        let flip = match x.flip {
            Some(true) => "YES",
            Some(false) => ".",
            None => "-",
        };
        let _ = writeln!(
            s,
            "{:>w$} {:>sw$} {:>sw$} {:>6} {:>6} {:>5} {:>5}",
            crate::domain::fmt::Col(&x.id),
            fmt_side(&x.x),
            fmt_side(&x.y),
            w_name(x.verdict_xfirst),
            w_name(x.verdict_yfirst),
            flip,
            truth_name(x)
        );
    }
    s
}

/// The probe table (tutorial): pair / X words / Y words / longer / winner (order-averaged), plus a
/// `rendered` column when probes carry renderings.
pub fn probe_table(r: &AuditReport) -> String {
    let rows: Vec<&PairRow> = r.rows.iter().filter(|x| x.kind == PairKind::Probe).collect();
    let w = rows.iter().map(|x| crate::domain::fmt::display_width(&x.id)).max().unwrap_or(7).max(7);
    let rend = rows.iter().any(|x| x.rendered.is_some());
    let mut s = String::new();
    let _ = write!(s, "{:>w$}{:>9}{:>9}{:>8}{:>8}", "pair", "X words", "Y words", "longer", "winner");
    if rend {
        let _ = write!(s, "  rendered");
    }
    s.push('\n');
    for x in rows {
        let _ = write!(
            s,
            "{:>w$}{:>9}{:>9}{:>8}{:>8}",
            crate::domain::fmt::Col(&x.id),
            fmt_num(x.x.words),
            fmt_num(x.y.words),
            x.longer.map(Label::name).unwrap_or("="),
            w_name(x.averaged.map(|a| a.winner))
        );
        if rend {
            let name = x.rendered.map(|l| {
                let side = if l == Label::X { &x.x } else { &x.y };
                format!("{} ({})", l.name(), side.rendering.as_deref().unwrap_or(""))
            });
            let _ = write!(s, "  {}", name.unwrap_or_else(|| "-".into()));
        }
        s.push('\n');
    }
    s
}

/// The printed audit: the swap table and position-bias rate, the probe table and longer-wins
/// rate, the naive and order-averaged disagreement, the averaged flip rate and the survivors.
pub fn report_text(r: &AuditReport) -> String {
    let mut s = String::new();
    let what = if r.position.on == PairKind::Pair { "pairs" } else { "probes (no pairs given)" };
    let _ = writeln!(s, "Position bias: each of the {what} judged in both orders\n");
    s.push_str(&swap_table(r));
    let f = &r.position.flips;
    let _ = writeln!(s, "\n  position-bias rate = flips / pairs = {}   {}", f.fraction(), f.interval());
    let w = &r.position.first_shown;
    let _ = writeln!(
        s,
        "  first-shown wins = verdicts won by the answer shown first / verdicts naming a winner = {}   {}",
        w.fraction(),
        w.interval()
    );
    if let Some(v) = &r.verbosity {
        let _ = writeln!(s, "\nVerbosity bias: equal-quality probes, order-averaged verdict\n");
        s.push_str(&probe_table(r));
        let l = &v.longer_wins;
        let _ = writeln!(s, "\n  verbosity-bias rate = longer-wins / pairs = {}   {}", l.fraction(), l.interval());
        if let Some(rw) = &v.rendered_wins {
            let _ =
                writeln!(s, "  rendering-bias rate = rendered-wins / pairs = {}   {}", rw.fraction(), rw.interval());
        }
        if v.equal_words > 0 {
            let _ = writeln!(
                s,
                "  ({} with equal words left out of longer-wins)",
                crate::domain::fmt::count(v.equal_words, "probe")
            );
        }
    }
    let a = &r.averaging;
    let _ = writeln!(s, "\nOrder averaging, against the true winner\n");
    if a.naive_disagreement.n == 0 {
        let _ = writeln!(s, "  no pair with a known true winner: disagreement not measured");
    } else {
        let (n, c) = (&a.naive_disagreement, &a.averaged_disagreement);
        let _ = writeln!(
            s,
            "  naive judge (X always first):  disagreement with truth = {}   {}",
            n.fraction(),
            n.interval()
        );
        let _ = writeln!(
            s,
            "  corrected (both orders avg):   disagreement with truth = {}   {}",
            c.fraction(),
            c.interval()
        );
    }
    let _ = writeln!(
        s,
        "  corrected position-bias rate:  {}  (order can no longer flip a verdict)   {}",
        a.averaged_flips.fraction(),
        a.averaged_flips.interval()
    );
    if a.naive_disagreement.n > 0 {
        if a.survivors.is_empty() {
            let _ = writeln!(s, "  not fixed by order averaging: none");
        } else {
            // A naive error averaging left, apart from a right naive verdict it turned into a tie
            // (or, with soft verdicts, the wrong way): the two say different things.
            let names = |naive_wrong: bool| -> Vec<&str> {
                a.survivors.iter().filter(|v| v.naive_wrong == naive_wrong).map(|v| v.id.as_str()).collect()
            };
            let (left, made) = (names(true), names(false));
            if !left.is_empty() {
                let _ = writeln!(s, "  not fixed by order averaging: {}", left.join(", "));
            }
            if !made.is_empty() {
                let what = if a.survivors.iter().filter(|v| !v.naive_wrong).all(|v| v.averaged == Winner::Tie) {
                    "a tie"
                } else {
                    "a tie or wrong"
                };
                let _ = writeln!(s, "  right in the naive verdict, {what} after order averaging: {}", made.join(", "));
            }
            for v in &a.survivors {
                let row = r.rows.iter().find(|x| x.id == v.id).expect("survivor row");
                let why = if v.averaged == Winner::Tie
                    && row.verdict_xfirst == Some(Winner::Tie)
                    && row.verdict_yfirst == Some(Winner::Tie)
                {
                    "the judge called it a tie in both orders".to_owned()
                } else if v.averaged == Winner::Tie {
                    "the two orders disagree: a tie".to_owned()
                } else if v.longer_won {
                    format!(
                        "the longer answer won ({} vs {} words), as a verbosity bias would have it",
                        fmt_num(if v.averaged == Winner::X { row.x.words } else { row.y.words }),
                        fmt_num(if v.averaged == Winner::X { row.y.words } else { row.x.words })
                    )
                } else {
                    "not explained by length".to_owned()
                };
                let _ = writeln!(
                    s,
                    "    {}: averaged verdict {}, true winner {}; {}{}",
                    v.id,
                    v.averaged.name(),
                    v.truth.name(),
                    why,
                    if v.naive_wrong { "" } else { " (the naive verdict was right)" }
                );
            }
        }
    }
    if !r.excluded.is_empty() {
        let _ = writeln!(s, "\n  {} pairs left out (missing verdicts):", r.excluded.len());
        for e in &r.excluded {
            let _ = writeln!(s, "    {}: {}", e.id, e.reason);
        }
    }
    s
}

fn fmt_num(v: f64) -> String {
    if (v - v.round()).abs() < 1e-9 { format!("{:.0}", v.round()) } else { format!("{v:.2}") }
}

fn fmt_side(s: &SideSummary) -> String {
    format!("({},{})", s.quality.map(fmt_num).unwrap_or_else(|| "?".into()), fmt_num(s.words))
}

/// Query counts of one invocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct QueryCounts {
    /// Ordered queries the audit needs (2 per pair).
    pub total: usize,
    /// Of those, already in the verdict log.
    pub cached: usize,
    /// Sent in this invocation and stored.
    pub new: usize,
    /// Sent in this invocation and failed (nothing stored; re-run to retry).
    pub failed: usize,
    /// Not sent: the budget had no room for them (`budget.max_comparisons` reached, or
    /// `budget.max_usd`, after an overrun at the raised worst case); raise it and re-run.
    pub unsent: usize,
    /// Which limit kept them: `budget.max_comparisons` or `budget.max_usd` (none when all
    /// were sent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unsent_because: Option<&'static str>,
}

/// audit.json: the audit's source, judge, cost and the full [`AuditReport`].
#[derive(Debug, Clone, Serialize)]
pub struct AuditOutput {
    /// Audit name.
    pub name: String,
    /// Judge description.
    pub judge: String,
    /// Where the pairs came from.
    pub source: AuditSource,
    /// Query counts of this invocation.
    pub queries: QueryCounts,
    /// Spend over every stored verdict of this audit (USD).
    pub spend_usd: f64,
    /// Tokens over every stored verdict of this audit.
    pub usage: Usage,
    /// Notes for the reader (probe assumption, averaging rule, failures).
    pub notes: Vec<String>,
    /// Stored invalid verdicts of this audit by reason: count and share of all its stored
    /// verdicts.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub invalid_by_reason:
        std::collections::BTreeMap<crate::domain::verdict::InvalidReason, crate::domain::verdict::ReasonCount>,
    /// Pair sides (`pair/x`, `pair/y`) whose text holds verdict-shaped text (the judge sees it
    /// unchanged; lines quoted from it never count as the judge's verdict).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub verdict_shaped: Vec<crate::domain::verdict::VerdictShaped>,
    /// Counters of a live judge in this invocation (requests, retries, replies, invalid ones).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub judge_stats: Option<crate::judge::JudgeStats>,
    /// The measurements.
    #[serde(flatten)]
    pub report: AuditReport,
}

/// audit.json of an audit on recorded verdicts: one row per recorded judge × prompting strategy.
#[derive(Debug, Clone, Serialize)]
pub struct RecordedAudit {
    /// Audit name.
    pub name: String,
    /// The recording.
    pub recording: PathBuf,
    /// Where the pairs came from.
    pub source: AuditSource,
    /// Pairs in the pairs file.
    pub pairs: usize,
    /// Pairs with a known winner whose winner is the longer answer / those of unequal length.
    pub gold_longer: audit::Rate,
    /// One row per recorded judge with verdicts on these pairs, in recording order.
    pub judges: Vec<JudgeRow>,
    /// Notes for the reader.
    pub notes: Vec<String>,
}

/// audit.md of a recorded audit: header, definitions, a table per judge, notes.
pub fn recorded_text(o: &RecordedAudit) -> String {
    use crate::report::md;
    let src = match &o.source {
        AuditSource::Pairs { file } => format!("pairs file {}", md::text(&file.display().to_string())),
        AuditSource::Pool { file, pool_id, transform } => format!(
            "pool {} of {} ({} probes)",
            md::text(pool_id),
            md::text(&file.display().to_string()),
            transform.name()
        ),
    };
    let mut s = format!(
        "# Audit \"{}\": {} recorded judge × prompting-strategy combinations from {}\n\n{} pairs from {src}; the gold winner is the longer answer in {} of the pairs with a known winner and unequal lengths.\n\n",
        md::text(&o.name),
        o.judges.len(),
        md::text(&o.recording.display().to_string()),
        o.pairs,
        o.gold_longer.fraction()
    );
    s.push_str(
        "Each rate is count/n over valid verdicts (invalid ones are counted apart): flip rate over pairs with both orders valid; \
         first-shown picks, longer wins and accuracy over ordered verdicts; order-averaged accuracy over pairs \
         (both orders right 1, a flip ½, both wrong 0).\n\n",
    );
    s.push_str(&judge_tables(&o.judges));
    for n in &o.notes {
        s.push_str(&format!("note: {}\n", md::prose(n)));
    }
    s
}

/// Flip rate (x) against accuracy (y), one point per judge × prompting strategy, one colour per judge.
///
/// # Errors
/// [`PlotError`].
pub fn flip_vs_accuracy(o: &RecordedAudit) -> Result<String, PlotError> {
    use crate::report::plots::{Series, scatter_chart};
    let mut series: Vec<Series> = Vec::new();
    for r in &o.judges {
        let (Some(f), Some(a)) = (r.flips.rate, r.accuracy.rate) else { continue };
        let name = if r.judge.is_empty() { "(unnamed judge)".to_owned() } else { r.judge.clone() };
        match series.iter_mut().find(|s| s.name == name) {
            Some(s) => s.points.push((f, a)),
            None => series.push(Series { name, points: vec![(f, a)], err: None }),
        }
    }
    scatter_chart(
        &format!("{}: position flips against accuracy (one point per prompting strategy)", o.name),
        "flip rate (pairs whose verdict changes with the order)",
        "accuracy against gold (ordered verdicts)",
        &series,
        Some((0.0, series.iter().flat_map(|s| s.points.iter().map(|p| p.0)).fold(0.0, f64::max).max(0.1) * 1.05)),
        Some((0.0, 1.0)),
    )
}

/// The printed audit: header (judge, source, queries, spend), the tables and rates, notes.
pub fn summary_text(o: &AuditOutput, dir: &Path) -> String {
    let src = match &o.source {
        AuditSource::Pairs { file } => format!("pairs file {}", file.display()),
        AuditSource::Pool { file, pool_id, transform } => {
            format!("pool {pool_id} of {} ({} probes)", file.display(), transform.name())
        }
    };
    let n_pairs = o.report.rows.iter().filter(|r| r.kind == audit::PairKind::Pair).count();
    let n_probes = o.report.rows.len() - n_pairs;
    let q = &o.queries;
    let mut s = format!(
        "audit {:?}: judge {}\n{} + {} from {src}\nqueries: {} ({} new, {} cached, {} failed{}), spend ${:.4}\n\n",
        o.name,
        o.judge,
        crate::domain::fmt::count(n_pairs, "pair"),
        crate::domain::fmt::count(n_probes, "probe"),
        q.total,
        q.new,
        q.cached,
        q.failed,
        match (q.unsent, q.unsent_because) {
            (0, _) => String::new(),
            (n, why) => format!(", {n} not sent: {} reached", why.unwrap_or("the budget")),
        },
        o.spend_usd
    );
    if !o.invalid_by_reason.is_empty() {
        s.push_str(&crate::report::summary::invalid_line(q.cached + q.new, &o.invalid_by_reason));
        s.push('\n');
    }
    if let Some(j) = &o.judge_stats {
        s.push_str(&crate::report::summary::stats_line(j));
        s.push('\n');
    }
    if !o.verdict_shaped.is_empty() {
        s.push_str(&format!(
            "warning: {} answers contain verdict-shaped text (the judge sees it unchanged; lines quoted from it never count as the judge's verdict):\n",
            o.verdict_shaped.len()
        ));
        for v in &o.verdict_shaped {
            s.push_str(&format!("  {}: {}\n", v.id, v.excerpt));
        }
    }
    if !o.invalid_by_reason.is_empty() || o.judge_stats.is_some() || !o.verdict_shaped.is_empty() {
        s.push('\n');
    }
    s.push_str(&crate::report::audit::report_text(&o.report));
    for n in &o.notes {
        s.push_str(&format!("note: {n}\n"));
    }
    s.push_str(&format!("outputs: {}\n", dir.display()));
    s
}

/// A rate as `count/n = 0.xx` (counts as integers when whole).
fn cell(r: &crate::analysis::audit::Rate) -> String {
    r.fraction()
}

/// One markdown table per judge (rows: prompting strategies in recording order): pairs, flip
/// rate, first-shown picks, longer wins, accuracy, order-averaged accuracy, invalid verdicts.
pub fn judge_tables(rows: &[JudgeRow]) -> String {
    use std::fmt::Write;
    let mut judges: Vec<&str> = Vec::new();
    for r in rows {
        if !judges.contains(&r.judge.as_str()) {
            judges.push(&r.judge);
        }
    }
    let mut s = String::new();
    for j in judges {
        let name = if j.is_empty() { "(unnamed judge)".to_owned() } else { crate::report::md::text(j) };
        let _ = writeln!(s, "### {name}\n");
        s.push_str("| prompting | pairs | flip rate | first-shown picks | longer wins | accuracy | order-averaged accuracy | invalid |\n");
        s.push_str("|---|---|---|---|---|---|---|---|\n");
        for r in rows.iter().filter(|r| r.judge == j) {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} | {} | {} | {} |",
                r.prompting.as_deref().map_or_else(|| "–".to_owned(), crate::report::md::text),
                r.pairs,
                cell(&r.flips),
                cell(&r.first_shown),
                cell(&r.longer_wins),
                cell(&r.accuracy),
                cell(&r.averaged_accuracy),
                r.invalid
            );
        }
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::audit::testutil::tutorial;

    #[test]
    fn tutorial_tables_match_the_tutorial_text() {
        let r = tutorial(1.0, 0.02);
        let t = swap_table(&r);
        // Rows copied from the tutorial.
        for line in [
            "pair   X(q,words)   Y(q,words)  X-1st  Y-1st  flip  true",
            " p01       (5,40)       (6,20)      X      Y   YES     Y",
            " p05       (9,30)       (4,40)      X      X     .     X",
            " p11       (5,70)       (6,15)      X      Y   YES     Y",
        ] {
            assert!(t.lines().any(|l| l == line), "{line:?} not in\n{t}");
        }
        let p = probe_table(&r);
        for line in ["   pair  X words  Y words  longer  winner", "    q01       50       20       X       X"] {
            assert!(p.lines().any(|l| l == line), "{line:?} not in\n{p}");
        }
        let text = report_text(&r);
        assert!(text.contains("position-bias rate = flips / pairs = 7/12 = 0.58"), "{text}");
        assert!(text.contains("verbosity-bias rate = longer-wins / pairs = 5/5 = 1.00"), "{text}");
        assert!(text.contains("not fixed by order averaging: p11\n"), "{text}");
    }

    /// A judge that calls every pair a tie: the averaged tie is not "the two orders disagree".
    #[test]
    fn a_tie_in_both_orders_is_said_as_such() {
        let pairs = crate::analysis::audit::parse_pairs(crate::analysis::audit::testutil::TUTORIAL).unwrap();
        let tie = crate::analysis::audit::BothOrders {
            y_xfirst: Some(0.5),
            y_yfirst: Some(0.5),
            margin_xfirst: None,
            margin_yfirst: None,
            missing: None,
        };
        let r = crate::analysis::audit::analyse(&pairs, &vec![tie; pairs.len()], 0.95);
        let text = report_text(&r);
        assert!(
            text.contains(": averaged verdict tie, true winner Y; the judge called it a tie in both orders\n"),
            "{text}"
        );
        assert!(!text.contains("the two orders disagree"), "{text}");
    }
}

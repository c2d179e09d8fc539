//! The end-of-run summary printed by `run` (and the shared lines `fit` prints): config
//! spellings (`bias_aware`, `topk`, `max_comparisons`), one number format
//! ([`super::table::num`]), units for each coefficient, which ranking is reported and why, both
//! rankings side by side, and the notes.

use super::schema::{Reporting, RunResult, StopReason};
use super::table::{coef_unit, fmt_nats, name, ranking_table, usd};
use crate::analysis::ranking::RankingKind;
use crate::model::profile::Identifiability;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::Path;

/// The ranking table shows at most this many rows, or k + 10 when that is more.
const TABLE_ROWS: usize = 50;

/// Why a resumed run that asked nothing stopped at its budget (a budget lowered below what the
/// run folder already holds buys nothing), so the stop is not read as the budget passed: which
/// limit the stored verdicts or the folder's books (`spend_usd`, USD) already reach, and how to go
/// on; `None` for another stop reason. Shared by the single-judge and the panel summaries.
pub fn budget_reached(stop: StopReason, spend_usd: f64, max_usd: Option<f64>) -> Option<String> {
    match (stop, max_usd) {
        // Both limits reached: raising one alone does not let the run go on (hunt 58 F9).
        (StopReason::MaxComparisons, Some(m)) if spend_usd >= m => {
            let (spent, max) = super::table::usd_distinct(spend_usd, m);
            Some(format!(
                "the stored verdicts already reach max_comparisons, and the run folder's books ({spent}) already reach max_usd {max}; raise both (budget.max_comparisons, --max-comparisons; budget.max_usd, --max-usd) to go on"
            ))
        }
        (StopReason::MaxComparisons, _) => Some(
            "the stored verdicts already reach max_comparisons; raise it (budget.max_comparisons, --max-comparisons) to go on"
                .into(),
        ),
        (StopReason::MaxUsd, Some(m)) => {
            let (spent, max) = super::table::usd_distinct(spend_usd, m);
            let left = if spend_usd >= m {
                format!("already reach max_usd {max}")
            } else {
                format!("leave {} of max_usd {max}, less than the next query's worst-case cost", usd(m - spend_usd))
            };
            Some(format!("the run folder's books ({spent}) {left}; raise it (budget.max_usd, --max-usd) to go on"))
        }
        _ => None,
    }
}

/// Why a run that asked queries stopped at max_usd with money left (`spend_usd`, the folder's
/// books, USD): every query still to ask is reserved at its worst-case cost before it is sent,
/// and none fits in what is left (a panel's dearer judge can leave much of the budget). `None`
/// for another stop, or when the books are within 1 % of max_usd (the usual last query's worth,
/// which the spend beside max_usd shows). `held_usd`: what the run's judge left for the config's
/// gate (asked after the run, its spend in `spend_usd` once it ran).
pub fn budget_left(stop: StopReason, spend_usd: f64, max_usd: Option<f64>, held_usd: f64) -> Option<String> {
    let m = max_usd.filter(|&m| stop == StopReason::MaxUsd && spend_usd < 0.99 * m)?;
    // Below a cent, 4 decimals would say $0.000137 left as "$0.0001": 6 are written.
    let fine = |x: f64| if m < 0.01 { format!("${x:.6}") } else { usd(x) };
    let (spent, max) = if m < 0.01 { (fine(spend_usd), fine(m)) } else { super::table::usd_distinct(spend_usd, m) };
    if held_usd > 0.0 {
        // The books may hold the gate's spend by now: what was left at the stop is not said.
        return Some(format!(
            "{} of max_usd {max} left ({spent} booked, a gate's trusted judge included): the run's judge held {} of max_usd back for the gate's trusted judge (its queries at their worst case, asked after the run), and no query still to ask fit in the rest at its worst-case cost, which is reserved before sending; `run --dry-run` shows the cost per query",
            fine(m - spend_usd),
            fine(held_usd)
        ));
    }
    Some(format!(
        "{} of max_usd {max} left ({spent} booked): less than the worst-case cost of any query still to ask, which is reserved before sending; `run --dry-run` shows the cost per query",
        fine(m - spend_usd)
    ))
}

/// What the run folder's books hold beside this run's verdicts (a gate's trusted judge, the
/// fingerprint checks, earlier settings), against max_usd; `None` when they hold nothing else.
/// The summary and report.md/report.html say the same.
pub fn folder_line(f: &super::schema::FolderSpend) -> Option<String> {
    (f.other_usd > 0.0).then(|| {
        format!(
            "run folder: its books hold {} in all{} ({} of it not for this run's verdicts: {}){}",
            usd(f.spend_usd),
            f.max_usd.map(|m| format!(" of max_usd {}", usd(m))).unwrap_or_default(),
            usd(f.other_usd),
            other_spend_parts(f.other_usd, f.fingerprint_usd, f.gate_trusted_usd, &usd),
            if f.possibly_billed > 0 && f.possibly_billed_usd > 0.0 {
                format!("; {} request(s) booked as possibly billed, {}", f.possibly_billed, usd(f.possibly_billed_usd))
            } else {
                String::new()
            }
        )
    })
}

/// What a run's spend holds besides the verdicts' billed tokens, one clause each: requests
/// booked as possibly billed (at their worst case, USD) and queries in an open batch job (at
/// their reservation, USD). The summary and report.md/report.html say the same.
pub fn spend_includes(r: &RunResult) -> Vec<String> {
    let mut parts = Vec::new();
    if r.possibly_billed > 0 && r.possibly_billed_usd > 0.0 {
        parts.push(format!(
            "{} possibly billed, {} at their worst case",
            r.possibly_billed,
            usd(r.possibly_billed_usd)
        ));
    }
    if let Some(j) = &r.in_open_batch_job {
        parts.push(format!(
            "{} quer{} in the open batch job, reserved at {} until its results are booked",
            j.queries,
            if j.queries == 1 { "y" } else { "ies" },
            usd(j.reserved_usd)
        ));
    }
    parts
}

/// The human-readable end-of-run summary.
pub fn run_summary(r: &RunResult, dir: &Path) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "run {:?}: pool {}, {} model, judge {}, strategy {}",
        r.name,
        r.pool_id,
        name(&r.model),
        r.judge,
        name(&r.strategy)
    );
    let _ = write!(
        s,
        "stopped: {}; {} comparisons ({} valid, {} invalid, {} failed{}), spend {}",
        if r.stop_reason == StopReason::Confident {
            // The stop's ε is the config's; the sets below are at certify.epsilon.
            "confident (the top-k certified at acquisition.confidence's ε; the sets below are at certify.epsilon)"
                .to_owned()
        } else {
            name(&r.stop_reason)
        },
        r.comparisons,
        r.valid,
        r.invalid,
        r.failed,
        if r.not_run > 0 { format!(", {} of them never run by their batch job", r.not_run) } else { String::new() },
        usd(r.spend_usd)
    );
    let parts = spend_includes(r);
    if !parts.is_empty() {
        let _ = write!(s, " (includes {})", parts.join("; and "));
    }
    if r.duplicate_records > 0 {
        let _ = write!(s, "; {} duplicate records not counted (their cost is)", r.duplicate_records);
    }
    s.push('\n');
    // (A resumed run that asked nothing says why on its `resumed:` line.)
    let asked_now = r.fit.reporting.session.is_none_or(|sess| sess.asked > 0);
    if asked_now
        && let Some(why) = budget_left(
            r.stop_reason,
            r.folder_spend.spend_usd,
            r.folder_spend.max_usd,
            r.folder_spend.held_for_gate_usd,
        )
    {
        let _ = writeln!(s, "stopped at the budget: {why}");
    }
    s.push_str(&certified_lines(r.k, &r.fit.reporting));
    if let Some(line) = folder_line(&r.folder_spend) {
        let _ = writeln!(s, "{line}");
    }
    if let Some(o) = &r.overrun {
        let _ = writeln!(s, "{}", overrun_line(o));
    }
    if let Some(m) = &r.verdicts_report.stop_message {
        let _ = writeln!(s, "stopped early: {m}");
    }
    if r.invalid > 0 {
        s.push_str(&crate::report::summary::invalid_line(r.comparisons, &r.verdicts_report.invalid_by_reason));
        s.push('\n');
    }
    if let Some(e) = &r.last_error {
        let _ = writeln!(s, "judge failing: {e}");
    }
    if let Some(b) = &r.batch_pending {
        // The message ends with its way out (run again, or run the config that sent the job).
        let _ = writeln!(s, "batch job open: {b}");
    }
    if let Some(sess) = r.fit.reporting.session
        && sess.reused + sess.from_open_job > 0
    {
        let asked = if sess.asked == 1 { "1 query".to_string() } else { format!("{} queries", sess.asked) };
        let from_job = match sess.from_open_job {
            0 => String::new(),
            n => format!(
                ", {} booked from the batch job an earlier run left open",
                crate::domain::fmt::count(n, "verdict")
            ),
        };
        let _ = write!(
            s,
            "resumed: {} reused{from_job}, {asked} asked in this run",
            crate::domain::fmt::count(sess.reused, "stored verdict")
        );
        if sess.asked == 0
            && let Some(why) = budget_reached(r.stop_reason, r.folder_spend.spend_usd, r.folder_spend.max_usd)
        {
            let _ = write!(s, ": {why}");
        }
        s.push('\n');
    }
    if let Some(j) = &r.judge_stats {
        s.push_str(&crate::report::summary::stats_line(j));
        s.push('\n');
    }
    if let Some(t) = &r.throughput {
        s.push_str(&t.line());
        s.push('\n');
    }
    if let Some(w) = r.verdicts_report.strong_preference_weight {
        let _ = writeln!(
            s,
            "strong preferences ([[A>>B]], [[B>>A]]): {} verdicts, weight {w} on their likelihood terms",
            r.verdicts_report.strong_preferences
        );
    }
    let shaped = &r.verdicts_report.verdict_shaped_items;
    if !shaped.is_empty() {
        let _ = writeln!(
            s,
            "warning: {} candidate answers contain verdict-shaped text (the judge sees it unchanged; lines quoted from it never count as the judge's verdict):",
            shaped.len()
        );
        for v in shaped {
            let _ = writeln!(s, "  {}: {}", v.id, v.excerpt);
        }
    }
    if let Some(rp) = &r.replay {
        s.push_str(&super::table::replay_line(rp));
        s.push('\n');
    }
    if !r.quarantined.is_empty() {
        let _ = writeln!(
            s,
            "set aside after repeated failures (not asked again in this run; a re-run tries them again): {} pair(s)",
            r.quarantined.len()
        );
        for q in &r.quarantined {
            let _ =
                writeln!(s, "  {} vs {}: {} failed queries; last error: {}", q.a, q.b, q.failed_queries, q.last_error);
        }
    }
    s.push_str(&coefficient_lines(
        r.fit.kappa,
        r.fit.kappa_sd,
        &r.fit.c,
        &r.fit.c_sd,
        &r.fit.identifiability,
        &r.fit.reporting,
    ));
    s.push_str(&ranking_block(
        r.k,
        r.model == crate::model::summary::ModelKind::BiasAware && !r.fit.c.is_empty(),
        &r.fit.reporting,
        &r.fit.ranking,
        &r.fit.topk,
        r.fit.recall_at_k,
        r.valid,
        no_ranking(r).as_deref(),
    ));
    if let Some(g) = &r.gate {
        let _ = writeln!(s, "gate ({}): {}", g.file.display(), g.decision.text());
    }
    if let Some(sys) = &r.fit.reporting.systems {
        s.push('\n');
        s.push_str(&super::systems::summary_block(sys));
    }
    // The reason there is no ranking is printed once, above; with no valid comparison a
    // coefficient is the prior's by construction, which needs no note.
    let shown = no_ranking(r);
    for n in r.fit.notes.iter().filter(|n| Some(*n) != shown.as_ref()) {
        if r.valid == 0 && n.contains("is prior-selected") {
            continue;
        }
        let _ = writeln!(s, "note: {n}");
    }
    let _ = writeln!(s, "outputs: {}", dir.display());
    s
}

/// Why a result has no ranking to show: no valid comparison, or a failed fit.
pub fn no_ranking(r: &RunResult) -> Option<String> {
    if r.stop_reason == crate::report::schema::StopReason::FitFailed {
        let why = r.fit.notes.first().cloned().unwrap_or_else(|| "the fit failed".into());
        return Some(why);
    }
    (r.valid == 0).then(|| {
        r.fit
            .notes
            .iter()
            .find(|n| n.starts_with("no valid comparison"))
            .cloned()
            .unwrap_or_else(|| "no valid comparison".into())
    })
}

/// κ̂, every ĉ with its unit and identifiability, and the comparison graph.
pub fn coefficient_lines(
    kappa: f64,
    kappa_sd: f64,
    c: &BTreeMap<String, f64>,
    c_sd: &BTreeMap<String, f64>,
    ident: &BTreeMap<String, Identifiability>,
    rep: &Reporting,
) -> String {
    let mut s = String::new();
    // A κ̂ that rounds to 0 is said as 0.000, not -0.000.
    let kappa = if kappa.abs() < 5e-4 { 0.0 } else { kappa };
    let _ = writeln!(s, "position effect κ = {kappa:.3} ± {kappa_sd:.3} logits (> 0 favours the answer shown first)");
    for (n, v) in c {
        let sd = c_sd.get(n).copied().unwrap_or(f64::NAN);
        let _ =
            write!(s, "c[{n}] = {} ± {} {}", fmt_coef(*v), fmt_coef(sd), coef_unit(n, rep.transforms.get(n).copied()));
        match ident.get(n) {
            Some(e) => match e.range_nats {
                Some(r) => {
                    let _ = writeln!(s, "; profile range {} → {}", fmt_nats(r), short_verdict(e));
                }
                None => {
                    let _ = writeln!(s, "; {}", e.verdict_text());
                }
            },
            None => s.push('\n'),
        }
    }
    let g = &rep.graph;
    if g.components > 1 {
        let _ = writeln!(s, "comparison graph: {}", g.summary_text());
    }
    s
}

/// A coefficient: 3 decimals, or [`super::table::num`] when that would print 0.000.
/// A coefficient in logits: 3 decimals, a small one in significant digits, and below 1e-12
/// (rounding of a value that is 0, e.g. `-4.8e-17`) as 0.
pub fn fmt_coef(x: f64) -> String {
    if x.abs() < 1e-12 {
        "0.000".into()
    } else if x.abs() < 5e-4 {
        super::table::num(x)
    } else {
        format!("{x:.3}")
    }
}

fn short_verdict(e: &Identifiability) -> &'static str {
    if e.identified() { "identified by the design" } else { "prior-selected" }
}

/// What the data certify about the top-k at ε (docs/model.md, "Certified top-k"): the in, out
/// and undecided sets, or why nothing is certified. The summary leads with it.
pub fn certified_lines(k: usize, rep: &Reporting) -> String {
    certified_set_lines(k, &rep.certified, rep.no_signal.as_ref())
}

/// The certified top-k at ε as [`certified_lines`] words it, for a single judge's or a panel's
/// sets (`no_signal`: a judge without signal, warned below the sets).
pub fn certified_set_lines(
    k: usize,
    c: &super::schema::CertifiedTopk,
    no_signal: Option<&crate::analysis::certify::NoSignal>,
) -> String {
    // Up to 6 decimals: ε = 0.49999 must not read as 0.5.
    let exact = |x: f64| {
        if x != 0.0 && x.abs() < 1e-3 {
            return format!("{x:e}");
        }
        let t = format!("{x:.6}");
        t.trim_end_matches('0').trim_end_matches('.').to_string()
    };
    let eps = exact(c.epsilon);
    let mut s = String::new();
    if let Some(why) = &c.withheld {
        let _ = writeln!(s, "certified top-{k} (ε = {eps}): nothing certified: {why}");
        return s;
    }
    let lo = exact(1.0 - c.epsilon);
    let each = |ids: &[String]| if ids.len() == 1 { "π" } else { "each π" };
    if c.claimed {
        let _ = writeln!(s, "certified top-{k} (ε = {eps}): {} ({} ≥ {lo})", c.inside.join(", "), each(&c.inside));
    } else {
        let open = k.saturating_sub(c.inside.len());
        // "the other" only when some places are decided.
        let other = if c.inside.is_empty() { "" } else { "other " };
        let places = if open == 1 { format!("the {other}1 place") } else { format!("the {other}{open} places") };
        let rest = match c.undecided.len() {
            // Every other item is out: the remaining places are spread thin over them.
            0 => format!(
                "no item is undecided: {places} {} spread over items each with π ≤ {eps}",
                if open == 1 { "is" } else { "are" }
            ),
            // As many undecided as open places: each is the likeliest, its π still below 1 − ε
            // (the items out share what is left of π, each at most ε).
            n if n == open => format!(
                "{} {} likely to take {places} but not certain (π < {lo}: the items out together still hold the rest of π)",
                list_some(&c.undecided, 12),
                if n == 1 { "is" } else { "are" }
            ),
            1 => format!("{} competes for {places}", c.undecided[0]),
            _ => format!("{} compete for {places}", list_some(&c.undecided, 12)),
        };
        let _ = writeln!(
            s,
            "top-{k} not certified (ε = {eps}): {} of {k} place{} decided{}; {rest}",
            c.inside.len(),
            if k == 1 { "" } else { "s" },
            if c.inside.is_empty() {
                String::new()
            } else {
                format!(" ({}, {} ≥ {lo})", c.inside.join(", "), each(&c.inside))
            },
        );
    }
    let out = if c.outside.is_empty() {
        "none".to_string()
    } else {
        format!("{} ({})", c.outside.len(), list_some(&c.outside, 8))
    };
    let _ = writeln!(s, "  out (π ≤ {eps}): {out}");
    if let Some(ns) = no_signal {
        let _ = writeln!(s, "warning: {}", ns.text());
    }
    s
}

/// "top-3 by θ̂: M12, then 4 bases tied for the last 2 places (…); the data do not say which,
/// so no recall is claimed": a top-k with a tie at its k-th place.
pub fn tied_line(k: usize, topk: &[String], tied: &[String]) -> String {
    let open = k.saturating_sub(topk.len());
    format!(
        "top-{k} by θ̂: {}{} tied for the last {open} place{} ({}); the data do not say which, so no recall is claimed",
        if topk.is_empty() { String::new() } else { format!("{}, then ", topk.join(", ")) },
        crate::domain::fmt::count(tied.len(), "base"),
        if open == 1 { "" } else { "s" },
        tied.join(", ")
    )
}

/// `ids` with each base never compared marked `M1 (never compared)`: its place is the prior's,
/// not the verdicts' (the run summary, `report`, `check` and `compare` mark it alike).
pub fn never_compared_marked(ids: &[String], never: &[String]) -> Vec<String> {
    ids.iter().map(|b| if never.contains(b) { format!("{b} (never compared)") } else { b.clone() }).collect()
}

/// What a recall of a top-k with `unplaced` of its `members` never compared measures: nothing
/// to add when all were compared, else ` (none of the top-3 was compared: the prior's guess, not
/// a result)` or ` (2 of the top-3 never compared: partly the prior's guess)`.
pub fn prior_share_note(k: usize, unplaced: usize, members: usize) -> String {
    match unplaced {
        0 => String::new(),
        n if n == members => format!(" (none of the top-{k} was compared: the prior's guess, not a result)"),
        n => format!(" ({n} of the top-{k} never compared: partly the prior's guess)"),
    }
}

/// A point top-k with a tie at its boundary: "s1, s2 + 1 of the tied s3, s4" (the bases
/// certainly in, then how many of the tied bases share the remaining places); "s1, s2, s3"
/// without a tie.
pub fn topk_members(k: usize, topk: &[String], tied: &[String]) -> String {
    if tied.is_empty() {
        return topk.join(", ");
    }
    format!(
        "{}{}{} of the tied {}",
        topk.join(", "),
        if topk.is_empty() { "" } else { " + " },
        k.saturating_sub(topk.len()),
        tied.join(", ")
    )
}

/// Up to `n` ids, then "… and N more".
fn list_some(ids: &[String], n: usize) -> String {
    if ids.len() <= n { ids.join(", ") } else { format!("{}, … and {} more", ids[..n].join(", "), ids.len() - n) }
}

/// Which ranking is reported and why, the table of both, and the point top-k lines; instead of
/// a table, the reason when there is no ranking (`no_ranking`: nothing compared, a failed fit).
#[allow(clippy::too_many_arguments)]
pub fn ranking_block(
    k: usize,
    both: bool,
    rep: &Reporting,
    rows: &[super::RankRow],
    topk: &[String],
    recall: Option<f64>,
    valid: usize,
    no_ranking: Option<&str>,
) -> String {
    let mut s = String::new();
    if let Some(why) = no_ranking {
        let _ = writeln!(s, "\nno ranking: {why}");
        return s;
    }
    let reported = rep.reported;
    if both {
        let other = match reported {
            RankingKind::Apparent => RankingKind::Corrected,
            RankingKind::Corrected => RankingKind::Apparent,
        };
        let _ = writeln!(
            s,
            "reported ranking: {} (report_ranking: {}): {}; the {} ranking is shown beside it",
            reported.what(),
            name(&rep.report_ranking),
            rep.reported_reason,
            if other == RankingKind::Corrected { "bias-corrected" } else { "apparent-quality" }
        );
    }
    s.push('\n');
    // Large pools: the table stops some rows past the top k; result.json has every row.
    let shown = rows.len().min(TABLE_ROWS.max(k + 10));
    s.push_str(&ranking_table(&rows[..shown], k, reported, both, &rep.certified));
    if shown < rows.len() {
        let _ = writeln!(s, "  … {} more rows (every item is in result.json)", rows.len() - shown);
    }
    // A base never compared holds its place by the prior alone (θ̂ = 0; φ̂ = ĉ·x): said under
    // the table, which may rank it high on its covariates.
    let never = &rep.graph.never_compared;
    let unseen: Vec<String> = rows[..shown].iter().map(|r| r.id.clone()).filter(|id| never.contains(id)).collect();
    s.push('\n');
    if valid > 0 && !unseen.is_empty() {
        let _ = writeln!(
            s,
            "never compared ({} of the {shown} {}: {}): their places are the prior's (θ̂ = 0{}), not the verdicts'",
            unseen.len(),
            if shown < rows.len() { "rows shown" } else { "rows" },
            list_some(&unseen, 5),
            if both { ", φ̂ = ĉ·x from their covariates alone" } else { "" }
        );
    }
    let label = if both { format!(" ({}, reported)", reported.name()) } else { String::new() };
    // The top-k's never-compared bases are marked.
    let marked = never_compared_marked(topk, never);
    let topk = &marked;
    if valid == 0 {
        let _ = writeln!(s, "point top-{k}{label}: none: no valid comparison, the ranking is the prior");
    } else {
        let _ = writeln!(s, "point top-{k}{label}: {}", topk_members(k, topk, &rep.topk_tied));
    }
    let unplaced: Vec<&str> = marked.iter().filter_map(|m| m.strip_suffix(" (never compared)")).collect();
    if valid > 0 && !unplaced.is_empty() {
        let _ = writeln!(
            s,
            "  {} never compared: {} place in the top-{k} is the prior's (θ̂ = 0{}), not the verdicts'; a larger budget compares {}",
            unplaced.join(", "),
            if unplaced.len() == 1 { "its" } else { "their" },
            if both && reported == RankingKind::Apparent { ", φ̂ = ĉ·x" } else { "" },
            if unplaced.len() == 1 { "it" } else { "them" }
        );
    }
    // A top-k holding bases never compared measures the prior's guess as much as the data.
    let of_prior = |unplaced: usize, members: usize| prior_share_note(k, unplaced, members);
    if let Some(rec) = recall {
        let _ = writeln!(s, "recall@{k} against gold: {rec:.2}{}", of_prior(unplaced.len(), topk.len()));
    }
    if both && valid > 0 {
        let (other, v) = match reported {
            RankingKind::Apparent => ("bias-corrected", &rep.corrected),
            RankingKind::Corrected => ("apparent", &rep.apparent),
        };
        let mut line = format!("{other} top-{k} (beside): {}", topk_members(k, &v.topk, &v.tied));
        if let Some(rc) = v.recall_at_k {
            let unplaced = v.topk.iter().filter(|b| never.contains(b)).count();
            let _ = write!(line, "; recall@{k} against gold {rc:.2}{}", of_prior(unplaced, v.topk.len()));
        }
        let _ = writeln!(s, "{line}");
    }
    s
}

/// `invalid verdicts: 3 of 40 = 7.5% (no_verdict 2 = 5.0%, refused 1 = 2.5%)`.
pub fn invalid_line(
    total: usize,
    by_reason: &std::collections::BTreeMap<crate::domain::verdict::InvalidReason, crate::domain::verdict::ReasonCount>,
) -> String {
    let invalid: usize = by_reason.values().map(|r| r.count).sum();
    let pct = |n: usize| if total > 0 { 100.0 * n as f64 / total as f64 } else { 0.0 };
    let mut s = format!("invalid verdicts: {invalid} of {total} = {:.1}%", pct(invalid));
    if !by_reason.is_empty() {
        let parts: Vec<String> =
            by_reason.iter().map(|(k, v)| format!("{k} {} = {:.1}%", v.count, 100.0 * v.rate)).collect();
        s.push_str(&format!(" ({})", parts.join(", ")));
    }
    s
}

/// What a run folder's books hold besides this run's verdicts (`other_usd` in all, USD), in
/// words: the judge's fingerprint checks, a gate's trusted judge, and the rest (earlier
/// configs, judges or pools); amounts written by `usd`.
pub fn other_spend_parts(other_usd: f64, fingerprint_usd: f64, gate_usd: f64, usd: &dyn Fn(f64) -> String) -> String {
    let rest = other_usd - fingerprint_usd - gate_usd;
    let mut parts = Vec::new();
    // Below a pico-dollar the rest is rounding of the sums, not spend.
    if rest > 1e-12 {
        parts.push(format!("{} under other settings (earlier configs, judges or pools)", usd(rest)));
    }
    if fingerprint_usd > 0.0 {
        parts.push(format!("{} for the judge's fingerprint checks", usd(fingerprint_usd)));
    }
    if gate_usd > 0.0 {
        parts.push(format!("{} for the gate's trusted judge", usd(gate_usd)));
    }
    if parts.is_empty() {
        parts.push(format!("{} under other settings (earlier configs, judges or pools)", usd(other_usd)));
    }
    parts.join(", ")
}

/// One summary line of a live judge's counters.
pub fn stats_line(j: &crate::judge::JudgeStats) -> String {
    let batch = if j.batch_jobs + j.batch_api_requests > 0 {
        format!(
            "{} batch job{} made, {} Files and Batches API requests (uploads, job reads, result files), ",
            j.batch_jobs,
            if j.batch_jobs == 1 { "" } else { "s" },
            j.batch_api_requests
        )
    } else {
        String::new()
    };
    let mut s = format!(
        "judge: {batch}{} requests, {} retries, failed attempts (429: {}, 5xx: {}, timeouts: {}, connection: {}, malformed: {}), {} other errors, {} invalid replies",
        j.requests,
        j.retries,
        j.rate_limited,
        j.server_errors,
        j.timeouts,
        j.connect_errors,
        j.malformed,
        j.other_errors,
        j.invalid_replies
    );
    if j.replies > 0 {
        s.push_str(&format!(" of {} replies = {:.1}%", j.replies, 100.0 * j.invalid_replies as f64 / j.replies as f64));
    }
    if !j.invalid_by_reason.is_empty() {
        let parts: Vec<String> = j.invalid_by_reason.iter().map(|(k, v)| format!("{k} {v}")).collect();
        s.push_str(&format!(" ({})", parts.join(", ")));
    }
    s.push_str(&format!(", {} re-asks", j.reasks));
    if j.context_overflows > 0 {
        s.push_str(&format!(", {} over context", j.context_overflows));
    }
    if j.usage_missing > 0 {
        s.push_str(&format!(
            ", {} replies without usage or with unreadable token counts (booked at worst case)",
            j.usage_missing
        ));
    }
    if j.soft_verdicts > 0 {
        s.push_str(&format!(", {} soft verdicts", j.soft_verdicts));
    }
    if !j.soft_fallbacks.is_empty() {
        let n: u64 = j.soft_fallbacks.values().sum();
        let parts: Vec<String> = j.soft_fallbacks.iter().map(|(k, v)| format!("{k} {v}")).collect();
        s.push_str(&format!(", {n} hard verdicts although logprobs were asked for ({})", parts.join(", ")));
    }
    if j.in_band_errors > 0 {
        s.push_str(&format!(
            ", {} errors inside 200 replies (handled as 5xx: retried while max_retries allows)",
            j.in_band_errors
        ));
    }
    if j.broken_text_repairs > 0 {
        s.push_str(&format!(
            ", {} replies with broken text (invalid UTF-8 or lone surrogates, decoded as U+FFFD)",
            j.broken_text_repairs
        ));
    }
    if j.in_flight_cuts > 0 {
        s.push_str(&format!(
            "; requests in flight cut {}× after 429s (lowest {}), {}",
            j.in_flight_cuts,
            j.in_flight_lowest.unwrap_or(1),
            match j.in_flight_limit_at_end {
                Some(l) => format!("{l} at the end"),
                None => "restored by the end".to_owned(),
            }
        ));
    }
    s
}

/// A run folder whose books passed `budget.max_usd`.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct BudgetPassed {
    /// What the folder's books hold (USD).
    pub books_usd: f64,
    /// The run's `budget.max_usd` (USD).
    pub max_usd: f64,
    /// Whether replies of the run were billed above their reservations; without one, the books
    /// passed a `max_usd` lowered below what the folder had spent before.
    pub overrun: bool,
}

impl BudgetPassed {
    /// The books against the budget: `None` within it (to 1e-9 USD) or without one.
    pub fn of(books_usd: f64, max_usd: Option<f64>, overrun: bool) -> Option<Self> {
        let max_usd = max_usd?;
        (books_usd > max_usd + 1e-9).then_some(Self { books_usd, max_usd, overrun })
    }

    /// The line, as `run` says it when it exits 1.
    pub fn line(&self) -> String {
        let (books, m) = (self.books_usd, self.max_usd);
        format!(
            "budget passed: the run folder's books hold {}, above budget.max_usd {}{}: {}",
            crate::report::table::usd(books),
            crate::report::table::usd(m),
            if m > 0.0 { format!(" ({:.1}×)", books / m) } else { String::new() },
            if self.overrun {
                "replies were billed above what was reserved for them (the run's `overrun:` line says which)"
            } else {
                "spent before budget.max_usd was lowered to it (a run sends nothing once its books reach max_usd)"
            }
        )
    }
}

/// The line of a run whose folder's books passed `budget.max_usd` ([`BudgetPassed::line`]):
/// `None` within the budget or without one.
pub fn budget_passed(books_usd: f64, max_usd: Option<f64>, overrun: bool) -> Option<String> {
    BudgetPassed::of(books_usd, max_usd, overrun).map(|b| b.line())
}

/// A judge panel's `overrun:` line: [`overrun_line`] naming the judges whose replies passed a
/// bound (`overrun (judge live): …`).
pub fn panel_overrun_line(o: &crate::report::schema::OverrunReport, judges: &[String]) -> String {
    let who = match judges {
        [] => String::new(),
        [one] => format!(" (judge {one})"),
        many => format!(" (judges {})", many.join(", ")),
    };
    overrun_line(o).replacen("overrun: ", &format!("overrun{who}: "), 1)
}

/// The summary's `overrun:` line (docs/live.md, "Overruns"): which bounds the replies passed
/// (prompt tokens, `max_tokens`), what they cost above their reservations and the raised worst
/// case.
pub fn overrun_line(o: &crate::report::schema::OverrunReport) -> String {
    // "N replies billed …(up to T … tokens…); ", none when no reply did. A count the books
    // saturated at (a reply claiming 1e300 tokens) is not a count.
    let part = |n: u64, what: String, most: u64, kind: &str| match n {
        0 => String::new(),
        n => format!(
            "{n} repl{} billed {what} (up to {} {kind}",
            if n == 1 { "y" } else { "ies" },
            if most == u64::MAX { "more than 1.8e19".to_string() } else { most.to_string() }
        ),
    };
    let tokens = match o.max_tokens {
        Some(m) => part(
            o.above_max_tokens,
            format!("above max_tokens {m}"),
            o.most_completion_tokens,
            "output tokens, reasoning included); ",
        ),
        None => String::new(),
    };
    let prompt = part(
        o.above_prompt_bound,
        "more prompt tokens than the prompt has bytes".into(),
        o.most_prompt_tokens,
        "prompt tokens; the reservation counts one per byte); ",
    );
    format!(
        "overrun: {prompt}{tokens}{} repl{} cost {} more than reserved; later reservations used {}× the worst case (the total may pass max_usd by what the {} in flight at the first overrun billed above their reservations)",
        o.replies,
        if o.replies == 1 { "y" } else { "ies" },
        usd(o.excess_usd),
        crate::domain::fmt::num(o.worst_case_factor),
        crate::domain::fmt::count(o.in_flight_at_first as usize, "request")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A κ̂ that rounds to zero reads 0.000, never -0.000 (hunt 48); one that does not keeps its sign.
    #[test]
    fn a_position_effect_that_rounds_to_zero_has_no_sign() {
        let none = BTreeMap::new();
        let line = |k: f64| coefficient_lines(k, 0.413, &none, &none, &BTreeMap::new(), &Reporting::default());
        assert!(line(-0.0002).starts_with("position effect κ = 0.000 ± 0.413 logits"), "{}", line(-0.0002));
        assert!(line(-0.0006).starts_with("position effect κ = -0.001 ± 0.413 logits"), "{}", line(-0.0006));
    }

    /// Every item in or undecided: the "out" line says none, not a bare 0.
    #[test]
    fn an_empty_out_set_reads_none() {
        let ids = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let c = super::super::schema::CertifiedTopk {
            epsilon: 0.05,
            claimed: false,
            inside: ids(&["a"]),
            undecided: ids(&["b", "c"]),
            outside: vec![],
            ..Default::default()
        };
        assert_eq!(
            certified_set_lines(2, &c, None),
            "top-2 not certified (ε = 0.05): 1 of 2 places decided (a, π ≥ 0.95); b, c compete for the other 1 place\n  out (π ≤ 0.05): none\n"
        );
        let c = super::super::schema::CertifiedTopk { outside: ids(&["d"]), ..c };
        assert!(certified_set_lines(2, &c, None).ends_with("  out (π ≤ 0.05): 1 (d)\n"));
        // One undecided item for the one open place: it does not "compete" alone.
        let c = super::super::schema::CertifiedTopk { undecided: ids(&["b"]), outside: ids(&["c", "d"]), ..c };
        assert_eq!(
            certified_set_lines(2, &c, None),
            "top-2 not certified (ε = 0.05): 1 of 2 places decided (a, π ≥ 0.95); b is likely to take the other 1 place but not certain (π < 0.95: the items out together still hold the rest of π)\n  out (π ≤ 0.05): 2 (c, d)\n"
        );
    }

    /// A coefficient that is 0 up to rounding reads 0; a small real one keeps its digits.
    #[test]
    fn coefficients_round_noise_to_zero_and_keep_small_values() {
        assert_eq!(fmt_coef(-4.8e-17), "0.000");
        assert_eq!(fmt_coef(0.0), "0.000");
        assert_eq!(fmt_coef(0.658), "0.658");
        assert_eq!(fmt_coef(2.4e-6), super::super::table::num(2.4e-6));
        assert_ne!(fmt_coef(2.4e-6), "0.000");
    }

    /// The shipped panel resumed at its own budget: $0.059975 of $0.06 is not "$0.0600 of
    /// $0.0600"; the amount left is said.
    #[test]
    fn a_budget_reached_by_a_fraction_of_a_cent_shows_both_amounts_apart() {
        assert_eq!(
            budget_reached(StopReason::MaxUsd, 0.059975, Some(0.06)).unwrap(),
            "the run folder's books ($0.059975) leave $2.5e-5 of max_usd $0.060000, less than the next query's worst-case cost; raise it (budget.max_usd, --max-usd) to go on"
        );
        assert_eq!(
            budget_reached(StopReason::MaxUsd, 0.0125, Some(0.01)).unwrap(),
            "the run folder's books ($0.0125) already reach max_usd $0.0100; raise it (budget.max_usd, --max-usd) to go on"
        );
        assert_eq!(budget_reached(StopReason::MaxUsd, 0.01, None), None);
        // Both limits reached, max_usd lowered far below the books (hunt 58 F9: only
        // max_comparisons was named, so raising it alone changed nothing).
        assert_eq!(
            budget_reached(StopReason::MaxComparisons, 0.0287, Some(0.001)).unwrap(),
            "the stored verdicts already reach max_comparisons, and the run folder's books ($0.0287) already reach max_usd $0.0010; raise both (budget.max_comparisons, --max-comparisons; budget.max_usd, --max-usd) to go on"
        );
        assert!(
            budget_reached(StopReason::MaxComparisons, 0.0005, Some(0.001))
                .unwrap()
                .ends_with("raise it (budget.max_comparisons, --max-comparisons) to go on")
        );
    }

    /// A panel whose API member's worst case ($0.021) is more than the $0.019261 left stopped
    /// with a third of its budget and said nothing of why.
    #[test]
    fn a_stop_at_max_usd_with_money_left_says_why() {
        assert_eq!(
            budget_left(StopReason::MaxUsd, 0.040739, Some(0.06), 0.0).unwrap(),
            "$0.0193 of max_usd $0.0600 left ($0.0407 booked): less than the worst-case cost of any query still to ask, which is reserved before sending; `run --dry-run` shows the cost per query"
        );
        // Below a cent, the amounts keep 6 decimals: $0.000137 left is not "$0.0001" (hunt 48).
        assert!(
            budget_left(StopReason::MaxUsd, 0.000143, Some(0.00028), 0.0)
                .unwrap()
                .starts_with("$0.000137 of max_usd $0.000280 left ($0.000143 booked): less than")
        );
        assert_eq!(budget_left(StopReason::MaxUsd, 0.06, Some(0.06), 0.0), None, "nothing left");
        assert_eq!(budget_left(StopReason::MaxUsd, 0.059975, Some(0.06), 0.0), None, "a query's worth left");
        assert_eq!(budget_left(StopReason::MaxComparisons, 0.01, Some(0.06), 0.0), None);
        assert_eq!(budget_left(StopReason::MaxUsd, 0.01, None, 0.0), None);
        // A gate's hold is said with the money left.
        assert!(
            budget_left(StopReason::MaxUsd, 0.03, Some(0.05), 0.0215).unwrap().contains(
                "($0.0300 booked, a gate's trusted judge included): the run's judge held $0.0215 of max_usd back for the gate's trusted judge"
            ),
        );
    }
    use crate::domain::verdict::{InvalidReason, invalid_by_reason};
    use crate::judge::JudgeStats;

    #[test]
    fn invalid_verdicts_by_reason_with_their_share() {
        let reasons = [
            "no_verdict: after 2 asks",
            "refused: after 2 asks",
            "no_verdict: after 2 asks",
            "context_overflow: HTTP 400",
        ];
        let m = invalid_by_reason(40, reasons.map(|r| crate::domain::verdict::InvalidNote::parse(r).reason));
        let got: Vec<(&str, usize, f64)> = m.iter().map(|(k, v)| (k.as_str(), v.count, v.rate)).collect();
        assert_eq!(m.keys().next(), Some(&InvalidReason::ContextOverflow));
        assert_eq!(InvalidReason::of("no_verdict: after 2 asks"), crate::domain::verdict::Invalid::NoVerdict.into());
        assert_eq!(InvalidReason::of(""), InvalidReason::Recorded("unknown".into()));
        assert_eq!(
            InvalidReason::of("invalid in the recording"),
            InvalidReason::Recorded("invalid in the recording".into())
        );
        assert_eq!(got, vec![("context_overflow", 1, 0.025), ("no_verdict", 2, 0.05), ("refused", 1, 0.025)]);
        assert_eq!(
            invalid_line(40, &m),
            "invalid verdicts: 4 of 40 = 10.0% (context_overflow 1 = 2.5%, no_verdict 2 = 5.0%, refused 1 = 2.5%)"
        );
        assert_eq!(invalid_line(0, &invalid_by_reason(0, Vec::new())), "invalid verdicts: 0 of 0 = 0.0%");
    }

    #[test]
    fn stats_line_shows_rates_fallbacks_and_repairs() {
        let mut j =
            JudgeStats { requests: 12, replies: 10, invalid_replies: 3, soft_verdicts: 4, ..Default::default() };
        j.invalid_by_reason.insert(crate::domain::verdict::Invalid::NoVerdict.into(), 3);
        j.soft_fallbacks.insert("logprobs_missing".into(), 2);
        j.in_band_errors = 1;
        j.broken_text_repairs = 1;
        let s = stats_line(&j);
        assert!(s.contains("3 invalid replies of 10 replies = 30.0% (no_verdict 3)"), "{s}");
        assert!(
            s.contains("4 soft verdicts, 2 hard verdicts although logprobs were asked for (logprobs_missing 2)"),
            "{s}"
        );
        assert!(
            s.contains("1 errors inside 200 replies (handled as 5xx") && s.contains("1 replies with broken text"),
            "{s}"
        );
        // A run that only read a job an earlier run made says it made none.
        let s = stats_line(&JudgeStats { batch_api_requests: 2, ..Default::default() });
        assert!(
            s.starts_with(
                "judge: 0 batch jobs made, 2 Files and Batches API requests (uploads, job reads, result files), "
            ),
            "{s}"
        );
    }
}

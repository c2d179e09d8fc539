//! A run's result.json assembled from how its loop ended ([`build_result`]): the ranking the data
//! support (through [`super::outcome`]), the spend and the verdicts' quality, the faults, the
//! judge's counters and rate; plus the texts the run prints with it (the invalid-reply stop, the
//! summary, the resume hint).

use super::schema::{
    FolderSpend, OpenJobReserved, OverrunReport, QuarantinedPair, RunResult, Session, StopReason, Throughput,
    VerdictsReport,
};
use crate::config::run::Config;
use crate::domain::pool::Pool;
use crate::domain::verdict::{InvalidReason, ItemVerdict, StoredVerdict, Usage, VerdictShaped};
use crate::judge::{Judge, JudgeStats};
use crate::model::FitError;
use crate::model::summary::FitSummary;
use crate::store::books::{FolderBooks, Spend};
use crate::store::budget::Overrun;
use std::path::Path;

/// How a run's loop ended, for its result: the last fit, why it stopped, this judge's stored
/// verdicts (in the order stored) and spend, the faults, a failed fit, the session's counts and
/// the achieved rate.
pub struct RunEnd<'a> {
    /// The last fit (the prior's when the fit failed).
    pub summary: &'a FitSummary,
    /// Why the run stopped.
    pub stop: StopReason,
    /// This judge's stored verdicts.
    pub stored: &'a [StoredVerdict],
    /// Everything booked for this judge (verdicts, paid failures, possibly billed requests).
    pub spend: &'a Spend,
    /// Everything the folder's books hold (every set, every key).
    pub folder: &'a FolderBooks,
    /// `budget.max_usd`.
    pub max_usd: Option<f64>,
    /// Replies that cost more than their reservations, and the worst-case factor they left.
    pub overrun: (Overrun, f64),
    /// Failed queries in this invocation.
    pub failed: usize,
    /// Of `failed`: requests a batch job ended without running.
    pub not_run: usize,
    /// Pairs set aside after repeated failures (item indices, failures, last error).
    pub quarantined: Vec<(usize, usize, u32, String)>,
    /// Queries the judge had no verdict for.
    pub unavailable: usize,
    /// The ordered pairs the judge can answer, when it can answer only some (the candidates of a
    /// replay with `missing: unavailable`).
    pub candidates: Option<usize>,
    /// The error that stopped the run (a failing judge).
    pub last_error: Option<String>,
    /// The invalid-reply stop's message.
    pub invalid_stop: Option<String>,
    /// Where a provider batch job left open is.
    pub batch_pending: Option<String>,
    /// The fit failed.
    pub fit_failed: Option<&'a FitError>,
    /// Verdicts reused and queries asked in this invocation.
    pub session: Session,
    /// Replies resolved, the seconds they took and the achieved rate per minute, when any.
    pub rate: Option<(u64, f64, f64)>,
    /// Invalid verdicts by reason, strong preferences, verdict-shaped answers.
    pub invalid_reasons: Vec<InvalidReason>,
    /// Valid verdicts that state a strong preference.
    pub strong_preferences: usize,
}

/// What the folder's books hold (`folder`), of which `run_usd` (USD) is this run's verdicts,
/// against `max_usd`: result.json's `folder_spend`, also after a gate at the end of the run
/// has booked its trusted judge.
pub fn folder_spend(folder: &crate::store::books::FolderBooks, run_usd: f64, max_usd: Option<f64>) -> FolderSpend {
    let all = folder.total();
    FolderSpend {
        spend_usd: all.total_usd(),
        other_usd: (all.total_usd() - run_usd).max(0.0),
        possibly_billed: all.possibly_billed,
        possibly_billed_usd: all.possibly_billed_usd,
        in_open_batch_job: OpenJobReserved::of(all.in_open_job, all.in_open_job_usd),
        fingerprint_usd: folder.fingerprint.total_usd(),
        gate_trusted_usd: folder.trusted.total_usd(),
        held_for_gate_usd: 0.0,
        max_usd,
    }
}

/// result.json of a run of `cfg` with `judge`, from how its loop ended.
pub fn build_result(cfg: &Config, judge: &dyn Judge, end: &RunEnd<'_>) -> RunResult {
    let pool = &cfg.pool;
    let mut result = ranking_result(cfg, judge, end);
    result.spend_usd = end.spend.total_usd();
    result.possibly_billed = end.spend.possibly_billed;
    result.possibly_billed_usd = end.spend.possibly_billed_usd;
    result.in_open_batch_job = OpenJobReserved::of(end.spend.in_open_job, end.spend.in_open_job_usd);
    result.duplicate_records = end.spend.duplicates;
    result.folder_spend = folder_spend(end.folder, end.spend.total_usd(), end.max_usd);
    let (o, factor) = end.overrun;
    result.overrun = overrun_report(o, factor, result.judge_stats.as_ref());
    result.fit.reporting.session = Some(end.session);
    result.quarantined = end
        .quarantined
        .iter()
        .map(|(a, b, failed_queries, last_error)| QuarantinedPair {
            a: pool.items[*a].id.clone(),
            b: pool.items[*b].id.clone(),
            failed_queries: *failed_queries,
            last_error: last_error.clone(),
        })
        .collect();
    if let Some(r) = &mut result.replay {
        r.unavailable = end.unavailable;
        r.candidates = end.candidates;
    }
    // The achieved rate, for judges that talk to an endpoint (instant judges have no rate).
    if let (Some(_), Some((requests, seconds, per_minute))) = (&result.judge_stats, end.rate) {
        let limit = judge.requests_per_minute();
        result.throughput = Some(Throughput {
            requests,
            seconds,
            requests_per_minute: per_minute,
            rate_limit: limit,
            rate_limit_used: limit.map(|l| per_minute / f64::from(l)),
        });
    }
    result.last_error = end.last_error.clone();
    result.batch_pending = end.batch_pending.clone();
    result.verdicts_report = verdicts_report(cfg, end);
    result
}

/// The ranking part of a result: the fit's values, the reported ranking and why, the notes.
fn ranking_result(cfg: &Config, judge: &dyn Judge, end: &RunEnd<'_>) -> RunResult {
    let (pool, k, s) = (&cfg.pool, cfg.raw.k, end.summary);
    let mut usage = Usage::default();
    for r in end.stored {
        usage.add(&r.usage);
    }
    let verdicts: Vec<ItemVerdict> = end.stored.iter().filter_map(StoredVerdict::verdict).collect();
    let (identifiability, apparent) = match end.fit_failed {
        Some(_) => (Default::default(), crate::model::summary::Apparent::of_summary(s)),
        None => super::outcome::identify_and_apparent(
            pool,
            &cfg.covariates,
            &cfg.raw.model.prior(),
            k,
            (cfg.raw.acquisition.mc_draws, cfg.raw.acquisition.seed),
            &verdicts,
            s,
        ),
    };
    let mut out = super::outcome::outcome(&super::outcome::Inputs {
        pool,
        cov: &cfg.covariates,
        k,
        model: cfg.raw.model.kind,
        summary: s,
        apparent: &apparent,
        verdicts: if end.fit_failed.is_some() { &[] } else { &verdicts },
        identifiability: &identifiability,
        setting: cfg.raw.report_ranking,
        gate: None,
        one_query: verdicts.is_empty().then(|| nothing_compared(pool, judge, end)),
        epsilon: cfg.raw.certify.epsilon,
        mc_draws: cfg.raw.acquisition.mc_draws,
    });
    if cfg.raw.gate.is_some() {
        super::outcome::gate_configured(&mut out.notes);
    }
    out.reporting.systems = systems_of_run(cfg, s, &verdicts, end.fit_failed.is_none());
    if let Some(sys) = &mut out.reporting.systems {
        super::systems::follow_reported(sys, &out.ranking, out.reporting.reported);
    }
    if let Some(e) = end.fit_failed {
        // The verdicts are there, the fit is not: the graph is theirs, and nothing is certified
        // because the fit failed (not for want of a comparison).
        out.notes.retain(|n| !n.starts_with("no valid comparison"));
        out.notes.insert(0, format!("the fit failed ({e}): no ranking is claimed; the verdicts are kept, fix the cause and re-run to fit them"));
        out.reporting.graph = super::outcome::graph_of(pool, &verdicts);
        let c = &mut out.reporting.certified;
        c.claimed = false;
        c.undecided = pool.bases.clone();
        c.inside.clear();
        c.outside.clear();
        c.withheld = Some("the fit failed".into());
    }
    let fit = super::schema::FittedRanking::new(pool, &cfg.covariates, s, out, identifiability);
    RunResult {
        name: cfg.raw.name.clone(),
        pool_id: pool.pool_id.clone(),
        k,
        model: cfg.raw.model.kind,
        judge: judge.describe(),
        strategy: cfg.raw.acquisition.strategy,
        stop_reason: end.stop,
        comparisons: end.stored.len(),
        valid: end.stored.iter().filter(|r| r.y.is_some()).count(),
        invalid: end.stored.iter().filter(|r| r.y.is_none()).count(),
        failed: end.failed,
        not_run: end.not_run,
        spend_usd: end.stored.iter().map(|r| r.cost_usd).sum(),
        possibly_billed: 0,
        possibly_billed_usd: 0.0,
        in_open_batch_job: None,
        duplicate_records: 0,
        folder_spend: FolderSpend::default(),
        overrun: None,
        usage,
        fit,
        no_variation: cfg.covariates.no_variation.clone(),
        gate: None,
        judge_stats: judge.stats(),
        quarantined: Vec::new(),
        last_error: None,
        batch_pending: None,
        verdicts_report: VerdictsReport::default(),
        replay: judge.replay(),
        fingerprint: Vec::new(),
        throughput: None,
    }
}

/// The system report of a run's final fit `s` to its valid `verdicts`, for a run over many
/// prompts (`None` for a single pool, or when the fit failed: nothing is claimed then).
fn systems_of_run(
    cfg: &crate::config::run::Config,
    s: &FitSummary,
    verdicts: &[ItemVerdict],
    fitted: bool,
) -> Option<crate::analysis::systems::SystemsReport> {
    if !cfg.pool.is_systems() || !fitted {
        return None;
    }
    let prior = cfg.raw.model.prior();
    match crate::analysis::systems::report(
        &cfg.pool,
        &cfg.covariates,
        &prior,
        s,
        verdicts,
        cfg.raw.pool.reference.as_deref(),
    ) {
        Ok(r) => Some(r),
        Err(e) => {
            tracing::warn!("no system report: {e}");
            None
        }
    }
}

/// Why nothing was compared: the budget (then what one query needs from it), or the judge's
/// replies (invalid or failed queries), or no pair left to ask.
fn nothing_compared(pool: &Pool, judge: &dyn Judge, end: &RunEnd<'_>) -> String {
    let (invalid, failed) = (end.stored.len(), end.failed);
    if invalid > 0 || failed > 0 {
        let mut see = Vec::new();
        if invalid > 0 {
            see.push("invalid_by_reason in result.json and `raw` in verdicts.jsonl".to_string());
        }
        let last = end.last_error.as_deref().or_else(|| end.quarantined.last().map(|q| q.3.as_str()));
        if let Some(e) = last.filter(|_| failed > 0) {
            see.push(format!("the last error: {e}"));
        }
        // The run may still have stopped at its budget, spent on those replies.
        let budget = if matches!(end.stop, StopReason::MaxComparisons | StopReason::MaxUsd) {
            "; the budget went on those replies, and a larger one buys more of them until the judge's fault is mended"
        } else {
            ", so the budget is not what is missing"
        };
        format!(
            "the judge gave no valid verdict ({invalid} invalid, {failed} failed quer{}{}){budget}",
            if failed == 1 { "y" } else { "ies" },
            if see.is_empty() { String::new() } else { format!(": see {}", see.join("; ")) }
        )
    } else if matches!(end.stop, StopReason::MaxComparisons | StopReason::MaxUsd) {
        super::outcome::one_query_text(pool, judge, end.stop, end.folder.total().total_usd() + 0.0)
    } else {
        let why = serde_json::to_value(end.stop).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default();
        format!("no query was answered before the run stopped ({why}), so the budget is not what is missing")
    }
}

/// Invalid verdicts by reason, strong preferences and their weight, verdict-shaped candidate
/// answers, and the invalid-rate stop message, from this judge's stored verdicts.
fn verdicts_report(cfg: &Config, end: &RunEnd<'_>) -> VerdictsReport {
    let strong = end.strong_preferences;
    VerdictsReport {
        invalid_by_reason: crate::domain::verdict::invalid_by_reason(
            end.stored.len(),
            end.invalid_reasons.iter().cloned(),
        ),
        strong_preferences: strong,
        strong_preference_weight: (strong > 0).then_some(cfg.raw.model.strong_preference_weight),
        verdict_shaped_items: verdict_shaped_items(&cfg.pool),
        stop_message: end.invalid_stop.clone(),
    }
}

/// Items of `pool` whose text holds verdict-shaped text (docs/live.md, "Parsing rules").
pub fn verdict_shaped_items(pool: &Pool) -> Vec<VerdictShaped> {
    pool.items
        .iter()
        .filter_map(|it| {
            let excerpt = crate::judge::openai::parse::verdict_shaped(it.text.as_deref()?)?;
            Some(VerdictShaped { id: it.id.clone(), excerpt })
        })
        .collect()
}

/// The stop message when the judge's share of invalid replies passed its limit `(max, minimum
/// replies)` (`judge.openai.max_invalid_rate`): the rate, the reasons, and the likely cause of
/// the most frequent one.
pub fn invalid_rate_message(st: &JudgeStats, limit: Option<(f64, u64)>) -> String {
    let max = limit.map_or(0.0, |(m, _)| m);
    let (parts, cause) = invalid_reasons(st);
    format!(
        "{} of {} replies were invalid ({:.0}%, above max_invalid_rate {}; {parts}); likely cause: {cause}",
        st.invalid_replies,
        st.replies,
        100.0 * st.invalid_replies as f64 / st.replies.max(1) as f64,
        max,
    )
}

/// A judge's invalid replies by reason, most frequent first (`no_verdict 6, truncated 1`), and
/// the likely cause of the most frequent one.
pub fn invalid_reasons(st: &JudgeStats) -> (String, &'static str) {
    let mut reasons: Vec<(&InvalidReason, &u64)> = st.invalid_by_reason.iter().collect();
    reasons.sort_by(|x, y| y.1.cmp(x.1).then(x.0.cmp(y.0)));
    let parts: Vec<String> = reasons.iter().map(|(k, v)| format!("{k} {v}")).collect();
    let cause = reasons
        .first()
        .and_then(|(k, _)| match k {
            InvalidReason::Reply(r) => Some(*r),
            _ => None,
        })
        .map_or("see `raw` in verdicts.jsonl", |r| r.likely_cause());
    (parts.join(", "), cause)
}

/// The human-readable end-of-run summary ([`super::summary::run_summary`]).
pub fn summary_text(r: &RunResult, dir: &Path) -> String {
    super::summary::run_summary(r, dir)
}

/// The line telling how to resume an interrupted run of the config at `config_path`.
pub fn resume_hint(config_path: &Path, overrides: &[crate::config::overrides::Override]) -> String {
    let mut line = format!("resume: {}\n", run_command(config_path, overrides));
    if overrides.iter().any(|o| o.redacted) {
        line.push_str(
            "  (credentials in the line above are shown as *** or [redacted]: put them back before you run it)\n",
        );
    }
    line
}

/// `topk-judge run CONFIG` with the command line's overrides as given (shorthands as flags,
/// the rest as `--set`; a value with a credential as redacted), as one shell line: the command
/// that runs (or resumes) the run in the folder these settings name.
pub fn run_command(config_path: &Path, overrides: &[crate::config::overrides::Override]) -> String {
    let mut line = format!("topk-judge run {}", shell_word(&config_path.display().to_string()));
    for o in overrides {
        match o.given.split_once(' ') {
            // A shorthand as it was given (`--name presume2`, `--max-usd 0.5`).
            Some((flag, value)) if flag.starts_with("--") && flag != "--set" => {
                line.push_str(&format!(" {flag} {}", shell_word(value)));
            }
            // A value with a credential or key is repeated as redacted, never as given.
            _ if o.redacted => {
                line.push_str(" --set ");
                line.push_str(&shell_word(o.given.strip_prefix("--set ").unwrap_or(&o.given)));
            }
            _ => {
                line.push_str(" --set ");
                line.push_str(&shell_word(&format!("{}={}", o.key.join("."), o.raw)));
            }
        }
    }
    line
}

/// `s` as one word of a POSIX shell command line: as it is when it holds only characters no
/// shell treats specially, else in single quotes.
fn shell_word(s: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "._/=:,@+-%".contains(c);
    if !s.is_empty() && s.chars().all(plain) { s.to_string() } else { format!("'{}'", s.replace('\'', "'\\''")) }
}

/// The overrun of one invocation (`o`, the worst-case `factor` after it) with the judge's token
/// counts (`stats`): `None` when no reply was billed above its reservation and no reply passed
/// the prompt or `max_tokens` bound.
pub fn overrun_report(
    o: crate::store::budget::Overrun,
    factor: f64,
    stats: Option<&crate::judge::JudgeStats>,
) -> Option<OverrunReport> {
    (o.replies > 0 || stats.is_some_and(|s| s.above_max_tokens > 0 || s.above_prompt_bound > 0)).then(|| {
        OverrunReport {
            replies: o.replies,
            excess_usd: o.excess_usd,
            worst_case_factor: factor,
            in_flight_at_first: o.in_flight_at_first,
            above_max_tokens: stats.map_or(0, |s| s.above_max_tokens),
            most_completion_tokens: stats.map_or(0, |s| s.most_completion_tokens),
            max_tokens: stats.and_then(|s| s.max_tokens),
            above_prompt_bound: stats.map_or(0, |s| s.above_prompt_bound),
            most_prompt_tokens: stats.map_or(0, |s| s.most_prompt_tokens),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(replies: u64, reasons: &[(&str, u64)]) -> JudgeStats {
        let mut s = JudgeStats { replies, ..Default::default() };
        for (k, v) in reasons {
            s.invalid_by_reason.insert(InvalidReason::of(k), *v);
            s.invalid_replies += v;
        }
        s
    }

    #[test]
    fn the_invalid_rate_message_names_the_rate_the_reasons_and_the_likely_cause() {
        let m = invalid_rate_message(&stats(20, &[("truncated", 8), ("no_verdict", 3)]), Some((0.5, 20)));
        assert!(
            m.starts_with("11 of 20 replies were invalid (55%, above max_invalid_rate 0.5; truncated 8, no_verdict 3)"),
            "{m}"
        );
        assert!(m.contains("likely cause: replies are cut at max_tokens"), "{m}");
    }

    #[test]
    fn the_resume_command_repeats_every_override_quoted_for_the_shell() {
        use crate::config::overrides::Override;
        let o = |t: &str| Override::parse(t).unwrap();
        let hint = resume_hint(
            Path::new("configs/panel.yaml"),
            &[o("name=presume2"), o("judges.0.mock.latency_ms=100"), o("judge.openai.model=it's a model")],
        );
        assert_eq!(
            hint,
            "resume: topk-judge run configs/panel.yaml --set name=presume2 --set judges.0.mock.latency_ms=100 --set 'judge.openai.model=it'\\''s a model'\n"
        );
        assert_eq!(resume_hint(Path::new("my configs/a.yaml"), &[]), "resume: topk-judge run 'my configs/a.yaml'\n");
        // Shorthands are repeated as given.
        let short = [
            Override::shorthand("--name", "name", "my run").unwrap(),
            Override::shorthand("--max-usd", "budget.max_usd", "0.5").unwrap(),
            o("k=4"),
        ];
        assert_eq!(
            resume_hint(Path::new("c.yaml"), &short),
            "resume: topk-judge run c.yaml --name 'my run' --max-usd 0.5 --set k=4\n"
        );
        // Credentials are not repeated, and the line says so.
        let secret = [
            Override::shorthand("--base-url", "judge.openai.base_url", "http://user:pw1234@h/v1").unwrap(),
            o("judge.openai.base_url=http://user2:pw5678@h/v1"),
        ];
        assert_eq!(
            resume_hint(Path::new("c.yaml"), &secret),
            "resume: topk-judge run c.yaml --base-url 'http://***:***@h/v1' --set 'judge.openai.base_url=http://***:***@h/v1'\n  (credentials in the line above are shown as *** or [redacted]: put them back before you run it)\n"
        );
    }
}

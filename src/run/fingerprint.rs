//! The judge's fingerprint (docs/live.md, "Judge fingerprint"): at the start of a run that
//! resumes stored verdicts of a live judge, re-ask a few of them and test whether the judge
//! still answers as it did ([`crate::analysis::fingerprint`]).
//!
//! The pairs are this judge's stored valid verdicts, both orders of a pair first, nearest the
//! top-k boundary first (π of the last fits.jsonl line near ½), ties in a seeded order (stream
//! `fingerprint`, keyed by the check's session number). The queries go through
//! the folder's budget like any other (reserved at their worst case before they are sent) and
//! are booked in the fingerprint books ([`FINGERPRINT_BOOKS`]) under keys of their own
//! (`fingerprint N: <cache key>`), never among the run's verdicts. Each check appends a line
//! to `fingerprint.jsonl`: the pairs, the test and the decision.

use crate::analysis::fingerprint::{self, Reasked, Test};
use crate::config::run::Config;
use crate::judge::{Judge, JudgeInfo};
use crate::run::RunError;
use crate::run::dispatch::{DispatchOutcome, Dispatcher, Flow};
use crate::run::queries::RunQueries;
use crate::store::books::{Books, FINGERPRINT_BOOKS};
use crate::store::budget::Budget;
use rand::seq::SliceRandom;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::io::Write;
use std::sync::Arc;

/// What a run does when the check says the judge changed (`run --judge-changed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// The judge answers as before: the run goes on.
    Passed,
    /// The judge changed and no decision was given: the run stops before any other query.
    Stopped,
    /// The judge changed: its verdicts from now on go to a new cache namespace (the old ones
    /// are kept, not mixed).
    New,
    /// The judge changed: the run goes on with the old verdicts (the user accepted).
    Accept,
    /// The check was not run (`not_run` says why: no answer it could get would stop the run, or
    /// the budget leaves too few re-asks for one that could): nothing was asked or paid.
    NotRun,
}

/// One check, as appended to `fingerprint.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Check {
    /// 1 for the folder's first check, then 2, 3, …
    pub session: usize,
    /// The judge (its description).
    pub judge: String,
    /// The pairs asked again.
    pub pairs: Vec<Reasked>,
    /// The test.
    pub test: Test,
    /// What the run did.
    pub decision: Decision,
    /// The cache namespace the run goes on in (after `new`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// What the check cost, USD (booked in the fingerprint books).
    pub cost_usd: f64,
    /// The judge's measured flip rate between the two orders of its stored pairs (the test's
    /// `allowed` is it kept within [0.1, 0.99]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flip_rate: Option<f64>,
    /// The session whose check this repeats without asking again: the last check found the
    /// judge changed and stopped the run, and nothing was asked since (not recorded again
    /// unless a `--judge-changed` decision follows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeats: Option<usize>,
    /// Why the check was not run (`decision: not_run`): a judge that changed behind its name
    /// goes unnoticed in this run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_run: Option<String>,
}

impl Check {
    /// The changed pairs in words: `M3 vs M7: 1 → 0`.
    pub fn changed_text(&self) -> String {
        self.pairs
            .iter()
            .filter(|p| p.changed)
            .map(|p| format!("{} vs {}: {} → {}", p.a, p.b, p.before, p.after.map_or("–".into(), |y| y.to_string())))
            .collect::<Vec<_>>()
            .join("; ")
    }

    /// One line for the summary.
    pub fn line(&self) -> String {
        match self.repeats {
            Some(s) => format!(
                "{} (the check of session {s} in fingerprint.jsonl, repeated without asking again; remove that line to check anew)",
                self.first_line()
            ),
            None => self.first_line(),
        }
    }

    fn first_line(&self) -> String {
        let t = &self.test;
        if let Some(why) = &self.not_run {
            return format!(
                "judge fingerprint: not run, nothing asked: {why}; a judge changed behind its name would go unnoticed in this run"
            );
        }
        if t.pairs == 0 {
            // Nothing was asked again (every re-ask failed, or none could be afforded).
            return "judge fingerprint: no stored verdict could be asked again, so the check says nothing about whether the judge changed".into();
        }
        format!(
            "judge fingerprint: {} of {} re-asked stored verdicts changed (the judge's noise allows {:.0} %; P = {:.2e}, level {}): {}",
            t.changed,
            t.pairs,
            100.0 * t.allowed,
            t.p_value,
            t.level,
            match self.decision {
                // P(Bin(n, allowed) ≥ n) = allowedⁿ above the level: no count of changed pairs
                // could stop the run, so passing says nothing: for a judge that follows the
                // slot, whatever the pairs; otherwise for want of pairs.
                Decision::Passed if t.pairs > 0 && t.allowed.powi(t.pairs as i32) > t.level && t.allowed < 0.5 => {
                    let needed = fingerprint::pairs_needed(t.allowed);
                    format!(
                        "the check cannot tell: with {} re-asked, even {} of {} changed would pass at level {}; it needs at least {needed} (fingerprint.queries, and a budget for them)",
                        t.pairs, t.pairs, t.pairs, t.level
                    )
                }
                Decision::Passed if t.pairs > 0 && t.allowed.powi(t.pairs as i32) > t.level => format!(
                    "the check cannot tell: the judge's verdicts flip with the order it is shown them in ({:.0} % of its stored pairs), so even {} of {} changed would pass; its verdicts follow the slot, not the answers",
                    100.0 * self.flip_rate.unwrap_or(t.allowed),
                    t.pairs,
                    t.pairs
                ),
                Decision::Passed => "the judge answers as before".to_string(),
                Decision::Stopped => format!("the judge changed ({})", self.changed_text()),
                Decision::New => format!(
                    "the judge changed; new cache namespace {:?} (old verdicts kept, not mixed)",
                    self.namespace.as_deref().unwrap_or("")
                ),
                Decision::Accept =>
                    "the judge changed; accepted (--judge-changed accept): the run goes on with the old verdicts".into(),
                Decision::NotRun => "not run".into(),
            }
        )
    }
}

/// π by base of the last line of the folder's fits.jsonl, if readable, and the π of a base it
/// does not list: ½ on a full line, the least π listed on a light one (which lists the bases of
/// highest π, docs/outputs.md).
fn last_membership(dir: &std::path::Path) -> Option<(std::collections::BTreeMap<String, f64>, f64)> {
    let text = std::fs::read_to_string(dir.join("fits.jsonl")).ok()?;
    let line = text.lines().rev().find_map(|l| serde_json::from_str::<crate::report::FitLine>(l).ok())?;
    let unlisted = if line.light { line.membership.values().copied().fold(1.0, f64::min) } else { 0.5 };
    Some((line.membership, unlisted))
}

fn pool_pi(pi: &(std::collections::BTreeMap<String, f64>, f64), base: &str) -> f64 {
    pi.0.get(base).copied().unwrap_or(pi.1)
}

/// The last check `fingerprint.jsonl` holds, if it reads.
fn last_check(dir: &std::path::Path) -> Option<Check> {
    let text = std::fs::read_to_string(dir.join("fingerprint.jsonl")).ok()?;
    serde_json::from_str(text.lines().rev().find(|l| !l.trim().is_empty())?).ok()
}

/// Every check `fingerprint.jsonl` holds, oldest first (lines that do not read are left out).
fn checks(dir: &std::path::Path) -> Vec<Check> {
    std::fs::read_to_string(dir.join("fingerprint.jsonl"))
        .map(|t| t.lines().filter_map(|l| serde_json::from_str(l).ok()).collect())
        .unwrap_or_default()
}

/// The number of the next check of the folder (1 + the checks `fingerprint.jsonl` holds).
fn next_session(dir: &std::path::Path) -> usize {
    std::fs::read_to_string(dir.join("fingerprint.jsonl"))
        .map_or(0, |t| t.lines().filter(|l| !l.trim().is_empty()).count())
        + 1
}

/// Append a check to the folder's `fingerprint.jsonl` (flushed and synced).
///
/// # Errors
/// [`RunError::Io`] naming the file.
pub fn record(dir: &std::path::Path, check: &Check) -> Result<(), RunError> {
    let path = dir.join("fingerprint.jsonl");
    let io = |source| RunError::Io { path: path.clone(), source };
    let mut f = std::fs::OpenOptions::new().create(true).append(true).open(&path).map_err(io)?;
    let line = serde_json::to_string(check).expect("serialisable") + "\n";
    f.write_all(line.as_bytes()).and_then(|()| f.sync_data()).map_err(io)
}

/// What a check of a judge resuming its verdicts would do, found without sending or writing
/// anything ([`plan`]): what `run` then does ([`check`]) and `run --dry-run` says.
#[derive(Debug, Clone)]
pub enum Plan {
    /// No check: a fresh run (its verdicts become the reference a later run checks against),
    /// nothing left to ask, or no stored valid verdict.
    Skip,
    /// Decided without asking: the last check's stop repeated, or a check not run (its reason
    /// in [`Check::not_run`]).
    Decided(Check),
    /// Stored verdicts to ask again.
    Ask(Asking),
}

/// The re-asks of a check that runs ([`Plan::Ask`]).
#[derive(Debug, Clone)]
pub struct Asking {
    /// The check's number in the folder.
    pub session: usize,
    /// The ordered pairs asked again, in order, and their stored verdicts.
    pub picks: Vec<(usize, usize)>,
    stored: HashMap<(usize, usize), f64>,
    /// Of `picks`, those to send: not answered yet (a check cut short has some answered
    /// already), as many as the budget leaves room for.
    pub open: Vec<(usize, usize)>,
    /// Of `picks`, those a check cut short answered already.
    pub answered: usize,
    /// The judge's flip rate between the two orders of its stored pairs.
    pub allowed: f64,
    /// What the answered ones cost, USD.
    pub answered_usd: f64,
    /// What `open` is reserved at: their worst case, raised by `factor`, USD.
    pub reserve_usd: f64,
    /// The factor the judge's stored replies have shown above their worst case (≥ 1), which
    /// the re-asks are reserved at.
    pub factor: f64,
}

/// Plan the check for a live judge with `fingerprint.queries` > 0 whose run folder holds its
/// verdicts (module docs). `counted`: the judges whose stored verdicts count against
/// `budget.max_comparisons` (the judge itself, or every member of a panel). `hold_usd`: USD of
/// `budget.max_usd` the run holds back for its gate, asked after it (docs/live.md, "Budget"):
/// the check leaves it too. `answered`: the cost of a reply the fingerprint books hold under a
/// key, if they hold one. `panel`: a panel's members as named and their own judges (empty for a
/// single judge); a member's stored verdicts include those it takes over from a single-judge run
/// in the folder ([`crate::run::panel::takeover_copies`]), since the run fits them as its own.
///
/// # Errors
/// [`RunError`]: the folder's books cannot be read.
pub fn plan(
    cfg: &Config,
    judge: &dyn JudgeInfo,
    counted: &[&dyn JudgeInfo],
    panel: &[(&dyn JudgeInfo, &dyn JudgeInfo)],
    queries_wanted: usize,
    hold_usd: f64,
    answered: &dyn Fn(&str) -> Option<f64>,
) -> Result<Plan, RunError> {
    let dir = &cfg.run_dir;
    if queries_wanted == 0 || !dir.join("verdicts.jsonl").exists() {
        return Ok(Plan::Skip);
    }
    let (mut records, _, _) = crate::store::ledger::read_records(&dir.join("verdicts.jsonl"))?;
    let taken: Vec<_> =
        crate::run::panel::takeover_copies(cfg, panel, &records).into_iter().flat_map(|(copies, _)| copies).collect();
    records.extend(taken);
    let queries = RunQueries::new(cfg, judge);
    let all = queries.stored_verdicts(&records, 1.0);
    let comparisons: usize =
        counted.iter().map(|j| RunQueries::new(cfg, *j).stored_verdicts(&records, 1.0).len()).sum();
    // A run with nothing left to ask asks nothing, so nothing would be mixed: no check.
    let Some(spare_usd) = could_ask(cfg, judge, &queries, &records, &all, comparisons, hold_usd)? else {
        return Ok(Plan::Skip);
    };
    let stored: HashMap<(usize, usize), f64> = all.into_iter().filter_map(|v| v.y.map(|y| ((v.a, v.b), y))).collect();
    if stored.is_empty() {
        return Ok(Plan::Skip);
    }
    let session = next_session(dir);
    // The last check of this judge stopped the run and nothing was asked since: its finding
    // stands until a decision is given, and is not paid for again.
    if let Some(last) = last_check(dir).filter(|c| c.decision == Decision::Stopped && c.judge == judge.describe()) {
        return Ok(Plan::Decided(Check { session, cost_usd: 0.0, repeats: Some(last.session), ..last }));
    }
    // A provider batch job of the folder is still open, and this judge has passed a check here
    // (or its change was decided): the run first polls or books the job, whose queries were
    // asked as submitted, and a `--detach` loop does not pay a check at the live price on
    // every poll (hunt 58: 8 live queries per poll cost more than the batch verdicts).
    let open_job = crate::store::batches::BatchLog::open_keys(dir).is_ok_and(|keys| !keys.is_empty());
    if open_job
        && checks(dir).iter().any(|c| {
            c.judge == judge.describe() && matches!(c.decision, Decision::Passed | Decision::Accept | Decision::New)
        })
    {
        return Ok(Plan::Skip);
    }
    // Both orders of a pair first, in a seeded order; then single orders.
    let mut both: Vec<(usize, usize)> =
        stored.keys().filter(|&&(a, b)| a < b && stored.contains_key(&(b, a))).copied().collect();
    let mut single: Vec<(usize, usize)> =
        stored.keys().filter(|&&(a, b)| !stored.contains_key(&(b, a))).copied().collect();
    both.sort_unstable();
    single.sort_unstable();
    let mut rng = crate::domain::rng::stream(cfg.raw.acquisition.seed, "fingerprint", session as u64);
    both.shuffle(&mut rng);
    single.shuffle(&mut rng);
    // Nearest the top-k boundary first (by the last fit's π, when fits.jsonl has one): the
    // pairs whose verdicts matter most for the ranking. A stable sort keeps the seeded order
    // among equals.
    if let Some(pi) = last_membership(dir) {
        let base = |i: usize| pool_pi(&pi, &cfg.pool.bases[cfg.pool.item_base[i]]);
        let near = |&(a, b): &(usize, usize)| (((base(a) - 0.5).abs() + (base(b) - 0.5).abs()) * 1e6).round() as i64;
        both.sort_by_key(near);
        single.sort_by_key(near);
    }
    let picks: Vec<(usize, usize)> =
        both.iter().flat_map(|&(a, b)| [(a, b), (b, a)]).chain(single).take(queries_wanted).collect();
    let allowed =
        fingerprint::flip_rate(&both.iter().map(|&(a, b)| (stored[&(a, b)], stored[&(b, a)])).collect::<Vec<_>>())
            .unwrap_or(0.0);
    let needed = fingerprint::pairs_needed(allowed);
    let not_run = |why: String| {
        Plan::Decided(Check {
            session,
            judge: judge.describe(),
            pairs: Vec::new(),
            test: fingerprint::test(&[], allowed),
            decision: Decision::NotRun,
            namespace: None,
            cost_usd: 0.0,
            flip_rate: Some(allowed),
            repeats: None,
            not_run: Some(why),
        })
    };
    // Known before anything is sent: no answers could stop the run, so none are bought.
    if picks.len() < needed {
        let why = if allowed >= 0.5 {
            format!(
                "the check cannot tell: the judge's verdicts flip with the order it is shown them in ({:.0} % of its stored pairs), so even {n} of {n} re-asked changed would pass (it needs {needed}); its verdicts follow the slot, not the answers",
                100.0 * allowed,
                n = picks.len(),
            )
        } else {
            format!(
                "the check cannot tell: with {n} stored verdicts to ask again, even {n} of {n} changed would pass at level {}; it needs at least {needed} (fingerprint.queries, and stored verdicts to ask)",
                fingerprint::LEVEL,
                n = picks.len(),
            )
        };
        return Ok(not_run(why));
    }
    // A check stopped before it was recorded (a kill, Ctrl-C) left its replies in the books
    // under this session's keys: they are this check's answers, not asked again.
    let prefix = format!("fingerprint {session}: ");
    let key = |&(a, b): &(usize, usize)| format!("{prefix}{}", judge.cache_key(&cfg.pool, a, b));
    let answered_usd: f64 = picks.iter().filter_map(|p| answered(&key(p))).sum();
    let mut open: Vec<(usize, usize)> = picks.iter().copied().filter(|p| answered(&key(p)).is_none()).collect();
    let n_answered = picks.len() - open.len();
    // The check is paid from what the budget leaves beyond one more query of the run: re-asks
    // past that are not sent, and a check left with fewer than it needs to stop anything is
    // not run at all (it would take the run's last query for a "cannot tell").
    let factor = queries.carried_factor(&records);
    let worst = |&(a, b): &(usize, usize)| judge.worst_case_usd(&cfg.pool, a, b) * factor;
    let mut sum = 0.0;
    let affordable = open
        .iter()
        .take_while(|p| {
            sum += worst(p);
            sum <= spare_usd + 1e-12
        })
        .count();
    if affordable < open.len() {
        let have = picks.len() - open.len() + affordable;
        if have < needed {
            // What the re-asks it still needs would take at their worst case, beyond what
            // max_usd leaves past the run's next query; the raise is rounded up to the
            // micro-dollar shown, so raising by it is enough.
            let ask = needed - (picks.len() - open.len());
            let want: f64 = open.iter().take(ask).map(worst).sum();
            let usd = |x: f64| format!("${x:.6}");
            let raise = ((want - spare_usd).max(0.0) * 1e6).ceil() / 1e6;
            return Ok(not_run(format!(
                "max_usd leaves {}{} beyond the run's next query, enough for {have} of the {needed} re-asks a check needs to stop a run (at their worst case, {} for the {ask} to ask); raise max_usd by {}{} to run it{}",
                usd(spare_usd),
                if hold_usd > 0.0 { format!(" (after {} held for the gate)", usd(hold_usd)) } else { String::new() },
                usd(want),
                if counted.len() > 1 { "at least " } else { "" },
                usd(raise),
                // In a panel, the members checked before this one may take more of a raise.
                if counted.len() > 1 { " (the checks of the members before it may take more of a raise)" } else { "" },
            )));
        }
        open.truncate(affordable);
    }
    let reserve_usd = open.iter().map(worst).sum();
    Ok(Plan::Ask(Asking {
        session,
        picks,
        stored,
        open,
        answered: n_answered,
        allowed,
        answered_usd,
        reserve_usd,
        factor,
    }))
}

/// The replies the fingerprint books of the folder `dir` hold: cache key → cost (USD), read
/// without writing (a torn last line left out, as opening the books cuts it).
///
/// # Errors
/// [`RunError`]: fingerprint_verdicts.jsonl cannot be read.
pub fn answered_replies(dir: &std::path::Path) -> Result<HashMap<String, f64>, RunError> {
    let path = dir.join(FINGERPRINT_BOOKS.verdicts);
    if !path.exists() {
        return Ok(HashMap::new());
    }
    let log = crate::store::ledger::read_log(&path).map_err(crate::store::books::BooksError::from)?;
    Ok(log.records.into_iter().map(|r| (r.key, r.reply.cost_usd)).collect())
}

/// Run the check for a live judge with `fingerprint.queries` > 0 whose run folder holds its
/// verdicts, as [`plan`] plans it; `None` when there is nothing to check. The decision is
/// `Passed` or `Stopped`, or `NotRun` when no answers could stop the run or the budget leaves
/// too few re-asks for a check that could (nothing is asked then); the caller applies
/// `--judge-changed` and records the check.
///
/// # Errors
/// [`RunError`]: the folder's lock or books, a failed query of the check.
pub async fn check(
    cfg: &Config,
    judge: Arc<dyn Judge>,
    counted: &[Arc<dyn Judge>],
    panel: &[(&dyn JudgeInfo, &dyn JudgeInfo)],
    queries_wanted: usize,
    hold_usd: f64,
    handle_signals: bool,
) -> Result<Option<Check>, RunError> {
    let dir = &cfg.run_dir;
    if queries_wanted == 0 || !dir.join("verdicts.jsonl").exists() {
        return Ok(None);
    }
    let _lock = crate::store::lock::RunLock::acquire(dir)?;
    let counted: Vec<&dyn JudgeInfo> = counted.iter().map(|j| j.as_ref() as &dyn JudgeInfo).collect();
    let answered = answered_replies(dir)?;
    let Asking { session, picks, stored, open, allowed, answered_usd: mut cost_usd, factor, .. } =
        match plan(cfg, judge.as_ref(), &counted, panel, queries_wanted, hold_usd, &|k| answered.get(k).copied())? {
            Plan::Skip => return Ok(None),
            Plan::Decided(c) => return Ok(Some(c)),
            Plan::Ask(a) => a,
        };
    // Their damaged lines were said before the check (commands::run, from a read of the sets of
    // books the run does not open itself), in the words of a read that writes nothing.
    let (books, _) = Books::open_files(dir, &FINGERPRINT_BOOKS)?;
    let max_usd = cfg.raw.budget.max_usd.filter(|_| judge.has_price());
    let (mut budget, _) = Budget::for_folder(dir, None, max_usd, 0)?;
    budget.hold(hold_usd);
    // Re-asks reserved at the worst case the judge's stored replies have shown.
    budget.carry_factor(factor);
    let pool = Arc::new(cfg.pool.clone());
    let prefix = format!("fingerprint {session}: ");
    let key = |a: usize, b: usize| format!("{prefix}{}", judge.cache_key(&pool, a, b));
    // Ctrl-C: nothing more is sent, the replies in flight are booked (a second Ctrl-C quits at
    // once, as in a run), and the check is not recorded: the next run repeats it.
    let signals = if handle_signals {
        Some(
            crate::run::interrupt::Interrupt::install_scoped(std::time::Duration::from_secs_f64(
                cfg.raw.interrupt_grace_s,
            ))
            .map_err(RunError::Signals)?,
        )
    } else {
        None
    };
    if let Some((i, _)) = &signals {
        i.set_in_flight(open.len().min(cfg.raw.acquisition.concurrency.max(1)));
    }
    let interrupted = || signals.as_ref().is_some_and(|(i, _)| i.requested());
    let mut disp: Dispatcher<()> = Dispatcher::new(judge.clone(), books);
    let todo = open.iter().map(|&(a, b)| (pool.clone(), a, b, ()));
    let report = disp
        .dispatch_all_prefixed(todo, &mut budget, cfg.raw.acquisition.concurrency.max(1), &prefix, |_| {
            if interrupted() { Flow::Stop } else { Flow::Continue }
        })
        .await?;
    let books = disp.close().await?;
    let cut = interrupted();
    if let Some((_, listening)) = &signals {
        listening.abort();
    }
    if cut {
        return Err(RunError::Interrupted { during: format!("the judge fingerprint check of {}", judge.describe()) });
    }
    for s in &report.settled {
        if let DispatchOutcome::Verdict { cost_usd: c, .. } = s.outcome {
            cost_usd += c;
        }
    }
    let pairs: Vec<Reasked> = picks
        .iter()
        .map(|&(a, b)| {
            let before = stored[&(a, b)];
            let after = books.log().get(&key(a, b)).and_then(|r| r.reply.y);
            Reasked {
                a: pool.items[a].id.clone(),
                b: pool.items[b].id.clone(),
                before,
                after,
                changed: after.is_some_and(|y| fingerprint::changed(before, y)),
            }
        })
        .collect();
    let test = fingerprint::test(&pairs, allowed);
    let decision = if test.judge_changed { Decision::Stopped } else { Decision::Passed };
    Ok(Some(Check {
        session,
        judge: judge.describe(),
        pairs,
        test,
        decision,
        namespace: None,
        cost_usd,
        flip_rate: Some(allowed),
        repeats: None,
        not_run: None,
    }))
}

/// Whether the judge has a query left to ask: an ordered pair it may send (not stored, not
/// skipped as identical texts) within `budget.max_comparisons` (which the `comparisons` stored
/// by the run's judges, a panel's all members, count against), whose worst-case cost (raised by
/// the factor its stored replies have shown) fits in what the folder's books leave of
/// `budget.max_usd` less `hold_usd` (held for the run's gate). `Some(spare)`: what that leaves
/// beyond the cheapest such query (USD; infinite without a money limit), `None`: no query left.
///
/// # Errors
/// [`RunError`]: the folder's books cannot be read.
fn could_ask(
    cfg: &Config,
    judge: &dyn JudgeInfo,
    queries: &RunQueries,
    records: &[crate::store::ledger::VerdictRecord],
    stored: &[crate::domain::verdict::StoredVerdict],
    comparisons: usize,
    hold_usd: f64,
) -> Result<Option<f64>, RunError> {
    if cfg.raw.budget.max_comparisons.is_some_and(|m| comparisons as u64 >= m) {
        return Ok(None);
    }
    let asked: std::collections::HashSet<(usize, usize)> = stored.iter().map(|v| (v.a, v.b)).collect();
    let mut open = queries.iter().filter(|p| !asked.contains(p) && !queries.skipped().contains(p));
    let Some(max_usd) = cfg.raw.budget.max_usd.filter(|_| judge.has_price()) else {
        return Ok(open.next().map(|_| f64::INFINITY));
    };
    let left = max_usd - crate::store::books::folder_books(&cfg.run_dir)?.total().total_usd() - hold_usd;
    let factor = queries.carried_factor(records);
    // The cheapest open query (of the first AFFORDABLE_SCAN_MAX, on a very large pool).
    let cheapest = open
        .take(crate::run::queries::AFFORDABLE_SCAN_MAX)
        .map(|(a, b)| judge.worst_case_usd(&cfg.pool, a, b) * factor)
        .min_by(f64::total_cmp);
    Ok(cheapest.filter(|&c| c <= left + 1e-12).map(|c| left - c))
}

#[cfg(test)]
mod line_tests {
    use super::*;

    #[test]
    fn a_check_that_could_not_fail_says_so() {
        let check = |allowed: f64| Check {
            session: 2,
            judge: "j".into(),
            pairs: Vec::new(),
            test: Test { pairs: 8, changed: 0, allowed, p_value: 1.0, level: 0.01, judge_changed: false },
            decision: Decision::Passed,
            namespace: None,
            cost_usd: 0.0,
            flip_rate: Some(allowed),
            repeats: None,
            not_run: None,
        };
        // A judge that follows the slot flips 99 % of its pairs with the order: 0.99⁸ = 0.92.
        let l = check(0.99).line();
        assert!(l.ends_with("the check cannot tell: the judge's verdicts flip with the order it is shown them in (99 % of its stored pairs), so even 8 of 8 changed would pass; its verdicts follow the slot, not the answers"), "{l}");
        // One that flips every pair is said to, though the test caps what it allows at 99 %.
        let mut all = check(0.99);
        all.flip_rate = Some(1.0);
        assert!(
            all.line().contains("(the judge's noise allows 99 %; ")
                && all.line().contains("(100 % of its stored pairs)"),
            "{}",
            all.line()
        );
        // At the floor 0.1: 0.1⁸ is far below the level; passing means something.
        assert!(check(0.1).line().ends_with("the judge answers as before"));
        // A judge that does not flip, but only 2 pairs asked again: 0.1² = 0.01 is not below
        // the level 0.01, and the line says it is the count, not the judge (0.1³ < 0.01).
        let mut few = check(0.1);
        few.test.pairs = 2;
        few.flip_rate = Some(0.0);
        assert!(
            few.line().ends_with("the check cannot tell: with 2 re-asked, even 2 of 2 changed would pass at level 0.01; it needs at least 3 (fingerprint.queries, and a budget for them)"),
            "{}",
            few.line()
        );
        // Nothing asked again: no "0 of 0 changed … answers as before".
        let mut none = check(0.1);
        none.test.pairs = 0;
        assert_eq!(
            none.line(),
            "judge fingerprint: no stored verdict could be asked again, so the check says nothing about whether the judge changed"
        );
    }
}

//! A judge panel's run (docs/model.md §8): Algorithm 1 over (pair, judge). The scheduler
//! ([`super::schedule`]) is the one of a single-judge run, over the panel's queries: judge j's
//! ordered pair (a, b) is the scheduler's pair (j·N + a, j·N + b). So reservations, the budget
//! (one for the panel, counting everything the folder's books hold), the rounds, a failing judge
//! and every stop rule are the scheduler's, as in a single-judge run; the panel brings its model
//! (shared θ; per judge κ_j, c_j and scale s_j) and its acquisition
//! ([`crate::acquire::panel::select`]: top-k information per USD, both orders to one judge),
//! through [`super::schedule::PickRule::panel`].
//!
//! Every query goes through the one dispatcher ([`super::dispatch`]) to a [`PanelJudge`]: an
//! intent fsynced before each request, each reply booked under its member's name and cache key.
//! The folder's lock, Ctrl-C with its grace period, resume from the books: as in a single-judge
//! run ([`super::live`]), through the same wait for the queries out (`run::in_flight`). Both
//! dispatches of the scheduler work across the judges: `wait_for_batch` sends each round's
//! picks at once (to every member at the same time, each within its own concurrency and rate
//! limit) and refits; `pipelined` keeps `concurrency` queries in flight over all members (a
//! reply's slot is free when it comes in) and refits every `refit_every` verdicts, the queries
//! in flight entering Σ before each pick ([`crate::acquire::panel::PanelContext::pending`]).

use super::dispatch::{Dispatcher, Query};
use super::faults::Faults;
use super::folder::{Folder, open_folder};
use super::in_flight::{InFlight, Lanes, Woke};
use super::queries::RunQueries;
use super::schedule::{Action, Fitted, Pick, PickRule, ScheduleSettings, Scheduler, Signals};
use super::{RunError, RunOptions};
use crate::acquire::panel::{PanelContext, select, select_one_order};
use crate::analysis::panel_fit::{JudgeVerdicts, PanelReport, design};
use crate::config::run::{Config, Dispatch};
use crate::domain::rng;
use crate::domain::verdict::{ItemVerdict, StoredVerdict};
use crate::judge::panel::PanelJudge;
use crate::judge::{Judge, JudgeInfo};
use crate::model::laplace::Posterior;
use crate::model::linalg::Matrix;
use crate::model::panel::{self as panel_model, PanelFit};
use crate::report::progress::Progress;
use crate::report::schema::StopReason;
use crate::store::books::Books;
use crate::store::budget::Budget;
use crate::store::ledger::VerdictRecord;
use serde::Serialize;
use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::Path;
use std::sync::Arc;

/// One judge of a panel run in its result.
#[derive(Debug, Clone, Serialize)]
pub struct PanelJudgeSpend {
    /// The judge's name.
    pub name: String,
    /// Its description (model, endpoint, prompt; never secrets).
    pub judge: String,
    /// Whether it is the trusted judge.
    pub trusted: bool,
    /// Its stored verdicts (valid or not).
    pub queries: usize,
    /// Of them, invalid ones (no usable verdict; not fitted).
    pub invalid: usize,
    /// What its books hold, USD (to 1e-12): verdicts, paid failures and possibly billed
    /// requests.
    pub spend_usd: f64,
}

/// result.json of a panel run: why it stopped, the spend per judge and in all, and the panel
/// fitted to every stored verdict as `fit RUN --panel` reports it.
#[derive(Debug, Serialize)]
pub struct PanelRunResult {
    /// The run's `name`.
    pub name: String,
    /// Why the run stopped.
    pub stop_reason: StopReason,
    /// What stopped it, when `stop_reason` is `max_invalid_rate`: the judge, its share of
    /// invalid replies and their reasons.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop_message: Option<String>,
    /// What stopped it, when `stop_reason` is `judge_failing`: the failed queries and the last
    /// error, naming the member (as a single-judge run's `last_error`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// The judges, in the order of `judges:`.
    pub judges: Vec<PanelJudgeSpend>,
    /// Stored verdicts of all judges (valid or not).
    pub comparisons: usize,
    /// What the panel's judges as configured now spent, USD to 1e-12: the sum of `judges[].spend_usd`
    /// (their verdicts, paid failures and requests booked as possibly billed), as a single-judge
    /// run's `spend_usd` is its judge's. `folder_spend` holds the whole folder.
    pub spend_usd: f64,
    /// Of the judges' requests, those booked as possibly billed (a reply that may have been
    /// billed was never read: a kill, or the interrupt's grace period ran out), counted in
    /// `spend_usd` at their worst case.
    pub possibly_billed: usize,
    /// Everything the run folder's books hold (what `budget.max_usd` bounds), and how much of it
    /// is not the panel's: verdicts of judges' earlier configurations or of renamed judges.
    pub folder_spend: crate::report::schema::FolderSpend,
    /// `budget.max_usd`, if set.
    pub max_usd: Option<f64>,
    /// Queries sent in this invocation.
    pub asked_now: usize,
    /// Stored verdicts that were there when this invocation started (resume).
    pub reused: usize,
    /// Failed queries in this invocation.
    pub failed: usize,
    /// The top-k by θ̂ (base names, best first): the places the data decide; with a tie at the
    /// k-th place, only the places above it.
    pub topk: Vec<String>,
    /// Bases tied in θ̂ at the k-th place, sharing the places `topk` leaves (empty when the
    /// data decide every place; docs/model.md, "Ties").
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub topk_tied: Vec<String>,
    /// Its recall@k against the pool's gold `quality`, when every item has one and no tie
    /// decides a place.
    pub recall_at_k: Option<f64>,
    /// The top-k by gold quality (base names, best first), when every item has one.
    pub gold_topk: Option<Vec<String>>,
    /// Bases tied in gold quality at the k-th place: they share the places the rest of
    /// `gold_topk` leaves, and recall@k counts any of them (empty without such a tie).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub gold_tied: Vec<String>,
    /// The certified top-k at ε (docs/model.md, "Certified top-k"): π of the panel's θ.
    pub certified: crate::report::schema::CertifiedTopk,
    /// The fitted panel (per judge κ̂, ĉ, ŝ with sd, flip rate, agreement with the trusted
    /// judge; θ̂, π and the certified top-k).
    pub fit: crate::report::fit::PanelFitOutput,
    /// Replies billed above their reservations in this invocation (absent: none), as a
    /// single-judge run's (docs/live.md, "Overruns"); `max_tokens` is given when the judges that
    /// passed it share one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub overrun: Option<crate::report::schema::OverrunReport>,
    /// The judges whose replies passed their prompt or `max_tokens` bound (absent: none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub overrun_judges: Vec<String>,
    /// This invocation's judge fingerprint checks of the live members, one line each as
    /// printed (docs/live.md, "Judge fingerprint"; absent: none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fingerprint: Vec<String>,
}

/// The scheduler's pair of judge `j`'s ordered pair (a, b) in a pool of `n` items.
fn encode(n: usize, j: usize, a: usize, b: usize) -> (usize, usize) {
    (j * n + a, j * n + b)
}

/// Judge, first item, second item of the scheduler's pair (ea, eb).
fn decode(n: usize, (ea, eb): (usize, usize)) -> (usize, usize, usize) {
    (ea / n, ea % n, eb % n)
}

/// The panel's current fit: the Laplace posterior of the whole panel, its θ block as the
/// scheduler's posterior, and π.
struct Current {
    fit: PanelFit,
    theta_post: Posterior,
    membership: Vec<f64>,
}

/// A single-judge run's verdicts in a panel's folder (`judge:`, or a list of one) that the
/// panel's members take over: the same judge's verdicts, paid for, stored under the judge's own
/// key, which a member's key puts its name in front of. Each goes to the first member of that
/// configuration (`members`: each member as named, and its judge) that lacks the pair. Per
/// member, the ordered pairs and records.
pub fn takeovers<'r>(
    cfg: &Config,
    members: &[(&dyn JudgeInfo, &dyn JudgeInfo)],
    records: &'r [VerdictRecord],
) -> Vec<Vec<(usize, usize, &'r VerdictRecord)>> {
    // A record a member took over in an earlier run (its copy names it in `reused_from`) is that
    // member's for good: another member with the same settings does not take it too.
    let mut taken: HashSet<&str> = records.iter().filter_map(|r| r.reused_from.as_deref()).collect();
    members
        .iter()
        .map(|&(named, judge)| {
            let own: HashSet<(usize, usize)> =
                RunQueries::new(cfg, named).stored(records).into_iter().map(|(a, b, _)| (a, b)).collect();
            RunQueries::new(cfg, judge)
                .stored(records)
                .into_iter()
                .filter(|&(a, b, r)| !own.contains(&(a, b)) && taken.insert(r.key.as_str()))
                .collect()
        })
        .collect()
}

/// A warning for each member (`members`, in the config's order) whose cheapest open query costs
/// more at its worst case (`cheapest`, USD; `None`: no open query) than the `left_usd` of
/// `budget.max_usd` the folder's books leave, while another member's fits: the budget reserves
/// a query's worst case before it is sent, so the run sends that member nothing. When no member
/// fits, the run's summary says so instead.
pub fn unaffordable_notes(
    members: &[crate::config::run::PanelMemberConfig],
    cheapest: &[Option<f64>],
    left_usd: f64,
) -> Vec<String> {
    let fits = |c: &Option<f64>| c.is_some_and(|c| c <= left_usd + 1e-12);
    if !cheapest.iter().any(fits) {
        return Vec::new();
    }
    members
        .iter()
        .zip(cheapest)
        .filter_map(|(m, c)| c.filter(|_| !fits(c)).map(|c| (m, c)))
        .map(|(m, c)| {
            // Rounded up to the micro-dollar (less a rounding error's worth), so that raising by
            // it lets the query fit.
            let raise = ((c - left_usd.max(0.0)) * 1e6 - 1e-6).ceil() / 1e6;
            format!(
                "judge {}: the cheapest worst case of its open queries, ${c:.6}, is above the ${:.6} that budget.max_usd leaves, and a query is reserved at its worst case before it is sent: it is asked nothing in this run{}; raising budget.max_usd (--max-usd) by ${raise:.6} is the least that could ask it, and the other judges' queries, where they buy more top-k certainty per dollar, may take that first",
                m.name,
                left_usd.max(0.0),
                if m.trusted { " (as the trusted judge, it anchors no other judge's bias c)" } else { "" }
            )
        })
        .collect()
}

/// The note of a member that takes over `n` verdicts bought for `usd` ([`takeovers`]).
pub fn takeover_note(name: &str, n: usize, usd: f64, dir: &Path) -> String {
    format!(
        "judge {name:?} takes over {n} verdicts its configuration stored in a single-judge run in {} (bought for ${usd:.6}, counted once in the folder's spend): none is bought again",
        dir.display()
    )
}

/// [`takeovers`] written: each as a copy under the member's key and name, at no cost
/// (`reused_from` names the record, whose cost stays booked once in the folder's spend), so that
/// every reader of the folder (`fit --panel`, `report`, `compare`) sees it as the member's.
/// Returns one note per member that took any.
///
/// # Errors
/// [`RunError`]: the verdict log cannot be written.
fn adopt_single_judge_verdicts(
    cfg: &Config,
    members: &[Arc<crate::judge::panel::Named>],
    books: &mut Books,
) -> Result<Vec<String>, RunError> {
    let infos: Vec<(&dyn JudgeInfo, &dyn JudgeInfo)> =
        members.iter().map(|m| (m.as_ref() as &dyn JudgeInfo, m.judge.as_ref() as &dyn JudgeInfo)).collect();
    let mut all = Vec::new();
    let mut notes = Vec::new();
    for (m, (copies, usd)) in members.iter().zip(takeover_copies(cfg, &infos, books.log().records())) {
        if !copies.is_empty() {
            notes.push(takeover_note(&m.name, copies.len(), usd, &cfg.run_dir));
            all.extend(copies);
        }
    }
    if !all.is_empty() {
        books.adopt(all)?;
    }
    Ok(notes)
}

/// [`takeovers`] as the records a panel run writes for them, per member (`members`: each as
/// named, and its judge): each a copy under the member's key and name, at no cost, naming its
/// original in `reused_from`; and what the originals cost, USD. The judge fingerprint check of a
/// member reads its stored verdicts with these (docs/live.md, "Judge fingerprint"), as the run
/// will fit them.
pub fn takeover_copies(
    cfg: &Config,
    members: &[(&dyn JudgeInfo, &dyn JudgeInfo)],
    records: &[VerdictRecord],
) -> Vec<(Vec<VerdictRecord>, f64)> {
    members
        .iter()
        .zip(takeovers(cfg, members, records))
        .map(|(&(named, _), taken)| {
            let q = RunQueries::new(cfg, named);
            let usd: f64 = taken.iter().map(|(_, _, r)| r.reply.cost_usd).sum();
            let copies = taken
                .into_iter()
                .map(|(a, b, r)| {
                    let mut copy = r.clone();
                    copy.key = q.key(a, b);
                    copy.judge = named.record_judge(&cfg.pool, a, b);
                    copy.judge_settings = Some(named.record_settings(&cfg.pool, a, b));
                    copy.intent = None;
                    copy.reused_from = Some(r.key.clone());
                    copy.reply.cost_usd = 0.0;
                    copy.reply.usage = Default::default();
                    copy
                })
                .collect();
            (copies, usd)
        })
        .collect()
}

/// Run Algorithm 1 with a judge panel (`judges:` of two or more) for a validated config.
/// Writes into `cfg.run_dir` the books as the run goes, then result.json
/// ([`PanelRunResult`]).
///
/// # Errors
/// [`RunError`]: the folder, the books, a failed fit; [`RunError::JudgeFailing`] after
/// result.json is written.
pub async fn run(cfg: &Config, panel: Arc<PanelJudge>, opts: &RunOptions) -> Result<PanelRunResult, RunError> {
    let members = panel.members().to_vec();
    let identity = crate::run::folder::PanelIdentity(members.iter().map(|m| m.as_ref() as &dyn JudgeInfo).collect());
    let folder = open_folder(cfg, &identity, opts)?;
    let Folder { lock: _lock, interrupt, mut books, mut warnings } = folder;
    let trusted: Vec<bool> = cfg.raw.judges.iter().map(|m| m.trusted).collect();
    let queries: Vec<RunQueries<'_>> = members.iter().map(|m| RunQueries::new(cfg, m.as_ref())).collect();
    for q in &queries {
        q.learn_folder(&cfg.run_dir);
    }
    warnings.extend(adopt_single_judge_verdicts(cfg, &members, &mut books)?);
    let n = cfg.pool.n_items();
    let weight = cfg.raw.model.strong_preference_weight;
    // Each judge's verdicts by ordered pair, not in the order their replies arrived: the fits
    // (and so the picks) do not depend on which reply came back first.
    let stored_now = |books: &Books| -> Vec<Vec<StoredVerdict>> {
        queries
            .iter()
            .map(|q| {
                let mut v = q.stored_verdicts(books.log().records(), weight);
                v.sort_by_key(|s| (s.a, s.b));
                v
            })
            .collect()
    };
    let stored = stored_now(&books);
    // The replies behind each judge's stored records, for its invalid-reply limit.
    let earlier: Vec<crate::judge::JudgeStats> =
        queries.iter().map(|q| q.stored_replies(books.log().records())).collect();
    // Verdicts of a judge's configuration from a single-judge run in this folder (`judge:` or a
    // list of one) carry the judge's own key, not the panel's: said, not reused.
    let reused: usize = stored.iter().map(Vec::len).sum();
    let (mut budget, _) =
        Budget::for_folder(&cfg.run_dir, cfg.raw.budget.max_comparisons, cfg.raw.budget.max_usd, reused as u64)?;
    budget.carry_factor(queries.iter().map(|q| q.carried_factor(books.log().records())).fold(1.0, f64::max));
    if let Some(max) = budget.max_usd() {
        // The cheapest open query of each member (of the first AFFORDABLE_SCAN_MAX), at the
        // worst case the budget reserves it at.
        let cheapest: Vec<Option<f64>> = members
            .iter()
            .zip(&queries)
            .zip(&stored)
            .map(|((m, q), s)| {
                let asked: HashSet<(usize, usize)> = s.iter().map(|v| (v.a, v.b)).collect();
                q.iter()
                    .filter(|p| !asked.contains(p) && !q.skipped().contains(p))
                    .take(super::queries::AFFORDABLE_SCAN_MAX)
                    .map(|(a, b)| m.worst_case_usd(&cfg.pool, a, b) * budget.worst_case_factor())
                    .min_by(f64::total_cmp)
            })
            .collect();
        warnings.extend(unaffordable_notes(&cfg.raw.judges, &cheapest, max - budget.spent_usd()));
    }
    // The folder's other books (earlier configurations, a single-judge run): in the budget, not
    // in the panel's own spend that panel_fits.jsonl records.
    let own_at_start: f64 = queries.iter().map(|q| books.spend(&|k: &str| q.contains_key(k)).total_usd()).sum();
    let others_usd = (budget.spent_usd() - own_at_start).max(0.0);
    // The panel's refits are told apart from another configuration's in the same folder.
    let fits_id = crate::report::panel_fits_id(&super::folder::config_hash(cfg), &identity.cache_key(&cfg.pool, 0, 1));
    let acq = &cfg.raw.acquisition;
    debug_assert_ne!(acq.dispatch, Dispatch::Batch, "the config refuses provider batch jobs for a panel");
    let settings = ScheduleSettings::new(
        acq.refit_every,
        acq.concurrency,
        acq.dispatch.scheduling(),
        acq.dispatch.write_ahead(acq.write_ahead),
    );
    let total: usize = queries.iter().map(RunQueries::n_pairs).sum();
    let stored_pairs: Vec<(usize, usize)> =
        stored.iter().enumerate().flat_map(|(j, s)| s.iter().map(move |v| encode(n, j, v.a, v.b))).collect();
    let excluded: Vec<(usize, usize)> = queries
        .iter()
        .enumerate()
        .flat_map(|(j, q)| q.skipped().iter().map(move |&(a, b)| encode(n, j, a, b)))
        .collect();
    let mut sched = Scheduler::new(settings, total, stored_pairs, excluded, budget);
    // Per judge, the ordered pairs it is never asked: identical texts (unless sent on purpose)
    // and, for a judge that answers only some pairs (a replay of a sparse recording), the rest.
    let skipped = cfg.skipped_pairs();
    let blocked: Vec<HashSet<(usize, usize)>> = queries
        .iter()
        .map(|q| {
            let mut b = skipped.clone();
            if let Some(al) = q.allowed() {
                b.extend(
                    (0..n).flat_map(|a| (0..n).map(move |x| (a, x))).filter(|&(a, x)| a != x && !al.contains(a, x)),
                );
            }
            b
        })
        .collect();
    let expected = per_query(panel.members(), &cfg.pool, |m, a, b| m.expected_usd(&cfg.pool, a, b));
    let judge: Arc<dyn Judge> = panel.clone();
    let mut disp: Dispatcher<usize> = Dispatcher::new(judge.clone(), books);
    disp.set_wire_limit(acq.concurrency);
    let sendable: u64 = queries.iter().map(|q| q.sendable() as u64).sum();
    let progress = Progress::new(cfg.raw.budget.max_comparisons.unwrap_or(sendable).min(sendable), opts.progress);
    for w in warnings {
        progress.println(&format!("warning: {w}"));
    }
    let mut faults = Faults::new(acq.max_failed_queries_per_pair);
    let earlier = earlier
        .into_iter()
        .zip(&members)
        .map(|(st, m)| (st, m.judge.invalid_rate_limit(), Some(m.name.as_str())))
        .collect();
    faults.count_earlier(earlier, &mut sched, &progress);
    let mut d = Driver {
        cfg,
        panel: panel.clone(),
        trusted,
        n,
        blocked,
        sched,
        out: InFlight::new(disp, interrupt),
        current: None,
        warm: None,
        expected: Arc::new(expected),
        price_scale: vec![1.0; members.len()],
        faults,
        fit_failed: None,
        progress,
        others_usd,
        fits_id,
        stored_of: &stored_now,
    };
    let stop = d.drive().await;
    d.out.interrupt.set_in_flight(0);
    let Driver { out, faults, fit_failed, progress, sched, .. } = d;
    let overrun = (sched.budget().overrun(), sched.budget().worst_case_factor());
    let asked = out.asked_at_close();
    let books = out.disp.close().await;
    progress.finish();
    let stop = stop?;
    let books = books?;
    let trusted: Vec<bool> = cfg.raw.judges.iter().map(|m| m.trusted).collect();
    // Each judge's spend: its configuration's keys only (a judge edited under the same name
    // leaves its older verdicts to the folder's other books).
    let spends: Vec<crate::store::books::Spend> = queries
        .iter()
        .map(|q| {
            q.learn_folder(&cfg.run_dir);
            books.spend(&|k: &str| q.contains_key(k))
        })
        .collect();
    finish(
        cfg,
        &panel,
        &trusted,
        opts,
        &spends,
        &stored_now(&books),
        stop,
        (asked, reused, faults, fit_failed),
        overrun,
    )
}

/// The panel's verdicts as the fit takes them: per judge, its valid verdicts.
fn groups(cfg: &Config, stored: &[Vec<StoredVerdict>], trusted: &[bool]) -> Vec<JudgeVerdicts> {
    cfg.raw
        .judges
        .iter()
        .zip(stored)
        .zip(trusted)
        .enumerate()
        .map(|(j, ((m, s), &t))| JudgeVerdicts {
            name: m.name.clone(),
            trusted: t,
            verdicts: s.iter().filter_map(StoredVerdict::verdict).collect::<Vec<ItemVerdict>>(),
            prior: cfg.carried.get(j).cloned().unwrap_or_default(),
        })
        .collect()
}

/// Per judge, `usd` of each ordered query (a, b) of a prompt, once: the acquisition prices
/// every candidate at every pick, and a judge's price of a query renders its prompt (a long
/// article per prompt).
fn per_query(
    members: &[Arc<crate::judge::panel::Named>],
    pool: &crate::domain::pool::Pool,
    usd: impl Fn(&crate::judge::panel::Named, usize, usize) -> f64,
) -> Vec<HashMap<(usize, usize), f64>> {
    let prompts = pool.prompt_items();
    members
        .iter()
        .map(|m| {
            prompts
                .iter()
                .flat_map(|g| g.iter().flat_map(move |&a| g.iter().filter(move |&&b| b != a).map(move |&b| (a, b))))
                .map(|(a, b)| ((a, b), usd(m, a, b)))
                .collect()
        })
        .collect()
}

/// Verdicts a judge must have answered before its bills correct its expected cost.
const PRICE_SCALE_MIN: usize = 4;

/// What a usable verdict of a judge costs over the expected cost of a query
/// ([`JudgeInfo::expected_usd`]), the factor the acquisition applies to that judge's expected
/// cost (docs/model.md §8, "Acquisition over (pair, judge)"):
/// - its bills over their estimates: an API judge whose replies run longer than its estimate (a
///   reasoning model) is priced at what it bills; 1 for a judge that bills nothing, and for one
///   whose bills match its estimate to 1e-9 (the mock judges);
/// - divided by the share of its answered queries that gave a valid verdict. A judge without a
///   usable verdict (none valid, or its valid verdicts carry no signal: one slot or ties winning
///   ≥ 90 % of them, [`crate::analysis::certify::no_signal`]) gets an infinite price: it is not
///   asked again in this run.
///
/// 1 before [`PRICE_SCALE_MIN`] answered queries.
fn price_scale(stored: &[StoredVerdict], expected: &HashMap<(usize, usize), f64>) -> f64 {
    if stored.len() < PRICE_SCALE_MIN {
        return 1.0;
    }
    let known: Vec<(f64, f64)> =
        stored.iter().filter_map(|v| expected.get(&(v.a, v.b)).map(|&e| (v.cost_usd, e))).collect();
    let (billed, estimate) = known.iter().fold((0.0, 0.0), |(b, e), &(x, y)| (b + x, e + y));
    let r = billed / estimate;
    let bills = if known.len() < PRICE_SCALE_MIN || billed <= 0.0 || !r.is_finite() || (r - 1.0).abs() < 1e-9 {
        1.0
    } else {
        r
    };
    let valid: Vec<ItemVerdict> = stored.iter().filter_map(StoredVerdict::verdict).collect();
    let usable = if crate::analysis::certify::no_signal(&valid).is_some() {
        0.0
    } else {
        valid.len() as f64 / stored.len() as f64
    };
    if usable > 0.0 { bills / usable } else { f64::INFINITY }
}

struct Driver<'a, F: Fn(&Books) -> Vec<Vec<StoredVerdict>>> {
    cfg: &'a Config,
    panel: Arc<PanelJudge>,
    trusted: Vec<bool>,
    n: usize,
    /// Per judge, the ordered pairs it is never asked (identical texts, pairs it cannot answer).
    blocked: Vec<HashSet<(usize, usize)>>,
    sched: Scheduler,
    /// The queries out (tagged with their judge) and how the driver waits for them.
    out: InFlight<usize>,
    current: Option<Current>,
    /// β̂ of the last fit with its reference judge (a warm start while the reference stays).
    warm: Option<(usize, Vec<f64>)>,
    /// Per judge, [`JudgeInfo::expected_usd`] of each ordered query (a, b).
    expected: Arc<Vec<HashMap<(usize, usize), f64>>>,
    /// Per judge, what its answered queries cost over their expected cost ([`price_scale`]).
    price_scale: Vec<f64>,
    faults: Faults,
    fit_failed: Option<crate::model::FitError>,
    progress: Progress,
    /// USD the folder's books held at the start for other configurations.
    others_usd: f64,
    /// This configuration's mark on its panel_fits.jsonl lines.
    fits_id: String,
    stored_of: &'a F,
}

/// A panel's lanes: judge j's query (a, b) is the scheduler's pair (j·N + a, j·N + b).
struct Members<'a> {
    n: usize,
    members: &'a [Arc<crate::judge::panel::Named>],
}

impl Lanes<usize> for Members<'_> {
    fn pair(&self, &j: &usize, a: usize, b: usize) -> (usize, usize) {
        encode(self.n, j, a, b)
    }

    fn judge(&self, &j: &usize) -> &dyn Judge {
        self.members[j].judge.as_ref()
    }

    fn member(&self, &j: &usize) -> Option<(usize, &str)> {
        Some((j, self.members[j].name.as_str()))
    }
}

impl<F: Fn(&Books) -> Vec<Vec<StoredVerdict>>> Driver<'_, F> {
    fn signals(&self) -> Signals {
        Signals {
            interrupted: self.out.interrupt.requested(),
            batch_pending: false,
            judge_failing: self.faults.failing.is_some(),
            fit_failed: self.fit_failed.is_some(),
        }
    }

    async fn drive(&mut self) -> Result<StopReason, RunError> {
        let (cfg, panel, n) = (self.cfg, self.panel.clone(), self.n);
        let blocked = self.blocked.clone();
        let pool = &cfg.pool;
        let members = panel.members().to_vec();
        let worst = |ea: usize, eb: usize| {
            let (j, a, b) = decode(n, (ea, eb));
            members[j].worst_case_usd(pool, a, b)
        };
        let prompts = pool.prompt_items();
        let priced = per_query(&members, pool, |m, a, b| m.worst_case_usd(pool, a, b));
        let cost = |j: usize, a: usize, b: usize| {
            priced[j].get(&(a, b)).copied().unwrap_or_else(|| members[j].worst_case_usd(pool, a, b))
        };
        let expected = self.expected.clone();
        // Over many prompts the candidates are scored at equal covariates (docs/systems.md,
        // "Acquisition"): scored with ĉ, the queries would go to the answers whose length cancels
        // the quality gap, which tell about c rather than the ranking. The "same family"
        // covariate is a system's, the same on every prompt, and stays: a judge's verdict on
        // an answer of its family informs the ranking less while its self-preference is
        // uncertain, the trusted judge's does not.
        let x: Vec<Vec<Vec<f64>>> = (0..members.len())
            .map(|j| {
                (0..n)
                    .map(|a| {
                        let mut row =
                            if pool.is_systems() { vec![0.0; cfg.covariates.p()] } else { cfg.covariates.x[a].clone() };
                        if let Some(f) = &cfg.families {
                            row.push(f.same(j, pool.item_base[a]));
                        }
                        row
                    })
                    .collect()
            })
            .collect();
        let acq = &cfg.raw.acquisition;
        loop {
            // What the picks may spend: max_usd less what is booked and reserved.
            let b = self.sched.budget();
            let remaining = b.max_usd().map_or(f64::INFINITY, |m| m - b.spent_usd() - b.reserved_usd());
            let current = self.current.as_ref();
            let scale = self.price_scale.clone();
            let price = |j: usize, a: usize, b: usize| {
                scale[j] * expected[j].get(&(a, b)).copied().unwrap_or_else(|| members[j].expected_usd(pool, a, b))
            };
            let picker = |queried: &HashSet<(usize, usize)>, unfitted: &[(usize, usize)], r: usize| {
                let Some(c) = current else { return Vec::new() };
                let pending: Vec<(usize, usize, usize)> = unfitted
                    .iter()
                    .map(|&q| {
                        let (j, a, b) = decode(n, q);
                        (a, b, j)
                    })
                    .collect();
                let mut per_judge: Vec<HashSet<(usize, usize)>> = blocked.clone();
                for &q in queried {
                    let (j, a, b) = decode(n, q);
                    per_judge[j].insert((a, b));
                }
                let ctx = PanelContext {
                    fit: &c.fit,
                    item_base: &pool.item_base,
                    prompts: &prompts,
                    x: &x,
                    membership: &c.membership,
                    queried: &per_judge,
                    cost: &cost,
                    price: &price,
                    remaining_usd: remaining,
                    pending: &pending,
                };
                let mut r_rng = rng::stream(acq.seed, "panel-acquisition", queried.len() as u64);
                let mut picks = select(&ctx, r, &mut r_rng);
                if picks.is_empty() && remaining.is_finite() {
                    // No pair's two orders fit in what is left: one order that does.
                    picks = select_one_order(&ctx, &mut r_rng);
                }
                if picks.is_empty() && remaining.is_finite() {
                    // Nothing open fits in what is left: an open query goes to the scheduler,
                    // whose reservation fails, so the run stops for `max_usd`.
                    picks = select(&PanelContext { remaining_usd: f64::INFINITY, ..ctx }, 1, &mut r_rng);
                }
                picks.into_iter().map(|(a, b, j)| encode(n, j, a, b)).collect::<Vec<_>>()
            };
            let rule = PickRule {
                pool,
                x: &cfg.covariates.x,
                p: cfg.covariates.p(),
                k: cfg.raw.k,
                design: cfg.raw.design,
                strategy: acq.strategy,
                orders: acq.orders,
                seed: acq.seed,
                worst_usd: &worst,
                allowed: None,
                target_xbar: None,
                panel: Some(&picker),
            };
            let fitted = current.map(|c| Fitted { post: &c.theta_post, membership: &c.membership, certified: None });
            let action = self.sched.next_action(&rule, fitted.as_ref(), self.signals());
            match action {
                Action::Refit => self.refit().await,
                Action::Send(picks) => self.send(picks).await?,
                Action::Wait { stopping } if stopping && self.out.disp.primed() > 0 => {
                    self.out.withdraw(&mut self.sched, &Members { n, members: &members }).await?;
                }
                Action::Wait { .. } => self.wait_event().await?,
                Action::Stop(reason) => return Ok(reason),
            }
            self.out.interrupt.set_in_flight(self.out.disp.out_or_leaving());
        }
    }

    /// A refit of the panel on every stored verdict (off the async runtime; the scheduler asks
    /// for one only when nothing is in flight in `wait_for_batch`).
    async fn refit(&mut self) {
        self.sched.fit_started();
        self.faults.note_failed_rounds(&self.sched);
        let stored = (self.stored_of)(&self.out.disp.books());
        let scales: Vec<f64> = stored.iter().zip(self.expected.iter()).map(|(s, e)| price_scale(s, e)).collect();
        // A judge the price rule stops asking: one without a valid verdict (all its replies
        // invalid) stops the run, as a single judge's would; one whose valid verdicts carry no
        // signal is said, and the others go on.
        for (j, m) in self.panel.members().iter().enumerate() {
            if !scales[j].is_infinite() || self.price_scale[j].is_infinite() {
                continue;
            }
            if stored[j].iter().all(|v| v.verdict().is_none()) {
                let member = (j, m.name.as_str(), stored[j].len());
                self.faults.stop_no_valid_verdict(m.judge.as_ref(), member, &mut self.sched, &self.progress);
            } else {
                self.progress.println(&format!(
                    "warning: judge {}: its valid verdicts carry no signal (one slot or ties win ≥ 90 % of them), so it is not asked again in this run",
                    m.name
                ));
            }
        }
        self.price_scale = scales;
        let groups = groups(self.cfg, &stored, &self.trusted);
        let d = design(&self.cfg.pool, &self.cfg.covariates, &groups, self.cfg.families.as_ref());
        let reference = d.layout.reference;
        let warm = self.warm.as_ref().filter(|(r, _)| *r == reference).map(|(_, b)| b.clone());
        let prior = self.cfg.raw.model.prior();
        let acq = &self.cfg.raw.acquisition;
        let n_valid: usize = groups.iter().map(|g| g.verdicts.len()).sum();
        let mut mc = rng::stream(acq.seed, "panel-membership", n_valid as u64);
        let (k, draws) = (self.cfg.raw.k, acq.mc_draws);
        let done = tokio::task::spawn_blocking(move || {
            let f = panel_model::fit(&d, &prior, warm.as_deref())?;
            let pi = f.membership(k, draws, &mut mc);
            Ok::<_, crate::model::FitError>((f, pi))
        })
        .await
        .expect("fit task does not panic");
        match done {
            Ok((fit, membership)) => {
                let m = fit.layout.m;
                let theta_post = Posterior::dense(fit.theta().to_vec(), Matrix::from_fn(m, m, |r, c| fit.cov[(r, c)]));
                self.warm = Some((reference, fit.beta.clone()));
                let line = crate::report::PanelFitLine {
                    config: self.fits_id.clone(),
                    comparisons: n_valid,
                    spend_usd: pico((self.sched.budget().spent_usd() - self.others_usd).max(0.0)),
                    topk: crate::model::membership::point_topk(fit.theta(), self.cfg.raw.k)
                        .into_iter()
                        .map(|b| self.cfg.pool.bases[b].clone())
                        .collect(),
                };
                let path = self.cfg.run_dir.join(crate::report::PANEL_FITS);
                let written = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&path)
                    .and_then(|mut f| writeln!(f, "{}", serde_json::to_string(&line).expect("serialisable")));
                if let Err(e) = written {
                    tracing::warn!("{}: {e}", path.display());
                }
                self.sched.fit_finished();
                self.current = Some(Current { fit, theta_post, membership });
                self.show();
            }
            Err(e) => {
                self.sched.fit_ended_without_posterior();
                self.fit_failed = Some(e);
                self.current = None;
            }
        }
    }

    /// Hand the reserved picks to the dispatcher, each labelled with its judge and keyed by
    /// it; before the first query, every member's free endpoint check.
    async fn send(&mut self, picks: Vec<Pick>) -> Result<(), RunError> {
        let Some(picks) = self.out.check_once(picks, &mut self.sched, &mut self.faults, &self.progress).await else {
            return Ok(());
        };
        let n = self.n;
        let wave: Vec<Query<usize>> = picks
            .into_iter()
            .map(|p| {
                let (j, a, b) = decode(n, (p.a, p.b));
                let pool = self.panel.pool(j).clone();
                let key = self.panel.members()[j].cache_key(&pool, a, b);
                Query { tag: j, pool, a, b, key, reservation: p.reservation }
            })
            .collect();
        self.out.send(wave);
        Ok(())
    }

    /// Wait for a reply, a signal or the end of the grace period ([`InFlight::wait`]; the
    /// panel's refit runs inline, so none is waited for here).
    async fn wait_event(&mut self) -> Result<(), RunError> {
        let panel = self.panel.clone();
        let lanes = Members { n: self.n, members: panel.members() };
        let mut no_fit: Option<tokio::task::JoinHandle<()>> = None;
        match self.out.wait(&mut no_fit, &mut self.sched, &mut self.faults, &lanes, &self.progress).await? {
            Woke::Settled => self.show(),
            Woke::Fit(()) | Woke::Other => {}
        }
        Ok(())
    }

    fn show(&self) {
        let membership = self.current.as_ref().map(|c| c.membership.as_slice());
        self.out.show(&self.progress, &self.sched, self.cfg, membership);
    }
}

/// The end of a panel run: the panel fitted to every stored verdict, result.json, the printed
/// summary; the run's error when it stopped for one (after result.json is written).
#[allow(clippy::too_many_arguments)]
fn finish(
    cfg: &Config,
    panel: &PanelJudge,
    trusted: &[bool],
    opts: &RunOptions,
    spends: &[crate::store::books::Spend],
    stored: &[Vec<StoredVerdict>],
    stop: StopReason,
    (asked, reused, faults, fit_failed): (usize, usize, Faults, Option<crate::model::FitError>),
    (overrun, factor): (crate::store::budget::Overrun, f64),
) -> Result<PanelRunResult, RunError> {
    // The overrun of this invocation, with the token counts of the judges that passed a bound
    // (each judge's own `max_tokens`: named when one judge did).
    let over: Vec<(String, crate::judge::JudgeStats)> = panel
        .member_stats()
        .into_iter()
        .filter_map(|(name, st)| st.map(|st| (name, st)))
        .filter(|(_, st)| st.above_max_tokens > 0 || st.above_prompt_bound > 0)
        .collect();
    let merged = over.split_first().map(|((_, first), rest)| {
        let mut m = first.clone();
        rest.iter().for_each(|(_, st)| m.merge_bounds(st));
        m
    });
    let overrun = crate::report::result::overrun_report(overrun, factor, merged.as_ref());
    let overrun_judges: Vec<String> =
        if overrun.is_some() { over.into_iter().map(|(name, _)| name).collect() } else { Vec::new() };
    let dir = &cfg.run_dir;
    let groups = groups(cfg, stored, trusted);
    let acq = &cfg.raw.acquisition;
    let comparisons: usize = groups.iter().map(|g| g.verdicts.len()).sum();
    let invalid: usize = stored.iter().flatten().filter(|s| s.y.is_none()).count();
    let mut rng = rng::stream(acq.seed, "membership", comparisons as u64);
    let PanelReport { panel: fitted, notes, not_certified, weak_anchor } = crate::analysis::panel_fit::report(
        &cfg.pool,
        &cfg.covariates,
        &groups,
        cfg.families.as_ref(),
        &cfg.raw.model.prior(),
        (cfg.raw.k, acq.mc_draws, cfg.raw.certify.epsilon),
        &mut rng,
    )
    .map_err(|source| RunError::PanelFit {
        verdicts: stored.iter().map(Vec::len).sum(),
        dir: dir.clone(),
        source,
    })?;
    let mut notes = notes;
    for (i, m) in cfg.raw.judges.iter().enumerate().filter(|(_, m)| !m.prior.is_empty()) {
        notes.insert(0, crate::analysis::panel_fit::carried_note(&m.name, &m.prior, &format!("judges[{i}].prior")));
    }
    if let Some(f) = &cfg.families {
        let names: Vec<&str> = cfg.raw.judges.iter().map(|m| m.name.as_str()).collect();
        notes.splice(0..0, f.lines(&names, &cfg.pool.bases));
    }
    let fit = crate::report::fit::PanelFitOutput {
        pool_id: cfg.pool.pool_id.clone(),
        k: cfg.raw.k,
        epsilon: cfg.raw.certify.epsilon,
        comparisons,
        invalid,
        other_pools: Default::default(),
        bases: cfg.pool.bases.clone(),
        not_certified,
        weak_anchor,
        draws: acq.mc_draws,
        seed: acq.seed,
        panel: fitted,
        notes,
        warnings: Vec::new(),
    };
    let judges = panel
        .members()
        .iter()
        .zip(stored)
        .zip(trusted)
        .zip(spends)
        .map(|(((m, s), &t), usd)| PanelJudgeSpend {
            name: m.name.clone(),
            judge: m.judge.describe(),
            trusted: t,
            queries: s.len(),
            invalid: s.iter().filter(|v| v.y.is_none()).count(),
            spend_usd: pico(usd.total_usd()),
        })
        .collect();
    // No valid verdict: the fit is the prior's, and no top-k is claimed; a tie at the k-th
    // place claims only the places above it, and no recall (as a single judge's run).
    let crate::analysis::ranking::TopkWithTies { topk: top, tied } = if comparisons == 0 {
        Default::default()
    } else {
        crate::analysis::ranking::topk_with_ties(&fit.panel.theta, cfg.raw.k)
    };
    let gold = cfg.pool.base_quality();
    let recall_at_k = gold
        .as_ref()
        .filter(|_| !top.is_empty() && tied.is_empty())
        .map(|g| crate::analysis::ranking::recall_with_ties(&top, g, cfg.raw.k));
    let names = |b: &[usize]| b.iter().map(|&i| cfg.pool.bases[i].clone()).collect::<Vec<_>>();
    let gold_topk = gold.as_ref().map(|g| names(&crate::model::membership::point_topk(g, cfg.raw.k)));
    let gold_tied =
        gold.as_ref().map(|g| names(&crate::analysis::ranking::topk_with_ties(g, cfg.raw.k).tied)).unwrap_or_default();
    let certified = certified_of(&fit, cfg.raw.k);
    let folder_books = crate::store::books::folder_books(dir)?;
    let folder = folder_books.total();
    let result = PanelRunResult {
        overrun,
        overrun_judges,
        fingerprint: opts.fingerprint.clone(),
        name: cfg.raw.name.clone(),
        topk: names(&top),
        topk_tied: names(&tied),
        recall_at_k,
        gold_topk,
        gold_tied,
        certified,
        stop_reason: stop,
        stop_message: faults.invalid_stop.clone().filter(|_| stop == StopReason::MaxInvalidRate),
        last_error: faults.failing.clone().filter(|_| stop == StopReason::JudgeFailing),
        judges,
        comparisons: stored.iter().map(Vec::len).sum(),
        spend_usd: pico(spends.iter().map(crate::store::books::Spend::total_usd).sum()),
        possibly_billed: spends.iter().map(|s| s.possibly_billed).sum(),
        folder_spend: crate::report::schema::FolderSpend {
            spend_usd: pico(folder.total_usd()),
            other_usd: pico(
                (folder.total_usd() - spends.iter().map(crate::store::books::Spend::total_usd).sum::<f64>()).max(0.0),
            ),
            possibly_billed: folder.possibly_billed,
            possibly_billed_usd: folder.possibly_billed_usd,
            in_open_batch_job: None,
            fingerprint_usd: folder_books.fingerprint.total_usd(),
            gate_trusted_usd: 0.0,
            held_for_gate_usd: 0.0,
            max_usd: cfg.raw.budget.max_usd,
        },
        max_usd: cfg.raw.budget.max_usd,
        asked_now: asked,
        reused,
        failed: faults.failed,
        fit,
    };
    super::write_result_json(dir, &result)?;
    // Only replies billed above their reservations take the books past max_usd.
    let after = faults
        .failing
        .map(|message| RunError::JudgeFailing { message })
        .or_else(|| {
            let cause = match (&result.overrun, result.overrun_judges.as_slice()) {
                (Some(o), []) => Some(o.cause()),
                (Some(o), names) => Some(format!("{} ({})", o.cause(), names.join(", "))),
                (None, _) => (result.asked_now > 0).then(|| "a judge billed more than its worst case: more prompt tokens than the prompt has bytes, or more completion tokens than max_tokens".to_string()),
            };
            RunError::above_max_usd(cause, result.folder_spend.spend_usd, cfg.raw.budget.max_usd)
        });
    super::conclude(result, |r| summary_text(r, dir), cfg, opts, stop, fit_failed, after)
}

/// The certified top-k of a panel fit: its π and θ̂ as the sets of docs/model.md, "Certified
/// top-k"; nothing certified when the fit says why not (too few draws, an uncompared base).
fn certified_of(fit: &crate::report::fit::PanelFitOutput, k: usize) -> crate::report::schema::CertifiedTopk {
    let p = &fit.panel;
    let order = crate::analysis::ranking::order(&p.theta);
    let ids = |b: &[usize]| b.iter().map(|&i| fit.bases[i].clone()).collect::<Vec<_>>();
    let base = crate::report::schema::CertifiedTopk { epsilon: fit.epsilon, mc_draws: fit.draws, ..Default::default() };
    if let Some(why) = &fit.not_certified {
        return crate::report::schema::CertifiedTopk { undecided: ids(&order), withheld: Some(why.clone()), ..base };
    }
    let s = crate::analysis::certify::sets(&p.membership, &order, fit.epsilon);
    crate::report::schema::CertifiedTopk {
        claimed: s.claimed(k),
        inside: ids(&s.inside),
        undecided: ids(&s.undecided),
        outside: ids(&s.outside),
        ..base
    }
}

/// USD rounded to 1e-12: a sum of the books does not depend on the order the replies were
/// appended in.
fn pico(usd: f64) -> f64 {
    (usd * 1e12).round() / 1e12
}

/// The printed summary of a panel run: the spend per judge, then the panel as `fit --panel`
/// prints it.
pub fn summary_text(r: &PanelRunResult, dir: &Path) -> String {
    let of_max = || {
        r.max_usd
            .map(|m| if m < 1e6 { format!(" of max_usd ${m}") } else { format!(" of max_usd ${m:e}") })
            .unwrap_or_default()
    };
    // Other books in the folder: max_usd goes with the folder's total, on its own line.
    let f = &r.folder_spend;
    let others = f.other_usd > 5e-13;
    let mut t = format!(
        "judge panel run: stopped ({}), {} ({} asked now, {} reused), ${:.6} spent{}{}\n",
        serde_json::to_value(r.stop_reason).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default(),
        crate::domain::fmt::count(r.comparisons, "verdict"),
        r.asked_now,
        r.reused,
        r.spend_usd,
        if others { String::new() } else { of_max() },
        if r.possibly_billed > 0 { format!(" ({} possibly billed)", r.possibly_billed) } else { String::new() }
    );
    // Nothing asked now: the folder's books (its verdicts, or those of earlier settings) already
    // use the budget up, or an empty folder's budget does not cover one query.
    let books_reached = (r.asked_now == 0 && (r.reused > 0 || r.folder_spend.spend_usd > 0.0))
        .then(|| crate::report::summary::budget_reached(r.stop_reason, r.folder_spend.spend_usd, r.max_usd))
        .flatten();
    if let Some(why) = books_reached {
        t.push_str(&format!("  {why}\n"));
    } else if r.comparisons == 0
        && r.stop_reason == StopReason::MaxUsd
        && let Some(m) = r.max_usd
    {
        t.push_str(&format!(
            "  max_usd ${m} does not cover one query's worst-case cost of any judge: nothing was bought; `run --dry-run` shows the cost per query and how many the budget allows\n"
        ));
    } else if let Some(why) =
        crate::report::summary::budget_left(r.stop_reason, r.folder_spend.spend_usd, r.max_usd, 0.0)
    {
        t.push_str(&format!("  {why}\n"));
    }
    if let Some(m) = &r.stop_message {
        t.push_str(&format!("  stopped because {m}\n"));
    }
    if let Some(o) = &r.overrun {
        t.push_str(&format!("  {}\n", crate::report::summary::panel_overrun_line(o, &r.overrun_judges)));
    }
    for j in &r.judges {
        t.push_str(&format!(
            "  {}{}: {}{}, ${:.6} ({})\n",
            j.name,
            if j.trusted { " (trusted)" } else { "" },
            crate::domain::fmt::count(j.queries, "verdict"),
            if j.invalid > 0 { format!(" ({} invalid)", j.invalid) } else { String::new() },
            j.spend_usd,
            j.judge
        ));
    }
    if others {
        let parts =
            crate::report::summary::other_spend_parts(f.other_usd, f.fingerprint_usd, f.gate_trusted_usd, &|x| {
                format!("${x:.6}")
            });
        t.push_str(&format!(
            "  other books of this folder: ${:.6} ({parts}; counted against max_usd, not fitted): ${:.6} in all{}\n",
            f.other_usd,
            f.spend_usd,
            of_max()
        ));
    }
    if r.failed > 0 {
        t.push_str(&format!("  {} queries failed in this invocation\n", r.failed));
    }
    if !r.topk_tied.is_empty() {
        t.push_str(&format!("{}\n", crate::report::summary::tied_line(r.fit.k, &r.topk, &r.topk_tied)));
    } else if r.topk.is_empty() {
        t.push_str("no valid verdict: no top-k and no recall is claimed\n");
    } else {
        t.push_str(&format!("top-{} by θ̂: {}", r.topk.len(), r.topk.join(", ")));
        if let Some(rc) = r.recall_at_k {
            t.push_str(&format!("; recall@{} against the pool's gold quality {rc:.2}", r.topk.len()));
        }
        t.push('\n');
        if let Some(g) = r.gold_topk.clone().filter(|_| !r.gold_tied.is_empty()) {
            let tie = crate::report::RecallTarget { topk: g, tied: r.gold_tied.clone() };
            t.push_str(&format!(
                "gold top-{}: {} (a tie in gold quality at its boundary: recall@{} counts any of them)\n",
                r.fit.k,
                tie.describe(),
                r.fit.k
            ));
        }
    }
    t.push('\n');
    t.push_str(&crate::report::fit::panel_text(&r.fit));
    t.push_str(&format!("\nresult: {}\n", dir.join("result.json").display()));
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::verdict::Usage;

    fn answered(pairs: &[(usize, usize, f64)]) -> Vec<StoredVerdict> {
        pairs
            .iter()
            .map(|&(a, b, cost_usd)| StoredVerdict {
                a,
                b,
                y: Some(1.0),
                cost_usd,
                usage: Usage::default(),
                weight: 1.0,
            })
            .collect()
    }

    #[test]
    fn a_judge_is_priced_at_its_bills_over_its_estimates() {
        let expected: HashMap<(usize, usize), f64> =
            [((0, 1), 1.0), ((1, 0), 1.0), ((0, 2), 2.0), ((2, 0), 2.0), ((1, 2), 4.0)].into_iter().collect();
        // Billed 3 + 3 + 6 + 6 = 18 against estimates of 1 + 1 + 2 + 2 = 6: three times the estimate.
        let s = answered(&[(0, 1, 3.0), (1, 0, 3.0), (0, 2, 6.0), (2, 0, 6.0)]);
        assert_eq!(price_scale(&s, &expected), 3.0);
        // Fewer than four answered queries, a judge that bills nothing, a bill equal to its
        // estimate: the estimate stands.
        assert_eq!(price_scale(&s[..3], &expected), 1.0);
        assert_eq!(price_scale(&answered(&[(0, 1, 0.0), (1, 0, 0.0), (0, 2, 0.0), (2, 0, 0.0)]), &expected), 1.0);
        assert_eq!(price_scale(&answered(&[(0, 1, 1.0), (1, 0, 1.0), (0, 2, 2.0), (2, 0, 2.0)]), &expected), 1.0);
        // A judge billing half its estimate (a cached prompt) is priced at half.
        let half = answered(&[(0, 1, 0.5), (1, 0, 0.5), (0, 2, 1.0), (2, 0, 1.0), (1, 2, 2.0)]);
        assert_eq!(price_scale(&half, &expected), 0.5);
    }

    #[test]
    fn a_judge_is_priced_per_usable_verdict() {
        let expected: HashMap<(usize, usize), f64> =
            (0..6).flat_map(|a| (0..6).map(move |b| ((a, b), 1.0))).filter(|((a, b), _)| a != b).collect();
        let at = |pairs: &[(usize, usize)], y: &dyn Fn(usize) -> Option<f64>| -> Vec<StoredVerdict> {
            pairs
                .iter()
                .enumerate()
                .map(|(i, &(a, b))| StoredVerdict {
                    a,
                    b,
                    y: y(i),
                    cost_usd: 1.0,
                    usage: Usage::default(),
                    weight: 1.0,
                })
                .collect()
        };
        let pairs: Vec<(usize, usize)> =
            (0..6).flat_map(|a| (0..6).map(move |b| (a, b))).filter(|(a, b)| a != b).take(12).collect();
        // Half of its replies invalid: twice the price of a query per valid verdict.
        let half = at(&pairs, &|i| (i % 2 == 0).then_some(if i % 4 == 0 { 1.0 } else { 0.0 }));
        assert_eq!(price_scale(&half, &expected), 2.0);
        // No valid verdict, or every valid one for the first-shown answer: not asked again.
        assert_eq!(price_scale(&at(&pairs, &|_| None), &expected), f64::INFINITY);
        assert_eq!(price_scale(&at(&pairs, &|_| Some(0.6)), &expected), f64::INFINITY);
        // Both slots winning: usable.
        assert_eq!(price_scale(&at(&pairs, &|i| Some(if i % 3 == 0 { 0.0 } else { 1.0 })), &expected), 1.0);
    }
}

//! Algorithm 1 (docs/model.md §3, paper App. A): fit → membership → select R queries → send them
//! concurrently → store each verdict as it arrives → refit, until the budget is spent, no
//! unqueried ordered pair is left, or (optionally) every π is within ε of 0 or 1.
//!
//! The one place where async meets the core. Re-running a config resumes from verdicts.jsonl:
//! cached ordered pairs are never queried again, and the last refit is re-used as an exact warm
//! start so a resumed run makes the same choices as an uninterrupted one.
//!
//! Money safety (docs/live.md, "Crashes, Ctrl-C and two processes"): the run holds the run-folder
//! lock ([`crate::store::lock`]); every request is preceded by an fsynced intent and closed by its
//! record ([`crate::store::books`]), so a kill at any moment leaves every possibly billed request
//! booked; Ctrl-C stops sending and waits for the requests in flight ([`super::interrupt`]).
//! Faults do not end a run ([`super::faults`]): a pair whose queries keep failing is set aside
//! and acquisition moves on; the run stops early only when the judge itself fails (its endpoint
//! cannot be reached before the first query, the same endpoint-wide error comes back, or 3
//! rounds in a row bring no verdict), and even then it writes result.json from the verdicts it
//! has (`stop_reason: judge_failing`) and prints the summary. A run removes the result.json of an
//! earlier run in its folder when it starts, so no older result is left looking current.

use super::dispatch::{Dispatcher, Event, Outcome, Query, Settled};
use super::interrupt::Interrupt;
use super::queries::RunQueries;
use super::schedule::{Dispatch, Fitted, PickRule, ScheduleSettings, Scheduler};
use crate::config::run::Config;
use crate::domain::rng;
use crate::domain::verdict::ItemVerdict;
use crate::domain::verdict::Usage;
use crate::judge::{Judge, JudgeError};
use crate::model::FitError;
use crate::model::laplace::Posterior;
use crate::model::summary::{FitSummary, build_design, fit_and_summarise};
use crate::report::progress::Progress;
use crate::report::schema::{QuarantinedPair, RunResult, StopReason, VerdictsReport};
use crate::report::{self, FitLine};
use crate::run::faults::{EndpointGuard, Quarantine};
use crate::store::books::{Books, BooksError};
use crate::store::budget::Budget;
use crate::store::ledger::{CacheError, VerdictRecord};
use crate::store::lock::{LockError, RunLock};
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// Errors of a run.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// Output files.
    #[error("{path}: {source}")]
    Io {
        /// The run-folder file (result.json, report, config copy, …) that could not be written.
        path: PathBuf,
        /// The I/O error from the operating system.
        source: std::io::Error,
    },
    /// Reading the verdict log (verdicts.jsonl) failed: I/O error or a line that is not a record.
    #[error(transparent)]
    Cache(#[from] CacheError),
    /// The run folder's books (verdicts, paid failures, intents).
    #[error(transparent)]
    Books(#[from] BooksError),
    /// Another process runs in this folder, or its lock cannot be taken.
    #[error(transparent)]
    Lock(#[from] LockError),
    /// The Ctrl-C / SIGTERM handlers could not be installed.
    #[error("installing the Ctrl-C and SIGTERM handlers: {0}")]
    Signals(std::io::Error),
    /// The Bradley–Terry MAP fit failed (Newton did not converge, or the Hessian is not positive definite).
    #[error(transparent)]
    Fit(#[from] FitError),
    /// The judge failed (endpoint not reachable, the same endpoint-wide error again, or rounds
    /// without any verdict); result.json was still written, with `stop_reason: judge_failing`.
    #[error("the judge is failing, so the run stopped (result.json holds the verdicts so far): {message}")]
    JudgeFailing {
        /// Why, naming the setting to change when there is one.
        message: String,
    },
}

/// Options that are not part of the config.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Show the progress bar (still hidden when stdout is not a terminal).
    pub progress: bool,
    /// Print the summary table to stdout.
    pub print: bool,
    /// Handle Ctrl-C and SIGTERM (the binary does): the first stops sending and waits up to
    /// `interrupt_grace_s` for the requests in flight, the second exits the process at once
    /// ([`super::interrupt`]). Off, the caller's own signal handling is left alone.
    pub handle_signals: bool,
}

fn io_err(path: &Path) -> impl Fn(std::io::Error) -> RunError + '_ {
    move |source| RunError::Io { path: path.to_owned(), source }
}

/// Hash of what determines the fit (model, covariates, k, seed, draws) for warm-start matching.
fn config_hash(cfg: &Config) -> String {
    let v = serde_json::json!({
        "model": cfg.raw.model, "covs": cfg.covariate_specs, "k": cfg.raw.k,
        "acq": cfg.raw.acquisition, "pool": cfg.pool.pool_id,
    });
    rng::sha256_hex(&v.to_string())[..16].to_string()
}

/// What a run folder was made by: the fit settings ([`config_hash`]) and the judge (the cache
/// key of the pool's first ordered pair, which hashes the judge's settings, prompt and texts).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct RunIdentity {
    fit: String,
    judge: String,
}

/// A warning when `dir` already holds a run made by another configuration (its `run.json`
/// differs): that run's result.json and config.yaml are about to be replaced.
fn other_run_warning(dir: &Path, id: &RunIdentity) -> Option<String> {
    let old: RunIdentity = serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).ok()?).ok()?;
    let what = match (old.fit != id.fit, old.judge != id.judge) {
        (false, false) => return None,
        (true, false) => "model, k, acquisition or pool",
        (false, true) => "judge",
        (true, true) => "judge and model, k, acquisition or pool",
    };
    Some(format!(
        "{} holds a run with a different {what}: its result.json and config.yaml are replaced and fits.jsonl gets a second history (stored verdicts are kept and reused only by the same judge); give this run its own `name` to keep both",
        dir.display()
    ))
}

/// A stored verdict of this run's judge: ordered pair (`a` shown first), outcome (`None`:
/// invalid), cost (USD), tokens and the weight of its likelihood term.
struct Stored {
    a: usize,
    b: usize,
    y: Option<f64>,
    cost_usd: f64,
    usage: Usage,
    weight: f64,
}

/// The stored verdicts of the run's queries, in the order they were stored; `strong_w` is the
/// weight of a strong preference's likelihood term.
fn stored_verdicts(queries: &RunQueries, books: &Books, strong_w: f64) -> Vec<Stored> {
    queries
        .stored(books.log().records())
        .into_iter()
        .map(|(a, b, r)| Stored { a, b, y: r.y, cost_usd: r.cost_usd, usage: r.usage, weight: r.weight(strong_w) })
        .collect()
}

impl Stored {
    /// The verdict as the fit sees it (`None` for an invalid reply).
    fn verdict(&self) -> Option<ItemVerdict> {
        self.y.map(|y| ItemVerdict { a: self.a, b: self.b, y, w: self.weight })
    }
}

/// What a run's failed and invalid queries have done so far (docs/live.md, "Faults"): the
/// failures counted, the pairs set aside, endpoint-wide errors, and why the run must stop for
/// its judge or its invalid-reply rate.
struct Faults {
    failed: usize,
    last_error: String,
    quarantine: Quarantine,
    guard: EndpointGuard,
    /// Why the run stops for its judge.
    failing: Option<String>,
    /// Why the run stops for its invalid-reply rate (`acquisition.max_invalid_rate`).
    invalid_stop: Option<String>,
    /// Queries the judge has no verdict for (`JudgeError::Unavailable`): set aside, never re-picked.
    unavailable: HashSet<(usize, usize)>,
}

impl Faults {
    fn new(max_failed_queries_per_pair: u32) -> Self {
        Self {
            failed: 0,
            last_error: String::new(),
            quarantine: Quarantine::new(max_failed_queries_per_pair),
            guard: EndpointGuard::new(),
            failing: None,
            invalid_stop: None,
            unavailable: HashSet::new(),
        }
    }

    /// Tell the scheduler how a query ended, and count, set aside or stop as its outcome asks.
    fn settle(&mut self, settled: Settled<()>, sched: &mut Scheduler, judge: &dyn Judge, progress: &Progress) {
        let (a, b, res) = (settled.a, settled.b, settled.reservation);
        let (ida, idb) = (&settled.pool.items[a].id, &settled.pool.items[b].id);
        match settled.outcome {
            Outcome::Verdict { cost_usd, stored } => {
                sched.stored_verdict(a, b, res, cost_usd, stored);
                self.guard.succeeded();
                if self.invalid_stop.is_none() {
                    self.invalid_stop = invalid_rate_stop(judge);
                    if let Some(m) = &self.invalid_stop {
                        progress.println(&format!("stopping: {m}"));
                    }
                }
            }
            // No verdict exists (a replay's recording lacks it): set aside, not a
            // failure; or the judge cannot go on: the run stops as for a failing
            // judge, with its message.
            Outcome::Failed(e @ (JudgeError::Unavailable { .. } | JudgeError::Fatal { .. })) => {
                sched.set_aside(a, b, res);
                if matches!(e, JudgeError::Unavailable { .. }) {
                    self.unavailable.insert((a, b));
                } else {
                    self.last_error = e.to_string();
                    self.failing.get_or_insert(self.last_error.clone());
                }
            }
            Outcome::Failed(e) => {
                self.failed += 1;
                self.last_error = e.to_string();
                tracing::warn!("query {ida} vs {idb} failed: {e}");
                let unjudgeable = matches!(e, JudgeError::Unjudgeable { .. });
                if e.setting().is_none() && self.quarantine.failed(a, b, &self.last_error, unjudgeable) {
                    tracing::warn!(
                        "{ida} vs {idb} set aside for the rest of this run after {} failed queries",
                        self.quarantine.failures(a, b)
                    );
                }
                sched.failed(a, b, res, e.cost_usd(), false);
                sched.exclude(self.quarantine.ordered_pairs());
                if let Some(why) = self.guard.failed(e.setting(), &self.last_error) {
                    self.failing.get_or_insert(why);
                }
                if sched.settings().dispatch == Dispatch::Pipelined && sched.failed_rounds() >= 3 {
                    self.failing.get_or_insert(format!(
                        "{} queries failed ({} in a row without any verdict); last error: {}",
                        self.failed,
                        sched.failed_rounds() * sched.settings().refit_every,
                        self.last_error
                    ));
                }
            }
        }
    }
}

/// A finished refit: its summary, Laplace posterior, β̂ for the next warm start, and whether
/// its fits.jsonl line was written (with its number of valid verdicts).
struct FitOk {
    summary: FitSummary,
    post: Posterior,
    beta: Vec<f64>,
    written: std::io::Result<Option<usize>>,
}

type FitDone = Result<FitOk, FitError>;

/// What a refit needs besides the design: it runs in a blocking task, so it owns its inputs.
struct FitInput {
    pool: Arc<crate::domain::pool::Pool>,
    covs: crate::domain::pool::Covariates,
    prior: crate::model::Prior,
    k: usize,
    draws: usize,
    warm: Option<Vec<f64>>,
    mc_rng: rng::ChaCha8Rng,
    /// The fit settings' hash and fits.jsonl, when this refit's line is to be written.
    line: Option<(String, Arc<std::sync::Mutex<std::fs::File>>)>,
}

/// One refit on `n_valid` valid verdicts (MAP, Laplace posterior, top-k membership), and its
/// fits.jsonl line (flushed) when asked for.
fn refit(input: FitInput, design: &crate::model::Design, n_valid: usize) -> FitDone {
    let FitInput { pool, covs, prior, k, draws, warm, mut mc_rng, line } = input;
    let (summary, _fit, post) =
        fit_and_summarise(&pool, &covs, design, &prior, k, draws, warm.as_deref(), &mut mc_rng)?;
    let mut beta = summary.theta.clone();
    beta.extend_from_slice(&summary.c);
    beta.push(summary.kappa);
    let written = match line {
        Some((config_hash, fits_file)) => {
            let line = FitLine {
                config_hash,
                comparisons: n_valid,
                theta: report::by_base(&pool, &summary.theta),
                sd: report::by_base(&pool, &summary.sd),
                membership: report::by_base(&pool, &summary.membership),
                c: report::by_cov(&covs, &summary.c),
                kappa: summary.kappa,
                topk: summary.topk.iter().map(|b| pool.bases[*b].clone()).collect(),
                beta: beta.clone(),
            };
            let mut s = serde_json::to_string(&line).expect("serialisable");
            s.push('\n');
            let mut f = fits_file.lock().expect("fits lock");
            f.write_all(s.as_bytes()).and_then(|()| f.flush()).map(|()| Some(n_valid))
        }
        None => Ok(None),
    };
    Ok(FitOk { summary, post, beta, written })
}

/// A run folder opened for a run: its lock (held until the run ends), the signal handlers, the
/// books, and warnings for the user (another run's folder, open intents booked).
struct Folder {
    lock: RunLock,
    interrupt: Interrupt,
    books: Books,
    warnings: Vec<String>,
}

/// Open the run folder: take its lock, install the signal handlers, remove an earlier
/// result.json, write run.json and the run's inputs (config.yaml, pool.jsonl, prompt/), and open
/// the books (open intents of a run that ended early are booked as possibly billed).
fn open_folder(cfg: &Config, judge: &dyn Judge, opts: &RunOptions) -> Result<Folder, RunError> {
    let dir = &cfg.run_dir;
    let identity = RunIdentity {
        fit: config_hash(cfg),
        judge: (0..cfg.pool.n_items())
            .flat_map(|a| (0..cfg.pool.n_items()).map(move |b| (a, b)))
            .find(|&(a, b)| a != b)
            .map(|(a, b)| judge.cache_key(&cfg.pool, a, b))
            .unwrap_or_default(),
    };
    let other_run = other_run_warning(dir, &identity);
    std::fs::create_dir_all(dir).map_err(io_err(dir))?;
    // One process per run folder, from before anything is written until the run ends.
    let lock = RunLock::acquire(dir)?;
    let interrupt = if opts.handle_signals {
        Interrupt::install(Duration::from_secs_f64(cfg.raw.interrupt_grace_s)).map_err(RunError::Signals)?
    } else {
        Interrupt::never()
    };
    // An earlier run's result is not this run's: gone until this run writes its own.
    let result_path = dir.join("result.json");
    match std::fs::remove_file(&result_path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(io_err(&result_path)(e)),
        _ => {}
    }
    let id_path = dir.join("run.json");
    std::fs::write(&id_path, serde_json::to_string(&identity).expect("serialisable")).map_err(io_err(&id_path))?;
    // config.yaml, pool.jsonl and prompt/: the run folder can be re-read from anywhere.
    crate::config::run_inputs::write(cfg, dir).map_err(|(path, source)| RunError::Io { path, source })?;
    // Open intents of a run that ended early are booked as possibly billed here.
    let (books, mut warnings) = Books::open(dir)?;
    warnings.splice(0..0, other_run);
    Ok(Folder { lock, interrupt, books, warnings })
}

/// The exact warm start of a resumed run: β̂ and the number of valid verdicts of the last
/// fits.jsonl line made with the same fit settings (`chash`), if any.
fn warm_start(cfg: &Config, fits_path: &Path, chash: &str) -> (Option<Vec<f64>>, Option<usize>) {
    if let Ok(text) = std::fs::read_to_string(fits_path)
        && let Some(line) = text.lines().rev().find_map(|l| serde_json::from_str::<FitLine>(l).ok())
        && line.config_hash == chash
        && line.beta.len() == cfg.pool.n_bases() + cfg.covariates.p() + 1
    {
        return (Some(line.beta), Some(line.comparisons));
    }
    (None, None)
}

/// Run Algorithm 1 for a validated config with a judge. Writes into `cfg.run_dir`.
///
/// # Errors
/// [`RunError`]. A failed query is counted (and its pair set aside when it keeps failing), not
/// fatal; [`RunError::JudgeFailing`] comes after result.json is written and the summary printed.
pub async fn run(cfg: &Config, judge: Arc<dyn Judge>, opts: &RunOptions) -> Result<RunResult, RunError> {
    let dir = &cfg.run_dir;
    // The folder's lock is held from before anything is written until the run ends.
    let Folder { lock: _lock, mut interrupt, books, warnings } = open_folder(cfg, judge.as_ref(), opts)?;
    let pool = Arc::new(cfg.pool.clone());
    let queries = RunQueries::new(cfg, judge.as_ref());
    queries.learn_folder(dir);
    // Pairs that are not sent (identical texts): counted as asked for the acquisition.
    let skip = queries.skipped().clone();
    let total_pairs = queries.n_pairs() as u64;
    let sendable = queries.sendable() as u64;
    let progress = Progress::new(cfg.raw.budget.max_comparisons.unwrap_or(sendable).min(sendable), opts.progress);
    for w in warnings {
        progress.println(&format!("warning: {w}"));
    }
    let k = cfg.raw.k;
    let acq = &cfg.raw.acquisition;
    let prior = cfg.raw.model.prior();
    let chash = config_hash(cfg);
    let fits_path = dir.join("fits.jsonl");
    let (mut warm, mut last_fit_n) = warm_start(cfg, &fits_path, &chash);
    let fits_file =
        std::fs::OpenOptions::new().create(true).append(true).open(&fits_path).map_err(io_err(&fits_path))?;

    // This judge's stored verdicts.
    let strong_w = cfg.raw.model.strong_preference_weight;
    let mine = |books: &Books| stored_verdicts(&queries, books, strong_w);
    let is_mine = |k: &str| queries.contains_key(k);
    let stored = mine(&books);
    // Everything booked for this judge: verdicts, paid failures, possibly billed requests.
    let spent = books.spend(&is_mine).total_usd();
    let mut session = crate::report::schema::Session { reused: stored.len(), asked: 0 };
    // A gate's trusted judge spends from the same budget.max_usd.
    let gate_spend =
        crate::store::books::peek_spend_files(dir, &crate::store::books::TRUSTED_BOOKS, &|_| true)?.total_usd();
    let budget =
        Budget::new(cfg.raw.budget.max_comparisons, cfg.raw.budget.max_usd, stored.len() as u64, spent + gate_spend);
    let mut faults = Faults::new(acq.max_failed_queries_per_pair);
    let mut fit_failed: Option<FitError> = None;
    let mut checked = false; // the judge's preflight request
    // The pure scheduler decides what to send, when to refit and when the run may stop
    // (super::schedule); this loop talks to the judge, the books and the fit.
    let settings = ScheduleSettings {
        refit_every: acq.refit_every,
        concurrency: acq.concurrency,
        dispatch: acq.dispatch,
        write_ahead: acq.dispatch.write_ahead(acq.write_ahead),
    };
    let mut sched =
        Scheduler::new(settings, total_pairs as usize, stored.iter().map(|s| (s.a, s.b)), skip.iter().copied(), budget);
    let rule = PickRule {
        pool: &pool,
        x: &cfg.covariates.x,
        p: cfg.covariates.p(),
        k,
        design: cfg.raw.design,
        strategy: acq.strategy,
        orders: acq.orders,
        seed: acq.seed,
    };
    // Every query goes through the dispatcher: intent fsynced before it is sent, the reply or
    // the failure booked (fsynced, off the async runtime) when it comes back; a verdict counts
    // only once it is on disk.
    let mut disp: Dispatcher<()> = Dispatcher::new(judge.clone(), books);
    disp.set_wire_limit(acq.concurrency);
    let fits_file = Arc::new(std::sync::Mutex::new(fits_file));
    let mut current: Option<(FitSummary, Posterior)> = None;
    let mut fit_task: Option<tokio::task::JoinHandle<FitDone>> = None;
    // Replies being booked (their verdicts fsynced) while the next picks are sent: one
    // booking at a time, in the order collected.
    let mut recording: std::collections::VecDeque<super::dispatch::Recording<()>> = Default::default();
    // Replies that came in while a booking runs: booked together once it is done (one fsync of
    // the verdict log for all of them, not one each next to the intents' fsyncs). Never
    // non-empty while `recording` is empty.
    let mut to_book: Vec<super::dispatch::Reply<()>> = Vec::new();
    let mut usd_blocked = false; // a reservation failed; retried once a query settles
    let mut grace_end: Option<tokio::time::Instant> = None;
    let mut hard_stop: Option<StopReason> = None; // the fit failed: drain, then stop
    let mut rate = super::throughput::Meter::new();
    let (summary, stop) = loop {
        if let Some(stop) = hard_stop
            && disp.in_flight() == 0
            && recording.is_empty()
        {
            break (FitSummary::prior(pool.n_bases(), cfg.covariates.p(), &prior, k), stop);
        }
        // A refit when the scheduler asks for one: after each round (wait-for-batch), or after R
        // stored verdicts while requests keep flying (pipelined).
        if hard_stop.is_none() && fit_task.is_none() && recording.is_empty() && sched.wants_fit() {
            sched.fit_started();
            if sched.failed_rounds() >= 3 {
                faults.failing.get_or_insert(format!(
                    "{} queries failed in {} consecutive rounds without any verdict; last error: {}",
                    faults.failed,
                    sched.failed_rounds(),
                    faults.last_error
                ));
            }
            let stored = mine(&disp.books());
            let verdicts: Vec<ItemVerdict> = stored.iter().filter_map(Stored::verdict).collect();
            let design = build_design(&pool, &cfg.covariates, &verdicts);
            let n_valid = verdicts.len();
            let input = FitInput {
                pool: pool.clone(),
                covs: cfg.covariates.clone(),
                prior,
                k,
                draws: acq.mc_draws,
                warm: warm.clone(),
                mc_rng: rng::stream(acq.seed, "membership", n_valid as u64),
                line: (last_fit_n != Some(n_valid)).then(|| (chash.clone(), fits_file.clone())),
            };
            fit_task = Some(tokio::task::spawn_blocking(move || refit(input, &design, n_valid)));
        }
        let confident = |s: &FitSummary| {
            acq.confidence.is_some_and(|eps| s.membership.iter().all(|p| *p <= eps || *p >= 1.0 - eps))
        };
        // A quiet point (nothing in flight, the posterior has seen every verdict): the stop rules.
        if fit_task.is_none()
            && sched.quiet()
            && let Some((summary, _)) = &current
        {
            // Stop conditions. Set-aside pairs count as asked.
            let stop = if faults.failing.is_some() {
                Some(StopReason::JudgeFailing)
            } else if sched.all_asked() {
                Some(StopReason::Exhausted)
            } else if confident(summary) {
                Some(StopReason::Confident)
            } else if sched.budget().comparisons_left() == 0 {
                Some(StopReason::MaxComparisons)
            } else if interrupt.requested() {
                Some(StopReason::Interrupted)
            } else if faults.invalid_stop.is_some() {
                Some(StopReason::MaxInvalidRate)
            } else {
                None
            };
            if let Some(stop) = stop {
                break (current.take().expect("checked").0, stop);
            }
        }
        // Fill the free slots from the latest posterior (never after a stop signal, a failing
        // judge, the invalid-rate stop, a confident pipelined fit, or a failed reservation).
        let may_send = hard_stop.is_none()
            && faults.failing.is_none()
            && faults.invalid_stop.is_none()
            && !interrupt.requested()
            && !usd_blocked
            && current.as_ref().is_some_and(|(s, _)| !confident(s));
        if !may_send {
            // Wait-for-batch: the rest of this batch is not sent; the round ends when the
            // replies in flight are in.
            sched.unsent();
            // A stop (not a full budget, whose picks are reserved and still go): the picks
            // written ahead are taken back unsent, their intents closed as not billed.
            let stopping = hard_stop.is_some()
                || faults.failing.is_some()
                || faults.invalid_stop.is_some()
                || interrupt.requested()
                || current.as_ref().is_some_and(|(s, _)| confident(s));
            if stopping && disp.primed() > 0 {
                for u in disp.withdraw("not sent: the run stopped sending").await? {
                    sched.withdrawn(u.a, u.b, u.reservation);
                    session.asked -= 1;
                }
                // The stop rules again, now that those are no longer pending.
                continue;
            }
        } else {
            let (summary, post) = current.as_ref().expect("checked");
            let picks = sched.next(&rule, &Fitted { post, membership: &summary.membership });
            if picks.is_empty() && sched.quiet() {
                break (current.take().expect("checked").0, StopReason::Exhausted);
            }
            // Before the first query: the judge's free check (is the endpoint there at all?).
            if !picks.is_empty() && !checked {
                checked = true;
                match judge.preflight().await {
                    Ok(warnings) => warnings.iter().for_each(|w| progress.println(&format!("warning: {w}"))),
                    Err(e) => {
                        sched.unsent();
                        faults.last_error = e.to_string();
                        faults.failing = Some(faults.last_error.clone());
                        break (current.take().expect("checked").0, StopReason::JudgeFailing);
                    }
                }
            }
            // Reserve each pick's worst case and hand them over: a blocking task writes their
            // intents (one fsync) and then sends them, so an intent is on disk before its
            // request leaves and a kill from then on books it. The loop goes on meanwhile
            // (the picks are pending at once: never picked twice, their budget held).
            let mut wave = Vec::new();
            for (a, b) in picks {
                let worst = judge.worst_case_usd(&pool, a, b);
                let Some(res) = sched.reserve(worst) else {
                    usd_blocked = true;
                    sched.unsent();
                    break;
                };
                session.asked += 1;
                wave.push(Query { tag: (), pool: pool.clone(), a, b, key: queries.key(a, b), reservation: res });
            }
            if usd_blocked && wave.is_empty() && sched.pending().is_empty() {
                // Not even one query fits in max_usd with nothing in flight.
                let summary = current.take().expect("checked").0;
                break (summary, StopReason::MaxUsd);
            }
            let sent: Vec<(usize, usize)> = wave.iter().map(|q| (q.a, q.b)).collect();
            disp.send_detached(wave);
            for (a, b) in sent {
                sched.sent(a, b);
                rate.sent();
            }
        }
        // Requests out or leaving (the picks written ahead are taken back on a stop, not waited for).
        interrupt.set_in_flight(disp.out_or_leaving());
        let show = |sched: &Scheduler, rate: &super::throughput::Meter, conf: f64| {
            progress.set(sched.budget().comparisons);
            progress.message(format!(
                "{} in flight  {:.0} req/min  ${:.4} spent  min top-k π {conf:.2}",
                sched.pending().len(),
                rate.per_minute(),
                sched.budget().spent_usd
            ));
        };
        if disp.in_flight() == 0 && fit_task.is_none() && recording.is_empty() {
            if hard_stop.is_none() && sched.wants_fit() {
                // The round just ended (its unsent picks were dropped above): refit, then stop
                // or go on at the quiet point.
                continue;
            }
            // Nothing to wait for: only reachable when no pick can be sent and nothing runs.
            let summary = match current.take() {
                Some((s, _)) => s,
                None => FitSummary::prior(pool.n_bases(), cfg.covariates.p(), &prior, k),
            };
            break (summary, hard_stop.unwrap_or(StopReason::Exhausted));
        }
        // Nothing to do until the next event: the next pick's weights are computed now
        // (pipelined top-k), so a reply's slot is refilled without them.
        if may_send
            && recording.is_empty()
            && fit_task.is_none()
            && let Some((summary, post)) = &current
        {
            sched.prefetch(&rule, &Fitted { post, membership: &summary.membership });
        }
        // Wait for one event: the refit, a reply, a stop signal, or the end of the grace period.
        let grace = match (interrupt.requested(), disp.in_flight() == 0) {
            (true, false) => Some(*grace_end.get_or_insert_with(|| tokio::time::Instant::now() + interrupt.grace())),
            _ => None,
        };
        tokio::select! {
            done = async { fit_task.as_mut().expect("guarded").await }, if fit_task.is_some() => {
                fit_task = None;
                match done.expect("fit task does not panic") {
                    Ok(ok) => {
                        if let Some(n) = ok.written.map_err(io_err(&fits_path))? {
                            last_fit_n = Some(n);
                        }
                        warm = Some(ok.beta);
                        sched.fit_finished();
                        let conf = ok.summary.topk.iter().map(|b| ok.summary.membership[*b]).fold(1.0f64, f64::min);
                        current = Some((ok.summary, ok.post));
                        show(&sched, &rate, conf);
                    }
                    Err(e) => {
                        // Still write a result.json (no ranking claimed) before reporting the error.
                        fit_failed = Some(e);
                        hard_stop = Some(StopReason::FitFailed);
                        current = None;
                    }
                }
            }
            event = disp.event(), if disp.in_flight() > 0 => match event {
                // A wave's requests have left (or its intents could not be written: the run
                // stops with that error; none of its queries was sent).
                Event::Sent(sent) => sent?,
                // This reply and every other one already in free their slots at once: one
                // acquisition step fills them while their verdicts are fsynced (next to the
                // intents' fsync of the new wave). Until booked they stay pending, their intents
                // open and their reservations held.
                Event::Replies(replies) => {
                    for r in &replies {
                        let (a, b) = r.pair();
                        sched.answered(a, b);
                    }
                    if recording.is_empty() {
                        recording.push_back(disp.record_detached(replies));
                    } else {
                        to_book.extend(replies);
                    }
                }
            },
            recorded = async { recording.front_mut().expect("guarded").await }, if !recording.is_empty() => {
                recording.pop_front();
                if !to_book.is_empty() {
                    recording.push_back(disp.record_detached(std::mem::take(&mut to_book)));
                }
                for settled in recorded.expect("books task does not panic")? {
                    usd_blocked = false;
                    rate.resolved();
                    faults.settle(settled, &mut sched, judge.as_ref(), &progress);
                }
                let conf = current
                    .as_ref()
                    .map_or(0.0, |(s, _)| s.topk.iter().map(|b| s.membership[*b]).fold(1.0f64, f64::min));
                show(&sched, &rate, conf);
            }
            () = interrupt.wait(), if !interrupt.requested() => {}
            () = async { tokio::time::sleep_until(grace.expect("guarded")).await }, if grace.is_some() && recording.is_empty() => {
                let g = disp.give_up("no reply within the interrupt grace period").await?;
                for u in g.unsent {
                    sched.withdrawn(u.a, u.b, u.reservation);
                    session.asked -= 1;
                }
                sched.gave_up(g.reservations);
                progress.println(&format!(
                    "interrupted: {} request(s) still in flight after {} s, booked as possibly billed (${:.6} at their worst case)",
                    g.booked,
                    interrupt.grace().as_secs_f64(),
                    g.usd
                ));
            }
        }
    };
    interrupt.set_in_flight(0);
    let books = disp.into_books();
    progress.finish();
    let end = Ending { summary, stop, faults, fit_failed, session, rate };
    finish(cfg, judge.as_ref(), opts, &queries, &books, end)
}

/// How the loop of a run ended: the last fit's summary, why it stopped, its faults, a failed
/// fit, the session's counts and the achieved request rate.
struct Ending {
    summary: FitSummary,
    stop: StopReason,
    faults: Faults,
    fit_failed: Option<FitError>,
    session: crate::report::schema::Session,
    rate: super::throughput::Meter,
}

/// The end of a run: result.json (and rankings.csv for a run over many prompts), the printed
/// summary, and the run's error when it stopped for one (after result.json is written).
fn finish(
    cfg: &Config,
    judge: &dyn Judge,
    opts: &RunOptions,
    queries: &RunQueries,
    books: &Books,
    end: Ending,
) -> Result<RunResult, RunError> {
    let Ending { summary, stop, faults, fit_failed, session, rate } = end;
    let (dir, pool) = (&cfg.run_dir, &cfg.pool);
    let stored = stored_verdicts(queries, books, cfg.raw.model.strong_preference_weight);
    let spend = books.spend(&|k: &str| queries.contains_key(k));
    let mut result = build_result(cfg, judge, &summary, stop, &stored, faults.failed, fit_failed.as_ref());
    result.spend_usd = spend.total_usd();
    result.possibly_billed = spend.possibly_billed;
    result.possibly_billed_usd = spend.possibly_billed_usd;
    result.duplicate_records = spend.duplicates;
    result.reporting.session = Some(session);
    result.quarantined = faults
        .quarantine
        .set_aside()
        .into_iter()
        .map(|q| QuarantinedPair {
            a: pool.items[q.a].id.clone(),
            b: pool.items[q.b].id.clone(),
            failed_queries: q.failed_queries,
            last_error: q.last_error,
        })
        .collect();
    if let Some(r) = &mut result.replay {
        r.unavailable = faults.unavailable.len();
    }
    // The achieved rate, for judges that talk to an endpoint (instant judges have no rate).
    if result.judge_stats.is_some() && rate.replies() > 0 {
        let limit = judge.requests_per_minute();
        let per_minute = rate.per_minute();
        result.throughput = Some(crate::report::schema::Throughput {
            requests: rate.replies(),
            seconds: rate.elapsed().as_secs_f64(),
            requests_per_minute: per_minute,
            rate_limit: limit,
            rate_limit_used: limit.map(|l| per_minute / f64::from(l)),
        });
    }
    if faults.failing.is_some() {
        result.last_error = Some(faults.last_error);
    }
    let records: Vec<&VerdictRecord> = queries.stored(books.log().records()).into_iter().map(|s| s.2).collect();
    result.verdicts_report = verdicts_report(cfg, &records, faults.invalid_stop);
    let text = serde_json::to_string_pretty(&result).expect("serialisable");
    let result_path = dir.join("result.json");
    std::fs::write(&result_path, text + "\n").map_err(io_err(&result_path))?;
    if let Some(sys) = &result.reporting.systems {
        crate::systems::write_rankings(dir, sys).map_err(io_err(&dir.join("rankings.csv")))?;
    }
    if opts.print {
        let mut text = summary_text(&result, dir);
        if stop == StopReason::Interrupted {
            text.push_str(&resume_hint(cfg));
        }
        // A closed stdout (e.g. `| head`) must not turn a finished run into a panic.
        let _ = writeln!(std::io::stdout(), "{text}");
    }
    if let Some(e) = fit_failed {
        return Err(e.into());
    }
    match faults.failing {
        Some(message) => Err(RunError::JudgeFailing { message }),
        None => Ok(result),
    }
}

/// The line telling how to resume an interrupted run.
pub fn resume_hint(cfg: &Config) -> String {
    format!("resume: topk-judge run {}\n", cfg.path.display())
}

#[allow(clippy::too_many_arguments)]
fn build_result(
    cfg: &Config,
    judge: &dyn Judge,
    s: &FitSummary,
    stop: StopReason,
    stored: &[Stored],
    failed: usize,
    fit_failed: Option<&FitError>,
) -> RunResult {
    let pool = &cfg.pool;
    let k = cfg.raw.k;
    let mut usage = Usage::default();
    for r in stored {
        usage.add(&r.usage);
    }
    let gold = pool.base_quality().map(|g| crate::model::membership::point_topk(&g, k));
    let verdicts: Vec<ItemVerdict> = stored.iter().filter_map(Stored::verdict).collect();
    let (identifiability, apparent) = match fit_failed {
        Some(_) => (Default::default(), crate::model::summary::Apparent::of_summary(s)),
        None => crate::report::outcome::identify_and_apparent(
            pool,
            &cfg.covariates,
            &cfg.raw.model.prior(),
            k,
            (cfg.raw.acquisition.mc_draws, cfg.raw.acquisition.seed),
            &verdicts,
            s,
        ),
    };
    // Why nothing was compared: the budget (then what one query needs from it), or the judge's
    // replies (invalid or failed queries), or no pair left to ask.
    let one_query = verdicts.is_empty().then(|| {
        let invalid = stored.len();
        if invalid > 0 || failed > 0 {
            format!(
                "the judge gave no valid verdict ({invalid} invalid, {failed} failed quer{}: see invalid_by_reason in result.json and failed.jsonl), so the budget is not what is missing",
                if failed == 1 { "y" } else { "ies" }
            )
        } else if matches!(stop, StopReason::MaxComparisons | StopReason::MaxUsd) {
            crate::report::outcome::one_query_text(pool, judge)
        } else {
            let why = serde_json::to_value(stop).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default();
            format!("no query was answered before the run stopped ({why}), so the budget is not what is missing")
        }
    });
    let mut out = crate::report::outcome::outcome(&crate::report::outcome::Inputs {
        pool,
        cov: &cfg.covariates,
        k,
        model: cfg.raw.model.kind,
        summary: s,
        apparent: &apparent,
        verdicts: if fit_failed.is_some() { &[] } else { &verdicts },
        identifiability: &identifiability,
        setting: cfg.raw.report_ranking,
        gate: None,
        one_query,
    });
    out.reporting.systems = crate::systems::of_run(cfg, s, &verdicts, fit_failed.is_none());
    if let Some(e) = fit_failed {
        out.notes.insert(0, format!("the fit failed ({e}): no ranking is claimed; the verdicts are kept, fix the cause and re-run to fit them"));
    }
    RunResult {
        name: cfg.raw.name.clone(),
        pool_id: pool.pool_id.clone(),
        k,
        model: cfg.raw.model.kind,
        judge: judge.describe(),
        strategy: cfg.raw.acquisition.strategy,
        stop_reason: stop,
        comparisons: stored.len(),
        valid: stored.iter().filter(|r| r.y.is_some()).count(),
        invalid: stored.iter().filter(|r| r.y.is_none()).count(),
        failed,
        spend_usd: stored.iter().map(|r| r.cost_usd).sum(),
        possibly_billed: 0,
        possibly_billed_usd: 0.0,
        duplicate_records: 0,
        usage,
        topk: out.topk,
        theta: report::by_base(pool, &s.theta),
        sd: report::by_base(pool, &s.sd),
        membership: report::by_base(pool, &s.membership),
        phi: report::by_base(pool, &s.phi),
        c: report::by_cov(&cfg.covariates, &s.c),
        c_sd: report::by_cov(&cfg.covariates, &s.c_sd),
        kappa: s.kappa,
        kappa_sd: s.kappa_sd,
        no_variation: cfg.covariates.no_variation.clone(),
        gold_topk: gold.map(|g| g.iter().map(|b| pool.bases[*b].clone()).collect()),
        recall_at_k: out.recall_at_k,
        ranking: out.ranking,
        notes: out.notes,
        identifiability,
        gate: None,
        judge_stats: judge.stats(),
        quarantined: Vec::new(),
        last_error: None,
        reporting: out.reporting,
        verdicts_report: VerdictsReport::default(),
        replay: judge.replay(),
        throughput: None,
    }
}

/// The stop message when the judge's share of invalid replies in this invocation is above its
/// limit (`judge.openai.max_invalid_rate`, after `invalid_rate_min_replies` replies): the rate,
/// the reasons, and the likely cause of the most frequent one.
fn invalid_rate_stop(judge: &dyn Judge) -> Option<String> {
    let (max, min_replies) = judge.invalid_rate_limit()?;
    let st = judge.stats()?;
    if st.replies < min_replies.max(1) || (st.invalid_replies as f64) <= max * st.replies as f64 {
        return None;
    }
    let mut reasons: Vec<(&crate::domain::verdict::InvalidReason, &u64)> = st.invalid_by_reason.iter().collect();
    reasons.sort_by(|x, y| y.1.cmp(x.1).then(x.0.cmp(y.0)));
    let parts: Vec<String> = reasons.iter().map(|(k, v)| format!("{k} {v}")).collect();
    let cause = reasons
        .first()
        .and_then(|(k, _)| match k {
            crate::domain::verdict::InvalidReason::Reply(r) => Some(*r),
            _ => None,
        })
        .map_or("see `raw` in verdicts.jsonl", |r| r.likely_cause());
    Some(format!(
        "{} of {} replies were invalid ({:.0}%, above max_invalid_rate {}; {}); likely cause: {cause}",
        st.invalid_replies,
        st.replies,
        100.0 * st.invalid_replies as f64 / st.replies as f64,
        max,
        parts.join(", ")
    ))
}

/// Invalid verdicts by reason, strong preferences and their weight, verdict-shaped candidate
/// answers, and the invalid-rate stop message, from this judge's stored verdicts.
fn verdicts_report(cfg: &Config, records: &[&VerdictRecord], stop_message: Option<String>) -> VerdictsReport {
    let reasons = records.iter().filter(|r| r.y.is_none()).map(|r| r.invalid_reason.as_deref().unwrap_or("unknown"));
    let strong = records.iter().filter(|r| r.y.is_some() && r.detail.strong_preference).count();
    VerdictsReport {
        invalid_by_reason: crate::domain::verdict::invalid_by_reason(records.len(), reasons),
        strong_preferences: strong,
        strong_preference_weight: (strong > 0).then_some(cfg.raw.model.strong_preference_weight),
        verdict_shaped_items: verdict_shaped_items(&cfg.pool),
        stop_message,
    }
}

/// Items of `pool` whose text holds verdict-shaped text (docs/live.md, "Parsing rules").
pub fn verdict_shaped_items(pool: &crate::domain::pool::Pool) -> Vec<crate::domain::verdict::VerdictShaped> {
    pool.items
        .iter()
        .filter_map(|it| {
            let excerpt = crate::judge::openai::parse::verdict_shaped(it.text.as_deref()?)?;
            Some(crate::domain::verdict::VerdictShaped { id: it.id.clone(), excerpt })
        })
        .collect()
}

/// The human-readable end-of-run summary ([`crate::report::summary::run_summary`]).
pub fn summary_text(r: &RunResult, dir: &Path) -> String {
    crate::report::summary::run_summary(r, dir)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::verdict::JudgeReply;
    use crate::judge::{BoxFuture, JudgeStats};

    /// A judge that only reports counters and its invalid-rate rule.
    struct Counted(JudgeStats, Option<(f64, u64)>);

    impl Judge for Counted {
        fn describe(&self) -> String {
            "counted".into()
        }
        fn cache_key(&self, _: &crate::domain::pool::Pool, a: usize, b: usize) -> String {
            format!("{a}-{b}")
        }
        fn stats(&self) -> Option<JudgeStats> {
            Some(self.0.clone())
        }
        fn invalid_rate_limit(&self) -> Option<(f64, u64)> {
            self.1
        }
        fn judge<'a>(
            &'a self,
            _: &'a crate::domain::pool::Pool,
            _: usize,
            _: usize,
        ) -> BoxFuture<'a, Result<JudgeReply, JudgeError>> {
            unreachable!("not queried")
        }
    }

    fn stats(replies: u64, reasons: &[(&str, u64)]) -> JudgeStats {
        let mut s = JudgeStats { replies, ..Default::default() };
        for (k, v) in reasons {
            s.invalid_by_reason.insert(crate::domain::verdict::InvalidReason::of(k), *v);
            s.invalid_replies += v;
        }
        s
    }

    #[test]
    fn invalid_rate_rule_applies_after_its_minimum_and_names_the_likely_cause() {
        let over = stats(20, &[("truncated", 8), ("no_verdict", 3)]);
        let m = invalid_rate_stop(&Counted(over.clone(), Some((0.5, 20)))).unwrap();
        assert!(
            m.starts_with("11 of 20 replies were invalid (55%, above max_invalid_rate 0.5; truncated 8, no_verdict 3)"),
            "{m}"
        );
        assert!(m.contains("likely cause: replies are cut at max_tokens"), "{m}");
        // Exactly at the limit, before the minimum, or without a rule: no stop.
        assert_eq!(invalid_rate_stop(&Counted(stats(20, &[("no_verdict", 10)]), Some((0.5, 20)))), None);
        assert_eq!(invalid_rate_stop(&Counted(over.clone(), Some((0.5, 21)))), None);
        assert_eq!(invalid_rate_stop(&Counted(over, None)), None);
    }
}

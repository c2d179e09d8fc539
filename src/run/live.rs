//! The live driver of Algorithm 1 (docs/model.md §3, paper App. A): it executes what the
//! scheduler ([`super::schedule::Scheduler::next_action`]) decides, against a judge that takes
//! time, and feeds it what happens: a refit runs off the async runtime, picks go out through the
//! dispatcher ([`super::dispatch`]: intent fsynced before each request), replies are booked as
//! they come back, signals arrive. Every stop rule is the scheduler's, and how to wait for the
//! queries out is the one wait a judge panel's run also uses (`run::in_flight`); this file
//! holds the single judge's refit and result.
//!
//! Re-running a config resumes from verdicts.jsonl: cached ordered pairs are never queried
//! again, and the last refit is re-used as an exact warm start ([`super::observe::FitsLog`]) so
//! a resumed run makes the same choices as an uninterrupted one.
//!
//! Money safety (docs/live.md, "Crashes, Ctrl-C and two processes"): the run holds the run-folder
//! lock ([`super::folder`]); every request is preceded by an fsynced intent and closed by its
//! record, so a kill at any moment leaves every possibly billed request booked; Ctrl-C stops
//! sending and waits for the requests in flight ([`super::interrupt`]). Faults do not end a run
//! ([`super::faults`]): a pair whose queries keep failing is set aside and acquisition moves on;
//! the run stops early only when the judge itself fails, and even then it writes result.json
//! from the verdicts it has (`stop_reason: judge_failing`) and prints the summary.

use super::dispatch::{Dispatcher, Query};
use super::faults::Faults;
use super::folder::{Folder, open_folder};
use super::in_flight::{InFlight, OneJudge, Woke};
use super::observe::{self, FitInput, FitOk, FitsLog};
use super::queries::RunQueries;
use super::schedule::{Action, Fitted, Pick, PickRule, ScheduleSettings, Scheduler, Signals};
use super::{RunError, RunOptions};
use crate::config::run::Config;
use crate::domain::pool::Pool;
use crate::domain::rng;
use crate::domain::verdict::{ItemVerdict, StoredVerdict};
use crate::judge::Judge;
use crate::model::FitError;
use crate::model::laplace::Posterior;
use crate::model::summary::{FitSummary, build_design};
use crate::report::progress::Progress;
use crate::report::result::{RunEnd, build_result, summary_text};
use crate::report::schema::{RunResult, Session, StopReason};
use crate::store::books::{Books, BooksError};
use crate::store::budget::Budget;
use std::path::Path;
use std::sync::Arc;

fn io_err(path: &Path) -> impl Fn(std::io::Error) -> RunError + '_ {
    move |source| RunError::Io { path: path.to_owned(), source }
}

/// Run Algorithm 1 for a validated config with a judge. Writes into `cfg.run_dir`: the books as
/// the run goes, then result.json (and rankings.csv for a run over many prompts).
///
/// # Errors
/// [`RunError`]. A failed query is counted (and its pair set aside when it keeps failing), not
/// fatal; [`RunError::JudgeFailing`] and [`RunError::Fit`] come after result.json is written and
/// the summary printed.
pub async fn run(cfg: &Config, judge: Arc<dyn Judge>, opts: &RunOptions) -> Result<RunResult, RunError> {
    // The folder's lock is held from before anything is written until the run ends.
    let mut folder = open_folder(cfg, judge.as_ref(), opts)?;
    let (judge, batch, resumed) = batch_judge(cfg, judge, opts, &mut folder).await?;
    let queries = RunQueries::new(cfg, judge.as_ref());
    queries.learn_folder(&cfg.run_dir);
    let mut driver = Driver::start(cfg, judge.clone(), &queries, opts, folder)?;
    for note in resumed.notes {
        driver.progress.println(&note);
    }
    driver.faults.batch_pending = resumed.pending;
    // Verdicts booked from a job an earlier run left open were stored now, not reused.
    driver.reused = driver.reused.saturating_sub(resumed.booked);
    driver.from_open_job = resumed.booked;
    let stop = driver.drive().await;
    let (books, ending) = driver.end().await;
    let stop = stop?;
    let books = books?;
    if let Some(b) = &batch {
        b.close_booked(&books);
    }
    finish(cfg, judge.as_ref(), opts, &queries, &books, ending, stop)
}

/// `dispatch: batch`: the judge wrapped to send each round as a provider batch job, after the
/// rounds an earlier run left open are settled into the books (docs/live.md, "Batch dispatch").
/// Other dispatches: the judge as it is, after the same settling when an earlier batch run left
/// a round open (its job is polled to its end and booked: a paid job is never abandoned).
///
/// # Errors
/// [`RunError::BatchOpen`] when a round is open and this judge cannot read batch jobs.
async fn batch_judge(
    cfg: &Config,
    judge: Arc<dyn Judge>,
    opts: &RunOptions,
    folder: &mut Folder,
) -> Result<(Arc<dyn Judge>, Option<Arc<super::batch::BatchJudge>>, super::batch::Resumed), RunError> {
    let acq = &cfg.raw.acquisition;
    let batched = acq.dispatch == crate::config::run::Dispatch::Batch;
    // Another dispatch with no round open (a judge that cannot read batch jobs and a round open
    // stopped the run when its folder was opened).
    if !batched && (!cfg.raw.reads_batch_jobs() || folder.books.open_intents().is_empty()) {
        return Ok((judge, None, Default::default()));
    }
    let factors = match cfg.raw.judge() {
        crate::config::judge::JudgeConfig::Openai(oc) => (oc.batch_price_factor(), super::batch::reserve_factor(oc)),
        _ => (1.0, 1.0),
    };
    let poll = std::time::Duration::from_secs_f64(acq.poll_s.unwrap_or(crate::config::run::DEFAULT_POLL_S));
    let bj = super::batch::BatchJudge::new(judge.clone(), &cfg.run_dir, factors, poll, opts.detach)?;
    let bj = Arc::new(bj);
    let judge = if batched {
        // Its round's errors name the judge's settings as the file does, as the judge's own do.
        crate::judge::keyed::Keyed::wrap(bj.clone(), cfg.raw.judge_key())
    } else {
        judge
    };
    // A Ctrl-C while an open round is resumed cancels its job (what it ran is still booked).
    let Folder { books, interrupt, .. } = folder;
    let resumed = {
        let fut = bj.resume(books, &cfg.pool);
        tokio::pin!(fut);
        let mut stopped = false;
        loop {
            tokio::select! {
                r = &mut fut => break r?,
                () = interrupt.wait(), if !stopped => {
                    bj.stop_sending();
                    stopped = true;
                }
            }
        }
    };
    Ok((judge, Some(bj), resumed))
}

/// A live run in progress: the scheduler it executes, the dispatcher its queries go through,
/// the refit running (if any), the faults and signals, and the observers.
struct Driver<'a> {
    cfg: &'a Config,
    judge: Arc<dyn Judge>,
    pool: Arc<Pool>,
    queries: &'a RunQueries<'a>,
    sched: Scheduler,
    /// The queries out and how the driver waits for them.
    out: InFlight<()>,
    fits: FitsLog,
    warm: Option<Vec<f64>>,
    current: Option<(FitSummary, Posterior)>,
    /// π by the apparent quality of the current fit (the `confidence` stop with covariates).
    current_apparent: Option<Vec<f64>>,
    /// Whether the current fit certifies the top-k at the `confidence` stop's ε (None: off).
    current_certified: Option<bool>,
    /// The valid verdicts of the refit under way, kept for the `confidence` stop's test.
    refit_verdicts: Option<Vec<ItemVerdict>>,
    fit_task: Option<tokio::task::JoinHandle<Result<FitOk, FitError>>>,
    faults: Faults,
    fit_failed: Option<FitError>,
    /// Verdicts reused from the books when the run started.
    reused: usize,
    /// Of the stored verdicts at the start, those booked from an open batch job just now.
    from_open_job: usize,
    progress: Progress,
    _lock: crate::store::lock::RunLock,
}

/// What the loop leaves for the result: the last fit, the faults, a failed fit, the session's
/// counts and the achieved rate.
struct Ending {
    summary: FitSummary,
    /// Replies billed above their reservations, and the worst-case factor they left.
    overrun: (crate::store::budget::Overrun, f64),
    faults: Faults,
    fit_failed: Option<FitError>,
    session: Session,
    rate: super::throughput::Meter,
}

impl<'a> Driver<'a> {
    /// Set the run up: warnings printed, the scheduler over this judge's stored verdicts with the
    /// budget they (and the gate's trusted judge) have spent, the dispatcher over the books.
    fn start(
        cfg: &'a Config,
        judge: Arc<dyn Judge>,
        queries: &'a RunQueries<'a>,
        opts: &RunOptions,
        folder: Folder,
    ) -> Result<Self, RunError> {
        let Folder { lock, interrupt, books, warnings } = folder;
        let sendable = queries.sendable() as u64;
        let progress = Progress::new(cfg.raw.budget.max_comparisons.unwrap_or(sendable).min(sendable), opts.progress);
        for w in warnings {
            progress.println(&format!("warning: {w}"));
        }
        let mislabelled = queries.mislabelled(books.log().records());
        if let Some(((qa, qb), (ra, rb))) = mislabelled.first() {
            progress.println(&format!(
                "warning: {} holds {} whose item ids disagree with the query of its cache key (the first names {ra:?} vs {rb:?} for {qa:?} vs {qb:?}): this run counts each as its key's query, but `fit` and `report` of the folder read the ids and refuse it; write the key's ids back into the line (or delete the line: its query is then asked again)",
                cfg.run_dir.join("verdicts.jsonl").display(),
                crate::domain::fmt::count(mislabelled.len(), "record")
            ));
        }
        let left_out = queries.within_base_left_out(books.log().records());
        if left_out > 0 {
            progress.println(&format!(
                "warning: {} holds {} of this judge comparing two renderings of one base (asked under design: paired); design: single neither asks nor fits them (they are kept, and count against budget.max_usd): run with design: paired to fit them",
                cfg.run_dir.display(),
                crate::domain::fmt::count(left_out, "verdict")
            ));
        }
        let (fits, warm) = FitsLog::open(&cfg.run_dir, cfg).map_err(io_err(&cfg.run_dir.join("fits.jsonl")))?;
        let stored = queries.stored_verdicts(books.log().records(), cfg.raw.model.strong_preference_weight);
        // budget.max_usd bounds everything the folder's books hold: this judge's, earlier
        // configs' and a gate's trusted judge's.
        let (mut budget, _) = Budget::for_folder(
            &cfg.run_dir,
            cfg.raw.budget.max_comparisons,
            cfg.raw.budget.max_usd,
            stored.len() as u64,
        )?;
        budget.carry_factor(queries.carried_factor(books.log().records()));
        budget.hold(opts.hold_usd);
        let acq = &cfg.raw.acquisition;
        // A batch round is a wait-for-batch round of `round_size`, all sent at once.
        let (every, concurrency) = match acq.dispatch {
            crate::config::run::Dispatch::Batch => {
                let r = acq.round_size.unwrap_or(crate::config::run::DEFAULT_ROUND_SIZE);
                (r, r)
            }
            _ => (acq.refit_every, acq.concurrency),
        };
        let settings = ScheduleSettings {
            confidence: acq.confidence,
            ..ScheduleSettings::new(
                every,
                concurrency,
                acq.dispatch.scheduling(),
                acq.dispatch.write_ahead(acq.write_ahead),
            )
        };
        let pairs = stored.iter().map(|s| (s.a, s.b));
        let mut sched = Scheduler::new(settings, queries.n_pairs(), pairs, queries.skipped().iter().copied(), budget);
        let mut faults = Faults::new(acq.max_failed_queries_per_pair);
        let earlier = queries.stored_replies(books.log().records());
        faults.count_earlier(vec![(earlier, judge.invalid_rate_limit(), None)], &mut sched, &progress);
        let mut disp = Dispatcher::new(judge.clone(), books);
        disp.set_wire_limit(concurrency);
        Ok(Self {
            cfg,
            pool: Arc::new(cfg.pool.clone()),
            judge,
            queries,
            sched,
            out: InFlight::new(disp, interrupt),
            fits,
            warm,
            current: None,
            current_apparent: None,
            current_certified: None,
            refit_verdicts: None,
            fit_task: None,
            faults,
            fit_failed: None,
            reused: stored.len(),
            from_open_job: 0,
            progress,
            _lock: lock,
        })
    }

    /// The outside signals the scheduler decides with.
    fn signals(&self) -> Signals {
        Signals {
            interrupted: self.out.interrupt.requested(),
            batch_pending: self.faults.batch_pending.is_some(),
            judge_failing: self.faults.failing.is_some(),
            fit_failed: self.fit_failed.is_some(),
        }
    }

    /// Execute the scheduler's actions until it says stop.
    async fn drive(&mut self) -> Result<StopReason, RunError> {
        let (pool, judge, cfg, queries) = (self.pool.clone(), self.judge.clone(), self.cfg, self.queries);
        let worst = |a: usize, b: usize| judge.worst_case_usd(&pool, a, b);
        let acq = &cfg.raw.acquisition;
        let x = super::schedule::acquisition_covariates(&pool, &cfg.covariates.x);
        // Systems: aim at the apparent ranking unless the corrected one is asked for
        // (docs/systems.md, "Acquisition").
        let xbar = (pool.is_systems()
            && cfg.covariates.p() > 0
            && cfg.raw.report_ranking != crate::analysis::ranking::ReportRanking::Corrected)
            .then(|| crate::model::summary::base_means(&pool, &cfg.covariates));
        let rule = PickRule {
            pool: &pool,
            x: &x,
            p: cfg.covariates.p(),
            k: cfg.raw.k,
            design: cfg.raw.design,
            strategy: acq.strategy,
            orders: acq.orders,
            seed: acq.seed,
            worst_usd: &worst,
            allowed: queries.allowed(),
            target_xbar: xbar.as_deref(),
            panel: None,
        };
        loop {
            let fitted = self.current.as_ref().map(|(s, p)| Fitted {
                post: p,
                membership: &s.membership,
                certified: self.current_certified,
            });
            let action = self.sched.next_action(&rule, fitted.as_ref(), self.signals());
            match action {
                Action::Refit => self.start_refit(),
                Action::Send(picks) => self.send(picks).await?,
                Action::Wait { stopping } if stopping && self.out.disp.primed() > 0 => {
                    self.out.withdraw(&mut self.sched, &OneJudge(judge.as_ref())).await?;
                }
                Action::Wait { stopping } => {
                    if !stopping && self.fit_task.is_none() && !self.sched.fitting() {
                        self.prefetch(&rule);
                    }
                    self.wait_event().await?;
                }
                Action::Stop(reason) => return Ok(reason),
            }
            // Requests out or leaving (the picks written ahead are taken back on a stop).
            self.out.interrupt.set_in_flight(self.out.disp.out_or_leaving());
        }
    }

    /// Nothing to do until the next event: the next pick's weights are computed now (pipelined
    /// top-k), so a reply's slot is refilled without them.
    fn prefetch(&mut self, rule: &PickRule<'_>) {
        if let Some((s, post)) = &self.current {
            self.sched.prefetch(rule, &Fitted { post, membership: &s.membership, certified: None });
        }
    }

    /// A refit on every stored verdict, in a blocking task; its fits.jsonl line is written there.
    fn start_refit(&mut self) {
        self.sched.fit_started();
        self.faults.note_failed_rounds(&self.sched);
        let stored = self.stored();
        let verdicts: Vec<ItemVerdict> = stored.iter().filter_map(StoredVerdict::verdict).collect();
        let design = build_design(&self.pool, &self.cfg.covariates, &verdicts);
        let n_valid = verdicts.len();
        let acq = &self.cfg.raw.acquisition;
        self.refit_verdicts = acq.confidence.map(|_| verdicts.clone());
        let input = FitInput {
            pool: self.pool.clone(),
            covs: self.cfg.covariates.clone(),
            prior: self.cfg.raw.model.prior(),
            k: self.cfg.raw.k,
            draws: acq.mc_draws,
            warm: self.warm.clone(),
            mc_rng: rng::stream(acq.seed, "membership", n_valid as u64),
            line: self.fits.entry(n_valid, self.pool.n_bases()),
            apparent: acq.confidence.map(|_| rng::stream(acq.seed, "membership-apparent", n_valid as u64)),
        };
        self.fit_task = Some(tokio::task::spawn_blocking(move || observe::refit(input, &design, n_valid)));
    }

    /// This judge's stored verdicts, in the order stored.
    fn stored(&self) -> Vec<StoredVerdict> {
        let books = self.out.disp.books();
        self.queries.stored_verdicts(books.log().records(), self.cfg.raw.model.strong_preference_weight)
    }

    /// Hand the reserved picks to the dispatcher ([`InFlight::send`]); before the first query,
    /// the judge's free endpoint check.
    async fn send(&mut self, picks: Vec<Pick>) -> Result<(), RunError> {
        let Some(picks) = self.out.check_once(picks, &mut self.sched, &mut self.faults, &self.progress).await else {
            return Ok(());
        };
        let wave: Vec<Query<()>> = picks
            .into_iter()
            .map(|p| Query {
                tag: (),
                pool: self.pool.clone(),
                a: p.a,
                b: p.b,
                key: self.queries.key(p.a, p.b),
                reservation: p.reservation,
            })
            .collect();
        self.out.send(wave);
        Ok(())
    }

    /// Wait for the refit, a reply, a signal or the end of the grace period ([`InFlight::wait`]).
    async fn wait_event(&mut self) -> Result<(), RunError> {
        let judge = self.judge.clone();
        let lanes = OneJudge(judge.as_ref());
        match self.out.wait(&mut self.fit_task, &mut self.sched, &mut self.faults, &lanes, &self.progress).await? {
            Woke::Fit(done) => self.fit_done(done)?,
            Woke::Settled => self.show(),
            Woke::Other => {}
        }
        Ok(())
    }

    /// A refit finished: its posterior is current (or the run stops with no ranking claimed).
    fn fit_done(&mut self, done: Result<FitOk, FitError>) -> Result<(), RunError> {
        match done {
            Ok(ok) => {
                if let Some(n) = ok.written.map_err(io_err(self.fits.path()))? {
                    self.fits.written(n);
                }
                self.warm = Some(ok.beta);
                self.sched.fit_finished();
                // The `confidence` stop: the fit certifies the top-k at its ε by θ and, when
                // computed, by φ, as the result would report it.
                let acq = &self.cfg.raw.acquisition;
                self.current_certified = acq.confidence.zip(self.refit_verdicts.take()).map(|(eps, v)| {
                    let certifies = |pi: &[f64]| {
                        crate::report::outcome::certifies(&self.pool, self.cfg.raw.k, (eps, acq.mc_draws), pi, &v)
                    };
                    certifies(&ok.summary.membership) && ok.membership_apparent.as_deref().is_none_or(certifies)
                });
                self.current = Some((ok.summary, ok.post));
                self.current_apparent = ok.membership_apparent;
                self.show();
            }
            Err(e) => {
                // Still write a result.json (no ranking claimed) before reporting the error.
                self.sched.fit_ended_without_posterior();
                self.fit_failed = Some(e);
                self.current = None;
                self.current_apparent = None;
                self.current_certified = None;
            }
        }
        Ok(())
    }

    fn show(&self) {
        // The undecided count of the current fit (by φ when computed, else by θ).
        let membership = self.current.as_ref().map(|(s, _)| self.current_apparent.as_deref().unwrap_or(&s.membership));
        self.out.show(&self.progress, &self.sched, self.cfg, membership);
    }

    /// The loop is over: wait for everything the dispatcher still holds and hand back the books,
    /// with what the result needs.
    async fn end(self) -> (Result<Books, BooksError>, Ending) {
        self.out.interrupt.set_in_flight(0);
        let session =
            Session { reused: self.reused, from_open_job: self.from_open_job, asked: self.out.asked_at_close() };
        let rate = self.out.rate;
        let books = self.out.disp.close().await;
        self.progress.finish();
        if let (Some((s, _)), None) = (&self.current, &self.fit_failed)
            && let Err(e) = self.fits.finish(&self.pool, &self.cfg.covariates, self.cfg.raw.k, s)
        {
            tracing::warn!("{}: the last line stays light: {e}", self.fits.path().display());
        }
        let summary = match (self.current, &self.fit_failed) {
            (Some((s, _)), None) => s,
            _ => FitSummary::prior(
                self.pool.n_bases(),
                self.cfg.covariates.p(),
                &self.cfg.raw.model.prior(),
                self.cfg.raw.k,
            ),
        };
        let budget = self.sched.budget();
        let ending = Ending {
            overrun: (budget.overrun(), budget.worst_case_factor()),
            summary,
            faults: self.faults,
            fit_failed: self.fit_failed,
            session,
            rate,
        };
        (books, ending)
    }
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
    stop: StopReason,
) -> Result<RunResult, RunError> {
    let Ending { summary, overrun, faults, fit_failed, session, rate } = end;
    let dir = &cfg.run_dir;
    let stored = queries.stored_verdicts(books.log().records(), cfg.raw.model.strong_preference_weight);
    let records: Vec<_> = queries.stored(books.log().records()).into_iter().map(|s| s.2).collect();
    // An open batch job's queries may still be billed: counted at their reservations, as the
    // folder's total counts them.
    let spend = books.spend_with_open_job(&|k: &str| queries.contains_key(k));
    let folder = crate::store::books::folder_books(dir)?;
    let run_end = RunEnd {
        summary: &summary,
        stop,
        stored: &stored,
        spend: &spend,
        folder: &folder,
        max_usd: cfg.raw.budget.max_usd,
        overrun,
        failed: faults.failed,
        not_run: faults.not_run,
        quarantined: faults
            .quarantine
            .set_aside()
            .into_iter()
            .map(|q| (q.a, q.b, q.failed_queries, q.last_error))
            .collect(),
        unavailable: faults.unavailable.len(),
        // The recorded pairs that may be sent (a pair of identical texts never is).
        candidates: queries.allowed().map(|p| p.ordered().filter(|q| !queries.skipped().contains(q)).count()),
        // What made the judge count as failing: the words the run's error ends with too.
        last_error: faults.failing.clone(),
        invalid_stop: faults.invalid_stop.clone(),
        batch_pending: faults.batch_pending.clone(),
        fit_failed: fit_failed.as_ref(),
        session,
        rate: (rate.replies() > 0).then(|| (rate.replies(), rate.elapsed().as_secs_f64(), rate.per_minute())),
        invalid_reasons: records.iter().filter_map(|r| r.reply.why_invalid()).collect(),
        strong_preferences: records.iter().filter(|r| r.reply.y.is_some() && r.reply.detail.strong_preference).count(),
    };
    let mut result = build_result(cfg, judge, &run_end);
    result.folder_spend.held_for_gate_usd = opts.hold_usd;
    result.fingerprint.clone_from(&opts.fingerprint);
    super::write_result_json(dir, &result)?;
    if let Some(sys) = &result.fit.reporting.systems {
        crate::report::systems::write_rankings(dir, sys).map_err(io_err(&dir.join("rankings.csv")))?;
    }
    let after = faults.failing.map(|message| RunError::JudgeFailing { message }).or_else(|| {
        let cause = result.overrun.as_ref().map(crate::report::schema::OverrunReport::cause);
        RunError::above_max_usd(cause, result.folder_spend.spend_usd, cfg.raw.budget.max_usd)
    });
    super::conclude(result, |r| summary_text(r, dir), cfg, opts, stop, fit_failed, after)
}

//! The queries a live driver has handed out, and how it waits for them (docs/live.md,
//! "Concurrency" and "Crashes, Ctrl-C and two processes"): the judge's free endpoint check
//! before the first query, the dispatcher the queries go through (an fsynced intent before each
//! request, [`super::dispatch`]), and one wait for what happens next — a refit done, replies in
//! or booked, a signal, or the end of the grace period after Ctrl-C, when the replies that are
//! in are booked and the requests still out are booked as possibly billed.
//!
//! The single-judge driver ([`super::live`]) and the judge panel's ([`super::panel`]) both wait
//! here, each through its [`Lanes`] (how its queries map to the scheduler's pairs). The rules of
//! when to stop and what may be spent stay the scheduler's ([`super::schedule`]).

use super::RunError;
use super::dispatch::{Dispatcher, Event, Query, Settled};
use super::faults::Faults;
use super::interrupt::Interrupt;
use super::observe::{self, ProgressLine};
use super::schedule::{Pick, Scheduler};
use super::throughput::Meter;
use crate::config::run::Config;
use crate::judge::Judge;
use crate::report::progress::Progress;
use tokio::task::JoinHandle;

/// How a driver's queries map to the scheduler's ordered pairs and to the judge that answers
/// them.
pub(super) trait Lanes<T> {
    /// The scheduler's pair of the query (a, b) (item indices of its pool) labelled `tag`.
    fn pair(&self, tag: &T, a: usize, b: usize) -> (usize, usize);
    /// The judge that answers a query labelled `tag` (its faults are counted against it).
    fn judge(&self, tag: &T) -> &dyn Judge;
    /// A panel member's index and name for a query labelled `tag`; `None` for a single judge.
    fn member(&self, _tag: &T) -> Option<(usize, &str)> {
        None
    }
}

/// What a wait brought.
pub(super) enum Woke<R> {
    /// The refit finished, with its outcome.
    Fit(R),
    /// Queries were settled: the progress line has news.
    Settled,
    /// Anything else (a wave left, replies came in, a signal, the grace period ended).
    Other,
}

/// What woke the wait up, before it is handled.
enum Raw<T, R> {
    Fit(Result<R, tokio::task::JoinError>),
    Event(Event<T>),
    Signal,
    Grace,
    Nothing,
}

/// A live run's queries out: the dispatcher, the interrupt and its grace period, whether the
/// endpoint was checked, the queries asked this session and the reply rate.
pub(super) struct InFlight<T> {
    /// The dispatcher the queries go through (it holds the books).
    pub(super) disp: Dispatcher<T>,
    /// Ctrl-C: the first stops sending, the grace period then bounds the wait.
    pub(super) interrupt: Interrupt,
    grace_end: Option<tokio::time::Instant>,
    checked: bool,
    /// Queries handed to the dispatcher this session, less those taken back unsent and those
    /// whose request never left (the run stopped sending first).
    pub(super) asked: usize,
    /// Replies per minute.
    pub(super) rate: Meter,
}

impl<T: Clone + Send + 'static> InFlight<T> {
    /// Nothing out yet, the endpoint not checked.
    pub(super) fn new(disp: Dispatcher<T>, interrupt: Interrupt) -> Self {
        interrupt.set_batch_dispatch(disp.judge().batched());
        Self { disp, interrupt, grace_end: None, checked: false, asked: 0, rate: Meter::new() }
    }

    /// Before the first query: the judge's free endpoint check (its warnings printed). `None`
    /// when it failed: the picks go back to the scheduler unsent and the judge counts as failing
    /// (the scheduler then stops for `judge_failing`).
    pub(super) async fn check_once(
        &mut self,
        picks: Vec<Pick>,
        sched: &mut Scheduler,
        faults: &mut Faults,
        progress: &Progress,
    ) -> Option<Vec<Pick>> {
        if self.checked {
            return Some(picks);
        }
        self.checked = true;
        let judge = self.disp.judge().clone();
        match judge.preflight().await {
            Ok(warnings) => {
                warnings.iter().for_each(|w| progress.println(&format!("warning: {w}")));
                Some(picks)
            }
            Err(e) => {
                for p in picks {
                    sched.withdrawn(p.a, p.b, p.reservation);
                }
                faults.judge_unreachable(e.to_string());
                None
            }
        }
    }

    /// Hand a wave to the dispatcher: a blocking task writes its intents (one fsync), then sends
    /// it, so an intent is on disk before its request leaves.
    pub(super) fn send(&mut self, wave: Vec<Query<T>>) {
        self.asked += wave.len();
        for _ in &wave {
            self.rate.sent();
        }
        self.disp.send_detached(wave);
    }

    /// Queries asked this session at the end of a run: [`InFlight::asked`] less the picks still
    /// written ahead, which closing the dispatcher takes back unsent.
    pub(super) fn asked_at_close(&self) -> usize {
        self.asked.saturating_sub(self.disp.primed())
    }

    /// A stop: the picks written ahead are taken back unsent, their intents closed as not billed.
    ///
    /// # Errors
    /// The books could not be written.
    pub(super) async fn withdraw(&mut self, sched: &mut Scheduler, lanes: &impl Lanes<T>) -> Result<(), RunError> {
        for u in self.disp.withdraw("not sent: the run stopped sending").await? {
            let (a, b) = lanes.pair(&u.tag, u.a, u.b);
            sched.withdrawn(a, b, u.reservation);
            self.asked -= 1;
        }
        Ok(())
    }

    /// Wait for one thing to happen and feed it to the scheduler: the refit `fit` (taken when
    /// done), a dispatcher event (a wave left; replies came in, their slots free; a booking done,
    /// each outcome settled), a stop signal (no request leaves from then on), or the end of the
    /// grace period after one (see [`InFlight::give_up`]).
    ///
    /// # Errors
    /// The books could not be written.
    pub(super) async fn wait<R>(
        &mut self,
        fit: &mut Option<JoinHandle<R>>,
        sched: &mut Scheduler,
        faults: &mut Faults,
        lanes: &impl Lanes<T>,
        progress: &Progress,
    ) -> Result<Woke<R>, RunError> {
        let judge = self.disp.judge().clone();
        if self.interrupt.requested() {
            judge.stop_sending();
        }
        // A batch job is cancelled and waited for (what it ran is booked), not given up on.
        let grace = match (self.interrupt.requested() && !judge.batched(), self.disp.in_flight() == 0) {
            (true, false) => {
                Some(*self.grace_end.get_or_insert_with(|| tokio::time::Instant::now() + self.interrupt.grace()))
            }
            _ => None,
        };
        let (busy, interrupted, has_fit) = (self.disp.busy(), self.interrupt.requested(), fit.is_some());
        let raw = {
            let (disp, interrupt) = (&mut self.disp, &mut self.interrupt);
            tokio::select! {
                done = async { fit.as_mut().expect("guarded").await }, if has_fit => Raw::Fit(done),
                event = disp.event(), if busy => Raw::Event(event),
                () = interrupt.wait(), if !interrupted => Raw::Signal,
                () = async { tokio::time::sleep_until(grace.expect("guarded")).await }, if grace.is_some() => Raw::Grace,
                else => Raw::Nothing,
            }
        };
        let woke = match raw {
            Raw::Fit(done) => {
                *fit = None;
                return Ok(Woke::Fit(done.expect("fit task does not panic")));
            }
            Raw::Event(Event::Sent(sent)) => {
                sent?;
                Woke::Other
            }
            Raw::Event(Event::Answered(queries)) => {
                for (tag, a, b) in queries {
                    let (a, b) = lanes.pair(&tag, a, b);
                    sched.answered(a, b);
                }
                Woke::Other
            }
            Raw::Event(Event::Booked(booked)) => {
                // After an overrun, what was written ahead goes back first, so the budget counts
                // as in flight at the overrun only the requests that were sent.
                self.after_overrun(sched, lanes).await?;
                let booked = booked?;
                // Requests sent and not settled, for the first overrun's count (the budget's
                // own counts reservations, also of picks written ahead and not sent).
                let sent = self.disp.requests_unsettled() + booked.len();
                for (i, s) in booked.into_iter().enumerate() {
                    let first = sched.budget().overrun().replies == 0;
                    self.settle(s, sched, faults, lanes, progress);
                    if first && sched.budget().overrun().replies > 0 {
                        sched.budget_mut().first_overrun_seen_with((sent - i) as u64);
                    }
                }
                Woke::Settled
            }
            // No request leaves from now on, retries waiting on a backoff included.
            Raw::Signal => {
                judge.stop_sending();
                Woke::Other
            }
            Raw::Grace => {
                self.give_up(sched, faults, lanes, progress).await?;
                Woke::Other
            }
            Raw::Nothing => {
                // The scheduler waits only while something is in flight or a refit runs, and the
                // dispatcher holds every query in flight: this cannot happen. If it did, the
                // queries it names are gone; let the run end instead of waiting forever.
                tracing::warn!(
                    "the scheduler waits for {} queries the dispatcher does not hold",
                    sched.pending().len()
                );
                sched.gave_up(Vec::new());
                sched.fit_ended_without_posterior();
                Woke::Other
            }
        };
        self.after_overrun(sched, lanes).await?;
        Ok(woke)
    }

    /// A reply cost more than its reservation ([`Dispatcher::held`]): once every such reply is
    /// booked and settled (the scheduler's worst case is raised), the picks written ahead at the
    /// old worst case go back to the scheduler, to be reserved again or not at all, and queries
    /// may leave again once no wave reserved before is still being written.
    ///
    /// # Errors
    /// The books could not be written.
    async fn after_overrun(&mut self, sched: &mut Scheduler, lanes: &impl Lanes<T>) -> Result<(), RunError> {
        if !self.disp.held() || !self.disp.overruns_booked() {
            return Ok(());
        }
        for u in self.disp.withdraw(super::dispatch::RESERVED_TOO_LOW).await? {
            let (a, b) = lanes.pair(&u.tag, u.a, u.b);
            sched.withdrawn(a, b, u.reservation);
            self.asked -= 1;
        }
        if self.disp.waves_writing() == 0 {
            self.disp.release();
        }
        Ok(())
    }

    /// One query's outcome into the scheduler's books and the faults.
    fn settle(
        &mut self,
        s: Settled<T>,
        sched: &mut Scheduler,
        faults: &mut Faults,
        lanes: &impl Lanes<T>,
        progress: &Progress,
    ) {
        // The run stopped sending before its request left (or cancelled the batch job it was
        // in before it ran): not asked, not resolved. In a batch job still open: asked, not
        // resolved yet.
        use crate::judge::JudgeError::{NotSent, Pending};
        match &s.outcome {
            super::dispatch::DispatchOutcome::Failed(NotSent { .. }) => self.asked = self.asked.saturating_sub(1),
            super::dispatch::DispatchOutcome::Failed(Pending { .. }) => {}
            _ => self.rate.resolved(),
        }
        let pair = lanes.pair(&s.tag, s.a, s.b);
        let (judge, member) = (lanes.judge(&s.tag), lanes.member(&s.tag));
        faults.settle(s, pair, sched, (judge, member), progress);
    }

    /// The interrupt's grace period ended: book the replies that are in, take back what was
    /// written ahead, and book the requests still out as possibly billed.
    async fn give_up(
        &mut self,
        sched: &mut Scheduler,
        faults: &mut Faults,
        lanes: &impl Lanes<T>,
        progress: &Progress,
    ) -> Result<(), RunError> {
        let g = self.disp.give_up("no reply within the interrupt grace period").await?;
        for s in g.settled {
            self.settle(s, sched, faults, lanes, progress);
        }
        for u in g.unsent {
            let (a, b) = lanes.pair(&u.tag, u.a, u.b);
            sched.withdrawn(a, b, u.reservation);
            self.asked -= 1;
        }
        sched.gave_up(g.reservations);
        progress.println(&format!(
            "interrupted: {} request(s) still in flight after {} s, booked as possibly billed (${:.6} at their worst case)",
            g.booked,
            self.interrupt.grace().as_secs_f64(),
            g.usd
        ));
        Ok(())
    }

    /// The progress line: comparisons, in flight, the reply rate, spend against
    /// `budget.max_usd` (USD) and, once a verdict is in, the items whose top-k membership
    /// `membership` is still undecided (within `certify.epsilon` of neither 0 nor 1).
    pub(super) fn show(&self, progress: &Progress, sched: &Scheduler, cfg: &Config, membership: Option<&[f64]>) {
        let (max_usd, epsilon) = (cfg.raw.budget.max_usd, cfg.raw.certify.epsilon);
        let b = sched.budget();
        // Before the first verdict the fit is the prior's: no count to show.
        let undecided = membership.filter(|_| b.comparisons() > 0).map(|m| observe::undecided(m, epsilon));
        let line = ProgressLine {
            in_flight: sched.pending().len(),
            per_minute: self.rate.shown_per_minute(),
            spent_usd: b.spent_usd(),
            max_usd,
            undecided,
            epsilon,
        };
        observe::show(progress, b.comparisons(), &line);
    }
}

/// The single judge's lanes: the scheduler's pairs are the queries' pairs.
pub(super) struct OneJudge<'a>(pub(super) &'a dyn Judge);

impl Lanes<()> for OneJudge<'_> {
    fn pair(&self, (): &(), a: usize, b: usize) -> (usize, usize) {
        (a, b)
    }

    fn judge(&self, (): &()) -> &dyn Judge {
        self.0
    }
}

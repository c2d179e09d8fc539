//! The pure scheduler of Algorithm 1 (docs/model.md §3; docs/live.md, "Concurrency"): which
//! ordered pairs go out next, when to refit, when the run may stop. No I/O and no clock: the
//! live driver ([`super::live`]) and the virtual-time simulation feed it events (a query sent, a
//! verdict stored, a query failed or set aside, a refit started or finished) and ask it for
//! decisions.
//!
//! State: the stored ordered pairs (in arrival order), the pending ones (in flight), the
//! excluded ones (never sent: identical texts, set aside after failures, no verdict exists), the
//! budget with its reservations, and which stored verdicts the current posterior has seen.
//!
//! Two dispatch modes ([`Dispatch`]):
//! - **wait-for-batch** (today's Algorithm 1, the default): after each refit pick R =
//!   `refit_every` queries, send them with at most `concurrency` in flight, wait for all, refit.
//!   With the same seed the choices are those of every earlier version of the runner.
//! - **pipelined**: keep `concurrency` queries in flight; refit after every R stored verdicts
//!   while requests keep flying, and fill each free slot from the latest posterior. The queries
//!   the posterior has not seen (in flight, or stored after the refit started) are pending:
//!   never picked again, and their information enters Σ by a Sherman–Morrison step before
//!   picking ([`crate::acquire::select_with_pending`]), so a wide pipeline spreads its picks.

use crate::acquire::{self, AllowedPairs, Context, Orders, StrategyKind};
use crate::analysis::design::{self, DesignKind};
pub use crate::config::run::Dispatch;
use crate::domain::pool::Pool;
use crate::domain::rng;
use crate::model::laplace::Posterior;
use crate::report::schema::StopReason;
use crate::store::budget::{Budget, Reservation};
use std::collections::{HashSet, VecDeque};

/// The scheduler's settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScheduleSettings {
    /// R: refit after this many stored verdicts (wait-for-batch: queries per batch), ≥ 1.
    pub refit_every: usize,
    /// Queries in flight at most, ≥ 1.
    pub concurrency: usize,
    /// Wait-for-batch or pipelined.
    pub dispatch: Dispatch,
    /// Pipelined: picks made ahead of a free slot, beyond `concurrency` (their intents written
    /// before a slot frees; docs/live.md, "Concurrency"); [`Dispatch::write_ahead`]. Ignored for
    /// wait-for-batch.
    pub write_ahead: usize,
    /// ε of the `confidence` stop (`acquisition.confidence`): stop once the fit certifies the
    /// top-k at ε ([`Fitted::certified`]); `None`: off.
    pub confidence: Option<f64>,
    /// When the rule's pick does not fit in what `max_usd` leaves, send the best query that
    /// does before stopping for `max_usd` (a run; docs/model.md §3). Off in the simulated
    /// experiments of docs/experiments.md, whose single-judge arms were measured stopping at
    /// the rule's first pick that did not fit.
    pub fill_to_max_usd: bool,
}

impl ScheduleSettings {
    /// Settings with the `confidence` stop off, filling to `max_usd`.
    pub fn new(refit_every: usize, concurrency: usize, dispatch: Dispatch, write_ahead: usize) -> Self {
        Self { refit_every, concurrency, dispatch, write_ahead, confidence: None, fill_to_max_usd: true }
    }
}

/// Rounds in a row without any verdict after which the judge counts as failing.
pub const FAILED_ROUNDS_STOP: usize = 3;

/// Whether `invalid` of `replies` pass a judge's invalid-reply limit (`judge.openai.max_invalid_rate`:
/// the largest share, and the replies parsed before the rule applies): the stop of a run
/// ([`Scheduler::judge_replies`]) and of an audit.
pub fn past_invalid_limit(replies: u64, invalid: u64, (max, min_replies): (f64, u64)) -> bool {
    replies >= min_replies.max(1) && (invalid as f64) > max * replies as f64
}

/// What the acquisition rule needs besides the posterior: the pool and its covariates, the
/// design, the strategy and the run seed (the acquisition stream is keyed by the number of
/// pairs asked, pending or excluded, as in every version of the runner), and each query's
/// worst-case cost (USD), reserved before it is sent.
#[derive(Clone, Copy)]
pub struct PickRule<'a> {
    /// The pool (item → base).
    pub pool: &'a Pool,
    /// Transformed covariates per item (N × p).
    pub x: &'a [Vec<f64>],
    /// Number of covariates p.
    pub p: usize,
    /// k of top-k.
    pub k: usize,
    /// `single` or `paired` (within-base queries first).
    pub design: DesignKind,
    /// The acquisition strategy.
    pub strategy: StrategyKind,
    /// Both presentation orders or single ordered pairs.
    pub orders: Orders,
    /// The run seed (`acquisition.seed`).
    pub seed: u64,
    /// The worst-case cost of the ordered query (a, b), USD (0 for free judges).
    pub worst_usd: &'a (dyn Fn(usize, usize) -> f64 + Sync),
    /// The only ordered pairs the judge can answer (a replay of a sparse recording,
    /// [`crate::judge::JudgeInfo::answerable`]); `None`: every pair.
    pub allowed: Option<&'a AllowedPairs>,
    /// The systems' mean covariates (M × p) when the acquisition aims at the apparent ranking
    /// φ = θ + cᵀx̄ of a run over many prompts ([`acquire::apparent`]); `None`: at θ.
    pub target_xbar: Option<&'a [Vec<f64>]>,
    /// A judge panel's picks (docs/model.md §8): given the scheduler's pairs unavailable for
    /// picking, the unfitted ones and the number wanted, the next ordered pairs, in the panel's encoding of
    /// (judge, ordered pair) as one pair of the scheduler ([`super::panel`]). When set it is the
    /// only source of picks; everything else (reservations, stop rules, rounds) stays the
    /// scheduler's.
    pub panel: Option<&'a PanelPicker<'a>>,
}

/// A judge panel's acquisition as the scheduler calls it ([`PickRule::panel`]).
/// Its arguments: the pairs unavailable for picking, the unfitted ones (pending or stored after
/// the fit started, in order) and the number of picks wanted.
pub type PanelPicker<'a> =
    dyn Fn(&HashSet<(usize, usize)>, &[(usize, usize)], usize) -> Vec<(usize, usize)> + Sync + 'a;

/// Monte-Carlo draws of the apparent top-k membership the acquisition aims at.
const TARGET_DRAWS: usize = 500;

/// The posterior and membership the rule aims at: the fit's, or with [`PickRule::target_xbar`]
/// those of the apparent quality φ (stream `apparent_target` keyed by `key`, the pairs asked so
/// far, as the acquisition's stream is: a resumed run draws what an uninterrupted one drew).
fn aimed<'f>(rule: &PickRule<'_>, fit: &Fitted<'f>, key: u64) -> Option<(Posterior, Vec<f64>)> {
    let xbar = rule.target_xbar?;
    let mut r = rng::stream(rule.seed, "apparent_target", key);
    acquire::apparent::target(fit.post, xbar, rule.k, TARGET_DRAWS, &mut r)
}

/// The covariates the acquisition rule sees (N × p): the run's, except in a run over many
/// prompts (docs/systems.md), where every answer gets 0. There the candidates of one system
/// pair differ only by their answers' covariates, and scoring them with ĉᵀ(x_a − x_b) would
/// send the queries to the prompts with the most extreme length differences (the answers whose
/// covariate cancels the quality gap); at equal covariates the system pairs are scored by
/// θ̂, Σ and π alone, and the prompt of a chosen system pair is drawn uniformly among its open
/// ones (the tie-break of equal scores).
pub fn acquisition_covariates<'x>(pool: &Pool, x: &'x [Vec<f64>]) -> std::borrow::Cow<'x, [Vec<f64>]> {
    if pool.prompts.is_empty() {
        std::borrow::Cow::Borrowed(x)
    } else {
        std::borrow::Cow::Owned(x.iter().map(|r| vec![0.0; r.len()]).collect())
    }
}

/// [`design::other_orders`] limited to the pairs the judge can answer.
fn other_orders(queried: &HashSet<(usize, usize)>, rule: &PickRule<'_>, r: usize) -> Vec<(usize, usize)> {
    match rule.allowed {
        None => design::other_orders(queried, rule.orders, r),
        Some(al) => {
            let mut v = design::other_orders(queried, rule.orders, usize::MAX);
            v.retain(|&(a, b)| al.contains(a, b));
            v.truncate(r);
            v
        }
    }
}

/// A judge that costs nothing: worst case 0 USD for every query.
pub fn free(_: usize, _: usize) -> f64 {
    0.0
}

/// The current posterior as the scheduler sees it: the Laplace posterior and top-k membership π
/// (length M) of a refit on the first `n_stored` stored verdicts.
pub struct Fitted<'a> {
    /// Laplace posterior at the MAP.
    pub post: &'a Posterior,
    /// Top-k membership per base.
    pub membership: &'a [f64],
    /// Whether this fit certifies the top-k at the `confidence` stop's ε, by θ and, with
    /// covariates, by the apparent quality φ, under the reported certificate's conditions
    /// ([`crate::report::outcome::certifies`]); `None` when the stop is off.
    pub certified: Option<bool>,
}

/// What the driver knows that the scheduler does not: signals from outside the loop.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Signals {
    /// Ctrl-C or SIGTERM: send nothing more, wait for the requests in flight, then stop.
    pub interrupted: bool,
    /// A provider batch job stays open past this invocation (`run --detach`, or unreadable).
    pub batch_pending: bool,
    /// The judge cannot go on (its endpoint is not there, the same endpoint-wide error came
    /// back, or it said it cannot).
    pub judge_failing: bool,
    /// The last refit failed: no ranking can be claimed; stop once nothing is in flight.
    pub fit_failed: bool,
}

/// A query picked and reserved: the ordered pair (a shown first) and its budget reservation,
/// to hand back with its outcome.
#[derive(Debug)]
pub struct Pick {
    /// Item shown first.
    pub a: usize,
    /// Item shown second.
    pub b: usize,
    /// The worst-case cost reserved for it.
    pub reservation: Reservation,
}

/// What the driver does next ([`Scheduler::next_action`]).
#[derive(Debug)]
pub enum Action {
    /// Start a refit ([`Scheduler::fit_started`] says on how many stored verdicts) and report it
    /// with [`Scheduler::fit_finished`].
    Refit,
    /// Send these queries (pending from now on; report each outcome).
    Send(Vec<Pick>),
    /// Nothing to do until an event: a reply, a finished refit or a signal. `stopping`: the run
    /// is stopping, so queries written ahead and not sent are taken back ([`Scheduler::withdrawn`]).
    Wait {
        /// Whether a stop rule holds and the run only waits for what is in flight.
        stopping: bool,
    },
    /// The run is over: nothing is in flight, no refit runs, and the posterior has seen every
    /// stored verdict (or the fit failed).
    Stop(StopReason),
}

/// The scheduler (see the module doc).
#[derive(Debug)]
#[cfg_attr(test, derive(Clone))]
pub struct Scheduler {
    s: ScheduleSettings,
    total_pairs: usize,
    stored: Vec<(usize, usize)>,
    stored_set: HashSet<(usize, usize)>,
    excluded: HashSet<(usize, usize)>,
    pending: Vec<(usize, usize)>,
    /// Pending queries whose reply is in and being stored: they no longer take a slot, but stay
    /// pending (never picked again, budget reserved) until their outcome is booked.
    answered: HashSet<(usize, usize)>,
    /// Wait-for-batch: this batch's picks not sent yet.
    batch: VecDeque<(usize, usize)>,
    /// Stored verdicts the current posterior has seen (`None` before the first refit).
    fitted: Option<usize>,
    /// Stored verdicts at the start of the refit running now.
    fitting: Option<usize>,
    /// Queries sent since the last refit started (wait-for-batch: this round).
    sent_since_fit: usize,
    /// Wait-for-batch: verdicts stored and queries failed in this round.
    round_stored: usize,
    round_failed: usize,
    /// Consecutive rounds (pipelined: stretches of R resolved queries) that failed without a
    /// verdict.
    failed_rounds: usize,
    /// The failed queries of those rounds.
    failed_rounds_queries: usize,
    /// Pipelined: failed queries since the last stored verdict.
    failed_streak: usize,
    budget: Budget,
    /// A reservation failed (`max_usd`); tried again once a query settles.
    usd_blocked: bool,
    /// A judge's share of invalid replies passed its limit ([`Scheduler::judge_replies`]).
    invalid_stop: bool,
    /// Refits finished so far: which posterior a [`Prefetched`] belongs to.
    fits_done: u64,
    /// Pipelined top-k: pending-aware weights computed ahead of need ([`Scheduler::prefetch`]).
    prefetched: Option<Prefetched>,
}

/// The pending-aware top-k weights ([`super::pending::weights_as_membership`]) of one state,
/// computed while the driver waits: the posterior (refits finished), the unfitted queries in
/// their order, and the number of pairs unavailable for picking (which keys the Monte-Carlo
/// stream). The weights depend on nothing else, so a pick from the same state uses them as
/// they are and picks what it would have picked without them, bit for bit.
#[derive(Debug, Clone)]
struct Prefetched {
    fits_done: u64,
    unfitted: Vec<(usize, usize)>,
    queried: usize,
    weights: Option<Vec<f64>>,
}

impl Prefetched {
    /// Whether these are the weights of the state (`fits_done`, `unfitted`, `queried`).
    fn matches(&self, fits_done: u64, unfitted: &[(usize, usize)], queried: usize) -> bool {
        self.fits_done == fits_done && self.queried == queried && self.unfitted == unfitted
    }
}

impl Scheduler {
    /// A scheduler over `total_pairs` ordered pairs, with the verdicts already `stored` (resume;
    /// in the order stored), the `excluded` pairs (never sent) and the `budget` (which already
    /// counts the stored verdicts and the spend).
    ///
    /// # Panics
    /// If `refit_every` or `concurrency` is 0 (the config checks both).
    pub fn new(
        settings: ScheduleSettings,
        total_pairs: usize,
        stored: impl IntoIterator<Item = (usize, usize)>,
        excluded: impl IntoIterator<Item = (usize, usize)>,
        budget: Budget,
    ) -> Self {
        assert!(settings.refit_every >= 1 && settings.concurrency >= 1, "refit_every and concurrency are ≥ 1");
        let stored: Vec<(usize, usize)> = stored.into_iter().collect();
        Scheduler {
            s: settings,
            total_pairs,
            stored_set: stored.iter().copied().collect(),
            stored,
            excluded: excluded.into_iter().collect(),
            pending: Vec::new(),
            answered: HashSet::new(),
            batch: VecDeque::new(),
            fitted: None,
            fitting: None,
            sent_since_fit: 0,
            round_stored: 0,
            round_failed: 0,
            failed_rounds: 0,
            failed_rounds_queries: 0,
            failed_streak: 0,
            budget,
            usd_blocked: false,
            invalid_stop: false,
            fits_done: 0,
            prefetched: None,
        }
    }

    /// The settings.
    pub fn settings(&self) -> ScheduleSettings {
        self.s
    }

    /// Stored ordered pairs, in the order stored.
    pub fn stored(&self) -> &[(usize, usize)] {
        &self.stored
    }

    /// Ordered pairs in flight, in the order sent.
    pub fn pending(&self) -> &[(usize, usize)] {
        &self.pending
    }

    /// The budget (limits, spend, reservations of the queries in flight).
    pub fn budget_mut(&mut self) -> &mut Budget {
        &mut self.budget
    }

    /// The budget, for reading.
    pub fn budget(&self) -> &Budget {
        &self.budget
    }

    /// Set the comparison limit (a simulated path's next checkpoint).
    pub fn set_max_comparisons(&mut self, max: Option<u64>) {
        self.budget.set_max_comparisons(max);
    }

    /// Raise the USD limit (the next spend checkpoint of a simulated path): the pick a reservation
    /// failed for may fit now.
    pub fn set_max_usd(&mut self, max: Option<f64>) {
        self.budget.set_max_usd(max);
        self.usd_blocked = false;
    }

    /// Every pair that is not a candidate: stored, excluded, in flight or waiting in the batch.
    pub fn unavailable_for_picking(&self) -> HashSet<(usize, usize)> {
        let mut q: HashSet<(usize, usize)> = self.stored_set.iter().chain(&self.excluded).copied().collect();
        q.extend(&self.pending);
        q.extend(&self.batch);
        q
    }

    /// Pairs stored or excluded (what the stop rule "no unqueried ordered pair is left" counts).
    pub fn settled(&self) -> usize {
        self.stored_set.len() + self.excluded.iter().filter(|p| !self.stored_set.contains(p)).count()
    }

    /// Whether every ordered pair is stored or excluded.
    pub fn all_asked(&self) -> bool {
        self.settled() >= self.total_pairs
    }

    /// Queries the current posterior has not seen: stored after its refit started, then the
    /// ones in flight (their information is counted when picking).
    pub fn unfitted(&self) -> Vec<(usize, usize)> {
        let from = self.fitted.unwrap_or(0).min(self.stored.len());
        self.stored[from..].iter().chain(&self.pending).copied().collect()
    }

    /// Whether a refit should start now: none is running and no reply is being booked, and
    /// this is the first one; or (wait-for-batch) the round is over; or (pipelined) R verdicts
    /// were stored since the last one, or nothing is in flight and some verdict is not fitted yet.
    pub fn wants_fit(&self) -> bool {
        if self.fitting.is_some() || !self.answered.is_empty() {
            return false;
        }
        let Some(fitted) = self.fitted else { return true };
        let fresh = self.stored.len() - fitted.min(self.stored.len());
        match self.s.dispatch {
            Dispatch::WaitForBatch | Dispatch::Batch => {
                self.sent_since_fit > 0 && self.pending.is_empty() && self.batch.is_empty()
            }
            Dispatch::Pipelined => fresh >= self.s.refit_every || (self.pending.is_empty() && fresh > 0),
        }
    }

    /// A refit starts on every verdict stored so far; returns how many (the fit covers
    /// `stored()[..n]`). Wait-for-batch: the round ends here (see [`Scheduler::failed_rounds`]).
    pub fn fit_started(&mut self) -> usize {
        let n = self.stored.len();
        self.fitting = Some(n);
        if self.fitted.is_some() && self.s.dispatch == Dispatch::WaitForBatch {
            self.end_round();
        }
        self.sent_since_fit = 0;
        n
    }

    /// The refit started by [`Scheduler::fit_started`] finished: its posterior is current.
    pub fn fit_finished(&mut self) {
        self.fitted = self.fitting.take().or(self.fitted);
        self.fits_done += 1;
        self.prefetched = None;
    }

    /// The refit started by [`Scheduler::fit_started`] failed: no fit runs any more, and the
    /// posterior stays what it was (the driver then signals `fit_failed`, and the run stops once
    /// nothing is in flight).
    pub fn fit_ended_without_posterior(&mut self) {
        self.fitting = None;
        self.prefetched = None;
    }

    /// Pipelined top-k with every slot taken: compute now, while the driver has nothing else to
    /// do, the pending-aware weights the next pick will need if the state is unchanged by then.
    /// A reply leaves it unchanged (the answered query stays pending until booked), so the first
    /// slot freed after a refit or a send is filled without the ≈ 1 ms of nested Monte Carlo.
    /// Only a cache: a pick from any other state computes its own weights, and the picks are the
    /// same either way (the cache is keyed by the exact state).
    pub fn prefetch(&mut self, rule: &PickRule<'_>, fit: &Fitted<'_>) {
        if self.s.dispatch != Dispatch::Pipelined
            || rule.strategy != StrategyKind::Topk
            || rule.pool.n_bases() > super::pending::MAX_BASES
            || self.fitted.is_none()
            || self.budget.comparisons_left() == 0
        {
            return;
        }
        let queried = self.unavailable_for_picking();
        let unfitted = self.unfitted();
        let fresh = self.prefetched.as_ref().is_some_and(|p| p.matches(self.fits_done, &unfitted, queried.len()));
        // The other orders and the paired design's first queries come before the rule and
        // would extend the unfitted queries: no prefetch then.
        if fresh
            || !other_orders(&queried, rule, 1).is_empty()
            || !design::first_queries(rule.pool, rule.design, &queried, 1).is_empty()
        {
            return;
        }
        let aim = aimed(rule, fit, queried.len() as u64);
        let aimed_fit = aim.as_ref().map(|(post, pi)| Fitted { post, membership: pi, certified: None });
        let ctx = context(rule, aimed_fit.as_ref().unwrap_or(fit), &queried);
        let weights = pending_weights(rule, &ctx, &unfitted, queried.len());
        self.prefetched = Some(Prefetched { fits_done: self.fits_done, unfitted, queried: queried.len(), weights });
    }

    /// Whether a refit is running.
    pub fn fitting(&self) -> bool {
        self.fitting.is_some()
    }

    /// Whether nothing is in flight or waiting, no refit runs and the posterior has seen every
    /// stored verdict: the state in which the run may stop (its final fit is current).
    pub fn quiet(&self) -> bool {
        self.pending.is_empty()
            && self.batch.is_empty()
            && self.fitting.is_none()
            && self.fitted == Some(self.stored.len())
    }

    fn end_round(&mut self) {
        if self.round_stored == 0 && self.round_failed > 0 {
            self.failed_rounds += 1;
            self.failed_rounds_queries += self.round_failed;
        } else {
            self.failed_rounds = 0;
            self.failed_rounds_queries = 0;
        }
        self.round_stored = 0;
        self.round_failed = 0;
    }

    /// Rounds in a row without any verdict in which some query failed (wait-for-batch: rounds
    /// between refits; pipelined: every R failed queries since the last verdict). The run
    /// stops for a failing judge at [`FAILED_ROUNDS_STOP`].
    pub fn failed_rounds(&self) -> usize {
        match self.s.dispatch {
            Dispatch::WaitForBatch | Dispatch::Batch => self.failed_rounds,
            Dispatch::Pipelined => self.failed_streak / self.s.refit_every,
        }
    }

    /// Wait-for-batch and batch: the failed queries of the rounds [`Scheduler::failed_rounds`]
    /// counts (not those of earlier rounds that also stored a verdict).
    pub fn failed_rounds_queries(&self) -> usize {
        self.failed_rounds_queries
    }

    /// Whether the judge counts as failing for its rounds without any verdict.
    pub fn rounds_failing(&self) -> bool {
        self.failed_rounds() >= FAILED_ROUNDS_STOP
    }

    /// Wait-for-batch: this round's (verdicts stored, queries failed).
    pub fn round(&self) -> (usize, usize) {
        (self.round_stored, self.round_failed)
    }

    /// A judge's counts: `replies` parsed, `invalid` of them without a usable verdict, against
    /// its `limit` (`judge.openai.max_invalid_rate`: the largest share of invalid replies, and
    /// the replies parsed before the rule applies). Returns true when this passes the limit for
    /// the first time (of any judge of the run): the run then stops sending.
    pub fn judge_replies(&mut self, replies: u64, invalid: u64, limit: (f64, u64)) -> bool {
        if self.invalid_stop || !past_invalid_limit(replies, invalid, limit) {
            return false;
        }
        self.invalid_stop = true;
        true
    }

    /// Whether the current fit certifies the top-k at ε (the `confidence` stop): k bases in,
    /// every other out, by θ and, with covariates, by φ, so nothing is undecided whichever
    /// ranking the result reports (docs/model.md, "Certified top-k").
    fn confident(&self, fit: Option<&Fitted<'_>>) -> bool {
        self.s.confidence.is_some() && fit.is_some_and(|f| f.certified == Some(true))
    }

    /// Why nothing more may be sent, if a stop rule holds (the run then waits for what is in
    /// flight): a failed fit, a failing judge, an interrupt, the invalid-reply limit, or a
    /// confident fit.
    fn stopping(&self, fit: Option<&Fitted<'_>>, sig: Signals) -> bool {
        sig.fit_failed
            || sig.judge_failing
            || self.rounds_failing()
            || sig.interrupted
            || sig.batch_pending
            || self.invalid_stop
            || self.confident(fit)
    }

    /// The stop rules at a quiet point, in order: a failing judge, the invalid-reply limit (a
    /// judge whose replies are unusable is the news, also when the budget ran out with them), no
    /// pair left to ask, a confident fit, no comparison left, an interrupt.
    fn stop_reason(&self, fit: Option<&Fitted<'_>>, sig: Signals) -> Option<StopReason> {
        if sig.judge_failing || self.rounds_failing() {
            Some(StopReason::JudgeFailing)
        } else if self.invalid_stop {
            Some(StopReason::MaxInvalidRate)
        } else if self.all_asked() {
            Some(StopReason::Exhausted)
        } else if self.confident(fit) {
            Some(StopReason::Confident)
        } else if self.budget.comparisons_left() == 0 {
            Some(StopReason::MaxComparisons)
        } else if sig.batch_pending {
            Some(StopReason::BatchPending)
        } else if sig.interrupted {
            Some(StopReason::Interrupted)
        } else {
            None
        }
    }

    /// The next action of Algorithm 1 (docs/model.md §3) given the current posterior `fit`
    /// (`None` before the first refit or after a failed one) and the outside `signals`:
    /// 1. a refit when one is due, also while stopping, so the final fit covers every verdict;
    /// 2. after a failed fit: stop once nothing is in flight;
    /// 3. at a quiet point, the stop rules, in order: a failing judge, the invalid-reply limit, no
    ///    pair left, a confident fit, no comparison left, an interrupt;
    /// 4. while a stop rule holds, or a reservation failed: wait for what is in flight;
    /// 5. otherwise the next picks, each reserved at its worst case: sent, or, when not even one
    ///    fits in `max_usd` with nothing in flight, stop (`max_usd`); no pick at a quiet point
    ///    means no open pair is left.
    ///
    /// [`Action::Wait`] comes only while something is in flight or a refit runs.
    pub fn next_action(&mut self, rule: &PickRule<'_>, fit: Option<&Fitted<'_>>, sig: Signals) -> Action {
        let stopping = self.stopping(fit, sig);
        if stopping {
            // Wait-for-batch: the rest of this batch is not sent; the round ends when the
            // replies in flight are in.
            self.batch.clear();
        }
        if sig.fit_failed {
            return if self.pending.is_empty() && self.fitting.is_none() {
                Action::Stop(StopReason::FitFailed)
            } else {
                Action::Wait { stopping: true }
            };
        }
        if self.wants_fit() {
            return Action::Refit;
        }
        if self.quiet()
            && let Some(reason) = self.stop_reason(fit, sig)
        {
            return Action::Stop(reason);
        }
        if stopping || self.usd_blocked {
            return self.wait(stopping);
        }
        let picks = match fit {
            Some(f) => self.next(rule, f),
            None => Vec::new(),
        };
        if picks.is_empty() {
            return if self.quiet() { Action::Stop(StopReason::Exhausted) } else { self.wait(false) };
        }
        let mut sent = Vec::with_capacity(picks.len());
        for (a, b) in picks {
            let Some(reservation) = self.budget.try_reserve((rule.worst_usd)(a, b)) else {
                self.usd_blocked = true;
                self.batch.clear();
                break;
            };
            self.sent(a, b);
            sent.push(Pick { a, b, reservation });
        }
        if sent.is_empty() && self.pending.is_empty() {
            // The rule's pick does not fit in what is left: the best query that does, as a
            // panel sends one (docs/model.md §3), so the run stops for `max_usd` only when no
            // open query fits and `run --dry-run`'s count of what the budget buys holds.
            if let Some(f) = fit
                && let Some((a, b)) = self.pick_affordable(rule, f)
                && let Some(reservation) = self.budget.try_reserve((rule.worst_usd)(a, b))
            {
                self.usd_blocked = false;
                self.sent(a, b);
                sent.push(Pick { a, b, reservation });
            }
        }
        if sent.is_empty() {
            return if self.pending.is_empty() { Action::Stop(StopReason::MaxUsd) } else { self.wait(false) };
        }
        Action::Send(sent)
    }

    /// The rule's best single query among those whose worst case fits in what `max_usd` leaves
    /// (none without `max_usd`, for a panel, whose own picker does this, under batch dispatch,
    /// where each would be a provider job of its own, or when no comparison is left): the open
    /// ordered pairs of one prompt whose worst case is more are set aside for this pick.
    fn pick_affordable(&self, rule: &PickRule<'_>, fit: &Fitted<'_>) -> Option<(usize, usize)> {
        let max = self.budget.max_usd()?;
        if !self.s.fill_to_max_usd
            || rule.panel.is_some()
            || self.s.dispatch == Dispatch::Batch
            || self.budget.comparisons_left() == 0
        {
            return None;
        }
        let left = max - self.budget.spent_usd() - self.budget.reserved_usd();
        let mut queried = self.unavailable_for_picking();
        let mut any = false;
        for group in rule.pool.prompt_items() {
            for &a in &group {
                for &b in &group {
                    if a == b || queried.contains(&(a, b)) {
                        continue;
                    }
                    if (rule.worst_usd)(a, b) > left {
                        queried.insert((a, b));
                    } else {
                        any = true;
                    }
                }
            }
        }
        if !any {
            return None;
        }
        let ctx = context(rule, fit, &queried);
        let mut acq_rng = rng::stream(rule.seed, "acquire-affordable", queried.len() as u64);
        let picks = acquire::select_with_pending(rule.strategy, &ctx, &self.unfitted(), 1, &mut acq_rng);
        picks.into_iter().find(|&(a, b)| (rule.worst_usd)(a, b) <= left)
    }

    /// [`Action::Wait`], or a stop when nothing is in flight and no refit runs (nothing could
    /// bring an event): the loop has nothing left to do.
    fn wait(&self, stopping: bool) -> Action {
        if self.pending.is_empty() && self.fitting.is_none() {
            return Action::Stop(StopReason::Exhausted);
        }
        Action::Wait { stopping }
    }

    /// Send `pairs`, chosen by the driver instead of the acquisition rule (a simulated budget of
    /// every ordered pair asks all that are left at once), each reserved at no cost.
    pub fn send_chosen(&mut self, pairs: impl IntoIterator<Item = (usize, usize)>) -> Vec<Pick> {
        let mut out = Vec::new();
        for (a, b) in pairs {
            if let Some(reservation) = self.budget.try_reserve(0.0) {
                self.sent(a, b);
                out.push(Pick { a, b, reservation });
            }
        }
        out
    }

    /// The next queries to send now, at most `concurrency` in flight, from the posterior `fit`
    /// (a refit on `stored()[..n]` for the `n` of the last finished refit):
    /// - wait-for-batch: at the start of a round (nothing sent since the refit, nothing in
    ///   flight) the batch of R = min(`refit_every`, comparisons left) picks is chosen; then the
    ///   batch is handed out as slots free up;
    /// - pipelined: min(free slots, comparisons left) picks on the latest posterior with every
    ///   unfitted query counted.
    ///
    /// The picks follow [`super::queries::next_picks`]: a missing other order first, then the
    /// paired design's within-base queries, then the acquisition rule. Empty when nothing is to
    /// be sent now; at a [`Scheduler::quiet`] point an empty answer means no open pair is left.
    fn next(&mut self, rule: &PickRule<'_>, fit: &Fitted<'_>) -> Vec<(usize, usize)> {
        let ahead = if self.s.dispatch == Dispatch::Pipelined { self.s.write_ahead } else { 0 };
        let free = (self.s.concurrency + ahead).saturating_sub(self.pending.len() - self.answered.len());
        if free == 0 || self.fitted.is_none() {
            return Vec::new();
        }
        match self.s.dispatch {
            Dispatch::WaitForBatch | Dispatch::Batch => {
                if self.batch.is_empty() && self.sent_since_fit == 0 && self.pending.is_empty() && !self.fitting() {
                    let r = (self.s.refit_every as u64).min(self.budget.comparisons_left()) as usize;
                    let picks = self.pick(rule, fit, r);
                    self.batch.extend(picks);
                }
                let n = free.min(self.batch.len());
                self.batch.drain(..n).collect()
            }
            Dispatch::Pipelined => {
                let r = (free as u64).min(self.budget.comparisons_left()) as usize;
                self.pick(rule, fit, r)
            }
        }
    }

    fn pick(&self, rule: &PickRule<'_>, fit: &Fitted<'_>, r: usize) -> Vec<(usize, usize)> {
        if r == 0 {
            return Vec::new();
        }
        let queried = self.unavailable_for_picking();
        if let Some(panel) = rule.panel {
            return panel(&queried, &self.unfitted(), r);
        }
        let unfitted = self.unfitted();
        if self.s.dispatch == Dispatch::Pipelined {
            return self.pick_filling(rule, fit, queried, unfitted, r);
        }
        let aim = aimed(rule, fit, queried.len() as u64);
        let aimed_fit = aim.as_ref().map(|(post, pi)| Fitted { post, membership: pi, certified: None });
        let ctx = context(rule, aimed_fit.as_ref().unwrap_or(fit), &queried);
        let mut acq_rng = rng::stream(rule.seed, "acquire", queried.len() as u64);
        let mut picks = other_orders(&queried, rule, r);
        if picks.is_empty() {
            picks = design::first_queries(rule.pool, rule.design, &queried, r);
        }
        if picks.is_empty() {
            picks = acquire::select_with_pending(rule.strategy, &ctx, &unfitted, r, &mut acq_rng);
        }
        picks
    }

    /// Pipelined picks: the same sources in the same order (missing other orders, the paired
    /// design's within-base queries, the acquisition rule), but each fills what the one before
    /// left of the `r` free slots, so one step fills every free slot (wait-for-batch takes one
    /// source per batch, as every earlier version did). The picks of the earlier sources are
    /// pending for the later ones; the acquisition stream is keyed by the pairs asked so far.
    fn pick_filling(
        &self,
        rule: &PickRule<'_>,
        fit: &Fitted<'_>,
        mut queried: HashSet<(usize, usize)>,
        mut unfitted: Vec<(usize, usize)>,
        r: usize,
    ) -> Vec<(usize, usize)> {
        let mut picks = other_orders(&queried, rule, r);
        if picks.len() < r {
            queried.extend(&picks);
            picks.extend(design::first_queries(rule.pool, rule.design, &queried, r - picks.len()));
        }
        if picks.len() < r {
            queried.extend(&picks);
            unfitted.extend(&picks);
            let aim = aimed(rule, fit, queried.len() as u64);
            let aimed_fit = aim.as_ref().map(|(post, pi)| Fitted { post, membership: pi, certified: None });
            let ctx = context(rule, aimed_fit.as_ref().unwrap_or(fit), &queried);
            let mut acq_rng = rng::stream(rule.seed, "acquire", queried.len() as u64);
            let cached = self.prefetched.as_ref().filter(|p| p.matches(self.fits_done, &unfitted, queried.len()));
            let adjusted = match cached {
                Some(p) => p.weights.clone(),
                None => pending_weights(rule, &ctx, &unfitted, queried.len()),
            };
            let ctx = match &adjusted {
                Some(pi) => Context { membership: pi, ..ctx },
                None => ctx,
            };
            picks.extend(acquire::select_with_pending(rule.strategy, &ctx, &unfitted, r - picks.len(), &mut acq_rng));
        }
        picks
    }

    /// The query (a, b), reserved, was sent: it is pending until it resolves.
    fn sent(&mut self, a: usize, b: usize) {
        self.pending.push((a, b));
        self.sent_since_fit += 1;
    }

    fn resolve(&mut self, a: usize, b: usize, res: Reservation, cost_usd: f64, stored: bool) {
        if let Some(i) = self.pending.iter().position(|&q| q == (a, b)) {
            self.pending.remove(i);
        }
        self.answered.remove(&(a, b));
        self.budget.settle(res, cost_usd, stored);
        self.usd_blocked = false;
    }

    /// The reply of the pending query (a, b) is in and being booked: its slot is free for the
    /// next pick, while it stays pending (not picked again, its reservation held, its
    /// information counted) until [`Scheduler::stored_verdict`] or [`Scheduler::failed`].
    pub fn answered(&mut self, a: usize, b: usize) {
        if self.pending.contains(&(a, b)) {
            self.answered.insert((a, b));
        }
    }

    /// A verdict (valid or invalid) of (a, b) was stored and fsynced; `stored` is false for a
    /// duplicate record (the budget does not count it twice).
    pub fn stored_verdict(&mut self, a: usize, b: usize, res: Reservation, cost_usd: f64, stored: bool) {
        self.resolve(a, b, res, cost_usd, stored);
        if self.stored_set.insert((a, b)) {
            self.stored.push((a, b));
        }
        self.round_stored += 1;
        self.failed_streak = 0;
    }

    /// A query of (a, b) failed at `cost_usd` (it may be asked again unless `set_aside`).
    pub fn failed(&mut self, a: usize, b: usize, res: Reservation, cost_usd: f64, set_aside: bool) {
        self.resolve(a, b, res, cost_usd, false);
        if set_aside {
            self.excluded.insert((a, b));
        }
        self.round_failed += 1;
        self.failed_streak += 1;
    }

    /// The pending query (a, b), written ahead or about to leave, was withdrawn before it was
    /// sent (the run stopped sending): settled at no cost, and it may be picked again.
    pub fn withdrawn(&mut self, a: usize, b: usize, res: Reservation) {
        self.resolve(a, b, res, 0.0, false);
        self.sent_since_fit = self.sent_since_fit.saturating_sub(1);
    }

    /// Ordered pairs set aside for the rest of the run (e.g. after repeated failures): never
    /// picked again, and counted as asked.
    pub fn exclude(&mut self, pairs: impl IntoIterator<Item = (usize, usize)>) {
        self.excluded.extend(pairs);
    }

    /// A query of (a, b) has no verdict and never will (e.g. missing from a recording), or the
    /// judge cannot go on: settled at no cost and set aside, not counted as a failure.
    pub fn set_aside(&mut self, a: usize, b: usize, res: Reservation) {
        self.resolve(a, b, res, 0.0, false);
        self.excluded.insert((a, b));
    }

    /// Queries in flight given up on (the interrupt grace period ended): each is settled at its
    /// full reservation (booked as possibly billed) and leaves the pending set.
    pub fn gave_up(&mut self, reservations: impl IntoIterator<Item = Reservation>) {
        for r in reservations {
            self.budget.settle_at_worst(r);
        }
        self.pending.clear();
        self.answered.clear();
    }
}

/// The weights the top-k rule uses in a pipelined pick: the expected boundary weight once the
/// `unfitted` queries are in (super::pending), not the refit's π alone; `None` for the other
/// rules (and where super::pending leaves π alone). The Monte-Carlo stream is keyed by `queried`,
/// the number of pairs unavailable for picking.
fn pending_weights(
    rule: &PickRule<'_>,
    ctx: &Context<'_>,
    unfitted: &[(usize, usize)],
    queried: usize,
) -> Option<Vec<f64>> {
    if rule.strategy != StrategyKind::Topk {
        return None;
    }
    let mut mc_rng = rng::stream(rule.seed, "pending_membership", queried as u64);
    super::pending::weights_as_membership(ctx, unfitted, super::pending::DRAWS, &mut mc_rng)
}

/// The acquisition context of `rule` and `fit` with the pairs `queried` not to be picked.
fn context<'a>(rule: &PickRule<'a>, fit: &Fitted<'a>, queried: &'a HashSet<(usize, usize)>) -> Context<'a> {
    Context {
        item_base: &rule.pool.item_base,
        item_prompt: &rule.pool.item_prompt,
        x: rule.x,
        m: rule.pool.n_bases(),
        p: rule.p,
        post: fit.post,
        membership: fit.membership,
        k: rule.k,
        queried,
        orders: rule.orders,
        seed: rule.seed,
        allowed: rule.allowed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acquire::testutil::fitted;
    use crate::domain::pool::{Item, Pool};

    fn pool(n: usize) -> Pool {
        let items = (0..n).map(|i| Item { id: format!("i{i}"), ..Default::default() }).collect();
        Pool::new("p".into(), String::new(), items).unwrap()
    }

    fn settings(refit_every: usize, concurrency: usize, dispatch: Dispatch) -> ScheduleSettings {
        ScheduleSettings::new(refit_every, concurrency, dispatch, 0)
    }

    /// A reservation at no cost, outside any scheduler (for queries the test settles by hand).
    fn r0() -> Reservation {
        Budget::default().try_reserve(0.0).expect("no limit")
    }

    /// [`fitted`] with both orders of its 20 queried pairs marked queried (40), so no missing
    /// other order comes first and the acquisition rule makes every pick.
    /// The top-k rule (k = 3, both orders, seed 1) on pool `p` with the fixture's covariates.
    fn topk_rule<'a>(p: &'a Pool, f: &'a crate::acquire::testutil::Fixture) -> PickRule<'a> {
        PickRule {
            pool: p,
            x: &f.x,
            p: f.p,
            k: 3,
            design: DesignKind::Single,
            strategy: StrategyKind::Topk,
            orders: Orders::Both,
            seed: 1,
            worst_usd: &free,
            allowed: None,
            target_xbar: None,
            panel: None,
        }
    }

    fn both_orders() -> crate::acquire::testutil::Fixture {
        let mut f = fitted(10, 2, 3);
        let rev: Vec<(usize, usize)> = f.queried.iter().map(|&(a, b)| (b, a)).collect();
        f.queried.extend(rev);
        f
    }

    /// Reserve (at no cost) and send (a, b); the reservation is dropped (the tests settle with
    /// [`r0`]), which the scheduler's own budget does not see.
    fn send(s: &mut Scheduler, a: usize, b: usize) {
        let _ = s.budget.try_reserve(0.0).expect("room");
        s.sent(a, b);
    }

    /// Drive `s` with an instant judge: send whatever it hands out, store the oldest pending
    /// verdict one at a time, refit (instantly) whenever asked. Returns the send order.
    fn drive(s: &mut Scheduler, rule: &PickRule<'_>, fit: &Fitted<'_>, max_sends: usize) -> Vec<(usize, usize)> {
        let mut order = Vec::new();
        for _ in 0..10_000 {
            if s.wants_fit() {
                s.fit_started();
                s.fit_finished();
            }
            for (a, b) in s.next(rule, fit) {
                send(s, a, b);
                order.push((a, b));
            }
            if order.len() >= max_sends && s.pending().is_empty() {
                break;
            }
            let Some(&(a, b)) = s.pending().first() else { break };
            s.stored_verdict(a, b, r0(), 0.0, true);
        }
        order
    }

    #[test]
    fn wait_for_batch_sends_r_per_refit_and_waits_for_all() {
        let f = both_orders();
        let p = pool(10);
        let rule = topk_rule(&p, &f);
        let fit = Fitted { post: &f.post, membership: &f.membership, certified: None };
        let mut s =
            Scheduler::new(settings(6, 4, Dispatch::WaitForBatch), 90, f.queried.clone(), [], Budget::default());
        assert!(s.wants_fit());
        assert_eq!(s.fit_started(), 40);
        s.fit_finished();
        // The batch of 6 = acquire::select of 6 on this posterior (stream keyed by 40 queried);
        // 4 go out (concurrency), 2 wait for free slots, no refit before all 6 are stored.
        let want = acquire::select(StrategyKind::Topk, &f.ctx(), 6, &mut rng::stream(1, "acquire", 40));
        let first = s.next(&rule, &fit);
        assert_eq!(first, want[..4].to_vec());
        for &(a, b) in &first {
            send(&mut s, a, b);
        }
        assert!(s.next(&rule, &fit).is_empty(), "4 in flight");
        s.stored_verdict(want[0].0, want[0].1, r0(), 0.0, true);
        assert!(!s.wants_fit());
        assert_eq!(s.next(&rule, &fit), vec![want[4]]);
        send(&mut s, want[4].0, want[4].1);
        for &(a, b) in &want[1..5] {
            s.stored_verdict(a, b, r0(), 0.0, true);
        }
        assert_eq!(s.next(&rule, &fit), vec![want[5]]);
        send(&mut s, want[5].0, want[5].1);
        assert!(!s.wants_fit(), "one still in flight");
        s.stored_verdict(want[5].0, want[5].1, r0(), 0.0, true);
        assert!(s.wants_fit());
        assert_eq!(s.fit_started(), 46);
        assert!(s.next(&rule, &fit).is_empty(), "no picks while the refit runs");
        s.fit_finished();
        assert!(s.quiet());
    }

    /// Pipelined with 2 written ahead: the first call fills C + 2, each reply frees one more, a
    /// withdrawn pick is settled at no cost and may be picked again, and wait-for-batch ignores
    /// the setting.
    #[test]
    fn pipelined_writes_ahead_beyond_concurrency_and_a_withdrawn_pick_is_open_again() {
        let f = both_orders();
        let p = pool(10);
        let rule = topk_rule(&p, &f);
        let fit = Fitted { post: &f.post, membership: &f.membership, certified: None };
        let ahead = ScheduleSettings { write_ahead: 2, ..settings(4, 8, Dispatch::Pipelined) };
        let mut s = Scheduler::new(ahead, 90, f.queried.clone(), [], Budget::new(Some(60), None, 40, 0.0));
        s.fit_started();
        s.fit_finished();
        let first = s.next(&rule, &fit);
        assert_eq!(first.len(), 10, "C = 8 plus 2 ahead");
        for &(a, b) in &first {
            send(&mut s, a, b);
        }
        assert!(s.next(&rule, &fit).is_empty(), "8 + 2 pending");
        s.answered(first[0].0, first[0].1);
        assert_eq!(s.next(&rule, &fit).len(), 1, "one reply frees one slot");
        // Withdraw the last pick written ahead: no longer pending, not counted as spent or as a
        // comparison, and it may be picked again.
        let last = *first.last().unwrap();
        let (comparisons, in_flight) = (s.budget().comparisons(), s.budget().in_flight());
        s.withdrawn(last.0, last.1, r0());
        assert!(!s.pending().contains(&last) && !s.unavailable_for_picking().contains(&last));
        assert_eq!((s.budget().comparisons(), s.budget().in_flight()), (comparisons, in_flight - 1));
        assert!(s.budget().reserved_usd().abs() < 1e-15 && s.budget().spent_usd() == 0.0);
        let wfb = ScheduleSettings { write_ahead: 2, ..settings(4, 8, Dispatch::WaitForBatch) };
        let mut w = Scheduler::new(wfb, 90, f.queried.clone(), [], Budget::default());
        w.fit_started();
        w.fit_finished();
        assert_eq!(w.next(&rule, &fit).len(), 4, "wait-for-batch: R = 4 per batch, nothing ahead");
    }

    #[test]
    fn pipelined_keeps_concurrency_in_flight_never_repeats_and_refits_every_r() {
        let f = both_orders();
        let p = pool(10);
        let rule = topk_rule(&p, &f);
        let fit = Fitted { post: &f.post, membership: &f.membership, certified: None };
        let mut s = Scheduler::new(settings(4, 8, Dispatch::Pipelined), 90, f.queried.clone(), [], Budget::default());
        s.fit_started();
        s.fit_finished();
        let first = s.next(&rule, &fit);
        assert_eq!(first.len(), 8);
        // The 8 picks of one call are the batch of 8 that acquire::select makes.
        let want = acquire::select(StrategyKind::Topk, &f.ctx(), 8, &mut rng::stream(1, "acquire", 40));
        assert_eq!(first, want);
        for &(a, b) in &first {
            send(&mut s, a, b);
        }
        // Three verdicts: no refit yet (R = 4); the 3 free slots are filled at once, counting
        // the 8 unfitted queries; the 4th verdict asks for a refit while 8 are in flight.
        for &(a, b) in &first[..3] {
            s.stored_verdict(a, b, r0(), 0.0, true);
        }
        assert!(!s.wants_fit());
        let more = s.next(&rule, &fit);
        assert_eq!(more.len(), 3);
        assert!(more.iter().all(|q| !first.contains(q) && !f.queried.contains(q)), "never picked twice");
        let mut g = both_orders();
        g.queried.extend(&first);
        // π is the pending-aware one (super::pending), drawn from the stream keyed by 48 asked.
        let pi = crate::run::pending::weights_as_membership(
            &g.ctx(),
            &first,
            crate::run::pending::DRAWS,
            &mut rng::stream(1, "pending_membership", 48),
        )
        .unwrap();
        assert_ne!(pi, g.membership);
        let ctx = Context { membership: &pi, ..g.ctx() };
        let want =
            acquire::select_with_pending(StrategyKind::Topk, &ctx, &first, 3, &mut rng::stream(1, "acquire", 48));
        assert_eq!(more, want, "the pending queries' information is counted");
        for &(a, b) in &more {
            send(&mut s, a, b);
        }
        s.stored_verdict(first[3].0, first[3].1, r0(), 0.0, true);
        assert!(s.wants_fit());
        assert_eq!(s.fit_started(), 44);
        assert_eq!(s.pending().len(), 7, "requests keep flying during the refit");
        assert_eq!(s.next(&rule, &fit).len(), 1, "a free slot is filled from the latest posterior");
        s.fit_finished();
        assert!(!s.quiet());
    }

    #[test]
    fn pipelined_fills_every_free_slot_in_one_step() {
        // One stored pair misses its other order: with 3 free slots the step sends that order
        // and 2 acquisition picks that count it as pending (wait-for-batch would send it alone).
        let f = both_orders();
        let p = pool(10);
        let rule = topk_rule(&p, &f);
        let fit = Fitted { post: &f.post, membership: &f.membership, certified: None };
        let mut stored = f.queried.clone();
        stored.insert((0, 5));
        let mut s = Scheduler::new(settings(8, 3, Dispatch::Pipelined), 90, stored.clone(), [], Budget::default());
        s.fit_started();
        s.fit_finished();
        let picks = s.next(&rule, &fit);
        assert_eq!(picks.len(), 3, "{picks:?}");
        assert_eq!(picks[0], (5, 0));
        let mut g = both_orders();
        g.queried = stored.clone();
        g.queried.insert((5, 0));
        let pi = crate::run::pending::weights_as_membership(
            &g.ctx(),
            &[(5, 0)],
            crate::run::pending::DRAWS,
            &mut rng::stream(1, "pending_membership", 42),
        )
        .unwrap();
        let ctx = Context { membership: &pi, ..g.ctx() };
        let want =
            acquire::select_with_pending(StrategyKind::Topk, &ctx, &[(5, 0)], 2, &mut rng::stream(1, "acquire", 42));
        assert_eq!(picks[1..], want[..]);
        // The refit saw all 41 stored verdicts, so (5, 0) is the only pending query; the stream
        // is keyed by the 42 pairs asked.
        let mut w = Scheduler::new(settings(8, 3, Dispatch::WaitForBatch), 90, stored, [], Budget::default());
        w.fit_started();
        w.fit_finished();
        assert_eq!(w.next(&rule, &fit), vec![(5, 0)]);
    }

    #[test]
    fn an_answered_query_frees_its_slot_but_stays_pending_with_its_reservation() {
        let f = both_orders();
        let p = pool(10);
        let rule = topk_rule(&p, &f);
        let fit = Fitted { post: &f.post, membership: &f.membership, certified: None };
        let b = Budget::new(Some(44), None, 40, 0.0);
        let mut s = Scheduler::new(settings(8, 2, Dispatch::Pipelined), 90, f.queried.clone(), [], b);
        s.fit_started();
        s.fit_finished();
        let first = s.next(&rule, &fit);
        assert_eq!(first.len(), 2);
        let mut r: Vec<Reservation> = first.iter().map(|_| s.budget.try_reserve(0.5).unwrap()).collect();
        for &(a, b) in &first {
            s.sent(a, b);
        }
        assert!(s.next(&rule, &fit).is_empty(), "2 in flight");
        s.answered(first[0].0, first[0].1);
        let more = s.next(&rule, &fit);
        assert_eq!(more.len(), 1, "the answered query's slot is free");
        assert!(!first.contains(&more[0]), "an answered query is not picked again");
        assert_eq!(s.pending().len(), 2, "still pending until booked");
        assert_eq!((s.budget().in_flight(), s.budget().comparisons_left()), (2, 2), "its reservation is held");
        s.stored_verdict(first[0].0, first[0].1, r.remove(0), 0.25, true);
        assert_eq!((s.pending().len(), s.budget().comparisons(), s.budget().comparisons_left()), (1, 41, 2));
        assert!((s.budget().spent_usd() - 0.25).abs() < 1e-15);
        // Answering a pair not in flight does nothing.
        s.answered(0, 9);
        assert_eq!(s.next(&rule, &fit).len(), 1);
        s.failed(first[1].0, first[1].1, r.remove(0), 0.0, false);
        assert_eq!(s.pending().len(), 0);
    }

    /// The weights prefetched while every slot is taken are those the next pick computes on
    /// demand, bit for bit, so the picks do not change; a reply keeps them current, a booked
    /// verdict (which reorders the unfitted queries) or a refit does not.
    #[test]
    fn prefetched_weights_are_the_on_demand_ones_and_are_used() {
        let f = both_orders();
        let p = pool(10);
        let rule = topk_rule(&p, &f);
        let fit = Fitted { post: &f.post, membership: &f.membership, certified: None };
        let mut s = Scheduler::new(settings(8, 4, Dispatch::Pipelined), 90, f.queried.clone(), [], Budget::default());
        s.fit_started();
        s.fit_finished();
        let first = s.next(&rule, &fit);
        assert_eq!(first.len(), 4);
        first.iter().for_each(|&(a, b)| send(&mut s, a, b));
        s.prefetch(&rule, &fit);
        let pre = s.prefetched.clone().expect("prefetched with every slot taken");
        s.answered(first[1].0, first[1].1);
        let (queried, unfitted) = (s.unavailable_for_picking(), s.unfitted());
        assert!(pre.matches(s.fits_done, &unfitted, queried.len()), "a reply leaves the state unchanged");
        let on_demand = pending_weights(&rule, &context(&rule, &fit, &queried), &unfitted, queried.len());
        assert_eq!(pre.weights, on_demand);
        let mut cold = s.clone();
        cold.prefetched = None;
        assert_eq!(s.clone().next(&rule, &fit), cold.next(&rule, &fit));
        // The cache is what the pick reads: weights that put the whole top-k boundary on an open
        // pair (i, j) (π = 1/2, every other π 0 or 1) make it pick that pair.
        let (i, j) = (0..10)
            .flat_map(|i| (i + 1..10).map(move |j| (i, j)))
            .find(|&(i, j)| !queried.contains(&(i, j)) && !queried.contains(&(j, i)))
            .expect("an open pair");
        let mut sure = (0..10).filter(|b| *b != i && *b != j);
        let top: Vec<usize> = sure.by_ref().take(2).collect();
        let pi: Vec<f64> = (0..10)
            .map(|b| {
                if b == i || b == j {
                    0.5
                } else if top.contains(&b) {
                    1.0
                } else {
                    0.0
                }
            })
            .collect();
        let mut poisoned = s.clone();
        poisoned.prefetched.as_mut().unwrap().weights = Some(pi);
        let pick = poisoned.next(&rule, &fit);
        assert!(pick[0] == (i, j) || pick[0] == (j, i), "{pick:?} vs ({i}, {j})");
        assert!(s.clone().next(&rule, &fit)[0] != pick[0], "the real weights pick another pair");
        // Booking a verdict moves its query behind the others: another state.
        s.stored_verdict(first[1].0, first[1].1, r0(), 0.0, true);
        let (queried, unfitted) = (s.unavailable_for_picking(), s.unfitted());
        assert!(!pre.matches(s.fits_done, &unfitted, queried.len()));
        s.prefetch(&rule, &fit);
        assert!(s.prefetched.as_ref().unwrap().matches(s.fits_done, &unfitted, queried.len()));
        s.fit_started();
        s.fit_finished();
        assert!(s.prefetched.is_none(), "a refit drops them");
    }

    #[test]
    fn budget_caps_picks_and_every_pair_is_sent_once() {
        // 6 items, 30 ordered pairs, max 25 comparisons, pipelined with 8 in flight.
        let f = crate::acquire::testutil::from_posterior(vec![0.0; 7], crate::acquire::testutil::diag(&[1.0; 7]), 2);
        let p = pool(6);
        let rule = PickRule {
            pool: &p,
            x: &f.x,
            p: 0,
            k: 2,
            design: DesignKind::Single,
            strategy: StrategyKind::Uncertainty,
            orders: Orders::Both,
            seed: 3,
            worst_usd: &free,
            allowed: None,
            target_xbar: None,
            panel: None,
        };
        let fit = Fitted { post: &f.post, membership: &f.membership, certified: None };
        for dispatch in [Dispatch::WaitForBatch, Dispatch::Pipelined] {
            let b = Budget::new(Some(25), None, 0, 0.0);
            let mut s = Scheduler::new(settings(4, 8, dispatch), 30, [], [], b);
            let order = drive(&mut s, &rule, &fit, 100);
            assert_eq!(order.len(), 25, "{dispatch:?}");
            let distinct: HashSet<_> = order.iter().collect();
            assert_eq!(distinct.len(), 25, "{dispatch:?}: a pair is never sent twice");
            assert_eq!(s.budget().comparisons(), 25);
            assert!(!s.all_asked());
            assert!(s.next(&rule, &fit).is_empty(), "no comparison left");
            // Without a limit every pair is sent exactly once, then nothing is left.
            let mut s = Scheduler::new(settings(4, 8, dispatch), 30, [], [], Budget::default());
            let order = drive(&mut s, &rule, &fit, 100);
            assert_eq!(order.len(), 30);
            assert!(s.all_asked());
            if s.wants_fit() {
                s.fit_started();
                s.fit_finished();
            }
            assert!(s.quiet());
            assert!(s.next(&rule, &fit).is_empty());
        }
    }

    #[test]
    fn failed_rounds_and_set_aside_pairs() {
        let b = Budget::new(None, Some(1.0), 0, 0.0);
        let mut s = Scheduler::new(settings(2, 2, Dispatch::WaitForBatch), 4, [], [(1, 0)], b);
        s.fit_started();
        s.fit_finished();
        // Three rounds of two failures each, no verdict: 3 failed rounds at the 4th refit.
        for round in 1..=3 {
            let r1 = s.budget.try_reserve(0.25).unwrap();
            let r2 = s.budget.try_reserve(0.25).unwrap();
            assert!(s.budget.try_reserve(0.75).is_none(), "0.5 reserved + 0.75 would pass max_usd 1.0");
            s.sent(0, 1);
            s.sent(1, 0);
            s.failed(0, 1, r1, 0.0, false);
            s.failed(1, 0, r2, 0.0, round == 3);
            assert!(s.wants_fit());
            s.fit_started();
            s.fit_finished();
            assert_eq!(s.failed_rounds(), round);
        }
        assert_eq!(s.settled(), 1, "(1, 0) was already excluded");
        assert!(s.unavailable_for_picking().contains(&(1, 0)));
        // A verdict resets the count.
        let r = s.budget.try_reserve(0.1).unwrap();
        s.sent(0, 1);
        s.stored_verdict(0, 1, r, 0.1, true);
        s.fit_started();
        s.fit_finished();
        assert_eq!(s.failed_rounds(), 0);
        assert!((s.budget().spent_usd() - 0.1).abs() < 1e-15);
        // Pipelined: every R failures in a row since the last verdict count as one round.
        let mut s = Scheduler::new(settings(2, 8, Dispatch::Pipelined), 4, [], [], Budget::default());
        for _ in 0..5 {
            let r = s.budget.try_reserve(0.0).unwrap();
            s.sent(2, 3);
            s.failed(2, 3, r, 0.0, false);
        }
        assert_eq!(s.failed_rounds(), 2);
    }

    /// Drive `next_action` with an instant judge and the given signals until it stops; every
    /// send is stored (at `cost` USD each). Returns the stop and the number of sends.
    fn run_to_stop(
        s: &mut Scheduler,
        rule: &PickRule<'_>,
        fit: &Fitted<'_>,
        sig: Signals,
        cost: f64,
    ) -> (StopReason, usize) {
        let mut sends = 0;
        for _ in 0..10_000 {
            match s.next_action(rule, Some(fit), sig) {
                Action::Refit => {
                    s.fit_started();
                    s.fit_finished();
                }
                Action::Send(picks) => {
                    for p in picks {
                        sends += 1;
                        s.stored_verdict(p.a, p.b, p.reservation, cost, true);
                    }
                }
                Action::Wait { .. } => panic!("an instant judge leaves nothing in flight"),
                Action::Stop(r) => return (r, sends),
            }
        }
        panic!("no stop")
    }

    fn uncertainty_rule<'a>(
        p: &'a Pool,
        f: &'a crate::acquire::testutil::Fixture,
        worst: &'a (dyn Fn(usize, usize) -> f64 + Sync),
    ) -> PickRule<'a> {
        PickRule {
            pool: p,
            x: &f.x,
            p: 0,
            k: 2,
            design: DesignKind::Single,
            strategy: StrategyKind::Uncertainty,
            orders: Orders::Both,
            seed: 3,
            worst_usd: worst,
            allowed: None,
            target_xbar: None,
            panel: None,
        }
    }

    /// The stop rules live in the scheduler: a comparison limit, no pair left, `max_usd` with
    /// nothing in flight, each reached by driving `next_action` alone.
    #[test]
    fn next_action_refits_sends_and_stops_at_each_limit() {
        let f = crate::acquire::testutil::from_posterior(vec![0.0; 7], crate::acquire::testutil::diag(&[1.0; 7]), 2);
        let p = pool(6);
        let fit = Fitted { post: &f.post, membership: &f.membership, certified: None };
        let rule = uncertainty_rule(&p, &f, &free);
        for dispatch in [Dispatch::WaitForBatch, Dispatch::Pipelined] {
            let mut s = Scheduler::new(settings(4, 4, dispatch), 30, [], [], Budget::new(Some(10), None, 0, 0.0));
            assert!(
                matches!(s.next_action(&rule, None, Signals::default()), Action::Refit),
                "the first fit comes first"
            );
            assert_eq!(run_to_stop(&mut s, &rule, &fit, Signals::default(), 0.0), (StopReason::MaxComparisons, 10));
            // Raised, the same scheduler goes on; without a limit it asks every pair, then stops.
            s.set_max_comparisons(None);
            assert_eq!(run_to_stop(&mut s, &rule, &fit, Signals::default(), 0.0), (StopReason::Exhausted, 20));
        }
        // max_usd: 3 queries at 0.3 fit in 1.0; with nothing in flight the 4th cannot be reserved.
        let worst = |_: usize, _: usize| 0.3;
        let rule = uncertainty_rule(&p, &f, &worst);
        let mut s =
            Scheduler::new(settings(2, 2, Dispatch::WaitForBatch), 30, [], [], Budget::new(None, Some(1.0), 0, 0.0));
        s.fit_started();
        s.fit_finished();
        assert_eq!(run_to_stop(&mut s, &rule, &fit, Signals::default(), 0.3), (StopReason::MaxUsd, 3));
        assert!(s.budget().spent_usd() <= 1.0 && s.budget().in_flight() == 0);
    }

    /// A refit that fails ends the run once nothing is in flight: the driver reports it and the
    /// scheduler no longer counts a fit as running (it once waited for that fit forever).
    #[test]
    fn a_failed_refit_stops_the_run_once_nothing_is_in_flight() {
        let f = crate::acquire::testutil::from_posterior(vec![0.0; 7], crate::acquire::testutil::diag(&[1.0; 7]), 2);
        let p = pool(6);
        let fit = Fitted { post: &f.post, membership: &f.membership, certified: None };
        let rule = uncertainty_rule(&p, &f, &free);
        let failed = Signals { fit_failed: true, ..Signals::default() };
        for dispatch in [Dispatch::WaitForBatch, Dispatch::Pipelined] {
            let mut s = Scheduler::new(settings(4, 4, dispatch), 30, [], [], Budget::new(Some(30), None, 0, 0.0));
            s.fit_started();
            s.fit_finished();
            let Action::Send(picks) = s.next_action(&rule, Some(&fit), Signals::default()) else { panic!("picks") };
            for p in picks {
                s.answered(p.a, p.b);
                s.stored_verdict(p.a, p.b, p.reservation, 0.0, true);
            }
            assert!(matches!(s.next_action(&rule, Some(&fit), Signals::default()), Action::Refit));
            s.fit_started();
            assert!(matches!(s.next_action(&rule, None, failed), Action::Wait { stopping: true }), "the fit runs");
            s.fit_ended_without_posterior();
            assert!(matches!(s.next_action(&rule, None, failed), Action::Stop(StopReason::FitFailed)));
        }
    }

    /// At a quiet point the rules apply in a fixed order (a failing judge, no pair left, a
    /// confident fit, no comparison left, an interrupt, the invalid-reply limit); while any of
    /// them holds, nothing more is sent and the run waits for what is in flight.
    #[test]
    fn stop_signals_wait_for_the_queries_in_flight_then_stop_in_order() {
        let f = crate::acquire::testutil::from_posterior(vec![0.0; 7], crate::acquire::testutil::diag(&[1.0; 7]), 2);
        let p = pool(6);
        let fit = Fitted { post: &f.post, membership: &f.membership, certified: None };
        let rule = uncertainty_rule(&p, &f, &free);
        let start = |dispatch| {
            let mut s = Scheduler::new(settings(4, 4, dispatch), 30, [], [], Budget::new(Some(30), None, 0, 0.0));
            s.fit_started();
            s.fit_finished();
            s
        };
        let interrupted = Signals { interrupted: true, ..Signals::default() };
        for dispatch in [Dispatch::WaitForBatch, Dispatch::Pipelined] {
            let mut s = start(dispatch);
            let Action::Send(picks) = s.next_action(&rule, Some(&fit), Signals::default()) else { panic!("picks") };
            assert_eq!(picks.len(), 4);
            // Ctrl-C with 4 in flight: wait (stopping), send nothing, then refit on what came
            // back and stop.
            assert!(matches!(s.next_action(&rule, Some(&fit), interrupted), Action::Wait { stopping: true }));
            for p in picks {
                s.stored_verdict(p.a, p.b, p.reservation, 0.0, true);
            }
            assert!(matches!(s.next_action(&rule, Some(&fit), interrupted), Action::Refit), "the final fit sees all");
            s.fit_started();
            s.fit_finished();
            assert!(matches!(s.next_action(&rule, Some(&fit), interrupted), Action::Stop(StopReason::Interrupted)));
        }
        // The order at a quiet point: a failing judge comes before the interrupt and the rest.
        let mut s = start(Dispatch::WaitForBatch);
        let both = Signals { interrupted: true, judge_failing: true, fit_failed: false, batch_pending: false };
        assert!(matches!(s.next_action(&rule, Some(&fit), both), Action::Stop(StopReason::JudgeFailing)));
        // A fit that certifies the top-k stops; one that does not, or was not tested, does not.
        let confident = Fitted { post: &f.post, membership: &f.membership, certified: Some(true) };
        let mut s = start(Dispatch::WaitForBatch);
        s.s.confidence = Some(0.05);
        assert!(matches!(
            s.next_action(&rule, Some(&confident), Signals::default()),
            Action::Stop(StopReason::Confident)
        ));
        assert!(matches!(s.next_action(&rule, Some(&fit), Signals::default()), Action::Send(_)));
        let open = Fitted { post: &f.post, membership: &f.membership, certified: Some(false) };
        let mut s = start(Dispatch::WaitForBatch);
        s.s.confidence = Some(0.05);
        assert!(matches!(s.next_action(&rule, Some(&open), Signals::default()), Action::Send(_)));
        // The invalid-reply limit: 11 of 20 above 0.5 stops once 20 replies are in, not before,
        // and latches.
        let mut s = start(Dispatch::Pipelined);
        let limit = (0.5, 20);
        assert!(
            !s.judge_replies(19, 11, limit) && !s.judge_replies(20, 10, limit),
            "before the minimum, or at the limit"
        );
        assert!(s.judge_replies(20, 11, limit));
        assert!(!s.judge_replies(30, 20, limit), "reported once");
        assert!(matches!(
            s.next_action(&rule, Some(&fit), Signals::default()),
            Action::Stop(StopReason::MaxInvalidRate)
        ));
        // A failed fit: stop once nothing is in flight, without a refit.
        let mut s = start(Dispatch::Pipelined);
        let Action::Send(picks) = s.next_action(&rule, Some(&fit), Signals::default()) else { panic!("picks") };
        let failed = Signals { fit_failed: true, ..Signals::default() };
        assert!(matches!(s.next_action(&rule, None, failed), Action::Wait { stopping: true }));
        for p in picks {
            s.stored_verdict(p.a, p.b, p.reservation, 0.0, true);
        }
        assert!(matches!(s.next_action(&rule, None, failed), Action::Stop(StopReason::FitFailed)));
    }
}

//! The one judge dispatcher of `run`, `gate` and `audit`: every paid query goes through it.
//!
//! For each query the caller reserves the worst case in its budget and hands the
//! [`Reservation`] in. The dispatcher writes the intent and fsyncs it before the request leaves
//! ([`Books::stage_intents`], one fsync per wave, taken without holding the books), keeps the
//! requests in flight as tasks, and books each reply as it comes back ([`Books::record_replies`]:
//! appended, flushed, fsynced) or the failure ([`Books::record_failure`]: a paid failure in
//! `failed.jsonl`, an unpaid one closes its intent). Every fsync runs in a blocking task, off the
//! async runtime. What is never lost (docs/live.md, "Crashes, Ctrl-C and two processes"): a kill
//! at any moment leaves every request that may have been billed booked, as a verdict, a paid
//! failure or an open intent the next open books as possibly billed.
//!
//! `run` drives it from its scheduler: [`Dispatcher::send_detached`] (a blocking task writes a
//! wave's intents and then sends it while the driver goes on), then [`Dispatcher::event`] inside
//! its `select!`: a wave left, replies came in (booked by the dispatcher, one booking at a time,
//! the replies that come in meanwhile booked together next), or a booking is done. The end is
//! [`Dispatcher::close`], which waits for every task the dispatcher still holds, so nothing is
//! in flight when the books are handed back. `gate` and `audit` hand it a fixed list of queries
//! ([`Dispatcher::dispatch_all`]).

use crate::domain::pool::Pool;
use crate::domain::verdict::JudgeReply;
use crate::judge::{Judge, JudgeError};
use crate::store::books::{Books, BooksError};
use crate::store::budget::{Budget, Reservation};
use crate::store::intents::IntentId;
use crate::store::ledger::VerdictRecord;
use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::Poll;

/// One query to send: ordered pair (`a` shown first, `b` second; item indices of `pool`), its
/// cache key, the caller's `tag` (returned with the outcome) and its budget reservation.
#[derive(Debug)]
pub struct Query<T> {
    /// The caller's label for the query (e.g. the pair's index), returned in [`Settled::tag`].
    pub tag: T,
    /// The pool the items belong to (an audit sends one small pool per pair).
    pub pool: Arc<Pool>,
    /// Item shown first.
    pub a: usize,
    /// Item shown second.
    pub b: usize,
    /// Cache key of the ordered pair for this judge (`JudgeInfo::cache_key`).
    pub key: String,
    /// Worst-case cost reserved for it, USD.
    pub reservation: Reservation,
}

/// How a query ended.
#[derive(Debug)]
pub enum DispatchOutcome {
    /// A reply came back and is on disk. `stored` is false when a verdict for its key was
    /// already stored (the reply's cost is then booked as a paid failure).
    Verdict {
        /// What the reply cost, USD.
        cost_usd: f64,
        /// Whether this reply is the key's stored verdict.
        stored: bool,
    },
    /// The judge gave no verdict; booked in the failed log when it cost money.
    Failed(JudgeError),
}

impl DispatchOutcome {
    /// What the query cost, USD (0 for unpaid failures).
    pub fn cost_usd(&self) -> f64 {
        match self {
            DispatchOutcome::Verdict { cost_usd, .. } => *cost_usd,
            DispatchOutcome::Failed(e) => e.cost_usd(),
        }
    }
}

/// A query whose outcome is booked.
#[derive(Debug)]
pub struct Settled<T> {
    /// The caller's label.
    pub tag: T,
    /// The pool of the query.
    pub pool: Arc<Pool>,
    /// Item shown first.
    pub a: usize,
    /// Item shown second.
    pub b: usize,
    /// Its reservation, to settle in the caller's budget.
    pub reservation: Reservation,
    /// The outcome.
    pub outcome: DispatchOutcome,
}

/// A query whose intent is on disk: what is left of its [`Query`] once its reservation is held
/// by the dispatcher (by intent) until its outcome is booked or it is withdrawn.
struct Sent<T> {
    tag: T,
    pool: Arc<Pool>,
    a: usize,
    b: usize,
    key: String,
    intent: IntentId,
    /// The judge's lane it goes out on ([`Judge::lane`]).
    lane: usize,
}

/// A reply that came back and is not yet booked ([`Dispatcher::join`] → [`Dispatcher::record`]).
pub struct Reply<T> {
    sent: Sent<T>,
    out: Result<JudgeReply, JudgeError>,
    /// It cost more than its reservation ([`Reservation::exceeded_by`]): sending is held until
    /// it is booked ([`Dispatcher::held`]).
    over: bool,
}

impl<T> Reply<T> {
    /// The ordered pair (a shown first, b second) of the query answered.
    pub fn pair(&self) -> (usize, usize) {
        (self.sent.a, self.sent.b)
    }
}

/// What [`Dispatcher::event`] brings.
pub enum Event<T> {
    /// A wave's requests have left; or its intents could not be written ([`BooksError`]) and
    /// none of its queries was sent.
    Sent(Result<(), BooksError>),
    /// Replies came in (each query's label and ordered pair): their slots are free, and the
    /// dispatcher books them.
    Answered(Vec<(T, usize, usize)>),
    /// A booking is done: these queries are settled (or a record could not be written; the
    /// replies not booked keep their intents open, booked as possibly billed by the next open).
    Booked(Result<Vec<Settled<T>>, BooksError>),
}

/// Replies being booked off the driver ([`Dispatcher::event`] starts one booking at a time).
pub type BookingTask<T> = tokio::task::JoinHandle<Result<Vec<Settled<T>>, BooksError>>;

/// Book `replies` into `books`: the verdicts staged (written, flushed) under the lock, fsynced
/// without it, committed under it; then each failure, fsynced. Settled in the order of `replies`.
fn book_replies<T>(
    books: &Mutex<Books>,
    judge: &dyn Judge,
    replies: Vec<(Reply<T>, Reservation)>,
) -> Result<Vec<Settled<T>>, BooksError> {
    let recs: Vec<_> = replies
        .iter()
        .filter_map(|(Reply { sent, out, .. }, _)| {
            let reply = out.as_ref().ok()?.clone();
            Some((
                sent.intent,
                VerdictRecord::from_reply(
                    sent.key.clone(),
                    &sent.pool,
                    (sent.a, sent.b),
                    (judge.record_judge(&sent.pool, sent.a, sent.b), judge.record_settings(&sent.pool, sent.a, sent.b)),
                    reply,
                ),
            ))
        })
        .collect();
    let lock = || books.lock().expect("books lock");
    let stored_flags = if recs.is_empty() {
        Vec::new()
    } else {
        let staged = lock().stage_replies(recs)?;
        if let Err(e) = staged.sync() {
            lock().abandon_replies(staged);
            return Err(e);
        }
        lock().commit_replies(staged)?
    };
    let mut stored_flags = stored_flags.into_iter();
    let mut settled = Vec::with_capacity(replies.len());
    for (Reply { sent, out, .. }, reservation) in replies {
        let Sent { tag, pool, a, b, key, intent, .. } = sent;
        let outcome = match out {
            Ok(reply) => {
                let stored = stored_flags.next().expect("one flag per verdict");
                DispatchOutcome::Verdict { cost_usd: reply.cost_usd, stored }
            }
            // Its outcome is in a batch job still open: the intent stays open for the next run.
            Err(e @ JudgeError::Pending { .. }) => DispatchOutcome::Failed(e),
            Err(e @ JudgeError::PossiblyBilled { .. }) => {
                lock().record_possibly_billed(intent, e.cost_usd(), &e.to_string())?;
                DispatchOutcome::Failed(e)
            }
            Err(e) => {
                let (cost, msg) = (e.cost_usd(), e.to_string());
                let (ida, idb) = (pool.items[a].id.clone(), pool.items[b].id.clone());
                lock().record_failure(intent, &key, &ida, &idb, cost, &msg)?;
                DispatchOutcome::Failed(e)
            }
        };
        settled.push(Settled { tag, pool, a, b, reservation, outcome });
    }
    Ok(settled)
}

/// Why a query written ahead is taken back after an overrun ([`Dispatcher::held`]).
pub const RESERVED_TOO_LOW: &str =
    "not sent: a reply cost more than its reservation, so it is reserved again at the raised worst case";

/// A query written ahead and withdrawn before it was sent ([`Dispatcher::withdraw`]).
#[derive(Debug)]
pub struct Unsent<T> {
    /// The caller's label.
    pub tag: T,
    /// Item shown first.
    pub a: usize,
    /// Item shown second.
    pub b: usize,
    /// The pool of the query.
    pub pool: Arc<Pool>,
    /// Its reservation, to settle at no cost.
    pub reservation: Reservation,
}

/// What [`Dispatcher::give_up`] did.
#[derive(Debug)]
pub struct GaveUp<T> {
    /// Replies that were in (being booked, or waiting to be), booked before giving up.
    pub settled: Vec<Settled<T>>,
    /// Requests in flight booked as possibly billed.
    pub booked: usize,
    /// Their total at their reserved worst cases, USD.
    pub usd: f64,
    /// Their reservations, to settle at their worst case.
    pub reservations: Vec<Reservation>,
    /// Queries written ahead and taken back unsent (closed as not billed).
    pub unsent: Vec<Unsent<T>>,
}

/// A query of [`Dispatcher::dispatch_all`] whose outcome is booked and whose reservation is
/// settled in the caller's budget.
#[derive(Debug)]
pub struct Finished<T> {
    /// The caller's label.
    pub tag: T,
    /// The pool of the query.
    pub pool: Arc<Pool>,
    /// Item shown first.
    pub a: usize,
    /// Item shown second.
    pub b: usize,
    /// The outcome.
    pub outcome: DispatchOutcome,
}

impl<T> Settled<T> {
    /// Settle the reservation in `budget` at the outcome's cost (a stored verdict counts as a
    /// comparison).
    pub fn settle_in(self, budget: &mut Budget) -> Finished<T> {
        let stored = matches!(self.outcome, DispatchOutcome::Verdict { stored: true, .. });
        budget.settle(self.reservation, self.outcome.cost_usd(), stored);
        Finished { tag: self.tag, pool: self.pool, a: self.a, b: self.b, outcome: self.outcome }
    }
}

/// What [`Dispatcher::dispatch_all`] did.
#[derive(Debug)]
pub struct DispatchReport<T> {
    /// Every query sent, with its outcome, in the order they settled.
    pub settled: Vec<Finished<T>>,
    /// Queries not sent: the caller stopped the dispatch or the budget had no room.
    pub unsent: usize,
    /// Whether a reservation failed (the budget had no room for the next query).
    pub budget_blocked: bool,
}

/// Whether [`Dispatcher::dispatch_all`] goes on sending after a settled query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// Send the next queries.
    Continue,
    /// Send nothing more; wait for the requests in flight and book them.
    Stop,
}

/// The requests sent (intent on disk) whose replies are not taken yet: their tasks, and the
/// reservations of every query whose intent is on disk and whose outcome is not booked, by
/// intent. Shared with the tasks that write a wave's intents and then send it.
struct Flying<T> {
    /// One task per request (one per wave for a batched judge, [`Judge::batched`]).
    set: tokio::task::JoinSet<Vec<Reply<T>>>,
    /// Queries in the tasks of `set` whose replies are not taken yet.
    out: usize,
    reservations: HashMap<IntentId, Reservation>,
    /// Written ahead: intents on disk, requests not sent yet; the first is sent the moment a
    /// request's reply comes back ([`Dispatcher::set_wire_limit`]).
    primed: VecDeque<Sent<T>>,
    /// Requests sent whose judge call has not returned yet.
    on_wire: usize,
    /// At most this many on the wire (the rest of a wave waits in `primed`).
    wire_limit: usize,
    /// Per lane of the judge ([`Judge::lane_limits`]): requests on the wire, and its limit.
    lanes: Vec<(usize, Option<usize>)>,
    /// Replies that came back costing more than their reservations and are not booked yet.
    overruns: usize,
    /// Nothing leaves while set: a reply cost more than its reservation, so the queries written
    /// ahead were reserved too low ([`Dispatcher::held`], [`Dispatcher::release`]).
    held: bool,
    judge: Arc<dyn Judge>,
}

impl<T: Send + 'static> Flying<T> {
    /// Send primed queries while the wire has room. Called with the lock held, by the task
    /// that wrote a wave and by every judge task whose reply has just come back.
    fn launch(&mut self, me: &Arc<Mutex<Flying<T>>>) {
        if self.held {
            return;
        }
        if self.judge.batched() {
            return self.launch_round(me);
        }
        while self.on_wire < self.wire_limit {
            // The first query written ahead whose lane of the judge has room: one that would
            // wait inside the judge for its own slot could not be held there.
            let lanes = &self.lanes;
            let room = |l: usize| lanes.get(l).is_none_or(|&(on, limit)| limit.is_none_or(|m| on < m));
            let Some(i) = self.primed.iter().position(|s| room(s.lane)) else { break };
            let sent = self.primed.remove(i).expect("a position of the queue");
            self.on_wire += 1;
            if let Some(l) = self.lanes.get_mut(sent.lane) {
                l.0 += 1;
            }
            let (judge, me) = (self.judge.clone(), me.clone());
            self.set.spawn(async move {
                let out = judge.judge(&sent.pool, sent.a, sent.b).await;
                // The slot is free: the next primed query leaves from here, not after a hop
                // through the driver (docs/live.md, "Concurrency"), unless this reply passed
                // its reservation.
                let mut f = me.lock().expect("flying lock");
                f.on_wire -= 1;
                if let Some(l) = f.lanes.get_mut(sent.lane) {
                    l.0 -= 1;
                }
                let over = f.returned(&sent, &out);
                f.launch(&me);
                drop(f);
                vec![Reply { sent, out, over }]
            });
            self.out += 1;
        }
    }

    /// A batched judge: every primed query the wire has room for goes out as one round
    /// ([`Judge::judge_round`]), whose replies come back together.
    fn launch_round(&mut self, me: &Arc<Mutex<Flying<T>>>) {
        let room = self.wire_limit.saturating_sub(self.on_wire).min(self.primed.len());
        if room == 0 {
            return;
        }
        let wave: Vec<Sent<T>> = self.primed.drain(..room).collect();
        self.on_wire += room;
        self.out += room;
        let (judge, me) = (self.judge.clone(), me.clone());
        self.set.spawn(async move {
            let queries: Vec<crate::judge::RoundQuery> = wave
                .iter()
                .map(|s| crate::judge::RoundQuery { pool: s.pool.clone(), a: s.a, b: s.b, key: s.key.clone() })
                .collect();
            let outs = judge.judge_round(&queries).await;
            let mut f = me.lock().expect("flying lock");
            f.on_wire -= room;
            let replies: Vec<Reply<T>> = wave
                .into_iter()
                .zip(outs)
                .map(|(sent, out)| {
                    let over = f.returned(&sent, &out);
                    Reply { sent, out, over }
                })
                .collect();
            f.launch(&me);
            drop(f);
            replies
        });
    }

    /// A reply to `sent` came back: whether it cost more than its reservation. If it did,
    /// nothing more leaves until it is booked and the driver has taken back what was written
    /// ahead at the old worst case ([`Dispatcher::release`]): one wave at most goes out past an
    /// overrun, the one on the wire when it came back (docs/live.md, "Spend and budget").
    fn returned(&mut self, sent: &Sent<T>, out: &Result<JudgeReply, JudgeError>) -> bool {
        let cost = match out {
            Ok(reply) => reply.cost_usd,
            Err(e) => e.cost_usd(),
        };
        let over = self.reservations.get(&sent.intent).is_some_and(|r| r.exceeded_by(cost));
        if over {
            self.overruns += 1;
            self.held = true;
            // And the queries inside the judge not on the wire (waiting for a rate limit or a
            // retry): reserved at the old worst case, they go back unsent.
            self.judge.reservations_raised();
        }
        over
    }
}

/// A wave handed to [`Dispatcher::send_detached`]: its size and the blocking task that writes
/// its intents (one fsync) and then sends its requests.
type Writing = (usize, tokio::task::JoinHandle<Result<(), BooksError>>);

/// Write the intents of `queries` into `books` (staged under the lock, fsynced without it), then
/// queue them in `flying` and send as many as the wire limit allows (the rest are written ahead).
/// Nothing is sent unless every intent is on disk.
fn write_and_send<T: Send + 'static>(
    books: &Mutex<Books>,
    flying: &Arc<Mutex<Flying<T>>>,
    queries: Vec<Query<T>>,
) -> Result<(), BooksError> {
    let rows: Vec<(&str, &str, &str, f64)> = queries
        .iter()
        .map(|q| (q.key.as_str(), q.pool.items[q.a].id.as_str(), q.pool.items[q.b].id.as_str(), q.reservation.usd()))
        .collect();
    let staged = books.lock().expect("books lock").stage_intents(&rows)?;
    if let Err(e) = staged.sync() {
        books.lock().expect("books lock").abandon_intents(staged);
        return Err(e.into());
    }
    let mut f = flying.lock().expect("flying lock");
    for (q, &intent) in queries.into_iter().zip(staged.ids()) {
        f.reservations.insert(intent, q.reservation);
        let lane = f.judge.lane(&q.pool);
        f.primed.push_back(Sent { tag: q.tag, pool: q.pool, a: q.a, b: q.b, key: q.key, intent, lane });
    }
    f.launch(flying);
    Ok(())
}

/// What [`Dispatcher::event`] found ready first.
enum Ready<T> {
    Sent(Result<(), BooksError>),
    /// How many of the replies booked cost more than their reservations, and the booking.
    Booked(usize, Result<Vec<Settled<T>>, BooksError>),
    Reply(Vec<Reply<T>>),
}

/// The dispatcher: a judge, the books it pays into, the requests in flight, the waves whose
/// intents are being written and the replies being booked.
pub struct Dispatcher<T> {
    judge: Arc<dyn Judge>,
    books: Arc<Mutex<Books>>,
    flying: Arc<Mutex<Flying<T>>>,
    writing: VecDeque<Writing>,
    /// The booking running now ([`Dispatcher::event`] books one batch of replies at a time), and
    /// how many of its replies cost more than their reservations.
    booking: Option<(usize, usize, BookingTask<T>)>,
    /// Replies that came in while a booking runs: booked together once it is done (one fsync of
    /// the verdict log for all of them, not one each next to the intents' fsyncs).
    to_book: Vec<Reply<T>>,
    /// Tests: how long a wave's task lingers after its requests have left, holding the books,
    /// so that its replies are in and booked before the task itself is done.
    #[cfg(test)]
    wave_linger: std::time::Duration,
}

impl<T: Clone + Send + 'static> Dispatcher<T> {
    /// A dispatcher sending to `judge` and booking into `books`.
    pub fn new(judge: Arc<dyn Judge>, books: Books) -> Self {
        let flying = Flying {
            set: tokio::task::JoinSet::new(),
            reservations: HashMap::new(),
            primed: Default::default(),
            out: 0,
            on_wire: 0,
            wire_limit: usize::MAX,
            lanes: judge.lane_limits().into_iter().map(|l| (0, l)).collect(),
            overruns: 0,
            held: false,
            judge: judge.clone(),
        };
        Self {
            judge,
            books: Arc::new(Mutex::new(books)),
            flying: Arc::new(Mutex::new(flying)),
            writing: Default::default(),
            booking: None,
            to_book: Vec::new(),
            #[cfg(test)]
            wave_linger: std::time::Duration::ZERO,
        }
    }

    /// The judge the queries go to.
    pub fn judge(&self) -> &Arc<dyn Judge> {
        &self.judge
    }

    fn flying(&self) -> MutexGuard<'_, Flying<T>> {
        self.flying.lock().expect("flying lock")
    }

    /// Queries in flight: sent and not yet taken by [`Dispatcher::join`] or
    /// [`Dispatcher::event`], written ahead and not sent yet ([`Dispatcher::primed`]), plus those
    /// of the waves whose intents are being written ([`Dispatcher::send_detached`]; a wave whose
    /// requests have just left counts twice until [`Dispatcher::event`] takes it).
    pub fn in_flight(&self) -> usize {
        let f = self.flying();
        f.out + f.primed.len() + self.writing.iter().map(|(n, _)| n).sum::<usize>()
    }

    /// Whether the dispatcher holds anything: requests in flight, queries written ahead, waves
    /// being written, or replies being booked or waiting to be. [`Dispatcher::event`] brings the
    /// next change while it does.
    pub fn busy(&self) -> bool {
        self.in_flight() > 0 || self.booking.is_some() || !self.to_book.is_empty()
    }

    /// Send at most `limit` requests at once: the rest of each wave is written ahead (primed)
    /// and sent, in order, as replies come back (docs/live.md, "Concurrency"). Default: no limit.
    pub fn set_wire_limit(&mut self, limit: usize) {
        self.flying().wire_limit = limit.max(1);
    }

    /// Queries written ahead and not sent yet.
    pub fn primed(&self) -> usize {
        self.flying().primed.len()
    }

    /// Whether sending is held: a reply cost more than its reservation, so the queries written
    /// ahead were reserved at a worst case now known to be too low. Once
    /// [`Dispatcher::overruns_booked`], the driver settles the bookings in its budget (which
    /// raises the worst case), takes back what is written ahead ([`Dispatcher::withdraw`]) and
    /// calls [`Dispatcher::release`].
    pub fn held(&self) -> bool {
        self.flying().held
    }

    /// Requests sent whose outcome is not handed to the caller yet: out, in, or being booked.
    pub fn requests_unsettled(&self) -> usize {
        self.flying().out + self.to_book.len() + self.booking.as_ref().map_or(0, |(_, n, _)| *n)
    }

    /// Whether every reply that cost more than its reservation is booked.
    pub fn overruns_booked(&self) -> bool {
        self.flying().overruns == 0
    }

    /// Let queries leave again after a hold ([`Dispatcher::held`]): what is written ahead from
    /// here on goes out as the wire has room.
    pub fn release(&mut self) {
        let mut f = self.flying();
        f.held = false;
        f.launch(&self.flying);
    }

    /// [`Dispatcher::in_flight`] without the queries written ahead: requests out or about to
    /// leave (what a stop waits for; the others are withdrawn).
    pub fn out_or_leaving(&self) -> usize {
        self.requests_out() + self.writing.iter().map(|(n, _)| n).sum::<usize>()
    }

    /// Requests sent (their intents on disk) whose replies are not taken yet.
    pub fn requests_out(&self) -> usize {
        self.flying().out
    }

    /// Waves handed to [`Dispatcher::send_detached`] whose outcome is not taken yet.
    pub fn waves_writing(&self) -> usize {
        self.writing.len()
    }

    /// The books, for reading (do not hold across an await).
    pub fn books(&self) -> MutexGuard<'_, Books> {
        self.books.lock().expect("books lock")
    }

    /// The books, once everything the dispatcher holds is done: the waves being written have
    /// left, the replies in are booked, and any request still out is waited for and booked
    /// (a driver stops only when nothing is in flight, so that is normally nothing). Never
    /// panics on timing: "nothing in flight" is a state this waits for, not a condition it
    /// asserts.
    ///
    /// # Errors
    /// [`BooksError`]: a wave's intents or a record could not be written (the first error; the
    /// rest is still waited for).
    pub async fn close(mut self) -> Result<Books, BooksError> {
        let mut first_error = None;
        while self.busy() {
            let withdrawn = self.withdraw("not sent: the run ended").await;
            let step = match withdrawn {
                Err(e) => Err(e),
                Ok(_) => match self.event().await {
                    Event::Sent(r) => r,
                    Event::Answered(_) => Ok(()),
                    Event::Booked(r) => r.map(|_| ()),
                },
            };
            if let Err(e) = step {
                first_error.get_or_insert(e);
            }
        }
        // Every task that held the books has finished (waves, bookings): this is the one owner.
        let books = loop {
            match Arc::try_unwrap(self.books) {
                Ok(m) => break m.into_inner().expect("books lock"),
                Err(shared) => {
                    self.books = shared;
                    tokio::task::yield_now().await;
                }
            }
        };
        match first_error {
            Some(e) => Err(e),
            None => Ok(books),
        }
    }

    /// Run `f` on the books in a blocking task (each append is fsynced there, not on the
    /// async runtime); resolves once it is on disk.
    async fn books_io<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Books) -> Result<R, BooksError> + Send + 'static,
    ) -> Result<R, BooksError> {
        let b = self.books.clone();
        tokio::task::spawn_blocking(move || f(&mut b.lock().expect("books lock")))
            .await
            .expect("books task does not panic")
    }

    /// Write the intents of `queries` (one fsync), then send each. Nothing is sent unless
    /// every intent is on disk.
    ///
    /// # Errors
    /// [`BooksError`]: the intents could not be written; none of the queries was sent.
    pub async fn send(&mut self, queries: Vec<Query<T>>) -> Result<(), BooksError> {
        self.send_detached(queries);
        while self.waves_writing() > 0 {
            self.wave_sent().await?;
        }
        Ok(())
    }

    /// [`Dispatcher::send`] as a blocking task of its own, so the driver goes on while the
    /// intents are fsynced: the task writes them (staged under the books' lock, fsynced without
    /// it, so replies can be booked meanwhile) and then sends the requests itself, none before
    /// its intent is on disk. The queries count in [`Dispatcher::in_flight`] from here on; the
    /// task's outcome comes as [`Event::Sent`] (or [`Dispatcher::wave_sent`]).
    pub fn send_detached(&mut self, queries: Vec<Query<T>>) {
        if queries.is_empty() {
            return;
        }
        let (books, flying) = (self.books.clone(), self.flying.clone());
        let n = queries.len();
        #[cfg(test)]
        let linger = self.wave_linger;
        let task = tokio::task::spawn_blocking(move || {
            let sent = write_and_send(&books, &flying, queries);
            #[cfg(test)]
            std::thread::sleep(linger);
            sent
        });
        self.writing.push_back((n, task));
    }

    /// Wait for the oldest wave of [`Dispatcher::send_detached`]: resolves once its requests
    /// have left (or its intents failed). Pending forever when no wave is being written (guard
    /// it with [`Dispatcher::waves_writing`]). Cancel-safe (for `select!`).
    ///
    /// # Errors
    /// [`BooksError`]: that wave's intents could not be written; none of its queries was sent.
    pub async fn wave_sent(&mut self) -> Result<(), BooksError> {
        let Some((_, task)) = self.writing.front_mut() else { return std::future::pending().await };
        let res = task.await.expect("intents task does not panic");
        self.writing.pop_front();
        res
    }

    /// Wait for the next event of a driver: a wave of [`Dispatcher::send_detached`] has left
    /// (or its intents failed), replies came in ([`Event::Answered`]: the first and every other
    /// one already in; the dispatcher books them, or queues them behind the booking running
    /// now), or a booking is done ([`Event::Booked`]). Pending forever when the dispatcher holds
    /// nothing (guard it with [`Dispatcher::busy`]). Cancel-safe (for `select!`): nothing is
    /// taken unless this resolves.
    pub async fn event(&mut self) -> Event<T> {
        let flying = self.flying.clone();
        let (writing, booking) = (&mut self.writing, &mut self.booking);
        let ready = std::future::poll_fn(|cx| {
            if let Some((_, task)) = writing.front_mut()
                && let Poll::Ready(res) = std::pin::Pin::new(task).poll(cx)
            {
                writing.pop_front();
                return Poll::Ready(Ready::Sent(res.expect("intents task does not panic")));
            }
            if let Some((over, _, task)) = booking.as_mut()
                && let Poll::Ready(res) = std::pin::Pin::new(task).poll(cx)
            {
                let over = *over;
                *booking = None;
                return Poll::Ready(Ready::Booked(over, res.expect("books task does not panic")));
            }
            match flying.lock().expect("flying lock").set.poll_join_next(cx) {
                Poll::Ready(Some(r)) => Poll::Ready(Ready::Reply(r.expect("judge task does not panic"))),
                // No request out: only a wave or a booking can bring the next event.
                Poll::Ready(None) | Poll::Pending => Poll::Pending,
            }
        })
        .await;
        match ready {
            Ready::Sent(res) => Event::Sent(res),
            Ready::Booked(over, res) => {
                // Handed to the driver now, which settles them before its next pick.
                self.flying().overruns -= over;
                self.book_waiting();
                Event::Booked(res)
            }
            Ready::Reply(first) => {
                let mut replies = first;
                let mut f = self.flying();
                while let Some(more) = f.set.try_join_next() {
                    replies.extend(more.expect("judge task does not panic"));
                }
                f.out -= replies.len();
                drop(f);
                let pairs = replies.iter().map(|r| (r.sent.tag.clone(), r.sent.a, r.sent.b)).collect();
                self.to_book.extend(replies);
                if self.booking.is_none() {
                    self.book_waiting();
                }
                Event::Answered(pairs)
            }
        }
    }

    /// Start booking the replies waiting, if any.
    fn book_waiting(&mut self) {
        if !self.to_book.is_empty() {
            let replies = std::mem::take(&mut self.to_book);
            let n = replies.len();
            let (over, task) = self.record_detached(replies);
            self.booking = Some((over, n, task));
        }
    }

    /// Wait for the next reply and take every other one already in. `None` when no request is
    /// out ([`Dispatcher::requests_out`]; the waves still being written are not waited for).
    /// Cancel-safe (for `select!`): a reply is taken only when this resolves; book it with
    /// [`Dispatcher::record`].
    pub async fn join(&mut self) -> Option<Vec<Reply<T>>> {
        let flying = self.flying.clone();
        let first = std::future::poll_fn(|cx| flying.lock().expect("flying lock").set.poll_join_next(cx)).await?;
        let mut replies = first.expect("judge task does not panic");
        let mut f = self.flying();
        while let Some(more) = f.set.try_join_next() {
            replies.extend(more.expect("judge task does not panic"));
        }
        f.out -= replies.len();
        Some(replies)
    }

    /// Book `replies`: their verdicts with one append and one fsync of the verdict log
    /// ([`Books::record_replies`]: a pipelined run stores every reply that is in at once instead
    /// of one fsync apart), then each failure, fsynced. Settled in the order of `replies`.
    ///
    /// # Errors
    /// [`BooksError`]: a record could not be written (the replies not booked keep their intents
    /// open, and the next open books them as possibly billed).
    pub async fn record(&mut self, replies: Vec<Reply<T>>) -> Result<Vec<Settled<T>>, BooksError> {
        let (over, task) = self.record_detached(replies);
        let settled = task.await.expect("books task does not panic");
        self.flying().overruns -= over;
        settled
    }

    /// [`Dispatcher::record`] as a task of its own: the driver may write the next intents and
    /// send while the verdicts are fsynced (the verdict fsync holds no lock on the books, so the
    /// intents' fsync runs at the same time). Until the task resolves the replies' intents stay
    /// open: a kill meanwhile books each as stored or possibly billed. Returns how many of the
    /// replies cost more than their reservations: they hold sending until the caller has taken
    /// the booking (and settled it), not merely until it is on disk.
    fn record_detached(&mut self, replies: Vec<Reply<T>>) -> (usize, BookingTask<T>) {
        let mut f = self.flying();
        let over = replies.iter().filter(|r| r.over).count();
        let with_reservations: Vec<(Reply<T>, Reservation)> = replies
            .into_iter()
            .map(|r| {
                let res = f.reservations.remove(&r.sent.intent).expect("a reply's reservation is held until booked");
                (r, res)
            })
            .collect();
        drop(f);
        let (books, judge) = (self.books.clone(), self.judge.clone());
        (over, tokio::task::spawn_blocking(move || book_replies(&books, judge.as_ref(), with_reservations)))
    }

    /// Stop waiting: let the waves whose intents are being written leave first, book the
    /// replies that are in (the booking running now and those waiting), take back the queries
    /// written ahead ([`Dispatcher::withdraw`]: not billed), then abort the requests in flight
    /// and book each as possibly billed at its reserved worst case (their replies will not be
    /// recorded). Returns the replies booked, how many were booked as possibly billed, their
    /// total (USD) and their reservations (to settle in the caller's budget at their worst
    /// case), and the queries taken back (to settle at no cost).
    ///
    /// # Errors
    /// [`BooksError`]: a wave's intents, a record or the bookings could not be written.
    pub async fn give_up(&mut self, reason: &'static str) -> Result<GaveUp<T>, BooksError> {
        while self.waves_writing() > 0 {
            self.wave_sent().await?;
        }
        let mut settled = Vec::new();
        if let Some((over, _, task)) = self.booking.take() {
            let booked = task.await.expect("books task does not panic");
            self.flying().overruns -= over;
            settled.extend(booked?);
        }
        if !self.to_book.is_empty() {
            let replies = std::mem::take(&mut self.to_book);
            settled.extend(self.record(replies).await?);
        }
        let unsent = self.withdraw("not sent: the run gave up on its requests in flight").await?;
        let mut set = std::mem::take(&mut self.flying().set);
        set.shutdown().await;
        self.flying().out = 0;
        let (booked, usd) = self.books_io(move |bk| bk.give_up(reason)).await?;
        let reservations = self.flying().reservations.drain().map(|(_, r)| r).collect();
        Ok(GaveUp { settled, booked, usd, reservations, unsent })
    }

    /// Take back the queries written ahead and not sent yet: each is closed in the books as not
    /// billed (`reason`; one fsync) and handed back, its reservation to settle at no cost. A
    /// query is either sent or withdrawn, never both (both happen under one lock). Waves still
    /// being written are not touched: withdraw again once they have left.
    ///
    /// # Errors
    /// [`BooksError`]: the closing lines could not be written (the intents stay open, so the next
    /// open books them as possibly billed: an overcount, never an undercount).
    pub async fn withdraw(&mut self, reason: &'static str) -> Result<Vec<Unsent<T>>, BooksError> {
        let primed: Vec<(Sent<T>, Reservation)> = {
            let mut f = self.flying();
            let primed: Vec<Sent<T>> = f.primed.drain(..).collect();
            primed
                .into_iter()
                .map(|s| {
                    let res = f.reservations.remove(&s.intent).expect("a primed query's reservation is held");
                    (s, res)
                })
                .collect()
        };
        if primed.is_empty() {
            return Ok(Vec::new());
        }
        let ids: Vec<IntentId> = primed.iter().map(|(s, _)| s.intent).collect();
        self.books_io(move |bk| bk.close_unsent(&ids, reason)).await?;
        Ok(primed
            .into_iter()
            .map(|(s, reservation)| Unsent { tag: s.tag, a: s.a, b: s.b, pool: s.pool, reservation })
            .collect())
    }

    /// Send every query of `todo` (pool, a shown first, b, tag) with at most `concurrency` in
    /// flight: each is reserved in `budget` first (a query that does not fit ends the sending),
    /// and settled there when its outcome is booked. `each` sees every settled query and may
    /// stop the sending; the requests in flight are then waited for and booked, never dropped.
    ///
    /// # Errors
    /// [`BooksError`]: the books could not be written; the requests in flight are waited for
    /// first (their outcomes are booked where possible).
    pub async fn dispatch_all(
        &mut self,
        todo: impl IntoIterator<Item = (Arc<Pool>, usize, usize, T)>,
        budget: &mut Budget,
        concurrency: usize,
        each: impl FnMut(&Finished<T>) -> Flow,
    ) -> Result<DispatchReport<T>, BooksError> {
        self.dispatch_all_prefixed(todo, budget, concurrency, "", each).await
    }

    /// [`Dispatcher::dispatch_all`], each query booked under `key_prefix` + its cache key (a
    /// judge's fingerprint re-asks stored pairs under keys of their own).
    ///
    /// # Errors
    /// As [`Dispatcher::dispatch_all`].
    pub async fn dispatch_all_prefixed(
        &mut self,
        todo: impl IntoIterator<Item = (Arc<Pool>, usize, usize, T)>,
        budget: &mut Budget,
        concurrency: usize,
        key_prefix: &str,
        mut each: impl FnMut(&Finished<T>) -> Flow,
    ) -> Result<DispatchReport<T>, BooksError> {
        let mut todo = todo.into_iter().peekable();
        // Queries taken back after an overrun, reserved again at the raised worst case.
        let mut retry: VecDeque<(Arc<Pool>, usize, usize, T)> = VecDeque::new();
        let mut report = DispatchReport { settled: Vec::new(), unsent: 0, budget_blocked: false };
        let mut sending = true;
        let mut first_error: Option<BooksError> = None;
        loop {
            if sending && first_error.is_none() {
                let mut wave = Vec::new();
                while self.in_flight() + wave.len() < concurrency.max(1) {
                    let Some((pool, a, b, _)) = retry.front().or_else(|| todo.peek()) else { break };
                    let worst = self.judge.worst_case_usd(pool, *a, *b);
                    let Some(reservation) = budget.try_reserve(worst) else {
                        report.budget_blocked = true;
                        sending = false;
                        break;
                    };
                    let Some((pool, a, b, tag)) = retry.pop_front().or_else(|| todo.next()) else { break };
                    let key = format!("{key_prefix}{}", self.judge.cache_key(&pool, a, b));
                    wave.push(Query { tag, pool, a, b, key, reservation });
                }
                if let Err(e) = self.send(wave).await {
                    first_error = Some(e);
                }
            }
            let Some(replies) = self.join().await else { break };
            let booked = self.record(replies).await;
            // An overrun booked: what was written ahead at the old worst case goes back (before
            // the overrun is settled, so the budget counts only requests sent as in flight at
            // it), to be reserved again at the raised worst case.
            if self.held() && self.overruns_booked() {
                match self.withdraw(RESERVED_TOO_LOW).await {
                    Ok(unsent) => {
                        for u in unsent {
                            budget.settle(u.reservation, 0.0, false);
                            retry.push_back((u.pool, u.a, u.b, u.tag));
                        }
                    }
                    Err(e) => {
                        first_error.get_or_insert(e);
                    }
                }
                self.release();
            }
            match booked {
                Ok(done) => {
                    for s in done {
                        let f = s.settle_in(budget);
                        // Not sent because an overrun raised its worst case while it waited (a
                        // rate limit, a slot): reserved again, unless sending has stopped.
                        if matches!(f.outcome, DispatchOutcome::Failed(crate::judge::JudgeError::NotSent { .. }))
                            && sending
                            && !self.judge.sending_stopped()
                        {
                            retry.push_back((f.pool, f.a, f.b, f.tag));
                            continue;
                        }
                        if each(&f) == Flow::Stop {
                            sending = false;
                        }
                        report.settled.push(f);
                    }
                }
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        report.unsent = todo.count() + retry.len();
        match first_error {
            Some(e) => Err(e),
            None => Ok(report),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::pool::Item;
    use crate::judge::JudgeInfo;
    use crate::judge::mock::{MockConfig, MockJudge};

    fn pool(n: usize) -> Arc<Pool> {
        let items = (0..n)
            .map(|i| Item {
                id: format!("i{i}"),
                text: Some(vec!["word"; 10 + i].join(" ")),
                quality: Some(i as f64),
                ..Default::default()
            })
            .collect();
        Arc::new(Pool::new("p".into(), "Summarise.".into(), items).unwrap())
    }

    fn priced(latency_ms: u64) -> Arc<dyn Judge> {
        let cfg = MockConfig { input_usd_per_mtok: Some(1.0), latency_ms, ..MockConfig::default() };
        Arc::new(MockJudge::new(cfg).unwrap())
    }

    /// A query of `dispatch_all`: pool, shown first, shown second, tag.
    type Todo = (Arc<Pool>, usize, usize, (usize, usize));

    fn all_pairs(pool: &Arc<Pool>) -> Vec<Todo> {
        let n = pool.n_items();
        (0..n)
            .flat_map(|a| (0..n).filter(move |&b| b != a).map(move |b| (a, b)))
            .map(|(a, b)| (pool.clone(), a, b, (a, b)))
            .collect()
    }

    /// The queries of `pairs` (tagged by their pair), each reserved in `budget` at its worst case.
    fn wave(
        judge: &Arc<dyn Judge>,
        pool: &Arc<Pool>,
        pairs: &[(usize, usize)],
        budget: &mut Budget,
    ) -> Vec<Query<(usize, usize)>> {
        pairs
            .iter()
            .map(|&(a, b)| {
                let reservation = budget.try_reserve(judge.worst_case_usd(pool, a, b)).unwrap();
                Query { tag: (a, b), pool: pool.clone(), a, b, key: judge.cache_key(pool, a, b), reservation }
            })
            .collect()
    }

    /// With 8 in flight, `max_usd` stops the sending at the last query whose worst case fits:
    /// spend never passes it, and every query sent is stored and its intent closed.
    #[tokio::test]
    async fn the_budget_holds_with_many_in_flight() {
        let dir = tempfile::tempdir().unwrap();
        let (pool, judge) = (pool(6), priced(5));
        let todo = all_pairs(&pool);
        let worst: Vec<f64> = todo.iter().map(|(p, a, b, _)| judge.worst_case_usd(p, *a, *b)).collect();
        // Room for exactly the first 11 worst cases.
        let max = worst[..11].iter().sum::<f64>() + 0.5 * worst[11];
        let mut budget = Budget::new(None, Some(max), 0, 0.0);
        let mut disp = Dispatcher::new(judge, Books::open(dir.path()).unwrap().0);
        let report = disp.dispatch_all(todo, &mut budget, 8, |_| Flow::Continue).await.unwrap();
        assert!(report.budget_blocked);
        assert_eq!((report.settled.len(), report.unsent), (11, 30 - 11));
        assert!(budget.spent_usd() <= max, "{} > {max}", budget.spent_usd());
        assert!(budget.reserved_usd().abs() < 1e-15 && budget.in_flight() == 0, "{budget:?}");
        let books = disp.close().await.unwrap();
        assert_eq!((books.log().records().len(), books.in_flight()), (11, 0));
        let spent: f64 = books.log().records().iter().map(|r| r.reply.cost_usd).sum();
        assert!((spent - budget.spent_usd()).abs() < 1e-15, "{spent} {}", budget.spent_usd());
    }

    /// A wave handed to `send_detached` counts as in flight at once; its requests leave only
    /// after its intents are on disk, and its replies come through `event`. A second wave given
    /// up on while its intents are written leaves first and is booked as possibly billed.
    #[tokio::test]
    async fn a_detached_wave_leaves_after_its_intents_and_give_up_books_waves_being_written() {
        let dir = tempfile::tempdir().unwrap();
        let (pool, judge) = (pool(4), priced(20));
        let mut budget = Budget::new(None, None, 0, 0.0);
        let mut disp: Dispatcher<(usize, usize)> = Dispatcher::new(judge.clone(), Books::open(dir.path()).unwrap().0);
        let wave = |pairs: &[(usize, usize)], budget: &mut Budget| wave(&judge, &pool, pairs, budget);
        disp.send_detached(wave(&[(0, 1), (1, 2)], &mut budget));
        assert_eq!((disp.in_flight(), disp.waves_writing()), (2, 1));
        let Event::Sent(sent) = disp.event().await else { panic!("the wave leaves before any reply") };
        sent.unwrap();
        assert_eq!((disp.requests_out(), disp.waves_writing(), disp.books().in_flight()), (2, 0, 2));
        let settled = booked(&mut disp, 2).await;
        assert!(settled.iter().all(|s| matches!(s.outcome, DispatchOutcome::Verdict { stored: true, .. })));
        disp.send_detached(wave(&[(2, 3), (3, 0)], &mut budget));
        let g = disp.give_up("test").await.unwrap();
        assert_eq!((g.booked, g.reservations.len(), g.unsent.len(), disp.in_flight()), (2, 2, 0, 0));
        let books = disp.close().await.unwrap();
        assert_eq!((books.log().records().len(), books.in_flight()), (2, 0));
    }

    /// [`priced`] counting its calls and those running at once (their peak), with its worst
    /// case divided by `underestimate` (> 1: a provider billing above `max_tokens`).
    struct Counting {
        inner: Arc<dyn Judge>,
        underestimate: f64,
        calls: std::sync::atomic::AtomicUsize,
        now: std::sync::atomic::AtomicUsize,
        peak: std::sync::atomic::AtomicUsize,
    }

    impl Counting {
        fn new(inner: Arc<dyn Judge>, underestimate: f64) -> Self {
            Self { inner, underestimate, calls: Default::default(), now: Default::default(), peak: Default::default() }
        }
    }

    impl JudgeInfo for Counting {
        fn describe(&self) -> String {
            self.inner.describe()
        }
        fn cache_key(&self, pool: &Pool, a: usize, b: usize) -> String {
            self.inner.cache_key(pool, a, b)
        }
        fn worst_case_usd(&self, pool: &Pool, a: usize, b: usize) -> f64 {
            self.inner.worst_case_usd(pool, a, b) / self.underestimate
        }
    }

    impl Judge for Counting {
        fn judge<'a>(
            &'a self,
            pool: &'a Pool,
            a: usize,
            b: usize,
        ) -> crate::judge::BoxFuture<'a, Result<JudgeReply, JudgeError>> {
            use std::sync::atomic::Ordering::SeqCst;
            Box::pin(async move {
                self.calls.fetch_add(1, SeqCst);
                let n = self.now.fetch_add(1, SeqCst) + 1;
                self.peak.fetch_max(n, SeqCst);
                let out = self.inner.judge(pool, a, b).await;
                self.now.fetch_sub(1, SeqCst);
                out
            })
        }
    }

    /// A wire of 1 with 3 queries written ahead: the first reply costs 10× its reservation, so
    /// none of the 3 leaves from its task; once it is settled (worst case raised 10×) they are
    /// taken back, closed as not billed, and reserved again, which `max_usd` (5 of the old worst
    /// cases) no longer allows. One call in all (before the hold: the next one left at once).
    #[tokio::test]
    async fn a_reply_above_its_reservation_holds_what_is_written_ahead() {
        let dir = tempfile::tempdir().unwrap();
        let pool = pool(6);
        let over = Arc::new(Counting::new(priced(5), 10.0));
        let judge: Arc<dyn Judge> = over.clone();
        let todo = all_pairs(&pool);
        let worst = judge.worst_case_usd(&pool, 0, 1);
        let mut budget = Budget::new(None, Some(5.0 * worst), 0, 0.0);
        let mut disp = Dispatcher::new(judge, Books::open(dir.path()).unwrap().0);
        disp.set_wire_limit(1);
        let report = disp.dispatch_all(todo, &mut budget, 4, |_| Flow::Continue).await.unwrap();
        assert_eq!(over.calls.load(std::sync::atomic::Ordering::SeqCst), 1);
        assert!(report.budget_blocked);
        assert_eq!((report.settled.len(), report.unsent), (1, 29));
        assert!((budget.spent_usd() - 10.0 * worst).abs() < 1e-12 * worst.max(1.0), "{budget:?}");
        assert!(budget.reserved_usd().abs() < 1e-15 && budget.in_flight() == 0, "{budget:?}");
        let books = disp.close().await.unwrap();
        assert_eq!((books.log().records().len(), books.in_flight()), (1, 0));
    }

    /// Take events until `n` queries are booked (a wave that left is checked; every reply is
    /// announced before it is booked).
    async fn booked(disp: &mut Dispatcher<(usize, usize)>, n: usize) -> Vec<Settled<(usize, usize)>> {
        let (mut answered, mut settled) = (0, Vec::new());
        while settled.len() < n {
            match disp.event().await {
                Event::Sent(sent) => sent.unwrap(),
                Event::Answered(pairs) => answered += pairs.len(),
                Event::Booked(done) => settled.extend(done.unwrap()),
            }
        }
        assert_eq!(answered, settled.len(), "each reply is announced, then booked");
        settled
    }

    /// With a wire limit of 2, a wave of 5 has its 5 intents on disk at once, 2 requests out and
    /// 3 written ahead, each sent when a reply comes back: never more than 2 calls at once.
    /// Withdrawn, queries written ahead are closed as not billed and handed back unsent.
    #[tokio::test]
    async fn a_wave_wider_than_the_wire_is_written_ahead_sent_as_slots_free_or_withdrawn() {
        let dir = tempfile::tempdir().unwrap();
        let pool = pool(6);
        let counting = Arc::new(Counting::new(priced(20), 1.0));
        let judge: Arc<dyn Judge> = counting.clone();
        let mut budget = Budget::new(None, None, 0, 0.0);
        let mut disp: Dispatcher<(usize, usize)> = Dispatcher::new(judge.clone(), Books::open(dir.path()).unwrap().0);
        let wave = |pairs: &[(usize, usize)], budget: &mut Budget| wave(&judge, &pool, pairs, budget);
        disp.set_wire_limit(2);
        disp.send_detached(wave(&[(0, 1), (1, 2), (2, 3), (3, 4), (4, 5)], &mut budget));
        let Event::Sent(sent) = disp.event().await else { panic!("the wave leaves before any reply") };
        sent.unwrap();
        assert_eq!((disp.in_flight(), disp.primed(), disp.books().in_flight()), (5, 3, 5));
        let settled = booked(&mut disp, 5).await;
        assert_eq!(settled.len(), 5);
        assert!(settled.iter().all(|s| matches!(s.outcome, DispatchOutcome::Verdict { stored: true, .. })));
        assert_eq!(counting.peak.load(std::sync::atomic::Ordering::SeqCst), 2, "at most 2 calls at once");

        disp.set_wire_limit(1);
        disp.send_detached(wave(&[(5, 0), (0, 2), (1, 3)], &mut budget));
        let Event::Sent(sent) = disp.event().await else { panic!("the wave leaves before any reply") };
        sent.unwrap();
        let unsent = disp.withdraw("not sent: test").await.unwrap();
        let pairs: Vec<(usize, usize)> = unsent.iter().map(|u| (u.a, u.b)).collect();
        assert_eq!(pairs, vec![(0, 2), (1, 3)], "the two behind the one sent, in order");
        assert_eq!((disp.in_flight(), disp.primed(), disp.books().in_flight()), (1, 0, 1));
        let settled = booked(&mut disp, 1).await;
        assert_eq!((settled[0].a, settled[0].b), (5, 0));
        let books = disp.close().await.unwrap();
        assert_eq!((books.log().records().len(), books.in_flight()), (6, 0));
        let closures: Vec<serde_json::Value> = std::fs::read_to_string(dir.path().join("intents.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .filter(|l: &serde_json::Value| l.get("closed").is_some())
            .collect();
        assert_eq!(closures.len(), 2, "{closures:?}");
        assert!(closures.iter().all(|c| c["possibly_billed"] == false && c["reason"] == "not sent: test"));
    }

    /// `Flow::Stop` ends the sending, but what is in flight is waited for and stored.
    #[tokio::test]
    async fn a_stop_waits_for_the_requests_in_flight() {
        let dir = tempfile::tempdir().unwrap();
        let (pool, judge) = (pool(6), priced(20));
        let mut budget = Budget::new(None, None, 0, 0.0);
        let mut disp = Dispatcher::new(judge, Books::open(dir.path()).unwrap().0);
        let report = disp.dispatch_all(all_pairs(&pool), &mut budget, 8, |_| Flow::Stop).await.unwrap();
        // The first reply stops the sending; the 7 others in flight with it are stored too.
        assert!(report.settled.len() >= 8, "{}", report.settled.len());
        assert_eq!(report.settled.len() + report.unsent, 30);
        assert!(!report.budget_blocked);
        let books = disp.close().await.unwrap();
        assert_eq!((books.log().records().len(), books.in_flight()), (report.settled.len(), 0));
    }

    /// [`priced`] that answers the ordered pair (0, 1) after `slow_ms` and every other at once.
    struct OneSlow {
        inner: Arc<dyn Judge>,
        slow_ms: u64,
    }

    impl JudgeInfo for OneSlow {
        fn describe(&self) -> String {
            self.inner.describe()
        }
        fn cache_key(&self, pool: &Pool, a: usize, b: usize) -> String {
            self.inner.cache_key(pool, a, b)
        }
    }

    impl Judge for OneSlow {
        fn judge<'a>(
            &'a self,
            pool: &'a Pool,
            a: usize,
            b: usize,
        ) -> crate::judge::BoxFuture<'a, Result<JudgeReply, JudgeError>> {
            Box::pin(async move {
                if (a, b) == (0, 1) {
                    tokio::time::sleep(std::time::Duration::from_millis(self.slow_ms)).await;
                }
                self.inner.judge(pool, a, b).await
            })
        }
    }

    /// A wave's replies are in and booked while the task that sent it is still running (it
    /// lingers after its requests left, while an earlier request is still out): every query is
    /// settled, yet the dispatcher still holds that task and its handle on the books. `close`
    /// waits for it and hands the books back; it never asserts that nothing is in flight (a
    /// finished run once panicked there, before writing result.json).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn close_waits_for_a_wave_task_that_outlives_its_replies() {
        let dir = tempfile::tempdir().unwrap();
        let pool = pool(4);
        let judge: Arc<dyn Judge> = Arc::new(OneSlow { inner: priced(0), slow_ms: 150 });
        let mut budget = Budget::new(None, None, 0, 0.0);
        let mut disp: Dispatcher<(usize, usize)> = Dispatcher::new(judge.clone(), Books::open(dir.path()).unwrap().0);
        disp.send_detached(wave(&judge, &pool, &[(0, 1)], &mut budget));
        let Event::Sent(sent) = disp.event().await else { panic!("the first wave leaves first") };
        sent.unwrap();
        disp.wave_linger = std::time::Duration::from_millis(600);
        disp.send_detached(wave(&judge, &pool, &[(1, 0), (2, 3)], &mut budget));
        let mut settled = Vec::new();
        while settled.len() < 3 {
            match disp.event().await {
                Event::Sent(_) => panic!("the second wave's task lingers past its replies"),
                Event::Answered(_) => {}
                Event::Booked(done) => settled.extend(done.unwrap()),
            }
        }
        assert_eq!((disp.waves_writing(), disp.in_flight()), (1, 2), "the lingering wave still counts");
        let books = disp.close().await.unwrap();
        assert_eq!((books.log().records().len(), books.in_flight()), (3, 0));
    }
}

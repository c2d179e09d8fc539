//! The one judge dispatcher of `run`, `gate` and `audit`: every paid query goes through it.
//!
//! For each query it reserves the worst case in the caller's [`Budget`] (the caller does, and
//! hands the [`Reservation`] in), writes the intent and fsyncs it before the request leaves
//! ([`Books::stage_intents`], one fsync per wave, taken without holding the books), keeps the requests in flight as tasks, and when a
//! reply comes back stores it ([`Books::record_replies`]: appended, flushed, fsynced) or books the
//! failure ([`Books::record_failure`]: a paid failure in `failed.jsonl`, an unpaid one closes its
//! intent). Every fsync runs in a blocking task, off the async runtime. What is never lost
//! (docs/live.md, "Crashes, Ctrl-C and two processes"): a kill at any moment leaves every
//! request that may have been billed booked, as a verdict, a paid failure or an open intent the
//! next open books as possibly billed.
//!
//! `run` drives it from its scheduler ([`Dispatcher::send_detached`]: a blocking task writes a
//! wave's intents and then sends it while the driver goes on; [`Dispatcher::event`] inside its
//! `select!`, then [`Dispatcher::record_detached`]); `gate` and `audit` hand it a fixed list of
//! queries ([`Dispatcher::dispatch_all`]).

use crate::domain::pool::Pool;
use crate::domain::verdict::JudgeReply;
use crate::judge::{Judge, JudgeError};
use crate::store::books::{Books, BooksError};
use crate::store::budget::{Budget, Reservation};
use crate::store::intents::IntentId;
use crate::store::ledger::VerdictRecord;
use std::collections::HashMap;
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
    /// Cache key of the ordered pair for this judge (`Judge::cache_key`).
    pub key: String,
    /// Worst-case cost reserved for it, USD.
    pub reservation: Reservation,
}

/// How a query ended.
#[derive(Debug)]
pub enum Outcome {
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

impl Outcome {
    /// What the query cost, USD (0 for unpaid failures).
    pub fn cost_usd(&self) -> f64 {
        match self {
            Outcome::Verdict { cost_usd, .. } => *cost_usd,
            Outcome::Failed(e) => e.cost_usd(),
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
    pub outcome: Outcome,
}

/// A reply that came back and is not yet booked ([`Dispatcher::join`] → [`Dispatcher::record`]).
pub struct Reply<T> {
    sent: Sent<T>,
    out: Result<JudgeReply, JudgeError>,
}

impl<T> Reply<T> {
    /// The ordered pair (a shown first, b second) of the query answered.
    pub fn pair(&self) -> (usize, usize) {
        (self.sent.query.a, self.sent.query.b)
    }
}

struct Sent<T> {
    query: Query<T>,
    intent: IntentId,
}

/// What [`Dispatcher::event`] brings.
pub enum Event<T> {
    /// A wave's requests have left; or its intents could not be written ([`BooksError`]) and
    /// none of its queries was sent.
    Sent(Result<(), BooksError>),
    /// Replies that came in, not yet booked (the first, then every other one already in).
    Replies(Vec<Reply<T>>),
}

/// Replies being booked off the driver ([`Dispatcher::record_detached`]).
pub type Recording<T> = tokio::task::JoinHandle<Result<Vec<Settled<T>>, BooksError>>;

/// Book `replies` into `books`: the verdicts staged (written, flushed) under the lock, fsynced
/// without it, committed under it; then each failure, fsynced. Settled in the order of `replies`.
fn book_replies<T>(
    books: &Mutex<Books>,
    describe: String,
    replies: Vec<Reply<T>>,
) -> Result<Vec<Settled<T>>, BooksError> {
    let recs: Vec<_> = replies
        .iter()
        .filter_map(|Reply { sent, out }| {
            let reply = out.as_ref().ok()?.clone();
            let q = &sent.query;
            Some((sent.intent, VerdictRecord::from_reply(q.key.clone(), &q.pool, q.a, q.b, describe.clone(), reply)))
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
    for Reply { sent, out } in replies {
        let Sent { query, intent } = sent;
        let (pool, a, b, key) = (query.pool.clone(), query.a, query.b, query.key);
        let outcome = match out {
            Ok(reply) => {
                let stored = stored_flags.next().expect("one flag per verdict");
                Outcome::Verdict { cost_usd: reply.cost_usd, stored }
            }
            Err(e) => {
                let (cost, msg) = (e.cost_usd(), e.to_string());
                let (ida, idb) = (pool.items[a].id.clone(), pool.items[b].id.clone());
                lock().record_failure(intent, &key, &ida, &idb, cost, &msg)?;
                Outcome::Failed(e)
            }
        };
        settled.push(Settled { tag: query.tag, pool, a, b, reservation: query.reservation, outcome });
    }
    Ok(settled)
}

/// A query written ahead and withdrawn before it was sent ([`Dispatcher::withdraw`]).
#[derive(Debug)]
pub struct Unsent<T> {
    /// The caller's label.
    pub tag: T,
    /// Item shown first.
    pub a: usize,
    /// Item shown second.
    pub b: usize,
    /// Its reservation, to settle at no cost.
    pub reservation: Reservation,
}

/// What [`Dispatcher::give_up`] did.
#[derive(Debug)]
pub struct GaveUp<T> {
    /// Requests in flight booked as possibly billed.
    pub booked: usize,
    /// Their total at their reserved worst cases, USD.
    pub usd: f64,
    /// Their reservations, to settle at their worst case.
    pub reservations: Vec<Reservation>,
    /// Queries written ahead and taken back unsent (closed as not billed).
    pub unsent: Vec<Unsent<T>>,
}

/// What [`Dispatcher::dispatch_all`] did.
#[derive(Debug)]
pub struct DispatchReport<T> {
    /// Every query sent, with its outcome, in the order they settled.
    pub settled: Vec<Settled<T>>,
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

/// The requests sent (intent on disk) whose replies are not taken yet: their tasks, and their
/// reservations by intent. Shared with the tasks that write a wave's intents and then send it.
struct Flying<T> {
    set: tokio::task::JoinSet<Reply<T>>,
    reservations: HashMap<IntentId, Reservation>,
    /// Written ahead: intents on disk, requests not sent yet; the first is sent the moment a
    /// request's reply comes back ([`Dispatcher::set_wire_limit`]).
    primed: std::collections::VecDeque<Sent<T>>,
    /// Requests sent whose judge call has not returned yet.
    on_wire: usize,
    /// At most this many on the wire (the rest of a wave waits in `primed`).
    wire_limit: usize,
    judge: Arc<dyn Judge>,
}

impl<T: Send + 'static> Flying<T> {
    /// Send primed queries while the wire has room. Called with the lock held, by the task
    /// that wrote a wave and by every judge task whose reply has just come back.
    fn launch(&mut self, me: &Arc<Mutex<Flying<T>>>) {
        while self.on_wire < self.wire_limit {
            let Some(sent) = self.primed.pop_front() else { break };
            self.on_wire += 1;
            let (judge, me) = (self.judge.clone(), me.clone());
            self.set.spawn(async move {
                let out = judge.judge(&sent.query.pool, sent.query.a, sent.query.b).await;
                // The slot is free: the next primed query leaves from here, not after a hop
                // through the driver (docs/live.md, "Concurrency").
                let mut f = me.lock().expect("flying lock");
                f.on_wire -= 1;
                f.launch(&me);
                drop(f);
                Reply { sent, out }
            });
        }
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
        .map(|q| (q.key.as_str(), q.pool.items[q.a].id.as_str(), q.pool.items[q.b].id.as_str(), q.reservation.usd))
        .collect();
    let staged = books.lock().expect("books lock").stage_intents(&rows)?;
    if let Err(e) = staged.sync() {
        books.lock().expect("books lock").abandon_intents(staged);
        return Err(e.into());
    }
    let mut f = flying.lock().expect("flying lock");
    for (query, &intent) in queries.into_iter().zip(staged.ids()) {
        f.reservations.insert(intent, query.reservation);
        f.primed.push_back(Sent { query, intent });
    }
    f.launch(flying);
    Ok(())
}

/// The dispatcher: a judge, the books it pays into, the requests in flight and the waves whose
/// intents are being written.
pub struct Dispatcher<T> {
    judge: Arc<dyn Judge>,
    books: Arc<Mutex<Books>>,
    flying: Arc<Mutex<Flying<T>>>,
    writing: std::collections::VecDeque<Writing>,
}

impl<T: Send + 'static> Dispatcher<T> {
    /// A dispatcher sending to `judge` and booking into `books`.
    pub fn new(judge: Arc<dyn Judge>, books: Books) -> Self {
        let flying = Flying {
            set: tokio::task::JoinSet::new(),
            reservations: HashMap::new(),
            primed: Default::default(),
            on_wire: 0,
            wire_limit: usize::MAX,
            judge: judge.clone(),
        };
        Self {
            judge,
            books: Arc::new(Mutex::new(books)),
            flying: Arc::new(Mutex::new(flying)),
            writing: Default::default(),
        }
    }

    fn flying(&self) -> MutexGuard<'_, Flying<T>> {
        self.flying.lock().expect("flying lock")
    }

    /// Queries in flight: sent and not yet taken by [`Dispatcher::join`], written ahead and not
    /// sent yet ([`Dispatcher::primed`]), plus those of the waves whose intents are being
    /// written ([`Dispatcher::send_detached`]; a wave whose requests have just left counts twice
    /// until [`Dispatcher::wave_sent`] takes it, so this is 0 only when nothing is out or about
    /// to leave).
    pub fn in_flight(&self) -> usize {
        let f = self.flying();
        f.set.len() + f.primed.len() + self.writing.iter().map(|(n, _)| n).sum::<usize>()
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

    /// [`Dispatcher::in_flight`] without the queries written ahead: requests out or about to
    /// leave (what a stop waits for; the others are withdrawn).
    pub fn out_or_leaving(&self) -> usize {
        self.requests_out() + self.writing.iter().map(|(n, _)| n).sum::<usize>()
    }

    /// Requests sent (their intents on disk) whose replies [`Dispatcher::join`] has not taken.
    pub fn requests_out(&self) -> usize {
        self.flying().set.len()
    }

    /// Waves handed to [`Dispatcher::send_detached`] and not yet taken by
    /// [`Dispatcher::wave_sent`].
    pub fn waves_writing(&self) -> usize {
        self.writing.len()
    }

    /// The books, for reading (do not hold across an await).
    pub fn books(&self) -> MutexGuard<'_, Books> {
        self.books.lock().expect("books lock")
    }

    /// The books, once nothing is in flight.
    ///
    /// # Panics
    /// If requests are still in flight.
    pub fn into_books(self) -> Books {
        assert!(self.in_flight() == 0, "no request in flight");
        match Arc::try_unwrap(self.books) {
            Ok(m) => m.into_inner().expect("books lock"),
            Err(_) => unreachable!("every books task has finished"),
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
    /// its intent is on disk. The queries count in [`Dispatcher::in_flight`] from here on; take
    /// the task's outcome with [`Dispatcher::wave_sent`].
    pub fn send_detached(&mut self, queries: Vec<Query<T>>) {
        if queries.is_empty() {
            return;
        }
        let (books, flying) = (self.books.clone(), self.flying.clone());
        let n = queries.len();
        let task = tokio::task::spawn_blocking(move || write_and_send(&books, &flying, queries));
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

    /// Wait for the next event of a pipelined driver: a wave of [`Dispatcher::send_detached`]
    /// has left (or its intents failed), or replies came in ([`Dispatcher::join`]: the first
    /// and every other one already in). Pending forever when nothing is in flight (guard it with
    /// [`Dispatcher::in_flight`]). Cancel-safe (for `select!`): nothing is taken unless this
    /// resolves.
    pub async fn event(&mut self) -> Event<T> {
        let flying = self.flying.clone();
        let writing = &mut self.writing;
        let event = std::future::poll_fn(|cx| {
            if let Some((_, task)) = writing.front_mut()
                && let Poll::Ready(res) = std::pin::Pin::new(task).poll(cx)
            {
                writing.pop_front();
                return Poll::Ready(Event::Sent(res.expect("intents task does not panic")));
            }
            match flying.lock().expect("flying lock").set.poll_join_next(cx) {
                Poll::Ready(Some(r)) => Poll::Ready(Event::Replies(vec![r.expect("judge task does not panic")])),
                // No request out: only a wave being written can bring the next event.
                Poll::Ready(None) | Poll::Pending => Poll::Pending,
            }
        })
        .await;
        match event {
            Event::Replies(mut replies) => {
                let mut f = self.flying();
                while let Some(more) = f.set.try_join_next() {
                    replies.push(more.expect("judge task does not panic"));
                }
                Event::Replies(replies)
            }
            sent => sent,
        }
    }

    /// Wait for the next reply and take every other one already in. `None` when no request is
    /// out ([`Dispatcher::requests_out`]; the waves still being written are not waited for).
    /// Cancel-safe (for `select!`): a reply is taken only when this resolves; book it with
    /// [`Dispatcher::record`].
    pub async fn join(&mut self) -> Option<Vec<Reply<T>>> {
        let flying = self.flying.clone();
        let first = std::future::poll_fn(|cx| flying.lock().expect("flying lock").set.poll_join_next(cx)).await?;
        let mut replies = vec![first.expect("judge task does not panic")];
        let mut f = self.flying();
        while let Some(more) = f.set.try_join_next() {
            replies.push(more.expect("judge task does not panic"));
        }
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
        self.record_detached(replies).await.expect("books task does not panic")
    }

    /// [`Dispatcher::record`] as a task of its own: the driver may write the next intents and
    /// send while the verdicts are fsynced (the verdict fsync holds no lock on the books, so the
    /// intents' fsync runs at the same time). Until the task resolves the replies' intents stay
    /// open and their reservations held: a kill meanwhile books each as stored or possibly
    /// billed. Do not call [`Dispatcher::give_up`] before it resolves (its replies would be
    /// booked twice).
    pub fn record_detached(&mut self, replies: Vec<Reply<T>>) -> Recording<T> {
        let mut f = self.flying();
        for r in &replies {
            f.reservations.remove(&r.sent.intent);
        }
        drop(f);
        let (books, describe) = (self.books.clone(), self.judge.describe());
        tokio::task::spawn_blocking(move || book_replies(&books, describe, replies))
    }

    /// Stop waiting: let the waves whose intents are being written leave first, take back the
    /// queries written ahead ([`Dispatcher::withdraw`]: not billed), then abort the requests in
    /// flight and book each as possibly billed at its reserved worst case (their replies will
    /// not be recorded). Returns how many were booked, their total (USD) and their reservations
    /// (to settle in the caller's budget at their worst case), and the queries taken back (to
    /// settle at no cost).
    ///
    /// # Errors
    /// [`BooksError`]: a wave's intents, or the bookings, could not be written.
    pub async fn give_up(&mut self, reason: &'static str) -> Result<GaveUp<T>, BooksError> {
        while self.waves_writing() > 0 {
            self.wave_sent().await?;
        }
        let unsent = self.withdraw("not sent: the run gave up on its requests in flight").await?;
        let mut set = std::mem::take(&mut self.flying().set);
        set.shutdown().await;
        let (booked, usd) = self.books_io(move |bk| bk.give_up(reason)).await?;
        let reservations = self.flying().reservations.drain().map(|(_, r)| r).collect();
        Ok(GaveUp { booked, usd, reservations, unsent })
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
        let primed: Vec<Sent<T>> = {
            let mut f = self.flying();
            let primed: Vec<Sent<T>> = f.primed.drain(..).collect();
            for s in &primed {
                f.reservations.remove(&s.intent);
            }
            primed
        };
        if primed.is_empty() {
            return Ok(Vec::new());
        }
        let ids: Vec<IntentId> = primed.iter().map(|s| s.intent).collect();
        self.books_io(move |bk| bk.close_unsent(&ids, reason)).await?;
        Ok(primed
            .into_iter()
            .map(|Sent { query, .. }| Unsent { tag: query.tag, a: query.a, b: query.b, reservation: query.reservation })
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
        mut each: impl FnMut(&Settled<T>) -> Flow,
    ) -> Result<DispatchReport<T>, BooksError> {
        let mut todo = todo.into_iter().peekable();
        let mut report = DispatchReport { settled: Vec::new(), unsent: 0, budget_blocked: false };
        let mut sending = true;
        let mut first_error: Option<BooksError> = None;
        loop {
            if sending && first_error.is_none() {
                let mut wave = Vec::new();
                while self.in_flight() + wave.len() < concurrency.max(1) {
                    let Some((pool, a, b, _)) = todo.peek() else { break };
                    let worst = self.judge.worst_case_usd(pool, *a, *b);
                    let Some(reservation) = budget.try_reserve(worst) else {
                        report.budget_blocked = true;
                        sending = false;
                        break;
                    };
                    let (pool, a, b, tag) = todo.next().expect("peeked");
                    let key = self.judge.cache_key(&pool, a, b);
                    wave.push(Query { tag, pool, a, b, key, reservation });
                }
                if let Err(e) = self.send(wave).await {
                    first_error = Some(e);
                }
            }
            let Some(replies) = self.join().await else { break };
            match self.record(replies).await {
                Ok(done) => {
                    for s in done {
                        let stored = matches!(s.outcome, Outcome::Verdict { stored: true, .. });
                        budget.settle(s.reservation, s.outcome.cost_usd(), stored);
                        if each(&s) == Flow::Stop {
                            sending = false;
                        }
                        report.settled.push(s);
                    }
                }
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        report.unsent = todo.count();
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

    fn all_pairs(pool: &Arc<Pool>) -> Vec<(Arc<Pool>, usize, usize, (usize, usize))> {
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
        assert!(budget.spent_usd <= max, "{} > {max}", budget.spent_usd);
        assert!(budget.reserved_usd.abs() < 1e-15 && budget.in_flight == 0, "{budget:?}");
        let books = disp.into_books();
        assert_eq!((books.log().records().len(), books.in_flight()), (11, 0));
        let spent: f64 = books.log().records().iter().map(|r| r.cost_usd).sum();
        assert!((spent - budget.spent_usd).abs() < 1e-15, "{spent} {}", budget.spent_usd);
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
        let mut replies = Vec::new();
        while replies.len() < 2 {
            let Event::Replies(r) = disp.event().await else { panic!("no wave is being written") };
            replies.extend(r);
        }
        let settled = disp.record(replies).await.unwrap();
        assert!(settled.iter().all(|s| matches!(s.outcome, Outcome::Verdict { stored: true, .. })));
        disp.send_detached(wave(&[(2, 3), (3, 0)], &mut budget));
        let g = disp.give_up("test").await.unwrap();
        assert_eq!((g.booked, g.reservations.len(), g.unsent.len(), disp.in_flight()), (2, 2, 0, 0));
        let books = disp.into_books();
        assert_eq!((books.log().records().len(), books.in_flight()), (2, 0));
    }

    /// [`priced`] counting the judge calls running at once (its peak).
    struct Counting {
        inner: Arc<dyn Judge>,
        now: std::sync::atomic::AtomicUsize,
        peak: std::sync::atomic::AtomicUsize,
    }

    impl Judge for Counting {
        fn describe(&self) -> String {
            self.inner.describe()
        }
        fn cache_key(&self, pool: &Pool, a: usize, b: usize) -> String {
            self.inner.cache_key(pool, a, b)
        }
        fn worst_case_usd(&self, pool: &Pool, a: usize, b: usize) -> f64 {
            self.inner.worst_case_usd(pool, a, b)
        }
        fn judge<'a>(
            &'a self,
            pool: &'a Pool,
            a: usize,
            b: usize,
        ) -> crate::judge::BoxFuture<'a, Result<JudgeReply, JudgeError>> {
            use std::sync::atomic::Ordering::SeqCst;
            Box::pin(async move {
                let n = self.now.fetch_add(1, SeqCst) + 1;
                self.peak.fetch_max(n, SeqCst);
                let out = self.inner.judge(pool, a, b).await;
                self.now.fetch_sub(1, SeqCst);
                out
            })
        }
    }

    /// Take events until `n` replies are in (a wave that left is checked).
    async fn replies(disp: &mut Dispatcher<(usize, usize)>, n: usize) -> Vec<Reply<(usize, usize)>> {
        let mut replies = Vec::new();
        while replies.len() < n {
            match disp.event().await {
                Event::Sent(sent) => sent.unwrap(),
                Event::Replies(r) => replies.extend(r),
            }
        }
        replies
    }

    /// With a wire limit of 2, a wave of 5 has its 5 intents on disk at once, 2 requests out and
    /// 3 written ahead, each sent when a reply comes back: never more than 2 calls at once.
    /// Withdrawn, queries written ahead are closed as not billed and handed back unsent.
    #[tokio::test]
    async fn a_wave_wider_than_the_wire_is_written_ahead_sent_as_slots_free_or_withdrawn() {
        let dir = tempfile::tempdir().unwrap();
        let pool = pool(6);
        let counting = Arc::new(Counting { inner: priced(20), now: Default::default(), peak: Default::default() });
        let judge: Arc<dyn Judge> = counting.clone();
        let mut budget = Budget::new(None, None, 0, 0.0);
        let mut disp: Dispatcher<(usize, usize)> = Dispatcher::new(judge.clone(), Books::open(dir.path()).unwrap().0);
        let wave = |pairs: &[(usize, usize)], budget: &mut Budget| wave(&judge, &pool, pairs, budget);
        disp.set_wire_limit(2);
        disp.send_detached(wave(&[(0, 1), (1, 2), (2, 3), (3, 4), (4, 5)], &mut budget));
        let Event::Sent(sent) = disp.event().await else { panic!("the wave leaves before any reply") };
        sent.unwrap();
        assert_eq!((disp.in_flight(), disp.primed(), disp.books().in_flight()), (5, 3, 5));
        let got = replies(&mut disp, 5).await;
        let settled = disp.record(got).await.unwrap();
        assert_eq!(settled.len(), 5);
        assert!(settled.iter().all(|s| matches!(s.outcome, Outcome::Verdict { stored: true, .. })));
        assert_eq!(counting.peak.load(std::sync::atomic::Ordering::SeqCst), 2, "at most 2 calls at once");

        disp.set_wire_limit(1);
        disp.send_detached(wave(&[(5, 0), (0, 2), (1, 3)], &mut budget));
        let Event::Sent(sent) = disp.event().await else { panic!("the wave leaves before any reply") };
        sent.unwrap();
        let unsent = disp.withdraw("not sent: test").await.unwrap();
        let pairs: Vec<(usize, usize)> = unsent.iter().map(|u| (u.a, u.b)).collect();
        assert_eq!(pairs, vec![(0, 2), (1, 3)], "the two behind the one sent, in order");
        assert_eq!((disp.in_flight(), disp.primed(), disp.books().in_flight()), (1, 0, 1));
        let got = replies(&mut disp, 1).await;
        let settled = disp.record(got).await.unwrap();
        assert_eq!((settled[0].a, settled[0].b), (5, 0));
        let books = disp.into_books();
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
        let books = disp.into_books();
        assert_eq!((books.log().records().len(), books.in_flight()), (report.settled.len(), 0));
    }
}

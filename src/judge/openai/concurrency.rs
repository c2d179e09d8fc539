//! Adaptive in-flight limit for one endpoint: fewer requests in flight while 429s keep coming,
//! more again as requests succeed (additive increase, multiplicative decrease, as TCP does).
//!
//! Every HTTP request holds a slot from sending until its reply (retry waits hold none). With
//! limit L (at first: `concurrency`, or no limit), a 429 on a request sent under the current limit
//! halves it, L ← max(1, ⌊L/2⌋), where an unlimited endpoint counts as L = the most requests
//! seen in flight; 429s of requests sent before that cut do not cut again (they were sent under
//! the old limit, so one burst of 429s is one cut). Every L successes of requests sent under the
//! current limit (one limit's worth, as TCP adds one segment per round trip) raise it by one,
//! L ← L + 1, until it is back where it was before the first cut, when the limit is lifted
//! ("restored"). [`Aimd`] is the pure state machine; [`InFlightLimit`] wraps it for async
//! callers.

use std::sync::Mutex;
use tokio::sync::Notify;

/// How a request ended, as far as the limit cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallOutcome {
    /// HTTP 429 (rate limited).
    RateLimited,
    /// A reply (any verdict, valid or not).
    Success,
    /// Anything else (no effect on the limit).
    Other,
}

/// What the limit did during a run (for the summary and result.json).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LimitStats {
    /// Times the limit was cut after a 429.
    pub cuts: u64,
    /// The lowest limit reached (`None`: never cut).
    pub lowest: Option<usize>,
    /// The limit now (`None`: not limited beyond `concurrency`, i.e. never cut or restored).
    pub now: Option<usize>,
}

/// The pure AIMD state (no clock, no async): [`Aimd::try_start`] before sending,
/// [`Aimd::finish`] with the outcome.
#[derive(Debug, Clone, Default)]
pub struct Aimd {
    ceiling: Option<usize>,
    limit: Option<usize>,
    in_flight: usize,
    peak: usize,
    epoch: u64,
    restore_to: usize,
    /// Successes under the current limit since it last rose.
    successes: usize,
    stats: LimitStats,
}

impl Aimd {
    /// A limit of at most `ceiling` requests in flight (`None`: no fixed ceiling).
    pub fn new(ceiling: Option<usize>) -> Self {
        Self { ceiling, ..Self::default() }
    }

    /// The current limit (`None`: none beyond the ceiling).
    fn effective(&self) -> Option<usize> {
        match (self.limit, self.ceiling) {
            (Some(l), Some(c)) => Some(l.min(c)),
            (l, c) => l.or(c),
        }
    }

    /// Take a slot if one is free; returns the epoch (the number of cuts so far) to hand back
    /// to [`Aimd::finish`].
    pub fn try_start(&mut self) -> Option<u64> {
        if self.effective().is_some_and(|l| self.in_flight >= l) {
            return None;
        }
        self.in_flight += 1;
        self.peak = self.peak.max(self.in_flight);
        Some(self.epoch)
    }

    /// Give the slot of a request sent at `epoch` back, with its outcome.
    pub fn finish(&mut self, epoch: u64, outcome: CallOutcome) {
        self.in_flight = self.in_flight.saturating_sub(1);
        if epoch != self.epoch {
            return; // sent under an earlier limit: its outcome says nothing about this one
        }
        match outcome {
            CallOutcome::RateLimited => {
                let before = self.effective().unwrap_or(self.peak).max(1);
                let cut = (before / 2).max(1);
                if cut < before {
                    if self.limit.is_none() {
                        self.restore_to = before;
                    }
                    self.limit = Some(cut);
                    self.successes = 0;
                    self.epoch += 1;
                    self.stats.cuts += 1;
                    self.stats.lowest = Some(self.stats.lowest.map_or(cut, |l| l.min(cut)));
                }
            }
            CallOutcome::Success => {
                if let Some(l) = self.limit {
                    self.successes += 1;
                    if self.successes >= l {
                        self.successes = 0;
                        self.limit = (l + 1 < self.restore_to).then_some(l + 1);
                    }
                }
            }
            CallOutcome::Other => {}
        }
        self.stats.now = self.limit;
    }

    /// Cuts, lowest and current limit.
    pub fn stats(&self) -> LimitStats {
        self.stats
    }
}

/// The async gate around [`Aimd`]: [`InFlightLimit::acquire`] waits for a slot.
#[derive(Debug, Default)]
pub struct InFlightLimit {
    state: Mutex<Aimd>,
    freed: Notify,
}

/// A slot held by one request; report its outcome with [`Slot::finish`] (dropping it counts as
/// [`CallOutcome::Other`]).
#[derive(Debug)]
pub struct Slot<'a> {
    gate: &'a InFlightLimit,
    epoch: u64,
    done: bool,
}

impl InFlightLimit {
    /// A gate of at most `ceiling` requests in flight (`None`: adaptive only).
    pub fn new(ceiling: Option<usize>) -> Self {
        Self { state: Mutex::new(Aimd::new(ceiling)), freed: Notify::new() }
    }

    /// Wait for a free slot.
    pub async fn acquire(&self) -> Slot<'_> {
        loop {
            let freed = self.freed.notified();
            tokio::pin!(freed);
            freed.as_mut().enable();
            if let Some(epoch) = self.state.lock().expect("not poisoned").try_start() {
                return Slot { gate: self, epoch, done: false };
            }
            freed.await;
        }
    }

    /// Cuts, lowest and current limit.
    pub fn stats(&self) -> LimitStats {
        self.state.lock().expect("not poisoned").stats()
    }

    fn release(&self, epoch: u64, outcome: CallOutcome) {
        self.state.lock().expect("not poisoned").finish(epoch, outcome);
        self.freed.notify_waiters();
    }
}

impl Slot<'_> {
    /// Give the slot back with the request's outcome.
    pub fn finish(mut self, outcome: CallOutcome) {
        self.done = true;
        self.gate.release(self.epoch, outcome);
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        if !self.done {
            self.gate.release(self.epoch, CallOutcome::Other);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Start `n` requests; returns their epochs (panics if a slot is missing).
    fn start(a: &mut Aimd, n: usize) -> Vec<u64> {
        (0..n).map(|_| a.try_start().expect("a free slot")).collect()
    }

    #[test]
    fn one_burst_of_429s_is_one_cut_then_successes_restore() {
        let mut a = Aimd::new(None);
        let wave = start(&mut a, 8);
        // All eight come back 429: one cut, 8 → 4 (they were all sent under the old limit).
        for e in wave {
            a.finish(e, CallOutcome::RateLimited);
        }
        assert_eq!(a.stats(), LimitStats { cuts: 1, lowest: Some(4), now: Some(4) });
        let wave = start(&mut a, 4);
        assert_eq!(a.try_start(), None, "4 in flight is the limit");
        // Two of the four get 429 again: 4 → 2, once.
        a.finish(wave[0], CallOutcome::RateLimited);
        a.finish(wave[1], CallOutcome::RateLimited);
        assert_eq!(a.stats(), LimitStats { cuts: 2, lowest: Some(2), now: Some(2) });
        // Successes of requests sent under the old limit do not raise the new one.
        a.finish(wave[2], CallOutcome::Success);
        a.finish(wave[3], CallOutcome::Success);
        assert_eq!(a.stats().now, Some(2));
        // One step per limit's worth of successes: 2 → 3 after 2, → 4 after 3 more, …, and
        // after 7 more the unlimited state is back (8 = where the first cut started).
        let mut n = 0;
        for (before, after) in [(2, Some(3)), (3, Some(4)), (4, Some(5)), (5, Some(6)), (6, Some(7)), (7, None)] {
            for i in 0..before {
                assert_eq!(a.stats().now, Some(before), "after {i} of {before} successes");
                let e = start(&mut a, 1)[0];
                a.finish(e, CallOutcome::Success);
                n += 1;
            }
            assert_eq!(a.stats().now, after);
        }
        assert_eq!(n, 2 + 3 + 4 + 5 + 6 + 7);
        assert_eq!(a.stats(), LimitStats { cuts: 2, lowest: Some(2), now: None });
        assert_eq!(start(&mut a, 20).len(), 20, "no limit once restored");
    }

    #[test]
    fn ceiling_caps_and_one_is_the_floor() {
        let mut a = Aimd::new(Some(3));
        let w = start(&mut a, 3);
        assert_eq!(a.try_start(), None);
        a.finish(w[0], CallOutcome::RateLimited); // 3 → 1
        assert_eq!(a.stats().now, Some(1));
        a.finish(w[1], CallOutcome::Other);
        a.finish(w[2], CallOutcome::Other);
        let e = start(&mut a, 1)[0];
        assert_eq!(a.try_start(), None);
        a.finish(e, CallOutcome::RateLimited); // already 1: nothing to cut
        assert_eq!(a.stats(), LimitStats { cuts: 1, lowest: Some(1), now: Some(1) });
        for _ in 0..3 {
            let e = start(&mut a, 1)[0];
            a.finish(e, CallOutcome::Success);
        }
        assert_eq!(a.stats().now, None, "1 → 2 after 1 success → restored at the ceiling of 3 after 2 more");
        assert_eq!(start(&mut a, 3).len(), 3);
        assert_eq!(a.try_start(), None, "the ceiling still holds");
    }

    #[tokio::test]
    async fn gate_waits_for_a_freed_slot() {
        let gate = std::sync::Arc::new(InFlightLimit::new(Some(1)));
        let first = gate.acquire().await;
        let g2 = gate.clone();
        let waiter = tokio::spawn(async move {
            let s = g2.acquire().await;
            s.finish(CallOutcome::Success);
        });
        tokio::time::sleep(std::time::Duration::from_millis(30)).await;
        assert!(!waiter.is_finished(), "the second request waits while the first holds the slot");
        drop(first);
        tokio::time::timeout(std::time::Duration::from_secs(5), waiter).await.unwrap().unwrap();
    }
}

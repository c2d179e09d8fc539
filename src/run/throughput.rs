//! The achieved request rate of a run (progress bar, summary, result.json): replies per minute
//! from the first request sent to the last reply.

use std::time::{Duration, Instant};

/// Counts requests and replies against the clock.
#[derive(Debug, Clone, Default)]
pub struct Meter {
    first_sent: Option<Instant>,
    last_reply: Option<Instant>,
    sent: u64,
    resolved: u64,
}

impl Meter {
    /// A meter with nothing sent.
    pub fn new() -> Self {
        Self::default()
    }

    /// A request left.
    pub fn sent(&mut self) {
        self.first_sent.get_or_insert_with(Instant::now);
        self.sent += 1;
    }

    /// A request resolved (verdict, failure or no verdict).
    pub fn resolved(&mut self) {
        self.last_reply = Some(Instant::now());
        self.resolved += 1;
    }

    /// Replies resolved so far.
    pub fn replies(&self) -> u64 {
        self.resolved
    }

    /// Time from the first request to the last reply (zero before the first reply).
    pub fn elapsed(&self) -> Duration {
        match (self.first_sent, self.last_reply) {
            (Some(a), Some(b)) => b.saturating_duration_since(a),
            _ => Duration::ZERO,
        }
    }

    /// Replies per minute from the first request to the last reply; 0 before any reply.
    pub fn per_minute(&self) -> f64 {
        rate_per_minute(self.resolved, self.elapsed())
    }
}

/// `n` events over `elapsed`, per minute; 0 when no time has passed.
pub fn rate_per_minute(n: u64, elapsed: Duration) -> f64 {
    let s = elapsed.as_secs_f64();
    if s > 0.0 { n as f64 * 60.0 / s } else { 0.0 }
}

impl Meter {
    /// [`Meter::per_minute`] for the progress bar: 0 (not yet measured) until a second has
    /// passed, so the first replies of a fast judge do not read as millions per minute.
    pub fn shown_per_minute(&self) -> f64 {
        if self.elapsed() < Duration::from_secs(1) { 0.0 } else { self.per_minute() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_is_events_per_minute() {
        assert_eq!(rate_per_minute(400, Duration::from_secs_f64(6.25)), 3840.0);
        assert_eq!(rate_per_minute(5, Duration::ZERO), 0.0);
        let m = Meter::new();
        assert_eq!((m.replies(), m.per_minute()), (0, 0.0));
    }
}

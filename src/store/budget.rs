//! Budget: comparisons and USD. Before a query is sent its worst-case cost is reserved; when the
//! reply arrives the reservation is settled on the real cost. Spend + reservations never exceed
//! `max_usd`, so the budget holds with many requests in flight (docs/model.md §3).

/// Budget state (USD, comparisons).
#[derive(Debug, Clone, Default)]
pub struct Budget {
    /// Maximum number of stored verdicts (valid or invalid), if any.
    pub max_comparisons: Option<u64>,
    /// Maximum spend in USD, if any.
    pub max_usd: Option<f64>,
    /// Verdicts stored so far (this judge configuration).
    pub comparisons: u64,
    /// Queries reserved and not yet settled.
    pub in_flight: u64,
    /// Settled spend, USD.
    pub spent_usd: f64,
    /// Reserved worst-case spend of queries in flight, USD.
    pub reserved_usd: f64,
}

/// A reservation for one query.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reservation {
    /// Reserved worst-case cost, USD.
    pub usd: f64,
}

impl Budget {
    /// A budget with the given limits and what was already spent (on resume).
    pub fn new(max_comparisons: Option<u64>, max_usd: Option<f64>, comparisons: u64, spent_usd: f64) -> Self {
        Self { max_comparisons, max_usd, comparisons, in_flight: 0, spent_usd, reserved_usd: 0.0 }
    }

    /// Comparisons that may still be reserved.
    pub fn comparisons_left(&self) -> u64 {
        self.max_comparisons.map_or(u64::MAX, |m| m.saturating_sub(self.comparisons + self.in_flight))
    }

    /// Reserve one query with worst-case cost `worst_usd`; `None` if it would pass a limit.
    pub fn try_reserve(&mut self, worst_usd: f64) -> Option<Reservation> {
        if self.comparisons_left() == 0 {
            return None;
        }
        if let Some(max) = self.max_usd
            && self.spent_usd + self.reserved_usd + worst_usd > max + 1e-12
        {
            return None;
        }
        self.in_flight += 1;
        self.reserved_usd += worst_usd;
        Some(Reservation { usd: worst_usd })
    }

    /// Settle a reservation on the real cost; `stored` says whether a verdict was recorded.
    pub fn settle(&mut self, r: Reservation, actual_usd: f64, stored: bool) {
        self.in_flight -= 1;
        self.reserved_usd = (self.reserved_usd - r.usd).max(0.0);
        self.spent_usd += actual_usd;
        if stored {
            self.comparisons += 1;
        }
    }

    /// Whether no further query can be afforded at cost `next_usd`.
    pub fn exhausted(&self, next_usd: f64) -> bool {
        self.comparisons_left() == 0
            || self.max_usd.is_some_and(|m| self.spent_usd + self.reserved_usd + next_usd > m + 1e-12)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reservations_never_pass_max_usd() {
        let mut b = Budget::new(None, Some(1.0), 0, 0.0);
        let rs: Vec<_> = (0..32).filter_map(|_| b.try_reserve(0.3)).collect();
        assert_eq!(rs.len(), 3, "0.9 reserved, a 4th would pass 1.0");
        for r in rs {
            b.settle(r, 0.1, true);
        }
        assert!((b.spent_usd - 0.3).abs() < 1e-12);
        assert_eq!(b.comparisons, 3);
        assert!(b.try_reserve(0.3).is_some());
    }

    #[test]
    fn comparisons_limit_counts_in_flight() {
        let mut b = Budget::new(Some(10), None, 8, 0.0);
        assert!(b.try_reserve(0.0).is_some());
        assert!(b.try_reserve(0.0).is_some());
        assert!(b.try_reserve(0.0).is_none());
    }
}

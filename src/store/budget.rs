//! Budget: comparisons and USD. Before a query is sent its worst-case cost is reserved; when the
//! reply arrives the reservation is settled on the real cost. Spend + reservations never exceed
//! `max_usd`, so the budget holds with many requests in flight (docs/live.md, "Budget").
//!
//! A [`Reservation`] can be settled once only: it is neither `Clone` nor `Copy`, its amount is
//! private, and [`Budget::settle`] takes it by value.

/// Budget state (USD, comparisons). Read through its methods; changed only by reserving and
/// settling.
#[derive(Debug, Default)]
#[cfg_attr(test, derive(Clone))]
pub struct Budget {
    max_comparisons: Option<u64>,
    max_usd: Option<f64>,
    comparisons: u64,
    in_flight: u64,
    spent_usd: f64,
    reserved_usd: f64,
}

/// A reservation for one query: its worst-case cost, USD. Settle it exactly once with
/// [`Budget::settle`] (or [`Budget::settle_at_worst`]).
#[derive(Debug, PartialEq)]
#[must_use = "a reservation holds budget until it is settled"]
pub struct Reservation {
    usd: f64,
}

impl Reservation {
    /// The reserved worst-case cost, USD.
    pub fn usd(&self) -> f64 {
        self.usd
    }
}

impl Budget {
    /// A budget with the given limits and what was already spent (on resume): `comparisons`
    /// verdicts stored, `spent_usd` booked.
    pub fn new(max_comparisons: Option<u64>, max_usd: Option<f64>, comparisons: u64, spent_usd: f64) -> Self {
        Self { max_comparisons, max_usd, comparisons, in_flight: 0, spent_usd, reserved_usd: 0.0 }
    }

    /// Maximum number of stored verdicts (valid or invalid), if any.
    pub fn max_comparisons(&self) -> Option<u64> {
        self.max_comparisons
    }

    /// Maximum spend in USD, if any.
    pub fn max_usd(&self) -> Option<f64> {
        self.max_usd
    }

    /// Verdicts stored so far.
    pub fn comparisons(&self) -> u64 {
        self.comparisons
    }

    /// Queries reserved and not yet settled.
    pub fn in_flight(&self) -> u64 {
        self.in_flight
    }

    /// Settled spend, USD.
    pub fn spent_usd(&self) -> f64 {
        self.spent_usd
    }

    /// Reserved worst-case spend of the queries in flight, USD.
    pub fn reserved_usd(&self) -> f64 {
        self.reserved_usd
    }

    /// Raise (or lower) the comparison limit, e.g. to the next checkpoint of a simulated path.
    pub fn set_max_comparisons(&mut self, max: Option<u64>) {
        self.max_comparisons = max;
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

    /// Settle a reservation at its worst case (a request that may have been billed and whose
    /// reply will never be recorded).
    pub fn settle_at_worst(&mut self, r: Reservation) {
        let usd = r.usd;
        self.settle(r, usd, false);
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
        assert!((b.spent_usd() - 0.3).abs() < 1e-12);
        assert_eq!(b.comparisons(), 3);
        let r = b.try_reserve(0.3).expect("0.3 + 0.3 ≤ 1.0");
        b.settle_at_worst(r);
        assert!((b.spent_usd() - 0.6).abs() < 1e-12);
        assert_eq!((b.comparisons(), b.in_flight()), (3, 0));
    }

    #[test]
    fn comparisons_limit_counts_in_flight() {
        let mut b = Budget::new(Some(10), None, 8, 0.0);
        let r1 = b.try_reserve(0.0).expect("9th");
        let _r2 = b.try_reserve(0.0).expect("10th");
        assert!(b.try_reserve(0.0).is_none());
        b.settle(r1, 0.0, false);
        b.set_max_comparisons(Some(12));
        assert_eq!(b.comparisons_left(), 3);
    }
}

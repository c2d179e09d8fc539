//! Budget: comparisons and USD. Before a query is sent its worst-case cost is reserved; when the
//! reply arrives the reservation is settled on the real cost. Spend + reservations never exceed
//! `max_usd`, so the budget holds with many requests in flight (docs/live.md, "Budget").
//!
//! A [`Reservation`] can be settled once only: it is neither `Clone` nor `Copy`, its amount is
//! private, and [`Budget::settle`] takes it by value.

use crate::store::books::{BooksError, Spend, folder_spend};
use std::path::Path;

/// Budget state (USD, comparisons). Read through its methods; changed only by reserving and
/// settling.
///
/// **Overruns.** A reply can cost more than its reservation (a provider that ignores
/// `max_tokens`). The first such reply raises the worst case of every query by the ratio
/// observed ([`Budget::worst_case_factor`]): later reservations are made at the raised worst
/// case, and the reservations still in flight count at it too, so sending stops as soon as the
/// booked spend plus the reservations in flight reach `max_usd`. The total can then pass
/// `max_usd` only by what the replies already in flight at an overrun bill above their
/// reservations (docs/live.md, "Budget").
#[derive(Debug)]
#[cfg_attr(test, derive(Clone))]
pub struct Budget {
    max_comparisons: Option<u64>,
    max_usd: Option<f64>,
    comparisons: u64,
    in_flight: u64,
    spent_usd: f64,
    /// Sum of the judge's worst cases of the queries in flight (before the factor).
    reserved_base_usd: f64,
    /// ≥ 1: what the worst cases are multiplied by after an overrun.
    factor: f64,
    overrun: Overrun,
    /// USD of `max_usd` held back for queries asked after this budget's (a gate's trusted judge).
    held_usd: f64,
}

impl Default for Budget {
    fn default() -> Self {
        Self::new(None, None, 0, 0.0)
    }
}

/// Replies that cost more than their reservation, as the budget saw them.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Overrun {
    /// How many.
    pub replies: u64,
    /// What they cost above their reservations, USD.
    pub excess_usd: f64,
    /// Queries in flight (the overrunning one included) when the first was seen.
    pub in_flight_at_first: u64,
}

/// A reservation for one query: its worst-case cost, USD. Settle it exactly once with
/// [`Budget::settle`] (or [`Budget::settle_at_worst`]).
#[derive(Debug, PartialEq)]
#[must_use = "a reservation holds budget until it is settled"]
pub struct Reservation {
    /// The judge's worst case of the query.
    base: f64,
    /// What was reserved: the worst case times the factor at the time.
    usd: f64,
}

impl Reservation {
    /// The reserved worst-case cost, USD (the judge's worst case times
    /// [`Budget::worst_case_factor`] when it was made).
    pub fn usd(&self) -> f64 {
        self.usd
    }

    /// Whether a query that cost `actual_usd` passed this reservation (an overrun), with the
    /// same tolerance as [`Budget::settle`].
    pub fn exceeded_by(&self, actual_usd: f64) -> bool {
        actual_usd > self.usd * (1.0 + 1e-9) + 1e-12
    }
}

impl Budget {
    /// A budget with the given limits and what was already spent (on resume): `comparisons`
    /// verdicts stored, `spent_usd` booked. A run's USD budget comes from its folder's books
    /// ([`Budget::for_folder`]), so everything the folder holds counts.
    pub fn new(max_comparisons: Option<u64>, max_usd: Option<f64>, comparisons: u64, spent_usd: f64) -> Self {
        Self {
            max_comparisons,
            max_usd,
            comparisons,
            in_flight: 0,
            spent_usd,
            reserved_base_usd: 0.0,
            factor: 1.0,
            overrun: Overrun::default(),
            held_usd: 0.0,
        }
    }

    /// The budget of a run folder `dir`: `max_usd` bounds everything its books hold, whatever
    /// judge, pool or config wrote it, and a gate's trusted judge ([`folder_spend`]);
    /// `comparisons` verdicts of this run's judge are stored. Returns the folder's spend too.
    ///
    /// # Errors
    /// [`BooksError`] naming a book that cannot be read.
    pub fn for_folder(
        dir: &Path,
        max_comparisons: Option<u64>,
        max_usd: Option<f64>,
        comparisons: u64,
    ) -> Result<(Self, Spend), BooksError> {
        let spend = folder_spend(dir)?;
        Ok((Self::new(max_comparisons, max_usd, comparisons, spend.total_usd()), spend))
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

    /// Settled spend, USD (everything the folder had booked when the budget was made, and what
    /// was settled since).
    pub fn spent_usd(&self) -> f64 {
        self.spent_usd
    }

    /// The worst case of the queries in flight, USD, at the current [`Budget::worst_case_factor`].
    pub fn reserved_usd(&self) -> f64 {
        self.reserved_base_usd * self.factor
    }

    /// Start from worst cases raised by `factor` (≥ 1): what the folder's stored replies cost
    /// relative to their queries' worst cases, so a resumed run (and its fingerprint check) does
    /// not reserve at a worst case its provider has already passed (docs/live.md, "Overruns").
    pub fn carry_factor(&mut self, factor: f64) {
        if factor.is_finite() && factor > self.factor {
            self.factor = factor;
        }
    }

    /// What the judge's worst cases are multiplied by: 1 until a reply costs more than its
    /// reservation, then the largest ratio of a reply's cost to its query's worst case.
    pub fn worst_case_factor(&self) -> f64 {
        self.factor
    }

    /// The replies that cost more than their reservations.
    pub fn overrun(&self) -> Overrun {
        self.overrun
    }

    /// Raise (or lower) the comparison limit, e.g. to the next checkpoint of a simulated path.
    pub fn set_max_comparisons(&mut self, max: Option<u64>) {
        self.max_comparisons = max;
    }

    /// Raise (or lower) the USD limit, e.g. to the next spend checkpoint of a simulated path.
    pub fn set_max_usd(&mut self, max: Option<f64>) {
        self.max_usd = max;
    }

    /// Hold `usd` (≥ 0) of `max_usd` back from this budget's queries, for queries asked after
    /// them on the same books (a run's gate: its trusted judge's worst case, docs/live.md,
    /// "Budget"); without `max_usd` nothing is held.
    pub fn hold(&mut self, usd: f64) {
        if self.max_usd.is_some() && usd.is_finite() && usd > 0.0 {
            self.held_usd = usd;
        }
    }

    /// USD held back by [`Budget::hold`].
    pub fn held_usd(&self) -> f64 {
        self.held_usd
    }

    /// Comparisons that may still be reserved.
    pub fn comparisons_left(&self) -> u64 {
        self.max_comparisons.map_or(u64::MAX, |m| m.saturating_sub(self.comparisons + self.in_flight))
    }

    /// Reserve one query whose worst-case cost the judge puts at `worst_usd` (reserved times
    /// [`Budget::worst_case_factor`]); `None` if it would pass a limit.
    pub fn try_reserve(&mut self, worst_usd: f64) -> Option<Reservation> {
        if self.comparisons_left() == 0 {
            return None;
        }
        let usd = worst_usd * self.factor;
        // A free query takes nothing from what is held.
        let held = if usd > 0.0 { self.held_usd } else { 0.0 };
        if let Some(max) = self.max_usd
            && self.spent_usd + self.reserved_usd() + usd > max - held + 1e-12
        {
            return None;
        }
        self.in_flight += 1;
        self.reserved_base_usd += worst_usd;
        Some(Reservation { base: worst_usd, usd })
    }

    /// Settle a reservation on the real cost; `stored` says whether a verdict was recorded. A
    /// cost above the reservation is an overrun: it raises the worst-case factor to the ratio
    /// observed.
    pub fn settle(&mut self, r: Reservation, actual_usd: f64, stored: bool) {
        if r.exceeded_by(actual_usd) {
            if self.overrun.replies == 0 {
                self.overrun.in_flight_at_first = self.in_flight;
            }
            self.overrun.replies += 1;
            self.overrun.excess_usd += actual_usd - r.usd;
            if r.base > 0.0 {
                self.factor = self.factor.max(actual_usd / r.base);
            }
        }
        self.in_flight -= 1;
        self.reserved_base_usd = (self.reserved_base_usd - r.base).max(0.0);
        if self.in_flight == 0 {
            self.reserved_base_usd = 0.0;
        }
        self.spent_usd += actual_usd;
        if stored {
            self.comparisons += 1;
        }
    }

    /// The first overrun was seen with `sent` requests sent and not settled (it included): its
    /// count in [`Overrun::in_flight_at_first`] becomes that, when smaller (the reservations it
    /// counted may include queries written ahead and taken back unsent).
    pub fn first_overrun_seen_with(&mut self, sent: u64) {
        self.overrun.in_flight_at_first = self.overrun.in_flight_at_first.min(sent);
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

    /// A hold (a run's gate) is kept out of the reservations: with $0.4 of $1.0 held, two
    /// queries of $0.3 fit, not three; without max_usd nothing is held.
    #[test]
    fn a_hold_is_kept_out_of_the_reservations() {
        let mut b = Budget::new(None, Some(1.0), 0, 0.0);
        b.hold(0.4);
        let rs: Vec<_> = (0..8).filter_map(|_| b.try_reserve(0.3)).collect();
        assert_eq!((rs.len(), b.held_usd()), (2, 0.4));
        // A free query takes nothing from the hold, even one that passes max_usd.
        let mut b = Budget::new(None, Some(0.0), 0, 0.0);
        b.hold(0.4);
        assert!(b.try_reserve(0.0).is_some() && b.try_reserve(0.1).is_none());
        let mut b = Budget::new(None, None, 0, 0.0);
        b.hold(0.4);
        assert_eq!(b.held_usd(), 0.0);
        assert_eq!((0..8).filter_map(|_| b.try_reserve(0.3)).count(), 8);
    }

    /// Replies billed at 5× their reservation (a provider ignoring max_tokens): the first raises
    /// the factor to 5, the reservations in flight count at it, and later ones are made at it.
    #[test]
    fn an_overrun_raises_the_worst_case_of_every_later_reservation() {
        let mut b = Budget::new(None, Some(10.0), 0, 0.0);
        let rs: Vec<_> = (0..4).map(|_| b.try_reserve(0.5).unwrap()).collect();
        assert_eq!(b.reserved_usd(), 2.0);
        let mut rs = rs.into_iter();
        b.settle(rs.next().unwrap(), 2.5, true);
        assert_eq!(b.worst_case_factor(), 5.0);
        assert_eq!(b.overrun(), Overrun { replies: 1, excess_usd: 2.0, in_flight_at_first: 4 });
        assert_eq!(b.reserved_usd(), 7.5, "the 3 in flight count at 5 × 0.5");
        // 2.5 spent + 7.5 in flight: nothing more fits under 10.
        assert!(b.try_reserve(0.5).is_none());
        for r in rs {
            b.settle(r, 2.5, true);
        }
        assert_eq!((b.spent_usd(), b.overrun().replies), (10.0, 4));
        assert!((b.overrun().excess_usd - 8.0).abs() < 1e-12);
        let mut b = Budget::new(None, Some(10.0), 0, 0.0);
        let r = b.try_reserve(0.5).unwrap();
        b.settle(r, 2.5, true);
        let r = b.try_reserve(0.5).unwrap();
        assert_eq!(r.usd(), 2.5, "reserved at the observed cost");
        b.settle(r, 2.5, true);
        assert_eq!(b.overrun().replies, 1, "covered: not an overrun");
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

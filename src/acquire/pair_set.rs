//! A set of ordered item pairs (a, b) of a pool of N items, keyed a·N + b (u64): memory grows
//! with the pairs held, not with N² (a bit per ordered pair is 1.25 GB at N = 100,000).

use std::collections::HashSet;
use std::hash::{BuildHasherDefault, Hasher};

/// A multiplicative hash of one u64 key (Fibonacci hashing, high bits folded down): the keys
/// a·N + b are not adversarial, so SipHash's resistance is not needed.
#[derive(Default)]
pub(crate) struct PairHasher(u64);

impl Hasher for PairHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u64(&mut self, k: u64) {
        let h = (self.0 ^ k).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        self.0 = h ^ (h >> 32);
    }
}

/// Ordered pairs (a, b), a, b < N.
pub(crate) struct PairSet {
    n: u64,
    set: HashSet<u64, BuildHasherDefault<PairHasher>>,
}

impl PairSet {
    /// An empty set for a pool of `n` items.
    pub(crate) fn new(n: usize) -> Self {
        Self { n: n as u64, set: HashSet::default() }
    }

    /// The pairs of `pairs` with both items < `n`.
    pub(crate) fn of<'p>(n: usize, pairs: impl IntoIterator<Item = &'p (usize, usize)>) -> Self {
        let mut s = Self::new(n);
        for &(a, b) in pairs {
            if a < n && b < n {
                s.insert(a, b);
            }
        }
        s
    }

    fn key(&self, a: usize, b: usize) -> u64 {
        a as u64 * self.n + b as u64
    }

    /// Add (a, b).
    pub(crate) fn insert(&mut self, a: usize, b: usize) {
        let k = self.key(a, b);
        self.set.insert(k);
    }

    /// Whether (a, b) is held.
    pub(crate) fn contains(&self, a: usize, b: usize) -> bool {
        self.set.contains(&self.key(a, b))
    }
}

#[cfg(test)]
mod tests {
    use super::PairSet;

    #[test]
    fn holds_ordered_pairs_by_a_times_n_plus_b() {
        let mut s = PairSet::of(100_000, &[(3, 99_999), (99_999, 3)]);
        s.insert(0, 1);
        assert!(s.contains(3, 99_999) && s.contains(99_999, 3) && s.contains(0, 1));
        assert!(!s.contains(1, 0) && !s.contains(3, 99_998) && !s.contains(4, 0));
    }
}

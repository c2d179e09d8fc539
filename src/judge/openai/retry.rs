//! The only retry policy (backon, the maintained successor of the unmaintained `backoff` crate,
//! RUSTSEC-2025-0012). async-openai's own retry layer is switched off (src/judge/openai.rs), so
//! retries never stack.
//!
//! Delay before retry n (n = 1, 2, …): min(max_delay, min_delay · 2ⁿ⁻¹) with full jitter, unless
//! the error carries a server-requested delay (`Retry-After`), which wins, capped at
//! `max_retry_after`. Only errors that say they are retryable are retried, at most
//! `max_retries` times.

use backon::{ExponentialBuilder, Retryable};
use std::future::Future;
use std::time::Duration;

/// What the retry policy needs to know about an error.
pub trait Classify {
    /// Whether trying again may help (429, 5xx, timeouts, connection errors).
    fn retryable(&self) -> bool;
    /// The delay the server asked for (`Retry-After`), if any.
    fn retry_after(&self) -> Option<Duration>;
}

/// Retry settings (seconds in the config, [`Duration`] here).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryPolicy {
    /// Retries after the first attempt (0 = no retry).
    pub max_retries: usize,
    /// First backoff delay.
    pub min_delay: Duration,
    /// Largest backoff delay.
    pub max_delay: Duration,
    /// Largest server-requested delay that is honoured (longer requests are cut to this).
    pub max_retry_after: Duration,
    /// Full jitter on the exponential delays.
    pub jitter: bool,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 4,
            min_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(30),
            max_retry_after: Duration::from_secs(120),
            jitter: true,
        }
    }
}

/// Run `op` under the policy. `on_retry(error, delay)` is called before each sleep.
///
/// # Errors
/// The last error: a non-retryable one at once, or the last retryable one when the retries are
/// used up.
pub async fn retry<T, E, F, Fut>(policy: &RetryPolicy, op: F, mut on_retry: impl FnMut(&E, Duration)) -> Result<T, E>
where
    E: Classify,
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    let mut b = ExponentialBuilder::default()
        .with_min_delay(policy.min_delay)
        .with_max_delay(policy.max_delay.max(policy.min_delay))
        .with_max_times(policy.max_retries);
    if policy.jitter {
        b = b.with_jitter();
    }
    let cap = policy.max_retry_after;
    op.retry(b)
        .when(|e: &E| e.retryable())
        .adjust(move |e: &E, d| d.map(|d| e.retry_after().map_or(d, |ra| ra.min(cap))))
        .notify(|e: &E, d| on_retry(e, d))
        .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Instant;

    #[derive(Debug)]
    struct E {
        retryable: bool,
        after: Option<Duration>,
    }
    impl Classify for E {
        fn retryable(&self) -> bool {
            self.retryable
        }
        fn retry_after(&self) -> Option<Duration> {
            self.after
        }
    }

    fn quick(n: usize) -> RetryPolicy {
        RetryPolicy {
            max_retries: n,
            min_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(4),
            max_retry_after: Duration::from_millis(300),
            jitter: true,
        }
    }

    #[tokio::test]
    async fn retries_until_success_and_stops_at_the_limit() {
        let calls = AtomicUsize::new(0);
        let mut notes = 0;
        let r = retry(
            &quick(3),
            || async {
                let n = calls.fetch_add(1, Ordering::SeqCst);
                if n < 2 { Err(E { retryable: true, after: None }) } else { Ok(n) }
            },
            |_, _| notes += 1,
        )
        .await;
        assert_eq!(r.unwrap(), 2);
        assert_eq!(calls.load(Ordering::SeqCst), 3);
        assert_eq!(notes, 2);
        let calls = AtomicUsize::new(0);
        let r: Result<(), E> = retry(
            &quick(3),
            || async {
                calls.fetch_add(1, Ordering::SeqCst);
                Err(E { retryable: true, after: None })
            },
            |_, _| {},
        )
        .await;
        assert!(r.is_err());
        assert_eq!(calls.load(Ordering::SeqCst), 4, "1 attempt + 3 retries");
    }

    #[tokio::test]
    async fn non_retryable_is_returned_at_once() {
        let calls = AtomicUsize::new(0);
        let r: Result<(), E> = retry(
            &quick(5),
            || async {
                calls.fetch_add(1, Ordering::SeqCst);
                Err(E { retryable: false, after: None })
            },
            |_, _| {},
        )
        .await;
        assert!(r.is_err());
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn retry_after_wins_and_is_capped() {
        let calls = AtomicUsize::new(0);
        let mut delays = Vec::new();
        let t0 = Instant::now();
        let r = retry(
            &quick(2),
            || async {
                match calls.fetch_add(1, Ordering::SeqCst) {
                    0 => Err(E { retryable: true, after: Some(Duration::from_millis(120)) }),
                    1 => Err(E { retryable: true, after: Some(Duration::from_secs(3600)) }),
                    n => Ok(n),
                }
            },
            |_, d| delays.push(d),
        )
        .await;
        assert_eq!(r.unwrap(), 2);
        assert_eq!(delays, vec![Duration::from_millis(120), Duration::from_millis(300)]);
        assert!(t0.elapsed() >= Duration::from_millis(420), "{:?}", t0.elapsed());
    }
}

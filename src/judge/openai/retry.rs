//! The only retry policy (backon, the maintained successor of the unmaintained `backoff` crate,
//! RUSTSEC-2025-0012). async-openai's own retry layer is switched off (src/judge/openai.rs), so
//! retries never stack.
//!
//! Delay before retry n (n = 1, 2, …): min(max_delay, min_delay · 2ⁿ⁻¹) with full jitter, unless
//! the error carries a server-requested delay (`Retry-After`), which wins, capped at
//! `max_retry_after`. Only errors that say they are retryable are retried, at most
//! `max_retries` times.
//!
//! `Retry-After` is read in both forms RFC 9110 (§10.2.3) allows: seconds, or an HTTP-date
//! ([`retry_after_delay`], the only httpdate import).

use backon::{ExponentialBuilder, Retryable};
use std::future::Future;
use std::time::{Duration, SystemTime};

/// Longest server-requested delay read from a header at all (one day); the configured cap
/// (`retry_after_max_s`) is applied by [`retry`].
const MAX_HEADER_DELAY: Duration = Duration::from_secs(86_400);

/// The delay a `Retry-After` value asks for: delay-seconds (a fraction is accepted, as some
/// servers send one) or an HTTP-date. A date is measured from the response's `Date` field when
/// it has one (the server's own clock, so a skewed local clock does not shift the wait), else
/// from `now`. At most one day. `None` ("no hint": the backoff applies) when the value is
/// neither form, or asks for no wait at all: zero, negative, or a date not in the future. A
/// server under a rate limit that says "retry now" would otherwise get every retry of every
/// request in flight at once.
pub fn retry_after_delay(value: &str, date: Option<&str>, now: SystemTime) -> Option<Duration> {
    let v = value.trim();
    let wait = if let Ok(secs) = v.parse::<f64>() {
        // Capped before the conversion: a Duration holds at most ~1.8e19 s.
        (secs.is_finite() && secs > 0.0).then(|| Duration::from_secs_f64(secs.min(MAX_HEADER_DELAY.as_secs_f64())))?
    } else {
        let until = httpdate::parse_http_date(v).ok()?;
        let from = date.and_then(|d| httpdate::parse_http_date(d.trim()).ok()).unwrap_or(now);
        until.duration_since(from).ok()?
    };
    (!wait.is_zero()).then(|| wait.min(MAX_HEADER_DELAY))
}

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

/// "Send nothing more" for every call of one judge (a first Ctrl-C): set once, never cleared.
/// A retry waiting on its backoff or `Retry-After` wakes at once when it is set. Clones share
/// the flag.
#[derive(Debug, Default, Clone)]
pub struct StopSending(std::sync::Arc<StopInner>);

#[derive(Debug, Default)]
struct StopInner {
    set: std::sync::atomic::AtomicBool,
    changed: tokio::sync::Notify,
}

impl StopSending {
    /// Stop sending from now on.
    pub fn stop(&self) {
        self.0.set.store(true, std::sync::atomic::Ordering::SeqCst);
        self.0.changed.notify_waiters();
    }

    /// Whether sending has been stopped.
    pub fn stopped(&self) -> bool {
        self.0.set.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Sleep `d`, or less when sending is stopped meanwhile.
    pub async fn sleep(self, d: Duration) {
        let woken = self.0.changed.notified();
        if self.stopped() {
            return;
        }
        tokio::select! {
            () = tokio::time::sleep(d) => {}
            () = woken => {}
        }
    }
}

/// Run `op` under the policy. `on_retry(error, delay)` is called before each sleep; a sleep ends
/// early when `stop` is set (the next attempt then decides not to send).
///
/// # Errors
/// The last error: a non-retryable one at once, or the last retryable one when the retries are
/// used up.
pub async fn retry<T, E, F, Fut>(
    policy: &RetryPolicy,
    stop: &StopSending,
    op: F,
    mut on_retry: impl FnMut(&E, Duration),
) -> Result<T, E>
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
    let stop = stop.clone();
    op.retry(b)
        .sleep(move |d| stop.clone().sleep(d))
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
            &StopSending::default(),
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
            &StopSending::default(),
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
            &StopSending::default(),
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

    #[test]
    fn retry_after_reads_seconds_and_http_dates() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_445_412_480); // Wed, 21 Oct 2015 07:28:00 GMT
        let d = |v: &str, date: Option<&str>| retry_after_delay(v, date, now);
        assert_eq!(d("2", None), Some(Duration::from_secs(2)));
        assert_eq!(d(" 1.5 ", None), Some(Duration::from_millis(1500)));
        assert_eq!(d("-1", None), None);
        assert_eq!(d("0", None), None, "zero is no hint: the backoff applies");
        assert_eq!(d("0.0", None), None);
        assert_eq!(d("999999999", None), Some(Duration::from_secs(86_400)), "at most a day");
        // Beyond what a Duration holds (~1.8e19 s): still a day, not a panic.
        assert_eq!(d("99999999999999999999999", None), Some(Duration::from_secs(86_400)));
        assert_eq!(d("1e300", None), Some(Duration::from_secs(86_400)));
        // The three date forms of RFC 9110, 3 s after `now`.
        for v in ["Wed, 21 Oct 2015 07:28:03 GMT", "Wednesday, 21-Oct-15 07:28:03 GMT", "Wed Oct 21 07:28:03 2015"] {
            assert_eq!(d(v, None), Some(Duration::from_secs(3)), "{v}");
        }
        // Measured from the server's Date when there is one: a local clock 100 s fast does not
        // turn the wait into nothing.
        assert_eq!(d("Wed, 21 Oct 2015 07:28:03 GMT", Some("Wed, 21 Oct 2015 07:29:40 GMT")), None);
        assert_eq!(
            d("Wed, 21 Oct 2015 07:29:43 GMT", Some("Wed, 21 Oct 2015 07:29:40 GMT")),
            Some(Duration::from_secs(3))
        );
        assert_eq!(d("Wed, 21 Oct 2015 07:29:43 GMT", Some("not a date")), Some(Duration::from_secs(103)));
        assert_eq!(d("Wed, 21 Oct 2015 07:27:00 GMT", None), None, "a past date: no hint");
        assert_eq!(d("Wed, 21 Oct 2015 07:28:00 GMT", None), None, "now: no hint");
        assert_eq!(d("soon", None), None);
        assert_eq!(d("", None), None);
    }

    #[tokio::test]
    async fn retry_after_wins_and_is_capped() {
        let calls = AtomicUsize::new(0);
        let mut delays = Vec::new();
        let t0 = Instant::now();
        let r = retry(
            &quick(2),
            &StopSending::default(),
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

    #[tokio::test]
    async fn stopping_wakes_a_retry_waiting_on_retry_after() {
        let stop = StopSending::default();
        let calls = AtomicUsize::new(0);
        let s2 = stop.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            s2.stop();
        });
        let t0 = Instant::now();
        let policy = RetryPolicy { max_retry_after: Duration::from_secs(60), ..quick(3) };
        let r: Result<(), E> = retry(
            &policy,
            &stop,
            || async {
                calls.fetch_add(1, Ordering::SeqCst);
                // The op itself sends nothing once stopped, as the judge's call does.
                Err(E { retryable: !stop.stopped(), after: Some(Duration::from_secs(30)) })
            },
            |_, _| {},
        )
        .await;
        assert!(r.is_err());
        assert_eq!(calls.load(Ordering::SeqCst), 2, "the first attempt, then one that finds sending stopped");
        assert!(t0.elapsed() < Duration::from_secs(5), "woke early: {:?}", t0.elapsed());
    }
}

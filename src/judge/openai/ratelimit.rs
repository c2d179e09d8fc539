//! The only governor import: client-side rate limits in requests and tokens per minute.
//!
//! Requests: GCRA with a burst of 1, i.e. one request every 60/rpm seconds (smooth pacing; a
//! burst of `rpm` at start would trip providers that count per second). Tokens: GCRA with a
//! burst of one minute's worth; each request takes its estimated tokens (prompt estimate +
//! max_tokens). A request that needs more tokens than a minute allows can never be sent and
//! is an error. Waits get a small jitter so that many queued requests do not wake together.

use governor::{DefaultDirectRateLimiter, Jitter, Quota, RateLimiter};
use std::num::NonZeroU32;
use std::time::Duration;

/// Errors of the rate limiter.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RateLimitError {
    /// One request needs more tokens than `tokens_per_minute` allows.
    #[error(
        "one request needs about {needed} tokens but tokens_per_minute is {per_minute}; raise the limit or shorten the prompt"
    )]
    TooManyTokens {
        /// Tokens the request needs (estimate).
        needed: u64,
        /// The configured limit.
        per_minute: u32,
    },
}

/// Request and token limits (either may be absent).
pub struct RateLimits {
    requests: Option<DefaultDirectRateLimiter>,
    tokens: Option<(DefaultDirectRateLimiter, u32)>,
    jitter: Duration,
}

impl std::fmt::Debug for RateLimits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RateLimits")
            .field("requests", &self.requests.is_some())
            .field("tokens_per_minute", &self.tokens.as_ref().map(|t| t.1))
            .finish()
    }
}

impl RateLimits {
    /// Limits of `requests_per_minute` and `tokens_per_minute` (`None` or 0 = unlimited).
    pub fn new(requests_per_minute: Option<u32>, tokens_per_minute: Option<u32>) -> Self {
        let one = NonZeroU32::new(1).expect("1 > 0");
        let requests = requests_per_minute
            .and_then(NonZeroU32::new)
            .map(|n| RateLimiter::direct(Quota::per_minute(n).allow_burst(one)));
        let tokens =
            tokens_per_minute.and_then(NonZeroU32::new).map(|n| (RateLimiter::direct(Quota::per_minute(n)), n.get()));
        let jitter = requests_per_minute
            .filter(|n| *n > 0)
            .map_or(Duration::from_millis(20), |n| Duration::from_secs_f64((6.0 / n as f64).min(0.2)));
        Self { requests, tokens, jitter }
    }

    /// Whether any limit is set.
    pub fn is_limited(&self) -> bool {
        self.requests.is_some() || self.tokens.is_some()
    }

    /// Check that a request of `tokens` can ever pass the token limit.
    ///
    /// # Errors
    /// [`RateLimitError::TooManyTokens`].
    pub fn check_fits(&self, tokens: u64) -> Result<(), RateLimitError> {
        match &self.tokens {
            Some((_, per_minute)) if tokens > u64::from(*per_minute) => {
                Err(RateLimitError::TooManyTokens { needed: tokens, per_minute: *per_minute })
            }
            _ => Ok(()),
        }
    }

    /// Wait until one request of `tokens` (estimate) may be sent. Returns the time waited.
    ///
    /// # Errors
    /// [`RateLimitError::TooManyTokens`] when `tokens` exceeds a minute's allowance.
    pub async fn acquire(&self, tokens: u64) -> Result<Duration, RateLimitError> {
        self.check_fits(tokens)?;
        let t0 = std::time::Instant::now();
        if let Some(r) = &self.requests {
            r.until_ready_with_jitter(Jitter::up_to(self.jitter)).await;
        }
        if let Some((t, per_minute)) = &self.tokens {
            let n = NonZeroU32::new(tokens.clamp(1, u64::from(*per_minute)) as u32).expect("≥ 1");
            t.until_n_ready_with_jitter(n, Jitter::up_to(self.jitter))
                .await
                .map_err(|_| RateLimitError::TooManyTokens { needed: tokens, per_minute: *per_minute })?;
        }
        Ok(t0.elapsed())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[tokio::test]
    async fn requests_are_paced() {
        // 1200 per minute = one every 50 ms; 5 requests need ≥ 4 intervals = 200 ms.
        let rl = RateLimits::new(Some(1200), None);
        let t0 = Instant::now();
        for _ in 0..5 {
            rl.acquire(10).await.unwrap();
        }
        let dt = t0.elapsed();
        assert!(dt >= Duration::from_millis(195), "{dt:?}");
        assert!(dt < Duration::from_secs(2), "{dt:?}");
    }

    #[tokio::test]
    async fn tokens_are_limited_and_oversized_requests_rejected() {
        // 60_000 tokens per minute = 1000 per second; burst 60_000.
        let rl = RateLimits::new(None, Some(60_000));
        let t0 = Instant::now();
        rl.acquire(60_000).await.unwrap();
        rl.acquire(200).await.unwrap(); // must wait ≈ 200 ms for 200 tokens to refill
        assert!(t0.elapsed() >= Duration::from_millis(190), "{:?}", t0.elapsed());
        assert_eq!(
            rl.acquire(60_001).await.unwrap_err(),
            RateLimitError::TooManyTokens { needed: 60_001, per_minute: 60_000 }
        );
        let free = RateLimits::new(None, Some(0));
        assert!(!free.is_limited());
        assert!(free.acquire(1 << 40).await.is_ok());
    }
}

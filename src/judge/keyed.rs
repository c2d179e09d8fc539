//! A judge whose block sits elsewhere in the config than `judge:` (a list of one judge,
//! `judges[0]`, which runs as the single judge): its warnings and errors name its settings as
//! the file writes them (`judges[0].openai.base_url`, not `judge.openai.base_url`). Everything
//! else is the inner judge's, so the run is the single-judge run bit for bit.

use super::{BatchApi, BoxFuture, Judge, JudgeError, JudgeInfo, JudgeStats, RoundQuery, WorstCaseParts};
use crate::domain::pool::Pool;
use crate::domain::verdict::JudgeReply;
use std::sync::Arc;

/// The judge kinds whose settings a message may name (`judge.openai.…`, `judge.replay: …`).
const KINDS: [&str; 4] = ["openai", "mock", "synthetic", "replay"];

/// `text` with each setting of the single judge's block (`judge.openai.model`, `judge.replay:`)
/// named under `key` instead (`judges[0].openai.model`, `judges[1].replay:`).
pub fn rekey(text: &str, key: &str) -> String {
    if key == "judge" {
        return text.to_owned();
    }
    KINDS.iter().fold(text.to_owned(), |t, kind| t.replace(&format!("judge.{kind}"), &format!("{key}.{kind}")))
}

/// `e` with the settings its text names rekeyed ([`rekey`]); its kind and cost unchanged.
pub fn rekey_error(e: JudgeError, key: &str) -> JudgeError {
    let r = |m: String| rekey(&m, key);
    match e {
        JudgeError::Request { status, message, retryable, cost_usd } => {
            JudgeError::Request { status, message: r(message), retryable, cost_usd }
        }
        JudgeError::Unjudgeable { a, b, message } => JudgeError::Unjudgeable { a, b, message: r(message) },
        JudgeError::Unavailable { message } => JudgeError::Unavailable { message: r(message) },
        JudgeError::Fatal { message } => JudgeError::Fatal { message: r(message) },
        JudgeError::NotSent { cost_usd } => JudgeError::NotSent { cost_usd },
        JudgeError::PossiblyBilled { message, cost_usd } => {
            JudgeError::PossiblyBilled { message: r(message), cost_usd }
        }
        JudgeError::NotRun { message } => JudgeError::NotRun { message: r(message) },
        JudgeError::Pending { batch, message } => JudgeError::Pending { batch, message: r(message) },
        JudgeError::Endpoint { setting, message, cost_usd } => JudgeError::Endpoint {
            setting: setting.strip_prefix("judge.").map_or(setting.clone(), |rest| format!("{key}.{rest}")),
            message: r(message),
            cost_usd,
        },
    }
}

/// The inner judge, its warnings and errors naming its settings under `key`.
pub struct Keyed {
    key: String,
    inner: Arc<dyn Judge>,
}

impl Keyed {
    /// `inner` under `key` (`judges[0]`); under `judge` it is `inner` itself.
    pub fn wrap(inner: Arc<dyn Judge>, key: &str) -> Arc<dyn Judge> {
        if key == "judge" { inner } else { Arc::new(Self { key: key.to_owned(), inner }) }
    }
}

impl JudgeInfo for Keyed {
    fn describe(&self) -> String {
        self.inner.describe()
    }
    fn record_judge(&self, pool: &Pool, a: usize, b: usize) -> String {
        self.inner.record_judge(pool, a, b)
    }
    fn record_settings(&self, pool: &Pool, a: usize, b: usize) -> String {
        self.inner.record_settings(pool, a, b)
    }
    fn settings_source(&self) -> String {
        self.inner.settings_source()
    }
    fn cache_key(&self, pool: &Pool, a: usize, b: usize) -> String {
        self.inner.cache_key(pool, a, b)
    }
    fn worst_case_usd(&self, pool: &Pool, a: usize, b: usize) -> f64 {
        self.inner.worst_case_usd(pool, a, b)
    }
    fn expected_usd(&self, pool: &Pool, a: usize, b: usize) -> f64 {
        self.inner.expected_usd(pool, a, b)
    }
    fn worst_case_parts(&self, pool: &Pool) -> Option<WorstCaseParts> {
        self.inner.worst_case_parts(pool)
    }
    fn has_price(&self) -> bool {
        self.inner.has_price()
    }
    fn score_margin(&self, pool: &Pool, a: usize, b: usize) -> Option<f64> {
        self.inner.score_margin(pool, a, b)
    }
    fn requests_per_minute(&self) -> Option<u32> {
        self.inner.requests_per_minute()
    }
    fn invalid_rate_limit(&self) -> Option<(f64, u64)> {
        self.inner.invalid_rate_limit()
    }
    fn replay(&self) -> Option<super::replay::ReplayInfo> {
        self.inner.replay()
    }
    fn answerable(&self, pool: &Pool) -> Option<Vec<(usize, usize)>> {
        self.inner.answerable(pool)
    }
    fn preview(&self, pool: &Pool, a: usize, b: usize) -> Option<String> {
        self.inner.preview(pool, a, b)
    }
}

impl Judge for Keyed {
    fn preflight(&self) -> BoxFuture<'_, Result<Vec<String>, JudgeError>> {
        Box::pin(async move {
            match self.inner.preflight().await {
                Ok(w) => Ok(w.iter().map(|w| rekey(w, &self.key)).collect()),
                Err(e) => Err(rekey_error(e, &self.key)),
            }
        })
    }
    fn stats(&self) -> Option<JudgeStats> {
        self.inner.stats()
    }
    fn stop_sending(&self) {
        self.inner.stop_sending();
    }
    fn reservations_raised(&self) {
        self.inner.reservations_raised();
    }
    fn sending_stopped(&self) -> bool {
        self.inner.sending_stopped()
    }
    fn lane_limits(&self) -> Vec<Option<usize>> {
        self.inner.lane_limits()
    }
    fn lane(&self, pool: &Pool) -> usize {
        self.inner.lane(pool)
    }
    fn batch_api(&self) -> Option<&dyn BatchApi> {
        self.inner.batch_api()
    }
    fn batched(&self) -> bool {
        self.inner.batched()
    }
    fn judge_round<'a>(&'a self, queries: &'a [RoundQuery]) -> BoxFuture<'a, Vec<Result<JudgeReply, JudgeError>>> {
        Box::pin(async move {
            let out = self.inner.judge_round(queries).await;
            out.into_iter().map(|r| r.map_err(|e| rekey_error(e, &self.key))).collect()
        })
    }
    fn judge<'a>(&'a self, pool: &'a Pool, a: usize, b: usize) -> BoxFuture<'a, Result<JudgeReply, JudgeError>> {
        Box::pin(async move { self.inner.judge(pool, a, b).await.map_err(|e| rekey_error(e, &self.key)) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rekey_names_the_block_where_the_file_has_it() {
        assert_eq!(
            rekey("point judge.openai.base_url at the server; judge.replay: no verdict", "judges[0]"),
            "point judges[0].openai.base_url at the server; judges[0].replay: no verdict"
        );
        assert_eq!(rekey("the judge.openai.model", "judge"), "the judge.openai.model");
        // Rekeyed once, said once: a second pass changes nothing.
        let once = rekey("judge.openai.model", "judges[0]");
        assert_eq!(rekey(&once, "judges[0]"), once);
        let e = JudgeError::Endpoint {
            setting: "judge.openai.base_url".into(),
            message: "set judge.openai.base_url".into(),
            cost_usd: 0.25,
        };
        match rekey_error(e, "judges[0]") {
            JudgeError::Endpoint { setting, message, cost_usd } => {
                assert_eq!(setting, "judges[0].openai.base_url");
                assert_eq!(message, "set judges[0].openai.base_url");
                assert_eq!(cost_usd, 0.25);
            }
            other => panic!("{other:?}"),
        }
        let e = rekey_error(JudgeError::Fatal { message: "judge.replay: missing".into() }, "judges[0]");
        assert_eq!(e.to_string(), "judges[0].replay: missing");
    }
}

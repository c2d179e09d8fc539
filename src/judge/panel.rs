//! A judge panel as one judge for the dispatcher (docs/model.md §8): each member keeps its own
//! client (price, concurrency, rate limit); its cache keys begin with its name, so no member's
//! verdict is ever taken for another's, and its records carry its name.
//!
//! The dispatcher hands every query with its pool. The panel gives each member a pool of its own
//! ([`PanelJudge::pool`], the run's pool, shared by reference), and a query goes to the member
//! whose pool it carries: the route is part of the query, not a side table that could drift.

use super::{BoxFuture, Judge, JudgeError, JudgeInfo, JudgeStats, WorstCaseParts};
use crate::domain::pool::Pool;
use crate::domain::verdict::JudgeReply;
use std::sync::Arc;

/// One member: its name and its judge (a [`Judge`], or only its [`JudgeInfo`] for a dry run),
/// with the name in front of every cache key.
pub struct Named<J: ?Sized = dyn Judge> {
    /// The member's name (`judges[i].name`).
    pub name: String,
    /// Its judge.
    pub judge: Arc<J>,
}

impl<J: JudgeInfo + ?Sized> JudgeInfo for Named<J> {
    fn describe(&self) -> String {
        format!("{}: {}", self.name, self.judge.describe())
    }
    fn cache_key(&self, pool: &Pool, a: usize, b: usize) -> String {
        format!("{}:{}", self.name, self.judge.cache_key(pool, a, b))
    }
    fn record_judge(&self, _pool: &Pool, _a: usize, _b: usize) -> String {
        self.name.clone()
    }
    fn settings_source(&self) -> String {
        self.judge.settings_source()
    }
    fn worst_case_usd(&self, pool: &Pool, a: usize, b: usize) -> f64 {
        self.judge.worst_case_usd(pool, a, b)
    }
    fn expected_usd(&self, pool: &Pool, a: usize, b: usize) -> f64 {
        self.judge.expected_usd(pool, a, b)
    }
    fn worst_case_parts(&self, pool: &Pool) -> Option<WorstCaseParts> {
        self.judge.worst_case_parts(pool)
    }
    fn has_price(&self) -> bool {
        self.judge.has_price()
    }
    fn requests_per_minute(&self) -> Option<u32> {
        self.judge.requests_per_minute()
    }
    fn answerable(&self, pool: &Pool) -> Option<Vec<(usize, usize)>> {
        self.judge.answerable(pool)
    }
    fn preview(&self, pool: &Pool, a: usize, b: usize) -> Option<String> {
        self.judge.preview(pool, a, b)
    }
}

/// A member alone as a judge (its name in front of every cache key, its name on its records):
/// what a panel's fingerprint check asks (docs/live.md, "Judge fingerprint").
impl Judge for Named {
    fn preflight(&self) -> BoxFuture<'_, Result<Vec<String>, JudgeError>> {
        self.judge.preflight()
    }
    fn stats(&self) -> Option<JudgeStats> {
        self.judge.stats()
    }
    fn stop_sending(&self) {
        self.judge.stop_sending();
    }
    fn reservations_raised(&self) {
        self.judge.reservations_raised();
    }
    fn sending_stopped(&self) -> bool {
        self.judge.sending_stopped()
    }
    fn lane_limits(&self) -> Vec<Option<usize>> {
        self.judge.lane_limits()
    }
    fn judge<'a>(&'a self, pool: &'a Pool, a: usize, b: usize) -> BoxFuture<'a, Result<JudgeReply, JudgeError>> {
        self.judge.judge(pool, a, b)
    }
}

/// The panel: its members and the pool each member's queries carry.
pub struct PanelJudge {
    members: Vec<Arc<Named>>,
    pools: Vec<Arc<Pool>>,
}

impl PanelJudge {
    /// A panel over `pool` of `members` (name, judge), in the order of the config.
    pub fn new(pool: &Pool, members: Vec<(String, Arc<dyn Judge>)>) -> Self {
        let pools = members.iter().map(|_| Arc::new(pool.clone())).collect();
        let members = members.into_iter().map(|(name, judge)| Arc::new(Named { name, judge })).collect();
        Self { members, pools }
    }

    /// The members, in order.
    pub fn members(&self) -> &[Arc<Named>] {
        &self.members
    }

    /// The pool member `j`'s queries carry.
    pub fn pool(&self, j: usize) -> &Arc<Pool> {
        &self.pools[j]
    }

    /// The member whose pool `pool` is (the one a query carrying it goes to).
    pub fn member_of(&self, pool: &Pool) -> Option<usize> {
        self.pools.iter().position(|p| std::ptr::eq(&**p, pool))
    }

    fn member(&self, pool: &Pool) -> &Named {
        let j = self.member_of(pool).expect("a panel query carries the pool of one of its members");
        &self.members[j]
    }
}

impl JudgeInfo for PanelJudge {
    fn describe(&self) -> String {
        let names: Vec<&str> = self.members.iter().map(|m| m.name.as_str()).collect();
        format!("panel of {} judges ({})", names.len(), names.join(", "))
    }
    fn cache_key(&self, pool: &Pool, a: usize, b: usize) -> String {
        self.member(pool).cache_key(pool, a, b)
    }
    fn record_judge(&self, pool: &Pool, a: usize, b: usize) -> String {
        self.member(pool).record_judge(pool, a, b)
    }
    fn record_settings(&self, pool: &Pool, a: usize, b: usize) -> String {
        self.member(pool).record_settings(pool, a, b)
    }
    fn worst_case_usd(&self, pool: &Pool, a: usize, b: usize) -> f64 {
        self.member(pool).worst_case_usd(pool, a, b)
    }
    fn expected_usd(&self, pool: &Pool, a: usize, b: usize) -> f64 {
        self.member(pool).expected_usd(pool, a, b)
    }
    fn has_price(&self) -> bool {
        self.members.iter().any(|m| m.has_price())
    }
}

impl Judge for PanelJudge {
    /// Every member's free endpoint check; the first that fails names its member.
    fn preflight(&self) -> BoxFuture<'_, Result<Vec<String>, JudgeError>> {
        Box::pin(async move {
            let mut warnings = Vec::new();
            for (j, m) in self.members.iter().enumerate() {
                match m.judge.preflight().await {
                    // The member's settings as the panel's config names them.
                    Ok(w) => warnings
                        .extend(w.into_iter().map(|w| {
                            format!("judge {}: {}", m.name, super::keyed::rekey(&w, &format!("judges[{j}]")))
                        })),
                    Err(e @ JudgeError::Endpoint { .. }) => {
                        return Err(match in_panel(e, j) {
                            JudgeError::Endpoint { setting, message, cost_usd } => JudgeError::Endpoint {
                                setting,
                                message: format!("judge {}: {message}", m.name),
                                cost_usd,
                            },
                            other => other,
                        });
                    }
                    Err(e) => return Err(e),
                }
            }
            Ok(warnings)
        })
    }

    /// The members' counters are reported per member ([`PanelJudge::member_stats`]).
    fn stats(&self) -> Option<JudgeStats> {
        None
    }

    fn stop_sending(&self) {
        for m in &self.members {
            m.judge.stop_sending();
        }
    }

    fn reservations_raised(&self) {
        for m in &self.members {
            m.judge.reservations_raised();
        }
    }

    fn sending_stopped(&self) -> bool {
        self.members.iter().any(|m| m.judge.sending_stopped())
    }

    /// One lane per member: its own limit.
    fn lane_limits(&self) -> Vec<Option<usize>> {
        self.members.iter().map(|m| m.judge.lane_limits().first().copied().flatten()).collect()
    }

    fn lane(&self, pool: &Pool) -> usize {
        self.member_of(pool).unwrap_or(0)
    }

    fn judge<'a>(&'a self, pool: &'a Pool, a: usize, b: usize) -> BoxFuture<'a, Result<JudgeReply, JudgeError>> {
        match self.member_of(pool) {
            Some(j) => {
                let fut = self.members[j].judge.judge(pool, a, b);
                Box::pin(async move { fut.await.map_err(|e| in_panel(e, j)) })
            }
            None => Box::pin(async {
                Err(JudgeError::Fatal { message: "a query of the panel carries no member's pool".into() })
            }),
        }
    }
}

/// An error of member `j` names its settings as the panel's config has them:
/// `judge.openai.base_url` is `judges[j].openai.base_url`.
fn in_panel(e: JudgeError, j: usize) -> JudgeError {
    super::keyed::rekey_error(e, &format!("judges[{j}]"))
}

impl PanelJudge {
    /// Each member's counters of this invocation (live judges), by name.
    pub fn member_stats(&self) -> Vec<(String, Option<JudgeStats>)> {
        self.members.iter().map(|m| (m.name.clone(), m.judge.stats())).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::mock::{MockConfig, MockJudge};

    fn pool() -> Pool {
        let items = (0..3)
            .map(|i| crate::domain::pool::Item {
                id: format!("i{i}"),
                text: Some(format!("text {i}")),
                quality: Some(i as f64),
                ..Default::default()
            })
            .collect();
        Pool::new("p".into(), "t".into(), items).unwrap()
    }

    #[test]
    fn each_query_goes_to_the_member_whose_pool_it_carries_and_keys_never_collide() {
        let p = pool();
        let same: Arc<dyn Judge> = Arc::new(MockJudge::new(MockConfig::default()).unwrap());
        let panel = PanelJudge::new(&p, vec![("cheap".into(), same.clone()), ("frontier".into(), same.clone())]);
        let (k0, k1) = (panel.cache_key(panel.pool(0), 0, 1), panel.cache_key(panel.pool(1), 0, 1));
        // Two members with one configuration: still two keys, each naming its member.
        assert_ne!(k0, k1);
        assert_eq!(k0, format!("cheap:{}", same.cache_key(&p, 0, 1)));
        assert_eq!(k1, format!("frontier:{}", same.cache_key(&p, 0, 1)));
        assert_eq!(panel.record_judge(panel.pool(1), 0, 1), "frontier");
        // Each member's settings: its name and its judge's (two names over one judge differ).
        let (s0, s1) = (panel.record_settings(panel.pool(0), 0, 1), panel.record_settings(panel.pool(1), 2, 0));
        assert_eq!(s0, crate::judge::settings_id(panel.members()[0].as_ref()));
        assert_eq!(s1, crate::judge::settings_id(panel.members()[1].as_ref()));
        assert_ne!(s0, s1);
        assert_ne!(s0, crate::judge::settings_id(same.as_ref()));
        assert_eq!(panel.member_of(panel.pool(1)), Some(1));
        // The run's own pool (not a member's) routes nowhere.
        assert_eq!(panel.member_of(&p), None);
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let e = rt.block_on(panel.judge(&p, 0, 1)).unwrap_err();
        assert!(matches!(e, JudgeError::Fatal { .. }), "{e}");
        let r = rt.block_on(panel.judge(panel.pool(0), 2, 0)).unwrap();
        assert_eq!(r.y, rt.block_on(same.judge(&p, 2, 0)).unwrap().y);
    }
}

//! What a run does with failed queries, kept in small types the loop calls after each query (no
//! I/O, no clock): [`Faults`] holds them together and settles each outcome with the scheduler;
//!
//! - [`Quarantine`]: a pair whose queries failed `max_failed_queries_per_pair` times (both
//!   orders counted together) is set aside for the rest of this invocation: acquisition never
//!   picks it again, and result.json and the summary list it. A query that can never be sent as
//!   configured (the judge says it is unjudgeable, e.g. a prompt over the server's context under
//!   `on_context_overflow: fail`) sets its pair aside at once. A re-run tries set-aside pairs
//!   again.
//! - [`EndpointGuard`]: failures that are no one pair's fault (the judge names the setting to
//!   change: `base_url`, `api_key_env`, `model`, `max_tokens_field`, …) stop the run once the
//!   same one comes back [`ENDPOINT_STRIKES`] times with no success in between, instead of
//!   paying for many identical failures.

use super::dispatch::{DispatchOutcome, Settled};
use super::schedule::{Dispatch, Scheduler};
use crate::judge::{Judge, JudgeError, JudgeStats};
use crate::report::progress::Progress;
use std::collections::{BTreeMap, HashSet};

/// Identical endpoint-wide failures in a row (no success between) that stop a run.
pub const ENDPOINT_STRIKES: usize = 3;

/// The failures of one (unordered) pair.
#[derive(Debug, Clone, PartialEq)]
struct PairFailures {
    failed: u32,
    last_error: String,
    set_aside: bool,
}

/// One set-aside pair: its items (first as first seen failing), failed queries, last error.
#[derive(Debug, Clone, PartialEq)]
pub struct SetAside {
    /// Item index of one side.
    pub a: usize,
    /// Item index of the other side.
    pub b: usize,
    /// Failed queries of this pair (both orders).
    pub failed_queries: u32,
    /// The last error.
    pub last_error: String,
}

/// Pairs set aside after repeated failures.
#[derive(Debug, Clone)]
pub struct Quarantine {
    max_failed: u32,
    pairs: BTreeMap<(usize, usize), PairFailures>,
    first_seen: BTreeMap<(usize, usize), (usize, usize)>,
}

fn unordered(a: usize, b: usize) -> (usize, usize) {
    (a.min(b), a.max(b))
}

impl Quarantine {
    /// Set a pair aside after `max_failed_queries_per_pair` failed queries (≥ 1).
    pub fn new(max_failed_queries_per_pair: u32) -> Self {
        Self { max_failed: max_failed_queries_per_pair.max(1), pairs: BTreeMap::new(), first_seen: BTreeMap::new() }
    }

    /// Record a failed query of the ordered pair (a, b). `unjudgeable`: it can never succeed as
    /// configured, so the pair is set aside at once. Returns `true` when this failure set the
    /// pair aside.
    pub fn failed(&mut self, a: usize, b: usize, error: &str, unjudgeable: bool) -> bool {
        let key = unordered(a, b);
        self.first_seen.entry(key).or_insert((a, b));
        let p =
            self.pairs.entry(key).or_insert(PairFailures { failed: 0, last_error: String::new(), set_aside: false });
        p.failed += 1;
        p.last_error = error.to_owned();
        if !p.set_aside && (unjudgeable || p.failed >= self.max_failed) {
            p.set_aside = true;
            return true;
        }
        false
    }

    /// Failed queries of the pair {a, b} so far.
    pub fn failures(&self, a: usize, b: usize) -> u32 {
        self.pairs.get(&unordered(a, b)).map_or(0, |p| p.failed)
    }

    /// Whether the pair {a, b} is set aside.
    pub fn is_set_aside(&self, a: usize, b: usize) -> bool {
        self.pairs.get(&unordered(a, b)).is_some_and(|p| p.set_aside)
    }

    /// Both orders of every set-aside pair (to exclude from acquisition).
    pub fn ordered_pairs(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        self.pairs.iter().filter(|(_, p)| p.set_aside).flat_map(|(&(a, b), _)| [(a, b), (b, a)])
    }

    /// The set-aside pairs, in item-index order.
    pub fn set_aside(&self) -> Vec<SetAside> {
        self.pairs
            .iter()
            .filter(|(_, p)| p.set_aside)
            .map(|(k, p)| {
                let (a, b) = self.first_seen[k];
                SetAside { a, b, failed_queries: p.failed, last_error: p.last_error.clone() }
            })
            .collect()
    }
}

/// Stops a run on repeated identical endpoint-wide failures.
#[derive(Debug, Clone, Default)]
pub struct EndpointGuard {
    setting: Option<String>,
    strikes: usize,
}

impl EndpointGuard {
    /// A fresh guard.
    pub fn new() -> Self {
        Self::default()
    }

    /// A query succeeded: the endpoint works.
    pub fn succeeded(&mut self) {
        self.setting = None;
        self.strikes = 0;
    }

    /// A query failed; `setting` is the setting an endpoint-wide failure names (`None`: the
    /// failure may be the pair's own, which neither counts nor resets). Returns the reason to
    /// stop when the same setting has failed [`ENDPOINT_STRIKES`] times in a row.
    pub fn failed(&mut self, setting: Option<&str>, message: &str) -> Option<String> {
        let s = setting?;
        if self.setting.as_deref() == Some(s) {
            self.strikes += 1;
        } else {
            self.setting = Some(s.to_owned());
            self.strikes = 1;
        }
        (self.strikes >= ENDPOINT_STRIKES).then(|| {
            format!("{} queries in a row failed the same way, which no other pair would fix: {message}", self.strikes)
        })
    }
}

/// One judge's replies behind its stored records, its invalid-reply limit (`(max share, minimum
/// replies)`; `None`: none) and, in a panel, its name.
pub type EarlierReplies<'a> = (JudgeStats, Option<(f64, u64)>, Option<&'a str>);

/// What a run's failed and invalid queries have done so far (docs/live.md, "Faults"): the
/// failures counted, the pairs set aside, endpoint-wide errors, and the messages of the two stops
/// they can cause (a failing judge, the invalid-reply rate). The decisions are the scheduler's
/// ([`Scheduler::rounds_failing`], [`Scheduler::judge_replies`]); this keeps the words.
pub struct Faults {
    /// Failed queries in this invocation.
    pub failed: usize,
    /// Of `failed`: requests a batch job ended without running (expired, cancelled); not
    /// billed, and no fault of their pairs.
    pub not_run: usize,
    /// The last error of a failed query.
    pub last_error: String,
    /// Pairs set aside after repeated failures.
    pub quarantine: Quarantine,
    guard: EndpointGuard,
    /// Why the run stops for its judge.
    pub failing: Option<String>,
    /// Why the run stops for its invalid-reply rate (`judge.openai.max_invalid_rate`).
    pub invalid_stop: Option<String>,
    /// Per judge (a panel's members in order; one for a single judge), the replies behind its
    /// stored records at the start ([`super::queries::RunQueries::stored_replies`]): the
    /// invalid-reply limit counts them with this invocation's.
    earlier: Vec<JudgeStats>,
    /// Queries the judge has no verdict for (`JudgeError::Unavailable`): set aside, never re-picked.
    pub unavailable: HashSet<(usize, usize)>,
    /// A batch job left open (its first query's words): the run stops and a later run resumes it.
    pub batch_pending: Option<String>,
    /// In a panel, the members whose queries failed since the last verdict of any judge: when
    /// the run stops for failing rounds and it is one member, the stop names it.
    failing_members: std::collections::BTreeSet<String>,
}

impl Faults {
    /// No fault yet; a pair is set aside after `max_failed_queries_per_pair` failed queries.
    pub fn new(max_failed_queries_per_pair: u32) -> Self {
        Self {
            failed: 0,
            not_run: 0,
            last_error: String::new(),
            quarantine: Quarantine::new(max_failed_queries_per_pair),
            guard: EndpointGuard::new(),
            failing: None,
            invalid_stop: None,
            earlier: Vec::new(),
            unavailable: HashSet::new(),
            batch_pending: None,
            failing_members: std::collections::BTreeSet::new(),
        }
    }

    /// Count the replies behind each judge's stored records (`earlier`, per judge in order, with
    /// its limit and, in a panel, its name) in its invalid-reply limit; when they alone pass it,
    /// the run stops before it sends anything, as it stopped before.
    pub fn count_earlier(&mut self, earlier: Vec<EarlierReplies<'_>>, sched: &mut Scheduler, progress: &Progress) {
        for (st, limit, name) in &earlier {
            if let Some(limit) = *limit
                && self.invalid_stop.is_none()
                && sched.judge_replies(st.replies, st.invalid_replies, limit)
            {
                self.stop_invalid(st, limit, st.replies, *name, progress);
            }
        }
        self.earlier = earlier.into_iter().map(|(st, _, _)| st).collect();
    }

    fn stop_invalid(
        &mut self,
        st: &JudgeStats,
        limit: (f64, u64),
        earlier: u64,
        name: Option<&str>,
        progress: &Progress,
    ) {
        let mut m = crate::report::result::invalid_rate_message(st, Some(limit));
        if earlier > 0 {
            m.push_str(&format!(
                "; {} of these replies are behind verdicts stored by earlier invocations of this run (raise max_invalid_rate to go on with this judge and prompt; a changed prompt starts its own verdicts)",
                earlier
            ));
        }
        if let Some(n) = name {
            m = format!("judge {n}: {m}");
        }
        progress.println(&format!("stopping: {m}"));
        self.invalid_stop = Some(m);
    }

    /// A panel member whose answered queries gave no valid verdict, so the panel's price rule
    /// would not ask it again ([`super::panel`]): the run stops as a single judge's does at its
    /// invalid-reply limit, naming the judge (`member`: its index, name and answered queries).
    /// Its reply counts are this invocation's and those behind its stored records, re-asks
    /// included.
    pub fn stop_no_valid_verdict(
        &mut self,
        judge: &dyn Judge,
        member: (usize, &str, usize),
        sched: &mut Scheduler,
        progress: &Progress,
    ) {
        if self.invalid_stop.is_some() {
            return;
        }
        let earlier = self.earlier.get(member.0).cloned().unwrap_or_default();
        let st = judge.stats().unwrap_or_default().with_earlier(&earlier);
        if st.invalid_replies == 0 || !sched.judge_replies(st.replies, st.invalid_replies, (0.0, 1)) {
            return;
        }
        let (parts, cause) = crate::report::result::invalid_reasons(&st);
        let m = format!(
            "judge {}: {} ({} of {} replies invalid, re-asks included: {parts}), so the panel would not ask it again; the run stops, as for a judge past its max_invalid_rate; likely cause: {cause}",
            member.1,
            match member.2 {
                1 => "its 1 answered query gave no verdict".to_string(),
                q => format!("none of its {q} answered queries gave a verdict"),
            },
            st.invalid_replies,
            st.replies
        );
        progress.println(&format!("stopping: {m}"));
        self.invalid_stop = Some(m);
    }

    /// The judge failed before its first query (its endpoint check).
    pub fn judge_unreachable(&mut self, message: String) {
        self.last_error = message.clone();
        self.failing = Some(message);
    }

    /// The words of a failing judge once the scheduler counts it failing for its rounds without
    /// any verdict (kept from the moment it first does).
    pub fn note_failed_rounds(&mut self, sched: &Scheduler) {
        if !sched.rounds_failing() || self.failing.is_some() {
            return;
        }
        let s = sched.settings();
        // A panel whose failures since the last verdict are all one member's: that member is
        // named, with what to do (the others answered before it failed them all).
        let member = match (self.failing_members.len(), self.failing_members.first()) {
            (1, Some(name)) => format!(
                "; all of them judge {name}'s: fix its endpoint, or take it out of `judges:` to go on without it (its stored verdicts stay in the folder)"
            ),
            _ => String::new(),
        };
        self.failing = Some(
            match s.dispatch {
                Dispatch::WaitForBatch | Dispatch::Batch => format!(
                    "{} queries failed in {} consecutive rounds without any verdict; last error: {}",
                    sched.failed_rounds_queries(),
                    sched.failed_rounds(),
                    self.last_error
                ),
                Dispatch::Pipelined => format!(
                    "{} queries failed ({} in a row without any verdict); last error: {}",
                    self.failed,
                    sched.failed_rounds() * s.refit_every,
                    self.last_error
                ),
            } + &member,
        );
    }

    /// Tell the scheduler how a query ended, and count, set aside or note a stop as its outcome
    /// asks. The scheduler knows the query as the pair `(a, b)`: its ordered pair for a single
    /// judge, a judge panel's encoding of judge and ordered pair ([`super::panel`]); the
    /// messages name its items.
    pub fn settle<T>(
        &mut self,
        settled: Settled<T>,
        (a, b): (usize, usize),
        sched: &mut Scheduler,
        (judge, member): (&dyn Judge, Option<(usize, &str)>),
        progress: &Progress,
    ) {
        let res = settled.reservation;
        let (ida, idb) = (&settled.pool.items[settled.a].id, &settled.pool.items[settled.b].id);
        match settled.outcome {
            DispatchOutcome::Verdict { cost_usd, stored } => {
                sched.stored_verdict(a, b, res, cost_usd, stored);
                self.guard.succeeded();
                self.failing_members.clear();
                if let Some(limit) = judge.invalid_rate_limit()
                    && let Some(now) = judge.stats()
                {
                    let earlier = self.earlier.get(member.map_or(0, |m| m.0)).cloned().unwrap_or_default();
                    let st = now.with_earlier(&earlier);
                    if sched.judge_replies(st.replies, st.invalid_replies, limit) {
                        self.stop_invalid(&st, limit, earlier.replies, member.map(|m| m.1), progress);
                    }
                }
            }
            // No verdict exists (a replay's recording lacks it): set aside, not a failure; or
            // the judge cannot go on: the run stops as for a failing judge, with its message.
            DispatchOutcome::Failed(e @ (JudgeError::Unavailable { .. } | JudgeError::Fatal { .. })) => {
                sched.set_aside(a, b, res);
                if matches!(e, JudgeError::Unavailable { .. }) {
                    self.unavailable.insert((a, b));
                } else {
                    // Asked and left without a verdict: a failed query, counted with the others
                    // (a panel said "8 asked now" and stored 6 with 0 failed).
                    self.failed += 1;
                    self.last_error = in_member(&e, member);
                    self.failing.get_or_insert(self.last_error.clone());
                }
            }
            // In a batch job still open: booked by the run that resumes it; this one stops.
            DispatchOutcome::Failed(e @ JudgeError::Pending { .. }) => {
                // Its reservation is released here; the next run counts the job's spend before
                // it reserves anything (the intent stays open until then).
                sched.set_aside(a, b, res);
                self.batch_pending.get_or_insert(e.to_string());
            }
            // The run stopped sending before the query's next request left: nothing to count.
            DispatchOutcome::Failed(e @ JudgeError::NotSent { .. }) => sched.failed(a, b, res, e.cost_usd(), false),
            DispatchOutcome::Failed(e) => {
                self.failed += 1;
                self.not_run += usize::from(matches!(e, JudgeError::NotRun { .. }));
                self.last_error = in_member(&e, member);
                tracing::warn!("query {ida} vs {idb} failed: {}", self.last_error);
                let unjudgeable = matches!(e, JudgeError::Unjudgeable { .. });
                // A request the provider never ran (an expired batch job) is no fault of its pair.
                let pairs_fault = e.setting().is_none() && !matches!(e, JudgeError::NotRun { .. });
                if let Some((_, name)) = member {
                    self.failing_members.insert(name.to_string());
                }
                if pairs_fault && self.quarantine.failed(a, b, &self.last_error, unjudgeable) {
                    tracing::warn!(
                        "{ida} vs {idb} set aside{} for the rest of this run after {} failed queries",
                        member.map(|(_, name)| format!(" for judge {name}")).unwrap_or_default(),
                        self.quarantine.failures(a, b)
                    );
                }
                sched.failed(a, b, res, e.cost_usd(), false);
                sched.exclude(self.quarantine.ordered_pairs());
                if let Some(why) = self.guard.failed(e.setting(), &self.last_error) {
                    self.failing.get_or_insert(why);
                }
                if sched.settings().dispatch == Dispatch::Pipelined {
                    self.note_failed_rounds(sched);
                }
            }
        }
    }
}

/// A judge's error as a run of a panel says it: the member named (`the judge cheap: …`), and a
/// setting of its block written as the panel's config holds it (`judges[0].replay: …`, not the
/// single judge's `judge.replay: …`). A single judge's (`member` none) as it is.
fn in_member(e: &JudgeError, member: Option<(usize, &str)>) -> String {
    let said = e.to_string();
    match member {
        Some((j, name)) => format!("the judge {name}: {}", crate::judge::keyed::rekey(&said, &format!("judges[{j}]"))),
        None => said,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A panel member's failure names the member and its block as `judges:` holds it.
    #[test]
    fn a_members_error_names_the_member_and_its_block() {
        let e =
            JudgeError::Fatal { message: "judge.replay: the recording r.jsonl has no verdict (missing: fail)".into() };
        assert_eq!(
            in_member(&e, Some((1, "rep"))),
            "the judge rep: judges[1].replay: the recording r.jsonl has no verdict (missing: fail)"
        );
        assert_eq!(in_member(&e, None), "judge.replay: the recording r.jsonl has no verdict (missing: fail)");
        let e = JudgeError::Unavailable { message: "HTTP 503".into() };
        assert_eq!(in_member(&e, Some((0, "cheap"))), format!("the judge cheap: {e}"));
    }

    #[test]
    fn a_pair_is_set_aside_after_its_limit_counting_both_orders() {
        let mut q = Quarantine::new(2);
        assert!(!q.failed(2, 1, "HTTP 429", false));
        assert!(!q.is_set_aside(1, 2));
        assert!(q.failed(1, 2, "HTTP 429 again", false), "the second failure, other order");
        assert!(q.is_set_aside(2, 1) && q.is_set_aside(1, 2));
        assert!(!q.failed(1, 2, "x", false), "already set aside");
        assert_eq!(q.failures(2, 1), 3);
        assert!(!q.failed(0, 2, "HTTP 500", false));
        assert!(!q.is_set_aside(0, 2));
        let mut pairs: Vec<_> = q.ordered_pairs().collect();
        pairs.sort_unstable();
        assert_eq!(pairs, vec![(1, 2), (2, 1)]);
        assert_eq!(
            q.set_aside(),
            vec![SetAside { a: 2, b: 1, failed_queries: 3, last_error: "x".into() }],
            "named in the order first seen failing"
        );
    }

    #[test]
    fn unjudgeable_queries_set_their_pair_aside_at_once() {
        let mut q = Quarantine::new(5);
        assert!(q.failed(0, 3, "prompt over the context", true));
        assert!(q.is_set_aside(3, 0));
        assert_eq!(q.set_aside().len(), 1);
        // A limit of 0 means 1: a pair is never set aside before failing.
        let mut q0 = Quarantine::new(0);
        assert!(!q0.is_set_aside(0, 1));
        assert!(q0.failed(0, 1, "e", false));
    }

    #[test]
    fn the_guard_stops_on_the_third_identical_endpoint_failure() {
        let mut g = EndpointGuard::new();
        assert_eq!(g.failed(Some("model"), "unknown model"), None);
        assert_eq!(g.failed(None, "HTTP 500"), None, "a pair's own failure neither counts nor resets");
        assert_eq!(g.failed(Some("model"), "unknown model"), None);
        let why = g.failed(Some("model"), "unknown model: set judge.openai.model").unwrap();
        assert!(why.starts_with("3 queries in a row") && why.contains("judge.openai.model"), "{why}");
        // A success resets, and a different setting starts its own count.
        g.succeeded();
        assert_eq!(g.failed(Some("model"), "m"), None);
        assert_eq!(g.failed(Some("api_key_env"), "k"), None);
        assert_eq!(g.failed(Some("api_key_env"), "k"), None);
        assert!(g.failed(Some("api_key_env"), "k").is_some());
    }
}

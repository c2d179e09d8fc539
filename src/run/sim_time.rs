//! Algorithm 1 with a judge that takes time, in virtual time (docs/live.md, "Concurrency";
//! docs/experiments.md, "Pipelined acquisition"): the pure scheduler of [`super::schedule`]
//! drives a synthetic pool's keyed Bernoulli judge (docs/model.md §7) whose replies arrive after a
//! random latency, so a sweep shows recall@k and wall time against concurrency without waiting.
//!
//! Each query's latency is drawn from a normal distribution (`mean_s`, `sd_s`), cut at 0, from
//! the stream `latency` keyed by the query's send number (so it does not depend on which pair
//! is sent). A refit takes no virtual time. Replies are processed in arrival order (ties in send
//! order); the fit uses the verdicts in the order stored. With `wait_for_batch`,
//! `concurrency` = `refit_every` and zero spread, the choices are those of
//! [`super::sim::run_path`] (tested).

use super::schedule::{Action, Dispatch, Fitted, Pick, PickRule, ScheduleSettings, Scheduler, Signals, free};
use super::sim::{SimError, SimSettings, covariates};
use crate::acquire::StrategyKind;
use crate::analysis::design::DesignKind;
use crate::analysis::synth::SynthPool;
pub use crate::config::pipeline::Latency;
use crate::domain::rng;
use crate::domain::verdict::ItemVerdict;
use crate::model::laplace::Posterior;
use crate::model::membership::recall_at_k;
use crate::model::summary::FitSummary;
use crate::model::summary::{ModelKind, build_design, fit_and_summarise};
use crate::store::budget::Budget;
use rand_distr::{Distribution, StandardNormal};
use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};

/// How a simulated run dispatches its queries.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TimedSettings {
    /// Queries in flight at most, C ≥ 1.
    pub concurrency: usize,
    /// Wait-for-batch or pipelined.
    pub dispatch: Dispatch,
    /// Pipelined: picks made ahead of a free slot ([`Dispatch::write_ahead`]); each is sent, oldest
    /// first, when a reply frees a slot, as `topk-judge run` does.
    pub write_ahead: usize,
    /// The judge's latency.
    pub latency: Latency,
}

/// The end of a simulated run with budget B.
#[derive(Debug, Clone, PartialEq)]
pub struct TimedRun {
    /// Comparisons made (= B unless the pairs ran out).
    pub comparisons: usize,
    /// Point top-k of the final fit (base indices, best first).
    pub topk: Vec<usize>,
    /// Recall@k against the gold top-k.
    pub recall: f64,
    /// Virtual wall time from the first query to the last reply, seconds.
    pub wall_s: f64,
    /// The ordered queries in the order stored.
    pub log: Vec<(usize, usize)>,
}

/// A reply in flight: arrival time and send number (earliest first in the heap).
#[derive(Debug)]
struct Arrival {
    at: f64,
    seq: u64,
    pick: Pick,
}

impl PartialEq for Arrival {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Arrival {}

impl Ord for Arrival {
    fn cmp(&self, other: &Self) -> Ordering {
        other.at.total_cmp(&self.at).then(other.seq.cmp(&self.seq))
    }
}

impl PartialOrd for Arrival {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Algorithm 1 on `sp` with `strategy` and `model` until `budget` comparisons are stored (or no
/// pair is left), queries dispatched as `timed` says, the judge the pool's keyed verdict
/// answering after its latency. The run seed is the pool seed.
///
/// # Errors
/// [`SimError::Fit`] naming the pool, strategy, model and comparisons of a failed fit.
///
/// # Panics
/// If `timed.concurrency` or `settings.refit_every` is 0, or k is not in 1..M.
pub fn run_timed(
    sp: &SynthPool,
    strategy: StrategyKind,
    model: ModelKind,
    budget: usize,
    settings: &SimSettings,
    timed: &TimedSettings,
) -> Result<TimedRun, SimError> {
    let pool = &sp.pool;
    let cov = covariates(sp, model);
    let seed = sp.spec.seed;
    let (m, k) = (pool.n_bases(), settings.k);
    assert!(k >= 1 && k < m, "k = {k} must be in 1..M (M = {m})");
    let design = if sp.spec.paired { DesignKind::Paired } else { DesignKind::Single };
    let total = crate::run::queries::ordered_pairs(pool, design).len();
    let sched_settings =
        ScheduleSettings::new(settings.refit_every, timed.concurrency, timed.dispatch, timed.write_ahead);
    let mut sched = Scheduler::new(sched_settings, total, [], [], Budget::new(Some(budget as u64), None, 0, 0.0));
    let x = super::schedule::acquisition_covariates(pool, &cov.x);
    let rule = PickRule {
        pool,
        x: &x,
        p: cov.p(),
        k,
        design,
        strategy,
        orders: settings.orders,
        seed,
        worst_usd: &free,
        allowed: None,
        target_xbar: None,
        panel: None,
    };
    let fail = |comparisons: usize, source| SimError::Fit { seed, strategy, model, comparisons, source };
    let mut verdicts: Vec<ItemVerdict> = Vec::new();
    let mut warm: Option<Vec<f64>> = None;
    let mut current: Option<(FitSummary, Posterior)> = None;
    let mut wire = Wire { heap: BinaryHeap::new(), primed: VecDeque::new(), now: 0.0, sent: 0 };
    loop {
        let fitted = current.as_ref().map(|(s, p)| Fitted { post: p, membership: &s.membership, certified: None });
        match sched.next_action(&rule, fitted.as_ref(), Signals::default()) {
            Action::Refit => {
                sched.fit_started();
                let d = build_design(pool, &cov, &verdicts);
                let mut mc_rng = rng::stream(seed, "membership", verdicts.len() as u64);
                let (summary, _fit, post) = fit_and_summarise(
                    pool,
                    &cov,
                    &d,
                    &settings.prior,
                    k,
                    settings.mc_draws,
                    warm.as_deref(),
                    &mut mc_rng,
                )
                .map_err(|e| fail(verdicts.len(), e))?;
                warm = Some(summary.beta());
                sched.fit_finished();
                current = Some((summary, post));
            }
            Action::Send(picks) => wire.primed.extend(picks),
            Action::Wait { .. } => {
                let Some((pick, _)) = wire.next_reply(seed, timed) else { break };
                let (a, b) = (pick.a, pick.b);
                verdicts.push(ItemVerdict { a, b, y: sp.verdict(a, b), w: 1.0 });
                sched.stored_verdict(a, b, pick.reservation, 0.0, true);
            }
            Action::Stop(_) => break,
        }
        // At most C on the wire; the picks made ahead wait, oldest first, for a free slot.
        wire.launch(seed, timed);
    }
    let summary =
        current.map(|(s, _)| s).ok_or_else(|| fail(0, crate::model::FitError::InvalidData("no fit".into())))?;
    let gold = sp.gold_topk(k);
    Ok(TimedRun {
        comparisons: sched.stored().len(),
        recall: recall_at_k(&summary.topk, &gold),
        topk: summary.topk,
        wall_s: wire.now,
        log: sched.stored().to_vec(),
    })
}

/// The simulated wire: replies in flight by arrival time, picks written ahead waiting for a free
/// slot, the virtual clock and the number of queries sent so far (which keys their latency).
struct Wire {
    heap: BinaryHeap<Arrival>,
    primed: VecDeque<Pick>,
    now: f64,
    sent: u64,
}

impl Wire {
    /// Send picks written ahead while fewer than C are on the wire, each with its latency.
    fn launch(&mut self, seed: u64, timed: &TimedSettings) {
        while self.heap.len() < timed.concurrency {
            let Some(pick) = self.primed.pop_front() else { break };
            let z: f64 = StandardNormal.sample(&mut rng::stream(seed, "latency", self.sent));
            let lat = (timed.latency.mean_s + timed.latency.sd_s * z).max(0.0);
            self.heap.push(Arrival { at: self.now + lat, seq: self.sent, pick });
            self.sent += 1;
        }
    }

    /// The next reply to arrive (the clock moves to it), after sending what the wire has room for.
    fn next_reply(&mut self, seed: u64, timed: &TimedSettings) -> Option<(Pick, f64)> {
        self.launch(seed, timed);
        let arr = self.heap.pop()?;
        self.now = arr.at;
        Some((arr.pick, arr.at))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::synth::{SynthSpec, generate};
    use crate::run::sim::run_path;

    fn pool(seed: u64) -> SynthPool {
        generate(&SynthSpec { n: 12, rho: 0.0, c_star: 1.0, kappa_star: 0.5, temperature: 1.0, paired: false, seed })
    }

    fn settings() -> SimSettings {
        SimSettings { k: 3, mc_draws: 200, ..SimSettings::default() }
    }

    #[test]
    fn wait_for_batch_without_spread_is_run_path_and_takes_one_latency_per_batch() {
        let timed = TimedSettings {
            concurrency: 8,
            dispatch: Dispatch::WaitForBatch,
            write_ahead: 0,
            latency: Latency { mean_s: 0.5, sd_s: 0.0 },
        };
        for seed in [1, 2] {
            let sp = pool(seed);
            let t = run_timed(&sp, StrategyKind::Topk, ModelKind::BiasAware, 40, &settings(), &timed).unwrap();
            let p = run_path(&sp, StrategyKind::Topk, ModelKind::BiasAware, &[40], &settings()).unwrap();
            assert_eq!((t.comparisons, &t.topk, t.recall), (40, &p[0].topk, p[0].recall));
            // 5 batches of 8, each one latency long.
            assert!((t.wall_s - 2.5).abs() < 1e-12, "{}", t.wall_s);
        }
    }

    #[test]
    fn pipelined_keeps_c_in_flight_and_never_repeats_a_pair() {
        let sp = pool(3);
        let lat = Latency { mean_s: 0.5, sd_s: 0.0 };
        let wide = TimedSettings { concurrency: 32, dispatch: Dispatch::Pipelined, write_ahead: 0, latency: lat };
        let t = run_timed(&sp, StrategyKind::Topk, ModelKind::BiasAware, 96, &settings(), &wide).unwrap();
        assert_eq!(t.comparisons, 96);
        let distinct: std::collections::HashSet<_> = t.log.iter().collect();
        assert_eq!(distinct.len(), 96);
        // 32 in flight with equal latencies: 96 queries in 3 latencies.
        assert!((t.wall_s - 1.5).abs() < 1e-12, "{}", t.wall_s);
        // 4 written ahead: still 32 on the wire, the same 3 latencies, no pair twice.
        let ahead = TimedSettings { write_ahead: 4, ..wide };
        let t4 = run_timed(&sp, StrategyKind::Topk, ModelKind::BiasAware, 96, &settings(), &ahead).unwrap();
        let distinct: std::collections::HashSet<_> = t4.log.iter().collect();
        assert_eq!((t4.comparisons, distinct.len()), (96, 96));
        assert!((t4.wall_s - 1.5).abs() < 1e-12, "{}", t4.wall_s);
        // Wait-for-batch with R = 8 needs 12 latencies for the same budget.
        let wfb = TimedSettings { concurrency: 8, dispatch: Dispatch::WaitForBatch, write_ahead: 0, latency: lat };
        let w = run_timed(&sp, StrategyKind::Topk, ModelKind::BiasAware, 96, &settings(), &wfb).unwrap();
        assert!((w.wall_s - 6.0).abs() < 1e-12, "{}", w.wall_s);
    }
}

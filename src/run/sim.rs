//! Simulation driver: Algorithm 1 (docs/model.md §3, paper App. A) run synchronously with a
//! judge that is a pure function of the ordered pair: [`follow`] on any pool and judge (a
//! recording, for the frozen protocol of [`crate::sweep::frozen`]), [`run_path`] on a synthetic
//! pool (docs/model.md §7) whose judge is the pool's keyed Bernoulli verdict.
//!
//! The loop is the runner's state machine ([`super::schedule::Scheduler`], wait-for-batch with
//! R = `refit_every` in flight) executed without I/O: refits with [`build_design`] and
//! [`fit_and_summarise`] (warm start from the previous fit, Monte-Carlo stream `membership` keyed
//! by the number of valid verdicts), the scheduler's picks (stream `acquire` keyed by the number
//! of pairs asked or set aside so far; the pool seed is the run seed of [`run_path`]) judged at
//! once, and its stop rules. The simulation of a budget B therefore makes exactly the choices
//! `topk-judge run` makes with `max_comparisons: B` on the same pool, judge and seed. An invalid verdict counts as a
//! comparison and is not fitted; a query the judge has no verdict for ([`Answer::Unavailable`]) is
//! set aside, as the runner does.
//!
//! **Checkpoints.** One call follows one path and records its state at several budgets
//! B₁ < B₂ < … (each checkpoint is the fit to exactly B verdicts, as the runner's final fit). The
//! batch before a checkpoint is cut to end on it, so the record at B₁ equals a separate run with
//! budget B₁; the record at B₂ equals a separate run with budget B₂ when B₁ is a multiple of
//! `refit_every` (the path then has the same batches). The sweep driver
//! ([`crate::sweep`]) groups budgets into such chains.
//!
//! **All pairs.** A budget ≥ the number of ordered pairs asks every remaining pair at once: with
//! every pair queried, Algorithm 1 returns the fit to all verdicts whatever the strategy.
//!
//! **Paired pools** (docs/model.md §6): the within-base ordered pairs (renderings of one base) are asked
//! first, R at a time with a refit in between, in [`design::within_base_pairs`] order, as the
//! runner does with `design: paired`; then Algorithm 1 runs over the between-base pairs. They
//! count as comparisons.
//!
//! **Boundary queries.** With gold ranks r(m) (0 = best, by true θ), a between-base query is
//! - a *boundary query* when one of its bases has gold rank k or k + 1 (1-based: the last base
//!   of the gold top-k or the first one outside) — the per-item count of the paper's Figure 7
//!   ("comparisons at the boundary"), and the share reported as `boundary_share`;
//! - a *straddling query* when exactly one of its bases is in the gold top-k (`straddle_share`);
//! - a *window query* when both bases have gold ranks in k − 2 … k + 3 (1-based;
//!   `window_share`).
//!
//! Shares are fractions of all queries made (within-base queries count as non-boundary).

use super::schedule::{Action, Dispatch, Fitted, Pick, PickRule, ScheduleSettings, Scheduler, Signals};
use crate::acquire::{Orders, StrategyKind};
use crate::analysis::design::{self, DesignKind};
use crate::analysis::synth::SynthPool;
use crate::domain::pool::{CovariateSpec, Covariates, Pool, build_covariates};
use crate::domain::rng;
use crate::domain::verdict::{Answer, ItemVerdict};
use crate::model::membership::{point_topk, recall_at_k};
use crate::model::profile;
use crate::model::summary::{ModelKind, build_design, fit_and_summarise};
use crate::model::{FitError, Prior};
use crate::report::schema::StopReason;
use crate::store::budget::Budget;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// Settings shared by every simulated run of a sweep (docs/model.md §2–§3 defaults in [`Default`]).
#[derive(Debug, Clone, PartialEq)]
pub struct SimSettings {
    /// k of top-k.
    pub k: usize,
    /// Prior precisions.
    pub prior: Prior,
    /// Queries selected per refit, R (default 8).
    pub refit_every: usize,
    /// `both` (default) or `single`.
    pub orders: Orders,
    /// Monte-Carlo draws for top-k membership (default 1000).
    pub mc_draws: usize,
    /// Compute the profile-likelihood range over ĉ at every checkpoint (bias-aware model).
    pub profile: bool,
}

impl Default for SimSettings {
    fn default() -> Self {
        Self {
            k: 5,
            prior: Prior::default(),
            refit_every: crate::model::params::DEFAULT_REFIT_EVERY,
            orders: Orders::Both,
            mc_draws: crate::model::params::DEFAULT_MC_DRAWS,
            profile: false,
        }
    }
}

/// Errors of a simulated run.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// A MAP fit failed.
    #[error("pool seed {seed}, {strategy:?}, {model:?} model, after {comparisons} comparisons: {source}")]
    Fit {
        /// Pool seed.
        seed: u64,
        /// Acquisition strategy (`topk`, `round_robin`, …).
        strategy: StrategyKind,
        /// Model kind (`naive` or `bias_aware`).
        model: ModelKind,
        /// Verdicts at the failing fit.
        comparisons: usize,
        /// Why the Bradley–Terry MAP fit failed (e.g. the Newton iteration did not converge).
        source: FitError,
    },
}

/// Shares of the queries that fall on boundary pairs (see the module doc), each in [0, 1].
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct BoundaryShares {
    /// Queries touching the base of gold rank k or k + 1.
    pub boundary: f64,
    /// Queries with exactly one base in the gold top-k.
    pub straddle: f64,
    /// Queries with both bases in gold ranks k − 2 … k + 3.
    pub window: f64,
}

/// Gold rank of every base (0 = largest θ; ties by lower index), length M.
pub fn gold_ranks(theta: &[f64]) -> Vec<usize> {
    let order = point_topk(theta, theta.len());
    let mut rank = vec![0; theta.len()];
    for (r, &b) in order.iter().enumerate() {
        rank[b] = r;
    }
    rank
}

/// The boundary shares of a list of ordered queries (item indices); `rank` from [`gold_ranks`].
/// An empty list has shares 0.
pub fn boundary_shares(queries: &[(usize, usize)], item_base: &[usize], rank: &[usize], k: usize) -> BoundaryShares {
    if queries.is_empty() {
        return BoundaryShares::default();
    }
    let (mut b, mut s, mut w) = (0usize, 0usize, 0usize);
    // 0-based: boundary ranks k − 1 and k; window ranks k − 3 ..= k + 2.
    let lo = k.saturating_sub(3);
    for &(a, c) in queries {
        let (i, j) = (item_base[a], item_base[c]);
        if i == j {
            continue;
        }
        let (ri, rj) = (rank[i], rank[j]);
        if [ri, rj].iter().any(|&r| r + 1 == k || r == k) {
            b += 1;
        }
        if (ri < k) != (rj < k) {
            s += 1;
        }
        if (lo..=k + 2).contains(&ri) && (lo..=k + 2).contains(&rj) {
            w += 1;
        }
    }
    let q = queries.len() as f64;
    BoundaryShares { boundary: b as f64 / q, straddle: s as f64 / q, window: w as f64 / q }
}

/// The state of a simulated run at one budget.
#[derive(Debug, Clone, PartialEq)]
pub struct Checkpoint {
    /// The budget asked for (comparisons; `usize::MAX` or anything ≥ the number of ordered pairs
    /// means all pairs).
    pub budget: usize,
    /// Comparisons made (= budget unless the pairs ran out).
    pub comparisons: usize,
    /// Point top-k (base indices, best first).
    pub topk: Vec<usize>,
    /// Recall@k against the gold top-k.
    pub recall: f64,
    /// Boundary shares of the queries made.
    pub shares: BoundaryShares,
    /// ĉ of the covariate (bias-aware model), logits per covariate unit.
    pub c_hat: Option<f64>,
    /// κ̂ (logits).
    pub kappa_hat: f64,
    /// Profile-likelihood range over c (nats), when asked for (bias-aware model).
    pub profile_range_nats: Option<f64>,
    /// Queries involving the base of each gold rank (length M, index = 0-based gold rank).
    pub queries_by_rank: Vec<usize>,
    /// Top-k membership π per base at this budget (by θ of the fitted model).
    pub membership: Vec<f64>,
    /// π by the apparent quality φ (= `membership` without covariates).
    pub membership_apparent: Vec<f64>,
    /// The comparison graph of the valid verdicts over the bases (nothing is certified unless
    /// it is connected, [`crate::analysis::certify::graph_withholds`]).
    pub graph: crate::analysis::ranking::ComparisonGraph,
}

/// The model's covariates for a synthetic pool: the pool's `x` as is (already z-scored, or 0/1
/// renderings) for the bias-aware model, none for the naive one.
pub fn covariates(sp: &SynthPool, model: ModelKind) -> Covariates {
    match model {
        ModelKind::Naive => Covariates::none(sp.pool.n_items()),
        ModelKind::BiasAware => build_covariates(&sp.pool, &[CovariateSpec::parse("x:raw").expect("valid spec")])
            .expect("synthetic pools carry covariate x"),
    }
}

/// What one simulated path runs on: the pool, the model's covariates (none for the naive
/// model), the design, the run seed (Monte Carlo, acquisition) and the judge as a pure function
/// of the ordered pair.
pub struct PathInput<'a> {
    /// The pool.
    pub pool: &'a Pool,
    /// The model's covariates (`Covariates::none` for the naive model).
    pub covariates: &'a Covariates,
    /// `single`, or `paired` (within-base pairs first, docs/model.md §6).
    pub design: DesignKind,
    /// The run seed (`acquisition.seed` of a run).
    pub seed: u64,
    /// The judge: the answer to the ordered query (a first, b second).
    pub judge: &'a (dyn Fn(usize, usize) -> Answer + Sync),
    /// The only ordered pairs the judge can answer (a sparse recording); `None`: every pair.
    pub allowed: Option<&'a crate::acquire::AllowedPairs>,
}

/// The fit of a path at one budget.
#[derive(Debug, Clone, PartialEq)]
pub struct PathPoint {
    /// The budget asked for.
    pub budget: usize,
    /// Comparisons made (valid and invalid verdicts) = the length of the query log at this point.
    pub comparisons: usize,
    /// Point top-k (base indices, best first).
    pub topk: Vec<usize>,
    /// ĉ of the first covariate (bias-aware model).
    pub c_hat: Option<f64>,
    /// κ̂ (logits).
    pub kappa_hat: f64,
    /// Profile-likelihood range over the first c (nats), when asked for.
    pub profile_range_nats: Option<f64>,
    /// Top-k membership π per base (by θ of the fitted model).
    pub membership: Vec<f64>,
    /// Point top-k by the apparent quality φ̂ = θ̂ + ĉ·x̄ (= `topk` without covariates).
    pub topk_apparent: Vec<usize>,
    /// π by φ (= `membership` without covariates).
    pub membership_apparent: Vec<f64>,
    /// The comparison graph of the valid verdicts over the bases (nothing is certified unless
    /// it is connected, [`crate::analysis::certify::graph_withholds`]).
    pub graph: crate::analysis::ranking::ComparisonGraph,
}

/// One simulated path: its checkpoints, the comparisons in the order made, and the number of
/// queries the judge had no verdict for.
#[derive(Debug, Clone, PartialEq)]
pub struct Path {
    /// One point per budget.
    pub points: Vec<PathPoint>,
    /// Ordered queries answered with a verdict (valid or invalid), in the order asked.
    pub log: Vec<(usize, usize)>,
    /// Queries answered [`Answer::Unavailable`].
    pub unavailable: usize,
}

/// Algorithm 1 on any pool and pure judge, recording the fit at each of `budgets` (strictly
/// increasing; see the module doc for checkpoints and "all pairs"): the scheduler of
/// [`super::schedule`] executed with an instant judge (wait-for-batch, R = `refit_every` in
/// flight), so it makes the choices `topk-judge run` makes with the same pool, judge, seed and
/// settings. Each checkpoint is the scheduler's stop at `max_comparisons` = that budget; the
/// limit is then raised to the next one. With `settings.profile` on and at least one covariate,
/// each point carries the profile-likelihood range over the first c.
///
/// # Errors
/// The valid verdicts at a failed fit, and the [`FitError`].
///
/// # Panics
/// If `budgets` is empty or not strictly increasing, or k is not in 1..M.
pub fn follow(
    input: &PathInput<'_>,
    strategy: StrategyKind,
    budgets: &[usize],
    settings: &SimSettings,
) -> Result<Path, (usize, FitError)> {
    assert!(!budgets.is_empty(), "at least one budget");
    assert!(budgets.windows(2).all(|w| w[0] < w[1]), "budgets must be strictly increasing: {budgets:?}");
    follow_to(input, strategy, Checkpoints::Comparisons(budgets), settings)
}

/// [`follow`] with spend checkpoints: each point is the scheduler's stop at `max_usd` = that
/// checkpoint (USD), each query costing `cost(a, b)` (USD, reserved and booked at that figure),
/// so the record at each checkpoint is the run `topk-judge run` makes with that `max_usd`: its
/// last batch cut to the queries that still fit, in the order picked. A point's `budget` is its
/// number of comparisons. A path that asks every pair before a checkpoint records its last fit
/// there.
///
/// # Errors
/// The valid verdicts at a failed fit, and the [`FitError`].
///
/// # Panics
/// If `usd` is empty or not strictly increasing, or k is not in 1..M.
pub fn follow_usd(
    input: &PathInput<'_>,
    strategy: StrategyKind,
    usd: &[f64],
    cost: &(dyn Fn(usize, usize) -> f64 + Sync),
    settings: &SimSettings,
) -> Result<Path, (usize, FitError)> {
    assert!(!usd.is_empty(), "at least one checkpoint");
    assert!(usd.windows(2).all(|w| w[0] < w[1]), "checkpoints must be strictly increasing: {usd:?}");
    follow_to(input, strategy, Checkpoints::Usd { limits: usd, cost }, settings)
}

/// Where a simulated path records its fit: at numbers of comparisons, or at spend limits.
enum Checkpoints<'a> {
    Comparisons(&'a [usize]),
    Usd { limits: &'a [f64], cost: &'a (dyn Fn(usize, usize) -> f64 + Sync) },
}

impl Checkpoints<'_> {
    fn len(&self) -> usize {
        match self {
            Checkpoints::Comparisons(b) => b.len(),
            Checkpoints::Usd { limits, .. } => limits.len(),
        }
    }

    /// What a query costs (USD): nothing on a comparison budget.
    fn cost(&self, a: usize, b: usize) -> f64 {
        match self {
            Checkpoints::Comparisons(_) => 0.0,
            Checkpoints::Usd { cost, .. } => cost(a, b),
        }
    }
}

fn follow_to(
    input: &PathInput<'_>,
    strategy: StrategyKind,
    checkpoints: Checkpoints<'_>,
    settings: &SimSettings,
) -> Result<Path, (usize, FitError)> {
    let (pool, cov, seed) = (input.pool, input.covariates, input.seed);
    let (m, k) = (pool.n_bases(), settings.k);
    assert!(k >= 1 && k < m, "k = {k} must be in 1..M (M = {m})");
    let within = if input.design == DesignKind::Paired { design::within_base_pairs(pool) } else { Vec::new() };
    let total = match input.allowed {
        Some(al) => al.len(),
        None => within.len() + between_count(pool),
    };
    let limit = |b: usize| (b < total).then_some(b as u64);
    // The experiments' single-judge arms stop at the rule's first pick past `max_usd`, as they
    // were measured (docs/experiments.md); a run fills to it (`fill_to_max_usd`).
    let sched_settings = ScheduleSettings {
        fill_to_max_usd: false,
        ..ScheduleSettings::new(settings.refit_every, settings.refit_every, Dispatch::WaitForBatch, 0)
    };
    let budget = match &checkpoints {
        Checkpoints::Comparisons(b) => Budget::new(limit(b[0]), None, 0, 0.0),
        Checkpoints::Usd { limits, .. } => Budget::new(None, Some(limits[0]), 0, 0.0),
    };
    let mut sched = Scheduler::new(sched_settings, total, [], [], budget);
    let worst_usd = |a: usize, b: usize| checkpoints.cost(a, b);
    let x = super::schedule::acquisition_covariates(pool, &cov.x);
    // Systems: the apparent ranking is the one reported (docs/systems.md), so aimed at.
    let xbar = (pool.is_systems() && cov.p() > 0).then(|| crate::model::summary::base_means(pool, cov));
    let rule = PickRule {
        pool,
        x: &x,
        p: cov.p(),
        k,
        design: input.design,
        strategy,
        orders: settings.orders,
        seed,
        worst_usd: &worst_usd,
        allowed: input.allowed,
        target_xbar: xbar.as_deref(),
        panel: None,
    };
    let mut st = State { verdicts: Vec::new(), log: Vec::new(), unavailable: 0, fit: None };
    let n_points = checkpoints.len();
    let mut points = Vec::with_capacity(n_points);
    let answer = |st: &mut State, sched: &mut Scheduler, p: Pick| {
        let usd = checkpoints.cost(p.a, p.b);
        st.answer(sched, input.judge, p, usd);
    };
    loop {
        // A budget of every ordered pair asks all that are left at once (module doc).
        let all_pairs = match &checkpoints {
            Checkpoints::Comparisons(b) => b[points.len()] >= total,
            Checkpoints::Usd { .. } => false,
        };
        if all_pairs && sched.quiet() {
            let asked = sched.unavailable_for_picking();
            let between = match input.allowed {
                Some(al) => {
                    let mut v: Vec<(usize, usize)> = al.ordered().collect();
                    v.sort_unstable();
                    v
                }
                None => pool.ordered_pairs_within_prompts(|a, b| pool.item_base[a] != pool.item_base[b]),
            };
            let left = within.iter().chain(&between).copied().filter(|q| !asked.contains(q));
            for pick in sched.send_chosen(left.collect::<Vec<_>>()) {
                answer(&mut st, &mut sched, pick);
            }
        }
        let fitted =
            st.fit.as_ref().map(|f| Fitted { post: &f.post, membership: &f.summary.membership, certified: None });
        match sched.next_action(&rule, fitted.as_ref(), Signals::default()) {
            Action::Refit => st.refit(&mut sched, pool, cov, seed, settings)?,
            Action::Send(picks) => picks.into_iter().for_each(|p| answer(&mut st, &mut sched, p)),
            Action::Wait { .. } => break,
            Action::Stop(reason) => match &checkpoints {
                Checkpoints::Comparisons(budgets) => {
                    let exhausted = reason != StopReason::MaxComparisons;
                    while points.len() < budgets.len() && (exhausted || st.log.len() >= budgets[points.len()]) {
                        points.push(st.point(budgets[points.len()], pool, cov, seed, settings)?);
                    }
                    match budgets.get(points.len()) {
                        Some(&b) if !exhausted => sched.set_max_comparisons(limit(b)),
                        _ => break,
                    }
                }
                Checkpoints::Usd { limits, .. } => {
                    // At `max_usd` this checkpoint is done; any other stop ends the path, and
                    // its last fit stands at every checkpoint left.
                    let exhausted = reason != StopReason::MaxUsd;
                    points.push(st.point(st.log.len(), pool, cov, seed, settings)?);
                    while exhausted && points.len() < limits.len() {
                        points.push(st.point(st.log.len(), pool, cov, seed, settings)?);
                    }
                    match limits.get(points.len()) {
                        Some(&b) => sched.set_max_usd(Some(b)),
                        None => break,
                    }
                }
            },
        }
    }
    Ok(Path { points, log: st.log, unavailable: st.unavailable })
}

/// The number of ordered pairs of items of one prompt with different bases, counted without
/// listing them (10⁸ at N = 10,000): per prompt, n² − Σ_base n_base².
fn between_count(pool: &Pool) -> usize {
    pool.prompt_items()
        .iter()
        .map(|items| {
            let mut per_base: HashMap<usize, usize> = HashMap::new();
            for &i in items {
                *per_base.entry(pool.item_base[i]).or_default() += 1;
            }
            items.len() * items.len() - per_base.values().map(|c| c * c).sum::<usize>()
        })
        .sum()
}

/// Run Algorithm 1 on `sp` with `strategy` and `model`, recording a [`Checkpoint`] at each of
/// `budgets` (strictly increasing). The judge is the pool's own keyed verdict and the run seed
/// the pool seed. With `settings.profile` on and the bias-aware model, every checkpoint also
/// carries the profile-likelihood range over c ([`crate::model::profile`]).
///
/// # Errors
/// [`SimError::Fit`] naming the pool, strategy, model and comparisons of a failed fit.
///
/// # Panics
/// If `budgets` is empty or not strictly increasing, or k is not in 1..M.
pub fn run_path(
    sp: &SynthPool,
    strategy: StrategyKind,
    model: ModelKind,
    budgets: &[usize],
    settings: &SimSettings,
) -> Result<Vec<Checkpoint>, SimError> {
    let pool = &sp.pool;
    let cov = covariates(sp, model);
    let seed = sp.spec.seed;
    let judge = |a: usize, b: usize| Answer::Verdict(sp.verdict(a, b));
    let input = PathInput {
        pool,
        covariates: &cov,
        design: if sp.spec.paired { DesignKind::Paired } else { DesignKind::Single },
        seed,
        judge: &judge,
        allowed: None,
    };
    let path = follow(&input, strategy, budgets, settings).map_err(|(comparisons, source)| SimError::Fit {
        seed,
        strategy,
        model,
        comparisons,
        source,
    })?;
    let (m, k) = (pool.n_bases(), settings.k);
    let rank = gold_ranks(&sp.theta);
    let gold = sp.gold_topk(k);
    Ok(path
        .points
        .into_iter()
        .map(|p| {
            let log = &path.log[..p.comparisons];
            let mut by_rank = vec![0; m];
            for &(a, b) in log {
                let (i, j) = (pool.item_base[a], pool.item_base[b]);
                by_rank[rank[i]] += 1;
                if j != i {
                    by_rank[rank[j]] += 1;
                }
            }
            Checkpoint {
                budget: p.budget,
                comparisons: p.comparisons,
                recall: recall_at_k(&p.topk, &gold),
                topk: p.topk,
                shares: boundary_shares(log, &pool.item_base, &rank, k),
                c_hat: p.c_hat,
                kappa_hat: p.kappa_hat,
                profile_range_nats: p.profile_range_nats,
                queries_by_rank: by_rank,
                membership: p.membership,
                membership_apparent: p.membership_apparent,
                graph: p.graph,
            }
        })
        .collect())
}

/// The current fit of a simulated path: its summary, Laplace posterior and design.
struct PathFit {
    summary: crate::model::summary::FitSummary,
    post: crate::model::laplace::Posterior,
    design: crate::model::Design,
}

/// The verdicts of a simulated run so far, and its current fit.
struct State {
    verdicts: Vec<ItemVerdict>,
    /// Queries answered with a verdict (valid or invalid), in the order asked.
    log: Vec<(usize, usize)>,
    /// Queries answered [`Answer::Unavailable`].
    unavailable: usize,
    fit: Option<PathFit>,
}

impl State {
    /// Ask the judge about `pick` and tell the scheduler: a verdict (valid or invalid) is a
    /// comparison; no verdict sets the pair aside, as the runner does.
    /// The verdict is booked at `usd`.
    fn answer(&mut self, sched: &mut Scheduler, judge: &(dyn Fn(usize, usize) -> Answer + Sync), pick: Pick, usd: f64) {
        let Pick { a, b, reservation } = pick;
        match judge(a, b) {
            Answer::Verdict(y) => {
                self.verdicts.push(ItemVerdict { a, b, y, w: 1.0 });
                self.log.push((a, b));
                sched.stored_verdict(a, b, reservation, usd, true);
            }
            Answer::Invalid => {
                self.log.push((a, b));
                sched.stored_verdict(a, b, reservation, usd, true);
            }
            Answer::Unavailable => {
                self.unavailable += 1;
                sched.set_aside(a, b, reservation);
            }
        }
    }

    /// Refit on every verdict (warm start from the previous fit; Monte-Carlo stream
    /// `membership` keyed by the number of valid verdicts).
    fn refit(
        &mut self,
        sched: &mut Scheduler,
        pool: &Pool,
        cov: &Covariates,
        seed: u64,
        settings: &SimSettings,
    ) -> Result<(), (usize, FitError)> {
        sched.fit_started();
        let design = build_design(pool, cov, &self.verdicts);
        let mut mc_rng = rng::stream(seed, "membership", self.verdicts.len() as u64);
        let warm = self.fit.as_ref().map(|f| f.summary.beta());
        let (summary, _fit, post) = fit_and_summarise(
            pool,
            cov,
            &design,
            &settings.prior,
            settings.k,
            settings.mc_draws,
            warm.as_deref(),
            &mut mc_rng,
        )
        .map_err(|e| (self.verdicts.len(), e))?;
        self.fit = Some(PathFit { summary, post, design });
        sched.fit_finished();
        Ok(())
    }

    /// The point of budget `budget` at the current fit, with the apparent quality's point top-k
    /// and π (as a run of that budget reports them: Monte-Carlo stream `membership-apparent`).
    fn point(
        &self,
        budget: usize,
        pool: &Pool,
        cov: &Covariates,
        seed: u64,
        settings: &SimSettings,
    ) -> Result<PathPoint, (usize, FitError)> {
        let f = self.fit.as_ref().ok_or((0, FitError::InvalidData("no fit before the first checkpoint".into())))?;
        let s = &f.summary;
        let profile_range_nats = if settings.profile && cov.p() > 0 {
            let r = profile::profile(&f.design, 0, s.c[0], Some(&s.beta())).map_err(|e| (self.verdicts.len(), e))?;
            Some(r.range_nats)
        } else {
            None
        };
        let xbar = crate::model::summary::base_means(pool, cov);
        let phi: Vec<f64> =
            s.theta.iter().zip(&xbar).map(|(t, x)| t + x.iter().zip(&s.c).map(|(a, c)| a * c).sum::<f64>()).collect();
        let membership_apparent = if cov.p() > 0 {
            let mut r = rng::stream(seed, "membership-apparent", self.verdicts.len() as u64);
            crate::model::summary::apparent_quality(
                pool,
                cov,
                &f.design,
                &settings.prior,
                settings.k,
                settings.mc_draws,
                &s.beta(),
                &mut r,
            )
            .map_err(|e| (self.verdicts.len(), e))?
            .membership
        } else {
            s.membership.clone()
        };
        let graph = crate::analysis::ranking::comparison_graph(
            &pool.bases,
            self.verdicts.iter().map(|v| (pool.item_base[v.a], pool.item_base[v.b])),
        );
        Ok(PathPoint {
            graph,
            budget,
            comparisons: self.log.len(),
            topk_apparent: point_topk(&phi, settings.k),
            membership_apparent,
            topk: s.topk.clone(),
            c_hat: s.c.first().copied(),
            kappa_hat: s.kappa,
            profile_range_nats,
            membership: s.membership.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::synth::{SynthSpec, generate};

    fn pool(n: usize, paired: bool, seed: u64) -> SynthPool {
        generate(&SynthSpec { n, rho: 0.0, c_star: 1.0, kappa_star: 0.5, temperature: 1.0, paired, seed })
    }

    fn settings(k: usize) -> SimSettings {
        SimSettings { k, mc_draws: 200, ..SimSettings::default() }
    }

    #[test]
    fn between_pairs_are_counted_without_listing_them() {
        for paired in [false, true] {
            let sp = pool(12, paired, 3);
            let listed = sp.pool.ordered_pairs_within_prompts(|a, b| sp.pool.item_base[a] != sp.pool.item_base[b]);
            assert_eq!(between_count(&sp.pool), listed.len(), "paired: {paired}");
        }
        // 12 bases: 12·11 ordered pairs; paired, 24 items with two per base: 24² − 12·2².
        assert_eq!(between_count(&pool(12, false, 3).pool), 132);
        assert_eq!(between_count(&pool(12, true, 3).pool), 528);
    }

    #[test]
    fn boundary_shares_of_all_pairs_are_the_pair_counts() {
        // Every ordered pair of M = 30 bases, k = 5: pairs touching rank 5 or 6:
        // 1 − C(28,2)/C(30,2) = 57/435; straddling: 5·25/435; both in ranks 3..8: C(6,2)/435.
        let m = 30;
        let theta: Vec<f64> = (0..m).map(|i| ((i * 7) % m) as f64).collect();
        let rank = gold_ranks(&theta);
        let base: Vec<usize> = (0..m).collect();
        let q: Vec<(usize, usize)> =
            (0..m).flat_map(|a| (0..m).filter(move |b| *b != a).map(move |b| (a, b))).collect();
        let s = boundary_shares(&q, &base, &rank, 5);
        assert!((s.boundary - 57.0 / 435.0).abs() < 1e-12, "{s:?}");
        assert!((s.straddle - 125.0 / 435.0).abs() < 1e-12);
        assert!((s.window - 15.0 / 435.0).abs() < 1e-12);
    }

    #[test]
    fn boundary_shares_by_hand() {
        // θ ranks: base 3 best, then 0, 2, 1, 4. k = 2: boundary ranks 2 and 3 (1-based) are bases
        // 0 and 2; top-2 = {3, 0}; window = 1-based ranks 0..5 → every base.
        let theta = [2.0, 0.0, 1.0, 3.0, -1.0];
        let rank = gold_ranks(&theta);
        assert_eq!(rank, vec![1, 3, 2, 0, 4]);
        let base = [0, 1, 2, 3, 4];
        // (3,1): no boundary base, straddles; (0,2): boundary, straddles; (1,4): neither.
        let s = boundary_shares(&[(3, 1), (0, 2), (1, 4), (4, 1)], &base, &rank, 2);
        assert_eq!(s, BoundaryShares { boundary: 0.25, straddle: 0.5, window: 1.0 });
    }

    #[test]
    fn a_chained_checkpoint_equals_a_separate_run() {
        // 16 is a multiple of R = 8: the path to 40 is the same with or without the stop at 16.
        let sp = pool(12, false, 4);
        for strategy in [StrategyKind::Topk, StrategyKind::Thompson, StrategyKind::RoundRobin] {
            let chained = run_path(&sp, strategy, ModelKind::BiasAware, &[16, 40], &settings(3)).unwrap();
            let alone = run_path(&sp, strategy, ModelKind::BiasAware, &[40], &settings(3)).unwrap();
            assert_eq!(chained[1], alone[0], "{strategy:?}");
            assert_eq!(chained[0].comparisons, 16);
            assert_eq!(alone[0].comparisons, 40);
            let first16 = run_path(&sp, strategy, ModelKind::BiasAware, &[16], &settings(3)).unwrap();
            assert_eq!(chained[0], first16[0]);
        }
    }

    #[test]
    fn a_spend_checkpoint_is_the_run_with_that_max_usd() {
        let sp = pool(12, false, 4);
        let cov = covariates(&sp, ModelKind::BiasAware);
        let judge = |a: usize, b: usize| Answer::Verdict(sp.verdict(a, b));
        let input = PathInput {
            pool: &sp.pool,
            covariates: &cov,
            design: DesignKind::Single,
            seed: 4,
            judge: &judge,
            allowed: None,
        };
        // At $0.01 a query, $0.125 buys 12: a batch of R = 8 and the 4 of the next that fit, as
        // a run with max_comparisons 12 asks them.
        let flat = |_: usize, _: usize| 0.01;
        let usd = follow_usd(&input, StrategyKind::Topk, &[0.125, 0.3], &flat, &settings(3)).unwrap();
        let by_count = follow(&input, StrategyKind::Topk, &[12], &settings(3)).unwrap();
        assert_eq!(usd.points[0], by_count.points[0]);
        assert_eq!(usd.log[..12], by_count.log[..]);
        assert_eq!(usd.points[1].comparisons, 30);
        let first = follow_usd(&input, StrategyKind::Topk, &[0.125], &flat, &settings(3)).unwrap();
        assert_eq!(first.points[0], usd.points[0], "the chained checkpoint is the separate run");
        // Prices that differ per query: no checkpoint is passed, and a path that runs out of
        // pairs stands at every checkpoint after.
        let priced = |a: usize, b: usize| 0.001 * (1 + a + 2 * b) as f64;
        let p = follow_usd(&input, StrategyKind::Topk, &[0.05, 0.2, 100.0, 200.0], &priced, &settings(3)).unwrap();
        for (pt, b) in p.points.iter().zip([0.05, 0.2, 100.0, 200.0]) {
            let spent: f64 = p.log[..pt.comparisons].iter().map(|&(a, c)| priced(a, c)).sum();
            assert!(spent <= b + 1e-12, "{spent} > {b}");
        }
        assert_eq!(p.points[2].comparisons, 132, "every ordered pair of 12");
        assert_eq!(p.points[3], p.points[2]);
    }

    #[test]
    fn all_pairs_is_the_fit_to_every_verdict() {
        // Independent computation: fit the model once to every ordered pair's verdict.
        let sp = pool(10, false, 2);
        let s = settings(3);
        let cov = covariates(&sp, ModelKind::BiasAware);
        let n = sp.pool.n_items();
        let all: Vec<ItemVerdict> = (0..n)
            .flat_map(|a| (0..n).filter(move |b| *b != a).map(move |b| (a, b)))
            .map(|(a, b)| ItemVerdict { a, b, y: sp.verdict(a, b), w: 1.0 })
            .collect();
        let design = build_design(&sp.pool, &cov, &all);
        let mut r = rng::stream(sp.spec.seed, "membership", all.len() as u64);
        let (want, _, _) = fit_and_summarise(&sp.pool, &cov, &design, &s.prior, 3, s.mc_draws, None, &mut r).unwrap();
        for strategy in [StrategyKind::Topk, StrategyKind::Random] {
            let got = run_path(&sp, strategy, ModelKind::BiasAware, &[usize::MAX], &s).unwrap();
            assert_eq!(got[0].comparisons, 90);
            assert_eq!(got[0].topk, want.topk);
            assert!((got[0].c_hat.unwrap() - want.c[0]).abs() < 1e-8);
            assert_eq!(got[0].recall, recall_at_k(&want.topk, &sp.gold_topk(3)));
        }
    }

    #[test]
    fn paired_pools_ask_the_within_base_pairs_first() {
        let sp = pool(6, true, 1);
        let cps = run_path(&sp, StrategyKind::Topk, ModelKind::BiasAware, &[12, 20], &settings(2)).unwrap();
        // 6 bases × 2 orders of (terse, elaborated) = 12 within-base queries: no between-base one.
        assert_eq!(cps[0].comparisons, 12);
        assert_eq!(cps[0].shares, BoundaryShares::default());
        assert_eq!(cps[0].queries_by_rank, vec![2; 6]);
        // Within-base comparisons identify c: ĉ moves towards c* = 1 away from the prior mean 0.
        assert!(cps[0].c_hat.unwrap() > 0.3, "{:?}", cps[0].c_hat);
        assert_eq!(cps[1].comparisons, 20);
        // Within-base queries touch one base, between-base ones two.
        assert_eq!(cps[1].queries_by_rank.iter().sum::<usize>(), 12 + 2 * 8);
    }

    #[test]
    fn the_naive_model_has_no_bias_coefficient() {
        let sp = pool(8, false, 3);
        let cps = run_path(&sp, StrategyKind::Topk, ModelKind::Naive, &[8], &settings(2)).unwrap();
        assert_eq!(cps[0].c_hat, None);
        assert_eq!(cps[0].comparisons, 8);
    }
}

//! The judge-panel experiment (docs/experiments.md, "A judge panel"): on every pool × seed,
//! recall@k against spend for
//! - each judge **alone**: Algorithm 1 as `topk-judge run` runs it ([`crate::run::sim::follow`]:
//!   bias-aware model with `words`, top-k acquisition, both orders), reporting the apparent
//!   ranking φ̂ as a single-pool run does when c is not identified;
//! - each untrusted judge **with a gate**: the same run, then `gate_anchors` trusted-judge anchors
//!   per seed spread over all pools (both orders each, their cost shared by the pools), the sign
//!   test choosing the corrected θ̂ or the apparent φ̂ ranking for every pool (docs/model.md §5);
//! - the **panel**: every judge in one model (docs/model.md §8), each query routed to the judge
//!   of the largest expected information per dollar ([`crate::acquire::panel`]), reporting θ̂;
//! - with `prior_anchors`, the **panel with carried judge priors**: `prior_anchors` pairs per
//!   seed spread over all pools, asked of every judge in both orders (their cost shared by the
//!   pools), one fit of them gives each judge's κ_j and c_j, and every pool's panel starts from
//!   them as its prior (docs/model.md §8, "Carried judge priors").
//!
//! A run is followed to the largest checkpoint once and read at each smaller one: at each it
//! buys what still fits, as a run with that `max_usd` ends (its picks do not depend on the budget
//! left, except that a query is never bought past it), then goes on.

use super::SweepError;
use crate::acquire::StrategyKind;
use crate::acquire::panel::{PanelContext, select, select_one_order};
use crate::analysis::design::DesignKind;
use crate::analysis::gate::{decide, order_averaged, select_anchors};
use crate::analysis::ranking::recall_with_ties;
use crate::config::panel::{PanelSweep, SynthPanelPools};
use crate::domain::pool::{CovariateSpec, Covariates, Item, Pool, build_covariates};
use crate::domain::rng;
use crate::domain::verdict::{Answer, ItemVerdict};
use crate::judge::JudgeInfo;
use crate::judge::mock::MockJudge;
use crate::model::membership::point_topk;
use crate::model::panel::{self, JudgePrior, Normal, PanelDesign, PanelFit, PanelObs, PanelRole};
use crate::report::sweep::MeanSe;
use crate::run::sim::{PathInput, SimSettings, follow_usd};
use serde::Serialize;
use std::collections::HashSet;
use std::fmt::Write as _;
use std::path::Path;

/// One arm's state at one spend checkpoint of one pool × seed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PanelRow {
    /// Pool id.
    pub pool: String,
    /// Replicate seed.
    pub seed: u64,
    /// `alone:<judge>`, `gate:<judge>`, `panel` or `panel+carried`.
    pub arm: String,
    /// The checkpoint (USD per pool).
    pub budget_usd: f64,
    /// USD spent by then (for a gate arm including its share of the anchors).
    pub spend_usd: f64,
    /// Recall@k against the gold top-k (ties at the boundary share the places).
    pub recall: f64,
    /// Queries per judge (panel order of judges); a gate arm's trusted queries are its share of
    /// the anchors (fractional).
    pub queries: Vec<f64>,
}

/// The panel's estimates at its last checkpoint, per judge.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JudgeEstimate {
    /// Pool id.
    pub pool: String,
    /// Seed.
    pub seed: u64,
    /// Judge name.
    pub judge: String,
    /// κ̂_j and sd (logits).
    pub kappa: (f64, f64),
    /// ĉ_j of `words` and sd (logits per sd of words); `None` for the trusted judge.
    pub c_words: Option<(f64, f64)>,
    /// ŝ_j and sd.
    pub scale: (f64, f64),
    /// Queries and USD of this judge in the panel.
    pub queries: usize,
    /// USD.
    pub spend_usd: f64,
    /// Pairs where both orders disagree with each other (a flip), over pairs asked in both orders.
    pub flip_rate: Option<f64>,
}

/// All outputs of the experiment.
#[derive(Debug, Clone, Default)]
pub struct PanelResult {
    /// Rows (pool × seed × arm × checkpoint).
    pub rows: Vec<PanelRow>,
    /// Per-judge estimates of the panel at the largest checkpoint.
    pub estimates: Vec<JudgeEstimate>,
    /// Per seed and judge, the priors the "panel+carried" arm carried (empty without
    /// `prior_anchors`).
    pub carried: Vec<CarriedEstimate>,
}

/// The pools of the experiment.
///
/// # Errors
/// The pool file cannot be read, or an item lacks gold `quality`.
pub fn pools(s: &PanelSweep, path: &std::path::Path) -> Result<Vec<Pool>, SweepError> {
    if let Some(sp) = &s.pools.synthetic {
        return Ok((0..sp.count).map(|i| synthetic_pool(sp, sp.seed + i as u64)).collect());
    }
    let file = s.pool_file(path).expect("load checked file or synthetic");
    let mut v = crate::store::pool_file::read_pools(&file).map_err(|e| {
        SweepError::Config(crate::config::sections::pool_error_at(
            path,
            "pools.file",
            s.pools.file.as_deref().unwrap_or(&file),
            e,
        ))
    })?;
    if let Some(l) = s.pools.limit {
        v.truncate(l);
    }
    for p in &v {
        if p.base_quality().is_none() {
            return Err(SweepError::Write {
                path: file.clone(),
                msg: format!("pool {:?}: every item needs gold `quality` for recall@k", p.pool_id),
            });
        }
        crate::config::sections::check_k_in_pool(s.k, p)
            .map_err(|e| SweepError::Config(crate::config::ConfigError::invalid(path, e)))?;
    }
    Ok(v)
}

/// A synthetic pool of the panel experiment ([`SynthPanelPools`]).
pub fn synthetic_pool(sp: &SynthPanelPools, seed: u64) -> Pool {
    let g = crate::analysis::synth::generate(&crate::analysis::synth::SynthSpec {
        n: sp.n,
        rho: sp.rho,
        c_star: 0.0,
        kappa_star: 0.0,
        temperature: 1.0,
        paired: false,
        seed,
    });
    let items = (0..sp.n)
        .map(|i| {
            let words = (sp.words_mean + sp.words_sd * g.x[i]).round().max(1.0);
            Item {
                id: format!("s{i}"),
                quality: Some(3.0 + sp.quality_sd * g.theta[i]),
                covariates: [("words".to_owned(), words)].into_iter().collect(),
                ..Default::default()
            }
        })
        .collect();
    let task = vec!["w"; sp.task_words].join(" ");
    Pool::new(format!("synthetic-{seed}"), task, items).expect("valid synthetic pool")
}

fn judges_for(s: &PanelSweep, seed: u64) -> Vec<MockJudge> {
    s.panel
        .judges
        .iter()
        .enumerate()
        .map(|(j, spec)| {
            let mut cfg = spec.mock.clone();
            cfg.seed = rng::key64(seed, &["panel-judge", &j.to_string()]);
            MockJudge::new(cfg).expect("checked at load")
        })
        .collect()
}

/// One single-judge path: (spend, reported recall, θ̂ naive, θ̂ corrected, corrected recall,
/// queries) at each of its checkpoints.
struct AlonePoint {
    spend: f64,
    recall: f64,
    recall_corrected: f64,
    naive: Vec<f64>,
    corrected: Vec<f64>,
    queries: usize,
}

/// The panel at one refit: (USD spent, recall@k, queries per judge).
type PanelPoint = (f64, f64, Vec<f64>);

struct JobOut {
    alone: Vec<Vec<AlonePoint>>,
    panel: Vec<PanelPoint>,
    carried: Vec<PanelPoint>,
    estimates: Vec<JudgeEstimate>,
}

/// Each judge's κ_j and c_j learned on one seed's prior anchors (docs/model.md §8, "Carried
/// judge priors"): `prior_anchors` pairs spread over the pools (a pool per pair in a shuffled
/// round-robin, two answers of one prompt drawn at random), every judge in both orders, one panel
/// fit over the anchors' answers with words in hundreds (raw, so that one c holds for every
/// pool; each pool's prior is it times that pool's sd of words / 100, the pool's z-score unit).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CarriedEstimate {
    /// Seed.
    pub seed: u64,
    /// Judge name.
    pub judge: String,
    /// κ̂_j and its Laplace sd (logits).
    pub kappa: (f64, f64),
    /// ĉ_j of words and sd (logits per 100 words); `None` for the trusted judge.
    pub c_per_100_words: Option<(f64, f64)>,
    /// USD per pool: every judge's anchor queries, shared by the pools.
    pub share_usd: f64,
}

fn raw_words(pool: &Pool) -> Vec<f64> {
    build_covariates(pool, &[CovariateSpec::parse("words:raw").expect("valid spec")])
        .expect("words")
        .x
        .iter()
        .map(|r| r[0])
        .collect()
}

/// Answers per group of prior anchors (every pair of them is an anchor).
const ANCHOR_GROUP: usize = 4;

/// Prior precision on θ in the fit of the prior anchors (1/logit²; nearly flat). There θ is a
/// nuisance seen on a few pairs per answer, and a prior that shrinks it leaves part of each
/// quality difference unexplained, which attenuates the judges' κ and c towards 0 (logistic
/// regression is not collapsible): with the runs' λ_θ = 1, ĉ came out at 0.6 of the truth on
/// synthetic pools; at 0.01 its errors over 12 seeds averaged −0.25 sd.
const ANCHOR_LAMBDA_THETA: f64 = 0.01;

/// The prior anchors of one seed, their fit and its estimates per judge.
fn calibrate(s: &PanelSweep, pools: &[Pool], seed: u64) -> Result<Vec<CarriedEstimate>, SweepError> {
    use rand::RngExt as _;
    use rand::seq::SliceRandom as _;
    let judges = judges_for(s, seed);
    let mut r = rng::stream(seed, "panel-prior-anchors", 0);
    let mut order: Vec<usize> = (0..pools.len()).collect();
    order.shuffle(&mut r);
    let mut bases: std::collections::HashMap<(usize, usize), usize> = std::collections::HashMap::new();
    let mut queries: Vec<(usize, usize, usize)> = Vec::new(); // (pool, a, b)
    // Anchors come in groups: G answers of one prompt and all their pairs, so each answer's θ
    // (a nuisance here) rests on G − 1 pairs, not one (with one pair per answer the judges'
    // shared parameters inherit the incidental-parameter bias of a per-pair θ).
    let group = ANCHOR_GROUP;
    let mut seen = HashSet::new();
    let mut visit = 0;
    let mut stale = 0;
    while queries.len() < s.panel.prior_anchors && stale < 4 * order.len() {
        let p = order[visit % order.len()];
        visit += 1;
        let prompts: Vec<Vec<usize>> = pools[p].prompt_items().into_iter().filter(|v| v.len() >= 2).collect();
        if prompts.is_empty() {
            stale += 1;
            continue;
        }
        let mut items = prompts[r.random_range(0..prompts.len())].clone();
        items.shuffle(&mut r);
        items.truncate(group);
        let before = queries.len();
        for x in 0..items.len() {
            for y in x + 1..items.len() {
                let (a, b) = (items[x], items[y]);
                if queries.len() < s.panel.prior_anchors && seen.insert((p, a.min(b), a.max(b))) {
                    queries.push((p, a, b));
                }
            }
        }
        if queries.len() == before {
            stale += 1;
        }
    }
    let mut base_of = |p: usize, item: usize| {
        let key = (p, pools[p].item_base[item]);
        let next = bases.len();
        *bases.entry(key).or_insert(next)
    };
    let mut obs = Vec::new();
    let mut usd_of = vec![0.0; judges.len()];
    let mut words_of: std::collections::HashMap<usize, Vec<f64>> = std::collections::HashMap::new();
    for &(p, a, b) in &queries {
        let (ba, bb) = (base_of(p, a), base_of(p, b));
        let words = words_of.entry(p).or_insert_with(|| raw_words(&pools[p]));
        for (j, judge) in judges.iter().enumerate() {
            for (x, y, bx, by) in [(a, b, ba, bb), (b, a, bb, ba)] {
                usd_of[j] += judge.worst_case_usd(&pools[p], x, y);
                let o = PanelObs { i: bx, j: by, judge: j, y: judge.outcome(&pools[p], x, y), w: 1.0 };
                obs.push((o, (words[x] - words[y]) / 100.0));
            }
        }
    }
    // θ is in the logits of the cheapest judge (the reference, s = 1): the prior on θ then
    // shrinks the quality differences least where a sharper judge's logits would spread them
    // wider (docs/model.md §8).
    let cheapest = (0..judges.len()).min_by(|&x, &y| usd_of[x].total_cmp(&usd_of[y])).expect("at least two judges");
    let roles: Vec<PanelRole> = s
        .panel
        .judges
        .iter()
        .enumerate()
        .map(|(j, spec)| PanelRole { trusted: spec.trusted, reference: j == cheapest })
        .collect();
    let mut d = PanelDesign::new(bases.len(), 1, &roles);
    for (o, dx) in obs {
        d.push(o, &[dx]);
    }
    let prior = crate::model::bt::Prior { lambda_theta: ANCHOR_LAMBDA_THETA, ..s.prior };
    let f = panel::fit(&d, &prior, None).map_err(|source| SweepError::RecordedFit {
        pool: "the prior anchors".into(),
        seed,
        strategy: "panel".into(),
        model: "panel".into(),
        comparisons: d.obs.len(),
        source,
    })?;
    let share_usd = usd_of.iter().sum::<f64>() / pools.len() as f64;
    Ok(s.panel
        .judges
        .iter()
        .enumerate()
        .map(|(j, spec)| {
            let k = f.kappa(j);
            CarriedEstimate {
                seed,
                judge: spec.name.clone(),
                kappa: (k.value, k.sd),
                c_per_100_words: f.c(j).first().map(|c| (c.value, c.sd)),
                share_usd,
            }
        })
        .collect())
}

/// One pool's carried priors from a seed's estimates: κ_j as learned, c_j of words in the pool's
/// z-score unit (per 100 words × the pool's population sd of words / 100).
fn carried_priors(pool: &Pool, est: &[CarriedEstimate]) -> Vec<JudgePrior> {
    let sd = crate::domain::pool::zscore_scale(&raw_words(pool)).map(|(_, sd)| sd);
    est.iter()
        .map(|e| JudgePrior {
            kappa: Some(Normal { mean: e.kappa.0, sd: e.kappa.1 }),
            c: e.c_per_100_words
                .zip(sd)
                .map(|((m, v), sd)| vec![Some(Normal { mean: m * sd / 100.0, sd: v * sd / 100.0 })])
                .unwrap_or_default(),
        })
        .collect()
}

fn words_covariates(pool: &Pool) -> Covariates {
    build_covariates(pool, &[CovariateSpec::parse("words:zscore").expect("valid spec")]).expect("words")
}

/// One judge alone on one pool × seed, read at each of `checkpoints` (USD, increasing): the run
/// `topk-judge run` makes with that `max_usd` ([`crate::run::sim::follow_usd`]).
fn alone(
    s: &PanelSweep,
    pool: &Pool,
    judge: &MockJudge,
    seed: u64,
    checkpoints: &[f64],
    gold: &[f64],
) -> Result<Vec<AlonePoint>, SweepError> {
    let cov = words_covariates(pool);
    let answer = |a: usize, b: usize| Answer::Verdict(judge.outcome(pool, a, b));
    let input = PathInput { pool, covariates: &cov, design: DesignKind::Single, seed, judge: &answer, allowed: None };
    let settings = SimSettings {
        k: s.k,
        prior: s.prior,
        refit_every: s.refit_every,
        orders: crate::acquire::Orders::Both,
        mc_draws: s.mc_draws,
        profile: false,
    };
    let cost = |a: usize, b: usize| judge.worst_case_usd(pool, a, b);
    let path =
        follow_usd(&input, StrategyKind::Topk, checkpoints, &cost, &settings).map_err(|(comparisons, source)| {
            SweepError::RecordedFit {
                pool: pool.pool_id.clone(),
                seed,
                strategy: "topk".into(),
                model: "bias_aware".into(),
                comparisons,
                source,
            }
        })?;
    let mut out = Vec::new();
    for p in &path.points {
        let log = &path.log[..p.comparisons];
        let spend: f64 = log.iter().map(|&(a, b)| judge.worst_case_usd(pool, a, b)).sum();
        let verdicts: Vec<ItemVerdict> =
            log.iter().map(|&(a, b)| ItemVerdict { a, b, y: judge.outcome(pool, a, b), w: 1.0 }).collect();
        let [naive, corrected] = crate::analysis::gate::fit_naive_and_corrected(pool, &cov, &verdicts, &s.prior)
            .map_err(|source| SweepError::RecordedFit {
                pool: pool.pool_id.clone(),
                seed,
                strategy: "topk".into(),
                model: "naive and bias_aware".into(),
                comparisons: verdicts.len(),
                source,
            })?;
        out.push(AlonePoint {
            spend,
            recall: recall_with_ties(&p.topk_apparent, gold, s.k),
            recall_corrected: recall_with_ties(&p.topk, gold, s.k),
            naive,
            corrected,
            queries: p.comparisons,
        });
    }
    Ok(out)
}

/// The panel on one pool × seed, followed through `stops` (USD, increasing): at each, the
/// queries that still fit are bought (one order of a pair when no pair's two orders fit), as
/// `topk-judge run` does with that `max_usd`, before the path goes on to the next. A point per
/// refit: (spend, recall, queries per judge).
fn panel_path(
    s: &PanelSweep,
    pool: &Pool,
    judges: &[MockJudge],
    (seed, stops): (u64, &[f64]),
    gold: &[f64],
    carried: &[JudgePrior],
) -> Result<(Vec<PanelPoint>, Vec<JudgeEstimate>), SweepError> {
    let cov = words_covariates(pool);
    let n = pool.n_items();
    let nj = judges.len();
    let x: Vec<Vec<Vec<f64>>> = vec![cov.x.clone(); nj];
    let mut queried: Vec<HashSet<(usize, usize)>> = vec![HashSet::new(); nj];
    let mut obs: Vec<(usize, usize, usize, f64)> = Vec::new();
    let mut spent = 0.0;
    let mut per_judge = vec![0usize; nj];
    let mut per_judge_usd = vec![0.0; nj];
    let mut rng = rng::stream(seed, "panel-acquisition", 0);
    let mut mc = rng::stream(seed, "panel-membership", 0);
    let cost = |j: usize, a: usize, b: usize| judges[j].worst_case_usd(pool, a, b);
    let price = |j: usize, a: usize, b: usize| judges[j].expected_usd(pool, a, b);
    let mut curve = Vec::new();
    let mut warm: Option<Vec<f64>> = None;
    let prompts = pool.prompt_items();
    let fail = |q: usize, source| SweepError::RecordedFit {
        pool: pool.pool_id.clone(),
        seed,
        strategy: "panel".into(),
        model: "panel".into(),
        comparisons: q,
        source,
    };
    let mut last: Option<PanelFit>;
    let mut next_stop = 0;
    let mut prev_reference: Option<usize> = None;
    loop {
        // The reference (s = 1) is the judge with the most verdicts so far: θ is then in the
        // logits of the judge whose data pin its scale best, and the prior on θ does not shrink a
        // sparsely used sharp judge's scale into the others' (docs/model.md §8).
        let reference = (0..nj).rev().max_by_key(|&j| per_judge[j]).unwrap_or(0);
        let roles: Vec<PanelRole> = s
            .panel
            .judges
            .iter()
            .enumerate()
            .map(|(j, x)| PanelRole { trusted: x.trusted, reference: j == reference })
            .collect();
        if prev_reference != Some(reference) {
            warm = None;
        }
        prev_reference = Some(reference);
        let mut d = PanelDesign::new(pool.n_bases(), cov.p(), &roles);
        for (j, prior) in carried.iter().enumerate() {
            d.carry(j, prior.clone());
        }
        for &(a, b, j, y) in &obs {
            let dx: Vec<f64> = x[j][a].iter().zip(&x[j][b]).map(|(p, q)| p - q).collect();
            d.push(PanelObs { i: pool.item_base[a], j: pool.item_base[b], judge: j, y, w: 1.0 }, &dx);
        }
        let f = panel::fit(&d, &s.prior, warm.as_deref()).map_err(|e| fail(obs.len(), e))?;
        warm = Some(f.beta.clone());
        let pi = f.membership(s.k, s.mc_draws, &mut mc);
        curve.push((
            spent,
            recall_with_ties(&point_topk(f.theta(), s.k), gold, s.k),
            per_judge.iter().map(|&q| q as f64).collect(),
        ));
        let mut picks = Vec::new();
        while let Some(&stop) = stops.get(next_stop) {
            let ctx = PanelContext {
                fit: &f,
                item_base: &pool.item_base,
                prompts: &prompts,
                x: &x,
                membership: &pi,
                queried: &queried,
                cost: &cost,
                price: &price,
                remaining_usd: stop - spent,
                pending: &[],
            };
            picks = select(&ctx, s.refit_every, &mut rng);
            if picks.is_empty() {
                picks = select_one_order(&ctx, &mut rng);
            }
            if !picks.is_empty() {
                break;
            }
            next_stop += 1;
        }
        last = Some(f);
        if picks.is_empty() {
            break;
        }
        for (a, b, j) in picks {
            let y = judges[j].outcome(pool, a, b);
            let c = cost(j, a, b);
            spent += c;
            per_judge[j] += 1;
            per_judge_usd[j] += c;
            queried[j].insert((a, b));
            obs.push((a, b, j, y));
        }
        let _ = n;
    }
    let f = last.expect("at least one fit");
    let estimates = (0..nj)
        .map(|j| {
            let (mut both, mut flips) = (0usize, 0usize);
            for &(a, b, jj, y) in &obs {
                if jj == j && a < b && queried[j].contains(&(b, a)) {
                    let y2 = obs.iter().find(|o| o.0 == b && o.1 == a && o.2 == j).map(|o| o.3).expect("asked");
                    both += 1;
                    // A flip: the same slot wins both times (the verdict follows the position).
                    if (y > 0.5) == (y2 > 0.5) {
                        flips += 1;
                    }
                }
            }
            let (k, sc) = (f.kappa(j), f.scale(j));
            JudgeEstimate {
                pool: pool.pool_id.clone(),
                seed,
                judge: s.panel.judges[j].name.clone(),
                kappa: (k.value, k.sd),
                c_words: f.c(j).first().map(|c| (c.value, c.sd)),
                scale: (sc.value, sc.sd),
                queries: per_judge[j],
                spend_usd: per_judge_usd[j],
                flip_rate: (both > 0).then(|| flips as f64 / both as f64),
            }
        })
        .collect();
    Ok((curve, estimates))
}

/// Run the experiment on `pools` (every pool × seed on `threads` workers).
///
/// # Errors
/// A failed fit, naming pool, seed and arm.
pub fn run(
    s: &PanelSweep,
    pools: &[Pool],
    threads: usize,
    on_done: &(dyn Fn(usize) + Sync),
) -> Result<PanelResult, SweepError> {
    let max_usd = *s.spend_usd.last().expect("checked non-empty");
    let mut budgets: Vec<f64> = s.spend_usd.clone();
    for b in &s.spend_usd {
        let m = b * s.panel.compare_multiple;
        if !budgets.iter().any(|x| (x - m).abs() < 1e-12) {
            budgets.push(m);
        }
    }
    budgets.sort_by(f64::total_cmp);
    let trusted = s.panel.judges.iter().position(|j| j.trusted);
    // An untrusted judge alone is also read where the gate leaves it: at B less the gate
    // anchors' expected share per pool.
    let share_est = trusted.map(|t| gate_share(s, pools, t));
    let checkpoints: Vec<Vec<f64>> = (0..s.panel.judges.len())
        .map(|j| {
            let mut c = budgets.clone();
            if let Some(share) = share_est.filter(|_| Some(j) != trusted) {
                c.extend(budgets.iter().map(|b| b - share).filter(|&b| b > 0.0));
            }
            c.sort_by(f64::total_cmp);
            c.dedup_by(|x, y| (*x - *y).abs() < 1e-12);
            c
        })
        .collect();
    let jobs: Vec<(usize, u64)> = s.seeds.iter().flat_map(|&seed| (0..pools.len()).map(move |p| (p, seed))).collect();
    let calibration: Vec<Vec<CarriedEstimate>> = if s.panel.prior_anchors > 0 && s.panel.judges.len() > 1 {
        s.seeds.iter().map(|&seed| calibrate(s, pools, seed)).collect::<Result<_, _>>()?
    } else {
        Vec::new()
    };
    let outs = super::parallel_jobs(&jobs, threads, on_done, |&(p, seed)| -> Result<JobOut, SweepError> {
        let pool = &pools[p];
        let gold = pool.base_quality().expect("checked");
        let judges = judges_for(s, seed);
        let alone = judges
            .iter()
            .zip(&checkpoints)
            .map(|(j, c)| alone(s, pool, j, seed, c, &gold))
            .collect::<Result<Vec<_>, _>>()?;
        let (panel, estimates) = if judges.len() > 1 {
            panel_path(s, pool, &judges, (seed, &s.spend_usd), &gold, &[])?
        } else {
            (Vec::new(), Vec::new())
        };
        let carried = match s.seeds.iter().position(|&x| x == seed).and_then(|i| calibration.get(i)) {
            Some(est) => {
                let share = est[0].share_usd;
                let stops: Vec<f64> = s.spend_usd.iter().map(|b| b - share).filter(|&b| b > 0.0).collect();
                panel_path(s, pool, &judges, (seed, &stops), &gold, &carried_priors(pool, est))?.0
            }
            None => Vec::new(),
        };
        Ok(JobOut { alone, panel, carried, estimates })
    })?;
    let nj = s.panel.judges.len();
    let mut rows = Vec::new();
    let mut estimates = Vec::new();
    let random_recall = |pool: &Pool| s.k as f64 / pool.n_bases() as f64;
    for (&(p, seed), out) in jobs.iter().zip(&outs) {
        let pool = &pools[p];
        for &b in &budgets {
            for (j, path) in out.alone.iter().enumerate() {
                let at = path.iter().rev().find(|q| q.spend <= b + 1e-12);
                let mut queries = vec![0.0; nj];
                queries[j] = at.map_or(0.0, |q| q.queries as f64);
                rows.push(PanelRow {
                    pool: pool.pool_id.clone(),
                    seed,
                    arm: format!("alone:{}", s.panel.judges[j].name),
                    budget_usd: b,
                    spend_usd: at.map_or(0.0, |q| q.spend),
                    recall: at.map_or_else(|| random_recall(pool), |q| q.recall),
                    queries,
                });
            }
            if b <= max_usd + 1e-12 && !out.panel.is_empty() {
                let at = out.panel.iter().rev().find(|q| q.0 <= b + 1e-12).expect("the first point spends 0");
                rows.push(PanelRow {
                    pool: pool.pool_id.clone(),
                    seed,
                    arm: "panel".into(),
                    budget_usd: b,
                    spend_usd: at.0,
                    recall: at.1,
                    queries: at.2.clone(),
                });
            }
            let est = s.seeds.iter().position(|&x| x == seed).and_then(|i| calibration.get(i));
            if let Some(est) = est.filter(|_| b <= max_usd + 1e-12) {
                // The carried arm at B: its path within B less its share of the prior anchors.
                let share = est[0].share_usd;
                let per_judge = 2.0 * s.panel.prior_anchors as f64 / pools.len() as f64;
                // Below its share it could not have run: the random recall, the share spent.
                let at = out.carried.iter().rev().find(|q| q.0 <= b - share + 1e-12);
                rows.push(PanelRow {
                    pool: pool.pool_id.clone(),
                    seed,
                    arm: "panel+carried".into(),
                    budget_usd: b,
                    spend_usd: at.map_or(0.0, |q| q.0) + share,
                    recall: at.map_or_else(|| random_recall(pool), |q| q.1),
                    queries: at.map_or_else(|| vec![0.0; nj], |q| q.2.clone()).iter().map(|q| q + per_judge).collect(),
                });
            }
        }
        estimates.extend(out.estimates.iter().cloned());
    }
    if let (Some(t), Some(share)) = (trusted, share_est) {
        rows.extend(gate_rows(s, pools, &jobs, &outs, (t, share), &budgets));
    }
    Ok(PanelResult { rows, estimates, carried: calibration.into_iter().flatten().collect() })
}

/// The gate anchors' expected share per pool (USD): both orders of `gate_anchors` queries of the
/// trusted judge at the pools' mean price, spread over the pools.
fn gate_share(s: &PanelSweep, pools: &[Pool], trusted: usize) -> f64 {
    let judge = &judges_for(s, 0)[trusted];
    let mean: f64 = pools.iter().map(|p| judge.worst_case_usd(p, 0, 1)).sum::<f64>() / pools.len() as f64;
    2.0 * s.panel.gate_anchors as f64 * mean / pools.len() as f64
}

/// The gate arms: per seed and checkpoint, anchors spread over the pools, one sign test.
fn gate_rows(
    s: &PanelSweep,
    pools: &[Pool],
    jobs: &[(usize, u64)],
    outs: &[JobOut],
    (trusted, share_est): (usize, f64),
    budgets: &[f64],
) -> Vec<PanelRow> {
    let nj = s.panel.judges.len();
    let mut rows = Vec::new();
    for &seed in &s.seeds {
        let judges = judges_for(s, seed);
        let idx: Vec<usize> = (0..jobs.len()).filter(|&i| jobs[i].1 == seed).collect();
        for j in (0..nj).filter(|&j| j != trusted) {
            for &b in budgets {
                // Each pool's path at this spend less its expected share of the anchors.
                let points: Vec<Option<&AlonePoint>> = idx
                    .iter()
                    .map(|&i| outs[i].alone[j].iter().rev().find(|q| q.spend <= b - share_est + 1e-12))
                    .collect();
                let per_pool: Vec<Vec<crate::analysis::gate::Anchor>> = points
                    .iter()
                    .map(|pt| {
                        pt.map_or_else(Vec::new, |q| select_anchors(&q.naive, &q.corrected, s.k, s.panel.gate_anchors))
                    })
                    .collect();
                // Round-robin over pools, nearest the boundary first within each.
                let mut anchors = Vec::new();
                let mut depth = 0;
                while anchors.len() < s.panel.gate_anchors && per_pool.iter().any(|v| v.len() > depth) {
                    for (pi, v) in per_pool.iter().enumerate() {
                        if anchors.len() < s.panel.gate_anchors
                            && let Some(a) = v.get(depth)
                        {
                            anchors.push((pi, *a));
                        }
                    }
                    depth += 1;
                }
                let mut anchor_usd = 0.0;
                let better: Vec<Option<usize>> = anchors
                    .iter()
                    .map(|&(pi, a)| {
                        let pool = &pools[jobs[idx[pi]].0];
                        let (x, y) = (a.corrected_prefers, a.naive_prefers);
                        anchor_usd +=
                            judges[trusted].worst_case_usd(pool, x, y) + judges[trusted].worst_case_usd(pool, y, x);
                        let avg = order_averaged(
                            Some(judges[trusted].outcome(pool, x, y)),
                            Some(judges[trusted].outcome(pool, y, x)),
                        )?;
                        if avg > 0.5 {
                            Some(x)
                        } else if avg < 0.5 {
                            Some(y)
                        } else {
                            None
                        }
                    })
                    .collect();
                let only: Vec<_> = anchors.iter().map(|a| a.1).collect();
                let gate = decide(&only, &better, s.panel.alpha);
                let share = anchor_usd / idx.len() as f64;
                for (pi, pt) in points.iter().enumerate() {
                    let pool = &pools[jobs[idx[pi]].0];
                    let mut queries = vec![0.0; nj];
                    queries[j] = pt.map_or(0.0, |q| q.queries as f64);
                    queries[trusted] = 2.0 * anchors.len() as f64 / idx.len() as f64;
                    rows.push(PanelRow {
                        pool: pool.pool_id.clone(),
                        seed,
                        arm: format!("gate:{}", s.panel.judges[j].name),
                        budget_usd: b,
                        spend_usd: pt.map_or(0.0, |q| q.spend) + share,
                        recall: pt.map_or(s.k as f64 / pool.n_bases() as f64, |q| {
                            if gate.enable { q.recall_corrected } else { q.recall }
                        }),
                        queries,
                    });
                }
            }
        }
    }
    rows
}

/// One arm at one checkpoint, over pools × seeds.
#[derive(Debug, Clone, PartialEq)]
pub struct ArmCell {
    /// Arm name.
    pub arm: String,
    /// Checkpoint (USD per pool).
    pub budget_usd: f64,
    /// Recall@k.
    pub recall: MeanSe,
    /// Mean USD spent per pool.
    pub spend_usd: f64,
    /// Mean queries per pool, per judge.
    pub queries: Vec<f64>,
}

/// Means and standard errors per arm and checkpoint, arms in the order alone, gate, panel.
pub fn summarise(rows: &[PanelRow]) -> Vec<ArmCell> {
    let mut arms: Vec<String> = Vec::new();
    for r in rows {
        if !arms.contains(&r.arm) {
            arms.push(r.arm.clone());
        }
    }
    let mut budgets: Vec<f64> = rows.iter().map(|r| r.budget_usd).collect();
    budgets.sort_by(f64::total_cmp);
    budgets.dedup();
    let mut out = Vec::new();
    for arm in &arms {
        for &b in &budgets {
            let mine: Vec<&PanelRow> = rows.iter().filter(|r| &r.arm == arm && r.budget_usd == b).collect();
            if mine.is_empty() {
                continue;
            }
            let nq = mine[0].queries.len();
            out.push(ArmCell {
                arm: arm.clone(),
                budget_usd: b,
                recall: MeanSe::of(&mine.iter().map(|r| r.recall).collect::<Vec<_>>()),
                spend_usd: mine.iter().map(|r| r.spend_usd).sum::<f64>() / mine.len() as f64,
                queries: (0..nq).map(|j| mine.iter().map(|r| r.queries[j]).sum::<f64>() / mine.len() as f64).collect(),
            });
        }
    }
    out
}

/// Paired difference (`panel` arm at B) − (`arm` at `multiple` × B), mean ± se over pools × seeds.
pub fn paired_difference(rows: &[PanelRow], panel: &str, arm: &str, budget: f64, multiple: f64) -> Option<MeanSe> {
    let other = budget * multiple;
    let d: Vec<f64> = rows
        .iter()
        .filter(|r| r.arm == panel && r.budget_usd == budget)
        .filter_map(|p| {
            rows.iter()
                .find(|r| r.arm == arm && (r.budget_usd - other).abs() < 1e-12 && r.pool == p.pool && r.seed == p.seed)
                .map(|r| p.recall - r.recall)
        })
        .collect();
    (!d.is_empty()).then(|| MeanSe::of(&d))
}

/// Write rows.csv, judges.csv, summary.md and recall_vs_spend.svg into `dir`; returns summary.md.
///
/// # Errors
/// [`SweepError::Write`] naming the file.
pub fn write_outputs(s: &PanelSweep, result: &PanelResult, pools: usize, dir: &Path) -> Result<String, SweepError> {
    let werr = |path: &Path, msg: String| SweepError::Write { path: path.to_owned(), msg };
    crate::store::files::create_folder(dir).map_err(|e| werr(dir, e))?;
    let names: Vec<&str> = s.panel.judges.iter().map(|j| j.name.as_str()).collect();
    let mut csv = format!(
        "pool,seed,arm,budget_usd,spend_usd,recall,{}\n",
        names.iter().map(|n| format!("queries_{n}")).collect::<Vec<_>>().join(",")
    );
    for r in &result.rows {
        let q: Vec<String> = r.queries.iter().map(f64::to_string).collect();
        let _ = writeln!(
            csv,
            "{},{},{},{},{},{},{}",
            r.pool,
            r.seed,
            r.arm,
            r.budget_usd,
            r.spend_usd,
            r.recall,
            q.join(",")
        );
    }
    let path = dir.join("rows.csv");
    std::fs::write(&path, csv).map_err(|e| werr(&path, e.to_string()))?;
    let mut jc =
        String::from("pool,seed,judge,kappa,kappa_sd,c_words,c_words_sd,scale,scale_sd,queries,spend_usd,flip_rate\n");
    for e in &result.estimates {
        let (c, csd) = e.c_words.map_or((String::new(), String::new()), |c| (c.0.to_string(), c.1.to_string()));
        let _ = writeln!(
            jc,
            "{},{},{},{},{},{c},{csd},{},{},{},{},{}",
            e.pool,
            e.seed,
            e.judge,
            e.kappa.0,
            e.kappa.1,
            e.scale.0,
            e.scale.1,
            e.queries,
            e.spend_usd,
            e.flip_rate.map_or(String::new(), |f| f.to_string())
        );
    }
    let path = dir.join("judges.csv");
    std::fs::write(&path, jc).map_err(|e| werr(&path, e.to_string()))?;
    if !result.carried.is_empty() {
        let mut cc = String::from("seed,judge,kappa,kappa_sd,c_per_100_words,c_per_100_words_sd,share_usd\n");
        for e in &result.carried {
            let (c, csd) =
                e.c_per_100_words.map_or((String::new(), String::new()), |c| (c.0.to_string(), c.1.to_string()));
            let _ = writeln!(cc, "{},{},{},{},{c},{csd},{}", e.seed, e.judge, e.kappa.0, e.kappa.1, e.share_usd);
        }
        let path = dir.join("carried.csv");
        std::fs::write(&path, cc).map_err(|e| werr(&path, e.to_string()))?;
    }
    let cells = summarise(&result.rows);
    let md = markdown(s, result, &cells, pools);
    let path = dir.join("summary.md");
    std::fs::write(&path, &md).map_err(|e| werr(&path, e.to_string()))?;
    let mut arms: Vec<&str> = Vec::new();
    for c in &cells {
        if !arms.contains(&c.arm.as_str()) {
            arms.push(&c.arm);
        }
    }
    let series = arms
        .iter()
        .map(|a| {
            let mine: Vec<&ArmCell> = cells.iter().filter(|c| c.arm == *a).collect();
            crate::report::plots::Series {
                name: (*a).to_owned(),
                points: mine.iter().map(|c| (c.spend_usd.max(1e-9).log10(), c.recall.mean)).collect(),
                err: Some(mine.iter().map(|c| c.recall.se).collect()),
            }
        })
        .collect();
    let chart = crate::report::plots::LineChart {
        title: format!("recall@{} against spend per pool ({} pools × {} seeds)", s.k, pools, s.seeds.len()),
        x_label: "log10 mean spend per pool (USD)".into(),
        y_label: format!("recall@{} (mean ± se)", s.k),
        series,
        hlines: Vec::new(),
        vlines: Vec::new(),
        y_range: None,
        legend_upper: false,
    };
    super::write_chart(&chart, &dir.join("recall_vs_spend.svg"))?;
    Ok(md)
}

/// summary.md: the recall table per checkpoint and arm, the panel against each judge alone at
/// `compare_multiple` × the spend, and the panel's per-judge estimates.
pub fn markdown(s: &PanelSweep, result: &PanelResult, cells: &[ArmCell], pools: usize) -> String {
    let names: Vec<&str> = s.panel.judges.iter().map(|j| j.name.as_str()).collect();
    let mut md = format!(
        "# Judge panel: {} ({} pools × {} seeds, k = {})\n\nrecall@{} (mean ± se over pools × seeds) at each spend checkpoint (USD per pool); spend is the mean actually spent; queries per judge are means per pool; prior λ_θ = {}, λ_b = {}, λ_κ = {} (docs/model.md §2).\n\n| budget (USD) | arm | recall@{} | spend (USD) | {} |\n| --- | --- | --- | --- | {} |\n",
        s.name,
        pools,
        s.seeds.len(),
        s.k,
        s.k,
        s.prior.lambda_theta,
        s.prior.lambda_b,
        s.prior.lambda_kappa,
        s.k,
        names.iter().map(|n| format!("queries {n}")).collect::<Vec<_>>().join(" | "),
        names.iter().map(|_| "---").collect::<Vec<_>>().join(" | ")
    );
    let mut budgets: Vec<f64> = cells.iter().map(|c| c.budget_usd).collect();
    budgets.sort_by(f64::total_cmp);
    budgets.dedup();
    for b in &budgets {
        for c in cells.iter().filter(|c| c.budget_usd == *b) {
            let q: Vec<String> = c.queries.iter().map(|v| format!("{v:.1}")).collect();
            let _ = writeln!(
                md,
                "| {} | {} | {:.3} ± {:.3} | {:.5} | {} |",
                fmt_usd(*b),
                c.arm,
                c.recall.mean,
                c.recall.se,
                c.spend_usd,
                q.join(" | ")
            );
        }
    }
    let m = s.panel.compare_multiple;
    let _ = write!(
        md,
        "\n## The panel at spend B against each judge alone at {m}× B and at B\n\nPaired over pools × seeds: (panel recall at B) − (the judge's recall at the other spend).\n\n| B (USD) | panel arm | judge | panel − alone at {m}× B | panel − alone at B |\n| --- | --- | --- | --- | --- |\n"
    );
    let panel_arms: Vec<&str> =
        ["panel", "panel+carried"].into_iter().filter(|a| result.rows.iter().any(|r| r.arm == *a)).collect();
    for &b in &s.spend_usd {
        for panel in &panel_arms {
            for n in &names {
                let arm = format!("alone:{n}");
                let far = paired_difference(&result.rows, panel, &arm, b, m);
                let same = paired_difference(&result.rows, panel, &arm, b, 1.0);
                let f = |x: Option<MeanSe>| x.map_or("–".to_owned(), |d| format!("{:+.3} ± {:.3}", d.mean, d.se));
                let _ = writeln!(md, "| {} | {panel} | {n} | {} | {} |", fmt_usd(b), f(far), f(same));
            }
        }
    }
    if !result.carried.is_empty() {
        let share = MeanSe::of(
            &s.seeds
                .iter()
                .filter_map(|seed| result.carried.iter().find(|e| e.seed == *seed).map(|e| e.share_usd))
                .collect::<Vec<_>>(),
        )
        .mean;
        let _ = write!(
            md,
            "\n## Carried judge priors ({} prior anchors per seed, every judge in both orders)\n\nMeans ± se over seeds of each judge's estimates on the anchors (carried.csv has each seed's), carried into every pool's panel as its prior; ĉ is per 100 words here, and each pool carries it × its sd of words / 100 (its z-score unit). The anchors cost ${share:.5} per pool (all judges, shared by the pools); at a checkpoint below that the panel+carried arm cannot run: its rows show that share as spend and the random recall k/N.\n\n| judge | κ̂ (logits) | sd κ̂ | ĉ words (logits per 100 words) | sd ĉ |\n| --- | --- | --- | --- | --- |\n",
            s.panel.prior_anchors
        );
        if share > *s.spend_usd.last().expect("non-empty") {
            let _ = writeln!(
                md,
                "**The anchors cost more than the largest checkpoint: the panel+carried arm ran at none.** Fewer `prior_anchors`, or more pools to share them.\n"
            );
        }
        for n in &names {
            let e: Vec<&CarriedEstimate> = result.carried.iter().filter(|e| e.judge == *n).collect();
            let ms = |v: Vec<f64>| {
                if v.is_empty() {
                    "–".to_owned()
                } else if v.len() == 1 {
                    format!("{:.3}", v[0])
                } else {
                    let m = MeanSe::of(&v);
                    format!("{:.3} ± {:.3}", m.mean, m.se)
                }
            };
            let _ = writeln!(
                md,
                "| {n} | {} | {} | {} | {} |",
                ms(e.iter().map(|x| x.kappa.0).collect()),
                ms(e.iter().map(|x| x.kappa.1).collect()),
                ms(e.iter().filter_map(|x| x.c_per_100_words.map(|c| c.0)).collect()),
                ms(e.iter().filter_map(|x| x.c_per_100_words.map(|c| c.1)).collect()),
            );
        }
    }
    if !result.estimates.is_empty() {
        let _ = write!(
            md,
            "\n## The panel's judges at the largest budget (means over pools × seeds)\n\n| judge | κ̂ (logits) | ĉ words (logits per sd) | ŝ | queries | spend (USD) | flip rate |\n| --- | --- | --- | --- | --- | --- | --- |\n"
        );
        for n in &names {
            let e: Vec<&JudgeEstimate> = result.estimates.iter().filter(|e| e.judge == *n).collect();
            let mean = |f: &dyn Fn(&JudgeEstimate) -> Option<f64>| {
                let v: Vec<f64> = e.iter().filter_map(|x| f(x)).collect();
                if v.is_empty() {
                    "–".to_owned()
                } else {
                    format!("{:.3} ± {:.3}", MeanSe::of(&v).mean, MeanSe::of(&v).se)
                }
            };
            let _ = writeln!(
                md,
                "| {n} | {} | {} | {} | {} | {} | {} |",
                mean(&|x| Some(x.kappa.0)),
                mean(&|x| x.c_words.map(|c| c.0)),
                mean(&|x| Some(x.scale.0)),
                mean(&|x| Some(x.queries as f64)),
                mean(&|x| Some(x.spend_usd)),
                mean(&|x| x.flip_rate),
            );
        }
    }
    md
}

fn fmt_usd(v: f64) -> String {
    format!("{v:.4}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn experiment(judges: &str) -> PanelSweep {
        let yaml = format!(
            "name: t\nout_dir: runs\nk: 2\npools:\n  synthetic: {{n: 8, count: 3, seed: 4, task_words: 100}}\nseeds: [1, 2]\nspend_usd: [0.001, 0.004]\nrefit_every: 4\nmc_draws: 200\npanel:\n  gate_anchors: 6\n  judges:\n{judges}threads: 1\n"
        );
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.yaml");
        std::fs::write(&path, yaml).unwrap();
        PanelSweep::load(&path).unwrap()
    }

    const TWO: &str = "    - {name: cheap, mock: {mode: stochastic, pos_bias: 0.3, verb_per_word: 0.01, temperature: 0.25, input_usd_per_mtok: 0.15, output_usd_per_mtok: 0.6}}\n    - {name: frontier, trusted: true, mock: {mode: stochastic, pos_bias: 0.05, verb_per_word: 0.0, temperature: 0.15, input_usd_per_mtok: 2.5, output_usd_per_mtok: 10.0}}\n";

    /// A pool file that cannot be read is named by the key that sets it, at its line (hunt 46:
    /// `pool.file`, a run config's key, without a line).
    #[test]
    fn a_missing_pool_file_is_named_by_its_key_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.yaml");
        let yaml = format!(
            "name: t\nout_dir: runs\nk: 2\npools:\n  file: nope.jsonl\nseeds: [1]\nspend_usd: [0.001]\nrefit_every: 4\nmc_draws: 200\npanel:\n  judges:\n{TWO}threads: 1\n"
        );
        std::fs::write(&path, yaml).unwrap();
        let s = PanelSweep::load(&path).unwrap();
        let e = pools(&s, &path).unwrap_err().to_string();
        assert!(e.contains("p.yaml:5: pools.file: cannot read pool file"), "{e}");
        assert!(e.contains("nope.jsonl"), "{e}");
    }

    #[test]
    fn every_arm_stays_within_its_checkpoint_and_runs_are_reproducible() {
        let s = experiment(TWO);
        let pools: Vec<Pool> = (0..3).map(|i| synthetic_pool(s.pools.synthetic.as_ref().unwrap(), 4 + i)).collect();
        let r = run(&s, &pools, 1, &|_| {}).unwrap();
        // 3 pools × 2 seeds × (2 alone + 1 gate) × 4 checkpoints (0.001, 0.004 and their 5×),
        // and the panel at its 2 checkpoints.
        assert_eq!(r.rows.len(), 3 * 2 * (3 * 4 + 2));
        // Each arm spends what its checkpoint allows: less than one more query short of it
        // (the priciest), unless it asked every ordered pair (8 · 7 per judge).
        let judges = judges_for(&s, 1);
        let priciest =
            pools.iter().flat_map(|p| judges.iter().map(move |j| j.worst_case_usd(p, 0, 1))).fold(0.0, f64::max);
        for row in &r.rows {
            if row.arm == "panel" || row.arm.starts_with("alone:") {
                assert!(row.spend_usd <= row.budget_usd + 1e-12, "{row:?}");
                let all = row.queries.iter().any(|&q| q >= 56.0);
                assert!(all || row.budget_usd - row.spend_usd < priciest, "{row:?}");
            }
            assert!((0.0..=1.0).contains(&row.recall));
        }
        // The panel asks both orders of a pair of one judge, and one order only where no pair's
        // two fit at the end of a checkpoint: here the cheap judge has every pair, and the
        // frontier judge one order bought with what was left.
        let last: Vec<&PanelRow> = r.rows.iter().filter(|x| x.arm == "panel" && x.budget_usd == 0.004).collect();
        assert!(last.iter().all(|x| x.queries == [56.0, 1.0]), "{last:?}");
        assert_eq!(r.estimates.len(), 3 * 2 * 2);
        assert!(r.estimates.iter().filter(|e| e.judge == "frontier").all(|e| e.c_words.is_none()));
        let again = run(&s, &pools, 2, &|_| {}).unwrap();
        assert_eq!(r.rows, again.rows, "same seed, same rows, whatever the threads");
    }

    #[test]
    fn prior_anchors_recover_each_judges_bias_and_the_carried_arm_pays_its_share() {
        // The cheap mock's verdict logit is (Δquality + 0.01 Δwords + 0.3) / 0.25: κ = 1.2 and
        // c = 0.04 per word, 4 logits per 100 words; the trusted one has κ = 0.05 / 0.15 = 1/3.
        let mut s = experiment(TWO);
        s.panel.prior_anchors = 300;
        let sp = SynthPanelPools { count: 30, ..s.pools.synthetic.unwrap() };
        let pools: Vec<Pool> = (0..30).map(|i| synthetic_pool(&sp, 100 + i)).collect();
        let est = calibrate(&s, &pools, 7).unwrap();
        let cheap = &est[0];
        let (c, c_sd) = cheap.c_per_100_words.unwrap();
        assert!((c - 4.0).abs() < 2.0 * c_sd && c_sd < 1.5, "ĉ = {c} ± {c_sd}, truth 4");
        assert!((cheap.kappa.0 - 1.2).abs() < 2.0 * cheap.kappa.1, "κ̂ = {:?}, truth 1.2", cheap.kappa);
        assert!(est[1].c_per_100_words.is_none(), "the trusted judge has no c");
        // The near-deterministic trusted judge's Laplace sd is optimistic (its errors over 12
        // seeds spread 1.8 sd): 3 sd.
        assert!((est[1].kappa.0 - 1.0 / 3.0).abs() < 3.0 * est[1].kappa.1, "κ̂ = {:?}", est[1].kappa);
        // Every judge both orders of every anchor, the cost shared by the pools.
        // About 2 × 300 / 30 = 20 queries of each judge per pool, at the price of a typical pair.
        let j = judges_for(&s, 7);
        let typical = j[0].worst_case_usd(&pools[0], 0, 1) + j[1].worst_case_usd(&pools[0], 0, 1);
        assert!((cheap.share_usd / (20.0 * typical) - 1.0).abs() < 0.15, "{} vs {}", cheap.share_usd, 20.0 * typical);
        assert_eq!(cheap.share_usd, est[1].share_usd);
        // The carried priors put c in each pool's z-score unit: per 100 words × sd(words) / 100.
        let w = raw_words(&pools[0]);
        let m = w.iter().sum::<f64>() / w.len() as f64;
        let sd = (w.iter().map(|v| (v - m).powi(2)).sum::<f64>() / w.len() as f64).sqrt();
        let pr = carried_priors(&pools[0], &est);
        let n = pr[0].c[0].unwrap();
        assert!((n.mean - c * sd / 100.0).abs() < 1e-12 && (n.sd - c_sd * sd / 100.0).abs() < 1e-12);
        assert!(pr[1].c.is_empty());

        // The arm: every row within its checkpoint, its spend including the anchors' share.
        s.panel.prior_anchors = 6;
        let small: Vec<Pool> = (0..3).map(|i| synthetic_pool(s.pools.synthetic.as_ref().unwrap(), 4 + i)).collect();
        let r = run(&s, &small, 1, &|_| {}).unwrap();
        let carried: Vec<&PanelRow> = r.rows.iter().filter(|x| x.arm == "panel+carried").collect();
        assert_eq!(carried.len(), 3 * 2 * 2, "3 pools × 2 seeds × 2 checkpoints");
        assert_eq!(r.carried.len(), 2 * 2, "2 seeds × 2 judges");
        for row in &carried {
            let share = r.carried.iter().find(|e| e.seed == row.seed).unwrap().share_usd;
            // 6 anchors × 2 orders over 3 pools: 4 queries of each judge per pool.
            assert!(row.queries.iter().all(|q| *q >= 4.0), "{row:?}");
            if share <= row.budget_usd {
                assert!(row.spend_usd >= share && row.spend_usd <= row.budget_usd + 1e-12, "{row:?} share {share}");
            } else {
                // The anchors alone cost more than B: no panel ran, the recall is chance.
                assert_eq!((row.spend_usd, row.recall), (share, 2.0 / 8.0), "{row:?}");
            }
        }
        let share_of = |seed: u64| r.carried.iter().find(|e| e.seed == seed).unwrap().share_usd;
        assert!(carried.iter().any(|row| row.spend_usd > share_of(row.seed)), "a panel ran after the anchors");
        assert_eq!(r.rows, run(&s, &small, 2, &|_| {}).unwrap().rows);
    }

    #[test]
    fn a_panel_of_one_has_only_its_single_judge_arm() {
        let s = experiment(&TWO.lines().next().map(|l| format!("{l}\n")).unwrap());
        let pools = vec![synthetic_pool(s.pools.synthetic.as_ref().unwrap(), 4)];
        let r = run(&s, &pools, 1, &|_| {}).unwrap();
        assert!(r.rows.iter().all(|x| x.arm == "alone:cheap"), "one judge: Algorithm 1 as `run` runs it");
        assert!(r.estimates.is_empty());
    }
}

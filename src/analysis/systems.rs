//! Ranking systems across many prompts (docs/systems.md).
//!
//! A run over many pools (`pool: {file, ids}`) merges the pools into one [`Pool`] whose items are
//! the answers (prompt, system) and whose bases are the systems ([`Pool::systems`]). The
//! Bradley–Terry model of docs/model.md §2 then reads, for answers a and b of one prompt,
//!
//! logit P(first wins) = θ_sys(a) − θ_sys(b) + cᵀ(x_a − x_b) + κ,
//!
//! with one θ per system shared across prompts, covariates x per answer and the position effect
//! κ: the MAP fit, the Laplace posterior and the top-k membership are those of a single pool,
//! with the comparison → parameter map given by `item_base` (answer → system). Only answers to
//! one prompt are compared, and each verdict is cached per (prompt, ordered pair of answers).
//!
//! This module adds what a system ranking reports besides θ̂ ± sd and π ([`SystemsReport`]):
//! the win rate of each system against a reference system with a 95 % interval, and the
//! comparisons per system and per prompt (`report::systems` writes them as `rankings.csv`).

use crate::domain::pool::{Covariates, Pool};
use crate::domain::verdict::ItemVerdict;
use crate::model::bt::sigmoid;
use crate::model::laplace::Posterior;
use crate::model::summary::{FitSummary, build_design, fit_scaled, solver_scales};
use crate::model::{FitError, FitOptions, Prior};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// z of the two-sided 95 % interval of the win rate.
pub const Z95: f64 = 1.959_963_984_540_054;

/// One system's row of a system ranking.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SystemRow {
    /// Rank in the ranking the run reports (1 = best; [`SystemsReport::ranked_by`]), by θ̂ until
    /// the run has chosen.
    pub rank: usize,
    /// System id.
    pub system: String,
    /// θ̂ (logits; the bias-corrected quality of the system, shared across prompts).
    pub theta: f64,
    /// Posterior sd of θ (logits).
    pub sd: f64,
    /// Top-k membership π = P(system among the k largest θ).
    pub membership: f64,
    /// Model win rate against the reference system, σ(θ̂_s − θ̂_ref): the probability that the
    /// system's answer beats the reference's on a prompt, at equal covariates, averaged over the
    /// presentation order (κ cancels to first order). 0.5 for the reference itself.
    pub win_rate: f64,
    /// Lower end of the 95 % interval σ(Δ̂ − z·sd(Δ)), Δ = θ_s − θ_ref (Laplace posterior).
    pub win_rate_lo: f64,
    /// Upper end of the 95 % interval σ(Δ̂ + z·sd(Δ)).
    pub win_rate_hi: f64,
    /// Valid verdicts that involve the system.
    pub comparisons: usize,
    /// Wins of the system in them (a tie counts ½, a soft verdict its probability).
    pub wins: f64,
    /// Prompts on which the system was compared at least once.
    pub prompts: usize,
    /// Gold quality (mean over the system's answers), when every answer has `quality`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gold: Option<f64>,
    /// Apparent quality φ̂ = θ̂ + ĉᵀx̄ (logits) and its top-k membership, once the run has ranked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phi: Option<f64>,
    /// Posterior sd of φ (logits).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phi_sd: Option<f64>,
    /// P(φ among the k largest).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub membership_apparent: Option<f64>,
}

/// What a run over many prompts reports per system and per prompt (result.json `systems`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SystemsReport {
    /// Which ranking `rows` follow (their order and `rank`): the one the run reports, `None`
    /// before it has chosen (θ̂).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ranked_by: Option<crate::analysis::ranking::RankingKind>,
    /// The reference system of `win_rate` (`pool.reference`, default the first system).
    pub reference: String,
    /// Prompts in the run.
    pub prompts: usize,
    /// One row per system, best first in the reported ranking (`ranked_by`).
    pub rows: Vec<SystemRow>,
    /// Valid verdicts per prompt (prompt = the pool id in the pool file), every prompt listed.
    pub per_prompt: BTreeMap<String, usize>,
}

/// Errors of the system report.
#[derive(Debug, thiserror::Error)]
pub enum SystemsError {
    /// The reference system is not one of the run's systems.
    #[error("pool.reference: {0:?} is not a system of the run (systems: {1})")]
    UnknownReference(String, String),
    /// The fit for the posterior covariance failed.
    #[error(transparent)]
    Fit(#[from] FitError),
}

/// The system report of a fit: θ̂, sd and π from `summary` (the run's fit), the win rate against
/// `reference` (default: the pool's first system) with its interval from the Laplace posterior
/// at the same MAP, and the counts of `verdicts` (valid verdicts, item indices of `pool`).
///
/// # Errors
/// [`SystemsError::UnknownReference`]; [`SystemsError::Fit`] if the MAP cannot be recomputed.
pub fn report(
    pool: &Pool,
    cov: &Covariates,
    prior: &Prior,
    summary: &FitSummary,
    verdicts: &[ItemVerdict],
    reference: Option<&str>,
) -> Result<SystemsReport, SystemsError> {
    let m = pool.n_bases();
    let r = match reference {
        None => 0,
        Some(id) => pool
            .bases
            .iter()
            .position(|b| b == id)
            .ok_or_else(|| SystemsError::UnknownReference(id.to_owned(), pool.bases.join(", ")))?,
    };
    // Σ at the run's MAP: warm-started at β̂, Newton stops at once.
    let design = build_design(pool, cov, verdicts);
    let mut start = summary.theta.clone();
    start.extend_from_slice(&summary.c);
    start.push(summary.kappa);
    let lambda = prior.diagonal(m, cov.p());
    let scales = solver_scales(cov);
    let fit = fit_scaled(&design, &lambda, Some(&start), &scales, &FitOptions::default())?;
    let mut post = Posterior::from_fit(&fit);
    post.rescale(m, &scales);
    let mut comparisons = vec![0usize; m];
    let mut wins = vec![0.0; m];
    let mut seen = vec![std::collections::BTreeSet::new(); m];
    let mut per_prompt: BTreeMap<String, usize> = (0..pool.n_prompts()).map(|p| (prompt_name(pool, p), 0)).collect();
    for v in verdicts {
        let (i, j) = (pool.item_base[v.a], pool.item_base[v.b]);
        let p = pool.prompt_of(v.a);
        for (s, w) in [(i, v.y), (j, 1.0 - v.y)] {
            comparisons[s] += 1;
            wins[s] += w;
            seen[s].insert(p);
        }
        *per_prompt.entry(prompt_name(pool, p)).or_default() += 1;
    }
    let gold = pool.base_quality();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&x, &y| summary.theta[y].total_cmp(&summary.theta[x]).then(x.cmp(&y)));
    let rows = order
        .iter()
        .enumerate()
        .map(|(rank, &s)| {
            let d = summary.theta[s] - summary.theta[r];
            let sd = if s == r { 0.0 } else { post.contrast_var(s, r).max(0.0).sqrt() };
            SystemRow {
                rank: rank + 1,
                system: pool.bases[s].clone(),
                theta: summary.theta[s],
                sd: summary.sd[s],
                membership: summary.membership[s],
                win_rate: sigmoid(d),
                win_rate_lo: sigmoid(d - Z95 * sd),
                win_rate_hi: sigmoid(d + Z95 * sd),
                comparisons: comparisons[s],
                wins: wins[s],
                prompts: seen[s].len(),
                gold: gold.as_ref().map(|g| g[s]),
                phi: None,
                phi_sd: None,
                membership_apparent: None,
            }
        })
        .collect();
    Ok(SystemsReport { ranked_by: None, reference: pool.bases[r].clone(), prompts: pool.n_prompts(), rows, per_prompt })
}

fn prompt_name(pool: &Pool, p: usize) -> String {
    pool.prompts.get(p).map_or_else(|| pool.pool_id.clone(), |x| x.pool_id.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::pool::{CovariateSpec, Item, build_covariates};
    use crate::model::summary::fit_and_summarise;

    /// A pool of `prompts` prompts × `systems` systems with a raw covariate `len` per answer;
    /// prompt ids `p0…`, systems `s0…`.
    fn answers(prompts: usize, systems: usize, seed: u64) -> Vec<Pool> {
        use rand::RngExt;
        let mut rng = crate::domain::rng::stream(seed, "systems-test", 0);
        (0..prompts)
            .map(|p| {
                let items = (0..systems)
                    .map(|s| Item {
                        id: format!("a{s}"),
                        text: None,
                        quality: Some(s as f64),
                        covariates: [("len".to_string(), rng.random_range(-1.0..1.0))].into(),
                        base: None,
                        rendering: None,
                        words: None,
                        human: None,
                        system: Some(format!("s{s}")),
                    })
                    .collect();
                Pool::new(format!("p{p}"), format!("task {p}"), items).unwrap()
            })
            .collect()
    }

    /// Verdicts (prompt id, system shown first, system shown second, y) on random within-prompt
    /// ordered pairs, y ∈ {0, ½, 1, soft}.
    fn verdicts(prompts: usize, systems: usize, n: usize, seed: u64) -> Vec<(String, String, String, f64)> {
        use rand::RngExt;
        let mut rng = crate::domain::rng::stream(seed, "systems-verdicts", 0);
        (0..n)
            .map(|_| {
                let p = rng.random_range(0..prompts);
                let a = rng.random_range(0..systems);
                let b = (a + rng.random_range(1..systems)) % systems;
                let y = [0.0, 0.5, 1.0, 0.8][rng.random_range(0..4usize)];
                (format!("p{p}"), format!("s{a}"), format!("s{b}"), y)
            })
            .collect()
    }

    fn item_verdicts(pool: &Pool, vs: &[(String, String, String, f64)]) -> Vec<ItemVerdict> {
        vs.iter()
            .map(|(p, a, b, y)| {
                let ia = pool.item_index(&format!("{p}/a{}", &a[1..])).unwrap();
                let ib = pool.item_index(&format!("{p}/a{}", &b[1..])).unwrap();
                ItemVerdict { a: ia, b: ib, y: *y, w: 1.0 }
            })
            .collect()
    }

    fn fit(pools: Vec<Pool>, vs: &[(String, String, String, f64)]) -> (Pool, FitSummary) {
        let pool = Pool::systems("run".into(), pools).unwrap();
        let cov = build_covariates(&pool, &[CovariateSpec::parse("len:raw").unwrap()]).unwrap();
        let design = build_design(&pool, &cov, &item_verdicts(&pool, vs));
        let mut rng = crate::domain::rng::stream(1, "membership", 0);
        let (s, _, _) = fit_and_summarise(&pool, &cov, &design, &Prior::default(), 2, 500, None, &mut rng).unwrap();
        (pool, s)
    }

    /// Solve A z = r by Gaussian elimination with partial pivoting (A dense, row-major n×n).
    fn solve(mut a: Vec<Vec<f64>>, mut r: Vec<f64>) -> Vec<f64> {
        let n = r.len();
        for c in 0..n {
            let p = (c..n).max_by(|&x, &y| a[x][c].abs().total_cmp(&a[y][c].abs())).unwrap();
            a.swap(c, p);
            r.swap(c, p);
            for row in c + 1..n {
                let f = a[row][c] / a[c][c];
                for k in c..n {
                    a[row][k] -= f * a[c][k];
                }
                r[row] -= f * r[c];
            }
        }
        let mut z = vec![0.0; n];
        for c in (0..n).rev() {
            z[c] = (r[c] - (c + 1..n).map(|k| a[c][k] * z[k]).sum::<f64>()) / a[c][c];
        }
        z
    }

    #[test]
    fn system_fit_equals_a_weighted_logistic_regression_solved_by_newton() {
        let (np, ns) = (7, 5);
        let pools = answers(np, ns, 3);
        let vs = verdicts(np, ns, 120, 4);
        // The independent computation: rows d = (e_sys(a) − e_sys(b), len_a − len_b, 1) built from
        // the prompts' raw data, ridge prior diag(λ_θ, λ_b, λ_κ), Newton on the penalised
        // Bernoulli log-likelihood with soft outcomes, H inverted by elimination.
        let len = |p: &str, s: &str| {
            let pool = pools.iter().find(|x| x.pool_id == p).unwrap();
            let it = pool.items.iter().find(|i| i.system.as_deref() == Some(s)).unwrap();
            it.covariates["len"]
        };
        let sys = |s: &str| s[1..].parse::<usize>().unwrap();
        let n = ns + 2;
        let rows: Vec<(Vec<f64>, f64)> = vs
            .iter()
            .map(|(p, a, b, y)| {
                let mut d = vec![0.0; n];
                d[sys(a)] += 1.0;
                d[sys(b)] -= 1.0;
                d[ns] = len(p, a) - len(p, b);
                d[ns + 1] = 1.0;
                (d, *y)
            })
            .collect();
        let pr = Prior::default();
        let mut lam = vec![pr.lambda_theta; ns];
        lam.extend([pr.lambda_b, pr.lambda_kappa]);
        let mut beta = vec![0.0; n];
        let hessian = |beta: &[f64]| {
            let mut h: Vec<Vec<f64>> =
                (0..n).map(|i| (0..n).map(|j| if i == j { lam[i] } else { 0.0 }).collect()).collect();
            let mut g: Vec<f64> = (0..n).map(|i| lam[i] * beta[i]).collect();
            for (d, y) in &rows {
                let eta: f64 = d.iter().zip(beta).map(|(x, b)| x * b).sum();
                let s = sigmoid(eta);
                for i in 0..n {
                    g[i] += (s - y) * d[i];
                    for j in 0..n {
                        h[i][j] += s * (1.0 - s) * d[i] * d[j];
                    }
                }
            }
            (h, g)
        };
        for _ in 0..50 {
            let (h, g) = hessian(&beta);
            let step = solve(h, g);
            beta.iter_mut().zip(&step).for_each(|(b, s)| *b -= s);
        }
        let (h, g) = hessian(&beta);
        assert!(g.iter().all(|v| v.abs() < 1e-12), "independent Newton converged");
        let sd: Vec<f64> = (0..n)
            .map(|i| {
                let e: Vec<f64> = (0..n).map(|j| f64::from(u8::from(i == j))).collect();
                solve(h.clone(), e)[i].sqrt()
            })
            .collect();
        let (pool, s) = fit(pools.clone(), &vs);
        assert_eq!(pool.bases, (0..ns).map(|i| format!("s{i}")).collect::<Vec<_>>());
        for i in 0..ns {
            assert!((s.theta[i] - beta[i]).abs() < 1e-6, "θ[{i}] {} vs {}", s.theta[i], beta[i]);
            assert!((s.sd[i] - sd[i]).abs() < 1e-6, "sd[{i}] {} vs {}", s.sd[i], sd[i]);
        }
        assert!((s.c[0] - beta[ns]).abs() < 1e-6 && (s.c_sd[0] - sd[ns]).abs() < 1e-6);
        assert!((s.kappa - beta[ns + 1]).abs() < 1e-6 && (s.kappa_sd - sd[ns + 1]).abs() < 1e-6);
        // Not a trivial fit: the systems are spread.
        assert!(beta[..ns].iter().fold(0.0f64, |m, v| m.max(v.abs())) > 0.1);
    }

    fn assert_same(x: &FitSummary, y: &FitSummary, tol: f64) {
        for (u, v) in x.theta.iter().zip(&y.theta).chain(x.sd.iter().zip(&y.sd)).chain(x.c.iter().zip(&y.c)) {
            assert!((u - v).abs() < tol, "{u} vs {v}");
        }
        assert!((x.kappa - y.kappa).abs() < tol && (x.kappa_sd - y.kappa_sd).abs() < tol);
    }

    #[test]
    fn system_fit_is_invariant_to_prompt_labels_verdict_order_and_unused_prompts() {
        let (np, ns) = (6, 4);
        let vs = verdicts(np, ns, 80, 9);
        let (_, base) = fit(answers(np, ns, 5), &vs);
        // Relabel the prompts (p_i → q_{np−1−i}) and list them in reverse order.
        let mut relabelled = answers(np, ns, 5);
        for p in &mut relabelled {
            let i: usize = p.pool_id[1..].parse().unwrap();
            p.pool_id = format!("q{}", np - 1 - i);
        }
        relabelled.reverse();
        let vs_relabelled: Vec<_> = vs
            .iter()
            .map(|(p, a, b, y)| (format!("q{}", np - 1 - p[1..].parse::<usize>().unwrap()), a.clone(), b.clone(), *y))
            .collect();
        let (_, s) = fit(relabelled, &vs_relabelled);
        assert_same(&base, &s, 1e-9);
        // Permute the verdicts.
        let mut shuffled = vs.clone();
        shuffled.reverse();
        shuffled.rotate_left(17);
        let (_, s) = fit(answers(np, ns, 5), &shuffled);
        assert_same(&base, &s, 1e-12);
        // Add a prompt nobody compared on (raw covariates: the new answers change nothing).
        let mut more = answers(np + 1, ns, 5);
        let extra = more.pop().unwrap();
        more.insert(2, extra);
        let (pool, s) = fit(more, &vs);
        assert_eq!(pool.n_prompts(), np + 1);
        assert_same(&base, &s, 1e-9);
        // A different verdict set does change the fit (the checks above can fail).
        let (_, other) = fit(answers(np, ns, 5), &vs[..60]);
        assert!((other.theta[0] - base.theta[0]).abs() > 1e-3);
    }

    #[test]
    fn report_counts_win_rates_and_csv() {
        let (np, ns) = (3, 3);
        let pools = answers(np, ns, 2);
        let pool = Pool::systems("run".into(), pools).unwrap();
        let cov = build_covariates(&pool, &[CovariateSpec::parse("len:raw").unwrap()]).unwrap();
        // p0: s2 beats s0 twice (both orders), p1: s1 vs s0 tie; p2 unused.
        let vs = item_verdicts(
            &pool,
            &[
                ("p0".into(), "s2".into(), "s0".into(), 1.0),
                ("p0".into(), "s0".into(), "s2".into(), 0.0),
                ("p1".into(), "s1".into(), "s0".into(), 0.5),
            ],
        );
        let design = build_design(&pool, &cov, &vs);
        let mut rng = crate::domain::rng::stream(1, "membership", 0);
        let (s, _, post) = fit_and_summarise(&pool, &cov, &design, &Prior::default(), 1, 200, None, &mut rng).unwrap();
        let r = report(&pool, &cov, &Prior::default(), &s, &vs, None).unwrap();
        assert_eq!(r.reference, "s0");
        assert_eq!(r.per_prompt, BTreeMap::from([("p0".into(), 2), ("p1".into(), 1), ("p2".into(), 0)]));
        let row = |id: &str| r.rows.iter().find(|x| x.system == id).unwrap();
        assert_eq!((row("s0").comparisons, row("s0").wins, row("s0").prompts), (3, 0.5, 2));
        assert_eq!((row("s2").comparisons, row("s2").wins, row("s2").prompts), (2, 2.0, 1));
        assert_eq!(row("s2").rank, 1);
        assert_eq!(row("s0").win_rate, 0.5);
        let d = s.theta[2] - s.theta[0];
        let sd = post.contrast_var(2, 0).sqrt();
        assert!((row("s2").win_rate - sigmoid(d)).abs() < 1e-9);
        assert!((row("s2").win_rate_lo - sigmoid(d - Z95 * sd)).abs() < 1e-7);
        assert!((row("s2").win_rate_hi - sigmoid(d + Z95 * sd)).abs() < 1e-7);
        assert_eq!(row("s1").gold, Some(1.0));
        let e = report(&pool, &cov, &Prior::default(), &s, &vs, Some("zz")).unwrap_err();
        assert_eq!(e.to_string(), "pool.reference: \"zz\" is not a system of the run (systems: s0, s1, s2)");
    }

    #[test]
    fn candidates_are_the_open_pairs_within_prompts_for_both_orders_settings() {
        use crate::acquire::{Context, Orders, candidate_units};
        use rand::RngExt;
        let pool = Pool::systems("r".into(), answers(4, 5, 1)).unwrap();
        let n = pool.n_items();
        let mut rng = crate::domain::rng::stream(8, "q", 0);
        let queried: std::collections::HashSet<(usize, usize)> =
            (0..30).map(|_| (rng.random_range(0..n), rng.random_range(0..n))).collect();
        let m = pool.n_bases();
        let post = Posterior::dense(
            vec![0.0; m + 1],
            crate::model::linalg::Matrix::from_fn(m + 1, m + 1, |i, j| f64::from(u8::from(i == j))),
        );
        let pi = vec![0.5; m];
        let x = vec![vec![]; n];
        for orders in [Orders::Both, Orders::Single] {
            let ctx = Context {
                item_base: &pool.item_base,
                item_prompt: &pool.item_prompt,
                x: &x,
                m,
                p: 0,
                post: &post,
                membership: &pi,
                k: 2,
                queried: &queried,
                orders,
                seed: 1,
                allowed: None,
            };
            let got: Vec<(usize, usize)> = candidate_units(&ctx).into_iter().flat_map(|u| u.orders()).collect();
            // Brute force over all N² ordered pairs.
            let want: Vec<(usize, usize)> = (0..n)
                .flat_map(|a| (0..n).map(move |b| (a, b)))
                .filter(|&(a, b)| {
                    a != b
                        && pool.item_prompt[a] == pool.item_prompt[b]
                        && pool.item_base[a] != pool.item_base[b]
                        && !queried.contains(&(a, b))
                })
                .collect();
            let mut sorted = got.clone();
            sorted.sort();
            assert_eq!(sorted, want, "{orders:?}");
            assert_eq!(
                want.len(),
                4 * 5 * 4
                    - queried.iter().filter(|&&(a, b)| a != b && pool.item_prompt[a] == pool.item_prompt[b]).count()
            );
        }
    }

    #[test]
    fn merged_pool_rules() {
        let mut pools = answers(2, 3, 1);
        pools[1].items[2].system = Some("s0".into());
        let e = Pool::systems("r".into(), pools).unwrap_err();
        assert!(e.to_string().contains("system \"s0\" answers twice (items \"a0\" and \"a2\")"), "{e}");
        let mut pools = answers(2, 3, 1);
        pools[0].items[1].system = None;
        let e = Pool::systems("r".into(), pools).unwrap_err();
        assert!(e.to_string().starts_with("pool \"p0\": item \"a1\" has no \"system\""), "{e}");
        let pool = Pool::systems("r".into(), answers(2, 3, 1)).unwrap();
        assert_eq!(pool.item_prompt, vec![0, 0, 0, 1, 1, 1]);
        assert_eq!(pool.task_of(4), "task 1");
        assert_eq!(pool.prompt_id_of(4), "p1");
        assert!(pool.same_prompt(3, 5) && !pool.same_prompt(2, 3));
        // Only within-prompt pairs: 2 prompts × 3·2 ordered pairs.
        assert_eq!(pool.ordered_pairs_within_prompts(|_, _| true).len(), 12);
    }
}

//! Criterion benchmarks of one refit step of Algorithm 1 (docs/model.md §3) at N = 100 and N = 1000 with
//! 10·N comparisons, bias-aware model with one covariate: `fit` (warm-started Newton), `laplace`
//! (Σ = H⁻¹; on the large-pool path diag Σ, by selected inversion or, when the factor fills in,
//! from W = L⁻¹), `membership` (S = 1000
//! draws), `acquire` (a batch of 8 top-k picks), `refit_step` (what the runner does per refit:
//! `fit_and_summarise` — fit, Σ, membership, summary — then the 8 picks). `refit_step_dense`
//! forces the dense path at N = 1000 for comparison. The `large_*` groups run the large-pool
//! path at N = 1,000 / 3,000 / 10,000 with k = 50 and 4·N comparisons (2·N random pairs, both
//! orders: 40,000 comparisons at N = 10,000); `large_membership_untouched` is the membership at
//! N = 100,000 with 2,000 comparisons (most bases untouched). `systems_refit_step` is one refit of a run over
//! 500 prompts × 20 systems with 20,000 verdicts (docs/systems.md). Data are built outside the timed closures; fixed
//! seeds. Filter with e.g. `cargo bench --bench refit -- large_refit_step` or, for one group at one
//! size, `'^refit_step/1000$'` (filters are regular expressions).

/// The binary's allocator (src/main.rs), so the refit steps are measured as a run makes them.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use std::collections::HashSet;
use std::hint::black_box;
use topk_judge::acquire::{self, Context, Orders, StrategyKind};
use topk_judge::analysis::synth::{SynthSpec, generate};
use topk_judge::domain::pool::{CovariateSpec, Covariates, Pool, build_covariates};
use topk_judge::domain::rng;
use topk_judge::domain::verdict::ItemVerdict;
use topk_judge::model::bt::{self, FitOptions, Prior};
use topk_judge::model::membership::topk_membership;
use topk_judge::model::summary::{build_design, fit_and_summarise, fit_and_summarise_with};
use topk_judge::model::{Design, Posterior};

struct Setup {
    pool: Pool,
    cov: Covariates,
    design: Design,
    warm: Vec<f64>,
    lambda: Vec<f64>,
    queried: HashSet<(usize, usize)>,
}

fn setup(n: usize) -> Setup {
    setup_with(n, 10 * n, false)
}

/// `q` comparisons: random ordered pairs, or (`both`) q/2 random unordered pairs in both orders
/// as the runner asks them.
fn setup_with(n: usize, q: usize, both: bool) -> Setup {
    use rand::RngExt;
    let s =
        generate(&SynthSpec { n, rho: 0.3, c_star: 1.0, kappa_star: 0.5, temperature: 1.0, paired: false, seed: 1 });
    let cov = build_covariates(&s.pool, &[CovariateSpec::parse("x:raw").unwrap()]).unwrap();
    let mut r = rng::stream(2, "bench", 0);
    let mut queried = HashSet::new();
    while queried.len() < q {
        let (a, b) = (r.random_range(0..n), r.random_range(0..n));
        if a != b {
            queried.insert((a, b));
            if both {
                queried.insert((b, a));
            }
        }
    }
    let mut list: Vec<(usize, usize)> = queried.iter().copied().collect();
    list.sort();
    let verdicts: Vec<ItemVerdict> =
        list.iter().map(|&(a, b)| ItemVerdict { a, b, y: s.verdict(a, b), w: 1.0 }).collect();
    let lambda = Prior::default().diagonal(n, 1);
    // Warm start: the fit before the last batch of 8 verdicts arrived.
    let before = build_design(&s.pool, &cov, &verdicts[..verdicts.len() - 8]);
    let warm = bt::fit(&before, &lambda, None, &FitOptions::default()).unwrap().beta;
    let design = build_design(&s.pool, &cov, &verdicts);
    Setup { pool: s.pool, cov, design, warm, lambda, queried }
}

fn picks(st: &Setup, post: &Posterior, pi: &[f64]) -> Vec<(usize, usize)> {
    picks_k(st, post, pi, 10)
}

fn picks_k(st: &Setup, post: &Posterior, pi: &[f64], k: usize) -> Vec<(usize, usize)> {
    let ctx = Context {
        item_base: &st.pool.item_base,
        item_prompt: &[],
        x: &st.cov.x,
        m: st.pool.n_bases(),
        p: 1,
        post,
        membership: pi,
        k,
        queried: &st.queried,
        orders: Orders::Both,
        seed: 3,
        allowed: None,
    };
    acquire::select(StrategyKind::Topk, &ctx, 8, &mut rng::stream(3, "acquire", 0))
}

fn bench(c: &mut Criterion) {
    for n in [100usize, 1000] {
        let st = setup(n);
        let k = 10;
        let fit = bt::fit(&st.design, &st.lambda, Some(&st.warm), &FitOptions::default()).unwrap();
        let post = Posterior::from_fit(&fit);
        let pi = topk_membership(&fit, n, k, 1000, &mut rng::stream(4, "membership", 0));
        let samples = if n >= 1000 { 10 } else { 50 };

        let mut g = c.benchmark_group("fit");
        g.sample_size(samples);
        g.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, _| {
            b.iter(|| bt::fit(black_box(&st.design), &st.lambda, Some(&st.warm), &FitOptions::default()).unwrap())
        });
        g.finish();
        let mut g = c.benchmark_group("laplace");
        g.sample_size(samples);
        g.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, _| b.iter(|| Posterior::from_fit(black_box(&fit))));
        g.finish();
        let mut g = c.benchmark_group("membership");
        g.sample_size(samples);
        g.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, _| {
            b.iter(|| topk_membership(black_box(&fit), n, k, 1000, &mut rng::stream(4, "membership", 0)))
        });
        g.finish();
        let mut g = c.benchmark_group("acquire");
        g.sample_size(samples);
        g.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, _| b.iter(|| picks(&st, black_box(&post), &pi)));
        g.finish();
        let mut g = c.benchmark_group("refit_step");
        g.sample_size(samples);
        g.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, _| {
            b.iter(|| {
                let (summary, _fit, post) = fit_and_summarise(
                    &st.pool,
                    &st.cov,
                    black_box(&st.design),
                    &Prior::default(),
                    k,
                    1000,
                    Some(&st.warm),
                    &mut rng::stream(4, "membership", 0),
                )
                .unwrap();
                picks(&st, &post, &summary.membership)
            })
        });
        g.finish();
        if n == 1000 {
            let mut g = c.benchmark_group("refit_step_dense");
            g.sample_size(samples);
            let dense = FitOptions { sparse_min_params: usize::MAX, ..Default::default() };
            g.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, _| {
                b.iter(|| {
                    let (summary, _fit, post) = fit_and_summarise_with(
                        &st.pool,
                        &st.cov,
                        black_box(&st.design),
                        &Prior::default(),
                        k,
                        1000,
                        Some(&st.warm),
                        &mut rng::stream(4, "membership", 0),
                        &dense,
                    )
                    .unwrap();
                    picks(&st, &post, &summary.membership)
                })
            });
            g.finish();
        }
    }
}

/// The large-pool path at N = 1,000 / 3,000 / 10,000: k = 50, 4·N comparisons in both orders.
fn bench_large(c: &mut Criterion) {
    let k = 50;
    for n in [1000usize, 3000, 10_000] {
        let st = setup_with(n, 4 * n, true);
        let fit = bt::fit(&st.design, &st.lambda, Some(&st.warm), &FitOptions::default()).unwrap();
        let post = Posterior::from_fit(&fit);
        let pi = topk_membership(&fit, n, k, 1000, &mut rng::stream(4, "membership", 0));
        let mut g = c.benchmark_group("large_fit");
        g.sample_size(10);
        g.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, _| {
            b.iter(|| bt::fit(black_box(&st.design), &st.lambda, Some(&st.warm), &FitOptions::default()).unwrap())
        });
        g.finish();
        let mut g = c.benchmark_group("large_laplace");
        g.sample_size(10);
        g.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, _| b.iter(|| Posterior::from_fit(black_box(&fit))));
        g.finish();
        let mut g = c.benchmark_group("large_membership");
        g.sample_size(10);
        g.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, _| {
            b.iter(|| topk_membership(black_box(&fit), n, k, 1000, &mut rng::stream(4, "membership", 0)))
        });
        g.finish();
        let mut g = c.benchmark_group("large_acquire");
        g.sample_size(10);
        g.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, _| {
            b.iter(|| picks_k(&st, black_box(&post), &pi, k))
        });
        g.finish();
        let mut g = c.benchmark_group("large_refit_step");
        g.sample_size(10);
        g.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, _| {
            b.iter(|| {
                let (summary, _fit, post) = fit_and_summarise(
                    &st.pool,
                    &st.cov,
                    black_box(&st.design),
                    &Prior::default(),
                    k,
                    1000,
                    Some(&st.warm),
                    &mut rng::stream(4, "membership", 0),
                )
                .unwrap();
                picks_k(&st, &post, &summary.membership, k)
            })
        });
        g.finish();
    }
}

/// `large_membership_untouched`: the membership (S = 1000, k = 100) at N = 100,000 with 2,000
/// comparisons (1,000 random pairs in both orders), as late in the run of
/// configs/large-synthetic-100k.yaml: ≈ 98,000 bases no verdict has touched, whose top k per
/// draw come from their order statistics (docs/model.md §2, "Large pools").
fn bench_untouched(c: &mut Criterion) {
    let (n, k) = (100_000usize, 100);
    let st = setup_with(n, 2000, true);
    let fit = bt::fit(&st.design, &st.lambda, Some(&st.warm), &FitOptions::default()).unwrap();
    let mut g = c.benchmark_group("large_membership_untouched");
    g.sample_size(10);
    g.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, _| {
        b.iter(|| topk_membership(black_box(&fit), n, k, 1000, &mut rng::stream(4, "membership", 0)))
    });
    g.finish();
}

/// A run over many prompts (docs/systems.md): 500 prompts × 20 systems (10,000 answers, θ per
/// system, one raw covariate per answer), 20,000 verdicts (10,000 random within-prompt pairs in
/// both orders), k = 3. `systems_refit_step` is what the runner does per refit: the warm-started
/// fit, Σ, membership (S = 1000) and summary, then 8 top-k picks over the 190,000 ordered
/// (prompt, system pair) candidates.
fn bench_systems(c: &mut Criterion) {
    use rand::RngExt;
    use topk_judge::domain::pool::Item;
    let (prompts, systems, k) = (500usize, 20usize, 3usize);
    let mut r = rng::stream(5, "bench-systems", 0);
    let pools: Vec<Pool> = (0..prompts)
        .map(|p| {
            let items = (0..systems)
                .map(|s| Item {
                    id: format!("a{s}"),
                    text: None,
                    quality: Some(s as f64 / systems as f64),
                    covariates: [("x".to_string(), r.random_range(-1.0..1.0))].into(),
                    base: None,
                    rendering: None,
                    words: None,
                    human: None,
                    system: Some(format!("s{s}")),
                })
                .collect();
            Pool::new(format!("p{p}"), String::new(), items).unwrap()
        })
        .collect();
    let pool = Pool::systems("bench".into(), pools).unwrap();
    let cov = build_covariates(&pool, &[CovariateSpec::parse("x:raw").unwrap()]).unwrap();
    let mut queried = HashSet::new();
    while queried.len() < 20_000 {
        let p = r.random_range(0..prompts);
        let (a, b) = (p * systems + r.random_range(0..systems), p * systems + r.random_range(0..systems));
        if a != b {
            queried.insert((a, b));
            queried.insert((b, a));
        }
    }
    let mut list: Vec<(usize, usize)> = queried.iter().copied().collect();
    list.sort();
    let verdicts: Vec<ItemVerdict> = list
        .iter()
        .map(|&(a, b)| {
            let eta = 2.0 * (pool.items[a].quality.unwrap() - pool.items[b].quality.unwrap())
                + 0.5 * (cov.x[a][0] - cov.x[b][0])
                + 0.3;
            ItemVerdict { a, b, y: f64::from(u8::from(r.random::<f64>() < 1.0 / (1.0 + (-eta).exp()))), w: 1.0 }
        })
        .collect();
    let before = build_design(&pool, &cov, &verdicts[..verdicts.len() - 8]);
    let lambda = Prior::default().diagonal(systems, 1);
    let warm = bt::fit(&before, &lambda, None, &FitOptions::default()).unwrap().beta;
    let design = build_design(&pool, &cov, &verdicts);
    let mut g = c.benchmark_group("systems_refit_step");
    g.sample_size(20);
    g.bench_with_input(BenchmarkId::from_parameter("500x20"), &(), |b, _| {
        b.iter(|| {
            let (summary, _fit, post) = fit_and_summarise(
                &pool,
                &cov,
                black_box(&design),
                &Prior::default(),
                k,
                1000,
                Some(&warm),
                &mut rng::stream(4, "membership", 0),
            )
            .unwrap();
            let ctx = Context {
                item_base: &pool.item_base,
                item_prompt: &pool.item_prompt,
                x: &cov.x,
                m: systems,
                p: 1,
                post: &post,
                membership: &summary.membership,
                k,
                queried: &queried,
                orders: Orders::Both,
                seed: 3,
                allowed: None,
            };
            acquire::select(StrategyKind::Topk, &ctx, 8, &mut rng::stream(3, "acquire", 0))
        })
    });
    g.finish();
}

criterion_group!(benches, bench, bench_large, bench_untouched, bench_systems);
criterion_main!(benches);

//! Criterion benchmarks of one refit step of Algorithm 1 (docs/model.md §3) at N = 100 and N = 1000 with
//! 10·N comparisons, bias-aware model with one covariate: `fit` (warm-started Newton), `laplace`
//! (Σ = H⁻¹), `membership` (S = 1000 draws), `acquire` (a batch of 8 top-k picks), `refit_step`
//! (what the runner does per refit: `fit_and_summarise` — fit, Σ, membership, summary — then the
//! 8 picks). Data are built outside the timed closures; fixed seeds.

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use std::collections::HashSet;
use std::hint::black_box;
use topk_judge::acquire::{self, Context, Orders, StrategyKind};
use topk_judge::analysis::synth::{SynthSpec, generate};
use topk_judge::model::bt::{self, FitOptions, Prior};
use topk_judge::model::membership::topk_membership;
use topk_judge::model::summary::{ItemVerdict, build_design, fit_and_summarise};
use topk_judge::model::{Design, Posterior};
use topk_judge::rng;
use topk_judge::store::pool::{CovariateSpec, Covariates, Pool, build_covariates};

struct Setup {
    pool: Pool,
    cov: Covariates,
    design: Design,
    warm: Vec<f64>,
    lambda: Vec<f64>,
    queried: HashSet<(usize, usize)>,
}

fn setup(n: usize) -> Setup {
    use rand::RngExt;
    let s =
        generate(&SynthSpec { n, rho: 0.3, c_star: 1.0, kappa_star: 0.5, temperature: 1.0, paired: false, seed: 1 });
    let cov = build_covariates(&s.pool, &[CovariateSpec::parse("x:raw").unwrap()]).unwrap();
    let mut r = rng::stream(2, "bench", 0);
    let mut queried = HashSet::new();
    while queried.len() < 10 * n {
        let (a, b) = (r.random_range(0..n), r.random_range(0..n));
        if a != b {
            queried.insert((a, b));
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
    let ctx = Context {
        item_base: &st.pool.item_base,
        x: &st.cov.x,
        m: st.pool.n_bases(),
        p: 1,
        post,
        membership: pi,
        k: 10,
        queried: &st.queried,
        orders: Orders::Both,
        seed: 3,
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
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);

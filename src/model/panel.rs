//! A judge panel: several judges, one shared item quality θ (docs/model.md §8).
//!
//! For an ordered query (a, b) answered by judge j, with first-shown a:
//!
//! η = s_j (θ_{base(a)} − θ_{base(b)}) + c_jᵀ(x_a − x_b) + κ_j,   P(first wins | j) = σ(η)
//!
//! Each judge has its own position effect κ_j (logits), bias coefficients c_j (logits per
//! covariate unit; none for a **trusted** judge, whose verdicts are taken as free of item-level
//! bias, the paper's trusted anchors) and scale s_j = exp(u_j) > 0 (how sharply it separates
//! quality). One judge, the **reference**, has s = 1 fixed: θ is in its logits.
//!
//! β = (θ (M); per judge in order: c_j (p, absent when trusted), κ_j, u_j (absent for the
//! reference)). The prior is λ_θ on θ, λ_b on every c_j, λ_κ on every κ_j and [`LAMBDA_LOG_SCALE`]
//! on every u_j. MAP by Newton with backtracking on the exact Hessian (the Gauss–Newton one when
//! the exact one is not positive definite far from the optimum); the Laplace posterior is
//! N(β̂, H(β̂)⁻¹), dense.
//!
//! A panel of one untrusted judge has β = (θ, c, κ), the parameters and likelihood of
//! [`super::bt`] (tested to agree to 1e-9).

use super::bt::{FitError, Prior, sigmoid};
use super::linalg::{Cholesky, Matrix};
use crate::domain::rng::ChaCha8Rng;
use rand_distr::{Distribution, StandardNormal};

/// Prior precision on each log-scale u_j = ln s_j (1/nat²): s_j within e^{±2} at 2 sd.
pub const LAMBDA_LOG_SCALE: f64 = 1.0;

/// The largest panel model fitted (parameters): the fit is dense (n³ per Newton step).
pub const MAX_PANEL_PARAMS: usize = 3000;

/// One judge's place in the panel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PanelRole {
    /// Its verdicts carry no item-level bias: no c_j.
    pub trusted: bool,
    /// Its scale is fixed to 1 (θ is in its logits). When no judge is marked: the first
    /// trusted judge, else judge 0.
    pub reference: bool,
}

/// One observed ordered query of a panel, in base-index form.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PanelObs {
    /// Base of the first-shown item.
    pub i: usize,
    /// Base of the second-shown item.
    pub j: usize,
    /// The judge that answered (index into the panel's roles, as in [`Layout::new`]).
    pub judge: usize,
    /// Outcome in [0, 1] (1: first-shown wins).
    pub y: f64,
    /// Weight.
    pub w: f64,
}

/// Where each judge's parameters sit in β.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// M bases.
    pub m: usize,
    /// p covariates.
    pub p: usize,
    /// First index of c_j (`None` for a trusted judge).
    pub c: Vec<Option<usize>>,
    /// Index of κ_j.
    pub kappa: Vec<usize>,
    /// Index of u_j = ln s_j (`None` for the reference judge).
    pub u: Vec<Option<usize>>,
    /// The reference judge (s = 1): the one marked, else the first trusted judge, else judge 0.
    pub reference: usize,
    /// Number of parameters.
    pub n: usize,
}

impl Layout {
    /// The layout for M bases, p covariates and these judges.
    ///
    /// # Panics
    /// If `roles` is empty.
    pub fn new(m: usize, p: usize, roles: &[PanelRole]) -> Self {
        assert!(!roles.is_empty(), "a panel has at least one judge");
        let reference =
            roles.iter().position(|r| r.reference).or_else(|| roles.iter().position(|r| r.trusted)).unwrap_or(0);
        let mut at = m;
        let (mut c, mut kappa, mut u) = (Vec::new(), Vec::new(), Vec::new());
        for (j, r) in roles.iter().enumerate() {
            if r.trusted {
                c.push(None);
            } else {
                c.push(Some(at));
                at += p;
            }
            kappa.push(at);
            at += 1;
            if j == reference {
                u.push(None);
            } else {
                u.push(Some(at));
                at += 1;
            }
        }
        Self { m, p, c, kappa, u, reference, n: at }
    }

    /// The prior diagonal Λ (length n).
    pub fn prior_diagonal(&self, prior: &Prior) -> Vec<f64> {
        let mut v = vec![prior.lambda_theta; self.n];
        for j in 0..self.kappa.len() {
            if let Some(c) = self.c[j] {
                v[c..c + self.p].fill(prior.lambda_b);
            }
            v[self.kappa[j]] = prior.lambda_kappa;
            if let Some(u) = self.u[j] {
                v[u] = LAMBDA_LOG_SCALE;
            }
        }
        v
    }

    /// s_j at β (1 for the reference).
    pub fn scale(&self, beta: &[f64], j: usize) -> f64 {
        self.u[j].map_or(1.0, |u| beta[u].exp())
    }

    /// The nonzero entries of ∂η/∂β for judge j on bases (i, k) with covariate difference `dx`
    /// at β: (index, value). With nuisance known this is s_j(e_i − e_k); the c, κ and u entries
    /// carry the rest.
    pub fn row(&self, beta: &[f64], judge: usize, i: usize, k: usize, dx: &[f64]) -> Vec<(usize, f64)> {
        let s = self.scale(beta, judge);
        let mut r = Vec::with_capacity(4 + self.p);
        if i != k {
            r.push((i, s));
            r.push((k, -s));
        }
        if let Some(c) = self.c[judge] {
            r.extend(dx.iter().enumerate().filter(|(_, v)| **v != 0.0).map(|(t, v)| (c + t, *v)));
        }
        r.push((self.kappa[judge], 1.0));
        if let Some(u) = self.u[judge] {
            r.push((u, s * (beta[i] - beta[k])));
        }
        r
    }
}

/// A normal prior N(mean, sd²) on one parameter (its units: logits for κ_j and c_j).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Normal {
    /// Prior mean.
    pub mean: f64,
    /// Prior sd (> 0).
    pub sd: f64,
}

/// The range a carried prior's sd must be in (logits): tighter than 0.001 it fixes the
/// parameter (the fit's precision 1/sd² then swamps its convergence test), looser than 100 it is
/// flatter than the defaults and can leave the Hessian singular.
pub const CARRIED_SD_RANGE: (f64, f64) = (1e-3, 100.0);

/// The largest |mean| of a carried prior (logits): a position effect or bias of 20 logits already
/// means a verdict decided by it with odds of 5·10⁸ to 1.
pub const CARRIED_MAX_MEAN: f64 = 20.0;

/// A judge's prior carried from earlier data (docs/model.md §8, "Carried judge priors"): its
/// position effect κ_j and bias coefficients c_j as learned on other pools, each replacing the
/// default zero-mean prior (λ_κ, λ_b of [`Prior`]) of that parameter. `c` has one entry per
/// covariate (`None`: the default), or is empty.
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize)]
pub struct JudgePrior {
    /// κ_j ~ N(mean, sd²), logits.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kappa: Option<Normal>,
    /// c_j,t ~ N(mean, sd²), logits per covariate unit (`null`: the default prior).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub c: Vec<Option<Normal>>,
}

/// The prior of one fit: mean and precision (diagonal) per parameter of β.
#[derive(Debug, Clone, PartialEq)]
struct PriorTerms {
    mean: Vec<f64>,
    lambda: Vec<f64>,
}

impl PriorTerms {
    fn zero_mean(lambda: Vec<f64>) -> Self {
        Self { mean: vec![0.0; lambda.len()], lambda }
    }

    /// Whether gradient `g` at `beta` is within `tol` of 0 in every component, beyond the
    /// rounding floor of its prior term: λ_r(β_r − m_r) cannot be computed closer to 0 than
    /// about λ_r·ε·max(|β_r|, |m_r|) (ε: f64's machine epsilon), which a tight carried prior
    /// (sd 0.001, λ = 10⁶) at a mean of 20 logits puts at ~10⁻⁸, above a tolerance of 10⁻⁹.
    fn converged(&self, g: &[f64], beta: &[f64], tol: f64) -> bool {
        g.iter().zip(beta).enumerate().all(|(r, (gr, b))| {
            let floor = 8.0 * f64::EPSILON * self.lambda[r] * b.abs().max(self.mean[r].abs());
            gr.abs() < tol + floor
        })
    }
}

/// The data of a panel fit.
#[derive(Debug, Clone)]
pub struct PanelDesign {
    /// Parameter layout.
    pub layout: Layout,
    /// Observations.
    pub obs: Vec<PanelObs>,
    /// x_a − x_b per observation, row-major Q×p (for a judge-specific covariate such as "same
    /// family", the value as that judge sees it).
    pub dx: Vec<f64>,
    /// Carried priors per judge (empty, or one per judge: [`PanelDesign::carry`]).
    pub carried: Vec<JudgePrior>,
}

impl PanelDesign {
    /// An empty design.
    pub fn new(m: usize, p: usize, roles: &[PanelRole]) -> Self {
        Self { layout: Layout::new(m, p, roles), obs: Vec::new(), dx: Vec::new(), carried: Vec::new() }
    }

    /// Set judge j's carried prior (replaces the default prior of each parameter it names; a c
    /// prior on a trusted judge, which has no c, is ignored).
    ///
    /// # Panics
    /// If j is not a judge of the panel, `prior.c` is neither empty nor of length p, or an sd is
    /// not finite and > 0.
    pub fn carry(&mut self, j: usize, prior: JudgePrior) {
        let l = &self.layout;
        assert!(j < l.kappa.len(), "judge {j} is not in the panel");
        assert!(prior.c.is_empty() || prior.c.len() == l.p, "a carried c prior has one entry per covariate");
        for n in prior.kappa.iter().chain(prior.c.iter().flatten()) {
            assert!(
                n.sd.is_finite() && n.sd > 0.0 && n.mean.is_finite(),
                "a carried prior needs a finite mean and sd > 0"
            );
        }
        if self.carried.len() < l.kappa.len() {
            self.carried.resize(l.kappa.len(), JudgePrior::default());
        }
        self.carried[j] = prior;
    }

    /// The fit's prior: [`Layout::prior_diagonal`] with zero mean, each carried prior in place.
    fn prior_terms(&self, prior: &Prior) -> PriorTerms {
        let mut t = PriorTerms::zero_mean(self.layout.prior_diagonal(prior));
        self.apply_carried(&mut t);
        t
    }

    fn apply_carried(&self, t: &mut PriorTerms) {
        let l = &self.layout;
        for (j, cp) in self.carried.iter().enumerate() {
            let mut set = |r: usize, n: &Normal| {
                t.mean[r] = n.mean;
                t.lambda[r] = 1.0 / (n.sd * n.sd);
            };
            if let Some(n) = &cp.kappa {
                set(l.kappa[j], n);
            }
            if let Some(c) = l.c[j] {
                for (t, n) in cp.c.iter().enumerate() {
                    if let Some(n) = n {
                        set(c + t, n);
                    }
                }
            }
        }
    }

    /// Add one observation.
    ///
    /// # Panics
    /// If `dx.len() != p`, a base is out of range or the judge is unknown.
    pub fn push(&mut self, o: PanelObs, dx: &[f64]) {
        let l = &self.layout;
        assert_eq!(dx.len(), l.p, "dx has length {} but p = {}", dx.len(), l.p);
        assert!(o.i < l.m && o.j < l.m && o.judge < l.kappa.len(), "observation out of range");
        self.obs.push(o);
        self.dx.extend_from_slice(dx);
    }

    /// x_a − x_b of observation q.
    pub fn dx_of(&self, q: usize) -> &[f64] {
        &self.dx[q * self.layout.p..(q + 1) * self.layout.p]
    }

    /// η_q at β (logits).
    pub fn eta(&self, beta: &[f64], q: usize) -> f64 {
        let (o, l) = (&self.obs[q], &self.layout);
        let mut e = l.scale(beta, o.judge) * (beta[o.i] - beta[o.j]) + beta[l.kappa[o.judge]];
        if let Some(c) = l.c[o.judge] {
            e += self.dx_of(q).iter().enumerate().map(|(t, v)| beta[c + t] * v).sum::<f64>();
        }
        e
    }

    /// Log-likelihood at β (nats).
    pub fn log_likelihood(&self, beta: &[f64]) -> f64 {
        (0..self.obs.len())
            .map(|q| {
                let o = &self.obs[q];
                let e = self.eta(beta, q);
                -o.w * (e.max(0.0) + (-e.abs()).exp().ln_1p() - o.y * e)
            })
            .sum()
    }

    fn neg_log_posterior(&self, beta: &[f64], prior: &PriorTerms) -> f64 {
        -self.log_likelihood(beta)
            + 0.5
                * beta.iter().zip(&prior.lambda).zip(&prior.mean).map(|((b, l), m)| l * (b - m) * (b - m)).sum::<f64>()
    }

    /// Gradient and Hessian of the negative log posterior; `exact`: with the second derivatives
    /// of η in u_j (else Gauss–Newton).
    fn derivatives(&self, beta: &[f64], prior: &PriorTerms, exact: bool) -> (Vec<f64>, Matrix) {
        let l = &self.layout;
        let n = l.n;
        let mut g: Vec<f64> = beta.iter().zip(&prior.lambda).zip(&prior.mean).map(|((b, l), m)| l * (b - m)).collect();
        let mut h = Matrix::zeros(n, n);
        for (r, v) in prior.lambda.iter().enumerate() {
            h[(r, r)] += v;
        }
        for q in 0..self.obs.len() {
            let o = self.obs[q];
            let e = self.eta(beta, q);
            let s = sigmoid(e);
            let res = o.w * (s - o.y);
            let curv = o.w * s * (1.0 - s);
            let row = l.row(beta, o.judge, o.i, o.j, self.dx_of(q));
            for &(a, va) in &row {
                g[a] += res * va;
                for &(b, vb) in &row {
                    h[(a, b)] += curv * va * vb;
                }
            }
            if exact && let Some(u) = l.u[o.judge] {
                // ∂²η/∂u² = s Δθ, ∂²η/∂u∂θ_i = s, ∂²η/∂u∂θ_j = −s.
                let sc = l.scale(beta, o.judge);
                h[(u, u)] += res * sc * (beta[o.i] - beta[o.j]);
                if o.i != o.j {
                    for (t, v) in [(o.i, sc), (o.j, -sc)] {
                        h[(u, t)] += res * v;
                        h[(t, u)] += res * v;
                    }
                }
            }
        }
        (g, h)
    }

    /// Check outcomes, weights and covariates.
    ///
    /// # Errors
    /// [`FitError::InvalidData`] naming the observation.
    pub fn validate(&self) -> Result<(), FitError> {
        for (q, o) in self.obs.iter().enumerate() {
            if !((0.0..=1.0).contains(&o.y) && o.w.is_finite() && o.w >= 0.0) {
                return Err(FitError::InvalidData(format!("observation {q}: y = {}, w = {}", o.y, o.w)));
            }
        }
        if let Some(v) = self.dx.iter().find(|v| !v.is_finite()) {
            return Err(FitError::InvalidData(format!("covariate difference {v} is not finite")));
        }
        if self.layout.n > MAX_PANEL_PARAMS {
            let l = &self.layout;
            return Err(FitError::InvalidData(format!(
                "a judge panel is fitted densely, at most {MAX_PANEL_PARAMS} parameters; this one has {} ({} bases θ, and for each of its {} judges a position effect κ, a scale s and {} bias coefficient{} c): fit fewer judges, merge the records of judges with few verdicts under one name, or fit fewer covariates",
                l.n,
                l.m,
                l.kappa.len(),
                l.p,
                if l.p == 1 { "" } else { "s" }
            )));
        }
        Ok(())
    }
}

/// The MAP of a panel and its Laplace posterior.
#[derive(Debug, Clone)]
pub struct PanelFit {
    /// β̂ (length n; [`Layout`]).
    pub beta: Vec<f64>,
    /// Σ = H(β̂)⁻¹ (n×n).
    pub cov: Matrix,
    /// The layout of β.
    pub layout: Layout,
    /// Newton iterations.
    pub iterations: usize,
    /// ‖∇L‖∞ at β̂.
    pub grad_inf: f64,
}

/// An estimate and its Laplace posterior sd.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Estimate {
    /// The MAP value.
    pub value: f64,
    /// Posterior sd.
    pub sd: f64,
}

impl PanelFit {
    /// θ̂ (length M, reference-judge logits).
    pub fn theta(&self) -> &[f64] {
        &self.beta[..self.layout.m]
    }

    fn est(&self, r: usize) -> Estimate {
        Estimate { value: self.beta[r], sd: self.cov[(r, r)].max(0.0).sqrt() }
    }

    /// κ̂_j (logits).
    pub fn kappa(&self, j: usize) -> Estimate {
        self.est(self.layout.kappa[j])
    }

    /// ĉ_j (length p; empty for a trusted judge), logits per covariate unit.
    pub fn c(&self, j: usize) -> Vec<Estimate> {
        self.layout.c[j].map_or_else(Vec::new, |c| (c..c + self.layout.p).map(|r| self.est(r)).collect())
    }

    /// ŝ_j with its sd by the delta method (sd(s) = s · sd(ln s)); exactly 1 ± 0 for the reference.
    pub fn scale(&self, j: usize) -> Estimate {
        match self.layout.u[j] {
            None => Estimate { value: 1.0, sd: 0.0 },
            Some(u) => {
                let e = self.est(u);
                Estimate { value: e.value.exp(), sd: e.value.exp() * e.sd }
            }
        }
    }

    /// Top-k membership π per base (length M) from `draws` draws of θ ~ N(θ̂, Σ_θθ).
    ///
    /// # Panics
    /// If k is 0 or ≥ M.
    pub fn membership(&self, k: usize, draws: usize, rng: &mut ChaCha8Rng) -> Vec<f64> {
        let m = self.layout.m;
        assert!(k >= 1 && k < m, "k = {k} must be in 1..M (M = {m})");
        let block = Matrix::from_fn(m, m, |r, c| self.cov[(r, c)]);
        let chol = match Cholesky::factor(&block) {
            Ok(c) => c,
            Err(_) => {
                let mut pi = vec![0.0; m];
                for b in super::membership::point_topk(self.theta(), k) {
                    pi[b] = 1.0;
                }
                return pi;
            }
        };
        let mut counts = vec![0usize; m];
        let mut idx: Vec<usize> = (0..m).collect();
        for _ in 0..draws {
            let z: Vec<f64> = (0..m).map(|_| StandardNormal.sample(rng)).collect();
            let lz = chol.lower_mul(&z);
            let t: Vec<f64> = self.theta().iter().zip(&lz).map(|(a, b)| a + b).collect();
            idx.select_nth_unstable_by(k - 1, |a, b| t[*b].total_cmp(&t[*a]));
            for &b in &idx[..k] {
                counts[b] += 1;
            }
        }
        counts.iter().map(|&c| c as f64 / draws as f64).collect()
    }
}

/// MAP of the panel model by Newton's method with backtracking (tolerance 1e-9 on ‖∇L‖∞, above
/// the rounding floor of a tight carried prior's term; at most 200 iterations), and its Laplace
/// posterior. `start`: a warm start (length n).
///
/// # Errors
/// Invalid data, no convergence, or a Hessian that is not positive definite at the MAP.
pub fn fit(d: &PanelDesign, prior: &Prior, start: Option<&[f64]>) -> Result<PanelFit, FitError> {
    d.validate()?;
    let n = d.layout.n;
    let lambda = d.prior_terms(prior);
    let mut beta = start.filter(|s| s.len() == n).map_or_else(|| vec![0.0; n], <[f64]>::to_vec);
    let tol = 1e-9;
    let max_iter = 200;
    let mut loss = d.neg_log_posterior(&beta, &lambda);
    for it in 0..=max_iter {
        let (g, h) = d.derivatives(&beta, &lambda, true);
        let grad_inf = g.iter().fold(0.0f64, |a, v| a.max(v.abs()));
        if lambda.converged(&g, &beta, tol) {
            let chol = match Cholesky::factor(&h) {
                Ok(c) => c,
                Err(_) => Cholesky::factor(&d.derivatives(&beta, &lambda, false).1)
                    .map_err(|pivot| FitError::NotPositiveDefinite { pivot, dim: n })?,
            };
            return Ok(PanelFit { cov: chol.inverse(), beta, layout: d.layout.clone(), iterations: it, grad_inf });
        }
        if it == max_iter {
            return Err(FitError::NotConverged { iterations: it, grad_inf, tol });
        }
        let chol = match Cholesky::factor(&h) {
            Ok(c) => c,
            Err(_) => Cholesky::factor(&d.derivatives(&beta, &lambda, false).1)
                .map_err(|pivot| FitError::NotPositiveDefinite { pivot, dim: n })?,
        };
        let step = chol.solve(&g);
        let mut t = 1.0;
        loop {
            let cand: Vec<f64> = beta.iter().zip(&step).map(|(b, s)| b - t * s).collect();
            let l = d.neg_log_posterior(&cand, &lambda);
            if l <= loss + 1e-13 * loss.abs().max(1.0) || t < 1e-10 {
                beta = cand;
                loss = l;
                break;
            }
            t *= 0.5;
        }
    }
    unreachable!("the loop returns")
}

/// Profile log-likelihood range (nats) of parameter `r` of the panel over β̂_r ± 1 (21 points),
/// every other parameter re-fitted: θ and every c_j with a 1e-6 ridge (docs/model.md §5), each
/// κ_j and log-scale u_j with its prior (λ_κ of `prior`, [`LAMBDA_LOG_SCALE`]). The likelihood's
/// invariance (θ → θ + δx, c_j → c_j − s_jδ, docs/model.md §8) moves neither κ nor u, so their
/// priors leave a flat profile flat, and they keep a judge with few, separable verdicts from an
/// unbounded scale.
///
/// # Errors
/// A failed inner fit.
pub fn profile_range(d: &PanelDesign, fitted: &PanelFit, r: usize, prior: &Prior) -> Result<f64, FitError> {
    let mut lambda = PriorTerms::zero_mean(vec![super::profile::PROFILE_RIDGE; d.layout.n]);
    for j in 0..d.layout.kappa.len() {
        lambda.lambda[d.layout.kappa[j]] = prior.lambda_kappa;
        if let Some(u) = d.layout.u[j] {
            lambda.lambda[u] = LAMBDA_LOG_SCALE;
        }
    }
    d.apply_carried(&mut lambda);
    let center = fitted.beta[r];
    let mut lls = Vec::with_capacity(super::profile::GRID_POINTS);
    let mut warm = fitted.beta.clone();
    for v in super::profile::grid(center) {
        let b = fit_fixed(d, &lambda, &warm, r, v)?;
        lls.push(d.log_likelihood(&b));
        warm = b;
    }
    let max = lls.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let min = lls.iter().copied().fold(f64::INFINITY, f64::min);
    Ok(max - min)
}

/// The MAP under diagonal precision `lambda` with β_r fixed at `v` (Gauss–Newton steps with
/// backtracking; the profile's inner fit).
fn fit_fixed(d: &PanelDesign, lambda: &PriorTerms, start: &[f64], r: usize, v: f64) -> Result<Vec<f64>, FitError> {
    let n = d.layout.n;
    let mut beta = start.to_vec();
    beta[r] = v;
    let mut loss = d.neg_log_posterior(&beta, lambda);
    let pin = |h: &mut Matrix| {
        for c in 0..n {
            h[(r, c)] = 0.0;
            h[(c, r)] = 0.0;
        }
        h[(r, r)] = 1.0;
    };
    for it in 0..=400 {
        // Newton on the exact Hessian (quadratic convergence along the weak directions a ridge
        // leaves), Gauss–Newton where the exact one is not positive definite.
        let (mut g, mut h) = d.derivatives(&beta, lambda, true);
        g[r] = 0.0;
        let grad_inf = g.iter().fold(0.0f64, |a, x| a.max(x.abs()));
        if lambda.converged(&g, &beta, 1e-7) {
            return Ok(beta);
        }
        if it == 400 {
            return Err(FitError::NotConverged { iterations: it, grad_inf, tol: 1e-7 });
        }
        pin(&mut h);
        let chol = match Cholesky::factor(&h) {
            Ok(c) => c,
            Err(_) => {
                let mut h = d.derivatives(&beta, lambda, false).1;
                pin(&mut h);
                Cholesky::factor(&h).map_err(|pivot| FitError::NotPositiveDefinite { pivot, dim: n })?
            }
        };
        let step = chol.solve(&g);
        let mut t = 1.0;
        loop {
            let cand: Vec<f64> = beta.iter().zip(&step).map(|(b, s)| b - t * s).collect();
            let l = d.neg_log_posterior(&cand, lambda);
            if l <= loss + 1e-13 * loss.abs().max(1.0) || t < 1e-12 {
                beta = cand;
                loss = l;
                break;
            }
            t *= 0.5;
        }
    }
    unreachable!("the loop returns")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::rng;
    use crate::model::bt::{self, Design, FitOptions};
    use rand::RngExt;

    /// Verdicts of `judges` (s, c, κ) on every ordered pair of M bases, `reps` times, one
    /// covariate x per base; Bernoulli draws from `seed`.
    fn simulate(theta: &[f64], x: &[f64], judges: &[(f64, f64, f64)], reps: usize, seed: u64) -> Vec<(PanelObs, f64)> {
        let mut r = rng::stream(seed, "panel-test", 0);
        let m = theta.len();
        let mut out = Vec::new();
        for _ in 0..reps {
            for (jd, &(s, c, k)) in judges.iter().enumerate() {
                for i in 0..m {
                    for j in 0..m {
                        if i == j {
                            continue;
                        }
                        let p = sigmoid(s * (theta[i] - theta[j]) + c * (x[i] - x[j]) + k);
                        let y = if r.random::<f64>() < p { 1.0 } else { 0.0 };
                        out.push((PanelObs { i, j, judge: jd, y, w: 1.0 }, x[i] - x[j]));
                    }
                }
            }
        }
        out
    }

    fn pool(m: usize, seed: u64) -> (Vec<f64>, Vec<f64>) {
        let mut r = rng::stream(seed, "panel-pool", 0);
        let theta: Vec<f64> = (0..m).map(|_| StandardNormal.sample(&mut r)).collect();
        let x: Vec<f64> = (0..m).map(|_| StandardNormal.sample(&mut r)).collect();
        (theta, x)
    }

    #[test]
    fn a_panel_of_one_is_the_bias_aware_model() {
        let (theta, x) = pool(12, 1);
        let data = simulate(&theta, &x, &[(1.0, 0.7, 0.4)], 1, 2);
        let mut pd = PanelDesign::new(12, 1, &[PanelRole { trusted: false, reference: false }]);
        let mut bd = Design::new(12, 1);
        for (o, dx) in &data {
            pd.push(*o, &[*dx]);
            bd.push(o.i, o.j, &[*dx], o.y, o.w);
        }
        let prior = Prior::default();
        let pf = fit(&pd, &prior, None).unwrap();
        let bf = bt::fit(&bd, &prior.diagonal(12, 1), None, &FitOptions::default()).unwrap();
        assert_eq!(pf.layout.n, bd.n_params());
        for (a, b) in pf.beta.iter().zip(&bf.beta) {
            assert!((a - b).abs() < 1e-9, "{a} vs {b}");
        }
        let bcov = match &bf.chol {
            crate::model::linalg::Factor::Dense(c) => c.inverse(),
            crate::model::linalg::Factor::Sparse(_) => unreachable!("13 parameters are dense"),
        };
        for r in 0..pf.layout.n {
            assert!((pf.cov[(r, r)] - bcov[(r, r)]).abs() < 1e-9);
        }
        assert!((pd.log_likelihood(&pf.beta) - bt::log_likelihood(&bd, &bf.beta)).abs() < 1e-9);
    }

    #[test]
    fn layout_puts_each_judges_parameters_after_theta() {
        let l = Layout::new(
            5,
            2,
            &[PanelRole { trusted: false, reference: false }, PanelRole { trusted: true, reference: false }],
        );
        // Judge 1 is trusted, so it is the reference: no c, no u.
        assert_eq!(l.reference, 1);
        assert_eq!(l.c, vec![Some(5), None]);
        assert_eq!(l.kappa, vec![7, 9]);
        assert_eq!(l.u, vec![Some(8), None]);
        assert_eq!(l.n, 10);
    }

    #[test]
    fn gradient_and_hessian_match_finite_differences() {
        let (theta, x) = pool(6, 3);
        let data = simulate(&theta, &x, &[(1.0, 0.0, 0.2), (0.6, 0.8, 1.0)], 1, 4);
        let mut d = PanelDesign::new(
            6,
            1,
            &[PanelRole { trusted: true, reference: false }, PanelRole { trusted: false, reference: false }],
        );
        for (o, dx) in &data {
            d.push(*o, &[*dx]);
        }
        // A carried prior off zero on the untrusted judge's κ and c.
        d.carry(
            1,
            JudgePrior { kappa: Some(Normal { mean: 0.7, sd: 0.4 }), c: vec![Some(Normal { mean: -0.3, sd: 0.25 })] },
        );
        let lambda = d.prior_terms(&Prior::default());
        assert_eq!((lambda.mean[7], lambda.lambda[7]), (-0.3, 16.0), "c of judge 1 at index 6 + 1");
        let beta: Vec<f64> = (0..d.layout.n).map(|r| 0.1 * (r as f64 + 1.0).sin()).collect();
        let (g, h) = d.derivatives(&beta, &lambda, true);
        let e = 1e-6;
        for r in 0..d.layout.n {
            let mut bp = beta.clone();
            bp[r] += e;
            let mut bm = beta.clone();
            bm[r] -= e;
            let fd = (d.neg_log_posterior(&bp, &lambda) - d.neg_log_posterior(&bm, &lambda)) / (2.0 * e);
            assert!((fd - g[r]).abs() < 1e-5, "∂L/∂β_{r}: {fd} vs {}", g[r]);
            let (gp, _) = d.derivatives(&bp, &lambda, true);
            let (gm, _) = d.derivatives(&bm, &lambda, true);
            for c in 0..d.layout.n {
                let fd2 = (gp[c] - gm[c]) / (2.0 * e);
                assert!((fd2 - h[(c, r)]).abs() < 1e-4, "H[{c},{r}]: {fd2} vs {}", h[(c, r)]);
            }
        }
    }

    #[test]
    fn a_carried_prior_is_the_default_when_it_says_the_same_and_pins_a_parameter_when_tight() {
        let (theta, x) = pool(10, 7);
        let data = simulate(&theta, &x, &[(1.0, 0.0, 0.3), (0.6, 0.8, 1.2)], 1, 8);
        let roles = [PanelRole { trusted: true, reference: false }, PanelRole { trusted: false, reference: false }];
        let mut d = PanelDesign::new(10, 1, &roles);
        for (o, dx) in &data {
            d.push(*o, &[*dx]);
        }
        let prior = Prior::default();
        let plain = fit(&d, &prior, None).unwrap();
        // N(0, 1/λ) is the default prior: the same MAP.
        let mut same = d.clone();
        let default_of = |lambda: f64| Some(Normal { mean: 0.0, sd: lambda.sqrt().recip() });
        same.carry(1, JudgePrior { kappa: default_of(prior.lambda_kappa), c: vec![default_of(prior.lambda_b)] });
        let f = fit(&same, &prior, None).unwrap();
        for (a, b) in plain.beta.iter().zip(&f.beta) {
            assert!((a - b).abs() < 1e-9, "{a} vs {b}");
        }
        // A tight prior holds ĉ near its mean whatever the data say, and its posterior sd is at
        // most the prior's.
        let mut tight = d.clone();
        tight.carry(1, JudgePrior { kappa: None, c: vec![Some(Normal { mean: 2.5, sd: 1e-3 })] });
        let t = fit(&tight, &prior, None).unwrap();
        let c = t.c(1)[0];
        assert!((c.value - 2.5).abs() < 1e-3 && c.sd < 1.01e-3, "{c:?}");
        assert!((plain.c(1)[0].value - 2.5).abs() > 0.5, "the data alone say otherwise: {:?}", plain.c(1)[0]);
        // The rounding floor: one ulp from a mean of 20 under λ = 10⁶ is a gradient of 3.6e-9,
        // above the tolerance, and converged; a real gradient of 1e-7 is not.
        let t = PriorTerms { mean: vec![20.0], lambda: vec![1e6] };
        let b = 20.0 + 16.0 * f64::EPSILON;
        let g = 1e6 * (b - 20.0);
        assert!(g > 3e-9 && t.converged(&[g], &[b], 1e-9));
        assert!(!t.converged(&[1e-7], &[b], 1e-9));
        assert!(!PriorTerms::zero_mean(vec![1.0]).converged(&[2e-9], &[0.5], 1e-9));
        // At the edge of what a config accepts (|mean| 20, sd 0.001: λ = 10⁶) the prior term's
        // gradient cannot be computed below ~10⁻⁸; the fit converges anyway (it stopped at 200
        // iterations with ‖∇L‖∞ = 1.4e-9 once, after the run had bought its verdicts).
        for (mean, on_kappa) in [(-20.0, false), (20.0, true)] {
            let n = Some(Normal { mean, sd: 1e-3 });
            let mut edge = d.clone();
            edge.carry(
                1,
                if on_kappa { JudgePrior { kappa: n, c: vec![] } } else { JudgePrior { kappa: None, c: vec![n] } },
            );
            let e = fit(&edge, &prior, None).unwrap();
            let got = if on_kappa { e.kappa(1) } else { e.c(1)[0] };
            assert!((got.value - mean).abs() < 1e-2 && got.sd < 1.01e-3, "{got:?}");
        }
        // A c prior on the trusted judge (no c) changes nothing.
        let mut on_trusted = d.clone();
        on_trusted.carry(0, JudgePrior { kappa: None, c: vec![Some(Normal { mean: 5.0, sd: 0.1 })] });
        assert_eq!(fit(&on_trusted, &prior, None).unwrap().beta, plain.beta);
    }

    #[test]
    fn a_trusted_judge_identifies_the_other_judges_bias_and_scale() {
        // θ in the trusted judge's logits; a cheap judge at scale 0.6 with c = 0.8 per unit of x
        // and κ = 1.2; 4 repetitions of every ordered pair of 20 bases by both.
        let (theta, x) = pool(20, 5);
        let truth = [(1.0, 0.0, 0.3), (0.6, 0.8, 1.2)];
        let data = simulate(&theta, &x, &truth, 4, 6);
        let mut d = PanelDesign::new(
            20,
            1,
            &[PanelRole { trusted: true, reference: false }, PanelRole { trusted: false, reference: false }],
        );
        for (o, dx) in &data {
            d.push(*o, &[*dx]);
        }
        let f = fit(&d, &Prior::default(), None).unwrap();
        let (s, c, k) = (f.scale(1), f.c(1)[0], f.kappa(1));
        assert!((s.value - 0.6).abs() < 2.0 * s.sd, "s = {} ± {}", s.value, s.sd);
        assert!((c.value - 0.8).abs() < 2.0 * c.sd, "c = {} ± {}", c.value, c.sd);
        assert!((k.value - 1.2).abs() < 2.0 * k.sd, "κ = {} ± {}", k.value, k.sd);
        assert!(f.kappa(0).value > 0.0 && (f.kappa(0).value - 0.3).abs() < 2.0 * f.kappa(0).sd);
        // The cheap judge's c is identified relative to the trusted one: a curved profile.
        let range = profile_range(&d, &f, d.layout.c[1].unwrap(), &Prior::default()).unwrap();
        assert!(range > 1.0, "profile range {range} nats");
    }

    #[test]
    fn without_a_trusted_judge_only_differences_of_c_are_identified() {
        // Two untrusted judges: the likelihood is invariant under θ → θ + δx, c_j → c_j − s_j δ
        // for every j at once; the profile over c_1 alone is curved (c_1 − c_0 moves), but the
        // profile of the *common* shift is flat: fix c_0 and c_1 moves with it.
        let (theta, x) = pool(10, 7);
        let data = simulate(&theta, &x, &[(1.0, 0.2, 0.3), (1.0, 0.9, 0.5)], 3, 8);
        let mut d = PanelDesign::new(
            10,
            1,
            &[PanelRole { trusted: false, reference: false }, PanelRole { trusted: false, reference: false }],
        );
        for (o, dx) in &data {
            d.push(*o, &[*dx]);
        }
        let f = fit(&d, &Prior::default(), None).unwrap();
        let (c0, c1) = (f.c(0)[0].value, f.c(1)[0].value);
        // Each c alone: the likelihood is flat along the shift, so each one's profile is flat.
        let r0 = profile_range(&d, &f, d.layout.c[0].unwrap(), &Prior::default()).unwrap();
        assert!(r0 < 1e-3, "c_0 alone is not identified: range {r0} nats");
        // Their difference is: about 0.7 with the invariance direction removed.
        let s1 = f.scale(1).value;
        let diff = c1 - s1 * c0;
        assert!((diff - 0.7).abs() < 0.35, "c_1 − s_1 c_0 = {diff}");
    }

    #[test]
    fn a_self_preference_coefficient_is_recovered_and_reads_zero_where_there_is_none() {
        // Systems mode: 8 systems in two families, 30 prompts. Judge 0 (trusted, family A)
        // has no self-preference; judge 1 (family A, untrusted) adds 1.0 logit to an answer of
        // its own family; judge 2 (family B, untrusted) none. The covariate is "same family as
        // the judge" (1/0), so its difference depends on the judge.
        let mut r = rng::stream(11, "self-pref", 0);
        let m = 8;
        let theta: Vec<f64> = (0..m).map(|_| StandardNormal.sample(&mut r)).collect();
        let family = |b: usize| b % 2; // 0: family A, 1: family B
        let judge_family = [0usize, 0, 1];
        let truth = [(1.0, 0.0, 0.2), (0.8, 1.0, 0.5), (1.2, 0.0, -0.3)];
        let roles = [
            PanelRole { trusted: true, reference: false },
            PanelRole { trusted: false, reference: false },
            PanelRole { trusted: false, reference: false },
        ];
        let mut d = PanelDesign::new(m, 1, &roles);
        for _prompt in 0..30 {
            for (jd, &(s, c, k)) in truth.iter().enumerate() {
                for i in 0..m {
                    for j in 0..m {
                        if i == j || r.random::<f64>() > 0.5 {
                            continue;
                        }
                        let own = |b: usize| f64::from(u8::from(family(b) == judge_family[jd]));
                        let dx = own(i) - own(j);
                        let p = sigmoid(s * (theta[i] - theta[j]) + c * dx + k);
                        let y = if r.random::<f64>() < p { 1.0 } else { 0.0 };
                        d.push(PanelObs { i, j, judge: jd, y, w: 1.0 }, &[dx]);
                    }
                }
            }
        }
        let f = fit(&d, &Prior::default(), None).unwrap();
        let (c1, c2) = (f.c(1)[0], f.c(2)[0]);
        assert!((c1.value - 1.0).abs() < 2.0 * c1.sd, "self-preference {} ± {}", c1.value, c1.sd);
        assert!(c1.value > 3.0 * c1.sd, "clearly positive: {} ± {}", c1.value, c1.sd);
        assert!(c2.value.abs() < 2.0 * c2.sd, "none: {} ± {}", c2.value, c2.sd);
    }

    #[test]
    fn membership_sums_to_k() {
        let (theta, x) = pool(10, 9);
        let data = simulate(&theta, &x, &[(1.0, 0.0, 0.0)], 1, 10);
        let mut d = PanelDesign::new(10, 1, &[PanelRole { trusted: true, reference: false }]);
        for (o, dx) in &data {
            d.push(*o, &[*dx]);
        }
        let f = fit(&d, &Prior::default(), None).unwrap();
        let pi = f.membership(3, 400, &mut rng::stream(1, "m", 0));
        assert!((pi.iter().sum::<f64>() - 3.0).abs() < 1e-9);
    }
}

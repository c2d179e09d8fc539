//! Profile log-likelihood over one bias coefficient (docs/model.md §5, paper §4–§5, Prop. 2).
//!
//! For covariate j and a grid c_j ∈ {ĉ_j + (g − 10)/10 : g = 0..20} (21 points over ĉ_j ± 1,
//! logits per covariate unit), the profile is
//!
//!   ℓ_p(c_j) = max over (θ, c_{−j}, κ) of ℓ(θ, c, κ),
//!
//! the Bradley–Terry log-likelihood (nats) with everything except c_j re-optimised. There is no
//! prior, only a ridge of 1e-6 on every free parameter so each inner fit is finite (θ is only
//! identified up to a constant, and a base that won every comparison would drift to infinity).
//! The reported **range** = max − min of ℓ_p over the grid (nats).
//!
//! With one covariate value per base the likelihood is invariant under θ_m → θ_m + δx_m,
//! c → c − δ (docs/model.md §2), so the profile is flat (range ≈ 0, the paper reports 0.0000 nats on 48
//! real pools at up to 26× the comparisons): c is then selected by the prior, not estimated.
//! Paired renderings (docs/model.md §6) break the invariance and give a curved profile.
//!
//! ## Numerics
//! Each inner fit is Newton with backtracking to ‖∇‖∞ < 1e-9 (the docs/model.md §2 tolerance, not
//! loosened). With the 1e-6 ridge the Hessian is ill-conditioned by design: the directions the
//! likelihood does not see (the constant shift of θ, and for p > 1 the invariance of every
//! free coefficient) have curvature 1e-6 while the κ direction has curvature ≈ Q/4. On such a
//! direction the objective is exactly the quadratic ridge term, so Newton is exact there; the
//! Cholesky solve loses about log10(cond) ≈ 10 digits of the *step*, which only slows the last
//! iteration (linear convergence with ratio ≈ cond·ε ≪ 1), and the gradient itself is a sum of
//! Q terms whose rounding (≈ Q·ε ≈ 1e-12 at Q = 2·10⁴) stays far below the tolerance. The
//! grid is walked outward from ĉ_j, each fit warm-started from its neighbour, so the later fits
//! take 2–4 iterations. The unit tests check convergence on 26× repeated comparisons and on
//! perfectly separated data.

use super::bt::{self, Design, FitError, FitOptions};
use serde::{Deserialize, Serialize};

/// Number of grid points (docs/model.md §5).
pub const GRID_POINTS: usize = 21;
/// Half-width of the grid around ĉ_j (logits per covariate unit).
pub const HALF_WIDTH: f64 = 1.0;
/// Ridge on every free parameter of the inner fits (docs/model.md §5: ≤ 1e-6).
pub const PROFILE_RIDGE: f64 = 1e-6;
/// Below this range (nats) the coefficient is reported as prior-selected (docs/model.md §5).
pub const PRIOR_SELECTED_NATS: f64 = 1e-3;

/// What the profile says about one coefficient (docs/model.md §5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IdentVerdict {
    /// Range ≥ 1e-3 nats: the comparisons inform c_j.
    Identified,
    /// Range < 1e-3 nats: ĉ_j is chosen by the prior, not estimated.
    PriorSelected,
    /// Range ≥ 1e-3 nats, but each base has one value of the covariate (the differences of
    /// every comparison are those of one value per base, [`one_value_per_base`]): the profile is
    /// flat in exact arithmetic (docs/model.md §2), and the range is the inner fits' ridge on
    /// bases that won or lost every comparison. ĉ_j is chosen by the prior.
    OneValuePerBase,
}

impl IdentVerdict {
    /// The verdict for a range in nats.
    pub fn from_range(range_nats: f64) -> Self {
        if range_nats < PRIOR_SELECTED_NATS { Self::PriorSelected } else { Self::Identified }
    }

    /// The verdict for a range in nats of a covariate that has one value per base
    /// (`one_value_per_base`, docs/model.md §2) or not: such a covariate is never identified.
    pub fn of(range_nats: f64, one_value_per_base: bool) -> Self {
        match Self::from_range(range_nats) {
            Self::Identified if one_value_per_base => Self::OneValuePerBase,
            v => v,
        }
    }

    /// The sentence printed and saved with every run (docs/model.md §5).
    pub fn text(self) -> &'static str {
        match self {
            Self::Identified => "identified by the design",
            Self::PriorSelected => "prior-selected: the comparisons do not inform this coefficient (range < 1e-3 nats)",
            Self::OneValuePerBase => {
                "prior-selected: each base has one value of this covariate, so the comparisons cannot inform this coefficient (the range is the inner fits' ridge)"
            }
        }
    }
}

/// One grid point of the profile.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ProfilePoint {
    /// c_j (logits per covariate unit).
    pub c: f64,
    /// ℓ_p(c_j): maximised log-likelihood (nats, ≤ 0).
    pub log_lik: f64,
    /// Newton iterations of this inner fit.
    pub iterations: usize,
    /// ‖∇‖∞ at the inner optimum (free parameters).
    pub grad_inf: f64,
}

/// The profile of one coefficient.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Profile {
    /// Covariate index j (0-based, order of the design's covariates).
    pub covariate: usize,
    /// Grid centre ĉ_j (the MAP under the run's prior).
    pub center: f64,
    /// The 21 points, increasing in c.
    pub points: Vec<ProfilePoint>,
    /// max − min of ℓ_p over the grid (nats).
    pub range_nats: f64,
    /// The grid value with the largest ℓ_p.
    pub argmax_c: f64,
    /// Identified when `range_nats` ≥ 1e-3 nats and the covariate does not have one value per
    /// base, else prior-selected (docs/model.md §5).
    pub verdict: IdentVerdict,
}

/// The 21 grid values ĉ_j + (g − 10)/10, g = 0..20.
pub fn grid(center: f64) -> Vec<f64> {
    let half = (GRID_POINTS / 2) as f64;
    (0..GRID_POINTS).map(|g| center + HALF_WIDTH * (g as f64 - half) / half).collect()
}

/// Profile log-likelihood of coefficient `j` around `center` (docs/model.md §5).
///
/// `warm`: a starting β (length M + p + 1, order θ, c, κ), e.g. the MAP; zeros when `None`.
/// The grid is walked outward from the centre and each inner fit starts from its neighbour's
/// optimum.
///
/// # Errors
/// [`FitError`] from an inner fit (not converged to 1e-9, or invalid data).
///
/// # Panics
/// If `j >= d.p`.
pub fn profile(d: &Design, j: usize, center: f64, warm: Option<&[f64]>) -> Result<Profile, FitError> {
    assert!(j < d.p, "covariate index {j} out of range (p = {})", d.p);
    match without_untouched(d, warm) {
        Some((reduced, warm)) => profile_of(&reduced, j, center, warm.as_deref()),
        None => profile_of(d, j, center, warm),
    }
}

/// From this many bases in no observation on (more than 4,096, so no pool of up to 4,096 bases
/// changes), [`profile`] fits the design of the compared bases only.
pub const PROFILE_DROP_MIN_UNTOUCHED: usize = 4097;

/// The design without the bases of no observation, and the warm start without their θ, when
/// there are at least [`PROFILE_DROP_MIN_UNTOUCHED`] of them and two bases are compared. Their
/// θ enter neither the likelihood nor the fit of any other parameter (each only its own ridge
/// term), so every ℓ_p(c_j) is the same up to the fits' tolerance, and the 21 inner fits run
/// over the compared bases instead of all of them (at N = 100,000 with 2,000 comparisons,
/// ≈ 800 parameters instead of 100,002).
fn without_untouched(d: &Design, warm: Option<&[f64]>) -> Option<(Design, Option<Vec<f64>>)> {
    let mut index = vec![usize::MAX; d.m];
    for o in &d.obs {
        index[o.i] = 0;
        index[o.j] = 0;
    }
    let touched: Vec<usize> = (0..d.m).filter(|&b| index[b] == 0).collect();
    if d.m - touched.len() < PROFILE_DROP_MIN_UNTOUCHED || touched.len() < 2 {
        return None;
    }
    for (c, &b) in touched.iter().enumerate() {
        index[b] = c;
    }
    let obs = d.obs.iter().map(|o| bt::BaseVerdict { i: index[o.i], j: index[o.j], ..*o }).collect();
    let reduced = Design { m: touched.len(), p: d.p, obs, dx: d.dx.clone() };
    let warm = warm
        .filter(|w| w.len() == d.n_params())
        .map(|w| touched.iter().map(|&b| w[b]).chain(w[d.m..].iter().copied()).collect());
    Some((reduced, warm))
}

/// [`profile`] over every parameter of `d`.
fn profile_of(d: &Design, j: usize, center: f64, warm: Option<&[f64]>) -> Result<Profile, FitError> {
    let n = d.n_params();
    let idx = d.m + j;
    let lambda = vec![PROFILE_RIDGE; n];
    let cs = grid(center);
    let mid = GRID_POINTS / 2;
    let mut points: Vec<Option<ProfilePoint>> = vec![None; GRID_POINTS];
    let mut solve = |g: usize, start: Option<&[f64]>| -> Result<Vec<f64>, FitError> {
        let opts = FitOptions { fixed: vec![(idx, cs[g])], ..Default::default() };
        let f = bt::fit(d, &lambda, start, &opts)?;
        points[g] = Some(ProfilePoint {
            c: cs[g],
            log_lik: bt::log_likelihood(d, &f.beta),
            iterations: f.iterations,
            grad_inf: f.grad_inf,
        });
        Ok(f.beta)
    };
    let centre_beta = solve(mid, warm)?;
    let mut b = centre_beta.clone();
    for g in (0..mid).rev() {
        b = solve(g, Some(&b))?;
    }
    let mut b = centre_beta;
    for g in mid + 1..GRID_POINTS {
        b = solve(g, Some(&b))?;
    }
    let points: Vec<ProfilePoint> = points.into_iter().map(|p| p.expect("every grid point solved")).collect();
    let max = points.iter().map(|p| p.log_lik).fold(f64::NEG_INFINITY, f64::max);
    let min = points.iter().map(|p| p.log_lik).fold(f64::INFINITY, f64::min);
    let argmax_c = points.iter().find(|p| p.log_lik == max).map_or(center, |p| p.c);
    let range_nats = max - min;
    let verdict = IdentVerdict::of(range_nats, one_value_per_base(d, j));
    Ok(Profile { covariate: j, center, points, range_nats, argmax_c, verdict })
}

/// Whether covariate `j`'s difference on every comparison of `d` is that of one value per base:
/// x_a − x_b = v_i − v_j for some v over the bases (and 0 within a base). Then θ_m → θ_m + δv_m,
/// c_j → c_j − δ leaves every comparison's logit unchanged (docs/model.md §2, the paper's
/// Prop. 2), so the profile of c_j is flat in exact arithmetic, whatever its computed range.
///
/// Walks each connected component of the comparison graph from one base, setting v along the
/// way, and checks every comparison against it to 1e-9 of the largest |x_a − x_b| (at least 1e-9).
pub fn one_value_per_base(d: &Design, j: usize) -> bool {
    let p = d.p;
    let dx = |q: usize| d.dx[q * p + j];
    let scale = (0..d.obs.len()).map(|q| dx(q).abs()).fold(1.0, f64::max);
    let tol = 1e-9 * scale;
    let mut edges: Vec<Vec<(usize, f64)>> = vec![Vec::new(); d.m];
    for (q, o) in d.obs.iter().enumerate() {
        if o.i == o.j {
            if dx(q).abs() > tol {
                return false;
            }
            continue;
        }
        // v_i − v_j = dx: from i, v_j = v_i − dx; from j, v_i = v_j + dx.
        edges[o.i].push((o.j, -dx(q)));
        edges[o.j].push((o.i, dx(q)));
    }
    let mut v: Vec<Option<f64>> = vec![None; d.m];
    for root in 0..d.m {
        if v[root].is_some() {
            continue;
        }
        v[root] = Some(0.0);
        let mut stack = vec![root];
        while let Some(u) = stack.pop() {
            let vu = v[u].expect("set before it is pushed");
            for &(w, step) in &edges[u] {
                match v[w] {
                    None => {
                        v[w] = Some(vu + step);
                        stack.push(w);
                    }
                    Some(vw) if (vw - (vu + step)).abs() > tol => return false,
                    Some(_) => {}
                }
            }
        }
    }
    true
}

/// The per-covariate identifiability entry carried by every run's result.json (docs/model.md §5).
///
/// In result.json it reads `{"range_nats": 6.1e-6, "verdict": "<sentence>", "identified": false}`:
/// the sentence is [`IdentVerdict::text`] or `not computed: <reason>`, and `identified` repeats the
/// verdict for readers that want a flag.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(into = "IdentifiabilityRecord", try_from = "IdentifiabilityRecord")]
pub struct Identifiability {
    /// Profile-likelihood range over ĉ ± 1 (nats); `None` if an inner fit failed.
    pub range_nats: Option<f64>,
    /// The verdict, or why there is none.
    pub status: IdentStatus,
}

/// Whether the profile of one coefficient was computed, and what it says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IdentStatus {
    /// The profile was computed: its verdict.
    Profiled(IdentVerdict),
    /// An inner fit failed: the reason.
    NotComputed(String),
}

impl Identifiability {
    /// The entry for a computed profile with this range (nats).
    pub fn profiled(range_nats: f64) -> Self {
        Self { range_nats: Some(range_nats), status: IdentStatus::Profiled(IdentVerdict::from_range(range_nats)) }
    }

    /// Whether the comparisons inform the coefficient (a computed range ≥ 1e-3 nats).
    pub fn identified(&self) -> bool {
        self.status == IdentStatus::Profiled(IdentVerdict::Identified)
    }

    /// The sentence printed and saved: [`IdentVerdict::text`] or `not computed: <reason>`.
    pub fn verdict_text(&self) -> String {
        match &self.status {
            IdentStatus::Profiled(v) => v.text().to_string(),
            IdentStatus::NotComputed(reason) => format!("{NOT_COMPUTED}{reason}"),
        }
    }
}

const NOT_COMPUTED: &str = "not computed: ";

/// A stored identifiability entry whose verdict sentence is unknown and which has no range.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "identifiability verdict {0:?} is neither a profile verdict nor `not computed: <reason>`, and no range_nats is given"
)]
pub struct UnknownVerdict(pub String);

/// result.json's spelling of an [`Identifiability`].
#[derive(Serialize, Deserialize)]
struct IdentifiabilityRecord {
    range_nats: Option<f64>,
    verdict: String,
    identified: bool,
}

impl From<Identifiability> for IdentifiabilityRecord {
    fn from(e: Identifiability) -> Self {
        Self { range_nats: e.range_nats, verdict: e.verdict_text(), identified: e.identified() }
    }
}

impl TryFrom<IdentifiabilityRecord> for Identifiability {
    type Error = UnknownVerdict;

    /// Reads the sentence back; a range without a known sentence is judged by the range, and an
    /// entry with neither is an error naming the sentence.
    fn try_from(r: IdentifiabilityRecord) -> Result<Self, UnknownVerdict> {
        let known = [IdentVerdict::Identified, IdentVerdict::PriorSelected, IdentVerdict::OneValuePerBase]
            .into_iter()
            .find(|v| v.text() == r.verdict);
        let status = match (known, r.verdict.strip_prefix(NOT_COMPUTED), r.range_nats) {
            (Some(v), _, _) => IdentStatus::Profiled(v),
            (None, Some(reason), _) => IdentStatus::NotComputed(reason.to_string()),
            (None, None, Some(range)) => IdentStatus::Profiled(IdentVerdict::from_range(range)),
            (None, None, None) => {
                return Err(UnknownVerdict(r.verdict));
            }
        };
        Ok(Self { range_nats: r.range_nats, status })
    }
}

/// Profile every covariate of a design around the MAP `beta` (θ, c, κ; ĉ_j = beta[M + j]) and
/// summarise each as an [`Identifiability`] keyed by covariate name (`names`, length p).
pub fn identifiability(
    d: &Design,
    names: &[String],
    beta: &[f64],
) -> std::collections::BTreeMap<String, Identifiability> {
    names
        .iter()
        .enumerate()
        .map(|(j, name)| {
            let e = match profile(d, j, beta[d.m + j], Some(beta)) {
                Ok(p) => Identifiability { range_nats: Some(p.range_nats), status: IdentStatus::Profiled(p.verdict) },
                Err(e) => Identifiability { range_nats: None, status: IdentStatus::NotComputed(e.to_string()) },
            };
            (name.clone(), e)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::bt::Prior;

    /// Unpaired: one covariate value per base, 5 bases, both orders of every pair.
    fn unpaired() -> Design {
        let x = [1.2, -0.4, 0.3, -1.5, 0.4];
        let y = [
            [0.0, 1.0, 1.0, 0.0, 1.0],
            [0.0, 0.0, 1.0, 1.0, 0.0],
            [1.0, 0.0, 0.0, 1.0, 1.0],
            [1.0, 0.0, 0.0, 0.0, 1.0],
            [0.0, 1.0, 0.0, 1.0, 0.0],
        ];
        let mut d = Design::new(5, 1);
        for i in 0..5 {
            for j in 0..5 {
                if i != j {
                    d.push(i, j, &[x[i] - x[j]], y[i][j], 1.0);
                }
            }
        }
        d
    }

    #[test]
    fn grid_is_21_points_over_c_hat_plus_minus_one() {
        let g = grid(0.3);
        assert_eq!(g.len(), 21);
        assert!((g[0] + 0.7).abs() < 1e-15 && (g[20] - 1.3).abs() < 1e-15 && (g[10] - 0.3).abs() < 1e-15);
        assert!((g[11] - g[10] - 0.1).abs() < 1e-15);
    }

    #[test]
    fn unpaired_profile_is_flat_and_prior_selected() {
        let d = unpaired();
        let map = bt::fit(&d, &Prior::default().diagonal(5, 1), None, &FitOptions::default()).unwrap();
        let p = profile(&d, 0, map.beta[5], Some(&map.beta)).unwrap();
        assert!(p.range_nats < 1e-9, "range {}", p.range_nats);
        assert_eq!(p.verdict, IdentVerdict::PriorSelected);
        assert!(p.points.iter().all(|q| q.grad_inf < 1e-9));
        // Independent check of the invariance: the likelihood at the centre equals the
        // likelihood of the MAP moved along (θ + δx, c − δ) for δ = 0.7.
        let x = [1.2, -0.4, 0.3, -1.5, 0.4];
        let mut moved = map.beta.clone();
        for m in 0..5 {
            moved[m] += 0.7 * x[m];
        }
        moved[5] -= 0.7;
        assert!((bt::log_likelihood(&d, &moved) - bt::log_likelihood(&d, &map.beta)).abs() < 1e-12);
        // The flat value is the unrestricted maximum: a ridge-only fit with c free.
        let free = bt::fit(&d, &[PROFILE_RIDGE; 7], None, &FitOptions::default()).unwrap();
        let lmax = bt::log_likelihood(&d, &free.beta);
        assert!(p.points.iter().all(|q| (q.log_lik - lmax).abs() < 1e-7), "{lmax} vs {:?}", p.points[0]);
    }

    #[test]
    fn paired_profile_is_curved_with_its_maximum_near_the_mle() {
        // Two bases × two renderings (x = 0/1); renderings share θ, so the within-base query
        // (terse first vs elaborated) has η = c(0 − 1) + κ and informs c directly.
        let mut d = Design::new(3, 1);
        let x = [[0.0, 1.0], [0.0, 1.0], [0.0, 1.0]];
        let outcomes = [1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0, 0.0];
        let mut q = 0;
        for b in 0..3 {
            for (ra, rb) in [(0, 1), (1, 0)] {
                for _ in 0..2 {
                    d.push(b, b, &[x[b][ra] - x[b][rb]], outcomes[q], 1.0);
                    q += 1;
                }
            }
        }
        for (i, j, y) in [(0, 1, 1.0), (1, 0, 0.0), (1, 2, 1.0), (2, 1, 1.0), (0, 2, 1.0), (2, 0, 0.0)] {
            d.push(i, j, &[0.0], y, 1.0);
        }
        let free = bt::fit(&d, &[PROFILE_RIDGE; 5], None, &FitOptions::default()).unwrap();
        let p = profile(&d, 0, free.beta[3], Some(&free.beta)).unwrap();
        assert_eq!(p.verdict, IdentVerdict::Identified);
        assert!(p.range_nats > 0.1, "range {}", p.range_nats);
        // The centre is the (ridge-)MLE, so it is the maximum and the curve falls both ways.
        let mid = p.points[10].log_lik;
        assert!(p.points.iter().all(|q| q.log_lik <= mid + 1e-9));
        assert!(p.points[0].log_lik < p.points[5].log_lik && p.points[20].log_lik < p.points[15].log_lik);
        // Independent value at the centre: the unrestricted maximum.
        assert!((mid - bt::log_likelihood(&d, &free.beta)).abs() < 1e-8);
    }

    #[test]
    fn a_large_pool_profiles_its_compared_bases_only_with_the_same_range() {
        // 4,200 bases, the first 40 compared in a ring with a covariate that differs between
        // renderings of a pair (a curved profile); the other 4,160 bases are in no observation.
        let m = 4200;
        let mut d = Design::new(m, 1);
        for a in 0..40usize {
            let b = (a + 1) % 40;
            for (r, y) in [1.0, 0.0, 1.0, 1.0, 0.0].into_iter().enumerate() {
                let x = 0.3 * ((a * 7 + r * 3) % 5) as f64 - 0.6;
                d.push(a, b, &[x], y, 1.0);
            }
        }
        let map = bt::fit(&d, &Prior::default().diagonal(m, 1), None, &FitOptions::default()).unwrap();
        let (reduced, warm) = without_untouched(&d, Some(&map.beta)).expect("4,160 untouched bases");
        assert_eq!((reduced.m, warm.as_ref().map(Vec::len)), (40, Some(42)));
        let fast = profile(&d, 0, map.beta[m], Some(&map.beta)).unwrap();
        let full = profile_of(&d, 0, map.beta[m], Some(&map.beta)).unwrap();
        assert!(full.range_nats > 1e-3, "{}", full.range_nats);
        assert!((fast.range_nats - full.range_nats).abs() < 1e-8, "{} vs {}", fast.range_nats, full.range_nats);
        for (a, b) in fast.points.iter().zip(&full.points) {
            assert!((a.log_lik - b.log_lik).abs() < 1e-8 && a.c == b.c);
        }
    }

    #[test]
    fn separated_data_still_converges_to_tolerance() {
        // Base 0 wins every comparison: θ_0 drifts until the 1e-6 ridge stops it (≈ 12 logits).
        let mut d = Design::new(3, 1);
        let x = [0.5, -0.5, 0.0];
        for (i, j, y) in [(0, 1, 1.0), (1, 0, 0.0), (0, 2, 1.0), (2, 0, 0.0), (1, 2, 1.0), (2, 1, 1.0)] {
            d.push(i, j, &[x[i] - x[j]], y, 1.0);
        }
        let p = profile(&d, 0, 0.0, None).unwrap();
        assert!(p.points.iter().all(|q| q.grad_inf < 1e-9));
        assert_eq!(p.verdict, IdentVerdict::PriorSelected, "range {}", p.range_nats);
    }

    /// A sparse unpaired design in which every base won or lost all its comparisons (the
    /// longer answer always wins): each such θ is held by the 1e-6 ridge alone, and moving c
    /// moves that balance, so the computed profile is not flat to 1e-3 nats. The covariate still
    /// has one value per base, so c stays prior-selected (hunt 46: a 10,000-item run read
    /// "identified by the design" at 0.0019 nats).
    #[test]
    fn a_ridge_residue_above_the_threshold_is_not_read_as_identification() {
        let m = 200;
        // x in covariate units up to ±60 (the scale of a raw word count).
        let x: Vec<f64> = (0..m).map(|b| 60.0 * (((b * 37) % m) as f64 / m as f64 - 0.5)).collect();
        let mut d = Design::new(m, 1);
        for b in (0..m).step_by(2) {
            let (i, j) = (b, b + 1);
            let first_wins = |a: usize, o: usize| if x[a] > x[o] { 1.0 } else { 0.0 };
            d.push(i, j, &[x[i] - x[j]], first_wins(i, j), 1.0);
            d.push(j, i, &[x[j] - x[i]], first_wins(j, i), 1.0);
        }
        assert!(one_value_per_base(&d, 0));
        let p = profile(&d, 0, 0.0, None).unwrap();
        assert!(p.points.iter().all(|q| q.grad_inf < 1e-9));
        assert!(p.range_nats >= PRIOR_SELECTED_NATS, "the residue this test is about: {}", p.range_nats);
        assert_eq!(p.verdict, IdentVerdict::OneValuePerBase);
        let e = Identifiability { range_nats: Some(p.range_nats), status: IdentStatus::Profiled(p.verdict) };
        assert!(!e.identified());
        let v = serde_json::to_value(&e).unwrap();
        assert_eq!(v["identified"], false);
        assert_eq!(serde_json::from_value::<Identifiability>(v).unwrap(), e);
    }

    #[test]
    fn one_value_per_base_tells_unpaired_from_paired_designs() {
        assert!(one_value_per_base(&unpaired(), 0));
        // Values with rounding in their differences (0.1 + 0.2 ≠ 0.3) over a cycle still agree.
        let x = [0.1, 0.2, 0.3, 0.1 + 0.2];
        let mut d = Design::new(4, 2);
        for (i, j) in [(0, 1), (1, 2), (2, 3), (3, 0), (0, 2), (1, 3)] {
            d.push(i, j, &[x[i] - x[j], 1.0], 1.0, 1.0);
        }
        assert!(one_value_per_base(&d, 0));
        // Covariate 1 differs by 1 on every comparison: around the cycle 0→1→2→3→0 that sums
        // to 4, not 0, so no per-base value gives it.
        assert!(!one_value_per_base(&d, 1));
        // A comparison within a base (two renderings) with a difference in x.
        let mut d = Design::new(2, 1);
        d.push(0, 1, &[0.5], 1.0, 1.0);
        d.push(0, 0, &[-1.0], 0.0, 1.0);
        assert!(!one_value_per_base(&d, 0));
    }

    #[test]
    fn identifiability_keeps_result_json_spelling_and_reads_it_back() {
        let prior_selected = Identifiability::profiled(6.1e-6);
        let v = serde_json::to_value(&prior_selected).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"range_nats": 6.1e-6, "verdict": IdentVerdict::PriorSelected.text(), "identified": false})
        );
        assert_eq!(serde_json::from_value::<Identifiability>(v).unwrap(), prior_selected);

        let failed = Identifiability { range_nats: None, status: IdentStatus::NotComputed("no convergence".into()) };
        let v = serde_json::to_value(&failed).unwrap();
        assert_eq!(v["verdict"], "not computed: no convergence");
        assert_eq!(v["identified"], false);
        assert_eq!(serde_json::from_value::<Identifiability>(v).unwrap(), failed);

        // An unknown sentence with a range is judged by the range; without one it is an error.
        let other: Identifiability =
            serde_json::from_value(serde_json::json!({"range_nats": 13.1, "verdict": "x", "identified": true}))
                .unwrap();
        assert!(other.identified());
        let e = serde_json::from_value::<Identifiability>(
            serde_json::json!({"range_nats": null, "verdict": "x", "identified": false}),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("identifiability verdict \"x\""), "{e}");
    }
}

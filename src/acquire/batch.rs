//! The posterior covariance during a batch of picks (docs/model.md §3): the Fisher weight of a
//! query at the current MAP and the Sherman–Morrison steps that lower Σ by each pick's expected
//! information before its outcome is known. Shared by the top-k rule on both paths and the
//! baselines that use Σ.

use super::{Context, Unit};
use crate::model::Posterior;
use crate::model::bt::sigmoid;
use crate::model::linalg::{Matrix, sherman_morrison_update};

/// Fisher weight p̂_ab(1 − p̂_ab) of the ordered query (a, b) at the current MAP, with
/// p̂_ab = σ(g_a − g_b + κ̂) and `g` the apparent scores of [`Context::apparent`].
pub(crate) fn fisher_weight(g: &[f64], kappa: f64, a: usize, b: usize) -> f64 {
    let s = sigmoid(g[a] - g[b] + kappa);
    s * (1.0 - s)
}

/// Σ ← Σ − w Σd dᵀΣ / (1 + w dᵀΣd) for the ordered query (a, b): design row
/// d = (e_i − e_j, x_a − x_b, 1) with i = base(a), j = base(b), Fisher weight `w` (docs/model.md §3 batch
/// step; no refit). `sd` is scratch space of length n = M + p + 1.
pub(crate) fn sm_update_query(ctx: &Context<'_>, sigma: &mut Matrix, a: usize, b: usize, w: f64, sd: &mut [f64]) {
    let (m, p) = (ctx.m, ctx.p);
    let (i, j) = (ctx.item_base[a], ctx.item_base[b]);
    for (row, s) in sd.iter_mut().enumerate() {
        let mut v = sigma[(row, i)] - sigma[(row, j)] + sigma[(row, m + p)];
        for k in 0..p {
            v += sigma[(row, m + k)] * (ctx.x[a][k] - ctx.x[b][k]);
        }
        *s = v;
    }
    let mut dsd = sd[i] - sd[j] + sd[m + p];
    for k in 0..p {
        dsd += sd[m + k] * (ctx.x[a][k] - ctx.x[b][k]);
    }
    sherman_morrison_update(sigma, sd, dsd, w);
}

/// The posterior covariance during a batch: Σ_t = Σ − Σ_{s ≤ t} f_s u_s u_sᵀ, kept as Σ plus the
/// rank-one downdates of the queries picked so far (Sherman–Morrison, docs/model.md §3), so a pick costs
/// O(n·t) instead of an O(n²) update of a copy of Σ.
pub(crate) struct BatchCov<'a> {
    post: &'a Posterior,
    /// (f_s, u_s = Σ_{s−1} d_s) per picked query.
    pub(crate) downdates: Vec<(f64, Vec<f64>)>,
    /// The u_s with few nonzero rows (large pools early on: u_s vanishes at every base no
    /// verdict or pick has touched), stored by row: `by_row[r]` = (s, u_s[r]) (length n once
    /// used), so that forming Σ_t d reads memory in order.
    by_row: Vec<Vec<(u32, f64)>>,
    /// The other u_s (indices into `downdates`).
    dense: Vec<usize>,
}

impl<'a> BatchCov<'a> {
    pub(crate) fn new(post: &'a Posterior) -> Self {
        Self { post, downdates: Vec::new(), by_row: Vec::new(), dense: Vec::new() }
    }

    /// Add the query (a, b) with Fisher weight `w`; returns (f, u) of its downdate.
    pub(crate) fn add(&mut self, ctx: &Context<'_>, a: usize, b: usize, w: f64) -> &(f64, Vec<f64>) {
        let (m, p) = (ctx.m, ctx.p);
        let (i, j) = (ctx.item_base[a], ctx.item_base[b]);
        // d = (e_i − e_j, x_a − x_b, 1); Σd from the columns of the dense Σ, or one solve with
        // the sparse factor of H (large pools).
        let mut coef: Vec<(usize, f64)> = vec![(i, 1.0), (j, -1.0), (m + p, 1.0)];
        coef.extend((0..p).map(|k| (m + k, ctx.x[a][k] - ctx.x[b][k])));
        let mut u = self.post.cov_times(&coef);
        // u −= Σ_s f_s (u_sᵀd) u_s.
        let scale: Vec<f64> =
            self.downdates.iter().map(|(f, us)| f * coef.iter().map(|&(c, v)| v * us[c]).sum::<f64>()).collect();
        for (t, row) in u.iter_mut().zip(&self.by_row) {
            *t -= row.iter().map(|&(s, x)| scale[s as usize] * x).sum::<f64>();
        }
        for &s in &self.dense {
            let k = scale[s];
            if k != 0.0 {
                for (t, x) in u.iter_mut().zip(&self.downdates[s].1) {
                    *t -= k * x;
                }
            }
        }
        let dsd: f64 = coef.iter().map(|&(c, v)| v * u[c]).sum();
        let id = self.downdates.len();
        if u.iter().filter(|x| **x != 0.0).count() < u.len() / 4 {
            if self.by_row.is_empty() {
                self.by_row = vec![Vec::new(); u.len()];
            }
            for (row, &x) in self.by_row.iter_mut().zip(&u) {
                if x != 0.0 {
                    row.push((id as u32, x));
                }
            }
        } else {
            self.dense.push(id);
        }
        self.downdates.push((w / (1.0 + w * dsd), u));
        self.downdates.last().expect("just pushed")
    }
}

/// Fisher weights p̂_ab(1 − p̂_ab) of ordered queries at the current MAP with one exp per item
/// instead of one per candidate: p̂(1 − p̂) = A K B / (B + A K)² with A = e^{g_a}, B = e^{g_b},
/// K = e^{κ̂}, and the direct form of [`fisher_weight`] when a product leaves the f64 range.
pub(crate) struct FisherWeights {
    g: Vec<f64>,
    kappa: f64,
    eg: Vec<f64>,
    ek: f64,
}

impl FisherWeights {
    /// Weights for the apparent scores `g` (length N) and position effect κ̂ (logits).
    pub(crate) fn new(g: Vec<f64>, kappa: f64) -> Self {
        let eg = g.iter().map(|v| v.exp()).collect();
        Self { g, kappa, eg, ek: kappa.exp() }
    }

    /// The apparent scores g (length N).
    pub(crate) fn g(&self) -> &[f64] {
        &self.g
    }

    /// κ̂ (logits).
    pub(crate) fn kappa(&self) -> f64 {
        self.kappa
    }

    /// p̂(1 − p̂) of the ordered query (a, b).
    pub(crate) fn of(&self, a: usize, b: usize) -> f64 {
        let (ak, bb) = (self.eg[a] * self.ek, self.eg[b]);
        let w = ak * bb / ((bb + ak) * (bb + ak));
        if w.is_finite() && w > 0.0 { w } else { fisher_weight(&self.g, self.kappa, a, b) }
    }

    /// The sum over a unit's open orders.
    pub(crate) fn unit(&self, u: Unit) -> f64 {
        u.orders().map(|(a, b)| self.of(a, b)).sum()
    }
}

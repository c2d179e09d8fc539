//! A judge panel fitted to recorded verdicts of several judges (`topk-judge fit --panel`,
//! docs/model.md §8): shared θ, per-judge position effect κ_j, bias coefficients c_j and scale
//! s_j, and per judge what a user asks of it: how many verdicts, how often its verdict follows
//! the position (flip rate), how often it agrees with the trusted judge, and whether its c_j is
//! identified (profile likelihood, nats). Pure: data in, values out.

use crate::analysis::certify::{Lean, NO_SIGNAL_MIN_VERDICTS, NoSignal, no_signal, signal_check};
use crate::domain::pool::{Covariates, Pool};
use crate::domain::rng::ChaCha8Rng;
use crate::domain::verdict::ItemVerdict;
use crate::model::panel::{self, Estimate, JudgePrior, Normal, PanelDesign, PanelFit, PanelObs, PanelRole};
use crate::model::profile::PRIOR_SELECTED_NATS;
use crate::model::{FitError, Prior};
use serde::Serialize;
use std::collections::BTreeMap;

/// One judge's verdicts, as item indices of the pool.
#[derive(Debug, Clone)]
pub struct JudgeVerdicts {
    /// The judge's name (the records' `"judge"`).
    pub name: String,
    /// Its verdicts are taken as free of item-level bias: no c_j (the paper's trusted anchors).
    pub trusted: bool,
    /// Its valid verdicts.
    pub verdicts: Vec<ItemVerdict>,
    /// Its carried prior (docs/model.md §8, "Carried judge priors"; default: none).
    pub prior: JudgePrior,
}

/// The key of the "same family" column in a carried prior (`judges[i].prior.same_family`).
pub const SAME_FAMILY_KEY: &str = "same_family";

/// The note that judge `judge` starts from a carried prior, e.g. `judge "cheap": carried prior
/// κ ~ N(1.2, 0.05²), words ~ N(0.9, 0.01²) (logits): its estimates lean on verdicts of other
/// pools`; `source` says where it was given (`judges[i].prior`).
pub fn carried_note(judge: &str, named: &BTreeMap<String, Normal>, source: &str) -> String {
    let terms: Vec<String> = named
        .iter()
        .map(|(k, n)| format!("{} ~ N({}, {}²)", if k == "kappa" { "κ" } else { k }, n.mean, n.sd))
        .collect();
    format!(
        "judge {judge:?}: carried prior {} (logits; {source}): its estimates lean on verdicts of other pools",
        terms.join(", ")
    )
}

/// A judge's carried prior as written (`kappa`, or a covariate's name, or `same_family`: a
/// normal prior in logits, or logits per covariate unit) against the fit's covariates `names`
/// and, with `family_column`, the "same family" column after them. Returns the prior and the
/// keys that name no parameter of this fit.
pub fn carried_prior(
    named: &BTreeMap<String, Normal>,
    names: &[String],
    family_column: bool,
) -> (JudgePrior, Vec<String>) {
    let mut prior = JudgePrior::default();
    let mut unused = Vec::new();
    let p = names.len() + usize::from(family_column);
    for (key, n) in named {
        if key == "kappa" {
            prior.kappa = Some(*n);
        } else if let Some(t) =
            names.iter().position(|x| x == key).or_else(|| (family_column && key == SAME_FAMILY_KEY).then(|| p - 1))
        {
            prior.c.resize(p, None);
            prior.c[t] = Some(*n);
        } else {
            unused.push(key.clone());
        }
    }
    (prior, unused)
}

/// One judge of a fitted panel.
#[derive(Debug, Clone, Serialize)]
pub struct JudgeSummary {
    /// Name.
    pub name: String,
    /// Taken as free of item-level bias (no c_j).
    pub trusted: bool,
    /// Its model family (`--family`), for the self-preference covariate.
    pub family: Option<String>,
    /// The scale reference (s = 1; θ is in its logits).
    pub reference: bool,
    /// Valid verdicts fitted.
    pub verdicts: usize,
    /// κ̂_j and its Laplace sd (logits; > 0 favours the first-shown answer).
    pub kappa: Estimate,
    /// ĉ_j per covariate with sd (logits per covariate unit); empty for a trusted judge.
    pub c: Vec<Estimate>,
    /// Profile-likelihood range of each c_j over ĉ ± 1 (nats); < 1e-3: prior-selected; `None`
    /// when the panel is too large to profile ([`MAX_PROFILE_WORK`]).
    pub c_profile_nats: Vec<Option<f64>>,
    /// Per covariate: whether it differs between the two items of any verdict of this judge
    /// (false, e.g. "same family" of a judge without a family: ĉ is its prior, not an estimate).
    pub c_has_data: Vec<bool>,
    /// ŝ_j with its sd (delta method); 1 ± 0 for the reference.
    pub scale: Estimate,
    /// Ordered pairs asked in both orders (unordered pairs), where the flip rate is counted.
    pub both_orders: usize,
    /// Share of those where the same slot won both times (the verdict followed the position).
    pub flip_rate: Option<f64>,
    /// Unordered pairs this judge and the trusted judge both decided (order-averaged, not ½).
    pub shared_with_trusted: usize,
    /// Share of those where both prefer the same item.
    pub agreement_with_trusted: Option<f64>,
    /// Unordered pairs this judge and the trusted judge both asked, decided or not.
    pub asked_with_trusted: usize,
    /// One slot (or ties) won nearly every verdict of this judge: it carries no signal about
    /// the answers (the check of `run` and `fit`, docs/model.md §6). Whether the panel as a
    /// whole tells the answers apart is [`PanelReport::not_certified`]'s test.
    pub no_signal: Option<NoSignal>,
    /// The carried prior this judge's κ_j and c_j started from (docs/model.md §8, "Carried judge
    /// priors"; `c` aligned with [`JudgeSummary::c`]); absent without one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub carried_prior: Option<JudgePrior>,
}

/// Model families for the self-preference covariate (docs/model.md §8): the family of each
/// judge and of each base (a system). The covariate "same family" of judge j is 1 for an answer
/// of a system of j's family, else 0; a judge or base without a family has 0 everywhere.
#[derive(Debug, Clone, PartialEq)]
pub struct Families {
    /// Per judge, in the order of the judges.
    pub judge: Vec<Option<String>>,
    /// Per base.
    pub base: Vec<Option<String>>,
}

impl Families {
    /// The families of `judge` (per judge) and of `bases` (`given` per base, the rest matched by
    /// name: a base whose id contains a judge's family, ignoring case, is of that family; the
    /// longest family wins).
    pub fn resolve(bases: &[String], judge: Vec<Option<String>>, given: Vec<Option<String>>) -> Self {
        let known = known_families(&judge);
        let base = given
            .into_iter()
            .zip(bases)
            .map(|(g, id)| {
                g.or_else(|| {
                    let id = id.to_lowercase();
                    known.iter().find(|f| id.contains(&f.to_lowercase())).map(|f| (*f).clone())
                })
            })
            .collect();
        Self { judge, base }
    }

    /// Each judges' family (longest name first, once) with its judges and its bases: a family
    /// with no base, or with every base, leaves its judges' "same family" coefficient to the
    /// prior (no verdict compares an answer of the family with one outside it).
    pub fn reach(&self) -> Vec<FamilyReach> {
        known_families(&self.judge)
            .into_iter()
            .map(|fam| FamilyReach {
                family: fam.clone(),
                judges: (0..self.judge.len()).filter(|&j| self.judge[j].as_ref() == Some(fam)).collect(),
                bases: (0..self.base.len()).filter(|&b| self.base[b].as_ref() == Some(fam)).collect(),
            })
            .collect()
    }

    /// One line per judges' family that splits the bases ("family "acme": judge cheap; systems
    /// M11, M17"), with the judges' and bases' names.
    pub fn lines(&self, judges: &[&str], bases: &[String]) -> Vec<String> {
        self.reach()
            .into_iter()
            .filter(|r| !r.bases.is_empty() && r.bases.len() < bases.len())
            .map(|r| {
                let of: Vec<&str> = r.judges.iter().map(|&j| judges[j]).collect();
                let members: Vec<&str> = r.bases.iter().map(|&b| bases[b].as_str()).collect();
                let judges = if of.len() == 1 { "judge" } else { "judges" };
                format!("family {:?}: {judges} {}; systems {}", r.family, of.join(", "), members.join(", "))
            })
            .collect()
    }

    /// The "same family" covariate of judge j for base b (1 or 0).
    pub fn same(&self, j: usize, b: usize) -> f64 {
        match (&self.judge[j], &self.base[b]) {
            (Some(f), Some(g)) if f == g => 1.0,
            _ => 0.0,
        }
    }
}

/// The judges' families, each once, longest name first (then by name): the order a base's id is
/// matched in, so "gpt-4" wins over "gpt".
fn known_families(judge: &[Option<String>]) -> Vec<&String> {
    let mut known: Vec<&String> = judge.iter().flatten().collect();
    known.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
    known.dedup();
    known
}

/// One judges' family of [`Families::reach`]: its judges and its bases (indices).
#[derive(Debug, Clone, PartialEq)]
pub struct FamilyReach {
    /// The family's name.
    pub family: String,
    /// The judges of the family.
    pub judges: Vec<usize>,
    /// The bases (systems) of the family.
    pub bases: Vec<usize>,
}

/// The most profiling work done (coefficients profiled × parameters³): each point of a profile
/// is a dense refit, so a panel of hundreds of judges reports ĉ ± sd without profiles rather
/// than fitting for minutes.
pub const MAX_PROFILE_WORK: f64 = 5e8;

/// The name of the self-preference covariate.
pub const SAME_FAMILY: &str = "same family";

/// A fitted panel: the judges and θ̂ with top-k membership per base.
#[derive(Debug, Clone, Serialize)]
pub struct PanelSummary {
    /// Covariate names, the columns of every c_j.
    pub covariates: Vec<String>,
    /// The judges, in the order given.
    pub judges: Vec<JudgeSummary>,
    /// θ̂ per base (logits of the reference judge).
    pub theta: Vec<f64>,
    /// Laplace sd of θ per base.
    pub sd: Vec<f64>,
    /// Top-k membership π per base (Monte Carlo over the Laplace posterior).
    pub membership: Vec<f64>,
    /// Whether a trusted judge is in the panel (then every untrusted c_j is identified relative
    /// to it, else only differences between judges are).
    pub has_trusted: bool,
    /// Newton iterations of the MAP.
    pub iterations: usize,
    /// Whether the profile range of each c_j was computed (false past [`MAX_PROFILE_WORK`]).
    pub profiled: bool,
}

/// The judge with the most verdicts (the first of equals) is the scale reference (docs/model.md
/// §8: its data pin θ's scale best).
pub fn reference_judge(judges: &[JudgeVerdicts]) -> usize {
    let most = judges.iter().map(|j| j.verdicts.len()).max().unwrap_or(0);
    judges.iter().position(|j| j.verdicts.len() == most).unwrap_or(0)
}

/// The panel's design: every verdict of judge j as an observation of judge j on the bases of
/// its items, x_a − x_b from `cov`, then (with `families`) the difference of the "same family"
/// covariate as judge j sees it.
pub fn design(pool: &Pool, cov: &Covariates, judges: &[JudgeVerdicts], families: Option<&Families>) -> PanelDesign {
    let reference = reference_judge(judges);
    let roles: Vec<PanelRole> =
        judges.iter().enumerate().map(|(j, jv)| PanelRole { trusted: jv.trusted, reference: j == reference }).collect();
    let p = cov.p();
    let mut d = PanelDesign::new(pool.n_bases(), p + usize::from(families.is_some()), &roles);
    let mut dx = vec![0.0; p + usize::from(families.is_some())];
    for (j, jv) in judges.iter().enumerate() {
        for v in &jv.verdicts {
            for (t, slot) in dx.iter_mut().enumerate().take(p) {
                *slot = cov.x[v.a][t] - cov.x[v.b][t];
            }
            if let Some(f) = families {
                dx[p] = f.same(j, pool.item_base[v.a]) - f.same(j, pool.item_base[v.b]);
            }
            d.push(PanelObs { i: pool.item_base[v.a], j: pool.item_base[v.b], judge: j, y: v.y, w: v.w }, &dx);
        }
        if jv.prior != JudgePrior::default() {
            d.carry(j, jv.prior.clone());
        }
    }
    d
}

/// Fit the panel (MAP + Laplace), its top-k membership (`(k, draws)`: `draws` draws) and each judge's
/// summary, with the profile range of every untrusted c_j; with `families`, a last covariate
/// "same family" (each judge's self-preference, logits).
///
/// # Errors
/// [`FitError`]: too many parameters for the dense fit, no convergence, or a Hessian that is not
/// positive definite.
pub fn fit_panel(
    pool: &Pool,
    cov: &Covariates,
    judges: &[JudgeVerdicts],
    families: Option<&Families>,
    prior: &Prior,
    (k, draws): (usize, usize),
    rng: &mut ChaCha8Rng,
) -> Result<PanelSummary, FitError> {
    let d = design(pool, cov, judges, families);
    let p = d.layout.p;
    let f: PanelFit = panel::fit(&d, prior, None)?;
    let membership = f.membership(k, draws, rng);
    let m = pool.n_bases();
    let sd = (0..m).map(|b| f.cov[(b, b)].max(0.0).sqrt()).collect();
    let trusted = judges.iter().position(|j| j.trusted);
    let decided: Vec<BTreeMap<(usize, usize), f64>> = judges.iter().map(|j| order_averaged(&j.verdicts)).collect();
    let profiled_c = f.layout.c.iter().flatten().count() * p;
    let profiled = profiled_c as f64 * (f.layout.n as f64).powi(3) <= MAX_PROFILE_WORK;
    let mut out = Vec::with_capacity(judges.len());
    for (j, jv) in judges.iter().enumerate() {
        let c_profile_nats = match f.layout.c[j] {
            None => Vec::new(),
            Some(_) if !profiled => vec![None; p],
            Some(c0) => {
                (c0..c0 + p).map(|r| panel::profile_range(&d, &f, r, prior).map(Some)).collect::<Result<_, _>>()?
            }
        };
        let c_has_data = match f.layout.c[j] {
            None => Vec::new(),
            Some(_) => {
                (0..p).map(|t| d.obs.iter().enumerate().any(|(q, o)| o.judge == j && d.dx_of(q)[t] != 0.0)).collect()
            }
        };
        let (both_orders, flip_rate) = flips(&jv.verdicts);
        let (shared_with_trusted, agreement_with_trusted) = match trusted {
            Some(t) if t != j => agreement(&decided[j], &decided[t]),
            _ => (0, None),
        };
        let asked_with_trusted = match trusted {
            Some(t) if t != j => decided[j].keys().filter(|key| decided[t].contains_key(key)).count(),
            _ => 0,
        };
        out.push(JudgeSummary {
            name: jv.name.clone(),
            trusted: jv.trusted,
            family: families.and_then(|f| f.judge[j].clone()),
            reference: f.layout.reference == j,
            verdicts: jv.verdicts.len(),
            kappa: f.kappa(j),
            c: f.c(j),
            c_profile_nats,
            c_has_data,
            scale: f.scale(j),
            both_orders,
            flip_rate,
            shared_with_trusted,
            agreement_with_trusted,
            asked_with_trusted,
            no_signal: no_signal(&jv.verdicts),
            carried_prior: (jv.prior != JudgePrior::default()).then(|| jv.prior.clone()),
        });
    }
    let mut covariates = cov.names.clone();
    if families.is_some() {
        covariates.push(SAME_FAMILY.into());
    }
    Ok(PanelSummary {
        covariates,
        judges: out,
        theta: f.theta().to_vec(),
        sd,
        membership,
        has_trusted: trusted.is_some(),
        iterations: f.iterations,
        profiled,
    })
}

/// A fitted panel with what its reader needs said ([`report`]).
#[derive(Debug, Clone)]
pub struct PanelReport {
    /// The panel.
    pub panel: PanelSummary,
    /// Notes on the judges ([`judge_notes`]).
    pub notes: Vec<String>,
    /// Why nothing is certified (too few Monte-Carlo draws, or bases without a verdict), if so.
    pub not_certified: Option<String>,
    /// Why the trusted judge cannot anchor the other judges' c ([`weak_anchor`]), if so.
    pub weak_anchor: Option<String>,
}

/// [`fit_panel`] with its notes, the bases never compared and the trusted judge's anchoring:
/// what `fit --panel` and a panel run report (`(k, draws, ε)`: top-k, Monte-Carlo draws and the
/// certification threshold).
///
/// # Errors
/// As [`fit_panel`].
pub fn report(
    pool: &Pool,
    cov: &Covariates,
    judges: &[JudgeVerdicts],
    families: Option<&Families>,
    prior: &Prior,
    (k, draws, epsilon): (usize, usize, f64),
    rng: &mut ChaCha8Rng,
) -> Result<PanelReport, FitError> {
    let panel = fit_panel(pool, cov, judges, families, prior, (k, draws), rng)?;
    let mut notes = judge_notes(&panel);
    notes.extend(prior_split_note(pool, cov, &panel, k));
    notes.extend(prior_conflict_notes(pool, cov, judges, families, prior, &panel.covariates));
    let graph = crate::analysis::ranking::comparison_graph(
        &pool.bases,
        judges.iter().flat_map(|g| &g.verdicts).map(|v| (pool.item_base[v.a], pool.item_base[v.b])),
    );
    let not_certified = crate::analysis::certify::too_few_draws(draws, epsilon)
        .or_else(|| crate::analysis::certify::graph_withholds(&graph, pool.n_bases(), pool.base_noun()))
        .or_else(|| panel_without_signal(pool, judges));
    let weak_anchor = panel.judges.iter().find(|j| j.trusted).and_then(weak_anchor);
    Ok(PanelReport { panel, notes, not_certified, weak_anchor })
}

/// How far (in sd of the difference) a carried prior's mean may sit from what this pool's
/// verdicts alone estimate before the two are said to disagree: |z| > 3 happens by chance about
/// once in 370 terms when the prior holds.
pub const PRIOR_CONFLICT_Z: f64 = 3.0;

/// Where a judge's carried prior and this pool's verdicts disagree (docs/model.md §8, "Carried
/// judge priors"): the panel fitted again without the carried priors (the default priors only)
/// gives each carried term a data estimate β̂ ± sd; the prior N(μ, σ²) conflicts with it when
/// |β̂ − μ| / √(sd² + σ²) > [`PRIOR_CONFLICT_Z`]. A c the verdicts alone do not inform (its
/// profile likelihood in the plain fit < 1e-3 nats: the plain estimate is the default priors')
/// is not checked. One note per conflicting term, e.g. `judge "cheap":
/// this pool's verdicts alone put words at 0.52 ± 0.21 logits, 11.3 sd from its carried prior
/// N(3, 0.05²)…`. Empty without carried priors, or when the plain fit fails.
pub fn prior_conflict_notes(
    pool: &Pool,
    cov: &Covariates,
    judges: &[JudgeVerdicts],
    families: Option<&Families>,
    prior: &Prior,
    covariates: &[String],
) -> Vec<String> {
    if judges.iter().all(|j| j.prior == JudgePrior::default()) {
        return Vec::new();
    }
    let plain: Vec<JudgeVerdicts> =
        judges.iter().map(|j| JudgeVerdicts { prior: JudgePrior::default(), ..j.clone() }).collect();
    let d = design(pool, cov, &plain, families);
    let Ok(f) = panel::fit(&d, prior, None) else { return Vec::new() };
    // A c the verdicts alone leave prior-selected (flat profile, e.g. without a trusted judge)
    // has its plain estimate from the default priors, not from data: nothing to conflict with.
    let informed = |r: usize| panel::profile_range(&d, &f, r, prior).is_ok_and(|nats| nats >= PRIOR_SELECTED_NATS);
    let mut notes = Vec::new();
    for (j, jv) in judges.iter().enumerate() {
        let c = f.c(j);
        let terms = jv.prior.kappa.map(|n| ("κ".to_string(), f.kappa(j), n)).into_iter().chain(
            jv.prior.c.iter().enumerate().filter_map(|(t, n)| {
                let n = (*n)?;
                let r = f.layout.c[j]? + t;
                informed(r).then(|| Some((covariates.get(t)?.clone(), *c.get(t)?, n))).flatten()
            }),
        );
        for (what, est, n) in terms {
            let z = (est.value - n.mean) / (est.sd.powi(2) + n.sd.powi(2)).sqrt();
            if z.abs() > PRIOR_CONFLICT_Z {
                notes.push(format!(
                    "judge {:?}: this pool's verdicts alone put {what} at {:.3} ± {:.3} logits, {:.1} sd from its carried prior N({}, {}²): the prior may not hold for this pool (another judge version, prompt or kind of answer?) and the estimate leans on it; widen or drop that prior to let these verdicts speak",
                    jv.name,
                    est.value,
                    est.sd,
                    z.abs(),
                    n.mean,
                    n.sd
                ));
            }
        }
    }
    notes
}

/// When no untrusted judge's c is identified on any of the pool's covariates (no trusted judge,
/// or one without the verdicts to anchor them; every profile range < 1e-3 nats), θ̂'s split of
/// the covariates' effect between quality and bias is the prior's (docs/model.md §8): said, with
/// the top-k as the untrusted judge with the most verdicts sees the bases beside it, by its
/// apparent quality φ̂_j = θ̂ + ĉ_jᵀx̄ / ŝ_j (x̄: each base's mean covariates). `None` without
/// covariates, without an untrusted judge with verdicts, or when a profile was not computed.
pub fn prior_split_note(pool: &Pool, cov: &Covariates, p: &PanelSummary, k: usize) -> Option<String> {
    let pc = cov.p();
    let judge = p.judges.iter().filter(|j| !j.trusted && j.verdicts > 0).max_by_key(|j| j.verdicts)?;
    if pc == 0 || k == 0 || k >= p.theta.len() {
        return None;
    }
    for j in p.judges.iter().filter(|j| !j.trusted && j.verdicts > 0) {
        for t in 0..pc {
            match j.c_profile_nats.get(t).copied().flatten() {
                Some(r) if r < PRIOR_SELECTED_NATS => {}
                _ => return None,
            }
        }
    }
    let xbar = crate::model::summary::base_means(pool, cov);
    let s = judge.scale.value.max(f64::MIN_POSITIVE);
    let phi: Vec<f64> = p
        .theta
        .iter()
        .zip(&xbar)
        .map(|(th, x)| th + (0..pc).map(|t| judge.c.get(t).map_or(0.0, |c| c.value) * x[t]).sum::<f64>() / s)
        .collect();
    let top = |v: &[f64]| {
        crate::model::membership::point_topk(v, k)
            .into_iter()
            .map(|b| pool.bases[b].clone())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let names = p.covariates[..pc].join(", ");
    Some(format!(
        "no judge's ĉ is identified (every profile < 1e-3 nats): θ̂ splits the effect of {names} between quality and bias by the prior alone, so the top-{k} by θ̂ ({}) assumes quality uncorrelated with {names}; as judge {:?} sees them (φ̂ = θ̂ + ĉᵀx / ŝ), the top-{k} is {}. A trusted judge's verdicts identify the split (docs/model.md §8)",
        top(&p.theta),
        judge.name,
        top(&phi)
    ))
}

/// What a judge without signal did, in words: "picked the first-shown answer in 97 % of its 40
/// verdicts", or "spread its wins and agreed across a pair's two orders as a judge answering at
/// random would (equal-quality test over its 238 verdicts: p = 0.830)".
pub fn no_signal_phrase(ns: &NoSignal) -> String {
    match (ns.lean, ns.equal_quality_p) {
        (Lean::Indistinct, Some(p)) => format!(
            "spread its wins and agreed across a pair's two orders as a judge answering at random would (equal-quality test over its {} verdicts: p = {p:.3})",
            ns.verdicts
        ),
        _ => format!("{} in {:.0} % of its {} verdicts", ns.what(), 100.0 * ns.share(), ns.verdicts),
    }
}

/// Why nothing is certified when the panel's verdicts do not tell the answers apart: all of
/// them together indistinguishable from judges answering at random ([`signal_check`] over every
/// judge's verdicts, docs/model.md §6), as a single judge's fit says of its own; `None` when
/// they show a signal. One test over all verdicts keeps its 5 % level however many judges the
/// panel has (a judge passing its own test by chance would otherwise let noise through).
fn panel_without_signal(pool: &Pool, judges: &[JudgeVerdicts]) -> Option<String> {
    let all: Vec<ItemVerdict> = judges.iter().flat_map(|g| g.verdicts.iter().copied()).collect();
    let pooled = signal_check(&all, &pool.item_base, pool.n_bases())?;
    Some(format!(
        "the panel's {} verdicts do not tell the answers apart: they {}; more comparisons may show a difference, or use a stronger judge",
        all.len(),
        match (pooled.lean, pooled.equal_quality_p) {
            (Lean::Indistinct, Some(p)) => format!(
                "spread their wins and agree across a pair's two orders as judges answering at random would (equal-quality test: p = {p:.3})"
            ),
            _ => format!("{} in {:.0} % of them", pooled.what(), 100.0 * pooled.share()),
        }
    ))
}

/// Why a trusted judge cannot anchor the other judges' c (no signal, a scale near 0, or fewer
/// than 10 verdicts), if so.
pub fn weak_anchor(j: &JudgeSummary) -> Option<String> {
    if let Some(ns) = &j.no_signal {
        return Some(format!("it {} (no signal)", no_signal_phrase(ns)));
    }
    if !j.reference && j.scale.value + 2.0 * j.scale.sd < 0.25 {
        return Some(format!(
            "its ŝ = {:.3} ± {:.3} is near 0: its verdicts hardly follow quality as the other judges see it (random, or reversed)",
            j.scale.value, j.scale.sd
        ));
    }
    (j.verdicts < NO_SIGNAL_MIN_VERDICTS).then(|| {
        format!(
            "it has {} valid verdict{}, fewer than {NO_SIGNAL_MIN_VERDICTS}",
            j.verdicts,
            if j.verdicts == 1 { "" } else { "s" }
        )
    })
}

/// Decided pairs shared with the trusted judge from which a judge's disagreement is reported.
pub const DISAGREEMENT_MIN_PAIRS: usize = 10;

/// What a user should know about single judges of a fitted panel, in words: a judge without
/// signal (one slot or ties winning nearly every verdict), one that disagrees with the trusted
/// judge on more decided pairs than chance explains (at least [`DISAGREEMENT_MIN_PAIRS`]; more
/// than n/2 + √n, 2 sd of Binomial(n, ½)), one with fewer than 10 verdicts, one whose scale ŝ is
/// near 0 (its verdicts hardly follow quality as the panel sees it: random, or reversed, since
/// s > 0 cannot turn a reversed judge round), and a panel too large to profile.
pub fn judge_notes(p: &PanelSummary) -> Vec<String> {
    let mut notes = Vec::new();
    // A trusted judge that cannot anchor the others is not compared with (its disagreement
    // would blame the honest judges).
    let trusted = p.judges.iter().find(|j| j.trusted).filter(|j| weak_anchor(j).is_none()).map(|j| j.name.as_str());
    for j in &p.judges {
        if j.no_signal.is_none() && j.verdicts < NO_SIGNAL_MIN_VERDICTS {
            notes.push(format!(
                "judge {:?} has {} valid verdict{}: its κ, {}s rest mostly on their priors",
                j.name,
                j.verdicts,
                if j.verdicts == 1 { "" } else { "s" },
                if j.trusted || j.c.is_empty() { "" } else { "c and " }
            ));
        }
        if let Some(ns) = &j.no_signal {
            // Whether any other judge has a verdict θ̂ could rest on.
            let others = p
                .judges
                .iter()
                .filter(|o| o.name != j.name && o.no_signal.is_none())
                .map(|o| o.verdicts)
                .sum::<usize>();
            notes.push(format!(
                "judge {:?} {}: they carry no signal about the answers; {} (leave it out, or fix its prompt)",
                j.name,
                no_signal_phrase(ns),
                if others > 0 {
                    "the panel's θ̂ rests on the other judges"
                } else {
                    "no other judge has a verdict that does, so θ̂ is close to the prior's and no ranking should be read from it"
                }
            ));
        }
        // Disagreement beyond chance: more than half the pairs by over 2 sd of Binomial(n, ½).
        let n = j.shared_with_trusted as f64;
        if let (Some(t), Some(a)) = (trusted, j.agreement_with_trusted)
            && j.shared_with_trusted >= DISAGREEMENT_MIN_PAIRS
            && (1.0 - a) * n > n / 2.0 + n.sqrt()
        {
            notes.push(format!(
                "judge {:?} prefers a different answer from {t:?} on {} of the {} pairs both decided ({:.0} %): reversed labels, or a prompt that asks the opposite? The model's scale s > 0 cannot turn a reversed judge round, so its disagreement ends up in its c and κ",
                j.name,
                j.shared_with_trusted - (a * j.shared_with_trusted as f64).round() as usize,
                j.shared_with_trusted,
                100.0 * (1.0 - a)
            ));
        }
        if !j.reference && j.no_signal.is_none() && j.scale.value + 2.0 * j.scale.sd < 0.25 {
            notes.push(format!(
                "judge {:?}: ŝ = {:.3} ± {:.3}, near 0: its verdicts hardly follow quality as the other judges see it (random, or reversed), so they move θ̂ little",
                j.name, j.scale.value, j.scale.sd
            ));
        }
    }
    if !p.profiled {
        let n: usize = p.judges.iter().map(|j| j.c_profile_nats.len()).sum();
        notes.push(format!(
            "the profile likelihood of the {n} bias coefficients is not computed for a panel this large (each point is a dense refit): ĉ ± sd only, and which c are identified is not checked"
        ));
    }
    notes
}

/// Whether a profile range (nats) shows the coefficient informed by the comparisons (≥ 1e-3
/// nats, docs/model.md §5).
pub fn informed(range_nats: f64) -> bool {
    range_nats >= PRIOR_SELECTED_NATS
}

/// Mean outcome per ordered item pair (a, b).
fn ordered_means(vs: &[ItemVerdict]) -> BTreeMap<(usize, usize), f64> {
    let mut acc: BTreeMap<(usize, usize), (f64, f64)> = BTreeMap::new();
    for v in vs {
        let e = acc.entry((v.a, v.b)).or_default();
        e.0 += v.y;
        e.1 += 1.0;
    }
    acc.into_iter().map(|(key, (s, n))| (key, s / n)).collect()
}

/// (unordered pairs asked in both orders with a decided verdict each way, share of them where
/// the same slot won both times). A verdict of ½ (a tie) decides nothing.
fn flips(vs: &[ItemVerdict]) -> (usize, Option<f64>) {
    let means = ordered_means(vs);
    let (mut both, mut flipped) = (0usize, 0usize);
    for (&(a, b), &y) in &means {
        if a < b
            && let Some(&y2) = means.get(&(b, a))
            && y != 0.5
            && y2 != 0.5
        {
            both += 1;
            if (y > 0.5) == (y2 > 0.5) {
                flipped += 1;
            }
        }
    }
    (both, (both > 0).then(|| flipped as f64 / both as f64))
}

/// Order-averaged P(lower index beats higher) per unordered item pair: the mean over the pair's
/// verdicts of P(a wins) with a the lower index (1 − y when it was shown second).
fn order_averaged(vs: &[ItemVerdict]) -> BTreeMap<(usize, usize), f64> {
    let mut acc: BTreeMap<(usize, usize), (f64, f64)> = BTreeMap::new();
    for v in vs {
        let (key, p) = if v.a < v.b { ((v.a, v.b), v.y) } else { ((v.b, v.a), 1.0 - v.y) };
        let e = acc.entry(key).or_default();
        e.0 += p;
        e.1 += 1.0;
    }
    acc.into_iter().map(|(key, (s, n))| (key, s / n)).collect()
}

/// (unordered pairs both decided, share where both prefer the same item).
fn agreement(mine: &BTreeMap<(usize, usize), f64>, trusted: &BTreeMap<(usize, usize), f64>) -> (usize, Option<f64>) {
    let (mut shared, mut agree) = (0usize, 0usize);
    for (key, &p) in mine {
        if let Some(&q) = trusted.get(key)
            && p != 0.5
            && q != 0.5
        {
            shared += 1;
            if (p > 0.5) == (q > 0.5) {
                agree += 1;
            }
        }
    }
    (shared, (shared > 0).then(|| agree as f64 / shared as f64))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(a: usize, b: usize, y: f64) -> ItemVerdict {
        ItemVerdict { a, b, y, w: 1.0 }
    }

    #[test]
    fn flip_rate_counts_pairs_where_the_same_slot_won_both_orders() {
        // {0,1}: first wins both times (a flip); {0,2}: 0 wins both ways (consistent);
        // {1,2}: one order only; {2,3}: a tie one way decides nothing.
        let vs = [v(0, 1, 1.0), v(1, 0, 1.0), v(0, 2, 1.0), v(2, 0, 0.0), v(1, 2, 1.0), v(2, 3, 0.5), v(3, 2, 1.0)];
        assert_eq!(flips(&vs), (2, Some(0.5)));
        assert_eq!(flips(&vs[4..5]), (0, None));
    }

    #[test]
    fn agreement_averages_both_orders_before_comparing() {
        // Judge: {0,1} 0 better (1 and 1 − 0 = 1), {0,2} split ½ (undecided), {1,2} 2 better.
        let judge = order_averaged(&[v(0, 1, 1.0), v(1, 0, 0.0), v(0, 2, 1.0), v(2, 0, 1.0), v(2, 1, 1.0)]);
        // Trusted: {0,1} 0 better, {1,2} 1 better, {0,2} 0 better.
        let trusted = order_averaged(&[v(1, 0, 0.0), v(1, 2, 0.8), v(0, 2, 1.0)]);
        assert_eq!(judge[&(0, 2)], 0.5);
        assert!((trusted[&(1, 2)] - 0.8).abs() < 1e-12);
        // Shared and decided: {0,1} (agree) and {1,2} (disagree).
        assert_eq!(agreement(&judge, &trusted), (2, Some(0.5)));
    }

    #[test]
    fn a_carried_prior_on_a_covariate_the_fit_lacks_is_named_not_a_panic() {
        let named: BTreeMap<String, Normal> = [
            ("kappa".to_string(), Normal { mean: 1.0, sd: 0.5 }),
            ("words".to_string(), Normal { mean: 0.45, sd: 0.2 }),
        ]
        .into();
        // No covariates (model: naive) and no family column: `words` names nothing.
        let (prior, unused) = carried_prior(&named, &[], false);
        assert_eq!(prior.kappa, Some(Normal { mean: 1.0, sd: 0.5 }));
        assert!(prior.c.is_empty());
        assert_eq!(unused, ["words"]);
        let (prior, unused) = carried_prior(&named, &["words".to_string()], true);
        assert_eq!(prior.c, vec![Some(Normal { mean: 0.45, sd: 0.2 }), None]);
        assert!(unused.is_empty());
    }

    #[test]
    fn the_judge_with_most_verdicts_is_the_reference() {
        let jv = |name: &str, n: usize| JudgeVerdicts {
            prior: JudgePrior::default(),
            name: name.into(),
            trusted: false,
            verdicts: (0..n).map(|i| v(i % 3, (i + 1) % 3, 1.0)).collect(),
        };
        assert_eq!(reference_judge(&[jv("a", 2), jv("b", 5), jv("c", 5)]), 1);
    }

    /// A random judge's scale is flagged near 0 and a panel past the profiling limit says its
    /// coefficients (one per untrusted judge here) are not profiled.
    #[test]
    fn notes_flag_a_scale_near_zero_and_a_panel_not_profiled() {
        use crate::domain::pool::{CovariateSpec, Item, build_covariates};
        let items: Vec<Item> = (0..6)
            .map(|i| Item {
                id: format!("i{i}"),
                covariates: [("len".to_string(), f64::from(i % 3))].into(),
                ..Item::default()
            })
            .collect();
        let pool = Pool::new("p".into(), "t".into(), items).unwrap();
        let cov = build_covariates(&pool, &[CovariateSpec::parse("len").unwrap()]).unwrap();
        // "sharp": the lower index wins every order; "coin": the first-shown answer wins on
        // alternate pairs, whatever the items.
        let (mut sharp, mut coin) = (Vec::new(), Vec::new());
        let mut q = 0usize;
        for a in 0..6 {
            for b in 0..6 {
                if a != b {
                    for _ in 0..3 {
                        sharp.push(v(a, b, if a < b { 1.0 } else { 0.0 }));
                        coin.push(v(a, b, (q % 2) as f64));
                        q += 1;
                    }
                }
            }
        }
        let judges = [
            JudgeVerdicts { name: "sharp".into(), trusted: false, verdicts: sharp, prior: JudgePrior::default() },
            JudgeVerdicts { name: "coin".into(), trusted: false, verdicts: coin, prior: JudgePrior::default() },
        ];
        let mut rng = crate::domain::rng::stream(0, "membership", 0);
        let mut p = fit_panel(&pool, &cov, &judges, None, &Prior::default(), (2, 200), &mut rng).unwrap();
        assert!(p.profiled);
        let notes = judge_notes(&p);
        let coin = &p.judges[1];
        assert!(coin.scale.value + 2.0 * coin.scale.sd < 0.25, "{:?}", coin.scale);
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(notes[0].starts_with("judge \"coin\": ŝ = "), "{notes:?}");
        p.profiled = false;
        assert!(judge_notes(&p)[1].starts_with("the profile likelihood of the 2 bias coefficients is not computed"));
    }

    /// Six answers whose `len` is their index, and two judges' verdicts on every ordered pair:
    /// "long", the longer answer wins with one upset in four; "frontier", the shorter wins with one
    /// in three (quality falls with the index here).
    fn length_fixture() -> (Pool, Covariates, Vec<ItemVerdict>, Vec<ItemVerdict>) {
        use crate::domain::pool::{CovariateSpec, Item, build_covariates};
        let items: Vec<Item> = (0..6)
            .map(|i| Item {
                id: format!("i{i}"),
                covariates: [("len".to_string(), f64::from(i))].into(),
                ..Item::default()
            })
            .collect();
        let pool = Pool::new("p".into(), "t".into(), items).unwrap();
        let cov = build_covariates(&pool, &[CovariateSpec::parse("len").unwrap()]).unwrap();
        let (mut long, mut frontier) = (Vec::new(), Vec::new());
        for a in 0..6 {
            for b in 0..6 {
                if a != b {
                    long.extend([v(a, b, if a > b { 1.0 } else { 0.0 }); 3]);
                    long.push(v(a, b, if a > b { 0.0 } else { 1.0 }));
                    frontier.extend([v(a, b, if a < b { 1.0 } else { 0.0 }); 2]);
                    frontier.push(v(a, b, if a < b { 0.0 } else { 1.0 }));
                }
            }
        }
        (pool, cov, long, frontier)
    }

    #[test]
    fn a_prior_split_is_said_with_the_judges_apparent_top_k_and_not_once_a_trusted_judge_identifies_it() {
        let (pool, cov, long, frontier) = length_fixture();
        let jv = |name: &str, trusted: bool, verdicts: &Vec<ItemVerdict>| JudgeVerdicts {
            prior: JudgePrior::default(),
            name: name.into(),
            trusted,
            verdicts: verdicts.clone(),
        };
        let mut rng = crate::domain::rng::stream(0, "membership", 0);
        let alone = [jv("long", false, &long)];
        let p = fit_panel(&pool, &cov, &alone, None, &Prior::default(), (2, 200), &mut rng).unwrap();
        let note = prior_split_note(&pool, &cov, &p, 2).expect("c is prior-selected without a trusted judge");
        // Its apparent quality, computed here: θ̂ + ĉ·x / ŝ, which for a judge whose verdicts
        // follow length ranks the longest first.
        let j = &p.judges[0];
        let phi: Vec<f64> = (0..6).map(|b| p.theta[b] + j.c[0].value * cov.x[b][0] / j.scale.value).collect();
        let mut by_phi: Vec<usize> = (0..6).collect();
        by_phi.sort_by(|&a, &b| phi[b].total_cmp(&phi[a]));
        assert_eq!(&by_phi[..2], &[5, 4]);
        assert!(note.contains("as judge \"long\" sees them (φ̂ = θ̂ + ĉᵀx / ŝ), the top-2 is i5, i4."), "{note}");
        assert!(note.starts_with("no judge's ĉ is identified (every profile < 1e-3 nats): θ̂ splits the effect of len"));
        // With the trusted judge's verdicts the split is identified: nothing to say.
        let both = [jv("long", false, &long), jv("frontier", true, &frontier)];
        let p = fit_panel(&pool, &cov, &both, None, &Prior::default(), (2, 200), &mut rng).unwrap();
        assert!(p.judges[0].c_profile_nats[0].unwrap() >= PRIOR_SELECTED_NATS, "{:?}", p.judges[0].c_profile_nats);
        assert_eq!(prior_split_note(&pool, &cov, &p, 2), None);
    }

    /// A carried prior is checked against the same verdicts fitted without it: the note gives
    /// that plain fit's ĉ ± sd and fires past 3 sd of the difference, not before; a term the
    /// verdicts do not inform (no trusted judge) is not checked, even with a prior 5 logits off.
    #[test]
    fn a_carried_prior_far_from_what_the_verdicts_alone_say_is_flagged() {
        let (pool, cov, long, frontier) = length_fixture();
        let jv = |name: &str, trusted: bool, verdicts: &Vec<ItemVerdict>, prior: JudgePrior| JudgeVerdicts {
            prior,
            name: name.into(),
            trusted,
            verdicts: verdicts.clone(),
        };
        let plain =
            [jv("long", false, &long, JudgePrior::default()), jv("frontier", true, &frontier, JudgePrior::default())];
        let mut rng = crate::domain::rng::stream(0, "membership", 0);
        let p = fit_panel(&pool, &cov, &plain, None, &Prior::default(), (2, 200), &mut rng).unwrap();
        let est = p.judges[0].c[0];
        let names = vec!["len".to_string()];
        let at = |z: f64| {
            let sd = 0.1;
            let mean = est.value + z * (est.sd.powi(2) + sd * sd).sqrt();
            let prior = JudgePrior { kappa: None, c: vec![Some(Normal { mean, sd })] };
            let judges = [jv("long", false, &long, prior), jv("frontier", true, &frontier, JudgePrior::default())];
            (mean, prior_conflict_notes(&pool, &cov, &judges, None, &Prior::default(), &names))
        };
        assert!(at(0.0).1.is_empty());
        assert!(at(2.9).1.is_empty());
        let (mean, notes) = at(-3.2);
        assert_eq!(notes.len(), 1, "{notes:?}");
        let want = format!(
            "judge \"long\": this pool's verdicts alone put len at {:.3} ± {:.3} logits, 3.2 sd from its carried prior N({mean}, 0.1²)",
            est.value, est.sd
        );
        assert!(notes[0].starts_with(&want), "{} vs {want}", notes[0]);
        // Without the trusted judge the verdicts do not inform c (its plain fit, 0.38 ± 0.25, is the
        // default priors' split): not checked, even 17 sd away.
        let prior = JudgePrior { kappa: None, c: vec![Some(Normal { mean: 5.0, sd: 0.1 })] };
        let alone = [jv("long", false, &long, prior)];
        let n = prior_conflict_notes(&pool, &cov, &alone, None, &Prior::default(), &names);
        assert!(n.is_empty(), "{n:?}");
    }

    #[test]
    fn each_family_is_reached_once_and_the_longest_name_matches_first() {
        let judge =
            vec![Some("ab".to_string()), Some("cd".to_string()), Some("ab".to_string()), Some("abx".to_string())];
        let bases: Vec<String> = ["ab-1", "abx-2", "cd-3", "ef-4"].iter().map(|s| s.to_string()).collect();
        let f = Families::resolve(&bases, judge, vec![None; 4]);
        assert_eq!(f.base, vec![Some("ab".into()), Some("abx".into()), Some("cd".into()), None]);
        let r = f.reach();
        let names: Vec<&str> = r.iter().map(|x| x.family.as_str()).collect();
        assert_eq!(names, ["abx", "ab", "cd"]);
        assert_eq!((r[1].judges.clone(), r[1].bases.clone()), (vec![0, 2], vec![0]));
        assert_eq!(f.lines(&["j0", "j1", "j2", "j3"], &bases).len(), 3);
    }
}

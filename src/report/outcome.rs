//! What a fitted result reports (docs/model.md "Which ranking is reported"): the ranking chosen
//! under `report_ranking` ([`crate::analysis::ranking::choose`]), both rankings' top-k with
//! ties at the boundary, recall only where the data decide the top-k, the comparison graph, and
//! the notes `run` and `fit` share.

use super::RankRow;
use super::schema::{CertifiedTopk, FittedRanking, Reporting, RunResult, StopReason, TopkView};
use crate::analysis::certify;
use crate::analysis::gate::GateDecision;
use crate::analysis::ranking::{
    self, ChoiceInput, ComparisonGraph, RankingKind, ReportRanking, comparison_graph, graph_note, ranks_with_ties,
    topk_with_ties,
};
use crate::domain::pool::{Covariates, Pool};
use crate::domain::verdict::ItemVerdict;
use crate::model::membership::point_topk;
use crate::model::profile::Identifiability;
use crate::model::summary::{Apparent, FitSummary, ModelKind, RankIntervals};
use std::collections::BTreeMap;

/// Per-base values of both rankings (base order, length M).
#[derive(Debug, Clone, Default)]
pub struct BaseValues {
    /// θ̂ (logits).
    pub theta: Vec<f64>,
    /// sd of θ.
    pub sd: Vec<f64>,
    /// π of the corrected ranking.
    pub membership: Vec<f64>,
    /// φ̂ (logits).
    pub phi: Vec<f64>,
    /// sd of φ.
    pub phi_sd: Vec<f64>,
    /// π of the apparent ranking.
    pub membership_apparent: Vec<f64>,
    /// 90 % rank intervals by θ and by φ, when drawn.
    pub ranks: Option<RankIntervals>,
}

impl BaseValues {
    /// From a fit summary and its apparent quality.
    pub fn new(s: &FitSummary, a: &Apparent) -> Self {
        Self {
            theta: s.theta.clone(),
            sd: s.sd.clone(),
            membership: s.membership.clone(),
            phi: a.phi.clone(),
            phi_sd: a.phi_sd.clone(),
            membership_apparent: a.membership.clone(),
            ranks: a.ranks.clone(),
        }
    }

    /// Read back from a result's maps (base ids of `pool`; a missing entry is 0).
    pub fn from_result(r: &RunResult, pool: &Pool) -> Self {
        let v = |m: &BTreeMap<String, f64>| pool.bases.iter().map(|b| m.get(b).copied().unwrap_or(0.0)).collect();
        Self {
            theta: v(&r.fit.theta),
            sd: v(&r.fit.sd),
            membership: v(&r.fit.membership),
            phi: v(&r.fit.phi),
            phi_sd: v(&r.fit.reporting.phi_sd),
            membership_apparent: v(&r.fit.reporting.membership_apparent),
            ranks: rank_intervals_of(r, pool),
        }
    }
}

/// The rank intervals stored in a result's rows (both rankings), when every base has them.
fn rank_intervals_of(r: &RunResult, pool: &Pool) -> Option<RankIntervals> {
    let row = |id: &str| r.fit.ranking.iter().find(|x| x.id == id);
    let theta = pool.bases.iter().map(|b| row(b)?.rank_interval_corrected).collect::<Option<Vec<_>>>()?;
    let phi = pool.bases.iter().map(|b| row(b)?.rank_interval_apparent).collect::<Option<Vec<_>>>()?;
    Some(RankIntervals { theta, phi })
}

impl BaseValues {
    /// π of the reported ranking.
    pub fn membership_of(&self, kind: RankingKind) -> &[f64] {
        match kind {
            RankingKind::Corrected => &self.membership,
            RankingKind::Apparent => &self.membership_apparent,
        }
    }
}

/// Both rankings of a result.
#[derive(Debug, Clone)]
pub struct Ranked {
    /// Rows in the reported order.
    pub rows: Vec<RankRow>,
    /// The corrected ranking's top-k.
    pub corrected: TopkView,
    /// The apparent ranking's top-k.
    pub apparent: TopkView,
}

impl Ranked {
    /// The view of one ranking.
    pub fn view(&self, kind: RankingKind) -> &TopkView {
        match kind {
            RankingKind::Corrected => &self.corrected,
            RankingKind::Apparent => &self.apparent,
        }
    }
}

/// Rank the bases both ways, with ties, recall where decided and rows in the `reported` order.
pub fn rank(pool: &Pool, k: usize, v: &BaseValues, reported: RankingKind) -> Ranked {
    let ids = |b: &[usize]| b.iter().map(|&i| pool.bases[i].clone()).collect::<Vec<_>>();
    let gold = pool.base_quality();
    let gold_top = gold.as_ref().map(|g| point_topk(g, k));
    let gold_tie = gold.as_ref().map(|g| topk_with_ties(g, k).tied).unwrap_or_default();
    let view = |values: &[f64]| {
        let t = topk_with_ties(values, k);
        // A tie in the gold at its k-th place shares its places among the tied (any of them
        // is as right as another), as a panel's recall does.
        let recall = gold
            .as_ref()
            .filter(|_| t.tied.is_empty() && !t.topk.is_empty())
            .map(|g| crate::analysis::ranking::recall_with_ties(&t.topk, g, k));
        (TopkView { topk: ids(&t.topk), tied: ids(&t.tied), recall_at_k: recall }, t)
    };
    let (corrected, tc) = view(&v.theta);
    let (apparent, ta) = view(&v.phi);
    let (rank_c, tied_c) = ranks_with_ties(&v.theta);
    let (rank_a, tied_a) = ranks_with_ties(&v.phi);
    let (values, rank_r, tied_r, top_r) = match reported {
        RankingKind::Corrected => (&v.theta, &rank_c, &tied_c, &tc),
        RankingKind::Apparent => (&v.phi, &rank_a, &tied_a, &ta),
    };
    let interval = |kind: RankingKind, b: usize| {
        v.ranks.as_ref().map(|r| match kind {
            RankingKind::Corrected => r.theta[b],
            RankingKind::Apparent => r.phi[b],
        })
    };
    let order = ranking::order(values);
    let tier = v
        .ranks
        .as_ref()
        .map(|r| certify::tiers(if reported == RankingKind::Corrected { &r.theta } else { &r.phi }, &order));
    let rows = order
        .into_iter()
        .map(|b| RankRow {
            rank_interval: interval(reported, b),
            tier: tier.as_ref().map(|t| t[b]),
            rank_interval_corrected: interval(RankingKind::Corrected, b),
            rank_interval_apparent: interval(RankingKind::Apparent, b),
            rank: rank_r[b],
            id: pool.bases[b].clone(),
            theta: v.theta[b],
            sd: v.sd[b],
            membership: v.membership[b],
            phi: v.phi[b],
            in_topk: top_r.topk.contains(&b),
            tied: tied_r[b],
            phi_sd: v.phi_sd[b],
            membership_apparent: v.membership_apparent[b],
            rank_corrected: rank_c[b],
            rank_apparent: rank_a[b],
            tied_corrected: tied_c[b],
            tied_apparent: tied_a[b],
            in_corrected_topk: tc.topk.contains(&b),
            in_apparent_topk: ta.topk.contains(&b),
            gold: gold.as_ref().map(|g| g[b]),
            gold_topk: gold_top.as_ref().map(|t| t.contains(&b)),
            gold_tied: gold_tie.contains(&b),
        })
        .collect();
    Ranked { rows, corrected, apparent }
}

/// The comparison graph of valid item verdicts (bases as nodes).
pub fn graph_of(pool: &Pool, verdicts: &[ItemVerdict]) -> ComparisonGraph {
    comparison_graph(&pool.bases, verdicts.iter().map(|v| (pool.item_base[v.a], pool.item_base[v.b])))
}

/// Everything a fitted result needs to say what it reports.
pub struct Inputs<'a> {
    /// The pool the verdicts are on: its N items, M bases and ids.
    pub pool: &'a Pool,
    /// The model's covariates.
    pub cov: &'a Covariates,
    /// k: how many bases the reported top-k holds (config key `k`, 1 ≤ k < M).
    pub k: usize,
    /// The model fitted: `naive` (θ and κ) or `bias_aware` (θ, bias coefficients c, κ).
    pub model: ModelKind,
    /// The MAP fit and its Laplace posterior summary (θ in logits, sds, top-k membership π).
    pub summary: &'a FitSummary,
    /// Its apparent quality.
    pub apparent: &'a Apparent,
    /// The valid verdicts fitted.
    pub verdicts: &'a [ItemVerdict],
    /// Identifiability per covariate.
    pub identifiability: &'a BTreeMap<String, Identifiability>,
    /// The `report_ranking` setting.
    pub setting: ReportRanking,
    /// A gate decision for this run, if any.
    pub gate: Option<&'a GateDecision>,
    /// What one query needs from the budget, said when nothing was compared.
    pub one_query: Option<String>,
    /// ε of the certified top-k (`certify.epsilon`).
    pub epsilon: f64,
    /// Monte-Carlo draws that estimated π.
    pub mc_draws: usize,
}

/// The reported outcome of a fit.
#[derive(Debug, Clone)]
pub struct Reported {
    /// k of top-k.
    pub k: usize,
    /// The reporting block of result.json / fit --out.
    pub reporting: Reporting,
    /// Rows, reported order.
    pub ranking: Vec<RankRow>,
    /// The reported top-k (decided members).
    pub topk: Vec<String>,
    /// Recall of the reported top-k, when decided and gold is known.
    pub recall_at_k: Option<f64>,
    /// Notes for the reader, in order: covariates without variation, identifiability, graph,
    /// ties, no comparison.
    pub notes: Vec<String>,
}

/// Build the outcome: choose the ranking, rank both ways, note what the data leave open.
pub fn outcome(i: &Inputs<'_>) -> Reported {
    let pool = i.pool;
    let choice = ranking::choose(&ChoiceInput {
        setting: i.setting,
        has_covariates: i.model == ModelKind::BiasAware && i.cov.p() > 0,
        identifiability: i.identifiability,
        no_variation: &i.cov.no_variation,
        renderings: pool.n_items() > pool.n_bases(),
        systems: pool.is_systems(),
        gate: i.gate,
    });
    let values = BaseValues::new(i.summary, i.apparent);
    let ranked = rank(pool, i.k, &values, choice.reported);
    let graph = graph_of(pool, i.verdicts);
    let no_signal = certify::signal_check(i.verdicts, &pool.item_base, pool.n_bases());
    let mut notes = Vec::new();
    for n in &i.cov.no_variation {
        notes.push(format!(
            "covariate {n:?} has no variation in this pool: its column is zero and ĉ is the prior mean 0, so its term changes no ranking (and no gate or paired design is needed for it)"
        ));
    }
    // With no valid comparison the note on it says all (every coefficient is the prior's).
    if !i.verdicts.is_empty() {
        notes.extend(identifiability_notes(i.identifiability, pool, &i.cov.no_variation));
    }
    let view = ranked.view(choice.reported).clone();
    notes.extend(undecided_notes(i.k, i.verdicts.is_empty(), &graph, &view, choice.reported, i.one_query.as_deref()));
    let reporting = Reporting {
        report_ranking: i.setting,
        reported: choice.reported,
        reported_reason: if pool.is_systems() {
            choice.reason.replace("(renderings of a shared base)", "(each system answers several prompts)")
        } else {
            choice.reason
        },
        topk_tied: view.tied.clone(),
        corrected: ranked.corrected.clone(),
        apparent: ranked.apparent.clone(),
        phi_sd: super::by_base(pool, &values.phi_sd),
        membership_apparent: super::by_base(pool, &values.membership_apparent),
        certified: certified(
            pool,
            i.k,
            (i.epsilon, i.mc_draws),
            values.membership_of(choice.reported),
            values_of(&values, choice.reported),
            &no_signal,
            &graph,
        ),
        no_signal,
        graph,
        transforms: i.cov.names.iter().cloned().zip(i.cov.transforms.iter().copied()).collect(),
        systems: None,
        session: None,
    };
    Reported { k: i.k, reporting, ranking: ranked.rows, topk: view.topk, recall_at_k: view.recall_at_k, notes }
}

/// The point values of a ranking.
fn values_of(v: &BaseValues, kind: RankingKind) -> &[f64] {
    match kind {
        RankingKind::Corrected => &v.theta,
        RankingKind::Apparent => &v.phi,
    }
}

/// Whether the membership `pi` (per base) from a fit of the valid `verdicts` certifies the top-k
/// at ε with nothing undecided: k bases with π ≥ 1 − ε and every other with π ≤ ε, under
/// [`certified`]'s conditions (a comparison, a connected comparison graph, a judge with signal,
/// enough draws). The `confidence` stop's test (docs/model.md, "Certified top-k").
pub fn certifies(
    pool: &Pool,
    k: usize,
    (epsilon, mc_draws): (f64, usize),
    pi: &[f64],
    verdicts: &[ItemVerdict],
) -> bool {
    let graph = graph_of(pool, verdicts);
    let no_signal = certify::signal_check(verdicts, &pool.item_base, pool.n_bases());
    let c = certified(pool, k, (epsilon, mc_draws), pi, pi, &no_signal, &graph);
    c.claimed && c.undecided.is_empty()
}

/// The certified top-k at ε of a ranking with membership `pi` and point values `values`
/// ([`certify::sets`]): nothing is certified without a comparison, while the comparison graph
/// is not connected (a base without a valid verdict, or components the verdicts do not link:
/// [`certify::graph_withholds`]) or from a judge without signal (every base is then
/// undecided).
pub fn certified(
    pool: &Pool,
    k: usize,
    (epsilon, mc_draws): (f64, usize),
    pi: &[f64],
    values: &[f64],
    no_signal: &Option<certify::NoSignal>,
    graph: &ComparisonGraph,
) -> CertifiedTopk {
    let order = ranking::order(values);
    let ids = |b: &[usize]| b.iter().map(|&i| pool.bases[i].clone()).collect::<Vec<_>>();
    let withheld = if graph.never_compared.len() == pool.n_bases() {
        // A pool with renderings may hold comparisons of a base's own renderings: they inform c
        // and κ, never an order of the bases.
        Some(if pool.n_items() > pool.n_bases() && !pool.is_systems() {
            "no valid comparison between two bases (a comparison of one base's renderings informs only c and κ)"
                .to_string()
        } else {
            "no valid comparison".to_string()
        })
    } else if let Some(n) = no_signal {
        // Before the uncompared bases: more comparisons will not help a judge without signal.
        Some(n.text())
    } else {
        certify::graph_withholds(graph, pool.n_bases(), pool.base_noun())
            .or_else(|| certify::too_few_draws(mc_draws, epsilon))
    };
    // Nothing certified: every base undecided, with the reason.
    let withhold = |why: String| CertifiedTopk {
        epsilon,
        claimed: false,
        inside: Vec::new(),
        undecided: ids(&order),
        outside: Vec::new(),
        mc_draws,
        withheld: Some(why),
    };
    if let Some(why) = withheld {
        return withhold(why);
    }
    let s = certify::sets(pi, &order, epsilon);
    if s.inside.len() > k {
        // Σπ = k, so more than k items can pass 1 − ε only when ε is large for this k.
        return withhold(format!(
            "{} items have π ≥ {}, more than k = {k}: at this ε the sets cannot certify a top-{k}; lower certify.epsilon (below 1/(k + 1) = {:.3} this cannot happen)",
            s.inside.len(),
            1.0 - epsilon,
            1.0 / (k as f64 + 1.0)
        ));
    }
    CertifiedTopk {
        epsilon,
        claimed: s.claimed(k),
        inside: ids(&s.inside),
        undecided: ids(&s.undecided),
        outside: ids(&s.outside),
        mc_draws,
        withheld: None,
    }
}

/// Notes for the reader: what a prior-selected coefficient means, and the shared-quality caveat
/// of an identified coefficient when the pool has several renderings per base. A covariate of
/// `no_variation` (the same for every item) has its own note, not these: its term changes nothing.
pub fn identifiability_notes(
    ident: &BTreeMap<String, Identifiability>,
    pool: &Pool,
    no_variation: &[String],
) -> Vec<String> {
    let renderings = pool.n_items() > pool.n_bases();
    let mut v = Vec::new();
    for (name, e) in ident.iter().filter(|(n, _)| !no_variation.contains(n)) {
        match e.range_nats {
            Some(r) if !e.identified() => v.push(format!(
                "c[{name}] is prior-selected ({}): the comparisons do not inform it, so ĉ and the bias-corrected ranking rest on the prior's assumption that quality is uncorrelated with {name} (docs/model.md §2){GATE_ADVICE} (a `gate:` section in the config, run at the end of `run` or by `topk-judge gate`), or use paired renderings (design: paired)",
                if r < crate::model::profile::PRIOR_SELECTED_NATS {
                    format!("profile range {} nats < 0.001", crate::domain::fmt::num(r))
                } else {
                    format!(
                        "each base has one value of {name}; its profile range of {} nats is the inner fits' ridge",
                        crate::domain::fmt::num(r)
                    )
                }
            )),
            Some(r) if pool.is_systems() => v.push(format!(
                "c[{name}] is identified by each system's answers to several prompts (profile range {} nats); this holds only if a system's quality does not change with {name} from prompt to prompt",
                crate::domain::fmt::num(r)
            )),
            Some(r) if renderings => v.push(format!(
                "c[{name}] is identified by the renderings (profile range {} nats); this holds only if the renderings of a base really share quality",
                crate::domain::fmt::num(r)
            )),
            _ => {}
        }
    }
    v
}

/// Notes on what the data leave undecided: no valid comparison, a disconnected graph, ties at
/// the top-k boundary.
pub fn undecided_notes(
    k: usize,
    nothing_compared: bool,
    graph: &ComparisonGraph,
    view: &TopkView,
    reported: RankingKind,
    one_query: Option<&str>,
) -> Vec<String> {
    let mut notes = Vec::new();
    if nothing_compared {
        let mut s =
            "no valid comparison: the ranking is the prior (every θ̂ and φ̂ is 0), so no top-k and no recall is claimed"
                .to_string();
        if let Some(q) = one_query {
            s.push_str(&format!("; {q}"));
        }
        notes.push(s);
        return notes;
    }
    notes.extend(graph_note(graph));
    notes.extend(tie_note(k, view, reported));
    notes
}

/// The note of a tie at the top-k boundary (`None` when the data decide every place).
pub fn tie_note(k: usize, view: &TopkView, reported: RankingKind) -> Option<String> {
    if view.tied.is_empty() {
        return None;
    }
    let open = k - view.topk.len();
    Some(format!(
        "ties in {} decide the top-{k}: {} are tied for the last {open} place{}; the data do not say which, so no recall is claimed",
        if reported == RankingKind::Corrected { "θ̂" } else { "φ̂" },
        view.tied.join(", "),
        if open == 1 { "" } else { "s" }
    ))
}

/// The advice that ends a prior-selected coefficient's note
/// ([`identifiability_notes`]); replaced once a gate has run.
const GATE_ADVICE: &str = "; test that with a trusted-anchor gate";
/// [`GATE_ADVICE`] where the config has a `gate:` section ([`gate_configured`]).
const GATE_CONFIGURED: &str = "; this config's `gate:` section tests that";

/// The advice of [`identifiability_notes`] to run a gate, said of the `gate:` section a run's
/// config already has (it runs after the summary; hunt 47: the note told the user to add it).
pub fn gate_configured(notes: &mut [String]) {
    for n in notes {
        if let Some(cut) = n.find(GATE_ADVICE) {
            n.replace_range(
                cut..,
                &format!("{GATE_CONFIGURED} once the run ends (its decision, or why it has none yet, is said after this summary), or use paired renderings (design: paired)"),
            );
        }
    }
}

/// Re-choose the reported ranking of a finished result (after a gate decided), from the
/// values it holds; rewrites `topk`, `recall_at_k`, `ranking` and the reporting block, and
/// replaces the tie note (and, with a gate, the advice to run one).
pub fn rechoose(r: &mut RunResult, pool: &Pool, gate: Option<&GateDecision>) {
    let choice = ranking::choose(&ChoiceInput {
        setting: r.fit.reporting.report_ranking,
        has_covariates: r.model == ModelKind::BiasAware && !r.fit.c.is_empty(),
        identifiability: &r.fit.identifiability,
        no_variation: &r.no_variation,
        renderings: pool.n_items() > pool.n_bases(),
        systems: pool.is_systems(),
        gate,
    });
    let values = BaseValues::from_result(r, pool);
    let ranked = rank(pool, r.k, &values, choice.reported);
    let view = ranked.view(choice.reported).clone();
    if r.valid > 0 {
        let old_view = match r.fit.reporting.reported {
            RankingKind::Corrected => &r.fit.reporting.corrected,
            RankingKind::Apparent => &r.fit.reporting.apparent,
        };
        if let Some(old) = tie_note(r.k, old_view, r.fit.reporting.reported) {
            r.fit.notes.retain(|n| *n != old);
        }
        r.fit.notes.extend(tie_note(r.k, &view, choice.reported));
    }
    // A gate ran: the advice to run one gives way to its decision (the gate line).
    if gate.is_some() {
        for n in &mut r.fit.notes {
            if let Some(cut) = n.find(GATE_ADVICE).or_else(|| n.find(GATE_CONFIGURED)) {
                n.replace_range(
                    cut..,
                    "; the trusted-anchor gate of this run tested it (its decision is shown with the ranking)",
                );
            }
        }
    }
    let c = &r.fit.reporting.certified;
    let certified = certified(
        pool,
        r.k,
        (c.epsilon, c.mc_draws),
        values.membership_of(choice.reported),
        values_of(&values, choice.reported),
        &r.fit.reporting.no_signal,
        &r.fit.reporting.graph,
    );
    r.fit.reporting.certified = certified;
    r.fit.reporting.reported = choice.reported;
    r.fit.reporting.reported_reason = choice.reason;
    r.fit.reporting.topk_tied = view.tied.clone();
    r.fit.reporting.corrected = ranked.corrected;
    r.fit.reporting.apparent = ranked.apparent;
    r.fit.topk = view.topk;
    r.fit.recall_at_k = view.recall_at_k;
    r.fit.ranking = ranked.rows;
    if let Some(sys) = &mut r.fit.reporting.systems {
        super::systems::follow_reported(sys, &r.fit.ranking, choice.reported);
    }
}

/// The identifiability of every covariate at a fit ([`crate::analysis::identifiability`]) and
/// its apparent quality ([`crate::model::summary::apparent_quality`]; Monte-Carlo stream
/// `membership-apparent` keyed by the number of verdicts). Without covariates (or if the
/// apparent fit fails) φ̂ is θ̂.
pub fn identify_and_apparent(
    pool: &Pool,
    cov: &Covariates,
    prior: &crate::model::Prior,
    k: usize,
    (draws, seed): (usize, u64),
    verdicts: &[ItemVerdict],
    s: &FitSummary,
) -> (BTreeMap<String, Identifiability>, Apparent) {
    let ident = crate::analysis::identifiability::for_summary(pool, cov, verdicts, s);
    let design = crate::model::summary::build_design(pool, cov, verdicts);
    let beta = s.beta();
    let mut rng = crate::domain::rng::stream(seed, "membership-apparent", verdicts.len() as u64);
    let a = crate::model::summary::apparent_quality(pool, cov, &design, prior, k, draws, &beta, &mut rng);
    let a = match a {
        // Without covariates φ is θ: the summary's own values, with the rank intervals drawn here.
        Ok(a) if cov.p() == 0 => Apparent { ranks: a.ranks, ..Apparent::of_summary(s) },
        Ok(a) => a,
        Err(_) => Apparent::of_summary(s),
    };
    (ident, a)
}

/// What one query needs from the budget (said when nothing was compared), for the limit that
/// stopped the run (`stop`): `max_comparisons ≥ 1`, or `max_usd` at least what the run folder's
/// books already hold (`held_usd`, USD) plus, for a priced judge, the worst case of its cheapest
/// query (the smallest over the ordered pairs of two bases of one prompt: the run sends any query
/// that fits, so a budget short of that one buys none).
pub fn one_query_text(pool: &Pool, judge: &dyn crate::judge::JudgeInfo, stop: StopReason, held_usd: f64) -> String {
    if stop == StopReason::MaxComparisons {
        return "one query needs budget.max_comparisons ≥ 1".into();
    }
    let usd = super::table::usd;
    let worst = if judge.has_price() {
        let cheapest = pool
            .prompt_items()
            .iter()
            .flat_map(|g| g.iter().flat_map(move |&a| g.iter().map(move |&b| (a, b))))
            .filter(|&(a, b)| pool.item_base[a] != pool.item_base[b])
            .map(|(a, b)| judge.worst_case_usd(pool, a, b))
            .fold(f64::INFINITY, f64::min);
        if cheapest.is_finite() { cheapest } else { 0.0 }
    } else {
        0.0
    };
    match (held_usd > 0.0, worst > 0.0) {
        (false, _) => {
            format!("one query needs budget.max_usd ≥ {} (its worst-case cost)", super::table::usd_at_least(worst))
        }
        (true, true) => format!(
            "one query needs budget.max_usd ≥ {}: the run folder's books already hold {}, and one query's worst-case cost is {}",
            super::table::usd_at_least(held_usd + worst),
            usd(held_usd),
            usd(worst)
        ),
        (true, false) => format!(
            "the run folder's books already hold {}, at or above budget.max_usd: a query of this free judge needs budget.max_usd above that",
            usd(held_usd)
        ),
    }
}

impl FittedRanking {
    /// The fitted ranking of `summary` on `pool` (covariates `cov`): its values by base id and
    /// covariate name, the reported outcome `out` (top-k, ranking, recall, notes, reporting) and
    /// the identifiability of each covariate; gold top-k when the pool has quality.
    pub fn new(
        pool: &Pool,
        cov: &Covariates,
        summary: &FitSummary,
        out: Reported,
        identifiability: BTreeMap<String, Identifiability>,
    ) -> Self {
        let gold = pool.base_quality().map(|g| point_topk(&g, out.k));
        Self {
            topk: out.topk,
            theta: super::by_base(pool, &summary.theta),
            sd: super::by_base(pool, &summary.sd),
            membership: super::by_base(pool, &summary.membership),
            phi: super::by_base(pool, &summary.phi),
            c: super::by_cov(cov, &summary.c),
            c_sd: super::by_cov(cov, &summary.c_sd),
            kappa: summary.kappa,
            kappa_sd: summary.kappa_sd,
            gold_topk: gold.map(|g| g.iter().map(|b| pool.bases[*b].clone()).collect()),
            recall_at_k: out.recall_at_k,
            ranking: out.ranking,
            notes: out.notes,
            identifiability,
            reporting: out.reporting,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::pool::Item;

    /// Gold qualities tied at the k-th place share its places: with every gold quality equal,
    /// any top-2 has recall 1 (before: 0.5 against an arbitrary gold top-2 i0, i1).
    #[test]
    fn a_gold_tie_at_the_boundary_shares_its_places() {
        let items = (0..4)
            .map(|i| Item {
                id: format!("i{i}"),
                text: Some(format!("t{i}")),
                quality: Some(1.0),
                ..Default::default()
            })
            .collect();
        let pool = Pool::new("p".into(), "t".into(), items).unwrap();
        let v = BaseValues {
            theta: vec![0.1, 0.4, 0.3, 0.2],
            phi: vec![0.1, 0.4, 0.3, 0.2],
            sd: vec![1.0; 4],
            phi_sd: vec![1.0; 4],
            membership: vec![0.5; 4],
            membership_apparent: vec![0.5; 4],
            ranks: None,
        };
        let r = rank(&pool, 2, &v, RankingKind::Apparent);
        assert_eq!((r.apparent.topk.clone(), r.apparent.recall_at_k), (vec!["i1".to_string(), "i2".into()], Some(1.0)));
        // Distinct gold: recall as before.
        let items = (0..4)
            .map(|i| Item {
                id: format!("i{i}"),
                text: Some(format!("t{i}")),
                quality: Some(i as f64),
                ..Default::default()
            })
            .collect();
        let pool = Pool::new("p".into(), "t".into(), items).unwrap();
        assert_eq!(rank(&pool, 2, &v, RankingKind::Apparent).apparent.recall_at_k, Some(0.5));
    }

    /// With no place decided, the undecided compete for "the 2 places", not "the other 2".
    #[test]
    fn no_place_decided_names_the_places_without_other() {
        let ids = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let c = crate::report::schema::CertifiedTopk {
            epsilon: 0.05,
            undecided: ids(&["i2", "i3", "i1"]),
            outside: ids(&["i0"]),
            ..Default::default()
        };
        let s = crate::report::summary::certified_set_lines(2, &c, None);
        assert!(
            s.starts_with(
                "top-2 not certified (ε = 0.05): 0 of 2 places decided; i2, i3, i1 compete for the 2 places\n"
            ),
            "{s}"
        );
        let c = crate::report::schema::CertifiedTopk { inside: ids(&["i2"]), undecided: ids(&["i3", "i1"]), ..c };
        let s = crate::report::summary::certified_set_lines(2, &c, None);
        assert!(s.contains("; i3, i1 compete for the other 1 place\n"), "{s}");
    }
}

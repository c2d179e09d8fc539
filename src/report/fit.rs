//! The output of `topk-judge fit` (docs/outputs.md): `fit --out` ([`FitOutput`], the fitted
//! ranking flattened in, as in result.json) and the printed text.

use super::schema::FittedRanking;
use crate::model::summary::ModelKind;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Output of `fit --out`.
#[derive(Debug, Serialize)]
pub struct FitOutput {
    /// The `pool_id` of the fitted pool.
    pub pool_id: String,
    /// The model fitted: `naive` (θ and κ) or `bias_aware` (θ, bias coefficients c, κ).
    pub model: ModelKind,
    /// k: the top-k size of the reported membership π and top-k set.
    pub k: usize,
    /// Valid verdicts fitted.
    pub comparisons: usize,
    /// Invalid verdicts (`"y": null`) of the fitted judge and pool, not fitted.
    pub invalid: usize,
    /// The judge whose verdicts were fitted (`--judge`, or the run's), if one was selected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub judge: Option<String>,
    /// Records of this pool per judge (`""` = no judge field).
    pub judges: BTreeMap<String, usize>,
    /// Records of other pools, per pool id (skipped).
    pub other_pools: BTreeMap<String, usize>,
    /// Prompts with at least one fitted verdict (a pool over many prompts; 1 for one pool with
    /// verdicts, 0 with none).
    #[serde(skip)]
    pub judged_prompts: usize,
    /// The fitted ranking (as in result.json).
    #[serde(flatten)]
    pub fit: FittedRanking,
    /// Warnings printed to stderr (torn last line, several judges fitted together, …).
    #[serde(skip)]
    pub warnings: Vec<String>,
}

/// The printable result of `fit`: as a run's summary (model, κ̂, ĉ with units and
/// identifiability, which ranking is reported and why, both rankings, notes).
pub fn fit_text(fit: &FitOutput) -> String {
    let mut text = format!(
        "pool {}: {} model, {}{}{}\n",
        fit.pool_id,
        super::table::name(&fit.model),
        crate::domain::fmt::count(fit.comparisons, "valid verdict"),
        if fit.invalid > 0 { format!(" ({} invalid, not fitted)", fit.invalid) } else { String::new() },
        fit.judge.as_ref().map(|j| format!(", judge {j}")).unwrap_or_default()
    );
    text.push_str(&super::summary::certified_lines(fit.k, &fit.fit.reporting));
    text.push_str(&super::summary::coefficient_lines(
        fit.fit.kappa,
        fit.fit.kappa_sd,
        &fit.fit.c,
        &fit.fit.c_sd,
        &fit.fit.identifiability,
        &fit.fit.reporting,
    ));
    text.push_str(&super::summary::ranking_block(
        fit.k,
        fit.model == ModelKind::BiasAware && !fit.fit.c.is_empty(),
        &fit.fit.reporting,
        &fit.fit.ranking,
        &fit.fit.topk,
        fit.fit.recall_at_k,
        fit.comparisons,
        (fit.comparisons == 0).then_some("no valid verdict to fit"),
    ));
    for n in &fit.fit.notes {
        text.push_str(&format!("note: {n}\n"));
    }
    text
}

/// Output of `fit --panel --out` (docs/model.md §8): the panel's judges and θ̂ per base.
#[derive(Debug, Serialize)]
pub struct PanelFitOutput {
    /// The `pool_id` of the fitted pool.
    pub pool_id: String,
    /// k of the reported top-k membership π.
    pub k: usize,
    /// ε of the certified sets: in when π ≥ 1 − ε, out when π ≤ ε.
    pub epsilon: f64,
    /// Valid verdicts fitted (all judges).
    pub comparisons: usize,
    /// Invalid verdicts (`"y": null`), not fitted.
    pub invalid: usize,
    /// Records of other pools, per pool id (skipped).
    pub other_pools: BTreeMap<String, usize>,
    /// Base names, the order of `theta`, `sd` and `membership`.
    pub bases: Vec<String>,
    /// Why nothing is certified (too few Monte-Carlo draws, or bases without a verdict), if so.
    pub not_certified: Option<String>,
    /// Why the trusted judge cannot anchor the other judges' c (no signal, a scale near 0, or
    /// fewer than 10 verdicts), if so: then only differences between the judges' c are identified.
    pub weak_anchor: Option<String>,
    /// Monte-Carlo draws from the Laplace posterior behind π.
    pub draws: usize,
    /// Seed of those draws (`--seed`).
    pub seed: u64,
    /// The fitted panel.
    #[serde(flatten)]
    pub panel: crate::analysis::panel_fit::PanelSummary,
    /// Notes printed with the result.
    pub notes: Vec<String>,
    /// Warnings printed to stderr.
    #[serde(skip)]
    pub warnings: Vec<String>,
}

/// The printable result of `fit --panel`: one line per judge (verdicts, κ̂, ĉ with its profile
/// range, ŝ, flip rate, agreement with the trusted judge), what the panel identifies, and the
/// bases by θ̂ with top-k membership π and the certified set.
pub fn panel_text(out: &PanelFitOutput) -> String {
    use crate::analysis::panel_fit::SAME_FAMILY;
    use crate::analysis::panel_fit::informed;
    let p = &out.panel;
    // The agreement column, when there is a trusted judge and another to compare with it.
    let trusted = p.judges.iter().find(|j| j.trusted).map(|j| j.name.clone()).filter(|_| p.judges.len() > 1);
    let mut text = format!(
        "pool {}: judge panel of {} judge{} (shared θ; per judge κ, {}scale s; docs/model.md §8), {}{}\n",
        out.pool_id,
        p.judges.len(),
        if p.judges.len() == 1 { "" } else { "s" },
        if p.covariates.is_empty() { "" } else { "c, " },
        crate::domain::fmt::count(out.comparisons, "valid verdict"),
        if out.invalid > 0 { format!(" ({} invalid, not fitted)", out.invalid) } else { String::new() },
    );
    // A value that rounds to 0 prints as 0.000, not -0.000.
    let pm = |e: &crate::model::panel::Estimate| {
        let v = if (e.value * 1e3).round() == 0.0 { 0.0 } else { e.value };
        format!("{v:.3} ± {:.3}", e.sd)
    };
    let w = p.judges.iter().map(|j| j.name.chars().count() + if j.trusted { 10 } else { 0 }).max().unwrap_or(5).max(5);
    let agree_head = trusted.as_ref().map(|t| format!("  agreement with {t}")).unwrap_or_default();
    let c_head: Vec<String> = p.covariates.iter().map(|c| format!("ĉ {c} (logits; profile nats)")).collect();
    let _ = writeln!(
        text,
        "{:<w$}  {:>8}  {:<16}  {}{:<15}  {:<12}{agree_head}",
        "judge",
        "verdicts",
        "κ̂ (logits)",
        c_head.iter().map(|h| format!("{h:<36}  ")).collect::<String>(),
        "ŝ",
        "flip rate",
    );
    for j in &p.judges {
        let name = if j.trusted { format!("{} (trusted)", j.name) } else { j.name.clone() };
        let cs: String = if j.trusted {
            p.covariates.iter().map(|_| format!("{:<36}  ", "– (trusted: no c)")).collect()
        } else {
            j.c.iter()
                .zip(&j.c_profile_nats)
                .zip(&j.c_has_data)
                .zip(&p.covariates)
                .map(|(((e, r), has), name)| {
                    let cell = match (has, r) {
                        (true, Some(r)) => format!("{} ({})", pm(e), super::table::fmt_nats(*r)),
                        (true, None) => format!("{} (not profiled)", pm(e)),
                        (false, _) if name == SAME_FAMILY && j.family.is_some() => {
                            "– (no verdict differs in family)".to_string()
                        }
                        (false, _) if name == SAME_FAMILY => "– (the judge has no family)".to_string(),
                        (false, _) => "– (no data: the prior)".to_string(),
                    };
                    format!("{cell:<36}  ")
                })
                .collect()
        };
        let scale = if j.reference { "1 (reference)".to_string() } else { pm(&j.scale) };
        let flip = match j.flip_rate {
            Some(f) => format!("{f:.3} of {}", j.both_orders),
            None => "–".into(),
        };
        let agree = match (&trusted, j.trusted) {
            (None, _) => String::new(),
            (Some(_), true) => "  –".into(),
            (Some(_), false) => match j.agreement_with_trusted {
                Some(a) => format!("  {a:.3} of {}", j.shared_with_trusted),
                None if j.asked_with_trusted > 0 => "  – (no decided pair in common)".into(),
                None => "  – (no pair in common)".into(),
            },
        };
        let _ = writeln!(
            text,
            "{:<w$}  {:>8}  {:<16}  {cs}{:<15}  {:<12}{agree}",
            name,
            j.verdicts,
            pm(&j.kappa),
            scale,
            flip,
        );
    }
    // Each untrusted judge's coefficients that have data: (what, profile range).
    let entries: Vec<(String, f64)> = p
        .judges
        .iter()
        .filter(|j| !j.trusted)
        .flat_map(|j| {
            p.covariates
                .iter()
                .zip(&j.c_profile_nats)
                .zip(&j.c_has_data)
                .filter_map(move |((c, r), has)| Some((format!("{c} of {}", j.name), (*r)?)).filter(|_| *has))
        })
        .collect();
    let listed = |sel: &dyn Fn(f64) -> bool| -> String {
        entries
            .iter()
            .filter(|(_, r)| sel(*r))
            .map(|(w, r)| format!("{w} ({})", super::table::fmt_nats(*r)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let (identified, selected) = (listed(&|r| informed(r)), listed(&|r| !informed(r)));
    let weak = p.judges.iter().find(|j| j.trusted).zip(out.weak_anchor.as_ref()).map(|(j, why)| (j.name.clone(), why));
    if let (Some((t, why)), false) = (&weak, entries.is_empty()) {
        // Read as a panel without a trusted judge: a c whose profile the verdicts curve (over
        // systems, lengths that vary within a system) is identified all the same.
        let mut parts = Vec::new();
        if !identified.is_empty() {
            parts.push(format!("identified (by the verdicts) {identified}"));
        }
        if !selected.is_empty() {
            parts.push(format!(
                "prior-selected, where only the differences between the judges' c are identified: {selected}"
            ));
        }
        let _ = writeln!(
            text,
            "identification: {t} is marked trusted but cannot anchor the other judges' c: {why}; read the panel as one without a trusted judge: {}",
            parts.join("; ")
        );
    } else if !entries.is_empty() {
        let relative = trusted.as_ref().map(|t| format!(", relative to {t} (trusted: no c)")).unwrap_or_default();
        // A carried prior on a c holds it (and, through θ, the others') where the verdicts are
        // silent: the profile is curved by it, not by this pool's verdicts alone.
        let carriers: Vec<&str> = p
            .judges
            .iter()
            .filter(|j| j.carried_prior.as_ref().is_some_and(|c| c.c.iter().any(Option::is_some)))
            .map(|j| j.name.as_str())
            .collect();
        let by = if carriers.is_empty() {
            "the verdicts".to_string()
        } else {
            format!(
                "the verdicts with the carried prior{} of {}",
                if carriers.len() == 1 { "" } else { "s" },
                carriers.join(", ")
            )
        };
        let line = if selected.is_empty() {
            format!("identification: every judge's c is identified by {by}{relative}; profile likelihood: {identified}")
        } else if let Some(t) = &trusted {
            format!(
                "identification: {t} is trusted (no c); identified{}: {}; prior-selected (the verdicts do not inform them): {selected}",
                if carriers.is_empty() { String::new() } else { format!(" (by {by})") },
                if identified.is_empty() { "none".to_string() } else { identified }
            )
        } else {
            // The run marks a judge trusted that has no verdict here yet (a note says which):
            // its verdicts are what is missing, not a mark.
            let marked =
                out.notes.iter().any(|n| n.contains("is marked trusted in the run's config but has no verdict"));
            format!(
                "identification: no judge {}is trusted, so where a covariate moves with quality only the differences between the judges' c are identified: prior-selected {selected}{}; θ̂ splits quality from bias there by the prior (read it as apparent quality). {}",
                if marked { "with verdicts here " } else { "" },
                if identified.is_empty() { String::new() } else { format!("; identified (by {by}) {identified}") },
                if marked {
                    "The run's trusted judge has none yet (below): its verdicts identify the split."
                } else {
                    "Mark a judge whose verdicts are free of item-level bias (`trusted: true` in a run's `judges:`, --trusted NAME to fit; docs/model.md §8)."
                }
            )
        };
        let _ = writeln!(text, "{line}");
    }
    let eps = out.epsilon;
    let mut order: Vec<usize> = (0..p.theta.len()).collect();
    order.sort_by(|a, b| p.theta[*b].total_cmp(&p.theta[*a]).then(a.cmp(b)));
    // The certified sets, worded as for a single judge (docs/model.md, "Certified top-k").
    let ids = |b: &[usize]| b.iter().map(|&i| out.bases[i].clone()).collect::<Vec<_>>();
    let cert = match &out.not_certified {
        Some(why) => super::schema::CertifiedTopk {
            epsilon: eps,
            claimed: false,
            inside: Vec::new(),
            undecided: ids(&order),
            outside: Vec::new(),
            mc_draws: out.draws,
            withheld: Some(why.clone()),
        },
        None => {
            let sets = crate::analysis::certify::sets(&p.membership, &order, eps);
            super::schema::CertifiedTopk {
                epsilon: eps,
                claimed: sets.claimed(out.k),
                inside: ids(&sets.inside),
                undecided: ids(&sets.undecided),
                outside: ids(&sets.outside),
                mc_draws: out.draws,
                withheld: None,
            }
        }
    };
    text.push_str(&super::summary::certified_set_lines(out.k, &cert, None));
    let bw = out.bases.iter().map(|b| b.chars().count()).max().unwrap_or(4).max(4);
    // No table of the prior's zeros.
    let shown = if out.comparisons == 0 {
        let _ = writeln!(text, "no ranking: no valid verdict, so every θ̂ is the prior's 0");
        0
    } else {
        let _ = writeln!(text, "{:>4}  {:<bw$}  {:<16}  {:>6}  set", "rank", "base", "θ̂ (logits)", "π");
        order.len().min(40)
    };
    for (r, &b) in order.iter().take(shown).enumerate() {
        let pi = p.membership[b];
        let set = if out.not_certified.is_some() {
            "?"
        } else if pi >= 1.0 - eps {
            "in"
        } else if pi <= eps {
            "out"
        } else {
            "?"
        };
        let _ = writeln!(
            text,
            "{:>4}  {:<bw$}  {:<16}  {:>6.3}  {set}",
            r + 1,
            out.bases[b],
            format!("{:>6.3} ± {:.3}", p.theta[b], p.sd[b]),
            pi
        );
    }
    if order.len() > shown && shown > 0 {
        let _ = writeln!(text, "… {} bases in all (fit --out lists every one)", order.len());
    }
    for n in &out.notes {
        let _ = writeln!(text, "note: {n}");
    }
    text.lines().map(|l| l.trim_end().to_owned() + "\n").collect()
}

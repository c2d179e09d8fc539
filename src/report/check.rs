//! What `topk-judge check` reports (docs/systems.md, "Checking a leaderboard"): [`CheckReport`]
//! and its text.

use crate::analysis::gate::GateDecision;
use serde::Serialize;

/// One style covariate of the check.
#[derive(Debug, Clone, Serialize)]
pub struct CovariateCheck {
    /// Covariate name (e.g. `words`).
    pub name: String,
    /// ĉ, logits per covariate unit (per sd for a `zscore` covariate).
    pub c: f64,
    /// Posterior sd of c (logits per unit).
    pub c_sd: f64,
    /// The unit of c in words (e.g. "logits per sd of words").
    pub unit: String,
    /// Range of the profile log-likelihood over c (nats); `None` when not computed.
    pub profile_range_nats: Option<f64>,
    /// Whether the comparisons inform c (range ≥ 0.001 nats, docs/model.md §5).
    pub identified: bool,
}

/// What the trusted-anchor gate decided on the given trusted verdicts.
#[derive(Debug, Clone, Serialize)]
pub struct GateCheck {
    /// Anchors selected (disagreements of the two rankings nearest the boundary).
    pub anchors: usize,
    /// Anchors with at least one trusted verdict.
    pub labelled: usize,
    /// The sign test's counts, p-value and decision.
    pub decision: GateDecision,
}

/// The leaderboard check.
#[derive(Debug, Clone, Serialize)]
pub struct CheckReport {
    /// Prompts of the pool file.
    pub prompts: usize,
    /// Prompts with at least one fitted verdict (fewer than `prompts`: the systems are ranked
    /// on those prompts alone).
    pub judged_prompts: usize,
    /// Systems, in order of first appearance.
    pub systems: Vec<String>,
    /// Valid verdicts fitted.
    pub verdicts: usize,
    /// Invalid verdicts (not fitted).
    pub invalid: usize,
    /// The judge fitted, when one was selected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub judge: Option<String>,
    /// k of the top-k compared.
    pub k: usize,
    /// Position effect κ̂ (logits; > 0 favours the answer shown first).
    pub kappa: f64,
    /// Its sd (logits).
    pub kappa_sd: f64,
    /// One entry per style covariate.
    pub covariates: Vec<CovariateCheck>,
    /// The raw top-k: by apparent quality φ̂ = θ̂ + ĉᵀx̄ (what the judge's verdicts say, style
    /// included), best first; fewer than k when a tie straddles the boundary.
    pub raw_topk: Vec<String>,
    /// Systems tied at the raw top-k's boundary, sharing its remaining places.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub raw_tied: Vec<String>,
    /// The corrected top-k: by θ̂ (style held equal), best first; fewer than k when a tie
    /// straddles the boundary.
    pub corrected_topk: Vec<String>,
    /// Systems tied at the corrected top-k's boundary, sharing its remaining places.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub corrected_tied: Vec<String>,
    /// Whether the corrected top-k (its members or its tie) differs from the raw one (point
    /// sets: with `no_signal`, or a comparison graph of several components (`graph`), a
    /// difference the judgments do not determine).
    pub changes_topk: bool,
    /// What the data certify about the top-k of the ranking `fit` reports for these verdicts
    /// (`certified_ranking`), at ε = 0.05 (docs/model.md, "Certified top-k"): a top-k printed
    /// above is a point estimate, this says how much of it the verdicts decide.
    pub certified: crate::report::schema::CertifiedTopk,
    /// The ranking `certified` is of: the raw (apparent φ̂) or the corrected (θ̂) one.
    pub certified_ranking: crate::analysis::ranking::RankingKind,
    /// A judge without signal, when the verdicts show one (its counts are in the certified line).
    #[serde(skip)]
    pub no_signal: Option<crate::analysis::certify::NoSignal>,
    /// The comparison graph of the verdicts: its components and the systems never compared
    /// (whose places rest on the prior alone).
    pub graph: crate::analysis::ranking::ComparisonGraph,
    /// The gate's decision, when trusted verdicts were given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gate: Option<GateCheck>,
    /// Verdicts on prompts the pool file does not have (left out of the fit).
    pub left_out: usize,
    /// Those prompts' ids (the verdicts' `pool_id`), sorted.
    pub left_out_prompts: Vec<String>,
    /// Warnings (printed to stderr).
    #[serde(skip)]
    pub warnings: Vec<String>,
}

impl CheckReport {
    /// The printed check.
    pub fn text(&self) -> String {
        let num = crate::report::summary::fmt_coef;
        let mut s = format!(
            "leaderboard check: {}{} × {}, {}{}\n",
            crate::domain::fmt::count(self.prompts, "prompt"),
            if self.judged_prompts < self.prompts {
                format!(
                    " ({} judged: the ranking rests on {} alone)",
                    self.judged_prompts,
                    if self.judged_prompts == 1 { "it" } else { "them" }
                )
            } else {
                String::new()
            },
            crate::domain::fmt::count(self.systems.len(), "system"),
            if self.invalid > 0 {
                format!(
                    "{} (and {} invalid, not fitted)",
                    crate::domain::fmt::count(self.verdicts, "valid verdict"),
                    self.invalid
                )
            } else {
                crate::domain::fmt::count(self.verdicts, "verdict")
            },
            self.judge.as_ref().map(|j| format!(" of {j}")).unwrap_or_default()
        );
        if self.left_out > 0 {
            s.push_str(&format!(
                "left out: {} on prompts the pool file does not have: {} ({}{}; check --out lists them all)\n",
                crate::domain::fmt::count(self.left_out, "verdict"),
                crate::domain::fmt::count(self.left_out_prompts.len(), "prompt"),
                self.left_out_prompts.iter().take(5).map(String::as_str).collect::<Vec<_>>().join(", "),
                if self.left_out_prompts.len() > 5 { ", …" } else { "" }
            ));
        }
        s.push_str(&format!(
            "position effect κ = {} ± {} logits (> 0 favours the answer shown first)\n",
            num(self.kappa),
            num(self.kappa_sd)
        ));
        for c in &self.covariates {
            let range = c
                .profile_range_nats
                .map_or("not profiled".to_string(), |r| format!("profile range {}", crate::report::table::fmt_nats(r)));
            // Identified says the judgments inform c, not how well: a coefficient within its sd
            // of 0 (a few verdicts) is said to have no known sign.
            let verdict = match (c.identified, c.c_sd >= c.c.abs()) {
                (true, false) => {
                    "identified by the design, if a system's quality does not change with it from prompt to prompt"
                }
                (true, true) => {
                    "identified by the design, if a system's quality does not change with it from prompt to prompt; its sign is not known (|c| is within its sd)"
                }
                (false, _) => "prior-selected: the correction would rest on the prior",
            };
            s.push_str(&format!(
                "style {}: c = {} ± {} {}; {range} → {verdict}\n",
                c.name,
                num(c.c),
                num(c.c_sd),
                c.unit
            ));
        }
        if !self.graph.connected() {
            s.push_str(&format!("comparison graph: {}\n", self.graph.summary_text()));
        }
        // A system never compared holds its place by the prior alone: marked, as in `fit`.
        let never = &self.graph.never_compared;
        let mark = |ids: &[String]| crate::report::summary::never_compared_marked(ids, never);
        let members =
            |topk: &[String], tied: &[String]| crate::report::summary::topk_members(self.k, &mark(topk), &mark(tied));
        s.push_str(&format!("raw top-{} (apparent φ̂): {}\n", self.k, members(&self.raw_topk, &self.raw_tied)));
        s.push_str(&format!("corrected top-{} (θ̂): {}\n", self.k, members(&self.corrected_topk, &self.corrected_tied)));
        let listed: Vec<&str> = never
            .iter()
            .filter(|b| {
                [&self.raw_topk, &self.raw_tied, &self.corrected_topk, &self.corrected_tied]
                    .iter()
                    .any(|l| l.contains(b))
            })
            .map(String::as_str)
            .collect();
        if !listed.is_empty() {
            s.push_str(&format!(
                "  {} never compared: {} on the prior alone (θ̂ = 0), not on the judgments\n",
                listed.join(", "),
                if listed.len() == 1 { "its place rests" } else { "their places rest" }
            ));
        }
        let which = match self.certified_ranking {
            crate::analysis::ranking::RankingKind::Apparent => "raw",
            crate::analysis::ranking::RankingKind::Corrected => "corrected",
        };
        s.push_str(&format!(
            "  {which}: {}",
            crate::report::summary::certified_set_lines(self.k, &self.certified, self.no_signal.as_ref())
                .replace('\n', "\n  ")
                .trim_end_matches(' ')
        ));
        if let Some(ns) = &self.no_signal {
            // Neither point top-k rests on the judgments: their difference is noise.
            s.push_str(&format!(
                "the judgments carry no signal (the judge {}), so neither top-{} is determined by them, nor whether the correction changes it\n",
                ns.what(),
                self.k
            ));
        } else if !self.graph.connected() {
            // Groups compared apart: their order against each other rests on the prior, and so
            // does any difference between the two point top-k sets.
            s.push_str(&format!(
                "the judgments do not connect the systems (a comparison graph of {} components), so the top-{} across them rests on the prior, not on the judgments, and so does whether the correction changes it\n",
                self.graph.components,
                self.k
            ));
        } else if self.changes_topk {
            // In: certainly in the corrected top-k, not even tied in the raw one; out: the reverse.
            fn moved<'a>(from: &'a [String], topk: &[String], tied: &[String]) -> Vec<&'a str> {
                from.iter().filter(|x| !topk.contains(x) && !tied.contains(x)).map(String::as_str).collect()
            }
            let ins = moved(&self.corrected_topk, &self.raw_topk, &self.raw_tied);
            let outs = moved(&self.raw_topk, &self.corrected_topk, &self.corrected_tied);
            let parts: Vec<String> = [(ins, "in"), (outs, "out")]
                .into_iter()
                .filter(|(ids, _)| !ids.is_empty())
                .map(|(ids, what)| format!("{} {what}", ids.join(", ")))
                .collect();
            if parts.is_empty() {
                s.push_str(&format!("the correction changes which systems tie at the top-{} boundary\n", self.k));
            } else {
                s.push_str(&format!("the correction changes the top-{}: {}\n", self.k, parts.join(", ")));
            }
        } else {
            s.push_str(&format!("the correction leaves the top-{} set as it is\n", self.k));
        }
        match &self.gate {
            None => s.push_str(
                "gate: no trusted verdicts given (--anchors FILE): nothing here tells whether a system's longer answers are its better ones; report the raw ranking unless anchors enable the correction\n",
            ),
            Some(g) => {
                let d = &g.decision;
                s.push_str(&format!(
                    "gate: {} anchors, {} with trusted verdicts; corrected right on {}, raw right on {} (ties or unlabelled {}), sign test p = {} {} α = {} → {}\n",
                    g.anchors,
                    g.labelled,
                    d.n10,
                    d.n01,
                    d.n_ties,
                    crate::analysis::ranking::fmt_p(d.p_value),
                    if d.enable { "≤" } else { ">" },
                    d.alpha,
                    if d.enable { "report the corrected ranking" } else { "keep the raw ranking" }
                ));
            }
        }
        s
    }
}

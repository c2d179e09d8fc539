//! `topk-judge report RUN` on a judge panel's run folder (`judges:`, docs/model.md §8): the
//! same report.md and self-contained report.html as for one judge ([`super::page`]), with the
//! panel's content — per judge its queries, spend, κ̂, ĉ with its profile range and verdict, ŝ,
//! flip rate and agreement with the trusted judge; the bases by θ̂ with π and the certified set —
//! and three plots: θ̂ ± 2 sd, π by base, and recall@k (or the spend) against spend over the
//! refits of panel_fits.jsonl.
//!
//! It reads only the run folder: result.json (docs/schemas/panel-result.schema.json) and
//! panel_fits.jsonl.

use super::compare::{CompareError, PanelRunDir};
use super::page::{Content, Plot};
use super::plots::{self, Interval, LineChart, Series};
use super::schema::CertifiedTopk;
use serde::Deserialize;
use std::path::Path;

/// The parts of a panel run's result.json the report shows.
#[derive(Debug, Deserialize)]
struct PanelResultDoc {
    name: String,
    stop_reason: String,
    judges: Vec<JudgeSpendDoc>,
    comparisons: usize,
    spend_usd: f64,
    possibly_billed: usize,
    #[serde(default)]
    overrun: Option<crate::report::schema::OverrunReport>,
    #[serde(default)]
    overrun_judges: Vec<String>,
    /// Absent in results of older versions (their `spend_usd` was the folder's).
    #[serde(default)]
    folder_spend: Option<FolderSpendDoc>,
    max_usd: Option<f64>,
    topk: Vec<String>,
    #[serde(default)]
    topk_tied: Vec<String>,
    recall_at_k: Option<f64>,
    gold_topk: Option<Vec<String>>,
    #[serde(default)]
    gold_tied: Vec<String>,
    certified: CertifiedTopk,
    fit: PanelFitDoc,
}

impl PanelResultDoc {
    /// The gold top-k with its tie, when the pool has gold quality.
    fn gold(&self) -> Option<crate::report::RecallTarget> {
        self.gold_topk.clone().map(|topk| crate::report::RecallTarget { topk, tied: self.gold_tied.clone() })
    }
}

#[derive(Debug, Deserialize)]
struct FolderSpendDoc {
    spend_usd: f64,
    other_usd: f64,
    #[serde(default)]
    fingerprint_usd: f64,
    #[serde(default)]
    gate_trusted_usd: f64,
}

#[derive(Debug, Deserialize)]
struct JudgeSpendDoc {
    name: String,
    judge: String,
    trusted: bool,
    queries: usize,
    spend_usd: f64,
}

#[derive(Debug, Deserialize)]
struct PanelFitDoc {
    pool_id: String,
    k: usize,
    bases: Vec<String>,
    covariates: Vec<String>,
    judges: Vec<JudgeFitDoc>,
    theta: Vec<f64>,
    sd: Vec<f64>,
    membership: Vec<f64>,
    has_trusted: bool,
    weak_anchor: Option<String>,
    #[serde(default)]
    notes: Vec<String>,
}

#[derive(Debug, Deserialize)]
struct JudgeFitDoc {
    name: String,
    reference: bool,
    kappa: Est,
    c: Vec<Est>,
    c_profile_nats: Vec<Option<f64>>,
    scale: Est,
    both_orders: usize,
    flip_rate: Option<f64>,
    shared_with_trusted: usize,
    agreement_with_trusted: Option<f64>,
}

#[derive(Debug, Deserialize)]
struct Est {
    value: f64,
    sd: f64,
}

/// A panel run's report: its content and plots (file name, caption, SVG), from the run folder.
///
/// # Errors
/// [`CompareError::Read`] naming result.json (and the field) or panel_fits.jsonl.
pub fn panel_report(dir: &Path) -> Result<(Content, Vec<Plot>), CompareError> {
    let rp = dir.join("result.json");
    let text = std::fs::read_to_string(&rp).map_err(|e| CompareError::Read { path: rp.clone(), msg: e.to_string() })?;
    let r: PanelResultDoc = serde_json::from_str(crate::domain::text::strip_bom_str(&text)).map_err(|e| {
        CompareError::Read { path: rp.clone(), msg: format!("not the result of a judge panel run ({e})") }
    })?;
    if let Some(msg) = crate::report::compare::panel_result_problem(&text) {
        return Err(CompareError::Read { path: rp, msg });
    }
    let fits = PanelRunDir::load(dir)?.fits;
    let mut c = content(&r);
    if r.gold_topk.is_some() && fits.is_empty() {
        c.note(format!(
            "no refit in {}: recall against spend is not drawn",
            dir.join(crate::report::PANEL_FITS).display()
        ));
    }
    Ok((c, plot(&r, &fits)?))
}

/// The bases best θ̂ first (ties by name).
fn order(r: &PanelResultDoc) -> Vec<usize> {
    let f = &r.fit;
    let mut o: Vec<usize> = (0..f.bases.len()).collect();
    o.sort_by(|&a, &b| f.theta[b].total_cmp(&f.theta[a]).then_with(|| f.bases[a].cmp(&f.bases[b])));
    o
}

fn content(r: &PanelResultDoc) -> Content {
    let f = &r.fit;
    let k = f.k;
    let names: Vec<String> =
        r.judges.iter().map(|j| if j.trusted { format!("{} (trusted)", j.name) } else { j.name.clone() }).collect();
    let mut facts = vec![format!(
        "pool `{}`, k = {k}, judge panel of {}: {}; stopped: {}",
        f.pool_id,
        r.judges.len(),
        names.join(", "),
        r.stop_reason
    )];
    let cert = &r.certified;
    // What the data certify, in the words of the summary and of a single judge's report.
    facts.extend(
        crate::report::summary::certified_set_lines(k, &r.certified, None).lines().map(|l| l.trim().to_owned()),
    );
    let mut top = if !r.topk_tied.is_empty() {
        crate::report::summary::tied_line(k, &r.topk, &r.topk_tied)
    } else if r.comparisons == 0 || r.topk.is_empty() {
        format!("top-{k} by θ̂: none claimed (no verdict: the ranking is the prior)")
    } else {
        format!("top-{k} by θ̂: {}", r.topk.join(", "))
    };
    if let (Some(rec), Some(g)) = (r.recall_at_k, r.gold()) {
        top.push_str(&format!("; recall@{k} against the gold top-{k} ({}): {rec:.2}", g.describe()));
    }
    facts.push(top);
    let trusted = r.judges.iter().find(|j| j.trusted).map(|j| j.name.as_str());
    facts.push(match (trusted, &f.weak_anchor) {
        (Some(t), None) => format!(
            "identification: every other judge's ĉ is identified relative to the trusted judge `{t}` where its profile is curved (docs/model.md §8)"
        ),
        (Some(t), Some(why)) => format!(
            "identification: the trusted judge `{t}` cannot anchor the other judges' ĉ ({why}); where a covariate moves with quality only differences between the judges' c are identified; each judge's profile likelihood says which ĉ the verdicts inform (docs/model.md §8)"
        ),
        (None, _) => "identification: no trusted judge, so where a covariate moves with quality only differences between the judges' c are identified, not each c; each judge's profile likelihood says which ĉ the verdicts inform (docs/model.md §8)".into(),
    });
    let reference = f.judges.iter().find(|j| j.reference).map_or("–", |j| j.name.as_str());
    facts.push(format!("θ̂ is in the logits of the scale reference `{reference}` (ŝ = 1)"));
    let of_max = r.max_usd.map(|m| format!(" of max_usd ${m}")).unwrap_or_default();
    let spend_line = match &r.folder_spend {
        Some(f) if f.other_usd > 5e-13 => format!(
            "spend: ${:.6} by the panel's judges; the run folder's books hold ${:.6}{of_max} (of it {})",
            r.spend_usd,
            f.spend_usd,
            crate::report::summary::other_spend_parts(f.other_usd, f.fingerprint_usd, f.gate_trusted_usd, &|x| {
                format!("${x:.6}")
            })
        ),
        _ => format!("spend: ${:.6}{of_max}", r.spend_usd),
    };
    facts.push(if r.possibly_billed > 0 {
        format!("{spend_line}, {} request(s) possibly billed counted at their worst case", r.possibly_billed)
    } else {
        spend_line
    });
    let books = r.folder_spend.as_ref().map_or(r.spend_usd, |f| f.spend_usd);
    facts.extend(crate::report::summary::budget_passed(books, r.max_usd, r.overrun.is_some()));
    // Replies billed above their reservations, said as the run's summary says them.
    if let Some(o) = &r.overrun {
        facts.push(crate::report::summary::panel_overrun_line(o, &r.overrun_judges));
    }

    let mut head: Vec<String> =
        ["judge", "trusted", "description", "queries", "spend (USD)", "κ̂ (logits)"].map(String::from).to_vec();
    for c in &f.covariates {
        head.push(format!("ĉ {c}"));
        head.push(format!("profile {c} (nats)"));
    }
    head.extend(["ŝ", "flip rate", "agreement with trusted"].map(String::from));
    let pm = |e: &Est| format!("{:.3} ± {:.3}", e.value, e.sd);
    let judges = r
        .judges
        .iter()
        .map(|s| {
            let fit = f.judges.iter().find(|j| j.name == s.name);
            let mut row = vec![
                s.name.clone(),
                if s.trusted { "yes".into() } else { String::new() },
                s.judge.clone(),
                s.queries.to_string(),
                format!("{:.6}", s.spend_usd),
                fit.map_or("–".into(), |j| pm(&j.kappa)),
            ];
            for t in 0..f.covariates.len() {
                match fit.and_then(|j| j.c.get(t).map(|c| (c, j.c_profile_nats.get(t).copied().flatten()))) {
                    Some((c, range)) => {
                        row.push(pm(c));
                        row.push(match range {
                            Some(x) if x < crate::model::profile::PRIOR_SELECTED_NATS => {
                                format!("{} (prior-selected)", crate::report::table::nats(x))
                            }
                            Some(x) => format!("{} (identified)", crate::report::table::nats(x)),
                            None => "–".into(),
                        });
                    }
                    // A trusted judge has no c.
                    None => row.extend(["–".to_string(), "–".to_string()]),
                }
            }
            row.push(fit.map_or("–".into(), |j| if j.reference { "1 (reference)".into() } else { pm(&j.scale) }));
            row.push(
                fit.and_then(|j| j.flip_rate.map(|x| format!("{x:.2} of {}", j.both_orders))).unwrap_or("–".into()),
            );
            row.push(
                fit.and_then(|j| j.agreement_with_trusted.map(|x| format!("{x:.2} of {}", j.shared_with_trusted)))
                    .unwrap_or("–".into()),
            );
            row
        })
        .collect();
    let set_of = |id: &String| {
        if cert.withheld.is_some() {
            "–"
        } else if cert.inside.contains(id) {
            "in"
        } else if cert.outside.contains(id) {
            "out"
        } else {
            "?"
        }
    };
    let gold = r.gold_topk.as_ref();
    let mut rhead = ["rank", "base", "θ̂", "sd", "π", "top-k", "set"].map(String::from).to_vec();
    if gold.is_some() {
        rhead.push("gold top-k".into());
    }
    let rows = order(r)
        .into_iter()
        .enumerate()
        .map(|(i, b)| {
            let id = &f.bases[b];
            let tick = |yes: bool| if yes { "✓".to_string() } else { String::new() };
            let mut row = vec![
                (i + 1).to_string(),
                id.clone(),
                format!("{:.3}", f.theta[b]),
                format!("{:.3}", f.sd[b]),
                format!("{:.3}", f.membership[b]),
                tick(r.topk.contains(id)),
                set_of(id).to_string(),
            ];
            if let Some(g) = gold {
                // `=`: a gold tie at the k-th place, whose members share its remaining places.
                row.push(if r.gold_tied.contains(id) { "=".into() } else { tick(g.contains(id)) });
            }
            row
        })
        .collect();
    let tables = vec![
        ("Judges".to_string(), head, judges),
        (format!("Ranking by θ̂ (shared by the judges; π = P(in top-{k}))"), rhead, rows),
    ];
    let mut notes = f.notes.clone();
    if !f.has_trusted {
        notes.push("no judge is trusted: each ĉ_j above is one of many equally good splits; compare the judges' ĉ with each other, not with 0".into());
    }
    Content::new(format!("Panel run `{}` — top-{k} report", r.name), facts, tables, notes)
}

fn plot(r: &PanelResultDoc, fits: &[(f64, usize, Vec<String>)]) -> Result<Vec<Plot>, CompareError> {
    let f = &r.fit;
    let k = f.k;
    let gold = r.gold().unwrap_or_default();
    let o = order(r);
    let items: Vec<Interval> = o
        .iter()
        .map(|&b| Interval {
            label: f.bases[b].clone(),
            value: f.theta[b],
            lo: f.theta[b] - 2.0 * f.sd[b],
            hi: f.theta[b] + 2.0 * f.sd[b],
            highlight: r.topk.contains(&f.bases[b]),
            marked: gold.topk.contains(&f.bases[b]) || gold.tied.contains(&f.bases[b]),
        })
        .collect();
    let mut out = vec![(
        "theta.svg".to_string(),
        format!("θ̂ ± 2 sd of the panel's shared quality, bases by rank; the top-{k} in colour"),
        plots::interval_chart(
            &format!("θ̂ ± 2 sd by base (judge panel; top-{k} highlighted)"),
            "θ̂ (logits of the scale reference)",
            &items,
            (&format!("top-{k}"), &format!("gold top-{k}")),
        )?,
    )];
    let bars: Vec<(String, f64, bool)> =
        o.iter().map(|&b| (f.bases[b].clone(), f.membership[b], r.topk.contains(&f.bases[b]))).collect();
    out.push((
        "membership.svg".to_string(),
        format!("π by base, bases by rank; the top-{k} in colour"),
        plots::bar_chart(&format!("top-{k} membership π by base (judge panel)"), "π = P(in top-k)", &bars)?,
    ));
    if !gold.topk.is_empty() && !fits.is_empty() {
        let chart = LineChart {
            title: format!("recall@{k} of the top-{k} by θ̂ at every refit against spend"),
            x_label: "cumulative spend (USD)".into(),
            y_label: format!("recall@{k} vs the gold top-{k}"),
            series: vec![Series {
                name: "panel".into(),
                points: fits
                    .iter()
                    .filter_map(|(usd, _, topk)| gold.recall(topk, gold.topk.len()).map(|r| (*usd, r)))
                    .collect(),
                err: None,
            }],
            hlines: vec![],
            vlines: vec![],
            y_range: Some((0.0, 1.0)),
            legend_upper: false,
        };
        out.push((
            "recall_vs_spend.svg".to_string(),
            format!("recall@{k} against the gold top-{k} at every refit (panel_fits.jsonl), against the spend so far"),
            plots::line_chart(&chart)?,
        ));
    }
    Ok(out)
}

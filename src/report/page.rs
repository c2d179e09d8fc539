//! `topk-judge report RUN`: report.md and a self-contained report.html (SVGs inlined) for a run
//! folder: the ranking with θ̂ ± 2 sd intervals, top-k membership π, the position effect κ̂, the
//! bias coefficients ĉ with their identifiability verdict (docs/model.md §2, §5), spend, and three plots:
//! θ̂ ± 2 sd with the top-k marked, π by item, and π of the boundary items against comparisons
//! (from fits.jsonl).
//!
//! **Identifiability verdict** per covariate: the profile-likelihood range over ĉ ± 1 and its
//! verdict that every run stores in result.json (docs/model.md §5, [`crate::model::profile`]): below
//! 1e-3 nats ĉ is prior-selected — the comparisons identify only φ = θ + cᵀx and κ (docs/model.md §2,
//! paper Prop. 2) — otherwise it is identified by the design (paired renderings, valid only if
//! the renderings of a base share quality).
//!
//! **Boundary items** of the π plot: the bases at final ranks k − 1, k, k + 1 and k + 2.

use super::compare::{CompareError, RunDir, membership_paths};
use super::md;
use super::plots::{self, Interval, LineChart, Series};
use crate::analysis::ranking::RankingKind;
use std::fmt::Write;

/// The identifiability verdict of one bias coefficient, as reported.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct IdentRow {
    /// Name of the covariate x_j whose bias coefficient c_j the row is about (e.g. `words`).
    pub covariate: String,
    /// ĉ (logits per covariate unit).
    pub c: f64,
    /// Posterior sd of ĉ.
    pub c_sd: f64,
    /// Profile-likelihood range over ĉ ± 1 (nats), when computed.
    pub range_nats: Option<f64>,
    /// Whether the comparisons inform c (range ≥ 1e-3 nats).
    pub identified: bool,
    /// The stored verdict in words with what it means for the ranking, or why there is none (no
    /// variation in the pool, not computed).
    pub verdict: String,
}

/// The identifiability rows of a run: result.json's `identifiability` entries (profile range and
/// verdict, docs/model.md §5) with what a prior-selected coefficient means.
pub fn identifiability(run: &RunDir) -> Vec<IdentRow> {
    let r = &run.result;
    r.fit.c.iter()
        .map(|(name, &c)| {
            let c_sd = r.fit.c_sd.get(name).copied().unwrap_or(f64::NAN);
            let e = r.fit.identifiability.get(name);
            let range_nats = e.and_then(|e| e.range_nats);
            let identified = e.is_some_and(|e| e.identified());
            let verdict = if r.no_variation.contains(name) {
                "no variation in this pool: its column is zero and ĉ is the prior mean 0".to_string()
            } else {
                match e {
                    // The caveat of what identifies it: a system's answers across prompts, or the
                    // renderings of a base (as the run's notes say it).
                    Some(e) if e.identified() && r.fit.reporting.systems.is_some() => format!(
                        "{}; valid only if a system's quality does not change with {name} from prompt to prompt (docs/systems.md)",
                        e.verdict_text()
                    ),
                    Some(e) if e.identified() => {
                        format!(
                            "{}; valid only if the renderings of a base really share quality (docs/model.md §6)",
                            e.verdict_text()
                        )
                    }
                    Some(e) if e.range_nats.is_some() => format!(
                        "{} — the comparisons identify only φ = θ + c·x and κ (docs/model.md §2, paper Prop. 2), so ĉ is \
                         the prior's pick (λ_b), not an estimate, and a \"debiased\" ranking rests on the \
                         assumption that quality is uncorrelated with {name}",
                        e.verdict_text()
                    ),
                    Some(e) => e.verdict_text(),
                    None => "not computed (result.json has no identifiability entry)".to_string(),
                }
            };
            IdentRow { covariate: name.clone(), c, c_sd, range_nats, identified, verdict }
        })
        .collect()
}

/// The report's three plots as (file name, caption, SVG).
///
/// # Errors
/// [`CompareError::Plot`].
pub fn report_plots(run: &RunDir) -> Result<Vec<(String, String, String)>, CompareError> {
    let r = &run.result;
    let mut out = Vec::new();
    let apparent = r.fit.reporting.reported == RankingKind::Apparent;
    let (sym, what) =
        if apparent { ("φ̂", "apparent quality, reported") } else { ("θ̂", "bias-corrected, reported") };
    let (items, bars) = plotted(run);
    let svg = plots::interval_chart(
        &format!("{sym} ± 2 sd by item ({what}; point top-{} highlighted)", r.k),
        &format!("{sym} (logits)"),
        &items,
        (&format!("point top-{}", r.k), &format!("gold top-{}", r.k)),
    )?;
    out.push((
        "theta.svg".into(),
        format!("{sym} ± 2 sd ({what}), items by rank; the reported point top-{} in colour", r.k),
        svg,
    ));
    let svg = plots::bar_chart(&format!("top-{} membership π by item ({what})", r.k), "π = P(in top-k)", &bars)?;
    out.push((
        "membership.svg".into(),
        format!("π ({what}) by item, items by rank; the reported point top-{} in colour", r.k),
        svg,
    ));
    // fits.jsonl holds π by θ̂ at each refit: under an apparent report that is the ranking
    // beside it, said so, its boundary items taken by their bias-corrected rank.
    let paths = membership_paths(run);
    let mut by_theta: Vec<&crate::report::RankRow> = r.fit.ranking.iter().collect();
    if apparent {
        by_theta.sort_by_key(|row| row.rank_corrected);
    }
    let lo = r.k.saturating_sub(2);
    let hi = (r.k + 2).min(by_theta.len());
    let series: Vec<Series> = by_theta[lo..hi]
        .iter()
        .filter_map(|row| {
            paths.get(&row.id).map(|p| Series {
                name: format!("#{} {}", if apparent { row.rank_corrected } else { row.rank }, row.id),
                points: p.iter().map(|(n, q)| (*n as f64, *q)).collect(),
                err: None,
            })
        })
        .collect();
    if !series.is_empty() {
        let which = if apparent { "by θ̂ (bias-corrected ranking, beside the reported one), " } else { "" };
        let chart = LineChart {
            title: format!("π {which}of the boundary items (final ranks {}–{}) vs comparisons", lo + 1, hi),
            x_label: "valid comparisons fitted".into(),
            y_label: "π = P(in top-k)".into(),
            series,
            hlines: vec![0.5],
            vlines: vec![],
            y_range: Some((0.0, 1.0)),
            legend_upper: false,
        };
        // fits.jsonl keeps π of θ̂ at each refit, not of φ̂: with the apparent ranking reported,
        // the caption says the plot is of the other ranking, as its title does.
        let caption = if apparent {
            "π by θ̂ of the items around the top-k boundary of the bias-corrected ranking (shown beside the reported apparent one) at every refit: fits.jsonl keeps π of θ̂ only, so these π differ from the table's"
        } else {
            "π of the items around the top-k boundary at every refit"
        };
        out.push(("boundary_pi.svg".into(), caption.into(), plots::line_chart(&chart)?));
    }
    Ok(out)
}

/// What the report's first two plots draw: per item (best first) the reported ranking's value
/// ± 2 sd, and its π, each marked when the item is in the reported point top-k (what the table
/// and the summary report).
pub fn plotted(run: &RunDir) -> (Vec<Interval>, Vec<(String, f64, bool)>) {
    let r = &run.result;
    let apparent = r.fit.reporting.reported == RankingKind::Apparent;
    let items = r
        .fit
        .ranking
        .iter()
        .map(|row| {
            let (v, sd) = if apparent { (row.phi, row.phi_sd) } else { (row.theta, row.sd) };
            Interval {
                label: row.id.clone(),
                value: v,
                lo: v - 2.0 * sd,
                hi: v + 2.0 * sd,
                highlight: row.in_topk,
                // A gold tie at the boundary: each member shares its places, so each is boxed.
                marked: row.gold_topk == Some(true) || row.gold_tied,
            }
        })
        .collect();
    let bars = r
        .fit
        .ranking
        .iter()
        .map(|row| (row.id.clone(), if apparent { row.membership_apparent } else { row.membership }, row.in_topk))
        .collect();
    (items, bars)
}

fn fmt_opt(v: Option<f64>, digits: usize) -> String {
    v.map(|x| format!("{x:.digits$}")).unwrap_or_else(|| "–".into())
}

/// Escape text for HTML.
pub fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// One plot of a report: its file name, caption and SVG text.
pub type Plot = (String, String, String);

/// The report's content as (title, header lines, tables); rendered to Markdown and HTML.
pub struct Content {
    title: String,
    facts: Vec<String>,
    tables: Vec<(String, Vec<String>, Vec<Vec<String>>)>,
    notes: Vec<String>,
}

impl Content {
    /// A report of `title` (Markdown inline code in backticks), its fact lines, tables (title,
    /// header, rows) and notes.
    pub fn new(
        title: String,
        facts: Vec<String>,
        tables: Vec<(String, Vec<String>, Vec<Vec<String>>)>,
        notes: Vec<String>,
    ) -> Self {
        Self { title, facts, tables, notes }
    }

    /// One more note.
    pub fn note(&mut self, note: String) {
        self.notes.push(note);
    }
}

/// The systems block of a run over many prompts (docs/systems.md "Results"), in the ranking the
/// run reports (`ranked_by`): φ̂ ± sd and its π when that is the apparent ranking, then θ̂ ± sd,
/// π, the win rate against the reference (at equal covariates, from θ̂) with its 95 % interval,
/// and the counts.
fn systems_table(sys: &crate::analysis::systems::SystemsReport) -> (String, Vec<String>, Vec<Vec<String>>) {
    let apparent = sys.ranked_by == Some(crate::analysis::ranking::RankingKind::Apparent);
    let lead: &[&str] = if apparent { &["rank", "system", "φ̂", "sd (φ)", "π (φ)"] } else { &["rank", "system"] };
    let head = lead
        .iter()
        .chain(&["θ̂", "sd", "π", "win rate", "95 % interval", "comparisons", "prompts", "gold"])
        .map(|s| (*s).to_owned())
        .collect();
    let rows = sys
        .rows
        .iter()
        .map(|x| {
            let mut row = vec![x.rank.to_string(), x.system.clone()];
            if apparent {
                row.extend([fmt_opt(x.phi, 3), fmt_opt(x.phi_sd, 3), fmt_opt(x.membership_apparent, 3)]);
            }
            row.extend([
                format!("{:.3}", x.theta),
                format!("{:.3}", x.sd),
                format!("{:.3}", x.membership),
                format!("{:.3}", x.win_rate),
                format!("[{:.3}, {:.3}]", x.win_rate_lo, x.win_rate_hi),
                x.comparisons.to_string(),
                x.prompts.to_string(),
                fmt_opt(x.gold, 3),
            ]);
            row
        })
        .collect();
    (
        format!(
            "Systems over {} prompts, {} (θ̂ at equal covariates; win rate against {}, 95 % interval)",
            sys.prompts,
            if apparent { "in the reported ranking by apparent quality φ̂" } else { "by bias-corrected θ̂" },
            sys.reference
        ),
        head,
        rows,
    )
}

/// Gather the report's content from a run folder and its identifiability rows.
pub fn content(run: &RunDir, ident: &[IdentRow]) -> Content {
    let r = &run.result;
    let mut facts = vec![format!(
        "pool `{}`, k = {}, {} model, judge `{}`, strategy {}, stopped: {}",
        r.pool_id,
        r.k,
        crate::report::table::name(&r.model),
        r.judge,
        crate::report::table::name(&r.strategy),
        crate::report::table::name(&r.stop_reason)
    )];
    let rep = &r.fit.reporting;
    // What the data certify leads, as in the summary.
    facts.extend(crate::report::summary::certified_lines(r.k, rep).lines().map(|l| l.trim().to_owned()));
    if let Some(why) = crate::report::summary::no_ranking(r) {
        facts.push(format!("no ranking: {why}"));
    }
    let both = r.model == crate::model::summary::ModelKind::BiasAware && !r.fit.c.is_empty();
    if both {
        facts.push(format!(
            "reported ranking: {} (`report_ranking: {}`): {}",
            rep.reported.what(),
            crate::report::table::name(&rep.report_ranking),
            rep.reported_reason
        ));
    }
    let top_line = |label: &str, v: &crate::report::schema::TopkView| {
        let mut l = format!("{label}top-{}: ", r.k);
        if r.valid == 0 {
            l.push_str("none claimed (no valid comparison: the ranking is the prior)");
            return l;
        }
        // A base never compared holds its place by the prior alone, as the run's summary says.
        let never = &rep.graph.never_compared;
        let mark = |ids: &[String]| super::summary::never_compared_marked(ids, never);
        l.push_str(&super::summary::topk_members(r.k, &mark(&v.topk), &v.tied));
        if let Some(rec) = v.recall_at_k {
            // A gold tie at the boundary shares its places: its members are named as such, not
            // the ones the point gold top-k happens to take.
            let gold = crate::report::RecallTarget::gold(&r.fit).map(|t| t.describe()).unwrap_or_default();
            let unplaced = v.topk.iter().filter(|b| never.contains(b)).count();
            let _ = write!(
                l,
                "; recall@{} against the gold top-{} ({gold}): {rec:.2}{}",
                r.k,
                r.k,
                super::summary::prior_share_note(r.k, unplaced, v.topk.len())
            );
        }
        l
    };
    let reported_view = crate::report::schema::TopkView {
        topk: r.fit.topk.clone(),
        tied: rep.topk_tied.clone(),
        recall_at_k: r.fit.recall_at_k,
    };
    if both {
        let (other, v) = match rep.reported {
            crate::analysis::ranking::RankingKind::Apparent => ("bias-corrected", &rep.corrected),
            crate::analysis::ranking::RankingKind::Corrected => ("apparent", &rep.apparent),
        };
        facts.push(top_line(&format!("reported ({}) ", rep.reported.name()), &reported_view));
        facts.push(top_line(&format!("{other} (beside) "), v));
    } else {
        facts.push(top_line("", &reported_view));
    }
    if let Some(g) = &r.gate {
        facts.push(format!("trusted-anchor gate (`{}`): {}", g.file.display(), g.decision.text()));
    }
    if rep.graph.components > 1 {
        facts.push(format!("comparison graph: {}", rep.graph.summary_text()));
    }
    facts.push(format!(
        "position effect κ̂ = {:.3} ± {:.3} logits (> 0 favours the first-shown answer; identified by the order variation within pairs)",
        r.fit.kappa, r.fit.kappa_sd
    ));
    // What the spend holds besides billed tokens, and replies billed above max_tokens: said as
    // the summary says them, so the token columns need not explain the whole spend.
    for part in crate::report::summary::spend_includes(r) {
        facts.push(format!("spend {} includes {part}", crate::report::table::usd(r.spend_usd)));
    }
    // What the folder's books hold beside the run's verdicts (a gate's trusted judge: often
    // most of the money), as the summary says it.
    facts.extend(crate::report::summary::folder_line(&r.folder_spend));
    facts.extend(crate::report::summary::budget_passed(
        r.folder_spend.spend_usd,
        r.folder_spend.max_usd,
        r.overrun.is_some(),
    ));
    if let Some(o) = &r.overrun {
        facts.push(crate::report::summary::overrun_line(o));
    }
    let spend = (
        "Spend".to_string(),
        [
            "comparisons",
            "valid",
            "invalid",
            "failed",
            "spend (USD)",
            "prompt tokens",
            "output tokens (reasoning included)",
            "of them reasoning",
        ]
        .map(String::from)
        .to_vec(),
        vec![vec![
            r.comparisons.to_string(),
            r.valid.to_string(),
            r.invalid.to_string(),
            r.failed.to_string(),
            format!("{:.4}", r.spend_usd),
            r.usage.prompt_tokens.to_string(),
            r.usage.output_tokens().to_string(),
            r.usage.reasoning_tokens.to_string(),
        ]],
    );
    let has_gold = r.fit.ranking.iter().any(|x| x.gold.is_some());
    // The reported ranking's columns first, then what is certified, then the other ranking.
    let apparent_first = rep.reported == crate::analysis::ranking::RankingKind::Apparent;
    let cert = &rep.certified;
    let set_of = |id: &String| {
        if cert.inside.contains(id) {
            "in"
        } else if cert.outside.contains(id) {
            "out"
        } else {
            "?"
        }
    };
    let phi_head = ["φ̂", "sd(φ)", "π(φ)", "apparent top-k"];
    let theta_head = ["θ̂", "sd", "π", "corrected top-k"];
    let (first_head, second_head) = if apparent_first { (phi_head, theta_head) } else { (theta_head, phi_head) };
    let mut head: Vec<String> = ["rank", "item"].iter().map(|h| h.to_string()).collect();
    head.extend(first_head.iter().map(|h| h.to_string()));
    head.extend(["set", "rank90", "tier"].map(String::from));
    head.extend(second_head.iter().map(|h| format!("{h} (beside)")));
    if has_gold {
        head.push("gold quality".into());
        head.push("gold top-k".into());
    }
    let rows = r
        .fit
        .ranking
        .iter()
        .map(|x| {
            let tick = |b: bool| if b { "✓".to_string() } else { String::new() };
            let phi = vec![
                format!("{:.3}", x.phi),
                format!("{:.3}", x.phi_sd),
                format!("{:.3}", x.membership_apparent),
                tick(x.in_apparent_topk),
            ];
            let theta = vec![
                format!("{:.3}", x.theta),
                format!("{:.3}", x.sd),
                format!("{:.3}", x.membership),
                tick(x.in_corrected_topk),
            ];
            let (first, second) = if apparent_first { (phi, theta) } else { (theta, phi) };
            let mut v = vec![if x.tied { format!("{}=", x.rank) } else { x.rank.to_string() }, x.id.clone()];
            v.extend(first);
            v.push(if cert.withheld.is_some() { "–".into() } else { set_of(&x.id).to_string() });
            v.push(x.rank_interval.map_or(String::new(), |(lo, hi)| format!("{lo}–{hi}")));
            v.push(x.tier.map_or(String::new(), |t| t.to_string()));
            v.extend(second);
            if has_gold {
                v.push(fmt_opt(x.gold, 3));
                // `=`: a gold tie at the boundary, whose members share its remaining places.
                v.push(if x.gold_tied {
                    "= (tie)".into()
                } else if x.gold_topk == Some(true) {
                    "✓".into()
                } else {
                    String::new()
                });
            }
            v
        })
        .collect();
    let ranking =
        (format!("Ranking (reported: {}; rank = reported rank, = marks a tie)", rep.reported.what()), head, rows);
    let bias = (
        "Bias coefficients".to_string(),
        ["covariate", "ĉ", "sd", "unit", "profile range (nats)", "identifiability"].map(String::from).to_vec(),
        ident
            .iter()
            .map(|i| {
                vec![
                    i.covariate.clone(),
                    format!("{:.3}", i.c),
                    format!("{:.3}", i.c_sd),
                    crate::report::table::coef_unit(
                        &i.covariate,
                        r.fit.reporting.transforms.get(&i.covariate).copied(),
                    ),
                    i.range_nats.map(crate::report::table::nats).unwrap_or_else(|| "–".into()),
                    i.verdict.clone(),
                ]
            })
            .collect(),
    );
    let mut tables = vec![spend, ranking];
    if !ident.is_empty() {
        tables.push(bias);
    }
    if let Some(sys) = &r.fit.reporting.systems {
        tables.push(systems_table(sys));
    }
    let mut notes = r.fit.notes.clone();
    // The boundary plot is drawn from the refits: said when there are none to draw.
    notes.extend(run.refits_note.clone());
    Content { title: format!("Run `{}` — top-{} report", r.name, r.k), facts, tables, notes }
}

/// report.md text; the plots are linked as files next to it.
pub fn markdown(c: &Content, plots: &[(String, String, String)]) -> String {
    let mut s = format!("# {}\n\n", md::prose(&c.title));
    for f in &c.facts {
        let _ = writeln!(s, "- {}", md::prose(f));
    }
    for (title, head, rows) in &c.tables {
        let _ = writeln!(s, "\n## {}\n", md::text(title));
        let _ = writeln!(s, "| {} |", head.iter().map(|h| md::text(h)).collect::<Vec<_>>().join(" | "));
        let _ = writeln!(s, "|{}", "---|".repeat(head.len()));
        for r in rows {
            let _ = writeln!(s, "| {} |", r.iter().map(|x| md::text(x)).collect::<Vec<_>>().join(" | "));
        }
    }
    if !c.notes.is_empty() {
        s.push_str("\n## Notes\n\n");
        for n in &c.notes {
            let _ = writeln!(s, "- {}", md::prose(n));
        }
    }
    s.push_str("\n## Plots\n\n");
    for (file, caption, _) in plots {
        let _ = writeln!(s, "![{}]({file})\n", md::text(caption));
    }
    s
}

/// report.html: one file, plots inlined as SVG, no external resources.
pub fn html(c: &Content, plots: &[(String, String, String)]) -> String {
    let code = |t: &str| {
        // `x` in the facts → <code>x</code>.
        let mut out = String::new();
        for (i, part) in escape(t).split('`').enumerate() {
            if i % 2 == 1 {
                let _ = write!(out, "<code>{part}</code>");
            } else {
                out.push_str(part);
            }
        }
        out
    };
    let mut s = String::from("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    // Self-contained by construction: the page may load nothing, from anywhere.
    s.push_str(&format!("<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">\n"));
    let _ = writeln!(s, "<title>{}</title>", escape(&c.title.replace('`', "")));
    s.push_str(
        "<style>body{font-family:system-ui,sans-serif;max-width:70rem;margin:2rem auto;padding:0 1rem;color:#222}\
         table{border-collapse:collapse;margin:1rem 0}th,td{border:1px solid #ccc;padding:.25rem .5rem;text-align:right}\
         td:nth-child(2),th:nth-child(2),td.t{text-align:left}figure{margin:1.5rem 0}figcaption{color:#555}\
         code{background:#f3f3f3;padding:0 .2rem}</style>\n</head>\n<body>\n",
    );
    let _ = writeln!(s, "<h1>{}</h1>\n<ul>", code(&c.title));
    for f in &c.facts {
        let _ = writeln!(s, "<li>{}</li>", code(f));
    }
    s.push_str("</ul>\n");
    for (title, head, rows) in &c.tables {
        let _ = writeln!(s, "<h2>{}</h2>\n<table>\n<thead><tr>", escape(title));
        for h in head {
            let _ = write!(s, "<th>{}</th>", escape(h));
        }
        s.push_str("</tr></thead>\n<tbody>\n");
        for r in rows {
            s.push_str("<tr>");
            for x in r {
                // Numbers right-aligned (the default), words and long notes left-aligned.
                let numeric = x
                    .trim()
                    .trim_start_matches(['$', '-', '+', '±'])
                    .chars()
                    .next()
                    .is_none_or(|ch| ch.is_ascii_digit() || ch == '–' || ch == '.');
                if numeric {
                    let _ = write!(s, "<td>{}</td>", escape(x));
                } else {
                    let _ = write!(s, "<td class=\"t\">{}</td>", escape(x));
                }
            }
            s.push_str("</tr>\n");
        }
        s.push_str("</tbody>\n</table>\n");
    }
    if !c.notes.is_empty() {
        s.push_str("<h2>Notes</h2>\n<ul>\n");
        for n in &c.notes {
            let _ = writeln!(s, "<li>{}</li>", escape(n));
        }
        s.push_str("</ul>\n");
    }
    s.push_str("<h2>Plots</h2>\n");
    for (_, caption, svg) in plots {
        let svg = svg.find("<svg").map(|i| &svg[i..]).unwrap_or(svg);
        let _ = writeln!(s, "<figure>\n{svg}\n<figcaption>{}</figcaption>\n</figure>", escape(caption));
    }
    s.push_str(SELF_CHECK);
    s.push_str("</body>\n</html>\n");
    s
}

/// The page's Content-Security-Policy: inline styles and the self-check script only, no
/// request of any kind (images, fonts, scripts, connections).
const CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'";

/// After loading, the page records on an empty element how many plots it has, how many the
/// browser laid out with a non-zero size, and how many resources it loaded (always 0): a
/// reader sees nothing, a browser test reads it (tests/reports.rs).
const SELF_CHECK: &str = "<p id=\"self-check\" hidden></p>\n<script>addEventListener('load',function(){var s=document.querySelectorAll('figure svg'),n=0;for(var i=0;i<s.length;i++){var b=s[i].getBoundingClientRect();if(b.width>0&&b.height>0&&s[i].querySelector('path,polyline,rect,circle'))n++}var e=document.getElementById('self-check');e.setAttribute('data-plots',s.length);e.setAttribute('data-rendered',n);e.setAttribute('data-resources',performance.getEntriesByType('resource').length)})</script>\n";

//! The terminal ranking table.

use super::RankRow;
use std::fmt::Write;

/// Render the ranking as a fixed-width table.
pub fn ranking_table(rows: &[RankRow]) -> String {
    let w = rows.iter().map(|r| r.id.chars().count()).max().unwrap_or(2).max(4);
    let has_gold = rows.iter().any(|r| r.gold.is_some());
    let mut s = String::new();
    let _ = write!(s, "{:>4}  {:<w$}  {:>8}  {:>6}  {:>6}  {:>8}  top-k", "rank", "item", "theta", "sd", "pi", "phi");
    if has_gold {
        let _ = write!(s, "  {:>6}  gold-top-k", "gold");
    }
    s.push('\n');
    for r in rows {
        let _ = write!(
            s,
            "{:>4}  {:<w$}  {:>8.3}  {:>6.3}  {:>6.3}  {:>8.3}  {}",
            r.rank,
            r.id,
            r.theta,
            r.sd,
            r.membership,
            r.phi,
            if r.in_topk { "  *  " } else { "     " }
        );
        if let (Some(g), Some(t)) = (r.gold, r.gold_topk) {
            let _ = write!(s, "  {:>6.3}  {}", g, if t { "*" } else { "" });
        }
        s.push('\n');
    }
    s
}

/// One line per covariate: `identifiability of c[name]: profile range = r nats → verdict`.
pub fn identifiability_text(
    ident: &std::collections::BTreeMap<String, crate::model::profile::Identifiability>,
) -> String {
    let mut s = String::new();
    for (name, e) in ident {
        match e.range_nats {
            Some(r) => {
                s.push_str(&format!("identifiability of c[{name}]: profile range {} → {}\n", fmt_nats(r), e.verdict))
            }
            None => s.push_str(&format!("identifiability of c[{name}]: {}\n", e.verdict)),
        }
    }
    s
}

/// A profile range in nats, with scientific notation added below 1e-3 nats.
pub fn fmt_nats(r: f64) -> String {
    if r < 1e-3 { format!("{r:.4} nats ({r:.1e})") } else { format!("{r:.4} nats") }
}

/// The YAML/CSV name of a serialisable unit enum (`round_robin`, `bias_aware`, …).
pub fn name<T: serde::Serialize>(v: &T) -> String {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => String::from("?"),
    }
}

/// Nats with 4 decimals, or in scientific notation below 1e-3 (where 4 decimals print 0.0000).
pub fn nats(x: f64) -> String {
    if x.abs() < 1e-3 && x != 0.0 { format!("{x:.1e}") } else { format!("{x:.4}") }
}

/// The summary line of a replayed run: what was replayed, how the spend was priced, and the
/// queries the recording lacked.
pub fn replay_line(r: &crate::judge::replay::ReplayInfo) -> String {
    let who = crate::judge::replay::RecordedJudge { judge: r.judge.clone(), prompting: r.prompting.clone() };
    let cost = if r.recorded_cost { "spend = recorded cost of the replayed verdicts" } else { "no recorded cost" };
    let mut s = format!("replayed {} from {} ({cost})", who.label(), r.recording.display());
    if r.unavailable > 0 {
        s.push_str(&format!("; {} queries not in the recording were set aside (missing: unavailable)", r.unavailable));
    }
    s
}

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

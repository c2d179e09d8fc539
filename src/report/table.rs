//! The terminal ranking table and the number formats of terminal output.

use super::RankRow;
use crate::analysis::ranking::RankingKind;
use std::fmt::Write;

/// Render the ranking as a fixed-width table, rows in the reported order. With `both` (a
/// bias-aware model) the reported ranking's columns come first and the other ranking's
/// beside them; otherwise one block (θ̂ is the apparent quality).
pub fn ranking_table(
    rows: &[RankRow],
    k: usize,
    reported: RankingKind,
    both: bool,
    certified: &crate::report::schema::CertifiedTopk,
) -> String {
    let w = rows.iter().map(|r| crate::domain::fmt::display_width(&r.id)).max().unwrap_or(2).max(4);
    let has_gold = rows.iter().any(|r| r.gold.is_some());
    let has_ranks = rows.iter().any(|r| r.rank_interval.is_some());
    let set = |id: &str| {
        if certified.inside.iter().any(|x| x == id) {
            "in"
        } else if certified.outside.iter().any(|x| x == id) {
            "out"
        } else {
            "?"
        }
    };
    let interval = |r: &RankRow| r.rank_interval.map(|(lo, hi)| format!("{lo}-{hi}")).unwrap_or_default();
    let tier = |r: &RankRow| r.tier.map(|t| t.to_string()).unwrap_or_default();
    let top = format!("top-{k}");
    let tw = top.len();
    let mark = |b: bool| if b { "*" } else { "" };
    let rank = |r: usize, tied: bool| if tied { format!("{r}=") } else { r.to_string() };
    let mut s = String::new();
    if both {
        let (first, second) = match reported {
            RankingKind::Apparent => ("apparent quality φ̂ (reported)", "bias-corrected θ̂ (beside)"),
            RankingKind::Corrected => ("bias-corrected θ̂ (reported)", "apparent quality φ̂ (beside)"),
        };
        let block: usize = 8 + 2 + 6 + 2 + 6 + 2 + 3 + if has_ranks { 2 + 6 + 2 + 4 } else { 0 };
        // Pad by display columns: a combining hat (φ̂, θ̂) takes none.
        let cols = first.chars().filter(|c| !('\u{300}'..='\u{36f}').contains(c)).count();
        let pad = " ".repeat(block.saturating_sub(cols));
        let _ = writeln!(s, "{:>5}  {:<w$}  {first}{pad}  {second}", "", "");
    }
    let (name_r, name_o) = match reported {
        RankingKind::Apparent => ("phi", "theta"),
        RankingKind::Corrected => ("theta", "phi"),
    };
    let _ = write!(s, "{:>5}  {:<w$}  {:>8}  {:>6}  {:>6}  {:<3}", "rank", "item", name_r, "sd", "pi", "set");
    if has_ranks {
        let _ = write!(s, "  {:>6}  {:>4}", "rank90", "tier");
    }
    if both {
        let _ = write!(s, "  {:>5}  {:>8}  {:>6}  {:>6}  {:<tw$}", "rank", name_o, "sd", "pi", top);
    }
    if has_gold {
        let _ = write!(s, "  {:>6}  gold {top}", "gold");
    }
    s.push('\n');
    for r in rows {
        let (v, sd, pi, other) = match reported {
            RankingKind::Apparent if both => (
                r.phi,
                r.phi_sd,
                r.membership_apparent,
                (rank(r.rank_corrected, r.tied_corrected), r.theta, r.sd, r.membership, r.in_corrected_topk),
            ),
            RankingKind::Corrected if both => (
                r.theta,
                r.sd,
                r.membership,
                (rank(r.rank_apparent, r.tied_apparent), r.phi, r.phi_sd, r.membership_apparent, r.in_apparent_topk),
            ),
            _ => (r.theta, r.sd, r.membership, (String::new(), 0.0, 0.0, 0.0, false)),
        };
        let _ = write!(
            s,
            "{:>5}  {:<w$}  {:>8.3}  {:>6.3}  {:>6.3}  {:<3}",
            rank(r.rank, r.tied),
            crate::domain::fmt::Col(&r.id),
            v,
            sd,
            pi,
            set(&r.id)
        );
        if has_ranks {
            let _ = write!(s, "  {:>6}  {:>4}", interval(r), tier(r));
        }
        if both {
            let _ = write!(
                s,
                "  {:>5}  {:>8.3}  {:>6.3}  {:>6.3}  {:^tw$}",
                other.0,
                other.1,
                other.2,
                other.3,
                mark(other.4)
            );
        }
        if let (Some(g), Some(t)) = (r.gold, r.gold_topk) {
            // `=`: a gold tie at the k-th place, whose members share its remaining places.
            let m = if r.gold_tied { "=" } else { mark(t) };
            let _ = write!(s, "  {:>6.3}  {:^w2$}", g, m, w2 = 5 + tw);
        }
        let line = s.trim_end().len();
        s.truncate(line);
        s.push('\n');
    }
    if let Some(t) = crate::report::RecallTarget::of_rows(rows).filter(|t| !t.tied.is_empty()) {
        let _ = writeln!(
            s,
            "gold {top}: = marks a tie in gold quality at its boundary: {} share{} {} (recall@{k} counts any of them)",
            t.tied.join(", "),
            if t.tied.len() == 1 { "s" } else { "" },
            crate::domain::fmt::count(t.shared_places(), "place")
        );
    }
    s
}

/// One line per covariate: `identifiability of c[name]: profile range r nats → verdict`.
pub fn identifiability_text(
    ident: &std::collections::BTreeMap<String, crate::model::profile::Identifiability>,
) -> String {
    let mut s = String::new();
    for (name, e) in ident {
        match e.range_nats {
            Some(r) => s.push_str(&format!(
                "identifiability of c[{name}]: profile range {} → {}\n",
                fmt_nats(r),
                e.verdict_text()
            )),
            None => s.push_str(&format!("identifiability of c[{name}]: {}\n", e.verdict_text())),
        }
    }
    s
}

/// A profile range in nats ([`num`]): `13.1 nats`, `6.1e-6 nats`, `0 nats`.
pub fn fmt_nats(r: f64) -> String {
    format!("{} nats", num(r))
}

/// The YAML/CSV name of a serialisable unit enum (`round_robin`, `bias_aware`, …).
pub fn name<T: serde::Serialize>(v: &T) -> String {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => String::from("?"),
    }
}

/// Nats for tables ([`num`]).
pub fn nats(x: f64) -> String {
    num(x)
}

pub use crate::domain::fmt::num;

/// USD for terminal output: `$0` for nothing, else 4 decimals (`$0.0170`), or 2 significant
/// digits below $0.0001 (`$2.4e-6`).
pub fn usd(x: f64) -> String {
    if x == 0.0 {
        "$0".into()
    } else if x.abs() < 1e-4 {
        format!("${x:.1e}")
    } else if x.abs() >= 1e6 {
        // A budget of 1e300 is a way to say "no limit": not 300 digits.
        format!("${x:.3e}")
    } else {
        format!("${x:.4}")
    }
}

/// A lower bound a budget must reach, `$` and rounded up (6 decimals below $0.01, else 4), so
/// the amount said is enough: $0.000134 is not said as "$0.0001".
pub fn usd_at_least(x: f64) -> String {
    if x <= 0.0 {
        "$0".into()
    } else if x < 0.01 {
        format!("${:.6}", (x * 1e6).ceil() / 1e6)
    } else {
        format!("${:.4}", (x * 1e4).ceil() / 1e4)
    }
}

/// Two amounts in USD as [`usd`] writes them, with 6 decimals (up to 9) when they differ but
/// [`usd`] writes them alike ($0.059975 and $0.06 both read "$0.0600").
pub fn usd_distinct(a: f64, b: f64) -> (String, String) {
    let (mut x, mut y) = (usd(a), usd(b));
    let mut decimals = 6;
    while x == y && a != b && decimals <= 9 {
        (x, y) = (format!("${a:.decimals$}"), format!("${b:.decimals$}"));
        decimals += 1;
    }
    (x, y)
}

/// The unit of a bias coefficient for a covariate transform.
pub fn coef_unit(name: &str, t: Option<crate::domain::pool::Transform>) -> String {
    use crate::domain::pool::Transform;
    match t {
        Some(Transform::Zscore) => format!("logits per sd of {name}"),
        Some(Transform::Log) => format!("logits per unit of ln {name}"),
        Some(Transform::Raw) => format!("logits per unit of {name}"),
        None => "logits per covariate unit".into(),
    }
}

/// The summary line of a replayed run: what was replayed, how the spend was priced, and the
/// queries the recording lacked.
pub fn replay_line(r: &crate::judge::replay::ReplayInfo) -> String {
    let who = crate::judge::replay::RecordedJudge { judge: r.judge.clone(), prompting: r.prompting.clone() };
    let cost = match (r.recorded_cost, r.unpriced) {
        (true, Some([none, all])) => format!(
            "spend = recorded cost of the replayed verdicts, partial: {none} of its {all} recorded verdicts have no cost_usd and count $0"
        ),
        (true, None) => "spend = recorded cost of the replayed verdicts".into(),
        (false, _) => "no recorded cost".into(),
    };
    let mut s = format!("replayed {} from {} ({cost})", who.label(), r.recording.display());
    if let Some(n) = r.candidates {
        s.push_str(&format!("; candidates: the {n} recorded ordered pairs (missing: unavailable)"));
    }
    if r.unavailable > 0 {
        s.push_str(&format!("; {} queries not in the recording were set aside (missing: unavailable)", r.unavailable));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tied_ranks_carry_an_equals_sign_in_both_columns() {
        // φ̂ ranks a, b, c; θ̂ ties b and c for second place.
        let row = |id: &str, rank: usize, rank_corrected: usize, tied_corrected: bool| RankRow {
            id: id.into(),
            rank,
            rank_apparent: rank,
            rank_corrected,
            tied_corrected,
            ..Default::default()
        };
        let rows = [row("a", 1, 1, false), row("b", 2, 2, true), row("c", 3, 2, true)];
        let t = ranking_table(&rows, 1, RankingKind::Apparent, true, &Default::default());
        let line = |id: &str| t.lines().find(|l| l.split_whitespace().nth(1) == Some(id)).unwrap().to_string();
        let beside_rank = |id: &str| line(id).split_whitespace().nth(6).unwrap().to_string();
        assert_eq!(
            (beside_rank("a"), beside_rank("b"), beside_rank("c")),
            ("1".into(), "2=".into(), "2=".into()),
            "{t}"
        );
        assert_eq!(line("c").split_whitespace().next(), Some("3"), "{t}");
    }

    #[test]
    fn one_number_format() {
        assert_eq!(num(0.0), "0");
        assert_eq!(num(6.1e-6), "6.1e-6");
        assert_eq!(num(13.1), "13.1");
        assert_eq!(num(272.94), "272.9");
        assert_eq!(num(0.0048123), "0.004812");
        assert_eq!(num(1.0), "1");
        assert_eq!(num(-0.25), "-0.25");
        assert_eq!(num(1.23e7), "1.2e7");
        assert_eq!(fmt_nats(6.1e-6), "6.1e-6 nats");
        assert_eq!(usd(0.0), "$0");
        assert_eq!(usd(0.017), "$0.0170");
        assert_eq!(usd(2.4e-6), "$2.4e-6");
        assert_eq!(usd(1e300), "$1.000e300");
        assert_eq!(usd(999_999.5), "$999999.5000");
    }
}

//! The system ranking of a run over many prompts (docs/systems.md) as the run shows it: the
//! summary block and `rankings.csv` (the statistics are [`crate::analysis::systems`]).

use crate::acquire::StrategyKind;
use crate::analysis::systems::SystemsReport;
use std::path::Path;

/// Order the system rows as the ranking the run reports (`ranking`, one row per system, best
/// first; `reported` names it): their `rank` is the reported rank, and each row gets φ̂ and its
/// top-k membership beside θ̂ and π. rankings.csv and result.json's `systems` then rank as the
/// run does (they ranked by θ̂ when the run reported φ̂).
pub fn follow_reported(
    sys: &mut SystemsReport,
    ranking: &[super::RankRow],
    reported: crate::analysis::ranking::RankingKind,
) {
    let at: std::collections::HashMap<&str, (usize, &super::RankRow)> =
        ranking.iter().enumerate().map(|(i, r)| (r.id.as_str(), (i, r))).collect();
    for row in &mut sys.rows {
        if let Some((_, r)) = at.get(row.system.as_str()) {
            row.rank = r.rank;
            row.phi = Some(r.phi);
            row.phi_sd = Some(r.phi_sd);
            row.membership_apparent = Some(r.membership_apparent);
        }
    }
    sys.rows.sort_by_key(|row| at.get(row.system.as_str()).map_or(usize::MAX, |(i, _)| *i));
    sys.ranked_by = Some(reported);
}

/// The rankings CSV: a header line, then one line per system, best first in the reported
/// ranking:
/// `rank,system,theta,sd,pi,win_rate_vs_<REF>,win_rate_lo,win_rate_hi,comparisons,wins,prompts,gold,phi,pi_apparent,ranked_by`
/// (`rank`: in the ranking `ranked_by` names, `apparent` (φ̂) or `corrected` (θ̂)). Written with
/// the csv crate (quoting), and a system name that a spreadsheet would read as a formula is
/// neutralised ([`text_cell`]).
pub fn rankings_csv(r: &SystemsReport) -> String {
    let mut w = csv::Writer::from_writer(Vec::new());
    let reference = format!("win_rate_vs_{}", r.reference);
    let header = [
        "rank",
        "system",
        "theta",
        "sd",
        "pi",
        &reference,
        "win_rate_lo",
        "win_rate_hi",
        "comparisons",
        "wins",
        "prompts",
        "gold",
        "phi",
        "phi_sd",
        "pi_apparent",
        "ranked_by",
    ];
    let ranked_by = match r.ranked_by {
        Some(k) => super::table::name(&k),
        None => "corrected".into(),
    };
    let mut rows = vec![header.iter().map(|h| text_cell(h)).collect::<Vec<_>>()];
    for x in &r.rows {
        rows.push(vec![
            x.rank.to_string(),
            text_cell(&x.system),
            format!("{:.6}", x.theta),
            format!("{:.6}", x.sd),
            format!("{:.6}", x.membership),
            format!("{:.6}", x.win_rate),
            format!("{:.6}", x.win_rate_lo),
            format!("{:.6}", x.win_rate_hi),
            x.comparisons.to_string(),
            // Soft verdicts (logprobs) win fractions: 6 decimals, as the other numbers.
            if x.wins.fract() == 0.0 { x.wins.to_string() } else { format!("{:.6}", x.wins) },
            x.prompts.to_string(),
            x.gold.map(|g| format!("{g:.6}")).unwrap_or_default(),
            x.phi.map(|g| format!("{g:.6}")).unwrap_or_default(),
            x.phi_sd.map(|g| format!("{g:.6}")).unwrap_or_default(),
            x.membership_apparent.map(|g| format!("{g:.6}")).unwrap_or_default(),
            ranked_by.clone(),
        ]);
    }
    for row in rows {
        w.write_record(&row).expect("writing CSV to memory");
    }
    String::from_utf8(w.into_inner().expect("writing CSV to memory")).expect("UTF-8 in, UTF-8 out")
}

/// A text cell a spreadsheet will not run: one that begins with `=`, `+`, `-`, `@`, a tab or a
/// carriage return gets a leading `'` (OWASP, "CSV Injection"), so `=HYPERLINK(…)` or `-2+3`
/// shows as text. So does one that begins with `'`, so the cell reads back one way: drop one
/// leading `'` from a cell that has one (systems `-3` and `'-3` were both written `'-3`).
pub fn text_cell(v: &str) -> String {
    if v.starts_with(['=', '+', '-', '@', '\t', '\r', '\'']) { format!("'{v}") } else { v.to_owned() }
}

/// Write `rankings.csv` into the run folder `dir` (next to result.json).
///
/// # Errors
/// The operating system's error writing the file.
pub fn write_rankings(dir: &Path, r: &SystemsReport) -> std::io::Result<()> {
    std::fs::write(dir.join("rankings.csv"), rankings_csv(r))
}

/// The summary block of a system ranking: one line per system in the reported ranking (its
/// value ± sd and π: φ̂ when the run reports the apparent ranking, θ̂ otherwise; the win rate
/// against the reference at equal covariates with its interval, comparisons, prompts, gold) and
/// the spread of comparisons over prompts.
pub fn summary_block(r: &SystemsReport) -> String {
    let apparent = r.ranked_by == Some(crate::analysis::ranking::RankingKind::Apparent);
    let mut s = format!(
        "systems over {} prompts, {} (win rate against {} at equal covariates, from θ̂, 95 % interval):\n",
        r.prompts,
        if apparent { "in the reported ranking by apparent quality φ̂" } else { "by bias-corrected θ̂" },
        r.reference
    );
    // The name column is as wide as the longest name (at least 10), so long names keep the
    // columns aligned.
    let w = r.rows.iter().map(|x| crate::domain::fmt::display_width(&x.system)).max().unwrap_or(0).max(10);
    s.push_str(&format!(
        " rank  {:<w$} {:>7} {:>7} {:>6}  {:>21}  {:>5} {:>7} {:>7}\n",
        "system",
        if apparent { "phi" } else { "theta" },
        "sd",
        "pi",
        "win rate [95 %]",
        "comp",
        "prompts",
        "gold"
    ));
    for x in &r.rows {
        let (value, sd, pi) = match (apparent, x.phi, x.phi_sd, x.membership_apparent) {
            (true, Some(v), Some(sd), Some(pi)) => (v, sd, pi),
            _ => (x.theta, x.sd, x.membership),
        };
        s.push_str(&format!(
            " {:>4}  {:<w$} {:>7.3} {:>7.3} {:>6.3}  {:>5.3} [{:.3}, {:.3}]  {:>5} {:>7} {:>7}\n",
            x.rank,
            crate::domain::fmt::Col(&x.system),
            value,
            sd,
            pi,
            x.win_rate,
            x.win_rate_lo,
            x.win_rate_hi,
            x.comparisons,
            x.prompts,
            x.gold.map(|g| format!("{g:.3}")).unwrap_or_else(|| "-".into())
        ));
    }
    let counts: Vec<usize> = r.per_prompt.values().copied().collect();
    let used = counts.iter().filter(|c| **c > 0).count();
    let max = counts.iter().copied().max().unwrap_or(0);
    s.push_str(&format!(
        "comparisons per prompt: {used} of {} prompts used, at most {max} on one prompt (result.json `systems.per_prompt`)\n",
        r.prompts
    ));
    s
}

/// One simulated path at one budget.
#[derive(Debug, Clone, PartialEq)]
pub struct SystemsRow {
    /// Acquisition strategy.
    pub strategy: StrategyKind,
    /// Judge and acquisition seed.
    pub seed: u64,
    /// Comparisons (the budget).
    pub budget: usize,
    /// Recall@k of the point top-k of θ̂ against the gold top-k.
    pub recall: f64,
}

/// Mean and standard error (sd / √n, sample sd) of `v`.
pub fn mean_se(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let var = if v.len() > 1 { v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0) } else { 0.0 };
    (mean, (var / n).sqrt())
}

/// Recalls of `strategy` at `budget`, in seed order.
pub fn recalls(rows: &[SystemsRow], strategy: StrategyKind, budget: usize) -> Vec<f64> {
    rows.iter().filter(|r| r.strategy == strategy && r.budget == budget).map(|r| r.recall).collect()
}

/// The gain of `a` over `b` at `budget`: mean and SE of the per-seed differences (paired: both
/// strategies see the same judge seed).
pub fn paired_gain(rows: &[SystemsRow], a: StrategyKind, b: StrategyKind, budget: usize) -> (f64, f64) {
    let (x, y) = (recalls(rows, a, budget), recalls(rows, b, budget));
    let d: Vec<f64> = x.iter().zip(&y).map(|(u, v)| u - v).collect();
    mean_se(&d)
}

/// The markdown table of docs/experiments.md: one row per strategy with recall@k mean ± SE at
/// each budget, then the paired gain of the first strategy over the second.
pub fn markdown_table(rows: &[SystemsRow], strategies: &[StrategyKind], budgets: &[usize]) -> String {
    let name = |s: StrategyKind| match s {
        StrategyKind::RoundRobin => "round_robin".to_string(),
        StrategyKind::DOptimal => "d_optimal".to_string(),
        other => format!("{other:?}").to_lowercase(),
    };
    let heads: Vec<String> = budgets
        .iter()
        .enumerate()
        .map(|(i, b)| if i == 0 { format!("recall@3, B = {b}") } else { format!("B = {b}") })
        .collect();
    let mut out = format!("| strategy | {} |\n|{}\n", heads.join(" | "), " --- |".repeat(budgets.len() + 1));
    for &s in strategies {
        let cells: Vec<String> = budgets
            .iter()
            .map(|&b| {
                let (m, se) = mean_se(&recalls(rows, s, b));
                format!("{m:.3} ± {se:.3}")
            })
            .collect();
        out.push_str(&format!("| {} | {} |\n", name(s), cells.join(" | ")));
    }
    if let [a, b, ..] = strategies {
        let cells: Vec<String> = budgets
            .iter()
            .map(|&bu| {
                let (g, se) = paired_gain(rows, *a, *b, bu);
                format!("{} ± {se:.3}", if g < 0.0 { format!("−{:.3}", -g) } else { format!("+{g:.3}") })
            })
            .collect();
        out.push_str(&format!("| {} − {} (paired by seed) | {} |\n", name(*a), name(*b), cells.join(" | ")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::systems::SystemRow;

    #[test]
    fn rankings_csv_has_a_header_and_a_row_per_system_with_quoted_names() {
        let row = |rank: usize, system: &str, gold: Option<f64>| SystemRow {
            rank,
            system: system.into(),
            theta: 0.5,
            sd: 0.25,
            membership: 0.75,
            win_rate: 0.6,
            win_rate_lo: 0.4,
            win_rate_hi: 0.8,
            comparisons: 2,
            wins: 2.0,
            prompts: 1,
            gold,
            phi: gold.map(|g| g / 4.0),
            phi_sd: gold.map(|_| 0.1),
            membership_apparent: gold.map(|_| 0.5),
        };
        let r = SystemsReport {
            ranked_by: Some(crate::analysis::ranking::RankingKind::Apparent),
            reference: "s0".into(),
            prompts: 3,
            rows: vec![row(1, "s2", Some(2.0)), row(2, "gpt, 4", None)],
            per_prompt: Default::default(),
        };
        let csv = rankings_csv(&r);
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(
            lines[0],
            "rank,system,theta,sd,pi,win_rate_vs_s0,win_rate_lo,win_rate_hi,comparisons,wins,prompts,gold,phi,phi_sd,pi_apparent,ranked_by"
        );
        assert_eq!(
            lines[1],
            "1,s2,0.500000,0.250000,0.750000,0.600000,0.400000,0.800000,2,2,1,2.000000,0.500000,0.100000,0.500000,apparent"
        );
        assert_eq!(lines[2], "2,\"gpt, 4\",0.500000,0.250000,0.750000,0.600000,0.400000,0.800000,2,2,1,,,,,apparent");
        // Soft verdicts win fractions of a comparison (it was 6.173078302046714).
        let soft =
            SystemsReport { rows: vec![SystemRow { wins: 6.173078302046714, ..row(1, "s2", None) }], ..r.clone() };
        assert!(rankings_csv(&soft).lines().nth(1).unwrap().contains(",2,6.173078,1,"), "{}", rankings_csv(&soft));
        // Names a spreadsheet would run as formulas are text.
        let r = SystemsReport {
            reference: "=cmd".into(),
            rows: ["=HYPERLINK(\"http://x\",\"y\")", "+SUM(1,1)", "@cmd", "-2+3", "\tx", "ok-1", "'-2+3", "it's"]
                .iter()
                .enumerate()
                .map(|(i, s)| row(i + 1, s, None))
                .collect(),
            ..r
        };
        let csv = rankings_csv(&r);
        let names: Vec<String> =
            csv::Reader::from_reader(csv.as_bytes()).records().map(|x| x.unwrap()[1].to_owned()).collect();
        assert_eq!(
            names,
            ["'=HYPERLINK(\"http://x\",\"y\")", "'+SUM(1,1)", "'@cmd", "'-2+3", "'\tx", "ok-1", "''-2+3", "it's"]
        );
        // One leading `'` dropped reads every name back (hunt 55: `-3` and `'-3` were one cell).
        let back: Vec<&str> = names.iter().map(|n| n.strip_prefix('\'').unwrap_or(n)).collect();
        assert_eq!(back, r.rows.iter().map(|r| r.system.as_str()).collect::<Vec<_>>());
        assert!(csv.starts_with("rank,system,theta,sd,pi,win_rate_vs_=cmd,"), "{csv}");
    }

    #[test]
    fn mean_se_and_paired_gain_closed_forms() {
        let (m, se) = mean_se(&[1.0, 2.0, 3.0, 6.0]);
        // mean 3, sample var (4 + 1 + 0 + 9)/3 = 14/3, se = sqrt(14/12).
        assert_eq!(m, 3.0);
        assert!((se - (14.0f64 / 12.0).sqrt()).abs() < 1e-12);
        let row = |strategy, seed, recall| SystemsRow { strategy, seed, budget: 8, recall };
        let rows = [
            row(StrategyKind::Topk, 0, 1.0),
            row(StrategyKind::Topk, 1, 2.0 / 3.0),
            row(StrategyKind::RoundRobin, 0, 1.0 / 3.0),
            row(StrategyKind::RoundRobin, 1, 2.0 / 3.0),
        ];
        let (g, se) = paired_gain(&rows, StrategyKind::Topk, StrategyKind::RoundRobin, 8);
        // Differences 2/3 and 0: mean 1/3, sample sd sqrt(2/9), se = sqrt(2/9)/sqrt(2) = 1/3.
        assert!((g - 1.0 / 3.0).abs() < 1e-12 && (se - 1.0 / 3.0).abs() < 1e-12);
    }
}

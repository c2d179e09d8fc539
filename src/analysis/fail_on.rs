//! Thresholds on a judge bias audit for CI (`audit --fail-on`, docs/audit.md "Exit codes"):
//! `"flip_rate>0.2,first_shown>0.6,longer_wins>0.7"` names metrics of the audit's tables and the
//! values that fail the check.
//!
//! Metrics (rates in [0, 1], point estimates over the pairs with both verdicts):
//! - `flip_rate`: position-bias rate, flips / pairs (the swap test);
//! - `first_shown`: of the verdicts on those pairs that name a winner, the share won by the
//!   answer shown first;
//! - `longer_wins`: verbosity-bias rate, longer-wins / probes;
//! - `naive_disagreement`, `averaged_disagreement`: disagreement with the true winner of the
//!   X-first verdict and of the order-averaged verdict.

use super::audit::AuditReport;

/// The metric names `--fail-on` accepts.
pub const METRICS: [&str; 5] =
    ["flip_rate", "first_shown", "longer_wins", "naive_disagreement", "averaged_disagreement"];

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `<`
    Lt,
    /// `<=`
    Le,
}

impl Op {
    fn text(self) -> &'static str {
        match self {
            Op::Gt => ">",
            Op::Ge => ">=",
            Op::Lt => "<",
            Op::Le => "<=",
        }
    }

    fn holds(self, value: f64, limit: f64) -> bool {
        match self {
            Op::Gt => value > limit,
            Op::Ge => value >= limit,
            Op::Lt => value < limit,
            Op::Le => value <= limit,
        }
    }
}

/// One threshold: the check fails when `metric op limit` holds.
#[derive(Debug, Clone, PartialEq)]
pub struct Threshold {
    /// One of [`METRICS`].
    pub metric: String,
    /// The operator.
    pub op: Op,
    /// The limit (a rate in [0, 1]).
    pub limit: f64,
}

impl std::fmt::Display for Threshold {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}{}{}", self.metric, self.op.text(), self.limit)
    }
}

/// The thresholds of one `--fail-on` argument.
#[derive(Debug, Clone, PartialEq)]
pub struct Thresholds(pub Vec<Threshold>);

/// Parse a comma-separated list of thresholds (what `--fail-on` takes).
///
/// # Errors
/// As [`parse`].
pub fn parse_list(text: &str) -> Result<Thresholds, String> {
    parse(text).map(Thresholds)
}

/// Parse a comma-separated list of thresholds.
///
/// # Errors
/// A message naming the part that is not `METRIC OP NUMBER` with a known metric, an operator
/// among `>`, `>=`, `<`, `<=` and a number in [0, 1]; an empty part between commas; a threshold
/// that no rate can pass (`>1`, `<0`) or every rate passes (`>=0`, `<=1`), which would make the
/// check a no-op or a certain failure.
pub fn parse(text: &str) -> Result<Vec<Threshold>, String> {
    let mut out = Vec::new();
    let parts: Vec<&str> = text.split(',').map(str::trim).collect();
    if parts.len() > 1 && parts.iter().any(|p| p.is_empty()) && parts.iter().any(|p| !p.is_empty()) {
        return Err(format!(
            "{text:?}: an empty threshold between commas; expected e.g. \"flip_rate>0.2,first_shown>0.6\""
        ));
    }
    for part in parts.into_iter().filter(|p| !p.is_empty()) {
        let at = part
            .find(['>', '<'])
            .ok_or_else(|| format!("{part:?}: expected METRIC>VALUE (or >=, <, <=), e.g. flip_rate>0.2"))?;
        let metric = part[..at].trim();
        let rest = &part[at..];
        let (op, number) = if let Some(n) = rest.strip_prefix(">=") {
            (Op::Ge, n)
        } else if let Some(n) = rest.strip_prefix("<=") {
            (Op::Le, n)
        } else if let Some(n) = rest.strip_prefix('>') {
            (Op::Gt, n)
        } else {
            (Op::Lt, &rest[1..])
        };
        if !METRICS.contains(&metric) {
            return Err(format!("{part:?}: unknown metric {metric:?}; expected one of {}", METRICS.join(", ")));
        }
        let limit: f64 = number
            .trim()
            .parse()
            .ok()
            .filter(|v: &f64| (0.0..=1.0).contains(v))
            .ok_or_else(|| format!("{part:?}: expected a rate between 0 and 1 after {}", op.text()))?
            + 0.0; // -0 is 0
        let never = matches!((op, limit), (Op::Gt, 1.0) | (Op::Lt, 0.0));
        let always = matches!((op, limit), (Op::Ge, 0.0) | (Op::Le, 1.0));
        if never || always {
            return Err(format!(
                "{part:?}: {} rate passes this threshold (rates lie in [0, 1]), so the check would {}; give a limit inside (0, 1)",
                if never { "no" } else { "every" },
                if never { "never fail" } else { "always fail" }
            ));
        }
        out.push(Threshold { metric: metric.to_string(), op, limit });
    }
    if out.is_empty() {
        return Err("no threshold given; expected e.g. \"flip_rate>0.2,first_shown>0.6\"".into());
    }
    Ok(out)
}

/// The value of `metric` in `report` (None when the audit did not measure it, e.g.
/// `longer_wins` without probes).
pub fn value(report: &AuditReport, metric: &str) -> Option<f64> {
    match metric {
        "flip_rate" => report.position.flips.rate,
        "first_shown" => report.position.first_shown.rate,
        "longer_wins" => report.verbosity.as_ref().and_then(|v| v.longer_wins.rate),
        "naive_disagreement" => report.averaging.naive_disagreement.rate,
        "averaged_disagreement" => report.averaging.averaged_disagreement.rate,
        _ => None,
    }
}

/// The thresholds the audit passed, each as a line naming the metric, its value and the limit
/// (a metric the audit did not measure fails too: the check could not be made).
pub fn failures(report: &AuditReport, thresholds: &[Threshold]) -> Vec<String> {
    thresholds
        .iter()
        .filter_map(|t| match value(report, &t.metric) {
            Some(v) if t.op.holds(v, t.limit) => {
                // Enough digits to tell the value from the limit (0.58333 passes >0.5833).
                let shown = format!("{v:.4}");
                let shown = if shown.parse::<f64>().ok() == Some(t.limit) { format!("{v}") } else { shown };
                Some(format!("{} = {shown} passes the threshold {t}", t.metric))
            }
            Some(_) => None,
            None => Some(format!("{} was not measured by this audit (threshold {t})", t.metric)),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds_parse_and_bad_parts_are_named() {
        let t = parse("flip_rate>0.2, first_shown>=0.6,longer_wins<0.7").unwrap();
        assert_eq!(t.len(), 3);
        assert_eq!((t[1].metric.as_str(), t[1].op, t[1].limit), ("first_shown", Op::Ge, 0.6));
        assert_eq!(t[2].to_string(), "longer_wins<0.7");
        assert!(parse("flip>0.2").unwrap_err().contains("unknown metric \"flip\""));
        assert!(parse("flip_rate=0.2").unwrap_err().contains("expected METRIC>VALUE"));
        assert!(parse("flip_rate>1.5").unwrap_err().contains("between 0 and 1"));
        assert!(parse(" , ").unwrap_err().contains("no threshold"));
        // Hunt 59 F7: empty parts, limits no rate or every rate passes, -0.
        for bad in [",flip_rate>0.3", "flip_rate>0.3,,first_shown>0.9", "flip_rate>0.3,"] {
            assert!(parse(bad).unwrap_err().contains("an empty threshold between commas"), "{bad}");
        }
        assert_eq!(
            parse("flip_rate>1").unwrap_err(),
            "\"flip_rate>1\": no rate passes this threshold (rates lie in [0, 1]), so the check would never fail; give a limit inside (0, 1)"
        );
        assert!(parse("flip_rate<0").unwrap_err().contains("no rate passes"));
        assert!(parse("flip_rate>=0").unwrap_err().contains("every rate passes this threshold"));
        assert!(parse("first_shown<=1").unwrap_err().contains("so the check would always fail"));
        assert_eq!(parse("flip_rate>-0").unwrap()[0].to_string(), "flip_rate>0");
        assert_eq!(parse("longer_wins>=1").unwrap()[0].to_string(), "longer_wins>=1");
    }
}

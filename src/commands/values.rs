//! clap value parsers for the core's enums (model kind, reported ranking), so that the core
//! does not depend on the command-line parser: each accepts the names the configs use and lists
//! them in `--help` and in its error.

use crate::analysis::ranking::ReportRanking;
use crate::model::summary::ModelKind;
use clap::builder::{PossibleValuesParser, TypedValueParser};

/// The value of a snake_case name of a serde enum (the names are the parser's possible values).
fn named<T: serde::de::DeserializeOwned>(s: String) -> T {
    serde_json::from_value(serde_json::Value::String(s)).expect("a possible value names a variant")
}

/// `--model`: `naive` or `bias_aware`.
pub fn model_kind() -> impl TypedValueParser<Value = ModelKind> {
    PossibleValuesParser::new(["naive", "bias_aware"]).map(named::<ModelKind>)
}

/// `--report-ranking`: `auto`, `corrected` or `apparent`.
pub fn report_ranking() -> impl TypedValueParser<Value = ReportRanking> {
    PossibleValuesParser::new(["auto", "corrected", "apparent"]).map(named::<ReportRanking>)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_parses_to_its_variant() {
        let cmd = clap::Command::new("t");
        let p = model_kind();
        assert_eq!(p.parse_ref(&cmd, None, "bias_aware".as_ref()).unwrap(), ModelKind::BiasAware);
        assert!(p.parse_ref(&cmd, None, "biased".as_ref()).is_err());
        let r = report_ranking();
        for (s, v) in [
            ("auto", ReportRanking::Auto),
            ("corrected", ReportRanking::Corrected),
            ("apparent", ReportRanking::Apparent),
        ] {
            assert_eq!(r.parse_ref(&cmd, None, s.as_ref()).unwrap(), v);
        }
    }
}

//! The `budget` section, shared by `run` and `audit` (and bounding a run's gate): limits on
//! stored verdicts and USD, or the word `unlimited`. A live judge needs one of them
//! (docs/live.md, "Budget"); `max_usd` bounds everything the output folder's books hold.

use super::sections;
use crate::domain::invalid::InvalidSetting;
use serde::{Deserialize, Serialize};

/// Budget (docs/model.md §3): `{max_comparisons, max_usd}`, or `unlimited` (a live judge needs one
/// of the limits or this word).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct BudgetConfig {
    /// Maximum verdicts stored.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::domain::serde_words::opt_whole"
    )]
    pub max_comparisons: Option<u64>,
    /// Maximum spend in USD.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_usd: Option<f64>,
    /// `budget: unlimited` was written: no limit, on purpose.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unlimited: bool,
}

impl BudgetConfig {
    /// Whether any limit is set.
    pub fn is_limited(&self) -> bool {
        self.max_comparisons.is_some() || self.max_usd.is_some()
    }
}

/// `budget:` as a mapping, or the word `unlimited`.
pub(crate) fn de_budget<'de, D: serde::Deserializer<'de>>(d: D) -> Result<BudgetConfig, D::Error> {
    struct V;
    impl<'de> serde::de::Visitor<'de> for V {
        type Value = BudgetConfig;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a mapping {max_comparisons, max_usd} or the word `unlimited`")
        }
        fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<BudgetConfig, E> {
            if v == "unlimited" {
                Ok(BudgetConfig { unlimited: true, ..Default::default() })
            } else {
                Err(E::custom(format!(
                    "budget: {v:?} is not a budget; expected `unlimited` or a mapping {{max_comparisons, max_usd}}"
                )))
            }
        }
        fn visit_unit<E: serde::de::Error>(self) -> Result<BudgetConfig, E> {
            Ok(BudgetConfig::default())
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<BudgetConfig, A::Error> {
            BudgetConfig::deserialize(serde::de::value::MapAccessDeserializer::new(map))
        }
    }
    d.deserialize_any(V)
}

/// `budget:`: a USD limit ≥ 0, limits or `unlimited` (not both), and a live judge (`live`) needs
/// one of them.
pub fn check_budget(b: &BudgetConfig, live: bool) -> Result<(), InvalidSetting> {
    sections::check_usd(b.max_usd, "budget.max_usd")?;
    if b.unlimited && b.is_limited() {
        return Err(InvalidSetting::new(
            "budget",
            "give either limits (max_comparisons, max_usd) or `unlimited`, not both",
        ));
    }
    if live && !b.is_limited() && !b.unlimited {
        return Err(InvalidSetting::new(
            "budget",
            "a live judge needs a budget: set budget.max_comparisons and/or budget.max_usd, or write `budget: unlimited` to run without a limit on purpose",
        ));
    }
    Ok(())
}

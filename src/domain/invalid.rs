//! The error of an input that breaks a documented rule.

/// A value in a config, pool, pairs file or flag that breaks a documented rule: the message names
/// the field (config key, item id, pair id, flag) and what was expected, as in
/// `rho = 1.5 must be in [-1, 1]`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InvalidInput(pub String);

impl InvalidInput {
    /// The same message with `context` (a file, a block) in front: `context: message`.
    pub fn within(self, context: impl std::fmt::Display) -> Self {
        Self(format!("{context}: {}", self.0))
    }
}

impl From<String> for InvalidInput {
    fn from(m: String) -> Self {
        Self(m)
    }
}

impl From<&str> for InvalidInput {
    fn from(m: &str) -> Self {
        Self(m.to_owned())
    }
}

/// A setting that breaks its rule: the dotted config key (`judge.openai.price`) and what was
/// expected. Shown as `key: message`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{key}: {message}")]
pub struct InvalidSetting {
    /// The dotted key of the setting.
    pub key: String,
    /// What is wrong and what was expected.
    pub message: String,
}

impl InvalidSetting {
    /// The error for `key`.
    pub fn new(key: impl Into<String>, message: impl Into<String>) -> Self {
        Self { key: key.into(), message: message.into() }
    }

    /// A block's rule broken (`judge.mock`), named by the setting its message leads with: `block`
    /// and `temperature = 0 must be > 0` are `judge.mock.temperature: 0 must be > 0`, so the
    /// setting's own line is found. A message that does not lead with `field = ` stays under
    /// `block`.
    pub fn within_block(block: &str, e: InvalidInput) -> Self {
        let field = e.0.split_once(" = ").map(|(f, _)| f).filter(|f| {
            !f.is_empty()
                && f.split('.').all(|p| {
                    !p.is_empty() && p.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
                })
        });
        match field {
            Some(f) => Self::new(format!("{block}.{f}"), e.0[f.len() + 3..].to_owned()),
            None => Self::new(block, e.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_blocks_rule_is_named_by_the_setting_it_leads_with() {
        let e = InvalidSetting::within_block("judge.mock", "temperature = 0 must be a finite number > 0".into());
        assert_eq!(e.to_string(), "judge.mock.temperature: 0 must be a finite number > 0");
        let e = InvalidSetting::within_block("judges[1].mock", "self_preference.bonus = NaN must be finite".into());
        assert_eq!(
            (e.key.as_str(), e.message.as_str()),
            ("judges[1].mock.self_preference.bonus", "NaN must be finite")
        );
        // No leading setting: the block.
        for m in ["pos_bias and verb_per_word must be finite", "item \"a = b\" has none", " = 3"] {
            let e = InvalidSetting::within_block("judge.mock", m.into());
            assert_eq!((e.key.as_str(), e.message.as_str()), ("judge.mock", m));
        }
    }
}

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
}

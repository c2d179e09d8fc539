//! A redacting secret type for API keys.
//!
//! [`Secret`] holds the key read from the environment variable a config names. It has no
//! `Display`, no `Serialize`, and its `Debug` prints `Secret([redacted])`, so the key cannot
//! reach result files, logs or error messages by formatting. Text that came from outside
//! (server error bodies, replies) is passed through [`Secret::redact`] before it is stored or
//! shown, in case a server echoes the key back.

use std::fmt;

/// Placeholder written wherever a secret would have appeared.
pub const REDACTED: &str = "[redacted]";

/// An API key (or any secret string). Never printed, never serialised.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wrap a secret value.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// Read the secret from environment variable `var`; `None` when unset or empty (after
    /// trimming whitespace, which is also removed from the returned key).
    pub fn from_env(var: &str) -> Option<Self> {
        std::env::var(var).ok().map(|v| v.trim().to_owned()).filter(|v| !v.is_empty()).map(Self)
    }

    /// The secret value, for the one place that must send it (the HTTP Authorization header).
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Length of the secret in bytes (safe to show).
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the secret is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// `text` with every occurrence of the secret replaced by [`REDACTED`]. Secrets shorter than
    /// 4 bytes are not searched for (they would redact ordinary words).
    pub fn redact(&self, text: &str) -> String {
        if self.0.len() < 4 || !text.contains(&self.0) { text.to_owned() } else { text.replace(&self.0, REDACTED) }
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Secret({REDACTED})")
    }
}

/// Redact `text` with an optional secret (identity when there is none).
pub fn redact_opt(secret: Option<&Secret>, text: &str) -> String {
    match secret {
        Some(s) => s.redact(text),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_and_redact_hide_the_value() {
        let s = Secret::new("sk-test-1234567890");
        assert_eq!(format!("{s:?}"), "Secret([redacted])");
        assert_eq!(format!("{:?}", Some(&s)), "Some(Secret([redacted]))");
        assert_eq!(
            s.redact("bad key sk-test-1234567890, again sk-test-1234567890."),
            "bad key [redacted], again [redacted]."
        );
        assert_eq!(s.redact("nothing here"), "nothing here");
        assert_eq!(Secret::new("ab").redact("ab cab"), "ab cab", "too short to search for");
        assert_eq!(s.expose(), "sk-test-1234567890");
        assert_eq!(s.len(), 18);
    }

    #[test]
    fn unset_env_var_is_none() {
        assert!(Secret::from_env("TOPK_JUDGE_TEST_SURELY_UNSET_VAR_7d1c").is_none());
    }
}

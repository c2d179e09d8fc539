//! The only YAML import (serde-saphyr, the maintained successor of serde_yaml).

use serde::Serialize;
use serde::de::DeserializeOwned;

/// Parse YAML text; the error message carries line and column.
///
/// # Errors
/// The parser's message.
pub fn from_str<T: DeserializeOwned>(text: &str) -> Result<T, String> {
    serde_saphyr::from_str(text).map_err(|e| {
        let m = e.to_string();
        m.strip_prefix("error: ").map(str::to_owned).unwrap_or(m)
    })
}

/// Serialise to YAML.
///
/// # Errors
/// The serialiser's message.
pub fn to_string<T: Serialize>(v: &T) -> Result<String, String> {
    serde_saphyr::to_string(v).map_err(|e| e.to_string())
}

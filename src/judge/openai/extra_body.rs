//! Which request fields `judge.openai.extra_body` may not set.
//!
//! `extra_body` adds vendor fields to each request (llama.cpp `cache_prompt`, OpenRouter
//! `provider`, `reasoning_effort`, …). It may not override a field the tool sets itself or relies
//! on for cost, parsing or caching: `max_tokens: 4000` in `extra_body` next to `max_tokens: 4`
//! would be sent as 4000 while the budget reserves 4 tokens per reply, and `max_usd` would be
//! passed many times over. Such a key is a config error at load that names it and the setting to
//! use instead ([`check`]); the request builder also gives the tool's own fields precedence.
//! `tools` / `tool_choice` (and the legacy `functions` / `function_call`) are allowed: a verdict
//! in a tool call's arguments is read like one in the content (docs/live.md, "Channels"), and
//! the config check asks each function for a verdict key.

use crate::domain::invalid::InvalidSetting;
use serde_json::{Map, Value};

/// A request field `extra_body` may not set, why, and what to use instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reserved {
    /// The request field.
    pub field: &'static str,
    /// Why the tool needs it for itself.
    pub why: &'static str,
    /// The setting to use instead.
    pub instead: &'static str,
}

const fn r(field: &'static str, why: &'static str, instead: &'static str) -> Reserved {
    Reserved { field, why, instead }
}

const LIMIT: &str = "the budget reserves max_tokens as the worst case of every reply";
const TEXT: &str = "the verdict is parsed from the reply's text of one choice";

/// Fields the tool always sets or relies on (in addition, `temperature` when the config sets it).
pub const RESERVED: &[Reserved] = &[
    r("model", "it names the judge in every request and in the cache key", "judge.openai.model"),
    r(
        "messages",
        "the prompt template renders them and the cache key hashes them",
        "judge.openai.prompt (the template)",
    ),
    r("max_tokens", LIMIT, "judge.openai.max_tokens"),
    r("max_completion_tokens", LIMIT, "judge.openai.max_tokens with max_tokens_field: max_completion_tokens or both"),
    r("n_predict", LIMIT, "judge.openai.max_tokens (llama.cpp reads n_predict as the completion limit)"),
    r("max_new_tokens", LIMIT, "judge.openai.max_tokens (some servers read max_new_tokens as the completion limit)"),
    r("n", "each request is priced as one choice and gives one verdict", "nothing: the tool always asks for n: 1"),
    r("best_of", "the extra candidates are billed for one verdict", "nothing: the tool always asks for one choice"),
    r("stream", TEXT, "nothing: the tool reads whole replies (stream: false)"),
    r("stream_options", TEXT, "nothing: the tool reads whole replies (stream: false)"),
    r("logprobs", "soft verdicts are read from them", "judge.openai.logprobs"),
    r("top_logprobs", "soft verdicts are read from them", "judge.openai.top_logprobs (with logprobs: true)"),
    r("echo", "an echoed prompt puts both answers' text into the reply the verdict is parsed from", "nothing"),
];

const TEMPERATURE: Reserved = r("temperature", "the tool sends the configured temperature", "judge.openai.temperature");

/// The reserved field `key` is, if it is one (`temperature` only when the config sets one).
pub fn reserved(key: &str, temperature_set: bool) -> Option<Reserved> {
    if key == TEMPERATURE.field {
        return temperature_set.then_some(TEMPERATURE);
    }
    RESERVED.iter().find(|r| r.field == key).copied()
}

/// Check `extra_body` (the first offending key, in key order, is reported).
///
/// # Errors
/// `(key path, message)`, e.g. `judge.openai.extra_body.max_tokens`, saying why the tool keeps
/// the field and which setting to use instead.
pub fn check(extra: &Map<String, Value>, temperature_set: bool) -> Result<(), InvalidSetting> {
    for key in extra.keys() {
        if let Some(r) = reserved(key, temperature_set) {
            return Err(InvalidSetting::new(
                format!("judge.openai.extra_body.{key}"),
                format!(
                    "`{key}` is a request field the tool sets or relies on ({}), so extra_body cannot override it; use {} instead",
                    r.why, r.instead
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reserved_keys_are_named_with_the_setting_to_use() {
        let m = |v: Value| v.as_object().unwrap().clone();
        let InvalidSetting { key: k, message: msg } =
            check(&m(json!({"cache_prompt": false, "max_tokens": 4000})), true).unwrap_err();
        assert_eq!(k, "judge.openai.extra_body.max_tokens");
        assert!(msg.contains("use judge.openai.max_tokens instead") && msg.contains("worst case"), "{msg}");
        for r in RESERVED {
            let InvalidSetting { key: k, message: msg } = check(&m(json!({r.field: 1})), false).unwrap_err();
            assert_eq!(k, format!("judge.openai.extra_body.{}", r.field));
            assert!(msg.contains(r.instead), "{msg}");
        }
        // temperature: reserved only when the config sends one.
        assert!(check(&m(json!({"temperature": 0.7})), true).unwrap_err().message.contains("judge.openai.temperature"));
        assert!(check(&m(json!({"temperature": 0.7})), false).is_ok());
        // Vendor fields pass.
        let ok = json!({"cache_prompt": false, "provider": {"order": ["x"]}, "reasoning_effort": "low", "seed": 3});
        assert!(check(&m(ok), true).is_ok());
    }
}

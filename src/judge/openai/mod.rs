//! OpenAI-compatible chat-completions judge (docs/model.md §4): the only async-openai import.
//!
//! One ordered query (a first, b second) = render the prompt template → check the context →
//! wait for the rate limits → POST `/chat/completions` through async-openai with **our**
//! transport (async-openai's retry layer is not installed, so [`crate::judge::openai::retry`] is the only
//! retry policy; every non-2xx keeps its HTTP status, also for llama.cpp/vLLM error bodies that
//! async-openai cannot parse) → parse the reply ([`parse`]) → re-ask an
//! invalid reply up to `max_invalid_retries` times → price the usage.
//!
//! Spend of one HTTP reply (USD): (uncached prompt · input + cached · cached_input +
//! completion · output) / 10⁶, with completion tokens including reasoning tokens (OpenAI's
//! convention; a provider that reports more reasoning than completion tokens evidently counts
//! them apart, and they are then added). A reply without `usage`, and a failed attempt the
//! provider may have billed (timeout, reply lost or garbled), are booked at their worst case.
//! Worst case of one attempt: (prompt bound · max(input, cached_input) + max_tokens · output)
//! / 10⁶, where the prompt bound is the rendered prompt's UTF-8 bytes + chat-template overhead
//! (no tokenizer makes more tokens than bytes). A query has 1 + max_invalid_retries *paid
//! attempts*: every reply and every possibly-billed failure takes one, unbilled failures (429,
//! 5xx, refused connections) do not. Its worst case, reserved before sending, is therefore
//! (1 + max_invalid_retries) · the attempt's worst case, and it can never cost more.

pub mod batch;
pub mod body;
mod client;
pub mod concurrency;
mod config;
pub mod endpoint;
mod errors;
pub mod extra_body;
pub mod parse;
pub mod prompt;
pub mod proxy;
pub mod ratelimit;
mod reply;
pub mod retry;
pub mod secret;
pub mod sse;

pub use self::client::*;
pub use self::config::*;
pub use self::errors::*;
pub use self::reply::*;

use self::concurrency::InFlightLimit;
use self::endpoint::Endpoint;
use self::parse::{Channel, ParsedOutcome, SoftMiss, TokenLogprob, VerdictFormat};
use self::prompt::{PromptTemplate, RenderedPrompt, fit_answers, truncate_to_bytes};
use self::proxy::ProxyEnv;
use self::ratelimit::RateLimits;
use self::retry::{Classify, RetryPolicy};
use self::secret::Secret;
use crate::domain::pool::Pool;
use crate::domain::verdict::{Invalid, InvalidNote, InvalidReason, JudgeReply, Usage, VerdictDetail};
use crate::judge::{BoxFuture, Judge, JudgeError, JudgeInfo, JudgeStats};
use async_openai::Client;
use async_openai::config::OpenAIConfig;
use async_openai::error::OpenAIError;
use async_openai::middleware::HttpRequestFactory;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

#[cfg(test)]
mod tests {
    use super::*;

    /// The worst case of every pair is the linear form of its answers' bytes: the parts order the
    /// pairs exactly as pricing each does; a template that transforms an answer has no parts.
    #[test]
    fn worst_case_parts_order_the_pairs_as_their_prices_or_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let pool = crate::domain::pool::Pool::new(
            "p".into(),
            "Which is better?".into(),
            (0..40)
                .map(|i| crate::domain::pool::Item {
                    id: format!("i{i}"),
                    text: Some("é word ".repeat(1 + (i * 7919) % 23)),
                    ..Default::default()
                })
                .collect(),
        )
        .unwrap();
        let info = |template: &str| {
            let prompt = dir.path().join("t.j2");
            std::fs::write(&prompt, template).unwrap();
            let cfg: OpenAiConfig = serde_json::from_value(json!({
                "base_url": "http://127.0.0.1:9/v1", "model": "m", "api_key_env": "X", "prompt": prompt,
                "max_tokens": 16, "max_invalid_retries": 2,
                "price": {"input_usd_per_mtok": 0.75, "output_usd_per_mtok": 4.5, "cached_input_usd_per_mtok": 0.1}
            }))
            .unwrap();
            OpenAiInfo::new(cfg).unwrap()
        };
        let plain = info("{{ task }}\nA: {{ answer_a }}\nB: {{ answer_b }}");
        let parts = plain.worst_case_parts(&pool).expect("a plain template has parts");
        let mut pairs: Vec<(usize, usize)> =
            (0..40).flat_map(|a| (0..40).map(move |b| (a, b))).filter(|(a, b)| a != b).collect();
        pairs.sort_by(|x, y| plain.worst_case_usd(&pool, x.0, x.1).total_cmp(&plain.worst_case_usd(&pool, y.0, y.1)));
        let key = |&(a, b): &(usize, usize)| parts.first[a] + parts.second[b];
        assert!(pairs.windows(2).all(|w| key(&w[0]) <= key(&w[1])), "parts order the pairs as their prices");
        let upper = info(
            "{{ task }}\nA: {{ answer_a | upper }}{% if answer_b | length > 60 %} long{% endif %}\nB: {{ answer_b }}",
        );
        assert!(upper.worst_case_parts(&pool).is_none(), "a template that changes the bytes has no parts");
    }

    /// The settings id of an API judge: its model and template change it, also an edit of a
    /// template branch the reference pair does not render (here: the multi-turn branch, under
    /// the same keys for every single-turn pair); its price and credentials do not.
    #[test]
    fn the_settings_id_of_an_api_judge_sees_its_whole_template() {
        let dir = tempfile::tempdir().unwrap();
        let info = |name: &str, template: &str, model: &str, price: f64, key_env: &str| {
            let prompt = dir.path().join(name);
            std::fs::write(&prompt, template).unwrap();
            let cfg: OpenAiConfig = serde_json::from_value(json!({
                "base_url": "http://127.0.0.1:9/v1", "model": model, "api_key_env": key_env, "prompt": prompt,
                "max_tokens": 16, "price": {"input_usd_per_mtok": price, "output_usd_per_mtok": 4.5}
            }))
            .unwrap();
            OpenAiInfo::new(cfg).unwrap()
        };
        let turns = |word: &str| {
            format!(
                "{{% if task_turns %}}{word}{{% else %}}{{{{ task }}}}{{% endif %}}\nA: {{{{ answer_a }}}}\nB: {{{{ answer_b }}}}"
            )
        };
        let base = info("a.j2", &turns("Turns:"), "m", 0.75, "X");
        let edited = info("b.j2", &turns("Dialogue:"), "m", 0.75, "X");
        let pool = crate::domain::pool::Pool::new(
            "p".into(),
            "Which is better?".into(),
            ["x", "y"]
                .iter()
                .map(|id| crate::domain::pool::Item {
                    id: (*id).into(),
                    text: Some("words".into()),
                    ..Default::default()
                })
                .collect(),
        )
        .unwrap();
        assert_eq!(base.cache_key(&pool, 0, 1), edited.cache_key(&pool, 0, 1), "single turn: one rendering");
        let id = crate::judge::settings_id;
        assert_ne!(id(&base), id(&edited));
        assert_eq!(id(&info("c.j2", &turns("Turns:"), "m", 9.0, "OTHER_KEY")), id(&base));
        assert_ne!(id(&info("d.j2", &turns("Turns:"), "m2", 0.75, "X")), id(&base));
    }

    #[test]
    fn the_tools_request_fields_win_over_extra_body() {
        // A config that skipped `prepare` (which rejects these keys) still sends the tool's own
        // limit and one choice.
        let dir = tempfile::tempdir().unwrap();
        let prompt = dir.path().join("t.j2");
        std::fs::write(&prompt, "{{ task }}\nA: {{ answer_a }}\nB: {{ answer_b }}").unwrap();
        let cfg: OpenAiConfig = serde_json::from_value(json!({
            "base_url": "http://127.0.0.1:9/v1", "model": "m", "api_key_env": "X", "prompt": prompt,
            "max_tokens": 4, "price": {"input_usd_per_mtok": 1.0, "output_usd_per_mtok": 2.0},
            "extra_body": {"max_tokens": 4000, "max_completion_tokens": 4000, "n": 3, "model": "other", "cache_prompt": false}
        }))
        .unwrap();
        let j = OpenAiJudge::new(cfg, None).unwrap();
        let body = j.info.request_body(&j.info.template.render("task", "x", "y").unwrap());
        assert_eq!((&body["max_tokens"], &body["n"], &body["model"]), (&json!(4), &json!(1), &json!("m")));
        assert!(body.get("max_completion_tokens").is_none(), "{body}");
        assert_eq!(body["cache_prompt"], false, "vendor fields still pass");
    }

    /// A run folder's copy of the config (its credentials `***`) is read back (its judge's
    /// description and cache keys), but no client is built on it: nothing is sent there.
    #[test]
    fn a_redacted_base_url_is_read_back_but_never_sent_to() {
        let dir = tempfile::tempdir().unwrap();
        let prompt = dir.path().join("t.j2");
        std::fs::write(&prompt, "{{ task }}\nA: {{ answer_a }}\nB: {{ answer_b }}").unwrap();
        let cfg = |url: &str| -> OpenAiConfig {
            serde_json::from_value(json!({
                "base_url": url, "model": "m", "api_key_env": "X", "prompt": prompt,
                "price": {"input_usd_per_mtok": 1.0, "output_usd_per_mtok": 2.0}
            }))
            .unwrap()
        };
        let real = cfg("http://u:pw-91@127.0.0.1:9/v1?token=t0k3n");
        let stored = cfg("http://***:***@127.0.0.1:9/v1?token=***");
        let (a, b) = (OpenAiInfo::new(real.clone()).unwrap(), OpenAiInfo::new(stored.clone()).unwrap());
        assert_eq!(a.describe(), b.describe());
        assert!(OpenAiJudge::new(real, None).is_ok());
        let e = OpenAiJudge::new(stored, None).err().unwrap().to_string();
        assert!(e.starts_with("judge.openai.base_url: holds `***`"), "{e}");
    }

    #[test]
    fn price_books_cached_and_reasoning_once() {
        let p = Price { input: 2.0, cached_input: 0.5, output: 8.0 };
        // 1000 prompt (300 cached), 200 completion (150 reasoning, included in completion).
        let u = Usage { prompt_tokens: 1000, completion_tokens: 200, cached_tokens: 300, reasoning_tokens: 150 };
        let want = (700.0 * 2.0 + 300.0 * 0.5 + 200.0 * 8.0) / 1e6;
        assert!((p.cost_usd(&u) - want).abs() < 1e-15);
        // A provider reporting reasoning apart from (and larger than) completion: added.
        let u2 = Usage { prompt_tokens: 10, completion_tokens: 5, cached_tokens: 0, reasoning_tokens: 40 };
        assert!((p.cost_usd(&u2) - (10.0 * 2.0 + 45.0 * 8.0) / 1e6).abs() < 1e-15);
        // Cached reported beyond prompt (counted apart): both priced, nothing subtracted.
        let u3 = Usage { prompt_tokens: 10, completion_tokens: 0, cached_tokens: 20, reasoning_tokens: 0 };
        assert!((p.cost_usd(&u3) - (10.0 * 2.0 + 20.0 * 0.5) / 1e6).abs() < 1e-15);
    }

    #[test]
    fn http_statuses_are_classified() {
        use CallErrorKind::*;
        let llama_ctx = r#"{"error":{"code":400,"message":"request (5030 tokens) exceeds the available context size (4096 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":5030,"n_ctx":4096}}"#;
        let openai_ctx = r#"{"error":{"message":"This model's maximum context length is 128000 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}"#;
        let quota = r#"{"error":{"message":"You exceeded your current quota","type":"insufficient_quota"}}"#;
        let cases = [
            (429, "", RateLimited),
            (429, quota, Quota),
            (500, "oops", Server),
            (503, "", Server),
            (408, "", Server),
            (400, llama_ctx, ContextOverflow),
            (400, openai_ctx, ContextOverflow),
            (400, r#"{"error":{"code":400,"message":"'messages' is required"}}"#, Client),
            (401, "", Auth),
            (404, r#"{"message":"File Not Found","type":"not_found_error","code":404}"#, Client),
            (501, "", Client),
        ];
        for (s, b, want) in cases {
            assert_eq!(classify_http(s, b), want, "{s} {b}");
        }
        let e = CallError {
            usage: None,
            kind: RateLimited,
            status: Some(429),
            retry_after: Some(Duration::from_secs(2)),
            message: String::new(),
        };
        assert!(e.retryable());
        assert_eq!(Classify::retry_after(&e), Some(Duration::from_secs(2)));
        assert!(!CallError { usage: None, kind: Quota, ..e.clone() }.retryable());
        assert!(!CallError { usage: None, kind: ContextOverflow, ..e.clone() }.retryable());
        assert!(CallError { usage: None, kind: Timeout, ..e }.retryable());
    }

    #[test]
    fn replies_are_read_leniently() {
        // A llama.cpp server's reply, trimmed.
        let v: Value = serde_json::from_str(r#"{"choices":[{"finish_reason":"length","index":0,"message":{"role":"assistant","content":"A"},
            "logprobs":{"content":[{"id":32,"token":"A","bytes":[65],"logprob":-0.5170,"top_logprobs":[{"id":32,"token":"A","bytes":[65],"logprob":-0.5170},{"id":33,"token":"B","bytes":[66],"logprob":-0.9109}]}]}}],
            "created":1795980776,"model":"qwen2.5-coder-1.5b","object":"chat.completion",
            "usage":{"completion_tokens":1,"prompt_tokens":394,"total_tokens":395,"prompt_tokens_details":{"cached_tokens":226}},"timings":{"cache_n":226}}"#).unwrap();
        let r = ChatReply::from_value(&v).unwrap();
        assert_eq!(r.content.as_deref(), Some("A"));
        assert_eq!(r.finish_reason.as_deref(), Some("length"));
        assert_eq!(
            r.usage,
            Some(Usage { prompt_tokens: 394, completion_tokens: 1, cached_tokens: 226, reasoning_tokens: 0 })
        );
        let toks = r.logprobs.as_ref().unwrap();
        assert_eq!((toks.len(), toks[0].top.len(), toks[0].bytes.as_deref()), (1, 2, Some(&[65u8][..])));
        // "eos" finish reason, content parts, no usage, no id.
        let v2 = json!({"choices":[{"message":{"content":[{"type":"text","text":"[["},{"type":"text","text":"B]]"}]},"finish_reason":"eos"}]});
        let r2 = ChatReply::from_value(&v2).unwrap();
        assert_eq!(r2.content.as_deref(), Some("[[B]]"));
        assert_eq!(r2.usage, None);
        // An error object inside a 200 (OpenRouter style) keeps its code.
        let e = ChatReply::from_value(&json!({"error":{"code":429,"message":"rate limited upstream"}})).unwrap_err();
        assert_eq!((e.kind, e.status), (CallErrorKind::RateLimited, Some(429)));
        let e = ChatReply::from_value(&json!({"choices":[]})).unwrap_err();
        assert_eq!(e.kind, CallErrorKind::Malformed);
        // A content that is a number or an object is garbled, not empty; its usage is kept.
        let usage = json!({"prompt_tokens": 10, "completion_tokens": 2});
        for (content, says) in [(json!(5), "a number (5)"), (json!({"text": "A"}), "an object ({\"text\":\"A\"})")] {
            let v = json!({"choices": [{"message": {"content": content}}], "usage": usage});
            let e = ChatReply::from_value(&v).unwrap_err();
            assert_eq!((e.kind, e.usage.map(|u| u.total())), (CallErrorKind::Malformed, Some(12)));
            assert_eq!(e.message, format!("message.content is {says}; expected a text or a list of content parts"));
        }
        // Fractions of a token count whole; a usage without token counts is named, not dropped.
        let v = json!({"choices": [{"message": {"content": "A"}}], "usage": {"prompt_tokens": 1.5, "completion_tokens": 2.2}});
        let r = ChatReply::from_value(&v).unwrap();
        assert_eq!((r.usage.map(|u| (u.prompt_tokens, u.completion_tokens)), r.usage_unreadable), (Some((2, 3)), None));
        let v = json!({"choices": [{"message": {"content": "A"}}], "usage": {"prompt_tokens": -1000000}});
        let r = ChatReply::from_value(&v).unwrap();
        assert_eq!((r.usage, r.usage_unreadable.as_deref()), (None, Some(r#"{"prompt_tokens":-1000000}"#)));
        let r = ChatReply::from_value(&json!({"choices": [{"message": {"content": "A"}}]})).unwrap();
        assert_eq!(r.usage_unreadable, None);
        // A null content is an empty one (a tool call or a refusal may carry the verdict).
        let v = json!({"choices": [{"message": {"content": null, "refusal": "no"}}]});
        assert_eq!(ChatReply::from_value(&v).unwrap().refusal.as_deref(), Some("no"));
    }

    #[test]
    fn errors_inside_a_200_reply_are_the_errors_they_report() {
        // A router's upstream failure: finish_reason "error" with an error object, code 502.
        let v = json!({"id": "gen-1", "choices": [{"index": 0, "finish_reason": "error",
            "message": {"role": "assistant", "content": ""},
            "error": {"code": 502, "message": "Upstream provider returned 502"}}]});
        let e = ChatReply::from_value(&v).unwrap_err();
        assert_eq!((e.kind, e.status), (CallErrorKind::Server, Some(502)));
        assert!(e.retryable() && !e.kind.maybe_billed());
        assert!(in_band_error(&v).is_some());
        // The same with usage reported: retried, and booked at its worst case.
        let mut billed = v.clone();
        billed["usage"] = json!({"prompt_tokens": 900, "completion_tokens": 0});
        let e = ChatReply::from_value(&billed).unwrap_err();
        assert_eq!(e.kind, CallErrorKind::UpstreamBilled);
        assert!(e.retryable() && e.kind.maybe_billed());
        // finish_reason "error" alone, a string code, a top-level error next to choices.
        let e =
            ChatReply::from_value(&json!({"choices": [{"finish_reason": "error", "message": {"content": "[[A]]"}}]}))
                .unwrap_err();
        assert_eq!((e.kind, e.status), (CallErrorKind::Server, None));
        let e = ChatReply::from_value(&json!({"choices": [{"finish_reason": "error", "error": {"code": "429"}}]}))
            .unwrap_err();
        assert_eq!((e.kind, e.status), (CallErrorKind::RateLimited, Some(429)));
        // An ordinary completion is not an error, even with an `error: null` field.
        let ok = json!({"choices": [{"finish_reason": "stop", "error": null, "message": {"content": "[[B]]"}}]});
        assert!(in_band_error(&ok).is_none() && ChatReply::from_value(&ok).is_ok());
    }

    #[test]
    fn every_output_channel_is_read() {
        let v = json!({"choices": [{"finish_reason": "tool_calls", "message": {"role": "assistant", "content": null,
            "reasoning_content": "Let me think: A is vague.",
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "verdict", "arguments": "{\"winner\": \"B\"}"}}]}}]});
        let r = ChatReply::from_value(&v).unwrap();
        assert_eq!(r.content, None);
        assert_eq!(r.tool_arguments, vec!["{\"winner\": \"B\"}".to_string()]);
        assert_eq!(r.channels["reasoning_content"], "Let me think: A is vague.");
        assert!(r.channels["tool_calls"].contains("verdict") && r.channels["finish_reason"] == "tool_calls");
        // Legacy function_call with object arguments, a refusal content part, the legacy `text`.
        let v = json!({"choices": [{"finish_reason": "stop", "message": {
            "content": [{"type": "refusal", "refusal": "I can't compare these."}],
            "function_call": {"name": "verdict", "arguments": {"verdict": "tie"}}}}]});
        let r = ChatReply::from_value(&v).unwrap();
        assert_eq!(r.refusal.as_deref(), Some("I can't compare these."));
        assert_eq!(r.tool_arguments, vec!["{\"verdict\":\"tie\"}".to_string()]);
        let r = ChatReply::from_value(&json!({"choices": [{"text": "[[A]]", "finish_reason": "stop"}]})).unwrap();
        assert_eq!(r.content.as_deref(), Some("[[A]]"));
    }

    #[test]
    fn retry_after_headers() {
        let mut h = reqwest::header::HeaderMap::new();
        h.insert("retry-after", "2".parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::from_secs(2)));
        h.insert("retry-after-ms", "150".parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::from_millis(150)), "ms wins");
        // An HTTP-date, measured from the response's Date (RFC 9110 §10.2.3).
        let mut h2 = reqwest::header::HeaderMap::new();
        h2.insert("retry-after", "Wed, 21 Oct 2015 07:28:07 GMT".parse().unwrap());
        h2.insert("date", "Wed, 21 Oct 2015 07:28:00 GMT".parse().unwrap());
        assert_eq!(retry_after(&h2), Some(Duration::from_secs(7)));
        h2.insert("retry-after", "in a while".parse().unwrap());
        assert_eq!(retry_after(&h2), None);
    }
}

//! A chat completion as the judge reads it ([`ChatReply`]): content parts, reasoning and
//! refusal channels, tool calls, finish reason, usage (tokens) and logprobs, read leniently from
//! the JSON body, and errors a provider reports inside an HTTP 200 reply.

use super::*;

/// The parts of a chat completion the judge uses (read leniently from JSON: unknown finish
/// reasons, missing ids and vendor fields are fine).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ChatReply {
    /// Text of the first choice (content parts joined; the legacy `text` field when there is
    /// no message content).
    pub content: Option<String>,
    /// The `refusal` field (or a content part of type `refusal`).
    pub refusal: Option<String>,
    /// `finish_reason` as sent (`stop`, `length`, `content_filter`, `tool_calls`, `eos`, …).
    pub finish_reason: Option<String>,
    /// `usage`, if reported.
    pub usage: Option<Usage>,
    /// A `usage` that was sent but holds no token counts (negative, text, no prompt tokens), as
    /// sent (clipped): booked like a missing one, and said so.
    pub usage_unreadable: Option<String>,
    /// The content tokens with their log-probabilities (`logprobs.content`), when sent.
    pub logprobs: Option<Vec<TokenLogprob>>,
    /// Arguments of each tool call (`tool_calls[].function.arguments`, then a legacy
    /// `function_call.arguments`), in order.
    pub tool_arguments: Vec<String>,
    /// Every non-empty output channel as received: `content`, `reasoning_content`,
    /// `reasoning`, `refusal`, `tool_calls`, `finish_reason` (stored with a reply that holds no
    /// verdict).
    pub channels: BTreeMap<String, String>,
}

pub(super) fn u(v: &Value, path: &[&str]) -> Option<u64> {
    let mut x = v;
    for p in path {
        x = x.get(p)?;
    }
    // A fraction of a token is counted as a whole one: booked never below what was reported.
    x.as_u64().or_else(|| x.as_f64().filter(|f| *f >= 0.0).map(|f| f.ceil() as u64))
}

/// The error a 200 reply reports instead of a completion: a top-level `error` object without
/// choices, or a choice with `finish_reason: error` and/or its own `error` object (how some
/// routers report a failed upstream call). `None` for an ordinary completion.
pub(super) fn in_band_error(v: &Value) -> Option<Value> {
    let choice = v.get("choices").and_then(Value::as_array).and_then(|c| c.first());
    let Some(choice) = choice else {
        return v.get("error").filter(|e| !e.is_null()).cloned();
    };
    let own = choice.get("error").filter(|e| !e.is_null());
    let finish_error = choice.get("finish_reason").and_then(Value::as_str) == Some("error");
    match (own, finish_error) {
        (Some(e), _) => Some(e.clone()),
        (None, true) => Some(v.get("error").filter(|e| !e.is_null()).cloned().unwrap_or(Value::Null)),
        (None, false) => None,
    }
}

pub(super) fn text_of(v: &Value) -> Option<String> {
    match v {
        Value::String(s) if !s.trim().is_empty() => Some(s.clone()),
        Value::Null | Value::String(_) => None,
        other => Some(other.to_string()),
    }
}

/// A `usage` object: prompt tokens (`prompt_tokens` or `input_tokens`; required), completion
/// tokens (`completion_tokens` or `output_tokens`), cached and reasoning tokens from their
/// details. `None` when it is not an object or has no prompt tokens.
pub(super) fn usage_of(us: &Value) -> Option<Usage> {
    if !us.is_object() {
        return None;
    }
    let prompt = u(us, &["prompt_tokens"]).or_else(|| u(us, &["input_tokens"]))?;
    let completion = u(us, &["completion_tokens"]).or_else(|| u(us, &["output_tokens"])).unwrap_or(0);
    Some(Usage {
        prompt_tokens: prompt,
        completion_tokens: completion,
        cached_tokens: u(us, &["prompt_tokens_details", "cached_tokens"]).unwrap_or(0),
        reasoning_tokens: u(us, &["completion_tokens_details", "reasoning_tokens"]).unwrap_or(0),
    })
}

impl ChatReply {
    /// Read a chat-completion JSON value.
    ///
    /// # Errors
    /// [`CallError`]: an error reported inside the reply (an `error` object, or
    /// `finish_reason: error`; classified by its code like the HTTP status it stands for, a
    /// 5xx without code), or no choices.
    pub fn from_value(v: &Value) -> Result<Self, CallError> {
        let usage = v.get("usage").and_then(usage_of);
        if let Some(err) = in_band_error(v) {
            let code = err
                .get("code")
                .and_then(|c| c.as_u64().or_else(|| c.as_str().and_then(|s| s.trim().parse().ok())))
                .and_then(|c| u16::try_from(c).ok())
                .filter(|c| (100..600).contains(c));
            let body = if err.is_null() {
                "finish_reason \"error\" without an error object".to_owned()
            } else {
                err.to_string()
            };
            let mut kind = code.map_or_else(
                || if body.contains("rate") { CallErrorKind::RateLimited } else { CallErrorKind::Server },
                |c| classify_http(c, &body),
            );
            let billed = usage.is_some_and(|u| u.total() > 0);
            if kind == CallErrorKind::Server && billed {
                kind = CallErrorKind::UpstreamBilled;
            }
            return Err(CallError {
                usage: usage.filter(|_| billed),
                kind,
                status: code,
                retry_after: None,
                message: format!("error in a 2xx reply: {}", clip(&body, 300)),
            });
        }
        let choices = v.get("choices").and_then(Value::as_array).filter(|c| !c.is_empty());
        let Some(choice) = choices.and_then(|c| c.first()) else {
            // Billed at the usage it reports (at least).
            return Err(CallError {
                usage,
                kind: CallErrorKind::Malformed,
                status: None,
                retry_after: None,
                message: format!("reply has no choices: {}", clip(&v.to_string(), 200)),
            });
        };
        let msg = choice.get("message");
        // A content that is neither text nor parts (a number, an object) is a garbled reply,
        // not an empty one: say what was sent. Billed at the usage it reports.
        if let Some(c) = msg.and_then(|m| m.get("content"))
            && !matches!(c, Value::String(_) | Value::Array(_) | Value::Null)
        {
            let kind = match c {
                Value::Bool(_) => "true or false",
                Value::Number(_) => "a number",
                _ => "an object",
            };
            return Err(CallError {
                usage,
                kind: CallErrorKind::Malformed,
                status: None,
                retry_after: None,
                message: format!(
                    "message.content is {kind} ({}); expected a text or a list of content parts",
                    clip(&c.to_string(), 100)
                ),
            });
        }
        let mut refusal = msg.and_then(|m| m.get("refusal")).and_then(Value::as_str).map(str::to_owned);
        let content = msg.and_then(|m| m.get("content")).and_then(|c| match c {
            Value::String(s) => Some(s.clone()),
            Value::Array(parts) => {
                for p in parts {
                    if p.get("type").and_then(Value::as_str) == Some("refusal")
                        && let Some(r) = p.get("refusal").and_then(Value::as_str)
                    {
                        refusal.get_or_insert_with(String::new).push_str(r);
                    }
                }
                Some(
                    parts
                        .iter()
                        .filter(|p| {
                            !matches!(p.get("type").and_then(Value::as_str), Some("refusal" | "thinking" | "reasoning"))
                        })
                        .filter_map(|p| p.get("text").and_then(Value::as_str).or_else(|| p.as_str()))
                        .collect::<String>(),
                )
            }
            _ => None,
        });
        let content = content.or_else(|| choice.get("text").and_then(Value::as_str).map(str::to_owned));
        let finish_reason = choice.get("finish_reason").and_then(Value::as_str).map(str::to_owned);
        let mut tool_arguments = Vec::new();
        let args_text = |a: &Value| match a {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        if let Some(calls) = msg.and_then(|m| m.get("tool_calls")).and_then(Value::as_array) {
            for c in calls {
                if let Some(a) = c.get("function").and_then(|f| f.get("arguments")) {
                    tool_arguments.push(args_text(a));
                }
            }
        }
        if let Some(a) = msg.and_then(|m| m.get("function_call")).and_then(|f| f.get("arguments")) {
            tool_arguments.push(args_text(a));
        }
        let mut channels = BTreeMap::new();
        if let Some(c) = content.as_deref().filter(|c| !c.trim().is_empty()) {
            channels.insert("content".to_owned(), c.to_owned());
        }
        for key in ["reasoning_content", "reasoning", "reasoning_details", "tool_calls", "function_call"] {
            if let Some(t) = msg.and_then(|m| m.get(key)).and_then(text_of) {
                channels.insert(key.to_owned(), t);
            }
        }
        if let Some(r) = refusal.as_deref().filter(|r| !r.trim().is_empty()) {
            channels.insert("refusal".to_owned(), r.to_owned());
        }
        if let Some(f) = &finish_reason {
            channels.insert("finish_reason".to_owned(), f.clone());
        }
        let logprobs = choice
            .get("logprobs")
            .and_then(|l| l.get("content"))
            .and_then(Value::as_array)
            .map(|toks| {
                toks.iter()
                    .filter_map(|t| {
                        let lp = |x: &Value| x.get("logprob").and_then(Value::as_f64);
                        let bytes = |x: &Value| {
                            x.get("bytes")
                                .and_then(Value::as_array)
                                .and_then(|b| b.iter().map(|n| n.as_u64().and_then(|n| u8::try_from(n).ok())).collect())
                        };
                        Some(TokenLogprob {
                            token: t.get("token")?.as_str()?.to_owned(),
                            bytes: bytes(t),
                            logprob: lp(t)?,
                            top: t
                                .get("top_logprobs")
                                .and_then(Value::as_array)
                                .map(|tops| {
                                    tops.iter()
                                        .filter_map(|x| Some((x.get("token")?.as_str()?.to_owned(), lp(x)?)))
                                        .collect()
                                })
                                .unwrap_or_default(),
                        })
                    })
                    .collect::<Vec<_>>()
            })
            .filter(|v| !v.is_empty());
        let usage_unreadable =
            v.get("usage").filter(|u| !u.is_null() && usage.is_none()).map(|u| clip(&u.to_string(), 120));
        Ok(Self { content, refusal, finish_reason, usage, usage_unreadable, logprobs, tool_arguments, channels })
    }
}

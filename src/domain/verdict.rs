//! Verdicts as every layer sees them: a judge's reply to one ordered query ([`JudgeReply`],
//! its [`Usage`] in tokens and cost in USD), why a reply is invalid ([`InvalidReason`]), and a
//! verdict on item indices as the fit reads it ([`ItemVerdict`]); docs/model.md §1, §4.

use serde::{Deserialize, Serialize};

/// One verdict on an ordered pair of items (item indices), outcome y ∈ [0, 1], weight w.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ItemVerdict {
    /// Item shown first (slot A).
    pub a: usize,
    /// Item shown second (slot B).
    pub b: usize,
    /// 1 first-shown wins, 0 second-shown wins, ½ tie, or soft P(A).
    pub y: f64,
    /// Weight (1 by default).
    pub w: f64,
}

/// Token usage of one verdict (tokens), as reported by the provider.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens (including cached ones).
    #[serde(default)]
    pub prompt_tokens: u64,
    /// Completion tokens (including reasoning ones).
    #[serde(default)]
    pub completion_tokens: u64,
    /// Of the prompt tokens, how many were served from the provider's cache.
    #[serde(default)]
    pub cached_tokens: u64,
    /// Of the completion tokens, how many were hidden reasoning.
    #[serde(default)]
    pub reasoning_tokens: u64,
}

impl Usage {
    /// Component-wise sum, saturating at `u64::MAX` (a reply may claim any count).
    pub fn add(&mut self, o: &Usage) {
        self.prompt_tokens = self.prompt_tokens.saturating_add(o.prompt_tokens);
        self.completion_tokens = self.completion_tokens.saturating_add(o.completion_tokens);
        self.cached_tokens = self.cached_tokens.saturating_add(o.cached_tokens);
        self.reasoning_tokens = self.reasoning_tokens.saturating_add(o.reasoning_tokens);
    }

    /// The output tokens billed: the completion tokens, which include the reasoning ones (OpenAI's
    /// convention); a provider that reports more reasoning than completion tokens counts them
    /// apart, and both are billed (docs/live.md, "Prices").
    pub fn output_tokens(&self) -> u64 {
        if self.reasoning_tokens <= self.completion_tokens {
            self.completion_tokens
        } else {
            self.completion_tokens.saturating_add(self.reasoning_tokens)
        }
    }

    /// Prompt plus completion tokens, saturating.
    pub fn total(&self) -> u64 {
        self.prompt_tokens.saturating_add(self.completion_tokens)
    }
}

/// The most one query may cost, USD, in judgments made elsewhere (a replay recording, imported
/// judgments): far above any provider's price, so a larger one is a mistake of the file; and
/// low enough that no sum of such costs overflows (10¹² of them sum to 10¹⁸ USD), so the books
/// and result.json always hold a number.
pub const MAX_QUERY_USD: f64 = 1e6;

/// The most one query may have cost, USD, in a run folder's own records (verdicts.jsonl,
/// intents.jsonl): above what any reply can cost at the highest price the tool accepts ($1 a
/// token: prices are at most 1e6 USD per million tokens) with every token count at its 64-bit
/// ceiling (≈ 5.5·10¹⁹ USD an attempt), with room for many attempts; a larger value is a
/// damaged line, and no sum of 10¹² such costs overflows.
pub const MAX_BOOKED_USD: f64 = 1e24;

/// `usd` as the cost of one query: finite, ≥ 0 and at most [`MAX_QUERY_USD`].
///
/// # Errors
/// The value and what was expected (`1e308: expected a number of USD from 0 to 1000000, the most
/// one query may cost`).
pub fn check_query_usd(usd: f64) -> Result<f64, String> {
    if (0.0..=MAX_QUERY_USD).contains(&usd) {
        Ok(usd)
    } else {
        Err(format!(
            "{}: expected a number of USD from 0 to {}, the most one query may cost",
            crate::domain::fmt::value(usd),
            crate::domain::fmt::value(MAX_QUERY_USD)
        ))
    }
}

/// Deserialize a cost (USD) of a run folder's own records: a number from 0 to
/// [`MAX_BOOKED_USD`] (serde `deserialize_with`).
///
/// # Errors
/// A value that is not a number, or is negative or above the bound.
pub fn booked_usd<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    let usd = f64::deserialize(d)?;
    if (0.0..=MAX_BOOKED_USD).contains(&usd) {
        Ok(usd)
    } else {
        Err(serde::de::Error::custom(format!(
            "{}: expected a cost from 0 to {} USD",
            crate::domain::fmt::value(usd),
            crate::domain::fmt::value(MAX_BOOKED_USD)
        )))
    }
}

/// The answer of a judge to one ordered query.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JudgeReply {
    /// Outcome y ∈ [0, 1], or `None` if the reply was invalid (excluded from the fit).
    pub y: Option<f64>,
    /// Why the reply was invalid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invalid_reason: Option<InvalidNote>,
    /// Raw reply text (live judges).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw: Option<String>,
    /// Tokens used, summed over attempts.
    #[serde(default)]
    pub usage: Usage,
    /// Cost in USD, summed over attempts (read checked by [`booked_usd`]).
    #[serde(default, deserialize_with = "booked_usd")]
    pub cost_usd: f64,
    /// Attempts made (1 = first try).
    #[serde(default = "one")]
    pub attempts: u32,
    /// Wall time of the query in milliseconds.
    #[serde(default)]
    pub latency_ms: u64,
    /// What the parser saw besides the outcome (strong preference, channel, raw channels).
    #[serde(default, flatten)]
    pub detail: VerdictDetail,
}

impl JudgeReply {
    /// A free, instant reply with outcome `y` (`None`: invalid) and nothing else: one attempt.
    pub fn outcome(y: Option<f64>) -> Self {
        Self {
            y,
            invalid_reason: None,
            raw: None,
            usage: Usage::default(),
            cost_usd: 0.0,
            attempts: 1,
            latency_ms: 0,
            detail: VerdictDetail::default(),
        }
    }

    /// `invalid_reason` as stored (`no_verdict: after 2 asks`).
    pub fn invalid_reason_text(&self) -> Option<String> {
        self.invalid_reason.as_ref().map(ToString::to_string)
    }

    /// Why the reply is invalid (`unknown` when it does not say); `None` for a valid reply.
    pub fn why_invalid(&self) -> Option<InvalidReason> {
        if self.y.is_some() {
            return None;
        }
        Some(
            self.invalid_reason
                .as_ref()
                .map_or_else(|| InvalidReason::Recorded("unknown".into()), |n| n.reason.clone()),
        )
    }
}

/// What a live judge's parser saw besides the outcome; stored on the verdict line
/// (docs/live.md, "Parsing rules").
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VerdictDetail {
    /// The judge stated a strong preference (`[[A>>B]]`): its likelihood term is weighted by
    /// `model.strong_preference_weight` in the fit.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub strong_preference: bool,
    /// Where the verdict was read when not from the content's text: `json` (a JSON object in
    /// the content) or `tool_call` (a tool call's arguments).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict_from: Option<String>,
    /// Every non-empty output channel of a reply that held no verdict (`content`,
    /// `reasoning_content`, `reasoning`, `refusal`, `tool_calls`, `finish_reason`), key redacted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_channels: Option<std::collections::BTreeMap<String, String>>,
}

/// A candidate answer (or pair side) whose text holds verdict-shaped text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VerdictShaped {
    /// Item id (run) or `pair/side` (audit).
    pub id: String,
    /// The line holding it (at most 80 characters).
    pub excerpt: String,
}

/// Count and share of one invalid reason.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ReasonCount {
    /// Verdicts (or replies) with this reason.
    pub count: usize,
    /// `count` / all verdicts (or replies), in [0, 1].
    pub rate: f64,
}

/// Why a stored verdict (or a reply) is invalid: the head of its `invalid_reason`, the part
/// before `:` (`"no_verdict: after 2 asks"` → the parser's [`Invalid::NoVerdict`]).
///
/// Written as its name in result.json, audit.json and the summary (`no_verdict`, `context_overflow`,
/// or the recorded text of a replayed verdict); names order alphabetically.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum InvalidReason {
    /// A reply without a usable verdict, by the parser's reason (docs/live.md, "Parsing rules").
    Reply(Invalid),
    /// A query over the judge's context, not sent or refused by the server (`on_context_overflow`).
    ContextOverflow,
    /// Another reason recorded in a verdict file (a replayed recording, an older version), or
    /// `unknown` for an invalid verdict without one.
    Recorded(String),
}

impl InvalidReason {
    /// The reason of a stored `invalid_reason` string (its part before `:`; empty → `unknown`).
    pub fn of(stored: &str) -> Self {
        let head = stored.split(':').next().unwrap_or("").trim();
        match head {
            "" => Self::Recorded("unknown".into()),
            "context_overflow" => Self::ContextOverflow,
            _ => Invalid::from_reason(head).map_or_else(|| Self::Recorded(head.into()), Self::Reply),
        }
    }

    /// The name written to files and the summary.
    pub fn as_str(&self) -> &str {
        match self {
            Self::Reply(r) => r.as_str(),
            Self::ContextOverflow => "context_overflow",
            Self::Recorded(s) => s,
        }
    }
}

impl From<Invalid> for InvalidReason {
    fn from(r: Invalid) -> Self {
        Self::Reply(r)
    }
}

impl std::fmt::Display for InvalidReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Ord for InvalidReason {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl PartialOrd for InvalidReason {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Serialize for InvalidReason {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for InvalidReason {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(|s| Self::of(&s))
    }
}

/// Why a stored verdict is invalid: the [`InvalidReason`] and what came with it (`after 2 asks`,
/// `HTTP 400 …`). Written as `reason: detail` (`no_verdict: after 2 asks`), or `reason` alone,
/// the form verdicts.jsonl has always held; read back into the same two parts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidNote {
    /// The reason.
    pub reason: InvalidReason,
    /// What came with it, if anything.
    pub detail: Option<String>,
}

impl InvalidNote {
    /// A reason with a detail.
    pub fn new(reason: impl Into<InvalidReason>, detail: impl Into<String>) -> Self {
        Self { reason: reason.into(), detail: Some(detail.into()) }
    }

    /// How many times the query was asked before it was stored invalid: the N of a live
    /// judge's `after N asks` detail, else 1.
    pub fn asks(&self) -> u32 {
        self.detail
            .as_deref()
            .and_then(|d| d.strip_prefix("after ")?.split_whitespace().next()?.parse::<u32>().ok())
            .filter(|&n| n > 0)
            .unwrap_or(1)
    }

    /// The note of a stored `reason: detail` text (`reason` alone: no detail; empty: `unknown`).
    pub fn parse(stored: &str) -> Self {
        let (head, detail) = match stored.split_once(':') {
            Some((h, d)) => (h, Some(d.trim().to_owned()).filter(|d| !d.is_empty())),
            None => (stored, None),
        };
        Self { reason: InvalidReason::of(head), detail }
    }
}

impl From<InvalidReason> for InvalidNote {
    fn from(reason: InvalidReason) -> Self {
        Self { reason, detail: None }
    }
}

impl std::fmt::Display for InvalidNote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.detail {
            Some(d) => write!(f, "{}: {d}", self.reason),
            None => write!(f, "{}", self.reason),
        }
    }
}

impl Serialize for InvalidNote {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for InvalidNote {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(|s| Self::parse(&s))
    }
}

/// Invalid verdicts by reason, with their share of `total` stored verdicts.
pub fn invalid_by_reason(
    total: usize,
    reasons: impl IntoIterator<Item = InvalidReason>,
) -> std::collections::BTreeMap<InvalidReason, ReasonCount> {
    let mut m: std::collections::BTreeMap<InvalidReason, ReasonCount> = std::collections::BTreeMap::new();
    for r in reasons {
        m.entry(r).or_insert(ReasonCount { count: 0, rate: 0.0 }).count += 1;
    }
    for v in m.values_mut() {
        v.rate = if total > 0 { v.count as f64 / total as f64 } else { 0.0 };
    }
    m
}

/// Why a reply carries no usable verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Invalid {
    /// No content (or only whitespace / reasoning) and no verdict in another channel.
    Empty,
    /// The model refused (refusal field, or refusal wording without a verdict).
    Refused,
    /// Cut at `max_tokens` before a verdict (`finish_reason = length`).
    Truncated,
    /// The provider's content filter stopped the reply.
    ContentFilter,
    /// Verdict markers that contradict each other, or "A or B".
    Ambiguous,
    /// No verdict marker found.
    NoVerdict,
    /// `verdict_format: json`, and the reply holds neither a JSON object nor a text verdict.
    NotJson,
}

impl Invalid {
    /// Every reason, in a fixed order.
    pub const ALL: [Invalid; 7] = [
        Invalid::Empty,
        Invalid::Refused,
        Invalid::Truncated,
        Invalid::ContentFilter,
        Invalid::Ambiguous,
        Invalid::NoVerdict,
        Invalid::NotJson,
    ];

    /// Short machine-readable name (stored as `invalid_reason`).
    pub fn as_str(self) -> &'static str {
        match self {
            Invalid::Empty => "empty",
            Invalid::Refused => "refused",
            Invalid::Truncated => "truncated",
            Invalid::ContentFilter => "content_filter",
            Invalid::Ambiguous => "ambiguous",
            Invalid::NoVerdict => "no_verdict",
            Invalid::NotJson => "not_json",
        }
    }

    /// The reason of a stored `invalid_reason` (`"no_verdict: after 2 asks"` → `NoVerdict`).
    pub fn from_reason(reason: &str) -> Option<Self> {
        let head = reason.split(':').next().unwrap_or("").trim();
        Self::ALL.into_iter().find(|r| r.as_str() == head)
    }

    /// The likely cause of many invalid replies of this kind, and what to change.
    pub fn likely_cause(self) -> &'static str {
        match self {
            Invalid::NoVerdict => {
                "the parser finds no verdict in the replies: the prompt asks for a format the parser does not read (see the parsing rules in docs/live.md), verdict_format does not match the prompt, or the model is too small to follow the format; read `raw` in verdicts.jsonl"
            }
            Invalid::NotJson => {
                "verdict_format is json but the replies hold no JSON object: the prompt does not ask for JSON, or the endpoint ignores response_format; use prompts/pairwise_json.j2 or set verdict_format: text"
            }
            Invalid::Ambiguous => {
                "the replies name both answers as the verdict: the model is too small to follow the format, or the prompt invites \"A or B\""
            }
            Invalid::Truncated => {
                "replies are cut at max_tokens before their verdict: raise max_tokens (reasoning models need hundreds) or ask for a shorter reply"
            }
            Invalid::Empty => {
                "the replies are empty: a reasoning model spends max_tokens before answering (raise max_tokens), or the server returns nothing"
            }
            Invalid::Refused | Invalid::ContentFilter => {
                "the model refuses, or the provider filters, these texts: try another model or provider"
            }
        }
    }
}

fn one() -> u32 {
    1
}

/// The answer of a simulated judge to one ordered query (item indices).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Answer {
    /// A verdict y ∈ [0, 1].
    Verdict(f64),
    /// An invalid verdict: a comparison (it counts against the budget), excluded from the fit.
    Invalid,
    /// No verdict exists (a recording lacks the query): not a comparison; the pair is set aside,
    /// as the runner does with the judge error `Unavailable`.
    Unavailable,
}

/// A stored verdict of one run's judge, on item indices: the ordered pair (`a` shown first), the
/// outcome (`None`: an invalid reply, not fitted), its cost (USD), tokens and the weight of its
/// likelihood term.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredVerdict {
    /// Item shown first.
    pub a: usize,
    /// Item shown second.
    pub b: usize,
    /// Outcome y ∈ [0, 1], `None` when invalid.
    pub y: Option<f64>,
    /// Cost, USD.
    pub cost_usd: f64,
    /// Tokens.
    pub usage: Usage,
    /// Weight of its likelihood term (1, or `strong_preference_weight` for a strong preference).
    pub weight: f64,
}

impl StoredVerdict {
    /// The verdict as the fit sees it (`None` for an invalid reply).
    pub fn verdict(&self) -> Option<ItemVerdict> {
        self.y.map(|y| ItemVerdict { a: self.a, b: self.b, y, w: self.weight })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_invalid_note_says_how_often_its_query_was_asked() {
        assert_eq!(InvalidNote::parse("no_verdict: after 2 asks").asks(), 2);
        assert_eq!(InvalidNote::parse("truncated: after 1 asks").asks(), 1);
        // No count (a recording's note, a context overflow not sent): one.
        assert_eq!(InvalidNote::parse("refused").asks(), 1);
        assert_eq!(InvalidNote::parse("context_overflow: HTTP 400: too long; not sent").asks(), 1);
        assert_eq!(InvalidNote::parse("no_verdict: after 0 asks").asks(), 1);
    }

    #[test]
    fn invalid_notes_read_back_as_written() {
        for s in [
            "no_verdict: after 2 asks",
            "context_overflow: HTTP 400: too long; not sent",
            "refused",
            "invalid in the recording",
        ] {
            let n = InvalidNote::parse(s);
            assert_eq!(n.to_string(), s);
            assert_eq!(serde_json::from_value::<InvalidNote>(serde_json::to_value(&n).unwrap()).unwrap(), n);
        }
        let n = InvalidNote::parse("no_verdict: after 2 asks");
        assert_eq!((n.reason, n.detail.as_deref()), (Invalid::NoVerdict.into(), Some("after 2 asks")));
        assert_eq!(InvalidNote::parse("context_overflow: x").reason, InvalidReason::ContextOverflow);
        assert_eq!(InvalidNote::parse("").reason, InvalidReason::Recorded("unknown".into()));
    }
}

#[cfg(test)]
mod usd_tests {
    use super::*;

    #[test]
    fn a_query_cost_is_finite_non_negative_and_at_most_the_bound() {
        for ok in [0.0, 1e-9, 0.25, MAX_QUERY_USD] {
            assert_eq!(check_query_usd(ok), Ok(ok));
        }
        for bad in [-1e-12, f64::NAN, f64::INFINITY, 1e308, MAX_QUERY_USD * 1.000001] {
            assert!(check_query_usd(bad).is_err(), "{bad}");
        }
        // 10¹² queries at either bound sum to a finite number: the books never reach inf.
        assert!((MAX_BOOKED_USD * 1e12).is_finite() && MAX_QUERY_USD < MAX_BOOKED_USD);
        // The dearest reply the tool can book: every token count at its ceiling, $1 a token.
        let ceiling = u64::MAX as f64 * 3.0 * 1e6 / 1e6;
        assert!(ceiling * 1000.0 < MAX_BOOKED_USD, "{ceiling}");
        let r: JudgeReply = serde_json::from_str(r#"{"y": 1, "cost_usd": 2e19}"#).unwrap();
        assert_eq!(r.cost_usd, 2e19);
        let e = serde_json::from_str::<JudgeReply>(r#"{"y": 1, "cost_usd": 1e308}"#).unwrap_err().to_string();
        assert!(e.starts_with("1e308: expected a cost from 0 to 1e24 USD"), "{e}");
    }
}

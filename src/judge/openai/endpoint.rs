//! Failures that are no one pair's fault: the endpoint is not there, refuses the key, does not
//! know the model, or rejects a request field. Each is classified from the HTTP status and the
//! server's text, and its message names the setting to change (`base_url`, `api_key_env`,
//! `model`, `max_tokens_field`, `temperature`, `logprobs`, `extra_body`, or the proxy
//! variable). The run stops on such an error instead of paying for many identical failures
//! (docs/live.md, "Retries, rate limits, concurrency").
//!
//! Also here: reading the reply to the free request a run makes before its first query,
//! `GET {base_url}/models` (the preflight). Only a failure that no query could get past stops the
//! run there: no connection (nothing listening, unknown host, TLS), a refused key (401), or a
//! proxy that refuses (403/407 through a proxy). Anything else (404: some servers have no model
//! list; 403: a key may lack the list permission; 5xx) leaves the verdict to the first queries.

use super::proxy::{ProxyEnv, ProxyRoute};
use super::{CallErrorKind, MaxTokensField, OpenAiConfig};
use serde_json::Value;

/// An endpoint-wide fault: the setting to change and a message that names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndpointFault {
    /// The config key (`base_url`, `api_key_env`, `model`, `max_tokens_field`, …) or proxy
    /// variable (`HTTP_PROXY`, …) to change.
    pub setting: String,
    /// What happened and what to do, naming the setting.
    pub message: String,
}

/// What the classifier knows about the judge's settings.
#[derive(Debug, Clone)]
pub struct Endpoint {
    /// `base_url` as shown in messages (credentials redacted, [`super::secret::redact_url`]).
    base_url: String,
    /// The preflight URL: `{base_url}/models`, the query of `base_url` kept at the end.
    models_url: String,
    host: String,
    port: Option<u16>,
    loopback: bool,
    model: String,
    api_key_env: String,
    key_sent: bool,
    max_tokens_field: MaxTokensField,
    temperature_sent: bool,
    logprobs_sent: bool,
    extra_keys: Vec<String>,
    proxy: Option<ProxyRoute>,
}

const MODEL_UNKNOWN: [&str; 7] = [
    "model_not_found",
    "model not found",
    "does not exist",
    "not a valid model",
    "unknown model",
    "invalid model",
    "no such model",
];

const FIELD_REJECTED: [&str; 9] = [
    "unsupported parameter",
    "unsupported_parameter",
    "unrecognized request argument",
    "unknown parameter",
    "unknown field",
    "extra inputs are not permitted",
    "extra_forbidden",
    "unsupported value",
    "is not supported",
];

impl Endpoint {
    /// The classifier for a prepared config (`key_sent`: whether an API key is sent).
    pub fn new(cfg: &OpenAiConfig, key_sent: bool, proxies: &ProxyEnv) -> Self {
        let url = reqwest::Url::parse(&cfg.base_url).ok();
        let host = url.as_ref().and_then(|u| u.host_str()).unwrap_or("").trim_matches(['[', ']']).to_owned();
        let loopback = host.parse::<std::net::IpAddr>().map(|a| a.is_loopback()).unwrap_or(false)
            || host.eq_ignore_ascii_case("localhost");
        Self {
            base_url: cfg.shown_base_url(),
            models_url: super::secret::RequestTarget::of(&cfg.base_url).url("/models"),
            port: url.as_ref().and_then(|u| u.port_or_known_default()),
            proxy: url.as_ref().and_then(|u| proxies.route(u)).cloned(),
            host,
            loopback,
            model: cfg.model.clone(),
            api_key_env: cfg.api_key_env.clone(),
            key_sent,
            max_tokens_field: cfg.max_tokens_field,
            temperature_sent: cfg.temperature.is_some(),
            logprobs_sent: cfg.logprobs,
            extra_keys: cfg.extra_body.as_ref().map(|m| m.keys().cloned().collect()).unwrap_or_default(),
        }
    }

    /// The proxy requests to the endpoint go through, if any.
    pub fn proxy(&self) -> Option<&ProxyRoute> {
        self.proxy.as_ref()
    }

    /// The preflight URL, `{base_url}/models`.
    pub fn models_url(&self) -> String {
        self.models_url.clone()
    }

    /// [`Endpoint::models_url`] as messages show it: the credentials of `base_url` (in its
    /// user-info, path or query) redacted (hunt 60: the "not among the models" warning printed
    /// `…/models?key=gsk_…` while the judge line masked it).
    fn shown_models_url(&self) -> String {
        super::secret::RequestTarget::of(&self.base_url).url("/models")
    }

    /// Classify a failed chat request (after its retries) from its kind, status and message
    /// (which holds the server's text); `None` when the failure may be the pair's own.
    pub fn classify(&self, kind: CallErrorKind, status: Option<u16>, message: &str) -> Option<EndpointFault> {
        let lower = message.to_lowercase();
        if kind == CallErrorKind::ContextOverflow {
            return None;
        }
        if kind == CallErrorKind::Connect {
            return Some(self.connect_fault(message));
        }
        if let (Some(p), Some(407 | 403)) = (&self.proxy, status) {
            return Some(self.proxy_fault(p, status.unwrap_or(0), message));
        }
        // The server's text, for the messages that name the status themselves.
        let prefix = status.map(|s| format!("HTTP {s}: ")).unwrap_or_default();
        let body = message.strip_prefix(prefix.as_str()).unwrap_or(message);
        match (kind, status) {
            (CallErrorKind::Stream, _) => Some(fault(
                "base_url",
                format!(
                    "{} answers with a stream (Content-Type: text/event-stream) holding no chat completion, although each request sends stream: false ({}); point judge.openai.base_url at an endpoint that honours stream: false",
                    self.base_url,
                    clip(message)
                ),
            )),
            (CallErrorKind::Quota, _) => Some(self.key_fault(
                429,
                body,
                "the account behind the key has no credit left; add credit, or use another key",
            )),
            (_, Some(401)) => Some(self.key_fault(401, body, "the endpoint refused the key")),
            (_, Some(403)) => Some(self.key_fault(403, body, "the key is not allowed to do this")),
            (_, Some(404 | 400 | 422))
                if lower.contains("model") && MODEL_UNKNOWN.iter().any(|h| lower.contains(h)) =>
            {
                Some(self.model_fault(message))
            }
            (_, Some(300..=399)) => Some(fault(
                "base_url",
                format!(
                    "{}/chat/completions answered HTTP {} ({}); a judge API answers where it is asked, and a followed redirect may drop the key or turn the POST into a GET, so none is followed: set judge.openai.base_url to the address it redirects to",
                    self.base_url,
                    status.unwrap_or(0),
                    clip(body)
                ),
            )),
            (_, Some(404)) => Some(fault(
                "base_url",
                format!(
                    "{}/chat/completions does not exist (HTTP 404: {}); judge.openai.base_url must be the API base including /v1 (e.g. http://127.0.0.1:8088/v1)",
                    self.base_url,
                    clip(body)
                ),
            )),
            (_, Some(400 | 422)) if FIELD_REJECTED.iter().any(|h| lower.contains(h)) => self.field_fault(&lower, body),
            _ => None,
        }
    }

    /// The fault of a request that could not connect (`reason`: the transport's text).
    pub fn connect_fault(&self, reason: &str) -> EndpointFault {
        let lower = reason.to_lowercase();
        if let Some(p) = &self.proxy {
            return fault(
                p.var,
                format!(
                    "cannot reach {} through {p}: {}; check that the proxy runs, or add {} to NO_PROXY to connect directly",
                    self.base_url,
                    clip(reason),
                    self.host
                ),
            );
        }
        let at = match self.port {
            Some(p) => format!("{}:{p}", self.host),
            None => self.host.clone(),
        };
        let what = if lower.contains("refused") {
            if self.loopback {
                format!(
                    "nothing is listening on {at} (connection refused). Start the judge server first: {}; or point judge.openai.base_url at the server you run",
                    what_to_start(self.port)
                )
            } else {
                format!(
                    "{at} refused the connection: is the server running? Check judge.openai.base_url ({})",
                    self.base_url
                )
            }
        } else if ["dns error", "failed to lookup", "name or service not known", "no address associated", "nodename"]
            .iter()
            .any(|h| lower.contains(h))
        {
            format!("the host {:?} cannot be resolved; check judge.openai.base_url ({})", self.host, self.base_url)
        } else if ["certificate", "tls", "handshake", "invalidcontenttype", "corrupt message"]
            .iter()
            .any(|h| lower.contains(h))
        {
            format!(
                "the TLS handshake with {at} failed ({}); check the scheme of judge.openai.base_url ({}): local servers usually speak http://",
                clip(reason),
                self.base_url
            )
        } else {
            format!("cannot connect to {at} ({}); check judge.openai.base_url ({})", clip(reason), self.base_url)
        };
        fault("base_url", format!("the judge at {} cannot be reached: {what}", self.base_url))
    }

    /// Read the preflight reply (`GET {base_url}/models`): `Ok(warnings)` to show, or the fault
    /// that stops the run (a refused key, a refusing proxy).
    ///
    /// # Errors
    /// [`EndpointFault`] for 401, and for 403/407 through a proxy.
    pub fn models_reply(&self, status: u16, body: &str) -> Result<Vec<String>, EndpointFault> {
        if let (Some(p), 403 | 407) = (&self.proxy, status) {
            return Err(self.proxy_fault(p, status, body));
        }
        match status {
            401 => Err(self.key_fault(401, body, "the endpoint refused the key")),
            403 => Ok(vec![format!(
                "{} answered HTTP 403 ({}); the key may lack the permission to list models, and the first queries will tell whether it may query {:?}",
                self.shown_models_url(),
                clip(body),
                self.model
            )]),
            300..=399 => Ok(vec![format!(
                "{} answered HTTP {status} ({}); redirects are not followed: if the queries are redirected too, set judge.openai.base_url to the address it redirects to",
                self.shown_models_url(),
                clip(body)
            )]),
            404 => Ok(vec![format!(
                "{} answered HTTP 404; some servers have no model list, but if the queries fail with 404 too, judge.openai.base_url must be the API base including /v1",
                self.shown_models_url()
            )]),
            200..=299 => {
                let Ok(reply) = serde_json::from_str::<Value>(body) else {
                    // A web page (a base_url without /v1 on a server with a UI) or a proxy's page.
                    let first: String = body.split_whitespace().collect::<Vec<_>>().join(" ");
                    let first = if first.chars().count() > 80 {
                        format!("{}…", first.chars().take(80).collect::<String>())
                    } else {
                        first
                    };
                    return Ok(vec![format!(
                        "{} answered HTTP {status} but not with JSON ({first:?}): that is not an OpenAI-compatible API; if the queries fail too, judge.openai.base_url must be the API base (often ending in /v1)",
                        self.shown_models_url()
                    )]);
                };
                let ids: Vec<String> = Some(reply)
                    .and_then(|v| v.get("data").and_then(Value::as_array).cloned())
                    .unwrap_or_default()
                    .iter()
                    .filter_map(|m| m.get("id").and_then(Value::as_str).map(str::to_owned))
                    .collect();
                if ids.is_empty() || ids.contains(&self.model) {
                    return Ok(Vec::new());
                }
                let shown: Vec<&str> = ids.iter().take(5).map(String::as_str).collect();
                Ok(vec![format!(
                    "judge.openai.model {:?} is not among the {} model(s) {} lists ({}{}); some servers (llama.cpp) answer any name, others will refuse the queries",
                    self.model,
                    ids.len(),
                    self.shown_models_url(),
                    shown.join(", "),
                    if ids.len() > 5 { ", …" } else { "" }
                )])
            }
            _ => Ok(Vec::new()),
        }
    }

    fn key_fault(&self, status: u16, message: &str, what: &str) -> EndpointFault {
        let var = &self.api_key_env;
        let sent = if self.key_sent {
            format!("the key sent is the value of ${var}")
        } else {
            format!("no key was sent, as ${var} is not set")
        };
        // Through a proxy, the refusal may be the proxy's (docs/live.md, "Proxies").
        let via = match &self.proxy {
            Some(p) => format!(
                " (through {p}: if the key is right, the proxy may be the one refusing; add {} to NO_PROXY to connect directly)",
                self.host
            ),
            None => String::new(),
        };
        fault(
            "api_key_env",
            format!(
                "HTTP {status} from {}{via}: {what} ({}); {sent}: check judge.openai.api_key_env and that the key is valid for this endpoint and model {:?}",
                self.base_url,
                clip(message),
                self.model
            ),
        )
    }

    fn model_fault(&self, message: &str) -> EndpointFault {
        fault(
            "model",
            format!(
                "the endpoint does not serve model {:?} ({}); set judge.openai.model to a model {} serves (GET {} lists them)",
                self.model,
                clip(message),
                self.base_url,
                self.shown_models_url()
            ),
        )
    }

    fn proxy_fault(&self, p: &ProxyRoute, status: u16, message: &str) -> EndpointFault {
        let what = if status == 407 { "the proxy asks for credentials" } else { "the refusal may be the proxy's own" };
        fault(
            p.var,
            format!(
                "HTTP {status} through {p}, not from the judge directly: the request for {} went through the proxy and {what} ({}); add {} to NO_PROXY to connect directly, or fix {}",
                self.base_url,
                clip(message),
                self.host,
                p.var
            ),
        )
    }

    /// A 400/422 rejecting one of the fields we send: which one, and the setting behind it.
    fn field_fault(&self, lower: &str, message: &str) -> Option<EndpointFault> {
        let mut sent: Vec<(&str, &str)> = Vec::new(); // (request field, setting)
        match self.max_tokens_field {
            MaxTokensField::MaxTokens => sent.push(("max_tokens", "max_tokens_field")),
            MaxTokensField::MaxCompletionTokens => sent.push(("max_completion_tokens", "max_tokens_field")),
            MaxTokensField::Both => {
                sent.push(("max_completion_tokens", "max_tokens_field"));
                sent.push(("max_tokens", "max_tokens_field"));
            }
        }
        if self.temperature_sent {
            sent.push(("temperature", "temperature"));
        }
        if self.logprobs_sent {
            sent.push(("top_logprobs", "logprobs"));
            sent.push(("logprobs", "logprobs"));
        }
        for k in &self.extra_keys {
            sent.push((k, "extra_body"));
        }
        // The field named first is the one rejected ("'max_tokens' … use 'max_completion_tokens'").
        let (field, setting) = sent
            .iter()
            .filter_map(|&(f, s)| field_position(lower, f).map(|pos| (pos, f, s)))
            .min_by_key(|&(pos, f, _)| (pos, std::cmp::Reverse(f.len())))
            .map(|(_, f, s)| (f, s))?;
        let todo = match (setting, field) {
            ("max_tokens_field", "max_tokens") => {
                "set judge.openai.max_tokens_field: max_completion_tokens (OpenAI's reasoning models require it)".to_owned()
            }
            ("max_tokens_field", _) => {
                "set judge.openai.max_tokens_field: max_tokens (most OpenAI-compatible servers know only that one)"
                    .to_owned()
            }
            ("temperature", _) => {
                "set judge.openai.temperature: null to leave the field out (some reasoning models accept only their default)"
                    .to_owned()
            }
            ("logprobs", _) => "set judge.openai.logprobs: false".to_owned(),
            _ => format!("remove {field:?} from judge.openai.extra_body"),
        };
        Some(fault(
            setting,
            format!(
                "the endpoint rejects the request field {field:?} (HTTP 400: {}); {todo}; the setting is {setting}",
                clip(message)
            ),
        ))
    }
}

fn fault(setting: &str, message: String) -> EndpointFault {
    EndpointFault { setting: setting.to_owned(), message }
}

/// Where `field` occurs in `lower` as a whole word (not inside a longer name such as
/// `max_tokens` inside `max_completion_tokens`… or `logprobs` inside `top_logprobs`).
fn field_position(lower: &str, field: &str) -> Option<usize> {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    lower.match_indices(field).map(|(i, _)| i).find(|&i| {
        let before = lower[..i].chars().next_back();
        let after = lower[i + field.len()..].chars().next();
        !before.is_some_and(word) && !after.is_some_and(word)
    })
}

/// The scheme and port a base URL is reached on, in words (`http, port 8088`), for the dry
/// run's endpoint probe.
pub fn scheme_and_port(base_url: &str) -> String {
    match reqwest::Url::parse(base_url) {
        Ok(u) => match u.port_or_known_default() {
            Some(p) => format!("{}, port {p}", u.scheme()),
            None => u.scheme().to_string(),
        },
        Err(_) => "an unreadable URL".into(),
    }
}

/// What to start for a local endpoint, from its port (the usual defaults of local servers).
pub fn what_to_start(port: Option<u16>) -> String {
    match port {
        Some(8080) => "llama.cpp's server listens here by default (`llama-server -m MODEL.gguf`)".into(),
        Some(8000) => "vLLM listens here by default (`vllm serve MODEL`)".into(),
        Some(11434) => "Ollama listens here (`ollama serve`)".into(),
        Some(1234) => "LM Studio's local server listens here (start it in LM Studio)".into(),
        Some(p) => format!(
            "an OpenAI-compatible server on port {p}, e.g. llama.cpp `llama-server -m MODEL.gguf --port {p}` or vLLM `vllm serve MODEL --port {p}` (the shipped configs/local.yaml shows one), or to try the run offline the stand-in `cargo run --example fake_judge -- {p}` (docs/live.md)"
        ),
        None => "an OpenAI-compatible server (see configs/local.yaml)".into(),
    }
}

fn clip(s: &str) -> String {
    let t = s.trim();
    if t.chars().count() <= 240 { t.to_owned() } else { format!("{}…", t.chars().take(240).collect::<String>()) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn cfg(base: &str) -> OpenAiConfig {
        let yaml = format!(
            "base_url: {base}\nmodel: gpt-x\napi_key_env: JUDGE_KEY\nprompt: p.j2\nprice: {{input_usd_per_mtok: 1, output_usd_per_mtok: 2}}\n"
        );
        let mut c: OpenAiConfig = crate::store::yaml::from_str(&yaml).unwrap();
        c.prompt = PathBuf::from("p.j2");
        c
    }

    fn ep(base: &str) -> Endpoint {
        Endpoint::new(&cfg(base), true, &ProxyEnv::default())
    }

    #[test]
    fn unsupported_max_tokens_names_max_tokens_field() {
        let body = r#"{"error":{"message":"Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.","type":"invalid_request_error","param":"max_tokens","code":"unsupported_parameter"}}"#;
        let f = ep("https://api.openai.com/v1").classify(CallErrorKind::Client, Some(400), body).unwrap();
        assert_eq!(f.setting, "max_tokens_field");
        assert!(f.message.contains("max_tokens_field: max_completion_tokens"), "{}", f.message);
        // The client's message carries the status in front of the server's text: said once.
        let f = ep("https://api.openai.com/v1")
            .classify(CallErrorKind::Client, Some(400), &format!("HTTP 400: {body}"))
            .unwrap();
        assert!(
            f.message.starts_with("the endpoint rejects the request field \"max_tokens\" (HTTP 400: {\"error\""),
            "{}",
            f.message
        );
        let f = ep("https://x.test/v1").classify(CallErrorKind::Auth, Some(401), "HTTP 401: bad key").unwrap();
        assert!(
            f.message.starts_with("HTTP 401 from https://x.test/v1: the endpoint refused the key (bad key);"),
            "{}",
            f.message
        );
        // The other way round: a server that knows only max_tokens.
        let mut c = cfg("http://127.0.0.1:8000/v1");
        c.max_tokens_field = MaxTokensField::MaxCompletionTokens;
        let e = Endpoint::new(&c, false, &ProxyEnv::default());
        let vllm = r#"{"object":"error","message":"[{'type': 'extra_forbidden', 'loc': ('body', 'max_completion_tokens'), 'msg': 'Extra inputs are not permitted'}]","type":"BadRequestError","code":400}"#;
        let f = e.classify(CallErrorKind::Client, Some(400), vllm).unwrap();
        assert_eq!(f.setting, "max_tokens_field");
        assert!(f.message.contains("max_tokens_field: max_tokens"), "{}", f.message);
        // temperature, logprobs, extra_body.
        let t = r#"Unsupported value: 'temperature' does not support 0 with this model. Only the default (1) value is supported."#;
        assert_eq!(
            ep("https://x.test/v1").classify(CallErrorKind::Client, Some(400), t).unwrap().setting,
            "temperature"
        );
        let mut c = cfg("https://x.test/v1");
        c.logprobs = true;
        c.extra_body = Some(serde_json::from_str(r#"{"reasoning_effort":"low"}"#).unwrap());
        let e = Endpoint::new(&c, true, &ProxyEnv::default());
        let f = e
            .classify(CallErrorKind::Client, Some(400), "Unrecognized request argument supplied: top_logprobs")
            .unwrap();
        assert_eq!(f.setting, "logprobs");
        let f = e.classify(CallErrorKind::Client, Some(400), "Unknown parameter: 'reasoning_effort'.").unwrap();
        assert_eq!(f.setting, "extra_body");
        assert!(f.message.contains("\"reasoning_effort\""), "{}", f.message);
        // A 400 about the prompt is the pair's own business.
        let other = r#"{"error":{"code":400,"message":"'messages' is required"}}"#;
        assert_eq!(e.classify(CallErrorKind::Client, Some(400), other), None);
    }

    #[test]
    fn keys_models_and_paths() {
        let e = ep("https://api.openai.com/v1");
        let f = e.classify(CallErrorKind::Auth, Some(401), "Incorrect API key provided").unwrap();
        assert_eq!(f.setting, "api_key_env");
        assert!(f.message.contains("$JUDGE_KEY") && f.message.contains("api_key_env"), "{}", f.message);
        assert_eq!(e.classify(CallErrorKind::Auth, Some(403), "forbidden").unwrap().setting, "api_key_env");
        let quota = r#"{"error":{"type":"insufficient_quota"}}"#;
        assert_eq!(e.classify(CallErrorKind::Quota, Some(429), quota).unwrap().setting, "api_key_env");
        let nf = r#"{"error":{"message":"The model `gpt-x` does not exist or you do not have access to it.","type":"invalid_request_error","code":"model_not_found"}}"#;
        let f = e.classify(CallErrorKind::Client, Some(404), nf).unwrap();
        assert_eq!(f.setting, "model");
        assert!(f.message.contains("judge.openai.model") && f.message.contains("/models"), "{}", f.message);
        let f = e.classify(CallErrorKind::Client, Some(404), r#"{"message":"File Not Found","code":404}"#).unwrap();
        assert_eq!(f.setting, "base_url");
        assert!(f.message.contains("/v1"), "{}", f.message);
        assert_eq!(e.classify(CallErrorKind::RateLimited, Some(429), "slow down"), None);
        assert_eq!(e.classify(CallErrorKind::Server, Some(500), "model does not exist"), None);
    }

    /// A 200 that is not JSON (a web page) is said, not taken for an API.
    #[test]
    fn a_models_reply_that_is_not_json_is_named() {
        let e = ep("http://127.0.0.1:8080");
        let w = e.models_reply(200, "<!DOCTYPE html>\n<html>\n  <head><title>llama.cpp</title></head></html>").unwrap();
        assert_eq!(
            w,
            [
                "http://127.0.0.1:8080/models answered HTTP 200 but not with JSON (\"<!DOCTYPE html> <html> <head><title>llama.cpp</title></head></html>\"): that is not an OpenAI-compatible API; if the queries fail too, judge.openai.base_url must be the API base (often ending in /v1)"
            ]
        );
        assert_eq!(e.models_reply(200, r#"{"data": [{"id": "gpt-x"}]}"#).unwrap(), Vec::<String>::new());
    }

    #[test]
    fn connection_failures_say_what_to_start() {
        let f = ep("http://127.0.0.1:8000/v1").connect_fault("tcp connect error: Connection refused (os error 111)");
        assert_eq!(f.setting, "base_url");
        assert!(f.message.contains("nothing is listening on 127.0.0.1:8000") && f.message.contains("vllm serve"));
        let f = ep("http://localhost:11434/v1").connect_fault("Connection refused");
        assert!(f.message.contains("ollama serve"), "{}", f.message);
        let f = ep("http://127.0.0.1:8088/v1").connect_fault("Connection refused");
        assert!(f.message.contains("--port 8088") && f.message.contains("judge.openai.base_url"), "{}", f.message);
        let f = ep("https://api.example.test/v1").connect_fault("dns error: failed to lookup address information");
        assert!(f.message.contains("cannot be resolved") && f.message.contains("api.example.test"), "{}", f.message);
        let f = ep("https://127.0.0.1:8080/v1").connect_fault("invalid peer certificate: UnknownIssuer");
        assert!(f.message.contains("http://"), "{}", f.message);
    }

    #[test]
    fn errors_through_a_proxy_name_it() {
        let proxies = ProxyEnv::from_lookup(|k| (k == "HTTP_PROXY").then(|| "http://u:pw@10.9.8.7:3128".to_owned()));
        let e = Endpoint::new(&cfg("http://judge.example.test/v1"), false, &proxies);
        let f = e.classify(CallErrorKind::Auth, Some(403), "Access denied").unwrap();
        assert_eq!(f.setting, "HTTP_PROXY");
        assert!(
            f.message.contains("through proxy http://10.9.8.7:3128 (from HTTP_PROXY)")
                && f.message.contains("NO_PROXY"),
            "{}",
            f.message
        );
        assert!(!f.message.contains("pw") && !f.message.contains("api_key_env"), "{}", f.message);
        assert_eq!(e.models_reply(403, "denied").unwrap_err().setting, "HTTP_PROXY");
        assert!(e.connect_fault("Connection refused").message.contains("through proxy http://10.9.8.7:3128"));
        // A 401 through it is the key's fault first, and the proxy is named (it was not).
        for f in [
            e.classify(CallErrorKind::Auth, Some(401), "bad key").unwrap(),
            e.models_reply(401, "bad key").unwrap_err(),
        ] {
            assert_eq!(f.setting, "api_key_env");
            assert!(
                f.message.starts_with("HTTP 401 from http://judge.example.test/v1 (through proxy http://10.9.8.7:3128 (from HTTP_PROXY): if the key is right, the proxy may be the one refusing; add judge.example.test to NO_PROXY"),
                "{}",
                f.message
            );
            assert!(!f.message.contains("pw"), "{}", f.message);
        }
        // A loopback judge never goes through it.
        let direct = Endpoint::new(&cfg("http://127.0.0.1:9/v1"), false, &proxies);
        assert!(direct.proxy().is_none());
        assert_eq!(direct.classify(CallErrorKind::Auth, Some(403), "x").unwrap().setting, "api_key_env");
    }

    #[test]
    fn model_list_warns_or_stops() {
        let e = ep("http://127.0.0.1:8080/v1");
        assert_eq!(e.models_reply(200, r#"{"object":"list","data":[{"id":"gpt-x"}]}"#), Ok(vec![]));
        let w = e.models_reply(200, r#"{"data":[{"id":"a"},{"id":"b"}]}"#).unwrap();
        assert!(w[0].contains("\"gpt-x\" is not among the 2 model(s)") && w[0].contains("a, b"), "{w:?}");
        // Not JSON: a warning (some servers list no models, but a web page is not the API).
        assert_eq!(e.models_reply(200, "not json").unwrap().len(), 1);
        assert_eq!(e.models_reply(401, "bad key").unwrap_err().setting, "api_key_env");
        assert_eq!(e.models_reply(404, "").unwrap().len(), 1);
        assert_eq!(e.models_reply(403, "").unwrap().len(), 1, "a key may lack the list permission");
        assert_eq!(e.models_reply(503, "").unwrap(), Vec::<String>::new());
        // A key in base_url's query or path is not printed (hunt 60 F4).
        for url in [
            "http://127.0.0.1:8080/v1?key=gsk_AbCdEf0123456789QwErTy0123456789",
            "http://127.0.0.1:8080/hf_AbCdEf0123456789QwErTy0123456789/v1",
        ] {
            let e = ep(url);
            let w = e.models_reply(200, r#"{"data":[{"id":"a"}]}"#).unwrap();
            assert!(w[0].contains("is not among the 1 model(s)") && !w[0].contains("AbCdEf0123456789"), "{w:?}");
            assert!(e.models_url().contains("AbCdEf0123456789"), "the request keeps it");
        }
    }
}

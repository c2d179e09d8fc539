//! A reply sent as server-sent events (`Content-Type: text/event-stream`) although the request
//! asked for `stream: false`: some servers and gateways stream anyway. The events are read as the
//! completion they are: either chunks (`choices[].delta`, OpenAI's streaming format, usage in
//! the last chunk) or a whole completion, each as a `data:` line, then `data: [DONE]`. The result
//! is one chat-completion JSON object, parsed like any other reply.

use serde_json::{Map, Value, json};

/// Whether a 2xx reply is an event stream: its content type says so, or its body starts with a
/// `data:` line.
pub fn is_event_stream(content_type: Option<&str>, body: &[u8]) -> bool {
    content_type.is_some_and(|c| c.trim_start().to_ascii_lowercase().starts_with("text/event-stream"))
        || body.iter().position(|b| !b.is_ascii_whitespace()).is_some_and(|i| body[i..].starts_with(b"data:"))
}

/// The completion an event stream carries (module docs).
///
/// # Errors
/// A message naming `text/event-stream` when no event holds a chat completion or chunk.
pub fn completion(body: &[u8]) -> Result<Value, String> {
    let text = String::from_utf8_lossy(body);
    let mut whole: Option<Value> = None;
    let (mut content, mut reasoning) = (String::new(), String::new());
    let mut seen_chunk = false;
    let (mut id, mut model, mut finish, mut usage, mut refusal) = (None, None, None, None, None::<String>);
    let mut logprobs: Vec<Value> = Vec::new();
    for line in text.lines() {
        let Some(data) = line.strip_prefix("data:") else { continue };
        let data = data.trim();
        if data.is_empty() || data == "[DONE]" {
            continue;
        }
        let Ok(v) = serde_json::from_str::<Value>(data) else { continue };
        if v.get("usage").is_some_and(Value::is_object) {
            usage = v.get("usage").cloned();
        }
        id = id.or_else(|| v.get("id").cloned());
        model = model.or_else(|| v.get("model").cloned());
        let Some(choice) = v.get("choices").and_then(Value::as_array).and_then(|c| c.first()) else {
            if v.get("error").is_some() {
                whole = Some(v);
            }
            continue;
        };
        if choice.get("message").is_some() {
            whole = Some(v.clone());
            continue;
        }
        let Some(delta) = choice.get("delta") else { continue };
        seen_chunk = true;
        let s = |k: &str| delta.get(k).and_then(Value::as_str);
        content.push_str(s("content").unwrap_or(""));
        reasoning.push_str(s("reasoning_content").or(s("reasoning")).unwrap_or(""));
        if let Some(r) = s("refusal") {
            refusal.get_or_insert_with(String::new).push_str(r);
        }
        if let Some(f) = choice.get("finish_reason").filter(|f| !f.is_null()) {
            finish = Some(f.clone());
        }
        if let Some(c) = choice.get("logprobs").and_then(|l| l.get("content")).and_then(Value::as_array) {
            logprobs.extend(c.iter().cloned());
        }
    }
    if let Some(mut w) = whole {
        if let (Some(u), Some(o)) = (usage, w.as_object_mut()) {
            o.entry("usage").or_insert(u);
        }
        return Ok(w);
    }
    if !seen_chunk {
        return Err(
            "the reply is a text/event-stream (a stream) with no chat completion in it, although the request asked for stream: false"
                .into(),
        );
    }
    let mut message = Map::new();
    message.insert("role".into(), json!("assistant"));
    message.insert("content".into(), json!(content));
    if !reasoning.is_empty() {
        message.insert("reasoning_content".into(), json!(reasoning));
    }
    if let Some(r) = refusal {
        message.insert("refusal".into(), json!(r));
    }
    let mut choice =
        json!({"index": 0, "message": Value::Object(message), "finish_reason": finish.unwrap_or(Value::Null)});
    if !logprobs.is_empty() {
        choice["logprobs"] = json!({"content": logprobs});
    }
    let mut out = json!({"object": "chat.completion", "choices": [choice]});
    for (k, v) in [("id", id), ("model", model), ("usage", usage)] {
        if let Some(v) = v {
            out[k] = v;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_and_a_whole_completion_are_read_as_one_completion() {
        let chunks = concat!(
            "data: {\"id\":\"c1\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n",
            "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"[[\"}}]}\n\n",
            "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"B]]\"},\"finish_reason\":\"stop\"}]}\n\n",
            "data: {\"id\":\"c1\",\"choices\":[],\"usage\":{\"prompt_tokens\":100,\"completion_tokens\":3}}\n\n",
            "data: [DONE]\n\n"
        );
        assert!(is_event_stream(Some("text/event-stream; charset=utf-8"), b""));
        assert!(is_event_stream(None, chunks.as_bytes()));
        assert!(!is_event_stream(Some("application/json"), b"{\"choices\":[]}"));
        let c = completion(chunks.as_bytes()).unwrap();
        assert_eq!(c["choices"][0]["message"]["content"], "[[B]]");
        assert_eq!(c["choices"][0]["finish_reason"], "stop");
        assert_eq!(c["usage"]["completion_tokens"], 3);
        assert_eq!((c["id"].as_str(), c["model"].as_str()), (Some("c1"), Some("m")));
        let whole = "data: {\"id\":\"x\",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"[[A]]\"},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":2}}\n\ndata: [DONE]\n";
        let c = completion(whole.as_bytes()).unwrap();
        assert_eq!(
            (c["choices"][0]["message"]["content"].as_str(), c["usage"]["prompt_tokens"].as_u64()),
            (Some("[[A]]"), Some(9))
        );
        let e = completion(b"data: hello\n\ndata: [DONE]\n").unwrap_err();
        assert!(e.contains("text/event-stream") && e.contains("stream: false"), "{e}");
    }
}

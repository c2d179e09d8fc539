//! Provider batch jobs of an OpenAI-compatible server (docs/live.md, "Batch dispatch"): the
//! Files API (`POST /files` with `purpose=batch`, `GET /files/{id}/content`) and the Batches API
//! (`POST /batches`, `GET /batches/{id}`, `GET /batches`, `POST /batches/{id}/cancel`), read
//! and written with async-openai's batch and file types over the judge's own HTTP client (its
//! key, `base_url` credentials, proxy and timeout). One input line is the chat-completions body
//! a live query would send; one output line's response body is read exactly like a live reply
//! (parse, price), at the batch price.

use super::*;
use crate::judge::{BatchApi, BatchJob, BatchJobStatus, BatchResult};
use async_openai::types::batches::{
    Batch, BatchCompletionWindow, BatchEndpoint, BatchRequest, BatchRequestInput, BatchRequestInputMethod,
    BatchRequestOutput, BatchStatus, ListBatchesResponse,
};
use async_openai::types::files::OpenAIFile;

fn job_of(b: Batch) -> BatchJob {
    let status = match b.status {
        BatchStatus::Validating => BatchJobStatus::Validating,
        BatchStatus::InProgress => BatchJobStatus::InProgress,
        BatchStatus::Finalizing => BatchJobStatus::Finalizing,
        BatchStatus::Completed => BatchJobStatus::Completed,
        BatchStatus::Failed => BatchJobStatus::Failed,
        BatchStatus::Expired => BatchJobStatus::Expired,
        BatchStatus::Cancelling => BatchJobStatus::Cancelling,
        BatchStatus::Cancelled => BatchJobStatus::Cancelled,
    };
    let errors = b
        .errors
        .map(|e| {
            e.data
                .into_iter()
                .map(|d| match d.line {
                    Some(l) => format!("{} (input line {l}): {}", d.code, d.message),
                    None => format!("{}: {}", d.code, d.message),
                })
                .collect()
        })
        .unwrap_or_default();
    let counts = b.request_counts.map(|c| (c.completed, c.failed, c.total));
    BatchJob {
        id: b.id,
        status,
        input_file_id: b.input_file_id,
        output_file_id: b.output_file_id,
        error_file_id: b.error_file_id,
        errors,
        counts,
    }
}

/// Read a batch output or error file (JSON lines of async-openai's `BatchRequestOutput`).
///
/// # Errors
/// The line (1-based) that is not such an object, and what is wrong with it.
pub fn parse_results(bytes: &[u8]) -> Result<Vec<BatchResult>, String> {
    let text = String::from_utf8_lossy(bytes);
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let o: BatchRequestOutput = serde_json::from_str(line)
            .map_err(|e| format!("line {}: not a batch result line (custom_id, response, error): {e}", i + 1))?;
        out.push(match (o.response, o.error) {
            (Some(r), _) => BatchResult::Response { custom_id: o.custom_id, status: r.status_code, body: r.body },
            (None, Some(e)) => BatchResult::Error { custom_id: o.custom_id, code: e.code, message: e.message },
            (None, None) => BatchResult::Error {
                custom_id: o.custom_id,
                code: "no_response".into(),
                message: "the line has neither a response nor an error".into(),
            },
        });
    }
    Ok(out)
}

impl OpenAiJudge {
    /// A request to `{base_url}{path}` with the key and `base_url`'s credentials.
    fn api(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        let mut req = self.http.request(method, self.target.url(path));
        if let Some(k) = &self.key {
            req = req.bearer_auth(k.expose());
        }
        if let Some((user, pass)) = &self.target.basic {
            req = req.basic_auth(user, pass.as_deref());
        }
        req
    }

    /// Send `req`; the body of a 2xx reply, or the failure (redacted).
    async fn api_bytes(&self, what: &str, req: reqwest::RequestBuilder) -> Result<Vec<u8>, JudgeError> {
        if self.stop.stopped() && what != "cancel the batch" && what != "read the batch" {
            return Err(JudgeError::NotSent { cost_usd: 0.0 });
        }
        let fail = |status: Option<u16>, message: String, retryable: bool| JudgeError::Request {
            status,
            message: self.redact(&format!("{what}: {message}")),
            retryable,
            cost_usd: 0.0,
        };
        let resp = req.send().await.map_err(|e| fail(None, reqwest_error(&e).message, true))?;
        let status = resp.status().as_u16();
        let bytes = resp.bytes().await.map_err(|e| fail(Some(status), reqwest_error(&e).message, true))?;
        if !(200..300).contains(&status) {
            let body = String::from_utf8_lossy(&bytes);
            return Err(fail(Some(status), clip(&body, 300), status == 429 || status >= 500));
        }
        Ok(bytes.to_vec())
    }

    async fn api_json<R: serde::de::DeserializeOwned>(
        &self,
        what: &str,
        req: reqwest::RequestBuilder,
    ) -> Result<R, JudgeError> {
        let bytes = self.api_bytes(what, req).await?;
        serde_json::from_slice(&bytes).map_err(|e| JudgeError::Request {
            status: None,
            message: self.redact(&format!(
                "{what}: the reply is not the expected object ({e}): {}",
                clip(&String::from_utf8_lossy(&bytes), 300)
            )),
            retryable: false,
            cost_usd: 0.0,
        })
    }
}

impl BatchApi for OpenAiJudge {
    fn batch_line(&self, pool: &Pool, a: usize, b: usize, custom_id: &str) -> Result<String, JudgeError> {
        let (ida, idb) = (pool.items[a].id.clone(), pool.items[b].id.clone());
        let q = self.info.render(pool, a, b).map_err(|message| JudgeError::Unjudgeable {
            a: ida.clone(),
            b: idb.clone(),
            message,
        })?;
        if q.over_context {
            return Err(JudgeError::Unjudgeable {
                a: ida,
                b: idb,
                message: format!(
                    "prompt over context_tokens {} (batch dispatch sends no such query)",
                    self.info.cfg.context_tokens.unwrap_or(0)
                ),
            });
        }
        let line = BatchRequestInput {
            custom_id: custom_id.to_owned(),
            method: BatchRequestInputMethod::POST,
            url: BatchEndpoint::V1ChatCompletions,
            body: Some(self.info.request_body(&q.prompt)),
        };
        Ok(serde_json::to_string(&line).expect("batch lines serialise"))
    }

    fn batch_reply(
        &self,
        pool: &Pool,
        a: usize,
        b: usize,
        status: u16,
        body: &Value,
        price_factor: f64,
    ) -> Result<JudgeReply, JudgeError> {
        let (ida, idb) = (pool.items[a].id.clone(), pool.items[b].id.clone());
        let t0 = Instant::now();
        let q = self.info.render(pool, a, b).map_err(|message| JudgeError::Unjudgeable {
            a: ida.clone(),
            b: idb.clone(),
            message,
        })?;
        // A failed request inside a batch is billed only for the usage it reports.
        let reported = ChatReply::from_value(body).ok().and_then(|r| r.usage);
        let cost_of = |u: &Usage| self.info.price.cost_usd(u) * price_factor;
        if !(200..300).contains(&status) {
            let message = clip(&in_band_error(body).unwrap_or_else(|| body.clone()).to_string(), 300);
            return Err(JudgeError::Request {
                status: Some(status),
                message: self.redact(&format!("in the batch: {message}")),
                retryable: status == 429 || status >= 500,
                cost_usd: reported.as_ref().map_or(0.0, cost_of),
            });
        }
        let reply = ChatReply::from_value(body).map_err(|e| JudgeError::Request {
            status: Some(status),
            message: self.redact(&format!("in the batch: {}", e.message)),
            retryable: false,
            cost_usd: 0.0,
        })?;
        let usage = self.booked_usage(&reply, &q.prompt, (&ida, &idb));
        let cost = cost_of(&usage);
        let raw = reply
            .content
            .as_deref()
            .filter(|c| !c.trim().is_empty() || reply.tool_arguments.is_empty())
            .or(reply.tool_arguments.last().map(String::as_str))
            .map(|c| self.redact(c));
        let answers = [text(pool, a), text(pool, b)];
        Ok(match self.read_verdict(&reply, answers) {
            Ok((y, detail)) => JudgeReply {
                y: Some(y),
                invalid_reason: None,
                raw,
                usage,
                cost_usd: cost,
                attempts: 1,
                latency_ms: t0.elapsed().as_millis() as u64,
                detail,
            },
            Err(inv) => {
                self.counters.invalid_replies.fetch_add(1, Ordering::Relaxed);
                *self.invalid_by_reason.lock().expect("not poisoned").entry(inv.into()).or_default() += 1;
                self.invalid_reply(
                    InvalidNote::new(inv, "in a batch (not re-asked)".to_owned()),
                    raw,
                    usage,
                    cost,
                    1,
                    t0,
                )
            }
        })
    }

    fn upload(&self, jsonl: Vec<u8>, filename: String) -> BoxFuture<'_, Result<String, JudgeError>> {
        Box::pin(async move {
            let part = reqwest::multipart::Part::bytes(jsonl)
                .file_name(filename)
                .mime_str("application/jsonl")
                .expect("a valid mime type");
            let form = reqwest::multipart::Form::new().text("purpose", "batch").part("file", part);
            self.counters.requests.fetch_add(1, Ordering::Relaxed);
            let f: OpenAIFile = self
                .api_json("upload the batch input", self.api(reqwest::Method::POST, "/files").multipart(form))
                .await?;
            Ok(f.id)
        })
    }

    fn create(&self, input_file_id: &str, round: u64) -> BoxFuture<'_, Result<BatchJob, JudgeError>> {
        let body = BatchRequest {
            input_file_id: input_file_id.to_owned(),
            endpoint: BatchEndpoint::V1ChatCompletions,
            completion_window: BatchCompletionWindow::W24H,
            metadata: Some(HashMap::from([("topk_judge_round".to_owned(), json!(round.to_string()))])),
            output_expires_after: None,
        };
        Box::pin(async move {
            self.counters.requests.fetch_add(1, Ordering::Relaxed);
            let b: Batch =
                self.api_json("create the batch", self.api(reqwest::Method::POST, "/batches").json(&body)).await?;
            Ok(job_of(b))
        })
    }

    fn retrieve<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<BatchJob, JudgeError>> {
        Box::pin(async move {
            self.counters.requests.fetch_add(1, Ordering::Relaxed);
            let b: Batch =
                self.api_json("read the batch", self.api(reqwest::Method::GET, &format!("/batches/{id}"))).await?;
            Ok(job_of(b))
        })
    }

    fn find_by_input<'a>(&'a self, input_file_id: &'a str) -> BoxFuture<'a, Result<Option<BatchJob>, JudgeError>> {
        Box::pin(async move {
            let mut after: Option<String> = None;
            // Newest first; a batch of this run's round was created after its input was
            // uploaded, so a few pages suffice in practice.
            for _ in 0..50 {
                let mut req = self.api(reqwest::Method::GET, "/batches").query(&[("limit", "100")]);
                if let Some(a) = &after {
                    req = req.query(&[("after", a.as_str())]);
                }
                self.counters.requests.fetch_add(1, Ordering::Relaxed);
                let page: ListBatchesResponse = self.api_json("list the batches", req).await?;
                if let Some(b) = page.data.iter().find(|b| b.input_file_id == input_file_id) {
                    return Ok(Some(job_of(b.clone())));
                }
                if !page.has_more || page.last_id.is_none() {
                    return Ok(None);
                }
                after = page.last_id;
            }
            Ok(None)
        })
    }

    fn cancel<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<BatchJob, JudgeError>> {
        Box::pin(async move {
            self.counters.requests.fetch_add(1, Ordering::Relaxed);
            let b: Batch = self
                .api_json("cancel the batch", self.api(reqwest::Method::POST, &format!("/batches/{id}/cancel")))
                .await?;
            Ok(job_of(b))
        })
    }

    fn content<'a>(&'a self, file_id: &'a str) -> BoxFuture<'a, Result<Vec<u8>, JudgeError>> {
        Box::pin(async move {
            self.counters.requests.fetch_add(1, Ordering::Relaxed);
            self.api_bytes("read the batch", self.api(reqwest::Method::GET, &format!("/files/{file_id}/content"))).await
        })
    }

    fn parse_results(&self, bytes: &[u8]) -> Result<Vec<BatchResult>, String> {
        parse_results(bytes)
    }
}

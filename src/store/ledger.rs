//! The verdict log `verdicts.jsonl`: one JSON object per paid verdict, appended, flushed and
//! fsynced as it arrives (a paid verdict is never lost), keyed so that at most one verdict per
//! ordered pair and judge configuration is ever stored (docs/model.md §1, frozen-judge protocol).
//!
//! On open, a torn last line (a crash mid-write) is detected, dropped with a warning and cut off
//! the file; a malformed line anywhere else is an error naming the line.

use crate::judge::Usage;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Errors of the verdict log.
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    /// I/O on the log file.
    #[error("verdict log {path}: {source}")]
    Io {
        /// File.
        path: PathBuf,
        /// Cause.
        source: std::io::Error,
    },
    /// A complete line that is not a verdict record.
    #[error("{path}:{line}: not a verdict record ({msg}); expected a JSON object with at least \"a\", \"b\" and \"y\"")]
    Parse {
        /// File.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// Cause.
        msg: String,
    },
}

/// One stored verdict (one line of verdicts.jsonl).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VerdictRecord {
    /// Cache key (hash of judge configuration, prompt and texts); empty for imported verdicts.
    #[serde(default)]
    pub key: String,
    /// Pool id.
    #[serde(default)]
    pub pool_id: String,
    /// Item shown first (slot A).
    pub a: String,
    /// Item shown second (slot B).
    pub b: String,
    /// Outcome in [0, 1]; `null` when invalid (excluded from the fit).
    pub y: Option<f64>,
    /// Why the verdict is invalid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invalid_reason: Option<String>,
    /// Judge description.
    #[serde(default)]
    pub judge: String,
    /// Raw reply text (live judges).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw: Option<String>,
    /// Tokens used.
    #[serde(default)]
    pub usage: Usage,
    /// Cost in USD.
    #[serde(default)]
    pub cost_usd: f64,
    /// Attempts (1 = first try).
    #[serde(default)]
    pub attempts: u32,
    /// Latency in milliseconds.
    #[serde(default)]
    pub latency_ms: u64,
    /// Unix time (seconds) when stored.
    #[serde(default)]
    pub ts: u64,
}

impl VerdictRecord {
    /// The record of a judge's reply to the ordered query (a first, b second) of `pool`.
    pub fn from_reply(
        key: String,
        pool: &crate::store::pool::Pool,
        a: usize,
        b: usize,
        judge: String,
        reply: crate::judge::JudgeReply,
    ) -> Self {
        Self {
            key,
            pool_id: pool.pool_id.clone(),
            a: pool.items[a].id.clone(),
            b: pool.items[b].id.clone(),
            y: reply.y,
            invalid_reason: reply.invalid_reason,
            judge,
            raw: reply.raw,
            usage: reply.usage,
            cost_usd: reply.cost_usd,
            attempts: reply.attempts,
            latency_ms: reply.latency_ms,
            ts: 0,
        }
    }
}

/// An open, append-only verdict log.
pub struct VerdictLog {
    path: PathBuf,
    file: File,
    records: Vec<VerdictRecord>,
    by_key: HashMap<String, usize>,
}

/// Read every record of a verdicts file (tolerating a torn last line).
///
/// Returns the records, the byte length of the good prefix, and a warning if a torn last line
/// was dropped.
///
/// # Errors
/// [`CacheError`] for unreadable files or malformed complete lines.
pub fn read_records(path: &Path) -> Result<(Vec<VerdictRecord>, u64, Option<String>), CacheError> {
    let bytes = std::fs::read(path).map_err(|source| CacheError::Io { path: path.to_owned(), source })?;
    let mut out = Vec::new();
    let mut good_len = 0u64;
    let mut warning = None;
    let mut start = 0usize;
    let mut line_no = 0usize;
    while start < bytes.len() {
        line_no += 1;
        let end = bytes[start..].iter().position(|b| *b == b'\n').map(|p| start + p);
        let (line, complete) = match end {
            Some(e) => (&bytes[start..e], true),
            None => (&bytes[start..], false),
        };
        let next = end.map(|e| e + 1).unwrap_or(bytes.len());
        let text = std::str::from_utf8(line).ok();
        let parsed = text.filter(|t| !t.trim().is_empty()).map(serde_json::from_str::<VerdictRecord>);
        match (parsed, complete) {
            (None, true) if text.is_some() => {} // blank line
            (Some(Ok(r)), _) => {
                if let Some(y) = r.y
                    && !(0.0..=1.0).contains(&y)
                {
                    return Err(CacheError::Parse {
                        path: path.to_owned(),
                        line: line_no,
                        msg: format!("y = {y} is outside [0, 1]"),
                    });
                }
                out.push(r);
            }
            (_, false) => {
                warning = Some(format!(
                    "{}:{line_no}: dropped a torn last line ({} bytes, no newline; a crash while writing?)",
                    path.display(),
                    line.len()
                ));
                break;
            }
            (Some(Err(e)), true) => {
                // A torn line followed only by whitespace is still the last line.
                if bytes[next..].iter().all(|b| b.is_ascii_whitespace()) && e.is_eof() {
                    warning = Some(format!("{}:{line_no}: dropped a torn last line ({e})", path.display()));
                    break;
                }
                return Err(CacheError::Parse { path: path.to_owned(), line: line_no, msg: e.to_string() });
            }
            (None, true) => {
                return Err(CacheError::Parse { path: path.to_owned(), line: line_no, msg: "invalid UTF-8".into() });
            }
        }
        good_len = next as u64;
        start = next;
    }
    Ok((out, good_len, warning))
}

impl VerdictLog {
    /// Open (or create) the log, load its records, and cut a torn last line off the file.
    ///
    /// # Errors
    /// [`CacheError`].
    pub fn open(path: &Path) -> Result<(Self, Option<String>), CacheError> {
        let io = |source| CacheError::Io { path: path.to_owned(), source };
        let (records, good_len, warning) = if path.exists() { read_records(path)? } else { (Vec::new(), 0, None) };
        let file = OpenOptions::new().create(true).append(true).read(true).open(path).map_err(io)?;
        if warning.is_some() {
            file.set_len(good_len).map_err(io)?;
            file.sync_all().map_err(io)?;
        }
        let mut by_key = HashMap::new();
        for (i, r) in records.iter().enumerate() {
            if !r.key.is_empty() {
                by_key.entry(r.key.clone()).or_insert(i);
            }
        }
        Ok((Self { path: path.to_owned(), file, records, by_key }, warning))
    }

    /// Append one record: write the line, flush, fsync. A record whose key is already stored is
    /// not written again (returns `false`).
    ///
    /// # Errors
    /// [`CacheError::Io`].
    pub fn append(&mut self, mut rec: VerdictRecord) -> Result<bool, CacheError> {
        if !rec.key.is_empty() && self.by_key.contains_key(&rec.key) {
            return Ok(false);
        }
        if rec.ts == 0 {
            rec.ts =
                std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
        }
        let mut line = serde_json::to_string(&rec).expect("records serialise");
        line.push('\n');
        let io = |source| CacheError::Io { path: self.path.clone(), source };
        self.file.write_all(line.as_bytes()).map_err(io)?;
        self.file.flush().map_err(io)?;
        self.file.sync_data().map_err(io)?;
        if !rec.key.is_empty() {
            self.by_key.insert(rec.key.clone(), self.records.len());
        }
        self.records.push(rec);
        Ok(true)
    }

    /// The record stored under `key`.
    pub fn get(&self, key: &str) -> Option<&VerdictRecord> {
        self.by_key.get(key).map(|i| &self.records[*i])
    }

    /// All records, in file order.
    pub fn records(&self) -> &[VerdictRecord] {
        &self.records
    }

    /// The log's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Append one failed query that cost money (no verdict stored) to `failed.jsonl`, so a resumed
/// run still counts its spend against `max_usd`: `{"key", "a", "b", "cost_usd", "error", "ts"}`.
///
/// # Errors
/// [`CacheError::Io`].
pub fn append_failed(path: &Path, key: &str, a: &str, b: &str, cost_usd: f64, error: &str) -> Result<(), CacheError> {
    let io = |source| CacheError::Io { path: path.to_owned(), source };
    let ts = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let mut line =
        serde_json::json!({"key": key, "a": a, "b": b, "cost_usd": cost_usd, "error": error, "ts": ts}).to_string();
    line.push('\n');
    let mut f = OpenOptions::new().create(true).append(true).open(path).map_err(io)?;
    f.write_all(line.as_bytes()).map_err(io)?;
    f.sync_data().map_err(io)
}

/// Total `cost_usd` of the lines of `failed.jsonl` whose key `mine` accepts (0 when the file is
/// absent; unreadable or torn lines are skipped).
pub fn failed_spend(path: &Path, mine: impl Fn(&str) -> bool) -> f64 {
    let Ok(text) = std::fs::read_to_string(path) else { return 0.0 };
    text.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["key"].as_str().is_some_and(&mine))
        .filter_map(|v| v["cost_usd"].as_f64())
        .filter(|c| c.is_finite() && *c > 0.0)
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(key: &str, a: &str, b: &str, y: f64) -> VerdictRecord {
        VerdictRecord {
            key: key.into(),
            pool_id: "p".into(),
            a: a.into(),
            b: b.into(),
            y: Some(y),
            invalid_reason: None,
            judge: "mock".into(),
            raw: None,
            usage: Usage::default(),
            cost_usd: 0.0,
            attempts: 1,
            latency_ms: 0,
            ts: 1,
        }
    }

    #[test]
    fn append_reopen_and_torn_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v.jsonl");
        {
            let (mut log, w) = VerdictLog::open(&path).unwrap();
            assert!(w.is_none());
            assert!(log.append(rec("k1", "a", "b", 1.0)).unwrap());
            assert!(!log.append(rec("k1", "a", "b", 0.0)).unwrap(), "one verdict per key");
            assert!(log.append(rec("k2", "b", "a", 0.5)).unwrap());
        }
        // Simulate a crash mid-write.
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(b"{\"key\":\"k3\",\"a\":\"a\",\"b\"").unwrap();
        drop(f);
        let (log, w) = VerdictLog::open(&path).unwrap();
        assert!(w.unwrap().contains("torn last line"));
        assert_eq!(log.records().len(), 2);
        assert_eq!(log.get("k2").unwrap().y, Some(0.5));
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.ends_with('\n') && text.lines().count() == 2, "torn bytes cut off: {text:?}");
    }

    #[test]
    fn failed_spend_is_summed_per_key() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("failed.jsonl");
        assert_eq!(failed_spend(&path, |_| true), 0.0);
        append_failed(&path, "k1", "a", "b", 0.25, "timeout").unwrap();
        append_failed(&path, "k2", "b", "a", 0.5, "timeout").unwrap();
        append_failed(&path, "k1", "a", "b", 0.125, "timeout").unwrap();
        assert!((failed_spend(&path, |k| k == "k1") - 0.375).abs() < 1e-15);
        assert!((failed_spend(&path, |_| true) - 0.875).abs() < 1e-15);
    }

    #[test]
    fn malformed_middle_line_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v.jsonl");
        std::fs::write(&path, "{\"a\":\"x\",\"b\":\"y\",\"y\":1}\nnot json\n{\"a\":\"x\",\"b\":\"y\",\"y\":0}\n")
            .unwrap();
        let e = read_records(&path).err().unwrap();
        assert!(e.to_string().contains(":2:"), "{e}");
    }
}

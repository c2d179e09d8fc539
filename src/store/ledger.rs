//! The verdict log `verdicts.jsonl`: one JSON object per paid verdict, appended, flushed and
//! fsynced as it arrives (a paid verdict is never lost), keyed so that at most one verdict per
//! ordered pair and judge configuration is ever stored (docs/model.md §1, frozen-judge protocol).
//!
//! On open, a torn last line (a crash mid-write) is detected, dropped with a warning and cut off
//! the file; a malformed line anywhere else is an error naming the line. A key stored more than
//! once (a log written by two processes at once with older versions, or merged by hand) is
//! counted once: the first record is used, the later ones are reported as duplicates.

use crate::domain::pool::Pool;
use crate::domain::verdict::JudgeReply;
use crate::store::jsonl;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Errors of the verdict log.
#[derive(Debug, thiserror::Error)]
pub enum LedgerError {
    /// I/O on the log file.
    #[error("verdict log {path}: {source}")]
    Io {
        /// The verdict log (verdicts.jsonl) that could not be read or written.
        path: PathBuf,
        /// The I/O error from the operating system.
        source: std::io::Error,
    },
    /// A complete line that is not a verdict record.
    #[error(
        "{path}:{line}: not a verdict record ({msg}); expected a JSON object with at least \"a\", \"b\" and \"y\"; mend the line (e.g. from a backup), or delete it to go on without that verdict"
    )]
    Parse {
        /// The verdict log holding the bad line.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// What is wrong with the line (the JSON parser's message, or the missing field).
        msg: String,
    },
}

/// One stored verdict (one line of verdicts.jsonl): which query of which judge, and the judge's
/// reply as it came back (outcome, reason when invalid, raw text, tokens, cost, attempts,
/// latency, what the parser saw), flattened into the line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VerdictRecord {
    /// Cache key (hash of judge configuration, prompt and texts); empty for imported verdicts.
    #[serde(default)]
    pub key: String,
    /// The `pool_id` of the pool the two items belong to.
    #[serde(default)]
    pub pool_id: String,
    /// Item shown first (slot A).
    pub a: String,
    /// Item shown second (slot B).
    pub b: String,
    /// The judge's `describe()` text, e.g. `openai MODEL @ BASE_URL (prompt FILE)`; never secrets.
    #[serde(default)]
    pub judge: String,
    /// The judge's settings id (`judge::settings_id`, 12 hex digits): two records with one
    /// `judge` and two settings ids are of two judges (an edited seed, template or temperature
    /// kept under one name). Absent in records of older versions and imported verdicts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge_settings: Option<String>,
    /// Unix time (seconds) when stored.
    #[serde(default)]
    pub ts: u64,
    /// The intent this verdict closes (`intents.jsonl`, [`crate::store::intents`]); absent in
    /// records of older versions and imported verdicts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intent: Option<u64>,
    /// A copy of another record of the same judge (its key), taken over at no cost: a judge
    /// panel member's copy of a verdict its configuration stored in a single-judge run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reused_from: Option<String>,
    /// The reply: `y` (outcome in [0, 1]; `null` when invalid, excluded from the fit),
    /// `invalid_reason`, `raw`, `usage`, `cost_usd`, `attempts`, `latency_ms` and the parser's
    /// detail.
    #[serde(flatten)]
    pub reply: JudgeReply,
}

impl VerdictRecord {
    /// The record of a judge's reply to the ordered query (a first, b second) of `pool`, by the
    /// judge `(judge, settings)` ([`JudgeInfo::record_judge`], [`JudgeInfo::record_settings`]).
    ///
    /// [`JudgeInfo::record_judge`]: crate::judge::JudgeInfo::record_judge
    /// [`JudgeInfo::record_settings`]: crate::judge::JudgeInfo::record_settings
    pub fn from_reply(
        key: String,
        pool: &Pool,
        (a, b): (usize, usize),
        (judge, settings): (String, String),
        reply: JudgeReply,
    ) -> Self {
        Self {
            key,
            pool_id: pool.pool_id.clone(),
            a: pool.items[a].id.clone(),
            b: pool.items[b].id.clone(),
            judge,
            judge_settings: Some(settings),
            ts: 0,
            intent: None,
            reused_from: None,
            reply,
        }
    }

    /// Weight of this verdict's likelihood term: `strong_preference_weight` for a strong
    /// preference (`[[A>>B]]`), else 1 (docs/live.md, "Strong preferences").
    pub fn weight(&self, strong_preference_weight: f64) -> f64 {
        if self.reply.detail.strong_preference { strong_preference_weight } else { 1.0 }
    }
}

/// An open, append-only verdict log.
#[derive(Debug)]
pub struct VerdictLog {
    path: PathBuf,
    file: File,
    records: Vec<VerdictRecord>,
    by_key: HashMap<String, usize>,
    duplicates: Vec<Duplicate>,
    /// Keys written by [`VerdictLog::stage_all`] whose fsync has not been committed yet.
    staged_keys: std::collections::HashSet<String>,
}

/// Records written and flushed by [`VerdictLog::stage_all`], not yet fsynced: call
/// [`StagedRecords::sync`] (it needs no access to the log, so it can run while the log is used
/// for something else), then [`VerdictLog::commit`]. Until committed they are not in
/// [`VerdictLog::records`].
#[derive(Debug)]
pub struct StagedRecords {
    fresh: Vec<VerdictRecord>,
    file: Option<File>,
    path: PathBuf,
}

impl StagedRecords {
    /// fsync the log file the records were written to (nothing to do when none was written).
    ///
    /// # Errors
    /// [`LedgerError::Io`] naming the log.
    pub fn sync(&self) -> Result<(), LedgerError> {
        match &self.file {
            Some(f) => f.sync_data().map_err(|source| LedgerError::Io { path: self.path.clone(), source }),
            None => Ok(()),
        }
    }
}

/// A record whose key an earlier line of the log already holds (not used; its cost was paid).
#[derive(Debug, Clone, PartialEq)]
pub struct Duplicate {
    /// 1-based line of the duplicate.
    pub line: usize,
    /// The duplicate record as read (kept out of the fit; its cost still counts as spent).
    pub record: VerdictRecord,
}

/// A verdicts file as read: the first record of each key (records without a key are all kept),
/// the later duplicates, the byte length of the good prefix, and the warning of a dropped torn
/// last line.
#[derive(Debug, Clone, Default)]
pub struct ReadLog {
    /// Records in file order, at most one per non-empty key (the first).
    pub records: Vec<VerdictRecord>,
    /// Records whose key an earlier line holds.
    pub duplicates: Vec<Duplicate>,
    /// Byte length of the good prefix.
    pub good_len: u64,
    /// A dropped torn last line.
    pub torn: Option<String>,
}

impl ReadLog {
    /// The warning about duplicate records, if any (names the file, the count, the first lines).
    pub fn duplicates_warning(&self, path: &Path) -> Option<String> {
        let d = &self.duplicates;
        if d.is_empty() {
            return None;
        }
        let shown: Vec<String> = d.iter().take(5).map(|x| x.line.to_string()).collect();
        let more = if d.len() > 5 { ", …" } else { "" };
        let usd: f64 = d.iter().map(|x| x.record.reply.cost_usd).sum();
        Some(format!(
            "{}: {} (line{} {}{more}) repeat{} a key stored on an earlier line (a log written by two processes at once, or merged by hand): the first record of each key is used, the duplicates are not fitted or counted, and their cost (${usd:.6}) still counts as spend",
            path.display(),
            crate::domain::fmt::count(d.len(), "duplicate record"),
            if d.len() == 1 { "" } else { "s" },
            shown.join(", "),
            if d.len() == 1 { "s" } else { "" }
        ))
    }

    /// The torn-line and duplicates warnings, joined.
    pub fn warning(&self, path: &Path) -> Option<String> {
        let w: Vec<String> = self.torn.iter().cloned().chain(self.duplicates_warning(path)).collect();
        (!w.is_empty()).then(|| w.join("; "))
    }
}

/// Read every record of a verdicts file (tolerating a torn last line), one per key.
///
/// Returns the records (the first of each key; [`read_log`] also gives the duplicates), the
/// byte length of the good prefix, and a warning if a torn last line was dropped or duplicate
/// keys were found.
///
/// # Errors
/// [`LedgerError`] for unreadable files or malformed complete lines.
pub fn read_records(path: &Path) -> Result<(Vec<VerdictRecord>, u64, Option<String>), LedgerError> {
    let read = read_log(path)?;
    let warning = read.warning(path);
    Ok((read.records, read.good_len, warning))
}

/// Read a verdicts file: [`ReadLog`].
///
/// # Errors
/// [`LedgerError`] for unreadable files or malformed complete lines.
pub fn read_log(path: &Path) -> Result<ReadLog, LedgerError> {
    let (all, good_len, torn) = read_all(path)?;
    let mut out = ReadLog { good_len, torn, ..ReadLog::default() };
    let mut seen = std::collections::HashSet::new();
    for (line, r) in all {
        if r.key.is_empty() || seen.insert(r.key.clone()) {
            out.records.push(r);
        } else {
            out.duplicates.push(Duplicate { line, record: r });
        }
    }
    Ok(out)
}

/// A record with its 1-based line.
type NumberedRecord = (usize, VerdictRecord);

/// Every record with its 1-based line, the good prefix's length and a torn-line warning.
fn read_all(path: &Path) -> Result<(Vec<NumberedRecord>, u64, Option<String>), LedgerError> {
    let raw = std::fs::read(path).map_err(|source| LedgerError::Io { path: path.to_owned(), source })?;
    // A UTF-8 byte-order mark (as some editors write) is skipped; UTF-16 is named.
    let bom = if raw.starts_with(&[0xEF, 0xBB, 0xBF]) { 3 } else { 0 };
    crate::domain::text::strip_bom(&raw).map_err(|msg| LedgerError::Parse {
        path: path.to_owned(),
        line: 1,
        msg: msg.to_string(),
    })?;
    let read = jsonl::scan(&raw[bom..], |line| {
        let text = std::str::from_utf8(line).map_err(|_| jsonl::LineError::Unreadable("invalid UTF-8".into()))?;
        let r: VerdictRecord = serde_json::from_str(text)?;
        match r.reply.y {
            Some(y) if !(0.0..=1.0).contains(&y) => {
                Err(jsonl::LineError::Bad(format!("y = {} is outside [0, 1]", crate::domain::fmt::value(y))))
            }
            _ => Ok(r),
        }
    })
    .map_err(|(line, msg)| LedgerError::Parse { path: path.to_owned(), line, msg })?;
    let warning = read.torn.map(|t| match t.terminated {
        false => format!(
            "{}:{}: dropped a torn last line ({} bytes, no newline; a crash while writing?)",
            path.display(),
            t.line,
            t.bytes
        ),
        true => format!("{}:{}: dropped a torn last line ({})", path.display(), t.line, t.error),
    });
    Ok((read.records, read.good_len + bom as u64, warning))
}

/// The byte at `len - 1` of `file` (`len` ≥ 1).
fn last_byte(file: &mut File, len: u64) -> std::io::Result<u8> {
    use std::io::{Read, Seek, SeekFrom};
    let mut b = [0u8; 1];
    file.seek(SeekFrom::Start(len - 1))?;
    file.read_exact(&mut b)?;
    Ok(b[0])
}

impl VerdictLog {
    /// Open (or create) the log, load its records, and cut a torn last line off the file.
    ///
    /// # Errors
    /// [`LedgerError`].
    ///
    /// A key stored on more than one line is counted once: [`VerdictLog::records`] holds its
    /// first record, [`VerdictLog::duplicates`] the others, and the warning says so.
    pub fn open(path: &Path) -> Result<(Self, Option<String>), LedgerError> {
        let io = |source| LedgerError::Io { path: path.to_owned(), source };
        let read = if path.exists() { read_log(path)? } else { ReadLog::default() };
        let warning = read.warning(path);
        let mut file = OpenOptions::new().create(true).append(true).read(true).open(path).map_err(io)?;
        // A torn tail is cut; a complete last record without its newline gets one.
        let last = if read.torn.is_none() && read.good_len > 0 {
            Some(last_byte(&mut file, read.good_len).map_err(io)?)
        } else {
            None
        };
        jsonl::end_or_cut(&mut file, read.good_len, read.torn.is_some(), last).map_err(io)?;
        let ReadLog { records, duplicates, .. } = read;
        let mut by_key = HashMap::new();
        for (i, r) in records.iter().enumerate() {
            if !r.key.is_empty() {
                by_key.entry(r.key.clone()).or_insert(i);
            }
        }
        let staged_keys = Default::default();
        Ok((Self { path: path.to_owned(), file, records, by_key, duplicates, staged_keys }, warning))
    }

    /// Append one record: write the line, flush, fsync. A record whose key is already stored is
    /// not written again (returns `false`).
    ///
    /// # Errors
    /// [`LedgerError::Io`].
    pub fn append(&mut self, rec: VerdictRecord) -> Result<bool, LedgerError> {
        Ok(self.append_all(vec![rec])?[0])
    }

    /// Append several records with one write, one flush and one fsync (the replies a pipelined
    /// run collects at once); per record, whether it was written: `false` for a key already
    /// stored, earlier in the log or earlier in `recs` (not written again). On an error none of
    /// them counts as stored in memory (a crash-restart reads whatever reached the file).
    ///
    /// # Errors
    /// [`LedgerError::Io`].
    pub fn append_all(&mut self, recs: Vec<VerdictRecord>) -> Result<Vec<bool>, LedgerError> {
        let (written, staged) = self.stage_all(recs)?;
        if let Err(e) = staged.sync() {
            self.abandon(staged);
            return Err(e);
        }
        self.commit(staged);
        Ok(written)
    }

    /// The first half of [`VerdictLog::append_all`]: write and flush the records (no fsync);
    /// per record, whether it was written (`false` for a key already stored, staged, or earlier
    /// in `recs`). Then [`StagedRecords::sync`] and [`VerdictLog::commit`]; a crash before the
    /// sync leaves whatever reached the file, read back on the next open.
    ///
    /// # Errors
    /// [`LedgerError::Io`]: then none of them counts as written.
    pub fn stage_all(&mut self, recs: Vec<VerdictRecord>) -> Result<(Vec<bool>, StagedRecords), LedgerError> {
        let now = jsonl::now_s;
        let mut text = String::new();
        let mut fresh: Vec<VerdictRecord> = Vec::with_capacity(recs.len());
        let mut written = Vec::with_capacity(recs.len());
        let mut batch_keys: std::collections::HashSet<String> = std::collections::HashSet::new();
        for mut rec in recs {
            let dup = !rec.key.is_empty()
                && (self.by_key.contains_key(&rec.key)
                    || self.staged_keys.contains(&rec.key)
                    || !batch_keys.insert(rec.key.clone()));
            written.push(!dup);
            if dup {
                continue;
            }
            if rec.ts == 0 {
                rec.ts = now();
            }
            text.push_str(&serde_json::to_string(&rec).expect("records serialise"));
            text.push('\n');
            fresh.push(rec);
        }
        let mut staged = StagedRecords { fresh: Vec::new(), file: None, path: self.path.clone() };
        if fresh.is_empty() {
            return Ok((written, staged));
        }
        let io = |source| LedgerError::Io { path: self.path.clone(), source };
        self.file.write_all(text.as_bytes()).map_err(io)?;
        self.file.flush().map_err(io)?;
        staged.file = Some(self.file.try_clone().map_err(io)?);
        self.staged_keys.extend(batch_keys);
        staged.fresh = fresh;
        Ok((written, staged))
    }

    /// The records of `staged`, fsynced by [`StagedRecords::sync`], join the log in memory.
    pub fn commit(&mut self, staged: StagedRecords) {
        for rec in staged.fresh {
            self.staged_keys.remove(&rec.key);
            if !rec.key.is_empty() {
                self.by_key.insert(rec.key.clone(), self.records.len());
            }
            self.records.push(rec);
        }
    }

    /// Forget `staged` after a failed sync: its keys may be staged again (the lines may or may
    /// not be on disk; the next open reads whatever is).
    pub fn abandon(&mut self, staged: StagedRecords) {
        for rec in staged.fresh {
            self.staged_keys.remove(&rec.key);
        }
    }

    /// The record stored under `key`.
    pub fn get(&self, key: &str) -> Option<&VerdictRecord> {
        self.by_key.get(key).map(|i| &self.records[*i])
    }

    /// All records, in file order, one per key (the first).
    pub fn records(&self) -> &[VerdictRecord] {
        &self.records
    }

    /// Records whose key an earlier line holds (found on open; not used, but paid for).
    pub fn duplicates(&self) -> &[Duplicate] {
        &self.duplicates
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
/// [`LedgerError::Io`].
pub fn append_failed(path: &Path, key: &str, a: &str, b: &str, cost_usd: f64, error: &str) -> Result<(), LedgerError> {
    append_failed_intent(path, key, a, b, cost_usd, error, None)
}

/// [`append_failed`] for the query of an intent (`intents.jsonl`): the line carries `"intent"`,
/// which closes that intent.
///
/// # Errors
/// [`LedgerError::Io`].
pub fn append_failed_intent(
    path: &Path,
    key: &str,
    a: &str,
    b: &str,
    cost_usd: f64,
    error: &str,
    intent: Option<u64>,
) -> Result<(), LedgerError> {
    let io = |source| LedgerError::Io { path: path.to_owned(), source };
    let ts = jsonl::now_s();
    let mut v = serde_json::json!({"key": key, "a": a, "b": b, "cost_usd": cost_usd, "error": error, "ts": ts});
    if let Some(i) = intent {
        v["intent"] = i.into();
    }
    let mut line = v.to_string();
    line.push('\n');
    let mut f = OpenOptions::new().create(true).append(true).open(path).map_err(io)?;
    f.write_all(line.as_bytes()).map_err(io)?;
    f.sync_data().map_err(io)
}

/// Before appending to `failed.jsonl`: a last line without its newline is ended when it is a
/// whole record, and cut off when it is torn (a crash mid-write), so the next record starts on a
/// line of its own. A torn record's intent stays open and is booked as possibly billed by the
/// intent log, so its cost is still counted. Returns the warning of a cut line.
///
/// # Errors
/// [`LedgerError::Io`] naming the file.
pub fn repair_failed(path: &Path) -> Result<Option<String>, LedgerError> {
    let io = |source| LedgerError::Io { path: path.to_owned(), source };
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io(e)),
    };
    if bytes.last().is_none_or(|b| *b == b'\n') {
        return Ok(None);
    }
    let start = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    let mut f = OpenOptions::new().append(true).open(path).map_err(io)?;
    let torn = serde_json::from_slice::<serde_json::Map<String, serde_json::Value>>(&bytes[start..]).is_err();
    jsonl::end_or_cut(&mut f, start as u64, torn, bytes.last().copied()).map_err(io)?;
    if !torn {
        return Ok(None);
    }
    let line_no = bytes[..start].iter().filter(|b| **b == b'\n').count() + 1;
    Ok(Some(format!(
        "{}:{line_no}: dropped a torn last line ({} bytes, no newline; a crash while writing?)",
        path.display(),
        bytes.len() - start
    )))
}

/// One line of `failed.jsonl` as the books read it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct FailedLine {
    /// Cache key of the query.
    pub key: String,
    /// What the failed query cost, USD (0 to [`crate::domain::verdict::MAX_BOOKED_USD`]).
    #[serde(deserialize_with = "crate::domain::verdict::booked_usd")]
    pub cost_usd: f64,
    /// The intent the line closes, if any.
    #[serde(default)]
    pub intent: Option<u64>,
}

/// The lines of `failed.jsonl` that read as [`FailedLine`]s, and a warning for each other
/// non-empty line (empty when the file is absent). A line that does not read (bad JSON, or
/// bytes that are not UTF-8) closes no intent, so its intent stays open and is booked at its
/// worst case: a damaged cost (negative, text, missing, above the bound) can only book more,
/// never less; the other lines still count.
///
/// # Errors
/// [`LedgerError::Io`] naming the file, when it exists but cannot be read (its paid failures
/// would otherwise go uncounted against `budget.max_usd`).
pub fn read_failed(path: &Path) -> Result<(Vec<FailedLine>, Vec<String>), LedgerError> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Default::default()),
        Err(source) => return Err(LedgerError::Io { path: path.to_owned(), source }),
    };
    let (mut lines, mut warnings) = (Vec::new(), Vec::new());
    for (i, l) in bytes.split(|b| *b == b'\n').enumerate().filter(|(_, l)| !l.trim_ascii().is_empty()) {
        match std::str::from_utf8(l).map_err(|e| e.to_string()).and_then(|l| {
            serde_json::from_str::<FailedLine>(l).map_err(|e| e.to_string())
        }) {
            Ok(f) => lines.push(f),
            Err(e) => warnings.push(format!(
                "{}:{}: not a failed-query record ({e}); expected {{\"key\", \"cost_usd\", \"intent\"}}: the line is left out, and the intent it would close, if any, stays open and is booked at its worst case",
                path.display(),
                i + 1
            )),
        }
    }
    Ok((lines, warnings))
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
            judge: "mock".into(),
            judge_settings: None,
            ts: 1,
            intent: None,
            reused_from: None,
            reply: JudgeReply { cost_usd: 0.0, ..JudgeReply::outcome(Some(y)) },
        }
    }

    #[test]
    fn staged_records_count_only_once_committed_and_block_their_keys_meanwhile() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v.jsonl");
        let (mut log, _) = VerdictLog::open(&path).unwrap();
        let (written, staged) = log.stage_all(vec![rec("k1", "a", "b", 1.0), rec("k2", "b", "a", 0.0)]).unwrap();
        assert_eq!(written, vec![true, true]);
        assert!(log.records().is_empty() && log.get("k1").is_none(), "not in memory before the commit");
        // A second stage of k1 while the first is not committed is a duplicate.
        let (again, other) = log.stage_all(vec![rec("k1", "a", "b", 0.0), rec("k3", "a", "c", 1.0)]).unwrap();
        assert_eq!(again, vec![false, true]);
        staged.sync().unwrap();
        log.commit(staged);
        assert_eq!(log.records().len(), 2);
        assert_eq!(log.get("k1").unwrap().reply.y, Some(1.0));
        // A failed sync is abandoned: k3 may be staged again.
        log.abandon(other);
        let (third, staged) = log.stage_all(vec![rec("k3", "a", "c", 0.5)]).unwrap();
        assert_eq!(third, vec![true]);
        staged.sync().unwrap();
        log.commit(staged);
        // The file holds every line written, in the order staged: the reader keeps the first
        // record of k3 (the abandoned one reached the file).
        let (reread, _) = VerdictLog::open(&path).unwrap();
        let keys: Vec<&str> = reread.records().iter().map(|r| r.key.as_str()).collect();
        assert_eq!(keys, vec!["k1", "k2", "k3"]);
        assert_eq!(reread.get("k3").unwrap().reply.y, Some(1.0));
        assert_eq!(reread.duplicates().len(), 1);
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
        assert_eq!(log.get("k2").unwrap().reply.y, Some(0.5));
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.ends_with('\n') && text.lines().count() == 2, "torn bytes cut off: {text:?}");
    }

    /// Total `cost_usd` of failed.jsonl's lines whose key `mine` accepts.
    fn failed_spend(path: &Path, mine: impl Fn(&str) -> bool) -> f64 {
        read_failed(path).unwrap().0.iter().filter(|f| mine(&f.key)).map(|f| f.cost_usd).sum()
    }

    fn failed_intents(path: &Path) -> Vec<(String, u64)> {
        read_failed(path).unwrap().0.into_iter().filter_map(|f| Some((f.key, f.intent?))).collect()
    }

    /// A byte that is not UTF-8 damages its line only: the other paid failures still count
    /// against max_usd, and the line is named (the whole file read as empty, without a word).
    #[test]
    fn a_failed_line_that_is_not_utf8_leaves_the_others_counted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("failed.jsonl");
        append_failed(&path, "k1", "a", "b", 0.25, "timeout").unwrap();
        let mut bytes = std::fs::read(&path).unwrap();
        bytes.extend_from_slice(b"{\"key\": \"k2\", \"cost_usd\": 0.5, \"error\": \"\xff\"}\n");
        std::fs::write(&path, &bytes).unwrap();
        append_failed_intent(&path, "k3", "a", "c", 0.125, "timeout", Some(4)).unwrap();
        let (lines, warnings) = read_failed(&path).unwrap();
        assert_eq!(lines.iter().map(|f| f.cost_usd).sum::<f64>(), 0.375);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains("failed.jsonl:2: not a failed-query record (invalid utf-8"), "{}", warnings[0]);
        assert_eq!(failed_intents(&path), vec![("k3".to_string(), 4)]);
        // A folder in its place cannot be read: an error naming it, not $0 of paid failures.
        let e = read_failed(dir.path()).unwrap_err().to_string();
        assert!(e.contains(&dir.path().display().to_string()), "{e}");
    }

    #[test]
    fn a_torn_failed_line_is_cut_before_the_next_append() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("failed.jsonl");
        append_failed(&path, "k1", "a", "b", 0.25, "timeout").unwrap();
        let whole = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, format!("{whole}{{\"key\": \"k2\", \"cost_u")).unwrap();
        let w = repair_failed(&path).unwrap().expect("a torn line is reported");
        assert!(w.contains("failed.jsonl:2: dropped a torn last line (21 bytes"), "{w}");
        append_failed(&path, "k3", "a", "c", 0.5, "timeout").unwrap();
        assert_eq!(failed_spend(&path, |_| true), 0.75, "both whole records read");
        // A whole last record without its newline is ended, not cut.
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, text.trim_end()).unwrap();
        assert_eq!(repair_failed(&path).unwrap(), None);
        append_failed(&path, "k4", "a", "d", 1.0, "timeout").unwrap();
        assert_eq!(failed_spend(&path, |_| true), 1.75);
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
    fn a_key_stored_twice_is_counted_once_and_reported() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v.jsonl");
        let mut text = String::new();
        for r in [rec("k1", "a", "b", 1.0), rec("k2", "b", "a", 1.0), rec("k1", "a", "b", 0.0), rec("", "a", "b", 0.0)]
        {
            text.push_str(
                &serde_json::to_string(&VerdictRecord { reply: JudgeReply { cost_usd: 0.25, ..r.reply }, ..r })
                    .unwrap(),
            );
            text.push('\n');
        }
        // The last record lacks its newline (complete, so it is kept).
        text.push_str(&serde_json::to_string(&rec("", "b", "a", 1.0)).unwrap());
        std::fs::write(&path, &text).unwrap();
        let (records, _, warning) = read_records(&path).unwrap();
        assert_eq!(records.len(), 4, "k1 once, k2, and both records without a key");
        assert_eq!(records[0].reply.y, Some(1.0), "the first record of k1 is used");
        let w = warning.unwrap();
        assert!(w.contains("1 duplicate record (line 3) repeats a key") && w.contains("$0.250000"), "{w}");
        let (mut log, _) = VerdictLog::open(&path).unwrap();
        assert_eq!((log.records().len(), log.duplicates().len(), log.duplicates()[0].line), (4, 1, 3));
        assert_eq!(log.get("k1").unwrap().reply.y, Some(1.0));
        assert!(log.append(rec("k3", "a", "c", 1.0)).unwrap());
        let (again, _, _) = read_records(&path).unwrap();
        assert_eq!(again.len(), 5, "the append started a new line after the unterminated one");
    }

    #[test]
    fn failed_lines_carry_their_intent() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("failed.jsonl");
        append_failed(&path, "k0", "a", "b", 0.5, "timeout").unwrap();
        append_failed_intent(&path, "k1", "a", "b", 0.25, "timeout", Some(7)).unwrap();
        assert_eq!(failed_intents(&path), vec![("k1".to_string(), 7)]);
        assert!((failed_spend(&path, |_| true) - 0.75).abs() < 1e-15);
    }

    #[test]
    fn malformed_middle_line_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v.jsonl");
        std::fs::write(&path, "{\"a\":\"x\",\"b\":\"y\",\"y\":1}\nnot json\n{\"a\":\"x\",\"b\":\"y\",\"y\":0}\n")
            .unwrap();
        let e = read_records(&path).err().unwrap().to_string();
        assert!(e.contains(":2: not a verdict record ("), "{e}");
        assert!(e.ends_with("; mend the line (e.g. from a backup), or delete it to go on without that verdict"), "{e}");
        // A cost no reply can have (three such summed to inf, and result.json then held null):
        // the line is named; the dearest reply the tool can book still reads.
        std::fs::write(&path, "{\"a\":\"x\",\"b\":\"y\",\"y\":1,\"cost_usd\":5.5e19}\n{\"a\":\"y\",\"b\":\"x\",\"y\":1,\"cost_usd\":1e308}\n").unwrap();
        let e = read_records(&path).err().unwrap().to_string();
        assert!(e.contains(":2: not a verdict record (1e308: expected a cost from 0 to 1e24 USD at column"), "{e}");
        // failed.jsonl's lines above that bound are left out, each named: never inf.
        let failed = dir.path().join("failed.jsonl");
        for _ in 0..3 {
            append_failed(&failed, "k", "a", "b", 1e308, "boom").unwrap();
        }
        append_failed(&failed, "k", "a", "b", 0.5, "boom").unwrap();
        assert_eq!(failed_spend(&failed, |_| true), 0.5);
        let (lines, warnings) = read_failed(&failed).unwrap();
        assert_eq!((lines.len(), warnings.len()), (1, 3));
        assert!(
            warnings[0]
                .contains("failed.jsonl:1: not a failed-query record (1e308: expected a cost from 0 to 1e24 USD"),
            "{}",
            warnings[0]
        );
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

        /// Any bytes: the reader returns records or an error naming a line, never panics.
        #[test]
        fn any_bytes_read_without_panic(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..400)) {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("v.jsonl");
            std::fs::write(&path, &bytes).unwrap();
            match read_log(&path) {
                Ok(r) => proptest::prop_assert!(r.good_len as usize <= bytes.len()),
                Err(LedgerError::Parse { line, .. }) => proptest::prop_assert!(line >= 1),
                Err(e) => proptest::prop_assert!(false, "{}", e),
            }
        }

        /// A log cut at any byte (a crash mid-write) reads back as exactly the records that were
        /// complete, and the good prefix ends at the last of them (its newline, if written).
        #[test]
        fn a_log_cut_anywhere_keeps_its_complete_lines(n in 1usize..6, cut in proptest::num::f64::ANY) {
            let lines: Vec<String> = (0..n)
                .map(|i| serde_json::to_string(&rec(&format!("k{i}"), "a", "b", (i % 2) as f64)).unwrap() + "\n")
                .collect();
            let all = lines.concat();
            let at = if cut.is_finite() { (cut.abs().fract() * (all.len() + 1) as f64) as usize } else { all.len() };
            let at = at.min(all.len());
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("v.jsonl");
            std::fs::write(&path, &all.as_bytes()[..at]).unwrap();
            let r = read_log(&path).unwrap();
            // A line counts once its JSON is all there: a record cut just before its newline is
            // complete (the reader keeps it, and opening the log for appending ends the line).
            let mut ends = 0;
            let complete = lines.iter().take_while(|l| { ends += l.len(); ends - 1 <= at }).count();
            let good: usize = lines[..complete].iter().map(String::len).sum::<usize>().min(at);
            let keys: Vec<&str> = r.records.iter().map(|r| r.key.as_str()).collect();
            let want: Vec<String> = (0..complete).map(|i| format!("k{i}")).collect();
            proptest::prop_assert_eq!(keys, want.iter().map(String::as_str).collect::<Vec<_>>());
            proptest::prop_assert_eq!(r.good_len as usize, good);
            proptest::prop_assert_eq!(r.torn.is_some(), at > good);
        }
    }
}

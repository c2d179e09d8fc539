//! Intents (`intents.jsonl` in the run folder): the write-ahead record of paid requests.
//!
//! Before a query is sent, an **intent** line is appended, flushed and fsynced: an id unique in
//! the folder, the query's cache key and item ids, its attempt number for that key (1 for the
//! first time the key is asked, 2 after one failure, …) and the worst-case cost reserved for it
//! (USD). The query's own record then **closes** it:
//! - a stored verdict (`verdicts.jsonl`) or a paid failure (`failed.jsonl`) that carries the
//!   intent's id in its `intent` field, or
//! - a closing line in this file: `possibly_billed: false` when the query ended without a bill
//!   (nothing sent, refused connection, an HTTP error the provider does not charge), or
//!   `possibly_billed: true` when its reply was never recorded.
//!
//! **Possibly billed.** On [`IntentLog::open`], an intent that nothing closes belongs to a
//! process that ended (killed, crashed, a second Ctrl-C) after writing the intent and before
//! recording the reply: the request may have reached the provider and may have been billed, or
//! may not. It is booked at its reserved worst case, the most the request could have cost, with
//! a closing line `possibly_billed: true`; from then on it counts as spend and against
//! `max_usd`, and it is never refunded. The pair itself has no verdict and may be asked again
//! under a new intent.
//!
//! Lines (JSON, one per line):
//! ```text
//! {"intent":17,"key":"…","a":"M3","b":"M11","attempt":1,"reserved_usd":0.0051,"ts":1795980776}
//! {"closed":17,"key":"…","possibly_billed":true,"cost_usd":0.0051,"reason":"…","ts":1795980790}
//! ```
//! A torn last line (a crash while writing an intent, i.e. before that request was sent) is
//! dropped with a warning and cut off the file; a malformed line anywhere else is an error naming
//! the line. A run folder without this file (older versions) has no intents.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Id of an intent, unique within a run folder (1, 2, …).
pub type IntentId = u64;

/// Errors of the intent log.
#[derive(Debug, thiserror::Error)]
pub enum IntentError {
    /// I/O on the intent log.
    #[error("intent log {path}: {source}")]
    Io {
        /// The intent log (intents.jsonl in the run folder) that could not be read or written.
        path: PathBuf,
        /// The I/O error from the operating system.
        source: std::io::Error,
    },
    /// A complete line that is neither an intent nor a closing line.
    #[error(
        "{path}:{line}: {msg}; expected an intent {{\"intent\", \"key\", \"a\", \"b\", \"attempt\", \"reserved_usd\"}} or a closing line {{\"closed\", \"key\", \"possibly_billed\", \"cost_usd\"}}"
    )]
    Parse {
        /// The intent log holding the bad line.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        msg: String,
    },
}

/// An intent: a request about to be sent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Intent {
    /// Id, unique in the run folder.
    pub intent: IntentId,
    /// Cache key of the query.
    pub key: String,
    /// Item shown first.
    pub a: String,
    /// Item shown second.
    pub b: String,
    /// 1 + the number of earlier intents for this key.
    pub attempt: u32,
    /// Worst-case cost reserved for the query, USD (read checked by
    /// [`crate::domain::verdict::booked_usd`]).
    #[serde(deserialize_with = "crate::domain::verdict::booked_usd")]
    pub reserved_usd: f64,
    /// Unix time (seconds) when written.
    #[serde(default)]
    pub ts: u64,
}

/// A closing line: how an intent ended when no verdict or failure record closes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Closure {
    /// The intent closed.
    pub closed: IntentId,
    /// Its cache key.
    pub key: String,
    /// Whether the provider may have billed the request (booked at `cost_usd`).
    pub possibly_billed: bool,
    /// USD booked: the reserved worst case when possibly billed, else 0 (read checked by
    /// [`crate::domain::verdict::booked_usd`]).
    #[serde(deserialize_with = "crate::domain::verdict::booked_usd")]
    pub cost_usd: f64,
    /// Why the intent closed without a verdict: the judge's error, or that the process ended
    /// while the request was in flight.
    #[serde(default)]
    pub reason: String,
    /// Unix time (seconds) when written.
    #[serde(default)]
    pub ts: u64,
}

/// What [`IntentLog::open`] found.
#[derive(Debug, Clone, Default)]
pub struct Recovery {
    /// Intents booked as possibly billed by this open (they were open: no record closed them).
    pub booked: Vec<Closure>,
    /// A dropped torn last line.
    pub warning: Option<String>,
}

/// The open intent log of a run folder.
#[derive(Debug)]
pub struct IntentLog {
    path: PathBuf,
    file: File,
    next_id: IntentId,
    attempts: HashMap<String, u32>,
    open: BTreeMap<IntentId, Intent>,
    possibly_billed: Vec<Closure>,
}

/// Intents written and flushed, not yet fsynced ([`IntentLog::stage_all`]): their requests may
/// leave only once [`StagedIntents::sync`] succeeded.
#[derive(Debug)]
pub struct StagedIntents {
    ids: Vec<IntentId>,
    file: File,
    path: PathBuf,
}

impl StagedIntents {
    /// The intents' ids, in the order of the queries staged.
    pub fn ids(&self) -> &[IntentId] {
        &self.ids
    }

    /// fsync the intent lines (run it without holding the log).
    ///
    /// # Errors
    /// [`IntentError::Io`] naming the intent log: then none of the requests may be sent.
    pub fn sync(&self) -> Result<(), IntentError> {
        self.file.sync_data().map_err(|source| IntentError::Io { path: self.path.clone(), source })
    }
}

use crate::store::jsonl::{self, now_s};

enum Line {
    Intent(Intent),
    Closure(Closure),
}

/// Parse the lines of an intent log: (lines, byte length of the good prefix, torn-line warning).
fn read_lines(path: &Path, bytes: &[u8]) -> Result<(Vec<Line>, u64, Option<String>), IntentError> {
    // Complete JSON without its newline is kept (booking it errs on the side of spend); `open`
    // then ends the line so the next append starts a new one.
    let read = jsonl::scan(bytes, |line| {
        let value = serde_json::from_slice::<Value>(line)?;
        let bad = |e: serde_json::Error| jsonl::LineError::Bad(e.to_string());
        if value.get("intent").is_some() {
            serde_json::from_value::<Intent>(value).map(Line::Intent).map_err(bad)
        } else if value.get("closed").is_some() {
            serde_json::from_value::<Closure>(value).map(Line::Closure).map_err(bad)
        } else {
            Err(jsonl::LineError::Bad("neither \"intent\" nor \"closed\" is present".into()))
        }
    })
    .map_err(|(line, msg)| IntentError::Parse { path: path.to_owned(), line, msg })?;
    let warning = read.torn.map(|t| {
        format!(
            "{}:{}: dropped a torn last line ({}; a crash while writing an intent, before its request was sent)",
            path.display(),
            t.line,
            t.error
        )
    });
    Ok((read.records.into_iter().map(|(_, l)| l).collect(), read.good_len, warning))
}

/// An intent log read without writing ([`IntentLog::peek`]).
#[derive(Debug, Clone, Default)]
pub struct Peeked {
    /// The intents nothing closes yet.
    pub open: Vec<Intent>,
    /// The requests already booked as possibly billed.
    pub booked: Vec<Closure>,
    /// The warning naming a torn last line (file:line), if there is one.
    pub torn: Option<String>,
}

/// The state a log's lines describe.
struct Replayed {
    next_id: IntentId,
    attempts: HashMap<String, u32>,
    open: BTreeMap<IntentId, Intent>,
    possibly_billed: Vec<Closure>,
}

fn replay(lines: Vec<Line>, closed_by_records: &HashSet<(String, IntentId)>, max_record_id: IntentId) -> Replayed {
    let mut r = Replayed {
        next_id: max_record_id + 1,
        attempts: HashMap::new(),
        open: BTreeMap::new(),
        possibly_billed: Vec::new(),
    };
    for line in lines {
        match line {
            Line::Intent(i) => {
                r.next_id = r.next_id.max(i.intent + 1);
                let n = r.attempts.entry(i.key.clone()).or_insert(0);
                *n = (*n).max(i.attempt);
                if !closed_by_records.contains(&(i.key.clone(), i.intent)) {
                    r.open.insert(i.intent, i);
                }
            }
            Line::Closure(c) => {
                r.next_id = r.next_id.max(c.closed + 1);
                r.open.remove(&c.closed);
                if c.possibly_billed {
                    r.possibly_billed.push(c);
                }
            }
        }
    }
    r
}

impl IntentLog {
    /// Open (or create) the intent log at `path` and book every open intent as possibly billed.
    ///
    /// `closed_by_records` holds the (cache key, intent id) pairs carried by the records in
    /// `verdicts.jsonl` and `failed.jsonl`: those intents are closed. `max_record_id` is the
    /// largest intent id any record carries (new ids start above it and above every id in the
    /// file, so ids stay unique even if this file was removed).
    ///
    /// # Errors
    /// [`IntentError`]: unreadable file, a malformed line other than a torn last one, or a failed
    /// write of the booking lines.
    pub fn open(
        path: &Path,
        closed_by_records: &HashSet<(String, IntentId)>,
        max_record_id: IntentId,
    ) -> Result<(Self, Recovery), IntentError> {
        Self::open_keeping(path, closed_by_records, max_record_id, &HashSet::new())
    }

    /// [`IntentLog::open`], keeping open the intents whose keys are in `keep` (the queries of a
    /// provider batch job still open, [`crate::store::batches`]: their outcome is in the job's
    /// output, which the run books when it resumes the job).
    ///
    /// # Errors
    /// As [`IntentLog::open`].
    pub fn open_keeping(
        path: &Path,
        closed_by_records: &HashSet<(String, IntentId)>,
        max_record_id: IntentId,
        keep: &HashSet<String>,
    ) -> Result<(Self, Recovery), IntentError> {
        let io = |source| IntentError::Io { path: path.to_owned(), source };
        let bytes = match std::fs::read(path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(io(e)),
        };
        let (lines, good_len, warning) = read_lines(path, &bytes)?;
        let mut file = OpenOptions::new().create(true).append(true).read(true).open(path).map_err(io)?;
        jsonl::end_or_cut(&mut file, good_len, warning.is_some(), bytes.last().copied()).map_err(io)?;
        let r = replay(lines, closed_by_records, max_record_id);
        let mut log = Self {
            path: path.to_owned(),
            file,
            next_id: r.next_id,
            attempts: r.attempts,
            open: r.open,
            possibly_billed: r.possibly_billed,
        };
        let open: Vec<IntentId> = log.open.values().filter(|i| !keep.contains(&i.key)).map(|i| i.intent).collect();
        let mut booked = Vec::with_capacity(open.len());
        for id in open {
            booked.push(log.book_possibly_billed(
                id,
                "no reply recorded: the process ended while this request was in flight (killed, crashed or quit)",
            )?);
        }
        Ok((log, Recovery { booked, warning }))
    }

    /// Read the log at `path` without writing anything (a missing file is empty, a torn last
    /// line is ignored): the intents nothing closes yet, the requests already booked as
    /// possibly billed, and the warning naming a torn last line (file:line), if there is one.
    ///
    /// # Errors
    /// [`IntentError`]: unreadable file or a malformed line other than a torn last one.
    pub fn peek(path: &Path, closed_by_records: &HashSet<(String, IntentId)>) -> Result<Peeked, IntentError> {
        let bytes = match std::fs::read(path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(source) => return Err(IntentError::Io { path: path.to_owned(), source }),
        };
        let (lines, _, torn) = read_lines(path, &bytes)?;
        let r = replay(lines, closed_by_records, 0);
        Ok(Peeked { open: r.open.into_values().collect(), booked: r.possibly_billed, torn })
    }

    fn append(&mut self, line: &str) -> Result<(), IntentError> {
        let mut text = line.to_owned();
        text.push('\n');
        self.write_synced(&text)
    }

    fn write_synced(&mut self, text: &str) -> Result<(), IntentError> {
        let io = |source| IntentError::Io { path: self.path.clone(), source };
        self.file.write_all(text.as_bytes()).map_err(io)?;
        self.file.flush().map_err(io)?;
        self.file.sync_data().map_err(io)
    }

    /// Write (append, flush, fsync) the intent to send the query `key` (items `a` first, `b`
    /// second) with `reserved_usd` reserved; call it before the request leaves.
    ///
    /// # Errors
    /// [`IntentError::Io`]: then the request must not be sent.
    pub fn begin(&mut self, key: &str, a: &str, b: &str, reserved_usd: f64) -> Result<IntentId, IntentError> {
        Ok(self.begin_all(&[(key, a, b, reserved_usd)])?[0])
    }

    /// [`IntentLog::begin`] for several queries (key, a, b, reserved USD) with one fsync: the
    /// requests of a batch leave together instead of one fsync apart.
    ///
    /// # Errors
    /// [`IntentError::Io`]: then none of the requests may be sent.
    pub fn begin_all(&mut self, queries: &[(&str, &str, &str, f64)]) -> Result<Vec<IntentId>, IntentError> {
        let staged = self.stage_all(queries)?;
        if let Err(e) = staged.sync() {
            self.abandon(staged);
            return Err(e);
        }
        Ok(staged.ids)
    }

    /// The first half of [`IntentLog::begin_all`]: the intents written, flushed and open (with
    /// their ids), not fsynced. Sync them with [`StagedIntents::sync`], which needs no access to
    /// the log (other lines can be written meanwhile), before any of the requests leaves; if the
    /// sync fails, [`IntentLog::abandon`] them and send none.
    ///
    /// # Errors
    /// [`IntentError::Io`]: then none of the requests may be sent.
    pub fn stage_all(&mut self, queries: &[(&str, &str, &str, f64)]) -> Result<StagedIntents, IntentError> {
        let mut text = String::new();
        let mut intents = Vec::with_capacity(queries.len());
        let mut attempts: HashMap<&str, u32> = HashMap::new();
        for (i, &(key, a, b, reserved_usd)) in queries.iter().enumerate() {
            let before = attempts.get(key).copied().unwrap_or_else(|| self.attempts.get(key).copied().unwrap_or(0));
            attempts.insert(key, before + 1);
            let intent = Intent {
                intent: self.next_id + i as IntentId,
                key: key.to_owned(),
                a: a.to_owned(),
                b: b.to_owned(),
                attempt: before + 1,
                reserved_usd,
                ts: now_s(),
            };
            text.push_str(&serde_json::to_string(&intent).expect("intents serialise"));
            text.push('\n');
            intents.push(intent);
        }
        let io = |source| IntentError::Io { path: self.path.clone(), source };
        self.file.write_all(text.as_bytes()).map_err(io)?;
        self.file.flush().map_err(io)?;
        let file = self.file.try_clone().map_err(io)?;
        self.next_id += queries.len() as IntentId;
        let ids = intents.iter().map(|i| i.intent).collect();
        for i in intents {
            self.attempts.insert(i.key.clone(), i.attempt);
            self.open.insert(i.intent, i);
        }
        Ok(StagedIntents { ids, file, path: self.path.clone() })
    }

    /// Forget intents whose sync failed (none of their requests was sent). Their lines may
    /// still reach the disk; the next open then books them as possibly billed, which errs on
    /// the side of spend.
    pub fn abandon(&mut self, staged: StagedIntents) {
        for id in staged.ids {
            self.open.remove(&id);
        }
    }

    /// The intent `id` was closed by its record (a verdict or a paid failure carrying the id,
    /// already written): forget it (nothing is written here).
    pub fn closed_by_record(&mut self, id: IntentId) {
        self.open.remove(&id);
    }

    /// Close the intent `id` of a query that ended without a bill (nothing was sent, or the
    /// provider does not charge for the error it answered).
    ///
    /// # Errors
    /// [`IntentError::Io`]. Unwritten, the intent would be booked as possibly billed on the next
    /// start (an overcount, never an undercount).
    pub fn close_unbilled(&mut self, id: IntentId, reason: &str) -> Result<(), IntentError> {
        self.close_unbilled_all(&[id], reason)
    }

    /// [`IntentLog::close_unbilled`] for several intents with one fsync (e.g. the queries a
    /// pipelined run wrote ahead and withdrew unsent). Ids not open are skipped.
    ///
    /// # Errors
    /// [`IntentError::Io`], as for [`IntentLog::close_unbilled`].
    pub fn close_unbilled_all(&mut self, ids: &[IntentId], reason: &str) -> Result<(), IntentError> {
        let mut text = String::new();
        for id in ids {
            let Some(i) = self.open.remove(id) else { continue };
            let c = Closure {
                closed: *id,
                key: i.key,
                possibly_billed: false,
                cost_usd: 0.0,
                reason: reason.into(),
                ts: now_s(),
            };
            text.push_str(&serde_json::to_string(&c).expect("closures serialise"));
            text.push('\n');
        }
        if text.is_empty() {
            return Ok(());
        }
        self.write_synced(&text)
    }

    /// Book the open intent `id` as possibly billed at its reserved worst case (its reply will
    /// never be recorded: given up after the interrupt grace period, or found open on start).
    /// Returns the closing line written.
    ///
    /// # Errors
    /// [`IntentError::Io`].
    ///
    /// # Panics
    /// If `id` is not open.
    pub fn book_possibly_billed(&mut self, id: IntentId, reason: &str) -> Result<Closure, IntentError> {
        self.book_possibly_billed_at(id, reason, None)
    }

    /// [`IntentLog::book_possibly_billed`] at `usd` when given and above the reservation (a
    /// worst case raised since the request was reserved), else at the reservation.
    ///
    /// # Errors
    /// As [`IntentLog::book_possibly_billed`].
    pub fn book_possibly_billed_at(
        &mut self,
        id: IntentId,
        reason: &str,
        usd: Option<f64>,
    ) -> Result<Closure, IntentError> {
        let i = self.open.remove(&id).expect("only open intents are booked");
        let c = Closure {
            closed: id,
            key: i.key,
            possibly_billed: true,
            cost_usd: usd.map_or(i.reserved_usd, |u| u.max(i.reserved_usd)),
            reason: reason.into(),
            ts: now_s(),
        };
        self.append(&serde_json::to_string(&c).expect("closures serialise"))?;
        self.possibly_billed.push(c.clone());
        Ok(c)
    }

    /// Every request booked as possibly billed in this folder (all invocations).
    pub fn possibly_billed(&self) -> &[Closure] {
        &self.possibly_billed
    }

    /// Intents written and not closed yet (requests in flight), by id.
    pub fn open_intents(&self) -> impl Iterator<Item = &Intent> {
        self.open.values()
    }

    /// The log's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn none() -> HashSet<(String, IntentId)> {
        HashSet::new()
    }

    #[test]
    fn open_intents_are_booked_once_at_their_worst_case() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("intents.jsonl");
        {
            let (mut log, rec) = IntentLog::open(&path, &none(), 0).unwrap();
            assert!(rec.booked.is_empty() && rec.warning.is_none());
            assert_eq!(log.begin("k1", "a", "b", 0.25).unwrap(), 1);
            assert_eq!(log.begin("k2", "b", "a", 0.5).unwrap(), 2);
            assert_eq!(log.begin("k3", "a", "c", 0.125).unwrap(), 3);
            assert_eq!(log.begin("k4", "c", "a", 1.0).unwrap(), 4);
            log.closed_by_record(1); // a verdict carrying intent 1 was written
            log.close_unbilled(3, "HTTP 401").unwrap();
            // 2 and 4 are in flight when the process dies.
        }
        // The verdict of intent 1 is in verdicts.jsonl; intent 4's verdict was written too
        // (the crash came between the verdict and nothing else).
        let closed: HashSet<(String, IntentId)> = [("k1".to_string(), 1), ("k4".to_string(), 4)].into();
        let before = std::fs::read(&path).unwrap();
        let Peeked { open, booked: pb, torn } = IntentLog::peek(&path, &closed).unwrap();
        assert_eq!(torn, None);
        assert_eq!((open.iter().map(|i| i.intent).collect::<Vec<_>>(), pb.len()), (vec![2], 0));
        assert_eq!(std::fs::read(&path).unwrap(), before, "peek writes nothing");
        let (log, rec) = IntentLog::open(&path, &closed, 0).unwrap();
        assert_eq!(rec.booked.len(), 1, "{:?}", rec.booked);
        assert_eq!((rec.booked[0].closed, rec.booked[0].cost_usd, rec.booked[0].possibly_billed), (2, 0.5, true));
        assert_eq!(log.possibly_billed().len(), 1);
        assert_eq!(log.open_intents().count(), 0);
        drop(log);
        // Booked once: a third open books nothing new and still reports the booking.
        let (mut log, rec) = IntentLog::open(&path, &closed, 0).unwrap();
        assert!(rec.booked.is_empty());
        assert_eq!(log.possibly_billed().iter().map(|c| c.cost_usd).sum::<f64>(), 0.5);
        // Ids continue; a key asked again gets the next attempt number.
        assert_eq!(log.begin("k2", "b", "a", 0.5).unwrap(), 5);
        let text = std::fs::read_to_string(&path).unwrap();
        let last: Intent = serde_json::from_str(text.lines().last().unwrap()).unwrap();
        assert_eq!((last.intent, last.key.as_str(), last.attempt), (5, "k2", 2));
        // A batch: one write, consecutive ids, attempts counted per key.
        assert_eq!(log.begin_all(&[("k6", "a", "b", 0.5), ("k2", "b", "a", 0.5)]).unwrap(), vec![6, 7]);
        let text = std::fs::read_to_string(&path).unwrap();
        let last: Intent = serde_json::from_str(text.lines().last().unwrap()).unwrap();
        assert_eq!((last.intent, last.attempt), (7, 3));
        assert_eq!(log.open_intents().map(|i| i.intent).collect::<Vec<_>>(), vec![5, 6, 7]);
    }

    #[test]
    fn ids_start_above_the_records_and_a_torn_intent_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("intents.jsonl");
        std::fs::write(
            &path,
            "{\"intent\":3,\"key\":\"k\",\"a\":\"a\",\"b\":\"b\",\"attempt\":1,\"reserved_usd\":0.5,\"ts\":1}\n{\"intent\":4,\"key\":\"k2\",\"a\"",
        )
        .unwrap();
        let closed: HashSet<(String, IntentId)> = [("k".to_string(), 3)].into();
        let (mut log, rec) = IntentLog::open(&path, &closed, 9).unwrap();
        assert!(rec.warning.unwrap().contains(":2: dropped a torn last line"));
        assert!(rec.booked.is_empty(), "the torn intent was never sent");
        assert_eq!(log.begin("k2", "a", "b", 0.5).unwrap(), 10, "above the largest id a record carries");
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 2, "torn bytes cut off: {text:?}");
    }

    #[test]
    fn malformed_middle_line_names_the_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("intents.jsonl");
        std::fs::write(&path, "{\"closed\":1,\"key\":\"k\",\"possibly_billed\":false,\"cost_usd\":0}\n{\"x\":1}\n\n")
            .unwrap();
        let e = IntentLog::open(&path, &none(), 0).unwrap_err().to_string();
        assert!(e.contains("intents.jsonl:2:") && e.contains("neither"), "{e}");
    }
}

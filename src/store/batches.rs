//! batches.jsonl of a run folder: where each round of batch dispatch is (docs/live.md, "Batch
//! dispatch"), so that a run stopped at any point resumes its open round instead of submitting
//! it again. Append-only, each line flushed and fsynced before the step it records is taken
//! further:
//!
//! 1. `{"round": r, "keys": [...]}`: the round's queries (cache keys; their intents are in
//!    intents.jsonl), written after the intents and before the input file is uploaded;
//! 2. `{"round": r, "input_file_id": "file-…"}`: the uploaded input, written before the batch is
//!    created (a batch made from it can then be found again by listing the batches);
//! 3. `{"round": r, "batch_id": "batch_…"}`: the batch job;
//! 4. `{"round": r, "ended": "completed" | "expired" | "failed" | "cancelled" | "not_submitted" |
//!    "gone" | "abandoned"}`: every query of the round is booked (a verdict, a paid failure,
//!    closed unbilled, or, for a job the endpoint no longer knows or one closed by `run
//!    --abandon-batch`, possibly billed at its reservation).
//!
//! A torn last line (a kill while writing) is cut on open.

use crate::store::jsonl::{self, now_s};
use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

/// `ended` of a round closed by `run --abandon-batch` (its job never read).
pub const ABANDONED: &str = "abandoned";

/// The file name in the run folder.
pub const BATCHES_FILE: &str = "batches.jsonl";

/// One line of batches.jsonl.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BatchLine {
    /// The round (1, 2, …), unique in the folder.
    pub round: u64,
    /// The round's queries (cache keys).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keys: Option<Vec<String>>,
    /// The judge that sent the round (its description and settings id, as on its verdict
    /// records): a later run of another judge books the round as this judge's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge: Option<(String, String)>,
    /// The uploaded input file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_file_id: Option<String>,
    /// The batch job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_id: Option<String>,
    /// How the round ended (the job's final status, or `not_submitted`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended: Option<String>,
    /// Unix time (seconds) when written.
    #[serde(default)]
    pub ts: u64,
}

/// A round as far as batches.jsonl knows it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Round {
    /// The round.
    pub round: u64,
    /// Its queries (cache keys).
    pub keys: Vec<String>,
    /// The judge that sent it (description, settings id); absent in older folders.
    pub judge: Option<(String, String)>,
    /// The uploaded input file, once recorded.
    pub input_file_id: Option<String>,
    /// The batch job, once recorded.
    pub batch_id: Option<String>,
    /// How it ended (`None`: open).
    pub ended: Option<String>,
}

/// What is wrong with batches.jsonl.
#[derive(Debug, thiserror::Error)]
pub enum BatchLogError {
    /// The file cannot be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// A line other than a torn last one is not a batch line, or records another job or input
    /// file for a round that has one.
    #[error("{path}:{line}: {msg}; {FIX_HINT}")]
    Malformed {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// What is wrong.
        msg: String,
    },
}

/// What to do about a malformed line of batches.jsonl.
const FIX_HINT: &str =
    "fix or remove that line (the queries of a round no longer recorded are booked as possibly billed)";

/// batches.jsonl, open for appending (hold the run-folder lock).
#[derive(Debug)]
pub struct BatchLog {
    path: PathBuf,
    file: File,
    rounds: Vec<Round>,
    torn: Option<String>,
}

/// Apply one line to the rounds `rounds` (the round made when it is new). A job or input file
/// recorded again for the same round must be the same one: two different jobs for one round
/// cannot both be booked, and which one holds the round's queries only the provider knows.
fn apply(rounds: &mut Vec<Round>, l: BatchLine) -> Result<(), String> {
    let r = match rounds.iter().position(|r| r.round == l.round) {
        Some(i) => &mut rounds[i],
        None => {
            rounds.push(Round { round: l.round, ..Round::default() });
            rounds.last_mut().expect("just pushed")
        }
    };
    for (what, had, new) in
        [("batch_id", &r.batch_id, &l.batch_id), ("input_file_id", &r.input_file_id, &l.input_file_id)]
    {
        if let (Some(had), Some(new)) = (had, new)
            && had != new
        {
            return Err(format!(
                "round {} has {what} {had:?} already, and this line records {new:?}: one round is one provider job (the provider's list of batch jobs shows which holds the round's queries; keep that line)",
                l.round
            ));
        }
    }
    if let Some(k) = l.keys {
        r.keys = k;
    }
    r.judge = l.judge.or(r.judge.take());
    r.input_file_id = l.input_file_id.or(r.input_file_id.take());
    r.batch_id = l.batch_id.or(r.batch_id.take());
    r.ended = l.ended.or(r.ended.take());
    Ok(())
}

/// The rounds recorded in `bytes` (the file at `path`), the length of its lines read whole, and
/// the warning naming a torn last line if one was dropped ([`jsonl::scan`]: a whole last line
/// without its newline is kept, as the other books keep theirs).
fn read(path: &Path, bytes: &[u8]) -> Result<(Vec<Round>, u64, Option<String>), BatchLogError> {
    let read = jsonl::scan(bytes, |line| Ok(serde_json::from_slice::<BatchLine>(line)?)).map_err(|(line, e)| {
        BatchLogError::Malformed {
            path: path.to_owned(),
            line,
            msg: format!("not a batch line {{\"round\": N, and keys, input_file_id, batch_id or ended}} ({e})"),
        }
    })?;
    let mut rounds: Vec<Round> = Vec::new();
    for (line, l) in read.records {
        apply(&mut rounds, l).map_err(|msg| BatchLogError::Malformed { path: path.to_owned(), line, msg })?;
    }
    let torn = read.torn.map(|t| {
        format!(
            "{}:{}: dropped a torn last line ({}; a crash while recording a batch step, which is then taken again or its queries booked as possibly billed)",
            path.display(),
            t.line,
            t.error
        )
    });
    Ok((rounds, read.good_len, torn))
}

impl BatchLog {
    /// Open (or create) `dir/batches.jsonl`, cutting a torn last line.
    ///
    /// # Errors
    /// [`BatchLogError`] naming the file (and line).
    pub fn open(dir: &Path) -> Result<Self, BatchLogError> {
        let path = dir.join(BATCHES_FILE);
        let io = |source| BatchLogError::Io { path: path.clone(), source };
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(io(e)),
        };
        let (rounds, good, torn) = read(&path, &bytes)?;
        let mut file = OpenOptions::new().create(true).append(true).open(&path).map_err(io)?;
        jsonl::end_or_cut(&mut file, good, torn.is_some(), bytes.last().copied()).map_err(io)?;
        Ok(Self { path, file, rounds, torn })
    }

    /// The warning naming the torn last line [`BatchLog::open`] cut, once.
    pub fn take_warning(&mut self) -> Option<String> {
        self.torn.take()
    }

    /// The keys of the queries of the open rounds in `dir` (none when there is no file), for
    /// the books to keep their intents open ([`crate::store::books::Books::open_keeping`]).
    ///
    /// # Errors
    /// [`BatchLogError`] naming the file (and line).
    pub fn open_keys(dir: &Path) -> Result<std::collections::HashSet<String>, BatchLogError> {
        let path = dir.join(BATCHES_FILE);
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Default::default()),
            Err(source) => return Err(BatchLogError::Io { path, source }),
        };
        let (rounds, _, _) = read(&path, &bytes)?;
        Ok(rounds.into_iter().filter(|r| r.ended.is_none()).flat_map(|r| r.keys).collect())
    }

    /// The queries of the open rounds of `dir/batches.jsonl` whose input file is recorded (those
    /// a provider job may hold), read without writing; 0 without the file.
    ///
    /// # Errors
    /// [`BatchLogError`] naming the file (and line).
    pub fn submitted_open_queries(dir: &Path) -> Result<usize, BatchLogError> {
        let path = dir.join(BATCHES_FILE);
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
            Err(source) => return Err(BatchLogError::Io { path, source }),
        };
        let (rounds, _, _) = read(&path, &bytes)?;
        Ok(rounds.iter().filter(|r| r.ended.is_none() && r.input_file_id.is_some()).map(|r| r.keys.len()).sum())
    }

    /// The warning naming a torn last line of `dir/batches.jsonl`, read without writing (for the
    /// dry run, which says what [`BatchLog::open`] of a real run would cut); `None` without one.
    ///
    /// # Errors
    /// [`BatchLogError`] naming the file (and line).
    pub fn peek_torn(dir: &Path) -> Result<Option<String>, BatchLogError> {
        let path = dir.join(BATCHES_FILE);
        match std::fs::read(&path) {
            Ok(bytes) => Ok(read(&path, &bytes)?.2),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(BatchLogError::Io { path, source }),
        }
    }

    /// The rounds not ended, oldest first.
    pub fn open_rounds(&self) -> Vec<Round> {
        self.rounds.iter().filter(|r| r.ended.is_none()).cloned().collect()
    }

    /// Every round recorded.
    pub fn rounds(&self) -> &[Round] {
        &self.rounds
    }

    /// The number the next round gets.
    pub fn next_round(&self) -> u64 {
        self.rounds.iter().map(|r| r.round).max().unwrap_or(0) + 1
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Append `line` (flushed and fsynced) and apply it.
    ///
    /// # Errors
    /// [`BatchLogError::Io`]: then the step it records must not be taken (also for a line that
    /// records another job or input file for a round that has one, which is not written).
    pub fn append(&mut self, mut line: BatchLine) -> Result<(), BatchLogError> {
        line.ts = now_s();
        let io = |source| BatchLogError::Io { path: self.path.clone(), source };
        // A line the next open would refuse is not written.
        let mut rounds = self.rounds.clone();
        apply(&mut rounds, line.clone()).map_err(|msg| io(std::io::Error::other(msg)))?;
        let mut text = serde_json::to_string(&line).expect("batch lines serialise");
        text.push('\n');
        self.file.write_all(text.as_bytes()).map_err(io)?;
        self.file.flush().map_err(io)?;
        self.file.sync_data().map_err(io)?;
        self.rounds = rounds;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_are_rebuilt_from_their_lines_and_a_torn_last_line_is_cut() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = BatchLog::open(dir.path()).unwrap();
        assert_eq!(log.next_round(), 1);
        log.append(BatchLine { round: 1, keys: Some(vec!["k1".into(), "k2".into()]), ..Default::default() }).unwrap();
        log.append(BatchLine { round: 1, input_file_id: Some("file-1".into()), ..Default::default() }).unwrap();
        log.append(BatchLine { round: 1, batch_id: Some("batch_1".into()), ..Default::default() }).unwrap();
        log.append(BatchLine { round: 1, ended: Some("completed".into()), ..Default::default() }).unwrap();
        log.append(BatchLine { round: 2, keys: Some(vec!["k3".into()]), ..Default::default() }).unwrap();
        log.append(BatchLine { round: 2, input_file_id: Some("file-2".into()), ..Default::default() }).unwrap();
        drop(log);
        let path = dir.path().join(BATCHES_FILE);
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(br#"{"round": 2, "batch_id": "bat"#).unwrap();
        drop(f);
        let keys = BatchLog::open_keys(dir.path()).unwrap();
        assert_eq!(keys, ["k3".to_owned()].into_iter().collect());
        let log = BatchLog::open(dir.path()).unwrap();
        let open = log.open_rounds();
        assert_eq!(open.len(), 1);
        assert_eq!(
            open[0],
            Round {
                round: 2,
                keys: vec!["k3".into()],
                judge: None,
                input_file_id: Some("file-2".into()),
                batch_id: None,
                ended: None
            }
        );
        assert_eq!(log.next_round(), 3);
        assert!(std::fs::read_to_string(&path).unwrap().ends_with('\n'));
    }

    /// A whole last line without its newline (a crash between the record and its newline) is
    /// kept, and its line ended before the next append: it was cut off as torn, and with it the
    /// provider job's id, which the other books would have kept (review 39 A4).
    #[test]
    fn a_whole_last_line_without_its_newline_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(BATCHES_FILE);
        std::fs::write(&path, "{\"round\": 1, \"keys\": [\"k1\"]}\n{\"round\": 1, \"batch_id\": \"batch_9\"}").unwrap();
        assert_eq!(BatchLog::open_keys(dir.path()).unwrap(), ["k1".to_owned()].into_iter().collect());
        let mut log = BatchLog::open(dir.path()).unwrap();
        assert_eq!(log.open_rounds()[0].batch_id.as_deref(), Some("batch_9"));
        log.append(BatchLine { round: 1, ended: Some("completed".into()), ..Default::default() }).unwrap();
        drop(log);
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 3, "{text}");
        let log = BatchLog::open(dir.path()).unwrap();
        assert_eq!((log.rounds()[0].batch_id.as_deref(), log.open_rounds().len()), (Some("batch_9"), 0));
    }

    #[test]
    fn a_malformed_middle_line_names_the_line() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(BATCHES_FILE), "{\"round\": 1, \"keys\": []}\nnot json\n{\"round\": 2}\n")
            .unwrap();
        let e = BatchLog::open(dir.path()).unwrap_err().to_string();
        assert!(e.contains("batches.jsonl:2:") && e.contains("; fix or remove that line"), "{e}");
    }

    /// A second, different job (or input file) recorded for one round is refused naming its
    /// line: the last one no longer wins silently, leaving the round's real job unread and its
    /// queries booked as possibly billed (hunt 41). The same id again is only a repeat.
    #[test]
    fn two_jobs_recorded_for_one_round_are_refused_by_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(BATCHES_FILE);
        let base = "{\"round\": 1, \"keys\": [\"k1\"]}\n{\"round\": 1, \"batch_id\": \"batch-2\"}\n";
        std::fs::write(&path, format!("{base}{{\"round\": 1, \"batch_id\": \"batch-2\"}}\n")).unwrap();
        assert_eq!(BatchLog::open(dir.path()).unwrap().open_rounds()[0].batch_id.as_deref(), Some("batch-2"));
        std::fs::write(&path, format!("{base}{{\"round\": 1, \"batch_id\": \"batch-999\"}}\n")).unwrap();
        let e = BatchLog::open(dir.path()).unwrap_err().to_string();
        assert!(
            e.contains(
                "batches.jsonl:3: round 1 has batch_id \"batch-2\" already, and this line records \"batch-999\""
            ) && e.contains("fix or remove that line"),
            "{e}"
        );
        assert!(BatchLog::open_keys(dir.path()).is_err(), "the dry run refuses it alike");
        // The run itself never writes one: refused before it is written.
        std::fs::write(&path, base).unwrap();
        let mut log = BatchLog::open(dir.path()).unwrap();
        assert!(log.append(BatchLine { round: 1, batch_id: Some("batch-3".into()), ..Default::default() }).is_err());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), base);
    }

    /// A torn last line is cut and said once, naming file:line (hunt 41: dropped without a word).
    #[test]
    fn a_torn_last_line_is_said() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(BATCHES_FILE);
        std::fs::write(&path, "{\"round\": 1, \"keys\": [\"k1\"]}\n{\"round\": 1, \"batch_").unwrap();
        let peeked = BatchLog::peek_torn(dir.path()).unwrap().unwrap();
        let mut log = BatchLog::open(dir.path()).unwrap();
        let w = log.take_warning().unwrap();
        assert_eq!(peeked, w, "the dry run says what the run cuts");
        assert!(w.contains("batches.jsonl:2: dropped a torn last line"), "{w}");
        assert_eq!(log.take_warning(), None);
    }
}

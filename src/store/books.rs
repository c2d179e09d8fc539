//! The books of a run folder: everything it has paid, or may have paid, for.
//!
//! Three append-only, fsynced files, read together:
//! - `verdicts.jsonl`: one record per paid verdict ([`crate::store::ledger`]);
//! - `failed.jsonl`: queries that cost money and stored no verdict (a timed-out attempt);
//! - `intents.jsonl`: the intent written before each request, and how it ended when neither of
//!   the above closes it ([`crate::store::intents`]).
//!
//! A query goes [`Books::begin`] (intent written and fsynced; only then is the request sent) →
//! [`Books::record_reply`] or [`Books::record_failure`] (its record carries the intent's id) or,
//! when its reply will never be recorded, [`Books::give_up`] (booked as possibly billed). On
//! [`Books::open`], intents nothing closes are booked as possibly billed, so every request the
//! provider may have billed is booked exactly once: as a verdict, a paid failure, or a possibly
//! billed intent. [`Books::spend`] adds them up for one judge configuration.

use crate::store::batches::{BatchLog, BatchLogError};
use crate::store::intents::{Closure, Intent};
use crate::store::intents::{IntentError, IntentId, IntentLog, StagedIntents};
use crate::store::ledger::{
    self, Duplicate, FailedLine, LedgerError, ReadLog, StagedRecords, VerdictLog, VerdictRecord,
};
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// Errors of the books.
#[derive(Debug, thiserror::Error)]
pub enum BooksError {
    /// The verdict log or failed.jsonl.
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    /// Reading or appending the intent log (intents.jsonl: paid queries in flight) failed.
    #[error(transparent)]
    Intents(#[from] IntentError),
    /// batches.jsonl (the provider batch jobs of the folder) cannot be read.
    #[error(transparent)]
    Batches(#[from] BatchLogError),
}

/// Spend booked for one judge configuration, USD (every part ≥ 0).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Spend {
    /// Stored verdicts (first record of each key).
    pub verdicts_usd: f64,
    /// Duplicate verdict records (a key stored again: older versions, hand-merged files).
    pub duplicates: usize,
    /// Their cost (paid, so it counts, though the verdicts are not used).
    pub duplicates_usd: f64,
    /// Paid queries without a verdict (`failed.jsonl`).
    pub failed_usd: f64,
    /// Requests booked as possibly billed (intents without a recorded reply).
    pub possibly_billed: usize,
    /// Their reserved worst case.
    pub possibly_billed_usd: f64,
    /// Queries of a provider batch job still open (their intents stay open until its results
    /// are booked; docs/live.md, "Batch dispatch"): not possibly billed, but reserved.
    pub in_open_job: usize,
    /// Their reserved worst case, USD: counted against `max_usd` until the job is booked.
    pub in_open_job_usd: f64,
}

impl Spend {
    /// Add `other`'s parts to these.
    pub fn add(&mut self, other: &Spend) {
        self.verdicts_usd += other.verdicts_usd;
        self.duplicates += other.duplicates;
        self.duplicates_usd += other.duplicates_usd;
        self.failed_usd += other.failed_usd;
        self.possibly_billed += other.possibly_billed;
        self.possibly_billed_usd += other.possibly_billed_usd;
        self.in_open_job += other.in_open_job;
        self.in_open_job_usd += other.in_open_job_usd;
    }

    /// Everything booked or reserved: what counts against `max_usd`.
    pub fn total_usd(&self) -> f64 {
        self.verdicts_usd + self.duplicates_usd + self.failed_usd + self.possibly_billed_usd + self.in_open_job_usd
    }
}

/// Verdicts written by [`Books::stage_replies`] and not yet fsynced.
#[derive(Debug)]
pub struct StagedReplies {
    ids: Vec<IntentId>,
    dups: Vec<(String, String, String, f64)>,
    stored: Vec<bool>,
    records: StagedRecords,
}

impl StagedReplies {
    /// fsync the verdict lines (run it without holding the books).
    ///
    /// # Errors
    /// [`BooksError::Ledger`] naming the verdict log.
    pub fn sync(&self) -> Result<(), BooksError> {
        Ok(self.records.sync()?)
    }
}

/// The three file names of one set of books in a run folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BookFiles {
    /// Paid verdicts.
    pub verdicts: &'static str,
    /// Paid queries without a verdict.
    pub failed: &'static str,
    /// Intents of the requests sent.
    pub intents: &'static str,
}

/// The books of the run's judge: `verdicts.jsonl`, `failed.jsonl`, `intents.jsonl`.
pub const RUN_BOOKS: BookFiles =
    BookFiles { verdicts: "verdicts.jsonl", failed: "failed.jsonl", intents: "intents.jsonl" };

/// The books of a gate's trusted judge in the run folder: `trusted_verdicts.jsonl`,
/// `trusted_failed.jsonl`, `trusted_intents.jsonl` (their spend counts against the run's
/// `budget.max_usd`).
pub const TRUSTED_BOOKS: BookFiles =
    BookFiles { verdicts: "trusted_verdicts.jsonl", failed: "trusted_failed.jsonl", intents: "trusted_intents.jsonl" };

/// The books of a judge's fingerprint checks in the run folder (docs/live.md, "Judge
/// fingerprint"): `fingerprint_verdicts.jsonl`, `fingerprint_failed.jsonl`,
/// `fingerprint_intents.jsonl`. Kept apart from the run's verdicts (never fitted), their spend
/// counts against the run's `budget.max_usd`.
pub const FINGERPRINT_BOOKS: BookFiles = BookFiles {
    verdicts: "fingerprint_verdicts.jsonl",
    failed: "fingerprint_failed.jsonl",
    intents: "fingerprint_intents.jsonl",
};

/// The open books of a run folder (hold the run-folder lock while they are open).
#[derive(Debug)]
pub struct Books {
    log: VerdictLog,
    intents: IntentLog,
    failed_path: PathBuf,
    /// The lines of failed.jsonl: read at open, then appended with the file.
    failed: Vec<FailedLine>,
}

impl Books {
    /// Open the books of the run folder `dir`: load the verdicts (a torn last line is cut, a
    /// duplicate key reported and its first record used) and book every open intent as possibly
    /// billed. Returns the books and warnings for the user.
    ///
    /// # Errors
    /// [`BooksError`] naming the file (and line).
    pub fn open(dir: &Path) -> Result<(Self, Vec<String>), BooksError> {
        Self::open_files(dir, &RUN_BOOKS)
    }

    /// [`Books::open`] for the books named by `files` in `dir` (e.g. [`TRUSTED_BOOKS`]).
    ///
    /// # Errors
    /// [`BooksError`] naming the file (and line).
    pub fn open_files(dir: &Path, files: &BookFiles) -> Result<(Self, Vec<String>), BooksError> {
        Self::open_keeping(dir, files, &HashSet::new())
    }

    /// [`Books::open_files`], keeping open the intents whose keys are in `keep` (the queries of
    /// an open provider batch job, booked from its output when the run resumes it).
    ///
    /// # Errors
    /// [`BooksError`] naming the file (and line).
    pub fn open_keeping(
        dir: &Path,
        files: &BookFiles,
        keep: &HashSet<String>,
    ) -> Result<(Self, Vec<String>), BooksError> {
        let verdicts = dir.join(files.verdicts);
        // None: no file; Some(true): a file that holds nothing.
        let emptied = std::fs::metadata(&verdicts).ok().map(|m| m.len() == 0);
        let (log, warning) = VerdictLog::open(&verdicts)?;
        let failed_path = dir.join(files.failed);
        let repaired = ledger::repair_failed(&failed_path)?;
        let (failed, failed_warnings) = ledger::read_failed(&failed_path)?;
        let failed_warning = repaired.into_iter().chain(failed_warnings);
        let (closed, max_id) = closed_by_records(log.records(), log.duplicates(), &failed);
        let (intents, recovery) = IntentLog::open_keeping(&dir.join(files.intents), &closed, max_id, keep)?;
        let mut warnings: Vec<String> = warning.into_iter().chain(failed_warning).chain(recovery.warning).collect();
        let usd: f64 = recovery.booked.iter().map(|c| c.cost_usd).sum();
        // Requests of a judge that bills nothing (a mock, a local model without prices) cost
        // nothing to lose: no warning about money.
        if !recovery.booked.is_empty() && usd > 0.0 {
            // No verdict file at all beside intents that were sent: more likely moved or
            // deleted than a run that never recorded a reply.
            let missing = match emptied {
                Some(false) => String::new(),
                None => format!(
                    "; {} is missing: if it was moved or deleted, put it back, and its verdicts are booked in place of these (once, at what they cost)",
                    verdicts.display()
                ),
                // A run that crashed before its first reply leaves it empty too (hunt 58: an
                // emptied file read only as a crash).
                Some(true) => format!(
                    "; {} is empty: if its lines were removed, put them back, and its verdicts are booked in place of these (once, at what they cost)",
                    verdicts.display()
                ),
            };
            warnings.push(format!(
                "{}: {} request(s) were sent (or about to be) by a run that ended before their replies were recorded; booked as possibly billed at their worst case, ${usd:.6} in all, counted as spend and against max_usd{missing}",
                intents.path().display(),
                recovery.booked.len()
            ));
        }
        Ok((Self { log, intents, failed_path, failed }, warnings))
    }

    /// The intents written and not closed: requests in flight, or in a provider batch job
    /// still open.
    pub fn open_intents(&self) -> Vec<Intent> {
        self.intents.open_intents().cloned().collect()
    }

    /// The verdict log.
    pub fn log(&self) -> &VerdictLog {
        &self.log
    }

    /// Write the intent to send query `key` (items `a` first, `b` second; ids) with
    /// `reserved_usd` reserved. Call before sending; send only if this succeeds.
    ///
    /// # Errors
    /// [`BooksError::Intents`].
    pub fn begin(&mut self, key: &str, a: &str, b: &str, reserved_usd: f64) -> Result<IntentId, BooksError> {
        Ok(self.intents.begin(key, a, b, reserved_usd)?)
    }

    /// [`Books::begin`] for several queries (key, a, b, reserved USD) with one fsync.
    ///
    /// # Errors
    /// [`BooksError::Intents`]: then none of them may be sent.
    pub fn begin_all(&mut self, queries: &[(&str, &str, &str, f64)]) -> Result<Vec<IntentId>, BooksError> {
        Ok(self.intents.begin_all(queries)?)
    }

    /// The first half of [`Books::begin_all`]: the intents written and flushed, not fsynced
    /// ([`IntentLog::stage_all`]). Sync them with [`StagedIntents::sync`] without holding the
    /// books (verdicts can be booked meanwhile), and send only once that succeeded; if it
    /// fails, [`Books::abandon_intents`].
    ///
    /// # Errors
    /// [`BooksError::Intents`]: then none of them may be sent.
    pub fn stage_intents(&mut self, queries: &[(&str, &str, &str, f64)]) -> Result<StagedIntents, BooksError> {
        Ok(self.intents.stage_all(queries)?)
    }

    /// Forget intents whose sync failed (none of their requests was sent).
    pub fn abandon_intents(&mut self, staged: StagedIntents) {
        self.intents.abandon(staged);
    }

    /// Append records that close no intent and cost nothing: a judge panel's copies of verdicts
    /// its member's configuration stored in a single-judge run (`reused_from`). Written with
    /// one fsync; per record, whether it was written (`false`: its key is already stored).
    ///
    /// # Errors
    /// [`BooksError::Ledger`].
    pub fn adopt(&mut self, recs: Vec<VerdictRecord>) -> Result<Vec<bool>, BooksError> {
        debug_assert!(recs.iter().all(|r| r.intent.is_none() && r.reply.cost_usd == 0.0 && r.reused_from.is_some()));
        Ok(self.log.append_all(recs)?)
    }

    /// Store the verdict of intent `id` (the record gets the intent's id). Returns `false` when
    /// its key was already stored: the reply's cost is then booked in failed.jsonl instead.
    ///
    /// # Errors
    /// [`BooksError`].
    pub fn record_reply(&mut self, id: IntentId, rec: VerdictRecord) -> Result<bool, BooksError> {
        Ok(self.record_replies(vec![(id, rec)])?[0])
    }

    /// [`Books::record_reply`] for several verdicts (intent, record) with one fsync of the
    /// verdict log: a pipelined run stores every reply it has collected at once instead of one
    /// fsync apart. Per verdict, whether it was stored (`false`: its key was already stored, and
    /// its cost is booked in failed.jsonl).
    ///
    /// # Errors
    /// [`BooksError`]: then none of them counts as stored (their intents stay open, so a
    /// restart books each as stored or possibly billed, never neither).
    pub fn record_replies(&mut self, recs: Vec<(IntentId, VerdictRecord)>) -> Result<Vec<bool>, BooksError> {
        let staged = self.stage_replies(recs)?;
        if let Err(e) = staged.records.sync() {
            self.abandon_replies(staged);
            return Err(e.into());
        }
        self.commit_replies(staged)
    }

    /// The first half of [`Books::record_replies`]: the verdict lines written and flushed, not
    /// fsynced. Sync them with [`StagedReplies::sync`] (no lock on the books needed, so intents
    /// can be written meanwhile), then [`Books::commit_replies`] (or [`Books::abandon_replies`]
    /// if the sync failed). Their intents stay open until committed: a crash before that books
    /// each as stored (its line reached the disk) or possibly billed, never neither.
    ///
    /// # Errors
    /// [`BooksError::Ledger`].
    pub fn stage_replies(&mut self, recs: Vec<(IntentId, VerdictRecord)>) -> Result<StagedReplies, BooksError> {
        let ids: Vec<IntentId> = recs.iter().map(|(id, _)| *id).collect();
        let recs: Vec<VerdictRecord> = recs
            .into_iter()
            .map(|(id, mut rec)| {
                rec.intent = Some(id);
                rec
            })
            .collect();
        let dups: Vec<(String, String, String, f64)> =
            recs.iter().map(|r| (r.key.clone(), r.a.clone(), r.b.clone(), r.reply.cost_usd)).collect();
        let (stored, records) = self.log.stage_all(recs)?;
        Ok(StagedReplies { ids, dups, stored, records })
    }

    /// The second half of [`Books::record_replies`], once [`StagedReplies::sync`] succeeded: the
    /// verdicts join the log, their intents close, a reply for a key already stored is booked
    /// as a paid failure. Per verdict, whether it was stored.
    ///
    /// # Errors
    /// [`BooksError`] from booking a duplicate's failure.
    pub fn commit_replies(&mut self, staged: StagedReplies) -> Result<Vec<bool>, BooksError> {
        let StagedReplies { ids, dups, stored, records } = staged;
        self.log.commit(records);
        for ((id, ok), (key, a, b, cost)) in ids.into_iter().zip(&stored).zip(dups) {
            if *ok {
                self.intents.closed_by_record(id);
            } else {
                self.record_failure(
                    id,
                    &key,
                    &a,
                    &b,
                    cost,
                    "reply for a key whose verdict is already stored (kept the first)",
                )?;
            }
        }
        Ok(stored)
    }

    /// Forget replies whose sync failed (their intents stay open).
    pub fn abandon_replies(&mut self, staged: StagedReplies) {
        self.log.abandon(staged.records);
    }

    /// Record the failed query of intent `id` that cost `cost_usd` (booked in failed.jsonl when
    /// above 0; otherwise the intent is closed as not billed).
    ///
    /// # Errors
    /// [`BooksError`].
    pub fn record_failure(
        &mut self,
        id: IntentId,
        key: &str,
        a: &str,
        b: &str,
        cost_usd: f64,
        error: &str,
    ) -> Result<(), BooksError> {
        if cost_usd > 0.0 {
            ledger::append_failed_intent(&self.failed_path, key, a, b, cost_usd, error, Some(id))?;
            self.failed.push(FailedLine { key: key.to_owned(), cost_usd, intent: Some(id) });
            self.intents.closed_by_record(id);
        } else {
            self.intents.close_unbilled(id, error)?;
        }
        Ok(())
    }

    /// Book the query of intent `id` as possibly billed at `cost_usd` (at least its reservation):
    /// it may have run, and nothing says what it answered or cost
    /// ([`crate::judge::JudgeError::PossiblyBilled`]).
    ///
    /// # Errors
    /// [`BooksError::Intents`].
    pub fn record_possibly_billed(&mut self, id: IntentId, cost_usd: f64, reason: &str) -> Result<(), BooksError> {
        self.intents.book_possibly_billed_at(id, reason, Some(cost_usd))?;
        Ok(())
    }

    /// Close the intents `ids` of queries written ahead and never sent (not billed), with one
    /// fsync.
    ///
    /// # Errors
    /// [`BooksError::Intents`].
    pub fn close_unsent(&mut self, ids: &[IntentId], reason: &str) -> Result<(), BooksError> {
        self.intents.close_unbilled_all(ids, reason)?;
        Ok(())
    }

    /// Give up on every request still in flight (their replies will not be recorded): book each
    /// as possibly billed at its reserved worst case. Returns how many and their total, USD.
    ///
    /// # Errors
    /// [`BooksError::Intents`].
    pub fn give_up(&mut self, reason: &str) -> Result<(usize, f64), BooksError> {
        let open: Vec<IntentId> = self.intents.open_intents().map(|i| i.intent).collect();
        let mut usd = 0.0;
        for id in &open {
            usd += self.intents.book_possibly_billed(*id, reason)?.cost_usd;
        }
        Ok((open.len(), usd))
    }

    /// Requests in flight (intents written and not closed).
    pub fn in_flight(&self) -> usize {
        self.intents.open_intents().count()
    }

    /// Spend booked for the cache keys `mine` accepts (one judge configuration); requests in
    /// flight are not in it (the budget holds their reservations).
    pub fn spend(&self, mine: &dyn Fn(&str) -> bool) -> Spend {
        self.spend_with(&[], mine)
    }

    /// [`Books::spend`] at the end of a run, with the intents left open (those of a provider
    /// batch job still open: [`Books::open_keeping`]) counted at their reservations as
    /// [`Spend::in_open_job`].
    pub fn spend_with_open_job(&self, mine: &dyn Fn(&str) -> bool) -> Spend {
        self.spend_with(&self.open_intents(), mine)
    }

    /// The spend of the books with the intents `in_job` counted as reserved in an open job.
    fn spend_with(&self, in_job: &[Intent], mine: &dyn Fn(&str) -> bool) -> Spend {
        let keys: HashSet<String> = in_job.iter().map(|i| i.key.clone()).collect();
        let (records, duplicates) = (self.log.records(), self.log.duplicates());
        spend(records, duplicates, &self.failed, self.intents.possibly_billed(), (in_job, &keys), mine)
    }
}

/// The spend the run folder `dir` has booked for the keys `mine` accepts, read without writing
/// anything (for the dry run): intents nothing closes count as possibly billed at their worst
/// case, as the next run will book them.
///
/// # Errors
/// [`BooksError`] naming the file (and line).
pub fn peek_spend(dir: &Path, mine: &dyn Fn(&str) -> bool) -> Result<Spend, BooksError> {
    peek_spend_files(dir, &RUN_BOOKS, mine)
}

/// [`peek_spend`] for the books named by `files` in `dir` (e.g. a gate's [`TRUSTED_BOOKS`]).
///
/// # Errors
/// [`BooksError`] naming the file (and line).
pub fn peek_spend_files(dir: &Path, files: &BookFiles, mine: &dyn Fn(&str) -> bool) -> Result<Spend, BooksError> {
    Ok(peek_files(dir, files, mine)?.0)
}

/// [`peek_spend_files`], with a warning for each damaged line the books hold (file:line): a
/// torn last line, a duplicate key, a failed.jsonl line that does not read. What it says is
/// what [`Books::open_files`] says, and what a damaged line counts as is what the next run
/// books: an intent such a line would close stays open, booked as possibly billed.
///
/// # Errors
/// [`BooksError`] naming the file (and line).
fn peek_files(dir: &Path, files: &BookFiles, mine: &dyn Fn(&str) -> bool) -> Result<(Spend, Vec<String>), BooksError> {
    let verdicts = dir.join(files.verdicts);
    let read = if verdicts.exists() { ledger::read_log(&verdicts)? } else { ReadLog::default() };
    let (failed, failed_warnings) = ledger::read_failed(&dir.join(files.failed))?;
    let (closed, _) = closed_by_records(&read.records, &read.duplicates, &failed);
    let crate::store::intents::Peeked { open, booked, torn } = IntentLog::peek(&dir.join(files.intents), &closed)?;
    // Only the run's judge dispatches provider batch jobs.
    let in_job = if files.intents == RUN_BOOKS.intents { BatchLog::open_keys(dir)? } else { HashSet::new() };
    let warnings = read.warning(&verdicts).into_iter().chain(failed_warnings).chain(torn).collect();
    Ok((spend(&read.records, &read.duplicates, &failed, &booked, (&open, &in_job), mine), warnings))
}

/// The (cache key, intent id) pairs the verdict records (duplicates too) and failed.jsonl's
/// lines carry, and the largest id among them.
fn closed_by_records(
    records: &[VerdictRecord],
    duplicates: &[Duplicate],
    failed: &[FailedLine],
) -> (HashSet<(String, IntentId)>, IntentId) {
    let mut closed = HashSet::new();
    let mut max_id = 0;
    for r in records.iter().chain(duplicates.iter().map(|d| &d.record)) {
        if let Some(id) = r.intent {
            closed.insert((r.key.clone(), id));
            max_id = max_id.max(id);
        }
    }
    for (key, id) in failed.iter().filter_map(|f| Some((f.key.clone(), f.intent?))) {
        max_id = max_id.max(id);
        closed.insert((key, id));
    }
    (closed, max_id)
}

/// Every set of books a run folder can hold: the run's judge ([`RUN_BOOKS`]; an audit's judge
/// in an audit folder), a gate's trusted judge ([`TRUSTED_BOOKS`]) and the judge's fingerprint
/// checks ([`FINGERPRINT_BOOKS`]).
pub const ALL_BOOKS: [BookFiles; 3] = [RUN_BOOKS, TRUSTED_BOOKS, FINGERPRINT_BOOKS];

/// Everything the books of the folder `dir` hold, every set ([`ALL_BOOKS`]) and every key: what
/// `budget.max_usd` bounds, whatever judge, pool or config wrote it. Read without writing
/// (intents nothing closes count as possibly billed).
///
/// # Errors
/// [`BooksError`] naming a file that cannot be read.
pub fn folder_spend(dir: &Path) -> Result<Spend, BooksError> {
    Ok(folder_books(dir)?.total())
}

/// What each set of books of a run folder holds ([`ALL_BOOKS`]), every key.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct FolderBooks {
    /// The run's judge ([`RUN_BOOKS`]): this and earlier configs, judges and pools.
    pub run: Spend,
    /// A gate's trusted judge ([`TRUSTED_BOOKS`]).
    pub trusted: Spend,
    /// The judge's fingerprint checks ([`FINGERPRINT_BOOKS`]).
    pub fingerprint: Spend,
}

impl FolderBooks {
    /// The three sets added up: what `budget.max_usd` bounds.
    pub fn total(&self) -> Spend {
        let mut total = Spend::default();
        for s in [&self.run, &self.trusted, &self.fingerprint] {
            total.add(s);
        }
        total
    }
}

/// [`folder_spend`] set by set.
///
/// # Errors
/// [`BooksError`] naming a file that cannot be read.
pub fn folder_books(dir: &Path) -> Result<FolderBooks, BooksError> {
    let all = |files: &BookFiles| peek_spend_files(dir, files, &|_| true);
    Ok(FolderBooks { run: all(&RUN_BOOKS)?, trusted: all(&TRUSTED_BOOKS)?, fingerprint: all(&FINGERPRINT_BOOKS)? })
}

/// The warnings a read of the sets of books `sets` of the run folder `dir` gives, one per
/// damaged line, naming file:line and what it is counted as. A command that does not open a set
/// itself (a run whose fingerprint check asks nothing, a dry run, the gate) says these, since the
/// set's spend counts against `budget.max_usd` all the same.
///
/// # Errors
/// [`BooksError`] naming a file that cannot be read.
pub fn books_warnings(dir: &Path, sets: &[BookFiles]) -> Result<Vec<String>, BooksError> {
    let mut warnings = Vec::new();
    for files in sets {
        warnings.extend(peek_files(dir, files, &|_| true)?.1);
    }
    Ok(warnings)
}

/// Add up the books for the keys `mine` accepts; `open` intents count as possibly billed, or as
/// reserved in an open batch job when their key is in `in_job`.
fn spend(
    records: &[VerdictRecord],
    duplicates: &[Duplicate],
    failed: &[FailedLine],
    booked: &[Closure],
    open: (&[Intent], &HashSet<String>),
    mine: &dyn Fn(&str) -> bool,
) -> Spend {
    let mut s = Spend::default();
    for r in records.iter().filter(|r| mine(&r.key)) {
        s.verdicts_usd += r.reply.cost_usd;
    }
    // A copy taken over at no cost (`reused_from`) carries its original's cost to the keys
    // `mine` accepts, unless they hold the original too: the folder counts it once either way.
    let copied: HashSet<&str> =
        records.iter().filter(|r| mine(&r.key)).filter_map(|r| r.reused_from.as_deref()).collect();
    if !copied.is_empty() {
        for r in records.iter().filter(|r| copied.contains(r.key.as_str()) && !mine(&r.key)) {
            s.verdicts_usd += r.reply.cost_usd;
        }
    }
    for d in duplicates.iter().filter(|d| mine(&d.record.key)) {
        s.duplicates += 1;
        s.duplicates_usd += d.record.reply.cost_usd;
    }
    s.failed_usd = failed.iter().filter(|f| mine(&f.key)).map(|f| f.cost_usd).sum();
    // An intent booked as possibly billed while its verdict line was missing (verdicts.jsonl
    // moved away, then restored) is booked by that line: once, at what it cost.
    let recorded: HashSet<(&str, IntentId)> = records
        .iter()
        .chain(duplicates.iter().map(|d| &d.record))
        .filter_map(|r| r.intent.map(|id| (r.key.as_str(), id)))
        .collect();
    let booked = booked.iter().filter(|c| !recorded.contains(&(c.key.as_str(), c.closed)));
    for usd in booked.filter(|c| mine(&c.key)).map(|c| c.cost_usd) {
        s.possibly_billed += 1;
        s.possibly_billed_usd += usd;
    }
    let (open, in_job) = open;
    for i in open.iter().filter(|i| mine(&i.key)) {
        if in_job.contains(&i.key) {
            s.in_open_job += 1;
            s.in_open_job_usd += i.reserved_usd;
        } else {
            s.possibly_billed += 1;
            s.possibly_billed_usd += i.reserved_usd;
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::verdict::JudgeReply;

    fn rec(key: &str, cost: f64) -> VerdictRecord {
        VerdictRecord {
            key: key.into(),
            pool_id: "p".into(),
            a: "a".into(),
            b: "b".into(),
            judge: "j".into(),
            judge_settings: None,
            ts: 1,
            intent: None,
            reused_from: None,
            reply: JudgeReply { cost_usd: cost, ..JudgeReply::outcome(Some(1.0)) },
        }
    }

    /// Every request the provider may have billed is booked exactly once across a crash: the
    /// kill leaves two intents open (one whose reply was recorded, one not).
    #[test]
    fn each_request_is_booked_once_across_a_crash() {
        let dir = tempfile::tempdir().unwrap();
        let all = |_: &str| true;
        {
            let (mut books, w) = Books::open(dir.path()).unwrap();
            assert!(w.is_empty(), "{w:?}");
            let i1 = books.begin("k1", "a", "b", 0.5).unwrap();
            let i2 = books.begin("k2", "b", "a", 0.5).unwrap();
            let i3 = books.begin("k3", "a", "c", 0.5).unwrap();
            let i4 = books.begin("k4", "c", "a", 0.5).unwrap();
            let _i5 = books.begin("k5", "a", "d", 0.5).unwrap();
            assert!(books.record_reply(i1, rec("k1", 0.125)).unwrap());
            books.record_failure(i2, "k2", "b", "a", 0.25, "timeout").unwrap();
            books.record_failure(i3, "k3", "a", "c", 0.0, "HTTP 401").unwrap();
            assert!(books.record_reply(i4, rec("k4", 0.0625)).unwrap());
            assert_eq!(books.in_flight(), 1);
            let s = books.spend(&all);
            assert_eq!((s.verdicts_usd, s.failed_usd, s.possibly_billed), (0.1875, 0.25, 0));
            // SIGKILL here: intent 5 is in flight.
        }
        // The dry run's view, before anything books intent 5: already counted, nothing written.
        let intents_before = std::fs::read(dir.path().join("intents.jsonl")).unwrap();
        let peeked = peek_spend(dir.path(), &all).unwrap();
        assert_eq!((peeked.possibly_billed, peeked.total_usd()), (1, 0.125 + 0.0625 + 0.25 + 0.5));
        assert_eq!(std::fs::read(dir.path().join("intents.jsonl")).unwrap(), intents_before);
        let (books, w) = Books::open(dir.path()).unwrap();
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("1 request(s)") && w[0].contains("possibly billed"), "{}", w[0]);
        let s = books.spend(&all);
        assert_eq!((s.possibly_billed, s.possibly_billed_usd), (1, 0.5));
        assert_eq!(s.total_usd(), 0.125 + 0.0625 + 0.25 + 0.5);
        assert_eq!(books.spend(&|k: &str| k == "k5").total_usd(), 0.5, "booked under its own key");
        drop(books);
        let (books, w) = Books::open(dir.path()).unwrap();
        assert!(w.is_empty(), "booked once: {w:?}");
        assert_eq!(books.spend(&all).total_usd(), 0.9375);
    }

    /// A failed.jsonl line whose cost does not read (negative, text, missing, above the bound)
    /// closes no intent: its intent is booked at its reserved worst case, with a warning naming
    /// the line. Before, it closed the intent at $0 without a word.
    #[test]
    fn a_damaged_failed_line_leaves_its_intent_booked_at_the_worst_case() {
        for cost in ["-1", "\"0.3\"", "null", "1e308"] {
            let dir = tempfile::tempdir().unwrap();
            let all = |_: &str| true;
            {
                let (mut books, _) = Books::open(dir.path()).unwrap();
                let i1 = books.begin("k1", "a", "b", 0.3).unwrap();
                books.record_failure(i1, "k1", "a", "b", 0.3, "timeout").unwrap();
                assert_eq!(books.spend(&all).total_usd(), 0.3);
            }
            let failed = dir.path().join("failed.jsonl");
            let text =
                std::fs::read_to_string(&failed).unwrap().replace("\"cost_usd\":0.3", &format!("\"cost_usd\":{cost}"));
            std::fs::write(&failed, text).unwrap();
            let (books, w) = Books::open(dir.path()).unwrap();
            assert!(w.iter().any(|w| w.contains("failed.jsonl:1: not a failed-query record (")), "{cost}: {w:?}");
            let s = books.spend(&all);
            assert_eq!((s.failed_usd, s.possibly_billed, s.possibly_billed_usd), (0.0, 1, 0.3), "{cost}");
        }
    }

    /// Books in `dir` holding two verdicts, $0.125 and $0.0625, each reserved at $0.5.
    fn two_verdicts(dir: &Path) {
        let (mut books, _) = Books::open(dir).unwrap();
        let i1 = books.begin("k1", "a", "b", 0.5).unwrap();
        assert!(books.record_reply(i1, rec("k1", 0.125)).unwrap());
        let i2 = books.begin("k2", "b", "a", 0.5).unwrap();
        assert!(books.record_reply(i2, rec("k2", 0.0625)).unwrap());
    }

    /// verdicts.jsonl moved away: its intents are booked as possibly billed, and the warning
    /// says the file is missing; put back, each request is booked once, as its verdict. Before,
    /// the restored verdicts were booked on top of the possibly billed ones.
    #[test]
    fn restored_verdicts_replace_what_was_booked_while_they_were_missing() {
        let dir = tempfile::tempdir().unwrap();
        let all = |_: &str| true;
        two_verdicts(dir.path());
        let (v, away) = (dir.path().join("verdicts.jsonl"), dir.path().join("away.jsonl"));
        std::fs::rename(&v, &away).unwrap();
        let (books, w) = Books::open(dir.path()).unwrap();
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("2 request(s)") && w[0].ends_with("verdicts.jsonl is missing: if it was moved or deleted, put it back, and its verdicts are booked in place of these (once, at what they cost)"), "{}", w[0]);
        assert_eq!((books.spend(&all).possibly_billed, books.spend(&all).total_usd()), (2, 1.0));
        drop(books);
        std::fs::rename(&away, &v).unwrap();
        let (books, w) = Books::open(dir.path()).unwrap();
        assert!(w.is_empty(), "{w:?}");
        let s = books.spend(&all);
        assert_eq!((s.possibly_billed, s.verdicts_usd, s.total_usd()), (0, 0.1875, 0.1875));
        assert_eq!(peek_spend(dir.path(), &all).unwrap().total_usd(), 0.1875);
    }

    /// verdicts.jsonl emptied, not moved (hunt 58 F7: it read only as a crash): said so; its
    /// lines put back, each request is booked once, as its verdict.
    #[test]
    fn emptied_verdicts_are_named_and_their_lines_put_back_replace_what_was_booked() {
        let dir = tempfile::tempdir().unwrap();
        let all = |_: &str| true;
        two_verdicts(dir.path());
        let v = dir.path().join("verdicts.jsonl");
        let lines = std::fs::read(&v).unwrap();
        std::fs::write(&v, "").unwrap();
        let (books, w) = Books::open(dir.path()).unwrap();
        assert!(w[0].contains("2 request(s)") && w[0].ends_with("verdicts.jsonl is empty: if its lines were removed, put them back, and its verdicts are booked in place of these (once, at what they cost)"), "{}", w[0]);
        drop(books);
        std::fs::write(&v, lines).unwrap();
        let (books, w) = Books::open(dir.path()).unwrap();
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(books.spend(&all).total_usd(), 0.1875);
    }

    #[test]
    fn replies_stored_together_take_one_append_and_book_a_duplicate_as_failed() {
        let dir = tempfile::tempdir().unwrap();
        let all = |_: &str| true;
        {
            let (mut books, _) = Books::open(dir.path()).unwrap();
            let ids = books.begin_all(&[("k1", "a", "b", 0.5), ("k2", "b", "a", 0.5), ("k1", "a", "b", 0.5)]).unwrap();
            assert!(books.record_reply(ids[0], rec("k1", 0.125)).unwrap());
            let len_before = std::fs::metadata(dir.path().join("verdicts.jsonl")).unwrap().len();
            // k2 is new; the second k1 reply is a duplicate: not written, its cost booked failed.
            let stored = books.record_replies(vec![(ids[1], rec("k2", 0.25)), (ids[2], rec("k1", 0.0625))]).unwrap();
            assert_eq!(stored, vec![true, false]);
            assert_eq!(books.in_flight(), 0);
            assert_eq!(books.log().records().len(), 2);
            assert_eq!(books.log().records()[1].intent, Some(ids[1]));
            let s = books.spend(&all);
            assert_eq!((s.verdicts_usd, s.failed_usd), (0.375, 0.0625));
            let text = std::fs::read_to_string(dir.path().join("verdicts.jsonl")).unwrap();
            assert_eq!(text.len() as u64 - len_before, text.lines().nth(1).unwrap().len() as u64 + 1, "one line added");
        }
        let (books, w) = Books::open(dir.path()).unwrap();
        assert!(w.is_empty(), "every intent closed: {w:?}");
        assert_eq!(books.spend(&all).total_usd(), 0.125 + 0.25 + 0.0625);
    }
}

//! Batch dispatch (`acquisition.dispatch: batch`; docs/live.md, "Batch dispatch"): each round
//! of picks is one provider batch job, at the batch price.
//!
//! [`BatchJudge`] wraps an OpenAI-compatible judge. The dispatcher hands it a whole round
//! ([`Judge::judge_round`]) once the round's intents are fsynced; it then records each step in
//! batches.jsonl ([`crate::store::batches`]) before taking the next: the round's keys, the
//! uploaded input file, the batch job; it polls the job with a doubling wait, reads its output
//! and error files, and hands back one outcome per query, which the dispatcher books like a
//! live reply. Reservations are the judge's worst cases at the batch price, made for the whole
//! round before anything is uploaded, so `max_usd` holds.
//!
//! A run stopped at any point resumes the open round ([`BatchJudge::resume`], before anything
//! new is picked): the books keep the round's intents open (not booked as possibly billed);
//! a round with no recorded input was never submitted (its intents close unbilled); an input
//! without a recorded job is looked up among the batches (a kill between "created" and "id
//! recorded") and adopted, or closed unbilled when none was made from it; a recorded job is
//! polled to its end and its output booked. Ctrl-C cancels the open job and books what it
//! returned. `run --detach` submits one round and exits; a later run books it.

use crate::domain::pool::Pool;
use crate::domain::verdict::JudgeReply;
use crate::judge::{
    BatchApi, BatchJob, BatchJobStatus, BatchResult, BoxFuture, Judge, JudgeError, JudgeInfo, JudgeStats, RoundQuery,
};
use crate::store::batches::{BatchLine, BatchLog, Round};
use crate::store::books::Books;
use crate::store::ledger::VerdictRecord;
use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// The longest wait between two polls of a batch job.
const MAX_POLL: Duration = Duration::from_secs(600);

/// batches.jsonl's `ended` for a round whose job the endpoint no longer knows (HTTP 404).
const GONE: &str = "gone";

/// Failed reads of a job in a row after which the round is left open for a later run.
const MAX_READ_FAILURES: u32 = 6;

/// How the submission of a round ended.
enum Submission {
    /// The job to wait for.
    Job(String),
    /// Nothing was submitted (or nothing that can run): why.
    NotSubmitted(String),
    /// The provider has no Files or Batches API (HTTP 404, 405 or 501): why.
    Unsupported(String),
    /// A setting is wrong (a redirect: `base_url`): nothing was made; every query fails with it
    /// and the run stops.
    Refused(JudgeError),
    /// Submitted or possibly submitted, and not known which: left open for a later run.
    Pending(String),
}

/// Why a job was not seen to end ([`BatchJudge::await_end`]).
enum Unended {
    /// The endpoint answers HTTP 404 for it: deleted, lost by the provider, or another
    /// base_url's job. No wait helps.
    Gone(String),
    /// It could not be read, or a stop came first: left open for a later run.
    Open(String),
}

/// Whether `e` says the endpoint has no such job.
fn not_found(e: &JudgeError) -> bool {
    matches!(e, JudgeError::Request { status: Some(404), .. })
}

/// The lines of an ended job's files ([`BatchJudge::read_lines`]).
/// A resumed round's keys (batches.jsonl) that are no query of it now: `settled`, booked with a
/// verdict before the run stopped; `unopened`, without an open intent or a verdict (a damaged
/// intents.jsonl).
#[derive(Default)]
struct Recorded<'a> {
    settled: std::collections::HashSet<&'a str>,
    unopened: std::collections::HashSet<&'a str>,
}

struct JobLines {
    /// Each query's own line, by custom id.
    results: HashMap<String, BatchResult>,
    /// Response lines that are no query's own (another custom id, or one repeated): what the
    /// provider may bill beyond the round (HTTP status, body).
    beyond_lines: Vec<(u16, serde_json::Value)>,
    /// Lines that are not batch result lines.
    unreadable: usize,
    /// What in the files disagrees with the round, for the warning; empty when nothing does.
    odd: Vec<String>,
}

/// What [`BatchJudge::resume`] did.
#[derive(Debug, Default)]
pub struct Resumed {
    /// Lines for the user (one per round settled).
    pub notes: Vec<String>,
    /// A round still open (its job has not ended, or could not be read): the run books nothing
    /// new and stops (`stop_reason: batch_pending`).
    pub pending: Option<String>,
    /// Verdicts booked from the settled rounds' jobs.
    pub booked: usize,
}

/// An OpenAI-compatible judge whose queries go out as provider batch jobs (module docs).
pub struct BatchJudge {
    inner: std::sync::Arc<dyn Judge>,
    log: Mutex<BatchLog>,
    /// A batch request's price as a share of the live price (1 − `price.batch_discount`).
    factor: f64,
    /// A query's worst case as a share of the live judge's: the batch price, and one attempt
    /// (a batch reply is not re-asked) of the live worst case's 1 + `max_invalid_retries`.
    reserve: f64,
    /// The first wait before polling a job; it doubles up to [`MAX_POLL`].
    poll_first: Duration,
    /// `run --detach`: submit and leave the job open.
    detach: bool,
    stop: AtomicBool,
    wake: tokio::sync::Notify,
}

/// The way out of a round left open, unless its message gives its own.
const RUN_AGAIN: &str = "run the same config again to book its results once it has ended";

/// The way out for a job that cannot be read, said beside [`RUN_AGAIN`]: an endpoint gone for
/// good cannot book it.
const OR_ABANDON: &str = "if its endpoint is gone for good, `run --abandon-batch` closes the round, booking its queries as possibly billed at their reservations";

/// The warning for a round whose job the endpoint no longer knows, its queries booked as possibly
/// billed at their reservations `usd` (USD each), live or on resume alike.
fn lost_job_warning(why: &str, round: u64, usd: &[f64]) -> String {
    format!(
        "{why}: the job was deleted or lost and will not end; round {round}'s {} queries booked as possibly billed at their reservations (${:.6}) and closed; their pairs may be asked again",
        usd.len(),
        usd.iter().sum::<f64>()
    )
}

/// A query left in an open round: its message ends with the way out ([`RUN_AGAIN`]).
fn pending(batch: &str, message: impl Into<String>) -> JudgeError {
    JudgeError::Pending { batch: batch.to_owned(), message: format!("{}; {RUN_AGAIN}", message.into()) }
}

/// A reply saying the endpoint does not exist on this server.
fn unsupported(e: &JudgeError) -> bool {
    matches!(e, JudgeError::Request { status: Some(404 | 405 | 501), .. })
}

fn not_run(message: String) -> JudgeError {
    JudgeError::Request { status: None, message, retryable: true, cost_usd: 0.0 }
}

/// A batch query's worst case as a share of the live judge's: the batch price (1 −
/// `price.batch_discount`), one attempt of 1 + `max_invalid_retries` (not re-asked).
pub fn reserve_factor(oc: &crate::judge::openai::OpenAiConfig) -> f64 {
    oc.batch_price_factor() / f64::from(1 + oc.max_invalid_retries)
}

impl Resumed {
    /// `hint` added to the reason a round is left open.
    /// The open round's message with its way out: `hint` (the judge that sent it, when this
    /// config's cannot read it), or else to run again ([`RUN_AGAIN`]); one piece of advice.
    fn pending_with(mut self, hint: &str) -> Self {
        if let Some(p) = &mut self.pending {
            if hint.is_empty() {
                p.push_str(&format!("; {RUN_AGAIN}"));
            } else {
                p.push_str(hint);
            }
        }
        self
    }
}

impl BatchJudge {
    /// Wrap `inner` (a judge with [`Judge::batch_api`]) for the run folder `dir` (its
    /// batches.jsonl is opened here: hold the folder's lock).
    ///
    /// # Errors
    /// batches.jsonl cannot be read or opened (named), or the judge has no batch API.
    pub fn new(
        inner: std::sync::Arc<dyn Judge>,
        dir: &std::path::Path,
        (factor, reserve): (f64, f64),
        poll_first: Duration,
        detach: bool,
    ) -> Result<Self, crate::store::batches::BatchLogError> {
        assert!(inner.batch_api().is_some(), "config::run::RawConfig::reads_batch_jobs holds for the run's judge");
        let mut log = BatchLog::open(dir)?;
        if let Some(w) = log.take_warning() {
            tracing::warn!("{w}");
        }
        Ok(Self {
            inner,
            log: Mutex::new(log),
            factor,
            reserve,
            poll_first,
            detach,
            stop: AtomicBool::new(false),
            wake: tokio::sync::Notify::new(),
        })
    }

    fn api(&self) -> &dyn BatchApi {
        self.inner.batch_api().expect("checked in new")
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    /// Append a line to batches.jsonl (fsynced).
    fn record(&self, line: BatchLine) -> Result<(), String> {
        self.log.lock().expect("batch log lock").append(line).map_err(|e| e.to_string())
    }

    /// Mark the rounds before `round` ended: their queries were booked by the dispatcher before
    /// this round was picked (wait-for-batch refits only once every outcome is booked).
    fn close_earlier(&self, round: u64) {
        let open: Vec<Round> = self.log.lock().expect("batch log lock").open_rounds();
        for r in open.into_iter().filter(|r| r.round < round) {
            let _ = self.record(BatchLine { round: r.round, ended: Some("booked".into()), ..Default::default() });
        }
    }

    /// Mark ended the rounds whose queries are all booked (the run is over; a round left
    /// open by `--detach` or an unreadable job keeps its intents open and stays open).
    pub fn close_booked(&self, books: &Books) {
        let open_keys: std::collections::HashSet<String> = books.open_intents().into_iter().map(|i| i.key).collect();
        let open: Vec<Round> = self.log.lock().expect("batch log lock").open_rounds();
        for r in open.into_iter().filter(|r| !r.keys.iter().any(|k| open_keys.contains(k))) {
            let _ = self.record(BatchLine { round: r.round, ended: Some("booked".into()), ..Default::default() });
        }
    }

    /// Upload the input, record its id, create the job (or find the one a failed create may
    /// have made), record its id.
    async fn submit(&self, round: u64, input: Vec<u8>) -> Submission {
        let file = match self.api().upload(input, format!("topk-judge-round-{round}.jsonl")).await {
            Ok(f) => f,
            Err(e) if unsupported(&e) => {
                return Submission::Unsupported(format!(
                    "the server has no Files API for batch jobs ({e}); use dispatch: wait_for_batch or pipelined with this judge"
                ));
            }
            Err(e @ JudgeError::Endpoint { .. }) => return Submission::Refused(e),
            Err(e) => return Submission::NotSubmitted(format!("the batch input was not uploaded: {e}")),
        };
        if let Err(e) = self.record(BatchLine { round, input_file_id: Some(file.clone()), ..Default::default() }) {
            return Submission::NotSubmitted(format!("not submitted: {e}"));
        }
        self.create_or_adopt(round, &file).await
    }

    /// Create the job of the uploaded `file` unless one exists: a create whose reply was lost
    /// may have made it.
    async fn create_or_adopt(&self, round: u64, file: &str) -> Submission {
        let job = match self.api().create(file, round).await {
            Ok(job) => job,
            Err(e) if unsupported(&e) => {
                return Submission::Unsupported(format!(
                    "the server has no Batches API ({e}); use dispatch: wait_for_batch or pipelined with this judge"
                ));
            }
            // Answered with a redirect (not followed): no job was made.
            Err(e @ JudgeError::Endpoint { .. }) => return Submission::Refused(e),
            Err(e) => match self.api().find_by_input(file).await {
                Ok(Some(job)) => job,
                Ok(None) => return Submission::NotSubmitted(format!("the batch job was not created: {e}")),
                Err(e2) => {
                    return Submission::Pending(format!(
                        "creating the batch job failed ({e}) and listing the batches to see whether it was made failed too ({e2})"
                    ));
                }
            },
        };
        match self.record(BatchLine { round, batch_id: Some(job.id.clone()), ..Default::default() }) {
            Ok(()) => Submission::Job(job.id),
            // Unrecorded, the job is found again from its input by the next run.
            Err(e) => Submission::Pending(format!("batch job {} made, its id not recorded: {e}", job.id)),
        }
    }

    /// The job of a round recorded in batches.jsonl: its job, the job made from its input
    /// (adopted and recorded), or none.
    async fn adopt(&self, r: &Round) -> Submission {
        match (&r.batch_id, &r.input_file_id) {
            (Some(id), _) => Submission::Job(id.clone()),
            (None, Some(file)) => match self.api().find_by_input(file).await {
                Ok(Some(job)) => {
                    match self.record(BatchLine {
                        round: r.round,
                        batch_id: Some(job.id.clone()),
                        ..Default::default()
                    }) {
                        Ok(()) => Submission::Job(job.id),
                        Err(e) => Submission::Pending(e),
                    }
                }
                Ok(None) => Submission::NotSubmitted(format!(
                    "no batch job was made from its input {file} (the run stopped before creating it)"
                )),
                Err(e) => Submission::Pending(format!("listing the batches to find the job of input {file}: {e}")),
            },
            (None, None) => {
                Submission::NotSubmitted("the run stopped before the batch input was uploaded; nothing was sent".into())
            }
        }
    }

    /// Poll `id` until it ends (a stop cancels it first; its end is then waited for, so what it
    /// ran is booked). `Err`: the endpoint has no such job, or it could not be read
    /// [`MAX_READ_FAILURES`] times in a row.
    async fn await_end(&self, id: &str) -> Result<BatchJob, Unended> {
        use backon::BackoffBuilder;
        let mut waits = backon::ExponentialBuilder::default()
            .with_min_delay(self.poll_first)
            .with_max_delay(MAX_POLL)
            .with_factor(2.0)
            .without_max_times()
            .build();
        let mut failures = 0;
        let mut cancelled = false;
        loop {
            match self.api().retrieve(id).await {
                Ok(job) if job.status.is_final() => return Ok(job),
                Ok(_) => failures = 0,
                // The endpoint has no such job (another base_url's, or deleted): no wait helps.
                Err(e) if not_found(&e) => {
                    return Err(Unended::Gone(format!("batch job {id} is not found at this endpoint: {e}")));
                }
                Err(e) => {
                    failures += 1;
                    if failures >= MAX_READ_FAILURES {
                        return Err(Unended::Open(format!(
                            "batch job {id} could not be read ({failures} times in a row): {e} ({OR_ABANDON})"
                        )));
                    }
                }
            }
            if self.stopped() && !cancelled {
                cancelled = true;
                if let Err(e) = self.api().cancel(id).await {
                    tracing::warn!("cancelling batch job {id}: {e}");
                }
            }
            let wait = if cancelled { self.poll_first } else { waits.next().unwrap_or(MAX_POLL) };
            if cancelled {
                tokio::time::sleep(wait).await;
            } else {
                tokio::select! {
                    () = tokio::time::sleep(wait) => {}
                    () = self.wake.notified() => {}
                }
            }
        }
    }

    /// The outcome of each query (custom id = cache key) from the ended `job`'s output and
    /// error files. `Err`: a file could not be read (the round is left open).
    ///
    /// A query without a line of its own is not billed when the job's files account for
    /// everything that ran; it is booked at its worst case (it may have been billed) when they
    /// do not: the job says `completed` (every request has a line then), its counts name more
    /// requests than have lines, or its files hold lines that match no request of the round,
    /// repeat one, or cannot be read. What the lines beyond the round's queries cost (at the
    /// usage they report, an unreadable line at the worst case) is booked too, as far as the
    /// queries without a line do not already hold it, so the books hold what such a provider
    /// bills. `recorded`: the round's keys (batches.jsonl) that are no query of it now (a
    /// resumed round): a line of one is the round's own, not a foreign one. `input_keys`: the
    /// keys of the job's input file in line order (batches.jsonl's record of the round): a job
    /// that `failed` (nothing ran) is a failure of the pairs whose input lines its errors name,
    /// and no failure of the others (as for an expired job).
    async fn collect(
        &self,
        job: &BatchJob,
        queries: &[(&Pool, usize, usize, &str)],
        recorded: &Recorded<'_>,
        input_keys: &[String],
    ) -> Result<Vec<Result<JudgeReply, JudgeError>>, String> {
        let keys: std::collections::HashSet<&str> = queries.iter().map(|q| q.3).collect();
        let JobLines { mut results, beyond_lines, unreadable, odd } = self.read_lines(job, &keys, recorded).await?;
        let missing = queries.iter().filter(|q| !results.contains_key(q.3)).count();
        let in_doubt = job.status == BatchJobStatus::Completed || !odd.is_empty();
        if !odd.is_empty() {
            tracing::warn!(
                "batch job {} ended {} and its files do not match the round: {}{}",
                job.id,
                job.status.as_str(),
                odd.join(", "),
                if missing > 0 {
                    format!(
                        "; {} without a line {} booked at {} worst case, as {} may have been billed",
                        crate::domain::fmt::count(missing, "request"),
                        if missing == 1 { "is" } else { "are" },
                        if missing == 1 { "its" } else { "their" },
                        if missing == 1 { "it" } else { "they" }
                    )
                } else {
                    String::new()
                }
            );
        }
        // The run cancelled the job (Ctrl-C): what did not run was never asked, as for a live
        // query whose request did not leave.
        let cancelled_by_us = job.status == BatchJobStatus::Cancelled && self.stopped();
        // The input lines a failed job's errors name ("code (input line N): message").
        let named_lines: std::collections::HashSet<&str> = job
            .errors
            .iter()
            .filter_map(|e| e.split_once("(input line ")?.1.split_once(')')?.0.parse::<usize>().ok())
            .filter_map(|n| input_keys.get(n.checked_sub(1)?).map(String::as_str))
            .collect();
        let why_missing = match job.status {
            BatchJobStatus::Failed if !job.errors.is_empty() => {
                format!("batch job {} failed before running it: {}", job.id, job.errors.join("; "))
            }
            s => format!("batch job {} ended {} before this request ran; not billed", job.id, s.as_str()),
        };
        // What the queries without a line are booked at (below).
        let held: f64 = if in_doubt {
            queries
                .iter()
                .filter(|q| !results.contains_key(q.3))
                .map(|&(p, a, b, _)| self.worst_case_usd(p, a, b))
                .sum()
        } else {
            0.0
        };
        let mut out: Vec<Result<JudgeReply, JudgeError>> = queries
            .iter()
            .map(|&(pool, a, b, key)| match results.remove(key) {
                Some(BatchResult::Response { status, body, .. }) => {
                    self.api().batch_reply(pool, a, b, status, &body, self.factor)
                }
                Some(BatchResult::Error { code, message, .. }) => {
                    Err(not_run(format!("in batch job {}: {code}: {message}", job.id)))
                }
                None if in_doubt => Err(JudgeError::PossiblyBilled {
                    message: format!(
                        "batch job {} ended {} without a line for this request; booked as possibly billed at its worst case",
                        job.id,
                        job.status.as_str()
                    ),
                    cost_usd: self.worst_case_usd(pool, a, b),
                }),
                None if cancelled_by_us => Err(JudgeError::NotSent { cost_usd: 0.0 }),
                // The provider's window ran out (or it cancelled), or it refused the job for
                // another request's line: this request never ran.
                None if matches!(job.status, BatchJobStatus::Expired | BatchJobStatus::Cancelled)
                    || (job.status == BatchJobStatus::Failed && !named_lines.contains(key)) =>
                {
                    Err(JudgeError::NotRun { message: why_missing.clone() })
                }
                None => Err(not_run(why_missing.clone())),
            })
            .collect();
        // What the lines beyond the round cost, less what the queries without a line already
        // hold (they are likely the same requests under other ids).
        let worst = queries.iter().map(|&(p, a, b, _)| self.worst_case_usd(p, a, b)).fold(0.0, f64::max);
        let beyond_usd: f64 = beyond_lines
            .iter()
            .map(|(status, body)| match queries.first() {
                Some(&(p, a, b, _)) => match self.api().batch_reply(p, a, b, *status, body, self.factor) {
                    Ok(reply) => reply.cost_usd,
                    Err(e) => e.cost_usd(),
                },
                None => 0.0,
            })
            .sum::<f64>()
            + worst * unreadable as f64;
        let extra = beyond_usd - held;
        if extra > 1e-12
            && let Some(first) = out.first_mut()
        {
            tracing::warn!(
                "batch job {}: {} beyond the round's requests booked with its first query, at ${extra:.6} beyond what the requests without a line hold",
                job.id,
                crate::domain::fmt::count(beyond_lines.len() + unreadable, "line")
            );
            match first {
                Ok(reply) => reply.cost_usd += extra,
                Err(e) => e.add_cost(extra),
            }
        }
        Ok(out)
    }

    /// The lines of the ended `job`'s output and error files, each matched to a query of the
    /// round by its custom id (`keys`), and what in them disagrees with the round. `Err`: a file
    /// could not be read.
    async fn read_lines(
        &self,
        job: &BatchJob,
        keys: &std::collections::HashSet<&str>,
        recorded: &Recorded<'_>,
    ) -> Result<JobLines, String> {
        let mut results: HashMap<String, BatchResult> = HashMap::new();
        let (mut unmatched, mut repeated, mut unreadable) = (0usize, 0usize, Vec::new());
        // Lines of keys the round recorded whose intents are no longer open (a damaged
        // intents.jsonl): the round's own requests, not foreign ones.
        let (mut unbooked, mut settled) = (0usize, 0usize);
        let mut beyond_lines: Vec<(u16, serde_json::Value)> = Vec::new();
        let mut keep_beyond = |r: BatchResult| {
            if let BatchResult::Response { status, body, .. } = r {
                beyond_lines.push((status, body));
            }
        };
        for file in [&job.output_file_id, &job.error_file_id].into_iter().flatten() {
            let mut tries = 0;
            let bytes = loop {
                match self.api().content(file).await {
                    Ok(b) => break b,
                    Err(e) if tries + 1 >= MAX_READ_FAILURES => {
                        return Err(format!("file {file} of batch job {} could not be read: {e}", job.id));
                    }
                    Err(_) => {
                        tries += 1;
                        tokio::time::sleep(self.poll_first.min(Duration::from_secs(5))).await;
                    }
                }
            };
            for line in self.api().parse_results(&bytes) {
                match line {
                    Err(e) => unreadable.push(format!("file {file}: {e}")),
                    // Booked with its verdict before the run stopped: in the books already.
                    Ok(r) if recorded.settled.contains(r.custom_id()) => settled += 1,
                    Ok(r) if !keys.contains(r.custom_id()) => {
                        if recorded.unopened.contains(r.custom_id()) {
                            unbooked += 1;
                        } else {
                            unmatched += 1;
                        }
                        keep_beyond(r);
                    }
                    Ok(r) if results.contains_key(r.custom_id()) => {
                        repeated += 1;
                        keep_beyond(r);
                    }
                    Ok(r) => {
                        results.insert(r.custom_id().to_owned(), r);
                    }
                }
            }
        }
        let count = crate::domain::fmt::count;
        let mut odd = Vec::new();
        if unmatched > 0 {
            odd.push(format!("{} with a custom_id no request of the round has", count(unmatched, "line")));
        }
        if unbooked > 0 {
            odd.push(format!(
                "{} of a request the round recorded in batches.jsonl whose intent intents.jsonl no longer holds open (a damaged line?): booked at what it cost, its verdict matched to no pair",
                count(unbooked, "line")
            ));
        }
        if repeated > 0 {
            odd.push(format!("{} repeating a request's custom_id", count(repeated, "line")));
        }
        if !unreadable.is_empty() {
            odd.push(format!(
                "{} ({})",
                count(unreadable.len(), "unreadable line"),
                unreadable.iter().take(3).cloned().collect::<Vec<_>>().join("; ")
            ));
        }
        let ran = job.counts.map_or(0, |(c, f, _)| c as usize + f as usize);
        let lines = results.len() + unbooked + settled;
        if ran > lines {
            odd.push(format!(
                "request counts of {ran} that ran against {} of the round",
                crate::domain::fmt::count(lines, "line")
            ));
        }
        Ok(JobLines { results, beyond_lines, unreadable: unreadable.len(), odd })
    }

    /// A live round (module docs): record its keys, upload, create, wait, read.
    async fn round(&self, queries: &[RoundQuery]) -> Vec<Result<JudgeReply, JudgeError>> {
        let round = self.log.lock().expect("batch log lock").next_round();
        self.close_earlier(round);
        let mut out: Vec<Option<Result<JudgeReply, JudgeError>>> = vec![None; queries.len()];
        let mut input = String::new();
        let mut sent: Vec<usize> = Vec::new();
        for (i, q) in queries.iter().enumerate() {
            match self.api().batch_line(&q.pool, q.a, q.b, &q.key) {
                Ok(line) => {
                    input.push_str(&line);
                    input.push('\n');
                    sent.push(i);
                }
                Err(e) => out[i] = Some(Err(e)),
            }
        }
        let keys: Vec<String> = sent.iter().map(|&i| queries[i].key.clone()).collect();
        let input_keys = keys.clone();
        let outcome = if sent.is_empty() || self.stopped() {
            Submission::NotSubmitted("not sent: the run stopped sending".into())
        } else if let Err(e) = self.record(BatchLine {
            round,
            keys: Some(keys),
            judge: Some((self.describe(), crate::judge::settings_id(self))),
            ..Default::default()
        }) {
            Submission::NotSubmitted(format!("not sent: {e}"))
        } else {
            self.submit(round, input.into_bytes()).await
        };
        let results: Vec<Result<JudgeReply, JudgeError>> =
            match outcome {
                Submission::NotSubmitted(why) => {
                    let _ = self.record(BatchLine { round, ended: Some("not_submitted".into()), ..Default::default() });
                    // Stopped: nothing to count. Otherwise a failure of each query (counted, so a
                    // provider that keeps refusing the upload ends the run as a failing judge).
                    let stopped = self.stopped();
                    sent.iter()
                        .map(|_| {
                            if stopped { Err(JudgeError::NotSent { cost_usd: 0.0 }) } else { Err(not_run(why.clone())) }
                        })
                        .collect()
                }
                Submission::Unsupported(message) => {
                    let _ = self.record(BatchLine { round, ended: Some("not_submitted".into()), ..Default::default() });
                    sent.iter()
                        .map(|_| {
                            Err(JudgeError::Endpoint {
                                setting: "acquisition.dispatch".into(),
                                message: message.clone(),
                                cost_usd: 0.0,
                            })
                        })
                        .collect()
                }
                Submission::Refused(e) => {
                    let _ = self.record(BatchLine { round, ended: Some("not_submitted".into()), ..Default::default() });
                    sent.iter().map(|_| Err(e.clone())).collect()
                }
                Submission::Pending(why) => {
                    sent.iter().map(|_| Err(pending(&format!("round {round}"), why.clone()))).collect()
                }
                Submission::Job(id) if self.detach => {
                    sent.iter().map(|_| Err(pending(&id, format!("round {round} submitted with --detach")))).collect()
                }
                Submission::Job(id) => match self.await_end(&id).await {
                    Err(Unended::Open(why)) => sent.iter().map(|_| Err(pending(&id, why.clone()))).collect(),
                    // The job this run made is gone: what it ran cannot be known.
                    Err(Unended::Gone(why)) => {
                        // Each query's reservation is its worst case at the batch price.
                        let usd: Vec<f64> = sent
                            .iter()
                            .map(|&i| self.worst_case_usd(&queries[i].pool, queries[i].a, queries[i].b))
                            .collect();
                        tracing::warn!("{}", lost_job_warning(&why, round, &usd));
                        let _ = self.record(BatchLine { round, ended: Some(GONE.into()), ..Default::default() });
                        usd.into_iter()
                            .map(|cost_usd| {
                                Err(JudgeError::PossiblyBilled {
                                    message: format!("{why}; booked as possibly billed at its reservation"),
                                    cost_usd,
                                })
                            })
                            .collect()
                    }
                    Ok(job) => {
                        let qs: Vec<(&Pool, usize, usize, &str)> = sent
                            .iter()
                            .map(|&i| (queries[i].pool.as_ref(), queries[i].a, queries[i].b, queries[i].key.as_str()))
                            .collect();
                        match self.collect(&job, &qs, &Recorded::default(), &input_keys).await {
                            Ok(r) => r,
                            Err(why) => sent.iter().map(|_| Err(pending(&id, why.clone()))).collect(),
                        }
                    }
                },
            };
        for (&i, r) in sent.iter().zip(results) {
            out[i] = Some(r);
        }
        out.into_iter().map(|r| r.expect("every query has an outcome")).collect()
    }

    /// Settle the rounds a run that ended early left open (module docs), booking into `books`
    /// (opened with these rounds' intents kept open) before anything new is picked.
    ///
    /// # Errors
    /// The books or batches.jsonl cannot be written.
    pub async fn resume(&self, books: &mut Books, pool: &Pool) -> Result<Resumed, crate::store::books::BooksError> {
        let mut done = Resumed::default();
        let open: Vec<Round> = self.log.lock().expect("batch log lock").open_rounds();
        let index: HashMap<&str, usize> = pool.items.iter().enumerate().map(|(i, it)| (it.id.as_str(), i)).collect();
        for r in open {
            let intents: Vec<_> = books
                .open_intents()
                .into_iter()
                .filter(|i| r.keys.contains(&i.key))
                .filter(|i| index.contains_key(i.a.as_str()) && index.contains_key(i.b.as_str()))
                .collect();
            if intents.is_empty() {
                let _ = self.record(BatchLine { round: r.round, ended: Some("booked".into()), ..Default::default() });
                continue;
            }
            let ids: Vec<_> = intents.iter().map(|i| i.intent).collect();
            // A job that cannot be read by this config's judge may be another endpoint's.
            let hint = match &r.judge {
                Some((sent_by, _)) if *sent_by != self.describe() => format!(
                    "; round {} was sent by judge `{sent_by}` and this config's judge is `{}`: if base_url changed, run the config that sent it to book the job ({OR_ABANDON})",
                    r.round,
                    self.describe()
                ),
                _ => String::new(),
            };
            let id = match self.adopt(&r).await {
                Submission::NotSubmitted(why) | Submission::Unsupported(why) => {
                    books.close_unsent(&ids, &format!("round {}: {why}", r.round))?;
                    let _ = self.record(BatchLine {
                        round: r.round,
                        ended: Some("not_submitted".into()),
                        ..Default::default()
                    });
                    done.notes.push(format!(
                        "batch round {}: {why}; its {} queries closed unbilled",
                        r.round,
                        ids.len()
                    ));
                    continue;
                }
                Submission::Pending(why) => {
                    done.pending = Some(format!("batch round {}: {why}", r.round));
                    return Ok(done.pending_with(&hint));
                }
                // (Not from adopting: it only reads.) Left open, as an unreadable job is.
                Submission::Refused(e) => {
                    done.pending = Some(format!("batch round {}: {e}", r.round));
                    return Ok(done.pending_with(&hint));
                }
                Submission::Job(id) => id,
            };
            let mut gone = None;
            if self.detach {
                match self.api().retrieve(&id).await {
                    Ok(job) if job.status.is_final() => {}
                    Ok(job) => {
                        let counts =
                            job.counts.map(|(c, f, t)| format!(", {c} of {t} done, {f} failed")).unwrap_or_default();
                        done.pending =
                            Some(format!("batch job {id} (round {}) is {}{counts}", r.round, job.status.as_str()));
                        return Ok(done.pending_with(&hint));
                    }
                    Err(e) if not_found(&e) => {
                        gone = Some(format!("batch job {id} is not found at this endpoint: {e}"));
                    }
                    Err(e) => {
                        done.pending =
                            Some(format!("batch job {id} (round {}) could not be read: {e} ({OR_ABANDON})", r.round));
                        return Ok(done.pending_with(&hint));
                    }
                }
            }
            let job = match gone {
                Some(why) => Err(Unended::Gone(why)),
                None => self.await_end(&id).await,
            };
            let job = match job {
                Ok(job) => job,
                // Sent by another judge (base_url changed): the config that sent it can read it.
                Err(Unended::Gone(why) | Unended::Open(why)) if !hint.is_empty() => {
                    done.pending = Some(why);
                    return Ok(done.pending_with(&hint));
                }
                Err(Unended::Open(why)) => {
                    done.pending = Some(why);
                    return Ok(done.pending_with(&hint));
                }
                // Sent by this judge and gone (deleted, or lost by the provider): it will never
                // end. What it ran cannot be known, so each query is booked as possibly billed
                // at its reservation, and the round is closed: its pairs may be asked again.
                Err(Unended::Gone(why)) => {
                    for i in &intents {
                        books.record_possibly_billed(
                            i.intent,
                            i.reserved_usd,
                            &format!("{why}; booked as possibly billed at its reservation"),
                        )?;
                    }
                    let _ = self.record(BatchLine { round: r.round, ended: Some(GONE.into()), ..Default::default() });
                    let usd: Vec<f64> = intents.iter().map(|i| i.reserved_usd).collect();
                    tracing::warn!("{}", lost_job_warning(&why, r.round, &usd));
                    continue;
                }
            };
            let qs: Vec<(&Pool, usize, usize, &str)> =
                intents.iter().map(|i| (pool, index[i.a.as_str()], index[i.b.as_str()], i.key.as_str())).collect();
            // The round's keys without an open intent: booked before a stop (their lines are
            // in the books already), or lost from intents.jsonl.
            let open: std::collections::HashSet<&str> = intents.iter().map(|i| i.key.as_str()).collect();
            let (settled, unopened): (Vec<&String>, Vec<&String>) =
                r.keys.iter().filter(|k| !open.contains(k.as_str())).partition(|k| books.log().get(k).is_some());
            let recorded = Recorded {
                settled: settled.into_iter().map(String::as_str).collect(),
                unopened: unopened.into_iter().map(String::as_str).collect(),
            };
            let outs = match self.collect(&job, &qs, &recorded, &r.keys).await {
                Ok(o) => o,
                Err(why) => {
                    done.pending = Some(why);
                    return Ok(done.pending_with(&hint));
                }
            };
            let (mut verdicts, mut failed) = (0, 0);
            // The judge that sent the round (a later run may have another).
            let who = r.judge.clone().unwrap_or_else(|| (self.describe(), crate::judge::settings_id(self)));
            for (intent, (&(_, a, b, key), out)) in intents.iter().zip(qs.iter().zip(outs)) {
                match out {
                    Ok(reply) => {
                        let rec = VerdictRecord::from_reply(key.to_owned(), pool, (a, b), who.clone(), reply);
                        books.record_replies(vec![(intent.intent, rec)])?;
                        verdicts += 1;
                    }
                    Err(e @ JudgeError::PossiblyBilled { .. }) => {
                        books.record_possibly_billed(intent.intent, e.cost_usd(), &e.to_string())?;
                        failed += 1;
                    }
                    Err(e) => {
                        books.record_failure(intent.intent, key, &intent.a, &intent.b, e.cost_usd(), &e.to_string())?;
                        failed += 1;
                    }
                }
            }
            let _ = self.record(BatchLine {
                round: r.round,
                ended: Some(job.status.as_str().into()),
                ..Default::default()
            });
            done.booked += verdicts;
            done.notes.push(format!(
                "batch job {id} (round {}) {}: {verdicts} verdicts booked, {failed} queries without one",
                r.round,
                job.status.as_str()
            ));
        }
        Ok(done)
    }
}

/// A judge's worst cases as batch dispatch reserves them (`run --dry-run` of a `dispatch:
/// batch` config): the judge `.0` with every worst case times `.1` ([`reserve_factor`]).
pub struct BatchPriced<J>(pub J, pub f64);

impl<J: std::ops::Deref<Target = dyn JudgeInfo> + Send + Sync> JudgeInfo for BatchPriced<J> {
    fn describe(&self) -> String {
        self.0.describe()
    }
    fn cache_key(&self, pool: &Pool, a: usize, b: usize) -> String {
        self.0.cache_key(pool, a, b)
    }
    fn settings_source(&self) -> String {
        self.0.settings_source()
    }
    fn worst_case_usd(&self, pool: &Pool, a: usize, b: usize) -> f64 {
        self.0.worst_case_usd(pool, a, b) * self.1
    }
    /// The live parts: a constant factor keeps the order of the worst cases.
    fn worst_case_parts(&self, pool: &Pool) -> Option<crate::judge::WorstCaseParts> {
        self.0.worst_case_parts(pool)
    }
    fn has_price(&self) -> bool {
        self.0.has_price()
    }
    fn invalid_rate_limit(&self) -> Option<(f64, u64)> {
        self.0.invalid_rate_limit()
    }
    fn preview(&self, pool: &Pool, a: usize, b: usize) -> Option<String> {
        self.0.preview(pool, a, b)
    }
}

impl JudgeInfo for BatchJudge {
    fn describe(&self) -> String {
        self.inner.describe()
    }
    fn cache_key(&self, pool: &Pool, a: usize, b: usize) -> String {
        self.inner.cache_key(pool, a, b)
    }
    fn settings_source(&self) -> String {
        self.inner.settings_source()
    }
    /// One attempt of the live worst case, at the batch price.
    fn worst_case_usd(&self, pool: &Pool, a: usize, b: usize) -> f64 {
        self.inner.worst_case_usd(pool, a, b) * self.reserve
    }
    /// The live judge's expected cost at the batch price.
    fn expected_usd(&self, pool: &Pool, a: usize, b: usize) -> f64 {
        self.inner.expected_usd(pool, a, b) * self.factor
    }
    fn worst_case_parts(&self, pool: &Pool) -> Option<crate::judge::WorstCaseParts> {
        self.inner.worst_case_parts(pool)
    }
    fn has_price(&self) -> bool {
        self.inner.has_price()
    }
    fn invalid_rate_limit(&self) -> Option<(f64, u64)> {
        self.inner.invalid_rate_limit()
    }
    fn preview(&self, pool: &Pool, a: usize, b: usize) -> Option<String> {
        self.inner.preview(pool, a, b)
    }
}

impl Judge for BatchJudge {
    fn preflight(&self) -> BoxFuture<'_, Result<Vec<String>, JudgeError>> {
        self.inner.preflight()
    }
    fn stats(&self) -> Option<JudgeStats> {
        self.inner.stats()
    }
    /// A stop cancels the open job (its end is still waited for and booked).
    fn stop_sending(&self) {
        self.stop.store(true, Ordering::SeqCst);
        self.wake.notify_waiters();
    }
    fn batched(&self) -> bool {
        true
    }
    fn judge_round<'a>(&'a self, queries: &'a [RoundQuery]) -> BoxFuture<'a, Vec<Result<JudgeReply, JudgeError>>> {
        Box::pin(self.round(queries))
    }
    fn judge<'a>(&'a self, pool: &'a Pool, a: usize, b: usize) -> BoxFuture<'a, Result<JudgeReply, JudgeError>> {
        Box::pin(async move {
            let q = RoundQuery { pool: std::sync::Arc::new(pool.clone()), a, b, key: self.cache_key(pool, a, b) };
            self.round(std::slice::from_ref(&q)).await.pop().expect("one outcome")
        })
    }
}

//! Algorithm 1 of the paper (App. A; docs/model.md §3): fit → top-k membership → acquisition →
//! query → store → refit. One state machine decides: [`schedule`] says what to send, when to
//! refit and when to stop (every stop rule is there). Three drivers execute it: [`live`] against
//! a judge that takes time (async; every query through [`dispatch`], the one judge dispatcher
//! that `gate` and `audit` use too: intent before each request, replies and paid failures
//! booked), [`sim`] with an instant judge (shared by `simulate` and the tests), and
//! [`sim_time`] in virtual time with a latency model. Around the live driver: [`folder`] opens
//! the run folder, [`faults`] keeps what failed queries did, [`observe`] writes fits.jsonl and
//! the progress line, [`fingerprint`] checks a resumed judge still answers as before,
//! [`interrupt`] handles Ctrl-C, [`throughput`] measures the request rate.
//! [`queries`] is the one definition of a run's ordered pairs and of the next picks, shared by
//! the run, its dry run and the commands that re-read a run folder; [`pending`] weighs the
//! queries in flight when a pipelined run picks. [`panel`] runs a judge panel (`judges:`) on
//! the same scheduler and dispatcher; both live drivers wait for their queries out in one way
//! (the endpoint check, Ctrl-C's grace period, the give-up booking: `in_flight`).

pub mod batch;
pub mod dispatch;
pub mod faults;
pub mod fingerprint;
pub mod folder;
mod in_flight;
pub mod interrupt;
pub mod live;
pub mod observe;
pub mod panel;
pub mod pending;
pub mod queries;
pub mod schedule;
pub mod sim;
pub mod sim_time;
pub mod throughput;

use crate::config::run::Config;
use crate::model::FitError;
use crate::report::schema::StopReason;
use crate::store::books::BooksError;
use crate::store::ledger::LedgerError;
use crate::store::lock::LockError;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Errors of a run.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// Output files.
    #[error("{path}: {source}")]
    Io {
        /// The run-folder file (result.json, report, config copy, …) that could not be written.
        path: PathBuf,
        /// The I/O error from the operating system.
        source: std::io::Error,
    },
    /// Reading the verdict log (verdicts.jsonl) failed: I/O error or a line that is not a record.
    #[error(transparent)]
    Cache(#[from] LedgerError),
    /// The run folder's books (verdicts, paid failures, intents).
    #[error(transparent)]
    Books(#[from] BooksError),
    /// Another process runs in this folder, or its lock cannot be taken.
    #[error(transparent)]
    Lock(#[from] LockError),
    /// The batch rounds' log (batches.jsonl) cannot be read or written, or a line of it is not a
    /// batch line: `path:line: …` with what to do.
    #[error(transparent)]
    BatchLog(#[from] crate::store::batches::BatchLogError),
    /// The Ctrl-C / SIGTERM handlers could not be installed.
    #[error("installing the Ctrl-C and SIGTERM handlers: {0}")]
    Signals(std::io::Error),
    /// The Bradley–Terry MAP fit failed (Newton did not converge, or the Hessian is not positive definite).
    #[error(transparent)]
    Fit(#[from] FitError),
    /// A judge panel's fit at the end of its run failed: no result.json; the verdicts are kept.
    #[error(
        "the judge panel's fit of its {verdicts} stored verdicts failed, so no result.json was written; the verdicts are kept in {}, and `topk-judge fit {} --panel` refits them (e.g. after widening or dropping a judge's carried prior, judges[i].prior): {source}",
        dir.join("verdicts.jsonl").display(),
        dir.display()
    )]
    PanelFit {
        /// Stored verdicts of the panel's judges.
        verdicts: usize,
        /// The run folder.
        dir: PathBuf,
        /// Why the fit failed.
        source: FitError,
    },
    /// Ctrl-C (or SIGTERM) before the run began: the replies in flight were booked.
    #[error(
        "interrupted during {during}: nothing more was sent and the replies in flight are booked; run the same command again to go on (it repeats what was cut short, reusing the booked replies)"
    )]
    Interrupted {
        /// What was cut short (`the judge fingerprint check of …`).
        during: String,
    },
    /// The run folder holds a provider batch job still open (an earlier run with `dispatch:
    /// batch` was detached or killed) and this run's judge cannot read batch jobs, so its paid
    /// results could not be booked.
    #[error(
        "{path}: a provider batch job of an earlier run is still open ({queries} queries), and this judge cannot read batch jobs; run the config that submitted it (an openai judge; any dispatch) once to book its results, then this one (or, if that job's endpoint is gone for good, run this one with --abandon-batch: its queries are then booked as possibly billed at their reservations)"
    )]
    BatchOpen {
        /// The folder's batches.jsonl.
        path: std::path::PathBuf,
        /// The queries of the open rounds.
        queries: usize,
    },
    /// batches.jsonl is gone, or records fewer submitted queries than the open batch job the
    /// folder's last result counts: its queries would be booked as possibly billed (or asked
    /// again) and their paid results never read.
    #[error(
        "the last run of this folder left a provider batch job open ({queries} queries, reserved at ${reserved_usd:.6}; result.json, in_open_batch_job), and {path} {what}: put the whole file back, and this run books the job's results; if it is lost for good, run with --abandon-batch (the open queries are then booked as possibly billed at their worst case, and the job's results are never read)"
    )]
    BatchLogMissing {
        /// The folder's batches.jsonl.
        path: std::path::PathBuf,
        /// What is wrong with it: missing, or not recording the job.
        what: &'static str,
        /// The queries of the open job, as result.json counts them.
        queries: u64,
        /// Their reservations, USD.
        reserved_usd: f64,
    },
    /// The judge failed (endpoint not reachable, the same endpoint-wide error again, or rounds
    /// without any verdict); result.json was still written, with `stop_reason: judge_failing`.
    #[error("the judge is failing, so the run stopped (result.json holds the verdicts so far): {message}")]
    JudgeFailing {
        /// Why, naming the setting to change when there is one.
        message: String,
    },
    /// Replies of this invocation were billed above their reservations (a provider that
    /// ignores `max_tokens`, or adds prompt tokens of its own) and the folder's books end above
    /// `budget.max_usd`; result.json was still written (docs/live.md, "Budget").
    #[error(
        "the run folder's books hold {}, above budget.max_usd {}: replies were billed above what was reserved for them (see `overrun:` in the summary; {cause}), so the budget was passed; {written} holds the {what}",
        crate::report::table::usd(*books_usd),
        crate::report::table::usd(*max_usd)
    )]
    AboveMaxUsd {
        /// What the folder's books hold, USD.
        books_usd: f64,
        /// `budget.max_usd`, USD.
        max_usd: f64,
        /// Why, as the replies' token counts show it ([`crate::report::schema::OverrunReport::cause`]).
        cause: String,
        /// The file written all the same (`result.json`, an audit's `audit.json`).
        written: &'static str,
        /// What it holds (`run`, `audit`).
        what: &'static str,
    },
}

impl RunError {
    /// [`RunError::AboveMaxUsd`] when an invocation that had replies billed above their
    /// reservations (`overrun`: why, as its replies show it) ends with the folder's books
    /// (`books_usd`) above `max_usd`.
    pub fn above_max_usd(overrun: Option<String>, books_usd: f64, max_usd: Option<f64>) -> Option<Self> {
        Self::above_max_usd_of(overrun, books_usd, max_usd, ("result.json", "run"))
    }

    /// [`RunError::above_max_usd`] of a command that writes another file (`written`, holding the
    /// `what`: `("audit.json", "audit")`).
    pub fn above_max_usd_of(
        overrun: Option<String>,
        books_usd: f64,
        max_usd: Option<f64>,
        (written, what): (&'static str, &'static str),
    ) -> Option<Self> {
        let (max_usd, cause) = (max_usd?, overrun?);
        (books_usd > max_usd + 1e-12).then_some(Self::AboveMaxUsd { books_usd, max_usd, cause, written, what })
    }
}

/// Options that are not part of the config.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Show the progress bar (still hidden when stdout is not a terminal).
    pub progress: bool,
    /// Print the summary table to stdout.
    pub print: bool,
    /// Handle Ctrl-C and SIGTERM (the binary does): the first stops sending and waits up to
    /// `interrupt_grace_s` for the requests in flight, the second exits the process at once
    /// ([`interrupt`]). Off, the caller's own signal handling is left alone.
    pub handle_signals: bool,
    /// `dispatch: batch`: submit one round as a provider batch job and end the run without
    /// waiting for it (`run --detach`); a later run books it.
    pub detach: bool,
    /// Close the provider batch jobs the folder holds open without reading them (`run
    /// --abandon-batch`, for a job whose endpoint is gone for good): each of their queries is
    /// booked as possibly billed at its reservation (USD) before the run starts.
    pub abandon_batch: bool,
    /// USD of `budget.max_usd` the run's judge leaves for the config's gate, asked after the
    /// run (its trusted judge's queries at their worst case; 0: none held).
    pub hold_usd: f64,
    /// The judge fingerprint checks made before the run (docs/live.md, "Judge fingerprint"),
    /// one line each as printed: kept in result.json's `fingerprint`.
    pub fingerprint: Vec<String>,
}

/// Write a run's result.json (pretty JSON and a newline) into `dir`.
///
/// # Errors
/// [`RunError::Io`] naming the file.
fn write_result_json(dir: &Path, result: &impl serde::Serialize) -> Result<(), RunError> {
    let text = serde_json::to_string_pretty(result).expect("serialisable");
    let path = dir.join("result.json");
    std::fs::write(&path, text + "\n").map_err(|source| RunError::Io { path, source })
}

/// The end of a run once its result.json is written: the `summary` printed when asked (with the
/// command that resumes after an interrupt), then the run's error when it ended with one: a
/// failed fit, or `after` (a failing judge, the budget passed by an overrun).
///
/// # Errors
/// [`RunError::Fit`], or `after`.
fn conclude<R>(
    result: R,
    summary: impl FnOnce(&R) -> String,
    cfg: &Config,
    opts: &RunOptions,
    stop: StopReason,
    fit_failed: Option<FitError>,
    after: Option<RunError>,
) -> Result<R, RunError> {
    if opts.print {
        let mut text = summary(&result);
        if stop == StopReason::Interrupted {
            text.push_str(&crate::report::result::resume_hint(&cfg.path, &cfg.overrides));
        }
        // A closed stdout (e.g. `| head`) must not turn a finished run into a panic.
        let _ = write!(std::io::stdout(), "{text}");
    }
    if let Some(e) = fit_failed {
        return Err(e.into());
    }
    match after {
        Some(e) => Err(e),
        None => Ok(result),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Only an invocation with an overrun that ends above max_usd fails for it: books above a
    /// max_usd lowered since (no overrun now), or an overrun within max_usd, do not.
    #[test]
    fn the_budget_passed_by_an_overrun_is_an_error() {
        let o = |prompt: u64, completion: u64| {
            Some(
                crate::report::schema::OverrunReport {
                    above_prompt_bound: prompt,
                    above_max_tokens: completion,
                    ..Default::default()
                }
                .cause(),
            )
        };
        let e = RunError::above_max_usd(o(0, 2), 4040.0, Some(0.05)).expect("passed");
        assert_eq!(
            e.to_string(),
            "the run folder's books hold $4040.0000, above budget.max_usd $0.0500: replies were billed above what was reserved for them (see `overrun:` in the summary; the provider does not keep to max_tokens), so the budget was passed; result.json holds the run"
        );
        // Prompt tokens above the prompt's bytes are named as the cause, not max_tokens.
        let e = RunError::above_max_usd(o(2, 0), 0.04, Some(0.01)).expect("passed").to_string();
        assert!(
            e.contains("(see `overrun:` in the summary; the provider reported more prompt tokens than the prompt has bytes (tokens of its own added to the prompt)), so")
                && !e.contains("max_tokens"),
            "{e}"
        );
        assert!(RunError::above_max_usd(None, 4040.0, Some(0.05)).is_none());
        assert!(RunError::above_max_usd(o(0, 0), 0.05, Some(0.05)).is_none());
        assert!(RunError::above_max_usd(o(0, 0), 4040.0, None).is_none());
    }

    /// A panel whose last fit fails says what is kept and how to refit it, with the cause.
    #[test]
    fn a_failed_panel_fit_says_where_the_verdicts_are_and_how_to_refit_them() {
        let e = RunError::PanelFit {
            verdicts: 76,
            dir: PathBuf::from("runs/summeval-panel"),
            source: FitError::NotConverged { iterations: 200, grad_inf: 1.4e-9, tol: 1e-9 },
        };
        assert_eq!(
            e.to_string(),
            "the judge panel's fit of its 76 stored verdicts failed, so no result.json was written; the verdicts are kept in runs/summeval-panel/verdicts.jsonl, and `topk-judge fit runs/summeval-panel --panel` refits them (e.g. after widening or dropping a judge's carried prior, judges[i].prior): the MAP fit did not converge: 200 Newton iterations, ‖∇L‖∞ = 1.400e-9 (tolerance 1e-9); try larger priors (lambda_theta, lambda_b, lambda_kappa)"
        );
    }
}

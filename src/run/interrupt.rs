//! Ctrl-C (SIGINT), SIGTERM and SIGHUP (a dropped ssh session) during a run.
//!
//! The **first** signal asks the run loop to stop sending: no new request leaves, the requests in
//! flight are awaited for up to the grace period (`interrupt_grace_s`, default 30 s) so their
//! verdicts are stored, then the run ends as usual (a last fit, `result.json` with
//! `stop_reason: interrupted`, the summary, the command that resumes) and the binary exits with
//! code 130. Requests still in flight when the grace period ends are booked as possibly billed.
//! A **second** signal exits at once (code 130); the intents of the requests then in flight stay
//! open and are booked as possibly billed on the next start (see [`crate::store::intents`]). A
//! signal within [`SAME_SIGNAL_WINDOW`] of the first is the first delivered twice (`timeout -s
//! INT` signals the process and its group), not a second.
//!
//! [`Interrupt::install`] is called by the binary only: the library's callers (tests, other
//! commands) get [`Interrupt::never`] unless they ask, so a test harness keeps its own signal
//! handling.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;
use tokio::sync::watch;

/// A signal that follows the first within this time is the same one delivered twice (to the
/// process and to its group), not a second Ctrl-C.
pub const SAME_SIGNAL_WINDOW: Duration = Duration::from_millis(200);

/// Exit code of an interrupted run (128 + SIGINT, the shell convention).
pub const EXIT_INTERRUPTED: i32 = 130;

/// The run loop's view of Ctrl-C / SIGTERM.
#[derive(Debug, Clone)]
pub struct Interrupt {
    rx: watch::Receiver<bool>,
    grace: Duration,
    in_flight: Arc<AtomicUsize>,
    /// The queries go out in provider batch jobs: a signal cancels the open job and waits for
    /// it to stop, with no grace period (docs/live.md, "Batch dispatch").
    batch: Arc<AtomicBool>,
    /// The line that tells how to resume the run (printed when a second signal quits at once).
    resume: Arc<std::sync::Mutex<String>>,
}

/// Fires an [`Interrupt`] made by [`Interrupt::manual`].
#[derive(Debug)]
pub struct Trigger(watch::Sender<bool>);

impl Trigger {
    /// Ask the run to stop sending (as a first Ctrl-C does).
    pub fn fire(&self) {
        let _ = self.0.send(true);
    }
}

impl Interrupt {
    /// An interrupt that never fires.
    pub fn never() -> Self {
        let (_, rx) = watch::channel(false); // no sender: `wait` pends forever
        Self { rx, grace: Duration::ZERO, in_flight: Arc::default(), batch: Arc::default(), resume: Arc::default() }
    }

    /// An interrupt fired by hand (tests, embedding), with `grace` for requests in flight.
    pub fn manual(grace: Duration) -> (Self, Trigger) {
        let (tx, rx) = watch::channel(false);
        (Self { rx, grace, in_flight: Arc::default(), batch: Arc::default(), resume: Arc::default() }, Trigger(tx))
    }

    /// Listen for SIGINT, SIGTERM and SIGHUP (Ctrl-C and Ctrl-Break on Windows) from now on. The first
    /// signal prints what happens next (on stderr) and fires; the second prints a line and exits
    /// the process with [`EXIT_INTERRUPTED`] at once.
    ///
    /// # Errors
    /// When the signal handlers cannot be registered.
    ///
    /// # Panics
    /// Outside a tokio runtime.
    pub fn install(grace: Duration) -> std::io::Result<Self> {
        Self::install_scoped(grace).map(|(i, _)| i)
    }

    /// [`Interrupt::install`], with the handle that ends the listening (abort it when the part
    /// of the work it guards is over, so a later [`Interrupt::install`] is the only listener).
    ///
    /// # Errors
    /// When the signal handlers cannot be registered.
    ///
    /// # Panics
    /// Outside a tokio runtime.
    pub fn install_scoped(grace: Duration) -> std::io::Result<(Self, tokio::task::AbortHandle)> {
        let (tx, rx) = watch::channel(false);
        let in_flight: Arc<AtomicUsize> = Arc::default();
        let batch: Arc<AtomicBool> = Arc::default();
        let resume: Arc<std::sync::Mutex<String>> = Arc::default();
        let mut signals = Signals::new()?;
        let (n, in_batch, hint) = (in_flight.clone(), batch.clone(), resume.clone());
        let task = tokio::spawn(async move {
            signals.recv().await;
            say(&first_signal_line(grace, n.load(Ordering::SeqCst), in_batch.load(Ordering::SeqCst)));
            let _ = tx.send(true);
            // One Ctrl-C can arrive twice: GNU `timeout -s INT` signals the process and then its
            // group, microseconds apart (hunt 58: it quit at once, and the paid replies in
            // flight were asked again). A person pressing twice is never that fast.
            let first = std::time::Instant::now();
            loop {
                signals.recv().await;
                if first.elapsed() >= SAME_SIGNAL_WINDOW {
                    break;
                }
            }
            say(&second_signal_line(n.load(Ordering::SeqCst), in_batch.load(Ordering::SeqCst)));
            let hint = hint.lock().map(|h| h.clone()).unwrap_or_default();
            if !hint.is_empty() {
                say(hint.trim_end());
            }
            std::process::exit(EXIT_INTERRUPTED);
        });
        Ok((Self { rx, grace, in_flight, batch, resume }, task.abort_handle()))
    }

    /// Whether the run was asked to stop sending.
    pub fn requested(&self) -> bool {
        *self.rx.borrow()
    }

    /// Wait until the run is asked to stop sending (cancel-safe: use it in `select!`).
    pub async fn wait(&mut self) {
        if self.rx.wait_for(|fired| *fired).await.is_err() {
            std::future::pending::<()>().await;
        }
    }

    /// How long requests in flight are awaited after the first signal.
    pub fn grace(&self) -> Duration {
        self.grace
    }

    /// Tell the interrupt how many requests are in flight (shown when a signal arrives).
    pub fn set_in_flight(&self, n: usize) {
        self.in_flight.store(n, Ordering::SeqCst);
    }

    /// The line that tells how to resume the run (`resume: topk-judge run …`), printed after
    /// a second signal's line when it quits at once.
    pub fn set_resume_hint(&self, line: String) {
        if let Ok(mut h) = self.resume.lock() {
            *h = line;
        }
    }

    /// Tell the interrupt whether the queries go out in provider batch jobs (what a signal
    /// then does is said differently: the open job is cancelled, not given a grace period).
    pub fn set_batch_dispatch(&self, batch: bool) {
        self.batch.store(batch, Ordering::SeqCst);
    }
}

/// What the first signal says: what happens to the `n` queries in flight.
fn first_signal_line(grace: Duration, n: usize, batch: bool) -> String {
    if batch && n > 0 {
        format!(
            "interrupted: no new requests; cancelling the open batch job ({n} queries) and waiting for it to stop, so what it ran is booked (press Ctrl-C again to quit at once: the next run then books what the job ran)"
        )
    } else if batch {
        // The job's queries are not counted in flight while the run waits for it to end.
        "interrupted: no new requests; a batch job still open is cancelled and waited for, so what it ran is booked (press Ctrl-C again to quit at once: the next run then books what the job ran)".to_string()
    } else {
        format!(
            "interrupted: no new requests; waiting up to {} s for the {n} in flight so their verdicts are stored (press Ctrl-C again to quit at once: they are then booked as possibly billed when the run resumes)",
            grace.as_secs_f64()
        )
    }
}

/// What the second signal says, with `n` queries in flight.
fn second_signal_line(n: usize, batch: bool) -> String {
    if batch && n > 0 {
        format!(
            "interrupted again: quitting now; the batch job's round ({n} queries) stays open and the next run of this config books what the job ran"
        )
    } else if batch {
        "interrupted again: quitting now; a batch job still open stays open and the next run of this config books what it ran".to_string()
    } else {
        format!(
            "interrupted again: quitting now; the {n} request(s) in flight are booked as possibly billed when the run resumes"
        )
    }
}

/// A line on stderr; nothing when stderr is gone (after SIGHUP the terminal may be), where
/// `eprintln!` would panic.
fn say(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{}", crate::domain::fmt::printable(line));
}

/// SIGINT, SIGTERM and SIGHUP, registered when created (a signal that arrives before the first `recv`
/// is not lost).
struct Signals {
    #[cfg(unix)]
    int: tokio::signal::unix::Signal,
    #[cfg(unix)]
    term: tokio::signal::unix::Signal,
    #[cfg(unix)]
    hup: tokio::signal::unix::Signal,
}

impl Signals {
    #[cfg(unix)]
    fn new() -> std::io::Result<Self> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(Self {
            int: signal(SignalKind::interrupt())?,
            term: signal(SignalKind::terminate())?,
            hup: signal(SignalKind::hangup())?,
        })
    }

    #[cfg(not(unix))]
    fn new() -> std::io::Result<Self> {
        Ok(Self {})
    }

    #[cfg(unix)]
    async fn recv(&mut self) {
        tokio::select! {
            _ = self.int.recv() => {}
            _ = self.term.recv() => {}
            _ = self.hup.recv() => {}
        }
    }

    #[cfg(not(unix))]
    async fn recv(&mut self) {
        let _ = tokio::signal::ctrl_c().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Under batch dispatch a signal while the run waits for a job (its queries not counted in
    /// flight then) speaks of the job, not of "the 0 in flight" (hunt 47).
    #[test]
    fn a_signal_under_batch_dispatch_speaks_of_the_job() {
        let g = Duration::from_secs(30);
        assert!(first_signal_line(g, 0, false).contains("waiting up to 30 s for the 0 in flight"));
        let job = first_signal_line(g, 0, true);
        assert!(job.starts_with("interrupted: no new requests; a batch job still open is cancelled"), "{job}");
        assert!(!job.contains("in flight"), "{job}");
        assert!(first_signal_line(g, 8, true).contains("cancelling the open batch job (8 queries)"));
        assert!(second_signal_line(0, true).contains("a batch job still open stays open"));
        assert!(second_signal_line(3, false).contains("the 3 request(s) in flight are booked as possibly billed"));
    }

    #[tokio::test]
    async fn manual_interrupt_wakes_a_waiting_loop() {
        let (mut i, trigger) = Interrupt::manual(Duration::from_millis(250));
        assert!(!i.requested());
        assert_eq!(i.grace(), Duration::from_millis(250));
        let never = tokio::time::timeout(Duration::from_millis(20), i.wait()).await;
        assert!(never.is_err(), "not fired yet");
        trigger.fire();
        tokio::time::timeout(Duration::from_secs(1), i.wait()).await.expect("fired");
        assert!(i.requested());
        let mut n = Interrupt::never();
        assert!(tokio::time::timeout(Duration::from_millis(20), n.wait()).await.is_err());
        assert!(!n.requested());
    }
}

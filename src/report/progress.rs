//! The only indicatif import: a progress bar for comparisons, spend and top-k confidence,
//! hidden when stderr is not a terminal. A run's bar (docs/live.md, "The progress bar"):
//! elapsed time, the bar, comparisons stored of the budget's, the ETA from the observed rate,
//! then the message (requests in flight, requests per minute, spend against `max_usd`, and the
//! undecided count of the current fit). It ticks steadily, so the clock moves while requests are
//! in flight.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;

/// A progress display (no-op when hidden).
pub struct Progress {
    bar: ProgressBar,
}

impl Progress {
    /// A bar of `total` comparisons; hidden unless `visible` and stderr is a terminal.
    pub fn new(total: u64, visible: bool) -> Self {
        let bar = if visible && std::io::stderr().is_terminal() {
            let b = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
            b.set_style(
                ProgressStyle::with_template(
                    "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} comparisons  ETA {eta}  {msg}",
                )
                .expect("valid template"),
            );
            b.enable_steady_tick(std::time::Duration::from_millis(250));
            b
        } else {
            ProgressBar::hidden()
        };
        Self { bar }
    }

    /// A bar of `total` units named `unit` (e.g. "pools"); hidden unless `visible` and stderr is
    /// a terminal.
    pub fn counter(total: u64, visible: bool, unit: &str) -> Self {
        let bar = if visible && std::io::stderr().is_terminal() {
            let b = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
            let template =
                format!("{{spinner}} [{{elapsed_precise}}] {{bar:30}} {{pos}}/{{len}} {unit}  ETA {{eta}}  {{msg}}");
            b.set_style(ProgressStyle::with_template(&template).expect("valid template"));
            b.enable_steady_tick(std::time::Duration::from_millis(250));
            b
        } else {
            ProgressBar::hidden()
        };
        Self { bar }
    }

    /// Set the comparisons done.
    pub fn set(&self, done: u64) {
        self.bar.set_position(done);
    }

    /// Update the message (spend, confidence).
    pub fn message(&self, msg: String) {
        self.bar.set_message(msg);
    }

    /// Print a line without breaking the bar.
    pub fn println(&self, line: &str) {
        let line = &*crate::domain::fmt::printable(line);
        if self.bar.is_hidden() {
            // Not `eprintln!`, which panics when stderr is gone (a dropped ssh session).
            let _ = std::io::Write::write_all(&mut std::io::stderr(), format!("{line}\n").as_bytes());
        } else {
            self.bar.println(line);
        }
    }

    /// Remove the bar.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

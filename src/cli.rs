//! Command line (clap derive): [`Cli`] and one [`Command`] per subcommand, whose arguments are
//! declared next to the command in `commands/` (`RunArgs` in `commands/run.rs`, …).

use crate::commands::{audit, compare, fit, gate, import, profile, report, run, simulate};
use clap::{Parser, Subcommand};

/// topk-judge: find the k best of N candidate answers with an LLM judge, fast, cheap and honest
/// about position and verbosity bias.
#[derive(Debug, Parser)]
#[command(name = "topk-judge", version, about)]
pub struct Cli {
    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands of `topk-judge`: run, inspect and compare top-k rankings.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run Algorithm 1 (active top-k acquisition) as configured; re-running resumes.
    Run(run::RunArgs),
    /// Profile log-likelihood of each bias coefficient (docs/model.md §5): is c identified or prior-selected?
    Profile(profile::ProfileArgs),
    /// Trusted-anchor gate (docs/model.md §5): should the bias-corrected ranking be reported?
    Gate(gate::GateArgs),
    /// Audit a judge for position and verbosity bias (swap test, probes, order averaging) on a
    /// pairs file or on probes built from a pool; verdicts are cached, so re-running is free.
    Audit(audit::AuditArgs),
    /// Fit the model to verdicts collected elsewhere (or a run folder's) and print the ranking.
    Fit(fit::FitArgs),
    /// Run a simulation sweep (docs/model.md §7): synthetic pools × strategies × models × budgets, on all
    /// cores; writes rows.csv, summary.md/json and SVG plots.
    Simulate(simulate::SimulateArgs),
    /// Build a pool file for ranking systems across many prompts (docs/systems.md) from model
    /// outputs: AlpacaEval JSON, Arena-Hard answer JSON Lines, or CSV (prompt_id,prompt,system,text).
    Import(import::ImportArgs),
    /// Compare runs of the same pool (e.g. a cheap and a frontier judge): spend, comparisons,
    /// recall@k, top-k agreement, position-flip rates, and recall against spend; or runs of
    /// several judges on several pools (e.g. replayed recordings): cost against recall per judge.
    Compare(compare::CompareArgs),
    /// Write report.md and a self-contained report.html for a run.
    Report(report::ReportArgs),
}

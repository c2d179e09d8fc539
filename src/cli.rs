//! Command line (clap derive).

use crate::model::summary::ModelKind;
use clap::{Parser, Subcommand};
use std::path::PathBuf;

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
    Run {
        /// Config file (YAML).
        config: PathBuf,
        /// Do not show the progress bar.
        #[arg(long)]
        quiet: bool,
        /// A gate.json from `topk-judge gate` (e.g. computed on another pool of the same task):
        /// report the ranking the gate chose. Without it, a `gate:` section in the config runs
        /// the gate at the end of the run.
        #[arg(long)]
        gate: Option<PathBuf>,
        /// Render the first prompt, count the queries the budget allows and print the worst-case
        /// cost; send nothing, write nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// Profile log-likelihood of each bias coefficient (docs/model.md §5): is c identified or prior-selected?
    Profile {
        /// A run folder (with config.yaml and verdicts.jsonl) or a config whose run exists.
        run_or_config: PathBuf,
    },
    /// Trusted-anchor gate (docs/model.md §5): should the bias-corrected ranking be reported?
    Gate {
        /// A run folder, or its config file, with a `gate:` section (the run must exist).
        config: PathBuf,
    },
    /// Audit a judge for position and verbosity bias (swap test, probes, order averaging) on a
    /// pairs file or on probes built from a pool; verdicts are cached, so re-running is free.
    Audit {
        /// Audit config file (YAML).
        config: PathBuf,
        /// Do not show the progress bar.
        #[arg(long)]
        quiet: bool,
    },
    /// Fit the model to verdicts collected elsewhere (or a run folder's) and print the ranking.
    Fit {
        /// Pool file (JSON Lines), or a run folder (its pool, verdicts and settings).
        pool_file: PathBuf,
        /// Verdicts file (JSON Lines with "a", "b", "y"); not needed with a run folder.
        verdicts_file: Option<PathBuf>,
        /// Pool id (default: the first pool in the file).
        #[arg(long)]
        pool_id: Option<String>,
        /// Use only the verdicts of this judge (the records' "judge" field, or a unique prefix of
        /// it), when the file holds several.
        #[arg(long)]
        judge: Option<String>,
        /// Model [default: bias_aware, or the run's].
        #[arg(long, value_enum)]
        model: Option<ModelKind>,
        /// k of top-k [default: 3, or the run's].
        #[arg(long)]
        k: Option<usize>,
        /// Which ranking to report: auto (the bias-corrected one only when the design
        /// identifies the correction), corrected or apparent [default: auto, or the run's].
        #[arg(long, value_enum)]
        report_ranking: Option<crate::analysis::ranking::ReportRanking>,
        /// Covariates as NAME or NAME:TRANSFORM, comma-separated (default: words:zscore when items have text, plus every
        /// key of the items' covariates map, raw).
        #[arg(long, value_delimiter = ',')]
        covariates: Option<Vec<String>>,
        /// λ_θ, prior precision of each item quality θ (> 0) [default: 1, or the run's].
        #[arg(long, allow_negative_numbers = true)]
        lambda_theta: Option<f64>,
        /// λ_b, prior precision of each bias coefficient c (> 0) [default: 0.1, or the run's].
        #[arg(long, allow_negative_numbers = true)]
        lambda_b: Option<f64>,
        /// λ_κ, prior precision of the position effect κ (> 0) [default: 0.01, or the run's].
        #[arg(long, allow_negative_numbers = true)]
        lambda_kappa: Option<f64>,
        /// Weight of the likelihood term of a verdict stored with `strong_preference` (`[[A>>B]]`),
        /// > 0 [default: 1, or the run's].
        #[arg(long, allow_negative_numbers = true)]
        strong_preference_weight: Option<f64>,
        /// Monte-Carlo draws for top-k membership [default: 1000, or the run's mc_draws].
        #[arg(long)]
        draws: Option<usize>,
        /// Seed [default: 0, or the run's acquisition seed].
        #[arg(long)]
        seed: Option<u64>,
        /// Write the fit as JSON here.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Run a simulation sweep (docs/model.md §7): synthetic pools × strategies × models × budgets, on all
    /// cores; writes rows.csv, summary.md/json and SVG plots.
    Simulate {
        /// Sweep file (YAML).
        sweep: PathBuf,
        /// Worker threads (default: the sweep's `threads`, 0 = all cores).
        #[arg(long)]
        threads: Option<usize>,
        /// Output folder (default: the sweep's `out_dir`/`name`).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Do not show the progress bar.
        #[arg(long)]
        quiet: bool,
    },
    /// Build a pool file for ranking systems across many prompts (docs/systems.md) from model
    /// outputs: AlpacaEval JSON, Arena-Hard answer JSON Lines, or CSV (prompt_id,prompt,system,text).
    Import {
        /// Input format.
        #[arg(long, value_enum)]
        format: crate::commands::import::ImportFormat,
        /// Input files (one per model for AlpacaEval and Arena-Hard; any number of CSV files).
        #[arg(required = true)]
        inputs: Vec<PathBuf>,
        /// Arena-Hard questions (JSON Lines with question_id and turns or prompt).
        #[arg(long)]
        questions: Option<PathBuf>,
        /// The pool file to write (JSON Lines, one prompt per line).
        #[arg(long)]
        out: PathBuf,
    },
    /// Compare runs of the same pool (e.g. a cheap and a frontier judge): spend, comparisons,
    /// recall@k, top-k agreement, position-flip rates, and recall against spend; or runs of
    /// several judges on several pools (e.g. replayed recordings): cost against recall per judge.
    Compare {
        /// Run folders (each with result.json and verdicts.jsonl).
        #[arg(required = true, num_args = 1..)]
        runs: Vec<PathBuf>,
        /// Score recall against this run's top-k instead of the gold top-k (runs of one pool).
        #[arg(long)]
        reference: Option<PathBuf>,
        /// Score recall against this judge's run on each pool (a name as the table shows it).
        #[arg(long)]
        reference_judge: Option<String>,
        /// Price table (YAML: judge name → usd_per_verdict or input/output_usd_per_mtok) for judges
        /// whose recordings carry no cost (docs/replay.md).
        #[arg(long)]
        prices: Option<PathBuf>,
        /// Output folder for compare.md and recall_vs_spend.svg (default: the current folder).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Write report.md and a self-contained report.html for a run.
    Report {
        /// Run folder (result.json, fits.jsonl, verdicts.jsonl), or the run's config file.
        run: PathBuf,
        /// Output folder (default: the run folder).
        #[arg(long)]
        out: Option<PathBuf>,
    },
}

//! `topk-judge simulate FILE`: a sweep of synthetic pools ([`crate::sweep`]; results.csv,
//! summary tables and SVG plots, docs/experiments.md), or — when the file has a `recorded:`
//! section — the frozen protocol on recorded verdicts ([`crate::sweep::frozen`], docs/replay.md),
//! or — with a `pipeline:` section — the pipelined-acquisition sweep in virtual time
//! ([`crate::sweep::pipeline`], docs/experiments.md), or — with a `panel:` section — the judge-panel
//! experiment ([`crate::sweep::panel`], docs/experiments.md).

use crate::config::simulate::SimulateDocument;
use crate::report::sweep as summary;
use crate::sweep::{self, SweepError, frozen};
use std::path::{Path, PathBuf};

/// `topk-judge simulate`: load the sweep or frozen-protocol file, run it (`threads` overrides the
/// file; 0 = all cores), write the outputs into `out` (default: the file's `out_dir`/`name`) and
/// return the folder, summary.md's text and the number of simulated runs.
///
/// # Errors
/// [`SweepError`].
pub fn simulate_command(
    path: &Path,
    threads: Option<usize>,
    out: Option<&Path>,
    progress: bool,
) -> Result<(PathBuf, String, usize), SweepError> {
    let sweep = match SimulateDocument::load(path)? {
        SimulateDocument::Frozen(f) => return frozen_command(&f, threads, out, progress),
        SimulateDocument::Pipeline(s) => return pipeline_command(&s, path, threads, out, progress),
        SimulateDocument::Panel(s) => return panel_command(&s, path, threads, out, progress),
        SimulateDocument::Sweep(s) => s,
    };
    let dir = out.map(Path::to_path_buf).unwrap_or_else(|| sweep.out_dir.clone());
    not_a_run_folder(&dir)?;
    let total = sweep.cells().len() * sweep.raw.pools.count;
    let bar = crate::report::progress::Progress::counter(total as u64, progress, "pools");
    let result = sweep::run(&sweep, threads.unwrap_or(sweep.raw.threads), &|done| bar.set(done as u64))?;
    bar.finish();
    clear_sweep_outputs(&dir)?;
    let s = sweep::write_outputs(&sweep, &result, &dir)?;
    let runs: usize = s.cells.iter().map(|c| c.recall.n).sum();
    Ok((dir, summary::markdown(&sweep, &s), runs))
}

/// A run's folder holds that run's books, report and plots (its recall_vs_spend.svg among
/// them): a sweep writes its outputs elsewhere.
///
/// # Errors
/// [`SweepError::Write`] naming the folder.
fn not_a_run_folder(dir: &Path) -> Result<(), SweepError> {
    if crate::store::files::is_run_folder(dir) {
        return Err(SweepError::Write {
            path: dir.to_owned(),
            msg: "the folder of a run (it holds its verdicts or result), whose report and plots the sweep's outputs would overwrite; give the sweep a folder of its own (--out, or its `out_dir`/`name`)".into(),
        });
    }
    Ok(())
}

/// The tables every kind of sweep writes; with the plots of [`SWEEP_PLOT_PREFIXES`], what
/// [`clear_sweep_outputs`] removes.
const SWEEP_TABLES: [&str; 6] = ["rows.csv", "by_rank.csv", "summary.json", "summary.md", "judges.csv", "carried.csv"];
/// The beginnings of the names of the SVG plots sweeps write (`recall_vs_budget_cell1.svg`, …).
const SWEEP_PLOT_PREFIXES: [&str; 4] = ["recall_vs_", "benefit_vs_rho", "profile_vs_comparisons", "queries_by_rank"];

/// Remove what an earlier sweep wrote into `dir` (its tables and plots, of any kind of sweep),
/// once this sweep has run and before it writes: a plot this sweep does not draw (one budget, say)
/// is not left beside its tables as if it were theirs. Other files are left alone.
///
/// # Errors
/// [`SweepError::Write`] naming a file that cannot be removed.
fn clear_sweep_outputs(dir: &Path) -> Result<(), SweepError> {
    crate::store::files::remove_earlier(dir, |name| {
        SWEEP_TABLES.contains(&name)
            || (name.ends_with(".svg") && SWEEP_PLOT_PREFIXES.iter().any(|p| name.starts_with(p)))
    })
    .map_err(|(path, e)| SweepError::Write { path, msg: format!("cannot remove the earlier sweep's file: {e}") })
}

/// The frozen protocol on a recording ([`crate::sweep::frozen`]).
fn frozen_command(
    f: &crate::config::frozen::Frozen,
    threads: Option<usize>,
    out: Option<&Path>,
    progress: bool,
) -> Result<(PathBuf, String, usize), SweepError> {
    let dir = out.map(Path::to_path_buf).unwrap_or_else(|| f.out_dir.clone());
    not_a_run_folder(&dir)?;
    let total = f.pools.len() * f.raw.seeds.len();
    let bar = crate::report::progress::Progress::counter(total as u64, progress, "pool × seed runs");
    let rows = frozen::run(f, threads.unwrap_or(f.raw.threads), &|done| bar.set(done as u64))?;
    bar.finish();
    clear_sweep_outputs(&dir)?;
    let s = frozen::write_outputs(f, &rows, &dir)?;
    Ok((dir, crate::report::frozen::markdown(&s), rows.len()))
}

/// The pipelined-dispatch sweep in virtual time ([`crate::sweep::pipeline`]).
fn pipeline_command(
    s: &crate::config::pipeline::PipelineSweep,
    path: &Path,
    threads: Option<usize>,
    out: Option<&Path>,
    progress: bool,
) -> Result<(PathBuf, String, usize), SweepError> {
    let dir = out.map(Path::to_path_buf).unwrap_or_else(|| s.out_folder(path));
    not_a_run_folder(&dir)?;
    let total = s.pools.count * s.budgets.len() * s.pipeline.runs.len();
    let bar = crate::report::progress::Progress::counter(total as u64, progress, "simulated runs");
    let rows = sweep::pipeline::run(s, threads.unwrap_or(s.threads), &|done| bar.set(done as u64))?;
    bar.finish();
    clear_sweep_outputs(&dir)?;
    let md = sweep::pipeline::write_outputs(s, &rows, &dir)?;
    Ok((dir, md, rows.len()))
}

/// The judge-panel experiment ([`crate::sweep::panel`]).
fn panel_command(
    s: &crate::config::panel::PanelSweep,
    path: &Path,
    threads: Option<usize>,
    out: Option<&Path>,
    progress: bool,
) -> Result<(PathBuf, String, usize), SweepError> {
    let dir = out.map(Path::to_path_buf).unwrap_or_else(|| s.out_folder(path));
    not_a_run_folder(&dir)?;
    let pools = sweep::panel::pools(s, path)?;
    let total = pools.len() * s.seeds.len();
    let bar = crate::report::progress::Progress::counter(total as u64, progress, "pool × seed runs");
    let result = sweep::panel::run(s, &pools, threads.unwrap_or(s.threads), &|done| bar.set(done as u64))?;
    bar.finish();
    clear_sweep_outputs(&dir)?;
    let md = sweep::panel::write_outputs(s, &result, pools.len(), &dir)?;
    Ok((dir, md, total))
}

/// `topk-judge simulate SWEEP`.
#[derive(Debug, clap::Args)]
pub struct SimulateArgs {
    /// Sweep file (YAML).
    pub sweep: PathBuf,
    /// Worker threads (default: the sweep's `threads`, 0 = all cores).
    #[arg(long, allow_negative_numbers = true)]
    pub threads: Option<usize>,
    /// Output folder (default: the sweep's `out_dir`/`name`).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Do not show the progress bar.
    #[arg(long)]
    pub quiet: bool,
}

/// `topk-judge simulate`: run the file, write its outputs, print summary.md and the time taken.
///
/// # Errors
/// [`SweepError`].
pub fn run(args: &SimulateArgs) -> Result<std::process::ExitCode, SweepError> {
    let start = std::time::Instant::now();
    let (dir, md, rows) = simulate_command(&args.sweep, args.threads, args.out.as_deref(), !args.quiet)?;
    super::print_out(&format!(
        "{md}\n{rows} runs in {:.1} s; outputs: {}\n",
        start.elapsed().as_secs_f64(),
        dir.display()
    ));
    Ok(std::process::ExitCode::SUCCESS)
}

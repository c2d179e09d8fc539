//! `topk-judge simulate FILE`: a sweep of synthetic pools ([`crate::sweep`]; results.csv,
//! summary tables and SVG plots, docs/experiments.md), or — when the file has a `recorded:`
//! section — the frozen protocol on recorded verdicts ([`crate::sweep::frozen`], docs/replay.md),
//! or — with a `pipeline:` section — the pipelined-acquisition sweep in virtual time
//! ([`crate::sweep::pipeline`], docs/experiments.md).

use crate::sweep::{self, Sweep, SweepError, frozen, summary};
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
    let text = std::fs::read_to_string(path)
        .map_err(|source| crate::store::config::ConfigError::Io { path: path.to_owned(), source })?;
    if frozen::is_frozen(&text) {
        let f = frozen::Frozen::load(path)?;
        let dir = out.map(Path::to_path_buf).unwrap_or_else(|| f.out_dir.clone());
        let total = f.pools.len() * f.raw.seeds.len();
        let bar = crate::report::progress::Progress::counter(total as u64, progress, "pool × seed runs");
        let rows = frozen::run(&f, threads.unwrap_or(f.raw.threads), &|done| bar.set(done as u64))?;
        bar.finish();
        let s = frozen::write_outputs(&f, &rows, &dir)?;
        return Ok((dir, frozen::markdown(&s), rows.len()));
    }
    if sweep::pipeline::is_pipeline(&text) {
        let s = sweep::pipeline::PipelineSweep::load(path)?;
        let dir = out.map(Path::to_path_buf).unwrap_or_else(|| s.out_folder(path));
        let total = s.pools.count * s.budgets.len() * s.pipeline.runs.len();
        let bar = crate::report::progress::Progress::counter(total as u64, progress, "simulated runs");
        let rows = sweep::pipeline::run(&s, threads.unwrap_or(s.threads), &|done| bar.set(done as u64))?;
        bar.finish();
        let md = sweep::pipeline::write_outputs(&s, &rows, &dir)?;
        return Ok((dir, md, rows.len()));
    }
    let sweep = Sweep::load(path)?;
    let dir = out.map(Path::to_path_buf).unwrap_or_else(|| sweep.out_dir.clone());
    let total = sweep.cells().len() * sweep.raw.pools.count;
    let bar = crate::report::progress::Progress::counter(total as u64, progress, "pools");
    let result = sweep::run(&sweep, threads.unwrap_or(sweep.raw.threads), &|done| bar.set(done as u64))?;
    bar.finish();
    let s = sweep::write_outputs(&sweep, &result, &dir)?;
    let runs: usize = s.cells.iter().map(|c| c.recall.n).sum();
    Ok((dir, summary::markdown(&sweep, &s), runs))
}

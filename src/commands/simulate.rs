//! `topk-judge simulate SWEEP`: load a sweep file, run the synthetic experiments it lists
//! ([`crate::sweep`]), and write results.csv, summary tables and SVG plots (docs/experiments.md).

use crate::sweep::{self, Sweep, SweepError, summary};
use std::path::{Path, PathBuf};

/// `topk-judge simulate`: load the sweep, run it (`threads` overrides the file; 0 = all cores),
/// write the outputs into `out` (default: the sweep's folder) and return the folder, the summary
/// and summary.md's text.
///
/// # Errors
/// [`SweepError`].
pub fn simulate_command(
    path: &Path,
    threads: Option<usize>,
    out: Option<&Path>,
    progress: bool,
) -> Result<(PathBuf, summary::Summary, String), SweepError> {
    let sweep = Sweep::load(path)?;
    let dir = out.map(Path::to_path_buf).unwrap_or_else(|| sweep.out_dir.clone());
    let total = sweep.cells().len() * sweep.raw.pools.count;
    let bar = crate::report::progress::Progress::counter(total as u64, progress, "pools");
    let result = sweep::run(&sweep, threads.unwrap_or(sweep.raw.threads), &|done| bar.set(done as u64))?;
    bar.finish();
    let s = sweep::write_outputs(&sweep, &result, &dir)?;
    let md = summary::markdown(&sweep, &s);
    Ok((dir, s, md))
}

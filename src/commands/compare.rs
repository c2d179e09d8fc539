//! `topk-judge compare RUN…`: the cheap-vs-frontier cost/recall comparison of several runs
//! (docs/reports.md); the tables and plots live in [`crate::report::compare`].

use crate::report::compare::{CompareError, RunDir, compare, markdown, plot};
use std::path::{Path, PathBuf};

/// `topk-judge compare`: load the runs, write compare.md, compare.json and recall_vs_spend.svg
/// into `out`; return compare.md's text.
///
/// # Errors
/// [`CompareError`].
pub fn compare_command(runs: &[PathBuf], reference: Option<&Path>, out: &Path) -> Result<String, CompareError> {
    let loaded = runs.iter().map(|d| RunDir::load(d)).collect::<Result<Vec<_>, _>>()?;
    let reference = reference.map(RunDir::load).transpose()?;
    let c = compare(&loaded, reference.as_ref())?;
    let md = markdown(&c);
    let w = |p: PathBuf, text: &str| {
        std::fs::write(&p, text).map_err(|e| CompareError::Read { path: p.clone(), msg: format!("cannot write: {e}") })
    };
    std::fs::create_dir_all(out).map_err(|e| CompareError::Read { path: out.to_owned(), msg: e.to_string() })?;
    w(out.join("compare.md"), &md)?;
    w(out.join("compare.json"), &(serde_json::to_string_pretty(&c).expect("serialisable") + "\n"))?;
    if let Some(svg) = plot(&loaded, &c)? {
        w(out.join("recall_vs_spend.svg"), &svg)?;
    }
    Ok(md)
}

//! `topk-judge report RUN`: report.md and a self-contained report.html with plots for one run
//! (docs/reports.md); the page content lives in [`crate::report::page`], a judge panel's in
//! [`crate::report::panel_page`].

use crate::report::compare::{CompareError, RunDir};
use crate::report::page::{content, html, identifiability, markdown, report_plots};
use std::path::{Path, PathBuf};

/// `topk-judge report RUN`: write report.md, report.html and the plots' SVG files into `out`
/// (default: the run folder); `RUN` is a run folder (from any working directory) or the run's
/// config file. Returns the files written.
///
/// # Errors
/// [`CompareError`] reading the run or writing a file.
pub fn report_command(arg: &Path, out: Option<&Path>) -> Result<Vec<PathBuf>, CompareError> {
    if !arg.exists() {
        return Err(CompareError::Read {
            path: arg.to_owned(),
            msg: "no such file or folder; give a run folder or the run's config file".into(),
        });
    }
    let arg = crate::store::text::run_folder_of(arg);
    let (run_dir, cfg) = if arg.is_file() {
        let cfg = crate::config::run::Config::load_for_dry_run(arg)
            .map_err(|e| {
                // The config error names the file already: said once.
                let m = e.to_string();
                let m = m.strip_prefix(&format!("{}: ", arg.display())).unwrap_or(&m).to_owned();
                CompareError::Read {
                    path: arg.to_owned(),
                    msg: format!("not a run folder, and not a run's config file ({m})"),
                }
            })?
            .0;
        (cfg.run_dir.clone(), Some(cfg))
    } else {
        (arg.to_path_buf(), None)
    };
    RunDir::read_result_json(&run_dir, " or the run's config file")?;
    // A config names its run: the folder's run must be the one it makes, not an earlier one.
    if let Some(cfg) = &cfg {
        super::run_folder::made_by(cfg, &run_dir).map_err(|msg| CompareError::Read { path: run_dir.clone(), msg })?;
    }
    let out = out.unwrap_or(&run_dir);
    if out.exists() && !out.is_dir() {
        return Err(CompareError::Read { path: out.to_owned(), msg: "--out: not a folder (it is a file)".into() });
    }
    // Another run's folder holds that run's report.md, report.html and plots: not overwritten.
    if !crate::store::files::same_file(out, &run_dir) && crate::store::files::is_run_folder(out) {
        return Err(CompareError::Read {
            path: out.to_owned(),
            msg: format!(
                "--out: the folder of another run (it holds its verdicts or result), whose report this would overwrite; give a folder of its own for the report of {}",
                run_dir.display()
            ),
        });
    }
    // Another run's report in a folder of reports is not replaced unsaid (hunt 59 F5): its
    // report.md names its run in its title (`# Run `A` — top-3 report`).
    if !crate::store::files::same_file(out, &run_dir)
        && let Some(other) = std::fs::read_to_string(out.join("report.md"))
            .ok()
            .and_then(|t| t.lines().next().and_then(|l| l.split('`').nth(1)).map(str::to_owned))
        && let Some(this) = std::fs::read_to_string(run_dir.join("result.json"))
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .and_then(|v| v["name"].as_str().map(str::to_owned))
        && other != this
    {
        return Err(CompareError::Read {
            path: out.to_owned(),
            msg: format!(
                "--out: holds the report of run `{other}` (report.md, report.html and its plots), which the report of run `{this}` would replace; give each run's report a folder of its own, or remove that one first"
            ),
        });
    }
    // A judge panel's run (`judges:`) has its own result document and content.
    let (c, plots) = if RunDir::is_panel(&run_dir) {
        crate::report::panel_page::panel_report(&run_dir)?
    } else {
        let run = RunDir::load_picking(&run_dir, &|recs| super::run_folder::current_judge_records(&run_dir, recs))?;
        let ident = identifiability(&run);
        (content(&run, &ident), report_plots(&run)?)
    };
    crate::store::files::create_folder(out)
        .map_err(|m| CompareError::Read { path: out.to_owned(), msg: format!("--out: {m}") })?;
    let mut files = Vec::new();
    let mut w = |name: &str, text: &str| -> Result<(), CompareError> {
        let p = out.join(name);
        std::fs::write(&p, text)
            .map_err(|e| CompareError::Read { path: p.clone(), msg: format!("cannot write: {e}") })?;
        files.push(p);
        Ok(())
    };
    // A plot an earlier report drew into this folder and this one cannot (no refit to draw) is
    // removed, so no picture stands beside a report that says it has none.
    crate::store::files::remove_earlier(out, |f| REPORT_PLOTS.contains(&f) && !plots.iter().any(|(p, _, _)| p == f))
        .map_err(|(path, e)| CompareError::Read { path, msg: format!("cannot remove the earlier plot: {e}") })?;
    w("report.md", &markdown(&c, &plots))?;
    w("report.html", &html(&c, &plots))?;
    for (file, _, svg) in &plots {
        w(file, svg)?;
    }
    Ok(files)
}

/// Every plot a report may draw (a single judge's run or a panel's).
const REPORT_PLOTS: [&str; 4] = ["theta.svg", "membership.svg", "boundary_pi.svg", "recall_vs_spend.svg"];

/// `topk-judge report RUN_OR_CONFIG`.
#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// Run folder (result.json, fits.jsonl or a panel's panel_fits.jsonl, verdicts.jsonl), or the
    /// run's config file.
    pub run: PathBuf,
    /// Output folder (default: the run folder).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// `topk-judge report`: write the files and name each.
///
/// # Errors
/// [`CompareError`].
pub fn run(args: &ReportArgs) -> Result<std::process::ExitCode, CompareError> {
    for f in report_command(&args.run, args.out.as_deref())? {
        super::print_out(&format!("wrote {}\n", f.display()));
    }
    Ok(std::process::ExitCode::SUCCESS)
}

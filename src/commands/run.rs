//! `topk-judge run CONFIG [--dry-run] [--gate gate.json]`: Algorithm 1 against the configured
//! judge ([`crate::run::live`]), resumable from the run folder; with `--dry-run` the first prompt,
//! the queries the budget allows and their worst-case cost ([`super::dry_run`]), sending nothing;
//! with a `gate:` section the trusted-anchor gate runs at the end of the run
//! ([`super::gate::gate_after_run`]), or `--gate FILE` applies a gate computed before
//! ([`super::gate::apply_gate`]); the summary is printed after the gate decided.

use super::run_folder::IdentError;
use crate::config::ConfigError;
use crate::config::judge::make_judge;
use crate::config::run::Config;
use crate::report::schema::StopReason;
use crate::run::live;
use crate::run::{RunError, RunOptions};
use crate::store::ledger::CacheError;
use std::path::Path;

/// Errors of the `run` command, each with its cause.
#[derive(Debug, thiserror::Error)]
pub enum RunCommandError {
    /// The run config could not be read or is invalid (file, line/column or key, found vs expected).
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The judge cannot be built (the message names the config key).
    #[error(transparent)]
    Judge(#[from] crate::judge::setup::JudgeSetupError),
    /// Reading stored verdicts for the dry run.
    #[error(transparent)]
    Cache(#[from] CacheError),
    /// Reading the run folder's books (verdicts, paid failures, intents) for the dry run.
    #[error(transparent)]
    Books(#[from] crate::store::books::BooksError),
    /// The gate's labels file (`gate.labels`) is missing or malformed: found before the run.
    #[error(transparent)]
    Gate(Box<IdentError>),
    /// The run itself.
    #[error(transparent)]
    Run(#[from] RunError),
    /// Starting the async runtime.
    #[error("starting the tokio runtime: {0}")]
    Runtime(std::io::Error),
    /// The run stopped because too many replies were invalid (result.json is written).
    #[error("the run stopped early: {0}")]
    InvalidRate(String),
}

/// `run --dry-run`: the printable dry-run report of `config` (a warning line is added when a real
/// run would stop, e.g. on an unset API key variable). Sends nothing, writes nothing.
///
/// # Errors
/// [`RunCommandError`]: unreadable config, unbuildable judge, unreadable verdict ledger.
pub fn dry_run_text(config: &Path) -> Result<String, RunCommandError> {
    let (cfg, key_problem) = Config::load_for_dry_run(config)?;
    print_warnings(&cfg);
    let judge = make_judge(&cfg.raw.judge).map_err(RunCommandError::Judge)?;
    let d = super::dry_run::dry_run(&cfg, judge.as_ref())?;
    let mut text = super::dry_run::render(&cfg, judge.as_ref(), &d);
    if let Some(m) = key_problem {
        text.push_str(&format!("warning: a real run would stop here: {m}\n"));
    }
    Ok(text)
}

/// Load `config`, build its judge and start the tokio runtime: what a real run needs first.
///
/// # Errors
/// [`RunCommandError`]: unreadable config, unbuildable judge, no runtime.
pub fn prepare(
    config: &Path,
) -> Result<(Config, std::sync::Arc<dyn crate::judge::Judge>, tokio::runtime::Runtime), RunCommandError> {
    let cfg = Config::load(config)?;
    print_warnings(&cfg);
    let judge = make_judge(&cfg.raw.judge).map_err(RunCommandError::Judge)?;
    super::gate::check_labels_file(&cfg).map_err(|e| RunCommandError::Gate(Box::new(e)))?;
    let rt = tokio::runtime::Runtime::new().map_err(RunCommandError::Runtime)?;
    Ok((cfg, judge, rt))
}

/// Print a config's load warnings (identical texts, covariate scales) to stderr.
pub fn print_warnings(cfg: &Config) {
    for w in &cfg.warnings {
        eprintln!("warning: {w}");
    }
}

/// Run Algorithm 1 for a prepared config, then the gate (`--gate FILE`, or the config's
/// `gate:` section), then print the summary (the reported ranking follows the gate under
/// `report_ranking: auto`; Ctrl-C and SIGTERM are handled by the run). Returns the lines printed
/// after the summary and why the run stopped (the binary exits with 130 after an interrupt).
///
/// # Errors
/// [`RunCommandError::Run`] for the run (after printing the summary a failed fit still wrote),
/// [`RunCommandError::InvalidRate`] when it stopped on too many invalid replies (after printing
/// the summary; result.json is written); the inner result carries the gate's [`IdentError`].
pub fn run_with_gate(
    cfg: &Config,
    judge: std::sync::Arc<dyn crate::judge::Judge>,
    rt: &tokio::runtime::Runtime,
    quiet: bool,
    gate: Option<&Path>,
) -> Result<(Result<String, IdentError>, StopReason), RunCommandError> {
    let opts = RunOptions { progress: !quiet, print: false, handle_signals: true };
    let mut result = match rt.block_on(live::run(cfg, judge, &opts)) {
        Ok(r) => r,
        Err(e) => {
            // A failed fit or a failing judge still wrote result.json: show it.
            if matches!(e, RunError::Fit(_) | RunError::JudgeFailing { .. })
                && let Ok(text) = std::fs::read_to_string(cfg.run_dir.join("result.json"))
                && let Ok(r) = serde_json::from_str(&text)
            {
                print_out(&crate::report::result::summary_text(&r, &cfg.run_dir));
            }
            return Err(e.into());
        }
    };
    if result.stop_reason == StopReason::MaxInvalidRate {
        print_out(&format!("{}\n", crate::report::result::summary_text(&result, &cfg.run_dir)));
        let m = result.verdicts_report.stop_message.clone().unwrap_or_default();
        return Err(RunCommandError::InvalidRate(format!(
            "{m}; result.json and the paid verdicts are kept in {}",
            cfg.run_dir.display()
        )));
    }
    let gated = match gate {
        Some(g) => super::gate::apply_gate(cfg, &mut result, g),
        None if cfg.raw.gate.is_some() && result.stop_reason != StopReason::Interrupted => {
            rt.block_on(super::gate::gate_after_run(cfg, &mut result))
        }
        None => Ok(String::new()),
    };
    let mut text = crate::report::result::summary_text(&result, &cfg.run_dir);
    if result.stop_reason == StopReason::Interrupted {
        text.push_str(&crate::report::result::resume_hint(&cfg.path));
    }
    print_out(&format!("{text}\n"));
    // The summary already holds the gate's decision line: what follows it is printed after.
    let gated = gated.map(|s| match (&result.gate, s.split_once('\n')) {
        (Some(_), Some((_, rest))) => rest.to_string(),
        _ => s,
    });
    Ok((gated, result.stop_reason))
}

fn print_out(text: &str) {
    use std::io::Write;
    let _ = std::io::stdout().write_all(text.as_bytes());
}

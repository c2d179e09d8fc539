//! `topk-judge run CONFIG [--dry-run] [--gate gate.json]`: Algorithm 1 against the configured
//! judge ([`crate::run::live`]), resumable from the run folder; with `--dry-run` the first prompt,
//! the queries the budget allows and their worst-case cost ([`super::dry_run`]), sending nothing;
//! with `--gate` the ranking a trusted-anchor gate chose ([`super::gate::apply_gate`]).

use super::run_folder::IdentError;
use crate::judge::build::make_judge;
use crate::report::schema::StopReason;
use crate::run::live::{self, RunError, RunOptions};
use crate::store::config::{Config, ConfigError};
use crate::store::ledger::CacheError;
use std::path::Path;

/// Errors of the `run` command, each with its cause.
#[derive(Debug, thiserror::Error)]
pub enum RunCommandError {
    /// The config file.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The judge cannot be built (the message names the config key).
    #[error("{0}")]
    Judge(String),
    /// Reading stored verdicts for the dry run.
    #[error(transparent)]
    Cache(#[from] CacheError),
    /// Reading the run folder's books (verdicts, paid failures, intents) for the dry run.
    #[error(transparent)]
    Books(#[from] crate::store::books::BooksError),
    /// The run itself.
    #[error(transparent)]
    Run(#[from] RunError),
    /// Starting the async runtime.
    #[error("starting the tokio runtime: {0}")]
    Runtime(std::io::Error),
}

/// `run --dry-run`: the printable dry-run report of `config` (a warning line is added when a real
/// run would stop, e.g. on an unset API key variable). Sends nothing, writes nothing.
///
/// # Errors
/// [`RunCommandError`]: unreadable config, unbuildable judge, unreadable verdict ledger.
pub fn dry_run_text(config: &Path) -> Result<String, RunCommandError> {
    let (cfg, key_problem) = Config::load_for_dry_run(config)?;
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
    let judge = make_judge(&cfg.raw.judge).map_err(RunCommandError::Judge)?;
    let rt = tokio::runtime::Runtime::new().map_err(RunCommandError::Runtime)?;
    Ok((cfg, judge, rt))
}

/// Run Algorithm 1 for a prepared config (the run prints its own summary and handles Ctrl-C and
/// SIGTERM), then apply a gate file if given; returns the gate's printable lines (empty without
/// `--gate`) and why the run stopped (the binary exits with 130 after an interrupt).
///
/// # Errors
/// [`RunCommandError::Run`] for the run; the inner result carries a gate file's [`IdentError`].
pub fn run_with_gate(
    cfg: &Config,
    judge: std::sync::Arc<dyn crate::judge::Judge>,
    rt: &tokio::runtime::Runtime,
    quiet: bool,
    gate: Option<&Path>,
) -> Result<(Result<String, IdentError>, StopReason), RunCommandError> {
    let opts = RunOptions { progress: !quiet, print: true, handle_signals: true };
    let mut result = rt.block_on(live::run(cfg, judge, &opts))?;
    let gated = match gate {
        Some(g) => super::gate::apply_gate(cfg, &mut result, g),
        None => Ok(String::new()),
    };
    Ok((gated, result.stop_reason))
}

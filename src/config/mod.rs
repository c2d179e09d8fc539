//! The configuration layer: every input document (a run, an audit, a simulation sweep, the
//! frozen protocol on recordings, a pipelined-dispatch sweep) is parsed from YAML as written
//! (unknown keys are errors) and checked here, once, before anything runs. Paths resolve
//! against the document's folder; errors name the file, the line or the dotted key, what was
//! found and what was expected. The rules that documents share (a name, k, a prior, the
//! acquisition cadence, a budget, a pool, a judge) are written once in [`sections`]; a
//! [`judge::JudgeConfig`] becomes a [`crate::judge::Judge`] in [`judge`].

pub mod audit;
pub mod budget;
pub mod frozen;
pub mod judge;
pub mod overrides;
pub mod panel;
pub mod pipeline;
pub mod run;
pub mod run_inputs;
pub mod sections;
pub mod simulate;
pub mod sweep;

use crate::domain::invalid::InvalidSetting;
use crate::domain::pool::PoolError;
use serde::de::DeserializeOwned;
use std::path::{Path, PathBuf};

/// Errors loading a configuration.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read config {path}: {source}")]
    Io {
        /// The config file that could not be read.
        path: PathBuf,
        /// The I/O error from the operating system.
        source: std::io::Error,
    },
    /// YAML syntax, an unknown key or a wrong type (the message names line and column).
    #[error("{path}: {msg}")]
    Yaml {
        /// The config file that is not valid YAML or has an unknown key or wrong type.
        path: PathBuf,
        /// Parser message with line/column.
        msg: String,
    },
    /// A command-line override (`--set KEY=VALUE` or a shorthand) does not fit the document.
    #[error("{given}: {msg}")]
    Set {
        /// The override as given, e.g. `--set budget.max_usd=abc` or `--max-usd abc`.
        given: String,
        /// Found vs expected.
        msg: String,
    },
    /// A value breaks a rule.
    #[error("{}{}: {key}: {msg}", path.display(), line.map(|n| format!(":{n}")).unwrap_or_default())]
    Invalid {
        /// The config file holding the bad value.
        path: PathBuf,
        /// The 1-based line of the key (or of the nearest key above it that holds it) in the
        /// file, when it is written there.
        line: Option<usize>,
        /// Key path, e.g. `model.lambda_b`.
        key: String,
        /// Found vs expected.
        msg: String,
    },
    /// A line of an input file the document names (a pairs file) is not what was expected.
    #[error("{what} {path}:{line}: {msg}")]
    InputLine {
        /// What the file is (`pairs file`).
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// What is wrong with the line.
        msg: String,
    },
    /// The pool named by the config is bad.
    #[error("{path}: pool.file: {}", pool_message(pool_file, source))]
    Pool {
        /// Config file.
        path: PathBuf,
        /// Pool file.
        pool_file: PathBuf,
        /// What is wrong with the pool file (unreadable, bad line, duplicate id, …).
        source: PoolError,
    },
}

impl ConfigError {
    /// A broken rule of the document at `path`: its dotted key and what was expected.
    pub fn invalid(path: &Path, e: InvalidSetting) -> Self {
        let line = std::fs::read_to_string(path).ok().and_then(|t| crate::store::yaml::line_of_key(&t, &e.key));
        ConfigError::Invalid { path: path.to_owned(), line, key: e.key, msg: e.message }
    }
}

/// Read a YAML document (a UTF-8 byte-order mark is dropped) into its raw shape `T`.
///
/// # Errors
/// [`ConfigError::Io`] when unreadable; [`ConfigError::Yaml`] with line, column and key.
pub fn read_document<T: DeserializeOwned>(path: &Path) -> Result<T, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Io { path: path.to_owned(), source })?;
    crate::store::yaml::from_file_text(crate::store::text::strip_bom_str(&text), path)
        .map_err(|msg| ConfigError::Yaml { path: path.to_owned(), msg: one_setting_hint(msg.to_string()) })
}

/// Lexically normalise a path: drop `.` and resolve `..` against preceding normal components
/// (`configs/../runs/x` → `runs/x`), without touching the file system.
pub fn normalize(p: &Path) -> PathBuf {
    use std::path::Component;
    let mut out: Vec<Component<'_>> = Vec::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir if matches!(out.last(), Some(Component::Normal(_))) => {
                out.pop();
            }
            c => out.push(c),
        }
    }
    if out.is_empty() { PathBuf::from(".") } else { out.iter().collect() }
}

/// A pool error under a config: the pool file is named once (I/O, parse and lookup errors
/// already name it; rule violations get it in front).
fn pool_message(file: &Path, e: &PoolError) -> String {
    match e {
        PoolError::Invalid { .. } => format!("{}: {e}", file.display()),
        _ => e.to_string(),
    }
}

/// A duplicate `batch_size` is most often `concurrency` and `batch_size` both given: they are
/// one setting, so say so instead of naming only the older spelling.
pub(crate) fn one_setting_hint(msg: String) -> String {
    if msg.contains("duplicate field `batch_size`") || msg.contains("duplicate field `concurrency`") {
        format!(
            "{msg}; `acquisition.concurrency` and `acquisition.batch_size` are one setting (queries in flight): give one of them"
        )
    } else {
        msg
    }
}

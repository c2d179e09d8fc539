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
    /// The path is a folder, or a run's output file, not a config file.
    #[error("{path}: {msg}")]
    Folder {
        /// The folder given.
        path: PathBuf,
        /// What the command takes instead.
        msg: String,
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
    #[error("{}{}: {key}: {}", path.display(), line.map(|n| format!(":{n}")).unwrap_or_default(), pool_message(pool_file, source))]
    Pool {
        /// Config file.
        path: PathBuf,
        /// The key at fault: `pool.id` (or `pool.ids`) for an id the file does not hold,
        /// `pool.file` otherwise.
        key: String,
        /// Its 1-based line in the config file, when it is written there.
        line: Option<usize>,
        /// Pool file.
        pool_file: PathBuf,
        /// What is wrong with the pool file (unreadable, bad line, duplicate id, …).
        source: Box<PoolError>,
    },
}

impl ConfigError {
    /// A broken rule of the document at `path`: its dotted key and what was expected.
    pub fn invalid(path: &Path, e: InvalidSetting) -> Self {
        let line = std::fs::read_to_string(path).ok().and_then(|t| line_of_setting(&t, &e.key));
        ConfigError::Invalid { path: path.to_owned(), line, key: e.key, msg: e.message }
    }
}

/// The line of the setting `key` names in `text`: the dotted key, or a name it is also written
/// under (`acquisition.concurrency (or batch_size, its older name)` is found as either), else
/// the nearest block that holds it ([`crate::store::yaml::line_of_key`]).
fn line_of_setting(text: &str, key: &str) -> Option<usize> {
    use crate::store::yaml::{exact_line_of_key, line_of_key};
    let head = key.split_whitespace().next().unwrap_or(key);
    let alias = key.split_once("(or ").and_then(|(_, rest)| rest.split([',', ')', ' ']).next()).map(|name| match head
        .rsplit_once('.')
    {
        Some((parent, _)) => format!("{parent}.{name}"),
        None => name.to_owned(),
    });
    exact_line_of_key(text, head)
        .or_else(|| alias.and_then(|a| exact_line_of_key(text, &a)))
        .or_else(|| line_of_key(text, head))
}

/// The text of the config file `path`.
///
/// # Errors
/// [`ConfigError::Folder`] for a folder or a run's output file such as result.json (naming the
/// config a run folder holds);
/// [`ConfigError::Io`] when unreadable.
pub fn read_text(path: &Path) -> Result<String, ConfigError> {
    if path.is_dir() {
        let inside = path.join("config.yaml");
        let msg = if inside.is_file() && path.join("audit.json").is_file() && !path.join("result.json").is_file() {
            format!(
                "a folder, not a config file; this looks like an audit's folder: its config is {0} (`topk-judge audit {0}` repeats the audit)",
                inside.display()
            )
        } else if inside.is_file() {
            format!(
                "a folder, not a config file; this looks like a run folder: its config is {0} (`topk-judge run {0}` resumes the run)",
                inside.display()
            )
        } else {
            "a folder, not a config file; give a config (YAML), e.g. configs/mock.yaml".to_string()
        };
        return Err(ConfigError::Folder { path: path.to_owned(), msg });
    }
    if let Some((name, dir)) = crate::store::text::run_output_name(path) {
        let inside = dir.join("config.yaml");
        let instead = if inside.is_file() {
            format!("the run's config is {0} (`topk-judge run {0}` resumes the run)", inside.display())
        } else {
            "give a config (YAML), e.g. configs/mock.yaml".to_string()
        };
        return Err(ConfigError::Folder {
            path: path.to_owned(),
            msg: format!("a run's {name} (what a run wrote), not a config; {instead}"),
        });
    }
    let bytes = std::fs::read(path).map_err(|source| ConfigError::Io { path: path.to_owned(), source })?;
    // Another encoding is named with its line and byte (a UTF-8 byte-order mark is kept for the
    // YAML reader, which drops it).
    crate::domain::text::utf8_text(&bytes)
        .map_err(|(line, m)| ConfigError::Yaml { path: path.to_owned(), msg: format!("line {line}: {m}") })?;
    Ok(String::from_utf8(bytes).expect("checked as UTF-8"))
}

/// Read a YAML document (a UTF-8 byte-order mark is dropped) into its raw shape `T`.
///
/// # Errors
/// [`ConfigError::Io`] when unreadable; [`ConfigError::Yaml`] with line, column and key.
pub fn read_document<T: DeserializeOwned>(path: &Path) -> Result<T, ConfigError> {
    let text = read_text(path)?;
    let text = crate::domain::text::strip_bom_str(&text);
    // A key pasted into a setting (`model: sk-proj-…`) would be copied into the run folder and
    // printed by the dry run: refused, not shown.
    if let Ok(doc) = crate::store::yaml::from_str::<serde_json::Value>(text)
        && let Some(key) = crate::judge::openai::secret::key_in_a_setting(&doc)
    {
        let at = crate::store::yaml::line_of_key(text, &key).map(|l| format!("line {l} ")).unwrap_or_default();
        return Err(ConfigError::Yaml {
            path: path.to_owned(),
            msg: format!(
                "{at}(key `{key}`): holds what looks like an API key (not shown); a judge reads its key from the environment variable its `api_key_env` names, and a key is never written into a setting"
            ),
        });
    }
    if let Ok(doc) = crate::store::yaml::from_str::<serde_json::Value>(text)
        && let Some((key, said)) = sections::env_reference_in_a_setting(&doc)
    {
        let at = crate::store::yaml::line_of_key(text, &key).map(|l| format!("line {l} ")).unwrap_or_default();
        return Err(ConfigError::Yaml {
            path: path.to_owned(),
            msg: format!(
                "{at}(key `{key}`): {said:?} looks like an environment variable, and this setting is used as written (only paths and URLs are expanded); write the value out, or give it on the command line (`--set {key}=\"$VAR\"`, which the shell expands)"
            ),
        });
    }
    crate::store::yaml::from_file_text(text, path).map_err(|msg| {
        // A judge with two blocks fails on whichever block the parser reads first (a missing
        // `base_url` of its `openai:`): name the cause instead.
        // `---` and `...` lines mark where a document starts and ends: they hold no setting.
        let holds_nothing = |l: &str| {
            let l = l.split(" #").next().unwrap_or(l).trim();
            l.is_empty() || l.starts_with('#') || l == "---" || l == "..."
        };
        if text.lines().all(holds_nothing) {
            return ConfigError::Yaml {
                path: path.to_owned(),
                msg: "the file holds no settings (it is empty, or only comments and `---` lines)".into(),
            };
        }
        let doc = crate::store::yaml::from_str::<serde_json::Value>(text).ok();
        let msg = doc
            .and_then(|d| judge_blocks_message(&d, text))
            .unwrap_or_else(|| one_setting_hint(at_the_second_name(msg.to_string(), text)));
        ConfigError::Yaml { path: path.to_owned(), msg }
    })
}

/// The kinds of judge block a judge section may hold, one of them.
pub(crate) const JUDGE_KINDS: [&str; 4] = ["mock", "openai", "synthetic", "replay"];

/// "line 9: `judge` has 2 judge blocks (`mock`, `openai`); …" for the first judge section of
/// `doc` (`judge:` or an entry of `judges:`) that holds more than one of [`JUDGE_KINDS`]; the
/// line is looked up in `text`, the document as written.
pub(crate) fn judge_blocks_message(doc: &serde_json::Value, text: &str) -> Option<String> {
    let mut sections: Vec<(String, &serde_json::Value)> = Vec::new();
    sections.extend(doc.get("judge").map(|j| ("judge".to_string(), j)));
    if let Some(list) = doc.get("judges").and_then(serde_json::Value::as_array) {
        sections.extend(list.iter().enumerate().map(|(i, j)| (format!("judges[{i}]"), j)));
    }
    sections.into_iter().find_map(|(key, j)| {
        let map = j.as_object()?;
        let kinds: Vec<String> =
            map.keys().filter(|k| JUDGE_KINDS.contains(&k.as_str())).map(|k| format!("`{k}`")).collect();
        (kinds.len() > 1).then(|| {
            let line = crate::store::yaml::line_of_key(text, &key).map(|l| format!("line {l}: ")).unwrap_or_default();
            format!(
                "{line}`{key}` has {} judge blocks ({}); give exactly one of `mock`, `openai`, `synthetic`, `replay`",
                kinds.len(),
                kinds.join(", ")
            )
        })
    })
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

/// A setting written under both its names (`concurrency` and `batch_size`) is a duplicate field
/// the parser places at the mapping's first key: placed at the line of the second name instead,
/// without the parser's excerpt (its caret points at that first key).
fn at_the_second_name(msg: String, text: &str) -> String {
    let both = msg.contains("duplicate field `batch_size`") || msg.contains("duplicate field `concurrency`");
    let lines =
        ["acquisition.concurrency", "acquisition.batch_size"].map(|k| crate::store::yaml::exact_line_of_key(text, k));
    match (both, lines, msg.find("): ")) {
        (true, [Some(a), Some(b)], Some(end)) if msg.starts_with("line ") => {
            let (line, key) = if a > b { (a, "concurrency") } else { (b, "batch_size") };
            let cause = msg[end + 3..].lines().next().unwrap_or_default();
            format!("line {line} (key `acquisition.{key}`): {cause}")
        }
        _ => msg,
    }
}

/// A duplicate `batch_size` is most often `concurrency` and `batch_size` both given: they are
/// one setting, so say so instead of naming only the older spelling.
pub(crate) fn one_setting_hint(msg: String) -> String {
    let first = msg.lines().next().unwrap_or("");
    if first.contains("duplicate field `batch_size`") || first.contains("duplicate field `concurrency`") {
        with_hint(
            &msg,
            "`acquisition.concurrency` and `acquisition.batch_size` are one setting (queries in flight): give one of them",
        )
    } else if first.contains("unknown field `pairs`") {
        // An audit config given to `run` (or `simulate`).
        with_hint(&msg, "`pairs:` is a setting of an audit config: run this file with `topk-judge audit`")
    } else if first.contains("unknown field `pool_id`") || first.contains("unknown field `items`") {
        with_hint(
            &msg,
            "this looks like a pool file (JSON Lines, one pool per line), not a config: name it in a config's `pool.file`",
        )
    } else if first.contains("unknown field `pool`,") && first.contains("pools") {
        // A run config given to `simulate`.
        with_hint(&msg, "`pool:` is a setting of a run config: run this file with `topk-judge run`")
    } else {
        msg
    }
}

/// `msg` with `hint` after its first line (the parser's excerpt stays below).
fn with_hint(msg: &str, hint: &str) -> String {
    match msg.split_once('\n') {
        Some((first, rest)) => format!("{first}; {hint}\n{rest}"),
        None => format!("{msg}; {hint}"),
    }
}

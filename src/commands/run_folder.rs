//! Reading a run back from its folder for `profile`, `gate` and `run --gate`: the validated
//! config, the folder, and the run judge's valid verdicts as item indices; and the error type
//! these commands share.

use crate::config::ConfigError;
use crate::config::run::{Config, RawConfig};
use crate::domain::pool::{self, Covariates, PoolError};
use crate::domain::verdict::ItemVerdict;
use crate::judge::JudgeError;
use crate::model::FitError;
use crate::store::ledger::{LedgerError, read_records};
use std::path::{Path, PathBuf};

/// Errors of `profile`, `gate` and `run --gate`.
#[derive(Debug, thiserror::Error)]
pub enum RunFolderError {
    /// The run is a judge panel and the command takes a single judge.
    #[error("{0}")]
    Panel(String),
    /// The run's config.yaml could not be read or is invalid.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// Reading the verdict log (verdicts.jsonl) failed: I/O error or a line that is not a record.
    #[error(transparent)]
    Cache(#[from] LedgerError),
    /// The trusted judge's books (trusted_verdicts.jsonl, trusted_failed.jsonl,
    /// trusted_intents.jsonl) could not be read or appended.
    #[error(transparent)]
    Books(#[from] crate::store::books::BooksError),
    /// Another process works in the run folder (the gate stores paid verdicts there).
    #[error(transparent)]
    Lock(#[from] crate::store::lock::LockError),
    /// The Bradley–Terry MAP fit failed (Newton did not converge, or the Hessian is not positive definite).
    #[error(transparent)]
    Fit(#[from] FitError),
    /// Building the bias-aware covariates from the pool failed (`model.covariates` or the pool's defaults).
    #[error(transparent)]
    Pool(#[from] PoolError),
    /// Reading or writing a file.
    #[error("{path}: {source}")]
    Io {
        /// The run-folder file that could not be read or written.
        path: PathBuf,
        /// The I/O error from the operating system.
        source: std::io::Error,
    },
    /// A file that is not what was expected (names file, line and the expected form).
    #[error("{path}:{line}: {msg}")]
    Parse {
        /// The file that does not have the expected form.
        path: PathBuf,
        /// 1-based line (0 = whole file).
        line: usize,
        /// What is wrong.
        msg: String,
    },
    /// Anything else the user must fix (the message says what).
    #[error("{0}")]
    Invalid(String),
    /// The trusted judge failed on a query (verdicts already stored are kept; re-run to resume).
    #[error("trusted judge failed on {a} vs {b}: {source}")]
    Judge {
        /// First-shown item id.
        a: String,
        /// Second-shown item id.
        b: String,
        /// The trusted judge's failure (HTTP status, timeout, unparseable reply, …).
        source: JudgeError,
    },
    /// Ctrl-C, SIGTERM or SIGHUP while the gate asked its trusted judge: nothing more was sent,
    /// the replies in flight were booked, and no decision was made (re-running resumes).
    #[error(
        "interrupted during {during}: nothing more was sent and the verdicts paid for are kept in the run folder; the gate made no decision (run it again to finish it: its trusted verdicts so far are reused)"
    )]
    Interrupted {
        /// What was interrupted, with how far it got.
        during: String,
    },
    /// The signal handler (Ctrl-C, SIGTERM, SIGHUP) could not be installed.
    #[error("cannot listen for Ctrl-C: {0}")]
    Signals(std::io::Error),
}

pub(crate) fn io_err(path: &Path) -> impl Fn(std::io::Error) -> RunFolderError + '_ {
    move |source| RunFolderError::Io { path: path.to_owned(), source }
}

/// A run read back from its folder: validated config, folder and valid verdicts (item indices).
pub struct LoadedRun {
    /// The config.
    pub cfg: Config,
    /// The run folder.
    pub dir: PathBuf,
    /// Valid verdicts of the run's judge configuration.
    pub verdicts: Vec<ItemVerdict>,
    /// The warning about a torn last line of verdicts.jsonl (dropped), for the command to show.
    pub torn_line: Option<String>,
}

/// Read a run from a run folder (with `config.yaml` and `verdicts.jsonl`), from any working
/// directory, or from a config file whose run folder exists.
///
/// A run folder's `config.yaml` names its inputs relative to the folder (its own copies
/// `pool.jsonl` and `prompt/`); folders written by older versions held paths relative to the
/// directory the run was started from, which are tried there. A live judge's API key is not
/// needed to read a run.
///
/// # Errors
/// [`RunFolderError`]: unreadable config, missing pool or verdicts.
pub fn load_run(arg: &Path) -> Result<LoadedRun, RunFolderError> {
    load_run_with(arg, &[])
}

/// Whether the run in folder `dir` was made by `cfg` (a config file given for a run folder): the
/// fit settings of the folder's run (model, k, acquisition, pool: what
/// [`crate::run::folder::config_hash`] hashes, read from its config.yaml, or its run.json's
/// hash) and what it reports (`certify`, `report_ranking`; a panel's judges by name, trust and
/// description) are `cfg`'s, and, for a single judge, some stored verdict of the pool is of
/// `cfg`'s judge configuration. A folder without config.yaml, run.json or verdicts is not
/// refused here.
///
/// # Errors
/// What differs (each setting by its key, with both values), naming the config (the caller
/// names the folder).
pub fn made_by(cfg: &Config, dir: &Path) -> Result<(), String> {
    let settings = |c: &Config| {
        let mut v = serde_json::json!({
            "model": c.raw.model, "k": c.raw.k, "acquisition": c.raw.acquisition, "pool": {"id": c.pool.pool_id},
            "certify": c.raw.certify, "report_ranking": c.raw.report_ranking,
        });
        // Under wait_for_batch, how many queries are in flight is how fast, not what: each
        // refit picks refit_every queries whatever the concurrency (docs/live.md, "dispatch").
        if c.raw.acquisition.dispatch == crate::config::run::Dispatch::WaitForBatch
            && let Some(a) = v["acquisition"].as_object_mut()
        {
            a.remove("concurrency");
        }
        v
    };
    // A panel's members as their runs tell them apart: name, trust and description (which shows
    // no credential; a judge that cannot be described here is compared by name and trust).
    // In name order: the order of `judges:` is not the run's (docs/model.md §8).
    let members = |c: &Config| -> Vec<(String, bool, Option<String>)> {
        let mut m: Vec<_> = c
            .raw
            .judges
            .iter()
            .map(|m| {
                let judge = crate::config::judge::judge_info(&m.judge).ok().map(|j| j.describe());
                (m.name.clone(), m.trusted, judge)
            })
            .collect();
        m.sort_by(|a, b| a.0.cmp(&b.0));
        m
    };
    let differ = match folder_config(dir, &[]) {
        Ok(stored) => {
            let mut keys = Vec::new();
            differing_keys(&settings(&stored), &settings(cfg), "", &mut keys);
            let (there, here) = (members(&stored), members(cfg));
            let alike = there.len() == here.len()
                && there
                    .iter()
                    .zip(&here)
                    .all(|(a, b)| a.0 == b.0 && a.1 == b.1 && (a.2.is_none() || b.2.is_none() || a.2 == b.2));
            let show = |m: &[(String, bool, Option<String>)]| {
                let names: Vec<String> =
                    m.iter().map(|(n, t, _)| if *t { format!("{n} (trusted)") } else { n.clone() }).collect();
                format!("[{}]", names.join(", "))
            };
            if !alike && show(&there) != show(&here) {
                keys.push(format!("judges ({} there, {} here)", show(&there), show(&here)));
            } else if !alike {
                // The same names and trust: the members whose settings differ, by description.
                for (a, b) in there.iter().zip(&here).filter(|(a, b)| a.2.is_some() && b.2.is_some() && a.2 != b.2) {
                    keys.push(format!(
                        "judge {:?} ({:?} there, {:?} here)",
                        a.0,
                        a.2.as_deref().unwrap_or_default(),
                        b.2.as_deref().unwrap_or_default()
                    ));
                }
            }
            keys
        }
        // No config.yaml that reads: the run.json hash alone says whether they differ.
        Err(_) => {
            let run_json: Option<serde_json::Value> =
                std::fs::read_to_string(dir.join("run.json")).ok().and_then(|t| serde_json::from_str(&t).ok());
            match run_json.as_ref().and_then(|v| v["fit"].as_str()) {
                Some(fit) if fit != crate::run::folder::config_hash(cfg) => {
                    vec!["model, k, acquisition or pool".to_owned()]
                }
                _ => Vec::new(),
            }
        }
    };
    if !differ.is_empty() {
        return Err(format!(
            "holds a run made with other settings than {} configures: {}; give the run folder itself for the run it holds, or run this config first",
            cfg.path.display(),
            differ.join(", ")
        ));
    }
    stored_by_judge(cfg, dir)
}

/// Whether the gate settings of `cfg` are those of the run in folder `dir`, when its config has
/// a `gate:` section: the run's result and its gate.json follow from them.
///
/// # Errors
/// What differs (each setting by its key, with both values).
pub fn gate_made_by(cfg: &Config, dir: &Path) -> Result<(), String> {
    let Ok(stored) = folder_config(dir, &[]) else { return Ok(()) };
    if stored.raw.gate.is_none() {
        return Ok(());
    }
    // The trusted judge as its description (the folder's config names its prompt by the folder's
    // copy, the config by its own path: one template either way).
    let gate = |c: &Config| {
        let mut v = serde_json::json!({ "gate": c.raw.gate });
        if let Some(j) = c.raw.gate.as_ref().and_then(|g| g.trusted.as_ref()) {
            v["gate"]["trusted"] = crate::config::judge::judge_info(j)
                .map_or(serde_json::Value::Null, |j| serde_json::Value::String(j.describe()));
        }
        v
    };
    let mut keys = Vec::new();
    differing_keys(&gate(&stored), &gate(cfg), "", &mut keys);
    if keys.is_empty() {
        return Ok(());
    }
    Err(format!(
        "the run there was made with other gate settings: {}; its gate.json would not describe the run: {OVERRIDE_HINT}",
        keys.join(", ")
    ))
}

/// How to go on when a gate's settings differ from its run's, when an override made them differ.
pub const OVERRIDE_HINT: &str = "drop the override, or run the config with it first";

/// [`OVERRIDE_HINT`], or with no override given, what else made the settings differ: the
/// config read (`config`, the run folder's config.yaml when a folder was given) was changed
/// after the run (hunt 59 F9: "drop the override" was said with none given).
pub fn settings_hint(overrides: &[crate::config::overrides::Override], config: &Path) -> String {
    if overrides.is_empty() {
        format!(
            "{} was changed after the run; run it again first, or restore the settings the run was made with",
            config.display()
        )
    } else {
        OVERRIDE_HINT.to_owned()
    }
}

/// The keys (dotted) whose values differ between `there` (the folder's run) and `here`, each
/// with both values: "k (3 there, 5 here)".
fn differing_keys(there: &serde_json::Value, here: &serde_json::Value, prefix: &str, out: &mut Vec<String>) {
    use serde_json::Value;
    match (there, here) {
        (Value::Object(a), Value::Object(b)) => {
            let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            for k in keys {
                let key = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
                differing_keys(a.get(k).unwrap_or(&Value::Null), b.get(k).unwrap_or(&Value::Null), &key, out);
            }
        }
        (a, b) if a != b => {
            let show = |v: &Value| if v.is_null() { "unset".to_owned() } else { v.to_string() };
            out.push(format!("{prefix} ({} there, {} here)", show(a), show(b)));
        }
        _ => {}
    }
}

/// Whether, for a single judge, some stored verdict of `cfg`'s pool in folder `dir` is of `cfg`'s
/// judge configuration (a folder without verdicts, and a judge that cannot be built here, are
/// not refused).
///
/// # Errors
/// How many verdicts the folder holds, none of them the judge's.
pub fn stored_by_judge(cfg: &Config, dir: &Path) -> Result<(), String> {
    let path = dir.join("verdicts.jsonl");
    if cfg.is_panel() || !path.exists() {
        return Ok(());
    }
    let records = read_records(&path).map_err(|e| e.to_string())?.0;
    let of_pool = records.iter().filter(|r| r.pool_id == cfg.pool.pool_id || cfg.pool.is_systems()).count();
    // A judge that cannot be built here (a live judge without its key) is not checked.
    let Ok(judge) = crate::config::judge::judge_info(cfg.raw.judge()) else { return Ok(()) };
    let mine = crate::run::queries::RunQueries::new(cfg, judge.as_ref()).stored(&records).len();
    if of_pool > 0 && mine == 0 {
        return Err(format!(
            "none of the {of_pool} verdicts stored here is of the judge {} configures (another judge, or its settings changed: seed, model, prompt, …): give the run folder itself for the run it holds, or run this config first",
            cfg.path.display()
        ));
    }
    Ok(())
}

/// The result.json of the single-judge run in `dir`, when there is one that reads as such.
pub fn read_result(dir: &Path) -> Option<crate::report::schema::RunResult> {
    std::fs::read(dir.join("result.json")).ok().and_then(|b| serde_json::from_slice(&b).ok())
}

/// [`load_run`] with command-line overrides of its config ([`crate::config::overrides`]).
///
/// # Errors
/// As [`load_run`].
pub fn load_run_with(
    arg: &Path,
    overrides: &[crate::config::overrides::Override],
) -> Result<LoadedRun, RunFolderError> {
    let (mut cfg, dir) = if arg.is_dir() {
        // The folder is the run: an override naming another folder would be ignored.
        if let Some(o) =
            overrides.iter().find(|o| matches!(o.key.first().map(String::as_str), Some("name" | "out_dir")))
        {
            return Err(RunFolderError::Invalid(format!(
                "{}: {} is a run folder, which names its run; to work on another run, pass its folder, or a config file (where {} applies)",
                o.given,
                arg.display(),
                o.key.join(".")
            )));
        }
        (folder_config(arg, overrides)?, arg.to_path_buf())
    } else {
        let cfg = Config::load_for_dry_run_with(arg, overrides)?.0;
        let dir = cfg.run_dir.clone();
        (cfg, dir)
    };
    cfg.run_dir = dir.clone();
    let (verdicts, torn_line) = read_run_verdicts(&cfg, &dir)?;
    // A config whose judge matches none of the folder's verdicts names a run not made yet: said
    // so here, for every command that reads a run by its config (fit, profile, gate, …).
    if verdicts.is_empty() && !arg.is_dir() {
        stored_by_judge(&cfg, &dir).map_err(|m| RunFolderError::Invalid(format!("{}: {m}", dir.display())))?;
    }
    Ok(LoadedRun { cfg, dir, verdicts, torn_line })
}

/// The config of run folder `dir` (its config.yaml, as this version or an older one wrote it),
/// with `overrides`.
///
/// # Errors
/// [`RunFolderError`]: no config.yaml, or one that does not load.
fn folder_config(dir: &Path, overrides: &[crate::config::overrides::Override]) -> Result<Config, RunFolderError> {
    // An audit's folder holds its config and verdicts too, but no run.
    if dir.join("audit.json").is_file() && !dir.join("result.json").is_file() {
        return Err(RunFolderError::Invalid(format!(
            "{}: the folder of an audit (it holds its audit.json), not of a run: this command reads a run's folder (written by `topk-judge run`); the audit's findings are in its audit.json",
            dir.display()
        )));
    }
    let path = dir.join("config.yaml");
    let text = std::fs::read_to_string(&path).map_err(|e| {
        let why = if e.kind() == std::io::ErrorKind::NotFound {
            "it holds no config.yaml".to_string()
        } else {
            format!("{}: {e}", path.display())
        };
        RunFolderError::Invalid(format!(
            "{}: not a run folder ({why}); expected a folder written by `topk-judge run`, or a config file",
            dir.display()
        ))
    })?;
    if text.starts_with("# The configuration this run folder was made with") {
        Ok(Config::load_for_dry_run_with(&path, overrides)?.0)
    } else {
        legacy_run_config(&path, &text)
    }
}

/// Which of `records` (run folder `dir`'s verdicts.jsonl) are its current judge's: those whose
/// cache key is the key of their own two items under the folder's config.yaml (as `run` and
/// `fit RUN` match them), and records without a key. `None` when the folder's config or judge
/// cannot be read here: then every record of the judge's description counts.
pub fn current_judge_records(dir: &Path, records: &[crate::store::ledger::VerdictRecord]) -> Option<Vec<bool>> {
    let mut cfg = folder_config(dir, &[]).ok()?;
    cfg.run_dir = dir.to_owned();
    let of = records.iter().map(|r| (Some(r.judge.as_str()), r.key.as_str(), r.a.as_str(), r.b.as_str()));
    let keep = of_current_judges(&cfg, &of.collect::<Vec<_>>()).ok()?;
    Some(keep.into_iter().zip(records).map(|(k, r)| k || r.key.is_empty()).collect())
}

/// Which of `records` ((judge, cache key, first-shown id, second-shown id)) are of the judges of
/// `cfg` as configured now: those whose key is the key of their own two items under the judge's
/// settings (a panel's member's under its name), as `run` matches them. A record of an edited
/// judge, of a judge no longer in the panel, or of the single judge of an earlier
/// configuration is not.
///
/// # Errors
/// A judge of `cfg` cannot be built (its name and why).
pub fn of_current_judges(cfg: &Config, records: &[(Option<&str>, &str, &str, &str)]) -> Result<Vec<bool>, String> {
    let info = |j| crate::config::judge::judge_info(j);
    let members: Vec<(Option<&str>, std::sync::Arc<dyn crate::judge::JudgeInfo>)> = if cfg.is_panel() {
        let mut v = Vec::new();
        for m in &cfg.raw.judges {
            let judge = info(&m.judge).map_err(|e| format!("judge {:?}: {e}", m.name))?;
            v.push((
                Some(m.name.as_str()),
                std::sync::Arc::new(crate::judge::panel::Named { name: m.name.clone(), judge }) as _,
            ));
        }
        v
    } else {
        vec![(None, info(cfg.raw.judge()).map_err(|e| e.to_string())?)]
    };
    let queries: Vec<_> = members.iter().map(|(_, j)| crate::run::queries::RunQueries::new(cfg, j.as_ref())).collect();
    // One record per judge and ordered pair, as the run keeps them (a pair may be stored under
    // two panel members' names of one judge).
    let mut seen = std::collections::HashSet::new();
    Ok(records
        .iter()
        .map(|&(judge, key, a, b)| {
            members.iter().zip(&queries).enumerate().any(|(j, ((name, _), q))| {
                name.is_none_or(|n| judge == Some(n))
                    && !key.is_empty()
                    && q.learn(key, a, b).is_some_and(|pair| seen.insert((j, pair)))
            })
        })
        .collect())
}

/// A run folder's config.yaml as older versions wrote it: paths relative to the directory the
/// run was started from.
fn legacy_run_config(path: &Path, text: &str) -> Result<Config, RunFolderError> {
    let mut raw: RawConfig = crate::store::yaml::from_file_text(text, path)
        .map_err(|msg| ConfigError::Yaml { path: path.to_owned(), msg: msg.to_string() })?;
    let cwd = std::env::current_dir().map_err(io_err(Path::new(".")))?;
    if raw.pool.synthetic.is_none() {
        raw.pool.file = cwd.join(&raw.pool.file);
        if !raw.pool.file.exists() {
            return Err(RunFolderError::Invalid(format!(
                "{}: pool file {} not found; this run folder was written by an older version, whose config.yaml holds paths relative to the directory the run was started from: run this command there, pass the config file, or re-run the config to refresh the folder",
                path.display(),
                raw.pool.file.display()
            )));
        }
    }
    if let Some(l) = raw.gate.as_mut().and_then(|g| g.labels.as_mut()) {
        *l = cwd.join(&*l);
    }
    // A replay judge's recording, like the pool, was resolved against the run's directory.
    let trusted = raw.gate.as_mut().and_then(|g| g.trusted.as_mut());
    let judges: Vec<&mut crate::config::judge::JudgeConfig> = match &mut raw.judge {
        Some(j) => vec![j],
        None => raw.judges.iter_mut().map(|m| &mut m.judge).collect(),
    };
    for j in judges.into_iter().chain(trusted) {
        if let crate::config::judge::JudgeConfig::Replay(r) = j {
            r.file = cwd.join(&r.file);
        }
    }
    Ok(Config::from_raw(raw, path)?)
}

/// The description of a config's judge (as result.json and gate.json name it), also for a live
/// judge whose API key is not set here.
pub fn judge_description(cfg: &Config) -> String {
    crate::config::judge::judge_info(cfg.raw.judge()).map(|j| j.describe()).unwrap_or_default()
}

/// The valid verdicts stored in `<dir>/verdicts.jsonl` for the config's judge (matched by cache
/// key, as the runner does; if the judge cannot be built here, e.g. a live judge without its
/// API key, every verdict of the pool is used and a warning is logged).
///
/// # Errors
/// [`RunFolderError`] if the file is missing, malformed or names unknown items.
pub fn run_verdicts(cfg: &Config, dir: &Path) -> Result<Vec<ItemVerdict>, RunFolderError> {
    let (verdicts, torn_line) = read_run_verdicts(cfg, dir)?;
    if let Some(w) = torn_line {
        tracing::warn!("{w}");
    }
    Ok(verdicts)
}

/// What fills the run folder `dir` of `cfg` (its stored config.yaml, say): the command that runs
/// the config, with `--name` when the config's own name would fill another folder beside it (a
/// folder copied or renamed keeps the name it was made with), or where the config writes when
/// that is elsewhere.
fn fill_hint(cfg: &Config, dir: &Path) -> String {
    let cmd = crate::report::result::run_command(&cfg.path, &cfg.overrides);
    let parent = |p: &Path| p.parent().and_then(|q| q.canonicalize().ok());
    // Where running the config file fills (a run folder's loaded config holds that folder).
    let base = cfg.path.parent().unwrap_or(Path::new("."));
    let Ok(to) = crate::config::sections::out_folder(base, cfg.raw.out_dir.as_deref(), &cfg.raw.name, "runs") else {
        return format!("run `{cmd}` first");
    };
    let (to, here) = (&to, dir);
    if to.file_name() == here.file_name() && parent(to) == parent(here) {
        return format!("run `{cmd}` first");
    }
    match here.file_name().map(|n| n.to_string_lossy().into_owned()) {
        Some(name) if parent(to) == parent(here) && crate::config::sections::check_name(&name, "run").is_ok() => {
            format!(
                "run `{cmd} --name {name}` first (the config names its folder {}, so without --name it fills {})",
                to.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
                to.display()
            )
        }
        _ => format!("run `{cmd}` fills {}, not this folder", to.display()),
    }
}

/// [`run_verdicts`] without logging: the verdicts and the torn-last-line warning, if any.
///
/// # Errors
/// As [`run_verdicts`].
pub fn read_run_verdicts(cfg: &Config, dir: &Path) -> Result<(Vec<ItemVerdict>, Option<String>), RunFolderError> {
    let path = dir.join("verdicts.jsonl");
    if !path.exists() {
        return Err(RunFolderError::Invalid(format!("no verdicts at {}: {}", path.display(), fill_hint(cfg, dir))));
    }
    let (records, _, torn_line) = read_records(&path)?;
    let pool = &cfg.pool;
    let mut out = Vec::new();
    match crate::config::judge::judge_info(cfg.raw.judge()) {
        Ok(judge) => {
            let queries = crate::run::queries::RunQueries::new(cfg, judge.as_ref());
            out = queries.verdicts(&records, cfg.raw.model.strong_preference_weight);
        }
        Err(msg) => {
            tracing::warn!("cannot build the judge ({msg}); using every verdict of pool {:?}", pool.pool_id);
            for (line, r) in records.iter().enumerate() {
                if r.pool_id != pool.pool_id {
                    continue;
                }
                let find = |id: &str| {
                    pool.item_index(id).ok_or_else(|| RunFolderError::Parse {
                        path: path.clone(),
                        line: line + 1,
                        msg: format!("item {id:?} is not in pool {:?}", pool.pool_id),
                    })
                };
                let (a, b) = (find(&r.a)?, find(&r.b)?);
                if let Some(y) = r.reply.y {
                    out.push(ItemVerdict { a, b, y, w: r.weight(cfg.raw.model.strong_preference_weight) });
                }
            }
        }
    }
    Ok((out, torn_line))
}

/// The covariates of the bias-aware model for `cfg`, also when the run itself is naive
/// (`model.covariates`, or the pool defaults).
///
/// # Errors
/// [`PoolError`] from building them.
pub fn bias_covariates(cfg: &Config) -> Result<Covariates, PoolError> {
    if cfg.covariates.p() > 0 {
        return Ok(cfg.covariates.clone());
    }
    let specs = cfg.raw.model.covariates.clone().unwrap_or_else(|| pool::default_covariates(&cfg.pool));
    pool::build_covariates(&cfg.pool, &specs)
}

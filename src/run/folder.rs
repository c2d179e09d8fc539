//! A run folder opened for a run (docs/live.md, "Crashes, Ctrl-C and two processes"): its lock,
//! held until the run ends; the signal handlers; the removal of an earlier result.json (no older
//! result is left looking current); `run.json`, which says what made the folder; the run's own
//! copies of its inputs; and the books, whose open intents of a run that ended early are booked
//! as possibly billed.

use super::interrupt::Interrupt;
use super::{RunError, RunOptions};
use crate::config::run::Config;
use crate::domain::rng;
use crate::judge::JudgeInfo;
use crate::store::books::Books;
use crate::store::lock::RunLock;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

/// Hash of what determines the fit (model, covariates, k, acquisition, pool and, when a panel
/// judge has one, the carried priors), for warm-start matching (fits.jsonl, panel_fits.jsonl)
/// and the run's identity.
pub fn config_hash(cfg: &Config) -> String {
    let mut v = serde_json::json!({
        "model": cfg.raw.model, "covs": cfg.covariate_specs, "k": cfg.raw.k,
        "acq": cfg.raw.acquisition, "pool": cfg.pool.pool_id,
    });
    // Only when set, so a run without carried priors keeps the hash it always had.
    if cfg.raw.judges.iter().any(|m| !m.prior.is_empty()) {
        let priors: Vec<_> = cfg.raw.judges.iter().map(|m| (&m.name, &m.prior)).collect();
        v["carried"] = serde_json::json!(priors);
    }
    // A panel's model also follows its trusted judge (no c) and the families behind each judge's
    // self-preference covariate: another of either is another model (it kept the hash, so its
    // history read as one curve, and no warning said the run was replaced).
    if cfg.raw.judges.len() > 1 {
        let trusted: Vec<&str> = cfg.raw.judges.iter().filter(|m| m.trusted).map(|m| m.name.as_str()).collect();
        v["trusted"] = serde_json::json!(trusted);
        if let Some(f) = &cfg.families {
            v["families"] = serde_json::json!({"judge": f.judge, "base": f.base});
        }
    }
    rng::sha256_hex(&v.to_string())[..16].to_string()
}

/// What a run folder was made by: the fit settings ([`config_hash`]) and the judge (the cache
/// key of the pool's first ordered pair, which hashes the judge's settings, prompt and texts).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct RunIdentity {
    fit: String,
    judge: String,
    /// SHA-256 (16 hex digits) of the pool lines the run read (its pool.jsonl); empty in folders
    /// of older versions.
    #[serde(default)]
    pool: String,
}

/// The identity `dir`'s run.json holds, if it reads.
fn old_identity(dir: &Path) -> Option<RunIdentity> {
    serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).ok()?).ok()
}

/// A warning when `dir` already holds a run made by another configuration (its `run.json`
/// differs): running this config replaces that run's result.json and config.yaml.
fn other_run_warning(dir: &Path, old: Option<&RunIdentity>, id: &RunIdentity, fits: &str) -> Option<String> {
    let old = old?;
    let what = match (old.fit != id.fit, old.judge != id.judge) {
        (false, false) => return None,
        (true, false) => "model, k, acquisition or pool",
        // A judge's cache key holds what it reads of the items: their texts (a mock's also their
        // gold qualities), so editing the pool's items changes it too.
        (false, true) => "judge (or the items it reads: texts, a mock judge's qualities)",
        (true, true) => "judge (or the items it reads) and model, k, acquisition or pool",
    };
    Some(format!(
        "{} holds a run with a different {what}: running this config replaces its result.json and config.yaml, and {fits} gets a second history (stored verdicts are kept, and reused by a judge of the same settings and name: a single judge and a panel's member alike; a member given another name asks again); give this run its own `name` to keep both",
        dir.display()
    ))
}

/// The items of pool lines `text` (JSON Lines of pools), each under (pool id, item id); lines
/// that do not read are left out.
fn pool_items(text: &str) -> HashMap<(String, String), serde_json::Value> {
    let mut out = HashMap::new();
    for v in text.lines().filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok()) {
        let pool = v["pool_id"].as_str().unwrap_or_default().to_owned();
        for item in v["items"].as_array().into_iter().flatten() {
            if let Some(id) = item["id"].as_str() {
                out.insert((pool.clone(), id.to_owned()), item.clone());
            }
        }
    }
    out
}

/// A warning when items of the folder's `pool.jsonl` (the last run's copy of its pool) read
/// otherwise in `new` (the pool lines this run writes): another text, words or quality of the
/// same item id. Where the judge reads what changed (a text; a mock judge's quality), its cache
/// keys change, so the judge is asked, and paid, again for every pair of those items.
///
/// The folder's own pool.jsonl edited in place (the run resumed from the folder's config.yaml)
/// leaves no copy to compare: then run.json's hash of the pool lines (`old`) says that the pool
/// changed, though not which items.
fn changed_items_warning(
    dir: &Path,
    new_lines: &str,
    (old, id): (Option<&RunIdentity>, &RunIdentity),
    fits: &str,
) -> Option<String> {
    let old_items = pool_items(&std::fs::read_to_string(dir.join("pool.jsonl")).unwrap_or_default());
    let new = pool_items(new_lines);
    let mut changed: Vec<&(String, String)> =
        new.iter().filter(|(k, v)| old_items.get(*k).is_some_and(|o| o != *v)).map(|(k, _)| k).collect();
    if changed.is_empty() {
        let old = old?;
        // Another pool (or model, k, acquisition) is the other warning's.
        return (old.fit == id.fit && !old.pool.is_empty() && old.pool != id.pool).then(|| {
            format!(
                "{}: the pool reads otherwise than in the folder's last run (edited in place since?): where the judge reads what changed, it is asked (and paid) again for the pairs of those items, and {fits} gets a second history; give this run its own `name` to keep both",
                dir.join("pool.jsonl").display()
            )
        });
    }
    changed.sort();
    let several_pools = new.keys().any(|(p, _)| *p != changed[0].0);
    let shown: Vec<String> =
        changed.iter().take(8).map(|(p, i)| if several_pools { format!("{i} of {p}") } else { i.clone() }).collect();
    Some(format!(
        "{}: {} read otherwise than in the folder's last run (text or other fields): {}{}; where the judge reads what changed, it is asked (and paid) again for their pairs, and {fits} gets a second history; give this run its own `name` to keep both",
        dir.join("pool.jsonl").display(),
        crate::domain::fmt::count(changed.len(), "item"),
        shown.join(", "),
        if changed.len() > shown.len() { format!(", … ({} in all)", changed.len()) } else { String::new() }
    ))
}

/// A run folder opened for a run: its lock (held until the run ends), the signal handlers, the
/// books, and warnings for the user (another run's folder, open intents booked).
pub struct Folder {
    /// The folder's lock: one process per run folder.
    pub lock: RunLock,
    /// Ctrl-C and SIGTERM.
    pub interrupt: Interrupt,
    /// Verdicts, paid failures and intents.
    pub books: Books,
    /// For the user, printed before the run starts.
    pub warnings: Vec<String>,
}

fn io_err(path: &Path) -> impl Fn(std::io::Error) -> RunError + '_ {
    move |source| RunError::Io { path: path.to_owned(), source }
}

/// The queries of the provider batch jobs still open in `cfg`'s run folder (none without
/// batches.jsonl): the run books them from the jobs' output whatever its own dispatch.
///
/// # Errors
/// [`RunError::BatchOpen`] when a job is open and the config's judge cannot read batch jobs (a
/// mock, a panel): refused by the run and its dry run before anything is written;
/// [`RunError::BatchLogMissing`] when batches.jsonl is gone, or records fewer submitted queries
/// than the open job the folder's result.json counts; [`RunError::BatchLog`] when batches.jsonl
/// cannot be read.
pub fn open_batch_keys(cfg: &Config) -> Result<std::collections::HashSet<String>, RunError> {
    let path = cfg.run_dir.join(crate::store::batches::BATCHES_FILE);
    // batches.jsonl gone, emptied or cut short while the last result says a job was open
    // (hunts 58, 60: its queries were booked as possibly billed, or closed as never sent and
    // asked again in a new job, the paid results never read).
    if let Ok(text) = std::fs::read_to_string(cfg.run_dir.join("result.json"))
        && let Ok(r) = serde_json::from_str::<serde_json::Value>(&text)
        && let Some(queries) = r["in_open_batch_job"]["queries"].as_u64().filter(|&q| q > 0)
        && (crate::store::batches::BatchLog::submitted_open_queries(&cfg.run_dir)? as u64) < queries
    {
        let reserved_usd = r["in_open_batch_job"]["reserved_usd"].as_f64().unwrap_or(0.0);
        let what = if path.exists() { "does not record it (emptied or cut short?)" } else { "is missing" };
        return Err(RunError::BatchLogMissing { path, what, queries, reserved_usd });
    }
    let keep = open_keys(cfg)?;
    if !keep.is_empty() && !cfg.raw.reads_batch_jobs() {
        let path = cfg.run_dir.join(crate::store::batches::BATCHES_FILE);
        return Err(RunError::BatchOpen { path, queries: keep.len() });
    }
    Ok(keep)
}

/// The queries of the open batch rounds of `cfg`'s run folder, whatever its judge.
///
/// # Errors
/// [`RunError::BatchLog`] when batches.jsonl cannot be read.
pub fn open_keys(cfg: &Config) -> Result<std::collections::HashSet<String>, RunError> {
    crate::store::batches::BatchLog::open_keys(&cfg.run_dir).map_err(RunError::from)
}

/// `run --abandon-batch`: close every open round of the folder's batches.jsonl without reading
/// its job (an endpoint gone for good, docs/live.md, "Batch dispatch"). Each query still open
/// is booked as possibly billed at its reservation (what the job ran cannot be known), then the
/// round is recorded `ended: abandoned`, in that order, so a kill between the two leaves the
/// queries booked and the round closed by the next run. The job is neither read nor cancelled.
/// Returns the warning that says what was closed.
///
/// # Errors
/// [`RunError`]: the books or batches.jsonl cannot be read or written.
fn abandon_open_rounds(dir: &Path, books: &mut Books) -> Result<String, RunError> {
    let mut log = crate::store::batches::BatchLog::open(dir).map_err(RunError::from)?;
    if let Some(w) = log.take_warning() {
        tracing::warn!("{w}");
    }
    let rounds = log.open_rounds();
    if rounds.is_empty() {
        // Queries an earlier run left open (batches.jsonl lost, say) were booked by the books'
        // own warning before this one (hunt 60 F11: "nothing was abandoned" read as if not).
        return Ok("--abandon-batch: batches.jsonl records no open batch round, so the option closed none (requests an earlier run left open are booked as possibly billed as any warning above says)".into());
    }
    let open = books.open_intents();
    let mut said = Vec::new();
    for r in rounds {
        let (mut n, mut usd) = (0, 0.0);
        for i in open.iter().filter(|i| r.keys.contains(&i.key)) {
            books.record_possibly_billed(
                i.intent,
                i.reserved_usd,
                &format!(
                    "batch round {} abandoned (run --abandon-batch): its job's results were not read; booked as possibly billed at its reservation",
                    r.round
                ),
            )?;
            (n, usd) = (n + 1, usd + i.reserved_usd);
        }
        log.append(crate::store::batches::BatchLine {
            round: r.round,
            ended: Some(crate::store::batches::ABANDONED.into()),
            ..Default::default()
        })
        .map_err(RunError::from)?;
        said.push(format!(
            "round {}{}: {n} quer{} booked as possibly billed at their reservations (${usd:.6})",
            r.round,
            r.batch_id.as_deref().map(|b| format!(" (batch job {b})")).unwrap_or_default(),
            if n == 1 { "y" } else { "ies" }
        ));
    }
    Ok(format!(
        "--abandon-batch: closed without reading its job: {}; if the job still runs, the provider may bill them; their pairs may be asked again",
        said.join("; ")
    ))
}

/// Open the run folder: take its lock, install the signal handlers, open the books (open intents
/// of a run that ended early are booked as possibly billed), remove an earlier result.json, and
/// write run.json and the run's inputs (config.yaml, pool.jsonl, prompt/).
///
/// # Errors
/// [`RunError`]: the folder cannot be written, another process holds it, the handlers cannot be
/// installed, or the books cannot be read.
pub fn open_folder(cfg: &Config, judge: &dyn JudgeInfo, opts: &RunOptions) -> Result<Folder, RunError> {
    let dir = &cfg.run_dir;
    let (pool_lines, identity) = identity(cfg, judge)?;
    let replaced = replaced_warnings(cfg, &pool_lines, &identity);
    if let Some(m) = audit_folder(dir) {
        return Err(cannot_create(dir, &m));
    }
    crate::store::files::create_folder(dir).map_err(|m| cannot_create(dir, &m))?;
    // One process per run folder, from before anything is written until the run ends.
    let lock = RunLock::acquire(dir)?;
    let interrupt = if opts.handle_signals {
        Interrupt::install(Duration::from_secs_f64(cfg.raw.interrupt_grace_s)).map_err(RunError::Signals)?
    } else {
        Interrupt::never()
    };
    interrupt.set_resume_hint(crate::report::result::resume_hint(&cfg.path, &cfg.overrides));
    // Open intents of a run that ended early are booked as possibly billed here; a book that
    // cannot be read stops the run before anything of the earlier run is touched.
    // The queries of a provider batch job still open stay open: the run books them from the
    // job's output (super::batch), whatever its own dispatch; a judge that cannot read batch
    // jobs stops here, before anything is written.
    // `--abandon-batch` closes them instead, whatever this config's judge.
    let keep = if opts.abandon_batch { open_keys(cfg)? } else { open_batch_keys(cfg)? };
    let (mut books, mut warnings) = Books::open_keeping(dir, &crate::store::books::RUN_BOOKS, &keep)?;
    if opts.abandon_batch {
        warnings.push(abandon_open_rounds(dir, &mut books)?);
    }
    // An earlier run's result is not this run's: gone until this run writes its own.
    let result_path = dir.join("result.json");
    match std::fs::remove_file(&result_path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(io_err(&result_path)(e)),
        _ => {}
    }
    let id_path = dir.join("run.json");
    std::fs::write(&id_path, serde_json::to_string(&identity).expect("serialisable")).map_err(io_err(&id_path))?;
    // config.yaml, pool.jsonl and prompt/: the run folder can be re-read from anywhere.
    crate::config::run_inputs::write(cfg, dir, pool_lines).map_err(|(path, source)| RunError::Io { path, source })?;
    warnings.splice(0..0, replaced);
    Ok(Folder { lock, interrupt, books, warnings })
}

/// The pool lines the run reads, and the identity its run.json will hold.
fn identity(cfg: &Config, judge: &dyn JudgeInfo) -> Result<(String, RunIdentity), RunError> {
    let pool_lines =
        crate::config::run_inputs::pool_lines(cfg).map_err(|(path, source)| RunError::Io { path, source })?;
    let identity = RunIdentity {
        fit: config_hash(cfg),
        judge: (0..cfg.pool.n_items())
            .flat_map(|a| (0..cfg.pool.n_items()).map(move |b| (a, b)))
            .find(|&(a, b)| a != b)
            .map(|(a, b)| judge.cache_key(&cfg.pool, a, b))
            .unwrap_or_default(),
        pool: rng::sha256_hex(&pool_lines)[..16].to_string(),
    };
    Ok((pool_lines, identity))
}

/// What the folder's earlier run loses to this one: its result and config when another
/// configuration made it, and the items whose texts or qualities changed under it.
fn replaced_warnings(cfg: &Config, pool_lines: &str, identity: &RunIdentity) -> Vec<String> {
    let dir = &cfg.run_dir;
    let fits = if cfg.is_panel() { "panel_fits.jsonl" } else { "fits.jsonl" };
    let old = old_identity(dir);
    let other_run = other_run_warning(dir, old.as_ref(), identity, fits);
    let changed_items = changed_items_warning(dir, pool_lines, (old.as_ref(), identity), fits);
    other_run.into_iter().chain(changed_items).collect()
}

/// The warnings a run of `cfg` would give on opening its folder when another configuration's
/// run is there (what its dry run says too; nothing is written). `judge`: the run's judge, or a
/// panel's [`PanelIdentity`].
///
/// # Errors
/// [`RunError::Io`]: the pool file cannot be read.
pub fn replaced_run_warnings(cfg: &Config, judge: &dyn JudgeInfo) -> Result<Vec<String>, RunError> {
    let (pool_lines, identity) = identity(cfg, judge)?;
    Ok(replaced_warnings(cfg, &pool_lines, &identity))
}

/// A judge panel as its run folder's identity (run.json): every judge's key of a pair, in name
/// order, so another judge, a renamed or an edited one is told apart and an order of the list
/// is not.
pub struct PanelIdentity<'a>(pub Vec<&'a dyn JudgeInfo>);

impl JudgeInfo for PanelIdentity<'_> {
    fn describe(&self) -> String {
        self.0.iter().map(|m| m.describe()).collect::<Vec<_>>().join("; ")
    }
    fn cache_key(&self, pool: &crate::domain::pool::Pool, a: usize, b: usize) -> String {
        let mut keys: Vec<String> = self.0.iter().map(|m| m.cache_key(pool, a, b)).collect();
        keys.sort();
        keys.join(",")
    }
}

/// Why `dir` is an audit's folder (`topk-judge audit` writes audit.json and audit.md beside its
/// books), which a run must not write its config and verdicts into; `None` otherwise.
pub fn audit_folder(dir: &Path) -> Option<String> {
    ["audit.json", "audit.md"].into_iter().find(|f| dir.join(f).is_file()).map(|f| {
        format!(
            "the folder of an audit (it holds its {f}), not of a run: the run would write its config and verdicts into that audit's; give the run another `name` or `out_dir`"
        )
    })
}

/// The run folder `dir` cannot be made: `why` (`x.jsonl is a file, not a folder`), in the
/// words of the run and of its dry run.
pub fn cannot_create(dir: &Path, why: &str) -> RunError {
    RunError::Io {
        path: dir.to_owned(),
        source: std::io::Error::other(format!("cannot create the run folder (out_dir/name): {why}")),
    }
}

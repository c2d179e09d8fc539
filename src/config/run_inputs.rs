//! A run folder's own copies of its inputs, so that it can be re-read from any working
//! directory and after being copied elsewhere: `pool.jsonl` (the pool's line as written in the
//! pool file; the selected lines of a run over many pools), `prompt/<file>` (each live judge's prompt template) and `config.yaml` (the
//! resolved configuration, its paths relative to the run folder, or absolute for a gate's
//! labels file, which the user may still edit, and for a replay judge's recording).

use super::judge::JudgeConfig;
use super::run::{Config, PoolSource};
use std::path::{Path, PathBuf};

/// The header of a run folder's config.yaml.
const HEADER: &str = "# The configuration this run folder was made with (written by `topk-judge run`).\n# Paths are relative to this folder: pool.jsonl and prompt/ are copies of the inputs.\n";

/// The text of the run folder's `pool.jsonl` for `cfg` (without its final newline): the pool's
/// line as written in the pool file, the selected lines of a run over many pools, or a
/// synthetic pool's line.
///
/// # Errors
/// The pool file that could not be read.
pub fn pool_lines(cfg: &Config) -> Result<String, (PathBuf, std::io::Error)> {
    Ok(match cfg.raw.pool.source() {
        // A run over many pools: the selected lines, in selection order.
        PoolSource::Systems { file, ids } => match super::run::select_pools(file, ids) {
            Ok(v) => v.into_iter().map(|(_, l)| l).collect::<Vec<_>>().join("\n"),
            Err(e) => return Err((file.to_owned(), std::io::Error::other(e.to_string()))),
        },
        PoolSource::File { file, .. } => match crate::store::pool_file::read_pool_line(file, Some(&cfg.pool.pool_id)) {
            Ok((_, line)) => line,
            Err(e) => return Err((file.to_owned(), std::io::Error::other(e.to_string()))),
        },
        PoolSource::Synthetic(_) => {
            let p = &cfg.pool;
            serde_json::json!({"pool_id": p.pool_id, "task": p.task, "items": p.items}).to_string()
        }
    })
}

/// Write the copies (`pool_line`: [`pool_lines`]) and the resolved config into `dir`.
///
/// # Errors
/// The file that could not be read or written.
pub fn write(cfg: &Config, dir: &Path, pool_line: String) -> Result<(), (PathBuf, std::io::Error)> {
    let mut raw = cfg.raw.clone();
    let pool_path = dir.join("pool.jsonl");
    write_pool_copy(dir, &pool_path, pool_line + "\n")?;
    if raw.pool.synthetic.is_none() {
        raw.pool.file = PathBuf::from("pool.jsonl");
        if raw.pool.ids.is_none() {
            raw.pool.id = Some(cfg.pool.pool_id.clone());
        }
    }
    match &mut raw.judge {
        Some(j) => {
            copy_prompt(j, dir, None)?;
            absolute_recording(j);
        }
        // A panel: each judge's prompt in a folder of its own (two judges' prompts may share a
        // file name).
        None => {
            for m in &mut raw.judges {
                copy_prompt(&mut m.judge, dir, Some(&m.name))?;
                absolute_recording(&mut m.judge);
            }
        }
    }
    if let Some(g) = &mut raw.gate {
        if let Some(t) = &mut g.trusted {
            copy_prompt(t, dir, None)?;
            absolute_recording(t);
        }
        if let Some(l) = &mut g.labels {
            *l = absolute(l);
        }
    }
    raw.out_dir = Some(PathBuf::from(".."));
    // A base_url and an extra_body as the judge's description and cache keys hold them (no
    // credential, no key, no token from the environment), so the folder's copy finds the
    // verdicts it made.
    for j in raw
        .judge
        .iter_mut()
        .chain(raw.judges.iter_mut().map(|m| &mut m.judge))
        .chain(raw.gate.iter_mut().filter_map(|g| g.trusted.as_mut()))
    {
        if let JudgeConfig::Openai(o) = j {
            o.base_url = o.shown_base_url();
            o.extra_body = o.stored_extra_body();
        }
    }
    let path = dir.join("config.yaml");
    let yaml = redact_keys(&raw, crate::store::yaml::to_string(&raw).unwrap_or_default());
    std::fs::write(&path, format!("{HEADER}{yaml}")).map_err(|e| (path.clone(), e))
}

/// `yaml` without the API key of any live judge of `raw` (its `api_key_env`'s value): a key
/// pasted into another setting (`extra_body`, `headers`, a prompt variable) is written as
/// `redacted-api-key`, so an API key never reaches the disk.
fn redact_keys(raw: &super::run::RawConfig, yaml: String) -> String {
    let judges = raw
        .judge
        .iter()
        .chain(raw.judges.iter().map(|m| &m.judge))
        .chain(raw.gate.iter().filter_map(|g| g.trusted.as_ref()));
    judges.fold(yaml, |text, j| match j {
        JudgeConfig::Openai(o) => match crate::judge::openai::secret::Secret::from_env(o.api_key_env.trim()) {
            Some(key) => key.redact_as(&text, "redacted-api-key"),
            None => text,
        },
        _ => text,
    })
}

/// A pool copy at least this large (bytes) is kept once per output folder and hard-linked into
/// each run folder (see `write_pool_copy`).
pub const SHARED_POOL_MIN_BYTES: usize = 1 << 19;

/// Write the run folder's `pool.jsonl`. A large one (≥ [`SHARED_POOL_MIN_BYTES`], e.g. a
/// benchmark's 58 systems × 805 prompts, 52 MB) is written once to
/// `<out_dir>/.pools/<SHA-256 of its bytes>.jsonl` and hard-linked as `pool.jsonl`, so runs on one
/// pool share one copy (docs/outputs.md); where a hard link cannot be made, it is copied.
fn write_pool_copy(dir: &Path, pool_path: &Path, text: String) -> Result<(), (PathBuf, std::io::Error)> {
    let shared_dir = dir.parent().map(|p| p.join(".pools"));
    let Some(shared_dir) = shared_dir.filter(|_| text.len() >= SHARED_POOL_MIN_BYTES) else {
        return std::fs::write(pool_path, text).map_err(|e| (pool_path.to_owned(), e));
    };
    let shared = shared_dir.join(format!("{}.jsonl", crate::domain::rng::sha256_hex(&text)));
    let present = std::fs::metadata(&shared).is_ok_and(|m| m.len() == text.len() as u64);
    if !present {
        std::fs::create_dir_all(&shared_dir).map_err(|e| (shared_dir.clone(), e))?;
        let tmp = shared_dir.join(format!(".{}.tmp", std::process::id()));
        std::fs::write(&tmp, &text).map_err(|e| (tmp.clone(), e))?;
        std::fs::rename(&tmp, &shared).map_err(|e| (shared.clone(), e))?;
    }
    if crate::store::files::same_file(&shared, pool_path) {
        return Ok(());
    }
    let _ = std::fs::remove_file(pool_path);
    if std::fs::hard_link(&shared, pool_path).is_err() {
        std::fs::write(pool_path, text).map_err(|e| (pool_path.to_owned(), e))?;
    }
    Ok(())
}

/// Copy a live judge's prompt template into `<dir>/prompt/` and point the config at the copy.
fn copy_prompt(j: &mut JudgeConfig, dir: &Path, sub: Option<&str>) -> Result<(), (PathBuf, std::io::Error)> {
    let JudgeConfig::Openai(oc) = j else { return Ok(()) };
    let Some(file) = oc.prompt.file_name().map(PathBuf::from) else { return Ok(()) };
    let rel = match sub {
        Some(s) => Path::new("prompt").join(s),
        None => PathBuf::from("prompt"),
    };
    let folder = dir.join(&rel);
    std::fs::create_dir_all(&folder).map_err(|e| (folder.clone(), e))?;
    let to = folder.join(&file);
    if !crate::store::files::same_file(&oc.prompt, &to) {
        let text = std::fs::read(&oc.prompt).map_err(|e| (oc.prompt.clone(), e))?;
        std::fs::write(&to, text).map_err(|e| (to.clone(), e))?;
    }
    oc.prompt = rel.join(file);
    Ok(())
}

/// A replay judge's recording stays where it is (it can be large): its path becomes absolute.
fn absolute_recording(j: &mut JudgeConfig) {
    if let JudgeConfig::Replay(r) = j {
        r.file = absolute(&r.file);
    }
}

/// `p` as an absolute path (against the working directory), lexically normalised.
pub fn absolute(p: &Path) -> PathBuf {
    if p.is_absolute() {
        return super::normalize(p);
    }
    match std::env::current_dir() {
        Ok(cwd) => super::normalize(&cwd.join(p)),
        Err(_) => p.to_path_buf(),
    }
}

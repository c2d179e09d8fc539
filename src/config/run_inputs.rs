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

/// Write the copies and the resolved config into `dir`.
///
/// # Errors
/// The file that could not be read or written.
pub fn write(cfg: &Config, dir: &Path) -> Result<(), (PathBuf, std::io::Error)> {
    let mut raw = cfg.raw.clone();
    let pool_line = match cfg.raw.pool.source() {
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
    };
    let pool_path = dir.join("pool.jsonl");
    std::fs::write(&pool_path, pool_line + "\n").map_err(|e| (pool_path.clone(), e))?;
    if raw.pool.synthetic.is_none() {
        raw.pool.file = PathBuf::from("pool.jsonl");
        if raw.pool.ids.is_none() {
            raw.pool.id = Some(cfg.pool.pool_id.clone());
        }
    }
    copy_prompt(&mut raw.judge, dir)?;
    absolute_recording(&mut raw.judge);
    if let Some(g) = &mut raw.gate {
        if let Some(t) = &mut g.trusted {
            copy_prompt(t, dir)?;
            absolute_recording(t);
        }
        if let Some(l) = &mut g.labels {
            *l = absolute(l);
        }
    }
    raw.out_dir = Some(PathBuf::from(".."));
    let path = dir.join("config.yaml");
    let yaml = crate::store::yaml::to_string(&raw).unwrap_or_default();
    std::fs::write(&path, format!("{HEADER}{yaml}")).map_err(|e| (path.clone(), e))
}

/// Copy a live judge's prompt template into `<dir>/prompt/` and point the config at the copy.
fn copy_prompt(j: &mut JudgeConfig, dir: &Path) -> Result<(), (PathBuf, std::io::Error)> {
    let JudgeConfig::Openai(oc) = j else { return Ok(()) };
    let Some(file) = oc.prompt.file_name().map(PathBuf::from) else { return Ok(()) };
    let folder = dir.join("prompt");
    std::fs::create_dir_all(&folder).map_err(|e| (folder.clone(), e))?;
    let to = folder.join(&file);
    if !same_file(&oc.prompt, &to) {
        let text = std::fs::read(&oc.prompt).map_err(|e| (oc.prompt.clone(), e))?;
        std::fs::write(&to, text).map_err(|e| (to.clone(), e))?;
    }
    oc.prompt = Path::new("prompt").join(file);
    Ok(())
}

/// A replay judge's recording stays where it is (it can be large): its path becomes absolute.
fn absolute_recording(j: &mut JudgeConfig) {
    if let JudgeConfig::Replay(r) = j {
        r.file = absolute(&r.file);
    }
}

fn same_file(a: &Path, b: &Path) -> bool {
    matches!((a.canonicalize(), b.canonicalize()), (Ok(x), Ok(y)) if x == y)
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

//! A run's JSON outputs given where JSON Lines are expected (its result.json for its verdicts)
//! are named as such, with the file to give instead. Bytes as text (byte-order marks,
//! encodings, shapes that are not JSON Lines) are [`crate::domain::text`].

use std::path::Path;

/// The JSON documents a run folder holds (not configs, not JSON Lines).
pub const RUN_OUTPUTS: [&str; 6] =
    ["result.json", "gate.json", "audit.json", "fit.json", "profile.json", "compare.json"];

/// The file name of `path` when it is one of [`RUN_OUTPUTS`], and the run folder holding it
/// (`.` for a bare file name).
pub fn run_output_name(path: &Path) -> Option<(&str, &Path)> {
    let name = path.file_name()?.to_str().filter(|n| RUN_OUTPUTS.contains(n))?;
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    Some((name, dir))
}

/// The run folder a command that takes a run reads: a run's result.json stands for its folder;
/// any other path is itself.
pub fn run_folder_of(path: &Path) -> &Path {
    match run_output_name(path) {
        Some(("result.json", dir)) if path.is_file() => dir,
        _ => path,
    }
}

/// When `path` is a file a run folder holds that is one JSON document (result.json, gate.json,
/// …), what to give instead of it where JSON Lines are expected.
pub fn run_output_instead(path: &Path) -> Option<String> {
    let (name, dir) = run_output_name(path)?;
    Some({
        format!(
            "this is a run's {name} (one JSON document), not JSON Lines; give what the run folder {} holds: its pool.jsonl or verdicts.jsonl (commands that take a run take the folder itself)",
            dir.display()
        )
    })
}

//! Input files as other tools write them: what cannot be read as JSON Lines (a JSON array, a
//! pretty-printed object, CSV, a run's JSON output given for its verdicts) is named as such.
//! Bytes as text (byte-order marks, encodings) are [`crate::domain::text`].

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

/// When a JSON Lines line is clearly not one JSON object, what it is instead: the start of a
/// JSON array (`[`), a pretty-printed object (`{` alone, or a line starting with a key), or a
/// CSV/TSV header.
pub fn not_json_lines(line: &str) -> Option<String> {
    let t = line.trim();
    if t.starts_with('[') {
        return Some(
            "the file looks like one JSON array; expected JSON Lines: one JSON object per line, no enclosing [ ]"
                .into(),
        );
    }
    if t == "{" || (t.starts_with('"') && t.contains("\":") && !t.starts_with('{')) {
        return Some(
            "the file looks like pretty-printed JSON; expected JSON Lines: each object on one line (e.g. `jq -c .`)"
                .into(),
        );
    }
    if !t.starts_with('{') && (t.contains(',') || t.contains('\t')) && !t.contains('{') {
        return Some("the line is not JSON (a CSV or TSV file?); expected JSON Lines: one JSON object per line".into());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes() {
        assert!(not_json_lines("[{\"a\": 1},").unwrap().contains("JSON array"));
        assert!(not_json_lines("{").unwrap().contains("pretty-printed"));
        assert!(not_json_lines("  \"pool_id\": \"p1\",").unwrap().contains("pretty-printed"));
        assert!(not_json_lines("a,b,y").unwrap().contains("CSV"));
        assert!(not_json_lines("{\"a\": \"x\", \"b\": \"y\", \"y\": 1}").is_none());
    }
}

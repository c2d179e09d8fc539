//! Files as paths: whether two paths are one file, whether an output file may be written
//! before a command does its work, and output folders created with a plain reason.

use std::path::Path;

/// Whether two paths are one file: the same inode (a hard link, a symlink or another spelling
/// of the path) on Unix, the same canonical path elsewhere. `false` when either does not exist.
pub fn same_file(a: &Path, b: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        matches!((std::fs::metadata(a), std::fs::metadata(b)), (Ok(x), Ok(y)) if x.dev() == y.dev() && x.ino() == y.ino())
    }
    #[cfg(not(unix))]
    {
        matches!((a.canonicalize(), b.canonicalize()), (Ok(x), Ok(y)) if x == y)
    }
}

/// Create the folder `dir` and its parents. When that fails, the reason in words: a part of the
/// path that is a file (`README.md is a file, not a folder`), or the system's words.
///
/// # Errors
/// What is wrong, in words (the caller names the setting or flag and the folder).
pub fn create_folder(dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| folder_cannot_be_made(dir).unwrap_or_else(|| e.to_string()))
}

/// Why `dir` cannot be made, when one of its ancestors is a file (`x.jsonl is a file, not a
/// folder`); `None` otherwise. Checks only: nothing is created (a dry run asks this).
pub fn folder_cannot_be_made(dir: &Path) -> Option<String> {
    dir.ancestors()
        .find(|a| !a.as_os_str().is_empty() && a.exists() && !a.is_dir())
        .map(|file| format!("{} is a file, not a folder", file.display()))
}

/// The files a run folder keeps (its books, its results, its inputs as run): no other command
/// writes one of them there.
pub const RUN_FOLDER_FILES: [&str; 16] = [
    "config.yaml",
    "pool.jsonl",
    "verdicts.jsonl",
    "intents.jsonl",
    "failed.jsonl",
    "batches.jsonl",
    "fits.jsonl",
    "panel_fits.jsonl",
    "fingerprint.jsonl",
    "result.json",
    "run.json",
    "gate.json",
    "audit.json",
    "rankings.csv",
    "judges.csv",
    ".lock",
];

/// Whether a file named `name` in a run folder is the run's own: one of [`RUN_FOLDER_FILES`], the
/// books of its fingerprint checks or gate (`fingerprint_*.jsonl`, `trusted_*.jsonl`), or what
/// `report` writes beside them (report.md, report.html and its plots, `*.svg`).
pub fn is_run_folder_file(name: &str) -> bool {
    RUN_FOLDER_FILES.contains(&name)
        || ((name.starts_with("fingerprint_") || name.starts_with("trusted_")) && name.ends_with(".jsonl"))
        || ["report.md", "report.html", "judge_namespaces.json"].contains(&name)
        || name.ends_with(".svg")
}

/// Remove the files of `dir` whose names `earlier` picks (what an earlier report, comparison or
/// sweep wrote there and this one does not), leaving every other file; a missing `dir` has none.
///
/// # Errors
/// The file that cannot be removed, with the error.
pub fn remove_earlier(dir: &Path, earlier: impl Fn(&str) -> bool) -> Result<(), (std::path::PathBuf, std::io::Error)> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Ok(()) };
    for e in entries.flatten() {
        if earlier(&e.file_name().to_string_lossy()) && e.file_type().is_ok_and(|t| t.is_file()) {
            std::fs::remove_file(e.path()).map_err(|err| (e.path(), err))?;
        }
    }
    Ok(())
}

/// Whether `dir` holds a run (its verdicts, intents or result).
pub fn is_run_folder(dir: &Path) -> bool {
    ["verdicts.jsonl", "intents.jsonl", "result.json"].iter().any(|f| dir.join(f).is_file())
}

/// Check, before any work, that `out` can be written as the output file of a command whose
/// inputs are `inputs`: it is not a folder, its folder exists, it is none of the input files and
/// not inside an input folder such as a run folder (writing would destroy one), it is not one of
/// the files another run folder keeps ([`RUN_FOLDER_FILES`]), and it opens for writing. An
/// existing file is left as it is; one created by the check is removed again.
///
/// # Errors
/// What is wrong, in words (the caller names the flag and the file).
pub fn check_output_file(out: &Path, inputs: &[&Path]) -> Result<(), String> {
    if out.is_dir() {
        return Err("it is a folder; give a file name".into());
    }
    let parent = out.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    if !parent.is_dir() {
        return Err(format!("the folder {} does not exist", parent.display()));
    }
    if let Some(input) = inputs.iter().find(|i| same_file(out, i)) {
        return Err(format!("it is the input file {}: writing would overwrite it; give another file", input.display()));
    }
    if let Ok(at) = parent.canonicalize()
        && let Some(folder) =
            inputs.iter().filter(|i| i.is_dir()).find(|i| i.canonicalize().is_ok_and(|d| at.starts_with(d)))
    {
        return Err(format!(
            "it is inside the input folder {}, whose files the command reads (a run folder's verdicts, pool, config); write it elsewhere",
            folder.display()
        ));
    }
    if is_run_folder(parent)
        && let Some(name) = out.file_name().and_then(|n| n.to_str()).filter(|n| is_run_folder_file(n))
    {
        return Err(format!(
            "it is the {name} of the run folder {}: writing would overwrite that run's own file; give another file",
            parent.display()
        ));
    }
    let existed = out.exists();
    std::fs::OpenOptions::new().append(true).create(true).open(out).map_err(|e| format!("cannot be written: {e}"))?;
    if !existed {
        let _ = std::fs::remove_file(out);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_folders_own_files_are_not_an_output() {
        let d = tempfile::tempdir().unwrap();
        let run = d.path().join("runs/cheap");
        std::fs::create_dir_all(&run).unwrap();
        std::fs::write(run.join("verdicts.jsonl"), "{}\n").unwrap();
        for name in
            ["verdicts.jsonl", "result.json", "config.yaml", "report.md", "theta.svg", "fingerprint_verdicts.jsonl"]
        {
            let e = check_output_file(&run.join(name), &[]).unwrap_err();
            assert_eq!(
                e,
                format!(
                    "it is the {name} of the run folder {}: writing would overwrite that run's own file; give another file",
                    run.display()
                )
            );
        }
        assert_eq!(std::fs::read_to_string(run.join("verdicts.jsonl")).unwrap(), "{}\n", "left as it was");
        // Another name in a run folder, and the same names outside one, are fine.
        assert_eq!(check_output_file(&run.join("fit-of-other.json"), &[]), Ok(()));
        assert_eq!(check_output_file(&d.path().join("result.json"), &[]), Ok(()));
        assert!(!d.path().join("result.json").exists(), "the check leaves no file");
    }

    #[test]
    fn a_folder_under_a_file_is_named_for_the_file() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("notes.md");
        std::fs::write(&f, "x").unwrap();
        assert_eq!(create_folder(&f.join("runs/a")), Err(format!("{} is a file, not a folder", f.display())));
        assert_eq!(create_folder(&f), Err(format!("{} is a file, not a folder", f.display())));
        assert_eq!(create_folder(&d.path().join("a/b")), Ok(()));
        assert!(d.path().join("a/b").is_dir());
    }

    #[test]
    fn an_output_file_that_is_an_input_or_has_no_folder_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("v.jsonl");
        std::fs::write(&input, "x\n").unwrap();
        // Another spelling of the same path.
        let again = dir.path().join(".").join("v.jsonl");
        let e = check_output_file(&again, &[&input]).unwrap_err();
        assert!(e.starts_with("it is the input file "), "{e}");
        assert_eq!(std::fs::read_to_string(&input).unwrap(), "x\n", "left as it was");
        let e = check_output_file(&dir.path().join("no/fit.json"), &[&input]).unwrap_err();
        assert!(e.ends_with("/no does not exist"), "{e}");
        assert_eq!(check_output_file(dir.path(), &[]).unwrap_err(), "it is a folder; give a file name");
        let run = dir.path().join("run");
        std::fs::create_dir_all(run.join("prompt")).unwrap();
        for inside in [run.join("verdicts.jsonl"), run.join("prompt/x.txt"), run.join("new.json")] {
            let e = check_output_file(&inside, &[&run]).unwrap_err();
            assert!(e.starts_with("it is inside the input folder "), "{e}");
        }
        let fresh = dir.path().join("fit.json");
        check_output_file(&fresh, &[&input]).unwrap();
        assert!(!fresh.exists(), "the check leaves no file behind");
    }
}

//! One module per subcommand: each reads its inputs (config, pool, run folder), calls the core
//! ([`crate::run`], [`crate::model`], [`crate::analysis`], [`crate::sweep`]) and writes its outputs.
//! Each file declares its arguments (`XArgs`, clap) and `fn run(args, …) -> Result<ExitCode, XError>`;
//! `main.rs` parses the command line, builds the one tokio runtime and dispatches here.

pub mod audit;
pub mod check;
pub mod compare;
pub mod dry_run;
pub mod fit;
pub mod gate;
pub mod import;
pub mod profile;
pub mod report;
pub mod run;
pub mod run_folder;
pub mod simulate;
pub mod values;

/// Print to stdout, ignoring a closed pipe (`topk-judge … | head`).
pub fn print_out(text: &str) {
    use std::io::Write;
    let _ = std::io::stdout().write_all(crate::domain::fmt::printable(text).as_bytes());
}

/// Write `value` as pretty JSON to `path` (an `--out FILE`), then say `wrote PATH` on stdout.
///
/// # Errors
/// The write's I/O error (nothing is said then).
pub fn write_json_out<T: serde::Serialize>(path: &std::path::Path, value: &T) -> std::io::Result<()> {
    let text = serde_json::to_string_pretty(value).expect("serialisable");
    std::fs::write(path, text + "\n")?;
    print_out(&format!("wrote {}\n", path.display()));
    Ok(())
}

/// A warning line on stderr, ignoring a closed stderr (a dropped ssh session), where
/// `eprintln!` would panic.
pub fn warn_line(w: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "warning: {}", crate::domain::fmt::printable(w));
}

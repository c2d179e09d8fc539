//! Command line (clap derive): [`Cli`] and one [`Command`] per subcommand, whose arguments are
//! declared next to the command in `commands/` (`RunArgs` in `commands/run.rs`, …); shell
//! completions (clap_complete) and the man page (clap_mangen) generated from it: the only
//! imports of those two crates.

use crate::commands::{audit, check, compare, fit, gate, import, profile, report, run, simulate};
use clap::{CommandFactory, Parser, Subcommand};

/// topk-judge: find the k best of N candidate answers with an LLM judge, fast, cheap and honest
/// about position and verbosity bias.
#[derive(Debug, Parser)]
#[command(name = "topk-judge", version, about, after_help = EXIT_CODES)]
pub struct Cli {
    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

/// The exit codes, shown under `--help` and in the man page.
pub const EXIT_CODES: &str = "Exit codes:
  0    success
  1    an error (the message says what and where), or a check failed: `audit --fail-on` passed a
       threshold, `run --fail-on-undecided` found the top-k not certified; also a run whose
       provider billed above max_tokens past budget.max_usd (its result is written)
  2    the command line could not be read (unknown option, a value not of the option's type);
       a config value the checks refuse is 1, whether written in the file or given by --set or
       a shorthand such as --max-usd (`--max-usd abc` too: it is read as the config's value)
  130  interrupted (Ctrl-C, SIGTERM, SIGHUP): what was paid for is stored; re-running resumes";

/// The subcommands of `topk-judge`: run, inspect and compare top-k rankings.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run Algorithm 1 (active top-k acquisition) as configured; re-running resumes.
    Run(run::RunArgs),
    /// Profile log-likelihood of each bias coefficient (docs/model.md §5): is c identified or prior-selected?
    Profile(profile::ProfileArgs),
    /// Trusted-anchor gate (docs/model.md §5): should the bias-corrected ranking be reported?
    // The gate has no comparison budget (it refuses --max-comparisons, saying why): not listed.
    #[command(mut_arg("max_comparisons", |a| a.hide(true)))]
    Gate(gate::GateArgs),
    /// Audit a judge for position and verbosity bias (swap test, probes, order averaging) on a
    /// pairs file or on probes built from a pool; verdicts are cached, so re-running is free.
    Audit(audit::AuditArgs),
    /// Fit the model to verdicts collected elsewhere (or a run folder's) and print the ranking.
    Fit(fit::FitArgs),
    /// Check a leaderboard's judgments: per style covariate, is its bias identified (profile, nats),
    /// what does the trusted-anchor gate decide, and does the corrected top-k differ from the raw one?
    Check(check::CheckArgs),
    /// Run a simulation sweep (docs/model.md §7): synthetic pools × strategies × models × budgets, on all
    /// cores; writes rows.csv, summary.md/json and SVG plots.
    Simulate(simulate::SimulateArgs),
    /// Build a pool file for ranking systems across many prompts (docs/systems.md) from model
    /// outputs: AlpacaEval JSON, Arena-Hard or MT-Bench answer JSON Lines, or CSV/TSV
    /// (prompt_id,prompt,system,text); or, with --judgments, a recording of published judge
    /// verdicts (docs/replay.md) to replay, check or fit.
    Import(import::ImportArgs),
    /// Compare runs of the same pool (e.g. a cheap and a frontier judge): spend, comparisons,
    /// recall@k, top-k agreement, position-flip rates, and recall against spend; or runs of
    /// several judges on several pools (e.g. replayed recordings): cost against recall per judge.
    Compare(compare::CompareArgs),
    /// Write report.md and a self-contained report.html for a run.
    Report(report::ReportArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell) to stdout.
    Completions(CompletionsArgs),
    /// Print the man page (roff) to stdout: `topk-judge man > topk-judge.1`; with --dir DIR, write
    /// it and one page per subcommand (topk-judge-run.1, …) into DIR.
    Man(ManArgs),
}

/// `topk-judge completions SHELL`.
#[derive(Debug, clap::Args)]
pub struct CompletionsArgs {
    /// The shell: bash, zsh, fish, elvish or powershell.
    pub shell: clap_complete::Shell,
}

/// `topk-judge man`.
#[derive(Debug, clap::Args)]
pub struct ManArgs {
    /// Write topk-judge.1 and one page per subcommand (topk-judge-run.1, …: the pages the top
    /// page refers to, with each subcommand's options) into this folder, created if missing.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<std::path::PathBuf>,
}

/// Write the completion script for `shell` to stdout (e.g. `topk-judge completions bash >
/// ~/.local/share/bash-completion/completions/topk-judge`).
pub fn completions(args: &CompletionsArgs) -> std::process::ExitCode {
    let mut cmd = Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "topk-judge", &mut script);
    let mut script = String::from_utf8_lossy(&script).into_owned();
    if args.shell == clap_complete::Shell::Bash {
        // clap_complete names the bash cases of a hyphenated binary `topk__subcmd__judge__…`
        // but sets `cmd="topk__judge__…"`, so nothing after the subcommand would complete
        // (clap-rs/clap#6421): name the cases as the loop does.
        script = script.replace("topk__subcmd__judge", "topk__judge");
    }
    use std::io::Write;
    let _ = std::io::stdout().write_all(script.as_bytes());
    std::process::ExitCode::SUCCESS
}

/// The man page (roff) of `topk-judge`: its synopsis, options, subcommands and exit codes.
///
/// # Errors
/// Writing to `out`.
pub fn man_page(out: &mut dyn std::io::Write) -> std::io::Result<()> {
    // As `man --dir` writes it: no `help` subcommand, which has no page of its own.
    clap_mangen::Man::new(Cli::command().disable_help_subcommand(true)).render(out)
}

/// Write the man page to stdout (e.g. `topk-judge man > topk-judge.1; man ./topk-judge.1`), or
/// with `--dir` every page into a folder.
///
/// # Errors
/// Writing to stdout (a closed pipe), or creating the folder or a page in it.
pub fn man(args: &ManArgs) -> std::io::Result<std::process::ExitCode> {
    if let Some(dir) = &args.dir {
        let named = |e: std::io::Error| std::io::Error::new(e.kind(), format!("--dir {}: {e}", dir.display()));
        crate::store::files::create_folder(dir)
            .map_err(|why| std::io::Error::other(format!("--dir {}: {why}", dir.display())))?;
        clap_mangen::generate_to(Cli::command(), dir).map_err(named)?;
        let pages = Cli::command().get_subcommands().filter(|s| s.get_name() != "help").count() + 1;
        println!("wrote {pages} man pages (topk-judge.1, topk-judge-run.1, …) into {}", dir.display());
        return Ok(std::process::ExitCode::SUCCESS);
    }
    match man_page(&mut std::io::stdout()) {
        // `topk-judge man | head`: the reader has what it wanted.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
        r => r?,
    }
    Ok(std::process::ExitCode::SUCCESS)
}

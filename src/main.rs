//! The `topk-judge` binary: parse the command line, start tracing and the one tokio runtime,
//! dispatch to the command ([`topk_judge::commands`]), print the error chain and exit non-zero
//! on failure. The process's global allocator is chosen here.

use anyhow::{Context, Result};
use clap::Parser;
use std::process::ExitCode;
use topk_judge::cli::{Cli, Command};
use topk_judge::commands;

/// mimalloc instead of the system allocator. A refit at N = 1000 allocates about 30 MB in
/// buffers of 2–8 MB (the dense factor and its inverse W = L⁻¹, the membership draws). glibc's
/// malloc hands blocks that large back to the kernel when they are freed, so every refit faulted
/// in and zeroed its pages again (about 10 % of a refit's CPU time in the `refit_step` bench,
/// docs/benchmarks.md); mimalloc keeps them for the next refit. Built with its `no_thp` feature
/// (Cargo.toml): without transparent huge pages, each thread's first allocations no longer fault
/// in whole 2 MB pages, which had stalled the first wave of a live run's replies.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    use std::io::IsTerminal;
    // Colour codes only on a terminal: a redirected stderr (a log file, CI) gets plain text.
    // Warnings read as the tool's other warnings (`warning: …`); RUST_LOG=debug adds the
    // timestamped, module-named lines of a log.
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into());
    let verbose = filter.max_level_hint().is_some_and(|l| l > tracing::level_filters::LevelFilter::INFO);
    let fmt = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        // A stderr that is gone (a closed pipe, a dropped ssh session) loses the warning, not
        // the run: the layer would report its failed write with `eprintln!`, which panics
        // (hunt 53: a run whose `2>&1 | head -1` closed stderr panicked on its second warning).
        .log_internal_errors(false);
    if verbose {
        fmt.init()
    } else {
        fmt.event_format(PlainLines).init()
    }
    let _ = rustls::crypto::ring::default_provider().install_default();
    // clap quotes a refused argument whole (`invalid value 'judge.openai.model=sk-…'`): its
    // message is scrubbed of keys like every other.
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let said = e.render().to_string();
            let scrubbed = scrubbed(&said);
            if scrubbed == said {
                e.exit()
            }
            use std::io::Write;
            let _ = write!(std::io::stderr(), "{scrubbed}");
            return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2));
        }
    };
    match tokio::runtime::Runtime::new().context("starting the tokio runtime").and_then(|rt| dispatch(cli.command, &rt))
    {
        Ok(code) => code,
        Err(e) => {
            use std::io::Write;
            // The context (the command and its input) and the error on one line, as the other
            // errors read (`error: compare: runs/x/result.json: not found …`); deeper causes below.
            // A cause already said by the messages above it is not repeated.
            let mut said = e.to_string();
            let mut lines = vec![format!("error: {said}")];
            for c in e.chain().skip(1).map(|c| c.to_string()) {
                if said.contains(c.as_str()) {
                    continue;
                }
                if lines.len() == 1 {
                    lines[0] = format!("{}: {c}", lines[0]);
                } else {
                    lines.push(format!("  caused by: {c}"));
                }
                said.push_str(&c);
            }
            let text = topk_judge::domain::fmt::without_os_error_numbers(&lines.join("\n"));
            let text = scrubbed(&text);
            let _ = writeln!(std::io::stderr(), "{}", topk_judge::domain::fmt::printable(&text));
            ExitCode::FAILURE
        }
    }
}

/// `text` as it may be printed ([`topk_judge::judge::openai::secret::scrub`]), and without the
/// keys of the judges of any config this invocation names (the variables their `api_key_env`
/// name, whatever they are called and however short: hunt 57), read once.
fn scrubbed(text: &str) -> String {
    static KEYS: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    let keys = KEYS.get_or_init(|| {
        std::env::args_os()
            .skip(1)
            .map(std::path::PathBuf::from)
            .map(|p| if p.is_dir() { p.join("config.yaml") } else { p })
            .filter(|p| p.is_file() && p.metadata().is_ok_and(|m| m.len() < 4 << 20))
            .filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml" || e == "json"))
            .filter_map(|p| std::fs::read_to_string(p).ok())
            .filter_map(|t| topk_judge::store::yaml::from_str::<serde_json::Value>(&t).ok())
            .flat_map(|doc| topk_judge::judge::openai::secret::keys_named_in(&doc))
            .collect()
    });
    let text = topk_judge::judge::openai::secret::scrub(text);
    if keys.is_empty() { text } else { topk_judge::judge::openai::secret::redact_each(&text, keys) }
}

/// Run the command; the context names the command and its input where its own error does not.
fn dispatch(command: Command, rt: &tokio::runtime::Runtime) -> Result<ExitCode> {
    Ok(match command {
        Command::Run(a) => commands::run::run(&a, rt)?,
        Command::Profile(a) => {
            commands::profile::run(&a).with_context(|| format!("profile {}", a.run_or_config.display()))?
        }
        Command::Gate(a) => {
            commands::gate::run(&a, rt).with_context(|| format!("gate {}", a.run_or_config.display()))?
        }
        Command::Audit(a) => commands::audit::run(&a, rt)?,
        Command::Fit(a) => commands::fit::run(&a)?,
        Command::Check(a) => commands::check::run(&a)
            .with_context(|| format!("check {} {}", a.pool_file.display(), a.judgments.display()))?,
        Command::Simulate(a) => {
            commands::simulate::run(&a).with_context(|| format!("simulate {}", a.sweep.display()))?
        }
        Command::Import(a) => commands::import::run(&a).context("import")?,
        Command::Compare(a) => commands::compare::run(&a).context("compare")?,
        Command::Report(a) => commands::report::run(&a).with_context(|| format!("report {}", a.run.display()))?,
        Command::Completions(a) => topk_judge::cli::completions(&a),
        Command::Man(a) => topk_judge::cli::man(&a).context("writing the man page")?,
    })
}

/// A log event as one line in the words of the tool's other messages: `warning: …`,
/// `error: …`, `info: …`.
struct PlainLines;

impl<S, N> tracing_subscriber::fmt::FormatEvent<S, N> for PlainLines
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    N: for<'a> tracing_subscriber::fmt::FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &tracing_subscriber::fmt::FmtContext<'_, S, N>,
        mut writer: tracing_subscriber::fmt::format::Writer<'_>,
        event: &tracing::Event<'_>,
    ) -> std::fmt::Result {
        let level = match *event.metadata().level() {
            tracing::Level::ERROR => "error",
            tracing::Level::WARN => "warning",
            tracing::Level::INFO => "info",
            tracing::Level::DEBUG => "debug",
            tracing::Level::TRACE => "trace",
        };
        // Control characters (from a server's reply quoted in the message) escaped.
        let mut fields = String::new();
        ctx.field_format().format_fields(tracing_subscriber::fmt::format::Writer::new(&mut fields), event)?;
        let fields = scrubbed(&fields);
        writeln!(writer, "{level}: {}", topk_judge::domain::fmt::printable(&fields))
    }
}

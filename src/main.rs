//! The `topk-judge` binary: parse the CLI, start tracing, dispatch to [`topk_judge::commands`],
//! print the error chain and exit non-zero on failure.

use anyhow::{Context, Result};
use clap::Parser;
use topk_judge::cli::{Cli, Command};
use topk_judge::commands;

fn main() {
    use std::io::IsTerminal;
    // Colour codes only on a terminal: a redirected stderr (a log file, CI) gets plain text.
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()))
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
    let _ = rustls::crypto::ring::default_provider().install_default();
    let cli = Cli::parse();
    if let Err(e) = real_main(cli) {
        let top = e.to_string();
        eprintln!("error: {top}");
        for cause in e.chain().skip(1) {
            let c = cause.to_string();
            if !top.contains(&c) {
                eprintln!("  caused by: {c}");
            }
        }
        std::process::exit(1);
    }
}

/// Print to stdout, ignoring a closed pipe (`topk-judge … | head`).
fn print_out(text: &str) {
    use std::io::Write;
    let _ = std::io::stdout().write_all(text.as_bytes());
}

fn real_main(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Run { config, quiet, gate, dry_run } => {
            if dry_run {
                print_out(&commands::run::dry_run_text(&config)?);
                return Ok(());
            }
            let (cfg, judge, rt) = commands::run::prepare(&config)?;
            let (gated, stop) = commands::run::run_with_gate(&cfg, judge, &rt, quiet, gate.as_deref())
                .with_context(|| format!("run {}", config.display()))?;
            let text = gated.with_context(|| match gate.as_deref() {
                Some(g) => format!("--gate {}", g.display()),
                None => format!("the gate: section of {}", config.display()),
            })?;
            print_out(&text);
            if stop == topk_judge::report::schema::StopReason::Interrupted {
                std::process::exit(topk_judge::run::interrupt::EXIT_INTERRUPTED);
            }
            Ok(())
        }
        Command::Profile { run_or_config } => {
            let (_, text) = commands::profile::profile_command(&run_or_config)
                .with_context(|| format!("profile {}", run_or_config.display()))?;
            print_out(&text);
            Ok(())
        }
        Command::Gate { config } => {
            let rt = tokio::runtime::Runtime::new().context("starting the tokio runtime")?;
            let (_, text) = rt
                .block_on(commands::gate::gate_command(&config))
                .with_context(|| format!("gate {}", config.display()))?;
            print_out(&text);
            Ok(())
        }
        Command::Audit { config, quiet } => {
            let cfg = topk_judge::config::audit::AuditConfig::load(&config)?;
            if cfg.recording.is_some() {
                commands::audit::run_recorded_audit(&cfg, true)
                    .with_context(|| format!("audit {}", config.display()))?;
                return Ok(());
            }
            let judge = topk_judge::config::judge::make_judge(&cfg.raw.judge).map_err(anyhow::Error::msg)?;
            let rt = tokio::runtime::Runtime::new().context("starting the tokio runtime")?;
            rt.block_on(commands::audit::run_audit(&cfg, judge, true, !quiet))
                .with_context(|| format!("audit {}", config.display()))?;
            Ok(())
        }
        Command::Simulate { sweep, threads, out, quiet } => {
            let start = std::time::Instant::now();
            let (dir, md, rows) = commands::simulate::simulate_command(&sweep, threads, out.as_deref(), !quiet)
                .with_context(|| format!("simulate {}", sweep.display()))?;
            print_out(&format!(
                "{md}\n{rows} runs in {:.1} s; outputs: {}\n",
                start.elapsed().as_secs_f64(),
                dir.display()
            ));
            Ok(())
        }
        Command::Import { format, inputs, questions, out } => {
            let s = commands::import::import(format, &inputs, questions.as_deref(), &out).context("import")?;
            print_out(&s.text(&out));
            Ok(())
        }
        Command::Compare { runs, reference, reference_judge, prices, out } => {
            let out = out.unwrap_or_else(|| std::path::PathBuf::from("."));
            let opts = commands::compare::CompareOptions {
                reference: reference.as_deref(),
                reference_judge: reference_judge.as_deref(),
                prices: prices.as_deref(),
            };
            let text = commands::compare::compare_command(&runs, opts, &out).context("compare")?;
            print_out(&format!("{text}\n"));
            Ok(())
        }
        Command::Report { run, out } => {
            let files = commands::report::report_command(&run, out.as_deref())
                .with_context(|| format!("report {}", run.display()))?;
            for f in files {
                print_out(&format!("wrote {}\n", f.display()));
            }
            Ok(())
        }
        Command::Fit {
            pool_file,
            verdicts_file,
            pool_id,
            judge,
            model,
            k,
            report_ranking,
            covariates,
            lambda_theta,
            lambda_b,
            lambda_kappa,
            strong_preference_weight,
            draws,
            seed,
            out,
        } => {
            let covariates = covariates
                .map(|v| {
                    v.iter().map(|s| topk_judge::domain::pool::CovariateSpec::parse(s)).collect::<Result<Vec<_>, _>>()
                })
                .transpose()
                .map_err(anyhow::Error::msg)
                .context("--covariates")?;
            let args = commands::fit::FitArgs {
                pool_file: &pool_file,
                verdicts_file: verdicts_file.as_deref(),
                pool_id: pool_id.as_deref(),
                judge: judge.as_deref(),
                model,
                k,
                report_ranking,
                covariates,
                lambda: [lambda_theta, lambda_b, lambda_kappa],
                strong_preference_weight,
                draws,
                seed,
            };
            let (_pool, fit) = commands::fit::fit_file(&args)?;
            for w in &fit.warnings {
                eprintln!("warning: {w}");
            }
            print_out(&commands::fit::fit_text(&fit));
            if let Some(out) = out {
                let text = serde_json::to_string_pretty(&fit)?;
                std::fs::write(&out, text + "\n").with_context(|| format!("writing {}", out.display()))?;
            }
            Ok(())
        }
    }
}

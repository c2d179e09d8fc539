//! The `topk-judge` binary: parse the CLI, start tracing and the tokio runtime, call the library,
//! print the error chain and exit non-zero on failure.

use anyhow::{Context, Result};
use clap::Parser;
use topk_judge::cli::{Cli, Command};
use topk_judge::{config, fitcmd, identify, pool, report, runner};

fn main() {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()))
        .with_writer(std::io::stderr)
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
                let (cfg, key_problem) = config::Config::load_for_dry_run(&config)?;
                let judge = topk_judge::make_judge(&cfg.raw.judge).map_err(anyhow::Error::msg)?;
                let d = topk_judge::dryrun::dry_run(&cfg, judge.as_ref())?;
                print!("{}", topk_judge::dryrun::render(&cfg, judge.as_ref(), &d));
                if let Some(m) = key_problem {
                    println!("warning: a real run would stop here: {m}");
                }
                return Ok(());
            }
            let cfg = config::Config::load(&config)?;
            let judge = topk_judge::make_judge(&cfg.raw.judge).map_err(anyhow::Error::msg)?;
            let rt = tokio::runtime::Runtime::new().context("starting the tokio runtime")?;
            let opts = runner::RunOptions { progress: !quiet, print: true };
            let mut result =
                rt.block_on(runner::run(&cfg, judge, &opts)).with_context(|| format!("run {}", config.display()))?;
            if let Some(g) = gate {
                print_out(
                    &identify::apply_gate(&cfg, &mut result, &g).with_context(|| format!("--gate {}", g.display()))?,
                );
            }
            Ok(())
        }
        Command::Profile { run_or_config } => {
            let (_, text) = identify::profile_command(&run_or_config)
                .with_context(|| format!("profile {}", run_or_config.display()))?;
            print_out(&text);
            Ok(())
        }
        Command::Gate { config } => {
            let rt = tokio::runtime::Runtime::new().context("starting the tokio runtime")?;
            let (_, text) =
                rt.block_on(identify::gate_command(&config)).with_context(|| format!("gate {}", config.display()))?;
            print_out(&text);
            Ok(())
        }
        Command::Audit { config, quiet } => {
            let cfg = topk_judge::auditcmd::AuditConfig::load(&config)?;
            let judge = topk_judge::make_judge(&cfg.raw.judge).map_err(anyhow::Error::msg)?;
            let rt = tokio::runtime::Runtime::new().context("starting the tokio runtime")?;
            rt.block_on(topk_judge::auditcmd::run_audit(&cfg, judge, true, !quiet))
                .with_context(|| format!("audit {}", config.display()))?;
            Ok(())
        }
        Command::Simulate { sweep, threads, out, quiet } => {
            let start = std::time::Instant::now();
            let (dir, s, md) = topk_judge::sweep::simulate_command(&sweep, threads, out.as_deref(), !quiet)
                .with_context(|| format!("simulate {}", sweep.display()))?;
            let rows: usize = s.cells.iter().map(|c| c.recall.n).sum();
            println!("{md}");
            println!("{rows} runs in {:.1} s; outputs: {}", start.elapsed().as_secs_f64(), dir.display());
            Ok(())
        }
        Command::Compare { runs, reference, out } => {
            let out = out.unwrap_or_else(|| std::path::PathBuf::from("."));
            let text =
                topk_judge::report::compare::compare_command(&runs, reference.as_deref(), &out).context("compare")?;
            println!("{text}");
            Ok(())
        }
        Command::Report { run, out } => {
            let out = out.unwrap_or_else(|| run.clone());
            let files = topk_judge::report::page::report_command(&run, &out)
                .with_context(|| format!("report {}", run.display()))?;
            for f in files {
                println!("wrote {}", f.display());
            }
            Ok(())
        }
        Command::Fit {
            pool_file,
            verdicts_file,
            pool_id,
            model,
            k,
            covariates,
            lambda_theta,
            lambda_b,
            lambda_kappa,
            draws,
            seed,
            out,
        } => {
            let covariates = covariates
                .map(|v| v.iter().map(|s| pool::CovariateSpec::parse(s)).collect::<Result<Vec<_>, _>>())
                .transpose()
                .map_err(anyhow::Error::msg)
                .context("--covariates")?;
            let prior = topk_judge::model::Prior { lambda_theta, lambda_b, lambda_kappa };
            let args = fitcmd::FitArgs {
                pool_file: &pool_file,
                verdicts_file: &verdicts_file,
                pool_id: pool_id.as_deref(),
                model,
                k,
                covariates,
                prior,
                draws,
                seed,
            };
            let (_pool, fit) = fitcmd::fit_file(&args)?;
            let mut text = format!(
                "pool {}: {:?} model, {} verdicts, κ = {:.3}\n",
                fit.pool_id, fit.model, fit.comparisons, fit.kappa
            );
            for (n, c) in &fit.c {
                text.push_str(&format!("c[{n}] = {c:.3}\n"));
            }
            text.push_str(&report::table::ranking_table(&fit.ranking));
            text.push_str(&format!("\ntop-{}: {}\n", fit.k, fit.topk.join(", ")));
            print_out(&text);
            if let Some(out) = out {
                let text = serde_json::to_string_pretty(&fit)?;
                std::fs::write(&out, text + "\n").with_context(|| format!("writing {}", out.display()))?;
            }
            Ok(())
        }
    }
}

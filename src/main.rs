//! The `topk-judge` binary: parse the CLI, start tracing and the tokio runtime, call the library,
//! print the error chain and exit non-zero on failure.

use anyhow::{Context, Result};
use clap::Parser;
use topk_judge::cli::{Cli, Command};
use topk_judge::{config, fitcmd, pool, report, runner};

fn main() {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()))
        .with_writer(std::io::stderr)
        .init();
    let _ = rustls::crypto::ring::default_provider().install_default();
    let cli = Cli::parse();
    if let Err(e) = real_main(cli) {
        eprintln!("error: {e}");
        for cause in e.chain().skip(1) {
            eprintln!("  caused by: {cause}");
        }
        std::process::exit(1);
    }
}

fn real_main(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Run { config, quiet } => {
            let cfg = config::Config::load(&config)?;
            let judge = topk_judge::make_judge(&cfg.raw.judge).map_err(anyhow::Error::msg)?;
            let rt = tokio::runtime::Runtime::new().context("starting the tokio runtime")?;
            let opts = runner::RunOptions { progress: !quiet, print: true };
            rt.block_on(runner::run(&cfg, judge, &opts)).with_context(|| format!("run {}", config.display()))?;
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
            println!("pool {}: {:?} model, {} verdicts, κ = {:.3}", fit.pool_id, fit.model, fit.comparisons, fit.kappa);
            for (n, c) in &fit.c {
                println!("c[{n}] = {c:.3}");
            }
            println!("{}", report::table::ranking_table(&fit.ranking));
            println!("top-{}: {}", fit.k, fit.topk.join(", "));
            if let Some(out) = out {
                let text = serde_json::to_string_pretty(&fit)?;
                std::fs::write(&out, text + "\n").with_context(|| format!("writing {}", out.display()))?;
            }
            Ok(())
        }
    }
}

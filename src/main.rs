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
        Command::Run { config, quiet, dry_run } => {
            let cfg = config::Config::load(&config)?;
            let judge = topk_judge::make_judge(&cfg.raw.judge).map_err(anyhow::Error::msg)?;
            if dry_run {
                let d = topk_judge::dryrun::dry_run(&cfg, judge.as_ref())?;
                print!("{}", topk_judge::dryrun::render(&cfg, judge.as_ref(), &d));
                return Ok(());
            }
            let rt = tokio::runtime::Runtime::new().context("starting the tokio runtime")?;
            let opts = runner::RunOptions { progress: !quiet, print: true };
            rt.block_on(runner::run(&cfg, judge, &opts)).with_context(|| format!("run {}", config.display()))?;
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

//! `topk-judge audit CONFIG`: the judge bias audit (docs/model.md §4, [`crate::analysis::audit`]) on a pairs file
//! or on probes built from a pool, through any [`Judge`] and the verdict cache.
//!
//! # Config (YAML, unknown keys are errors; paths relative to the config's folder)
//! ```yaml
//! name: tutorial              # outputs in <out_dir>/<name>/
//! out_dir: ../runs            # default: runs/ in the working directory
//! judge: {mock: {pos_bias: 1.0, verb_per_word: 0.02}}   # same JudgeConfig as `run`
//! pairs: ../data/tutorial_pairs.jsonl                    # either a pairs file ...
//! # pool: {file: ../data/summeval_pools.jsonl, id: POOL_ID, transform: elaborated,
//! #        max_items: 16, pairs: 0, seed: 0}            # ... or probes built from a pool
//! concurrency: 8              # queries in flight (default 8)
//! max_usd: 0.50               # refuse to start if the new queries' worst case exceeds it
//! level: 0.95                 # confidence level of the Wilson intervals
//! ```
//!
//! # Pairs file (JSON Lines, one pair per line)
//! `{"id", "task"?, "kind"?: "pair"|"probe", "x": SIDE, "y": SIDE, "winner"?: "x"|"y"}` with
//! `SIDE = {"id"?, "text"?, "quality"?, "words"?, "rendering"?}` — see [`crate::analysis::audit::PairSpec`].
//!
//! # Outputs in `<out_dir>/<name>/`
//! `config.yaml` (as resolved), `verdicts.jsonl` (every verdict, keyed by
//! [`crate::judge::JudgeInfo::cache_key`]: re-running the audit sends no query twice), `probes.jsonl` (pool mode:
//! the probes and pairs built, itself a valid pairs file) and `audit.json` ([`AuditOutput`]).
//!
//! # Recorded verdicts
//! With `judge: {replay: {file: RECORDING}}` the audit asks nothing: it reads both orders of every
//! pair from the recording ([`crate::judge::replay`]) and measures every recorded judge ×
//! prompting strategy there (or those `judge:` / `prompting:` select) in one go
//! ([`run_recorded_audit`], [`crate::analysis::recorded`]): `audit.json` ([`RecordedAudit`]),
//! `audit.md` (a table per judge) and `flip_vs_accuracy.svg`. A query the recording lacks is an
//! error under `missing: fail` (default) and counted as missing under `missing: unavailable`;
//! judges with no verdict on any pair of the file are skipped.

use crate::analysis::audit::{self, AuditReport, PairSpec};
use crate::analysis::recorded::{self, Tally};
use crate::analysis::render::RenderKind;
use crate::config::ConfigError;
use crate::config::audit::{AuditConfig, AuditSource};
use crate::config::judge::JudgeConfig;
use crate::domain::pool::Pool;
use crate::domain::verdict::Usage;
use crate::judge::Judge;
use crate::judge::replay::{MissingPolicy, Recording};
use crate::report::audit::{AuditOutput, QueryCounts, RecordedAudit, flip_vs_accuracy, recorded_text, summary_text};
use crate::report::progress::Progress;
use crate::run::dispatch::{DispatchOutcome, Dispatcher, Flow};
use crate::store::books::Books;
use crate::store::budget::Budget;
use crate::store::ledger::{LedgerError, VerdictRecord};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Errors of the audit command.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    /// The audit config file could not be read or is invalid.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The audit's folder (`out_dir`/`name`) holds a run (`topk-judge run`'s result or fits).
    #[error(
        "{0}: the folder of a run (it holds its {1}), not of an audit: the audit would write its config and verdicts into that run's; give the audit another `name` or `out_dir`"
    )]
    RunFolder(PathBuf, &'static str),
    /// Output files.
    #[error("{path}: {source}")]
    Io {
        /// The file that could not be read or written (a pool or pairs file, audit.json, audit.md, …).
        path: PathBuf,
        /// The I/O error from the operating system.
        source: std::io::Error,
    },
    /// Reading the verdict log (verdicts.jsonl) failed: I/O error or a line that is not a record.
    #[error(transparent)]
    Cache(#[from] LedgerError),
    /// The audit folder's books (verdicts.jsonl, failed.jsonl, intents.jsonl) could not be
    /// read or appended.
    #[error(transparent)]
    Books(#[from] crate::store::books::BooksError),
    /// Replies billed above their reservations took the audit folder's books past
    /// `budget.max_usd` (audit.json is written and the tables printed first).
    #[error(transparent)]
    AboveMaxUsd(Box<crate::run::RunError>),
    /// Another process audits into the same folder.
    #[error(transparent)]
    Lock(#[from] crate::store::lock::LockError),
    /// The new queries could cost more than `max_usd`.
    #[error(
        "the audit needs {queries} new queries with a worst-case cost of ${worst_usd:.4}; with ${spent_usd:.4} already booked in this audit folder that passes budget.max_usd = ${max_usd:.4}; raise max_usd or audit fewer pairs"
    )]
    Budget {
        /// New queries needed.
        queries: usize,
        /// Their summed worst case (USD).
        worst_usd: f64,
        /// The limit (USD).
        max_usd: f64,
        /// What the folder's books already hold (USD).
        spent_usd: f64,
    },
    /// A query the recording lacks, under `missing: fail`.
    #[error(
        "{recording}: {judge} has no verdict on pair {pair:?} with {first:?} shown first (judge.replay.missing: fail); record it, or set `missing: unavailable` to count it as missing"
    )]
    NotRecorded {
        /// The recording.
        recording: PathBuf,
        /// The recorded judge.
        judge: String,
        /// Pair id.
        pair: String,
        /// The item shown first.
        first: String,
    },
    /// Drawing flip_vs_accuracy.svg failed (plotters' error).
    #[error(transparent)]
    Plot(#[from] crate::report::plots::PlotError),
    /// The judge was sent nothing more (a run's stops: its invalid-reply limit, or queries failing
    /// in a row); what was paid is booked, re-running asks only what is not stored.
    #[error(
        "stopped: {why}; {unsent} queries were not sent (spend ${spend_usd:.6} booked); mend the judge (its prompt, max_tokens, endpoint) or raise judge.openai.max_invalid_rate, then re-run"
    )]
    Stopped {
        /// Why (the invalid-reply message, or the failures in a row).
        why: String,
        /// Queries not sent.
        unsent: usize,
        /// USD booked for this audit's queries.
        spend_usd: f64,
    },
    /// Queries failed and no pair has both verdicts.
    #[error("{failed} queries failed and no pair has verdicts in both orders; nothing to measure; last error: {last}")]
    JudgeFailing {
        /// Failed queries.
        failed: usize,
        /// The last error.
        last: String,
    },
}

/// `topk-judge audit CONFIG`.
#[derive(Debug, clap::Args)]
pub struct AuditArgs {
    /// Audit config file (YAML).
    pub config: PathBuf,
    /// Do not show the progress bar.
    #[arg(long)]
    pub quiet: bool,
    /// Exit with code 1 when a measured rate passes a threshold, e.g.
    /// "flip_rate>0.2,first_shown>0.6,longer_wins>0.7" (metrics: flip_rate, first_shown,
    /// longer_wins, naive_disagreement, averaged_disagreement; operators >, >=, <, <=). Each
    /// threshold passed is named on stderr. A metric the audit did not measure fails too.
    #[arg(long, value_name = "THRESHOLDS", value_parser = crate::analysis::fail_on::parse_list)]
    pub fail_on: Option<crate::analysis::fail_on::Thresholds>,
    /// Config overrides (as for `run`).
    #[command(flatten)]
    pub overrides: crate::config::overrides::OverrideArgs,
}

/// Errors of the `audit` command: loading the config or building its judge (as they are), or
/// the audit itself, named by its config.
#[derive(Debug, thiserror::Error)]
pub enum AuditCommandError {
    /// The audit config could not be read or is invalid.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// Its judge cannot be built.
    #[error(transparent)]
    Judge(#[from] crate::judge::setup::JudgeSetupError),
    /// `--fail-on` with a recorded audit (several judges in one table).
    #[error(
        "--fail-on applies to the audit of one judge; a recorded audit measures several (read audit.json per judge)"
    )]
    FailOnRecorded,
    /// The audit failed.
    #[error("audit {}", config.display())]
    During {
        /// The audit config.
        config: PathBuf,
        /// Why.
        #[source]
        source: Box<AuditError>,
    },
}

/// `topk-judge audit`: load the config, then audit (a recorded audit reads its recording,
/// a live one asks its judge), printing the tables.
///
/// # Errors
/// [`AuditCommandError`].
pub fn run(args: &AuditArgs, rt: &tokio::runtime::Runtime) -> Result<std::process::ExitCode, AuditCommandError> {
    let cfg = AuditConfig::load_with(&args.config, &args.overrides.overrides()?)?;
    let during = |source| AuditCommandError::During { config: args.config.clone(), source: Box::new(source) };
    if cfg.recording.is_some() {
        if args.fail_on.is_some() {
            return Err(AuditCommandError::FailOnRecorded);
        }
        run_recorded_audit(&cfg, true).map_err(during)?;
        return Ok(std::process::ExitCode::SUCCESS);
    }
    let judge = crate::config::judge::make_judge(&cfg.raw.judge)?;
    let out = rt.block_on(run_audit(&cfg, judge, true, !args.quiet)).map_err(during)?;
    let failed =
        args.fail_on.as_ref().map(|t| crate::analysis::fail_on::failures(&out.report, &t.0)).unwrap_or_default();
    for f in &failed {
        use std::io::Write;
        let _ = writeln!(std::io::stderr(), "fail-on: {f}");
    }
    Ok(if failed.is_empty() { std::process::ExitCode::SUCCESS } else { std::process::ExitCode::from(EXIT_THRESHOLD) })
}

/// The exit code of `audit --fail-on` when a threshold is passed (and of `run
/// --fail-on-undecided` when the top-k is not certified).
pub const EXIT_THRESHOLD: u8 = 1;

/// An audit writes only into a folder of its own, never into a run's (which keeps a result,
/// fits or its pool; an audit's folder keeps none of them).
fn check_not_a_run(dir: &Path) -> Result<(), AuditError> {
    match ["result.json", "fits.jsonl", "panel_fits.jsonl", "pool.jsonl"].into_iter().find(|f| dir.join(f).is_file()) {
        Some(f) => Err(AuditError::RunFolder(dir.to_owned(), f)),
        None => Ok(()),
    }
}

fn io_err(path: &Path) -> impl Fn(std::io::Error) -> AuditError + '_ {
    move |source| AuditError::Io { path: path.to_owned(), source }
}

/// Ordered queries of pair `i`: (a, b) = (0, 1) is X first, (1, 0) is Y first.
const ORDERS: [(usize, usize); 2] = [(0, 1), (1, 0)];

/// Run the audit: judge every pair in both orders (cached verdicts are reused, new ones stored
/// as they arrive), measure, write `audit.json` and print the tables when `print`.
///
/// # Errors
/// [`AuditError`]. A failed query excludes its pair (named in the output), it is not fatal,
/// unless every new query fails.
pub async fn run_audit(
    cfg: &AuditConfig,
    judge: Arc<dyn Judge>,
    print: bool,
    progress: bool,
) -> Result<AuditOutput, AuditError> {
    let dir = &cfg.run_dir;
    check_not_a_run(dir)?;
    std::fs::create_dir_all(dir).map_err(io_err(dir))?;
    // Paid verdicts are stored here: one process per folder (two would pay for each pair twice).
    let _lock = crate::store::lock::RunLock::acquire(dir)?;
    let saved = dir.join("config.yaml");
    std::fs::write(&saved, crate::store::yaml::to_string(&cfg.raw).unwrap_or_default()).map_err(io_err(&saved))?;
    if matches!(cfg.source, AuditSource::Pool { .. }) {
        let probes = dir.join("probes.jsonl");
        let text: String = cfg.pairs.iter().map(|p| serde_json::to_string(p).expect("serialisable") + "\n").collect();
        std::fs::write(&probes, text).map_err(io_err(&probes))?;
    }
    let (books, warnings) = Books::open(dir)?;
    let pools: Vec<Arc<Pool>> =
        cfg.pairs.iter().map(|p| p.to_pool().map(Arc::new).expect("validated pairs make valid pools")).collect();
    let keys: Vec<[String; 2]> = pools.iter().map(|pool| ORDERS.map(|(a, b)| judge.cache_key(pool, a, b))).collect();
    let pending: Vec<(usize, usize)> = (0..pools.len())
        .flat_map(|i| (0..2).map(move |o| (i, o)))
        .filter(|&(i, o)| books.log().get(&keys[i][o]).is_none())
        .collect();
    let total = 2 * pools.len();
    let cached = total - pending.len();
    // budget.max_usd bounds everything this folder's books hold (earlier audits with other
    // settings too), enforced in flight by the dispatcher's reservations.
    let max_usd = cfg.raw.budget.max_usd.filter(|_| judge.has_price());
    let (mut budget, folder) = Budget::for_folder(dir, cfg.raw.budget.max_comparisons, max_usd, 0)?;
    if let Some(max) = max_usd {
        let worst: f64 = pending.iter().map(|&(i, o)| judge.worst_case_usd(&pools[i], ORDERS[o].0, ORDERS[o].1)).sum();
        // Nothing to send costs nothing: a cached audit is read whatever the books hold.
        if !pending.is_empty() && folder.total_usd() + worst > max + 1e-12 {
            return Err(AuditError::Budget {
                queries: pending.len(),
                worst_usd: worst,
                max_usd: max,
                spent_usd: folder.total_usd(),
            });
        }
    }
    let bar = Progress::new(pending.len() as u64, progress);
    for w in warnings {
        tracing::warn!("{w}");
        bar.println(&format!("warning: {w}"));
    }
    // The run's judge dispatcher: intents before requests, replies and paid failures booked
    // as they arrive; max_usd bounds the worst case of what is sent, and raised worst cases
    // after an overrun.
    let mut disp: Dispatcher<(usize, usize)> = Dispatcher::new(judge.clone(), books);
    let todo = pending.iter().map(|&(i, o)| (pools[i].clone(), ORDERS[o].0, ORDERS[o].1, (i, o)));
    let mut done = 0u64;
    // The stops of a run (docs/live.md, "Faults"): a judge whose share of invalid replies passes
    // its max_invalid_rate, or whose queries fail as many times in a row as a run's three failed
    // rounds hold, is sent nothing more; what is in flight is booked.
    let (limit, failing_after) =
        (judge.invalid_rate_limit(), crate::run::schedule::FAILED_ROUNDS_STOP * cfg.raw.concurrency.max(1));
    let mut streak = 0usize;
    let mut stopped: Option<String> = None;
    let sent = disp
        .dispatch_all(todo, &mut budget, cfg.raw.concurrency, |f| {
            done += 1;
            bar.set(done);
            let last = match &f.outcome {
                DispatchOutcome::Verdict { .. } => {
                    streak = 0;
                    None
                }
                DispatchOutcome::Failed(e) => {
                    streak += 1;
                    Some(e)
                }
            };
            if stopped.is_none() {
                if let Some(e) = last.filter(|_| streak >= failing_after) {
                    stopped = Some(format!("{streak} queries failed in a row without any verdict; last error: {e}"));
                } else if let (Some(st), Some(l)) = (judge.stats(), limit)
                    && crate::run::schedule::past_invalid_limit(st.replies, st.invalid_replies, l)
                {
                    stopped = Some(crate::report::result::invalid_rate_message(&st, limit));
                }
            }
            if stopped.is_some() { Flow::Stop } else { Flow::Continue }
        })
        .await?;
    bar.finish();
    let mut failures: HashMap<(usize, usize), String> = HashMap::new();
    let mut new = 0usize;
    for s in &sent.settled {
        match &s.outcome {
            DispatchOutcome::Verdict { .. } => new += 1,
            DispatchOutcome::Failed(e) => {
                let msg = e.to_string();
                tracing::warn!("pair {} ({} first) failed: {msg}", s.pool.pool_id, s.pool.items[s.a].id);
                failures.insert(s.tag, msg);
            }
        }
    }
    let books = disp.close().await?;
    let log = books.log();

    let mut usage = Usage::default();
    // Everything booked for this audit's queries: verdicts, paid failures, possibly billed.
    let mine: HashSet<&str> = keys.iter().flatten().map(String::as_str).collect();
    let spend_usd = books.spend(&|k: &str| mine.contains(k)).total_usd();
    let mut obs = Vec::with_capacity(pools.len());
    for (i, pool) in pools.iter().enumerate() {
        let mut y = [None, None];
        let mut missing = Vec::new();
        for o in 0..2 {
            let first = pool.items[ORDERS[o].0].id.as_str();
            match log.get(&keys[i][o]) {
                Some(r) => {
                    usage.add(&r.reply.usage);
                    y[o] = r.reply.y;
                    if r.reply.y.is_none() {
                        let why = r
                            .reply
                            .invalid_reason
                            .as_ref()
                            .map_or_else(|| "invalid reply".to_owned(), ToString::to_string);
                        missing.push(format!("{first} first: {why}"));
                    }
                }
                None => match failures.get(&(i, o)) {
                    Some(why) => missing.push(format!("{first} first: query failed ({why}); re-run to retry")),
                    None if sent.budget_blocked => missing.push(format!(
                        "{first} first: not sent, budget.max_usd has no room for it; raise it and re-run"
                    )),
                    None => missing.push(format!("{first} first: not queried; re-run to ask")),
                },
            }
        }
        obs.push(audit::BothOrders {
            y_xfirst: y[0],
            y_yfirst: y[1],
            margin_xfirst: judge.score_margin(pool, 0, 1),
            margin_yfirst: judge.score_margin(pool, 1, 0),
            missing: (!missing.is_empty()).then(|| missing.join("; ")),
        });
    }
    if let Some(why) = stopped {
        return Err(AuditError::Stopped { why, unsent: sent.unsent, spend_usd });
    }
    if !failures.is_empty() && obs.iter().all(|o| o.y_xfirst.is_none() || o.y_yfirst.is_none()) {
        let last = failures.values().next().cloned().unwrap_or_default();
        return Err(AuditError::JudgeFailing { failed: failures.len(), last });
    }
    let report = audit::analyse(&cfg.pairs, &obs, cfg.raw.level);
    let mut notes = notes(cfg, &report, failures.len());
    let o = budget.overrun();
    if o.replies > 0 {
        notes.push(format!(
            "overrun: {} repl{} cost ${:.6} more than reserved (a provider billing above max_tokens); later reservations used {}× the worst case, and {} quer{} not sent",
            o.replies,
            if o.replies == 1 { "y" } else { "ies" },
            o.excess_usd,
            crate::domain::fmt::num(budget.worst_case_factor()),
            sent.unsent,
            if sent.unsent == 1 { "y was" } else { "ies were" }
        ));
    }
    let stored: Vec<&VerdictRecord> = keys.iter().flatten().filter_map(|k| log.get(k)).collect();
    let invalid_by_reason =
        crate::domain::verdict::invalid_by_reason(stored.len(), stored.iter().filter_map(|r| r.reply.why_invalid()));
    let verdict_shaped = pools
        .iter()
        .zip(&cfg.pairs)
        .flat_map(|(pool, spec)| {
            pool.items.iter().zip(["x", "y"]).filter_map(move |(it, side)| {
                let excerpt = crate::judge::openai::parse::verdict_shaped(it.text.as_deref()?)?;
                Some(crate::domain::verdict::VerdictShaped { id: format!("{}/{side}", spec.id), excerpt })
            })
        })
        .collect();
    let out = AuditOutput {
        name: cfg.raw.name.clone(),
        judge: judge.describe(),
        source: cfg.source.clone(),
        queries: QueryCounts {
            total,
            cached,
            new,
            failed: failures.len(),
            unsent: sent.unsent,
            unsent_because: (sent.unsent > 0).then_some(if budget.comparisons_left() == 0 {
                "budget.max_comparisons"
            } else {
                "budget.max_usd"
            }),
        },
        spend_usd,
        usage,
        notes,
        invalid_by_reason,
        verdict_shaped,
        judge_stats: judge.stats(),
        report,
    };
    let path = dir.join("audit.json");
    let text = serde_json::to_string_pretty(&out).expect("serialisable");
    std::fs::write(&path, text + "\n").map_err(io_err(&path))?;
    if print {
        // A closed stdout (e.g. `| head`) must not turn a finished audit into a panic; the
        // summary ends with its own newline.
        super::print_out(&summary_text(&out, dir));
    }
    // As for a run: an overrun that took the folder's books past max_usd is an error (exit 1).
    let cause = crate::report::result::overrun_report(o, budget.worst_case_factor(), out.judge_stats.as_ref())
        .map(|r| r.cause());
    if let Some(e) = crate::run::RunError::above_max_usd_of(
        cause,
        books.spend(&|_| true).total_usd(),
        max_usd,
        ("audit.json", "audit"),
    ) {
        return Err(AuditError::AboveMaxUsd(Box::new(e)));
    }
    Ok(out)
}

/// The audit on recorded verdicts (module docs): measure every selected recorded judge on the
/// pairs, write `audit.json`, `audit.md` and `flip_vs_accuracy.svg`, print the tables when
/// `print`.
///
/// # Errors
/// [`AuditError`]: a query the recording lacks under `missing: fail`, output files.
///
/// # Panics
/// If `cfg` has no recording (its judge is not a replay).
pub fn run_recorded_audit(cfg: &AuditConfig, print: bool) -> Result<RecordedAudit, AuditError> {
    let rec = cfg.recording.as_ref().expect("a replay judge's recording");
    let JudgeConfig::Replay(rc) = &cfg.raw.judge else { unreachable!("a recording comes from a replay judge") };
    let dir = &cfg.run_dir;
    check_not_a_run(dir)?;
    std::fs::create_dir_all(dir).map_err(io_err(dir))?;
    let saved = dir.join("config.yaml");
    std::fs::write(&saved, crate::store::yaml::to_string(&cfg.raw).unwrap_or_default()).map_err(io_err(&saved))?;
    let level = cfg.raw.level;
    let mut rows = Vec::new();
    for j in rec.matching(rc.judge.as_deref(), rc.prompting.as_deref()) {
        let who = &rec.judges()[j];
        let seen = observe(rec, j, &cfg.pairs);
        if seen.tally.pairs == 0 {
            continue; // this recorded judge has no verdict on these pairs
        }
        if rc.missing == MissingPolicy::Fail
            && let Some((pair, first)) = seen.first_missing
        {
            return Err(AuditError::NotRecorded { recording: rec.path().to_owned(), judge: who.label(), pair, first });
        }
        rows.push(recorded::judge_row(&who.judge, who.prompting.as_deref(), &seen.pairs, &seen.obs, seen.tally, level));
    }
    let judged: Vec<&PairSpec> = cfg.pairs.iter().filter(|p| p.kind == audit::PairKind::Pair).collect();
    let with_len: Vec<(audit::Label, audit::Label)> =
        judged.iter().filter_map(|p| Some((p.truth()?, p.longer()?))).collect();
    let gold_longer = audit::Rate::new(with_len.iter().filter(|(t, l)| t == l).count() as f64, with_len.len(), level);
    let mut notes = Vec::new();
    if rows.is_empty() {
        notes.push("no recorded judge has a verdict on these pairs (pair ids are the recording's pool_id)".into());
    }
    let missing: usize = rows.iter().map(|r| r.missing).sum();
    if missing > 0 {
        notes.push(format!(
            "{missing} ordered queries are not in the recording (missing: unavailable): left out of every rate"
        ));
    }
    let invalid: usize = rows.iter().map(|r| r.invalid).sum();
    if invalid > 0 {
        notes.push(format!(
            "{invalid} recorded verdicts are invalid (y: null): left out of every rate and counted in `invalid`"
        ));
    }
    let out = RecordedAudit {
        name: cfg.raw.name.clone(),
        recording: rec.path().to_owned(),
        source: cfg.source.clone(),
        pairs: cfg.pairs.len(),
        gold_longer,
        judges: rows,
        notes,
    };
    let path = dir.join("audit.json");
    std::fs::write(&path, serde_json::to_string_pretty(&out).expect("serialisable") + "\n").map_err(io_err(&path))?;
    let md = recorded_text(&out);
    let path = dir.join("audit.md");
    std::fs::write(&path, &md).map_err(io_err(&path))?;
    if !out.judges.is_empty() {
        let path = dir.join("flip_vs_accuracy.svg");
        std::fs::write(&path, flip_vs_accuracy(&out)?).map_err(io_err(&path))?;
    }
    if print {
        use std::io::Write;
        let _ = writeln!(std::io::stdout(), "{md}outputs: {}", dir.display());
    }
    Ok(out)
}

/// What recorded judge `j` said about the pairs it has verdicts on.
struct Observed {
    /// The pairs with at least one recorded verdict.
    pairs: Vec<PairSpec>,
    /// Both orders of each (`None`: invalid or not recorded).
    obs: Vec<audit::BothOrders>,
    tally: Tally,
    /// The first (pair, first-shown item) without a record.
    first_missing: Option<(String, String)>,
}

/// Read both orders of every pair from the recording: X first is (pair id, x id, y id), Y first
/// is (pair id, y id, x id).
fn observe(rec: &Recording, j: usize, all: &[PairSpec]) -> Observed {
    let mut seen = Observed { pairs: Vec::new(), obs: Vec::new(), tally: Tally::default(), first_missing: None };
    let why = |e: Option<&crate::judge::replay::Entry>, first: &str| match e {
        None => Some(format!("{first} first: not in the recording")),
        Some(e) if e.y.is_none() => {
            Some(format!("{first} first: {}", e.invalid_reason.as_deref().unwrap_or("invalid in the recording")))
        }
        _ => None,
    };
    for p in all {
        let (x, y) = (p.item_id(audit::Label::X), p.item_id(audit::Label::Y));
        let got = [rec.get(j, &p.id, &x, &y), rec.get(j, &p.id, &y, &x)];
        let n_missing = got.iter().filter(|e| e.is_none()).count();
        seen.tally.missing += n_missing;
        if n_missing > 0 {
            seen.first_missing.get_or_insert((p.id.clone(), if got[0].is_none() { x.clone() } else { y.clone() }));
        }
        if n_missing == 2 {
            continue;
        }
        seen.tally.pairs += 1;
        seen.tally.verdicts += 2 - n_missing;
        seen.tally.invalid += got.iter().flatten().filter(|e| e.y.is_none()).count();
        let missing: Vec<String> = [why(got[0], &x), why(got[1], &y)].into_iter().flatten().collect();
        seen.pairs.push(p.clone());
        seen.obs.push(audit::BothOrders {
            y_xfirst: got[0].and_then(|e| e.y),
            y_yfirst: got[1].and_then(|e| e.y),
            margin_xfirst: None,
            margin_yfirst: None,
            missing: (!missing.is_empty()).then(|| missing.join("; ")),
        });
    }
    seen
}

fn notes(cfg: &AuditConfig, r: &AuditReport, failed: usize) -> Vec<String> {
    let mut n = Vec::new();
    if let AuditSource::Pool { transform, .. } = &cfg.source {
        let what = match transform {
            RenderKind::Elaborated => "length (filler clauses)",
            RenderKind::Markdown => "formatting (bold lead, bullets)",
        };
        n.push(format!(
            "the probes pair each answer with a content-free {} rendering of itself (saved in probes.jsonl) and ASSUME the two are of equal quality: a judge that prefers the rendering rewards {what}, not content — unless the rendering really reads better; read probes.jsonl to check",
            transform.name()
        ));
    }
    n.extend(cfg.build_notes.iter().cloned());
    let rules: Vec<audit::AverageRule> = r.rows.iter().filter_map(|x| x.averaged.map(|a| a.rule)).collect();
    if rules.contains(&audit::AverageRule::Score) {
        n.push("order-averaged verdicts use the judge's own scores averaged over both slots (the tutorial's corrected_winner): the slot bonus cancels exactly".into());
    }
    if rules.contains(&audit::AverageRule::Outcome) {
        n.push("order-averaged verdicts average the two ordered outcomes, P(X wins) = (y(X first) + 1 − y(Y first)) / 2: a pair whose two hard verdicts disagree becomes a tie, counted as ½ in disagreement and longer-wins".into());
    }
    if failed > 0 {
        n.push(format!("{failed} queries failed (nothing stored); re-run the audit to retry them"));
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::verdict::JudgeReply;
    use crate::judge::{BoxFuture, JudgeError, JudgeInfo};
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn tutorial_cfg(dir: &Path, extra: &str) -> PathBuf {
        let pairs = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/tutorial_pairs.jsonl");
        let y = format!(
            "name: t\nout_dir: out\njudge:\n  mock: {{pos_bias: 1.0, verb_per_word: 0.02}}\npairs: {}\n{extra}",
            pairs.display()
        );
        let p = dir.join("audit.yaml");
        std::fs::write(&p, y).unwrap();
        p
    }

    #[test]
    fn config_needs_exactly_one_source_and_names_keys() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.yaml");
        std::fs::write(&p, "name: t\njudge: {mock: {}}\n").unwrap();
        let e = AuditConfig::load(&p).unwrap_err().to_string();
        assert!(e.contains("pairs: give exactly one of"), "{e}");
        std::fs::write(&p, "name: t\njudge: {mock: {}}\npairs: x.jsonl\nbudget: 3\n").unwrap();
        let e = AuditConfig::load(&p).unwrap_err().to_string();
        assert!(e.contains("budget"), "{e}");
        let p = tutorial_cfg(dir.path(), "level: 1.5\n");
        let e = AuditConfig::load(&p).unwrap_err().to_string();
        assert!(e.contains("level: 1.5 must be in (0, 1)"), "{e}");
        // A pairs file without quality cannot be judged by the mock.
        let pf = dir.path().join("nq.jsonl");
        std::fs::write(&pf, "{\"id\":\"a\",\"x\":{\"words\":3},\"y\":{\"words\":4}}\n").unwrap();
        std::fs::write(&p, format!("name: t\njudge: {{mock: {{}}}}\npairs: {}\n", pf.display())).unwrap();
        let e = AuditConfig::load(&p).unwrap_err().to_string();
        assert!(e.contains("judge.mock") && e.contains("pair \"a\" has none on x"), "{e}");
    }

    /// A judge that counts its calls and fails on pair "p03" with X first.
    struct Counting {
        inner: crate::judge::mock::MockJudge,
        calls: AtomicUsize,
    }

    impl JudgeInfo for Counting {
        fn describe(&self) -> String {
            "counting".into()
        }
        fn cache_key(&self, pool: &Pool, a: usize, b: usize) -> String {
            self.inner.cache_key(pool, a, b)
        }
    }

    impl Judge for Counting {
        fn judge<'a>(&'a self, pool: &'a Pool, a: usize, b: usize) -> BoxFuture<'a, Result<JudgeReply, JudgeError>> {
            self.calls.fetch_add(1, Ordering::SeqCst);
            if pool.pool_id == "p03" && a == 0 {
                return Box::pin(async {
                    Err(JudgeError::Request {
                        status: Some(500),
                        message: "boom".into(),
                        retryable: true,
                        cost_usd: 0.0,
                    })
                });
            }
            self.inner.judge(pool, a, b)
        }
    }

    /// `--max-usd` (`--set budget.max_usd=…`) on an audit config that spells it `max_usd:` as
    /// docs/audit.md shows it, and `--set max_usd=…` on one that spells it `budget.max_usd`: the
    /// override replaces the file's line (it was refused as the older spelling beside the new).
    #[test]
    fn a_max_usd_override_replaces_the_file_s_line_under_its_other_name() {
        use crate::config::overrides::Override;
        let dir = tempfile::tempdir().unwrap();
        for (file, set) in [("max_usd: 0.5\n", "budget.max_usd=2"), ("budget:\n  max_usd: 0.5\n", "max_usd=2")] {
            let p = tutorial_cfg(dir.path(), file);
            let cfg = AuditConfig::load_with(&p, &[Override::parse(set).unwrap()]).unwrap();
            assert_eq!(cfg.raw.budget.max_usd, Some(2.0), "{file:?} with {set}");
        }
        // Both spellings in the file stay a fault of the file.
        let p = tutorial_cfg(dir.path(), "max_usd: 0.5\nbudget:\n  max_usd: 0.5\n");
        let e = AuditConfig::load_with(&p, &[Override::parse("budget.max_usd=2").unwrap()]).unwrap_err().to_string();
        assert!(e.contains("is the older spelling of budget.max_usd"), "{e}");
    }

    #[tokio::test]
    async fn cache_makes_reruns_free_and_failures_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = AuditConfig::load(&tutorial_cfg(dir.path(), "concurrency: 3\n")).unwrap();
        let mock = crate::judge::mock::MockJudge::new(crate::judge::mock::MockConfig {
            pos_bias: 1.0,
            verb_per_word: 0.02,
            ..Default::default()
        })
        .unwrap();
        let j = Arc::new(Counting { inner: mock, calls: AtomicUsize::new(0) });
        let out = run_audit(&cfg, j.clone(), false, false).await.unwrap();
        assert_eq!(j.calls.load(Ordering::SeqCst), 34);
        assert_eq!(
            out.queries,
            QueryCounts { total: 34, cached: 0, new: 33, failed: 1, unsent: 0, unsent_because: None }
        );
        // p03 is left out; a hard-verdict judge without scores averages outcomes.
        assert_eq!(out.report.excluded.len(), 1);
        assert!(out.report.excluded[0].reason.contains("query failed (judge request failed (HTTP 500): boom)"));
        assert_eq!(out.report.position.flips.fraction(), "6/11 = 0.55");
        // Re-run: only the failed query is sent again.
        let out = run_audit(&cfg, j.clone(), false, false).await.unwrap();
        assert_eq!(j.calls.load(Ordering::SeqCst), 35);
        assert_eq!(
            out.queries,
            QueryCounts { total: 34, cached: 33, new: 0, failed: 1, unsent: 0, unsent_because: None }
        );
        let lines = std::fs::read_to_string(cfg.run_dir.join("verdicts.jsonl")).unwrap().lines().count();
        assert_eq!(lines, 33);
        // Without the judge's scores, the flipped pairs become ties: ½ disagreement each for
        // p01, p02, p04, p09, p10, p11 (6 × ½ = 3 of 11 judged pairs).
        assert_eq!(out.report.averaging.averaged_disagreement.fraction(), "3/11 = 0.27");
        assert!(out.notes.iter().any(|n| n.contains("becomes a tie")));
    }
}

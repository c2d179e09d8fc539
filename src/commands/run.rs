//! `topk-judge run CONFIG [--dry-run] [--gate gate.json]`: Algorithm 1 against the configured
//! judge ([`crate::run::live`]), resumable from the run folder; with `--dry-run` the first prompt,
//! the queries the budget allows and their worst-case cost ([`super::dry_run`]), sending nothing;
//! with a `gate:` section the trusted-anchor gate runs at the end of the run
//! ([`super::gate::gate_after_run`]), or `--gate FILE` applies a gate computed before
//! ([`super::gate::apply_gate`]); the summary is printed after the gate decided.

use super::print_out;
use super::run_folder::RunFolderError;
use crate::config::ConfigError;
use crate::config::judge::make_judge;
use crate::config::run::Config;
use crate::judge::JudgeInfo;
use crate::report::schema::StopReason;
use crate::run::live;
use crate::run::{RunError, RunOptions};
use crate::store::books::{BookFiles, FINGERPRINT_BOOKS, TRUSTED_BOOKS};
use crate::store::ledger::LedgerError;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Errors of the `run` command, each with its cause.
#[derive(Debug, thiserror::Error)]
pub enum RunCommandError {
    /// The run config could not be read or is invalid (file, line/column or key, found vs expected).
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The judge cannot be built (the message names the config key).
    #[error(transparent)]
    Judge(#[from] crate::judge::setup::JudgeSetupError),
    /// Reading stored verdicts for the dry run.
    #[error(transparent)]
    Cache(#[from] LedgerError),
    /// Reading the run folder's books (verdicts, paid failures, intents) for the dry run.
    #[error(transparent)]
    Books(#[from] crate::store::books::BooksError),
    /// The run failed, after its summary was printed when result.json was written.
    #[error("run {}", config.display())]
    During {
        /// The config file of the run.
        config: PathBuf,
        /// Why.
        #[source]
        source: Box<RunCommandError>,
    },
    /// The gate failed after the run (the run's result stands).
    #[error("{what}")]
    Gate {
        /// Which gate: `--gate FILE`, or the config's `gate:` section.
        what: String,
        /// Why.
        #[source]
        source: Box<RunFolderError>,
    },
    /// The run itself.
    #[error(transparent)]
    Run(#[from] RunError),
    /// The run stopped because too many replies were invalid (result.json is written).
    #[error("the run stopped early: {0}")]
    InvalidRate(String),
    /// The judge fingerprint found a judge that answers differently from its stored verdicts.
    #[error(
        "{0}; nothing more was sent. Re-run with --judge-changed new (its verdicts from now on go to a new cache namespace; the old ones are kept, not mixed) or --judge-changed accept (go on with the old verdicts); either is recorded in fingerprint.jsonl"
    )]
    JudgeChanged(String),
    /// A member of a judge panel answers differently from its stored verdicts.
    #[error(
        "{0}; nothing more was sent. Re-run with --judge-changed accept (go on with its old verdicts; recorded in fingerprint.jsonl), or give the judge a new `name` in `judges:` (its verdicts start afresh under it; the old ones stay in the folder, counted against max_usd)"
    )]
    PanelJudgeChanged(String),
}

/// `run --dry-run`: the printable dry-run report of `config` (a warning line is added when a real
/// run would stop, e.g. on an unset API key variable). Sends nothing, writes nothing.
///
/// # Errors
/// [`RunCommandError`]: unreadable config, unbuildable judge, unreadable verdict ledger.
pub fn dry_run_text(
    config: &Path,
    overrides: &[crate::config::overrides::Override],
    single_judge_flags: &[&'static str],
    gate: Option<&Path>,
    abandon_batch: bool,
    rt: &tokio::runtime::Runtime,
) -> Result<String, RunCommandError> {
    let (cfg, key_problem) = Config::load_for_dry_run_with(config, overrides)?;
    print_warnings(&cfg);
    // A folder another process runs in: its requests in flight are booked below as possibly
    // billed until it books them (hunt 52: the dry run did not say the folder was in use).
    if let Some(holder) = crate::store::lock::held_by(&cfg.run_dir) {
        super::warn_line(&format!(
            "run folder {} is in use by another topk-judge process ({}): the spend booked below counts its requests in flight as possibly billed until it books them, and a run of this config now would be refused",
            cfg.run_dir.display(),
            holder.map_or_else(|| "process id unknown".to_string(), |p| format!("pid {p}"))
        ));
    }
    // What the run refuses before it sends anything, the dry run refuses too.
    let labels = super::gate::check_labels_file(&cfg)?;
    // A run folder that could not be made (out_dir under a file) is refused as the run refuses it.
    if let Some(m) = crate::store::files::folder_cannot_be_made(&cfg.run_dir)
        .or_else(|| crate::run::folder::audit_folder(&cfg.run_dir))
    {
        return Err(RunCommandError::Run(crate::run::folder::cannot_create(&cfg.run_dir, &m)));
    }
    // A folder with a batch job still open that this judge cannot book: refused as the run is,
    // unless the run would abandon it.
    let abandoned = if abandon_batch {
        let n = crate::run::folder::open_keys(&cfg)?.len();
        Some(match n {
            0 => "--abandon-batch: this run folder has no open batch round; a real run would abandon nothing\n".into(),
            n => format!(
                "--abandon-batch: a real run would first close the open batch rounds without reading their jobs, booking their {n} quer{} as possibly billed at their reservations\n",
                if n == 1 { "y" } else { "ies" }
            ),
        })
    } else {
        crate::run::folder::open_batch_keys(&cfg)?;
        None
    };
    let with_abandoned = |t: String| t + abandoned.as_deref().unwrap_or_default();
    // The dry run opens no books: each set's damage is said here, as a real run would say it
    // (a malformed line of batches.jsonl was refused above).
    warn_damaged_books(&cfg, &crate::store::books::ALL_BOOKS)?;
    if let Ok(Some(w)) = crate::store::batches::BatchLog::peek_torn(&cfg.run_dir) {
        super::warn_line(&w);
    }
    if cfg.is_panel() {
        refuse_for_panel(config, single_judge_flags)?;
        return panel_dry_run_text(&cfg, key_problem, rt).map(with_abandoned);
    }
    check_detach(config, &cfg, single_judge_flags.contains(&"--detach"))?;
    let mut judge = crate::config::judge::judge_info(cfg.raw.judge()).map_err(RunCommandError::Judge)?;
    // Another configuration's run in the folder: said as the run says it.
    for w in crate::run::folder::replaced_run_warnings(&cfg, judge.as_ref()).map_err(RunCommandError::Run)? {
        super::warn_line(&w);
    }
    // A gate file that cannot apply is refused as the run refuses it.
    if let Some(g) = gate {
        super::gate::read_gate(&cfg, &judge.describe(), g).map_err(|source| RunCommandError::Gate {
            what: format!("--gate {}", g.display()),
            source: Box::new(source),
        })?;
    }
    // The config's gate is held back from max_usd, as the run holds it (a `--gate FILE` asks nothing).
    let held = if gate.is_none() { super::gate::gate_hold(&cfg)? } else { super::gate::GateHold::default() };
    // A live judge resuming its verdicts is fingerprinted first, at the live price, from what
    // the budget leaves: planned as the run plans it.
    let fingerprint = fingerprint_plan(&cfg, judge.as_ref(), held.usd)?;
    // Batch dispatch reserves and books at the batch price.
    if let (crate::config::run::Dispatch::Batch, crate::config::judge::JudgeConfig::Openai(oc)) =
        (cfg.raw.acquisition.dispatch, cfg.raw.judge())
    {
        judge = std::sync::Arc::new(crate::run::batch::BatchPriced(judge, crate::run::batch::reserve_factor(oc)));
    }
    let check_usd = match &fingerprint {
        Some(crate::run::fingerprint::Plan::Ask(a)) => a.reserve_usd,
        _ => 0.0,
    };
    let mut d = super::dry_run::dry_run(&cfg, judge.as_ref(), &held, check_usd)?;
    d.fingerprint = fingerprint.and_then(|p| planned_line(p, None));
    let mut text = crate::report::dry_run::render(&cfg, judge.as_ref(), &d);
    if let (crate::config::run::Dispatch::Batch, crate::config::judge::JudgeConfig::Openai(oc)) =
        (cfg.raw.acquisition.dispatch, cfg.raw.judge())
    {
        let r = cfg.raw.acquisition.round_size.unwrap_or(crate::config::run::DEFAULT_ROUND_SIZE);
        text.push_str(&format!(
            "dispatch: batch, rounds of {r} queries, each one provider batch job; costs above at the batch price ({}% off, one attempt per query: a batch reply is not re-asked)\n",
            crate::domain::fmt::num(100.0 * (1.0 - oc.batch_price_factor()))
        ));
    }
    // A live judge: does its endpoint answer? (its free model-list request, within seconds)
    if let crate::config::judge::JudgeConfig::Openai(oc) = cfg.raw.judge() {
        let line = match make_judge(cfg.raw.judge()) {
            Ok(j) => rt.block_on(super::dry_run::probe(j.as_ref(), oc)),
            Err(e) => format!("endpoint not probed: {e}"),
        };
        let line = crate::judge::keyed::rekey(&line, cfg.raw.judge_key());
        text.push_str(&line);
        text.push('\n');
    }
    // A gate that reads its labels from a file: what it holds now, and what a run needs of it.
    if let (Some(n), Some(g)) = (labels, &cfg.raw.gate)
        && let Ok(crate::config::run::LabelSource::Labels(path)) = g.source()
    {
        text.push_str(&format!(
            "gate: {} anchors at the end of the run, labelled from {} ({} there now); an anchor without a label stops the gate, which lists them in {}\n",
            g.anchors,
            path.display(),
            crate::domain::fmt::count(n, "labelled pair"),
            cfg.run_dir.join("anchors_to_label.jsonl").display()
        ));
    }
    if let Some(m) = key_problem {
        text.push_str(&format!("warning: a real run would stop here: {m}\n"));
    }
    Ok(with_abandoned(text))
}

/// Say (stderr) the damaged lines of the books of `cfg`'s run folder in the sets `sets`: those
/// this invocation does not open itself ([`crate::store::books::books_warnings`]). Their
/// spend counts against `budget.max_usd` all the same, a damaged line's intent as possibly
/// billed, so their damage is said whether or not anything opens them (a fingerprint check that
/// asks nothing, a dry run).
///
/// # Errors
/// [`RunCommandError`]: a book that cannot be read.
fn warn_damaged_books(cfg: &Config, sets: &[BookFiles]) -> Result<(), RunCommandError> {
    // No folder yet (or a file in its place, which the run refuses in its own words): no books.
    if !cfg.run_dir.is_dir() {
        return Ok(());
    }
    for w in crate::store::books::books_warnings(&cfg.run_dir, sets)? {
        super::warn_line(&w);
    }
    Ok(())
}

/// The judge fingerprint check a real run of `cfg` would make before it starts (a live judge
/// resuming its verdicts, docs/live.md), planned from the folder without writing: `None` for a
/// judge that is not live or a check turned off.
///
/// # Errors
/// [`RunCommandError`]: the folder's books cannot be read.
fn fingerprint_plan(
    cfg: &Config,
    judge: &dyn JudgeInfo,
    held_usd: f64,
) -> Result<Option<crate::run::fingerprint::Plan>, RunCommandError> {
    let crate::config::judge::JudgeConfig::Openai(oc) = cfg.raw.judge() else { return Ok(None) };
    if oc.fingerprint.queries == 0 {
        return Ok(None);
    }
    let answered = crate::run::fingerprint::answered_replies(&cfg.run_dir)?;
    let plan = crate::run::fingerprint::plan(cfg, judge, &[judge], &[], oc.fingerprint.queries, held_usd, &|k| {
        answered.get(k).copied()
    })?;
    Ok(Some(plan))
}

/// What a dry run says of a planned fingerprint check (of the panel `member`, if one): `None`
/// when there is none to make.
fn planned_line(plan: crate::run::fingerprint::Plan, member: Option<&str>) -> Option<String> {
    let of = member.map(|m| format!(" of {m}")).unwrap_or_default();
    match plan {
        crate::run::fingerprint::Plan::Skip => None,
        crate::run::fingerprint::Plan::Decided(c) => Some(format!(
            "a real run first says: {}",
            c.line().replacen("judge fingerprint: ", &format!("judge fingerprint{of}: "), 1)
        )),
        crate::run::fingerprint::Plan::Ask(a) => Some(format!(
            "judge fingerprint{of}: a real run first asks {} stored verdicts again{}, reserved at their worst case ${:.6} (docs/live.md, \"Judge fingerprint\"); the counts below leave that out",
            a.open.len(),
            match a.answered {
                0 => String::new(),
                n => format!(" ({n} more answered by a check cut short)"),
            },
            a.reserve_usd
        )),
    }
}

/// The mean expected cost of one query of `judge` (USD, [`JudgeInfo::expected_usd`]) over both
/// orders of each item and the next one of its prompt (a sample of 2 N ordered pairs that meets
/// every item in both slots); `None` for a prompt of fewer than two items.
fn expected_per_query(cfg: &Config, judge: &dyn JudgeInfo) -> Option<f64> {
    let pool = &cfg.pool;
    let usd: Vec<f64> = pool
        .prompt_items()
        .iter()
        .filter(|g| g.len() > 1)
        .flat_map(|g| (0..g.len()).flat_map(move |i| [(g[i], g[(i + 1) % g.len()]), (g[(i + 1) % g.len()], g[i])]))
        .map(|(a, b)| judge.expected_usd(pool, a, b))
        .collect();
    (!usd.is_empty()).then(|| usd.iter().sum::<f64>() / usd.len() as f64)
}

/// `run --dry-run` of a judge panel: per judge its stored verdicts, the worst case of one
/// query and, where it is lower, its expected cost, what the budget allows were every query sent to it, and each live judge's endpoint.
/// Sends nothing, writes nothing.
///
/// # Errors
/// [`RunCommandError`]: a judge that cannot be described, an unreadable verdict ledger.
fn panel_dry_run_text(
    cfg: &Config,
    key_problem: Option<String>,
    rt: &tokio::runtime::Runtime,
) -> Result<String, RunCommandError> {
    use crate::judge::panel::Named;
    let mut rows = Vec::new();
    for m in &cfg.raw.judges {
        let info = crate::config::judge::judge_info(&m.judge).map_err(RunCommandError::Judge)?;
        let named = Named { name: m.name.clone(), judge: info };
        let d = super::dry_run::dry_run(cfg, &named, &super::gate::GateHold::default(), 0.0)?;
        rows.push((m, named, d));
    }
    let identity = crate::run::folder::PanelIdentity(rows.iter().map(|r| &r.1 as &dyn JudgeInfo).collect());
    for w in crate::run::folder::replaced_run_warnings(cfg, &identity).map_err(RunCommandError::Run)? {
        super::warn_line(&w);
    }
    drop(identity);
    // A single-judge run's verdicts the members take over (as the run does).
    let records =
        crate::store::ledger::read_records(&cfg.run_dir.join("verdicts.jsonl")).map(|r| r.0).unwrap_or_default();
    let infos: Vec<(&dyn JudgeInfo, &dyn JudgeInfo)> =
        rows.iter().map(|(_, n, _)| (n as &dyn JudgeInfo, n.judge.as_ref())).collect();
    let taken = crate::run::panel::takeovers(cfg, &infos, &records);
    for ((_, _, d), t) in rows.iter_mut().zip(&taken) {
        d.stored += t.len();
    }
    // The whole folder's books count against max_usd, as the run counts them: the judges' and
    // also a gate's trusted judge and the fingerprint checks.
    let folder = crate::store::books::folder_books(&cfg.run_dir)?;
    let judged = folder.run.total_usd() + 0.0;
    let spent = folder.total().total_usd() + 0.0;
    let pairs = rows.first().map_or(0, |r| r.2.pairs);
    let mut t = String::from("dry run: no query was sent and nothing was written.\n");
    t.push_str(&format!(
        "judge panel of {} judges (docs/model.md §8): one model, one budget; each round's queries go to the judge whose verdicts buy the most top-k certainty per dollar, so the split is decided as the run goes\n",
        rows.len()
    ));
    t.push_str(&format!(
        "pool {}: {} items, {} bases, {pairs} ordered pairs per judge; spend booked ${judged:.6} (all judges: verdicts, paid failures, possibly billed requests)\n",
        cfg.pool.pool_id,
        cfg.pool.n_items(),
        cfg.pool.n_bases()
    ));
    let (fingerprint, trusted) = (folder.fingerprint.total_usd(), folder.trusted.total_usd());
    if fingerprint + trusted > 0.0 {
        t.push_str(&format!(
            "the run folder's books also hold ${:.6} ({}), counted against max_usd as the run counts it\n",
            fingerprint + trusted,
            crate::report::summary::other_spend_parts(fingerprint + trusted, fingerprint, trusted, &|x| format!(
                "${x:.6}"
            ))
        ));
    }
    // Each live member resuming its verdicts is fingerprinted first, member by member, as the
    // run plans it: each plan from the folder as it is now, with the checks planned before it
    // held at their worst case (what they may spend first); the counts below leave their
    // reserves out.
    let answered = crate::run::fingerprint::answered_replies(&cfg.run_dir)?;
    let counted: Vec<&dyn JudgeInfo> = rows.iter().map(|r| &r.1 as &dyn JudgeInfo).collect();
    let members: Vec<(&dyn JudgeInfo, &dyn JudgeInfo)> =
        rows.iter().map(|(_, n, _)| (n as &dyn JudgeInfo, n.judge.as_ref())).collect();
    let mut check_usd = 0.0;
    for (m, named, _) in &rows {
        let crate::config::judge::JudgeConfig::Openai(oc) = &m.judge else { continue };
        if oc.fingerprint.queries == 0 {
            continue;
        }
        let plan =
            crate::run::fingerprint::plan(cfg, named, &counted, &members, oc.fingerprint.queries, check_usd, &|k| {
                answered.get(k).copied()
            })?;
        if let crate::run::fingerprint::Plan::Ask(a) = &plan {
            check_usd += a.reserve_usd;
        }
        if let Some(line) = planned_line(plan, Some(&m.name)) {
            t.push_str(&line);
            t.push('\n');
        }
    }
    let b = &cfg.raw.budget;
    let left = b.max_usd.map(|m| (m - spent - check_usd).max(0.0));
    // max_comparisons counts the panel's verdicts of every judge (and those it takes over).
    let stored_all: usize = rows.iter().map(|r| r.2.stored).sum();
    let cmp_left = b.max_comparisons.map(|m| m.saturating_sub(stored_all as u64).min(usize::MAX as u64) as usize);
    for (m, named, d) in &rows {
        let worst = match d.worst_per_query_usd {
            Some((lo, hi, mean)) => format!("worst case per query ${lo:.6} – ${hi:.6} (mean ${mean:.6})"),
            None => "no open pair".into(),
        };
        let open = pairs.saturating_sub(d.stored);
        let worst = match (d.worst_per_query_usd, expected_per_query(cfg, named)) {
            (Some((_, _, mean)), Some(e)) if (e - mean).abs() > 0.01 * mean => {
                format!("{worst}; expected ${e:.6} (what the router weighs its queries by)")
            }
            _ => worst,
        };
        let cap = cmp_left.map_or(open, |c| c.min(open));
        let count_note = match cmp_left {
            Some(c) if c < open => {
                format!(" (budget.max_comparisons leaves the panel {c} {})", if c == 1 { "query" } else { "queries" })
            }
            _ => String::new(),
        };
        let allows = match (left, d.worst_per_query_usd) {
            // Reserved at its worst case before it is sent: none fits (the warning below).
            (Some(l), Some((lo, _, _))) if lo > l + 1e-12 => {
                format!("; the budget buys none of its {open} open queries (below)")
            }
            (Some(l), Some((lo, hi, _))) if hi > 0.0 => {
                let most = if lo > 0.0 { ((l / lo).floor() as usize).min(cap) } else { cap };
                let least = ((l / hi).floor() as usize).min(cap);
                if least == cap {
                    // The count binds, not money: exact.
                    format!(
                        "; if every query went to it, the budget would buy {least} of its {open} open queries{count_note}"
                    )
                } else {
                    let n = if least == most {
                        least.to_string()
                    } else {
                        format!("{least} (up to {most} on the cheapest pairs)")
                    };
                    format!(
                        "; if every query went to it, the budget would buy at least {n} of its {open} open queries at worst-case cost (more when replies cost less)"
                    )
                }
            }
            _ if cap < open => format!(
                "; if every query went to it, the budget would buy {cap} of its {open} open queries{count_note}"
            ),
            _ => String::new(),
        };
        t.push_str(&format!(
            "  {}{}: {} stored; {worst}{allows}\n    {}\n",
            m.name,
            if m.trusted { " (trusted)" } else { "" },
            crate::domain::fmt::count(d.stored, "verdict"),
            named.judge.describe()
        ));
    }
    for ((m, _, _), over) in rows.iter().zip(&taken).filter(|(_, over)| !over.is_empty()) {
        let usd: f64 = over.iter().map(|(_, _, r)| r.reply.cost_usd).sum();
        t.push_str(&crate::run::panel::takeover_note(&m.name, over.len(), usd, &cfg.run_dir));
        t.push('\n');
    }
    if let Some(f) = &cfg.families {
        let names: Vec<&str> = cfg.raw.judges.iter().map(|m| m.name.as_str()).collect();
        for line in f.lines(&names, &cfg.pool.bases) {
            t.push_str(&format!("{line} (self-preference: the judge's \"same family\" coefficient)\n"));
        }
    }
    for (i, m) in cfg.raw.judges.iter().enumerate().filter(|(_, m)| !m.prior.is_empty()) {
        t.push_str(&crate::analysis::panel_fit::carried_note(&m.name, &m.prior, &format!("judges[{i}].prior")));
        t.push('\n');
    }
    t.push_str(&crate::report::dry_run::budget_line(b, " (for the panel as a whole)"));
    for (i, m) in cfg.raw.judges.iter().enumerate() {
        if let crate::config::judge::JudgeConfig::Openai(oc) = &m.judge {
            let line = match make_judge(&m.judge) {
                Ok(j) => rt.block_on(super::dry_run::probe(j.as_ref(), oc)),
                Err(e) => format!("endpoint not probed: {e}"),
            };
            // The member's settings as the panel's config names them.
            let line = crate::judge::keyed::rekey(&line, &format!("judges[{i}]"));
            t.push_str(&format!("judge {}: {line}\n", m.name));
        }
    }
    if let Some(l) = left {
        let cheapest: Vec<Option<f64>> = rows.iter().map(|r| r.2.worst_per_query_usd.map(|w| w.0)).collect();
        for w in crate::run::panel::unaffordable_notes(&cfg.raw.judges, &cheapest, l) {
            t.push_str(&format!("warning: {w}\n"));
        }
        if cheapest.iter().flatten().all(|&c| c > l + 1e-12) && cheapest.iter().any(Option::is_some) {
            let least = cheapest.iter().flatten().copied().fold(f64::INFINITY, f64::min);
            t.push_str(&if check_usd > 0.0 {
                // The checks settle at what they bill, usually far below their worst case.
                format!(
                    "warning: with the fingerprint checks above held at their worst case (${check_usd:.6}), the budget allows no query of any judge (the cheapest worst case is ${least:.6}); what they bill (usually far less) decides whether a real run asks any\n"
                )
            } else {
                format!(
                    "warning: the budget allows no query of any judge (the cheapest worst case is ${least:.6}): a real run would send nothing; raise budget.max_usd (--max-usd) to go on\n"
                )
            });
        }
    }
    if let Some(m) = key_problem {
        t.push_str(&format!("warning: a real run would stop here: {m}\n"));
    }
    Ok(t)
}

/// `topk-judge run CONFIG`.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// Config file (YAML).
    pub config: PathBuf,
    /// Do not show the progress bar.
    #[arg(long)]
    pub quiet: bool,
    /// A gate.json from `topk-judge gate` (e.g. computed on another pool of the same task):
    /// report the ranking the gate chose. Without it, a `gate:` section in the config runs
    /// the gate at the end of the run.
    #[arg(long)]
    pub gate: Option<PathBuf>,
    /// Render the first prompt, count the queries the budget allows and print the worst-case
    /// cost; write nothing and send no query (an API judge's endpoint is asked for its model
    /// list, `GET {base_url}/models`, which is free).
    #[arg(long)]
    pub dry_run: bool,
    /// Exit with code 1 when the top-k is not certified (fewer than k items in the *in* set at
    /// certify.epsilon; docs/model.md, "Certified top-k"), after the summary and result.json.
    #[arg(long)]
    pub fail_on_undecided: bool,
    /// `dispatch: batch`: submit the next round as a provider batch job and exit without
    /// waiting for it; a later `run` (with or without --detach) books its results when the job
    /// has ended (docs/live.md, "Batch dispatch").
    #[arg(long)]
    pub detach: bool,
    /// Close the provider batch jobs this run folder holds open without reading them, for a
    /// job whose endpoint is gone for good: each of their queries is booked as possibly billed
    /// at its reservation (USD), their rounds are recorded as abandoned, and the run goes on
    /// (any config of the folder; docs/live.md, "Batch dispatch").
    #[arg(long)]
    pub abandon_batch: bool,
    /// When the judge fingerprint finds that a live judge answers differently from its stored
    /// verdicts (docs/live.md, "Judge fingerprint"): `new` puts its verdicts from now on in a
    /// new cache namespace (the old ones are kept, not mixed); `accept` goes on with the old
    /// ones. Without it such a run stops before any other query. Recorded in fingerprint.jsonl.
    #[arg(long, value_name = "new|accept")]
    pub judge_changed: Option<JudgeChanged>,
    /// Config overrides.
    #[command(flatten)]
    pub overrides: crate::config::overrides::OverrideArgs,
}

/// `--judge-changed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum JudgeChanged {
    /// A new cache namespace for this judge.
    New,
    /// Go on with the old verdicts.
    Accept,
}

/// `topk-judge run`: the dry run, or Algorithm 1 then the gate, the summary printed. The exit
/// code is 130 after an interrupt (re-running resumes).
///
/// # Errors
/// [`RunCommandError`]: loading the config or the judge (as they are), the run itself (within
/// [`RunCommandError::During`], after the summary a written result.json holds), or the gate
/// (within [`RunCommandError::Gate`], after the summary).
pub fn run(args: &RunArgs, rt: &tokio::runtime::Runtime) -> Result<ExitCode, RunCommandError> {
    let overrides = args.overrides.overrides()?;
    if args.dry_run {
        print_out(&dry_run_text(
            &args.config,
            &overrides,
            &single_judge_flags(args),
            args.gate.as_deref(),
            args.abandon_batch,
            rt,
        )?);
        return Ok(ExitCode::SUCCESS);
    }
    let (mut cfg, mut judge) = prepare(&args.config, &overrides)?;
    if cfg.is_panel() {
        return run_panel(args, &cfg, rt);
    }
    // A gate file that cannot apply is found before anything is spent.
    if let Some(g) = &args.gate {
        super::gate::read_gate(&cfg, &judge.describe(), g).map_err(|source| RunCommandError::Gate {
            what: format!("--gate {}", g.display()),
            source: Box::new(source),
        })?;
    }
    // The config's gate asks its trusted judge after the run, on the same max_usd: its worst
    // case is held from the start (a `--gate FILE` asks nothing), the fingerprint check's
    // re-asks included.
    let hold = if args.gate.is_none() { super::gate::gate_hold(&cfg)? } else { super::gate::GateHold::default() };
    // The run opens its own books; the gate run after it opens its trusted judge's.
    let gate_runs = args.gate.is_none() && cfg.raw.gate.is_some();
    let unopened: &[BookFiles] = if gate_runs { &[FINGERPRINT_BOOKS] } else { &[TRUSTED_BOOKS, FINGERPRINT_BOOKS] };
    warn_damaged_books(&cfg, unopened)?;
    let fingerprint =
        match fingerprint_check(&cfg, judge.clone(), rt, args.judge_changed, &args.config, &overrides, hold.usd) {
            Ok((rebuilt, line)) => {
                if let Some((c, j)) = rebuilt {
                    (cfg, judge) = (c, j);
                }
                line.into_iter().collect()
            }
            Err(RunCommandError::Run(e @ RunError::Interrupted { .. })) => {
                // The check's replies are in the folder's books: an earlier result.json says so.
                if let Err(w) = super::gate::rebook_result(&cfg.run_dir) {
                    super::warn_line(&w.to_string());
                }
                return Ok(interrupted_before_the_run(&e));
            }
            Err(e) => return Err(e),
        };
    let during = |source| RunCommandError::During { config: args.config.clone(), source: Box::new(source) };
    check_detach(&args.config, &cfg, args.detach)?;
    if let Some(w) = &hold.warning {
        super::warn_line(w);
    }
    let opts = RunOptions {
        progress: !args.quiet,
        print: false,
        handle_signals: true,
        detach: args.detach,
        abandon_batch: args.abandon_batch,
        hold_usd: hold.usd,
        fingerprint,
    };
    let outcome = run_with_gate(&cfg, judge, rt, &opts, args.gate.as_deref()).map_err(during)?;
    if let Some(source) = outcome.gate_error {
        // Interrupted while the gate asked its trusted judge: the run's result stands, the gate
        // decided nothing, and the exit code is an interrupted run's.
        if let RunFolderError::Interrupted { .. } = source {
            use std::io::Write;
            let said = format!("run {}: the gate: section: {source}", args.config.display());
            let _ = writeln!(std::io::stderr(), "{}", crate::domain::fmt::printable(&said));
            return Ok(ExitCode::from(crate::run::interrupt::EXIT_INTERRUPTED as u8));
        }
        let what = match &args.gate {
            Some(g) => format!("--gate {}", g.display()),
            None => format!("the gate: section of {}", args.config.display()),
        };
        return Err(RunCommandError::Gate { what, source: Box::new(source) });
    }
    print_out(&outcome.after_summary);
    Ok(if outcome.stop == StopReason::Interrupted {
        ExitCode::from(crate::run::interrupt::EXIT_INTERRUPTED as u8)
    } else if outcome.stop == StopReason::BatchPending && !args.detach {
        // Not asked to detach: the job could not be read, or a create was not confirmed.
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "error: run {}: a batch job is still open (`batch job open:` above says which and why); its queries stay reserved against max_usd until a run of this config books it (or a run with --abandon-batch closes it, booking them as possibly billed)",
            args.config.display()
        );
        ExitCode::FAILURE
    } else if args.fail_on_undecided && !outcome.certified {
        use std::io::Write;
        let _ = writeln!(std::io::stderr(), "fail-on-undecided: {}", outcome.certified_line);
        ExitCode::from(super::audit::EXIT_THRESHOLD)
    } else {
        ExitCode::SUCCESS
    })
}

/// `--detach` on a config without `dispatch: batch` is refused, by the run and its dry run alike.
fn check_detach(config: &Path, cfg: &Config, detach: bool) -> Result<(), RunCommandError> {
    if detach && cfg.raw.acquisition.dispatch != crate::config::run::Dispatch::Batch {
        return Err(RunCommandError::Config(ConfigError::invalid(
            config,
            crate::domain::invalid::InvalidSetting::new(
                "--detach",
                "applies to `acquisition.dispatch: batch` only (provider batch jobs; docs/live.md, \"Batch dispatch\")",
            ),
        )));
    }
    Ok(())
}

/// The flags of `run` given that apply to a single judge only.
fn single_judge_flags(args: &RunArgs) -> Vec<&'static str> {
    [
        (args.gate.is_some(), "--gate"),
        (args.detach, "--detach"),
        (args.fail_on_undecided, "--fail-on-undecided"),
        (args.judge_changed == Some(JudgeChanged::New), JUDGE_CHANGED_NEW),
    ]
    .into_iter()
    .filter_map(|(set, flag)| set.then_some(flag))
    .collect()
}

/// `--judge-changed new`, as [`single_judge_flags`] names it.
const JUDGE_CHANGED_NEW: &str = "--judge-changed new";

/// A judge panel's config refuses the single-judge `flags` (the first named), for a run and its
/// dry run alike.
fn refuse_for_panel(config: &Path, flags: &[&'static str]) -> Result<(), RunCommandError> {
    match flags.first() {
        Some(&JUDGE_CHANGED_NEW) => Err(RunCommandError::Config(ConfigError::invalid(
            config,
            crate::domain::invalid::InvalidSetting::new(
                "--judge-changed",
                "new applies to a single judge; in a judge panel, give the changed judge a new `name` in `judges:` (its verdicts start afresh under it), or accept",
            ),
        ))),
        Some(flag) => Err(RunCommandError::Config(ConfigError::invalid(
            config,
            crate::domain::invalid::InvalidSetting::new(
                *flag,
                "applies to a single judge only; this config is a judge panel (`judges:`, docs/model.md §8)",
            ),
        ))),
        None => Ok(()),
    }
}

/// `topk-judge run` of a judge panel (`judges:`, docs/model.md §8): Algorithm 1 over (pair,
/// judge), one budget; result.json and the summary per judge. Exit code 130 after an interrupt.
///
/// # Errors
/// [`RunCommandError`]: a flag that applies to a single judge only, a judge that cannot be
/// built, or the run itself (within [`RunCommandError::During`]).
fn run_panel(args: &RunArgs, cfg: &Config, rt: &tokio::runtime::Runtime) -> Result<ExitCode, RunCommandError> {
    refuse_for_panel(&args.config, &single_judge_flags(args))?;
    // The run opens its own books (a panel has no gate).
    warn_damaged_books(cfg, &[TRUSTED_BOOKS, FINGERPRINT_BOOKS])?;
    let mut members = Vec::with_capacity(cfg.raw.judges.len());
    for m in &cfg.raw.judges {
        members.push((m.name.clone(), make_judge(&m.judge).map_err(RunCommandError::Judge)?));
    }
    let fingerprint = match panel_fingerprints(cfg, &members, rt, args.judge_changed) {
        Err(RunCommandError::Run(e @ RunError::Interrupted { .. })) => return Ok(interrupted_before_the_run(&e)),
        other => other?,
    };
    let panel = std::sync::Arc::new(crate::judge::panel::PanelJudge::new(&cfg.pool, members));
    let opts = RunOptions {
        progress: !args.quiet,
        print: true,
        handle_signals: true,
        detach: false,
        abandon_batch: args.abandon_batch,
        hold_usd: 0.0,
        fingerprint,
    };
    let result = rt
        .block_on(crate::run::panel::run(cfg, panel, &opts))
        .map_err(|e| RunCommandError::During { config: args.config.clone(), source: Box::new(e.into()) })?;
    if result.stop_reason == StopReason::MaxInvalidRate {
        return Err(RunCommandError::InvalidRate(format!(
            "{}; result.json and the paid verdicts are kept in {}",
            result.stop_message.clone().unwrap_or_default(),
            cfg.run_dir.display()
        )));
    }
    Ok(if result.stop_reason == StopReason::Interrupted {
        ExitCode::from(crate::run::interrupt::EXIT_INTERRUPTED as u8)
    } else {
        ExitCode::SUCCESS
    })
}

/// The judge fingerprint of a live judge resuming its verdicts (docs/live.md, "Judge
/// fingerprint"): the check's line is printed and recorded; a changed judge stops the run
/// unless `--judge-changed` says what to do. With `new`, the run folder's
/// judge_namespaces.json names the judge's new namespace and the config and judge are built
/// again under it (returned). Also returned: the check's line as printed (None: no check).
/// `hold_usd`: what the run holds back of max_usd for its gate, which the check leaves too.
///
/// # Errors
/// [`RunCommandError::JudgeChanged`], or the check's own failures.
fn fingerprint_check(
    cfg: &Config,
    judge: std::sync::Arc<dyn crate::judge::Judge>,
    rt: &tokio::runtime::Runtime,
    decided: Option<JudgeChanged>,
    config: &Path,
    overrides: &[crate::config::overrides::Override],
    hold_usd: f64,
) -> Result<(Option<Prepared>, Option<String>), RunCommandError> {
    use crate::run::fingerprint::{self, Decision};
    let crate::config::judge::JudgeConfig::Openai(oc) = cfg.raw.judge() else { return Ok((None, None)) };
    let counted = [judge.clone()];
    let Some(mut check) =
        rt.block_on(fingerprint::check(cfg, judge, &counted, &[], oc.fingerprint.queries, hold_usd, true))?
    else {
        return Ok((None, None));
    };
    let mut rebuilt = None;
    if check.test.judge_changed {
        match decided {
            None => {
                record_and_show(cfg, &check, None)?;
                return Err(RunCommandError::JudgeChanged(changed_message(&check)));
            }
            Some(JudgeChanged::Accept) => check.decision = Decision::Accept,
            Some(JudgeChanged::New) => {
                let ns = format!("judge-changed-{}", check.session);
                set_namespace(&cfg.run_dir, &check.judge, &ns)?;
                check.decision = Decision::New;
                check.namespace = Some(ns);
                rebuilt = Some(prepare(config, overrides)?);
            }
        }
    }
    let line = record_and_show(cfg, &check, None)?;
    Ok((rebuilt, Some(line)))
}

/// The judge fingerprint of each live member of a panel resuming its verdicts (docs/live.md,
/// "Judge fingerprint"), member by member as for a single judge; a changed member stops the run
/// unless `--judge-changed accept` says to go on. `--judge-changed new` is the single judge's
/// ([`refuse_for_panel`]): in a panel, a member given a new `name` starts verdicts of its own.
/// Returns the checks' lines as printed.
///
/// # Errors
/// [`RunCommandError::JudgeChanged`] (naming the member), or the check's own failures.
fn panel_fingerprints(
    cfg: &Config,
    members: &[(String, std::sync::Arc<dyn crate::judge::Judge>)],
    rt: &tokio::runtime::Runtime,
    decided: Option<JudgeChanged>,
) -> Result<Vec<String>, RunCommandError> {
    let mut lines = Vec::new();
    use crate::run::fingerprint::{self, Decision};
    // max_comparisons counts the whole panel's verdicts.
    let named: Vec<std::sync::Arc<dyn crate::judge::Judge>> = members
        .iter()
        .map(|(name, judge)| {
            std::sync::Arc::new(crate::judge::panel::Named { name: name.clone(), judge: judge.clone() }) as _
        })
        .collect();
    // A member's verdicts include those it takes over from a single-judge run of its configuration.
    let panel: Vec<(&dyn JudgeInfo, &dyn JudgeInfo)> = named
        .iter()
        .zip(members)
        .map(|(n, (_, j))| (n.as_ref() as &dyn JudgeInfo, j.as_ref() as &dyn JudgeInfo))
        .collect();
    for ((name, member), m) in members.iter().map(|(n, _)| n).zip(&named).zip(&cfg.raw.judges) {
        let crate::config::judge::JudgeConfig::Openai(oc) = &m.judge else { continue };
        let Some(mut check) =
            rt.block_on(fingerprint::check(cfg, member.clone(), &named, &panel, oc.fingerprint.queries, 0.0, true))?
        else {
            continue;
        };
        if check.test.judge_changed {
            if decided != Some(JudgeChanged::Accept) {
                record_and_show(cfg, &check, Some(name))?;
                return Err(RunCommandError::PanelJudgeChanged(changed_message(&check)));
            }
            check.decision = Decision::Accept;
        }
        lines.push(record_and_show(cfg, &check, Some(name))?);
    }
    Ok(lines)
}

/// A fingerprint check recorded in the run folder's fingerprint.jsonl, and its line printed
/// (naming the panel `member` it checked, if one) and returned.
///
/// # Errors
/// fingerprint.jsonl cannot be written.
fn record_and_show(
    cfg: &Config,
    check: &crate::run::fingerprint::Check,
    member: Option<&str>,
) -> Result<String, RunCommandError> {
    // A repeated stop is on record already; a decision on it is recorded.
    if check.repeats.is_none() || check.decision != crate::run::fingerprint::Decision::Stopped {
        crate::run::fingerprint::record(&cfg.run_dir, check)?;
    }
    let line = check.line();
    let line = match member {
        Some(m) => line.replacen("judge fingerprint: ", &format!("judge fingerprint of {m}: "), 1),
        None => line,
    };
    print_out(&format!("{line}\n"));
    Ok(line)
}

/// What a changed judge's fingerprint found, for the error that stops the run.
fn changed_message(check: &crate::run::fingerprint::Check) -> String {
    format!(
        "the judge {} answers differently from its stored verdicts ({} of {} changed: {})",
        check.judge,
        check.test.changed,
        check.test.pairs,
        check.changed_text()
    )
}

/// Ctrl-C before the run began (during a judge fingerprint check): said on stderr, and the
/// exit code of an interrupted run.
fn interrupted_before_the_run(e: &RunError) -> ExitCode {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{}", crate::domain::fmt::printable(&e.to_string()));
    ExitCode::from(crate::run::interrupt::EXIT_INTERRUPTED as u8)
}

/// A loaded config and its judge.
type Prepared = (Config, std::sync::Arc<dyn crate::judge::Judge>);

/// The run folder's judge namespaces: judge description → the cache namespace its verdicts go
/// to after `--judge-changed new`.
const NAMESPACES: &str = "judge_namespaces.json";

fn set_namespace(dir: &Path, judge: &str, ns: &str) -> Result<(), RunCommandError> {
    let path = dir.join(NAMESPACES);
    let mut map: std::collections::BTreeMap<String, String> =
        std::fs::read_to_string(&path).ok().and_then(|t| serde_json::from_str(&t).ok()).unwrap_or_default();
    map.insert(judge.to_string(), ns.to_string());
    let text = serde_json::to_string_pretty(&map).expect("serialisable") + "\n";
    std::fs::write(&path, text).map_err(|source| RunCommandError::Run(RunError::Io { path, source }))
}

/// Apply the run folder's namespace for this judge (after an earlier `--judge-changed new`),
/// unless the config sets one.
fn apply_namespace(cfg: &mut Config) {
    if cfg.is_panel() {
        return;
    }
    let Ok(text) = std::fs::read_to_string(cfg.run_dir.join(NAMESPACES)) else { return };
    let Ok(map) = serde_json::from_str::<std::collections::BTreeMap<String, String>>(&text) else { return };
    let describe = crate::config::judge::judge_info(cfg.raw.judge()).map(|j| j.describe()).unwrap_or_default();
    if let crate::config::judge::JudgeConfig::Openai(oc) = cfg.raw.judge_mut()
        && oc.cache_namespace.is_none()
    {
        oc.cache_namespace = map.get(&describe).cloned();
    }
}

/// Load `config` and build its judge: what a real run needs first.
///
/// # Errors
/// [`RunCommandError`]: unreadable config, unbuildable judge, a gate's labels file that is
/// missing or malformed.
pub fn prepare(config: &Path, overrides: &[crate::config::overrides::Override]) -> Result<Prepared, RunCommandError> {
    let mut cfg = Config::load_with(config, overrides)?;
    apply_namespace(&mut cfg);
    print_warnings(&cfg);
    let judge = make_judge(cfg.raw.judge()).map_err(RunCommandError::Judge)?;
    let judge = crate::judge::keyed::Keyed::wrap(judge, cfg.raw.judge_key());
    // The gate's labels file, missing or malformed, is found before the run.
    super::gate::check_labels_file(&cfg)?;
    Ok((cfg, judge))
}

/// Print a config's load warnings (identical texts, covariate scales) to stderr.
pub fn print_warnings(cfg: &Config) {
    for w in &cfg.warnings {
        super::warn_line(w);
    }
}

/// How a run with its gate ended: why the run stopped, what to print after the summary (the
/// gate's lines after its decision), and the gate's error, reported after the summary.
pub struct RunOutcome {
    /// Why the run stopped.
    pub stop: StopReason,
    /// The lines printed after the summary.
    pub after_summary: String,
    /// The gate failed (the run's result stands).
    pub gate_error: Option<RunFolderError>,
    /// Whether the top-k is certified (k items in the *in* set).
    pub certified: bool,
    /// What is certified, in one line (the summary's).
    pub certified_line: String,
}

/// Run Algorithm 1 for a prepared config, then the gate (`--gate FILE`, or the config's
/// `gate:` section), then print the summary (the reported ranking follows the gate under
/// `report_ranking: auto`; Ctrl-C and SIGTERM are handled by the run).
///
/// # Errors
/// [`RunCommandError::Run`] for the run (after printing the summary a failed fit still wrote),
/// [`RunCommandError::InvalidRate`] when it stopped on too many invalid replies (after printing
/// the summary; result.json is written).
pub fn run_with_gate(
    cfg: &Config,
    judge: std::sync::Arc<dyn crate::judge::Judge>,
    rt: &tokio::runtime::Runtime,
    opts: &RunOptions,
    gate: Option<&Path>,
) -> Result<RunOutcome, RunCommandError> {
    let mut result = match rt.block_on(live::run(cfg, judge, opts)) {
        Ok(r) => r,
        Err(e) => {
            // A failed fit, a failing judge or a budget passed by an overrun still wrote
            // result.json: show it (no gate runs after the budget was passed).
            if matches!(e, RunError::Fit(_) | RunError::JudgeFailing { .. } | RunError::AboveMaxUsd { .. })
                && let Ok(text) = std::fs::read_to_string(cfg.run_dir.join("result.json"))
                && let Ok(r) = serde_json::from_str(&text)
            {
                print_out(&crate::report::result::summary_text(&r, &cfg.run_dir));
            }
            return Err(e.into());
        }
    };
    if result.stop_reason == StopReason::MaxInvalidRate {
        print_out(&crate::report::result::summary_text(&result, &cfg.run_dir));
        let m = result.verdicts_report.stop_message.clone().unwrap_or_default();
        return Err(RunCommandError::InvalidRate(format!(
            "{m}; result.json and the paid verdicts are kept in {}",
            cfg.run_dir.display()
        )));
    }
    // The budget ran out on failed queries alone: the judge never answered usefully, which a
    // script must not read as success (more budget would not help).
    if result.valid == 0 && result.failed > 0 && result.stop_reason == StopReason::MaxUsd {
        print_out(&crate::report::result::summary_text(&result, &cfg.run_dir));
        let last = result.last_error.as_deref().or_else(|| result.quarantined.last().map(|q| q.last_error.as_str()));
        return Err(RunError::JudgeFailing {
            message: format!(
                "the budget went to {} failed queries and no valid verdict{}; result.json and the books are kept in {}",
                result.failed,
                last.map(|e| format!(" (last error: {e})")).unwrap_or_default(),
                cfg.run_dir.display()
            ),
        }
        .into());
    }
    let gated = match gate {
        Some(g) => super::gate::apply_gate(cfg, &mut result, g),
        None if cfg.raw.gate.is_some() && result.stop_reason != StopReason::Interrupted => {
            rt.block_on(super::gate::gate_after_run(cfg, &mut result, opts.handle_signals))
        }
        None => Ok(String::new()),
    };
    let mut text = crate::report::result::summary_text(&result, &cfg.run_dir);
    if result.stop_reason == StopReason::Interrupted {
        text.push_str(&crate::report::result::resume_hint(&cfg.path, &cfg.overrides));
    }
    print_out(&text);
    // The summary already holds the gate's decision line, and the chosen ranking's top-k and
    // recall (its point top-k, reported): only the gate's notes are printed after it.
    let (after_summary, gate_error) = match gated {
        Ok(s) => match (&result.gate, s.split_once('\n')) {
            (Some(_), Some((_, rest))) => (
                rest.lines()
                    .filter(|l| !l.starts_with("chosen (") && !l.contains(" of the chosen ranking against gold: "))
                    .map(|l| format!("{l}\n"))
                    .collect(),
                None,
            ),
            _ => (s, None),
        },
        Err(e) => (String::new(), Some(e)),
    };
    let c = &result.fit.reporting.certified;
    let certified_line = match &c.withheld {
        Some(why) => format!("the top-{} is not certified: {why}", result.k),
        None => format!(
            "the top-{} is not certified at ε = {}: {} of {} decided, {} undecided",
            result.k,
            c.epsilon,
            c.inside.len(),
            crate::domain::fmt::count(result.k, "place"),
            c.undecided.len()
        ),
    };
    Ok(RunOutcome { stop: result.stop_reason, after_summary, gate_error, certified: c.claimed, certified_line })
}

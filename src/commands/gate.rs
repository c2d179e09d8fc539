//! `topk-judge gate CONFIG` and `run --gate gate.json`: the trusted-anchor gate
//! (docs/identifiability.md). Reads the run, queries the trusted judge on the anchors (or reads a
//! labels file), writes `gate.json`, and applies a gate's decision to a run's result. The
//! statistics live in [`crate::analysis::gate`].

use super::run_folder::{RunFolderError, bias_covariates, io_err, run_verdicts};
use crate::analysis::gate::{self, Anchor, fit_naive_and_corrected};
use crate::analysis::ranking::topk_with_ties;
use crate::config::judge::{judge_info, make_judge};
use crate::config::run::{Config, GateConfig, LabelSource};
use crate::domain::pool::Pool;
use crate::judge::Judge;
use crate::report::gate::{AnchorLabel, AnchorRow, GateReport, gate_text};
use crate::report::schema::{GateChoice, RunResult};
use crate::run::dispatch::{DispatchOutcome, Dispatcher, Flow};
use crate::store::books::{Books, TRUSTED_BOOKS};
use crate::store::budget::Budget;
use serde::Deserialize;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

/// One line of a labels file.
#[derive(Debug, Deserialize)]
struct LabelLine {
    a: String,
    b: String,
    better: Option<String>,
}

/// Read a config's gate labels file (`gate.labels`) before its run starts, so that a missing or
/// malformed file is reported before any query is paid for (a gate with a trusted judge, or no
/// gate: nothing to check).
///
/// `Some(n)`: the gate reads its labels from the file, which holds `n` labelled pairs.
///
/// # Errors
/// [`crate::config::ConfigError::Invalid`] naming the config file, the line of `gate.labels` and
/// the labels file (and its line).
pub fn check_labels_file(cfg: &Config) -> Result<Option<usize>, crate::config::ConfigError> {
    if let Some(g) = &cfg.raw.gate
        && let Ok(LabelSource::Labels(path)) = g.source()
    {
        let labels = read_labels(path, &cfg.pool).map_err(|e| {
            let msg = match e {
                RunFolderError::Io { path, source } => format!("cannot read labels file {}: {source}", path.display()),
                e => e.to_string(),
            };
            let e = crate::config::ConfigError::invalid(
                &cfg.path,
                crate::domain::invalid::InvalidSetting::new("gate.labels", msg),
            );
            // Set by `--set gate.labels=…`: that override is named, as for any key it sets.
            if cfg.overrides.iter().any(|o| o.key.first().is_some_and(|k| k == "gate")) {
                crate::config::overrides::name_the_override(e, &cfg.overrides)
            } else {
                e
            }
        })?;
        return Ok(Some(labels.len()));
    }
    Ok(None)
}

fn read_labels(path: &Path, pool: &Pool) -> Result<HashMap<(String, String), Option<String>>, RunFolderError> {
    let text = std::fs::read_to_string(path).map_err(io_err(path))?;
    let mut out = HashMap::new();
    let mut first_line: HashMap<(String, String), usize> = HashMap::new();
    for (ln, line) in crate::domain::text::strip_bom_str(&text).lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let bad = |msg: String| RunFolderError::Parse { path: path.to_owned(), line: ln + 1, msg };
        let expected = "expected {\"a\": BASE, \"b\": BASE, \"better\": BASE or \"tie\"}";
        let l: LabelLine = crate::domain::json::from_str(line).map_err(|e| {
            // A JSON array, pretty-printed JSON or a CSV file is said so, as a pool file's is.
            bad(crate::domain::text::not_json_lines(line)
                .map_or_else(|| format!("{e}; {expected}"), |what| format!("{what}, each {}", &expected[9..])))
        })?;
        for id in [&l.a, &l.b] {
            if !pool.bases.contains(id) {
                return Err(bad(format!("{id:?} is not a base of pool {:?}", pool.pool_id)));
            }
        }
        let better = match l.better.as_deref() {
            Some("tie") => None,
            Some(w) if w == l.a || w == l.b => Some(w.to_string()),
            Some(w) => return Err(bad(format!("better = {w:?} must be {:?}, {:?} or \"tie\"", l.a, l.b))),
            None => return Err(bad("`better` is missing or null; expected a base id or \"tie\"".into())),
        };
        if l.a == l.b {
            return Err(bad(format!("a and b are both {:?}; expected two different bases", l.a)));
        }
        let key = if l.a < l.b { (l.a, l.b) } else { (l.b, l.a) };
        // One label per pair: a second, different one would silently replace the first.
        if let Some(prev) = out.get(&key)
            && *prev != better
        {
            let show =
                |b: &Option<String>| b.as_deref().map_or("tie".to_owned(), |w| format!("{w:?}")).replace('"', "");
            return Err(bad(format!(
                "{:?} vs {:?} is labelled {} here but {} at line {}; expected one label per pair",
                key.0,
                key.1,
                show(&better),
                show(prev),
                first_line[&key]
            )));
        }
        first_line.entry(key.clone()).or_insert(ln + 1);
        out.insert(key, better);
    }
    Ok(out)
}

/// First item (file order) of each base: the rendering shown to the trusted judge.
fn first_items(pool: &Pool) -> Vec<usize> {
    let mut first = vec![usize::MAX; pool.n_bases()];
    for (i, &b) in pool.item_base.iter().enumerate() {
        if first[b] == usize::MAX {
            first[b] = i;
        }
    }
    first
}

/// Requests of the gate's trusted judge in flight at once.
const TRUSTED_CONCURRENCY: usize = 8;

/// Query the trusted judge on both orders of every anchor, 8 in flight, through the run's
/// judge dispatcher ([`crate::run::dispatch`]): its books are `trusted_verdicts.jsonl`
/// (at most one verdict per ordered pair, reused on the next gate), `trusted_failed.jsonl` and
/// `trusted_intents.jsonl` in `dir`, and `max_usd` (the run's `budget.max_usd`) bounds everything
/// the folder's books hold, the run's and the trusted judge's together, enforced in flight.
/// Returns, per anchor, (y with corrected_prefers first, y with naive_prefers first) and the
/// total spend of these verdicts. `info` gives the cache keys and worst cases; the judge itself
/// (its HTTP client) is built by `make` only when a query is to be sent, so a gate whose trusted
/// verdicts are all cached runs from a run folder's copy of the config (its URL credentials `***`).
///
/// # Errors
/// [`RunFolderError::Judge`] for the first failed query: nothing more is sent, and the requests in
/// flight are waited for and booked first. What `make` returns when the judge cannot be built.
async fn trusted_verdicts(
    info: Arc<dyn crate::judge::JudgeInfo>,
    make: impl FnOnce() -> Result<Arc<dyn Judge>, RunFolderError>,
    pool: &Pool,
    anchors: &[Anchor],
    dir: &Path,
    max_usd: Option<f64>,
    signals: Option<std::time::Duration>,
) -> Result<(Vec<(Option<f64>, Option<f64>)>, f64), RunFolderError> {
    let first = first_items(pool);
    // A trusted judge that answers only some pairs (a replay of a recording, e.g. published
    // human preferences over many prompts): each anchor is asked on the first prompt where its
    // two systems have a recorded verdict, in the recorded orders only.
    let answerable: Option<std::collections::HashSet<(usize, usize)>> =
        info.answerable(pool).map(|v| v.into_iter().collect());
    let pick = |c: usize, n: usize| -> (usize, usize) {
        let Some(rec) = &answerable else { return (first[c], first[n]) };
        let mut hits: Vec<(usize, usize)> = rec
            .iter()
            .filter_map(|&(a, b)| {
                let (ba, bb) = (pool.item_base[a], pool.item_base[b]);
                if (ba, bb) == (c, n) {
                    Some((a, b))
                } else if (ba, bb) == (n, c) {
                    Some((b, a))
                } else {
                    None
                }
            })
            .collect();
        hits.sort_unstable();
        hits.first().copied().unwrap_or((first[c], first[n]))
    };
    let asked = |a: usize, b: usize| answerable.as_ref().is_none_or(|r| r.contains(&(a, b)));
    std::fs::create_dir_all(dir).map_err(io_err(dir))?;
    let (books, warnings) = Books::open_files(dir, &TRUSTED_BOOKS)?;
    for w in warnings {
        tracing::warn!("{w}");
    }
    let pool = Arc::new(pool.clone());
    let queries: Vec<(usize, usize)> = anchors
        .iter()
        .flat_map(|a| {
            let (c, n) = pick(a.corrected_prefers, a.naive_prefers);
            [(c, n), (n, c)]
        })
        .collect();
    let pending: Vec<(usize, usize)> = queries
        .iter()
        .copied()
        .filter(|&(a, b)| asked(a, b) && books.log().get(&info.cache_key(&pool, a, b)).is_none())
        .collect();
    let max_usd = max_usd.filter(|_| info.has_price());
    let (mut budget, folder) = Budget::for_folder(dir, None, max_usd, 0)?;
    if let Some(max) = max_usd {
        let left = max - folder.total_usd();
        let worst: f64 = pending.iter().map(|&(a, b)| info.worst_case_usd(&pool, a, b)).sum();
        // Nothing to send costs nothing: a gate of cached trusted verdicts runs whatever is left.
        if !pending.is_empty() && worst > left + 1e-12 {
            return Err(RunFolderError::Invalid(format!(
                "the gate's {} trusted queries could cost up to {} but the run's budget (budget.max_usd) has {} left; raise max_usd to run the gate",
                pending.len(),
                crate::report::table::usd(worst),
                crate::report::table::usd(left.max(0.0))
            )));
        }
    }
    let (books, bought) = if pending.is_empty() {
        (books, 0)
    } else {
        // Ctrl-C (SIGTERM, SIGHUP): nothing more is sent, the replies in flight are booked (a
        // second signal quits at once, as in a run), and the gate decides nothing (hunt 52: the
        // gate after a run went on sending, and the run exited 0).
        let listening = match signals {
            Some(grace) => {
                Some(crate::run::interrupt::Interrupt::install_scoped(grace).map_err(RunFolderError::Signals)?)
            }
            None => None,
        };
        let total = pending.len();
        if let Some((i, _)) = &listening {
            i.set_in_flight(total.min(TRUSTED_CONCURRENCY));
        }
        let interrupted = || listening.as_ref().is_some_and(|(i, _)| i.requested());
        let mut disp: Dispatcher<()> = Dispatcher::new(make()?, books);
        let todo = pending.into_iter().map(|(a, b)| (pool.clone(), a, b, ()));
        let report = disp
            .dispatch_all(todo, &mut budget, TRUSTED_CONCURRENCY, |s| match s.outcome {
                _ if interrupted() => Flow::Stop,
                DispatchOutcome::Failed(_) => Flow::Stop,
                DispatchOutcome::Verdict { .. } => Flow::Continue,
            })
            .await?;
        let cut = interrupted();
        if let Some((_, task)) = &listening {
            task.abort();
        }
        let bought = report.settled.len();
        if cut {
            disp.close().await?;
            return Err(RunFolderError::Interrupted {
                during: format!("the gate's trusted queries ({bought} of {total} answered)"),
            });
        }
        if let Some(s) = report.settled.into_iter().find(|s| matches!(s.outcome, DispatchOutcome::Failed(_))) {
            let DispatchOutcome::Failed(source) = s.outcome else { unreachable!("matched above") };
            return Err(RunFolderError::Judge { a: pool.items[s.a].id.clone(), b: pool.items[s.b].id.clone(), source });
        }
        (disp.close().await?, bought)
    };
    let log = books.log();
    let mut spend = 0.0;
    let mut ys = Vec::with_capacity(anchors.len());
    let get = |(a, b): (usize, usize)| log.get(&info.cache_key(&pool, a, b)).cloned();
    for pair in queries.chunks(2) {
        // An order the trusted judge cannot answer (unrecorded) has no verdict; the other one
        // labels the anchor alone.
        let (g1, g2) = (get(pair[0]), get(pair[1]));
        if answerable.is_some() && (g1.is_none() || g2.is_none()) {
            let (y1, y2) = (g1.as_ref().and_then(|r| r.reply.y), g2.as_ref().and_then(|r| r.reply.y));
            spend += g1.as_ref().map_or(0.0, |r| r.reply.cost_usd) + g2.as_ref().map_or(0.0, |r| r.reply.cost_usd);
            ys.push((y1, y2));
            continue;
        }
        let (Some(r1), Some(r2)) = (g1, g2) else {
            // Replies billed above their reservations raised the worst case, and the rest no
            // longer fits in max_usd: what was bought is kept for the next gate.
            return Err(RunFolderError::Invalid(format!(
                "the gate's trusted judge stopped after {} new queries (of the {} it needs): the run's budget.max_usd ({}) is reached (the folder's books hold {}; replies cost more than their worst case: {}); raise max_usd and run the gate again (the verdicts bought are kept)",
                bought,
                queries.len(),
                max_usd.map_or_else(|| "none".into(), crate::report::table::usd),
                crate::report::table::usd(budget.spent_usd()),
                budget.overrun().replies
            )));
        };
        spend += r1.reply.cost_usd + r2.reply.cost_usd;
        ys.push((r1.reply.y, r2.reply.y));
    }
    Ok((ys, spend))
}

/// `topk-judge gate RUN_OR_CONFIG`: run the trusted-anchor gate on a run (its folder, from any
/// working directory, or its config), write `gate.json`; returns the report and its text.
///
/// # Errors
/// [`RunFolderError`]: no `gate:` section, no verdicts, missing labels (the anchors to label are
/// written to `anchors_to_label.jsonl`), a failing trusted judge.
pub async fn gate_command(
    arg: &Path,
    overrides: &[crate::config::overrides::Override],
    handle_signals: bool,
) -> Result<(GateReport, String), RunFolderError> {
    // A panel, or a config without a `gate:` section, is said so before looking for its run.
    if arg.is_file() {
        let cfg = Config::load_for_dry_run_with(arg, overrides)?.0;
        cfg.single_judge("gate").map_err(RunFolderError::Panel)?;
        if cfg.raw.gate.is_none() {
            return Err(no_gate(arg));
        }
    }
    let run = super::run_folder::load_run_with(arg, overrides)?;
    run.cfg.single_judge("gate").map_err(RunFolderError::Panel)?;
    if run.cfg.raw.gate.is_none() {
        return Err(no_gate(&run.cfg.path));
    }
    // gate.json in the run's folder describes that run: a gate of other settings (an override
    // of k, the judge, the covariates or the prior) is not written over it.
    if let Some(made) = super::run_folder::read_result(&run.dir) {
        let this = GateSettings::of(&run.cfg)?;
        if let Some((was, now)) = GateSettings::of_result(&made).differs_from(&this) {
            return Err(RunFolderError::Invalid(format!(
                "{}: the run there was made with {was}, and this gate would use {now}; its gate.json would not describe the run: {}",
                run.dir.display(),
                super::run_folder::settings_hint(overrides, &run.cfg.path)
            )));
        }
    }
    super::run_folder::made_by(&run.cfg, &run.dir)
        .and_then(|()| super::run_folder::gate_made_by(&run.cfg, &run.dir))
        .map_err(|msg| {
        let msg =
            msg.replace(super::run_folder::OVERRIDE_HINT, &super::run_folder::settings_hint(overrides, &run.cfg.path));
        RunFolderError::Invalid(format!("{}: {msg}", run.dir.display()))
    })?;
    // The fingerprint books count against max_usd too, and the gate does not open them: their
    // damage is said here, as a run of the folder says it (the gate opens its trusted judge's).
    for w in crate::store::books::books_warnings(&run.dir, &[crate::store::books::FINGERPRINT_BOOKS])? {
        super::warn_line(&w);
    }
    if let Some(w) = &run.torn_line {
        tracing::warn!("{w}");
    }
    // The trusted judge's paid verdicts go into the run folder: one process at a time.
    let _lock = crate::store::lock::RunLock::acquire(&run.dir)?;
    let report = match gate_for(&run.cfg, &run.dir, &run.verdicts, handle_signals).await {
        Err(e @ RunFolderError::Interrupted { .. }) => {
            rebook_result(&run.dir)?;
            return Err(e);
        }
        r => r?,
    };
    let path = write_gate(&run.dir, &report)?;
    // The trusted judge may just have paid into the folder's books: the run's result.json says
    // what they hold (its folder_spend, read by `report` and `compare`).
    rebook_result(&run.dir)?;
    let text = gate_text(&report, &path);
    Ok((report, text))
}

/// Rewrite the `folder_spend` of run folder `dir`'s result.json (when there is one) from the
/// books as they are now: a gate's trusted judge or a fingerprint check paid into them after the
/// run wrote it (also when it was interrupted: the result must not understate the spend).
///
/// # Errors
/// [`RunFolderError`] naming the books or result.json that cannot be read or written.
pub fn rebook_result(dir: &Path) -> Result<(), RunFolderError> {
    if let Some(mut made) = super::run_folder::read_result(dir) {
        refresh_folder_spend(dir, &mut made)?;
        let file = dir.join("result.json");
        let text = serde_json::to_string_pretty(&made).expect("serialisable") + "\n";
        std::fs::write(&file, text).map_err(io_err(&file))?;
    }
    Ok(())
}

fn no_gate(config: &Path) -> RunFolderError {
    RunFolderError::Invalid(format!(
        "{}: no `gate:` section; add e.g. `gate: {{anchors: 10, alpha: 0.05, trusted: {{<judge config>}}}}` or `labels: FILE`",
        config.display()
    ))
}

fn write_gate(dir: &Path, report: &GateReport) -> Result<std::path::PathBuf, RunFolderError> {
    std::fs::create_dir_all(dir).map_err(io_err(dir))?;
    let path = dir.join("gate.json");
    let text = serde_json::to_string_pretty(report).expect("serialisable");
    std::fs::write(&path, text + "\n").map_err(io_err(&path))?;
    Ok(path)
}

/// Run the trusted-anchor gate of `cfg` (docs/model.md §5) on a run's valid `verdicts`: fit the naive
/// and the bias-aware model, select the anchors, label them (trusted judge in both orders,
/// cached in `<dir>/trusted_verdicts.jsonl`, or the labels file) and test. The run's
/// `budget.max_usd` bounds the folder's books, the trusted judge's included: its new queries
/// must fit in what is left (worst case) or nothing is sent.
///
/// # Errors
/// As [`gate_command`].
pub async fn gate_for(
    cfg: &Config,
    dir: &Path,
    verdicts: &[crate::domain::verdict::ItemVerdict],
    handle_signals: bool,
) -> Result<GateReport, RunFolderError> {
    let g: GateConfig = cfg.raw.gate.clone().ok_or_else(|| no_gate(&cfg.path))?;
    let dir = dir.to_path_buf();
    if verdicts.is_empty() {
        return Err(RunFolderError::Invalid(format!("{}: the run has no valid verdicts", dir.display())));
    }
    let cov = bias_covariates(cfg)?;
    if cov.p() == 0 {
        return Err(RunFolderError::Invalid(format!("pool {:?} has no covariate to correct for", cfg.pool.pool_id)));
    }
    let pool = &cfg.pool;
    let k = cfg.raw.k;
    let [naive, corr] = fit_naive_and_corrected(pool, &cov, verdicts, &cfg.raw.model.prior())?;
    let anchors = gate::select_anchors(&naive, &corr, k, g.anchors);
    let id = |b: usize| pool.bases[b].clone();
    let source = g.source().map_err(|e| RunFolderError::Invalid(e.to_string()))?;
    let (probs, label_source, spend): (Vec<Option<f64>>, String, f64) = match source {
        LabelSource::Trusted(t) => {
            let setup = |m: crate::judge::setup::JudgeSetupError| RunFolderError::Invalid(format!("gate.trusted: {m}"));
            let info = judge_info(t).map_err(setup)?;
            let desc = info.describe();
            let make = || make_judge(t).map_err(setup);
            let grace = handle_signals.then(|| std::time::Duration::from_secs_f64(cfg.raw.interrupt_grace_s));
            let (ys, spend) = trusted_verdicts(info, make, pool, &anchors, &dir, cfg.raw.budget.max_usd, grace).await?;
            let probs = ys.iter().map(|&(u, v)| gate::order_averaged(u, v)).collect();
            (probs, format!("trusted judge {desc}, both orders"), spend)
        }
        LabelSource::Labels(path) => {
            let labels = read_labels(path, pool)?;
            let mut probs = Vec::new();
            let mut missing = Vec::new();
            for a in &anchors {
                let (x, y) = (id(a.corrected_prefers), id(a.naive_prefers));
                let key = if x < y { (x.clone(), y.clone()) } else { (y.clone(), x.clone()) };
                match labels.get(&key) {
                    Some(Some(w)) => probs.push(Some(if *w == x { 1.0 } else { 0.0 })),
                    Some(None) => probs.push(Some(0.5)),
                    None => missing.push((a.corrected_prefers, a.naive_prefers)),
                }
            }
            if !missing.is_empty() {
                let first = first_items(pool);
                let todo = dir.join("anchors_to_label.jsonl");
                let mut text = String::new();
                for &(c, n) in &missing {
                    let line = serde_json::json!({
                        "a": id(c), "b": id(n), "better": null,
                        "text_a": pool.items[first[c]].text, "text_b": pool.items[first[n]].text,
                    });
                    text.push_str(&line.to_string());
                    text.push('\n');
                }
                std::fs::create_dir_all(&dir).map_err(io_err(&dir))?;
                std::fs::write(&todo, text).map_err(io_err(&todo))?;
                return Err(RunFolderError::Invalid(format!(
                    "{}: {} of {} anchors have no label (first: {} vs {}); they are listed in {} — set \"better\" to a base id or \"tie\" and add the lines to the labels file",
                    path.display(),
                    missing.len(),
                    anchors.len(),
                    id(missing[0].0),
                    id(missing[0].1),
                    todo.display()
                )));
            }
            (probs, format!("labels file {}", path.display()), 0.0)
        }
    };
    let better: Vec<Option<usize>> = anchors
        .iter()
        .zip(&probs)
        .map(|(a, p)| match p {
            Some(p) if *p > 0.5 => Some(a.corrected_prefers),
            Some(p) if *p < 0.5 => Some(a.naive_prefers),
            _ => None,
        })
        .collect();
    let decision = gate::decide(&anchors, &better, g.alpha);
    let rows = anchors
        .iter()
        .zip(&probs)
        .zip(&better)
        .map(|((a, p), b)| AnchorRow {
            corrected_prefers: id(a.corrected_prefers),
            naive_prefers: id(a.naive_prefers),
            naive_ranks: a.naive_ranks,
            corrected_ranks: a.corrected_ranks,
            distance: a.distance,
            trusted_p: *p,
            label: match b {
                Some(w) if *w == a.corrected_prefers => AnchorLabel::Corrected,
                Some(_) => AnchorLabel::Naive,
                None => AnchorLabel::Tie,
            },
        })
        .collect();
    // gate.json records the run's judge, and `run --gate` checks it: a judge that cannot be built
    // here is an error, not an empty name.
    let settings = GateSettings::of(cfg)?;
    // Bases tied at the boundary share its places, as the run says (hunt 59: the gate named a
    // top-k that values 1e-19 apart decided).
    let (naive_top, corrected_top) = (topk_with_ties(&naive, k), topk_with_ties(&corr, k));
    let report = GateReport {
        run: cfg.raw.name.clone(),
        pool_id: pool.pool_id.clone(),
        judge: settings.judge,
        covariates: settings.covariates,
        transforms: settings.transforms,
        k,
        comparisons: verdicts.len(),
        anchors_requested: g.anchors,
        label_source,
        trusted_spend_usd: spend,
        anchors: rows,
        decision,
        decision_text: decision.text(),
        naive_topk: naive_top.topk.into_iter().map(id).collect(),
        naive_tied: naive_top.tied.into_iter().map(id).collect(),
        corrected_topk: corrected_top.topk.into_iter().map(id).collect(),
        corrected_tied: corrected_top.tied.into_iter().map(id).collect(),
    };
    Ok(report)
}

/// `run --gate gate.json`: report the ranking the gate chose. Checks that the gate was computed
/// for the same judge and covariates (the gate decides per judge, covariate and task; a gate
/// from another pool of the same task is accepted with a note), fits the other model to the
/// run's verdicts when needed, stores the choice in `result.gate`, rewrites result.json, and
/// returns the printable lines.
///
/// # Errors
/// [`RunFolderError`]: unreadable gate file, judge or covariate mismatch, fit failure.
pub fn apply_gate(cfg: &Config, result: &mut RunResult, gate_file: &Path) -> Result<String, RunFolderError> {
    let g = read_gate(cfg, &result.judge, gate_file)?;
    apply_report(cfg, result, &g, gate_file)
}

/// Read a gate.json for a run of `cfg` whose judge is described as `judge`: checked before a
/// run spends anything (`run --gate FILE`), and again when applied.
///
/// # Errors
/// [`RunFolderError`]: the file is unreadable or not a gate.json, or the gate was computed for
/// another judge or other covariates.
pub fn read_gate(cfg: &Config, judge: &str, gate_file: &Path) -> Result<GateReport, RunFolderError> {
    let text = std::fs::read_to_string(gate_file).map_err(io_err(gate_file))?;
    let g: GateReport = serde_json::from_str(&text).map_err(|e| RunFolderError::Parse {
        path: gate_file.to_owned(),
        line: e.line(),
        msg: if e.is_syntax() || e.is_eof() {
            format!("not JSON ({e}); expected the gate.json written by `topk-judge gate`")
        } else {
            format!("{e}; expected the gate.json written by `topk-judge gate`")
        },
    })?;
    if cfg.raw.model.kind == crate::model::summary::ModelKind::Naive {
        return Err(RunFolderError::Invalid(format!(
            "{}: this run's model.kind is naive, which fits only the naive ranking, so a gate (which chooses between it and the bias-corrected one) has nothing to choose; set model.kind: bias_aware",
            gate_file.display()
        )));
    }
    let mut this = GateSettings::of(cfg)?;
    this.judge = judge.to_owned();
    // The transforms are checked when the file records them (older gate.json files do not).
    let made = GateSettings {
        judge: g.judge.clone(),
        covariates: g.covariates.clone(),
        transforms: if g.transforms.is_empty() { this.transforms.clone() } else { g.transforms.clone() },
        k: g.k,
    };
    if let Some((was, now)) = made.differs_from(&this) {
        return Err(RunFolderError::Invalid(format!(
            "{}: the gate was computed with {was}, this run uses {now}; a gate decides for one judge, covariates and their transforms, at the top-k boundary its anchors were chosen at",
            gate_file.display()
        )));
    }
    Ok(g)
}

/// What a gate decides for: the judge (as described), the covariates and their transforms, k.
#[derive(Debug, Clone, PartialEq)]
struct GateSettings {
    judge: String,
    covariates: Vec<String>,
    transforms: std::collections::BTreeMap<String, crate::domain::pool::Transform>,
    k: usize,
}

impl GateSettings {
    /// The settings of a run of `cfg`.
    fn of(cfg: &Config) -> Result<Self, RunFolderError> {
        let judge = crate::config::judge::judge_info(cfg.raw.judge()).map(|j| j.describe()).map_err(|m| {
            RunFolderError::Invalid(format!("{}: the run's judge cannot be built: {m}", cfg.path.display()))
        })?;
        let cov = bias_covariates(cfg)?;
        let transforms = cov.names.iter().cloned().zip(cov.transforms.iter().copied()).collect();
        Ok(Self { judge, covariates: cov.names, transforms, k: cfg.raw.k })
    }

    /// The settings a run's result.json records.
    fn of_result(r: &RunResult) -> Self {
        Self {
            judge: r.judge.clone(),
            covariates: r.fit.reporting.transforms.keys().cloned().collect(),
            transforms: r.fit.reporting.transforms.clone(),
            k: r.k,
        }
    }

    /// The first setting in which `self` differs from `other`, as (self's, other's) in words,
    /// e.g. ("k = 5", "k = 3"); `None` when alike. Covariates compare as sets (a result lists
    /// them sorted).
    fn differs_from(&self, other: &Self) -> Option<(String, String)> {
        // Descriptions written before the mock's mode was spelled as in the config differ in case.
        if !self.judge.eq_ignore_ascii_case(&other.judge) {
            return Some((format!("judge {:?}", self.judge), format!("judge {:?}", other.judge)));
        }
        let sorted = |v: &[String]| {
            let mut v = v.to_vec();
            v.sort();
            v
        };
        if sorted(&self.covariates) != sorted(&other.covariates) {
            return Some((format!("covariates {:?}", self.covariates), format!("covariates {:?}", other.covariates)));
        }
        if self.transforms != other.transforms {
            let show = |t: &std::collections::BTreeMap<String, crate::domain::pool::Transform>| {
                let parts: Vec<String> =
                    t.iter().map(|(n, t)| format!("{n}: {}", crate::report::table::name(t))).collect();
                format!("covariate transforms [{}]", parts.join(", "))
            };
            return Some((show(&self.transforms), show(&other.transforms)));
        }
        (self.k != other.k).then(|| (format!("k = {}", self.k), format!("k = {}", other.k)))
    }
}

/// Apply a gate report to a run's result: the reported ranking follows the gate's decision
/// under `report_ranking: auto` ([`crate::report::outcome::rechoose`]), `result.gate` records
/// it, result.json is rewritten; returns the printable lines.
///
/// # Errors
/// [`RunFolderError::Io`] writing result.json.
pub fn apply_report(
    cfg: &Config,
    result: &mut RunResult,
    g: &GateReport,
    gate_file: &Path,
) -> Result<String, RunFolderError> {
    let mut notes = Vec::new();
    if g.pool_id != result.pool_id {
        notes.push(format!(
            "gate computed on pool {:?} and reused for pool {:?}: this assumes corr(quality, covariate) is stable within the task family",
            g.pool_id, result.pool_id
        ));
    }
    if g.decision.n_anchors < g.anchors_requested {
        notes.push(format!(
            "the gate had only {} anchors (K = {} requested)",
            g.decision.n_anchors, g.anchors_requested
        ));
    }
    if g.trusted_spend_usd > 0.0 {
        // A gate.json of another folder (`run --gate FILE`) was paid from that folder's books.
        let canon = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_owned());
        let here = gate_file.parent().is_some_and(|d| canon(d) == canon(&cfg.run_dir));
        notes.push(if here {
            format!(
                "the trusted verdicts this gate used cost {} (paid by this gate or an earlier one of the run; the folder's books count each once against budget.max_usd)",
                crate::report::table::usd(g.trusted_spend_usd)
            )
        } else {
            format!(
                "the trusted verdicts this gate used cost {}, paid by the gate of run {:?} from its folder's books (not from this run's folder)",
                crate::report::table::usd(g.trusted_spend_usd),
                g.run
            )
        });
    }
    crate::report::outcome::rechoose(result, &cfg.pool, Some(&g.decision));
    let choice = GateChoice {
        file: gate_file.to_owned(),
        decision: g.decision,
        chosen: result.fit.reporting.reported,
        topk: result.fit.topk.clone(),
        recall_at_k: result.fit.recall_at_k,
        notes,
    };
    let mut s = format!("gate {}: {}\n", gate_file.display(), g.decision.text());
    s.push_str(&format!("chosen ({}) top-{}: {}\n", choice.chosen.name(), cfg.raw.k, choice.topk.join(", ")));
    if let Some(r) = choice.recall_at_k {
        s.push_str(&format!("recall@{} of the chosen ranking against gold: {r:.2}\n", cfg.raw.k));
    }
    for n in &choice.notes {
        s.push_str(&format!("note: {n}\n"));
    }
    if result.fit.reporting.report_ranking != crate::analysis::ranking::ReportRanking::Auto {
        s.push_str(&format!(
            "note: report_ranking: {} is set, so the reported ranking does not follow the gate\n",
            crate::report::table::name(&result.fit.reporting.report_ranking)
        ));
    }
    result.gate = Some(choice);
    let path = cfg.run_dir.join("result.json");
    let json = serde_json::to_string_pretty(result).expect("serialisable");
    std::fs::write(&path, json + "\n").map_err(io_err(&path))?;
    // rankings.csv ranks as result.json does, after the gate's choice.
    if let Some(sys) = &result.fit.reporting.systems {
        crate::report::systems::write_rankings(&cfg.run_dir, sys).map_err(io_err(&cfg.run_dir.join("rankings.csv")))?;
    }
    Ok(s)
}

/// What a run holds back of `budget.max_usd` for its config's gate ([`gate_hold`]).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct GateHold {
    /// USD held: the run's judge leaves it unspent.
    pub usd: f64,
    /// The trusted judge's queries it covers (2 × `gate.anchors`).
    pub queries: usize,
    /// When the gate's worst case is more than what max_usd leaves, nothing is held (the run's
    /// judge would buy nothing) and this says so.
    pub warning: Option<String>,
}

/// What a run of `cfg` holds back of `budget.max_usd` for its `gate:` section's trusted judge,
/// asked after the run on the same books (docs/live.md, "Budget"): its `2 × gate.anchors`
/// queries, each at the worst case of the dearest ordered pair of two bases' first renderings.
/// An upper bound: the anchors are chosen after the run, so the trusted verdicts the folder
/// already holds may not be theirs (they moved, or the trusted judge changed), and none is
/// subtracted. Nothing is held without a trusted judge, a price or max_usd, nor when the worst
/// case is more than max_usd leaves of the folder's books (`warning` then says so).
///
/// # Errors
/// [`crate::store::books::BooksError`]: the folder's books cannot be read (they were taken as $0 spent).
pub fn gate_hold(cfg: &Config) -> Result<GateHold, crate::store::books::BooksError> {
    let (usd, queries) = gate_worst_case(cfg);
    let Some(max) = cfg.raw.budget.max_usd.filter(|_| usd > 0.0) else { return Ok(GateHold::default()) };
    let left = max - crate::store::books::folder_books(&cfg.run_dir)?.total().total_usd();
    if usd <= left + 1e-12 {
        return Ok(GateHold { usd, queries, warning: None });
    }
    Ok(GateHold {
        usd: 0.0,
        queries,
        warning: Some(format!(
            "the gate's trusted judge may cost up to ${usd:.6} (its {queries} queries at their worst case), more than max_usd ${max} leaves (${:.6}): nothing is held for it, so the run's judge may spend the budget, and the gate runs only if what is left then covers its anchors; raise budget.max_usd or lower gate.anchors",
            left.max(0.0)
        )),
    })
}

/// The worst case of the gate's trusted queries (USD, queries), as [`gate_hold`] holds it.
fn gate_worst_case(cfg: &Config) -> (f64, usize) {
    let Some(g) = &cfg.raw.gate else { return (0.0, 0) };
    let Ok(LabelSource::Trusted(t)) = g.source() else { return (0.0, 0) };
    let Ok(info) = judge_info(t) else { return (0.0, 0) };
    let pool = &cfg.pool;
    if !info.has_price() || pool.n_bases() < 2 {
        return (0.0, 0);
    }
    let queries = 2 * g.anchors;
    // The dearest ordered pair: among the bases whose first renderings are longest (a query's
    // worst case grows with its two answers' lengths), every ordered pair priced exactly.
    let mut by_len: Vec<usize> = first_items(pool);
    let len = |i: usize| pool.items[i].text.as_deref().map_or(0, str::len);
    by_len.sort_by_key(|&i| std::cmp::Reverse(len(i)));
    by_len.truncate(64);
    let worst = by_len
        .iter()
        .flat_map(|&a| by_len.iter().filter(move |&&b| b != a).map(move |&b| (a, b)))
        .map(|(a, b)| info.worst_case_usd(pool, a, b))
        .fold(0.0_f64, f64::max);
    (worst * queries as f64, queries)
}

/// The gate of a run config's `gate:` section, at the end of `run`: run on the run's verdicts
/// (trusted verdicts cached like any verdict; their worst case must fit in what is left of
/// `budget.max_usd`), write gate.json and apply the decision to the result.
///
/// # Errors
/// [`RunFolderError`] from the gate (missing labels, a failing trusted judge, no budget left).
pub async fn gate_after_run(
    cfg: &Config,
    result: &mut RunResult,
    handle_signals: bool,
) -> Result<String, RunFolderError> {
    let verdicts = run_verdicts(cfg, &cfg.run_dir)?;
    if verdicts.is_empty() {
        return Ok("gate: not run: the run has no valid verdict\n".into());
    }
    // The trusted judge's paid verdicts go into the run folder: one process at a time.
    let _lock = crate::store::lock::RunLock::acquire(&cfg.run_dir)?;
    let report = match gate_for(cfg, &cfg.run_dir, &verdicts, handle_signals).await {
        // The trusted verdicts paid before the signal are in the books: the result says so.
        Err(e @ RunFolderError::Interrupted { .. }) => {
            refresh_folder_spend(&cfg.run_dir, result)?;
            let file = cfg.run_dir.join("result.json");
            let text = serde_json::to_string_pretty(&*result).expect("serialisable") + "\n";
            std::fs::write(&file, text).map_err(io_err(&file))?;
            return Err(e);
        }
        r => r?,
    };
    let path = write_gate(&cfg.run_dir, &report)?;
    // What the trusted judge just paid is in the folder's books: result.json's folder_spend
    // (written by apply_report) holds it.
    refresh_folder_spend(&cfg.run_dir, result)?;
    apply_report(cfg, result, &report, &path)
}

/// `result.folder_spend` as the books of the run folder `dir` hold it now (a gate's trusted judge
/// paid into them after the run), with the run's own hold for its gate kept.
///
/// # Errors
/// [`RunFolderError::Invalid`] naming the folder whose books cannot be read.
fn refresh_folder_spend(dir: &Path, result: &mut RunResult) -> Result<(), RunFolderError> {
    let books = crate::store::books::folder_books(dir)
        .map_err(|e| RunFolderError::Invalid(format!("{}: {e}", dir.display())))?;
    result.folder_spend = crate::report::schema::FolderSpend {
        held_for_gate_usd: result.folder_spend.held_for_gate_usd,
        ..crate::report::result::folder_spend(&books, result.spend_usd, result.folder_spend.max_usd)
    };
    Ok(())
}

/// `topk-judge gate RUN_OR_CONFIG`.
#[derive(Debug, clap::Args)]
pub struct GateArgs {
    /// A run folder, or its config file, with a `gate:` section (the run must exist).
    pub run_or_config: std::path::PathBuf,
    /// Config overrides (as for `run`).
    #[command(flatten)]
    pub overrides: crate::config::overrides::OverrideArgs,
}

/// `topk-judge gate`: run the trusted-anchor gate on a run and print its decision.
///
/// # Errors
/// [`RunFolderError`].
pub fn run(args: &GateArgs, rt: &tokio::runtime::Runtime) -> Result<std::process::ExitCode, RunFolderError> {
    let overrides = args.overrides.overrides()?;
    // The gate's queries are its anchors, asked of the trusted judge in both orders: a count of
    // comparisons would bound nothing here, so it is refused rather than silently ignored.
    if let Some(o) = overrides.iter().find(|o| o.key == ["budget", "max_comparisons"]) {
        return Err(RunFolderError::Invalid(format!(
            "{}: the gate has no comparison budget: it asks its K anchors (gate.anchors) of the trusted judge in both orders, 2K queries; budget.max_usd bounds what it spends (--max-usd)",
            o.given
        )));
    }
    let (_, text) = match rt.block_on(gate_command(&args.run_or_config, &overrides, true)) {
        Err(e @ RunFolderError::Interrupted { .. }) => {
            use std::io::Write;
            let said = format!("gate {}: {e}", args.run_or_config.display());
            let _ = writeln!(std::io::stderr(), "{}", crate::domain::fmt::printable(&said));
            return Ok(std::process::ExitCode::from(crate::run::interrupt::EXIT_INTERRUPTED as u8));
        }
        r => r?,
    };
    super::print_out(&text);
    Ok(std::process::ExitCode::SUCCESS)
}

//! `topk-judge compare RUN…`: the cheap-vs-frontier cost/recall comparison of several runs
//! (docs/reports.md); with runs of several judges on several pools (e.g. replays of recordings,
//! docs/replay.md), the judge-by-judge comparison of cost against recall. The tables and plots
//! live in [`crate::report::compare`] and [`crate::report::judges`].

use crate::report::compare::{CompareError, PanelRunDir, RunDir, compare_with_panels, markdown, plot_with_panels};
use crate::report::judges::{self, PriceTable};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// What `compare` compares against and how it prices.
#[derive(Debug, Clone, Copy, Default)]
pub struct CompareOptions<'a> {
    /// Recall against this run's top-k (runs of one pool).
    pub reference: Option<&'a Path>,
    /// Recall against this judge's run on each pool (runs of several pools; or one pool).
    pub reference_judge: Option<&'a str>,
    /// A price table for judges whose recordings carry no (or another) cost.
    pub prices: Option<&'a Path>,
}

/// `topk-judge compare`: load the runs, price them from the table if given, and write
/// compare.md, compare.json and a plot into `out` — recall_vs_spend.svg for runs of one pool,
/// cost_vs_recall.svg for judges over several pools; return compare.md's text.
///
/// # Errors
/// [`CompareError`].
pub fn compare_command(runs: &[PathBuf], opts: CompareOptions<'_>, out: &Path) -> Result<Compared, CompareError> {
    // A run's result.json stands for its folder (then given twice if the folder is given too).
    let runs: Vec<PathBuf> = runs.iter().map(|r| crate::store::text::run_folder_of(r).to_owned()).collect();
    let runs = runs.as_slice();
    let opts = CompareOptions { reference: opts.reference.map(crate::store::text::run_folder_of), ..opts };
    given_once(runs)?;
    // Judge panels' runs (docs/model.md §8) go beside the single-judge ones, one pool only.
    let (panel_dirs, single_dirs): (Vec<&PathBuf>, Vec<&PathBuf>) = runs.iter().partition(|d| RunDir::is_panel(d));
    let mut panels = panel_dirs
        .iter()
        .map(|d| PanelRunDir::load_picking(d, &|recs| super::run_folder::current_judge_records(d, recs)))
        .collect::<Result<Vec<_>, _>>()?;
    let mut loaded = single_dirs
        .iter()
        .map(|d| RunDir::load_picking(d, &|recs| super::run_folder::current_judge_records(d, recs)))
        .collect::<Result<Vec<_>, _>>()?;
    // Each compared run's name before same-named runs are named by their folders.
    let given: Vec<(PathBuf, String)> = loaded
        .iter()
        .map(|r| (r.dir.clone(), r.label()))
        .chain(panels.iter().map(|p| (p.dir.clone(), p.label())))
        .collect();
    named_apart(&mut loaded, &mut panels);
    let unused = match opts.prices {
        Some(p) => PriceTable::load(p)?.apply(&mut loaded)?,
        None => Vec::new(),
    };
    let written = std::cell::RefCell::new(Vec::new());
    let w = |p: PathBuf, text: &str| {
        std::fs::write(&p, text)
            .map_err(|e| CompareError::Read { path: p.clone(), msg: format!("cannot write: {e}") })?;
        written.borrow_mut().push(p);
        Ok::<(), CompareError>(())
    };
    // A run's folder holds that run's report and plots (its recall_vs_spend.svg among them).
    if crate::store::files::is_run_folder(out) {
        return Err(CompareError::Read {
            path: out.to_owned(),
            msg: "--out: the folder of a run (it holds its verdicts or result), whose report and plots this would overwrite; give a folder of its own for the comparison".into(),
        });
    }
    crate::store::files::create_folder(out)
        .map_err(|m| CompareError::Read { path: out.to_owned(), msg: format!("--out: {m}") })?;
    let named: Vec<(&Path, &str)> = loaded
        .iter()
        .map(|r| (r.dir.as_path(), r.result.pool_id.as_str()))
        .chain(panels.iter().map(|p| (p.dir.as_path(), p.pool_id.as_str())))
        .collect();
    same_pool_behind_each_name(&named)?;
    let pools: BTreeSet<&str> = named.iter().map(|(_, id)| *id).collect();
    if pools.len() > 1 && !panels.is_empty() {
        return Err(CompareError::Mismatch(format!(
            "{} is a judge panel's run; a panel's run goes beside single-judge runs of its own pool, but these runs span {} pools",
            panels[0].dir.display(),
            pools.len()
        )));
    }
    if pools.len() > 1 {
        if let Some(r) = opts.reference {
            return Err(CompareError::Mismatch(format!(
                "--reference {} is one run of one pool, but these runs span {} pools; use --reference-judge NAME (that judge's run on each pool)",
                r.display(),
                pools.len()
            )));
        }
        let mut c = judges::compare_judges(&loaded, opts.reference_judge)?;
        c.unused_prices = unused;
        let md = judges::markdown(&c);
        w(out.join("compare.md"), &md)?;
        w(out.join("compare.json"), &(serde_json::to_string_pretty(&c).expect("serialisable") + "\n"))?;
        if let Some(svg) = judges::plot(&c)? {
            w(out.join("cost_vs_recall.svg"), &svg)?;
        }
        return Ok(Compared { markdown: md, written: without_stale_plots(out, written.take())? });
    }
    let reference = match (opts.reference, opts.reference_judge) {
        (Some(_), Some(_)) => {
            return Err(CompareError::Mismatch("give --reference or --reference-judge, not both".into()));
        }
        (Some(p), None) if RunDir::is_panel(p) => {
            return Err(CompareError::Mismatch(format!(
                "--reference {}: a judge panel's run cannot be the reference (its recall is measured like the others'); give a single-judge run, or the pool's gold quality is used when it has one",
                p.display()
            )));
        }
        (Some(p), None) => {
            let mut r = RunDir::load_picking(p, &|recs| super::run_folder::current_judge_records(p, recs))?;
            reference_named_apart(&mut r, &given);
            Some(r)
        }
        (None, Some(j)) => {
            let of: Vec<&RunDir> = loaded.iter().filter(|r| r.judge_label() == j).collect();
            match of.as_slice() {
                [one] => Some((*one).clone()),
                [] => {
                    let mut judges: Vec<String> = loaded.iter().map(RunDir::judge_label).collect();
                    judges.sort();
                    judges.dedup();
                    return Err(CompareError::Mismatch(format!(
                        "no run of reference judge {j:?}; the judges are: {}",
                        judges.join("; ")
                    )));
                }
                several => {
                    return Err(CompareError::Mismatch(format!(
                        "reference judge {j:?} judged {} of these runs ({}): give --reference RUN_FOLDER to say which is the reference",
                        several.len(),
                        several.iter().map(|r| r.dir.display().to_string()).collect::<Vec<_>>().join(", ")
                    )));
                }
            }
        }
        (None, None) => None,
    };
    let c = compare_with_panels(&loaded, &panels, reference.as_ref())?;
    let mut md = markdown(&c);
    if !unused.is_empty() {
        md.push_str(&format!("\nPrice-table entries that matched no run: {}.\n", unused.join(", ")));
    }
    w(out.join("compare.md"), &md)?;
    w(out.join("compare.json"), &(serde_json::to_string_pretty(&c).expect("serialisable") + "\n"))?;
    if let Some(svg) = plot_with_panels(&loaded, &panels, &c)? {
        w(out.join("recall_vs_spend.svg"), &svg)?;
    }
    Ok(Compared { markdown: md, written: without_stale_plots(out, written.take())? })
}

/// The plots `compare` draws (one pool; several pools).
const COMPARE_PLOTS: [&str; 2] = ["recall_vs_spend.svg", "cost_vs_recall.svg"];

/// Remove from `out` the plots of [`COMPARE_PLOTS`] this comparison did not write (an earlier
/// comparison's, which would read as this one's), and pass `written` on.
///
/// # Errors
/// [`CompareError::Read`] naming a plot that cannot be removed.
fn without_stale_plots(out: &Path, written: Vec<PathBuf>) -> Result<Vec<PathBuf>, CompareError> {
    crate::store::files::remove_earlier(out, |f| COMPARE_PLOTS.contains(&f) && !written.contains(&out.join(f)))
        .map_err(|(path, e)| CompareError::Read {
            path,
            msg: format!("cannot remove an earlier comparison's plot: {e}"),
        })?;
    Ok(written)
}

/// What `compare` made: the comparison in markdown, and the files it wrote (in order).
#[derive(Debug, Clone)]
pub struct Compared {
    /// compare.md's text.
    pub markdown: String,
    /// The files written: compare.md, compare.json, and the plot when there is one.
    pub written: Vec<PathBuf>,
}

/// `topk-judge compare RUN…`.
#[derive(Debug, clap::Args)]
pub struct CompareArgs {
    /// Run folders (each with result.json and verdicts.jsonl).
    #[arg(required = true, num_args = 1..)]
    pub runs: Vec<PathBuf>,
    /// Score recall against this run's top-k instead of the gold top-k (runs of one pool).
    #[arg(long)]
    pub reference: Option<PathBuf>,
    /// Score recall against this judge's run on each pool (a name as the table shows it).
    #[arg(long)]
    pub reference_judge: Option<String>,
    /// Price table (YAML: judge name → usd_per_verdict or input/output_usd_per_mtok) for judges
    /// whose recordings carry no cost (docs/replay.md).
    #[arg(long)]
    pub prices: Option<PathBuf>,
    /// Output folder for compare.md, compare.json and the plot (recall_vs_spend.svg, or
    /// cost_vs_recall.svg for runs over several pools; default: the current folder).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// `topk-judge compare`: write the comparison and print compare.md.
///
/// # Errors
/// [`CompareError`].
pub fn run(args: &CompareArgs) -> Result<std::process::ExitCode, CompareError> {
    let out = args.out.clone().unwrap_or_else(|| PathBuf::from("."));
    let opts = CompareOptions {
        reference: args.reference.as_deref(),
        reference_judge: args.reference_judge.as_deref(),
        prices: args.prices.as_deref(),
    };
    let done = compare_command(&args.runs, opts, &out)?;
    let wrote: String = done.written.iter().map(|p| format!("wrote {}\n", p.display())).collect();
    super::print_out(&format!("{}\n{wrote}", done.markdown));
    Ok(std::process::ExitCode::SUCCESS)
}

/// Each run folder is given once: a folder named twice (`runs/a runs/a`, `runs/a runs/./a/`)
/// would be a row beside itself.
///
/// # Errors
/// [`CompareError::Mismatch`] naming the folder and both spellings.
/// Runs of one name in two folders (`runs/cheap`, `runs2/cheap`) are named by their folders,
/// as given, so no two rows, columns or compare.json entries read alike.
fn named_apart(runs: &mut [RunDir], panels: &mut [PanelRunDir]) {
    let labels: Vec<String> = runs.iter().map(RunDir::label).chain(panels.iter().map(PanelRunDir::label)).collect();
    let shared = |l: &String| labels.iter().filter(|x| *x == l).count() > 1;
    for r in runs.iter_mut().filter(|r| shared(&r.label())) {
        r.result.name = r.dir.display().to_string();
    }
    for p in panels.iter_mut().filter(|p| shared(&p.label())) {
        p.name = p.dir.display().to_string();
    }
}

/// A `--reference` run that shares its name with a compared run in another folder, or with runs
/// [`named_apart`] named by their folders, is named by its folder too ("reference y/runs/cheap").
fn reference_named_apart(reference: &mut RunDir, given: &[(PathBuf, String)]) {
    let label = reference.label();
    let canonical = |d: &Path| std::fs::canonicalize(d).unwrap_or_else(|_| d.to_owned());
    let at = canonical(&reference.dir);
    let same: Vec<&PathBuf> = given.iter().filter(|(_, l)| *l == label).map(|(d, _)| d).collect();
    if same.len() > 1 || same.iter().any(|d| canonical(d) != at) {
        reference.result.name = reference.dir.display().to_string();
    }
}

fn given_once(runs: &[PathBuf]) -> Result<(), CompareError> {
    let mut seen: std::collections::HashMap<PathBuf, &PathBuf> = Default::default();
    for dir in runs {
        let key = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.clone());
        if let Some(first) = seen.insert(key, dir) {
            let spelled = if first.as_os_str() == dir.as_os_str() {
                format!("{} is given twice", dir.display())
            } else {
                format!("{} and {} are one run folder", first.display(), dir.display())
            };
            return Err(CompareError::Mismatch(format!("{spelled}: compare different runs, each once")));
        }
    }
    Ok(())
}

/// Runs whose pools have one name must hold one pool: a run over many prompts is named by their
/// count ("10 prompts"), so two runs over different prompts share a name. Each run folder's copy
/// of its pool (pool.jsonl) tells them apart; a folder without one is taken at its name.
///
/// # Errors
/// [`CompareError::Mismatch`] naming two runs whose pools differ under one name.
fn same_pool_behind_each_name(runs: &[(&Path, &str)]) -> Result<(), CompareError> {
    let mut seen: std::collections::BTreeMap<&str, (&Path, String)> = Default::default();
    for &(dir, id) in runs {
        let Ok(text) = std::fs::read_to_string(dir.join("pool.jsonl")) else { continue };
        let digest = crate::domain::rng::sha256_hex(&text);
        match seen.get(id) {
            Some((first, d)) if *d != digest => {
                return Err(CompareError::Mismatch(format!(
                    "{} and {} both name their pool {id:?} but hold different pools (their pool.jsonl differ: other prompts or items); compare runs of one pool, or runs of several pools by judge",
                    first.display(),
                    dir.display()
                )));
            }
            Some(_) => {}
            None => {
                seen.insert(id, (dir, digest));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A comparison that draws no plot (no gold and no reference) or the other plot does not
    /// leave an earlier comparison's plot in its folder as if it were its own.
    #[test]
    fn an_earlier_comparisons_plot_is_removed_and_this_ones_kept() {
        let dir = tempfile::tempdir().unwrap();
        for name in COMPARE_PLOTS.iter().chain(&["mine.svg"]) {
            std::fs::write(dir.path().join(name), "<svg/>").unwrap();
        }
        let ours = vec![dir.path().join("compare.md"), dir.path().join("cost_vs_recall.svg")];
        assert_eq!(without_stale_plots(dir.path(), ours.clone()).unwrap(), ours);
        assert!(!dir.path().join("recall_vs_spend.svg").exists());
        assert!(dir.path().join("cost_vs_recall.svg").exists() && dir.path().join("mine.svg").exists());
        assert!(without_stale_plots(dir.path(), vec![]).unwrap().is_empty());
        assert!(!dir.path().join("cost_vs_recall.svg").exists() && dir.path().join("mine.svg").exists());
    }
}

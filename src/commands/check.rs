//! `topk-judge check POOL JUDGMENTS`: the leaderboard check (docs/systems.md, "Checking a
//! leaderboard"). Given a benchmark's answers (a pool file over many prompts) and the judge's
//! recorded pairwise verdicts (a recording keyed per prompt, e.g. from `import --judgments`), it
//! fits the bias-aware Bradley–Terry model of docs/model.md §2 to every verdict and says, per
//! style covariate, whether the design identifies its coefficient (the profile likelihood's
//! range in nats), what the trusted-anchor gate decides when trusted verdicts are given
//! (`--anchors`, docs/model.md §5), and whether the length-corrected top-k differs from the raw
//! (apparent) one.

use super::fit::{
    FitCommandError, FitRequest, VerdictLine, fit_file, parse_covariates, read_verdict_lines, split_by_settings,
};
use crate::analysis::gate::{Anchor, decide, select_anchors};
use crate::domain::pool::Pool;
use crate::report::check::{CheckReport, CovariateCheck, GateCheck};
use std::collections::HashMap;
use std::path::PathBuf;

/// `topk-judge check POOL JUDGMENTS [--anchors TRUSTED]`.
#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// Pool file over many prompts (JSON Lines, one prompt per line; e.g. from `import`).
    pub pool_file: PathBuf,
    /// The judge's recorded verdicts (JSON Lines, docs/replay.md; keyed per prompt: pool_id =
    /// prompt, a and b = system ids; e.g. from `import --judgments`).
    pub judgments: PathBuf,
    /// k of the top-k compared [default: 3].
    #[arg(long, allow_negative_numbers = true)]
    pub k: Option<usize>,
    /// Use only the verdicts of this judge, when the file holds several (its exact name or a
    /// prefix only it starts with).
    #[arg(long)]
    pub judge: Option<String>,
    /// Trusted verdicts (a recording of the same form, e.g. human preferences): the
    /// trusted-anchor gate labels the anchors with them.
    #[arg(long)]
    pub anchors: Option<PathBuf>,
    /// Anchors the gate looks at (the disagreements of the two rankings nearest the top-k
    /// boundary).
    #[arg(long, default_value_t = 40, allow_negative_numbers = true)]
    pub max_anchors: usize,
    /// Significance level of the gate's sign test.
    #[arg(long, default_value_t = 0.05, allow_negative_numbers = true)]
    pub alpha: f64,
    /// Covariates as NAME or NAME:TRANSFORM, comma-separated (default: words:zscore).
    #[arg(long, value_delimiter = ',')]
    pub covariates: Option<Vec<String>>,
    /// Seed of the Monte-Carlo draws [default: 0].
    #[arg(long)]
    pub seed: Option<u64>,
    /// Write the check as JSON here.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// The trusted label of each anchor: the system the trusted verdicts prefer (mean over every
/// trusted verdict between the two systems on any prompt, each read for the system shown
/// first as y and for the other as 1 − y), `None` on a tie or without a trusted verdict; and
/// how many anchors had any. A verdict naming a system the pool does not have is an error
/// naming its line; verdicts on prompts the pool does not have are labels of their systems,
/// counted in a warning.
fn labels(
    pool: &Pool,
    anchors: &[Anchor],
    trusted: &std::path::Path,
    warnings: &mut Vec<String>,
) -> Result<(Vec<Option<usize>>, usize), FitCommandError> {
    let (mut lines, _) = read_verdict_lines(trusted)
        .map_err(|e| FitCommandError::Invalid(format!("--anchors {}: {e}", trusted.display())))?;
    // Anchors are one trusted judge's verdicts: several judges' would be mixed into one label,
    // also one name's records of two settings.
    split_by_settings(&mut lines, &trusted.display().to_string());
    let mut judges: Vec<&str> = lines.iter().filter_map(|l| l.judge.as_deref()).filter(|j| !j.is_empty()).collect();
    judges.sort_unstable();
    judges.dedup();
    if judges.len() > 1 {
        return Err(FitCommandError::Invalid(format!(
            "--anchors {}: holds verdicts of {} judges ({}); expected one trusted judge's verdicts: keep that judge's lines",
            trusted.display(),
            judges.len(),
            judges.join(", ")
        )));
    }
    let system_of = |pid: &Option<String>, id: &str| -> Option<usize> {
        let full = match pid {
            Some(p) if !pool.prompts.is_empty() => format!("{p}/{id}"),
            _ => id.to_owned(),
        };
        pool.item_index(&full).or_else(|| pool.bases.iter().position(|b| b == id)).map(|i| pool.item_base[i])
    };
    // Every record must name two of this pool's systems: one that does not (a misspelled name)
    // is a label the user means to give and the gate would not count.
    let unknown: Vec<String> = lines
        .iter()
        .filter_map(|l| {
            let id = [&l.a, &l.b].into_iter().find(|id| system_of(&l.pool_id, id).is_none())?;
            Some(format!("line {}: {id:?}", l.line))
        })
        .collect();
    if let Some(first) = unknown.first() {
        let more = match unknown.len() {
            1 => String::new(),
            n => format!(
                "; {}{}",
                unknown[1..].iter().take(4).cloned().collect::<Vec<_>>().join("; "),
                if n > 5 { "; …" } else { "" }
            ),
        };
        return Err(FitCommandError::Invalid(format!(
            "--anchors {}: {} of its {} verdicts name a system this pool does not have ({first}{more}); expected the trusted judge's verdicts between its systems: {}",
            trusted.display(),
            unknown.len(),
            lines.len(),
            pool.bases.iter().take(6).map(|b| format!("{b:?}")).collect::<Vec<_>>().join(", ")
                + if pool.bases.len() > 6 { ", …" } else { "" }
        )));
    }
    if let Some(l) = lines.iter().find(|l| system_of(&l.pool_id, &l.a) == system_of(&l.pool_id, &l.b)) {
        return Err(FitCommandError::Invalid(format!(
            "--anchors {}:{}: system {:?} is compared with itself; a trusted verdict needs two different systems",
            trusted.display(),
            l.line,
            l.a
        )));
    }
    // A verdict on a prompt the pool does not have still says which of its two systems the
    // trusted judge prefers: read as a label, and counted.
    let elsewhere: Vec<&VerdictLine> = lines
        .iter()
        .filter(|l| {
            !pool.prompts.is_empty()
                && l.pool_id.as_deref().is_some_and(|p| !pool.prompts.iter().any(|q| q.pool_id == p))
        })
        .collect();
    if let Some(l) = elsewhere.first() {
        warnings.push(format!(
            "--anchors {}: {} on prompts the pool does not have (line {}: {:?}); each is read as a label of its two systems",
            trusted.display(),
            crate::domain::fmt::count(elsewhere.len(), "verdict"),
            l.line,
            l.pool_id.as_deref().unwrap_or_default()
        ));
    }
    // (first, second) system → (Σ score of first, count).
    let mut score: HashMap<(usize, usize), (f64, usize)> = HashMap::new();
    for l in &lines {
        let (Some(y), Some(i), Some(j)) = (l.y, system_of(&l.pool_id, &l.a), system_of(&l.pool_id, &l.b)) else {
            continue;
        };
        if i == j {
            continue;
        }
        let (key, s) = if i < j { ((i, j), y) } else { ((j, i), 1.0 - y) };
        let e = score.entry(key).or_default();
        e.0 += s;
        e.1 += 1;
    }
    // A file without a verdict, or none of whose verdicts names this pool's systems (another
    // pool's, or mistyped): its anchors would all go unlabelled without a word.
    if lines.is_empty() {
        return Err(FitCommandError::Invalid(format!(
            "--anchors {}: holds no verdict; expected the trusted judge's verdicts (JSON Lines, one {{\"a\", \"b\", \"y\"}} per line) of anchor pairs",
            trusted.display()
        )));
    }
    let mut labelled = 0;
    let out = anchors
        .iter()
        .map(|a| {
            let (i, j) = (a.corrected_prefers.min(a.naive_prefers), a.corrected_prefers.max(a.naive_prefers));
            let (sum, n) = score.get(&(i, j)).copied().unwrap_or_default();
            if n == 0 {
                return None;
            }
            labelled += 1;
            let mean = sum / n as f64;
            if mean > 0.5 {
                Some(i)
            } else if mean < 0.5 {
                Some(j)
            } else {
                None
            }
        })
        .collect();
    Ok((out, labelled))
}

/// Run the check (module docs).
///
/// # Errors
/// [`FitCommandError`]: a file that cannot be read, a bad line named by file and line, k out
/// of range, a failed fit.
pub fn check(args: &CheckArgs) -> Result<CheckReport, FitCommandError> {
    if !(args.alpha > 0.0 && args.alpha < 1.0) {
        return Err(FitCommandError::Invalid(format!("--alpha {} must be in (0, 1)", args.alpha)));
    }
    let covariates = parse_covariates(args.covariates.as_deref())?;
    let k = args.k.unwrap_or(3);
    let req = FitRequest {
        usage: "check POOL JUDGMENTS",
        pool_file: &args.pool_file,
        verdicts_file: Some(&args.judgments),
        pool_id: None,
        judge: args.judge.as_deref(),
        model: None,
        k: args.k,
        report_ranking: None,
        covariates,
        lambda: [None; 3],
        strong_preference_weight: None,
        draws: None,
        seed: args.seed,
        systems: true,
        panel: false,
        recording: true,
        trusted: None,
        families: &[],
        system_families: &[],
    };
    if let Some(hint) = super::fit::swapped(&req, &args.judgments) {
        return Err(FitCommandError::Invalid(format!("{}: not a pool file\n  hint: {hint}", args.pool_file.display())));
    }
    let ids = crate::store::pool_file::pool_ids(&args.pool_file)
        .map_err(|e| FitCommandError::Invalid(format!("cannot read pool file {}: {e}", args.pool_file.display())))?;
    if ids.is_empty() {
        // No pool id read: the file's own fault (a JSON array, pretty-printed JSON) is named.
        crate::store::pool_file::read_pools(&args.pool_file).map_err(|e| {
            FitCommandError::Invalid(format!("cannot read pool file {}: {e}", args.pool_file.display()))
        })?;
    }
    if ids.len() < 2 {
        return Err(FitCommandError::Invalid(format!(
            "{} holds {}: `check` compares systems across many prompts (a pool file from `topk-judge import`, one line per prompt); for the verdicts of one pool use `topk-judge fit POOL VERDICTS`",
            args.pool_file.display(),
            crate::domain::fmt::count(ids.len(), "pool")
        )));
    }
    let (pool, fit) = fit_file(&req)?;
    if fit.comparisons == 0 {
        return Err(FitCommandError::Invalid(format!(
            "{}: no valid verdict of these prompts ({} invalid, {} of other pools): there is no ranking to check; give the judgments of this leaderboard (`topk-judge import` writes them)",
            args.judgments.display(),
            fit.invalid,
            fit.other_pools.values().sum::<usize>()
        )));
    }
    let f = &fit.fit;
    let covariates: Vec<CovariateCheck> =
        f.c.iter()
            .map(|(name, &c)| {
                let id = f.identifiability.get(name);
                CovariateCheck {
                    name: name.clone(),
                    c,
                    c_sd: f.c_sd.get(name).copied().unwrap_or(f64::NAN),
                    unit: crate::report::table::coef_unit(name, f.reporting.transforms.get(name).copied()),
                    profile_range_nats: id.and_then(|i| i.range_nats),
                    identified: id.is_some_and(|i| i.identified()),
                }
            })
            .collect();
    let (raw, corrected) = (&f.reporting.apparent, &f.reporting.corrected);
    let mut warnings = fit.warnings.clone();
    let gate = match &args.anchors {
        None => None,
        Some(_) if args.max_anchors == 0 => {
            return Err(FitCommandError::Invalid(
                "--max-anchors 0: the gate needs at least 1 anchor to test (default 40)".into(),
            ));
        }
        Some(t) if crate::store::files::same_file(t, &args.judgments) => {
            return Err(FitCommandError::Invalid(format!(
                "--anchors {}: the judged verdicts themselves; expected another, trusted judge's verdicts of the anchor pairs",
                t.display()
            )));
        }
        Some(trusted) => {
            let by_base = |m: &std::collections::BTreeMap<String, f64>| -> Vec<f64> {
                pool.bases.iter().map(|b| m.get(b).copied().unwrap_or(0.0)).collect()
            };
            let anchors = select_anchors(&by_base(&f.phi), &by_base(&f.theta), k, args.max_anchors);
            let (better, labelled) = labels(&pool, &anchors, trusted, &mut warnings)?;
            if labelled == 0 && !anchors.is_empty() {
                let pairs: Vec<String> = anchors
                    .iter()
                    .take(4)
                    .map(|a| format!("{} vs {}", pool.bases[a.corrected_prefers], pool.bases[a.naive_prefers]))
                    .collect();
                warnings.push(format!(
                    "--anchors {}: none of its verdicts compares the two systems of an anchor ({}{}), so the gate tested nothing and keeps the raw ranking; give the trusted judge's verdicts of those pairs",
                    trusted.display(),
                    pairs.join(", "),
                    if anchors.len() > 4 { format!(", … {} in all", anchors.len()) } else { String::new() }
                ));
            }
            let d = decide(&anchors, &better, args.alpha);
            Some(GateCheck { anchors: anchors.len(), labelled, decision: d })
        }
    };
    Ok(CheckReport {
        prompts: pool.prompts.len().max(1),
        judged_prompts: fit.judged_prompts,
        systems: pool.bases.clone(),
        verdicts: fit.comparisons,
        invalid: fit.invalid,
        judge: fit.judge.clone(),
        k,
        kappa: f.kappa,
        kappa_sd: f.kappa_sd,
        covariates,
        changes_topk: {
            let sorted = |v: &[String]| {
                let mut v = v.to_vec();
                v.sort();
                v
            };
            sorted(&raw.topk) != sorted(&corrected.topk) || sorted(&raw.tied) != sorted(&corrected.tied)
        },
        certified: f.reporting.certified.clone(),
        certified_ranking: f.reporting.reported,
        no_signal: f.reporting.no_signal.clone(),
        raw_topk: raw.topk.clone(),
        raw_tied: raw.tied.clone(),
        corrected_topk: corrected.topk.clone(),
        corrected_tied: corrected.tied.clone(),
        graph: f.reporting.graph.clone(),
        gate,
        left_out: fit.other_pools.values().sum(),
        left_out_prompts: fit.other_pools.keys().cloned().collect(),
        warnings,
    })
}

/// `topk-judge check`: print the check, write `--out`.
///
/// # Errors
/// [`FitCommandError`].
pub fn run(args: &CheckArgs) -> Result<std::process::ExitCode, FitCommandError> {
    if let Some(out) = &args.out {
        let inputs: Vec<&std::path::Path> =
            [Some(args.pool_file.as_path()), Some(args.judgments.as_path()), args.anchors.as_deref()]
                .into_iter()
                .flatten()
                .collect();
        crate::store::files::check_output_file(out, &inputs).map_err(|why| FitCommandError::WriteOut {
            path: out.clone(),
            source: std::io::Error::other(format!("--out: {why}")),
        })?;
    }
    let r = check(args)?;
    for w in &r.warnings {
        super::warn_line(w);
    }
    super::print_out(&r.text());
    if let Some(out) = &args.out {
        super::write_json_out(out, &r).map_err(|source| FitCommandError::WriteOut { path: out.clone(), source })?;
    }
    Ok(std::process::ExitCode::SUCCESS)
}

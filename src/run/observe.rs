//! What watches a live run without steering it: the refit that runs off the async runtime and
//! its fits.jsonl line ([`FitsLog`], one line per refit with new verdicts, flushed; the last one
//! is the exact warm start of a resumed run), and the progress line.

use super::folder::config_hash;
use crate::config::run::Config;
use crate::domain::pool::{Covariates, Pool};
use crate::domain::rng;
use crate::model::laplace::Posterior;
use crate::model::summary::{FitSummary, fit_and_summarise};
use crate::model::{Design, FitError, Prior};
use crate::report::progress::Progress;
use crate::report::{self, FitLine};
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// fits.jsonl of a run folder: the settings hash its lines carry, and the number of valid
/// verdicts of the last line written (a refit on the same verdicts writes no second line).
pub struct FitsLog {
    path: PathBuf,
    file: Arc<Mutex<File>>,
    hash: String,
    last_n: Option<usize>,
    /// Lines written by this run.
    written: usize,
    /// Where the last line starts in the file, when it is a light one (a finished run rewrites
    /// it full).
    light_tail: Arc<Mutex<Option<u64>>>,
}

/// Where one refit's line goes: the settings hash, the file, and whether the line is light.
pub struct FitsEntry {
    hash: String,
    file: Arc<Mutex<File>>,
    light: bool,
    light_tail: Arc<Mutex<Option<u64>>>,
}

/// Pools of up to this many bases write every fits.jsonl line in full (docs/outputs.md).
pub const FULL_LINES_MAX_BASES: usize = 2000;

/// Bases a light line lists (those of highest π, ties by θ̂).
pub const LIGHT_LINE_BASES: usize = 2000;

/// On a large pool the lines of a run numbered this many times a power of two (10, 20, 40, 80,
/// …, counting from 0) are full (checkpoints), so their count grows with the log of the refits;
/// the first line of a run and the last one of a finished run are full too.
pub const FULL_LINE_EVERY: usize = 10;

/// Whether line `i` (from 0) of a run is a checkpoint: 0, or [`FULL_LINE_EVERY`] × 2^m.
pub fn is_checkpoint(i: usize) -> bool {
    i == 0 || (i.is_multiple_of(FULL_LINE_EVERY) && (i / FULL_LINE_EVERY).is_power_of_two())
}

impl FitsLog {
    /// Open (append) `dir/fits.jsonl`; returns the log and the exact warm start of a resumed
    /// run: β̂ of the last line made with the same fit settings, if any.
    ///
    /// # Errors
    /// The file cannot be opened.
    pub fn open(dir: &Path, cfg: &Config) -> std::io::Result<(Self, Option<Vec<f64>>)> {
        let path = dir.join("fits.jsonl");
        if let Some(w) = cut_torn_tail(&path)? {
            progress_warning(&w);
        }
        let hash = config_hash(cfg);
        let (warm, last_n) = warm_start(cfg.pool.n_bases() + cfg.covariates.p() + 1, &path, &hash);
        let file = std::fs::OpenOptions::new().create(true).append(true).open(&path)?;
        let log = Self {
            path,
            file: Arc::new(Mutex::new(file)),
            hash,
            last_n,
            written: 0,
            light_tail: Arc::new(Mutex::new(None)),
        };
        Ok((log, warm))
    }

    /// The file, for error messages.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Where the line of a refit on `n_valid` valid verdicts goes; `None` when the last line
    /// already holds a fit on as many.
    /// A line is light on a pool of more than [`FULL_LINES_MAX_BASES`] bases, except the
    /// checkpoints ([`is_checkpoint`]: a 100,000-base run of 951 refits wrote 95 full lines of
    /// 6 MB, 678 MB in all; now 8).
    pub fn entry(&self, n_valid: usize, n_bases: usize) -> Option<FitsEntry> {
        let light = n_bases > FULL_LINES_MAX_BASES && !is_checkpoint(self.written);
        (self.last_n != Some(n_valid)).then(|| FitsEntry {
            hash: self.hash.clone(),
            file: self.file.clone(),
            light,
            light_tail: self.light_tail.clone(),
        })
    }

    /// A line on `n_valid` valid verdicts was written (light or full).
    pub fn written(&mut self, n_valid: usize) {
        self.last_n = Some(n_valid);
        self.written += 1;
    }

    /// The run is over with `summary` (β̂ `beta`) as its current fit: when the last line written
    /// is a light one, it is rewritten full (same fit), so the last line of a finished run is
    /// always full and a resume warm-starts from it exactly.
    ///
    /// # Errors
    /// The file cannot be cut or written.
    pub fn finish(&self, pool: &Pool, covs: &Covariates, k: usize, summary: &FitSummary) -> std::io::Result<()> {
        let Some(start) = self.light_tail.lock().expect("fits lock").take() else {
            return Ok(());
        };
        let Some(n) = self.last_n else { return Ok(()) };
        let f = self.file.lock().expect("fits lock");
        f.set_len(start)?;
        let line = fit_line(pool, covs, k, summary, &self.hash, n, false);
        let mut f = &*f;
        f.write_all(line.as_bytes())?;
        f.flush()
    }
}

/// The fits.jsonl line (with its newline) of a fit on `n_valid` valid verdicts; a light one
/// lists only the [`LIGHT_LINE_BASES`] bases of highest π (ties by θ̂) and no β̂.
fn fit_line(
    pool: &Pool,
    covs: &Covariates,
    k: usize,
    summary: &FitSummary,
    hash: &str,
    n_valid: usize,
    light: bool,
) -> String {
    let (theta, sd, membership, beta) = if light {
        let s = summary;
        let mut order: Vec<usize> = (0..pool.n_bases()).collect();
        let cmp = |x: &usize, y: &usize| {
            s.membership[*y].total_cmp(&s.membership[*x]).then(s.theta[*y].total_cmp(&s.theta[*x])).then(x.cmp(y))
        };
        if LIGHT_LINE_BASES < order.len() {
            order.select_nth_unstable_by(LIGHT_LINE_BASES, cmp);
            order.truncate(LIGHT_LINE_BASES);
        }
        let pick = |v: &[f64]| order.iter().map(|&b| (pool.bases[b].clone(), v[b])).collect();
        (pick(&s.theta), pick(&s.sd), pick(&s.membership), Vec::new())
    } else {
        (
            report::by_base(pool, &summary.theta),
            report::by_base(pool, &summary.sd),
            report::by_base(pool, &summary.membership),
            summary.beta(),
        )
    };
    let line = FitLine {
        config_hash: hash.to_owned(),
        comparisons: n_valid,
        theta,
        sd,
        membership,
        c: report::by_cov(covs, &summary.c),
        kappa: summary.kappa,
        topk: summary.topk.iter().map(|b| pool.bases[*b].clone()).collect(),
        topk_apparent: Some(apparent_topk(pool, covs, &summary.theta, &summary.c, k)),
        beta,
        light,
    };
    let mut s = serde_json::to_string(&line).expect("serialisable");
    s.push('\n');
    s
}

/// A torn last line of fits.jsonl (a crash while writing it) is cut before the next append, so
/// the next line starts on a line of its own; the fit it held is redone.
fn cut_torn_tail(path: &Path) -> std::io::Result<Option<String>> {
    let text = match std::fs::read(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    if text.is_empty() || text.ends_with(b"\n") {
        return Ok(None);
    }
    let keep = text.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let f = std::fs::OpenOptions::new().write(true).open(path)?;
    f.set_len(keep as u64)?;
    f.sync_all()?;
    Ok(Some(format!(
        "{}: cut a torn last line ({} bytes; a fit being written when the run stopped): it is redone",
        path.display(),
        text.len() - keep
    )))
}

/// A warning line on stderr, as the run's other warnings.
fn progress_warning(w: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "warning: {}", crate::domain::fmt::printable(w));
}

/// The exact warm start of a resumed run: β̂ (`n_params` values) of the last full fits.jsonl
/// line and the number of valid verdicts of the last line, when the last line was made with the
/// same fit settings (`hash`).
fn warm_start(n_params: usize, path: &Path, hash: &str) -> (Option<Vec<f64>>, Option<usize>) {
    let Ok(text) = std::fs::read_to_string(path) else { return (None, None) };
    let mut lines = text.lines().rev().filter_map(|l| serde_json::from_str::<FitLine>(l).ok());
    let Some(last) = lines.next() else { return (None, None) };
    if last.config_hash != hash {
        return (None, None);
    }
    // A light last line (a large-pool run stopped between checkpoints) has no β̂: the warm start
    // is the β̂ of the last full line of these settings (the same MAP, from an earlier start).
    let last_n = Some(last.comparisons);
    let full = if last.light { lines.take_while(|l| l.config_hash == hash).find(|l| !l.light) } else { Some(last) };
    match full {
        Some(line) if line.beta.len() == n_params => (Some(line.beta), last_n),
        _ => (None, None),
    }
}

/// A finished refit: its summary, Laplace posterior, β̂ for the next warm start, and whether
/// its fits.jsonl line was written (with its number of valid verdicts).
pub struct FitOk {
    /// θ̂, sds, π, φ̂, ĉ, κ̂ and the point top-k.
    pub summary: FitSummary,
    /// N(β̂, H⁻¹).
    pub post: Posterior,
    /// β̂ = (θ, c, κ), the next warm start.
    pub beta: Vec<f64>,
    /// The line written (its valid verdicts), none, or the write error.
    pub written: std::io::Result<Option<usize>>,
    /// π by the apparent quality φ, when asked for ([`FitInput::apparent`]).
    pub membership_apparent: Option<Vec<f64>>,
}

/// What a refit needs besides the design: it runs in a blocking task, so it owns its inputs.
pub struct FitInput {
    /// The pool.
    pub pool: Arc<Pool>,
    /// The model's covariates.
    pub covs: Covariates,
    /// Prior precisions.
    pub prior: Prior,
    /// k of top-k.
    pub k: usize,
    /// Monte-Carlo draws of the membership.
    pub draws: usize,
    /// The warm start, if any.
    pub warm: Option<Vec<f64>>,
    /// The membership stream (keyed by the number of valid verdicts).
    pub mc_rng: rng::ChaCha8Rng,
    /// Where this refit's fits.jsonl line goes, when it is to be written.
    pub line: Option<FitsEntry>,
    /// Also compute π by the apparent quality φ (the `confidence` stop of a model with
    /// covariates; Monte-Carlo stream `membership-apparent`).
    pub apparent: Option<rng::ChaCha8Rng>,
}

/// One refit on `n_valid` valid verdicts (MAP, Laplace posterior, top-k membership), and its
/// fits.jsonl line (flushed) when asked for.
///
/// # Errors
/// [`FitError`] of the MAP fit.
pub fn refit(input: FitInput, design: &Design, n_valid: usize) -> Result<FitOk, FitError> {
    let FitInput { pool, covs, prior, k, draws, warm, mut mc_rng, line, apparent } = input;
    let (summary, _fit, post) =
        fit_and_summarise(&pool, &covs, design, &prior, k, draws, warm.as_deref(), &mut mc_rng)?;
    let beta = summary.beta();
    let membership_apparent = match apparent {
        Some(mut r) if covs.p() > 0 => Some(
            crate::model::summary::apparent_quality(&pool, &covs, design, &prior, k, draws, &beta, &mut r)?.membership,
        ),
        _ => None,
    };
    let written = match line {
        Some(FitsEntry { hash, file, light, light_tail }) => {
            let s = fit_line(&pool, &covs, k, &summary, &hash, n_valid, light);
            let mut f = file.lock().expect("fits lock");
            let start = f.metadata().map(|m| m.len());
            let w = f.write_all(s.as_bytes()).and_then(|()| f.flush()).map(|()| Some(n_valid));
            *light_tail.lock().expect("fits lock") = match (light, start) {
                (true, Ok(at)) => Some(at),
                _ => None,
            };
            w
        }
        None => Ok(None),
    };
    Ok(FitOk { summary, post, beta, written, membership_apparent })
}

/// The point top-k by the apparent quality φ̂_m = θ̂_m + Σ_j ĉ_j x̄_mj (x̄: the mean covariates
/// of base m's items), base ids.
fn apparent_topk(pool: &Pool, cov: &Covariates, theta: &[f64], c: &[f64], k: usize) -> Vec<String> {
    let xbar = crate::model::summary::base_means(pool, cov);
    let phi: Vec<f64> =
        theta.iter().zip(&xbar).map(|(t, x)| t + x.iter().zip(c).map(|(a, b)| a * b).sum::<f64>()).collect();
    crate::model::membership::point_topk(&phi, k).into_iter().map(|b| pool.bases[b].clone()).collect()
}

/// The progress line of a live run: verdicts stored, requests in flight, the achieved rate, the
/// spend and the least top-k membership of the current fit.
pub fn show(progress: &Progress, stored: u64, line: &ProgressLine) {
    progress.set(stored);
    progress.message(line.text());
}

/// The message of a run's progress bar (docs/live.md, "The progress bar").
pub struct ProgressLine {
    /// Requests in flight.
    pub in_flight: usize,
    /// Requests per minute achieved.
    pub per_minute: f64,
    /// Spend booked (USD).
    pub spent_usd: f64,
    /// `budget.max_usd`.
    pub max_usd: Option<f64>,
    /// Bases whose top-k membership π of the current fit lies between ε and 1 − ε (none before
    /// the first fit).
    pub undecided: Option<usize>,
    /// `certify.epsilon`.
    pub epsilon: f64,
}

impl ProgressLine {
    /// The message after the bar and its ETA.
    pub fn text(&self) -> String {
        let spend = match self.max_usd {
            Some(m) => format!("${:.4} of ${m:.2}", self.spent_usd),
            None => format!("${:.4} spent", self.spent_usd),
        };
        let undecided = match self.undecided {
            Some(n) => format!("  {n} undecided (ε {})", self.epsilon),
            None => String::new(),
        };
        format!("{} in flight  {:.0} req/min  {spend}{undecided}", self.in_flight, self.per_minute)
    }
}

/// Bases whose π lies strictly between ε and 1 − ε.
pub fn undecided(membership: &[f64], epsilon: f64) -> usize {
    membership.iter().filter(|&&p| p > epsilon && p < 1.0 - epsilon).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The checkpoints of a large pool's fits.jsonl: lines 0, 10, 20, 40, 80, …, so 951 refits
    /// write 8 full lines (and the last one of a finished run), 95 when every 10th was full.
    #[test]
    fn checkpoints_grow_with_the_log_of_the_refits() {
        let full: Vec<usize> = (0..951).filter(|&i| is_checkpoint(i)).collect();
        assert_eq!(full, [0, 10, 20, 40, 80, 160, 320, 640]);
        assert_eq!((0..100).filter(|&i| is_checkpoint(i)).count(), 5);
    }

    #[test]
    fn a_light_last_line_warm_starts_from_the_last_full_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("fits.jsonl");
        let line = |n: usize, beta: Vec<f64>, light: bool, hash: &str| {
            let l = FitLine {
                config_hash: hash.into(),
                comparisons: n,
                theta: Default::default(),
                sd: Default::default(),
                membership: Default::default(),
                c: Default::default(),
                kappa: 0.0,
                topk: vec![],
                topk_apparent: None,
                beta,
                light,
            };
            serde_json::to_string(&l).unwrap() + "\n"
        };
        let full = line(20, vec![0.5, -0.25, 0.125], false, "h");
        let text = line(10, vec![1.0, 2.0, 3.0], false, "h") + &full + &line(40, vec![], true, "h");
        std::fs::write(&path, &text).unwrap();
        assert!(text.lines().last().unwrap().contains("\"light\":true") && !full.contains("light"));
        assert_eq!(warm_start(3, &path, "h"), (Some(vec![0.5, -0.25, 0.125]), Some(40)));
        // Another settings hash on the last line: no warm start.
        std::fs::write(&path, text.clone() + &line(50, vec![], true, "other")).unwrap();
        assert_eq!(warm_start(3, &path, "h"), (None, None));
        // A full last line is the warm start itself.
        std::fs::write(&path, text + &full).unwrap();
        assert_eq!(warm_start(3, &path, "h"), (Some(vec![0.5, -0.25, 0.125]), Some(20)));
    }

    #[test]
    fn the_progress_message_is_the_one_docs_live_md_shows() {
        let line = ProgressLine {
            in_flight: 8,
            per_minute: 33.2,
            spent_usd: 0.0123,
            max_usd: Some(0.5),
            undecided: Some(undecided(&[0.99, 0.5, 0.2, 0.01, 0.06, 0.94, 0.3], 0.05)),
            epsilon: 0.05,
        };
        let text = line.text();
        assert_eq!(text, "8 in flight  33 req/min  $0.0123 of $0.50  5 undecided (ε 0.05)");
        let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/live.md")).unwrap();
        assert!(doc.contains(&format!("comparisons  ETA 2m  {text}\n")), "docs/live.md shows the progress message");
    }
}

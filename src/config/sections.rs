//! The rules that several documents share, each written once: a plain name and its output
//! folder, k against the number of bases, the prior precisions, the acquisition cadence (R and
//! the Monte-Carlo draws), a USD limit, lists that may not be empty, a pool read from a file,
//! and the warnings a pool gives at load (identical texts, covariate scales).
//!
//! Each check returns an [`InvalidSetting`] (the dotted key and what was expected), which the
//! document turns into a [`super::ConfigError`] naming its file.

use super::ConfigError;
use crate::domain::fmt::num;
use crate::domain::invalid::InvalidSetting;
use crate::domain::pool::{Covariates, Pool, Transform};
use crate::model::Prior;
use crate::model::params::{ParamError, check_mc_draws, check_refit_every};
use std::path::{Path, PathBuf};

/// What a plain folder name may not be or hold (a run's or a panel judge's name: a folder of
/// the output, shown in terminals).
pub const PLAIN_FOLDER_NAME: &str = "a plain folder name: not empty, at most 200 bytes, not starting with '.', without surrounding spaces, '/', '\\', ':', control characters or characters that print as nothing or reorder text (zero-width, soft hyphen, right-to-left marks)";

/// A name as a message quotes it: whole, or its first 24 characters and `…` past 200 bytes.
pub fn shown_name(name: &str) -> String {
    if name.len() > 200 { format!("{:?}…", name.chars().take(24).collect::<String>()) } else { format!("{name:?}") }
}

/// Whether `name` is a plain folder name ([`PLAIN_FOLDER_NAME`]).
pub fn is_plain_folder_name(name: &str) -> bool {
    // (A file system takes 255 bytes per name; files are named after it, e.g. `NAME.jsonl`.)
    !(name.is_empty()
        || name.len() > 200
        || name != name.trim()
        || name.starts_with('.')
        || name.contains(['/', '\\', ':'])
        || name.chars().any(|c| c.is_control() || crate::domain::fmt::ignorable(c)))
}

/// The settings whose text is expanded from the environment (`${VAR}`, `~`): paths and URLs
/// (docs/config.md).
const EXPANDED: [&str; 9] = ["file", "prompt", "out_dir", "base_url", "pools", "verdicts", "labels", "pairs", "dir"];

/// The first setting of `doc` (a config read as YAML) whose text holds an environment reference
/// (`${MODEL}`, `$MODEL`), as its dotted key and text, outside the settings that are expanded
/// (paths and URLs: `file`, `prompt`, `out_dir`, `base_url`, …) and the top-level `name` (which
/// [`check_name`] words): such a setting is sent or used as written (a model called `${MODEL}`;
/// hunt 54), so a reference there is an error, not a literal.
pub fn env_reference_in_a_setting(doc: &serde_json::Value) -> Option<(String, String)> {
    fn walk(path: &str, leaf: &str, v: &serde_json::Value) -> Option<(String, String)> {
        match v {
            serde_json::Value::String(s) if !EXPANDED.contains(&leaf) && path != "name" && refers(s) => {
                Some((path.to_owned(), s.clone()))
            }
            serde_json::Value::Array(a) => {
                a.iter().enumerate().find_map(|(i, x)| walk(&format!("{path}[{i}]"), leaf, x))
            }
            serde_json::Value::Object(m) => {
                m.iter().find_map(|(k, x)| walk(&if path.is_empty() { k.clone() } else { format!("{path}.{k}") }, k, x))
            }
            _ => None,
        }
    }
    fn refers(s: &str) -> bool {
        s.match_indices('$')
            .any(|(i, _)| s[i + 1..].chars().next().is_some_and(|c| c == '{' || c == '_' || c.is_ascii_uppercase()))
    }
    walk("", "", doc)
}

/// A document's `name`: a plain folder name ([`PLAIN_FOLDER_NAME`]). `kind` names the document
/// in the message (`run`, `audit`, `sweep`; empty for none).
///
/// # Errors
/// [`InvalidSetting`] at `name`.
pub fn check_name(name: &str, kind: &str) -> Result<(), InvalidSetting> {
    // `${RUN_NAME}` or `$RUN_NAME`: a variable meant, and a folder named after it made (hunt 52).
    let variable = name
        .match_indices('$')
        .any(|(i, _)| name[i + 1..].chars().next().is_some_and(|c| c == '{' || c == '_' || c.is_ascii_alphabetic()));
    if variable {
        return Err(InvalidSetting::new(
            "name",
            format!(
                "{} looks like an environment variable: a name is not expanded (paths and URLs are); write the name out, or give it on the command line (`--name \"$RUN_NAME\"`, which the shell expands)",
                shown_name(name)
            ),
        ));
    }
    if !is_plain_folder_name(name) {
        let kind = if kind.is_empty() { String::new() } else { format!("{kind} ") };
        return Err(InvalidSetting::new(
            "name",
            format!("{} is not a valid {kind}name (expected {PLAIN_FOLDER_NAME})", shown_name(name)),
        ));
    }
    Ok(())
}

/// The output folder `<out_dir>/<name>`, `out_dir` ([`resolve`]d: `~` and `${VAR}` expanded)
/// relative to the document's folder `dir` (lexically normalised); without `out_dir`,
/// `<default_root>/<name>` in the working directory.
///
/// # Errors
/// `out_dir` uses a variable that is not set (or `~user`).
pub fn out_folder(
    dir: &Path,
    out_dir: Option<&Path>,
    name: &str,
    default_root: &str,
) -> Result<PathBuf, InvalidSetting> {
    Ok(match out_dir {
        Some(o) => resolve(dir, o, "out_dir")?.join(name),
        None => PathBuf::from(default_root).join(name),
    })
}

/// A path setting `field` as written: `~` and `${VAR}` expanded from the environment
/// ([`crate::domain::paths::expand`]), then relative to the document's folder `dir`, lexically
/// normalised.
///
/// # Errors
/// The setting uses a variable that is not set (or `~user`).
pub fn resolve(dir: &Path, p: &Path, field: &str) -> Result<PathBuf, InvalidSetting> {
    if p.as_os_str().is_empty() {
        return Err(InvalidSetting::new(field, "empty; expected a path (relative to the config file's folder)"));
    }
    let expanded = crate::domain::paths::expand(p, field, |k| std::env::var(k).ok())
        .map_err(|m| InvalidSetting::new(field, m.trim_start_matches(&format!("{field}: ")).to_owned()))?;
    Ok(super::normalize(&dir.join(expanded)))
}

/// `count` replicates, pool i of seed `seed + i`, under `key` (the seeds key, e.g.
/// `pools.seed`): the last seed must not pass the largest one (2⁶⁴ − 1) rather than wrap round to
/// 0 (a sweep run twice with seeds that wrapped would reuse pools silently).
///
/// # Errors
/// [`InvalidSetting`] naming `key`.
pub fn check_seed_range(seed: u64, count: usize, key: &str) -> Result<(), InvalidSetting> {
    match seed.checked_add(count.saturating_sub(1) as u64) {
        Some(_) => Ok(()),
        None => Err(InvalidSetting::new(
            key,
            format!(
                "{seed} + {} more pools passes the largest seed (18446744073709551615): pool i uses seed {key} + i; lower it to at most {}",
                count - 1,
                u64::MAX - (count - 1) as u64
            ),
        )),
    }
}

/// k of top-k: 1 ≤ k < `bound`, where `of` says what the bound is (`number of bases (16) in
/// pool "p"`, `pools.n (30)`).
///
/// # Errors
/// [`InvalidSetting`] at `k`.
pub fn check_k(k: usize, bound: usize, of: &str) -> Result<(), InvalidSetting> {
    if k == 0 || k >= bound {
        return Err(InvalidSetting::new("k", format!("{k} must satisfy 1 ≤ k < {of}")));
    }
    Ok(())
}

/// [`check_k`] against the bases of a pool.
///
/// # Errors
/// [`InvalidSetting`] at `k`.
pub fn check_k_in_pool(k: usize, pool: &Pool) -> Result<(), InvalidSetting> {
    if pool.is_systems() {
        // Over many prompts the bases are the systems, and the pool is named by its prompts.
        return check_k(k, pool.n_bases(), &format!("number of systems ({}) over {}", pool.n_bases(), pool.pool_id));
    }
    check_k(k, pool.n_bases(), &format!("number of bases ({}) in pool {:?}", pool.n_bases(), pool.pool_id))
}

/// A parameter error of `section` (`model`, `prior`, `acquisition`; empty for top-level keys) as
/// the setting it names.
fn param(section: &str, e: ParamError) -> InvalidSetting {
    let key = if section.is_empty() { e.name.to_string() } else { format!("{section}.{}", e.name) };
    InvalidSetting::new(key, e.to_string())
}

/// The prior precisions λ_θ, λ_b, λ_κ: each finite and > 0 (docs/model.md §2).
///
/// # Errors
/// [`InvalidSetting`] at `<section>.lambda_…`.
pub fn check_prior(prior: &Prior, section: &str) -> Result<(), InvalidSetting> {
    prior.check().map_err(|e| param(section, e))
}

/// The acquisition cadence: R = `refit_every` ≥ 1 and the Monte-Carlo draws S ≥ 1 (docs/model.md §3).
///
/// # Errors
/// [`InvalidSetting`] at `<section>.refit_every` or `<section>.mc_draws`.
pub fn check_cadence(refit_every: usize, mc_draws: usize, section: &str) -> Result<(), InvalidSetting> {
    check_refit_every(refit_every).map_err(|e| param(section, e))?;
    check_mc_draws(mc_draws).map_err(|e| param(section, e))
}

/// A USD limit at `key`: finite and ≥ 0.
///
/// # Errors
/// [`InvalidSetting`] at `key`.
pub fn check_usd(usd: Option<f64>, key: &str) -> Result<(), InvalidSetting> {
    match usd {
        Some(u) if !(u >= 0.0 && u.is_finite()) => {
            Err(InvalidSetting::new(key, format!("{u} must be a finite number ≥ 0 (USD)")))
        }
        _ => Ok(()),
    }
}

/// Lists that may not be empty: `(key, is_empty)` pairs, the first empty one named.
///
/// # Errors
/// [`InvalidSetting`] at the key of the first empty list.
pub fn check_nonempty(lists: &[(&str, bool)]) -> Result<(), InvalidSetting> {
    match lists.iter().find(|(_, empty)| *empty) {
        Some((key, _)) => Err(InvalidSetting::new(*key, "the list is empty; expected at least one value")),
        None => Ok(()),
    }
}

/// A list of an experiment's settings (seeds, grid values, budgets) whose values must differ:
/// a repeat would run the same setting again and count its runs twice (standard errors that
/// look smaller than they are). `show` writes a value as the file does.
///
/// # Errors
/// [`InvalidSetting`] at `key`, naming the first repeated value.
pub fn check_distinct<T: PartialEq>(
    key: &str,
    values: &[T],
    show: impl Fn(&T) -> String,
) -> Result<(), InvalidSetting> {
    match values.iter().enumerate().find(|(i, v)| values[..*i].contains(v)) {
        Some((_, v)) => Err(InvalidSetting::new(
            key,
            format!(
                "{} is listed more than once: each value is one setting, run once (a repeat would run it again and count those runs twice)",
                show(v)
            ),
        )),
        None => Ok(()),
    }
}

/// A value as a YAML file writes it (`topk`, `bias_aware`): its serde name.
pub fn as_written<T: serde::Serialize>(v: &T) -> String {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => String::new(),
    }
}

/// Read pool `id` (the file's first pool when `None`) of `file`, named by the document at `path`.
///
/// # Errors
/// [`ConfigError::Pool`] naming the document and the pool file.
pub fn read_pool(path: &Path, file: &Path, id: Option<&str>) -> Result<Pool, ConfigError> {
    crate::store::pool_file::read_pool(file, id).map_err(|source| pool_error(path, file, source))
}

/// A pool error of `file`, named by the document at `path`.
pub fn pool_error(path: &Path, file: &Path, source: crate::domain::pool::PoolError) -> ConfigError {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let keys: &[&str] = match source {
        crate::domain::pool::PoolError::NotFound { .. } => &["pool.id", "pool.ids", "pool"],
        _ => &["pool.file", "pool"],
    };
    let found = keys.iter().find_map(|k| crate::store::yaml::line_of_key(&text, k).map(|n| (*k, n)));
    let key = match found {
        Some(("pool", _)) | None => keys[0],
        Some((k, _)) => k,
    };
    ConfigError::Pool {
        path: path.to_owned(),
        key: key.to_string(),
        line: found.map(|(_, n)| n),
        pool_file: file.to_owned(),
        source: Box::new(source),
    }
}

/// [`pool_error`] for a document whose pool file is set by `key` (a sweep's `pools.file`, a
/// frozen protocol's `recorded.pools`), at that key's line.
pub fn pool_error_at(path: &Path, key: &str, file: &Path, source: crate::domain::pool::PoolError) -> ConfigError {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    ConfigError::Pool {
        path: path.to_owned(),
        key: key.to_string(),
        line: crate::store::yaml::line_of_key(&text, key),
        pool_file: file.to_owned(),
        source: Box::new(source),
    }
}

/// The warning for items whose text is empty or only whitespace: the judge is shown nothing as
/// their answer (`import` refuses such answers; a pool file written otherwise may hold them).
pub fn blank_text_warnings(pool: &Pool) -> Vec<String> {
    let blank = pool.blank_texts();
    if blank.is_empty() {
        return Vec::new();
    }
    let ids: Vec<String> = blank.iter().take(8).map(|&i| format!("{:?}", pool.items[i].id)).collect();
    let more = if blank.len() > 8 { format!(", … ({} in all)", blank.len()) } else { String::new() };
    let (what, has) = if blank.len() == 1 { ("item", "has") } else { ("items", "have") };
    vec![format!(
        "pool {:?}: {what} {}{more} {has} an empty text (or only whitespace): the judge is shown an empty answer for {}",
        pool.pool_id,
        ids.join(", "),
        if blank.len() == 1 { "it" } else { "each" }
    )]
}

/// A warning for each pool (or prompt, of a run over many) whose task is empty or only
/// whitespace: a live judge is shown an empty task with every pair (hunt 55: a pool line
/// without `task` or `source` was accepted without a word).
pub fn blank_task_warnings(pool: &Pool) -> Vec<String> {
    // White space and characters that print as nothing (a task of one zero-width space).
    let blank = |t: &str| t.chars().all(|c| c.is_whitespace() || crate::domain::fmt::ignorable(c));
    let blank: Vec<&str> = if pool.prompts.is_empty() {
        if blank(&pool.task) && pool.task_turns.is_empty() { vec![pool.pool_id.as_str()] } else { vec![] }
    } else {
        pool.prompts.iter().filter(|p| blank(&p.task) && p.task_turns.is_empty()).map(|p| p.pool_id.as_str()).collect()
    };
    if blank.is_empty() {
        return Vec::new();
    }
    let ids: Vec<String> = blank.iter().take(8).map(|p| format!("{p:?}")).collect();
    let more = if blank.len() > 8 { format!(", … ({} in all)", blank.len()) } else { String::new() };
    vec![format!(
        "pool {}{more}: the task (\"task\" or \"source\" of the pool line) is empty: the judge is shown an empty task with every pair",
        ids.join(", ")
    )]
}

/// Warnings for items with identical text (by default their pairs are not sent; `send` when
/// `acquisition.identical_texts: send`).
pub fn identical_text_warnings(pool: &Pool, send: bool) -> Vec<String> {
    let groups = pool.identical_texts();
    if pool.is_systems() && groups.len() > 3 {
        // Many prompts: one line, not one per prompt.
        let prompts: std::collections::BTreeSet<usize> = groups.iter().map(|g| pool.prompt_of(g[0])).collect();
        let pairs: usize = groups.iter().map(|g| g.len() * (g.len() - 1)).sum();
        let what = if send {
            "they are sent (acquisition.identical_texts: send)"
        } else {
            "they are not sent to the judge (they say nothing about quality; acquisition.identical_texts: send sends them)"
        };
        return vec![format!(
            "pool {:?}: {} groups of answers with identical text on {} prompts (first: {}); their {pairs} ordered pairs: {what}",
            pool.pool_id,
            groups.len(),
            prompts.len(),
            groups[0].iter().map(|&i| format!("{:?}", pool.items[i].id)).collect::<Vec<_>>().join(", ")
        )];
    }
    groups
        .iter()
        .map(|g| {
            let ids = g.iter().map(|&i| format!("{:?}", pool.items[i].id)).collect::<Vec<_>>().join(", ");
            let what = if send {
                "their pairs are sent (acquisition.identical_texts: send)"
            } else {
                "pairs of them are not sent to the judge (they say nothing about quality; set acquisition.identical_texts: send to send them, e.g. to measure position bias)"
            };
            format!("pool {:?}: items {ids} have identical text; {what}", pool.pool_id)
        })
        .collect()
}

/// Under the prior on c (precision `lambda_b`), one sd of a covariate moves the log-odds by
/// sd(x)/√λ_b logits a priori; outside [0.01, 100] logits the prior says nothing useful about c
/// (the covariate's unit, not the data, picks ĉ). Warnings naming such covariates, at `key`.
pub fn scale_warnings(cov: &Covariates, lambda_b: f64, key: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (j, name) in cov.names.iter().enumerate() {
        if cov.transforms[j] == Transform::Zscore || cov.no_variation.contains(name) {
            continue;
        }
        let n = cov.x.len() as f64;
        let mean = cov.x.iter().map(|r| r[j]).sum::<f64>() / n;
        let sd = (cov.x.iter().map(|r| (r[j] - mean).powi(2)).sum::<f64>() / n).sqrt();
        let effect = sd / lambda_b.sqrt();
        if !(0.01..=100.0).contains(&effect) {
            let t = if cov.transforms[j] == Transform::Log { "log" } else { "raw" };
            out.push(format!(
                "{key}: covariate {name:?} ({t}) has sd {} in this pool: under the prior (λ_b = {lambda_b}) one sd of it moves the log-odds by about {} logits, so the prior on c[{name}] is meaningless at this scale; use transform zscore (or log for a positive quantity)",
                num(sd),
                num(effect)
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::serde_words::{at_least_one, opt_at_least_one};

    /// A run's, audit's or panel judge's name is a folder: a name of 1,001 characters was taken
    /// (and printed whole in the judge tables).
    #[test]
    fn a_plain_folder_name_fits_a_file_system() {
        assert!(is_plain_folder_name("cheap") && is_plain_folder_name(&"é".repeat(100)));
        assert!(!is_plain_folder_name(&"J".repeat(201)) && !is_plain_folder_name(&"é".repeat(101)));
        let e = check_name(&"J".repeat(1001), "run").unwrap_err().to_string();
        assert!(e.contains("at most 200 bytes"), "{e}");
    }

    /// The count deserializers of `domain::serde_words` as a config reads them.
    #[derive(Debug, serde::Deserialize)]
    struct Counts {
        #[serde(deserialize_with = "at_least_one")]
        k: usize,
        #[serde(deserialize_with = "at_least_one", default)]
        tries: u32,
        #[serde(deserialize_with = "opt_at_least_one", default)]
        round: Option<usize>,
    }

    #[test]
    fn a_count_whose_rule_is_at_least_one_says_so() {
        let e = |y: &str| crate::store::yaml::from_str::<Counts>(y).unwrap_err().to_string();
        for (v, found) in [("-1", "-1"), ("2.5", "2.5"), ("abc", "abc"), ("'2.5'", "2.5"), ("\"-1\"", "-1")] {
            let m = e(&format!("k: {v}\n"));
            assert!(m.contains(&format!("expected a whole number ≥ 1, found \"{found}\"")), "{v}: {m}");
            assert!(m.contains("line 1") && m.contains("`k`"), "{m}");
        }
        assert!(e("k: 1\ntries: -2\n").contains("expected a whole number ≥ 1, found \"-2\""));
        assert!(e("k: 1\nround: 0.5\n").contains("expected a whole number ≥ 1, found \"0.5\""));
        // A whole number written as a float is that number; beyond 2^53 it is said too large.
        assert!(
            e("k: 1\ntries: 1e20\n").contains("1e20 is too large (at most 4294967295)"),
            "{}",
            e("k: 1\ntries: 1e20\n")
        );
        let c: Counts = crate::store::yaml::from_str("k: 1e3\ntries: 2.0\n").unwrap();
        assert_eq!((c.k, c.tries), (1000, 2));
        assert!(e("k: [1]\n").contains("expected a whole number ≥ 1, found a list"), "{}", e("k: [1]\n"));
        assert!(e("k: 1\ntries: 4294967296\n").contains("4294967296 is too large (at most 4294967295)"));
        // 0 is left to the setting's own check, which names the full rule.
        let c: Counts = crate::store::yaml::from_str("k: 0\ntries: 7\nround: 64\n").unwrap();
        assert_eq!((c.k, c.tries, c.round), (0, 7, Some(64)));
        let c: Counts = crate::store::yaml::from_str("k: 3\n").unwrap();
        assert_eq!((c.k, c.tries, c.round), (3, 0, None));
        // A setting left out is written `null` in a resolved config: none, not an error.
        let c: Counts = crate::store::yaml::from_str("k: 3\nround: null\n").unwrap();
        assert_eq!(c.round, None);
        assert!(e("k: 1\nround: -1\n").contains("expected a whole number ≥ 1, found \"-1\""));
        // In quotes, as every other number of a config is read.
        let c: Counts = crate::store::yaml::from_str("k: '3'\ntries: \"2\"\nround: '1e2'\n").unwrap();
        assert_eq!((c.k, c.tries, c.round), (3, 2, Some(100)));
    }

    #[test]
    fn shared_rules_name_the_key_and_the_bound() {
        assert_eq!(check_k(30, 30, "pools.n (30)").unwrap_err().to_string(), "k: 30 must satisfy 1 ≤ k < pools.n (30)");
        assert_eq!(check_k(0, 5, "x").unwrap_err().key, "k");
        assert!(check_k(4, 5, "x").is_ok());
        assert_eq!(
            check_name("a/b", "sweep").unwrap_err().to_string(),
            format!("name: \"a/b\" is not a valid sweep name (expected {PLAIN_FOLDER_NAME})")
        );
        assert_eq!(
            check_name(".x", "").unwrap_err().message,
            format!("\".x\" is not a valid name (expected {PLAIN_FOLDER_NAME})")
        );
        // Control characters (a terminal runs them), surrounding spaces and ':' too.
        assert_eq!(
            check_name("x\u{1b}[31mred", "run").unwrap_err().message,
            format!("\"x\\u{{1b}}[31mred\" is not a valid run name (expected {PLAIN_FOLDER_NAME})")
        );
        // Characters that print as nothing or reorder what follows (hunt 60 F8: a right-to-left
        // override in a run's name reached folder names and reports).
        for bad in [" x", "x ", "a:b", "", "a\tb", "run\u{202e}fdp", "a\u{200b}b", "a\u{ad}b"] {
            assert!(check_name(bad, "run").is_err(), "{bad:?}");
        }
        assert!(check_name("ok-name", "run").is_ok());
        for meant in ["${RUN_NAME}", "run-$SEED", "$_x"] {
            let e = check_name(meant, "run").unwrap_err().to_string();
            assert!(e.contains("looks like an environment variable: a name is not expanded"), "{meant}: {e}");
        }
        assert!(check_name("cost-$5", "run").is_ok(), "a dollar before a digit is text");
        assert_eq!(
            check_usd(Some(-1.0), "budget.max_usd").unwrap_err().to_string(),
            "budget.max_usd: -1 must be a finite number ≥ 0 (USD)"
        );
        assert!(check_usd(Some(f64::NAN), "max_usd").is_err());
        assert_eq!(
            check_nonempty(&[("strategies", false), ("models", true)]).unwrap_err().to_string(),
            "models: the list is empty; expected at least one value"
        );
        let bad = Prior { lambda_theta: 0.0, ..Prior::default() };
        assert_eq!(check_prior(&bad, "model").unwrap_err().key, "model.lambda_theta");
        assert_eq!(check_cadence(0, 10, "acquisition").unwrap_err().key, "acquisition.refit_every");
        assert_eq!(check_cadence(8, 0, "").unwrap_err().key, "mc_draws");
    }

    #[test]
    fn out_folders_are_normalised_next_to_the_document() {
        let d = Path::new("configs");
        assert_eq!(out_folder(d, Some(Path::new("../runs")), "x", "runs").unwrap(), PathBuf::from("runs/x"));
        assert_eq!(out_folder(d, None, "x", "runs/sweeps").unwrap(), PathBuf::from("runs/sweeps/x"));
    }
}

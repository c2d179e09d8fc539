//! Pools, items, bases and covariates (docs/model.md §1).
//!
//! A pool file is JSON Lines, one pool per line:
//! `{"pool_id", "task" | "source", "items": [{"id", "text"?, "quality"?, "covariates"?, "base"?,
//! "rendering"?}]}`. Items that share `base` share one quality parameter θ; without `base`
//! every item is its own base. Rankings and top-k are over bases.
//!
//! Covariates x_i ∈ R^p: built-in `words` (whitespace word count) and `markdown` (1 if the text
//! has a list, header, table or bold markup), or any key of the items' `covariates` map, each
//! with a transform: `zscore` within the pool (population sd, ddof = 0; a constant column becomes
//! zeros and is reported as "no variation"), `raw`, or `log` (values must be > 0).

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

/// Errors reading or validating a pool.
#[derive(Debug, thiserror::Error)]
pub enum PoolError {
    /// The pool file could not be read.
    #[error("cannot read pool file {path}: {source}")]
    Io {
        /// The pool file (JSONL) that could not be read.
        path: PathBuf,
        /// The I/O error from the operating system.
        source: std::io::Error,
    },
    /// A line is not valid UTF-8 or not a valid pool object.
    #[error(
        "{path}:{line}: not a valid pool ({msg}); expected {{\"pool_id\", \"task\", \"items\": [{{\"id\", \"text\", ...}}]}}"
    )]
    Parse {
        /// The pool file holding the bad line.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// Why the line is not a pool: the UTF-8 or JSON parser's message.
        msg: String,
    },
    /// No pool with the requested id.
    #[error("{path}: no pool with pool_id {id:?} (the file has {available})")]
    NotFound {
        /// The pool file that was searched for the requested `pool_id`.
        path: PathBuf,
        /// Requested id.
        id: String,
        /// Short list of available ids.
        available: String,
    },
    /// The pool violates a rule (empty, duplicate ids, bad covariate...).
    #[error("pool {}: {msg}", shown_id(pool_id))]
    Invalid {
        /// Pool id.
        pool_id: String,
        /// What is wrong.
        msg: String,
    },
    /// A pool of a pool file violates a rule: [`PoolError::Invalid`] with the file and, when one
    /// line holds the fault, its line.
    /// The message: `FILE[:LINE]: pool "ID": what is wrong`.
    #[error("{0}")]
    InvalidIn(String),
}

impl PoolError {
    /// This error placed in pool file `path`: a rule violation gets the file and the line of
    /// the pool it names (`line_of` its pool id); other errors already name the file.
    pub fn in_file(self, path: &Path, line_of: impl Fn(&str) -> Option<usize>) -> Self {
        match self {
            PoolError::Invalid { pool_id, msg } => {
                let line = line_of(&pool_id).map(|l| format!(":{l}")).unwrap_or_default();
                PoolError::InvalidIn(format!("{}{line}: pool {}: {msg}", path.display(), shown_id(&pool_id)))
            }
            e => e,
        }
    }
}

/// One candidate answer as written in the pool file (unknown keys are errors).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Item {
    /// Unique id within the pool.
    pub id: String,
    /// The answer text (needed by live judges and the `words`/`markdown` covariates).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Gold quality on any real scale (mock judges and recall@k only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quality: Option<f64>,
    /// Extra covariates, name → number.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub covariates: BTreeMap<String, f64>,
    /// Base id for the paired rendering design (docs/model.md §6); defaults to the item id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base: Option<String>,
    /// Rendering label (e.g. "terse", "elaborated").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rendering: Option<String>,
    /// The system (model, prompt, agent) that generated this answer. In a run over many pools
    /// (`pool: {file, ids}`, docs/systems.md) the answers of one system share one θ across
    /// prompts; a single-pool run keeps it for information.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    /// A word count stored with the item (informational: the `words` covariate counts the
    /// text; put a number in `covariates` to use your own).
    #[serde(default, skip_serializing)]
    pub words: Option<f64>,
    /// Human ratings per dimension (informational, e.g. SummEval's expert ratings).
    #[serde(default, skip_serializing)]
    pub human: Option<BTreeMap<String, f64>>,
}

/// A validated pool: task, items, and the item → base map.
#[derive(Debug, Clone, Serialize)]
pub struct Pool {
    /// Pool id.
    pub pool_id: String,
    /// The instruction or source text the judge sees.
    pub task: String,
    /// Items in file order.
    pub items: Vec<Item>,
    /// Base ids in order of first appearance (length M).
    pub bases: Vec<String>,
    /// `item_base[i]` = index into `bases` of item i (length N).
    pub item_base: Vec<usize>,
    #[serde(skip)]
    index: HashMap<String, usize>,
    /// The prompts of a run over many pools (docs/systems.md), in selection order; empty for a
    /// single pool (one prompt: `pool_id`, `task`).
    #[serde(skip)]
    pub prompts: Vec<Prompt>,
    /// `item_prompt[i]` = index into `prompts` of item i (length N); empty for a single pool.
    #[serde(skip)]
    pub item_prompt: Vec<usize>,
    /// The turns of a multi-turn task (pool line `"task_turns"`; `task` is them joined); empty
    /// for a single turn.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub task_turns: Vec<String>,
    /// `item_turns[i]` = the answer turns of item i (item `"turns"`; `text` is them joined), one
    /// per task turn; empty when no item has turns.
    #[serde(skip)]
    pub item_turns: Vec<Vec<String>>,
}

/// One prompt of a run over many pools: the pool it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Prompt {
    /// The pool id of the prompt in its pool file.
    pub pool_id: String,
    /// The instruction or source text the judge sees with this prompt's answers.
    pub task: String,
    /// The turns of a multi-turn prompt (empty for one turn).
    pub task_turns: Vec<String>,
}

impl Pool {
    /// Build and validate a pool: at least 2 items, unique non-empty ids without control
    /// characters ([`listed_id_problem`]), finite numbers.
    ///
    /// # Errors
    /// [`PoolError::Invalid`] naming the offending item.
    pub fn new(pool_id: String, task: String, items: Vec<Item>) -> Result<Self, PoolError> {
        let bad = |msg: String| PoolError::Invalid { pool_id: pool_id.clone(), msg };
        if let Some(p) = listed_id_problem(&pool_id) {
            return Err(bad(format!("the pool id {}", p)));
        }
        if items.is_empty() {
            return Err(bad("the pool has no items; expected at least 2".into()));
        }
        if items.len() < 2 {
            return Err(bad("the pool has 1 item; expected at least 2 to compare".into()));
        }
        let mut index = HashMap::new();
        let mut bases: Vec<String> = Vec::new();
        let mut base_index: HashMap<String, usize> = HashMap::new();
        let mut item_base = Vec::with_capacity(items.len());
        for (i, it) in items.iter().enumerate() {
            if it.id.is_empty() {
                return Err(bad(format!("item #{} has an empty id", i + 1)));
            }
            for (what, id) in [("id", Some(&it.id)), ("base", it.base.as_ref()), ("system", it.system.as_ref())] {
                if let Some(p) = id.and_then(|id| listed_id_problem(id)) {
                    return Err(bad(format!("item #{}: its {what} {p}", i + 1)));
                }
            }
            if index.insert(it.id.clone(), i).is_some() {
                return Err(bad(format!("duplicate item id {:?} (item #{}); ids must be unique", it.id, i + 1)));
            }
            if let Some(q) = it.quality
                && !q.is_finite()
            {
                return Err(bad(format!("item {:?}: quality {q} is not finite", it.id)));
            }
            // Gold quality is compared, averaged and printed: the covariates' bound holds for it.
            if let Some(q) = it.quality
                && q.abs() > MAX_COVARIATE
            {
                return Err(bad(format!(
                    "item {:?}: quality {q:e} is too large (|quality| ≤ 1e100; any real scale works, e.g. 1 to 5)",
                    it.id
                )));
            }
            for (k, v) in &it.covariates {
                if let Some(p) = id_problem(k) {
                    return Err(bad(format!("item {:?}: its covariate name {p}", it.id)));
                }
                if !v.is_finite() {
                    return Err(bad(format!("item {:?}: covariate {k:?} = {v} is not finite", it.id)));
                }
            }
            let b = it.base.clone().unwrap_or_else(|| it.id.clone());
            let bi = *base_index.entry(b.clone()).or_insert_with(|| {
                bases.push(b);
                bases.len() - 1
            });
            item_base.push(bi);
        }
        if bases.len() < 2 {
            return Err(bad("all items share one base; expected at least 2 bases to rank".into()));
        }
        // Two ids that are one text in two Unicode forms print alike everywhere.
        for (what, ids) in [
            ("items", items.iter().map(|i| i.id.as_str()).collect::<Vec<_>>()),
            ("bases", bases.iter().map(String::as_str).collect()),
        ] {
            if let Some((a, b)) = crate::domain::names::same_text_in_two_forms(ids) {
                return Err(bad(format!(
                    "{what} {a:?} and {b:?} are one name in two Unicode forms (composed and decomposed accents); they would print alike in every table and report: give them one form, or two names"
                )));
            }
        }
        Ok(Pool {
            pool_id,
            task,
            items,
            bases,
            item_base,
            index,
            prompts: Vec::new(),
            item_prompt: Vec::new(),
            task_turns: Vec::new(),
            item_turns: Vec::new(),
        })
    }

    /// The pool with the turns of a multi-turn task: `task_turns` (two or more, or none) and
    /// per item its answer turns (`item_turns` of length N, or empty), each item's as many as
    /// the task's or none.
    ///
    /// # Errors
    /// [`PoolError::Invalid`] naming the item whose turns do not match the task's.
    pub fn with_turns(mut self, task_turns: Vec<String>, item_turns: Vec<Vec<String>>) -> Result<Self, PoolError> {
        let bad = |msg: String| PoolError::Invalid { pool_id: self.pool_id.clone(), msg };
        if !item_turns.is_empty() && item_turns.len() != self.items.len() {
            return Err(bad(format!("{} item turn lists for {} items", item_turns.len(), self.items.len())));
        }
        for (it, t) in self.items.iter().zip(&item_turns) {
            if !t.is_empty() && t.len() != task_turns.len() {
                return Err(bad(format!(
                    "item {:?} has {} turns, the task has {}; expected one answer turn per task turn (\"task_turns\")",
                    it.id,
                    t.len(),
                    task_turns.len()
                )));
            }
        }
        self.task_turns = task_turns;
        self.item_turns = if item_turns.iter().all(Vec::is_empty) { Vec::new() } else { item_turns };
        Ok(self)
    }

    /// One pool of system answers over many prompts (docs/systems.md): every item of every pool
    /// must carry `system` (and no `base`), and a system answers a prompt at most once. Item `i`
    /// of pool `P` becomes item `P/i` with base = its system, so θ is per system and shared
    /// across prompts; comparisons stay within a prompt ([`Pool::same_prompt`]).
    ///
    /// # Errors
    /// [`PoolError::Invalid`] naming the pool and item: a missing `system`, a `base`, a system
    /// twice in one pool, or fewer than 2 systems overall.
    pub fn systems(pool_id: String, pools: Vec<Pool>) -> Result<Self, PoolError> {
        let mut items = Vec::new();
        let mut prompts = Vec::with_capacity(pools.len());
        let mut item_prompt = Vec::new();
        let mut item_turns = Vec::new();
        // `P/i` of two prompts may coincide when ids hold `/` (prompt `a/b`, item `c`; prompt `a`,
        // item `b/c`): said with both, not as a duplicate id found in neither.
        let mut merged: HashMap<String, (&str, &str)> = HashMap::new();
        for p in &pools {
            for it in &p.items {
                let id = format!("{}/{}", p.pool_id, it.id);
                if let Some((op, oi)) = merged.insert(id.clone(), (&p.pool_id, &it.id)) {
                    return Err(PoolError::Invalid {
                        pool_id: p.pool_id.clone(),
                        msg: format!(
                            "its item {:?} and item {oi:?} of prompt {op:?} both become {id:?} (prompt id/item id) when the prompts are ranked together; rename one so that a `/` does not make them equal",
                            it.id
                        ),
                    });
                }
            }
        }
        for (pi, p) in pools.into_iter().enumerate() {
            let bad = |msg: String| PoolError::Invalid { pool_id: p.pool_id.clone(), msg };
            let mut seen: HashMap<&str, &str> = HashMap::new();
            for it in &p.items {
                let Some(sys) = it.system.as_deref() else {
                    return Err(bad(format!(
                        "item {:?} has no \"system\"; ranking systems over many prompts (`check`, `fit --systems`, a run's `pool.ids`) needs the system of every answer (a pool file from `topk-judge import` has them); for one pool's answers use `fit POOL VERDICTS --pool-id ID`",
                        it.id
                    )));
                };
                if it.base.is_some() {
                    return Err(bad(format!(
                        "item {:?} has a \"base\"; in a run over many pools the base of an answer is its system",
                        it.id
                    )));
                }
                if let Some(other) = seen.insert(sys, &it.id) {
                    return Err(bad(format!(
                        "system {sys:?} answers twice (items {other:?} and {:?}); expected one answer per system and prompt",
                        it.id
                    )));
                }
            }
            for (i, it) in p.items.iter().enumerate() {
                let mut m = it.clone();
                m.id = format!("{}/{}", p.pool_id, it.id);
                m.base = it.system.clone();
                items.push(m);
                item_prompt.push(pi);
                item_turns.push(p.item_turns.get(i).cloned().unwrap_or_default());
            }
            prompts.push(Prompt { pool_id: p.pool_id, task: p.task, task_turns: p.task_turns });
        }
        let mut pool = Pool::new(pool_id, String::new(), items)?;
        pool.prompts = prompts;
        pool.item_prompt = item_prompt;
        if item_turns.iter().any(|t| !t.is_empty()) {
            pool.item_turns = item_turns;
        }
        Ok(pool)
    }

    /// Where item `i` comes from, as its pool file writes it: (pool id, item id). Over many
    /// prompts that is its prompt's pool and its own id, not the merged `prompt/item`.
    pub fn origin(&self, i: usize) -> (&str, &str) {
        match self.item_prompt.get(i).and_then(|&p| self.prompts.get(p)) {
            Some(p) => {
                let id = &self.items[i].id;
                (&p.pool_id, id.strip_prefix(&format!("{}/", p.pool_id)).unwrap_or(id))
            }
            None => (&self.pool_id, &self.items[i].id),
        }
    }

    /// Whether this pool holds the answers of systems to many prompts ([`Pool::systems`]).
    pub fn is_systems(&self) -> bool {
        !self.prompts.is_empty()
    }

    /// What a base is called in messages: `system` in a run over many prompts, else `base`.
    pub fn base_noun(&self) -> &'static str {
        if self.is_systems() { "system" } else { "base" }
    }

    /// Number of prompts (1 for a single pool).
    pub fn n_prompts(&self) -> usize {
        self.prompts.len().max(1)
    }

    /// Prompt index of item `i` (0 for a single pool).
    pub fn prompt_of(&self, i: usize) -> usize {
        self.item_prompt.get(i).copied().unwrap_or(0)
    }

    /// The task the judge sees with item `i`: its prompt's, or the pool's.
    pub fn task_of(&self, i: usize) -> &str {
        match self.item_prompt.get(i) {
            Some(&p) => &self.prompts[p].task,
            None => &self.task,
        }
    }

    /// The task turns the judge sees with item `i` (empty for a single-turn task).
    pub fn task_turns_of(&self, i: usize) -> &[String] {
        match self.item_prompt.get(i) {
            Some(&p) => &self.prompts[p].task_turns,
            None => &self.task_turns,
        }
    }

    /// The answer turns of item `i` (empty when it has none).
    pub fn turns_of(&self, i: usize) -> &[String] {
        self.item_turns.get(i).map_or(&[], Vec::as_slice)
    }

    /// The pool id of item `i`'s prompt (the pool's own id for a single pool).
    pub fn prompt_id_of(&self, i: usize) -> &str {
        match self.item_prompt.get(i) {
            Some(&p) => &self.prompts[p].pool_id,
            None => &self.pool_id,
        }
    }

    /// Whether items `a` and `b` answer the same prompt (always, for a single pool): only such
    /// pairs are ever compared.
    pub fn same_prompt(&self, a: usize, b: usize) -> bool {
        self.item_prompt.is_empty() || self.item_prompt[a] == self.item_prompt[b]
    }

    /// Item indices per prompt, ascending (one group with every item for a single pool).
    pub fn prompt_items(&self) -> Vec<Vec<usize>> {
        prompt_groups(&self.item_prompt, self.n_items())
    }

    /// Every ordered pair (a, b), a ≠ b, of items of one prompt, in (a, b) order; `keep`
    /// filters them. O(Σ n_p²) rather than O(N²) for many prompts.
    pub fn ordered_pairs_within_prompts(&self, keep: impl Fn(usize, usize) -> bool) -> Vec<(usize, usize)> {
        let groups = self.prompt_items();
        let mut out = Vec::new();
        for a in 0..self.n_items() {
            for &b in &groups[self.prompt_of(a)] {
                if a != b && keep(a, b) {
                    out.push((a, b));
                }
            }
        }
        out
    }

    /// Number of items N.
    pub fn n_items(&self) -> usize {
        self.items.len()
    }

    /// Number of bases M.
    pub fn n_bases(&self) -> usize {
        self.bases.len()
    }

    /// Index of an item id.
    pub fn item_index(&self, id: &str) -> Option<usize> {
        self.index.get(id).copied()
    }

    /// Gold quality per base (mean over its items), if every item has `quality`.
    pub fn base_quality(&self) -> Option<Vec<f64>> {
        let mut sum = vec![0.0; self.n_bases()];
        let mut cnt = vec![0usize; self.n_bases()];
        for (i, it) in self.items.iter().enumerate() {
            sum[self.item_base[i]] += it.quality?;
            cnt[self.item_base[i]] += 1;
        }
        Some(sum.iter().zip(&cnt).map(|(s, c)| s / *c as f64).collect())
    }

    /// Whether every item has a text.
    pub fn has_text(&self) -> bool {
        self.items.iter().all(|i| i.text.is_some())
    }

    /// Groups (of two or more items of one prompt, in file order) whose texts are identical up to
    /// whitespace: the same words ([`crate::domain::text::words_of`]).
    pub fn identical_texts(&self) -> Vec<Vec<usize>> {
        let mut by_text: BTreeMap<(usize, String), Vec<usize>> = BTreeMap::new();
        for (i, it) in self.items.iter().enumerate() {
            if let Some(t) = &it.text {
                by_text.entry((self.prompt_of(i), crate::domain::text::words_of(t))).or_default().push(i);
            }
        }
        let mut groups: Vec<Vec<usize>> = by_text.into_values().filter(|g| g.len() > 1).collect();
        groups.sort();
        groups
    }

    /// Items (in file order) whose text is empty or only whitespace.
    pub fn blank_texts(&self) -> Vec<usize> {
        (0..self.items.len()).filter(|&i| self.items[i].text.as_deref().is_some_and(|t| t.trim().is_empty())).collect()
    }

    /// Names of the extra covariates present on every item (sorted).
    pub fn covariate_keys(&self) -> Vec<String> {
        let mut keys: Vec<String> = self.items.iter().flat_map(|i| i.covariates.keys().cloned()).collect();
        keys.sort();
        keys.dedup();
        keys
    }
}

/// Item indices per prompt (ascending) for an item → prompt map `item_prompt` (empty: one
/// prompt holding all `n` items).
pub fn prompt_groups(item_prompt: &[usize], n: usize) -> Vec<Vec<usize>> {
    if item_prompt.is_empty() {
        return vec![(0..n).collect()];
    }
    let np = item_prompt.iter().max().map_or(0, |m| m + 1);
    let mut g = vec![Vec::new(); np];
    for (i, &p) in item_prompt.iter().enumerate() {
        g[p].push(i);
    }
    g
}

/// Covariate transform (docs/model.md §1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Transform {
    /// (x − mean) / sd within the pool, population sd.
    Zscore,
    /// x as is.
    Raw,
    /// ln x, x > 0.
    Log,
}

impl std::str::FromStr for Transform {
    type Err = crate::domain::invalid::InvalidInput;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "zscore" => Ok(Self::Zscore),
            "raw" => Ok(Self::Raw),
            "log" => Ok(Self::Log),
            o => Err(format!("unknown transform {o:?}; expected zscore, raw or log").into()),
        }
    }
}

/// A covariate request: name plus transform.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CovariateSpec {
    /// `words`, `markdown`, or a key of the items' `covariates` map.
    pub name: String,
    /// Transform; default `zscore` for `words`, `raw` otherwise.
    #[serde(default)]
    pub transform: Option<Transform>,
}

impl CovariateSpec {
    /// Parse `NAME[:TRANSFORM]` (white space around either part is dropped, as in
    /// `words, markdown`).
    ///
    /// # Errors
    /// An empty name, an unknown transform.
    pub fn parse(s: &str) -> Result<Self, crate::domain::invalid::InvalidInput> {
        let (name, transform) = match s.split_once(':') {
            None => (s.trim(), None),
            Some((n, t)) => (n.trim(), Some(t.trim().parse()?)),
        };
        if name.is_empty() {
            return Err(format!(
                "empty covariate name in {s:?}; expected NAME or NAME:TRANSFORM (words, markdown or a key of the items' covariates); a fit without covariates is --model naive"
            )
            .into());
        }
        Ok(Self { name: name.to_owned(), transform })
    }

    /// The transform in force (default `zscore` for `words`, else `raw`).
    pub fn effective_transform(&self) -> Transform {
        self.transform.unwrap_or(if self.name == "words" { Transform::Zscore } else { Transform::Raw })
    }
}

/// Default covariates: `words` (zscore) when items have text, plus every key of `covariates` (raw).
pub fn default_covariates(pool: &Pool) -> Vec<CovariateSpec> {
    let mut v = Vec::new();
    if pool.has_text() {
        v.push(CovariateSpec { name: "words".into(), transform: Some(Transform::Zscore) });
    }
    for k in pool.covariate_keys() {
        if k != "words" {
            v.push(CovariateSpec { name: k, transform: Some(Transform::Raw) });
        }
    }
    v
}

/// Whitespace word count.
pub fn word_count(text: &str) -> usize {
    text.split_whitespace().count()
}

/// 1 if the text has markdown structure (list item, header, table row or bold), else 0.
pub fn has_markdown(text: &str) -> bool {
    text.contains("**")
        || text.lines().any(|l| {
            let t = l.trim_start();
            t.starts_with("# ")
                || t.starts_with("## ")
                || t.starts_with("### ")
                || t.starts_with("- ")
                || t.starts_with("* ")
                || (t.starts_with('|') && t.trim_end().ends_with('|') && t.len() > 1)
                || t.split_once(". ")
                    .is_some_and(|(n, _)| !n.is_empty() && n.len() <= 3 && n.chars().all(|c| c.is_ascii_digit()))
        })
}

/// The covariate matrix of a pool: `x[i]` has length p (row i = item i), plus notes.
#[derive(Debug, Clone, Serialize)]
pub struct Covariates {
    /// Covariate names (length p).
    pub names: Vec<String>,
    /// Transforms (length p).
    pub transforms: Vec<Transform>,
    /// Transformed values, N rows × p columns.
    pub x: Vec<Vec<f64>>,
    /// Names of covariates with no variation in the pool (zero columns).
    pub no_variation: Vec<String>,
}

impl Covariates {
    /// p = number of covariates.
    pub fn p(&self) -> usize {
        self.names.len()
    }

    /// No covariates (naive model).
    pub fn none(n_items: usize) -> Self {
        Covariates { names: vec![], transforms: vec![], x: vec![vec![]; n_items], no_variation: vec![] }
    }
}

/// What is wrong with an id of the pool (pool, item, base, system, prompt) beyond
/// [`id_problem`]: such an id prints as itself in lists and tables, so it may not be empty, begin
/// or end with white space (Markdown and HTML drop it: `" x"` showed as `x`), hold a comma
/// (summaries list ids with `, `: `a,b, M1` read as three), or hold a character that prints as
/// nothing or breaks a line ([`crate::domain::fmt::ignorable`]). `None` for a fine id.
pub fn listed_id_problem(id: &str) -> Option<String> {
    if id.is_empty() {
        return Some(
            "is empty; expected a name (ids are the columns of the tables and the names in the reports)".into(),
        );
    }
    if let Some(p) = id_problem(id) {
        return Some(p);
    }
    if id.trim() != id {
        return Some(format!(
            "{} begins or ends with white space; ids are shown in tables, lists and reports, where it is lost (\" x\" shows as \"x\"): write it without",
            shown_id(id)
        ));
    }
    if id.contains(',') {
        return Some(format!(
            "{} holds a comma; ids are listed with commas in summaries and messages (\"a,b, M1\" would read as three): write it without (e.g. \"{}\")",
            shown_id(id),
            id.replace(", ", "; ").replace(',', ";")
        ));
    }
    id.chars().find(|&c| crate::domain::fmt::ignorable(c)).map(|c| {
        format!(
            "{:?} holds the character U+{:04X}, which prints as nothing; ids are shown in tables and reports, where two ids would look alike: write it without",
            id,
            u32::from(c)
        )
    })
}

/// What is wrong with an id (pool, item, base, system, judge) that would reach a terminal, an
/// SVG or a report: control characters (ESC, BEL, CR, …, which a terminal runs) or
/// bidirectional overrides (U+202A–U+202E, U+2066–U+2069, which reorder what is shown), or a
/// backtick (which ends the code spans ids are written in, in the Markdown reports), or more
/// than [`MAX_ID_CHARS`] characters. `None` for a fine id. The pool's own ids also pass
/// [`listed_id_problem`].
pub fn id_problem(id: &str) -> Option<String> {
    let n = id.chars().count();
    if n > MAX_ID_CHARS {
        return Some(format!(
            "{} is {n} characters long; ids are columns of the tables and names in the reports: at most {MAX_ID_CHARS} characters (a text pasted as the id?)",
            shown_id(id)
        ));
    }
    if id.contains('`') {
        return Some(format!(
            "{id:?} holds a backtick (`); ids are written as code in the Markdown reports, where a backtick would end them: rename the item"
        ));
    }
    let bad = id
        .chars()
        .find(|c| c.is_control() || ('\u{202a}'..='\u{202e}').contains(c) || ('\u{2066}'..='\u{2069}').contains(c))?;
    Some(format!(
        "{:?} holds the character U+{:04X} (a control or text-direction character); ids are shown in terminals, plots and reports, so they may not hold such characters",
        id,
        u32::from(bad)
    ))
}

/// An id as messages quote it: whole (`"M12"`), or its first 24 characters and `…` for an id
/// longer than [`MAX_ID_CHARS`] (one that is refused for that, and would fill the terminal).
pub fn shown_id(id: &str) -> String {
    if id.chars().count() > MAX_ID_CHARS {
        format!("{:?}…", id.chars().take(24).collect::<String>())
    } else {
        format!("{id:?}")
    }
}

/// The longest id (item, base, system or pool), in characters: ids are table columns, padded to
/// the longest (a width of 65,536 or more cannot be formatted).
pub const MAX_ID_CHARS: usize = 1000;

/// The largest covariate magnitude the model takes (before its transform).
pub const MAX_COVARIATE: f64 = 1e100;

/// Build the transformed covariate matrix for `specs`.
///
/// # Errors
/// [`PoolError::Invalid`]: a text covariate on an item without text, a missing covariate key,
/// a value above [`MAX_COVARIATE`] in magnitude (or not finite), `log` of a value ≤ 0, or a
/// duplicate covariate name.
pub fn build_covariates(pool: &Pool, specs: &[CovariateSpec]) -> Result<Covariates, PoolError> {
    let bad = |msg: String| PoolError::Invalid { pool_id: pool.pool_id.clone(), msg };
    // A fault of item i, named as its pool file writes it (its prompt's pool over many prompts).
    let bad_item = |i: usize, msg: String| {
        let (pool_id, id) = pool.origin(i);
        PoolError::Invalid { pool_id: pool_id.to_owned(), msg: format!("item {id:?}{msg}") }
    };
    let n = pool.n_items();
    let mut x = vec![Vec::with_capacity(specs.len()); n];
    let mut names = Vec::new();
    let mut transforms = Vec::new();
    let mut no_variation = Vec::new();
    for spec in specs {
        if names.contains(&spec.name) {
            return Err(bad(format!("covariate {:?} is listed twice", spec.name)));
        }
        let mut col = Vec::with_capacity(n);
        for (i, it) in pool.items.iter().enumerate() {
            let v = match spec.name.as_str() {
                "words" | "markdown" if !it.covariates.contains_key(&spec.name) => {
                    let t = it.text.as_deref().ok_or_else(|| {
                        bad_item(i, format!(" has no text, needed for covariate {:?}", spec.name))
                    })?;
                    if spec.name == "words" { word_count(t) as f64 } else { f64::from(u8::from(has_markdown(t))) }
                }
                name => *it.covariates.get(name).ok_or_else(|| {
                    bad_item(i, format!(" has no covariate {name:?} (expected \"covariates\": {{{name:?}: number}}, or the built-ins words, markdown)"))
                })?,
            };
            col.push(v);
        }
        // The fit multiplies covariate differences: beyond ~1e100 their squares and sums
        // overflow to infinity (and a z-score's sd with them). Under `log` the limit applies
        // to the logarithm (checked below, after the transform).
        let t = spec.effective_transform();
        if t != Transform::Log
            && let Some((i, v)) = col.iter().enumerate().find(|(_, v)| !v.is_finite() || v.abs() > MAX_COVARIATE)
        {
            return Err(bad_item(
                i,
                format!(
                    ": covariate {:?} = {v:e} is too large for the model (|value| ≤ 1e100; its squares would overflow); rescale it, e.g. divide it by a power of ten, or use transform log for a positive quantity",
                    spec.name
                ),
            ));
        }
        match t {
            Transform::Raw => {}
            Transform::Log => {
                for (i, v) in col.iter_mut().enumerate() {
                    if *v <= 0.0 {
                        return Err(bad_item(
                            i,
                            format!(
                                ": covariate {:?} = {} cannot take transform log (needs > 0)",
                                spec.name,
                                crate::domain::fmt::value(*v)
                            ),
                        ));
                    }
                    *v = v.ln();
                }
            }
            Transform::Zscore => match zscore_scale(&col) {
                Some((mean, sd)) => col.iter_mut().for_each(|v| *v = (*v - mean) / sd),
                None => col.iter_mut().for_each(|v| *v = 0.0),
            },
        }
        let (lo, hi) = col.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| (a.min(*v), b.max(*v)));
        if hi - lo <= 0.0 {
            no_variation.push(spec.name.clone());
        }
        for (row, v) in x.iter_mut().zip(col) {
            row.push(v);
        }
        names.push(spec.name.clone());
        transforms.push(t);
    }
    Ok(Covariates { names, transforms, x, no_variation })
}

/// The mean and population sd (ddof = 0) the `zscore` transform divides a column by; `None` for
/// a column constant to 1e-12 of its scale (it becomes 0).
pub fn zscore_scale(col: &[f64]) -> Option<(f64, f64)> {
    let n = col.len() as f64;
    let mean = col.iter().sum::<f64>() / n;
    let sd = (col.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n).sqrt();
    (sd > 1e-12 * mean.abs().max(1.0)).then_some((mean, sd))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_that_would_run_in_a_terminal_or_break_a_report_are_refused() {
        assert_eq!(id_problem("M12"), None);
        assert!(id_problem("M\u{1b}[31m").unwrap().contains("U+001B"));
        assert!(id_problem("a\u{202e}b").unwrap().contains("U+202E"));
        assert!(id_problem("M`1").unwrap().contains("holds a backtick"));
        // Ids that print like another or like two (hunt 55): ` x` showed as `x` in the reports,
        // `a,b` read as two ids in `point top-3: a,b, M1, x`, `a\u{200b}` as `a`.
        assert!(listed_id_problem("").unwrap().starts_with("is empty"));
        for id in [" x", "x ", "x\u{a0}"] {
            assert!(listed_id_problem(id).unwrap().contains("begins or ends with white space"), "{id:?}");
        }
        let comma = listed_id_problem("a,b").unwrap();
        assert!(comma.contains("holds a comma") && comma.contains("(e.g. \"a;b\")"), "{comma}");
        assert!(listed_id_problem("a\u{200b}").unwrap().contains("U+200B, which prints as nothing"));
        assert!(listed_id_problem("a\u{2066}b").unwrap().contains("U+2066 (a control or text-direction"));
        assert!(listed_id_problem("\tx").unwrap().contains("U+0009"));
        // Every default-ignorable character, not only the zero-width space (hunt 56: `a` + ZWJ
        // + `b` printed as `ab` beside `ab`).
        for c in ['\u{200d}', '\u{200c}', '\u{ad}', '\u{61c}', '\u{34f}', '\u{fe0f}', '\u{2028}', '\u{e0041}'] {
            let e = listed_id_problem(&format!("a{c}b")).unwrap();
            assert!(e.contains(&format!("U+{:04X}", u32::from(c))), "{e}");
        }
        assert_eq!(listed_id_problem("M 1 (v2)"), None, "white space inside is fine");
        // A judge's name is not listed with the pool's ids: `mock (stochastic, seed 7)` is fine.
        assert_eq!(id_problem("mock (stochastic, seed 7)"), None);
        assert_eq!(id_problem(&"é".repeat(MAX_ID_CHARS)), None, "characters, not bytes");
        assert!(id_problem(&"x".repeat(MAX_ID_CHARS + 1)).unwrap().contains("is 1001 characters long"));
    }

    /// `--covariates ''` named no covariate `""` of an item; `words, markdown` read `" markdown"`.
    #[test]
    fn a_covariate_flag_is_read_without_its_spaces_and_an_empty_name_is_refused() {
        let spec = |n: &str, t| CovariateSpec { name: n.into(), transform: t };
        assert_eq!(CovariateSpec::parse(" markdown").unwrap(), spec("markdown", None));
        assert_eq!(CovariateSpec::parse("words : log").unwrap(), spec("words", Some(Transform::Log)));
        for empty in ["", " ", ":raw"] {
            assert_eq!(
                CovariateSpec::parse(empty).unwrap_err().0,
                format!(
                    "empty covariate name in {empty:?}; expected NAME or NAME:TRANSFORM (words, markdown or a key of the items' covariates); a fit without covariates is --model naive"
                )
            );
        }
    }

    /// A multi-turn prompt keeps its turns through [`Pool::systems`]; a single-turn one has none.
    #[test]
    fn turns_follow_their_items_into_a_run_over_many_prompts() {
        let sys = |id: &str| Item { id: id.into(), system: Some(id.into()), text: Some("x".into()), ..Item::default() };
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let two = Pool::new("p2".into(), "q1\n\nq2".into(), vec![sys("A"), sys("B")])
            .unwrap()
            .with_turns(s(&["q1", "q2"]), vec![s(&["a1", "a2"]), s(&["b1", "b2"])])
            .unwrap();
        let one = Pool::new("p1".into(), "q".into(), vec![sys("A"), sys("B")]).unwrap();
        assert!(one.turns_of(0).is_empty() && one.task_turns_of(0).is_empty());
        let merged = Pool::systems("2 prompts".into(), vec![one, two]).unwrap();
        assert!(merged.turns_of(1).is_empty() && merged.task_turns_of(1).is_empty());
        assert_eq!(merged.task_turns_of(3), ["q1", "q2"]);
        assert_eq!(merged.turns_of(2), ["a1", "a2"]);
        assert_eq!(merged.turns_of(3), ["b1", "b2"]);
        let e = Pool::new("p".into(), "q".into(), vec![sys("A"), sys("B")])
            .unwrap()
            .with_turns(s(&["q1", "q2"]), vec![s(&["a1"]), vec![]])
            .unwrap_err();
        assert!(e.to_string().contains("item \"A\" has 1 turns, the task has 2"), "{e}");
    }

    fn item(id: &str, text: &str) -> Item {
        Item {
            id: id.into(),
            text: Some(text.into()),
            quality: None,
            covariates: BTreeMap::new(),
            base: None,
            rendering: None,
            words: None,
            human: None,
            system: None,
        }
    }

    /// Texts that differ only in whitespace (inside or around) are one text; a space that splits
    /// a word is a difference; a text of another prompt is never the same answer.
    #[test]
    fn identical_texts_are_the_same_words_up_to_whitespace() {
        let p = Pool::new(
            "p".into(),
            "t".into(),
            vec![
                item("a", "The cat  sat."),
                item("b", " The cat sat.\n"),
                item("c", "The\tcat\n\nsat."),
                item("d", "Thecat sat."),
                item("e", "the cat sat."),
                item("f", "x y"),
                item("g", "x\u{a0}y"),
            ],
        )
        .unwrap();
        assert_eq!(p.identical_texts(), vec![vec![0, 1, 2], vec![5, 6]]);
    }

    #[test]
    fn zscore_uses_population_sd() {
        // words = 1, 2, 3: mean 2, population sd sqrt(2/3).
        let p = Pool::new("p".into(), "t".into(), vec![item("a", "w"), item("b", "w w"), item("c", "w w w")]).unwrap();
        let c = build_covariates(&p, &[CovariateSpec::parse("words").unwrap()]).unwrap();
        let sd = (2.0f64 / 3.0).sqrt();
        assert!((c.x[0][0] + 1.0 / sd).abs() < 1e-12);
        assert!((c.x[2][0] - 1.0 / sd).abs() < 1e-12);
        assert!(c.no_variation.is_empty());
    }

    #[test]
    fn constant_covariate_is_zero_and_reported() {
        let p = Pool::new("p".into(), "t".into(), vec![item("a", "x y"), item("b", "u v")]).unwrap();
        let c = build_covariates(&p, &[CovariateSpec::parse("words:zscore").unwrap()]).unwrap();
        assert_eq!(c.x, vec![vec![0.0], vec![0.0]]);
        assert_eq!(c.no_variation, vec!["words".to_string()]);
    }

    #[test]
    fn duplicate_ids_and_empty_pools_are_errors() {
        let e = Pool::new("p".into(), "t".into(), vec![item("a", "x"), item("a", "y")]).unwrap_err();
        assert!(e.to_string().contains("duplicate item id \"a\""), "{e}");
        let e = Pool::new("p".into(), "t".into(), vec![]).unwrap_err();
        assert!(e.to_string().contains("no items"), "{e}");
        let huge = Item { quality: Some(-1e308), ..item("b", "y") };
        let e = Pool::new("p".into(), "t".into(), vec![item("a", "x"), huge]).unwrap_err();
        assert!(e.to_string().contains("item \"b\": quality -1e308 is too large (|quality| ≤ 1e100"), "{e}");
    }

    #[test]
    fn markdown_detection() {
        assert!(has_markdown("Intro\n- one\n- two"));
        assert!(has_markdown("This is **bold**."));
        assert!(has_markdown("# Title\ntext"));
        assert!(has_markdown("1. first\n2. second"));
        assert!(!has_markdown("Plain text. With sentences - and dashes."));
    }

    #[test]
    fn log_needs_positive_values() {
        let mut a = item("a", "x");
        a.covariates.insert("len".into(), 0.0);
        let mut b = item("b", "y");
        b.covariates.insert("len".into(), 2.0);
        let p = Pool::new("p".into(), "t".into(), vec![a, b]).unwrap();
        let e = build_covariates(&p, &[CovariateSpec::parse("len:log").unwrap()]).unwrap_err();
        assert!(e.to_string().contains("covariate \"len\" = 0 cannot take transform log (needs > 0)"), "{e}");
        // A huge value is echoed as written, not as its 301 digits.
        let mut c = item("c", "z");
        c.covariates.insert("len".into(), -1e300);
        let mut d = item("d", "w");
        d.covariates.insert("len".into(), 2.0);
        let p = Pool::new("p".into(), "t".into(), vec![c, d]).unwrap();
        let e = build_covariates(&p, &[CovariateSpec::parse("len:log").unwrap()]).unwrap_err();
        assert!(e.to_string().contains("covariate \"len\" = -1e300 cannot take transform log (needs > 0)"), "{e}");
    }
}

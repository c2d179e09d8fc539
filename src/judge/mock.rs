//! Mock judges (docs/model.md §4, the tutorial): deterministic and keyed-stochastic.
//!
//! score(item, slot) = quality + POS_BIAS·[slot = A] + VERB_PER_WORD·words
//!                     (+ bonus·[item's system among `self_preference.systems`]).
//! Deterministic: the higher score wins, a tie goes to A. Stochastic: P(first wins) =
//! σ((score_A − score_B)/temperature), one Bernoulli draw keyed by (seed, a, b), so the same
//! ordered pair always gets the same verdict whatever the query order.

use super::{BoxFuture, Judge, JudgeError, JudgeInfo};
use crate::domain::pool::{Item, Pool, word_count};
use crate::domain::rng;
use crate::domain::verdict::{JudgeReply, Usage};
use crate::model::bt::sigmoid;
use serde::{Deserialize, Serialize};

/// Mock judge parameters (YAML `judge: {mock: {...}}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MockConfig {
    /// Bonus added to the slot-A answer, in quality units. Default 0.3 (see README: biased but
    /// competent on the SummEval 1–5 scale, where within-pool quality sd ≈ 0.5).
    #[serde(default = "d_pos")]
    pub pos_bias: f64,
    /// Bonus per word, in quality units. Default 0.01 (one within-pool sd of SummEval length, ≈ 17 words, ≈ 0.17 quality).
    #[serde(default = "d_verb")]
    pub verb_per_word: f64,
    /// `deterministic` (tutorial) or `stochastic` (keyed Bernoulli).
    #[serde(default)]
    pub mode: MockMode,
    /// Temperature of the stochastic mock, quality units (> 0). Default 0.25.
    #[serde(default = "d_temp")]
    pub temperature: f64,
    /// Seed of the keyed Bernoulli draws.
    #[serde(default, deserialize_with = "crate::domain::serde_words::whole")]
    pub seed: u64,
    /// Simulated latency per verdict, milliseconds (at most [`MAX_LATENCY_MS`], a minute).
    #[serde(default, deserialize_with = "crate::domain::serde_words::whole")]
    pub latency_ms: u64,
    /// Simulated price in USD per million prompt tokens (simulated usage: 1.3 tokens per word of
    /// task and answers, plus 60). Unset = free.
    #[serde(default)]
    pub input_usd_per_mtok: Option<f64>,
    /// Simulated price in USD per million completion tokens (1 completion token per verdict).
    #[serde(default)]
    pub output_usd_per_mtok: Option<f64>,
    /// Judge items without gold `quality` (e.g. an imported benchmark) by a stand-in quality:
    /// 3 + 0.5·z(system) + 0.25·z(item), z a fixed standard-normal value from the SHA-256 of the
    /// name ([`stand_in_quality`]), so the import → run path can be tried offline. The ranking
    /// then says nothing about the answers. Off by default (such a pool is refused).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stand_in_quality: bool,
    /// A simulated self-preference, over systems: `bonus` (quality units) added to an answer of
    /// one of `systems` (e.g. its own model family's), in either slot. Unset: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub self_preference: Option<SelfPreference>,
}

/// [`MockConfig::self_preference`]: the systems a mock judge favours and by how much.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SelfPreference {
    /// The systems favoured (the `system` of an item).
    pub systems: Vec<String>,
    /// Quality units added to an answer of one of them (at the default temperature 0.25, a
    /// bonus of 0.25 is 1 logit).
    pub bonus: f64,
}

/// The stand-in quality of an item without gold `quality` (see
/// [`MockConfig::stand_in_quality`]): 3 + 0.5·z(its system, base or id) + 0.25·z(its id), on
/// the SummEval 1–5 scale the mock's defaults are set for; z(name) is one standard-normal draw
/// from the stream `stand_in_quality` seeded by the first 64 bits of SHA-256(name), so it is
/// the same on every run and machine.
pub fn stand_in_quality(it: &Item) -> f64 {
    let group = it.system.as_deref().or(it.base.as_deref()).unwrap_or(&it.id);
    3.0 + 0.5 * z_of(&format!("system:{group}")) + 0.25 * z_of(&format!("item:{}", it.id))
}

fn z_of(name: &str) -> f64 {
    use rand_distr::Distribution;
    let seed = u64::from_str_radix(&rng::sha256_hex(name)[..16], 16).expect("hex");
    rand_distr::StandardNormal.sample(&mut rng::stream(seed, "stand_in_quality", 0))
}

fn d_pos() -> f64 {
    0.3
}
fn d_verb() -> f64 {
    0.01
}
fn d_temp() -> f64 {
    0.25
}

impl Default for MockConfig {
    fn default() -> Self {
        Self {
            pos_bias: d_pos(),
            verb_per_word: d_verb(),
            mode: MockMode::Deterministic,
            temperature: d_temp(),
            seed: 0,
            latency_ms: 0,
            input_usd_per_mtok: None,
            output_usd_per_mtok: None,
            stand_in_quality: false,
            self_preference: None,
        }
    }
}

/// Mock mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum MockMode {
    /// Higher score wins; tie to A.
    #[default]
    Deterministic,
    /// Keyed Bernoulli with P(A) = σ(Δscore / temperature).
    Stochastic,
}

/// The mock judge.
pub struct MockJudge {
    cfg: MockConfig,
}

/// Words of an item: its `words` covariate when given, else the whitespace word count of its text.
pub fn item_words(it: &Item) -> f64 {
    it.covariates.get("words").copied().unwrap_or_else(|| it.text.as_deref().map(word_count).unwrap_or(0) as f64)
}

/// The largest |pos_bias|, |verb_per_word|, temperature or self-preference bonus a mock judge
/// takes (quality units).
const MAX_QUALITY_UNITS: f64 = 1e6;

/// The longest simulated latency of one verdict, milliseconds: a minute (a larger one, a typo,
/// would hold a run for hours).
pub const MAX_LATENCY_MS: u64 = 60_000;

impl MockJudge {
    /// A mock judge.
    ///
    /// # Errors
    /// A message when temperature ≤ 0 or a number is not finite.
    pub fn new(cfg: MockConfig) -> Result<Self, crate::domain::invalid::InvalidInput> {
        if !(cfg.temperature > 0.0 && cfg.temperature.is_finite()) {
            return Err(format!("temperature = {} must be a finite number > 0", cfg.temperature).into());
        }
        for (k, v) in [("pos_bias", cfg.pos_bias), ("verb_per_word", cfg.verb_per_word)] {
            if !v.is_finite() {
                return Err(format!("{k} = {v} must be finite").into());
            }
        }
        // Quality units: SummEval's scale is 1–5; a value past a million is a typo, and would
        // be shown digit by digit in every run's judge description.
        let bonus = cfg.self_preference.as_ref().map_or(0.0, |sp| sp.bonus);
        for (k, v) in [
            ("pos_bias", cfg.pos_bias),
            ("verb_per_word", cfg.verb_per_word),
            ("temperature", cfg.temperature),
            ("self_preference.bonus", bonus),
        ] {
            if v.abs() > MAX_QUALITY_UNITS {
                return Err(format!("{k} = {v:e} must be within ±1e6 (quality units): a typo?").into());
            }
        }
        if cfg.latency_ms > MAX_LATENCY_MS {
            return Err(format!(
                "latency_ms = {} must be at most {MAX_LATENCY_MS} (a minute per verdict; a slow live judge takes seconds): a typo?",
                cfg.latency_ms
            )
            .into());
        }
        if let Some(sp) = &cfg.self_preference {
            if !sp.bonus.is_finite() {
                return Err(format!("self_preference.bonus = {} must be finite", sp.bonus).into());
            }
            if sp.systems.is_empty() {
                return Err("self_preference.systems is empty: name the systems the judge favours".into());
            }
        }
        for (k, v) in [("input_usd_per_mtok", cfg.input_usd_per_mtok), ("output_usd_per_mtok", cfg.output_usd_per_mtok)]
        {
            if let Some(v) = v
                && !(v >= 0.0 && v.is_finite())
            {
                return Err(format!("{k} = {v} must be a finite number ≥ 0").into());
            }
            if let Some(v) = v
                && v > crate::judge::MAX_USD_PER_MTOK
            {
                return Err(
                    format!("{k} = {v:e} must be at most 1e6 (USD per million tokens, $1 a token): a typo?").into()
                );
            }
        }
        Ok(Self { cfg })
    }

    /// The configuration.
    pub fn config(&self) -> &MockConfig {
        &self.cfg
    }

    /// score(item, slot) in quality units.
    ///
    /// # Panics
    /// If the item has no gold `quality` and `stand_in_quality` is off (the caller checks at
    /// config time).
    pub fn score(&self, it: &Item, slot_a: bool) -> f64 {
        let q = match it.quality {
            Some(q) => q,
            None if self.cfg.stand_in_quality => stand_in_quality(it),
            None => panic!("mock judge needs quality"),
        };
        let own = match (&self.cfg.self_preference, &it.system) {
            (Some(sp), Some(sys)) if sp.systems.contains(sys) => sp.bonus,
            _ => 0.0,
        };
        q + if slot_a { self.cfg.pos_bias } else { 0.0 } + self.cfg.verb_per_word * item_words(it) + own
    }

    /// Probability that the first-shown item wins (1/0 for the deterministic mock).
    pub fn p_first(&self, a: &Item, b: &Item) -> f64 {
        let d = self.score(a, true) - self.score(b, false);
        match self.cfg.mode {
            MockMode::Deterministic => {
                if d >= 0.0 {
                    1.0
                } else {
                    0.0
                }
            }
            MockMode::Stochastic => sigmoid(d / self.cfg.temperature),
        }
    }

    /// The verdict y on (a first, b second): deterministic, or the keyed Bernoulli draw.
    pub fn outcome(&self, pool: &Pool, a: usize, b: usize) -> f64 {
        let (ia, ib) = (&pool.items[a], &pool.items[b]);
        let p = self.p_first(ia, ib);
        match self.cfg.mode {
            MockMode::Deterministic => p,
            MockMode::Stochastic => {
                let u = rng::keyed_uniform(rng::key64(self.cfg.seed, &["mock", pool.prompt_id_of(a), &ia.id, &ib.id]));
                if u < p { 1.0 } else { 0.0 }
            }
        }
    }

    fn usage(&self, pool: &Pool, a: usize, b: usize) -> Usage {
        let words = word_count(pool.task_of(a)) as f64 + item_words(&pool.items[a]) + item_words(&pool.items[b]);
        // Saturating: a word count given as a number may be far beyond any real prompt.
        Usage {
            prompt_tokens: ((1.3 * words).round() as u64).saturating_add(60),
            completion_tokens: 1,
            ..Default::default()
        }
    }

    fn cost(&self, u: &Usage) -> f64 {
        u.prompt_tokens as f64 * self.cfg.input_usd_per_mtok.unwrap_or(0.0) / 1e6
            + u.completion_tokens as f64 * self.cfg.output_usd_per_mtok.unwrap_or(0.0) / 1e6
    }
}

impl JudgeInfo for MockJudge {
    fn describe(&self) -> String {
        format!(
            "mock ({}, pos_bias {}, verb_per_word {}{})",
            match self.cfg.mode {
                MockMode::Deterministic => "deterministic",
                MockMode::Stochastic => "stochastic",
            },
            self.cfg.pos_bias,
            self.cfg.verb_per_word,
            if self.cfg.mode == MockMode::Stochastic {
                format!(", temperature {}, seed {}", self.cfg.temperature, self.cfg.seed)
            } else {
                String::new()
            }
        ) + &match &self.cfg.self_preference {
            Some(sp) => format!(" favouring {} by {}", sp.systems.join(", "), sp.bonus),
            None => String::new(),
        }
    }

    /// The settings that decide the verdict, and the ordered pair. The simulated latency and
    /// prices are set to their defaults first: they change what a verdict costs and when it
    /// comes, not what it says, so editing them keeps the run's verdicts (and a mock without
    /// them keeps the keys it always had).
    fn cache_key(&self, pool: &Pool, a: usize, b: usize) -> String {
        let decisive =
            MockConfig { latency_ms: 0, input_usd_per_mtok: None, output_usd_per_mtok: None, ..self.cfg.clone() };
        let cfg = serde_json::to_string(&decisive).expect("serialisable");
        let (ia, ib) = (&pool.items[a], &pool.items[b]);
        let payload = serde_json::json!({"judge": "mock", "cfg": cfg, "pool": pool.prompt_id_of(a), "a": ia, "b": ib});
        rng::sha256_hex(&payload.to_string())
    }

    fn worst_case_usd(&self, pool: &Pool, a: usize, b: usize) -> f64 {
        self.cost(&self.usage(pool, a, b))
    }

    fn has_price(&self) -> bool {
        self.cfg.input_usd_per_mtok.is_some() || self.cfg.output_usd_per_mtok.is_some()
    }

    /// Prompt tokens are round(1.3 · words) + 60 with words = (task words + words of a) + words
    /// of b, priced at non-negative rates: non-decreasing in that sum.
    fn worst_case_parts(&self, pool: &Pool) -> Option<crate::judge::WorstCaseParts> {
        let rates = [self.cfg.input_usd_per_mtok, self.cfg.output_usd_per_mtok];
        if rates.iter().flatten().any(|r| r.is_nan() || *r < 0.0) {
            return None;
        }
        let n = pool.n_items();
        Some(crate::judge::WorstCaseParts {
            first: (0..n).map(|a| word_count(pool.task_of(a)) as f64 + item_words(&pool.items[a])).collect(),
            second: (0..n).map(|b| item_words(&pool.items[b])).collect(),
        })
    }

    /// Deterministic mode: score(a, slot A) − score(b, slot B) (the verdict is its sign, a tie
    /// going to A). Stochastic mode: `None` — its verdicts are draws, and the audit must measure
    /// them rather than read the noise-free score.
    fn score_margin(&self, pool: &Pool, a: usize, b: usize) -> Option<f64> {
        (self.cfg.mode == MockMode::Deterministic)
            .then(|| self.score(&pool.items[a], true) - self.score(&pool.items[b], false))
    }
}

impl Judge for MockJudge {
    fn judge<'a>(&'a self, pool: &'a Pool, a: usize, b: usize) -> BoxFuture<'a, Result<JudgeReply, JudgeError>> {
        Box::pin(async move {
            if self.cfg.latency_ms > 0 {
                tokio::time::sleep(std::time::Duration::from_millis(self.cfg.latency_ms)).await;
            }
            let usage = self.usage(pool, a, b);
            Ok(JudgeReply {
                y: Some(self.outcome(pool, a, b)),
                invalid_reason: None,
                raw: None,
                cost_usd: self.cost(&usage),
                usage,
                attempts: 1,
                latency_ms: self.cfg.latency_ms,
                detail: Default::default(),
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn it(id: &str, q: f64, words: f64) -> Item {
        let mut c = BTreeMap::new();
        c.insert("words".to_string(), words);
        Item {
            id: id.into(),
            text: None,
            quality: Some(q),
            covariates: c,
            base: None,
            rendering: None,
            words: None,
            human: None,
            system: None,
        }
    }

    #[test]
    fn stand_in_quality_is_fixed_per_name_and_spread_as_stated() {
        let item = |id: &str, sys: &str| Item { id: id.into(), system: Some(sys.into()), ..Default::default() };
        // The same names give the same value on every call (a hash, not a draw of this run).
        assert_eq!(stand_in_quality(&item("p1/s", "s")), stand_in_quality(&item("p1/s", "s")));
        // Over many systems: mean 3 and sd √(0.5² + 0.25²) ≈ 0.559 (standard errors ≈ 0.006, 0.004).
        let q: Vec<f64> = (0..8000).map(|i| stand_in_quality(&item(&format!("p/{i}"), &format!("sys{i}")))).collect();
        let mean = q.iter().sum::<f64>() / q.len() as f64;
        let sd = (q.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (q.len() - 1) as f64).sqrt();
        assert!((mean - 3.0).abs() < 0.03, "{mean}");
        assert!((sd - (0.3125f64).sqrt()).abs() < 0.03, "{sd}");
        // Two answers of one system share its 0.5·z(system): their difference has sd 0.25·√2.
        let d: Vec<f64> = (0..8000)
            .map(|i| {
                stand_in_quality(&item(&format!("a{i}"), "one")) - stand_in_quality(&item(&format!("b{i}"), "one"))
            })
            .collect();
        let sd_d = (d.iter().map(|x| x * x).sum::<f64>() / d.len() as f64).sqrt();
        assert!((sd_d - 0.25 * 2f64.sqrt()).abs() < 0.02, "{sd_d}");
        // The mock scores such an item only when asked to.
        let j = MockJudge::new(MockConfig { stand_in_quality: true, ..MockConfig::default() }).unwrap();
        let it = item("x", "s");
        assert_eq!(j.score(&it, false), stand_in_quality(&it) + 0.01 * 0.0);
    }

    /// Settings past a million quality units are refused as typos (1e308 was taken, and shown as
    /// 309 digits in the judge's description); a million is taken.
    #[test]
    fn settings_past_a_million_quality_units_are_refused() {
        for (cfg, says) in [
            (MockConfig { pos_bias: 1e308, ..Default::default() }, "pos_bias = 1e308 must be within ±1e6"),
            (MockConfig { verb_per_word: -2e6, ..Default::default() }, "verb_per_word = -2e6 must be within ±1e6"),
            (MockConfig { temperature: 1e7, ..Default::default() }, "temperature = 1e7 must be within ±1e6"),
        ] {
            let e = MockJudge::new(cfg).err().map(|e| e.to_string());
            assert_eq!(e.as_deref(), Some(format!("{says} (quality units): a typo?").as_str()));
        }
        assert!(MockJudge::new(MockConfig { pos_bias: 1e6, ..Default::default() }).is_ok());
    }

    #[test]
    fn tutorial_p01_flips() {
        // (tutorial) p01: X (5, 40), Y (6, 20), POS_BIAS 1, VERB 0.02: X first → X wins; Y first → Y wins.
        let j = MockJudge::new(MockConfig { pos_bias: 1.0, verb_per_word: 0.02, ..Default::default() }).unwrap();
        let (x, y) = (it("x", 5.0, 40.0), it("y", 6.0, 20.0));
        assert_eq!(j.p_first(&x, &y), 1.0);
        assert_eq!(j.p_first(&y, &x), 1.0);
        // Scores: X in A = 5 + 1 + 0.8 = 6.8; Y in B = 6.4.
        assert!((j.score(&x, true) - 6.8).abs() < 1e-12);
    }

    /// A word count far beyond any prompt (1e20, within what a pool holds) saturates the
    /// token count instead of overflowing it.
    #[test]
    fn usage_of_huge_word_counts_saturates() {
        let j = MockJudge::new(MockConfig::default()).unwrap();
        let pool = Pool::new("p".into(), String::new(), vec![it("a", 1.0, 1e20), it("b", 2.0, 3.0)]).unwrap();
        assert_eq!(j.usage(&pool, 0, 1).prompt_tokens, u64::MAX);
        assert_eq!(j.usage(&pool, 1, 1).prompt_tokens, 60 + 8, "1.3 × (3 + 3) words, rounded, plus 60");
    }

    #[test]
    fn stochastic_verdicts_are_keyed_by_pair() {
        let j = MockJudge::new(MockConfig { mode: MockMode::Stochastic, seed: 9, ..Default::default() }).unwrap();
        let pool =
            Pool::new("p".into(), "t".into(), (0..6).map(|i| it(&format!("i{i}"), i as f64 * 0.1, 30.0)).collect())
                .unwrap();
        let first: Vec<f64> = (0..6)
            .flat_map(|a| (0..6).map(move |b| (a, b)))
            .filter(|(a, b)| a != b)
            .map(|(a, b)| j.outcome(&pool, a, b))
            .collect();
        let again: Vec<f64> = (0..6)
            .flat_map(|a| (0..6).map(move |b| (a, b)))
            .filter(|(a, b)| a != b)
            .rev()
            .map(|(a, b)| j.outcome(&pool, a, b))
            .collect();
        let mut again = again;
        again.reverse();
        assert_eq!(first, again);
        assert!(first.contains(&1.0) && first.contains(&0.0));
    }

    #[test]
    fn a_self_preference_adds_its_bonus_to_the_favoured_systems_answers_in_either_slot() {
        let sp = SelfPreference { systems: vec!["own".into()], bonus: 0.25 };
        let j = MockJudge::new(MockConfig { self_preference: Some(sp), ..Default::default() }).unwrap();
        let item = |system: &str| Item {
            id: system.into(),
            system: Some(system.into()),
            quality: Some(3.0),
            text: Some("a b c".into()),
            ..Default::default()
        };
        let plain = MockJudge::new(MockConfig::default()).unwrap();
        for slot_a in [true, false] {
            assert_eq!(j.score(&item("own"), slot_a) - plain.score(&item("own"), slot_a), 0.25);
            assert_eq!(j.score(&item("other"), slot_a), plain.score(&item("other"), slot_a));
        }
        assert!(j.describe().ends_with("favouring own by 0.25"), "{}", j.describe());
        // Its config is part of every cache key; without it the keys are the plain mock's.
        let pool = Pool::new("p".into(), "t".into(), vec![item("own"), item("other")]).unwrap();
        assert_ne!(j.cache_key(&pool, 0, 1), plain.cache_key(&pool, 0, 1));
    }

    /// Simulated latency and prices change what a verdict costs and when it comes: the same
    /// cache key. What decides the verdict (seed, temperature, biases, mode) changes it.
    #[test]
    fn the_cache_key_holds_what_decides_the_verdict_not_latency_or_price() {
        let item = |id: &str, q: f64| Item {
            id: id.into(),
            quality: Some(q),
            text: Some("a b c".into()),
            ..Default::default()
        };
        let pool = Pool::new("p".into(), "t".into(), vec![item("x", 3.0), item("y", 4.0)]).unwrap();
        let base = MockConfig { mode: MockMode::Stochastic, seed: 7, ..Default::default() };
        let key = |c: MockConfig| MockJudge::new(c).unwrap().cache_key(&pool, 0, 1);
        let k0 = key(base.clone());
        let simulated = MockConfig {
            latency_ms: 100,
            input_usd_per_mtok: Some(2.5),
            output_usd_per_mtok: Some(10.0),
            ..base.clone()
        };
        assert_eq!(key(simulated), k0);
        for changed in [
            MockConfig { seed: 8, ..base.clone() },
            MockConfig { temperature: 0.3, ..base.clone() },
            MockConfig { pos_bias: 0.0, ..base.clone() },
            MockConfig { verb_per_word: 0.0, ..base.clone() },
            MockConfig { mode: MockMode::Deterministic, ..base.clone() },
        ] {
            assert_ne!(key(changed), k0);
        }
        assert_ne!(MockJudge::new(base).unwrap().cache_key(&pool, 1, 0), k0, "an ordered pair");
    }

    /// The settings id on every verdict record follows the cache key: the same id for a
    /// changed price or latency, another for a changed seed, temperature, bias or mode; the
    /// same for every pair; 12 hex digits.
    #[test]
    fn the_settings_id_changes_with_what_decides_the_verdict_only() {
        let base = MockConfig { mode: MockMode::Stochastic, seed: 7, ..Default::default() };
        let id = |c: MockConfig| crate::judge::settings_id(&MockJudge::new(c).unwrap());
        let id0 = id(base.clone());
        assert_eq!(id0.len(), crate::judge::SETTINGS_ID_LEN);
        assert!(id0.bytes().all(|b| b.is_ascii_hexdigit()), "{id0}");
        let priced = MockConfig { latency_ms: 100, input_usd_per_mtok: Some(2.5), ..base.clone() };
        assert_eq!(id(priced), id0);
        let changed = [
            MockConfig { seed: 8, ..base.clone() },
            MockConfig { temperature: 0.3, ..base.clone() },
            MockConfig { pos_bias: 0.0, ..base.clone() },
            MockConfig { mode: MockMode::Deterministic, ..base.clone() },
        ];
        let mut ids: Vec<String> = changed.into_iter().map(id).chain([id0.clone()]).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), 5, "{ids:?}");
        let item = |id: &str| Item { id: id.into(), text: Some("a b c".into()), ..Default::default() };
        let pool = Pool::new("p".into(), "t".into(), vec![item("x"), item("y"), item("z")]).unwrap();
        let judge = MockJudge::new(base).unwrap();
        assert_eq!(judge.record_settings(&pool, 0, 1), id0);
        assert_eq!(judge.record_settings(&pool, 2, 1), id0);
    }
}

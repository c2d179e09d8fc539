//! The output schema of a run: `result.json` ([`RunResult`]) and why a run stopped
//! ([`StopReason`]). Commands and reports read it; the run loop writes it. Field units are
//! given per field (logits, USD, tokens); the model is described in docs/model.md.

use crate::acquire;
use crate::analysis::ranking::{ComparisonGraph, RankingKind, ReportRanking};
use crate::domain::pool::Transform;
use crate::domain::verdict::Usage;
use crate::model::summary::ModelKind;
use crate::report::RankRow;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Why the run stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// `max_comparisons` reached.
    MaxComparisons,
    /// `max_usd` reached (the next query's worst case would pass it).
    MaxUsd,
    /// Every unqueried ordered pair has been queried.
    Exhausted,
    /// The top-k is certified at the ε of `acquisition.confidence` (k bases in, every other out).
    Confident,
    /// The fit failed: result.json says so and claims no ranking; the verdicts are kept.
    FitFailed,
    /// The share of invalid replies passed `judge.openai.max_invalid_rate` (`stop_message`
    /// names the likely cause).
    MaxInvalidRate,
    /// Ctrl-C or SIGTERM: sending stopped, the requests in flight were awaited for up to the
    /// grace period (those still out are booked as possibly billed); re-running resumes.
    Interrupted,
    /// A provider batch job of the run is still open (`run --detach`, or the job could not be
    /// read): its queries are booked when a later run resumes it (docs/live.md, "Batch
    /// dispatch").
    BatchPending,
    /// The judge failed: an endpoint-wide error (named in `last_error`), or rounds without any
    /// verdict. The result is fitted from the verdicts stored so far.
    JudgeFailing,
}

/// A pair set aside for the rest of a run after repeated failed queries (docs/live.md,
/// "Retries, rate limits, concurrency").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuarantinedPair {
    /// Item id of one side (the first shown in the first failed query).
    pub a: String,
    /// Item id of the other side.
    pub b: String,
    /// Failed queries of this pair (both orders).
    pub failed_queries: u32,
    /// The judge's error on the pair's last failed query (HTTP status, timeout, parse failure, …).
    pub last_error: String,
}

/// The result of a run, written as `result.json` in its folder (the fields are listed in the README).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunResult {
    /// The run's `name` from the config; the run folder is `<out_dir>/<name>`.
    pub name: String,
    /// The `pool_id` of the ranked pool.
    pub pool_id: String,
    /// k: the size of the top set that recall and membership refer to.
    pub k: usize,
    /// The model fitted: `naive` (θ and κ) or `bias_aware` (θ, bias coefficients c, κ).
    pub model: ModelKind,
    /// The judge's `describe()` text, e.g. `openai MODEL @ BASE_URL (prompt FILE)`; never secrets.
    pub judge: String,
    /// The acquisition strategy that chose the queries (config key `acquisition.strategy`).
    pub strategy: acquire::StrategyKind,
    /// Why the run stopped.
    pub stop_reason: StopReason,
    /// Verdicts stored for this judge configuration (valid + invalid).
    pub comparisons: usize,
    /// Valid verdicts (fitted).
    pub valid: usize,
    /// Invalid verdicts (excluded from the fit).
    pub invalid: usize,
    /// Failed queries in this invocation (nothing stored, may be asked again).
    pub failed: usize,
    /// Of `failed`: requests a batch job ended without running (it expired or the provider
    /// cancelled it; docs/live.md): not billed, and no fault of their pairs.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub not_run: usize,
    /// Total spend booked for this judge configuration, USD: its stored verdicts (duplicate
    /// records included), failed queries that cost money (failed.jsonl) and requests booked as
    /// possibly billed (intents.jsonl). What counts against `max_usd`.
    pub spend_usd: f64,
    /// Requests booked as possibly billed: sent (or about to be) by a run that ended before their
    /// replies were recorded, or still in flight when an interrupt's grace period ended
    /// (docs/live.md). Included in `spend_usd`.
    #[serde(default)]
    pub possibly_billed: usize,
    /// Their cost as booked: each request's reserved worst case, USD.
    #[serde(default)]
    pub possibly_billed_usd: f64,
    /// Queries of a provider batch job still open (`run --detach`): not possibly billed (the
    /// job's files will tell), but reserved; their reservations are in `spend_usd`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_open_batch_job: Option<OpenJobReserved>,
    /// Verdict records whose key an earlier record holds (not fitted or counted; their cost is in
    /// `spend_usd`).
    #[serde(default)]
    pub duplicate_records: usize,
    /// Everything the run folder's books hold: every judge, pool and config that wrote there, and
    /// a gate's trusted judge. What `budget.max_usd` bounds (docs/live.md, "Budget").
    #[serde(default)]
    pub folder_spend: FolderSpend,
    /// Replies billed above their reservations in this invocation (absent: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overrun: Option<OverrunReport>,
    /// Total tokens.
    pub usage: Usage,
    /// The fitted ranking: θ̂, sd, π, φ̂, ĉ, κ̂ per base and covariate, the reported top-k and
    /// ranking and why, recall, identifiability and notes.
    #[serde(flatten)]
    pub fit: FittedRanking,
    /// Covariates with no variation in the pool.
    pub no_variation: Vec<String>,
    /// The ranking chosen by a trusted-anchor gate (`run --gate gate.json`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gate: Option<GateChoice>,
    /// Counters of a live judge in this invocation (requests, retries, invalid replies, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge_stats: Option<crate::judge::JudgeStats>,
    /// Pairs set aside in this invocation after repeated failed queries (never picked again).
    #[serde(default)]
    pub quarantined: Vec<QuarantinedPair>,
    /// The error that stopped the run (`stop_reason: judge_failing`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// Where the provider batch job left open is (`stop_reason: batch_pending`); a later run
    /// books it (docs/live.md, "Batch dispatch").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_pending: Option<String>,
    /// What a replay judge replayed (recording, recorded judge, queries it lacked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<crate::judge::replay::ReplayInfo>,
    /// This invocation's judge fingerprint checks, one line each as printed, a check not run
    /// among them with its reason (docs/live.md, "Judge fingerprint"; absent: none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fingerprint: Vec<String>,
    /// The request rate this invocation achieved (live judges that sent requests).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throughput: Option<Throughput>,
    /// Invalid verdicts, strong preferences, verdict-shaped answers, and why an invalid-rate
    /// stop happened.
    #[serde(default, flatten)]
    pub verdicts_report: VerdictsReport,
}

/// A fitted ranking as `result.json` and `fit --out` hold it (flattened into both): the fit's
/// values per base and covariate, the reported top-k and ranking and why, recall where the data
/// decide it, identifiability and notes (docs/model.md, "Which ranking is reported").
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FittedRanking {
    /// The reported top-k (`reporting.reported`), base ids, best first; only the bases the data
    /// place there (see `topk_tied`).
    pub topk: Vec<String>,
    /// θ̂ per base (logits).
    pub theta: BTreeMap<String, f64>,
    /// Posterior sd per base (logits).
    pub sd: BTreeMap<String, f64>,
    /// Top-k membership π per base in the bias-corrected ranking (P(θ among the k largest)).
    pub membership: BTreeMap<String, f64>,
    /// Apparent quality φ̂ per base (logits).
    pub phi: BTreeMap<String, f64>,
    /// ĉ per covariate (logits per covariate unit).
    pub c: BTreeMap<String, f64>,
    /// Posterior sd of ĉ (logits per covariate unit, as `c`).
    pub c_sd: BTreeMap<String, f64>,
    /// κ̂ (logits).
    pub kappa: f64,
    /// Posterior sd of κ (logits).
    pub kappa_sd: f64,
    /// Gold top-k (when the pool has quality).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gold_topk: Option<Vec<String>>,
    /// Recall@k of the reported top-k against the gold top-k (not claimed under ties or with no
    /// valid comparison).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recall_at_k: Option<f64>,
    /// The reported ranking, best first.
    pub ranking: Vec<RankRow>,
    /// Notes for the reader (identifiability, no-variation covariates, ties, the graph).
    pub notes: Vec<String>,
    /// Per covariate: profile-likelihood range (nats) and verdict (docs/model.md §5).
    #[serde(default)]
    pub identifiability: BTreeMap<String, crate::model::profile::Identifiability>,
    /// Which ranking `topk`, `recall_at_k` and `ranking` report and why, both rankings' top-k,
    /// the apparent quality's sd and membership, the comparison graph and the covariate units.
    #[serde(flatten)]
    pub reporting: Reporting,
}

/// How far the stored verdicts can be trusted (docs/live.md, "Parsing rules").
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct VerdictsReport {
    /// Stored invalid verdicts by reason (`no_verdict`, `refused`, …): count and share of
    /// `comparisons`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub invalid_by_reason: BTreeMap<crate::domain::verdict::InvalidReason, crate::domain::verdict::ReasonCount>,
    /// Valid verdicts that state a strong preference (`[[A>>B]]`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub strong_preferences: usize,
    /// The weight of their likelihood terms in the fit (`model.strong_preference_weight`), when
    /// there are any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strong_preference_weight: Option<f64>,
    /// Candidate answers that contain verdict-shaped text (`[[B>>A]]`, `Final verdict: …`); the
    /// judge sees them unchanged, and lines quoted from them never count as its verdict.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub verdict_shaped_items: Vec<crate::domain::verdict::VerdictShaped>,
    /// Why the run stopped early on invalid replies (rate, reasons, likely cause).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_message: Option<String>,
}

fn is_zero<T: Default + PartialEq>(n: &T) -> bool {
    *n == T::default()
}

/// The certified top-k at ε (docs/model.md, "Certified top-k"): bases with reported top-k
/// membership π ≥ 1 − ε are *in*, π ≤ ε *out*, the rest *undecided* (each best first). The top-k
/// is claimed only when *in* has k members.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CertifiedTopk {
    /// ε (`certify.epsilon`).
    pub epsilon: f64,
    /// Whether the top-k is certified (*in* has k members).
    pub claimed: bool,
    /// π ≥ 1 − ε.
    #[serde(rename = "in")]
    pub inside: Vec<String>,
    /// ε < π < 1 − ε: they compete for the `k − |in|` places left.
    pub undecided: Vec<String>,
    /// π ≤ ε.
    #[serde(rename = "out")]
    pub outside: Vec<String>,
    /// Monte-Carlo draws that estimated π (`acquisition.mc_draws`, `fit --draws`); 0 when
    /// unknown. Nothing is certified with fewer than [`crate::analysis::certify::min_draws`].
    #[serde(default, skip_serializing_if = "is_zero")]
    pub mc_draws: usize,
    /// Why nothing is certified although π would allow it (a judge without signal, no
    /// comparison).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub withheld: Option<String>,
}

impl RunResult {
    /// Why this result cannot be a run's (a hand-edited or damaged result.json), if it cannot:
    /// no ranking, k outside 1 ≤ k < the bases ranked, a rank outside 1 … bases, a probability
    /// or recall outside [0, 1], a negative or non-finite sd, a top-k or certified set naming a
    /// base the ranking lacks, or a certified set its own π contradicts (an *in* base below
    /// 1 − ε, an *out* base above ε, a claimed top-k without k bases in). `report` and `compare`
    /// print these fields as they are, so they refuse such a file (hunt 59: a certified top-3 of
    /// bases with π ≤ 0.002, recall 5.00).
    pub fn inconsistency(&self) -> Option<String> {
        const AGAIN: &str = "the result was edited or damaged; run the config again to write it anew";
        let n = self.fit.ranking.len();
        if n == 0 {
            return Some(format!("`ranking` is empty: a run ranks every base of its pool ({AGAIN})"));
        }
        if self.k == 0 || self.k >= n {
            return Some(format!(
                "`k` is {} but `ranking` holds {n} bases: k must satisfy 1 ≤ k < {n} ({AGAIN})",
                self.k
            ));
        }
        let f = &self.fit;
        let r = &f.reporting;
        let row = |id: &str| f.ranking.iter().find(|x| x.id == id);
        let show = crate::domain::fmt::value;
        // Probabilities and recalls in [0, 1]; sds ≥ 0 (NaN fails both).
        let mut probabilities: Vec<(String, f64)> = Vec::new();
        let mut sds: Vec<(String, f64)> = vec![("kappa_sd".into(), f.kappa_sd)];
        for (name, m) in [("membership", &f.membership), ("membership_apparent", &r.membership_apparent)] {
            probabilities.extend(m.iter().map(|(id, p)| (format!("{name}.{id:?}"), *p)));
        }
        for (name, m) in [("sd", &f.sd), ("phi_sd", &r.phi_sd), ("c_sd", &f.c_sd)] {
            sds.extend(m.iter().map(|(id, s)| (format!("{name}.{id:?}"), *s)));
        }
        for (i, x) in f.ranking.iter().enumerate() {
            probabilities.push((format!("ranking[{i}].membership"), x.membership));
            probabilities.push((format!("ranking[{i}].membership_apparent"), x.membership_apparent));
            sds.push((format!("ranking[{i}].sd"), x.sd));
            sds.push((format!("ranking[{i}].phi_sd"), x.phi_sd));
        }
        for (name, v) in [
            ("recall_at_k", f.recall_at_k),
            ("corrected.recall_at_k", r.corrected.recall_at_k),
            ("apparent.recall_at_k", r.apparent.recall_at_k),
        ] {
            probabilities.extend(v.map(|v| (name.to_owned(), v)));
        }
        if let Some((name, p)) = probabilities.iter().find(|(_, p)| !(0.0..=1.0).contains(p)) {
            return Some(format!("`{name}` is {}: a probability or recall lies in [0, 1] ({AGAIN})", show(*p)));
        }
        if let Some((name, s)) = sds.iter().find(|(_, s)| !(*s >= 0.0 && s.is_finite())) {
            return Some(format!("`{name}` is {}: a posterior sd is finite and ≥ 0 ({AGAIN})", show(*s)));
        }
        // Every base a set names is one the ranking ranks.
        let c = &r.certified;
        for (name, ids) in [
            ("topk", &f.topk),
            ("topk_tied", &r.topk_tied),
            ("corrected.topk", &r.corrected.topk),
            ("corrected.tied", &r.corrected.tied),
            ("apparent.topk", &r.apparent.topk),
            ("apparent.tied", &r.apparent.tied),
            ("certified.in", &c.inside),
            ("certified.undecided", &c.undecided),
            ("certified.out", &c.outside),
        ] {
            if ids.len() > n {
                return Some(format!("`{name}` names {} bases, more than the {n} ranked ({AGAIN})", ids.len()));
            }
            if let Some(id) = ids.iter().find(|id| row(id).is_none()) {
                return Some(format!("`{name}` names {id:?}, which `ranking` does not hold ({AGAIN})"));
            }
        }
        if let Some(id) = f.gold_topk.iter().flatten().find(|id| row(id).is_none()) {
            return Some(format!("`gold_topk` names {id:?}, which `ranking` does not hold ({AGAIN})"));
        }
        // The certified sets as their own π make them (docs/model.md, "Certified top-k"); either
        // ranking's π may be the reported one, so a base contradicts both before it is refused.
        if !(c.epsilon > 0.0 && c.epsilon < 0.5) {
            return Some(format!("`certified.epsilon` is {}: ε lies in (0, 0.5) ({AGAIN})", show(c.epsilon)));
        }
        if c.claimed && c.inside.len() != self.k {
            return Some(format!(
                "`certified.claimed` is true with {} bases in `certified.in`: a certified top-{} has {} ({AGAIN})",
                c.inside.len(),
                self.k,
                self.k
            ));
        }
        let tol = 1e-9;
        let pis = |id: &str| row(id).map_or((0.0, 0.0), |x| (x.membership, x.membership_apparent));
        if let Some(id) = c.inside.iter().find(|id| {
            let (a, b) = pis(id);
            a.max(b) < 1.0 - c.epsilon - tol
        }) {
            return Some(format!(
                "`certified.in` names {id:?}, whose top-{} membership π is below 1 − ε = {} in both rankings ({AGAIN})",
                self.k,
                show(1.0 - c.epsilon)
            ));
        }
        if let Some(id) = c.outside.iter().find(|id| {
            let (a, b) = pis(id);
            a.min(b) > c.epsilon + tol
        }) {
            return Some(format!(
                "`certified.out` names {id:?}, whose top-{} membership π is above ε = {} in both rankings ({AGAIN})",
                self.k,
                show(c.epsilon)
            ));
        }
        // (rank_corrected and rank_apparent are 0 when absent.)
        if let Some((i, row)) = self
            .fit
            .ranking
            .iter()
            .enumerate()
            .find(|(_, r)| r.rank == 0 || r.rank > n || r.rank_corrected > n || r.rank_apparent > n)
        {
            return Some(format!(
                "`ranking[{i}]` ({:?}) has a rank outside 1 … {n} (rank {}, rank_corrected {}, rank_apparent {}; the result was edited or damaged; run the config again to write it anew)",
                row.id, row.rank, row.rank_corrected, row.rank_apparent
            ));
        }
        None
    }
}

impl Default for CertifiedTopk {
    fn default() -> Self {
        Self {
            epsilon: crate::analysis::certify::DEFAULT_EPSILON,
            claimed: false,
            inside: Vec::new(),
            undecided: Vec::new(),
            outside: Vec::new(),
            mc_draws: 0,
            withheld: None,
        }
    }
}

/// One ranking's top-k as the data decide it (base ids).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TopkView {
    /// Bases certainly in the top k, best first (fewer than k when a tie straddles the
    /// boundary; empty when every base is tied, e.g. with no valid comparison).
    pub topk: Vec<String>,
    /// Bases tied at the boundary, sharing the remaining places.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tied: Vec<String>,
    /// Recall@k against the gold top-k (not claimed when ties decide membership or nothing was
    /// compared).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recall_at_k: Option<f64>,
}

/// What a result reports: the ranking chosen under `report_ranking` (docs/model.md), both
/// rankings, and what the data leave undecided.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Reporting {
    /// The `report_ranking` setting in force.
    #[serde(default)]
    pub report_ranking: ReportRanking,
    /// The reported ranking: `apparent` (φ̂) or `corrected` (θ̂).
    #[serde(default)]
    pub reported: RankingKind,
    /// Why that ranking is reported.
    #[serde(default)]
    pub reported_reason: String,
    /// Bases tied at the reported top-k boundary (they share the k − |topk| remaining places).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub topk_tied: Vec<String>,
    /// The bias-corrected ranking's top-k (θ̂).
    #[serde(default)]
    pub corrected: TopkView,
    /// The apparent-quality ranking's top-k (φ̂).
    #[serde(default)]
    pub apparent: TopkView,
    /// Posterior sd of φ per base (logits).
    #[serde(default)]
    pub phi_sd: BTreeMap<String, f64>,
    /// Top-k membership of the apparent ranking, P(base among the k largest φ), per base.
    #[serde(default)]
    pub membership_apparent: BTreeMap<String, f64>,
    /// What the data certify about the reported top-k at ε: the in, out and undecided sets
    /// (docs/model.md, "Certified top-k").
    #[serde(default)]
    pub certified: CertifiedTopk,
    /// A judge whose verdicts carry no signal (one slot or ties winning ≥ 90 % of them): then
    /// nothing is certified.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_signal: Option<crate::analysis::certify::NoSignal>,
    /// Connected components of the bases under the valid verdicts, and bases never compared.
    #[serde(default)]
    pub graph: ComparisonGraph,
    /// Transform of each covariate (the unit of ĉ: logits per sd for `zscore`, per unit for
    /// `raw`, per unit of ln x for `log`).
    #[serde(default)]
    pub transforms: BTreeMap<String, Transform>,
    /// A run over many prompts (docs/systems.md): per system θ̂ ± sd, π, win rate against the
    /// reference system with its 95 % interval and counts; verdicts per prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub systems: Option<crate::analysis::systems::SystemsReport>,
    /// This invocation's verdict counts (printed, not saved: result.json stays the same on a
    /// re-run).
    #[serde(skip)]
    pub session: Option<Session>,
}

/// The spend a run folder's books hold (all of them), USD.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FolderSpend {
    /// Everything booked: verdicts (duplicates included), paid failures, requests booked as
    /// possibly billed and the reservations of the queries in a provider batch job still open,
    /// of every judge and config that wrote into the folder.
    pub spend_usd: f64,
    /// Of it, spent under other settings than this run's judge and pool (earlier configs, a
    /// gate's trusted judge).
    pub other_usd: f64,
    /// Requests booked as possibly billed in the whole folder.
    pub possibly_billed: usize,
    /// Their cost as booked (reserved worst cases), USD.
    pub possibly_billed_usd: f64,
    /// Queries of a provider batch job still open in the folder, reserved (in `spend_usd`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_open_batch_job: Option<OpenJobReserved>,
    /// Of `other_usd`, the judge's fingerprint checks (docs/live.md, "Judge fingerprint").
    #[serde(default, skip_serializing_if = "is_zero_usd")]
    pub fingerprint_usd: f64,
    /// Of `other_usd`, a gate's trusted judge.
    #[serde(default, skip_serializing_if = "is_zero_usd")]
    pub gate_trusted_usd: f64,
    /// What the run's judge left of `max_usd` for the config's gate, asked after it: its trusted
    /// judge's queries still to ask, at their worst case (docs/live.md, "Budget").
    #[serde(default, skip_serializing_if = "is_zero_usd")]
    pub held_for_gate_usd: f64,
    /// `budget.max_usd`, when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_usd: Option<f64>,
}

/// Whether a USD amount is 0 (a field left out of the JSON when so).
pub(crate) fn is_zero_usd(x: &f64) -> bool {
    *x == 0.0
}

/// Queries of a provider batch job still open: their intents stay open until the job's results
/// are booked, and their reservations count against `max_usd` meanwhile (docs/live.md, "Batch
/// dispatch").
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct OpenJobReserved {
    /// Queries in the open job.
    pub queries: usize,
    /// Their reserved worst cases, USD.
    pub reserved_usd: f64,
}

impl OpenJobReserved {
    /// The reservation of `queries` queries costing `reserved_usd` in all, none when there are
    /// no such queries.
    pub fn of(queries: usize, reserved_usd: f64) -> Option<Self> {
        (queries > 0).then_some(Self { queries, reserved_usd })
    }
}

/// Replies billed above what was reserved for them (a provider that ignores `max_tokens`), in
/// one invocation. The first raised the worst case of every later reservation
/// (`worst_case_factor`); the total can pass `max_usd` only by what the replies in flight at an
/// overrun billed above their reservations (docs/live.md, "Budget").
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OverrunReport {
    /// Replies that cost more than their reservation.
    pub replies: u64,
    /// What they cost above their reservations, USD.
    pub excess_usd: f64,
    /// What the judge's worst cases were multiplied by afterwards (≥ 1).
    pub worst_case_factor: f64,
    /// Requests sent and not settled when the first was seen (it included).
    pub in_flight_at_first: u64,
    /// Replies billed more output tokens than `max_tokens` (live judges; reasoning tokens a
    /// provider counts apart included).
    #[serde(default)]
    pub above_max_tokens: u64,
    /// The most output tokens one reply was billed (completion, with reasoning tokens counted
    /// apart added).
    #[serde(default)]
    pub most_completion_tokens: u64,
    /// The judge's `max_tokens`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Replies that reported more prompt tokens than their prompt's bound (live judges; the
    /// reservation counts one token per prompt byte).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub above_prompt_bound: u64,
    /// The most prompt tokens one reply reported.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub most_prompt_tokens: u64,
}

impl OverrunReport {
    /// Why replies cost more than reserved, as the provider's reports show it: more prompt
    /// tokens than the prompt's bytes, more completion tokens than `max_tokens`, or neither
    /// known (a judge without token counts).
    pub fn cause(&self) -> String {
        let mut c = Vec::new();
        if self.above_prompt_bound > 0 {
            c.push("the provider reported more prompt tokens than the prompt has bytes (tokens of its own added to the prompt)");
        }
        if self.above_max_tokens > 0 {
            c.push("the provider does not keep to max_tokens");
        }
        if c.is_empty() { "the judge billed more than its worst case".to_string() } else { c.join("; ") }
    }
}

/// Verdicts of one invocation of `run`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Session {
    /// Stored verdicts of this judge configuration found at the start (reused, not asked again).
    pub reused: usize,
    /// Verdicts this invocation booked from a provider batch job an earlier run left open
    /// (asked then, paid once, stored now).
    pub from_open_job: usize,
    /// Queries sent in this invocation (stored or failed).
    pub asked: usize,
}

/// The request rate of one invocation of a run (docs/live.md, "Concurrency").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Throughput {
    /// Queries resolved in this invocation (verdicts, failures, no verdict), each once however
    /// many HTTP requests it took.
    pub requests: u64,
    /// Seconds from the first request sent to the last reply.
    pub seconds: f64,
    /// Achieved rate: `requests` · 60 / `seconds`, requests per minute.
    pub requests_per_minute: f64,
    /// The judge's `requests_per_minute` limit, when one is configured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_limit: Option<u32>,
    /// The fraction of the rate limit used: `requests_per_minute` / `rate_limit`, in [0, 1].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_limit_used: Option<f64>,
}

impl Throughput {
    /// The summary line: requests, seconds, rate, and the share of the limit when there is one.
    pub fn line(&self) -> String {
        // A query resolves once however many HTTP requests (re-asks, retries) it took: the
        // judge line counts those.
        let mut s = format!(
            "throughput: {} queries resolved (a verdict or a failure) in {:.1} s = {:.0} queries/min",
            self.requests, self.seconds, self.requests_per_minute
        );
        if let (Some(l), Some(u)) = (self.rate_limit, self.rate_limit_used) {
            s.push_str(&format!(" ({:.0}% of requests_per_minute {l})", 100.0 * u));
        }
        s
    }
}

/// What a run reports when it is given a gate result (`topk-judge run --gate gate.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GateChoice {
    /// The gate file.
    pub file: std::path::PathBuf,
    /// The decision read from it.
    pub decision: crate::analysis::gate::GateDecision,
    /// The ranking the run reports after the gate (`corrected` or `apparent` in gate.json).
    pub chosen: RankingKind,
    /// The chosen point top-k (base ids, best first).
    pub topk: Vec<String>,
    /// Recall@k of the chosen top-k against the gold top-k, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recall_at_k: Option<f64>,
    /// Caveats (gate computed on another pool, fewer anchors than requested, ...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

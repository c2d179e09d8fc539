//! Which ranking a result reports, and what the data leave undecided (docs/model.md,
//! docs/identifiability.md).
//!
//! **Corrected or apparent.** The bias-aware model ranks by θ̂ (the *bias-corrected* quality);
//! the *apparent* quality φ̂ = θ̂ + ĉᵀx̄ is what the comparisons identify. With one covariate
//! value per answer the split of φ̂ into θ̂ and ĉx is chosen by the prior, not by the data
//! ("When Can You Debias an LLM Judge?", Prop. 2), so under `report_ranking: auto` a result
//! reports the corrected ranking only when the data can justify it: every varying covariate is
//! identified by the design (renderings that share a base, profile range ≥ 1e-3 nats), or a
//! trusted-anchor gate enabled the correction. Otherwise it reports the apparent ranking, with
//! the corrected one beside it and the reason.
//!
//! **Ties.** θ̂ (or φ̂) values on the same [`TIE_LOGITS`](crate::model::membership::TIE_LOGITS) grid point are ties (as in
//! [`point_topk`]). When a tie straddles the
//! top-k boundary the data do not decide membership: the top-k holds only the members above the
//! tie, and the tied bases share the remaining places (with zero valid comparisons every base
//! is tied at the prior mean and no top-k is claimed).
//!
//! **The comparison graph.** Bases are nodes, a valid verdict between two bases is an edge. θ̂
//! of bases in different connected components are compared only through the prior; a base
//! never compared sits at the prior mean.

use crate::analysis::gate::GateDecision;
use crate::model::profile::Identifiability;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use crate::model::membership::{point_topk, tie_grid as grid};

/// The `report_ranking` setting of a run config (and `fit --report-ranking`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReportRanking {
    /// The corrected ranking only when the design identifies the correction or a gate enabled
    /// it; otherwise the apparent ranking (default).
    #[default]
    Auto,
    /// Always the bias-corrected ranking (θ̂).
    Corrected,
    /// Always the apparent-quality ranking (φ̂).
    Apparent,
}

/// A ranking of the bases.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RankingKind {
    /// By apparent quality φ̂ = θ̂ + ĉᵀx̄ (what the comparisons identify).
    #[default]
    Apparent,
    /// By bias-corrected quality θ̂.
    Corrected,
}

impl RankingKind {
    /// `apparent` or `corrected`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Apparent => "apparent",
            Self::Corrected => "corrected",
        }
    }

    /// What it ranks by, in words.
    pub fn what(self) -> &'static str {
        match self {
            Self::Apparent => "apparent quality φ̂",
            Self::Corrected => "bias-corrected quality θ̂",
        }
    }
}

/// What a result reports and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    /// The reported ranking.
    pub reported: RankingKind,
    /// Why, in one sentence.
    pub reason: String,
}

/// The facts the choice depends on.
pub struct ChoiceInput<'a> {
    /// The setting.
    pub setting: ReportRanking,
    /// Whether the model has bias coefficients at all (bias-aware with p ≥ 1).
    pub has_covariates: bool,
    /// Identifiability per covariate (profile range and verdict).
    pub identifiability: &'a BTreeMap<String, Identifiability>,
    /// Covariates without variation in the pool (ĉ = 0; they change nothing).
    pub no_variation: &'a [String],
    /// Whether the pool has several renderings of a base (the paired design's evidence).
    pub renderings: bool,
    /// Whether the run ranks systems over many prompts (docs/systems.md): the "renderings" are
    /// then a system's answers to different prompts, which share its quality only if that
    /// quality does not change with the covariate from prompt to prompt.
    pub systems: bool,
    /// The decision of a trusted-anchor gate, when one ran for this run.
    pub gate: Option<&'a GateDecision>,
}

/// Decide which ranking to report (module docs).
pub fn choose(i: &ChoiceInput<'_>) -> Choice {
    let c = |reported, reason: String| Choice { reported, reason };
    if !i.has_covariates {
        return c(RankingKind::Apparent, "the model has no bias coefficient: θ̂ is the apparent quality".into());
    }
    let varying: Vec<(&String, &Identifiability)> =
        i.identifiability.iter().filter(|(n, _)| !i.no_variation.contains(n)).collect();
    let unidentified: Vec<&str> = varying.iter().filter(|(_, e)| !e.identified()).map(|(n, _)| n.as_str()).collect();
    let by_design = !varying.is_empty() && unidentified.is_empty() && i.renderings;
    let why_not_design = || {
        if varying.is_empty() {
            "no covariate varies in this pool, so the two rankings agree".to_string()
        } else if !unidentified.is_empty() {
            let list = unidentified.iter().map(|n| format!("c[{n}]")).collect::<Vec<_>>().join(", ");
            format!(
                "{list} {} prior-selected (the comparisons do not inform it)",
                if unidentified.len() == 1 { "is" } else { "are" }
            )
        } else {
            "the coefficients are informed only without renderings of a shared base, which the design does not guarantee".to_string()
        }
    };
    match i.setting {
        ReportRanking::Corrected => {
            let mut r = "report_ranking: corrected".to_string();
            if !by_design && i.gate.is_none_or(|g| !g.enable) {
                r.push_str(&format!(" (note: {}; the correction rests on the prior)", why_not_design()));
            }
            c(RankingKind::Corrected, r)
        }
        ReportRanking::Apparent => c(RankingKind::Apparent, "report_ranking: apparent".into()),
        ReportRanking::Auto => match i.gate {
            Some(g) if g.enable => c(
                RankingKind::Corrected,
                format!(
                    "the trusted-anchor gate enabled the correction (corrected right on {} of {} anchors{}, p = {})",
                    g.n10,
                    g.n10 + g.n01,
                    ties_of(g),
                    fmt_p(g.p_value)
                ),
            ),
            Some(g) => c(
                RankingKind::Apparent,
                format!(
                    "the trusted-anchor gate kept the apparent ranking (corrected right on {} of {} anchors{}, p = {} > α = {})",
                    g.n10,
                    g.n10 + g.n01,
                    ties_of(g),
                    fmt_p(g.p_value),
                    g.alpha
                ),
            ),
            None if by_design && i.systems => c(
                RankingKind::Apparent,
                "a system's answers to different prompts identify the coefficients only if its quality does not change with them from prompt to prompt, which benchmark answers rarely satisfy (a system's longer answers are often its better ones); `topk-judge check` tests it, and a trusted-anchor gate or report_ranking: corrected reports the correction".into(),
            ),
            None if by_design => c(
                RankingKind::Corrected,
                "every varying bias coefficient is identified by the design (renderings of a shared base)".into(),
            ),
            None => c(
                RankingKind::Apparent,
                format!("{} and no trusted-anchor gate enabled the correction", why_not_design()),
            ),
        },
    }
}

/// `, 3 more tied or unlabelled` for a gate whose anchors count for neither ranking (empty
/// when none).
fn ties_of(g: &GateDecision) -> String {
    if g.n_ties == 0 { String::new() } else { format!(", {} more tied or unlabelled", g.n_ties) }
}

/// A p-value for text: 4 decimals, or 2 significant digits below 1e-4.
pub fn fmt_p(p: f64) -> String {
    if p != 0.0 && p < 1e-4 { format!("{p:.1e}") } else { format!("{p:.4}") }
}

/// Order of `values` (descending; ties by index), the base indices best first.
pub fn order(values: &[f64]) -> Vec<usize> {
    point_topk(values, values.len())
}

/// Competition ranks (1-based) with ties, and whether each base is tied with another: tied
/// bases share the rank of the first of them (1, 2, 2, 4).
pub fn ranks_with_ties(values: &[f64]) -> (Vec<usize>, Vec<bool>) {
    let ord = order(values);
    let mut rank = vec![0; values.len()];
    let mut tied = vec![false; values.len()];
    let mut g = 0;
    while g < ord.len() {
        let head = grid(values[ord[g]]);
        let mut e = g + 1;
        while e < ord.len() && grid(values[ord[e]]) == head {
            e += 1;
        }
        for &b in &ord[g..e] {
            rank[b] = g + 1;
            tied[b] = e - g > 1;
        }
        g = e;
    }
    (rank, tied)
}

/// A top-k as the data decide it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TopkWithTies {
    /// Bases certainly in the top k (best first).
    pub topk: Vec<usize>,
    /// Bases tied at the boundary, sharing the `k − topk.len()` remaining places (empty when
    /// the data decide every place).
    pub tied: Vec<usize>,
}

/// The top k of `values` with ties at the boundary reported (module docs).
///
/// # Panics
/// If `k` is 0 or larger than the number of values.
pub fn topk_with_ties(values: &[f64], k: usize) -> TopkWithTies {
    assert!(k >= 1 && k <= values.len(), "k = {k} must be in 1..={}", values.len());
    let ord = order(values);
    let (rank, _) = ranks_with_ties(values);
    // The tie group of the k-th base: every base with its rank.
    let kth_rank = rank[ord[k - 1]];
    let group: Vec<usize> = ord.iter().copied().filter(|&b| rank[b] == kth_rank).collect();
    let group_end = kth_rank - 1 + group.len();
    if group_end <= k {
        return TopkWithTies { topk: ord[..k].to_vec(), tied: Vec::new() };
    }
    TopkWithTies { topk: ord[..kth_rank - 1].to_vec(), tied: group }
}

/// The comparison graph of a fit: connected components of the bases under valid verdicts.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ComparisonGraph {
    /// Number of connected components (a never-compared base is one on its own).
    pub components: usize,
    /// Component sizes, largest first.
    pub component_sizes: Vec<usize>,
    /// Base ids of each component with more than one base when there are several components
    /// (largest first; empty when the graph is connected).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<Vec<String>>,
    /// Base ids never compared with another base.
    #[serde(default)]
    pub never_compared: Vec<String>,
}

impl ComparisonGraph {
    /// Whether every base is connected to every other.
    pub fn connected(&self) -> bool {
        self.components <= 1
    }

    /// The component sizes, largest first, a run of three or more equal sizes written once:
    /// `"6585 plus 34 of size 2 plus 3348 of size 1"` (not `6585, 34 of size 2, …`, which reads as
    /// a size 34). Beside such a run, two equal sizes are written so too (`4 plus 5 of size 2
    /// plus 2 of size 1`, not `… plus 1, 1`).
    pub fn sizes_text(&self) -> String {
        if let [first, ..] = self.component_sizes.as_slice()
            && self.component_sizes.len() >= 3
            && self.component_sizes.iter().all(|s| s == first)
        {
            return format!("all of size {first}");
        }
        let mut text = String::new();
        let mut after_run = false;
        let any_run = self.component_sizes.chunk_by(|a, b| a == b).any(|r| r.len() >= 3);
        for run in self.component_sizes.chunk_by(|a, b| a == b) {
            let is_run = run.len() >= 3 || (any_run && run.len() == 2);
            let parts = if is_run {
                vec![format!("{} of size {}", run.len(), run[0])]
            } else {
                run.iter().map(ToString::to_string).collect()
            };
            for p in parts {
                if !text.is_empty() {
                    text.push_str(if is_run || after_run { " plus " } else { ", " });
                }
                text.push_str(&p);
                after_run = is_run;
            }
        }
        text
    }

    /// The sizes in words: `sizes 50, 2, 2 plus 13 of size 1`, `6 of size 2 plus 4 of size 1`,
    /// or `all of size 1`.
    pub fn sizes_words(&self) -> String {
        let t = self.sizes_text();
        let first_is_run =
            self.component_sizes.len() >= 3 && self.component_sizes[..3].iter().all(|s| *s == self.component_sizes[0]);
        if t.starts_with("all ") || first_is_run { t } else { format!("sizes {t}") }
    }

    /// The never-compared bases: all of them up to eight, else the first eight and the count.
    pub fn never_compared_text(&self) -> String {
        let n = self.never_compared.len();
        if n > 8 {
            format!("{}, … ({n} in all)", self.never_compared[..8].join(", "))
        } else {
            self.never_compared.join(", ")
        }
    }

    /// One line for a disconnected graph: `"3 components (sizes 3, 2, 1); never compared: i6"`.
    pub fn summary_text(&self) -> String {
        let mut s = format!("{} components ({})", self.components, self.sizes_words());
        if !self.never_compared.is_empty() {
            s.push_str(&format!("; never compared: {}", self.never_compared_text()));
        }
        s
    }
}

/// Connected components of `m` bases (ids `bases`) under the base pairs `edges` (within-base
/// pairs are ignored).
pub fn comparison_graph(bases: &[String], edges: impl IntoIterator<Item = (usize, usize)>) -> ComparisonGraph {
    let m = bases.len();
    let mut parent: Vec<usize> = (0..m).collect();
    fn find(p: &mut [usize], mut x: usize) -> usize {
        while p[x] != x {
            p[x] = p[p[x]];
            x = p[x];
        }
        x
    }
    let mut degree = vec![0usize; m];
    for (i, j) in edges {
        if i == j {
            continue;
        }
        degree[i] += 1;
        degree[j] += 1;
        let (ri, rj) = (find(&mut parent, i), find(&mut parent, j));
        if ri != rj {
            parent[ri.max(rj)] = ri.min(rj);
        }
    }
    let mut comps: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for b in 0..m {
        let r = find(&mut parent, b);
        comps.entry(r).or_default().push(b);
    }
    let mut list: Vec<Vec<usize>> = comps.into_values().collect();
    list.sort_by(|a, b| b.len().cmp(&a.len()).then(a[0].cmp(&b[0])));
    let groups = if list.len() > 1 {
        list.iter().filter(|c| c.len() > 1).map(|c| c.iter().map(|&b| bases[b].clone()).collect()).collect()
    } else {
        Vec::new()
    };
    ComparisonGraph {
        components: list.len(),
        component_sizes: list.iter().map(Vec::len).collect(),
        groups,
        never_compared: (0..m).filter(|&b| degree[b] == 0).map(|b| bases[b].clone()).collect(),
    }
}

/// The note a disconnected comparison graph gets (`None` when connected).
pub fn graph_note(g: &ComparisonGraph) -> Option<String> {
    if g.connected() {
        return None;
    }
    let mut s = format!(
        "the comparison graph has {} components ({}): bases in different components are ordered only by the prior",
        g.components,
        g.sizes_words()
    );
    if !g.never_compared.is_empty() {
        let list = g.never_compared_text();
        s.push_str(&format!("; never compared (θ̂ at the prior mean): {list}"));
    }
    Some(s)
}

/// Recall@k of `est` against the gold qualities: certain members count, and members of a tie
/// group at the boundary fill its shared places.
pub fn recall_with_ties(est: &[usize], gold_quality: &[f64], k: usize) -> f64 {
    let g = topk_with_ties(gold_quality, k);
    let sure = est.iter().filter(|i| g.topk.contains(i)).count();
    let tied = est.iter().filter(|i| g.tied.contains(i)).count().min(k - g.topk.len());
    (sure + tied) as f64 / k as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::membership::TIE_LOGITS;

    #[test]
    fn recall_shares_tied_places() {
        // Gold: 5 > 4 = 4 > 1, k = 2: item 0 is certain, items 1 and 2 share one place.
        let q = [5.0, 4.0, 4.0, 1.0];
        assert_eq!(recall_with_ties(&[0, 1], &q, 2), 1.0);
        assert_eq!(recall_with_ties(&[0, 2], &q, 2), 1.0);
        assert_eq!(recall_with_ties(&[1, 2], &q, 2), 0.5);
        assert_eq!(recall_with_ties(&[3, 1], &q, 2), 0.5);
    }

    fn ids(n: usize) -> Vec<String> {
        (1..=n).map(|i| format!("i{i}")).collect()
    }

    #[test]
    fn long_graph_descriptions_stay_short() {
        let never: Vec<String> = (0..13).map(|i| format!("s{i}")).collect();
        let g = ComparisonGraph {
            components: 16,
            component_sizes: [vec![50, 2, 2], vec![1; 13]].concat(),
            groups: Vec::new(),
            never_compared: never,
        };
        assert_eq!(g.sizes_text(), "50 plus 2 of size 2 plus 13 of size 1");
        // Two equal sizes after a run read as a run too (it read "4 plus 5 of size 2 plus 1, 1":
        // hunt 39 F10); without a run they stay a list.
        let live = ComparisonGraph { component_sizes: vec![4, 2, 2, 2, 2, 2, 1, 1], ..Default::default() };
        assert_eq!(live.sizes_words(), "sizes 4 plus 5 of size 2 plus 2 of size 1");
        let few = ComparisonGraph { component_sizes: vec![3, 2, 2, 1], ..Default::default() };
        assert_eq!(few.sizes_words(), "sizes 3, 2, 2, 1");
        let runs = ComparisonGraph { component_sizes: vec![5, 5, 5, 2, 1, 1, 1], ..Default::default() };
        assert_eq!(runs.sizes_text(), "3 of size 5 plus 2 plus 3 of size 1");
        assert_eq!(runs.sizes_words(), "3 of size 5 plus 2 plus 3 of size 1");
        assert_eq!(g.sizes_words(), "sizes 50 plus 2 of size 2 plus 13 of size 1");
        let alone = ComparisonGraph { components: 16, component_sizes: vec![1; 16], ..Default::default() };
        assert_eq!(alone.sizes_words(), "all of size 1");
        assert_eq!(
            g.summary_text(),
            "16 components (sizes 50 plus 2 of size 2 plus 13 of size 1); never compared: s0, s1, s2, s3, s4, s5, s6, s7, … (13 in all)"
        );
        let small = ComparisonGraph {
            components: 3,
            component_sizes: vec![3, 2, 1],
            groups: Vec::new(),
            never_compared: vec!["i6".into()],
        };
        assert_eq!(small.summary_text(), "3 components (sizes 3, 2, 1); never compared: i6");
    }

    #[test]
    fn three_components_with_one_never_compared() {
        // Verdicts only inside {1, 2, 3} and {4, 5}; the sixth base is never compared.
        let g = comparison_graph(&ids(6), [(0, 1), (1, 2), (3, 4), (4, 3)]);
        assert_eq!(g.components, 3);
        assert_eq!(g.component_sizes, vec![3, 2, 1]);
        assert_eq!(g.never_compared, vec!["i6".to_string()]);
        assert_eq!(g.groups, vec![vec!["i1", "i2", "i3"], vec!["i4", "i5"]]);
        let note = graph_note(&g).unwrap();
        assert!(note.starts_with("the comparison graph has 3 components (sizes 3, 2, 1)"), "{note}");
        assert!(note.ends_with("never compared (θ̂ at the prior mean): i6"), "{note}");
        let one = comparison_graph(&ids(3), [(0, 1), (2, 1)]);
        assert_eq!((one.components, one.groups.len(), one.never_compared.len()), (1, 0, 0));
        assert!(graph_note(&one).is_none());
    }

    #[test]
    fn ties_at_the_boundary_are_not_decided() {
        // 1.0 > 0.5 = 0.5 > 0: for k = 2 the second place is shared by two bases.
        let t = topk_with_ties(&[0.5, 1.0, 0.0, 0.5], 2);
        assert_eq!(t.topk, vec![1]);
        assert_eq!(t.tied, vec![0, 3]);
        // For k = 3 the tie is inside the top 3: decided.
        let t = topk_with_ties(&[0.5, 1.0, 0.0, 0.5], 3);
        assert_eq!((t.topk, t.tied), (vec![1, 0, 3], vec![]));
        // All equal (the prior with no comparison): nothing is decided.
        let t = topk_with_ties(&[0.0; 5], 1);
        assert_eq!((t.topk.len(), t.tied.len()), (0, 5));
        // Differences below the tolerance are ties, above it they are not.
        let t = topk_with_ties(&[1.0, 1.0 + 0.3 * TIE_LOGITS, 0.0], 1);
        assert_eq!((t.topk.len(), t.tied), (0, vec![0, 1]));
        let t = topk_with_ties(&[1.0, 1.0 + 3.0 * TIE_LOGITS, 0.0], 1);
        assert_eq!((t.topk, t.tied), (vec![1], vec![]));
        let (r, tied) = ranks_with_ties(&[0.5, 1.0, 0.0, 0.5]);
        assert_eq!(r, vec![2, 1, 4, 2]);
        assert_eq!(tied, vec![true, false, false, true]);
    }

    fn ident(identified: bool) -> Identifiability {
        Identifiability::profiled(if identified { 13.1 } else { 6.1e-6 })
    }

    #[test]
    fn auto_reports_the_corrected_ranking_only_when_the_data_justify_it() {
        let prior_selected: BTreeMap<String, Identifiability> = [("words".to_string(), ident(false))].into();
        let identified: BTreeMap<String, Identifiability> = [("words".to_string(), ident(true))].into();
        let base = |id: &BTreeMap<String, Identifiability>, renderings: bool, gate: Option<&GateDecision>| {
            choose(&ChoiceInput {
                setting: ReportRanking::Auto,
                has_covariates: true,
                identifiability: id,
                no_variation: &[],
                renderings,
                systems: false,
                gate,
            })
        };
        // A system's answers to many prompts "identify" c only under an assumption real
        // benchmarks break: auto keeps the apparent ranking there, unless a gate enables it.
        let systems = |gate: Option<&GateDecision>| {
            choose(&ChoiceInput {
                setting: ReportRanking::Auto,
                has_covariates: true,
                identifiability: &identified,
                no_variation: &[],
                renderings: true,
                systems: true,
                gate,
            })
        };
        let s = systems(None);
        assert_eq!(s.reported, RankingKind::Apparent);
        assert!(s.reason.starts_with("a system's answers to different prompts identify"), "{}", s.reason);
        let c = base(&prior_selected, false, None);
        assert_eq!(c.reported, RankingKind::Apparent);
        assert_eq!(
            c.reason,
            "c[words] is prior-selected (the comparisons do not inform it) and no trusted-anchor gate enabled the correction"
        );
        assert_eq!(base(&identified, true, None).reported, RankingKind::Corrected);
        assert_eq!(base(&identified, false, None).reported, RankingKind::Apparent);
        let on = GateDecision {
            n_anchors: 10,
            n10: 9,
            n01: 1,
            n_ties: 0,
            p_value: 11.0 / 1024.0,
            alpha: 0.05,
            enable: true,
        };
        let off = GateDecision { n10: 3, n01: 7, p_value: 0.9453, enable: false, ..on };
        assert_eq!(systems(Some(&on)).reported, RankingKind::Corrected);
        let g = base(&prior_selected, false, Some(&on));
        assert_eq!(g.reported, RankingKind::Corrected);
        assert_eq!(
            g.reason,
            "the trusted-anchor gate enabled the correction (corrected right on 9 of 10 anchors, p = 0.0107)"
        );
        // Ties count for neither ranking: said, so "of 10" does not read as all the anchors
        // (it read "22 of 31 anchors" of 40: hunt 39 F7).
        let tied = GateDecision { n_anchors: 13, n_ties: 3, ..on };
        assert_eq!(
            base(&prior_selected, false, Some(&tied)).reason,
            "the trusted-anchor gate enabled the correction (corrected right on 9 of 10 anchors, 3 more tied or unlabelled, p = 0.0107)"
        );
        let g = base(&identified, true, Some(&off));
        assert_eq!(g.reported, RankingKind::Apparent);
        assert!(g.reason.contains("p = 0.9453 > α = 0.05"), "{}", g.reason);
        // A covariate without variation does not count.
        let c = choose(&ChoiceInput {
            setting: ReportRanking::Auto,
            has_covariates: true,
            identifiability: &prior_selected,
            no_variation: &["words".to_string()],
            renderings: false,
            systems: false,
            gate: None,
        });
        assert!(c.reason.starts_with("no covariate varies"), "{}", c.reason);
        let forced = choose(&ChoiceInput {
            setting: ReportRanking::Corrected,
            has_covariates: true,
            identifiability: &prior_selected,
            no_variation: &[],
            renderings: false,
            systems: false,
            gate: None,
        });
        assert_eq!(forced.reported, RankingKind::Corrected);
        assert!(forced.reason.contains("rests on the prior"), "{}", forced.reason);
    }
}

//! Pure analyses on verdicts and pools, around the model: what the data certify about the top-k
//! ([`certify`]), the judge bias audit ([`audit`]), its CI thresholds ([`fail_on`]), the judge-fingerprint test ([`fingerprint`]) and
//! its per-judge table on recorded verdicts ([`recorded`]), the
//! trusted-anchor gate statistics ([`gate`], [`gate_sim`]), the paired rendering design
//! ([`design`]), content-free renderings ([`render`]), synthetic pools ([`synth`]), the
//! identifiability notes of a run ([`identifiability`]) and which ranking a result reports, with
//! its ties and comparison graph ([`ranking`]), the ranking of systems across prompts
//! ([`systems`]), and a judge panel fitted to recorded verdicts of several judges
//! ([`panel_fit`]). No async runtime, no files, no clock:
//! data and a seeded RNG in, values out.

pub mod audit;
pub mod certify;
pub mod design;
pub mod fail_on;
pub mod fingerprint;
pub mod gate;
pub mod gate_sim;
pub mod identifiability;
pub mod panel_fit;
pub mod ranking;
pub mod recorded;
pub mod render;
pub mod synth;
pub mod systems;

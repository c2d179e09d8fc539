//! Which document a `simulate` file is: a sweep of synthetic pools, the frozen protocol on a
//! recording, a pipelined-dispatch sweep, or a judge-panel experiment.

use super::ConfigError;
use std::path::Path;

/// A `simulate` file: a sweep of synthetic pools, the frozen protocol on a recording (a
/// `recorded:` section) or a pipelined-dispatch sweep (a top-level `pipeline:` section).
#[derive(Debug, Clone)]
#[allow(clippy::large_enum_variant)] // one per invocation
pub enum SimulateDocument {
    /// A sweep of synthetic pools ([`super::sweep::Sweep`]).
    Sweep(super::sweep::Sweep),
    /// The frozen protocol on recorded verdicts ([`super::frozen::Frozen`]).
    Frozen(super::frozen::Frozen),
    /// The pipelined-dispatch sweep ([`super::pipeline::PipelineSweep`]).
    Pipeline(super::pipeline::PipelineSweep),
    /// The judge-panel experiment ([`super::panel::PanelSweep`]).
    Panel(super::panel::PanelSweep),
}

impl SimulateDocument {
    /// Read a `simulate` file, tell which document it is, and check it as that document.
    ///
    /// # Errors
    /// [`ConfigError`] naming the file, key or line and what was expected.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = super::read_text(path)?;
        if super::frozen::is_frozen(&text) {
            Ok(Self::Frozen(super::frozen::Frozen::load(path)?))
        } else if super::panel::is_panel(&text) {
            Ok(Self::Panel(super::panel::PanelSweep::load(path)?))
        } else if super::pipeline::is_pipeline(&text) {
            Ok(Self::Pipeline(super::pipeline::PipelineSweep::load(path)?))
        } else {
            Ok(Self::Sweep(super::sweep::Sweep::load(path)?))
        }
    }
}

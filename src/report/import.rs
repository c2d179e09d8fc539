//! What `topk-judge import` wrote, as it reports it (docs/systems.md): [`ImportSummary`].

use std::path::Path;

/// What `import` wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportSummary {
    /// Answers read.
    pub answers: usize,
    /// Prompts written (answered by ≥ 2 systems).
    pub prompts: usize,
    /// Prompts left out (answered by fewer than 2 systems).
    pub skipped_prompts: usize,
    /// Systems, in order of first appearance.
    pub systems: Vec<String>,
}

impl ImportSummary {
    /// The line `import` prints.
    pub fn text(&self, out: &Path) -> String {
        let mut s = format!(
            "wrote {}: {} prompts × {} systems ({} answers: {})\n",
            out.display(),
            self.prompts,
            self.systems.len(),
            self.answers,
            self.systems.join(", ")
        );
        if self.skipped_prompts > 0 {
            s.push_str(&format!(
                "left out {} prompts answered by fewer than 2 systems (nothing to compare)\n",
                self.skipped_prompts
            ));
        }
        s
    }
}

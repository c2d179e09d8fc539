//! What `topk-judge import` wrote, as it reports it (docs/systems.md): [`ImportSummary`] for a
//! pool file, [`JudgmentSummary`] for a recording of judgments.

use crate::domain::fmt::count;
use std::path::Path;

/// What `import --format` wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportSummary {
    /// Answers written (those of the prompts answered by two or more systems).
    pub answers: usize,
    /// Prompts written (answered by ≥ 2 systems).
    pub prompts: usize,
    /// Prompts left out (answered by fewer than 2 systems): their ids.
    pub skipped_prompts: Vec<String>,
    /// Systems, in order of first appearance.
    pub systems: Vec<String>,
    /// Further lines to print (ignored columns, prompts that keep their turns).
    pub notes: Vec<String>,
}

impl ImportSummary {
    /// The lines `import` prints.
    pub fn text(&self, out: &Path) -> String {
        let mut s = format!(
            "wrote {}: {} × {} ({}: {})\n",
            out.display(),
            count(self.prompts, "prompt"),
            count(self.systems.len(), "system"),
            count(self.answers, "answer"),
            self.systems.join(", ")
        );
        if !self.skipped_prompts.is_empty() {
            let n = self.skipped_prompts.len();
            let shown: Vec<&str> = self.skipped_prompts.iter().take(5).map(String::as_str).collect();
            s.push_str(&format!(
                "left out {} answered by fewer than 2 systems (nothing to compare): {}{}\n",
                count(n, "prompt"),
                shown.join(", "),
                if n > shown.len() { format!(", … ({n} in all)") } else { String::new() }
            ));
        }
        for n in &self.notes {
            s.push_str(n);
            s.push('\n');
        }
        s
    }
}

/// What `import --judgments` wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct JudgmentSummary {
    /// Ordered verdicts written (lines of the recording).
    pub verdicts: usize,
    /// Of them, invalid ones (`y` null).
    pub invalid: usize,
    /// Judges, in order of first appearance.
    pub judges: Vec<String>,
    /// Prompts with at least one verdict.
    pub prompts: usize,
    /// Systems named by the verdicts, in order of first appearance.
    pub systems: Vec<String>,
    /// What was read but not written: (count, what in the singular), e.g. (45, "self-comparison").
    pub skipped: Vec<(usize, String)>,
    /// Further lines to print (how the shown order was known, where the verdicts come from).
    pub notes: Vec<String>,
}

impl JudgmentSummary {
    /// The lines `import --judgments` prints.
    pub fn text(&self, out: &Path) -> String {
        let judges = self.judges.iter().map(|j| if j.is_empty() { "(unnamed)" } else { j.as_str() });
        let judges: Vec<&str> = judges.collect();
        let skipped: Vec<String> = self.skipped.iter().map(|(n, what)| count(*n, what)).collect();
        let mut s = format!(
            "wrote {}: {} of judge{} {} on {} × {}",
            out.display(),
            count(self.verdicts, "ordered verdict"),
            if judges.len() == 1 { "" } else { "s" },
            judges.join(", "),
            count(self.prompts, "prompt"),
            count(self.systems.len(), "system"),
        );
        if !skipped.is_empty() {
            s.push_str(&format!(" (skipped {})", skipped.join(", ")));
        }
        s.push('\n');
        s.push_str(&format!("systems: {}\n", self.systems.join(", ")));
        if self.invalid > 0 {
            let are = if self.invalid == 1 { "is" } else { "are" };
            s.push_str(&format!("{} of the verdicts {are} invalid (y null)\n", self.invalid));
        }
        for n in &self.notes {
            s.push_str(n);
            s.push('\n');
        }
        s
    }
}

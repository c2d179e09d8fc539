//! Content-free renderings of an answer (verbosity and format probes, paired designs; docs/model.md §4, §6).
//!
//! A rendering changes how an answer looks without changing what it says, so that a judge that
//! prefers the rendering over the original is rewarding length or formatting, not content:
//!
//! - [`elaborate`]: after every sentence that ends in `.`, `!` or `?`, one filler sentence from
//!   a fixed rotation of four ([`FILLERS`]), and one closing filler sentence ([`CLOSING`]) at the
//!   end. Every original token is kept, in order; the output stays plain text (no markdown).
//!   Growth: 5–8 words per sentence plus 8 words.
//! - [`markdownify`]: the first sentence in bold, every further sentence as a `- ` bullet. Every
//!   original token is kept, in order (the first and last token of the lead carry `**`); the
//!   output has markdown structure ([`crate::domain::pool::has_markdown`] is true). Growth: one `-` token
//!   per bullet, i.e. (sentences − 1) whitespace words.
//!
//! Both are pure, deterministic functions of the text (no randomness, no locale). Sentence
//! ends: a whitespace token ending in `.`, `!` or `?` (closing quotes and brackets ignored) that is
//! the last token of its line or is followed by a token starting with an upper-case letter, a
//! digit or an opening quote/bracket — so `a.m. thursday` does not split, while tokenised text
//! such as SummEval's `compensation . At` does. Whitespace inside a line is normalised to single
//! spaces; line breaks are kept; lines inside fenced code blocks (```) are copied verbatim.
//! Texts without any sentence end still change (the closing filler / the bold lead).

use serde::{Deserialize, Serialize};

/// Filler sentences inserted by [`elaborate`], in rotation (content-free by construction).
pub const FILLERS: [&str; 4] = [
    "This point is worth noting.",
    "It is important to keep this in mind.",
    "This detail matters for the overall picture.",
    "That is worth stating clearly.",
];

/// Closing filler sentence appended by [`elaborate`].
pub const CLOSING: &str = "Taken together, these points give the overall picture.";

/// A named content-free transform (config key `pool.transform`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RenderKind {
    /// [`elaborate`]: filler clauses (a verbosity probe).
    Elaborated,
    /// [`markdownify`]: bold lead and bullets (a formatting probe).
    Markdown,
}

impl RenderKind {
    /// Apply the transform.
    pub fn apply(self, text: &str) -> String {
        match self {
            RenderKind::Elaborated => elaborate(text),
            RenderKind::Markdown => markdownify(text),
        }
    }

    /// The config / label name (`elaborated`, `markdown`).
    pub fn name(self) -> &'static str {
        match self {
            RenderKind::Elaborated => "elaborated",
            RenderKind::Markdown => "markdown",
        }
    }
}

/// One line of the input: prose (split into sentences) or verbatim (code fences, blank lines).
enum Line {
    Verbatim(String),
    Prose(Vec<String>),
}

fn ends_sentence(tok: &str) -> bool {
    let t = tok.trim_end_matches(['"', '\'', ')', ']', '”', '’', '`']);
    t.ends_with(['.', '!', '?'])
}

fn starts_sentence(tok: &str) -> bool {
    tok.chars().next().is_some_and(|c| c.is_uppercase() || c.is_ascii_digit() || "\"'([“‘`".contains(c))
}

/// Split one line into sentences (tokens joined by single spaces); the last may lack an end.
fn sentences(line: &str) -> Vec<String> {
    let toks: Vec<&str> = line.split_whitespace().collect();
    let mut out = Vec::new();
    let mut cur: Vec<&str> = Vec::new();
    for (i, t) in toks.iter().enumerate() {
        cur.push(t);
        let last = i + 1 == toks.len();
        if ends_sentence(t) && (last || starts_sentence(toks[i + 1])) {
            out.push(cur.join(" "));
            cur.clear();
        }
    }
    if !cur.is_empty() {
        out.push(cur.join(" "));
    }
    out
}

fn lines(text: &str) -> Vec<Line> {
    let mut in_code = false;
    text.split('\n')
        .map(|l| {
            let l = l.strip_suffix('\r').unwrap_or(l);
            if l.trim_start().starts_with("```") {
                in_code = !in_code;
                Line::Verbatim(l.to_owned())
            } else if in_code || l.trim().is_empty() {
                Line::Verbatim(l.to_owned())
            } else {
                Line::Prose(sentences(l))
            }
        })
        .collect()
}

/// The elaborated rendering: a filler sentence after every complete sentence and a closing
/// filler at the end (module docs). Deterministic; keeps every original token in order.
///
/// ```
/// let e = topk_judge::analysis::render::elaborate("The cat sat. It slept.");
/// assert_eq!(
///     e,
///     "The cat sat. This point is worth noting. It slept. It is important to keep this in mind. \
///      Taken together, these points give the overall picture."
/// );
/// ```
pub fn elaborate(text: &str) -> String {
    let mut k = 0usize;
    // (line, whether it is prose ending with a complete sentence)
    let mut out: Vec<(String, bool)> = Vec::new();
    for line in lines(text) {
        match line {
            Line::Verbatim(l) => out.push((l, false)),
            Line::Prose(ss) => {
                let mut parts = Vec::new();
                for s in &ss {
                    parts.push(s.clone());
                    if ends_sentence(s) {
                        parts.push(FILLERS[k % FILLERS.len()].to_owned());
                        k += 1;
                    }
                }
                out.push((parts.join(" "), ss.last().is_some_and(|s| ends_sentence(s))));
            }
        }
    }
    // Trailing blank lines do not count as the end of the text.
    while out.len() > 1 && out.last().is_some_and(|l| l.0.trim().is_empty()) {
        out.pop();
    }
    let last_complete = out.last().is_some_and(|l| l.1);
    let mut s = out.into_iter().map(|l| l.0).collect::<Vec<_>>().join("\n");
    if last_complete {
        s.push(' ');
    } else if s.trim().is_empty() {
        s.clear();
    } else {
        s.push_str("\n\n");
    }
    s.push_str(CLOSING);
    s
}

/// The markdown rendering: the first sentence in bold, every further sentence a `- ` bullet
/// (module docs). Deterministic; keeps every original token in order.
///
/// ```
/// let m = topk_judge::analysis::render::markdownify("The cat sat. It slept. It woke.");
/// assert_eq!(m, "**The cat sat.**\n\n- It slept.\n- It woke.");
/// assert!(topk_judge::domain::pool::has_markdown(&m));
/// ```
pub fn markdownify(text: &str) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut lead_done = false;
    for line in lines(text) {
        match line {
            Line::Verbatim(l) => {
                // Blank lines between bullets would break the list: keep only code and paragraph
                // breaks before the lead.
                if !l.trim().is_empty() || !lead_done {
                    out.push(l);
                }
            }
            Line::Prose(ss) => {
                for s in ss {
                    if lead_done {
                        out.push(format!("- {s}"));
                    } else {
                        out.push(format!("**{s}**"));
                        out.push(String::new());
                        lead_done = true;
                    }
                }
            }
        }
    }
    while out.last().is_some_and(|l| l.trim().is_empty()) {
        out.pop();
    }
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::pool::{has_markdown, word_count};

    const SUMMEVAL: &str = "Thousands of holidaymakers caught up in last summer 's passport delay fiasco have not \
        received any compensation . At the same time , managers received up to # 3,500 in bonuses . Ministers \
        refused to give a blanket refund at 11:30 a.m. thursday .";

    /// Tokens of `rendered`, markup stripped, contain the tokens of `orig` as a subsequence.
    fn keeps_tokens_in_order(orig: &str, rendered: &str) -> bool {
        let strip = |t: &str| t.trim_matches('*').to_owned();
        let r: Vec<String> = rendered.split_whitespace().map(strip).filter(|t| !t.is_empty() && t != "-").collect();
        let mut it = r.iter();
        orig.split_whitespace().all(|o| it.any(|t| *t == o))
    }

    #[test]
    fn elaborate_inserts_fillers_after_sentences_only() {
        let e = elaborate(SUMMEVAL);
        // Three sentences (a.m. followed by lower-case does not split): three fillers + closing.
        let filler_words: usize = FILLERS[..3].iter().map(|f| word_count(f)).sum::<usize>() + word_count(CLOSING);
        assert_eq!(word_count(&e), word_count(SUMMEVAL) + filler_words);
        assert!(e.contains("compensation . This point is worth noting. At the same time"));
        assert!(e.contains("a.m. thursday . This detail matters for the overall picture. Taken"), "{e}");
        assert_eq!(elaborate("A.\n\n"), format!("A. {} {CLOSING}", FILLERS[0]));
        assert!(keeps_tokens_in_order(SUMMEVAL, &e));
        assert!(!has_markdown(&e));
        assert_eq!(e, elaborate(SUMMEVAL), "deterministic");
    }

    #[test]
    fn elaborate_keeps_code_and_fragments() {
        let t = "Use this:\n```\nx = 1.\nY = 2.\n```\nDone.";
        let e = elaborate(t);
        assert!(e.contains("```\nx = 1.\nY = 2.\n```"), "code untouched: {e}");
        assert!(e.starts_with("Use this:\n"), "no filler after a fragment: {e}");
        assert!(
            e.ends_with("Done. This point is worth noting. Taken together, these points give the overall picture.")
        );
        // A fragment without a sentence end still gets the closing sentence, as a new paragraph.
        assert_eq!(elaborate("Paris"), format!("Paris\n\n{CLOSING}"));
        assert_eq!(elaborate(""), CLOSING);
    }

    #[test]
    fn markdownify_bolds_the_lead_and_bullets_the_rest() {
        let m = markdownify(SUMMEVAL);
        assert!(m.starts_with("**Thousands of"), "{m}");
        assert!(m.contains("compensation .**\n\n- At the same time"), "{m}");
        assert_eq!(m.lines().filter(|l| l.starts_with("- ")).count(), 2);
        assert_eq!(word_count(&m), word_count(SUMMEVAL) + 2);
        assert!(has_markdown(&m) && !has_markdown(SUMMEVAL));
        assert!(keeps_tokens_in_order(SUMMEVAL, &m));
        // One sentence: bold only, same word count.
        assert_eq!(markdownify("Just one."), "**Just one.**");
        assert!(has_markdown(&markdownify("Just one.")));
    }

    #[test]
    fn render_kind_names_round_trip() {
        for k in [RenderKind::Elaborated, RenderKind::Markdown] {
            let y: RenderKind = serde_json::from_str(&format!("\"{}\"", k.name())).unwrap();
            assert_eq!(y, k);
        }
        assert_eq!(RenderKind::Markdown.apply("A. B."), markdownify("A. B."));
    }
}

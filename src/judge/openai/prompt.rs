//! Prompt templates: a minijinja template file in `prompts/` → the chat messages of one ordered
//! query (docs/model.md §4) + the hash of the rendered text, which is part of the cache key, so editing a
//! prompt never reuses stale verdicts.
//!
//! Variables: `task` (the pool's task or source text), `answer_a` (shown first, slot A) and
//! `answer_b` (slot B); for a multi-turn task (MT-Bench, imported with its turns) also the
//! lists `task_turns`, `turns_a` and `turns_b` (the user's turns and each answer's, one per
//! turn), which are empty for a single-turn task; undefined variables are errors. A template may define
//! `{% block system %}` (the system message) and `{% block user %}` (the user message); without a
//! `user` block the whole rendered text is the user message. Blocks are split structurally,
//! before any answer text is inserted, so text inside an answer can never start a new message.
//!
//! Token counts: [`RenderedPrompt::token_bound`] is an upper bound (UTF-8 bytes + a template
//! overhead: every token of a byte-level BPE or byte-fallback tokenizer covers at least one
//! byte), used to reserve worst-case spend; [`RenderedPrompt::token_estimate`] is a typical
//! estimate (bytes / bytes-per-token), used for rate limits and the context pre-check.

use minijinja::{Environment, UndefinedBehavior, context};
use std::path::{Path, PathBuf};

/// Tokens added per request by chat templates (role markers, default system prompts).
pub const BASE_OVERHEAD_TOKENS: u64 = 64;
/// Tokens added per message by chat templates.
pub const PER_MESSAGE_OVERHEAD_TOKENS: u64 = 8;

/// Errors loading or rendering a prompt template.
#[derive(Debug, thiserror::Error)]
pub enum PromptError {
    /// The template file could not be read.
    #[error("cannot read prompt template {path}: {source}")]
    Io {
        /// The prompt template file that could not be read.
        path: PathBuf,
        /// The I/O error from the operating system.
        source: std::io::Error,
    },
    /// Syntax error, undefined variable or failing filter.
    #[error("prompt template {path}: {msg}")]
    Template {
        /// The prompt template file that does not render.
        path: PathBuf,
        /// minijinja's message (with line).
        msg: String,
    },
}

/// Answers of the check render at load: what is sent must contain both (short, and compared in
/// lower case, so filters such as `upper` or `truncate` keep them).
const PROBE_A: &str = "q7f3c";
const PROBE_B: &str = "q9b1e";
/// The task of the check render: what is sent must contain it when the template uses `task`.
const PROBE_TASK: &str = "q4d2a";
/// A second task of the same length sharing no character with [`PROBE_TASK`]: a template shows
/// the task (in whole or in part) when its text changes with it.
const OTHER_TASK: &str = "x8k6m";

/// The work one render may do (minijinja fuel: about one unit per instruction and per 64 bytes
/// of data). A prompt with two 100 kB answers uses a few thousand; a runaway loop in a template
/// (`range(100000)` inside `range(100000)`) ends with an error instead of running for hours.
const RENDER_FUEL: u64 = 10_000_000;

/// The template variables: `task`, `answer_a`, `answer_b` and the turn lists.
const VARIABLES: [&str; 6] = ["task", "answer_a", "answer_b", "task_turns", "turns_a", "turns_b"];

/// The turns of a multi-turn query: the task's and each answer's (all empty for one turn).
#[derive(Debug, Clone, Copy, Default)]
pub struct Turns<'a> {
    /// The user's turns (`task_turns`).
    pub task: &'a [String],
    /// The turns of the answer shown first (`turns_a`).
    pub a: &'a [String],
    /// The turns of the answer shown second (`turns_b`).
    pub b: &'a [String],
}

/// A loaded prompt template.
#[derive(Debug)]
pub struct PromptTemplate {
    path: PathBuf,
    env: Environment<'static>,
    has_user_block: bool,
    has_system_block: bool,
    /// Whether an expression or statement of the template names `task` (the template language's
    /// own list of variables misses one used only through a slice).
    names_task: bool,
    source: String,
}

/// The messages of one rendered query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderedPrompt {
    /// System message, if the template has a `system` block.
    pub system: Option<String>,
    /// User message.
    pub user: String,
}

impl RenderedPrompt {
    /// SHA-256 (hex) of the rendered messages; part of the cache key.
    pub fn hash(&self) -> String {
        let v = serde_json::json!({"system": self.system, "user": self.user});
        crate::domain::rng::sha256_hex(&v.to_string())
    }

    /// UTF-8 bytes of all message texts.
    pub fn bytes(&self) -> u64 {
        (self.system.as_deref().map_or(0, str::len) + self.user.len()) as u64
    }

    /// Number of messages (1 or 2).
    pub fn n_messages(&self) -> u64 {
        1 + u64::from(self.system.is_some())
    }

    /// Upper bound on prompt tokens (tokens): bytes + chat-template overhead.
    pub fn token_bound(&self) -> u64 {
        self.bytes() + BASE_OVERHEAD_TOKENS + PER_MESSAGE_OVERHEAD_TOKENS * self.n_messages()
    }

    /// Typical prompt tokens (tokens): bytes / `bytes_per_token` + overhead, rounded up.
    pub fn token_estimate(&self, bytes_per_token: f64) -> u64 {
        (self.bytes() as f64 / bytes_per_token).ceil() as u64
            + BASE_OVERHEAD_TOKENS
            + PER_MESSAGE_OVERHEAD_TOKENS * self.n_messages()
    }

    /// The messages as `(role, content)`, system first.
    pub fn messages(&self) -> Vec<(&'static str, &str)> {
        let mut m = Vec::with_capacity(2);
        if let Some(s) = &self.system {
            m.push(("system", s.as_str()));
        }
        m.push(("user", self.user.as_str()));
        m
    }

    /// The whole prompt as one text (for `--dry-run` and logs).
    pub fn display(&self) -> String {
        match &self.system {
            Some(s) => format!("[system]\n{s}\n\n[user]\n{}", self.user),
            None => self.user.clone(),
        }
    }
}

/// The 1-based line of the first use of the name `name` inside a tag (`{{ … }}` or `{% … %}`) of
/// the template `source`, as a whole word; `None` when no tag holds it.
fn line_in_tags(source: &str, name: &str) -> Option<usize> {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut at = 0;
    while let Some(open) = source[at..].find(['{']).map(|i| at + i) {
        let close = match source[open..].get(..2) {
            Some("{{") => "}}",
            Some("{%") => "%}",
            _ => {
                at = open + 1;
                continue;
            }
        };
        let end = source[open..].find(close).map_or(source.len(), |i| open + i);
        let tag = &source[open..end];
        let mut from = 0;
        while let Some(i) = tag[from..].find(name).map(|i| from + i) {
            let before = tag[..i].chars().next_back();
            let after = tag[i + name.len()..].chars().next();
            if !before.is_some_and(word) && !after.is_some_and(word) {
                return Some(source[..open + i].matches('\n').count() + 1);
            }
            from = i + name.len();
        }
        at = end.max(open + 1);
    }
    None
}

impl PromptTemplate {
    /// The template's source text.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Load a template file.
    ///
    /// # Errors
    /// [`PromptError`] when the file is unreadable, not UTF-8, has a syntax error, or does not use
    /// both `answer_a` and `answer_b`.
    pub fn load(path: &Path) -> Result<Self, PromptError> {
        let bytes = std::fs::read(path).map_err(|source| PromptError::Io { path: path.to_owned(), source })?;
        // A byte-order mark is not prompt text: it would be sent before the first word.
        let source = crate::domain::text::utf8_text(&bytes).map_err(|(line, msg)| PromptError::Template {
            path: path.to_owned(),
            msg: format!("line {line}: {msg}"),
        })?;
        // Windows line endings are line endings: the judge is sent `\n`, so a template saved
        // with CRLF asks (and caches) as the same text saved with LF (hunt 52: `\r` was sent).
        Self::from_source(path, source.replace("\r\n", "\n"))
    }

    /// A template from its source text; `path` names it in messages.
    ///
    /// # Errors
    /// As [`PromptTemplate::load`].
    pub fn from_source(path: &Path, source: String) -> Result<Self, PromptError> {
        let err = |msg: String| PromptError::Template { path: path.to_owned(), msg };
        let mut env = Environment::new();
        env.set_undefined_behavior(UndefinedBehavior::Strict);
        env.set_fuel(Some(RENDER_FUEL));
        env.set_syntax(
            minijinja::syntax::SyntaxConfig::builder()
                .trim_blocks(true)
                .lstrip_blocks(true)
                .build()
                .map_err(|e| err(describe(&e)))?,
        );
        env.add_template_owned("prompt", source.clone()).map_err(|e| err(describe(&e)))?;
        let vars = env.get_template("prompt").map_err(|e| err(describe(&e)))?.undeclared_variables(false);
        // An unknown name first: a misspelt `answr_b` is the fault, not the `answer_b` it lacks
        // (hunt 52). minijinja's global functions (`range`, `dict`, …) are not variables to fill.
        let globals: std::collections::HashSet<&str> = env.globals().map(|(k, _)| k).collect();
        let mut unknown: Vec<(usize, &String)> = vars
            .iter()
            .filter(|v| !VARIABLES.contains(&v.as_str()) && !globals.contains(v.as_str()))
            .map(|v| (line_in_tags(&source, v).unwrap_or(0), v))
            .collect();
        unknown.sort();
        if !unknown.is_empty() {
            let named: Vec<String> = unknown
                .iter()
                .map(|(line, v)| if *line > 0 { format!("{v:?} (line {line})") } else { format!("{v:?}") })
                .collect();
            return Err(err(format!(
                "unknown variable or function {}; the variables are task, answer_a and answer_b (and the lists task_turns, turns_a, turns_b), the functions minijinja's (range, dict, …)",
                named.join(", ")
            )));
        }
        // The name alone: the template language does not list a variable used only through a
        // slice (`answer_a[:500]`) among its variables; what is sent is checked below anyway.
        for needed in ["answer_a", "answer_b"] {
            if !vars.contains(needed) && !source.contains(needed) {
                return Err(err(format!(
                    "the template never uses {{{{ {needed} }}}}; the judge would not see that answer"
                )));
            }
        }
        let (has_user_block, has_system_block) = {
            let t = env.get_template("prompt").map_err(|e| err(describe(&e)))?;
            let mut cap =
                t.render_captured(variables("t", "a", "b", &Turns::default())).map_err(|e| err(describe(&e)))?;
            let mut has = |name: &str| -> Result<bool, PromptError> {
                match cap.with_state_mut(|s| s.render_block(name)) {
                    Ok(_) => Ok(true),
                    Err(e) if e.kind() == minijinja::ErrorKind::UnknownBlock => Ok(false),
                    Err(e) => Err(err(describe(&e))),
                }
            };
            (has("user")?, has("system")?)
        };
        // Without a `user` block the whole text is the one user message, the `system` block's
        // text with it: a system message the template means to send would not be one.
        if has_system_block && !has_user_block {
            return Err(err(
                "a `system` block without a `user` block: the whole text would be sent as one user message, the system block's text inside it; put the rest of the prompt in `{% block user %}…{% endblock %}`".into(),
            ));
        }
        let names_task = tags_name(&source, "task");
        let me = Self { path: path.to_owned(), env, has_user_block, has_system_block, names_task, source };
        // What the judge is sent must hold both answers: a name in the source is not enough
        // (used after the `user` block, in an empty block, under a condition that is false).
        // Short and long answers both, as a condition may test an answer's length.
        let pad = " word".repeat(1000);
        for (a, b) in [(PROBE_A.to_owned(), PROBE_B.to_owned()), (format!("{PROBE_A}{pad}"), format!("{PROBE_B}{pad}"))]
        {
            me.check_probe(&a, &b, &err)?;
        }
        if has_user_block {
            me.check_outside_blocks(&err)?;
        }
        Ok(me)
    }

    /// Render with answers `a` and `b` (starting with [`PROBE_A`] and [`PROBE_B`]) and check that
    /// what is sent holds both, and the task when the template shows it.
    fn check_probe(&self, a: &str, b: &str, err: &dyn Fn(String) -> PromptError) -> Result<(), PromptError> {
        let sent_text = |(whole, p): (String, RenderedPrompt)| {
            (whole.to_lowercase(), format!("{}\n{}", p.system.as_deref().unwrap_or(""), p.user).to_lowercase())
        };
        let no_turns = Turns::default();
        let (whole, sent) = sent_text(self.render_whole(PROBE_TASK, a, b, &no_turns)?);
        // Whether the template shows the task (in whole or in part, `task[:500]`): its text
        // changes with the task. The template language's own list of variables misses a
        // variable used only through a slice.
        let (other_whole, other_sent) = sent_text(self.render_whole(OTHER_TASK, a, b, &no_turns)?);
        let never_shown = "used only where its text is never shown (under a condition that is false, through a filter such as `length`, or in a block never rendered)";
        let not_sent = if self.has_user_block {
            "used where the messages sent do not reach: only the `system` and `user` blocks are sent (outside them, or under a condition that is false)"
        } else {
            "used under a condition that is false, or in a block never rendered"
        };
        for (needed, marker) in [("answer_a", PROBE_A), ("answer_b", PROBE_B)] {
            if !sent.contains(marker) {
                return Err(err(format!(
                    "the rendered prompt does not contain {{{{ {needed} }}}}: it is {}; the judge would not see that answer",
                    if whole.contains(marker) { not_sent } else { never_shown }
                )));
            }
        }
        // The template names the task (in an expression or a statement: a slice, a filter, a
        // condition) but what is sent does not change with it: the judge would not see it.
        if (whole != other_whole || self.names_task) && sent == other_sent {
            return Err(err(format!(
                "the rendered prompt does not contain {{{{ task }}}}: it is {}; the judge would not see the task or source text",
                if whole != other_whole { not_sent } else { never_shown }
            )));
        }
        // The model's position effect κ is the first-shown answer's: `answer_a` must come first.
        if let (Some(pa), Some(pb)) = (sent.find(PROBE_A), sent.find(PROBE_B))
            && pb < pa
        {
            return Err(err(
                "the rendered prompt shows {{ answer_b }} before {{ answer_a }}; answer_a is the answer shown first (the position effect κ and every verdict's `a` are read so), so write answer_a first".into(),
            ));
        }
        Ok(())
    }

    /// With a `user` block only the `system` and `user` blocks are sent: text written outside
    /// them (an instruction, a heading) would be dropped without a word, so it is refused.
    fn check_outside_blocks(&self, err: &dyn Fn(String) -> PromptError) -> Result<(), PromptError> {
        let (mut rest, sent) = self.render_whole(PROBE_TASK, PROBE_A, PROBE_B, &Turns::default())?;
        for text in sent.system.iter().chain([&sent.user]) {
            rest = rest.replacen(text.as_str(), "", 1);
        }
        let rest = rest.trim();
        if rest.is_empty() {
            return Ok(());
        }
        let shown: String = rest.chars().take(60).collect();
        Err(err(format!(
            "text outside the `system` and `user` blocks is never sent (with a `user` block only the two blocks are): {:?}{}; move it into the `user` block (or `system`), or drop the blocks to send the whole text as the user message",
            shown,
            if shown.len() < rest.len() { "…" } else { "" }
        )))
    }

    /// The template file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Render the query (a shown first as `answer_a`, b second as `answer_b`).
    ///
    /// # Errors
    /// [`PromptError::Template`] (e.g. a filter failing on this input).
    pub fn render(&self, task: &str, answer_a: &str, answer_b: &str) -> Result<RenderedPrompt, PromptError> {
        self.render_turns(task, answer_a, answer_b, &Turns::default())
    }

    /// [`PromptTemplate::render`] of a multi-turn task: `turns` fills `task_turns`, `turns_a`
    /// and `turns_b` (empty lists for a single turn, which renders as [`PromptTemplate::render`]).
    ///
    /// # Errors
    /// As [`PromptTemplate::render`].
    pub fn render_turns(
        &self,
        task: &str,
        answer_a: &str,
        answer_b: &str,
        turns: &Turns<'_>,
    ) -> Result<RenderedPrompt, PromptError> {
        self.render_whole(task, answer_a, answer_b, turns).map(|(_, sent)| sent)
    }

    /// The whole rendered text (blocks in place, and what lies outside them) and the messages
    /// sent: with a `user` block, the `system` and `user` blocks; else the whole text.
    fn render_whole(
        &self,
        task: &str,
        answer_a: &str,
        answer_b: &str,
        turns: &Turns<'_>,
    ) -> Result<(String, RenderedPrompt), PromptError> {
        let err = |e: minijinja::Error| PromptError::Template { path: self.path.clone(), msg: describe(&e) };
        let t = self.env.get_template("prompt").map_err(err)?;
        let ctx = variables(task, answer_a, answer_b, turns);
        if !self.has_user_block {
            let whole = t.render(ctx).map_err(err)?;
            let user = whole.trim().to_owned();
            return Ok((whole, RenderedPrompt { system: None, user }));
        }
        let mut cap = t.render_captured(ctx).map_err(err)?;
        let user = cap.with_state_mut(|s| s.render_block("user")).map_err(err)?;
        let system = if self.has_system_block {
            Some(cap.with_state_mut(|s| s.render_block("system")).map_err(err)?.trim().to_owned())
                .filter(|s| !s.is_empty())
        } else {
            None
        };
        Ok((cap.output().to_owned(), RenderedPrompt { system, user: user.trim().to_owned() }))
    }
}

/// Whether `name` stands as a word inside a `{{ … }}` or `{% … %}` tag of `source` (not in its
/// plain text, nor in a comment).
fn tags_name(source: &str, name: &str) -> bool {
    let mut rest = source;
    while let Some(open) = rest.find(['{']) {
        let after = &rest[open + 1..];
        let close = match after.chars().next() {
            Some('{') => "}}",
            Some('%') => "%}",
            _ => {
                rest = after;
                continue;
            }
        };
        let Some(end) = after[1..].find(close) else { return false };
        // Outside string literals: `{{ "task" }}` names no variable.
        let inside: String = after[1..1 + end].split(['"', '\'']).step_by(2).collect::<Vec<_>>().join(" ");
        let word = |c: char| c.is_alphanumeric() || c == '_';
        if inside.split(|c: char| !word(c)).any(|w| w == name) {
            return true;
        }
        rest = &after[1 + end + close.len()..];
    }
    false
}

/// The template's variables for one query (docs/model.md §4): the task, the answer shown first
/// (`answer_a`) and second (`answer_b`), and the turn lists.
fn variables(task: &str, answer_a: &str, answer_b: &str, turns: &Turns<'_>) -> minijinja::Value {
    context!(
        task => task,
        answer_a => answer_a,
        answer_b => answer_b,
        task_turns => turns.task.to_vec(),
        turns_a => turns.a.to_vec(),
        turns_b => turns.b.to_vec()
    )
}

fn describe(e: &minijinja::Error) -> String {
    if e.kind() == minijinja::ErrorKind::OutOfFuel {
        return format!(
            "rendering the prompt took more than its budget of work ({RENDER_FUEL} steps; a loop that runs too long?){}",
            e.line().map(|l| format!(" (line {l})")).unwrap_or_default()
        );
    }
    let mut s = e.to_string();
    if let Some(l) = e.line() {
        // minijinja names the line by its internal template name ("(in prompt:2)"): say it once,
        // as "line 2" of the user's file.
        s = s.replace(&format!(" (in prompt:{l})"), "");
        if !s.contains("line") {
            s.push_str(&format!(" (line {l})"));
        }
    }
    s
}

/// `text` cut to at most `max_bytes` UTF-8 bytes at a character boundary, with `marker` appended
/// when something was cut (the marker counts towards the limit when it fits).
pub fn truncate_to_bytes(text: &str, max_bytes: usize, marker: &str) -> String {
    if text.len() <= max_bytes {
        return text.to_owned();
    }
    let keep = max_bytes.saturating_sub(marker.len());
    let mut end = keep.min(text.len());
    while end > 0 && !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{marker}", &text[..end])
}

/// The marker put where the middle of an answer was cut ([`fit_answers`]).
pub const ANSWER_CUT_MARKER: &str = "\n[… middle cut …]\n";

/// Shortest answer kept when cutting (bytes, marker included): below this, cutting would leave
/// nothing to judge.
pub const MIN_CUT_ANSWER_BYTES: usize = 64;

/// `text` cut to at most `max_bytes` UTF-8 bytes by removing its middle and putting `marker`
/// there: the head and the tail are kept, each cut at a character boundary.
pub fn cut_middle(text: &str, max_bytes: usize, marker: &str) -> String {
    if text.len() <= max_bytes {
        return text.to_owned();
    }
    let keep = max_bytes.saturating_sub(marker.len());
    let mut head = keep / 2;
    while head > 0 && !text.is_char_boundary(head) {
        head -= 1;
    }
    let mut tail = text.len() - (keep - keep / 2);
    while tail < text.len() && !text.is_char_boundary(tail) {
        tail += 1;
    }
    format!("{}{marker}{}", &text[..head], &text[tail..])
}

/// The two answers of a pair shortened to at most `room_bytes` together, or `None` when they
/// cannot be (less than [`MIN_CUT_ANSWER_BYTES`] would be left of one).
///
/// The room is shared by water-filling: an answer shorter than half of it is kept whole and
/// the other gets the rest; otherwise each gets half. Each answer over its share loses its
/// middle ([`cut_middle`] with [`ANSWER_CUT_MARKER`]). The shares depend only on the two
/// lengths, so `fit_answers(b, a, r)` is `fit_answers(a, b, r)` swapped: both presentation
/// orders show the same texts.
pub fn fit_answers(a: &str, b: &str, room_bytes: usize) -> Option<(String, String)> {
    let (la, lb) = (a.len(), b.len());
    if la + lb <= room_bytes {
        return Some((a.to_owned(), b.to_owned()));
    }
    let half = room_bytes / 2;
    let (ca, cb) = if la.min(lb) <= half {
        if la <= lb { (la, room_bytes - la) } else { (room_bytes - lb, lb) }
    } else {
        (half, half)
    };
    if (la > ca && ca < MIN_CUT_ANSWER_BYTES) || (lb > cb && cb < MIN_CUT_ANSWER_BYTES) {
        return None;
    }
    Some((cut_middle(a, ca, ANSWER_CUT_MARKER), cut_middle(b, cb, ANSWER_CUT_MARKER)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmpl(src: &str) -> Result<PromptTemplate, PromptError> {
        PromptTemplate::from_source(Path::new("t.j2"), src.to_owned())
    }

    /// A template file saved with a byte-order mark sends no mark; one in another encoding is
    /// refused with its line and byte.
    /// A template saved with Windows line endings renders, and hashes, as the same text with
    /// `\n`: no `\r` is sent to the judge.
    #[test]
    fn a_template_with_crlf_line_endings_is_the_same_template() {
        let dir = tempfile::tempdir().unwrap();
        let text = "Task: {{ task }}\nA: {{ answer_a }}\nB: {{ answer_b }}\n";
        std::fs::write(dir.path().join("lf.j2"), text).unwrap();
        std::fs::write(dir.path().join("crlf.j2"), text.replace('\n', "\r\n")).unwrap();
        let lf = PromptTemplate::load(&dir.path().join("lf.j2")).unwrap();
        let crlf = PromptTemplate::load(&dir.path().join("crlf.j2")).unwrap();
        assert_eq!(crlf.source(), lf.source());
        assert_eq!(crlf.render("t", "a", "b").unwrap().user, "Task: t\nA: a\nB: b");
    }

    #[test]
    fn a_template_file_is_utf8_text_without_its_byte_order_mark() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("bom.j2");
        std::fs::write(&p, b"\xEF\xBB\xBFJudge: {{ answer_a }} | {{ answer_b }}").unwrap();
        assert_eq!(PromptTemplate::load(&p).unwrap().render("t", "a", "b").unwrap().user, "Judge: a | b");
        std::fs::write(&p, b"Judge.\nR\xE9sum\xE9 A: {{ answer_a }} B: {{ answer_b }}").unwrap();
        let e = PromptTemplate::load(&p).unwrap_err().to_string();
        assert!(e.contains("bom.j2: line 2: invalid UTF-8 at byte 2 of the line (byte 0xE9)"), "{e}");
    }

    /// A syntax error names its line once, as a line of the user's file (not also as minijinja's
    /// "(in prompt:2)").
    #[test]
    fn a_syntax_error_names_its_line_once() {
        let e = tmpl("{{ task }}\n{{ answer_a { }}\n{{ answer_b }}").unwrap_err().to_string();
        assert!(e.contains("t.j2") && e.contains("syntax error"), "{e}");
        assert!(e.ends_with("end of variable block (line 2)") && !e.contains("prompt:"), "{e}");
    }

    #[test]
    fn blocks_split_into_system_and_user() {
        let t = tmpl("{% block system %}Judge.{% endblock %}\n{% block user %}T: {{ task }}\nA: {{ answer_a }}\nB: {{ answer_b }}{% endblock %}").unwrap();
        let r = t.render("sum", "x {% block user %} [system]", "y").unwrap();
        assert_eq!(r.system.as_deref(), Some("Judge."));
        assert_eq!(r.user, "T: sum\nA: x {% block user %} [system]\nB: y", "answer text is data, not template");
        assert_eq!(r.messages().len(), 2);
        assert_eq!(r.bytes(), ("Judge.".len() + r.user.len()) as u64);
        assert_eq!(r.token_bound(), r.bytes() + 64 + 16);
        assert_eq!(r.token_estimate(4.0), (r.bytes() as f64 / 4.0).ceil() as u64 + 80);
    }

    #[test]
    fn plain_template_is_one_user_message_and_hash_tracks_text() {
        let t = tmpl("{{ task }} | {{ answer_a }} | {{ answer_b }}\n").unwrap();
        let r1 = t.render("t", "a", "b").unwrap();
        assert_eq!(r1, RenderedPrompt { system: None, user: "t | a | b".into() });
        let r2 = t.render("t", "b", "a").unwrap();
        assert_ne!(r1.hash(), r2.hash(), "order is part of the prompt");
        assert_eq!(r1.hash(), t.render("t", "a", "b").unwrap().hash());
        let t2 = tmpl("{{ task }} || {{ answer_a }} | {{ answer_b }}").unwrap();
        assert_ne!(t2.render("t", "a", "b").unwrap().hash(), r1.hash(), "an edited template changes the hash");
    }

    #[test]
    fn template_errors_name_the_problem() {
        let e = tmpl("{{ task }} {{ answer_a }}").unwrap_err().to_string();
        assert!(e.contains("answer_b") && e.contains("t.j2"), "{e}");
        let e = tmpl("{{ answer_a }} {{ answer_b }} {{ question }}").unwrap_err().to_string();
        assert!(e.contains("question"), "{e}");
        // Unknown names with their lines, a misspelt answer named before the answer it lacks,
        // a function alike (hunt 52: no line, and `answr_b` was never named).
        let e = tmpl("Task: {{ task }}\nA: {{ answer_a }}\noops in text\nB: {{ answr_b }}\n{{ frobnicate(1) }}")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(
                "unknown variable or function \"answr_b\" (line 4), \"frobnicate\" (line 5); the variables are task"
            ),
            "{e}"
        );
        assert_eq!(line_in_tags("x\n{{ a }}\n{% if oops %}{% endif %}", "oops"), Some(3));
        assert_eq!(line_in_tags("oops\n{{ oopsy }}", "oops"), None, "text and a longer name are not uses");
        let e = tmpl("{{ answer_a }} {{ answer_b }} {% if %}").unwrap_err().to_string();
        assert!(e.contains("t.j2") && e.contains("line 1"), "{e}");
        // Named in the source but not in what is sent: after the `user` block, in an empty
        // block, under a false condition.
        for (src, missing, where_) in [
            (
                "{% block system %}Judge.{% endblock %}\n{% block user %}Task: {{ task }}\nWhich is better?{% endblock %}\nAnswer A: {{ answer_a }}\nAnswer B: {{ answer_b }}",
                "answer_a",
                "only the `system` and `user` blocks are sent",
            ),
            ("{% block user %}{% endblock %}{{ answer_a }} {{ answer_b }}", "answer_a", "only the `system` and `user`"),
            (
                "{% if false %}{{ answer_a }}{% endif %}{{ task }} {{ answer_b }}",
                "answer_a",
                "under a condition that is false",
            ),
            ("{{ answer_a }}{% if task == 'never' %}{{ answer_b }}{% endif %}", "answer_b", "under a condition"),
            // Only for short answers: the long probe finds it.
            ("{% if answer_a|length < 30 %}{{ answer_a }}{% endif %} {{ answer_b }}", "answer_a", "under a condition"),
        ] {
            let e = tmpl(src).unwrap_err().to_string();
            assert!(
                e.contains(&format!("the rendered prompt does not contain {{{{ {missing} }}}}")) && e.contains(where_),
                "{src}: {e}"
            );
        }
        let e = tmpl("{% block system %}Judge.{% endblock %}{{ task }} {{ answer_a }} {{ answer_b }}")
            .unwrap_err()
            .to_string();
        assert!(e.contains("a `system` block without a `user` block"), "{e}");
        // The second-shown answer written first would invert every position effect: refused.
        let e = tmpl("{{ task }} B: {{ answer_b }} A: {{ answer_a }}").unwrap_err().to_string();
        assert!(e.contains("the rendered prompt shows {{ answer_b }} before {{ answer_a }}"), "{e}");
        // An answer used through a slice is used.
        let t = tmpl("{{ task }} A: {{ answer_a[:500] }} B: {{ answer_b }}").unwrap();
        assert_eq!(t.render("t", "abc", "d").unwrap().user, "t A: abc B: d");
        // An answer shown only through a filter that drops its text is named as such.
        let e = tmpl("{{ task }} A has {{ answer_a|length }} characters. B: {{ answer_b }}").unwrap_err().to_string();
        assert!(
            e.contains("does not contain {{ answer_a }}") && e.contains("through a filter such as `length`"),
            "{e}"
        );
        // The task used through a slice is the task: where it is not sent, refused; where it
        // is, rendered.
        let e = tmpl("{{ task[:300] }}\n{% block user %}A: {{ answer_a }} B: {{ answer_b }}{% endblock %}")
            .unwrap_err()
            .to_string();
        assert!(e.contains("does not contain {{ task }}") && e.contains("the task or source text"), "{e}");
        let t = tmpl("{% block user %}{{ task[:3] }}| A: {{ answer_a }} B: {{ answer_b }}{% endblock %}").unwrap();
        assert_eq!(t.render("article", "a", "b").unwrap().user, "art| A: a B: b");
        // The task named where its text is never shown (its length, an empty slice, a false
        // condition): refused, as an answer is; the word "task" in plain text is not a use.
        for src in [
            "{{ task|length }} A: {{ answer_a }} B: {{ answer_b }}",
            "{{ task[:0] }} A: {{ answer_a }} B: {{ answer_b }}",
            "{% if false %}{{ task }}{% endif %} A: {{ answer_a }} B: {{ answer_b }}",
        ] {
            let e = tmpl(src).unwrap_err().to_string();
            assert!(e.contains("does not contain {{ task }}") && e.contains("never shown"), "{src}: {e}");
        }
        tmpl("Do the task well. {# task #} A: {{ answer_a }} B: {{ answer_b }}").unwrap();
        tmpl("{{ 'the task' }}: A: {{ answer_a }} B: {{ answer_b }}").unwrap();
        // A global function of the template language is not an unknown variable.
        let t = tmpl("{{ answer_a }} {{ answer_b }}{% for i in range(2) %}.{% endfor %}").unwrap();
        assert_eq!(t.render("t", "a", "b").unwrap().user, "a b..");
    }

    /// With a `user` block, the task and any text outside the blocks would be dropped without a
    /// word (the judge once got two summaries with no article and no reply format): refused.
    /// A runaway loop ends with an error instead of running for hours.
    #[test]
    fn what_a_user_block_leaves_out_is_refused() {
        let e = tmpl(
            "Source article:\n{{ task }}\nWhich summary is more faithful? Reply A or B.\n{% block user %}Summary A: {{ answer_a }}\nSummary B: {{ answer_b }}{% endblock %}",
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("the rendered prompt does not contain {{ task }}") && e.contains("the task or source text"),
            "{e}"
        );
        let e = tmpl("Reply A or B.\n{% block user %}{{ task }} A: {{ answer_a }} B: {{ answer_b }}{% endblock %}")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("text outside the `system` and `user` blocks is never sent") && e.contains("\"Reply A or B.\""),
            "{e}"
        );
        // `task` in a third block, never sent.
        let e =
            tmpl("{% block task %}{{ task }}{% endblock %}{% block user %}{{ answer_a }} {{ answer_b }}{% endblock %}")
                .unwrap_err()
                .to_string();
        assert!(e.contains("does not contain {{ task }}"), "{e}");
        // Comments and white space between blocks are fine; so is a template that never names the task.
        tmpl("{# note #}\n{% block system %}J.{% endblock %}\n\n{% block user %}{{ answer_a }} {{ answer_b }}{% endblock %}\n")
            .unwrap();
        let e = tmpl("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}{{ answer_a }} {{ answer_b }}")
            .unwrap_err()
            .to_string();
        assert!(e.contains("rendering the prompt took more than its budget of work"), "{e}");
    }

    /// The shipped multi-turn template shows a 2-turn MT-Bench question turn by turn, and a
    /// single-turn task as pairwise.j2 does.
    #[test]
    fn the_multiturn_template_renders_the_conversation_turn_by_turn() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("prompts");
        let t = PromptTemplate::load(&root.join("pairwise_multiturn.j2")).unwrap();
        // MT-Bench question 113 (probability), shortened.
        let task_turns = vec![
            "What is the probability that a randomly picked student likes neither blue nor green?".to_owned(),
            "If we select a student liked green, what's the probability that he or she would dislike both colors?"
                .to_owned(),
        ];
        let a = vec!["19%.".to_owned(), "0%.".to_owned()];
        let b = vec!["0.19".to_owned(), "It is 0.".to_owned()];
        let task = task_turns.join("\n\n");
        let r = t
            .render_turns(&task, &a.join("\n\n"), &b.join("\n\n"), &Turns { task: &task_turns, a: &a, b: &b })
            .unwrap();
        let expected = format!(
            "Conversation with Assistant A:\n<<<\nUser (turn 1):\n{q1}\n\nAssistant A:\n19%.\n\nUser (turn 2):\n{q2}\n\nAssistant A:\n0%.\n>>>\n\n\
             Conversation with Assistant B:\n<<<\nUser (turn 1):\n{q1}\n\nAssistant B:\n0.19\n\nUser (turn 2):\n{q2}\n\nAssistant B:\nIt is 0.\n>>>\n\n\
             Which assistant did better over the whole conversation? Reply with exactly one letter, A or B.",
            q1 = task_turns[0],
            q2 = task_turns[1]
        );
        assert_eq!(r.user, expected);
        assert!(r.system.as_deref().is_some_and(|s| s.contains("several turns")));
        // Without turns: the task and the two answers, as pairwise.j2 shows them.
        let single = t.render("Name a colour.", "Red.", "Blue.").unwrap();
        let plain =
            PromptTemplate::load(&root.join("pairwise.j2")).unwrap().render("Name a colour.", "Red.", "Blue.").unwrap();
        assert_eq!(single.user, plain.user);
        // A single-turn template renders the same with or without (empty) turn lists.
        let empty = plain.clone();
        let p = PromptTemplate::load(&root.join("pairwise.j2")).unwrap();
        assert_eq!(p.render_turns("Name a colour.", "Red.", "Blue.", &Turns::default()).unwrap(), empty);
    }

    #[test]
    fn truncation_respects_char_boundaries() {
        let s = "ab😀cd"; // 😀 is 4 bytes at 2..6
        assert_eq!(truncate_to_bytes(s, 100, "…"), s);
        assert_eq!(truncate_to_bytes(s, 5, ""), "ab");
        assert_eq!(truncate_to_bytes(s, 6, ""), "ab😀");
        let t = truncate_to_bytes(&"é".repeat(50), 20, " [cut]");
        assert!(t.len() <= 20 && t.ends_with(" [cut]"), "{t}");
    }

    #[test]
    fn answers_are_cut_in_the_middle_identically_in_both_orders() {
        let m = ANSWER_CUT_MARKER.len();
        // Cut to 100 bytes: the head and the tail around the marker, at character boundaries.
        let long = format!("{}{}", "head ".repeat(20), "é tail".repeat(20));
        let c = cut_middle(&long, 100, ANSWER_CUT_MARKER);
        assert!(c.len() <= 100 && c.contains(ANSWER_CUT_MARKER), "{c}");
        let (h, t) = c.split_once(ANSWER_CUT_MARKER).unwrap();
        assert!(long.starts_with(h) && long.ends_with(t));
        assert_eq!(h.len() + t.len(), 100 - m, "the whole room is used (no multibyte char at the cut)");
        assert_eq!(cut_middle("short", 100, ANSWER_CUT_MARKER), "short");
        // Water-filling: a short answer is kept whole, the long one gets the rest.
        let (short, big) = ("s".repeat(100), "b".repeat(5000));
        let (a, b) = fit_answers(&short, &big, 1000).unwrap();
        assert_eq!((a.len(), b.len()), (100, 900));
        assert_eq!(fit_answers(&big, &short, 1000).unwrap(), (b.clone(), a.clone()), "same texts in both orders");
        // Both long: half each.
        let (x, y) = fit_answers(&"x".repeat(3000), &big, 1000).unwrap();
        assert_eq!((x.len(), y.len()), (500, 500));
        // Fits already: untouched.
        assert_eq!(fit_answers("a", "b", 2), Some(("a".into(), "b".into())));
        // No room worth judging: None.
        assert_eq!(fit_answers(&big, &big, 100), None);
        let tiny = "t".repeat(30);
        assert_eq!(fit_answers(&tiny, &big, 30 + MIN_CUT_ANSWER_BYTES).unwrap().1.len(), MIN_CUT_ANSWER_BYTES);
        assert!(fit_answers(&tiny, &big, 30 + MIN_CUT_ANSWER_BYTES - 1).is_none());
    }
}

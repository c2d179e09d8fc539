//! Command-line overrides of a config document (docs/config.md, "Changing a key from the
//! command line"): `--set dotted.key=value` and the shorthands `--max-usd`,
//! `--max-comparisons`, `--base-url` and `--name`. They are applied to the document before any
//! check, so an overridden value is checked like one written in the file, shown in the resolved
//! config.yaml of the output folder, and an error about it names the override as given.

use super::ConfigError;
use serde::de::DeserializeOwned;
use std::path::Path;

/// One `--set KEY=VALUE`: a dotted key path and a YAML value (`0.5`, `gpt-4o-mini`,
/// `{mode: deterministic}`).
#[derive(Debug, Clone, PartialEq)]
pub struct Override {
    /// As given on the command line (for messages), e.g. `--set budget.max_usd=0.5`, with
    /// credentials and pasted keys redacted.
    pub given: String,
    /// Whether `given` hides a credential or key of the argument.
    pub redacted: bool,
    /// The key path, split at dots.
    pub key: Vec<String>,
    /// The value, parsed as YAML (text when it is not YAML).
    pub value: serde_json::Value,
    /// The value as typed.
    pub raw: String,
    /// A fault of the value found when it was read (a key written twice in it), said as a
    /// config error (exit code 1) when the document is read.
    fault: Option<String>,
}

impl Override {
    /// Parse `KEY=VALUE` (what `--set` takes).
    ///
    /// # Errors
    /// A message naming the argument when it has no `=`, an empty key part or a value that is
    /// not YAML.
    pub fn parse(arg: &str) -> Result<Self, String> {
        Self::new(&format!("--set {arg}"), arg).map_err(|(given, msg)| format!("{given}: {msg}"))
    }

    /// An override from a shorthand (`--max-usd 0.5` is `budget.max_usd=0.5`).
    ///
    /// # Errors
    /// As [`Override::parse`].
    /// The error is the shorthand as shown (credentials redacted) and what is wrong.
    pub fn shorthand(flag: &str, key: &str, value: &str) -> Result<Self, (String, String)> {
        // An empty value is shown as the shell takes it (`--base-url ''`), not as `--base-url `.
        let shown = if value.is_empty() { "''" } else { value };
        let o = Self::new(&format!("{flag} {shown}"), &format!("{key}={value}"))?;
        // A shorthand for a limit takes a number: `null` (what `$(jq .max_usd …)` prints for a
        // missing field) would remove the file's limit (hunt 54).
        if key.starts_with("budget.") && o.value.is_null() {
            return Err((
                o.given,
                format!(
                    "expected a number, found {value:?}; {flag} sets a limit and cannot remove one (to run without it, delete it from the file)"
                ),
            ));
        }
        Ok(o)
    }

    fn new(given: &str, arg: &str) -> Result<Self, (String, String)> {
        use crate::judge::openai::secret;
        // A token that starts like a provider's key is not echoed, even in a malformed argument.
        let original = given;
        // So is a credential an environment variable holds (a key pasted from LOCAL_LLM_API_KEY).
        // URLs first: a key redacted inside one (`[redacted]`) would split it where messages look
        // for its query's secrets.
        let given = &secret::redact_each(
            &secret::redact_urls_in(given),
            &[secret::keys_in(given), secret::env_secrets(), secret::env_tokens()].concat(),
        );
        let (key, value) = arg
            .split_once('=')
            .ok_or_else(|| (given.clone(), "expected KEY=VALUE, e.g. budget.max_usd=0.5".to_string()))?;
        if let Some(open) = key.find('[') {
            // `judges[0].mock.seed`, as an error message writes a list entry: the key's form
            // is `judges.0.mock.seed`.
            let dotted = key.trim().replace(['[', ']'], ".").replace("..", ".");
            return Err((
                given.clone(),
                format!(
                    "a list entry is named by its index as a dotted part: write `{}` (`[` at {} of the key)",
                    dotted.trim_end_matches('.'),
                    open + 1
                ),
            ));
        }
        let key: Vec<String> = key.trim().split('.').map(|k| k.trim().to_string()).collect();
        if key.iter().any(String::is_empty) {
            return Err((
                given.clone(),
                "the key has an empty part; expected a dotted key such as budget.max_usd".into(),
            ));
        }
        if key.iter().any(|k| k.contains(['"', '\''])) {
            return Err((
                given.clone(),
                "a key is written without quotes (`k=3`, `budget.max_usd=0.5`); quote the value instead when it needs quotes".into(),
            ));
        }
        // One value on one line: the value is written into the YAML text, where a line break
        // would start other keys (`--max-comparisons "$(printf '20\n  max_usd:\n    100')"` set
        // a $100 cap; hunt 54).
        if let Some(c) = arg.chars().find(|c| (c.is_control() && *c != '\t') || matches!(c, '\u{2028}' | '\u{2029}')) {
            return Err((
                given.escape_debug().to_string().replace("\\\"", "\"").replace("\\'", "'"),
                format!(
                    "the argument holds {} (U+{:04X}); an override sets one value on one line (a text of several lines goes in the file)",
                    if matches!(c, '\n' | '\r' | '\u{2028}' | '\u{2029}') {
                        "a line break"
                    } else {
                        "a control character"
                    },
                    u32::from(c)
                ),
            ));
        }
        let raw = value.to_string();
        let fault = repeated_key(&key, value);
        let value = if value.trim().is_empty() {
            serde_json::Value::String(String::new())
        } else {
            crate::store::yaml::from_str::<serde_json::Value>(value)
                .unwrap_or_else(|_| serde_json::Value::String(value.to_string()))
        };
        // A base_url's credentials and a pasted key are not shown in any message that names the
        // override, nor in the resume line.
        let shown = secret::redact_each(&secret::redact_urls_in(given), &secret::override_secrets(&key, &value));
        let redacted = shown != original;
        // A key is never a setting (it would be copied into the run folder's config.yaml and
        // shown by the dry run): outside a base_url, whose credentials are redacted, refused.
        let mut doc = serde_json::Map::new();
        doc.insert(key.last().cloned().unwrap_or_default(), value.clone());
        let doc = serde_json::Value::Object(doc);
        if let Some((_, said)) = super::sections::env_reference_in_a_setting(&doc) {
            return Err((
                shown.clone(),
                format!(
                    "{said:?} looks like an environment variable, and this setting is used as written (only paths and URLs are expanded); let the shell expand it (`--set {}=\"$VAR\"`)",
                    key.join(".")
                ),
            ));
        }
        if !key.iter().any(|k| k == "extra_body" || k == "base_url") && secret::key_in_a_setting(&doc).is_some() {
            return Err((
                shown.clone(),
                "the value holds what looks like an API key (not shown); a judge reads its key from the environment variable its `api_key_env` names, and a key is never written into a setting".into(),
            ));
        }
        Ok(Self { given: shown, key, value, raw, redacted, fault })
    }

    /// The dotted key.
    pub fn dotted(&self) -> String {
        self.key.join(".")
    }

    /// Set the value in `doc`, creating the mappings on the way.
    fn apply(&self, doc: &mut serde_json::Value) -> Result<(), String> {
        let mut at = doc;
        for (i, part) in self.key.iter().enumerate() {
            // `budget: unlimited` is the budget with no limit: a limit set on it starts one.
            if at.is_null() || (i == 1 && self.key[0] == "budget" && at.as_str() == Some("unlimited")) {
                *at = serde_json::Value::Object(serde_json::Map::new());
            }
            // A list entry by its index, from 0 (`judges.1.mock.seed`).
            if let serde_json::Value::Array(list) = at {
                let len = list.len();
                let entry = part.parse::<usize>().ok().and_then(|j| list.get_mut(j)).ok_or_else(|| {
                    format!(
                        "{} is a list of {len} entries: its entries are named by their index, 0 to {}, not {part:?}",
                        self.key[..i].join("."),
                        len.saturating_sub(1)
                    )
                })?;
                if i + 1 == self.key.len() {
                    *entry = self.value.clone();
                    return Ok(());
                }
                at = entry;
                continue;
            }
            let serde_json::Value::Object(map) = at else {
                return Err(format!(
                    "{} is not a mapping in the config, so it has no key {part:?}",
                    self.key[..i].join(".")
                ));
            };
            if i + 1 == self.key.len() {
                // The value replaces the setting under any of its names (`batch_size` is
                // `concurrency`): both in one mapping would be a duplicate field.
                for name in synonyms(&self.key[..i], part) {
                    map.remove(&name);
                }
                map.insert(part.clone(), self.value.clone());
                return Ok(());
            }
            at = map.entry(part.clone()).or_insert(serde_json::Value::Null);
        }
        Ok(())
    }
}

/// Read the YAML document at `path` into `T` with `overrides` applied (in order; a later one
/// wins). Without overrides this is [`super::read_document`].
///
/// # Errors
/// [`ConfigError::Yaml`] for the file as written (line and column); [`ConfigError::Set`] naming
/// the override that does not fit the document (a wrong type, an unknown key).
pub fn read_document_with<T: DeserializeOwned>(path: &Path, overrides: &[Override]) -> Result<T, ConfigError> {
    if overrides.is_empty() {
        return super::read_document(path);
    }
    if let Some(o) = overrides.iter().find(|o| o.fault.is_some()) {
        return Err(ConfigError::Set { given: o.given.clone(), msg: o.fault.clone().unwrap_or_default() });
    }
    // The file must at least be YAML; its own faults are reported with their lines.
    let mut doc: serde_json::Value = super::read_document(path)?;
    let listed: Vec<Override> = overrides.iter().map(|o| in_list_of_one(&doc, o)).collect();
    let overrides = &listed[..];
    for o in overrides {
        check_judge_kind(&doc, o)?;
    }
    // A key that does not fit the document's shape (a list entry named by other than its index,
    // a key under a value) is named before the text is patched.
    let mut probe = doc.clone();
    for o in overrides {
        let before = probe.clone();
        o.apply(&mut probe).map_err(|msg| ConfigError::Set { given: o.given.clone(), msg })?;
        // A limit the file sets is not lifted from the command line (`--set budget.max_usd=null`,
        // `--set 'budget={max_comparisons: 50}'` dropped the file's $0.05 cap; hunt 54).
        // (An audit's older top-level `max_usd` is one of them.)
        let limits = [
            ("budget.max_usd", &["budget", "max_usd"][..]),
            ("budget.max_comparisons", &["budget", "max_comparisons"]),
            ("max_usd", &["max_usd"]),
        ];
        for (limit, path) in limits {
            let at = |d: &serde_json::Value| {
                path.iter().try_fold(d.clone(), |v, k| v.get(*k).cloned()).filter(|v| !v.is_null())
            };
            if let (Some(had), None) = (at(&before), at(&probe)) {
                return Err(ConfigError::Set {
                    given: o.given.clone(),
                    msg: format!(
                        "this would remove {limit} ({had}) that the file sets; an override sets a limit and cannot lift one (set {limit} to another value, or delete it from the file)"
                    ),
                });
            }
        }
    }
    // A key of this config's judges (the variables their api_key_env name) given as a setting
    // (`--set judge.openai.model="$MYCORP_LLM"`; hunt 57) is refused unshown.
    if let Some(key) = crate::judge::openai::secret::key_in_a_setting(&probe) {
        let o = overrides.iter().rev().find(|o| key.starts_with(&o.key.join("."))).or(overrides.last());
        if let Some(o) = o {
            return Err(ConfigError::Set {
                given: crate::judge::openai::secret::redact_each(
                    &o.given,
                    &crate::judge::openai::secret::keys_named_in(&probe),
                ),
                msg: format!(
                    "{key}: the value holds what looks like an API key (not shown); a judge reads its key from the environment variable its `api_key_env` names, and a key is never written into a setting"
                ),
            });
        }
    }
    let written = std::fs::read_to_string(path).unwrap_or_default();
    if let Some(msg) = super::judge_blocks_message(&probe, &written) {
        // The file's own fault, or the block an override added.
        let added = overrides.iter().rev().find(|o| o.key.first().is_some_and(|k| k == "judge" || k == "judges"));
        return Err(match (super::judge_blocks_message(&doc, &written), added) {
            (None, Some(o)) => ConfigError::Set { given: o.given.clone(), msg: strip_location(&msg, o) },
            _ => ConfigError::Yaml { path: path.to_owned(), msg },
        });
    }
    // Block-style keys are set in the text itself, so every other value keeps the text it was
    // written with (`id: 001` stays "001") and the new value is read for its key's type, as if
    // written there (`model: yes` is a name, not a boolean).
    let original = super::read_text(path)?;
    let mut patched = Some(crate::domain::text::strip_bom_str(&original).to_string());
    for o in overrides {
        patched = patched.and_then(|t| patch_text(&t, &o.key, &yaml_value(&o.raw)));
    }
    if let Some(text) = patched {
        let original = crate::domain::text::strip_bom_str(&original);
        return crate::store::yaml::from_str::<T>(&text).map_err(|e| {
            let in_key = message_key(&e.0).map(as_dotted);
            // The override whose key (or a prefix of it) the message names, or whose value holds
            // the key it names (`judges[1].mock.seed` of `--set judges=[…]`).
            let named = overrides.iter().rev().find(|o| {
                (1..=o.key.len()).any(|n| e.0.contains(&format!("(key `{}`)", o.key[..n].join("."))))
                    || in_key.as_deref().is_some_and(|k| k.starts_with(&format!("{}.", o.dotted())))
                    || e.0.contains(&format!("`{}`", o.dotted()))
                    // A field missing in a block the override wrote (`in `judge.openai``).
                    || e.0.contains(&format!("`{}.", o.dotted()))
                    || e.0.contains(&format!("field `{}`", o.key.last().map_or("", |k| k.as_str())))
            });
            // Else a line an override wrote (or added past the file's end) is the override's
            // fault, not the file's: the last override whose key it holds, or the last one.
            let at = e.0.strip_prefix("line ").and_then(|r| r.split_whitespace().next()?.parse::<usize>().ok());
            let written = at.and_then(|n| {
                let now = text.lines().nth(n.checked_sub(1)?)?;
                (original.lines().nth(n - 1) != Some(now)).then_some(now)
            });
            let named = named.or_else(|| {
                let now = written?;
                overrides
                    .iter()
                    .rev()
                    .find(|o| o.key.last().is_some_and(|k| now.contains(k.as_str())))
                    .or(overrides.last())
            });
            match named {
                Some(o) => ConfigError::Set { given: o.given.clone(), msg: strip_location(&e.0, o) },
                None => ConfigError::Yaml {
                    path: path.to_owned(),
                    msg: e.0.replace("--> <input>:", &format!("--> {}:", path.display())),
                },
            }
        });
    }
    for o in overrides {
        o.apply(&mut doc).map_err(|msg| ConfigError::Set { given: o.given.clone(), msg })?;
    }
    let text =
        crate::store::yaml::to_string(&doc).map_err(|e| ConfigError::Yaml { path: path.to_owned(), msg: e.0 })?;
    match crate::store::yaml::from_str::<T>(&text) {
        Ok(t) => Ok(t),
        Err(e) => {
            // Whose fault? If the file alone reads, the overrides brought it: name the first
            // override whose addition breaks the document.
            match super::read_document::<T>(path) {
                Err(file_error) => {
                    // The file alone is broken; unless an override repairs that part, report it.
                    if let Some(o) = overrides.iter().find(|o| e.0.contains(&format!("`{}`", o.dotted()))) {
                        Err(ConfigError::Set { given: o.given.clone(), msg: strip_location(&e.0, o) })
                    } else {
                        Err(file_error)
                    }
                }
                Ok(_) => {
                    let mut doc: serde_json::Value = super::read_document(path)?;
                    for o in overrides {
                        o.apply(&mut doc).map_err(|msg| ConfigError::Set { given: o.given.clone(), msg })?;
                        let text = crate::store::yaml::to_string(&doc)
                            .map_err(|e| ConfigError::Yaml { path: path.to_owned(), msg: e.0 })?;
                        if let Err(e) = crate::store::yaml::from_str::<T>(&text) {
                            return Err(ConfigError::Set { given: o.given.clone(), msg: strip_location(&e.0, o) });
                        }
                    }
                    Err(ConfigError::Set {
                        given: overrides[0].given.clone(),
                        msg: strip_location(&e.0, &overrides[0]),
                    })
                }
            }
        }
    }
}

/// A `judge.…` override (and so `--base-url`) on a list of one judge, which runs as the single
/// judge: it sets that judge's field, `judges.0.…`. Any other override as it is.
fn in_list_of_one(doc: &serde_json::Value, o: &Override) -> Override {
    let one = doc.get("judge").is_none()
        && doc.get("judges").and_then(serde_json::Value::as_array).is_some_and(|l| l.len() == 1);
    let mut o = o.clone();
    if one && o.key.len() > 1 && o.key[0] == "judge" {
        o.key.splice(0..1, ["judges".to_owned(), "0".to_owned()]);
    }
    o
}

/// A `judge.<kind>.…` override on a config whose judge is another kind: say so (the parser would
/// only say that an enum variant has two keys).
/// Also a `judge.…` override on a judge panel (`judges:`) and a `judges.…` one on a config of
/// one judge: say which form the config takes (the parser would say a field is missing).
fn check_judge_kind(doc: &serde_json::Value, o: &Override) -> Result<(), ConfigError> {
    let (single, panel) = (doc.get("judge").is_some(), doc.get("judges").is_some());
    let head = o.key.first().map(String::as_str);
    if head == Some("judge") && panel && !single {
        let n = doc.get("judges").and_then(serde_json::Value::as_array).map_or(0, Vec::len);
        return Err(ConfigError::Set {
            given: o.given.clone(),
            msg: format!(
                "this config is a judge panel (`judges:`, {n} judges){}: set a member's field with `--set judges.N.{}` (N = 0 to {}, in the order of `judges:`)",
                if o.given.starts_with("--base-url") {
                    "; --base-url sets judge.openai.base_url, of a config of one judge only"
                } else {
                    ""
                },
                if o.key.len() > 1 { o.key[1..].join(".") } else { "…".to_string() },
                n.saturating_sub(1)
            ),
        });
    }
    if head == Some("judges") && single && !panel {
        // A panel member's own field (`judges.0.name`) has no single-judge form to point to.
        let rest = &o.key[if o.key.get(1).is_some_and(|k| k.parse::<usize>().is_ok()) { 2 } else { 1 }..];
        if let Some(field) = rest.first().filter(|f| matches!(f.as_str(), "name" | "trusted" | "family" | "prior")) {
            return Err(ConfigError::Set {
                given: o.given.clone(),
                msg: format!(
                    "this config has one judge (`judge:`), not a panel, and `{field}` is a field of a panel member only: a single judge has no {field}; to make a panel, write `judges:` in the file (docs/config.md, \"A judge panel\", and configs/panel.yaml)"
                ),
            });
        }
        // The single judge's form of the key, when it names a setting of this judge's kind;
        // otherwise the form its settings take (a blind rewrite suggested keys refused in turn).
        let kind = match doc.get("judge") {
            Some(serde_json::Value::Object(j)) => j.keys().find(|k| super::JUDGE_KINDS.contains(&k.as_str())).cloned(),
            _ => None,
        };
        let how = match (rest.first().map(String::as_str), kind.as_deref()) {
            (Some(k), Some(mine)) if k == mine && rest.len() > 1 => {
                format!("set its field with `--set judge.{}`", rest.join("."))
            }
            (Some(k), Some(mine)) if super::JUDGE_KINDS.contains(&k) && k != mine => {
                format!("its judge is `{mine}`, not `{k}`: set its settings with `--set judge.{mine}.FIELD`")
            }
            (_, Some(mine)) => format!("set its settings with `--set judge.{mine}.FIELD` (docs/config.md lists them)"),
            (_, None) => "set its judge's settings with `--set judge.KIND.FIELD`".to_string(),
        };
        return Err(ConfigError::Set {
            given: o.given.clone(),
            msg: format!("this config has one judge (`judge:`), not a panel: {how}"),
        });
    }
    if o.key.len() < 2 || o.key[0] != "judge" {
        return Ok(());
    }
    let Some(serde_json::Value::Object(j)) = doc.get("judge") else { return Ok(()) };
    let field = o.key[1].as_str();
    match j.keys().next() {
        Some(kind) if j.len() == 1 && kind != field && super::JUDGE_KINDS.contains(&field) => Err(ConfigError::Set {
            given: o.given.clone(),
            msg: format!(
                "this config's judge is `{kind}`; judge.{field}.… settings{} apply only to a judge of that kind",
                if field == "openai" { " (and --base-url, which sets judge.openai.base_url)" } else { "" }
            ),
        }),
        // `judge:` holds its kind only: its settings are one level down.
        Some(kind) if j.len() == 1 && kind != field => {
            let member = if matches!(field, "name" | "trusted" | "family" | "prior") {
                format!("`{field}` is a field of a panel member (`judges:`), not of a single judge; ")
            } else {
                String::new()
            };
            Err(ConfigError::Set {
                given: o.given.clone(),
                msg: format!(
                    "{member}`judge:` holds one key, the judge's kind (one of {}; here `{kind}`): set its settings with `--set judge.{kind}.FIELD`",
                    super::JUDGE_KINDS.join(", ")
                ),
            })
        }
        _ => Ok(()),
    }
}

/// Settings read under more than one name: the parent key and the names (serde aliases of the
/// config's fields, docs/config.md).
const ALIASES: &[(&str, &[&str])] = &[("acquisition", &["concurrency", "batch_size"])];

/// The names of the setting `k` under the mapping `parent` (`k` itself first, then its other
/// names: `acquisition.batch_size` is also `acquisition.concurrency`).
fn synonyms(parent: &[String], k: &str) -> Vec<String> {
    let mut names = vec![k.to_string()];
    for (p, alias) in ALIASES {
        if parent.len() == 1 && parent[0] == *p && alias.contains(&k) {
            names.extend(alias.iter().filter(|a| **a != k).map(|a| (*a).to_string()));
        }
    }
    names
}

/// The YAML text of an override's value: as typed when it reads as a plain scalar, a flow
/// mapping or a sequence; else quoted (an `@` or `*` at the start, `: ` or ` #` inside).
fn yaml_value(raw: &str) -> String {
    let t = raw.trim();
    if t.is_empty() {
        return "\"\"".into();
    }
    // A flow value as typed; one that is not YAML (`[INST] judge`) is text, as
    // [`Override::parse`] reads it.
    if t.starts_with(['{', '[']) && crate::store::yaml::from_str::<serde_json::Value>(t).is_ok() {
        return t.to_string();
    }
    if t.starts_with(['\'', '"']) {
        // Quoted by the user: YAML as typed.
        return t.to_string();
    }
    let indicator = t == "-"
        || t.starts_with("- ")
        || t.starts_with(['?', ':', ',', '[', ']', '{', '}', '#', '&', '*', '!', '|', '>', '%', '@', '`', '~']);
    if indicator || t.contains(": ") || t.contains(" #") || t != raw {
        serde_json::to_string(raw).expect("a string serialises")
    } else {
        t.to_string()
    }
}

/// Set `key` to `value` (YAML text) in a block-style YAML document, keeping every other line
/// as written: the key's line is rewritten (its nested lines dropped), or the missing keys are
/// added at the end of the innermost mapping that exists. `None` when the way there is not
/// block style (a flow mapping), which the caller handles otherwise.
fn patch_text(text: &str, key: &[String], value: &str) -> Option<String> {
    // A list entry (`judges.1.…`) is set in the parsed document, not in the text.
    if key.iter().any(|k| k.parse::<usize>().is_ok()) {
        return None;
    }
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let indent_of = |l: &str| l.len() - l.trim_start().len();
    let meaningful = |l: &str| !l.trim().is_empty() && !l.trim_start().starts_with('#');
    // Only plain block keys are patched in the text. A document in flow style (a JSON config),
    // a quoted key (`"k": 3`) or one with a space before its colon where the key is looked for,
    // an anchor or alias on the lines replaced, or a flow value continued on later lines is set
    // in the parsed document instead (hunt 54: the patch wrote a second `k`, or dropped `&s`,
    // and the error blamed a valid file).
    if lines.iter().find(|l| meaningful(l)).is_some_and(|l| l.trim_start().starts_with(['{', '[']))
        || lines.iter().any(|l| {
            let bare = l.split(" #").next().unwrap_or(l).trim_end();
            bare == "..." || bare == "---" || bare.starts_with("--- ") || bare.starts_with("... ")
        })
    {
        return None;
    }
    let odd_key = |l: &str| {
        let b = l.trim_start();
        b.starts_with(['"', '\'', '?']) || b.split_once(':').is_some_and(|(k, _)| k.ends_with(' '))
    };
    let anchored = |l: &str| {
        let rest = l.trim_start().split_once(':').map_or("", |(_, r)| r).trim_start();
        rest.starts_with(['&', '*', '!']) || l.contains(" &") || l.trim_start().starts_with("- &")
    };
    let unbalanced = |l: &str| {
        let rest = l.split_once(':').map_or("", |(_, r)| r);
        rest.matches(['{', '[']).count() != rest.matches(['}', ']']).count()
    };
    // The block of the current mapping: lines [start, end), its parent's indent.
    let (mut start, mut end, mut parent_indent): (usize, usize, Option<usize>) = (0, lines.len(), None);
    for (depth, k) in key.iter().enumerate() {
        let child_indent = lines[start..end].iter().find(|l| meaningful(l)).map(|l| indent_of(l));
        if let Some(ci) = child_indent
            && (start..end).any(|i| meaningful(&lines[i]) && indent_of(&lines[i]) == ci && odd_key(&lines[i]))
        {
            return None;
        }
        let found = child_indent.and_then(|ci| {
            (start..end).find(|&i| {
                let l = &lines[i];
                meaningful(l) && indent_of(l) == ci && {
                    let body = l.trim_start();
                    // The key, or an older name of the same setting (its line is rewritten).
                    synonyms(&key[..depth], k)
                        .iter()
                        .any(|name| body.strip_prefix(name).is_some_and(|r| r.starts_with(':')))
                }
            })
        });
        let Some(i) = found else {
            // Add the rest of the path at the end of this mapping.
            let ind = child_indent.unwrap_or_else(|| parent_indent.map_or(0, |p| p + 2));
            let mut add = Vec::new();
            for (j, kk) in key[depth..].iter().enumerate() {
                let pad = " ".repeat(ind + 2 * j);
                if depth + j + 1 == key.len() {
                    add.push(format!("{pad}{kk}: {value}"));
                } else {
                    add.push(format!("{pad}{kk}:"));
                }
            }
            // After the mapping's last line: its last meaningful line, or a deeper line below it
            // (a `# …` line of a `|` text is the text's, not a comment).
            let at = (start..end)
                .rev()
                .find(|&i| meaningful(&lines[i]) || (!lines[i].trim().is_empty() && indent_of(&lines[i]) > ind))
                .map_or(start, |i| i + 1);
            lines.splice(at..at, add);
            return Some(lines.join("\n") + "\n");
        };
        let ind = indent_of(&lines[i]);
        // The end of this key's block: the next meaningful line at or above its indent.
        let block_end = (i + 1..end).find(|&j| meaningful(&lines[j]) && indent_of(&lines[j]) <= ind).unwrap_or(end);
        if unbalanced(&lines[i]) || (depth + 1 == key.len() && lines[i..block_end].iter().any(|l| anchored(l))) {
            return None;
        }
        if depth + 1 == key.len() {
            lines[i] = format!("{}{}: {value}", " ".repeat(ind), key[depth]);
            lines.drain(i + 1..block_end);
            return Some(lines.join("\n") + "\n");
        }
        let after = lines[i].trim_start()[k.len() + 1..].trim();
        if !(after.is_empty() || after.starts_with('#')) {
            // A value on the key's line (a flow mapping, a scalar): not block style.
            return None;
        }
        (start, end, parent_indent) = (i + 1, block_end, Some(ind));
    }
    None
}

/// The key a parser message names, as written (`judges[1].mock` of "(key `judges[1].mock`)").
fn message_key(msg: &str) -> Option<&str> {
    let first = msg.lines().next()?;
    Some(first.split_once("(key `")?.1.split_once("`)")?.0)
}

/// A key as written in a message (`judges[1].mock`), dotted as an override's key is
/// (`judges.1.mock`).
fn as_dotted(k: &str) -> String {
    k.replace('[', ".").replace(']', "")
}

/// A key written twice in a flow value (`{seed: 1, seed: 2}`), named by its path below the
/// override's key (`judges[1].mock.seed: duplicate mapping key: seed`); in a file the parser
/// says so with the line, and a value that does not parse is otherwise taken as text.
fn repeated_key(key: &[String], value: &str) -> Option<String> {
    let t = value.trim();
    if !t.starts_with(['{', '[']) {
        return None;
    }
    let e = crate::store::yaml::from_str::<serde_json::Value>(&format!("v: {t}")).err()?;
    let first = e.0.lines().next().unwrap_or_default();
    let (place, body) = first.split_once(": ")?;
    if !body.starts_with("duplicate mapping key") {
        return None;
    }
    let inner = place.split_once("(key `v").and_then(|(_, k)| k.strip_suffix("`)")).unwrap_or("");
    let outer = key.iter().enumerate().fold(String::new(), |acc, (i, k)| match k.parse::<usize>() {
        Ok(n) if i > 0 => format!("{acc}[{n}]"),
        _ if i == 0 => k.clone(),
        _ => format!("{acc}.{k}"),
    });
    Some(format!("{outer}{inner}: {body}"))
}

/// The parser's message without its "line N column M" and excerpt (they point into the merged
/// document, not into the file). The key it names is kept when it lies inside the value `o`
/// set, below the override's key (`--set judges.1={…, openai: {concurrency: -3}}`: `judges[1].openai.concurrency: expected
/// …`); the override's own key is already said by the `--set` it quotes.
fn strip_location(msg: &str, o: &Override) -> String {
    // A number of digits too large for its setting reaches the check as a float
    // (`1.8446744073709552e19`): named as typed (hunt 55).
    let typed = o.raw.trim();
    let msg = &match msg.split_once(" is too large") {
        Some((head, _)) if !typed.is_empty() && typed.chars().all(|c| c.is_ascii_digit()) => {
            let number = head.rsplit([' ', '(', '`']).next().unwrap_or("");
            if number
                .parse::<f64>()
                .is_ok_and(|x| x.to_string() == typed.parse::<f64>().map(|t| t.to_string()).unwrap_or_default())
            {
                msg.replacen(&format!("{number} is too large"), &format!("{typed} is too large"), 1)
            } else {
                msg.to_string()
            }
        }
        _ => msg.to_string(),
    };
    let first = msg.lines().next().unwrap_or(msg);
    let Some(rest) = first.strip_prefix("line ") else { return first.to_string() };
    let Some((_, body)) = rest.split_once(": ") else { return rest.to_string() };
    match message_key(first) {
        Some(k) if as_dotted(k).starts_with(&format!("{}.", o.dotted())) => {
            format!("{k}: {}", body.trim())
        }
        _ => body.trim().to_string(),
    }
}

/// Rewrite a rule error about an overridden key to name the override as given; a file the
/// config's folder lacks that a `--set` path names from the shell's folder gets a hint.
pub fn name_the_override(e: ConfigError, overrides: &[Override]) -> ConfigError {
    match named_override(e, overrides) {
        ConfigError::Set { given, msg } => {
            let hint = shell_relative_path(&msg, overrides)
                .map(|p| {
                    format!(
                        " (a path given by --set is relative to the config file's folder, as in the file; {p} exists from here: give it as an absolute path)"
                    )
                })
                .unwrap_or_default();
            ConfigError::Set { given, msg: format!("{msg}{hint}") }
        }
        e => e,
    }
}

/// A relative path among the values `overrides` set (at any depth: `pool={file: …}`) that `msg`
/// says cannot be read under the config's folder while it names a file from the shell's folder.
fn shell_relative_path(msg: &str, overrides: &[Override]) -> Option<String> {
    fn strings<'a>(v: &'a serde_json::Value, out: &mut Vec<&'a str>) {
        match v {
            serde_json::Value::String(s) => out.push(s),
            serde_json::Value::Array(a) => a.iter().for_each(|x| strings(x, out)),
            serde_json::Value::Object(m) => m.values().for_each(|x| strings(x, out)),
            _ => {}
        }
    }
    if !msg.contains("No such file") && !msg.contains("not found") {
        return None;
    }
    let mut all = Vec::new();
    overrides.iter().for_each(|o| strings(&o.value, &mut all));
    all.into_iter()
        .filter(|s| !s.is_empty() && Path::new(s).is_relative() && Path::new(s).is_file())
        .find(|s| msg.contains(&format!("/{s}")) || msg.contains(&format!("\\{s}")))
        .map(str::to_owned)
}

fn named_override(e: ConfigError, overrides: &[Override]) -> ConfigError {
    match e {
        ConfigError::Invalid { key, msg, path, line } => {
            // `judges: …, not both` on a panel file is the fault of a `--set judge.…`.
            // A list entry's key is written `judges[1].family`, an override's `judges.1.family`;
            // a fault of a judge's block (`judges[0].mock`) is the fault of a `--set` inside it.
            // A rule's key may say more after the dotted key (`acquisition.concurrency (or
            // batch_size, its older name)`): the dotted key and the setting's other names count.
            let head = key.split_whitespace().next().unwrap_or(&key);
            let parts: Vec<String> = as_dotted(head).split('.').map(str::to_string).collect();
            let (parent, last) = parts.split_at(parts.len().saturating_sub(1));
            let keys: Vec<String> = last
                .first()
                .map(|k| synonyms(parent, k).into_iter().map(|n| [parent, &[n]].concat().join(".")).collect())
                .unwrap_or_default();
            let names = |o: &Override| {
                let d = o.dotted();
                keys.iter().any(|dotted| {
                    *dotted == d || dotted.starts_with(&format!("{d}.")) || d.starts_with(&format!("{dotted}."))
                }) || (key == "judges" && o.key.first().is_some_and(|k| k == "judge"))
            };
            // Every override inside the key's block may be the cause (`judge.replay.file` and
            // `judge.replay.missing` for a fault of `judge.replay`): all are named.
            let named: Vec<&str> = overrides.iter().filter(|o| names(o)).map(|o| o.given.as_str()).collect();
            // The run folder's name and place (`--name`, `out_dir`) break no other key's rule.
            let overrides: Vec<&Override> = overrides
                .iter()
                .filter(|o| !matches!(o.key.as_slice(), [k] if k == "name" || k == "out_dir"))
                .collect();
            match (named.is_empty(), overrides.is_empty()) {
                (false, _) => ConfigError::Set { given: named.join(", "), msg: format!("{key}: {msg}") },
                // Another key's rule may fail because of an override (a judge's family that no
                // longer matches pool.families): the config checked is the file with them.
                (true, false) => {
                    let given: Vec<&str> = overrides.iter().map(|o| o.given.as_str()).collect();
                    ConfigError::Invalid {
                        line,
                        key,
                        msg: format!("{msg} (in the file as changed by {})", given.join(", ")),
                        path,
                    }
                }
                (true, true) => ConfigError::Invalid { key, msg, path, line },
            }
        }
        // A pool that cannot be read as the overrides of `pool.…` name it is their fault.
        ConfigError::Pool { path, key, line, pool_file, source } => {
            let named: Vec<&str> = overrides
                .iter()
                .filter(|o| o.key.first().is_some_and(|k| k == "pool"))
                .map(|o| o.given.as_str())
                .collect();
            if named.is_empty() {
                ConfigError::Pool { path, key, line, pool_file, source }
            } else {
                // (A path given on the command line that names a file from the shell's folder
                // gets its hint in name_the_override.)
                ConfigError::Set {
                    given: named.join(", "),
                    msg: format!("{key}: {}", super::pool_message(&pool_file, &source)),
                }
            }
        }
        e => e,
    }
}

/// The overrides of `run`, `audit` and `gate` (clap arguments, flattened into each command).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct OverrideArgs {
    /// Set a config key for this invocation, as if written in the file: a dotted key and a YAML
    /// value, e.g. `--set budget.max_usd=0.5 --set judge.openai.model=gpt-4o-mini`. Repeatable;
    /// a later one wins. Shown in the resolved config.yaml of the output folder.
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = Override::parse)]
    pub set: Vec<Override>,
    /// Shorthand for `--set budget.max_usd=USD`.
    #[arg(long, value_name = "USD", allow_hyphen_values = true)]
    pub max_usd: Option<String>,
    /// Shorthand for `--set budget.max_comparisons=N`.
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    pub max_comparisons: Option<String>,
    /// Shorthand for `--set judge.openai.base_url=URL` (e.g. http://127.0.0.1:8088/v1).
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// Shorthand for `--set name=NAME` (the output folder's name).
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// Not an option: a budget is in dollars or in comparisons (the error says which flags).
    #[arg(long, hide = true, value_name = "VALUE")]
    pub budget: Option<String>,
}

impl OverrideArgs {
    /// The overrides in order: shorthands first, then every `--set`. A shorthand and a `--set`
    /// of the same key, or of a key that holds the other (`--max-usd` and `--set budget=…`), are
    /// refused: clap does not keep their order on the command line, so neither may silently win
    /// (a dropped `--max-usd` is money).
    ///
    /// # Errors
    /// A shorthand whose value is not YAML; a shorthand and a `--set` that touch one key.
    pub fn overrides(&self) -> Result<Vec<Override>, ConfigError> {
        if let Some(b) = &self.budget {
            return Err(ConfigError::Set {
                given: format!("--budget {b}"),
                msg: "there is no --budget option: give --max-usd USD (dollars) or --max-comparisons N (comparisons), or --set budget.KEY=VALUE".into(),
            });
        }
        let mut v = Vec::new();
        let shorthands = [
            ("--max-usd", "budget.max_usd", &self.max_usd),
            ("--max-comparisons", "budget.max_comparisons", &self.max_comparisons),
            ("--base-url", "judge.openai.base_url", &self.base_url),
            ("--name", "name", &self.name),
        ];
        for (flag, key, value) in shorthands {
            if let Some(value) = value {
                let mut o =
                    Override::shorthand(flag, key, value).map_err(|(given, msg)| ConfigError::Set { given, msg })?;
                // URLs and names are text whatever they look like.
                if matches!(flag, "--base-url" | "--name") {
                    o.value = serde_json::Value::String(value.clone());
                    o.raw = serde_json::to_string(value).expect("a string serialises");
                }
                v.push(o);
            }
        }
        for s in &v {
            if let Some(o) = self.set.iter().find(|o| o.key.starts_with(&s.key) || s.key.starts_with(&o.key)) {
                let whole = if o.key.len() < s.key.len() {
                    format!(" (the --set replaces the whole of {})", o.dotted())
                } else {
                    String::new()
                };
                return Err(ConfigError::Set {
                    given: format!("{} and {}", s.given, o.given),
                    msg: format!(
                        "both set {}{whole}, and neither may silently win; give one of them, or write the value into the --set",
                        s.dotted()
                    ),
                });
            }
        }
        v.extend(self.set.iter().cloned());
        Ok(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `# …` line inside a `|` text that ends its mapping is the text's: a key added to that
    /// mapping goes after it (hunt 54: it went above, and the text lost its last line).
    #[test]
    fn a_key_added_after_a_block_text_keeps_its_hash_lines() {
        let text = "judge:\n  openai:\n    model: m\n    extra_body:\n      note: |\n        line one\n        # heading kept\nk: 1\n";
        let key: Vec<String> = ["judge", "openai", "max_tokens"].iter().map(|s| s.to_string()).collect();
        let written = patch_text(text, &key, "8").unwrap();
        assert_eq!(
            written,
            "judge:\n  openai:\n    model: m\n    extra_body:\n      note: |\n        line one\n        # heading kept\n    max_tokens: 8\nk: 1\n"
        );
        // A quoted key, a key spaced from its colon, or a JSON document is left to the parsed path.
        for odd in ["\"k\": 1\n", "k : 1\n", "{\"k\": 1}\n"] {
            assert_eq!(patch_text(odd, &["k".to_string()], "2"), None, "{odd:?}");
        }
    }

    /// A shorthand and a `--set` of its key (or of a key holding it) are refused whatever their
    /// order: `--set budget.max_usd=5 --max-usd 0.001` once ran with a $5 cap.
    #[test]
    fn a_shorthand_and_a_set_of_one_key_are_refused() {
        let args = |max_usd: Option<&str>, name: Option<&str>, set: &[&str]| OverrideArgs {
            set: set.iter().map(|s| Override::parse(s).unwrap()).collect(),
            max_usd: max_usd.map(str::to_owned),
            name: name.map(str::to_owned),
            ..Default::default()
        };
        let e = args(Some("0.001"), None, &["budget.max_usd=5"]).overrides().unwrap_err().to_string();
        assert_eq!(
            e,
            "--max-usd 0.001 and --set budget.max_usd=5: both set budget.max_usd, and neither may silently win; give one of them, or write the value into the --set"
        );
        let e = args(Some("0.001"), None, &["budget={max_comparisons: 50}"]).overrides().unwrap_err().to_string();
        assert!(e.contains("both set budget.max_usd (the --set replaces the whole of budget)"), "{e}");
        let e = args(None, Some("bbb"), &["k=3", "name=aaa"]).overrides().unwrap_err().to_string();
        assert!(e.starts_with("--name bbb and --set name=aaa: both set name"), "{e}");
        // Other keys go together: shorthands first, then the --set in their order.
        let ok = args(Some("0.5"), None, &["budget.max_comparisons=8", "k=2"]).overrides().unwrap();
        let keys: Vec<String> = ok.iter().map(Override::dotted).collect();
        assert_eq!(keys, ["budget.max_usd", "budget.max_comparisons", "k"]);
    }

    #[test]
    fn overrides_parse_values_as_yaml_and_name_bad_arguments() {
        let o = Override::parse("budget.max_usd=0.5").unwrap();
        assert_eq!((o.dotted(), o.value.clone()), ("budget.max_usd".to_string(), serde_json::json!(0.5)));
        let o = Override::parse("judge.mock={mode: deterministic, pos_bias: 1}").unwrap();
        assert_eq!(o.value, serde_json::json!({"mode": "deterministic", "pos_bias": 1}));
        assert!(Override::parse("budget.max_usd").unwrap_err().contains("--set budget.max_usd: expected KEY=VALUE"));
        assert!(Override::parse("budget..max_usd=1").unwrap_err().contains("empty part"));
        assert_eq!(
            Override::parse("judges[0].mock.seed=3").unwrap_err(),
            "--set judges[0].mock.seed=3: a list entry is named by its index as a dotted part: write `judges.0.mock.seed` (`[` at 7 of the key)"
        );
        let mut doc = serde_json::json!({"name": "x", "k": 3});
        Override::parse("budget.max_usd=2").unwrap().apply(&mut doc).unwrap();
        assert_eq!(doc["budget"]["max_usd"], serde_json::json!(2));
        // A limit on an unlimited budget starts one.
        let mut unlimited = serde_json::json!({"budget": "unlimited"});
        Override::parse("budget.max_comparisons=5").unwrap().apply(&mut unlimited).unwrap();
        assert_eq!(unlimited["budget"], serde_json::json!({"max_comparisons": 5}));
        let e = Override::parse("k.deep=1").unwrap().apply(&mut doc).unwrap_err();
        assert_eq!(e, "k is not a mapping in the config, so it has no key \"deep\"");
        // A panel's judge by its index.
        let mut doc = serde_json::json!({"judges": [{"name": "a", "mock": {"seed": 1}}, {"name": "b", "mock": {}}]});
        Override::parse("judges.1.mock.seed=3").unwrap().apply(&mut doc).unwrap();
        assert_eq!(doc["judges"][1]["mock"]["seed"], serde_json::json!(3));
        assert_eq!(doc["judges"][0]["mock"]["seed"], serde_json::json!(1));
        let e = Override::parse("judges.2.mock.seed=3").unwrap().apply(&mut doc).unwrap_err();
        assert_eq!(e, "judges is a list of 2 entries: its entries are named by their index, 0 to 1, not \"2\"");
        let e = Override::parse("judges.cheap.mock.seed=3").unwrap().apply(&mut doc).unwrap_err();
        assert!(e.contains("not \"cheap\""), "{e}");
    }

    #[test]
    fn a_key_given_on_the_command_line_is_never_echoed() {
        let key = "sk-proj-PASTEDSECRET123456789";
        for arg in [
            format!("judge.openai.api_key_env={key}"),
            format!("judges.1.openai.api_key_env=gsk_{}", &key[8..]),
            format!("judge.openai={{model: m, base_url: 'http://h/v1', api_key_env: {key}}}"),
            // A key of no known shape under a credential's name.
            "judge.openai.api_key_env=0123456789abcdef0123456789abcdef".to_string(),
        ] {
            let o = Override::parse(&arg).unwrap();
            assert!(o.redacted, "{arg}");
            assert!(!o.given.contains("PASTEDSECRET") && !o.given.contains("0123456789abcdef"), "{}", o.given);
            assert!(o.given.contains("[redacted]"), "{}", o.given);
        }
        // A key anywhere else is refused, unshown (it would be copied into config.yaml).
        for arg in [format!("judge.openai.api_key={key}"), format!("judge.openai.model={key}"), format!("k={key}")] {
            let e = Override::parse(&arg).unwrap_err();
            assert!(!e.contains("PASTEDSECRET") && e.contains("looks like an API key (not shown)"), "{e}");
        }
        // Malformed: no `=`.
        let e = Override::parse(key).unwrap_err();
        assert_eq!(e, "--set [redacted]: expected KEY=VALUE, e.g. budget.max_usd=0.5");
        // A variable's name is shown; so is every other value.
        for arg in ["judge.openai.api_key_env=OPENAI_API_KEY", "judge.openai.model=gpt-4o-mini-2024-07-18", "k=3"] {
            let o = Override::parse(arg).unwrap();
            assert_eq!((o.given.as_str(), o.redacted), (format!("--set {arg}").as_str(), false));
        }
    }

    #[test]
    fn a_judge_override_names_the_form_the_config_takes() {
        let panel = serde_json::json!({"judges": [{"name": "a", "mock": {}}, {"name": "b", "openai": {}}]});
        let single = serde_json::json!({"judge": {"openai": {"model": "m"}}});
        let msg = |doc: &serde_json::Value, arg: &str| match check_judge_kind(doc, &Override::parse(arg).unwrap()) {
            Err(ConfigError::Set { msg, .. }) => msg,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            msg(&panel, "judge.openai.max_invalid_rate=1"),
            "this config is a judge panel (`judges:`, 2 judges): set a member's field with `--set judges.N.openai.max_invalid_rate` (N = 0 to 1, in the order of `judges:`)"
        );
        let base_url = Override::shorthand("--base-url", "judge.openai.base_url", "http://127.0.0.1:8088/v1").unwrap();
        match check_judge_kind(&panel, &base_url) {
            Err(ConfigError::Set { given, msg }) => assert_eq!(
                format!("{given}: {msg}"),
                "--base-url http://127.0.0.1:8088/v1: this config is a judge panel (`judges:`, 2 judges); --base-url sets judge.openai.base_url, of a config of one judge only: set a member's field with `--set judges.N.openai.base_url` (N = 0 to 1, in the order of `judges:`)"
            ),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            msg(&single, "judges.0.openai.max_invalid_rate=1"),
            "this config has one judge (`judge:`), not a panel: set its field with `--set judge.openai.max_invalid_rate`"
        );
        // A key of no judge kind, or of another kind, is not rewritten into one that is refused
        // in turn (`judge.concurrency`, `judge.mock.…` of an openai judge).
        assert_eq!(
            msg(&single, "judges.0.concurrency=2"),
            "this config has one judge (`judge:`), not a panel: set its settings with `--set judge.openai.FIELD` (docs/config.md lists them)"
        );
        assert_eq!(
            msg(&single, "judges.0.mock.seed=2"),
            "this config has one judge (`judge:`), not a panel: its judge is `openai`, not `mock`: set its settings with `--set judge.openai.FIELD`"
        );
        assert_eq!(
            msg(&single, "judges.0=x"),
            "this config has one judge (`judge:`), not a panel: set its settings with `--set judge.openai.FIELD` (docs/config.md lists them)"
        );
        assert!(check_judge_kind(&panel, &Override::parse("judges.1.openai.model=x").unwrap()).is_ok());
        assert!(check_judge_kind(&single, &Override::parse("judge.openai.model=x").unwrap()).is_ok());
        // A list of one runs as the single judge: `judge.…` (and `--base-url`) sets its block.
        let one = serde_json::json!({"judges": [{"name": "a", "openai": {}}]});
        let listed = in_list_of_one(&one, &base_url);
        assert_eq!(
            (listed.key.join("."), listed.given.as_str()),
            ("judges.0.openai.base_url".into(), base_url.given.as_str())
        );
        assert!(check_judge_kind(&one, &listed).is_ok());
        assert_eq!(in_list_of_one(&panel, &base_url), base_url);
        assert_eq!(in_list_of_one(&single, &base_url), base_url);
        // Another kind, a panel member's field, or no field of a judge at all.
        assert_eq!(
            msg(&single, "judge.mock.seed=1"),
            "this config's judge is `openai`; judge.mock.… settings apply only to a judge of that kind"
        );
        // --base-url is named where it is the setting: on a judge of another kind.
        let mock = serde_json::json!({"judge": {"mock": {"seed": 1}}});
        assert_eq!(
            msg(&mock, "judge.openai.base_url=http://h/v1"),
            "this config's judge is `mock`; judge.openai.… settings (and --base-url, which sets judge.openai.base_url) apply only to a judge of that kind"
        );
        assert_eq!(
            msg(&single, "judge.name=x"),
            "`name` is a field of a panel member (`judges:`), not of a single judge; `judge:` holds one key, the judge's kind (one of mock, openai, synthetic, replay; here `openai`): set its settings with `--set judge.openai.FIELD`"
        );
        assert_eq!(
            msg(&single, "judge.foo=1"),
            "`judge:` holds one key, the judge's kind (one of mock, openai, synthetic, replay; here `openai`): set its settings with `--set judge.openai.FIELD`"
        );
    }

    #[test]
    fn the_text_is_patched_in_place_and_keeps_every_other_value_as_written() {
        let text = "name: x\npool:\n  file: p.jsonl\n  id: 001   # kept\njudge:\n  mock:\n    seed: 7\nbudget: {max_comparisons: 4}\n";
        let k = |s: &str| s.split('.').map(String::from).collect::<Vec<_>>();
        assert_eq!(
            patch_text(text, &k("judge.mock.seed"), "9").unwrap(),
            "name: x\npool:\n  file: p.jsonl\n  id: 001   # kept\njudge:\n  mock:\n    seed: 9\nbudget: {max_comparisons: 4}\n"
        );
        assert_eq!(
            patch_text(text, &k("judge.mock.pos_bias"), "1").unwrap(),
            "name: x\npool:\n  file: p.jsonl\n  id: 001   # kept\njudge:\n  mock:\n    seed: 7\n    pos_bias: 1\nbudget: {max_comparisons: 4}\n"
        );
        assert!(patch_text(text, &k("certify.epsilon"), "0.1").unwrap().ends_with("certify:\n  epsilon: 0.1\n"));
        assert_eq!(patch_text(text, &k("budget.max_usd"), "1"), None, "a flow mapping on the way");
        assert!(
            patch_text(text, &k("judge"), "{replay: {file: r}}")
                .unwrap()
                .contains("judge: {replay: {file: r}}\nbudget:")
        );
        assert_eq!(yaml_value("@cf/meta/llama"), "\"@cf/meta/llama\"");
        assert_eq!(yaml_value("[INST] judge"), "\"[INST] judge\"");
        assert_eq!(yaml_value("[1, 2]"), "[1, 2]");
        assert_eq!(
            (yaml_value("yes"), yaml_value(""), yaml_value("a #b")),
            ("yes".into(), "\"\"".into(), "\"a #b\"".into())
        );
    }

    /// A whole block set with `--set` names a repeated or unknown key inside it by its path, as a
    /// file does by its line (it said "expected a mapping …, found a mapping", or the bare key).
    #[test]
    fn a_whole_block_names_its_repeated_and_unknown_keys() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("configs/mock.yaml");
        for (arg, msg) in [
            ("judges.1={name: a, mock: {seed: 1, seed: 2}}", "judges[1].mock.seed: duplicate mapping key: seed"),
            ("judges.1={name: a, name: b, mock: {}}", "judges[1].name: duplicate mapping key: name"),
            ("judge={mock: {seed: 1, seed: 2}}", "judge.mock.seed: duplicate mapping key: seed"),
            ("acquisition={seed: 1, seed: 2}", "acquisition.seed: duplicate mapping key: seed"),
            (
                "model={covariates: [{name: a}, {name: b, name: c}]}",
                "model.covariates[1].name: duplicate mapping key: name",
            ),
        ] {
            // A config error (exit code 1) when the document is read, as other faults of a value.
            let e = read_document_with::<serde_json::Value>(&path, &[Override::parse(arg).unwrap()]).unwrap_err();
            assert_eq!(e.to_string(), format!("--set {arg}: {msg}"));
        }
        assert_eq!(
            Override::parse("\"k\"=3").unwrap_err(),
            "--set \"k\"=3: a key is written without quotes (`k=3`, `budget.max_usd=0.5`); quote the value instead when it needs quotes"
        );
        // Text that is not YAML stays text (a prompt may start with a bracket).
        assert_eq!(Override::parse("a=[INST] {x").unwrap().value, serde_json::json!("[INST] {x"));
        for (arg, msg) in [
            ("certify={eps: 0.1}", "certify.eps: unknown field `eps`, expected one of epsilon"),
            (
                "model={covariates: [{name: words, transform: zz}]}",
                "model.covariates[0].transform: unknown value `zz`, expected one of zscore, raw, log",
            ),
            ("judge={mock: {seed: 1, sed: 2}}", "judge.mock.sed: unknown field `sed`"),
        ] {
            let e = read_document_with::<crate::config::run::RawConfig>(&path, &[Override::parse(arg).unwrap()])
                .unwrap_err()
                .to_string();
            assert!(e.starts_with(&format!("--set {arg}: {msg}")), "{e}");
        }
        // A fault inside a list the override wrote is the override's, not a line of the file's
        // (it said `configs/panel.yaml: line 14 column 61 (key judges[1].mock.seed)`).
        let panel = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("configs/panel.yaml");
        for (arg, msg) in [
            (
                "judges=[{name: a, mock: {seed: 1}}, {name: b, mock: {seed: [1]}}]",
                "judges[1].mock.seed: expected a whole number ≥ 0, found a list",
            ),
            ("judges=[{name: a, mock: {seed: 1}}, [{name: b}]]", "judges[1]: expected a mapping of keys"),
            // A list entry set whole: the key inside it, not the first key of the wrong value.
            ("judges.1={name: a, mock: {seed: [1]}}", "judges[1].mock.seed: expected a whole number ≥ 0, found a list"),
            ("judges.1.mock={seed: {a: 1}}", "judges[1].mock.seed: expected a whole number ≥ 0, found a mapping"),
            // A count read by its own visitor: the parser points at its key, not its value.
            (
                "judges.1.mock={temperature: 0.2, seed: [1]}",
                "judges[1].mock.seed: expected a whole number ≥ 0, found a list",
            ),
        ] {
            let e = read_document_with::<crate::config::run::RawConfig>(&panel, &[Override::parse(arg).unwrap()])
                .unwrap_err()
                .to_string();
            assert!(e.starts_with(&format!("--set {arg}: {msg}")), "{e}");
        }
        // A text value that is not YAML is text wherever it is set (it said "found a list").
        let v: serde_json::Value = read_document_with(&path, &[Override::parse("name=[INST] judge").unwrap()]).unwrap();
        assert_eq!(v["name"], "[INST] judge");
    }

    #[test]
    fn a_list_entry_named_by_other_than_its_index_is_said_before_the_text_is_patched() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("panel.yaml");
        std::fs::write(&path, "judges:\n  - name: a\n    mock:\n      seed: 1\n  - name: b\n    mock: {}\n").unwrap();
        for (key, bad) in [("judges.x.mock.seed=1", "x"), ("judges.-1.mock.seed=1", "-1")] {
            let e = read_document_with::<serde_json::Value>(&path, &[Override::parse(key).unwrap()]).unwrap_err();
            assert_eq!(
                e.to_string(),
                format!(
                    "--set {key}: judges is a list of 2 entries: its entries are named by their index, 0 to 1, not {bad:?}"
                )
            );
        }
        let v: serde_json::Value =
            read_document_with(&path, &[Override::parse("judges.0.mock.seed=7").unwrap()]).unwrap();
        assert_eq!(v["judges"][0]["mock"]["seed"], 7);
    }

    #[test]
    fn a_field_missing_in_a_block_an_override_wrote_is_the_overrides_fault() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.yaml");
        std::fs::write(&path, "name: x\npool: {file: p.jsonl}\nk: 1\njudge:\n  mock:\n    seed: 1\n").unwrap();
        let e = read_document_with::<crate::config::run::RawConfig>(
            &path,
            &[Override::parse("judge={openai: {model: x}}").unwrap()],
        )
        .unwrap_err();
        assert_eq!(e.to_string(), "--set judge={openai: {model: x}}: missing field `base_url` in `judge.openai`");
        // A key inside the value set is named; the override's own key is not said twice.
        std::fs::write(&path, "name: x\npool: {file: p.jsonl}\nk: 1\njudge:\n  mock:\n    seed: 1\nacquisition: {}\n")
            .unwrap();
        let e = |arg: &str| {
            read_document_with::<crate::config::run::RawConfig>(&path, &[Override::parse(arg).unwrap()])
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            e("acquisition={concurrency: -3}"),
            "--set acquisition={concurrency: -3}: acquisition.concurrency: expected a whole number ≥ 1, found \"-3\""
        );
        assert_eq!(
            e("acquisition.concurrency=-3"),
            "--set acquisition.concurrency=-3: expected a whole number ≥ 1, found \"-3\""
        );
    }

    #[test]
    fn a_judge_section_set_on_a_panel_file_is_the_overrides_fault() {
        let e = ConfigError::Invalid {
            path: "panel.yaml".into(),
            line: None,
            key: "judges".into(),
            msg: "give either `judge` (one judge) or `judges` (a panel), not both".into(),
        };
        let o = Override::parse("judge.mock.seed=1").unwrap();
        assert_eq!(
            name_the_override(e, &[Override::parse("name=x").unwrap(), o]).to_string(),
            "--set judge.mock.seed=1: judges: give either `judge` (one judge) or `judges` (a panel), not both"
        );
        // A fault of a block two overrides set inside: both are named, not the last alone.
        let e = ConfigError::Invalid {
            path: "run.yaml".into(),
            line: None,
            key: "judge.replay".into(),
            msg: "rec_other.jsonl: has no verdict for pool \"p\"".into(),
        };
        let set = [
            Override::parse("judge.replay.file=rec_other.jsonl").unwrap(),
            Override::parse("judge.replay.missing=unavailable").unwrap(),
        ];
        assert_eq!(
            name_the_override(e, &set).to_string(),
            "--set judge.replay.file=rec_other.jsonl, --set judge.replay.missing=unavailable: judge.replay: rec_other.jsonl: has no verdict for pool \"p\""
        );
    }
}

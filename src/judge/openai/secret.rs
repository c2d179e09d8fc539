//! A redacting secret type for API keys.
//!
//! [`Secret`] holds the key read from the environment variable a config names. It has no
//! `Display`, no `Serialize`, and its `Debug` prints `Secret([redacted])`, so the key cannot
//! reach result files, logs or error messages by formatting. Text that came from outside
//! (server error bodies, replies) is passed through [`Secret::redact`] before it is stored or
//! shown, in case a server echoes the key back.

use std::fmt;

/// Placeholder written wherever a secret would have appeared.
pub const REDACTED: &str = "[redacted]";

/// An API key (or any secret string). Never printed, never serialised.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wrap a secret value.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// Read the secret from environment variable `var`; `None` when unset or empty (after
    /// trimming whitespace, which is also removed from the returned key).
    pub fn from_env(var: &str) -> Option<Self> {
        std::env::var(var).ok().map(|v| v.trim().to_owned()).filter(|v| !v.is_empty()).map(Self)
    }

    /// The secret value, for the one place that must send it (the HTTP Authorization header).
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Length of the secret in bytes (safe to show).
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the secret is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// `text` with every occurrence of the secret replaced by [`REDACTED`]: the whole key, and
    /// any stretch of [`MIN_FRAGMENT`] bytes of it or more (a server may echo the key without
    /// its type prefix, cut short, upper- or lower-cased, or inside JSON with `/` written `\/`,
    /// `%2F` or `\u002f`).
    /// Secrets shorter than 4 bytes are not searched for (they would redact ordinary words).
    pub fn redact(&self, text: &str) -> String {
        self.redact_as(text, REDACTED)
    }

    /// [`Secret::redact`] with another `replacement` (a YAML file needs one that reads as a
    /// plain string: `[redacted]` would be a list there). The key's hex and base64 forms are
    /// redacted too, as a server may echo the header it received encoded.
    pub fn redact_as(&self, text: &str, replacement: &str) -> String {
        redact_secrets(text, &[self.0.as_str()], replacement)
    }
}

/// `text` as a run folder stores it: the API key (`key`) and the values of credential-named
/// environment variables ([`env_secrets`]) written `redacted-api-key` ([`redact_secrets`]).
pub fn for_disk(text: &str, key: Option<&Secret>) -> String {
    redact_credentials(text, key, "redacted-api-key")
}

/// The credentials a judge's texts are kept free of: its API key (`key`) and the values of
/// credential-named environment variables ([`env_secrets`]). Not to be shown or stored.
pub fn credentials(key: Option<&Secret>) -> Vec<String> {
    key.iter().map(|k| k.expose().to_owned()).chain(env_secrets()).collect()
}

/// `text` with the [`credentials`] of `key` replaced by `replacement` ([`redact_secrets`]).
pub fn redact_credentials(text: &str, key: Option<&Secret>, replacement: &str) -> String {
    // And any token that starts like a provider's key (`sk-…` in an extra_body; hunt 56).
    let all = [credentials(key), keys_in(text)].concat();
    redact_secrets(text, &all.iter().map(String::as_str).collect::<Vec<_>>(), replacement)
}

/// `text` with every stretch of each of `secrets` that [`Secret::redact`] finds (whole, a
/// [`MIN_FRAGMENT`]-byte piece or more, either case, escaped, hex or base64) replaced by
/// `replacement`, the stretches of all of them found in `text` as given and merged where they
/// overlap or touch: no part of one secret survives because another, replaced first, cut it
/// (two tokens sharing bytes, a key and a token beside it). Secrets shorter than 4 bytes are not
/// searched for.
pub fn redact_secrets(text: &str, secrets: &[&str], replacement: &str) -> String {
    let mut ranges = Vec::new();
    for s in secrets.iter().map(|s| s.as_bytes()).filter(|s| s.len() >= 4) {
        ranges.extend(key_ranges(s, s.len().min(MIN_FRAGMENT), text));
        for form in encoded_forms(s) {
            ranges.extend(key_ranges(&form, form.len().min(MIN_ENCODED_FRAGMENT), text));
        }
    }
    if ranges.is_empty() {
        return text.to_owned();
    }
    ranges.sort_unstable();
    let mut merged: Vec<(usize, usize)> = Vec::new();
    for (a, b) in ranges {
        match merged.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => merged.push((a, b)),
        }
    }
    let (mut out, mut last) = (String::with_capacity(text.len()), 0);
    for (a, b) in merged {
        out.push_str(&text[last..a]);
        out.push_str(replacement);
        last = b;
    }
    out.push_str(&text[last..]);
    out
}

/// The shortest stretch of an encoded form of the key that is searched for ([`encoded_forms`]):
/// 16 characters of base64 hold 12 bytes of the key, as [`MIN_FRAGMENT`] does.
const MIN_ENCODED_FRAGMENT: usize = 16;

/// The key written in hex and in base64 (standard and URL-safe alphabets), the base64 forms
/// once for each of the three alignments the key can have inside an encoded header (`Bearer
/// <key>` encodes its key at another offset than the key alone), cut to the characters the
/// key's bytes alone decide.
fn encoded_forms(key: &[u8]) -> Vec<Vec<u8>> {
    use base64::Engine;
    let mut forms = vec![hex::encode(key).into_bytes()];
    for skip in 0..3.min(key.len()) {
        let rest = &key[skip..];
        let whole = rest.len() / 3 * 4;
        for engine in
            [&base64::engine::general_purpose::STANDARD_NO_PAD, &base64::engine::general_purpose::URL_SAFE_NO_PAD]
        {
            let mut e = engine.encode(rest).into_bytes();
            e.truncate(whole);
            if e.len() >= 4 && !forms.contains(&e) {
                forms.push(e);
            }
        }
    }
    forms
}

/// Where in `text` a stretch of `key` of at least `min` bytes stands (letters in either case, any
/// byte also `%`-escaped, punctuation also JSON-escaped: [`stretch`]), as byte ranges on char
/// boundaries, the longest from each start, not overlapping one another.
fn key_ranges(key: &[u8], min: usize, text: &str) -> Vec<(usize, usize)> {
    // Where in the key each byte occurs: a stretch starts at a byte of the key or an escape.
    let mut at: Vec<Vec<usize>> = vec![Vec::new(); 256];
    // Either case: a server may echo the key upper- or lower-cased.
    for (j, &c) in key.iter().enumerate() {
        at[usize::from(c.to_ascii_lowercase())].push(j);
        if c.is_ascii_alphabetic() {
            at[usize::from(c.to_ascii_uppercase())].push(j);
        }
    }
    let escapes: Vec<usize> = (0..key.len()).filter(|&j| !key[j].is_ascii_alphanumeric()).collect();
    // `%XX` may stand for any byte of the key (a URL path writes `a` as `%61` if it likes).
    let every: Vec<usize> = (0..key.len()).collect();
    let t = text.as_bytes();
    let (mut out, mut i) = (Vec::new(), 0);
    while i < t.len() {
        let escaped: &[usize] = match t[i] {
            b'%' => &every,
            b'\\' => &escapes,
            _ => &[],
        };
        let candidates = at[usize::from(t[i])].iter().chain(escaped);
        let end = candidates
            .filter_map(|&j| {
                let (n, end) = stretch(key, j, t, i);
                (n >= min && text.is_char_boundary(end)).then_some(end)
            })
            .max();
        match end {
            Some(end) if text.is_char_boundary(i) => {
                out.push((i, end));
                i = end;
            }
            _ => i += 1,
        }
    }
    out
}

/// The shortest stretch of a key that is searched for in text from outside, bytes (a key
/// shorter than this is searched for whole).
pub const MIN_FRAGMENT: usize = 12;

/// How many bytes of `key` from `j` on match `t` from `i` on (letters in either case), and
/// where the match ends in `t`. Any byte may be written `%XX` (URL: `%2F`, `%61`); a byte that
/// is not a letter or digit also `\/` or `\u002F` (JSON); hex in either case.
fn stretch(key: &[u8], j: usize, t: &[u8], i: usize) -> (usize, usize) {
    let (mut k, mut p) = (j, i);
    while k < key.len() && p < t.len() {
        let c = key[k];
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let hex = [HEX[usize::from(c >> 4)], HEX[usize::from(c & 15)]];
        let rest = &t[p..];
        let step = if rest[0].eq_ignore_ascii_case(&c) {
            1
        } else if rest.len() >= 3 && rest[0] == b'%' && rest[1..3].eq_ignore_ascii_case(&hex) {
            3
        } else if c.is_ascii_alphanumeric() {
            0
        } else if rest.len() >= 2 && rest[0] == b'\\' && rest[1] == c {
            2
        } else if rest.len() >= 6 && rest[..4].eq_ignore_ascii_case(b"\\u00") && rest[4..6].eq_ignore_ascii_case(&hex) {
            6
        } else {
            0
        };
        if step == 0 {
            break;
        }
        (k, p) = (k + 1, p + step);
    }
    (k - j, p)
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Secret({REDACTED})")
    }
}

/// Redact `text` with an optional secret (identity when there is none).
pub fn redact_opt(secret: Option<&Secret>, text: &str) -> String {
    match secret {
        Some(s) => s.redact(text),
        None => text.to_owned(),
    }
}

/// Query parameters whose values are shown: known not to be secrets (Azure's `api-version`, …).
/// Every other value is redacted.
const PUBLIC_PARAMS: [&str; 5] = ["api-version", "api_version", "version", "region", "deployment"];

/// What is wrong with a `base_url` the client could not use as written: a `#fragment` (never
/// sent; whatever it holds would be shown), or credentials the tool redacted when it copied the
/// config into a run folder (`***`).
pub fn base_url_problem(url: &str) -> Option<String> {
    if url.contains("***") {
        return Some(
            "holds `***`: its credentials were redacted when the config was copied into a run folder; give the real base_url (the original config, or an override on the command line)".into(),
        );
    }
    let u = reqwest::Url::parse(url).ok()?;
    u.fragment().map(|_| "has a #fragment, which is never sent to the server; remove it".into())
}

/// How requests reach a `base_url` with credentials or a query: the URL async-openai builds on
/// (no userinfo, query or fragment), the query every request carries, and HTTP Basic
/// credentials from the userinfo. Not `Debug`: it holds secrets.
#[derive(Clone, Default)]
pub struct RequestTarget {
    /// `scheme://host[:port]/path`, no trailing `/`.
    pub base: String,
    /// The query of `base_url`, appended to every request (`None`: none).
    pub query: Option<String>,
    /// User and password of the userinfo, percent-decoded, sent as HTTP Basic.
    pub basic: Option<(String, Option<String>)>,
}

impl RequestTarget {
    /// Split `url` (a checked `base_url`); a URL that does not parse is kept whole.
    pub fn of(url: &str) -> Self {
        let Ok(mut u) = reqwest::Url::parse(url) else { return Self { base: url.to_owned(), ..Self::default() } };
        let basic = (!u.username().is_empty() || u.password().is_some())
            .then(|| (percent_decode(u.username()), u.password().map(percent_decode)));
        let query = u.query().map(str::to_owned);
        let _ = u.set_username("");
        let _ = u.set_password(None);
        u.set_query(None);
        u.set_fragment(None);
        Self { base: u.as_str().trim_end_matches('/').to_owned(), query, basic }
    }

    /// `{base}{path}` with the query.
    pub fn url(&self, path: &str) -> String {
        match &self.query {
            Some(q) => format!("{}{path}?{q}", self.base),
            None => format!("{}{path}", self.base),
        }
    }
}

/// `base_url` as it may be shown or stored: credentials in the userinfo (`user:pass@`) and the
/// values of query parameters (all but a few known to be public, such as `api-version`)
/// become `***`. A URL with neither is returned unchanged (so cache keys built from it stay
/// what they were).
pub fn redact_url(url: &str) -> String {
    let secrets = url_secrets(url);
    if secrets.is_empty() {
        return url.to_owned();
    }
    match reqwest::Url::parse(url) {
        Ok(mut u) => {
            if !u.username().is_empty() || u.password().is_some() {
                let _ = u.set_password(None);
                let _ = u.set_username("***");
            }
            if u.query().is_some() {
                let pairs: Vec<(String, String)> = u
                    .query_pairs()
                    .map(|(k, v)| {
                        let v = if secret_param(&k) { "***".to_owned() } else { v.into_owned() };
                        (k.into_owned(), v)
                    })
                    .collect();
                u.query_pairs_mut().clear().extend_pairs(pairs);
            }
            // A secret of the userinfo or query written into the path too (a gateway's token in
            // both places) is not shown there either.
            let path = redact_all(u.path(), &secrets);
            if path != u.path() {
                u.set_path(&path);
            }
            let shown = u.to_string();
            // Url adds a `/` to an empty path; keep the form as written.
            if !url.ends_with('/') && shown.ends_with('/') && u.path() == "/" {
                shown[..shown.len() - 1].to_owned()
            } else {
                shown
            }
        }
        Err(_) => redact_all(url, &secrets),
    }
}

/// The secrets inside `base_url`: the userinfo's user and password, and the values of query
/// parameters not known to be public, each as written and percent-decoded (to redact them from any
/// text, e.g. an HTTP library's error that repeats the URL). Empty for a URL without any.
pub fn url_secrets(url: &str) -> Vec<String> {
    let mut out = Vec::new();
    let Ok(u) = reqwest::Url::parse(url) else {
        // Not a URL the client could use (a bad port, no scheme); still, whatever sits between
        // `//` and `@` is userinfo, and the query after `?` holds its parameters.
        if let Some(rest) = url.split_once("//").map(|(_, r)| r)
            && let Some((info, _)) = rest.split_once('@')
            && !info.contains('/')
        {
            out.extend(info.split(':').filter(|p| !p.is_empty()).map(str::to_owned));
        }
        // The query after `?` and a fragment after `#` (`#access_token=…`, as some gateways write).
        for query in url.split(['?', '#']).skip(1) {
            for (k, v) in query.split('&').filter_map(|p| p.split_once('=')) {
                if secret_param(&percent_decode(k)) && !v.is_empty() {
                    out.push(v.to_owned());
                    out.push(percent_decode(v));
                }
            }
        }
        return out;
    };
    let decode = |s: &str| percent_decode(s);
    for raw in [u.username(), u.password().unwrap_or("")] {
        if !raw.is_empty() {
            out.push(raw.to_owned());
            out.push(decode(raw));
        }
    }
    if let Some(q) = u.query() {
        for part in q.split('&') {
            if let Some((k, v)) = part.split_once('=')
                && secret_param(&decode(k))
                && !v.is_empty()
            {
                out.push(v.to_owned());
                out.push(decode(v));
            }
        }
    }
    out.sort();
    out.dedup();
    // Longest first, so a secret that contains another is replaced whole.
    out.sort_by_key(|s| std::cmp::Reverse(s.len()));
    out
}

fn secret_param(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    !PUBLIC_PARAMS.contains(&n.as_str())
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        if b[i] == b'%'
            && i + 2 < b.len()
            && let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2]))
        {
            let v = (h * 16 + l) as u8;
            out.push(v);
            i += 3;
        } else {
            out.push(if b[i] == b'+' { b' ' } else { b[i] });
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `text` with each of `secrets` (at least 3 bytes long) replaced by `***`.
pub fn redact_all(text: &str, secrets: &[String]) -> String {
    replace_each(text, secrets, 3, "***")
}

/// `text` with each of `secrets` of at least `min_len` bytes replaced by `replacement`.
fn replace_each(text: &str, secrets: &[String], min_len: usize, replacement: &str) -> String {
    let mut t = text.to_owned();
    for s in secrets.iter().filter(|s| s.len() >= min_len.max(1)) {
        if t.contains(s.as_str()) {
            t = t.replace(s.as_str(), replacement);
        }
    }
    t
}

/// `text` with the credentials of every URL in it redacted ([`redact_url`]): a command-line
/// argument that holds a `base_url`, shown in a message. A URL ends at white space, quotes,
/// brackets and commas, but not at the braces of an environment reference (`${GW_TOKEN}`).
pub fn redact_urls_in(text: &str) -> String {
    let mut tokens = Vec::new();
    let (mut start, mut in_var, mut prev) = (0, false, '\0');
    for (i, c) in text.char_indices() {
        if c == '{' && prev == '$' {
            in_var = true;
        } else if c == '}' && in_var {
            in_var = false;
        } else if c.is_whitespace() || "\"'{}[],".contains(c) {
            tokens.push(&text[start..i]);
            start = i + c.len_utf8();
        }
        prev = c;
    }
    tokens.push(&text[start..]);
    let mut secrets = Vec::new();
    for token in tokens {
        if let Some(at) = token.find("://") {
            // The URL starts at its scheme (`key=http://…`).
            let start = token[..at].rfind(|c: char| !c.is_ascii_alphanumeric()).map_or(0, |i| i + 1);
            secrets.extend(url_secrets(&token[start..]));
        }
    }
    redact_all(text, &secrets)
}

/// Prefixes of provider API keys (OpenAI, Anthropic, Groq, Hugging Face, xAI, Google, Replicate,
/// Perplexity, GitHub): a token that starts with one and is 20 characters or longer is taken for
/// a key wherever it appears.
pub const KEY_PREFIXES: [&str; 15] = [
    "sk-",
    "sk_",
    "gsk_",
    "hf_",
    "xai-",
    "AIza",
    "r8_",
    "pplx-",
    "ghp_",
    "github_pat_",
    "nvapi-",
    "glpat-",
    "xoxb-",
    "xoxp-",
    // A JSON Web Token (a gateway's bearer token): base64url of `{"`, then `.`-separated parts.
    "eyJ",
];

/// The values of a command-line override (`--set key=value`, `value` read as YAML) that may be
/// secrets, to be kept out of every message that echoes the override: a text under a key named
/// like a credential (`api_key_env`, `api_key`, `token`, `secret`, `password`, `authorization`)
/// that is not the name of an environment variable (so a key pasted into `api_key_env` is not
/// shown, while `OPENAI_API_KEY` is; docs/live.md), and anywhere a token that starts like a provider's key
/// ([`KEY_PREFIXES`], 20 characters or more).
pub fn override_secrets(key: &[String], value: &serde_json::Value) -> Vec<String> {
    fn credential(name: &str) -> bool {
        let n = name.to_ascii_lowercase();
        ["key", "token", "secret", "password", "authorization"].iter().any(|w| n.contains(w))
    }
    fn walk(name: &str, v: &serde_json::Value, out: &mut Vec<String>) {
        match v {
            serde_json::Value::String(s) => {
                let s = s.trim();
                if credential(name) && !s.is_empty() && !looks_like_var_name(s) {
                    out.push(s.to_string());
                }
                out.extend(keys_in(s));
            }
            serde_json::Value::Array(a) => a.iter().for_each(|x| walk(name, x, out)),
            serde_json::Value::Object(m) => m.iter().for_each(|(k, x)| walk(k, x, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(key.last().map_or("", String::as_str), value, &mut out);
    out
}

/// Whether `var` reads as an environment variable's name (`OPENAI_API_KEY`: upper-case words
/// joined by `_`, few digits), so messages may show it; anything else may be a pasted key.
pub fn looks_like_var_name(var: &str) -> bool {
    let words: Vec<&str> = var.split('_').collect();
    let upper_words = words.len() >= 2
        && words.iter().all(|w| !w.is_empty() && w.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit()))
        && var.starts_with(|c: char| c.is_ascii_uppercase());
    let digits = var.chars().filter(char::is_ascii_digit).count();
    upper_words && var.len() <= 48 && digits * 4 < var.len()
}

/// The tokens of `text` that start like a provider's API key ([`KEY_PREFIXES`]). A token ends at
/// white space, quotes, brackets and the separators of a URL (`@`, `/`, `?`, `&`, `#`), which
/// no provider's key holds: a key in `http://u:KEY@host` is the key, not `KEY@host`.
pub fn keys_in(text: &str) -> Vec<String> {
    // A key right after a flag's dashes or a separator (`--sk-proj-…`, `_sk-…`) is the key.
    text.split(|c: char| c.is_whitespace() || "\"'{}[],=:@/?&#;".contains(c))
        .map(|t| t.trim_start_matches(['-', '_', '.']))
        .filter(|t| t.chars().count() >= 20 && KEY_PREFIXES.iter().any(|p| t.starts_with(p)))
        .map(str::to_string)
        .collect()
}

/// The values of environment variables named like a credential (`…KEY…`, `…TOKEN…`,
/// `…SECRET…`, `…PASSWORD…`), 8 bytes or longer: an argument that holds one pasted in (a key in a
/// base_url's path) does not echo it, whichever variable a judge names.
pub fn env_secrets() -> Vec<String> {
    std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .filter(|(k, v)| {
            let k = k.to_ascii_uppercase();
            ["KEY", "TOKEN", "SECRET", "PASSWORD"].iter().any(|w| k.contains(w)) && v.trim().len() >= 8
        })
        .map(|(_, v)| v.trim().to_owned())
        .collect()
}

/// `text` as it may be printed: tokens that start like a provider's key ([`keys_in`]) and the
/// values of credential variables ([`env_secrets`]) replaced by [`REDACTED`]. Every error and
/// warning line passes through it on its way to stderr, so a key that reached a message by any
/// path (a parser quoting a value, a server echoing a request) is not shown. (A URL's
/// credentials are redacted where the URL is shown, [`redact_url`].)
pub fn scrub(text: &str) -> String {
    let secrets = [keys_in(text), env_secrets(), env_tokens()].concat();
    if secrets.is_empty() { text.to_owned() } else { redact_each(text, &secrets) }
}

/// The first string in `doc` (a config read as YAML) that holds a token starting like a
/// provider's key or a credential variable's value, as its dotted key (`judge.openai.model`),
/// outside `base_url` and `extra_body` (a gateway's token sent in the request: both are
/// redacted wherever they are shown or stored) and `api_key_env` (where a pasted key is refused
/// with its own words, not shown). A key is
/// read from the variable `api_key_env` names; one written into another setting would be copied
/// into the run folder's config.yaml and printed by the dry run.
pub fn key_in_a_setting(doc: &serde_json::Value) -> Option<String> {
    fn walk(path: &str, v: &serde_json::Value, secrets: &[String]) -> Option<String> {
        match v {
            serde_json::Value::String(s) => {
                (!keys_in(s).is_empty() || secrets.iter().any(|k| s.contains(k.as_str()))).then(|| path.to_owned())
            }
            serde_json::Value::Array(a) => {
                a.iter().enumerate().find_map(|(i, x)| walk(&format!("{path}[{i}]"), x, secrets))
            }
            serde_json::Value::Object(m) => m
                .iter()
                .filter(|(k, _)| !matches!(k.as_str(), "base_url" | "api_key_env" | "extra_body"))
                .find_map(|(k, x)| walk(&if path.is_empty() { k.clone() } else { format!("{path}.{k}") }, x, secrets)),
            _ => None,
        }
    }
    walk("", doc, &[env_secrets(), env_tokens(), keys_named_in(doc)].concat())
}

/// The values of the environment variables that the `api_key_env` settings anywhere in `doc` (a
/// config read as YAML: a judge, a panel's judges, a gate's trusted judge) name, 8 bytes or
/// longer, whatever they are called and however they look (`token-abc123def456` in
/// `MYCORP_LLM`; hunt 57): the keys this config sends, kept out of settings and messages.
pub fn keys_named_in(doc: &serde_json::Value) -> Vec<String> {
    fn walk(v: &serde_json::Value, out: &mut Vec<String>) {
        match v {
            serde_json::Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
            serde_json::Value::Object(m) => {
                for (k, x) in m {
                    if k == "api_key_env"
                        && let Some(var) = x.as_str()
                        && let Ok(value) = std::env::var(var.trim())
                        && value.trim().len() >= 8
                    {
                        out.push(value.trim().to_owned());
                    }
                    walk(x, out);
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(doc, &mut out);
    out
}

/// The values of environment variables, whatever they are called, that read as a credential
/// (a key in `MYCORP_LLM`, which a judge's `api_key_env` may name; hunt 56): 24 characters or
/// more, one word of letters and digits with `-`, `_`, `.`, `+` or `~` (no path, list or URL).
/// Kept out of messages ([`scrub`]) and settings ([`key_in_a_setting`]); not searched for by the
/// piece as [`env_secrets`] are on disk (a host name is such a word).
pub fn env_tokens() -> Vec<String> {
    let token_like = |v: &str| {
        v.len() >= 24
            && v.chars().all(|c| c.is_ascii_alphanumeric() || "-_.+~".contains(c))
            && v.chars().any(|c| c.is_ascii_digit())
            && v.chars().any(|c| c.is_ascii_alphabetic())
    };
    std::env::vars_os()
        .filter_map(|(_, v)| v.into_string().ok())
        .map(|v| v.trim().to_owned())
        .filter(|v| token_like(v))
        .collect()
}

/// `text` with each of `secrets` replaced by [`REDACTED`].
pub fn redact_each(text: &str, secrets: &[String]) -> String {
    replace_each(text, secrets, 1, REDACTED)
}

/// Serialise `base_url` redacted ([`redact_url`]): a config copied into a run folder never holds
/// its credentials.
///
/// # Errors
/// The serializer's.
pub fn serialize_redacted_url<S: serde::Serializer>(url: &str, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&redact_url(url))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Overlapping secrets are redacted as one stretch whatever their order (the second's tail
    /// was left when the first was replaced before it was looked for), `%XX` of any byte too.
    #[test]
    fn overlapping_secrets_leave_nothing_in_either_order() {
        let text = "http://h/sk-test-abcdefghijklmnop1234extratoken/v1 and /%61bcdefgh12345/";
        let (key, tok, other) = ("sk-test-abcdefghijklmnop1234", "1234extratoken", "abcdefgh12345");
        for order in [[key, tok, other], [tok, other, key], [other, key, tok]] {
            assert_eq!(redact_secrets(text, &order, "***"), "http://h/***/v1 and /***/");
        }
        assert_eq!(redact_secrets("abcdefgh1234wxyz5678", &["abcdefgh1234", "1234wxyz5678"], "*"), "*");
        assert_eq!(redact_secrets("no secret here", &["abcdefgh1234"], "*"), "no secret here");
    }

    /// A provider-shaped key inside a URL is the key alone: the host after `@` stays readable.
    #[test]
    fn a_key_in_a_url_is_found_without_the_host() {
        let k = "sk-proj-SECRETKEY1234567890abcdefghijXYZ";
        assert_eq!(keys_in(&format!("--base-url http://u:{k}@127.0.0.1:18199/ok/v1")), [k]);
        assert_eq!(keys_in(&format!("http://h/v1/{k}/x?key={k}&a=1")), [k, k]);
        // Other providers' and gateways' shapes (hunt 57 N9: NVIDIA's and a JWT were printed).
        let (nv, jwt) = ("nvapi-AbCdEfGhIjKlMnOpQrStUvWx", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjMifQ.c2lnbmF0dXJl");
        assert_eq!(keys_in(&format!("found \"{nv}\" and Bearer {jwt}")), [nv, jwt]);
        // Short or ordinary words are not keys.
        assert!(keys_in("eyJ nvapi-short xoxb- task-abcdefghijklmnopqrstuvwxyz").is_empty());
        assert_eq!(
            redact_each(&format!("http://u:{k}@127.0.0.1:18199/v1"), &keys_in(&format!("u:{k}@127.0.0.1"))),
            "http://u:[redacted]@127.0.0.1:18199/v1"
        );
    }

    /// docs/config.md lists every key shape the scrubber knows, and no other.
    #[test]
    fn the_documented_key_shapes_are_the_ones_recognized() {
        let doc = include_str!("../../../docs/config.md").replace('\n', " ");
        let list = doc.split("like a provider's key (20 characters or more starting ").nth(1).unwrap();
        let list = &list[..list.find("), the value").unwrap()];
        let named: Vec<&str> = list.split('`').skip(1).step_by(2).collect();
        assert_eq!(named, KEY_PREFIXES);
    }

    #[test]
    fn the_key_echoed_without_its_prefix_is_redacted_too() {
        let k = Secret::new("sk-test-SECRET999abcdef");
        assert_eq!(k.redact("you sent test-SECRET999abcdef [[A]]"), "you sent [redacted] [[A]]");
        assert_eq!(k.redact("you sent SECRET999abcdef"), "you sent [redacted]");
        assert_eq!(k.redact("bearer sk-test-SECRET999abcdef."), "bearer [redacted].");
        // A short tail is ordinary text, not the key.
        assert_eq!(Secret::new("sk-abc-short").redact("a short word"), "a short word");
    }

    /// A server that echoes the header it received in hex or base64 (the key alone or `Bearer
    /// <key>`, whose key sits at another offset of the encoding): redacted. The encodings were
    /// made independently (python3: `base64.b64encode`, `bytes.hex`).
    #[test]
    fn the_key_echoed_in_hex_or_base64_is_redacted() {
        let k = Secret::new("sk-proj-SECRETKEY1234567890abcdefghijXYZ");
        for (echo, enc) in [
            ("key b64: ", "c2stcHJvai1TRUNSRVRLRVkxMjM0NTY3ODkwYWJjZGVmZ2hpalhZWg=="),
            ("auth b64: ", "QmVhcmVyIHNrLXByb2otU0VDUkVUS0VZMTIzNDU2Nzg5MGFiY2RlZmdoaWpYWVo="),
            ("auth b64: ", "QXV0aG9yaXphdGlvbjogQmVhcmVyIHNrLXByb2otU0VDUkVUS0VZMTIzNDU2Nzg5MGFiY2RlZmdoaWpYWVo="),
            ("key hex: ", "736b2d70726f6a2d5345435245544b4559313233343536373839306162636465666768696a58595a"),
            ("key HEX: ", "736B2D70726F6A2D5345435245544B4559313233343536373839306162636465666768696A58595A"),
        ] {
            let got = k.redact(&format!("{echo}{enc} end"));
            assert!(got.starts_with(echo) && got.contains("[redacted]") && got.ends_with(" end"), "{enc}: {got}");
            for cut in [8, 16] {
                assert!(!got.contains(&enc[enc.len() / 2 - cut / 2..enc.len() / 2 + cut / 2]), "{enc}: {got}");
            }
        }
        // Ordinary base64 and hex text stays.
        assert_eq!(k.redact("id c2FtcGxlIHRleHQgaGVyZQ== 0a1b2c3d4e5f"), "id c2FtcGxlIHRleHQgaGVyZQ== 0a1b2c3d4e5f");
    }

    #[test]
    fn the_key_cut_short_or_json_or_url_escaped_is_redacted() {
        let k = Secret::new("sk-test-LEAK/CHECK+12345/67890abcdef==");
        // PHP's json_encode writes `/` as `\/`; a URL encodes it; `\u002f` is JSON too.
        assert_eq!(
            k.redact(r#"{"message":"bad key Bearer sk-test-LEAK\/CHECK+12345\/67890abcdef=="}"#),
            r#"{"message":"bad key Bearer [redacted]"}"#
        );
        assert_eq!(k.redact("key=sk-test-LEAK%2FCHECK%2B12345%2f67890abcdef%3D%3D&x=1"), "key=[redacted]&x=1");
        assert_eq!(k.redact(r"k: sk-test-LEAK\u002FCHECK+12345/67890abcdef=="), "k: [redacted]");
        // Cut short by 3 bytes, or from its middle: a stretch of 12 bytes or more is the key.
        assert_eq!(k.redact("bad key sk-test-LEAK/CHECK+12345/67890abcde!"), "bad key [redacted]!");
        assert_eq!(k.redact("CHECK+12345/6 and CHECK+1234"), "[redacted] and CHECK+1234");
        // Text around and between stays, also multi-byte text.
        assert_eq!(k.redact("é LEAK/CHECK+12 é"), "é [redacted] é");
        // Upper- or lower-cased by the server.
        assert_eq!(k.redact("key SK-TEST-LEAK/CHECK+12345/67890ABCDEF== [[A]]"), "key [redacted] [[A]]");
        assert_eq!(k.redact("key sk-test-leak/check+12345/67890abcdef=="), "key [redacted]");
    }

    #[test]
    fn credentials_in_a_base_url_are_redacted_and_a_plain_url_is_kept() {
        assert_eq!(redact_url("http://127.0.0.1:8080/v1"), "http://127.0.0.1:8080/v1");
        assert_eq!(
            redact_url("https://api.x.com/v1?api-version=2024-06-01"),
            "https://api.x.com/v1?api-version=2024-06-01"
        );
        assert_eq!(redact_url("http://user:hunter22@host:9/v1"), "http://***@host:9/v1");
        assert_eq!(redact_url("http://tok3n@host/v1"), "http://***@host/v1");
        assert_eq!(
            redact_url("https://h/v1?api_key=abc123&api-version=1&X-Access-Token=q%2Fz&jwt=e.y.j&k=z9"),
            "https://h/v1?api_key=***&api-version=1&X-Access-Token=***&jwt=***&k=***"
        );
        // The query's secret written into the path too was shown there, and stored in config.yaml.
        assert_eq!(
            redact_url("http://127.0.0.1:9/HUNTSECRET999GW/v1?k=HUNTSECRET999GW"),
            "http://127.0.0.1:9/***/v1?k=***"
        );
        assert_eq!(redact_url("http://gw:tok3n@h/tok3n/v1"), "http://***@h/***/v1");
        // A URL that does not parse (a bad port, no scheme) keeps its secrets out of the error
        // that quotes it.
        assert_eq!(
            redact_url("http://u:pw9@127.0.0.1:99999/v1?token=HUNTSECRET999GW&api-version=2"),
            "http://u:***@127.0.0.1:99999/v1?token=***&api-version=2"
        );
        assert_eq!(redact_url("127.0.0.1:9/v1?api_key=HUNTSECRET999GW"), "127.0.0.1:9/v1?api_key=***");
        assert_eq!(redact_url("http://h:99999/v1#access_token=HUNTSECRET999GW"), "http://h:99999/v1#access_token=***");
        let e = RequestTarget::of("http://us%40er:p%3Ass@h:9/v1?key=k1&api-version=2");
        assert_eq!(
            (e.base.as_str(), e.url("/chat/completions")),
            ("http://h:9/v1", "http://h:9/v1/chat/completions?key=k1&api-version=2".into())
        );
        assert_eq!(e.basic, Some(("us@er".into(), Some("p:ss".into()))));
        assert_eq!(RequestTarget::of("http://h/v1").url("/models"), "http://h/v1/models");
        assert!(base_url_problem("http://h/v1#tok").unwrap().contains("#fragment"));
        assert!(base_url_problem("http://***@h/v1").unwrap().contains("redacted"));
        assert_eq!(base_url_problem("http://h/v1?k=1"), None);
        let s = url_secrets("http://us%40er:p%3Ass@h/v1?key=k1k1");
        for x in ["us%40er", "us@er", "p%3Ass", "p:ss", "k1k1"] {
            assert!(s.contains(&x.to_owned()), "{x} in {s:?}");
        }
        let msg = "error sending request for url (http://us%40er:p%3Ass@h/v1/chat/completions?key=k1k1)";
        let red = redact_all(msg, &s);
        assert!(!red.contains("p%3Ass") && !red.contains("k1k1") && !red.contains("us%40er"), "{red}");
        assert_eq!(url_secrets("http://h/v1"), Vec::<String>::new());
        // In a command-line argument, whatever surrounds the URL.
        assert_eq!(
            redact_urls_in("--base-url http://user:s3cretpw@127.0.0.1:9/v1?api_key=QQSECRETQQ"),
            "--base-url http://***:***@127.0.0.1:9/v1?api_key=***"
        );
        assert_eq!(
            redact_urls_in("--set judge.openai={base_url: 'htp://user:s3cretpw@h/v1', model: m}"),
            "--set judge.openai={base_url: 'htp://***:***@h/v1', model: m}"
        );
        assert_eq!(redact_urls_in("--set k=3"), "--set k=3");
        // An environment reference in a credential's value is part of it (`***{GW}` was shown).
        assert_eq!(
            redact_urls_in("--base-url http://127.0.0.1:65536/v1?Authorization=Bearer%20${GW}"),
            "--base-url http://127.0.0.1:65536/v1?Authorization=***"
        );
        assert_eq!(
            redact_urls_in("--set judge.openai={base_url: 'http://h/${GW}/v1?token=t0k3n', model: m}"),
            "--set judge.openai={base_url: 'http://h/${GW}/v1?token=***', model: m}"
        );
    }

    #[test]
    fn debug_and_redact_hide_the_value() {
        let s = Secret::new("sk-test-1234567890");
        assert_eq!(format!("{s:?}"), "Secret([redacted])");
        assert_eq!(format!("{:?}", Some(&s)), "Some(Secret([redacted]))");
        assert_eq!(
            s.redact("bad key sk-test-1234567890, again sk-test-1234567890."),
            "bad key [redacted], again [redacted]."
        );
        assert_eq!(s.redact("nothing here"), "nothing here");
        assert_eq!(Secret::new("ab").redact("ab cab"), "ab cab", "too short to search for");
        assert_eq!(s.expose(), "sk-test-1234567890");
        assert_eq!(s.len(), 18);
    }

    #[test]
    fn unset_env_var_is_none() {
        assert!(Secret::from_env("TOPK_JUDGE_TEST_SURELY_UNSET_VAR_7d1c").is_none());
    }
}

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

    /// `text` with every occurrence of the secret replaced by [`REDACTED`]. Secrets shorter than
    /// 4 bytes are not searched for (they would redact ordinary words).
    pub fn redact(&self, text: &str) -> String {
        if self.0.len() < 4 || !text.contains(&self.0) { text.to_owned() } else { text.replace(&self.0, REDACTED) }
    }
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

/// Names of query parameters whose values are secrets (matched case-insensitively as parts of
/// the name: `api_key`, `access_token`, `sig`, …).
const SECRET_PARAMS: [&str; 10] =
    ["key", "token", "secret", "sig", "pass", "pwd", "auth", "credential", "session", "code"];

/// `base_url` as it may be shown or stored: credentials in the userinfo (`user:pass@`) and the
/// values of query parameters named like secrets (`key`, `token`, `secret`, `sig`, `pass`, …)
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
/// parameters named like secrets, each as written and percent-decoded (to redact them from any
/// text, e.g. an HTTP library's error that repeats the URL). Empty for a URL without any.
pub fn url_secrets(url: &str) -> Vec<String> {
    let mut out = Vec::new();
    let Ok(u) = reqwest::Url::parse(url) else {
        // Not a URL the client could use; still, whatever sits between `//` and `@` is userinfo.
        if let Some(rest) = url.split_once("//").map(|(_, r)| r)
            && let Some((info, _)) = rest.split_once('@')
            && !info.contains('/')
        {
            out.extend(info.split(':').filter(|p| !p.is_empty()).map(str::to_owned));
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
    SECRET_PARAMS.iter().any(|p| n.contains(p))
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
    let mut t = text.to_owned();
    for s in secrets.iter().filter(|s| s.len() >= 3) {
        if t.contains(s.as_str()) {
            t = t.replace(s.as_str(), "***");
        }
    }
    t
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
            redact_url("https://h/v1?api_key=abc123&api-version=1&X-Access-Token=q%2Fz"),
            "https://h/v1?api_key=***&api-version=1&X-Access-Token=***"
        );
        let s = url_secrets("http://us%40er:p%3Ass@h/v1?key=k1k1");
        for x in ["us%40er", "us@er", "p%3Ass", "p:ss", "k1k1"] {
            assert!(s.contains(&x.to_owned()), "{x} in {s:?}");
        }
        let msg = "error sending request for url (http://us%40er:p%3Ass@h/v1/chat/completions?key=k1k1)";
        let red = redact_all(msg, &s);
        assert!(!red.contains("p%3Ass") && !red.contains("k1k1") && !red.contains("us%40er"), "{red}");
        assert_eq!(url_secrets("http://h/v1"), Vec::<String>::new());
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

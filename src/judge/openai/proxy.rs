//! Which proxy, if any, a request to the judge goes through.
//!
//! The environment is read as curl reads it: `HTTP_PROXY`/`http_proxy` for `http://` URLs,
//! `HTTPS_PROXY`/`https_proxy` for `https://`, `ALL_PROXY`/`all_proxy` for both when the
//! specific variable is unset, and `NO_PROXY`/`no_proxy` (comma-separated: `*`, host names that
//! also cover their subdomains, a leading `.` allowed, IP addresses and CIDR ranges) for hosts
//! that go direct. Two rules are added: **loopback hosts never go through a proxy**
//! (`localhost`, `*.localhost`, 127.0.0.0/8, `::1`: a judge on this machine is never reachable
//! through a proxy elsewhere), and under CGI (`REQUEST_METHOD` set) no proxy variable is used, as
//! reqwest does. The one [`ProxyEnv::route`] decision both routes the requests (installed with
//! reqwest's `Proxy::custom`, replacing reqwest's own reading of the environment) and names the
//! proxy in error messages, so a message never guesses which way a request went.

use std::net::IpAddr;

/// The proxy a request goes through: its URL, the same URL without credentials for messages,
/// and the variable it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProxyRoute {
    /// The proxy URL as configured (may hold credentials: never shown).
    url: String,
    /// `scheme://host:port` of the proxy, without credentials.
    pub shown: String,
    /// The environment variable that set it (e.g. `HTTP_PROXY`).
    pub var: &'static str,
}

impl std::fmt::Display for ProxyRoute {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "proxy {} (from {})", self.shown, self.var)
    }
}

/// One `NO_PROXY` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Bypass {
    /// `*`: every host.
    All,
    /// An IP network (a single address is a /32 or /128).
    Net(IpAddr, u8),
    /// A domain and its subdomains (lower case, no leading dot).
    Domain(String),
}

/// The proxy settings of the environment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProxyEnv {
    http: Option<ProxyRoute>,
    https: Option<ProxyRoute>,
    bypass: Vec<Bypass>,
}

impl ProxyEnv {
    /// The settings of this process's environment.
    pub fn from_env() -> Self {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    /// The settings from a variable lookup (`get("HTTP_PROXY")` …); empty values count as unset.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Self {
        let get = |k: &str| get(k).map(|v| v.trim().to_owned()).filter(|v| !v.is_empty());
        if get("REQUEST_METHOD").is_some() {
            return Self::default();
        }
        let first = |names: [&'static str; 2]| names.into_iter().find_map(|n| get(n).map(|v| route(v, n)));
        let all = first(["ALL_PROXY", "all_proxy"]);
        let http = first(["HTTP_PROXY", "http_proxy"]).or_else(|| all.clone());
        let https = first(["HTTPS_PROXY", "https_proxy"]).or(all);
        let no = get("NO_PROXY").or_else(|| get("no_proxy")).unwrap_or_default();
        Self { http, https, bypass: no.split([',', ' ']).filter_map(bypass_entry).collect() }
    }

    /// Whether any proxy is set.
    pub fn any(&self) -> bool {
        self.http.is_some() || self.https.is_some()
    }

    /// [`ProxyEnv::route`] of a URL string, as messages name it (`proxy http://host:port (from
    /// HTTP_PROXY)`, without its credentials); `None` when the request goes direct, or for a URL
    /// that does not parse.
    pub fn shown_route(&self, url: &str) -> Option<String> {
        reqwest::Url::parse(url).ok().and_then(|u| self.route(&u).map(ToString::to_string))
    }

    /// The proxy a request to `url` goes through, or `None` when it goes direct (no proxy for
    /// its scheme, a loopback host, or a `NO_PROXY` match).
    pub fn route(&self, url: &reqwest::Url) -> Option<&ProxyRoute> {
        let proxy = match url.scheme() {
            "http" => self.http.as_ref(),
            "https" => self.https.as_ref(),
            _ => None,
        }?;
        let host = url.host_str()?.trim_start_matches('[').trim_end_matches(']');
        let ip = host.parse::<IpAddr>().ok();
        let name = if ip.is_some() { String::new() } else { host.trim_end_matches('.').to_ascii_lowercase() };
        let loopback = ip.is_some_and(|a| a.is_loopback()) || name == "localhost" || name.ends_with(".localhost");
        let bypassed = self.bypass.iter().any(|b| match (b, ip) {
            (Bypass::All, _) => true,
            (Bypass::Net(net, bits), Some(a)) => in_net(a, *net, *bits),
            (Bypass::Domain(d), None) => name == *d || name.ends_with(&format!(".{d}")),
            _ => false,
        });
        (!loopback && !bypassed).then_some(proxy)
    }

    /// Install these settings on a client builder: requests are routed by [`ProxyEnv::route`]
    /// and reqwest's own reading of the environment is switched off.
    pub fn apply(&self, builder: reqwest::ClientBuilder) -> reqwest::ClientBuilder {
        if !self.any() {
            return builder.no_proxy();
        }
        let me = self.clone();
        builder.proxy(reqwest::Proxy::custom(move |u| me.route(u).map(|r| r.url.clone())))
    }
}

/// A route from a variable's value (a bare `host:port` means `http://host:port`, as in curl).
fn route(value: String, var: &'static str) -> ProxyRoute {
    let url = if value.contains("://") { value } else { format!("http://{value}") };
    let shown = match reqwest::Url::parse(&url) {
        Ok(u) => {
            let host = u.host_str().unwrap_or("?");
            match u.port_or_known_default() {
                Some(p) => format!("{}://{host}:{p}", u.scheme()),
                None => format!("{}://{host}", u.scheme()),
            }
        }
        // Not a URL: show it without anything before an '@' (possible credentials).
        Err(_) => url.rsplit('@').next().unwrap_or_default().to_owned(),
    };
    ProxyRoute { url, shown, var }
}

fn bypass_entry(entry: &str) -> Option<Bypass> {
    let e = entry.trim();
    if e.is_empty() {
        return None;
    }
    if e == "*" {
        return Some(Bypass::All);
    }
    let (addr, bits) = match e.split_once('/') {
        Some((a, b)) => (a, b.parse::<u8>().ok()),
        None => (e, None),
    };
    if let Ok(ip) = addr.trim_start_matches('[').trim_end_matches(']').parse::<IpAddr>() {
        let max = if ip.is_ipv4() { 32 } else { 128 };
        return Some(Bypass::Net(ip, bits.unwrap_or(max).min(max)));
    }
    // A host name, possibly with a port (ignored) and a leading dot.
    let host = e.rsplit_once(':').filter(|(_, p)| p.chars().all(|c| c.is_ascii_digit())).map_or(e, |(h, _)| h);
    Some(Bypass::Domain(host.trim_start_matches('.').trim_end_matches('.').to_ascii_lowercase()))
}

fn in_net(a: IpAddr, net: IpAddr, bits: u8) -> bool {
    match (a, net) {
        (IpAddr::V4(a), IpAddr::V4(n)) => {
            let mask = if bits == 0 { 0 } else { u32::MAX << (32 - u32::from(bits)) };
            u32::from(a) & mask == u32::from(n) & mask
        }
        (IpAddr::V6(a), IpAddr::V6(n)) => {
            let mask = if bits == 0 { 0 } else { u128::MAX << (128 - u32::from(bits)) };
            u128::from(a) & mask == u128::from(n) & mask
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(vars: &[(&str, &str)]) -> ProxyEnv {
        let vars: Vec<(String, String)> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        ProxyEnv::from_lookup(move |k| vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()))
    }

    fn via(e: &ProxyEnv, url: &str) -> Option<String> {
        e.route(&reqwest::Url::parse(url).unwrap()).map(|r| format!("{} {}", r.shown, r.var))
    }

    #[test]
    fn loopback_never_goes_through_a_proxy() {
        let e = env(&[("HTTP_PROXY", "http://10.0.0.1:3128"), ("HTTPS_PROXY", "http://10.0.0.1:3128")]);
        for u in [
            "http://127.0.0.1:8088/v1",
            "http://127.8.9.10/v1",
            "http://localhost:8000/v1",
            "http://LOCALHOST.:8000/v1",
            "http://vllm.localhost/v1",
            "http://[::1]:11434/v1",
        ] {
            assert_eq!(via(&e, u), None, "{u}");
        }
        assert_eq!(via(&e, "http://api.example.com/v1").as_deref(), Some("http://10.0.0.1:3128 HTTP_PROXY"));
        assert_eq!(via(&e, "https://api.example.com/v1").as_deref(), Some("http://10.0.0.1:3128 HTTPS_PROXY"));
        assert_eq!(via(&e, "http://128.0.0.1/v1").as_deref(), Some("http://10.0.0.1:3128 HTTP_PROXY"));
    }

    #[test]
    fn no_proxy_entries_as_curl_reads_them() {
        let e = env(&[
            ("https_proxy", "proxy.corp:8080"),
            ("ALL_PROXY", "socks5://user:secret@10.1.1.1:1080"),
            ("no_proxy", "internal.corp, .example.org,192.168.0.0/16 ,10.2.3.4,gpu-box:8000,[fd00::1]"),
        ]);
        assert_eq!(via(&e, "https://api.openai.com/v1").as_deref(), Some("http://proxy.corp:8080 https_proxy"));
        // ALL_PROXY covers http when HTTP_PROXY is unset; credentials are never shown.
        assert_eq!(via(&e, "http://api.openai.com/v1").as_deref(), Some("socks5://10.1.1.1:1080 ALL_PROXY"));
        for u in [
            "https://internal.corp/v1",
            "https://llm.internal.corp/v1",
            "https://example.org/v1",
            "https://a.b.example.org/v1",
            "http://192.168.44.5:8000/v1",
            "http://10.2.3.4/v1",
            "http://gpu-box:9999/v1",
            "http://[fd00::1]:8000/v1",
        ] {
            assert_eq!(via(&e, u), None, "{u}");
        }
        for u in ["https://notinternal.corp/v1", "http://10.2.3.5/v1", "http://192.169.0.1/v1", "http://[fd00::2]/v1"] {
            assert!(via(&e, u).is_some(), "{u}");
        }
        assert_eq!(via(&env(&[("HTTP_PROXY", "http://p:1"), ("NO_PROXY", "*")]), "http://x.y/v1"), None);
        // The uppercase NO_PROXY wins over the lowercase one, as in curl and reqwest.
        let both = env(&[("HTTP_PROXY", "http://p:1"), ("NO_PROXY", "a.test"), ("no_proxy", "b.test")]);
        assert_eq!(via(&both, "http://a.test/v1"), None);
        assert!(via(&both, "http://b.test/v1").is_some());
    }

    #[test]
    fn nothing_set_or_cgi_means_direct() {
        assert!(!env(&[]).any());
        assert!(!env(&[("HTTP_PROXY", "  ")]).any(), "empty counts as unset");
        let cgi = env(&[("HTTP_PROXY", "http://evil:1"), ("REQUEST_METHOD", "GET")]);
        assert_eq!(via(&cgi, "http://api.example.com/v1"), None);
        let only_http = env(&[("HTTP_PROXY", "http://p:1")]);
        assert_eq!(via(&only_http, "https://api.example.com/v1"), None, "HTTP_PROXY is for http:// only");
    }

    #[test]
    fn credentials_stay_out_of_messages() {
        let e = env(&[("HTTP_PROXY", "http://alice:s3cret@proxy.corp:3128")]);
        let r = e.route(&reqwest::Url::parse("http://api.example.com/v1").unwrap()).unwrap();
        assert_eq!(r.to_string(), "proxy http://proxy.corp:3128 (from HTTP_PROXY)");
        assert!(!format!("{} {}", r.shown, r).contains("s3cret"));
        assert_eq!(r.url, "http://alice:s3cret@proxy.corp:3128", "the route itself keeps them");
    }
}

//! HTTP proxies: which proxy a target's connections go through (`--proxy`,
//! `defaults.proxy`, or the environment's `HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY` and
//! `NO_PROXY`, read once before the run as curl reads them), and the `CONNECT`
//! tunnel a connection opens through it.
//!
//! Every target goes through a tunnel, plain http as well as https: `CONNECT
//! host:port`, then the origin's own bytes (TLS to the origin inside the tunnel for
//! https). The requests stay the bytes built at compile time, and HTTP/2 (h2c and
//! ALPN) and WebSocket work unchanged through the same connect function.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Instant;

use base64::Engine as _;
use pado_metrics::ErrorKind;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::conn::ConnectError;
use crate::resolve::{NameCache, DEFAULT_TTL};

/// A proxy setting that cannot be used, naming where it came from.
#[derive(Debug, thiserror::Error)]
#[error("{source_name}: {message}")]
pub struct ProxyError {
    /// The flag, field or environment variable that held it.
    pub source_name: String,
    /// What is wrong.
    pub message: String,
}

/// One proxy server: where it is and the credentials it is sent.
#[derive(Debug)]
pub struct Proxy {
    /// `http://host:port`, with a password shown as `***`: safe to print.
    pub label: String,
    host: String,
    port: u16,
    addrs: Vec<SocketAddr>,
    names: Option<Arc<NameCache>>,
    /// `Basic <base64>`, sent as `Proxy-Authorization`; never printed.
    auth: Option<String>,
}

impl Proxy {
    /// Parse a proxy URL (`http://[user:pass@]host[:port]`; a URL without a scheme
    /// is http, a missing port is 1080, as curl has it). `from` names the setting for
    /// errors.
    pub fn parse(text: &str, from: &str) -> Result<Proxy, ProxyError> {
        let err = |message: String| ProxyError {
            source_name: from.to_string(),
            message,
        };
        let with_scheme = if text.contains("://") {
            text.to_string()
        } else {
            format!("http://{text}")
        };
        let url =
            url::Url::parse(&with_scheme).map_err(|e| err(format!("not a proxy URL ({e})")))?;
        if url.scheme() != "http" {
            return Err(err(format!(
                "`{}` proxies are not supported: only http:// proxies (which tunnel https targets with CONNECT)",
                url.scheme()
            )));
        }
        let host = url
            .host_str()
            .ok_or_else(|| err("the proxy URL has no host".into()))?
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        let port = url.port().unwrap_or(1080);
        let decode = |s: &str| {
            percent_decode(s).ok_or_else(|| err("the proxy's credentials are not UTF-8".into()))
        };
        let auth = if url.username().is_empty() {
            None
        } else {
            let user = decode(url.username())?;
            let pass = decode(url.password().unwrap_or(""))?;
            let token = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pass}"));
            Some(format!("Basic {token}"))
        };
        let shown_host = if host.contains(':') {
            format!("[{host}]")
        } else {
            host.clone()
        };
        let label = match (url.username(), url.password()) {
            ("", _) => format!("http://{shown_host}:{port}"),
            (u, None) => format!("http://{u}@{shown_host}:{port}"),
            (u, Some(_)) => format!("http://{u}:***@{shown_host}:{port}"),
        };
        let (addrs, names) = match host.parse::<IpAddr>() {
            Ok(ip) => (vec![SocketAddr::new(ip, port)], None),
            Err(_) => (
                Vec::new(),
                Some(Arc::new(NameCache::new(&host, port, DEFAULT_TTL))),
            ),
        };
        Ok(Proxy {
            label,
            host,
            port,
            addrs,
            names,
            auth,
        })
    }

    /// The proxy's name cache (`None` for an address) and its addresses.
    pub(crate) fn endpoint(&self) -> (&Option<Arc<NameCache>>, &[SocketAddr]) {
        (&self.names, &self.addrs)
    }

    /// The secret this proxy is sent (`Basic <base64>`), for redaction.
    pub fn auth_header(&self) -> Option<&str> {
        self.auth.as_deref()
    }

    /// Where the proxy is, for messages: `host:port`.
    pub fn authority(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }
}

fn percent_decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let Ok(v) = u8::from_str_radix(std::str::from_utf8(&b[i + 1..i + 3]).ok()?, 16) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8(out).ok()
}

/// Which proxy each target uses: one for http targets, one for https, and the hosts
/// that bypass both (`NO_PROXY`).
#[derive(Debug, Default)]
pub struct ProxyConfig {
    http: Option<Arc<Proxy>>,
    https: Option<Arc<Proxy>>,
    no_proxy: Vec<NoProxyEntry>,
}

impl ProxyConfig {
    /// No proxy: every connection goes straight to its target.
    pub fn direct() -> Self {
        ProxyConfig::default()
    }

    /// One proxy for every target (`--proxy`, `defaults.proxy`), with the
    /// environment's `NO_PROXY` still naming the hosts that bypass it (as curl's `-x`).
    pub fn explicit(
        url: &str,
        from: &str,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, ProxyError> {
        let p = Arc::new(Proxy::parse(url, from)?);
        Ok(ProxyConfig {
            http: Some(p.clone()),
            https: Some(p),
            no_proxy: no_proxy_list(&env),
        })
    }

    /// The proxies the environment names, read through `env` (`std::env::var`
    /// in a run): `https_proxy`/`HTTPS_PROXY` for https targets,
    /// `http_proxy`/`HTTP_PROXY` for http ones, `all_proxy`/`ALL_PROXY` for either
    /// when its own is not set, `no_proxy`/`NO_PROXY` for the hosts that bypass them.
    /// The lower-case form wins when both are set, as in curl. An empty value is unset.
    pub fn from_env(env: impl Fn(&str) -> Option<String>) -> Result<Self, ProxyError> {
        let get = |name: &str| -> Option<(String, String)> {
            let lower = name.to_ascii_lowercase();
            [lower, name.to_string()]
                .into_iter()
                .find_map(|n| env(&n).filter(|v| !v.trim().is_empty()).map(|v| (n, v)))
        };
        let parse = |v: Option<(String, String)>| -> Result<Option<Arc<Proxy>>, ProxyError> {
            v.map(|(n, v)| Proxy::parse(v.trim(), &n).map(Arc::new))
                .transpose()
        };
        let all = parse(get("ALL_PROXY"))?;
        let http = parse(get("HTTP_PROXY"))?.or_else(|| all.clone());
        let https = parse(get("HTTPS_PROXY"))?.or(all);
        Ok(ProxyConfig {
            http,
            https,
            no_proxy: no_proxy_list(&env),
        })
    }

    /// The proxy a connection to `host` (as in the URL, brackets allowed) of an
    /// http or https target goes through, `None` to go direct.
    pub fn for_target(&self, https: bool, host: &str) -> Option<Arc<Proxy>> {
        let p = if https { &self.https } else { &self.http };
        let p = p.as_ref()?;
        let host = host.trim_start_matches('[').trim_end_matches(']');
        if self.no_proxy.iter().any(|e| e.matches(host)) {
            return None;
        }
        Some(p.clone())
    }

    /// The `Proxy-Authorization` values of the proxies (to keep out of output).
    pub fn credentials(&self) -> impl Iterator<Item = &str> {
        [&self.http, &self.https]
            .into_iter()
            .flatten()
            .filter_map(|p| p.auth_header())
    }

    /// Whether any target could go through a proxy.
    pub fn is_direct(&self) -> bool {
        self.http.is_none() && self.https.is_none()
    }
}

/// One entry of `NO_PROXY`.
#[derive(Debug)]
enum NoProxyEntry {
    /// `*`: every host.
    All,
    /// A name: itself and its subdomains (`example.com` and `.example.com` both
    /// match `api.example.com`).
    Domain(String),
    /// An address, or a CIDR block (`10.0.0.0/8`).
    Net(IpAddr, u8),
}

fn no_proxy_list(env: &impl Fn(&str) -> Option<String>) -> Vec<NoProxyEntry> {
    let v = env("no_proxy")
        .filter(|v| !v.trim().is_empty())
        .or_else(|| env("NO_PROXY"))
        .unwrap_or_default();
    v.split(',')
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .map(parse_no_proxy)
        .collect()
}

fn parse_no_proxy(e: &str) -> NoProxyEntry {
    if e == "*" {
        return NoProxyEntry::All;
    }
    let e = e.trim_start_matches('[');
    let (addr, bits) = match e.split_once('/') {
        Some((a, b)) => (a, b.parse::<u8>().ok()),
        None => (e, None),
    };
    let addr = addr.trim_end_matches(']');
    if let Ok(ip) = addr.parse::<IpAddr>() {
        let full = if ip.is_ipv4() { 32 } else { 128 };
        return NoProxyEntry::Net(ip, bits.unwrap_or(full).min(full));
    }
    // A name, perhaps with a port (ignored) or a leading dot.
    let name = e.rsplit_once(':').map_or(e, |(h, _)| h);
    NoProxyEntry::Domain(name.trim_start_matches('.').to_ascii_lowercase())
}

impl NoProxyEntry {
    fn matches(&self, host: &str) -> bool {
        match self {
            NoProxyEntry::All => true,
            NoProxyEntry::Domain(d) => {
                let h = host.trim_end_matches('.');
                h.eq_ignore_ascii_case(d)
                    || (h.len() > d.len()
                        && h.as_bytes()[h.len() - d.len() - 1] == b'.'
                        && h[h.len() - d.len()..].eq_ignore_ascii_case(d))
            }
            NoProxyEntry::Net(net, bits) => match (host.parse::<IpAddr>(), net) {
                (Ok(IpAddr::V4(h)), IpAddr::V4(n)) => {
                    let mask = u32::MAX.checked_shl(32 - u32::from(*bits)).unwrap_or(0);
                    u32::from(h) & mask == u32::from(*n) & mask
                }
                (Ok(IpAddr::V6(h)), IpAddr::V6(n)) => {
                    let mask = u128::MAX.checked_shl(128 - u32::from(*bits)).unwrap_or(0);
                    u128::from(h) & mask == u128::from(*n) & mask
                }
                _ => false,
            },
        }
    }
}

/// Open a tunnel to `host:port` on `tcp`, a connection to `proxy`: `CONNECT`, then
/// the proxy's answer read up to the end of its head. A 2xx opens the tunnel; any
/// other answer, or none that is HTTP, is a `proxy` failure with the reason in words.
pub(crate) async fn tunnel(
    tcp: &mut TcpStream,
    proxy: &Proxy,
    host: &str,
    port: u16,
    deadline: Instant,
) -> Result<(), ConnectError> {
    let fail = |reason: &'static str| ConnectError {
        kind: ErrorKind::Proxy,
        reason: Some(reason),
    };
    let mut head = format!("CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n");
    if let Some(a) = &proxy.auth {
        head.push_str("Proxy-Authorization: ");
        head.push_str(a);
        head.push_str("\r\n");
    }
    head.push_str("\r\n");
    let io = async {
        tcp.write_all(head.as_bytes())
            .await
            .map_err(|_| fail("the proxy closed the connection"))?;
        let mut buf = Vec::with_capacity(512);
        loop {
            if buf.len() > 16 * 1024 {
                return Err(fail("the proxy's answer to CONNECT is not HTTP"));
            }
            let mut chunk = [0u8; 512];
            let n = tcp
                .read(&mut chunk)
                .await
                .map_err(|_| fail("the proxy closed the connection"))?;
            if n == 0 {
                return Err(fail(
                    "the proxy closed the connection before answering CONNECT",
                ));
            }
            buf.extend_from_slice(&chunk[..n]);
            let mut headers = [httparse::EMPTY_HEADER; 32];
            let mut resp = httparse::Response::new(&mut headers);
            match resp.parse(&buf) {
                Ok(httparse::Status::Complete(len)) => {
                    let code = resp.code.unwrap_or(0);
                    return match code {
                        200..=299 if len == buf.len() => Ok(()),
                        200..=299 => Err(fail("the proxy sent bytes before the tunnel opened")),
                        407 => Err(fail("the proxy wants authentication (407)")),
                        403 => Err(fail("the proxy forbids this destination (403)")),
                        502..=504 => Err(fail("the proxy could not reach the target (502-504)")),
                        _ => Err(fail("the proxy refused the tunnel")),
                    };
                }
                Ok(httparse::Status::Partial) => continue,
                Err(_) => return Err(fail("the proxy's answer to CONNECT is not HTTP")),
            }
        }
    };
    match tokio::time::timeout_at(deadline.into(), io).await {
        Ok(r) => r,
        Err(_) => Err(ErrorKind::ConnectTimeout.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn the_environment_picks_a_proxy_per_scheme_with_no_proxy_bypass() {
        let c = ProxyConfig::from_env(env(&[
            ("HTTPS_PROXY", "http://user:p%40ss@proxy.local:3128"),
            ("http_proxy", "127.0.0.1:8080"),
            ("HTTP_PROXY", "http://ignored:1"),
            ("NO_PROXY", "localhost,.internal.example, 10.0.0.0/8,::1"),
        ]))
        .unwrap();
        let s = c.for_target(true, "api.example.com").unwrap();
        assert_eq!(s.label, "http://user:***@proxy.local:3128");
        assert_eq!(
            s.auth_header(),
            Some(
                format!(
                    "Basic {}",
                    base64::engine::general_purpose::STANDARD.encode("user:p@ss")
                )
                .as_str()
            )
        );
        let h = c.for_target(false, "api.example.com").unwrap();
        assert_eq!(h.label, "http://127.0.0.1:8080", "lower-case wins");
        assert!(c.for_target(true, "localhost").is_none());
        assert!(c.for_target(true, "a.internal.example").is_none());
        assert!(c.for_target(true, "internal.example").is_none());
        assert!(c.for_target(true, "xinternal.example").is_some());
        assert!(c.for_target(false, "10.2.3.4").is_none());
        assert!(c.for_target(false, "11.2.3.4").is_some());
        assert!(c.for_target(false, "[::1]").is_none());
    }

    #[test]
    fn all_proxy_fills_in_and_bad_urls_name_their_variable() {
        let c = ProxyConfig::from_env(env(&[("ALL_PROXY", "http://p:3128")])).unwrap();
        assert!(c.for_target(true, "x").is_some() && c.for_target(false, "x").is_some());
        assert!(ProxyConfig::from_env(env(&[])).unwrap().is_direct());
        let e = ProxyConfig::from_env(env(&[("https_proxy", "socks5://p:1080")])).unwrap_err();
        assert_eq!(e.source_name, "https_proxy");
        assert!(e.message.contains("only http://"), "{e}");
        let p = Proxy::parse("proxy", "--proxy").unwrap();
        assert_eq!(p.authority(), "proxy:1080");
        let star =
            ProxyConfig::explicit("http://p:1", "--proxy", env(&[("NO_PROXY", "*")])).unwrap();
        assert!(star.for_target(true, "anything").is_none());
    }
}

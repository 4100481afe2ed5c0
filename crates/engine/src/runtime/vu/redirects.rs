//! Following redirects: where a `Location` leads, a connection for a host the plan
//! never named (bounded), and the next request of the chain (RFC 9110 method and
//! credential rules).

use std::rc::Rc;

use pado_http::{Conn, H2Pool, Origin, Protocol};

use crate::cookies::CookieJar;
use crate::plan::RunPlan;
use crate::redact::request_line;

/// Most origins that are not in the plan (met in redirects) one VU keeps a connection
/// to at a time.
pub(super) const MAX_EXTRA_ORIGINS: usize = 8;

/// An origin first met in a redirect, with the VU's connection to it.
pub(super) struct ExtraOrigin {
    pub(super) origin: Rc<Origin>,
    pub(super) conn: Option<Conn>,
    /// The VU's HTTP/2 connections to it, for an origin that may speak HTTP/2
    /// (a script's https origin).
    pub(super) h2: Option<Rc<H2Pool>>,
}

/// A redirect to follow: where, the status that asked, the host id to send to and
/// whether it is the origin of the request that got the redirect.
pub(super) struct Follow {
    pub(super) url: url::Url,
    pub(super) status: u16,
    pub(super) host: usize,
    pub(super) same_origin: bool,
}

/// The host id of `url`'s origin: one of the plan's, one this VU met in an earlier
/// redirect (`extra`, ids past the plan's), or a new one (resolved now; the oldest
/// extra one makes room when [`MAX_EXTRA_ORIGINS`] are kept, and its cookies go).
/// `None` when the URL cannot have a connection (a host that is not a valid TLS
/// server name).
pub(super) async fn host_for(
    plan: &RunPlan,
    extra: &mut Vec<ExtraOrigin>,
    next_evicted: &mut usize,
    jar: &mut CookieJar,
    url: &url::Url,
) -> Option<usize> {
    host_for_with(plan, (extra, next_evicted), jar, url, Protocol::Http1).await
}

/// [`host_for`] for a new origin spoken to with `protocol` ([`Protocol::Auto`]:
/// a k6 script's, HTTP/2 over https when the server offers it, as k6).
pub(super) async fn host_for_with(
    plan: &RunPlan,
    (extra, next_evicted): (&mut Vec<ExtraOrigin>, &mut usize),
    jar: &mut CookieJar,
    url: &url::Url,
    protocol: Protocol,
) -> Option<usize> {
    let key = origin_key(url);
    let n = plan.origins.len();
    let same = |o: &Origin| o.tls.is_some() == key.0 && o.host == key.1 && o.port == key.2;
    if let Some(i) = plan.origins.iter().position(same) {
        return Some(i);
    }
    if let Some(k) = extra.iter().position(|e| same(&e.origin)) {
        return Some(n + k);
    }
    let origin = Rc::new(resolve_origin(plan, url, protocol).await?);
    let e = ExtraOrigin {
        h2: (origin.protocol.pooled(origin.tls.is_some()))
            .then(|| Rc::new(H2Pool::new(plan.max_streams))),
        origin,
        conn: None,
    };
    if extra.len() < MAX_EXTRA_ORIGINS {
        extra.push(e);
        return Some(n + extra.len() - 1);
    }
    let k = *next_evicted % MAX_EXTRA_ORIGINS;
    *next_evicted = next_evicted.wrapping_add(1);
    jar.forget(n + k);
    extra[k] = e;
    Some(n + k)
}

/// The origin of `url` spoken to with `protocol`, resolved off the worker
/// thread when it is a name; `None` when it cannot have a connection.
pub(super) async fn resolve_origin(
    plan: &RunPlan,
    url: &url::Url,
    protocol: Protocol,
) -> Option<Origin> {
    let tls = plan.tls.clone();
    let make = move |u: &url::Url| {
        let h2 = tls.clone();
        Origin::for_url_with(
            u,
            protocol,
            || tls.client_config(),
            || h2.client_config_alpn(&[b"h2", b"http/1.1"]),
        )
    };
    if matches!(url.host(), Some(url::Host::Domain(_))) {
        // A name to resolve: off the worker thread, which other VUs share.
        let u = url.clone();
        tokio::task::spawn_blocking(move || make(&u)).await.ok()?
    } else {
        make(url)
    }
    .map(|o| {
        let o = match plan.dns_ttl {
            Some(t) => o.with_dns_ttl(t),
            None => o,
        };
        o.with_proxies(&plan.proxies)
    })
    .ok()
}

/// Redirect statuses that are followed (RFC 9110 §15.4; 300, 304 and 305 are not).
/// (tls, host, port) of a URL, as [`Origin`] holds them.
pub(super) fn origin_key(url: &url::Url) -> (bool, String, u16) {
    (
        url.scheme() == "https",
        url.host_str().unwrap_or_default().to_string(),
        url.port_or_known_default().unwrap_or(80),
    )
}

/// Where a redirect leads: `location` (absolute, or relative to the request that got
/// it) resolved against the request's URL, without its fragment. `None` when it is not
/// a URL, or not an http(s) URL with a host: such a redirect is never followed.
pub(super) fn redirect_to(origin_label: &str, request: &[u8], location: &[u8]) -> Option<url::Url> {
    let (_, target) = request_line(request);
    let base = url::Url::parse(&format!(
        "{origin_label}{}",
        std::str::from_utf8(target).ok()?
    ))
    .ok()?;
    let loc = std::str::from_utf8(location).ok()?.trim();
    let mut url = base.join(loc).ok()?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none_or(str::is_empty) {
        return None;
    }
    url.set_fragment(None);
    Some(url)
}

/// What [`hop_request`] decided.
pub(super) struct Hop {
    pub(super) is_head: bool,
    /// The method stayed what it was (307, 308, or a GET/HEAD).
    pub(super) same_method: bool,
    /// The new method is idempotent (safe to resend).
    pub(super) idempotent: bool,
    /// Where its `Cookie` line from the jar is.
    pub(super) jar_at: std::ops::Range<usize>,
}

/// The request a redirect (`status`) to `url` makes of `prev` (the request that got
/// it), into `out`: 307 and 308 keep the method and body; 301, 302 and 303 turn any
/// method but GET and HEAD into a GET without a body (and without the body's
/// headers), as browsers, Go (k6) and curl do. Headers are kept, but for the `Host`
/// of a new origin and, on another origin, the credentials (`Authorization`,
/// `Proxy-Authorization`, `Cookie`). The jar's cookies (left out of `prev` by
/// `prev_jar`) are those of the new host.
pub(super) fn hop_request(
    prev: &[u8],
    prev_jar: &std::ops::Range<usize>,
    status: u16,
    url: &url::Url,
    same_origin: bool,
    jar: Option<(&CookieJar, usize)>,
    out: &mut Vec<u8>,
) -> Hop {
    let (method, _) = request_line(prev);
    let head_end = memchr::memmem::find(prev, b"\r\n\r\n").map_or(prev.len(), |i| i + 2);
    let body = prev.get(head_end + 2..).unwrap_or_default();
    let keep = matches!(status, 307 | 308);
    let same_method = keep || method == b"GET" || method == b"HEAD";
    let method: &[u8] = if same_method { method } else { b"GET" };
    out.clear();
    out.extend_from_slice(method);
    out.push(b' ');
    out.extend_from_slice(url[url::Position::BeforePath..url::Position::AfterQuery].as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\n");
    let mut had_length = false;
    let mut had_host = false;
    let first_end = memchr::memchr(b'\n', prev).map_or(prev.len(), |i| i + 1);
    let mut at = first_end;
    while at < head_end {
        let line_end = memchr::memchr(b'\n', &prev[at..head_end]).map_or(head_end, |i| at + i + 1);
        let line = &prev[at..line_end];
        let in_jar = prev_jar.contains(&at);
        at = line_end;
        let name = line.split(|&c| c == b':').next().unwrap_or_default();
        let is = |n: &str| name.eq_ignore_ascii_case(n.as_bytes());
        if in_jar || line.len() <= 2 {
            continue;
        }
        if is("content-length") {
            had_length = true;
            continue;
        }
        // Another origin gets its own Host and none of this one's credentials.
        let origin_bound =
            is("host") || is("authorization") || is("proxy-authorization") || is("cookie");
        let body_bound = is("content-type") || is("content-encoding") || is("transfer-encoding");
        let drop = (!same_origin && origin_bound) || (!keep && body_bound);
        if drop {
            continue;
        }
        had_host |= is("host");
        out.extend_from_slice(line);
    }
    if !had_host {
        out.extend_from_slice(b"Host: ");
        out.extend_from_slice(url.host_str().unwrap_or_default().as_bytes());
        if let Some(port) = url.port() {
            out.push(b':');
            crate::render::push_int(out, i64::from(port));
        }
        out.extend_from_slice(b"\r\n");
    }
    let jar_start = out.len();
    if let Some((jar, host)) = jar {
        jar.write_header(host, out);
    }
    let jar_at = jar_start..out.len();
    // 301, 302 and 303 never carry a body on: the new request is a GET (or HEAD).
    let body: &[u8] = if keep { body } else { &[] };
    if keep && (had_length || !body.is_empty()) {
        out.extend_from_slice(b"Content-Length: ");
        crate::render::push_int(out, body.len() as i64);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(body);
    Hop {
        is_head: method == b"HEAD",
        same_method,
        idempotent: pado_http::idempotent_method(std::str::from_utf8(method).unwrap_or("")),
        jar_at,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hop(
        prev: &[u8],
        jar_at: std::ops::Range<usize>,
        status: u16,
        to: &str,
        same: bool,
    ) -> String {
        let url = url::Url::parse(to).unwrap();
        let mut out = Vec::new();
        hop_request(prev, &jar_at, status, &url, same, None, &mut out);
        String::from_utf8(out).unwrap()
    }

    const POST: &[u8] = b"POST /a HTTP/1.1\r\nHost: 127.0.0.1:9\r\nAuthorization: Bearer s\r\nContent-Type: application/json\r\nCookie: jar=1\r\nContent-Length: 2\r\n\r\n{}";

    #[test]
    fn a_hop_keeps_or_drops_method_body_and_credentials() {
        let jar = POST.windows(6).position(|w| w == b"Cookie").unwrap();
        let jar = jar..jar + b"Cookie: jar=1\r\n".len();
        // 307 on the same origin: everything but the jar's cookie line.
        let t = hop(POST, jar.clone(), 307, "http://127.0.0.1:9/b?x=1", true);
        assert_eq!(t, "POST /b?x=1 HTTP/1.1\r\nHost: 127.0.0.1:9\r\nAuthorization: Bearer s\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}");
        // 303 to another origin: a GET without body, body headers or credentials.
        let t = hop(POST, jar, 303, "http://localhost:8/c", false);
        assert_eq!(t, "GET /c HTTP/1.1\r\nHost: localhost:8\r\n\r\n");
    }

    #[test]
    fn only_http_locations_are_followed() {
        let req = b"GET /a/b?q=1 HTTP/1.1\r\n\r\n";
        let at =
            |loc: &str| redirect_to("http://127.0.0.1:9", req, loc.as_bytes()).map(String::from);
        assert_eq!(at("c").as_deref(), Some("http://127.0.0.1:9/a/c"));
        assert_eq!(at("/d#f").as_deref(), Some("http://127.0.0.1:9/d"));
        assert_eq!(at("https://x.test/").as_deref(), Some("https://x.test/"));
        assert_eq!(at("ftp://x.test/"), None);
        assert_eq!(at("http://"), None);
        assert_eq!(redirect_to("http://127.0.0.1:9", req, b"\xff"), None);
    }
}

//! A k6 script's cookie jar ([`ScriptJar`]): the VU's [`CookieJar`] keyed by
//! host name, with the rules k6's jar (Go's `net/http/cookiejar`) applies on
//! top of a scenario's: a `Domain` cookie goes to the subdomains too (a domain
//! the URL's host is not under is refused), a `Path` cookie only to the paths
//! under it (by default the directory of the URL that set it), an expired one
//! is dropped (`Max-Age` below zero or an `Expires` in the past delete it), a
//! `Secure` one goes only over https. Cookies are read back longest path
//! first, then oldest first, as Go orders them.

use std::time::{Duration, SystemTime};

use super::{CookieJar, Entry};
use crate::script::RequestCookie;

/// A script's cookie jar: cookies keyed by the host name they belong to.
pub type ScriptJar = CookieJar<String>;

/// The attributes a script gives `jar.set(url, name, value, options)` (k6's
/// field names: `domain`, `path`, `expires`, `max_age`, `secure`, `http_only`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JarCookie {
    /// `domain`: also sent to its subdomains; must be the URL's host or a
    /// domain above it.
    pub domain: Option<String>,
    /// `path`: sent only under it (default: the URL's directory).
    pub path: Option<String>,
    /// `expires`: when it stops being sent (in the past: deleted).
    pub expires: Option<SystemTime>,
    /// `max_age` in seconds: 0 for none, below 0 deletes it.
    pub max_age: i64,
    /// `secure`: sent only over https.
    pub secure: bool,
    /// `http_only`.
    pub http_only: bool,
}

impl ScriptJar {
    /// Store the cookies `set_cookie` (each a `Set-Cookie` value) of a
    /// response to `url`.
    pub fn absorb_url<'a>(&mut self, url: &url::Url, set_cookie: impl Iterator<Item = &'a [u8]>) {
        for v in set_cookie {
            let text = String::from_utf8_lossy(v);
            if let Some((name, value, attrs)) = parse_set_cookie(&text) {
                self.set(url, &name, &value, &attrs, SystemTime::now());
            }
        }
    }

    /// k6's `jar.set(url, name, value, options)`: keep the cookie as if `url`
    /// had set it (`now` is the clock expiry is judged by). A domain `url`'s
    /// host is not under is refused, as Go's jar refuses it (nothing stored).
    pub fn set(&mut self, url: &url::Url, name: &str, value: &str, c: &JarCookie, now: SystemTime) {
        let Some(host) = host_of(url) else {
            return;
        };
        let (key, domain) = match c.domain.as_deref().map(|d| d.trim_start_matches('.')) {
            None | Some("") => (host, false),
            Some(d) => {
                let d = d.to_ascii_lowercase();
                let is_ip = host.parse::<std::net::IpAddr>().is_ok();
                if d != host && (is_ip || !under(&host, &d)) {
                    return;
                }
                (d, true)
            }
        };
        let path = match c.path.as_deref() {
            Some(p) if p.starts_with('/') => p.to_string(),
            _ => default_path(url.path()),
        };
        let expires = if c.max_age < 0 {
            Some(SystemTime::UNIX_EPOCH)
        } else if c.max_age > 0 {
            Some(now + Duration::from_secs(c.max_age.unsigned_abs()))
        } else {
            c.expires
        };
        let e = Entry {
            key,
            name: name.to_string(),
            value: value.to_string(),
            path: Some(path),
            domain,
            secure: c.secure,
            http_only: c.http_only,
            expires,
        };
        if e.expires.is_some_and(|t| t <= now) {
            // An expiry in the past deletes the cookie it names.
            self.entries
                .retain(|o| !(o.key == e.key && o.name == e.name && o.path == e.path));
        } else {
            self.store(e);
        }
    }

    /// k6's `jar.cookiesForURL(url)`: each cookie `url` would be sent, name
    /// and value, in the order they would be sent.
    pub fn cookies_for(&self, url: &url::Url) -> Vec<(&str, &str)> {
        let now = SystemTime::now();
        let mut hits: Vec<&Entry<String>> = self
            .entries
            .iter()
            .filter(|e| sent_to(e, url, now))
            .collect();
        // Longest path first; the sort is stable, so oldest first among equals.
        hits.sort_by_key(|e| std::cmp::Reverse(e.path.as_deref().map_or(0, str::len)));
        hits.into_iter()
            .map(|e| (e.name.as_str(), e.value.as_str()))
            .collect()
    }

    /// k6's `jar.clear(url)`: drop every cookie `url` would be sent.
    pub fn clear_url(&mut self, url: &url::Url) {
        let now = SystemTime::now();
        self.entries.retain(|e| !sent_to(e, url, now));
    }

    /// k6's `jar.delete(url, name)`: drop the cookies named `name` that `url`
    /// would be sent.
    pub fn delete_url(&mut self, url: &url::Url, name: &str) {
        let now = SystemTime::now();
        self.entries
            .retain(|e| !(e.name == name && sent_to(e, url, now)));
    }

    /// Drop every cookie (k6 starts each iteration with an empty jar).
    pub fn clear_all(&mut self) {
        self.entries.clear();
    }

    /// Append one `Cookie: ...\r\n` for a request to `url` to `out`: `first` (the
    /// request's own cookies, in order), then the jar's (less those a `first`
    /// entry replaces), nothing when there are none.
    pub fn write_header_for(&self, url: &url::Url, first: &[RequestCookie], out: &mut Vec<u8>) {
        // An empty jar (most requests) skips the clock read and the matching.
        let held = if self.entries.is_empty() {
            Vec::new()
        } else {
            self.cookies_for(url)
        };
        let jar = held
            .into_iter()
            .filter(|(n, _)| !first.iter().any(|c| c.replace && c.name == *n));
        super::write_cookie_line(
            first
                .iter()
                .map(|c| (c.name.as_str(), c.value.as_str()))
                .chain(jar),
            out,
        );
    }
}

/// A cookie date (`Expires`, k6's `jar.set` option `expires`) as HTTP writes
/// it (`Mon, 02 Jan 2006 15:04:05 GMT`); `None` when it is not one.
pub fn parse_cookie_date(text: &str) -> Option<SystemTime> {
    httpdate::parse_http_date(text.trim()).ok()
}

/// The URL's host as a jar keys it (lower case, no port); `None` without one.
fn host_of(url: &url::Url) -> Option<String> {
    url.host_str().filter(|h| !h.is_empty()).map(|h| {
        h.trim_start_matches('[')
            .trim_end_matches(']')
            .to_ascii_lowercase()
    })
}

/// Whether `e` goes with a request to `url` at `now` (RFC 6265 §5.4).
fn sent_to(e: &Entry<String>, url: &url::Url, now: SystemTime) -> bool {
    let Some(host) = host_of(url) else {
        return false;
    };
    let host_ok = e.key == host || (e.domain && under(&host, &e.key));
    host_ok
        && (!e.secure || url.scheme() == "https")
        && e.expires.is_none_or(|t| t > now)
        && e.path.as_deref().is_none_or(|p| path_match(url.path(), p))
}

/// Whether `host` is a subdomain of `domain` (`a.example.test` of `example.test`).
fn under(host: &str, domain: &str) -> bool {
    host.len() > domain.len()
        && host.ends_with(domain)
        && host.as_bytes()[host.len() - domain.len() - 1] == b'.'
}

/// RFC 6265 §5.1.4: `cookie` is `request` or a directory above it.
fn path_match(request: &str, cookie: &str) -> bool {
    request == cookie
        || (request.starts_with(cookie)
            && (cookie.ends_with('/') || request.as_bytes().get(cookie.len()) == Some(&b'/')))
}

/// RFC 6265 §5.1.4's default path: the request path up to its last `/`.
fn default_path(path: &str) -> String {
    match path.rfind('/') {
        Some(0) | None => "/".to_string(),
        Some(i) => path[..i].to_string(),
    }
}

/// A `Set-Cookie` value: name, value (quotes removed) and the attributes a
/// jar reads; `None` when it names no cookie.
fn parse_set_cookie(text: &str) -> Option<(String, String, JarCookie)> {
    let mut parts = text.split(';');
    let (name, value) = parts.next()?.split_once('=')?;
    let name = name.trim();
    if name.is_empty() {
        return None;
    }
    let value = value.trim();
    let value = value
        .strip_prefix('"')
        .and_then(|v| v.strip_suffix('"'))
        .unwrap_or(value);
    let mut c = JarCookie::default();
    for a in parts {
        let (k, v) = a.split_once('=').unwrap_or((a, ""));
        let (k, v) = (k.trim(), v.trim());
        if k.eq_ignore_ascii_case("domain") {
            c.domain = Some(v.to_string());
        } else if k.eq_ignore_ascii_case("path") {
            c.path = Some(v.to_string());
        } else if k.eq_ignore_ascii_case("max-age") {
            // `Max-Age=0` deletes as a negative one does (RFC 6265 §5.2.2).
            c.max_age = match v.parse::<i64>() {
                Ok(n) if n <= 0 => -1,
                Ok(n) => n,
                Err(_) => c.max_age,
            };
        } else if k.eq_ignore_ascii_case("expires") {
            c.expires = parse_cookie_date(v).or(c.expires);
        } else if k.eq_ignore_ascii_case("secure") {
            c.secure = true;
        } else if k.eq_ignore_ascii_case("httponly") {
            c.http_only = true;
        }
    }
    Some((name.to_string(), value.to_string(), c))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u(s: &str) -> url::Url {
        url::Url::parse(s).unwrap()
    }

    fn names(j: &ScriptJar, url: &str) -> Vec<String> {
        j.cookies_for(&u(url))
            .into_iter()
            .map(|(n, v)| format!("{n}={v}"))
            .collect()
    }

    #[test]
    fn host_path_and_secure_decide_where_a_cookie_goes() {
        let mut j = ScriptJar::default();
        let now = SystemTime::now();
        let at = u("http://example.test/app/login");
        j.set(&at, "a", "1", &JarCookie::default(), now);
        let sec = JarCookie {
            secure: true,
            path: Some("/".into()),
            ..JarCookie::default()
        };
        j.set(&at, "s", "2", &sec, now);
        // Default path: the directory of /app/login.
        assert_eq!(names(&j, "http://example.test/app/x"), ["a=1"]);
        assert!(names(&j, "http://example.test/other").is_empty());
        assert!(names(&j, "http://example.test/application").is_empty());
        // Secure: https only, and a longer path comes first.
        assert_eq!(names(&j, "https://example.test/app/x"), ["a=1", "s=2"]);
        // Another host (a subdomain of a host-only cookie) gets nothing.
        assert!(names(&j, "http://www.example.test/app/x").is_empty());
    }

    #[test]
    fn a_domain_cookie_reaches_subdomains_and_a_foreign_domain_is_refused() {
        let mut j = ScriptJar::default();
        let now = SystemTime::now();
        let d = |s: &str| JarCookie {
            domain: Some(s.into()),
            ..JarCookie::default()
        };
        j.set(
            &u("http://a.example.test/"),
            "d",
            "1",
            &d(".example.test"),
            now,
        );
        j.set(
            &u("http://a.example.test/"),
            "x",
            "1",
            &d("other.test"),
            now,
        );
        j.set(&u("http://127.0.0.1/"), "ip", "1", &d("0.0.1"), now);
        assert_eq!(names(&j, "http://b.example.test/"), ["d=1"]);
        assert_eq!(names(&j, "http://example.test/"), ["d=1"]);
        assert!(names(&j, "http://other.test/").is_empty());
        // A name that merely ends with the domain is not under it.
        assert!(names(&j, "http://badexample.test/").is_empty());
        assert!(names(&j, "http://127.0.0.1/").is_empty());
    }

    #[test]
    fn expiry_in_the_past_deletes_and_max_age_counts_from_now() {
        let mut j = ScriptJar::default();
        let now = SystemTime::now();
        let at = u("http://h.test/");
        j.set(&at, "k", "v", &JarCookie::default(), now);
        assert_eq!(names(&j, "http://h.test/"), ["k=v"]);
        let past = JarCookie {
            expires: Some(now - Duration::from_secs(60)),
            ..JarCookie::default()
        };
        j.set(&at, "k", "gone", &past, now);
        assert!(names(&j, "http://h.test/").is_empty());
        let short = JarCookie {
            max_age: 1,
            ..JarCookie::default()
        };
        // Judged 2 s ago, a 1 s max-age has already run out.
        j.set(&at, "m", "1", &short, now - Duration::from_secs(2));
        assert!(names(&j, "http://h.test/").is_empty());
        j.set(&at, "m", "1", &short, now);
        assert_eq!(names(&j, "http://h.test/"), ["m=1"]);
    }

    #[test]
    fn set_cookie_headers_clear_and_delete() {
        let mut j = ScriptJar::default();
        let at = u("https://h.test/a/b");
        let heads: [&[u8]; 4] = [
            b"sid=\"abc\"; Path=/; HttpOnly",
            b"pref=ko; Path=/a; Secure",
            b"old=1; Expires=Thu, 01 Jan 1970 00:00:00 GMT",
            b"=nameless",
        ];
        j.absorb_url(&at, heads.into_iter());
        assert_eq!(names(&j, "https://h.test/a/c"), ["pref=ko", "sid=abc"]);
        let mut out = Vec::new();
        let first = [RequestCookie {
            name: "sid".into(),
            value: "mine".into(),
            replace: true,
        }];
        j.write_header_for(&u("https://h.test/a/c"), &first, &mut out);
        assert_eq!(out, b"Cookie: sid=mine; pref=ko\r\n");
        j.absorb_url(&at, std::iter::once(&b"pref=; Max-Age=0; Path=/a"[..]));
        assert_eq!(names(&j, "https://h.test/a/c"), ["sid=abc"]);
        j.set(&at, "two", "2", &JarCookie::default(), SystemTime::now());
        j.delete_url(&at, "two");
        assert_eq!(names(&j, "https://h.test/a/c"), ["sid=abc"]);
        j.clear_url(&u("https://h.test/"));
        assert!(names(&j, "https://h.test/a/c").is_empty());
    }
}

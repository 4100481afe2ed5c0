//! A cookie jar per VU, as a browser (or k6) keeps one: cookies set by a response are
//! sent back to the same host. A scenario's VU keys its jar by host id and keeps it
//! deliberately simple: scoped by host (not path or domain attributes), removed by
//! `Max-Age<=0` or an empty value. A k6 script's jars (`http.cookieJar()`, `new
//! http.CookieJar()`) are the same store keyed by host name, with the rules k6's
//! jar applies on top (domain, path, expiry, secure: [`by_url`]). Bounded as
//! browsers bound theirs, so a server setting a new cookie on every response cannot
//! grow a VU's memory (and its `Cookie` header) without end.

use std::time::SystemTime;

use crate::response_view::ResponseView;

mod by_url;
pub use by_url::{parse_cookie_date, JarCookie, ScriptJar};

/// Most cookies one VU keeps (all hosts together); storing one more evicts the
/// oldest, as browsers do (RFC 6265 §6.1 asks for at least 3000 per client and 50
/// per domain; one VU is one user of a few hosts).
pub const MAX_COOKIES: usize = 300;
/// Longest cookie (name and value) kept; a longer one is ignored, as browsers ignore
/// it (RFC 6265 §6.1: at least 4096 bytes).
pub const MAX_COOKIE_BYTES: usize = 4096;

/// One VU's cookies, keyed by `K`: a host id for a scenario's VU, a host name
/// for a script's jar ([`ScriptJar`]).
#[derive(Clone, Debug, PartialEq)]
pub struct CookieJar<K = usize> {
    entries: Vec<Entry<K>>,
}

impl<K> Default for CookieJar<K> {
    fn default() -> Self {
        CookieJar {
            entries: Vec::new(),
        }
    }
}

/// One stored cookie. A scenario's jar fills only `key`, `name` and `value`;
/// the rest are what a script's jar honours (k6's, from Go's `net/http/cookiejar`).
#[derive(Clone, Debug, PartialEq)]
struct Entry<K> {
    key: K,
    name: String,
    value: String,
    /// `Path`: sent only to paths under it (`None`: every path).
    path: Option<String>,
    /// Set with a `Domain` attribute: sent to the key's subdomains as well.
    domain: bool,
    /// `Secure`: sent only over https.
    secure: bool,
    /// `HttpOnly` (kept to be shown, changes nothing for a load tool).
    http_only: bool,
    /// When it stops being sent (`Expires`, `Max-Age`); `None`: for the session.
    expires: Option<SystemTime>,
}

impl<K> Entry<K> {
    /// A cookie with no attributes (a scenario's jar's).
    fn plain(key: K, name: &str, value: &str) -> Self {
        Entry {
            key,
            name: name.to_string(),
            value: value.to_string(),
            path: None,
            domain: false,
            secure: false,
            http_only: false,
            expires: None,
        }
    }
}

impl<K: PartialEq> CookieJar<K> {
    /// Keep `e`, in place of a cookie of the same key, name (and path); the
    /// oldest goes when the jar is full.
    fn store(&mut self, e: Entry<K>) {
        self.entries
            .retain(|o| !(o.key == e.key && o.name == e.name && o.path == e.path));
        if e.name.len() + e.value.len() > MAX_COOKIE_BYTES {
            return;
        }
        if self.entries.len() >= MAX_COOKIES {
            self.entries.remove(0);
        }
        self.entries.push(e);
    }
}

impl CookieJar {
    /// Whether nothing is stored (the common case: no header to add).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Store the cookies a response for host `host_id` set.
    pub fn absorb(&mut self, host_id: usize, r: &ResponseView<'_>) {
        for v in r.headers("set-cookie") {
            let text = String::from_utf8_lossy(v);
            let mut parts = text.split(';');
            let Some((name, value)) = parts.next().and_then(|nv| nv.split_once('=')) else {
                continue;
            };
            let (name, value) = (name.trim(), value.trim().trim_matches('"'));
            if name.is_empty() {
                continue;
            }
            let expired = parts.any(|a| {
                let a = a.trim();
                // `get`: byte 8 may fall inside a multi-byte character.
                a.get(..8)
                    .is_some_and(|k| k.eq_ignore_ascii_case("max-age="))
                    && a[8..].trim().parse::<i64>().is_ok_and(|n| n <= 0)
            });
            self.entries
                .retain(|e| !(e.key == host_id && e.name == name));
            if !expired && !value.is_empty() {
                self.store(Entry::plain(host_id, name, value));
            }
        }
    }

    /// Append `Cookie: ...\r\n` for `host_id` to `out` (nothing if none).
    pub fn write_header(&self, host_id: usize, out: &mut Vec<u8>) {
        let mut first = true;
        for e in &self.entries {
            if e.key != host_id {
                continue;
            }
            out.extend_from_slice(if first { b"Cookie: " } else { b"; " });
            first = false;
            out.extend_from_slice(e.name.as_bytes());
            out.push(b'=');
            out.extend_from_slice(e.value.as_bytes());
        }
        if !first {
            out.extend_from_slice(b"\r\n");
        }
    }

    /// Append one `Cookie: ...\r\n` for `host_id` to `out`: `first` (a
    /// request's own cookies, in order), then the jar's, less those whose name
    /// a `first` entry marked as replacing (nothing if there are none).
    pub fn write_header_with(
        &self,
        host_id: usize,
        first: &[crate::script::RequestCookie],
        out: &mut Vec<u8>,
    ) {
        let jar = self
            .entries
            .iter()
            .filter(|e| e.key == host_id && !first.iter().any(|c| c.replace && c.name == e.name))
            .map(|e| (e.name.as_str(), e.value.as_str()));
        write_cookie_line(
            first
                .iter()
                .map(|c| (c.name.as_str(), c.value.as_str()))
                .chain(jar),
            out,
        );
    }

    /// Drop every cookie of `host_id` (its id is about to name another host).
    pub fn forget(&mut self, host_id: usize) {
        self.entries.retain(|e| e.key != host_id);
    }

    /// A cookie's value.
    pub fn get(&self, host_id: usize, name: &str) -> Option<&str> {
        self.entries
            .iter()
            .find(|e| e.key == host_id && e.name == name)
            .map(|e| e.value.as_str())
    }
}

/// One `Cookie: a=1; b=2\r\n` line of `pairs` appended to `out`; nothing when
/// there are none (the one way both jars write the header).
pub(crate) fn write_cookie_line<'a>(
    pairs: impl Iterator<Item = (&'a str, &'a str)>,
    out: &mut Vec<u8>,
) {
    let mut any = false;
    for (n, v) in pairs {
        out.extend_from_slice(if any { b"; " } else { b"Cookie: " });
        any = true;
        out.extend_from_slice(n.as_bytes());
        out.push(b'=');
        out.extend_from_slice(v.as_bytes());
    }
    if any {
        out.extend_from_slice(b"\r\n");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_send_and_expire() {
        let mut j = CookieJar::default();
        let h = b"HTTP/1.1 200 OK\r\nSet-Cookie: SESSION=abc; Path=/; HttpOnly\r\nSet-Cookie: lang=ko\r\n\r\n";
        j.absorb(0, &ResponseView::new(200, h, b""));
        let mut out = Vec::new();
        j.write_header(0, &mut out);
        assert_eq!(out, b"Cookie: SESSION=abc; lang=ko\r\n");
        let mut other = Vec::new();
        j.write_header(1, &mut other);
        assert!(other.is_empty());
        let h2 = b"HTTP/1.1 200 OK\r\nSet-Cookie: SESSION=; Max-Age=0\r\n\r\n";
        j.absorb(0, &ResponseView::new(200, h2, b""));
        assert_eq!(j.get(0, "SESSION"), None);
        assert_eq!(j.get(0, "lang"), Some("ko"));
    }

    #[test]
    fn a_requests_own_cookies_come_first_and_replace_only_when_asked() {
        // k6 v1.8.1 sent `extra=e1; sid=override; lang=ko` for
        // `{ extra: 'e1', sid: { value: 'override', replace: true } }` and
        // `sid=added; sid=abc; lang=ko` for `{ sid: 'added' }`.
        use crate::script::RequestCookie;
        let mut j = CookieJar::default();
        let h = b"HTTP/1.1 200 OK\r\nSet-Cookie: sid=abc\r\nSet-Cookie: lang=ko\r\n\r\n";
        j.absorb(0, &ResponseView::new(200, h, b""));
        let c = |n: &str, v: &str, replace| RequestCookie {
            name: n.into(),
            value: v.into(),
            replace,
        };
        let mut out = Vec::new();
        j.write_header_with(
            0,
            &[c("extra", "e1", false), c("sid", "override", true)],
            &mut out,
        );
        assert_eq!(out, b"Cookie: extra=e1; sid=override; lang=ko\r\n");
        out.clear();
        j.write_header_with(0, &[c("sid", "added", false)], &mut out);
        assert_eq!(out, b"Cookie: sid=added; sid=abc; lang=ko\r\n");
        out.clear();
        CookieJar::default().write_header_with(0, &[], &mut out);
        assert!(out.is_empty());
    }

    #[test]
    fn attribute_with_multibyte_character_at_byte_8() {
        // Found by the `http_response` fuzz target: `a[..8]` panicked here.
        let mut j = CookieJar::default();
        let h = "HTTP/1.1 200 OK\r\nSet-Cookie: b=q; max-a\u{20ac}ge=60\r\nSet-Cookie: c=1; Max-Age\u{e9}=0\r\n\r\n";
        j.absorb(0, &ResponseView::new(200, h.as_bytes(), b""));
        assert_eq!(j.get(0, "b"), Some("q"));
        assert_eq!(j.get(0, "c"), Some("1"));
    }

    #[test]
    fn the_jar_is_bounded_as_a_browser_bounds_it() {
        let mut j = CookieJar::default();
        for i in 0..1000 {
            let h = format!("HTTP/1.1 200 OK\r\nSet-Cookie: c{i}=v{i}\r\n\r\n");
            j.absorb(0, &ResponseView::new(200, h.as_bytes(), b""));
        }
        assert_eq!(j.entries.len(), MAX_COOKIES);
        // The oldest went first.
        assert_eq!(j.get(0, "c0"), None);
        assert_eq!(j.get(0, "c999"), Some("v999"));
        let big = "x".repeat(MAX_COOKIE_BYTES);
        let h = format!("HTTP/1.1 200 OK\r\nSet-Cookie: huge={big}\r\n\r\n");
        j.absorb(0, &ResponseView::new(200, h.as_bytes(), b""));
        assert_eq!(j.get(0, "huge"), None);
        assert_eq!(j.entries.len(), MAX_COOKIES);
    }
}

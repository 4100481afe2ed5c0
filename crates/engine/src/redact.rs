//! Keeping secrets out of what pado shows and stores about single requests (debug
//! output, `--once`, failure samples).
//!
//! `{{ env.NAME }}` values are bound at compile time and become literal request bytes
//! (static requests are built once), so they cannot be told apart by position later;
//! they are redacted by value instead: the [`Redactor`] knows every bound value, as read
//! and as escaped where it landed, and replaces each occurrence with `***` wherever it
//! appears (URL, headers, bodies, even a response that echoes it). Credentials in
//! `Authorization`, `Cookie`, `Set-Cookie` and `Proxy-Authorization` are hidden by
//! default whatever their source.

/// What replaces a hidden value.
pub const MASK: &str = "***";

/// Headers whose values are credentials: hidden unless the user asks for everything
/// (`--http-debug=full`), and even then their `env` parts stay hidden.
pub const SENSITIVE_HEADERS: [&str; 4] = [
    "authorization",
    "cookie",
    "set-cookie",
    "proxy-authorization",
];

/// Whether a header's value is a credential ([`SENSITIVE_HEADERS`]).
pub fn is_sensitive(name: &str) -> bool {
    SENSITIVE_HEADERS
        .iter()
        .any(|h| h.eq_ignore_ascii_case(name.trim()))
}

/// Replaces known secret values with [`MASK`].
#[derive(Clone, Debug, Default)]
pub struct Redactor {
    /// Longest first, so a value that contains another is masked whole.
    secrets: Vec<Vec<u8>>,
}

impl Redactor {
    /// A redactor for these values (empty ones are ignored).
    pub fn new(mut secrets: Vec<Vec<u8>>) -> Self {
        secrets.retain(|s| !s.is_empty());
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        secrets.dedup();
        Redactor { secrets }
    }

    /// Whether there is nothing to hide.
    pub fn is_empty(&self) -> bool {
        self.secrets.is_empty()
    }

    /// Length of the longest secret: how many bytes past a cut a secret may reach.
    pub fn longest(&self) -> usize {
        self.secrets.first().map_or(0, Vec::len)
    }

    /// `b` with every secret replaced by [`MASK`].
    pub fn redact(&self, b: &[u8]) -> Vec<u8> {
        if self.secrets.is_empty() {
            return b.to_vec();
        }
        let mut out = Vec::with_capacity(b.len());
        let mut i = 0;
        while i < b.len() {
            match self.secret_at(&b[i..]) {
                Some(n) => {
                    out.extend_from_slice(MASK.as_bytes());
                    i += n;
                }
                None => {
                    out.push(b[i]);
                    i += 1;
                }
            }
        }
        out
    }

    /// The length of the secret `b` starts with, if any (the longest: they are
    /// sorted longest first).
    fn secret_at(&self, b: &[u8]) -> Option<usize> {
        self.secrets
            .iter()
            .find(|s| b.starts_with(s))
            .map(|s| s.len())
    }

    /// This redactor plus the credential header values of request `head`
    /// ([`SENSITIVE_HEADERS`]), so a response that echoes them (a `/headers` debug
    /// route, an error page quoting the request) does not show them either.
    pub fn with_credentials_of(&self, head: &[u8]) -> Redactor {
        let mut all = self.secrets.clone();
        for line in head.split(|&c| c == b'\n').skip(1) {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if line.is_empty() {
                break;
            }
            if let Some(colon) = memchr::memchr(b':', line) {
                if is_sensitive(&String::from_utf8_lossy(&line[..colon])) {
                    all.push(line[colon + 1..].trim_ascii().to_vec());
                }
            }
        }
        Redactor::new(all)
    }

    /// Lossy text of `b` redacted.
    pub fn text(&self, b: &[u8]) -> String {
        String::from_utf8_lossy(&self.redact(b)).into_owned()
    }

    /// The first `n` bytes of `b`, redacted: a secret that starts before `n` and ends
    /// after it is still masked whole (nothing of it shows).
    pub fn prefix(&self, b: &[u8], n: usize) -> Vec<u8> {
        let window = &b[..b.len().min(n.saturating_add(self.longest()))];
        let mut out = self.redact(window);
        out.truncate(n);
        out
    }
}

impl Redactor {
    /// This redactor plus `extra` values (credentials known only later, such as an
    /// event call's own headers).
    pub fn with(&self, extra: Vec<Vec<u8>>) -> Redactor {
        let mut all = self.secrets.clone();
        all.extend(extra);
        Redactor::new(all)
    }

    /// The last `n` bytes of `b` once redacted, where `b` is itself the end of a
    /// longer stream (a command's output tail kept with a margin of at least
    /// [`Redactor::longest`] bytes): every secret is masked before the cut, so a
    /// secret straddling the cut shows none of itself, and the first
    /// `longest - 1` bytes of `b` — perhaps the end of a secret that began before
    /// `b` did — are never shown unmasked.
    pub fn suffix(&self, b: &[u8], n: usize) -> Vec<u8> {
        let skip = if b.len() > n {
            self.longest().saturating_sub(1)
        } else {
            0
        };
        let mut out = Vec::with_capacity(b.len().min(n));
        let mut i = 0;
        while i < b.len() {
            if let Some(n) = self.secret_at(&b[i..]) {
                out.extend_from_slice(MASK.as_bytes());
                i += n;
                continue;
            }
            if i >= skip {
                out.push(b[i]);
            }
            i += 1;
        }
        let cut = out.len().saturating_sub(n);
        out.drain(..cut);
        out
    }
}

/// Method and target (path and query) of a request's first line.
pub fn request_line(req: &[u8]) -> (&[u8], &[u8]) {
    let line_end = memchr::memchr(b'\n', req).unwrap_or(req.len());
    let line = req[..line_end]
        .strip_suffix(b"\r")
        .unwrap_or(&req[..line_end]);
    let mut parts = line.splitn(3, |&c| c == b' ');
    let method = parts.next().unwrap_or_default();
    let target = parts.next().unwrap_or_default();
    (method, target)
}

/// The header lines of an HTTP head (request or response; the first line is skipped,
/// parsing stops at the blank line), values redacted: secrets always, sensitive
/// headers wholly unless `reveal_sensitive`.
pub fn headers(head: &[u8], r: &Redactor, reveal_sensitive: bool) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for line in head.split(|&c| c == b'\n').skip(1) {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            break;
        }
        let Some(colon) = memchr::memchr(b':', line) else {
            continue;
        };
        let name = String::from_utf8_lossy(&line[..colon]).trim().to_string();
        let value = line[colon + 1..].trim_ascii();
        let value = if is_sensitive(&name) && !reveal_sensitive {
            MASK.to_string()
        } else {
            r.text(value)
        };
        out.push((name, value));
    }
    out
}

/// Where the body starts in a request's bytes (after the blank line), if anywhere.
pub fn body_of(req: &[u8]) -> &[u8] {
    match memchr::memmem::find(req, b"\r\n\r\n") {
        Some(i) => &req[i + 4..],
        None => &[],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_every_form_and_longest_first() {
        let r = Redactor::new(vec![b"s3cret".to_vec(), b"s3cret%20x".to_vec(), vec![]]);
        assert_eq!(r.text(b"a=s3cret&b=s3cret%20x"), "a=***&b=***");
        assert_eq!(r.text(b"nothing"), "nothing");
        assert!(Redactor::default().is_empty());
    }

    #[test]
    fn a_prefix_never_shows_part_of_a_secret() {
        let r = Redactor::new(vec![b"TOPSECRET".to_vec()]);
        // The secret straddles the cut at 6: masked, not cut to "TOP".
        let p = r.prefix(b"abc TOPSECRET def", 6);
        assert_eq!(p, b"abc **");
        assert!(!String::from_utf8_lossy(&p).contains("TOP"));
    }

    #[test]
    fn a_suffix_never_shows_part_of_a_secret() {
        let secret = b"TOPSECRET".to_vec();
        let r = Redactor::new(vec![secret.clone()]);
        // The secret starts 2 bytes before the last 10: masked whole, not "PSECRET".
        let b = b"0123456789abTOPSECRET12345678";
        let t = r.suffix(b, 10);
        assert_eq!(t, b"**12345678");
        // The kept window itself may begin inside a secret: its end is not shown.
        let b = b"SECRETxyz0123456789";
        let t = String::from_utf8(r.suffix(b, 12)).unwrap();
        assert!(!t.contains("SEC") && !t.contains("CRET"), "{t}");
        assert!(t.ends_with("z0123456789"), "{t}");
        // Short output is redacted and kept whole.
        assert_eq!(r.suffix(b"a TOPSECRET b", 100), b"a *** b");
        // Nothing to hide: the plain tail.
        assert_eq!(Redactor::default().suffix(b"abcdef", 3), b"def");
        assert_eq!(
            r.with(vec![b"xyz".to_vec()]).text(b"xyz TOPSECRET"),
            "*** ***"
        );
    }

    #[test]
    fn headers_hide_credentials_unless_revealed_but_never_secrets() {
        let r = Redactor::new(vec![b"tok123".to_vec()]);
        let head = b"GET /x?a=1 HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer tok123\r\nCookie: sid=9\r\nX-Key: tok123\r\n\r\nbody";
        let h = headers(head, &r, false);
        assert_eq!(
            h,
            vec![
                ("Host".to_string(), "h".to_string()),
                ("Authorization".to_string(), "***".to_string()),
                ("Cookie".to_string(), "***".to_string()),
                ("X-Key".to_string(), "***".to_string()),
            ]
        );
        let echoed = r.with_credentials_of(head);
        assert_eq!(
            echoed.text(b"{\"a\":\"Bearer tok123\",\"c\":\"sid=9\"}"),
            "{\"a\":\"***\",\"c\":\"***\"}"
        );
        let full = headers(head, &r, true);
        assert_eq!(full[1].1, "Bearer ***");
        assert_eq!(full[2].1, "sid=9");
        assert_eq!(request_line(head), (&b"GET"[..], &b"/x?a=1"[..]));
        assert_eq!(body_of(head), b"body");
    }
}

//! Who may talk to a server of the fleet (`pado agent`, a generator pod), judged on
//! a request's head before its body is read:
//!
//! - a browser-shaped request is refused with `403`: an `Origin` or `Sec-Fetch-*`
//!   header, a body type a web page may send without asking (`text/plain`, a form),
//!   or a `Host` that is not an address or a name of this host (DNS rebinding: a
//!   page whose name now points at the agent's address). A web page the operator
//!   visits can reach `127.0.0.1`; it must not be able to submit a job;
//! - a request without the server's token, or with another one, is refused with
//!   `401`. The token travels as `Authorization: Bearer <token>` or as
//!   `X-Pado-Token: <token>` ([`TOKEN_HEADER`]): the Kubernetes API server's pod
//!   proxy, through which a coordinator reaches generator pods, need not forward
//!   `Authorization` (it is the proxy's own credential), so pado sends its own
//!   header there. The token is compared in constant time, on SHA-256 digests, so
//!   neither its bytes nor its length leak through the answer's timing.
//!
//! pado's own coordinators send no browser headers, no body type and the address
//! they were given as `Host`.

use std::fmt;
use std::net::IpAddr;

use pado_h1server::Request;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// The fewest characters a token may have: long enough that guessing it over the
/// network is hopeless (`openssl rand -hex 32` gives 64).
pub const MIN_TOKEN_CHARS: usize = 16;

/// The header a token may travel in besides `Authorization: Bearer`: what a
/// coordinator sends through the Kubernetes pod proxy, which keeps `Authorization`
/// for the API server.
pub const TOKEN_HEADER: &str = "X-Pado-Token";

/// How many random bytes a generated token holds (64 hex characters).
pub const GENERATED_TOKEN_BYTES: usize = 32;

/// Why a token was not accepted.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TokenError {
    /// Shorter than [`MIN_TOKEN_CHARS`].
    #[error("the token has {0} characters; it needs at least {MIN_TOKEN_CHARS} (e.g. `openssl rand -hex 32`)")]
    TooShort(usize),
    /// A character an `Authorization` header cannot carry as it is.
    #[error("the token may hold only visible ASCII characters (no spaces or control characters)")]
    BadCharacter,
    /// The operating system's random number generator failed.
    #[error("no random bytes for a token from the operating system: {0}")]
    Random(String),
}

/// A shared secret: what a server requires and a client sends as
/// `Authorization: Bearer <token>`. Its `Debug` form hides it, so it never reaches a
/// log or an error message.
#[derive(Clone)]
pub struct Token {
    text: String,
    digest: [u8; 32],
}

impl Token {
    /// A token from its text (surrounding whitespace removed, as a file's trailing
    /// newline is).
    pub fn new(text: &str) -> Result<Token, TokenError> {
        let text = text.trim();
        if !text.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(TokenError::BadCharacter);
        }
        let n = text.chars().count();
        if n < MIN_TOKEN_CHARS {
            return Err(TokenError::TooShort(n));
        }
        Ok(Token {
            digest: Sha256::digest(text.as_bytes()).into(),
            text: text.to_string(),
        })
    }

    /// A fresh token of [`GENERATED_TOKEN_BYTES`] bytes from the operating system's
    /// random number generator, as hex: what a run that starts its own generators
    /// (Kubernetes pods) gives them, so nobody has to choose one.
    pub fn generate() -> Result<Token, TokenError> {
        let mut bytes = [0u8; GENERATED_TOKEN_BYTES];
        getrandom::fill(&mut bytes).map_err(|e| TokenError::Random(e.to_string()))?;
        let text: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        Token::new(&text)
    }

    /// The token's text, for a client to send.
    pub fn expose(&self) -> &str {
        &self.text
    }

    /// Whether `presented` is this token, in time that does not depend on where
    /// they differ or on how long `presented` is (compared as SHA-256 digests).
    pub fn matches(&self, presented: &[u8]) -> bool {
        let theirs: [u8; 32] = Sha256::digest(presented).into();
        self.digest.ct_eq(&theirs).into()
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token(hidden)")
    }
}

/// What a server lets in.
#[derive(Clone, Debug, Default)]
pub struct Access {
    /// The bearer token every request must carry (`None`: none needed, for a server
    /// only its own cluster reaches).
    pub token: Option<Token>,
    /// The names this host answers to in `Host` besides IP addresses and
    /// `localhost` (`None`: any `Host`, for a server behind a proxy that rewrites it).
    pub host_names: Option<Vec<String>>,
}

/// A refused request: the status and why, for the answer.
#[derive(Debug, PartialEq, Eq)]
pub struct Refusal {
    /// `403` for a browser-shaped request, `401` for a missing or wrong token.
    pub status: u16,
    /// The reason, for the person who sent it.
    pub reason: String,
}

impl Access {
    /// Judges a request's head: `Err` with the answer when it is refused.
    pub fn judge(&self, req: &Request) -> Result<(), Refusal> {
        if let Some(why) = self.browser_shaped(req) {
            return Err(Refusal {
                status: 403,
                reason: format!(
                    "refused: {why}; pado's servers do not answer web browsers (use `pado run --generators`)"
                ),
            });
        }
        if let Some(token) = &self.token {
            let bearer = req.header("authorization").and_then(|v| {
                let (scheme, rest) = v.split_once(' ')?;
                scheme.eq_ignore_ascii_case("bearer").then(|| rest.trim())
            });
            let own = req.header(TOKEN_HEADER).map(str::trim);
            // Either header may carry it: a proxy between may put its own
            // credential in `Authorization` and pass pado's header on.
            let presented = bearer.into_iter().chain(own);
            if !presented.into_iter().any(|p| token.matches(p.as_bytes())) {
                return Err(Refusal {
                    status: 401,
                    reason: format!(
                        "this server needs its token (`Authorization: Bearer TOKEN` or `{TOKEN_HEADER}: TOKEN`): for `pado agent`, set {} on the coordinator to the token the agent was started with; a Kubernetes generator pod's token is in its run's Secret",
                        crate::agent::TOKEN_ENV
                    ),
                });
            }
        }
        Ok(())
    }

    /// Why `req` looks like a browser's, if it does.
    fn browser_shaped(&self, req: &Request) -> Option<String> {
        for (name, _) in &req.headers {
            let lower = name.to_ascii_lowercase();
            if lower == "origin" || lower.starts_with("sec-fetch-") {
                return Some(format!("a browser's request (it has `{name}`)"));
            }
        }
        if let Some(ct) = req.header("content-type") {
            let media = ct
                .split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase();
            if matches!(
                media.as_str(),
                "text/plain" | "application/x-www-form-urlencoded" | "multipart/form-data"
            ) {
                return Some(format!(
                    "a body of type `{media}`, which any web page may send"
                ));
            }
        }
        let names = self.host_names.as_ref()?;
        let Some(host) = req.header("host") else {
            return Some("no `Host` header".into());
        };
        (!host_allowed(host, names)).then(|| {
            format!("`Host: {host}` is not this host's address or one of its names (--host-name)")
        })
    }
}

/// Whether a `Host` value names this host: an IP address (a rebinding attack needs
/// a name), `localhost`, or one of `names`; the port is not judged. Public so the
/// dashboard's server judges `Host` by the same rule.
pub fn host_allowed(host: &str, names: &[String]) -> bool {
    let name = if let Some(rest) = host.strip_prefix('[') {
        // `[::1]:7070`
        match rest.split_once(']') {
            Some((ip, _)) => return ip.parse::<std::net::Ipv6Addr>().is_ok(),
            None => return false,
        }
    } else {
        match host.rsplit_once(':') {
            Some((h, port)) if port.bytes().all(|b| b.is_ascii_digit()) => h,
            _ => host,
        }
    };
    let name = name.trim_end_matches('.');
    name.parse::<IpAddr>().is_ok()
        || name.eq_ignore_ascii_case("localhost")
        || names.iter().any(|n| n.eq_ignore_ascii_case(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(headers: &[(&str, &str)]) -> Request {
        Request::in_process("POST", "/job", headers)
    }

    const TOKEN: &str = "0123456789abcdef-파도는-아님";

    #[test]
    fn tokens_match_only_themselves() {
        let t = Token::new("0123456789abcdef").unwrap();
        assert!(t.matches(b"0123456789abcdef"));
        assert!(!t.matches(b"0123456789abcdeF"), "last byte differs");
        assert!(!t.matches(b"1123456789abcdef"), "first byte differs");
        assert!(!t.matches(b"0123456789abcde"), "a prefix");
        assert!(!t.matches(b"0123456789abcdef0"), "longer");
        assert!(!t.matches(b""));
        // A file's trailing newline is not part of the token.
        assert!(Token::new("0123456789abcdef\n")
            .unwrap()
            .matches(b"0123456789abcdef"));
    }

    #[test]
    fn short_or_unsendable_tokens_are_refused_and_never_printed() {
        assert_eq!(Token::new("s3cret").unwrap_err(), TokenError::TooShort(6));
        assert_eq!(Token::new(TOKEN).unwrap_err(), TokenError::BadCharacter);
        assert_eq!(
            Token::new("0123456789 abcdef").unwrap_err(),
            TokenError::BadCharacter
        );
        let t = Token::new("0123456789abcdef").unwrap();
        assert!(!format!("{t:?}").contains("0123"));
    }

    fn agent() -> Access {
        Access {
            token: Some(Token::new("0123456789abcdef").unwrap()),
            host_names: Some(vec!["gen-1.internal".into()]),
        }
    }

    const OK: [(&str, &str); 2] = [
        ("Host", "127.0.0.1:7070"),
        ("Authorization", "Bearer 0123456789abcdef"),
    ];

    fn with(extra: &[(&'static str, &'static str)]) -> Request {
        let mut h = OK.to_vec();
        h.extend_from_slice(extra);
        req(&h)
    }

    #[test]
    fn a_coordinator_s_request_passes() {
        assert_eq!(agent().judge(&req(&OK)), Ok(()));
        for host in [
            "localhost:7070",
            "[::1]:7070",
            "10.0.0.5",
            "GEN-1.internal:7070",
            "gen-1.internal.",
        ] {
            let r = req(&[("Host", host), OK[1]]);
            assert_eq!(agent().judge(&r), Ok(()), "{host}");
        }
        // Any other body type is one a page cannot send without asking first.
        assert_eq!(
            agent().judge(&with(&[("Content-Type", "application/x-tar")])),
            Ok(())
        );
        assert_eq!(
            agent().judge(&req(&[OK[0], ("authorization", "bearer 0123456789abcdef")])),
            Ok(())
        );
    }

    #[test]
    fn browser_shaped_requests_are_refused_with_403_even_with_the_token() {
        for extra in [
            ("Origin", "http://evil.example"),
            ("Origin", "null"),
            ("Sec-Fetch-Site", "cross-site"),
            ("sec-fetch-mode", "no-cors"),
            ("Content-Type", "text/plain;charset=UTF-8"),
            ("Content-Type", "application/x-www-form-urlencoded"),
            ("Content-Type", "Multipart/Form-Data; boundary=x"),
        ] {
            let r = agent().judge(&with(&[extra])).unwrap_err();
            assert_eq!(r.status, 403, "{extra:?}");
        }
        // DNS rebinding: a name that now points at the agent, but is not its own.
        for host in [
            "evil.example:7070",
            "localhost.evil.example",
            "127.0.0.1.nip.io:7070",
        ] {
            let r = agent().judge(&req(&[("Host", host), OK[1]])).unwrap_err();
            assert_eq!(r.status, 403, "{host}");
        }
        assert_eq!(agent().judge(&req(&[OK[1]])).unwrap_err().status, 403);
    }

    #[test]
    fn a_missing_or_wrong_token_is_refused_with_401() {
        for auth in [
            None,
            Some("Bearer 0123456789abcdeX"),
            Some("Bearer "),
            Some("Basic 0123456789abcdef"),
            Some("0123456789abcdef"),
        ] {
            let mut h = vec![OK[0]];
            h.extend(auth.map(|a| ("Authorization", a)));
            let r = agent().judge(&req(&h)).unwrap_err();
            assert_eq!(r.status, 401, "{auth:?}");
            assert!(!r.reason.contains("0123"), "{}", r.reason);
        }
    }

    #[test]
    fn the_token_may_travel_in_pado_s_own_header() {
        // What the pod proxy passes on: pado's header, and perhaps the proxy's own
        // credential in `Authorization`.
        assert_eq!(
            agent().judge(&req(&[OK[0], ("X-Pado-Token", "0123456789abcdef")])),
            Ok(())
        );
        assert_eq!(
            agent().judge(&req(&[
                OK[0],
                ("Authorization", "Bearer kube-apiserver-credential"),
                ("x-pado-token", "0123456789abcdef"),
            ])),
            Ok(())
        );
        for wrong in ["0123456789abcdeX", "", "Bearer 0123456789abcdef"] {
            let r = agent()
                .judge(&req(&[OK[0], ("X-Pado-Token", wrong)]))
                .unwrap_err();
            assert_eq!(r.status, 401, "{wrong:?}");
            assert!(r.reason.contains("X-Pado-Token"), "{}", r.reason);
        }
    }

    #[test]
    fn generated_tokens_are_long_fresh_and_accepted() {
        let a = Token::generate().unwrap();
        let b = Token::generate().unwrap();
        assert_eq!(a.expose().len(), 2 * GENERATED_TOKEN_BYTES);
        assert!(a.expose().len() >= 32);
        assert!(a.expose().bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a.expose(), b.expose(), "two draws of 256 bits never repeat");
        assert!(a.matches(a.expose().as_bytes()));
        assert!(!a.matches(b.expose().as_bytes()));
    }

    #[test]
    fn without_names_any_host_passes_but_browsers_still_do_not() {
        let open = Access::default();
        assert_eq!(open.judge(&req(&[("Host", "evil.example")])), Ok(()));
        assert_eq!(open.judge(&req(&[])), Ok(()));
        assert_eq!(
            open.judge(&req(&[("Origin", "http://evil.example")]))
                .unwrap_err()
                .status,
            403
        );
    }
}

//! Who may do what on the dashboard, judged on a request's head before a byte of
//! its body is read:
//!
//! - every request, the page included, must name the dashboard's own host in
//!   `Host` (an IP address, `localhost`): a web page whose name was pointed at
//!   this address (DNS rebinding) gets `403`, so it can neither read the figures
//!   nor steer the load;
//! - a control call (`POST /api/control`) made by a browser must come from the
//!   dashboard's own page: an `Origin` other than the dashboard's, or a
//!   `Sec-Fetch-Site` other than `same-origin` or `none`, gets `403`;
//! - it must carry the token (`Authorization: Bearer <token>`), else `401`;
//! - its body must be JSON (`Content-Type: application/json`, which a form or a
//!   cross-origin page cannot send without asking first), else `415`, and at most
//!   [`MAX_CONTROL_BODY`] bytes, else `413` before the body is read.

use pado_fleet::access::Token;
use pado_h1server::Request;

/// The largest body of a control call: a command is a few dozen bytes.
pub const MAX_CONTROL_BODY: u64 = 4096;

/// A request refused on its head: the status and why, for the answer.
#[derive(Debug, PartialEq, Eq)]
pub struct Refusal {
    /// `403`, `401`, `413` or `415`.
    pub status: u16,
    /// Why, for the person who sent it.
    pub reason: String,
}

fn refuse(status: u16, reason: impl Into<String>) -> Refusal {
    Refusal {
        status,
        reason: reason.into(),
    }
}

/// Whether `req` names the dashboard's host (see the module's documentation):
/// an IP address, `localhost`, or one of `names` (this machine's host name, when
/// other machines may reach the page).
pub fn host_ok(req: &Request, names: &[String]) -> Result<(), Refusal> {
    match req.header("host") {
        None => Err(refuse(403, "refused: the request has no `Host` header")),
        Some(h) if pado_fleet::access::host_allowed(h, names) => Ok(()),
        Some(h) => Err(refuse(
            403,
            format!("refused: `Host: {h}` is not the dashboard's address (open it by its IP address, `localhost` or this machine's host name)"),
        )),
    }
}

/// Whether `req` presents `token` as `Authorization: Bearer <token>`.
pub fn has_token(req: &Request, token: &Token) -> bool {
    req.header("authorization")
        .and_then(|v| {
            let (scheme, rest) = v.split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then(|| rest.trim())
        })
        .is_some_and(|p| token.matches(p.as_bytes()))
}

/// Judges the head of a control call (its `Host` already judged): `Ok` when its
/// body may be read (at most [`MAX_CONTROL_BODY`] bytes).
pub fn control_ok(req: &Request, token: &Token) -> Result<(), Refusal> {
    if let Some(origin) = req.header("origin") {
        let own = req.header("host").map(|h| format!("http://{h}"));
        if own.is_none_or(|o| !o.eq_ignore_ascii_case(origin.trim())) {
            return Err(refuse(
                403,
                format!("refused: a control call from another origin (`Origin: {origin}`)"),
            ));
        }
    }
    if let Some(site) = req.header("sec-fetch-site") {
        if !matches!(site.trim(), "same-origin" | "none") {
            return Err(refuse(
                403,
                format!("refused: a control call from another site (`Sec-Fetch-Site: {site}`)"),
            ));
        }
    }
    if !has_token(req, token) {
        return Err(refuse(
            401,
            "a control call needs the dashboard's token: `Authorization: Bearer TOKEN` (the token is in the URL pado printed, after `#token=`)",
        ));
    }
    let media = req
        .header("content-type")
        .and_then(|ct| ct.split(';').next())
        .map(|m| m.trim().to_ascii_lowercase());
    if media.as_deref() != Some("application/json") {
        return Err(refuse(
            415,
            "a control call's body is JSON: send `Content-Type: application/json`",
        ));
    }
    let announced = req
        .header("content-length")
        .and_then(|n| n.trim().parse::<u64>().ok());
    if announced.is_some_and(|n| n > MAX_CONTROL_BODY) {
        return Err(refuse(
            413,
            format!("a control command is at most {MAX_CONTROL_BODY} bytes"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOKEN: &str = "0123456789abcdef0123";

    fn req(headers: &[(&str, &str)]) -> Request {
        Request::in_process("POST", "/api/control", headers)
    }

    const GOOD: [(&str, &str); 4] = [
        ("Host", "127.0.0.1:8089"),
        ("Authorization", "Bearer 0123456789abcdef0123"),
        ("Content-Type", "application/json"),
        ("Content-Length", "18"),
    ];

    fn with(replace: &str, value: Option<&'static str>) -> Request {
        let mut h: Vec<(&str, &str)> = GOOD
            .iter()
            .filter(|(n, _)| !n.eq_ignore_ascii_case(replace))
            .copied()
            .collect();
        if let Some(v) = value {
            h.push((replace, v));
        }
        req(&h)
    }

    fn judge(r: &Request) -> Result<(), u16> {
        let t = Token::new(TOKEN).unwrap();
        host_ok(r, &[]).map_err(|e| e.status)?;
        control_ok(r, &t).map_err(|e| e.status)
    }

    #[test]
    fn the_token_decides_control() {
        assert_eq!(judge(&req(&GOOD)), Ok(()));
        assert_eq!(judge(&with("Authorization", None)), Err(401));
        assert_eq!(
            judge(&with("Authorization", Some("Bearer 0123456789abcdef0124"))),
            Err(401)
        );
        assert_eq!(
            judge(&with("Authorization", Some("Basic 0123456789abcdef0123"))),
            Err(401)
        );
    }

    #[test]
    fn the_own_page_may_steer_another_origin_may_not() {
        assert_eq!(
            judge(&with("Origin", Some("http://127.0.0.1:8089"))),
            Ok(())
        );
        assert_eq!(judge(&with("Sec-Fetch-Site", Some("same-origin"))), Ok(()));
        for (h, v) in [
            ("Origin", "http://evil.example"),
            ("Origin", "http://127.0.0.1:9999"),
            ("Origin", "null"),
            ("Sec-Fetch-Site", "cross-site"),
            ("Sec-Fetch-Site", "same-site"),
        ] {
            assert_eq!(judge(&with(h, Some(v))), Err(403), "{h}: {v}");
        }
    }

    #[test]
    fn a_foreign_host_is_refused_for_every_request() {
        for host in [
            "evil.example:8089",
            "127.0.0.1.nip.io:8089",
            "localhost.evil",
        ] {
            let r = with("Host", Some(host));
            assert_eq!(host_ok(&r, &[]).unwrap_err().status, 403, "{host}");
        }
        assert_eq!(host_ok(&with("Host", None), &[]).unwrap_err().status, 403);
        // The machine's own name, when the page is served to other machines.
        let names = ["loadgen-1".to_string()];
        assert_eq!(
            host_ok(&with("Host", Some("loadgen-1:8089")), &names),
            Ok(())
        );
        assert_eq!(
            host_ok(&with("Host", Some("loadgen-1:8089")), &[])
                .unwrap_err()
                .status,
            403
        );
        for host in [
            "127.0.0.1:8089",
            "localhost:8089",
            "[::1]:8089",
            "10.1.2.3:80",
        ] {
            assert_eq!(host_ok(&with("Host", Some(host)), &[]), Ok(()), "{host}");
        }
    }

    #[test]
    fn only_a_small_json_body_is_read() {
        for ct in [
            "application/x-www-form-urlencoded",
            "text/plain",
            "multipart/form-data; boundary=x",
        ] {
            assert_eq!(judge(&with("Content-Type", Some(ct))), Err(415), "{ct}");
        }
        assert_eq!(judge(&with("Content-Type", None)), Err(415));
        assert_eq!(
            judge(&with(
                "Content-Type",
                Some("Application/JSON; charset=utf-8")
            )),
            Ok(())
        );
        assert_eq!(judge(&with("Content-Length", Some("4097"))), Err(413));
        assert_eq!(judge(&with("Content-Length", Some("4096"))), Ok(()));
    }
}

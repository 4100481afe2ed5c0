//! A script's exchange as `--http-debug` and `--once` show it: the same trace a
//! YAML step's request gives, redacted the same way (the run's secrets, and the
//! request's own credential headers unless `--http-debug=full`), named by the
//! request's series (its `name` tag, else its URL). Built only with an observer.

use pado_metrics::RequestSample;

use crate::redact::{body_of, headers, request_line};
use crate::trace::Trace;

use super::described::{redactor, shown};

/// Hand an exchange of VU `vu` (`req` sent, `head` and `body` of its answer)
/// to the run's observer, if it has one.
#[cold]
pub(super) fn script_trace(
    ctx: &crate::runtime::worker::WorkerCtx,
    (vu, scope, name): (u64, &str, &str),
    origin: &str,
    sample: &RequestSample,
    (req, head, body): (&[u8], &[u8], &[u8]),
) {
    let Some(obs) = &ctx.observer else {
        return;
    };
    let full = obs.full();
    let r = redactor(&ctx.plan, req, full);
    let (method, target) = request_line(req);
    let t = Trace {
        scope: scope.to_string(),
        step: name.to_string(),
        vu,
        method: String::from_utf8_lossy(method).into_owned(),
        url: r.text(format!("{origin}{}", String::from_utf8_lossy(target)).as_bytes()),
        request_headers: headers(req, &r, full),
        request_body: shown(&r, body_of(req)),
        status: sample.status,
        error: sample.error,
        reason: None,
        failed: sample.failed,
        response_headers: headers(head, &r, full),
        response_body: shown(&r, body),
        phases: sample.phases,
        checks: Vec::new(),
        extracted: Vec::new(),
    };
    obs.exchange(t);
}

/// A response head as text for [`headers`]: a status line, then each header.
fn head_of(status_line: &str, lists: &[&[(String, String)]]) -> Vec<u8> {
    let mut out = format!("{status_line}\r\n").into_bytes();
    for (k, v) in lists.iter().copied().flatten() {
        out.extend_from_slice(format!("{k}: {v}\r\n").as_bytes());
    }
    out.extend_from_slice(b"\r\n");
    out
}

/// A script's WebSocket session (`k6/ws`, `k6/websockets`) as `--http-debug`
/// shows it, once it ended (or failed to open): the handshake as the request
/// and response, the messages counted as the response body; redacted as an
/// HTTP request's (the run's secrets, and the handshake's credential headers
/// unless `--http-debug=full`).
#[cold]
pub(super) fn script_ws_trace(
    ctx: &crate::runtime::worker::WorkerCtx,
    (vu, scope, name): (u64, &str, &str),
    (url, head): (&str, &[u8]),
    (status, response): (u16, &[(String, String)]),
    result: &pado_metrics::WsSession,
) {
    let Some(obs) = &ctx.observer else {
        return;
    };
    let full = obs.full();
    let r = redactor(&ctx.plan, head, full);
    let counted = format!(
        "{} sent, {} received\n",
        result.msgs_sent, result.msgs_received
    );
    let response_head = head_of(&format!("HTTP/1.1 {status}"), &[response]);
    let t = Trace {
        scope: scope.to_string(),
        step: name.to_string(),
        vu,
        method: "WS".into(),
        url: r.text(url.as_bytes()),
        request_headers: headers(head, &r, full),
        request_body: None,
        status,
        error: match result.error {
            Some(pado_metrics::WsError::Connect(k)) => Some(k),
            _ => None,
        },
        reason: result.error.map(pado_metrics::WsError::name),
        failed: result.error.is_some(),
        response_headers: headers(&response_head, &r, full),
        response_body: shown(&r, counted.as_bytes()),
        phases: pado_metrics::Phases {
            connecting_us: result.connecting_us,
            duration_us: result.duration_us,
            ..Default::default()
        },
        checks: Vec::new(),
        extracted: Vec::new(),
    };
    obs.exchange(t);
}

/// A script's gRPC call or stream (`k6/net/grpc`) as `--http-debug` shows it:
/// the method and metadata as the request, the status with the server's
/// headers and trailers as the response, the messages counted; redacted as an
/// HTTP request's (an `authorization` metadata is a credential header).
#[cold]
pub(super) fn script_grpc_trace(
    ctx: &crate::runtime::worker::WorkerCtx,
    (vu, scope, name): (u64, &str, &str),
    (origin, request): (&str, &[u8]),
    sample: &RequestSample,
    (reply, messages): (&crate::script::ScriptGrpcReply, (u64, u64)),
) {
    let Some(obs) = &ctx.observer else {
        return;
    };
    let full = obs.full();
    let r = redactor(&ctx.plan, request, full);
    let (_, target) = request_line(request);
    let code = reply.code.map_or_else(String::new, |c| {
        format!(
            "{c} {}",
            pado_scenario::grpc_codes::name(c).unwrap_or_default()
        )
    });
    let status = [("grpc-status".to_string(), code)];
    let response_head = head_of("HTTP/2 200", &[&reply.headers, &reply.trailers, &status]);
    let mut said = format!("{} sent, {} received", messages.0, messages.1);
    if !reply.error.is_empty() {
        said.push_str(" · ");
        said.push_str(&reply.error);
    }
    let t = Trace {
        scope: scope.to_string(),
        step: name.to_string(),
        vu,
        method: "POST".into(),
        url: r.text(format!("{origin}{}", String::from_utf8_lossy(target)).as_bytes()),
        request_headers: headers(request, &r, full),
        request_body: None,
        status: sample.status,
        error: sample.error,
        reason: None,
        failed: sample.failed,
        response_headers: headers(&response_head, &r, full),
        response_body: shown(&r, said.as_bytes()),
        phases: sample.phases,
        checks: Vec::new(),
        extracted: Vec::new(),
    };
    obs.exchange(t);
}

/// The request head a script's gRPC call is shown with: `POST /method HTTP/2`
/// and its metadata (what the redactor reads credentials from).
pub(super) fn grpc_request_head(method: &str, metadata: &[(String, String)]) -> Vec<u8> {
    head_of(&format!("POST {method} HTTP/2"), &[metadata])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::redact::Redactor;

    #[test]
    fn a_grpc_calls_head_shows_its_metadata_with_credentials_masked_everywhere() {
        let md = [
            ("authorization".to_string(), "Bearer tok-9".to_string()),
            ("x-room".to_string(), "파도".to_string()),
        ];
        let head = grpc_request_head("/pkg.S/M", &md);
        assert_eq!(request_line(&head), (&b"POST"[..], &b"/pkg.S/M"[..]));
        let r = Redactor::default().with_credentials_of(&head);
        let shown = headers(&head, &r, false);
        assert_eq!(
            shown,
            vec![
                ("authorization".to_string(), "***".to_string()),
                ("x-room".to_string(), "파도".to_string()),
            ]
        );
        // The credential's value is masked in what the server sent back too.
        let back = head_of("HTTP/2 200", &[&[("x-echo".into(), "Bearer tok-9".into())]]);
        let echoed = headers(&back, &r, false);
        assert_eq!(echoed[0].1, "***", "{echoed:?}");
        // `--http-debug=full` (the run's secrets only) shows the header itself.
        let full = headers(&head, &Redactor::default(), true);
        assert_eq!(full[0].1, "Bearer tok-9");
    }
}

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

//! What a person sees of an exchange: the debug trace (`--http-debug`, `--once`) and
//! the failure samples of `failures.jsonl`, both redacted, built only when needed.

use std::borrow::Cow;
use std::time::{Duration, Instant};

use pado_metrics::failure::{printable, BODY_PREFIX};
use pado_metrics::{ErrorKind, FailureSample, RequestSample};

use crate::plan::{CheckPlan, RunPlan, StepPlan};
use crate::redact::{body_of, headers, request_line, Redactor};
use crate::response_view::ResponseView;
use crate::trace::{BodyShown, Trace, TRACE_BODY_BYTES};

use crate::runtime::worker::WorkerCtx;

/// What a debug trace shows of one exchange besides its sample.
pub(super) struct Shown<'a> {
    /// The origin's label (`http://127.0.0.1:8080`), the target's prefix.
    pub(super) origin: &'a str,
    /// The request as sent (request line, headers, body).
    pub(super) request: &'a [u8],
    /// The response head.
    pub(super) head: &'a [u8],
    /// The response body as kept.
    pub(super) body: &'a [u8],
}

/// The redactor for what a request shows: the run's secrets, plus the request's own
/// credential headers unless `--http-debug=full` asked to see them.
pub(super) fn redactor<'p>(plan: &'p RunPlan, request: &[u8], full: bool) -> Cow<'p, Redactor> {
    if full {
        Cow::Borrowed(&plan.secrets)
    } else {
        Cow::Owned(plan.secrets.with_credentials_of(request))
    }
}

/// The trace of one exchange for `--http-debug` and `--once`, redacted by `r`; its
/// checks, extracted values and reason are the caller's to fill.
pub(super) fn trace(
    ctx: &WorkerCtx,
    (scope, step, vu): (&str, &StepPlan, u64),
    r: &Redactor,
    full: bool,
    shown: Shown<'_>,
    sample: &RequestSample,
) -> Trace {
    let (method, target) = request_line(shown.request);
    Trace {
        scope: scope.to_string(),
        step: step_name(ctx, step.series),
        vu,
        method: String::from_utf8_lossy(method).into_owned(),
        url: r.text(format!("{}{}", shown.origin, String::from_utf8_lossy(target)).as_bytes()),
        request_headers: headers(shown.request, r, full),
        request_body: self::shown(r, body_of(shown.request)),
        status: sample.status,
        error: sample.error,
        reason: None,
        failed: sample.failed,
        response_headers: headers(shown.head, r, full),
        response_body: self::shown(r, shown.body),
        phases: sample.phases,
        checks: Vec::new(),
        extracted: Vec::new(),
    }
}

/// A check's name as the run reports it (`step: status is 200`).
pub(super) fn check_name(plan: &RunPlan, id: u32) -> String {
    plan.checks.get(id as usize).cloned().unwrap_or_default()
}

pub(super) fn step_name(ctx: &WorkerCtx, series: u32) -> String {
    ctx.plan
        .series
        .get(series as usize)
        .map(|k| k.name.clone())
        .unwrap_or_default()
}

/// A body for a trace: its first bytes, redacted and printable; `None` when empty.
pub(super) fn shown(r: &Redactor, body: &[u8]) -> Option<BodyShown> {
    (!body.is_empty()).then(|| BodyShown {
        text: printable(&r.prefix(body, TRACE_BODY_BYTES)),
        total: body.len(),
    })
}

/// What a failure sample says made the request fail, besides its category.
pub(super) struct Cause<'a> {
    /// The first failed check and what it saw.
    pub(super) check: Option<(&'a CheckPlan, String)>,
    /// Why, in words: a transport failure's reason ([`pado_http::Exchange::reason`])
    /// or what a template rendered ([`crate::render::RenderFault`]).
    pub(super) reason: Option<&'a str>,
}

/// The sample of one failed request, redacted. `check` is the failing check with
/// what it saw, when a check (not the status or the transport) failed the request.
pub(super) fn failure_sample(
    ctx: &WorkerCtx,
    series: u32,
    request: &[u8],
    s: &RequestSample,
    body: &[u8],
    cause: Cause<'_>,
    end: Instant,
) -> FailureSample {
    let Cause { check, reason } = cause;
    let r = &ctx.plan.secrets.with_credentials_of(request);
    let (method, target) = request_line(request);
    let category = match s.error {
        Some(e) => e.as_str().to_string(),
        None if s.failed_by_check => "check_failed".to_string(),
        None => format!("http_{}", s.status),
    };
    let (check, actual) = match check {
        Some((c, seen)) => (
            ctx.plan.checks.get(check_id(c) as usize).cloned(),
            Some(r.text(seen.as_bytes())),
        ),
        None => (None, None),
    };
    FailureSample {
        step: step_name(ctx, series),
        category,
        second: ctx.second_at(end),
        method: String::from_utf8_lossy(method).into_owned(),
        url: r.text(target),
        status: s.status,
        body: printable(&r.prefix(body, BODY_PREFIX)),
        check,
        actual,
        reason: reason.map(|why| r.text(why.as_bytes())),
        event: None,
    }
}

pub(super) fn check_id(c: &CheckPlan) -> u32 {
    match c {
        CheckPlan::Status { id, .. }
        | CheckPlan::BodyContains { id, .. }
        | CheckPlan::MaxDuration { id, .. }
        | CheckPlan::BodyMatches { id, .. }
        | CheckPlan::JsonExists { id, .. }
        | CheckPlan::JsonEquals { id, .. }
        | CheckPlan::Header { id, .. }
        | CheckPlan::Templated { id, .. } => *id,
    }
}

/// Longest value text a check description quotes.
pub(super) const SEEN_MAX: usize = 120;

pub(super) fn clip(s: &str) -> String {
    if s.chars().count() <= SEEN_MAX {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(SEEN_MAX).collect();
        t.push('…');
        t
    }
}

/// What a check saw, for a person (`got 401`, `got 7`, `no match in 120-byte body`):
/// called for failed checks being sampled and when debugging, never on the hot path.
pub(super) fn seen(
    c: &CheckPlan,
    r: &ResponseView<'_>,
    error: Option<ErrorKind>,
    duration: Duration,
) -> String {
    if let Some(e) = error {
        return format!("no response ({e})");
    }
    let json_at = |path: &crate::json_query::JsonQuery| match r.json() {
        None => "body is not JSON".to_string(),
        Some(v) => match path.path().query(v).first() {
            None => format!("nothing at {path}"),
            Some(got) => format!("got {}", clip(&got.to_string())),
        },
    };
    match c {
        CheckPlan::Status { .. } => format!("got {}", r.status),
        CheckPlan::BodyContains { needle, .. } => {
            if memchr::memmem::find(r.body, needle).is_some() {
                "found".to_string()
            } else {
                format!("not found in {}-byte body", r.body.len())
            }
        }
        CheckPlan::BodyMatches { re, .. } => match re.find(r.body) {
            Some(m) => format!("matched {:?}", clip(&String::from_utf8_lossy(m.as_bytes()))),
            None => format!("no match in {}-byte body", r.body.len()),
        },
        CheckPlan::MaxDuration { .. } => {
            format!("took {:.1} ms", duration.as_secs_f64() * 1000.0)
        }
        CheckPlan::JsonExists { path, .. } | CheckPlan::JsonEquals { path, .. } => json_at(path),
        CheckPlan::Header { name, .. } => match r.header(name) {
            Some(v) => format!("got {:?}", clip(&String::from_utf8_lossy(v))),
            None => format!("no {name} header"),
        },
        // Judged once rendered, as the plain check it stands for.
        CheckPlan::Templated { .. } => "not rendered".to_string(),
    }
}

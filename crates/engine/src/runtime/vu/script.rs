//! A scripted VU's iteration: the script ([`crate::script::ScriptVu`]) runs until
//! it asks for something, and this VU does it with its own connections, cookie jar
//! and timers, on the worker's loop: a script's synchronous `http.get` is an await
//! here, never a blocked thread. Each request is measured and recorded as any
//! other (phases, series, failure samples), under the series its name gives.

use std::time::Instant;

use pado_metrics::failure::{printable, BODY_PREFIX};
use pado_metrics::{ErrorKind, FailureSample, RequestSample};

use crate::plan::ScenarioPlan;
use crate::runtime::worker::FailureKey;
use crate::script::{
    Execution, IterationIds, ScriptCall, ScriptFault, ScriptGrpcStreamCall, ScriptReply,
    ScriptRequest, ScriptResponse, ScriptRole, ScriptTimings, ScriptWsCall,
};

use super::script_batch::{run_lane, Lane};
use super::send::conn_slot;
use super::{IterationEnd, Vu};

/// How a script's run ended.
enum Driven {
    /// It returned (with `setup()`'s value) or threw.
    Done(Result<Option<String>, ScriptFault>),
    /// The run stopped it mid-way.
    Stopped,
}

impl Vu {
    /// One iteration of a scripted scenario: the function `exec` of the plan's
    /// script. An exception ends it as [`IterationEnd::Failed`], sampled.
    pub(super) async fn script_iteration(
        &mut self,
        sc: &ScenarioPlan,
        exec: &str,
        scheduled: Option<Instant>,
    ) -> IterationEnd {
        // A new VU's context is made in its first resume: it waits for the
        // worker's turn to make one (see `WorkerCtx::script_turns`).
        let ctx = self.ctx.clone();
        let mut turn = None;
        if self.script.is_none() {
            let Some(host) = self.ctx.plan.script.clone() else {
                return IterationEnd::Completed;
            };
            turn = ctx.script_turns.acquire().await.ok();
            let role = ScriptRole::Load {
                scenario: sc.name.clone(),
                exec: exec.to_string(),
                vu: self.id,
            };
            match host.0.vu(role) {
                Ok(v) => {
                    self.script = Some(v);
                    self.ctx.plan.script_state.vu_initialized();
                }
                Err(message) => {
                    let fault = ScriptFault {
                        message,
                        stack: String::new(),
                    };
                    self.script_fault(&sc.name, &fault);
                    return IterationEnd::Failed;
                }
            }
        }
        let data = self.ctx.script_data.borrow().clone();
        // One relaxed count per iteration: its number here, and (through the
        // segment's stripe) in the whole test, unique across generators.
        let in_instance = sc
            .iterations_begun
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let ids = IterationIds {
            in_instance,
            in_test: sc
                .segment
                .as_ref()
                .map_or(in_instance, |s| s.position(in_instance)),
        };
        let start = ScriptReply::Start {
            iter: self.iter,
            data,
            ids,
        };
        let end = match self
            .drive_script(&sc.name, start, scheduled, Some(sc), turn)
            .await
        {
            Driven::Done(Ok(_)) => IterationEnd::Completed,
            Driven::Done(Err(f)) => {
                self.script_fault(&sc.name, &f);
                IterationEnd::Failed
            }
            Driven::Stopped => IterationEnd::Stopped,
        };
        self.ctx
            .plan
            .script_state
            .iteration_ended(!matches!(end, IterationEnd::Stopped));
        end
    }

    /// Run the script's `setup()` or `teardown(data)` once on this VU: setup's
    /// return value (JSON, `None` when it returned nothing or was stopped), or the
    /// exception that ended it (sampled too).
    pub(in crate::runtime) async fn script_once(
        &mut self,
        role: ScriptRole,
    ) -> Result<Option<String>, ScriptFault> {
        let Some(host) = self.ctx.plan.script.clone() else {
            return Ok(None);
        };
        let scope = match role {
            ScriptRole::Teardown => "teardown",
            _ => "setup",
        };
        match host.0.vu(role) {
            Ok(v) => self.script = Some(v),
            Err(message) => {
                let fault = ScriptFault {
                    message,
                    stack: String::new(),
                };
                self.script_fault(scope, &fault);
                return Err(fault);
            }
        }
        let data = self.ctx.script_data.borrow().clone();
        let start = ScriptReply::Start {
            iter: 0,
            data,
            ids: IterationIds::default(),
        };
        match self.drive_script(scope, start, None, None, None).await {
            Driven::Done(Ok(v)) => Ok(v),
            Driven::Done(Err(f)) => {
                self.script_fault(scope, &f);
                Err(f)
            }
            Driven::Stopped => Ok(None),
        }
    }

    /// Resume the script with `first`, then with the answer to each of its calls,
    /// until it is done. With `turn` (a new VU's first resume, which makes its
    /// context), the turn is given back only after the worker's loop has run
    /// the tasks that are ready meanwhile.
    async fn drive_script(
        &mut self,
        scope: &str,
        first: ScriptReply,
        mut scheduled: Option<Instant>,
        sc: Option<&ScenarioPlan>,
        mut turn: Option<tokio::sync::SemaphorePermit<'_>>,
    ) -> Driven {
        // Out of the VU while it runs (its calls borrow the VU); a task cut
        // mid-request drops it, and the next iteration makes a new one.
        let Some(mut script) = self.script.take() else {
            return Driven::Stopped;
        };
        // Sessions an iteration cut short left open are closed (and recorded)
        // before the next one starts: its sockets are its own.
        self.script_ws_end_iteration().await;
        let mut reply = first;
        let mut stopped = false;
        let mut aborting = false;
        let result = loop {
            let call = script.resume(reply);
            if let Some(t) = turn.take() {
                // Behind every task woken meanwhile (the VUs made before this
                // one, their answers in): the next VU is made after them.
                tokio::task::yield_now().await;
                drop(t);
            }
            reply = match call {
                // The exception `abort` raised to end the iteration is not a fault.
                ScriptCall::Done(_) if aborting => break Ok(None),
                ScriptCall::Done(r) => break r,
                ScriptCall::Abort(reason) => {
                    self.ctx.plan.script_state.abort(reason);
                    // This worker stops now; the others at their next look.
                    self.ctx.observe_stop(crate::runtime::worker::STOPPING);
                    aborting = true;
                    ScriptReply::Stop
                }
                ScriptCall::Execution => ScriptReply::Execution(Box::new(self.execution(sc))),
                ScriptCall::Http(_)
                | ScriptCall::Batch(_)
                | ScriptCall::Sleep(_)
                | ScriptCall::Ws(_)
                | ScriptCall::Grpc(_)
                | ScriptCall::GrpcStream(_)
                    if stopped =>
                {
                    ScriptReply::Stop
                }
                ScriptCall::Ws(call) => {
                    let wait = matches!(call, ScriptWsCall::Wait { .. });
                    if wait && self.ctx.stopping.get() {
                        stopped = true;
                        ScriptReply::Stop
                    } else {
                        ScriptReply::Ws(self.script_ws(scope, call).await)
                    }
                }
                ScriptCall::Grpc(call) => {
                    ScriptReply::Grpc(Box::new(self.script_grpc(scope, &call).await))
                }
                ScriptCall::GrpcStream(call) => {
                    let wait = matches!(call, ScriptGrpcStreamCall::Wait { .. });
                    if wait && self.ctx.stopping.get() {
                        stopped = true;
                        ScriptReply::Stop
                    } else {
                        ScriptReply::GrpcStream(self.script_grpc_stream(scope, call).await)
                    }
                }
                ScriptCall::Http(mut req) => {
                    let r = self.script_request(scope, &mut req, scheduled.take()).await;
                    ScriptReply::Http(Box::new(r))
                }
                ScriptCall::Batch(batch) => {
                    let r = self.script_batch(scope, *batch, scheduled.take()).await;
                    ScriptReply::Batch(Box::new(r))
                }
                ScriptCall::Sleep(d) => {
                    let skip = self.ctx.skip_think || d.is_zero();
                    if self.ctx.stopping.get()
                        || (!skip && !self.ctx.sleep_until(Instant::now() + d).await)
                    {
                        stopped = true;
                        ScriptReply::Stop
                    } else {
                        ScriptReply::Resumed
                    }
                }
                ScriptCall::Check { name, ok } => {
                    self.ctx.script_check(&name, ok);
                    if let Some(o) = &self.ctx.observer {
                        o.script_check(scope, &name, ok);
                    }
                    ScriptReply::Resumed
                }
                ScriptCall::Metric {
                    id,
                    value,
                    tags,
                    at,
                } => {
                    self.ctx.script_metric(id, value, &tags, at);
                    ScriptReply::Resumed
                }
            };
        };
        self.script = Some(script);
        self.script_ws_end_iteration().await;
        if stopped {
            Driven::Stopped
        } else {
            Driven::Done(result)
        }
    }

    /// What `k6/execution` reads now, for an iteration of `sc` (none in setup
    /// and teardown).
    fn execution(&self, sc: Option<&ScenarioPlan>) -> Execution {
        let now = Instant::now();
        let t0 = self.ctx.t0;
        let test = now.saturating_duration_since(t0);
        let wall_now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        let mut e = Execution {
            instance: self.ctx.plan.script_state.snapshot(),
            test_ms: test.as_secs_f64() * 1000.0,
            ..Execution::default()
        };
        if let Some(sc) = sc {
            let started = wall_now.as_secs_f64() * 1000.0 - e.test_ms;
            e.executor = sc.executor.kind().as_str();
            e.scenario_start_ms = (started + sc.start_time.as_secs_f64() * 1000.0).floor();
            let length = sc.executor.duration().as_secs_f64();
            let gone = test.saturating_sub(sc.start_time).as_secs_f64();
            e.progress = if length > 0.0 {
                (gone / length).min(1.0)
            } else {
                0.0
            };
        }
        e
    }

    /// Send a script's request, following its redirects (each hop a sample of
    /// its own), and answer with what the script sees of the final response;
    /// its jar (k6's rules) gives and keeps its cookies and goes back with it.
    async fn script_request(
        &mut self,
        scope: &str,
        req: &mut ScriptRequest,
        scheduled: Option<Instant>,
    ) -> ScriptResponse {
        let jar = std::cell::RefCell::new(req.jar.take().map(|j| *j).unwrap_or_default());
        let found = match self.ctx.script_url(&req.url) {
            Some(u) => self.script_origin(&u).await.map(|o| (o, u)),
            None => None,
        };
        let Some(((host, origin, h2), url)) = found else {
            let mut r = unsendable(&req.url, "invalid URL: an absolute http:// or https:// URL");
            r.jar = Some(Box::new(jar.into_inner()));
            return r;
        };
        let ctx = self.ctx.clone();
        let conn = conn_slot(&mut self.conns, &mut self.extra, host).take();
        let mut lane = Lane::new(conn, h2, (&mut self.req, &mut self.resp));
        let (mut r, at_home) = run_lane(
            &ctx,
            (self.id, scope),
            &mut lane,
            req,
            (origin, url),
            &jar,
            scheduled,
        )
        .await;
        let back = lane.into_home(at_home);
        *conn_slot(&mut self.conns, &mut self.extra, host) = back;
        r.jar = Some(Box::new(jar.into_inner()));
        r
    }

    /// An exception that ended an iteration, into the failure samples (category
    /// `script_error`, a few per scenario) with its stack.
    #[cold]
    fn script_fault(&self, scope: &str, fault: &ScriptFault) {
        let ctx = &self.ctx;
        let series = ctx.script_series(&format!("{scope} (script)"), None, &[]);
        let key = FailureKey::Error(ErrorKind::Template);
        if !ctx.want_failure_sample(series, key) {
            return;
        }
        let redact = &ctx.plan.secrets;
        let reason = if fault.stack.is_empty() {
            fault.message.clone()
        } else {
            format!("{}\n{}", fault.message, fault.stack)
        };
        ctx.failure_sample(FailureSample {
            step: scope.to_string(),
            category: "script_error".to_string(),
            second: ctx.second_at(Instant::now()),
            method: String::new(),
            url: String::new(),
            status: 0,
            body: String::new(),
            check: None,
            actual: None,
            reason: Some(redact.text(reason.as_bytes())),
            event: None,
        });
    }
}

/// A script request's bytes into `out`: request line, `Host`, the script's
/// headers, the cookies `cookies` writes, `Content-Length` and the body.
pub(super) fn script_bytes(
    out: &mut Vec<u8>,
    (method, url): (&str, &url::Url),
    headers: &[(String, String)],
    body: &[u8],
    cookies: impl FnOnce(&mut Vec<u8>),
) {
    out.clear();
    out.extend_from_slice(method.as_bytes());
    out.push(b' ');
    out.extend_from_slice(url.path().as_bytes());
    if let Some(q) = url.query() {
        out.push(b'?');
        out.extend_from_slice(q.as_bytes());
    }
    out.extend_from_slice(b" HTTP/1.1\r\nHost: ");
    out.extend_from_slice(url.host_str().unwrap_or_default().as_bytes());
    if let Some(p) = url.port() {
        out.push(b':');
        crate::render::push_int(out, i64::from(p));
    }
    out.extend_from_slice(b"\r\n");
    let mut has_agent = false;
    for (name, value) in headers {
        let n = name.trim();
        if n.eq_ignore_ascii_case("host") || n.eq_ignore_ascii_case("content-length") {
            continue;
        }
        // A header line cannot carry a line break (it would start another).
        if n.is_empty() || n.contains(['\r', '\n', ':']) || value.contains(['\r', '\n']) {
            continue;
        }
        has_agent |= n.eq_ignore_ascii_case("user-agent");
        out.extend_from_slice(n.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    if !has_agent {
        out.extend_from_slice(b"User-Agent: pado\r\n");
    }
    cookies(out);
    if !body.is_empty() || matches!(method, "POST" | "PUT" | "PATCH") {
        out.extend_from_slice(b"Content-Length: ");
        crate::render::push_int(out, body.len() as i64);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(body);
}

/// What the script sees of the final answer (its head and body in `resp`).
pub(super) fn script_response(
    url: &url::Url,
    ex: &pado_http::Exchange,
    sample: &RequestSample,
    resp: &super::send::ResponseBufs,
) -> ScriptResponse {
    let ms = |us: u64| us as f64 / 1000.0;
    let p = &sample.phases;
    ScriptResponse {
        status: ex.status,
        headers: head_lines(&resp.head),
        body: resp.body.clone(),
        url: url.to_string(),
        error: match ex.error {
            Some(e) => e.as_str().to_string(),
            None if ex.status >= 400 => format!("HTTP {}", ex.status),
            None => String::new(),
        },
        error_code: error_code(ex.error, ex.status),
        proto: match ex.version {
            Some(pado_metrics::HttpVersion::Http2) => "HTTP/2.0".into(),
            _ => "HTTP/1.1".into(),
        },
        timings: ScriptTimings {
            blocked: ms(p.blocked_us),
            looking_up: ms(p.dns_us),
            connecting: ms(p.connecting_us),
            tls_handshaking: ms(p.tls_us),
            sending: ms(p.sending_us),
            waiting: ms(p.waiting_us),
            receiving: ms(p.receiving_us),
            duration: ms(p.sending_us + p.waiting_us + p.receiving_us),
        },
        jar: None,
    }
}

/// A failed request of a script into the failure samples (a few per series and
/// category): `req` the bytes sent, `body` the answer's kept body.
#[cold]
pub(super) fn script_failure(
    ctx: &crate::runtime::worker::WorkerCtx,
    (scope, series): (&str, u32),
    (method, url): (&str, &url::Url),
    sample: &RequestSample,
    end: Instant,
    (req, body): (&[u8], &[u8]),
) {
    if !ctx.want_failure_sample(series, FailureKey::of(sample, true)) {
        return;
    }
    let redact = ctx.plan.secrets.with_credentials_of(req);
    let category = match sample.error {
        Some(e) => e.as_str().to_string(),
        None => format!("http_{}", sample.status),
    };
    let target = &url[url::Position::BeforePath..];
    ctx.failure_sample(FailureSample {
        step: format!("{scope}: {}", &url[..url::Position::AfterPath]),
        category,
        second: ctx.second_at(end),
        method: method.to_string(),
        url: redact.text(target.as_bytes()),
        status: sample.status,
        body: printable(&redact.prefix(body, BODY_PREFIX)),
        check: None,
        actual: None,
        reason: None,
        event: None,
    });
}

/// An answer for a request that could not be sent at all (k6's error 1000).
pub(super) fn unsendable(url: &str, why: &str) -> ScriptResponse {
    ScriptResponse {
        url: url.to_string(),
        error: why.to_string(),
        error_code: 1000,
        ..ScriptResponse::default()
    }
}

/// The header lines of a response head (after its status line), each name and
/// value trimmed, bytes that are not UTF-8 replaced. Split on the bytes (a
/// `\r\n` and the first `:` are ASCII, never inside a character, so each
/// piece decodes as it would within the whole head), without searching the
/// head as text.
fn head_lines(head: &[u8]) -> Vec<(String, String)> {
    let text = |b: &[u8]| String::from_utf8_lossy(b).trim().to_string();
    let mut out = Vec::new();
    let mut lines = CrlfLines(head);
    lines.next();
    for line in lines {
        if let Some(colon) = line.iter().position(|&b| b == b':') {
            out.push((text(&line[..colon]), text(&line[colon + 1..])));
        }
    }
    out
}

/// The pieces of `bytes` between `\r\n`s (as `str::split("\r\n")` gives them,
/// but for an empty last one).
struct CrlfLines<'a>(&'a [u8]);

impl<'a> Iterator for CrlfLines<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        let rest = std::mem::take(&mut self.0);
        if rest.is_empty() {
            return None;
        }
        match rest.windows(2).position(|w| w == b"\r\n") {
            Some(i) => {
                // (A trailing "\r\n"'s empty piece is not given: it holds no header.)
                self.0 = &rest[i + 2..];
                Some(&rest[..i])
            }
            None => Some(rest),
        }
    }
}

/// k6's `error_code` for a failure (its documented codes: 1000 generic, 1050
/// timeout, 1100 DNS, 1211 dial timeout, 1212 refused, 1220 reset, 1300 TLS,
/// 1400–1599 an HTTP status of 400 or more as 1000 + status).
fn error_code(e: Option<ErrorKind>, status: u16) -> u32 {
    match e {
        None if status >= 400 => 1000 + u32::from(status),
        None => 0,
        Some(ErrorKind::Timeout) => 1050,
        Some(ErrorKind::Dns) => 1100,
        Some(ErrorKind::ConnectTimeout) => 1211,
        Some(ErrorKind::ConnectRefused) => 1212,
        Some(ErrorKind::Reset) => 1220,
        Some(ErrorKind::Tls) => 1300,
        Some(_) => 1000,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_codes_follow_k6s_table() {
        assert_eq!(error_code(None, 200), 0);
        assert_eq!(error_code(None, 404), 1404);
        assert_eq!(error_code(None, 503), 1503);
        assert_eq!(error_code(Some(ErrorKind::ConnectRefused), 0), 1212);
        assert_eq!(error_code(Some(ErrorKind::Timeout), 0), 1050);
    }

    #[test]
    fn head_lines_read_as_the_head_split_as_text_would() {
        // The rule it replaced: the whole head as (lossy) text, split on CRLF.
        let as_text = |head: &[u8]| -> Vec<(String, String)> {
            String::from_utf8_lossy(head)
                .split("\r\n")
                .skip(1)
                .filter_map(|l| l.split_once(':'))
                .map(|(n, v)| (n.trim().to_string(), v.trim().to_string()))
                .collect()
        };
        let heads: [&[u8]; 7] = [
            b"HTTP/1.1 200 OK\r\nA: 1\r\nB:2\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nX-Bad: \xff\xfe:\xc3\r\n\xe2\x82: v\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nno colon\r\n: empty name\r\nT:  a:b \t\r\n",
            b"HTTP/1.1 204 No Content",
            b"",
            b"HTTP/1.1 200 OK\r\nLone\nLF: x\r\nCR\r: y\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nNbsp: \xc2\xa0v\xc2\xa0\r\n\r\n",
        ];
        for h in heads {
            assert_eq!(
                head_lines(h),
                as_text(h),
                "{:?}",
                String::from_utf8_lossy(h)
            );
        }
    }

    #[test]
    fn head_lines_skip_the_status_line() {
        let h = head_lines(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nX-Name: \xed\x8c\x8c\xeb\x8f\x84\r\n\r\n");
        assert_eq!(
            h,
            vec![
                ("Content-Type".to_string(), "text/plain".to_string()),
                ("X-Name".to_string(), "파도".to_string()),
            ]
        );
    }
}

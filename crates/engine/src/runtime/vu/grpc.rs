//! A gRPC call of a `grpc:` step: metadata and message rendered (a static message
//! was encoded at compile time), the call made on the worker's HTTP/2 pool for the
//! server's origin (`pado_http::grpc`), the reply's messages decoded to JSON only
//! when checks, extraction or debug output read them. The call is one request of
//! its step: the same phases, the gRPC status code as its status (0 = OK), a code
//! the step does not accept its failure category (`grpc_unavailable`, ...); a
//! server stream also counts as one of `grpc_streams` with its messages.

use std::time::Instant;

use bytes::Bytes;
use http::HeaderValue;
use pado_http::grpc::{exchange_grpc, frame_message, GrpcCall};
use pado_metrics::{ErrorKind, Phases, RequestSample};

use crate::plan::{CheckPlan, GrpcMessage, GrpcPlan, StepPlan};
use crate::render::{RenderCtx, RenderFault};
use crate::response_view::ResponseView;
use crate::trace::CheckOutcome;

use super::described::{failure_sample, seen, trace, Cause};
use super::judged::{evaluate, extract};
use super::{us, Vu};

/// A call its templates could not build: the hole (or `message`), what it
/// rendered, what it had to be.
fn fault(hole: &str, value: &[u8], expected: String) -> RenderFault {
    let mut value = String::from_utf8_lossy(value).into_owned();
    if value.len() > 120 {
        let mut cut = 120;
        while !value.is_char_boundary(cut) {
            cut -= 1;
        }
        value.truncate(cut);
        value.push('…');
    }
    RenderFault {
        hole: hole.to_string(),
        value,
        expected,
    }
}

impl Vu {
    pub(super) async fn grpc(
        &mut self,
        scope: &str,
        step: &StepPlan,
        g: &GrpcPlan,
        scheduled: Option<std::time::Instant>,
    ) {
        let ctx = self.ctx.clone();
        let t_start = Instant::now();
        let traced = ctx.observer.is_some();
        // Metadata and message for this call.
        let mut metadata = Vec::new();
        let mut rendered_json = Vec::new();
        let built: Result<Bytes, RenderFault> = (|| {
            let plan = &ctx.plan;
            let mut rc = render_ctx!(self, plan, scope);
            for (name, value) in &g.metadata {
                let mut v = Vec::new();
                rc.render(value, &mut v)?;
                let v = HeaderValue::from_bytes(&v)
                    .map_err(|_| fault(name.as_str(), &v, "a valid header value".into()))?;
                metadata.push((name.clone(), v));
            }
            match &g.message {
                GrpcMessage::Static(b) => Ok(b.clone()),
                GrpcMessage::Templated { json, desc } => {
                    rc.render(json, &mut rendered_json)?;
                    let bytes =
                        crate::plan::encode_grpc_json(desc, &rendered_json).map_err(|e| {
                            fault(
                                "message",
                                &rendered_json,
                                format!("a `{}` message ({e})", desc.full_name()),
                            )
                        })?;
                    let mut framed = Vec::with_capacity(bytes.len() + 5);
                    frame_message(&bytes, &mut framed);
                    Ok(Bytes::from(framed))
                }
            }
        })();
        // What a person sees of the request (debug output, failure samples): built
        // only when needed.
        let shown_request = |json: &[u8], metadata: &[(http::HeaderName, HeaderValue)]| {
            let mut out = format!("POST /{} HTTP/2\r\n", g.method).into_bytes();
            for (k, v) in &g.static_metadata {
                out.extend_from_slice(format!("{k}: {v}\r\n").as_bytes());
            }
            for (k, v) in metadata {
                out.extend_from_slice(k.as_str().as_bytes());
                out.extend_from_slice(b": ");
                out.extend_from_slice(v.as_bytes());
                out.extend_from_slice(b"\r\n");
            }
            out.extend_from_slice(b"\r\n");
            out.extend_from_slice(json);
            out
        };
        let body = match built {
            Ok(b) => b,
            Err(fault) => {
                let end = Instant::now();
                let duration = end.saturating_duration_since(scheduled.unwrap_or(t_start));
                let sample = RequestSample {
                    error: Some(ErrorKind::Template),
                    failed: true,
                    phases: Phases {
                        blocked_us: scheduled
                            .map_or(0, |s| us(t_start.saturating_duration_since(s))),
                        duration_us: us(duration),
                        ..Phases::default()
                    },
                    ..RequestSample::default()
                };
                for e in &step.extract {
                    self.vars[e.var] = None;
                }
                let code = 1000 + ErrorKind::Template.index() as u16;
                let json: &[u8] = if rendered_json.is_empty() {
                    g.static_json.as_deref().unwrap_or_default()
                } else {
                    &rendered_json
                };
                let shown = shown_request(json, &metadata);
                if ctx.want_failure_sample(step.series, code) {
                    let s = failure_sample(
                        &ctx,
                        step.series,
                        &shown,
                        &sample,
                        &[],
                        Cause {
                            check: None,
                            reason: Some(fault.to_string().into()),
                        },
                        end,
                    );
                    ctx.failure_sample(s);
                }
                if let Some(obs) = &ctx.observer {
                    let origin = &ctx.plan.origins[g.origin].label;
                    let mut t = trace(
                        &ctx,
                        scope,
                        step,
                        self.id,
                        origin,
                        &shown,
                        &[],
                        &[],
                        &sample,
                        obs.full(),
                        Vec::new(),
                        Vec::new(),
                    );
                    t.reason = Some(ctx.plan.secrets.text(fault.to_string().as_bytes()));
                    obs.exchange(t);
                }
                let series = self.series(scope, step);
                ctx.record(series, &sample, end);
                if ctx.raw_on() {
                    self.raw_grpc(scope, step, g, &sample, end);
                }
                return;
            }
        };
        let Some(pool) = ctx.h2.get(g.origin).and_then(Option::as_ref) else {
            return;
        };
        let origin = &ctx.plan.origins[g.origin];
        let decode = g.decode || traced;
        let call = GrpcCall {
            request: &g.request,
            metadata: &metadata,
            body,
            timeout: g.timeout,
            max_messages: g.max_messages,
            max_message: ctx.plan.max_body,
        };
        // Replies as JSON: the message of a unary call, an array of a stream's.
        let max_body = ctx.plan.max_body;
        let reply = &g.reply;
        let streaming = g.streaming;
        let json = &mut self.body;
        json.clear();
        if decode && streaming {
            json.push(b'[');
        }
        let mut undecodable = false;
        let mut frame = std::mem::take(&mut self.req_body);
        let out = exchange_grpc(pool, origin, call, &mut frame, |m, _at| {
            if !decode || json.len() >= max_body {
                return;
            }
            if streaming && json.len() > 1 {
                json.push(b',');
            }
            undecodable |= !crate::plan::decode_grpc_json(reply, m, json);
        })
        .await;
        self.req_body = frame;
        if decode && streaming {
            self.body.push(b']');
        }
        let ex = &out.exchange;
        let end = ex.end.unwrap_or_else(Instant::now);
        let began = ex.sent_at.unwrap_or(t_start);
        let duration = match scheduled {
            Some(s) => end.saturating_duration_since(s),
            None => end.saturating_duration_since(began),
        };
        // The call's code: a stream cut at `max_messages` ended as the step asked.
        let code = match out.code {
            Some(c) => c,
            None if out.limited => 0,
            None => 0,
        };
        let mut error = ex.error;
        let mut reason = ex.reason;
        if error.is_none() && undecodable {
            error = Some(ErrorKind::Protocol);
            reason = Some("a reply message that does not fit the method's reply type");
        }
        if error.is_none() && !g.accepts(code) {
            error = Some(ErrorKind::of_grpc_code(code));
            reason = pado_scenario::grpc_codes::name(code);
        }
        let ok_transport = ex.error.is_none() && !undecodable;
        let body: &[u8] = if decode && ok_transport {
            &self.body
        } else {
            &[]
        };
        let view = ResponseView::new(code, &[], body);
        let phases = Phases {
            blocked_us: scheduled.map_or(0, |s| us(t_start.saturating_duration_since(s)))
                + us(ex.blocked),
            dns_us: us(ex.setup.dns),
            connecting_us: us(ex.setup.connecting),
            tls_us: us(ex.setup.tls),
            sending_us: us(ex.sending),
            waiting_us: us(ex.waiting),
            receiving_us: us(ex.receiving),
            duration_us: us(duration),
        };
        let mut sample = RequestSample {
            status: if ex.error.is_none() { code } else { 0 },
            error,
            failed: false,
            failed_by_check: false,
            phases,
            bytes_sent: ex.bytes_sent,
            bytes_received: ex.bytes_received,
            reconnected: false,
            body_cut: decode && self.body.len() >= max_body,
            // gRPC messages are not HTTP content-encoded (grpc-encoding is not
            // supported): nothing decoded.
            body_encoded: 0,
            body_decoded: 0,
            http_version: ex.version,
            opened: ex.opened,
        };
        let mut failed = error.is_some();
        let status_failed = failed;
        let mut first_failed = None;
        let resolved: Vec<Option<CheckPlan>> = if step
            .checks
            .iter()
            .any(|c| matches!(c, CheckPlan::Templated { .. }))
        {
            let plan = &ctx.plan;
            let mut rc = render_ctx!(self, plan, scope);
            step.checks
                .iter()
                .map(|c| match c {
                    CheckPlan::Templated { id, value, kind } => {
                        let mut out = Vec::new();
                        let _ = rc.render(value, &mut out);
                        Some(CheckPlan::with_value(*id, kind, &out))
                    }
                    _ => None,
                })
                .collect()
        } else {
            Vec::new()
        };
        // A status check judges the code whatever else failed; the others need a
        // reply.
        let ok_for = |c: &CheckPlan| matches!(c, CheckPlan::Status { .. }) || ok_transport;
        for (i, c) in step.checks.iter().enumerate() {
            let c = resolved.get(i).and_then(Option::as_ref).unwrap_or(c);
            let (id, ok) = evaluate(c, &view, ok_for(c) && ex.error.is_none(), duration);
            ctx.check(id, ok);
            failed |= !ok && step.checks_fail_request;
            if !ok && first_failed.is_none() {
                first_failed = Some(c);
            }
        }
        for e in &step.extract {
            self.vars[e.var] = if ok_transport && error.is_none() {
                extract(&e.source, &view, &self.jar, g.origin)
            } else {
                None
            };
        }
        sample.failed = failed;
        sample.failed_by_check = failed && !status_failed;
        let request_shown = || {
            let json: &[u8] = if rendered_json.is_empty() {
                g.static_json.as_deref().unwrap_or_default()
            } else {
                &rendered_json
            };
            shown_request(json, &metadata)
        };
        if failed {
            let fcode = match error {
                Some(e) => 1000 + e.index() as u16,
                None => 2000,
            };
            if ctx.want_failure_sample(step.series, fcode) {
                let shown = request_shown();
                let check = first_failed.filter(|_| !status_failed);
                let s = failure_sample(
                    &ctx,
                    step.series,
                    &shown,
                    &sample,
                    view.body,
                    Cause {
                        check: check.map(|c| (c, seen(c, &view, error, duration))),
                        reason: reason.map(Into::into),
                    },
                    end,
                );
                ctx.failure_sample(s);
            }
        }
        if let Some(obs) = &ctx.observer {
            let shown = request_shown();
            let full = obs.full();
            let plan = &ctx.plan;
            let checks = step
                .checks
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    let c = resolved.get(i).and_then(Option::as_ref).unwrap_or(c);
                    let (id, ok) = evaluate(c, &view, ok_for(c) && ex.error.is_none(), duration);
                    CheckOutcome {
                        name: plan.checks.get(id as usize).cloned().unwrap_or_default(),
                        ok,
                        actual: plan
                            .secrets
                            .text(seen(c, &view, error, duration).as_bytes()),
                    }
                })
                .collect();
            let extracted = step
                .extract
                .iter()
                .map(|e| {
                    let name = plan.vars.get(e.var).cloned().unwrap_or_default();
                    (
                        name,
                        self.vars[e.var].as_deref().map(|v| plan.secrets.text(v)),
                    )
                })
                .collect();
            let head = format!(
                "HTTP/2 {}\r\ngrpc-status: {code} {}\r\n\r\n",
                ex.status,
                pado_scenario::grpc_codes::name(code).unwrap_or("")
            );
            let mut t = trace(
                &ctx,
                scope,
                step,
                self.id,
                &origin.label,
                &shown,
                head.as_bytes(),
                view.body,
                &sample,
                full,
                checks,
                extracted,
            );
            t.reason = reason.map(str::to_string);
            obs.exchange(t);
        }
        let series = self.series(scope, step);
        if streaming {
            ctx.record_grpc_stream(series, &sample, out.messages, end);
        } else {
            ctx.record(series, &sample, end);
        }
        if ctx.raw_on() {
            self.raw_grpc(scope, step, g, &sample, end);
        }
    }

    /// Keep the raw record of a gRPC call (only with a raw output): method `GRPC`,
    /// the URL its server and `/package.Service/Method`.
    fn raw_grpc(
        &self,
        scope: &str,
        step: &StepPlan,
        g: &GrpcPlan,
        sample: &RequestSample,
        end: Instant,
    ) {
        let origin = &self.ctx.plan.origins[g.origin].label;
        self.ctx.raw(
            &super::super::worker::RawRequest {
                step: step.series,
                scope,
                vu: self.id,
                iter: self.iter,
                method: b"GRPC",
                url: [origin.as_bytes(), b"/", g.method.as_bytes()],
                tags: (!step.tags.is_empty()).then_some((&step.tags[..], &self.tag_buf[..])),
                protocol: pado_metrics::raw::RawProtocol::Grpc,
            },
            sample,
            end,
        );
    }
}

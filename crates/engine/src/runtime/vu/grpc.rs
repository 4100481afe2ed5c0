//! A gRPC call of a `grpc:` step: metadata and message rendered (a static message
//! was encoded at compile time), the call made on the worker's HTTP/2 pool for the
//! server's origin (`pado_http::grpc`), the reply's messages decoded to JSON only
//! when checks, extraction or debug output read them. The call is one request of
//! its step: the same phases, the gRPC status code as its status (0 = OK), a code
//! the step does not accept its failure category (`grpc_unavailable`, ...); a
//! server stream also counts as one of `grpc_streams` with its messages.

use std::time::Instant;

use bytes::Bytes;
use http::{HeaderName, HeaderValue};
use pado_http::grpc::{exchange_grpc, frame_message, GrpcCall, GrpcOutcome};
use pado_metrics::ErrorKind;

use crate::plan::{GrpcMessage, GrpcPlan, StepPlan};
use crate::render::RenderFault;
use crate::response_view::ResponseView;
use crate::runtime::worker::WorkerCtx;

use super::finish::{ended_at, sample_of, Ended, Judge, Readable, Reason, Sent};
use super::Vu;

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

/// A call as a person sees it (debug output, failure samples): the HTTP/2 request
/// with its metadata and the message as JSON, built only when shown.
pub(super) struct GrpcShown<'a> {
    /// The server's origin label.
    pub(super) origin: &'a str,
    /// The step's call.
    pub(super) plan: &'a GrpcPlan,
    /// Metadata rendered for this call.
    metadata: &'a [(HeaderName, HeaderValue)],
    /// The message as rendered, or empty for the static one.
    rendered_json: &'a [u8],
}

impl GrpcShown<'_> {
    /// The request's text.
    pub(super) fn request(&self) -> Vec<u8> {
        let g = self.plan;
        let json: &[u8] = if self.rendered_json.is_empty() {
            g.static_json.as_deref().unwrap_or_default()
        } else {
            self.rendered_json
        };
        let mut out = format!("POST /{} HTTP/2\r\n", g.method).into_bytes();
        for (k, v) in &g.static_metadata {
            out.extend_from_slice(format!("{k}: {v}\r\n").as_bytes());
        }
        for (k, v) in self.metadata {
            out.extend_from_slice(k.as_str().as_bytes());
            out.extend_from_slice(b": ");
            out.extend_from_slice(v.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(json);
        out
    }
}

/// What a call's reply came to beyond its exchange.
struct Replied {
    out: GrpcOutcome,
    /// A reply message did not fit the method's reply type.
    undecodable: bool,
    /// Whether the replies were decoded to JSON (into the VU's body buffer).
    decoded: bool,
}

impl Vu {
    /// Make the gRPC call of `step` and finish it as one request.
    pub(super) async fn grpc(
        &mut self,
        scope: &str,
        step: &StepPlan,
        g: &GrpcPlan,
        scheduled: Option<Instant>,
    ) {
        let ctx = self.ctx.clone();
        let t_start = Instant::now();
        // Metadata and message for this call.
        let mut metadata = Vec::new();
        let mut rendered_json = Vec::new();
        let built = self.build_call(&ctx, scope, g, &mut metadata, &mut rendered_json);
        let shown = GrpcShown {
            origin: &ctx.plan.origins[g.origin].label,
            plan: g,
            metadata: &metadata,
            rendered_json: &rendered_json,
        };
        let body = match built {
            Ok(b) => b,
            Err(fault) => {
                let sent = (g.origin, Sent::Grpc(shown));
                let at = (scheduled, t_start);
                self.finish_unbuilt(&ctx, (scope, step), sent, &fault, at);
                return;
            }
        };
        let Some(r) = self.call(&ctx, g, &metadata, body).await else {
            return;
        };
        let reply = std::mem::take(&mut self.resp.body);
        self.finish_call(
            &ctx,
            (scope, step, g),
            (scheduled, t_start),
            &r,
            &reply,
            shown,
        );
        self.resp.body = reply;
    }

    /// Render the call's metadata and message: the framed message, or why it cannot
    /// be sent.
    fn build_call(
        &mut self,
        ctx: &WorkerCtx,
        scope: &str,
        g: &GrpcPlan,
        metadata: &mut Vec<(HeaderName, HeaderValue)>,
        rendered_json: &mut Vec<u8>,
    ) -> Result<Bytes, RenderFault> {
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
                rc.render(json, rendered_json)?;
                let bytes = crate::plan::encode_grpc_json(desc, rendered_json).map_err(|e| {
                    fault(
                        "message",
                        rendered_json,
                        format!("a `{}` message ({e})", desc.full_name()),
                    )
                })?;
                let mut framed = Vec::with_capacity(bytes.len() + 5);
                frame_message(&bytes, &mut framed);
                Ok(Bytes::from(framed))
            }
        }
    }

    /// Make the call on the worker's HTTP/2 pool for the server, its replies decoded
    /// to JSON into the VU's body buffer when checks, extraction or debug output read
    /// them (the message of a unary call, an array of a stream's). `None` without a
    /// pool for the origin.
    async fn call(
        &mut self,
        ctx: &WorkerCtx,
        g: &GrpcPlan,
        metadata: &[(HeaderName, HeaderValue)],
        body: Bytes,
    ) -> Option<Replied> {
        let pool = ctx.h2.get(g.origin).and_then(Option::as_ref)?;
        let origin = &ctx.plan.origins[g.origin];
        let decode = g.decode || ctx.observer.is_some();
        let call = GrpcCall {
            request: &g.request,
            metadata,
            body,
            timeout: g.timeout,
            max_messages: g.max_messages,
            max_message: ctx.plan.max_body,
        };
        let max_body = ctx.plan.max_body;
        let reply = &g.reply;
        let streaming = g.streaming;
        let json = &mut self.resp.body;
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
            self.resp.body.push(b']');
        }
        Some(Replied {
            out,
            undecodable,
            decoded: decode,
        })
    }

    /// Finish a call that was made: its code judged against the step's accepted
    /// codes, then the one finish path. `reply` is the decoded replies.
    fn finish_call(
        &mut self,
        ctx: &WorkerCtx,
        (scope, step, g): (&str, &StepPlan, &GrpcPlan),
        (scheduled, t_start): (Option<Instant>, Instant),
        r: &Replied,
        reply: &[u8],
        shown: GrpcShown<'_>,
    ) {
        let ex = &r.out.exchange;
        let (end, duration) = ended_at(ex, scheduled, t_start);
        // The call's code: a stream cut at `max_messages` ended as the step asked.
        let code = r.out.code.unwrap_or(0);
        let mut error = ex.error;
        let mut reason = ex.reason;
        if error.is_none() && r.undecodable {
            error = Some(ErrorKind::Protocol);
            reason = Some("a reply message that does not fit the method's reply type");
        }
        if error.is_none() && !g.accepts(code) {
            error = Some(ErrorKind::of_grpc_code(code));
            reason = pado_scenario::grpc_codes::name(code);
        }
        let ok_transport = ex.error.is_none() && !r.undecodable;
        let body: &[u8] = if r.decoded && ok_transport {
            reply
        } else {
            &[]
        };
        let mut sample = sample_of(ex, error, (scheduled, t_start), duration);
        sample.status = if ex.error.is_none() { code } else { 0 };
        sample.reconnected = false;
        sample.body_cut = r.decoded && reply.len() >= ctx.plan.max_body;
        // gRPC messages are not HTTP content-encoded (grpc-encoding is not
        // supported): nothing decoded.
        sample.body_encoded = 0;
        sample.body_decoded = 0;
        let head = match ctx.observer {
            Some(_) => format!(
                "HTTP/2 {}\r\ngrpc-status: {code} {}\r\n\r\n",
                ex.status,
                pado_scenario::grpc_codes::name(code).unwrap_or("")
            ),
            None => String::new(),
        };
        let mut ended = Ended {
            sample,
            end,
            duration,
            view: ResponseView::new(code, &[], body),
            head: head.as_bytes(),
            host: g.origin,
            status_failed: error.is_some(),
            // A status check judges the code whatever else failed; the others need
            // a reply.
            readable: Readable {
                status: ex.error.is_none(),
                content: ok_transport,
            },
            reason: reason.map(Reason::Said),
            failure_body: body,
            sent: Sent::Grpc(shown),
            stream_msgs: g.streaming.then_some(r.out.messages),
            sse: None,
        };
        self.finish(ctx, (scope, step), Judge::Final, &mut ended);
    }
}
